/* graphmem's exported dlsym, x86-64. glibc's dlsym resolves RTLD_DEFAULT and RTLD_NEXT relative
 * to the object its return address lies in: the caller's scope, its local search list, what comes
 * after it. A C wrapper that calls the real dlsym makes graphmem that caller and changes answers
 * for anything loaded with RTLD_LOCAL (compute-sanitizer's injected libraries among them). So every
 * name that is not a driver name (cu[A-Z]...) jumps straight into glibc's dlsym with the caller's
 * frame untouched: the answer is glibc's own, bit for bit. Driver names go to
 * gm_dlsym_driver_name (dlsym.c) with the caller's return address as a third argument. */
#if defined(__x86_64__)
    .text
    .globl dlsym
    .type dlsym, @function
    .p2align 4
dlsym:
    .cfi_startproc
#if defined(__CET__)
    endbr64
#endif
    test    %rsi, %rsi
    jz      .Lglibc
    cmpb    $0x63, (%rsi)           /* 'c' */
    jne     .Lglibc
    cmpb    $0x75, 1(%rsi)          /* 'u' */
    jne     .Lglibc
    movzbl  2(%rsi), %eax
    sub     $0x41, %eax             /* 'A'..'Z' */
    cmp     $25, %eax
    ja      .Lglibc
    mov     (%rsp), %rdx            /* the caller's return address */
    jmp     gm_dlsym_driver_name
.Lglibc:
    mov     gm_real_dlsym_fn(%rip), %rax
    test    %rax, %rax
    jz      .Lbootstrap
    jmp     *%rax
.Lbootstrap:
    /* First call (possibly before any constructor ran): find glibc's dlsym, keeping the
     * arguments and the caller's frame for the jump. Two pushes and 8 bytes keep %rsp 16-aligned. */
    push    %rdi
    .cfi_adjust_cfa_offset 8
    push    %rsi
    .cfi_adjust_cfa_offset 8
    sub     $8, %rsp
    .cfi_adjust_cfa_offset 8
    call    gm_dlsym_bootstrap
    add     $8, %rsp
    .cfi_adjust_cfa_offset -8
    pop     %rsi
    .cfi_adjust_cfa_offset -8
    pop     %rdi
    .cfi_adjust_cfa_offset -8
    test    %rax, %rax
    jz      .Lnone
    jmp     *%rax
.Lnone:
    ret
    .cfi_endproc
    .size dlsym, .-dlsym
#endif
    .section .note.GNU-stack, "", @progbits
