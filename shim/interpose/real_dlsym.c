/* The real dlsym. graphmem exports a dlsym of its own (dlsym_entry.S, dlsym.c), so it never calls
 * the public name for its own lookups: they go through gm_real_dlsym, and the entry stub jumps
 * through gm_real_dlsym_fn for every name that is not a driver name. A leaf: it needs libdl only,
 * and the stub may call it before anything else of graphmem has run. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#include "doors.h"

/* Read by the entry stub without a barrier: an aligned pointer load on x86-64. */
_Atomic(gm_dlsym_fn) gm_real_dlsym_fn;

/* dlvsym is not overridden, so it reaches glibc's dlsym without recursion. GLIBC_2.34 is the
 * current version; 2.2.5 (x86-64) and 2.17 (aarch64) are the older ones. */
gm_dlsym_fn gm_dlsym_bootstrap(void) {
    gm_dlsym_fn fn = atomic_load_explicit(&gm_real_dlsym_fn, memory_order_acquire);
    if (fn)
        return fn;
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0] && !fn; i++)
        fn = (gm_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    atomic_store_explicit(&gm_real_dlsym_fn, fn, memory_order_release);
    return fn;
}

void *gm_real_dlsym(void *handle, const char *name) {
    gm_dlsym_fn fn = gm_dlsym_bootstrap();
    return fn ? fn(handle, name) : NULL;
}
