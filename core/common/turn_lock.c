#include "turn_lock.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Checks of `serving` before a waiter sleeps: about 2-6 us of pause instructions, as long as most
 * sections of the engine lock (a marker, a launch's driver call). */
#define SPINS 128

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Sleeps while *word is `value` (returns at once when it is not, on a wake, or on a signal). The
 * raw system call: syscall(2) is no cancellation point, so neither is any wait here. */
static void futex_wait(_Atomic uint32_t *word, uint32_t value) {
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *word) {
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void gm_turn_lock_init(gm_turn_lock_t *lock) {
    atomic_init(&lock->next, 0);
    atomic_init(&lock->serving, 0);
    atomic_init(&lock->sleepers, 0);
}

void gm_turn_lock(gm_turn_lock_t *lock) {
    uint32_t ticket = atomic_fetch_add_explicit(&lock->next, 1, memory_order_relaxed);
    if (atomic_load_explicit(&lock->serving, memory_order_acquire) == ticket)
        return;
    for (unsigned i = 0; i < SPINS; i++) {
        relax();
        if (atomic_load_explicit(&lock->serving, memory_order_acquire) == ticket)
            return;
    }
    /* Counted before `serving` is read again (both sequentially consistent, as the unlock's
     * raise and read): either the unlock sees the count and wakes, or this sees the raise; the
     * futex compares `serving` with what was read, so a raise in between is not slept through. */
    atomic_fetch_add(&lock->sleepers, 1);
    for (uint32_t now; (now = atomic_load(&lock->serving)) != ticket;)
        futex_wait(&lock->serving, now);
    atomic_fetch_sub_explicit(&lock->sleepers, 1, memory_order_relaxed);
}

bool gm_turn_trylock(gm_turn_lock_t *lock) {
    uint32_t serving = atomic_load_explicit(&lock->serving, memory_order_acquire);
    uint32_t expected = serving;
    return atomic_compare_exchange_strong_explicit(&lock->next, &expected, serving + 1,
                                                   memory_order_acquire, memory_order_relaxed);
}

void gm_turn_unlock(gm_turn_lock_t *lock) {
    atomic_fetch_add(&lock->serving, 1);
    /* Every sleeper wakes and looks at its ticket: the next one's owner is not known here, and
     * the threads that wait for graphmem's locks are few. */
    if (atomic_load(&lock->sleepers))
        futex_wake_all(&lock->serving);
}

bool gm_turn_lock_free(gm_turn_lock_t *lock) {
    return atomic_load(&lock->serving) == atomic_load(&lock->next);
}

void gm_turn_cond_init(gm_turn_cond_t *cond) {
    atomic_init(&cond->seq, 0);
}

void gm_turn_wait(gm_turn_cond_t *cond, gm_turn_lock_t *lock) {
    /* Read under the lock: a broadcast made after the lock goes changes it, so the futex returns.
     */
    uint32_t seq = atomic_load(&cond->seq);
    gm_turn_unlock(lock);
    futex_wait(&cond->seq, seq);
    gm_turn_lock(lock);
}

void gm_turn_broadcast(gm_turn_cond_t *cond) {
    atomic_fetch_add(&cond->seq, 1);
    futex_wake_all(&cond->seq);
}
