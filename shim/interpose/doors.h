/* What the doors (exports.c, dlsym.c, resolver.c) and start-up (init.c) share inside interpose/:
 * the tables generated from hooks.def (hooks.c), the real dlsym (real_dlsym.c) and start-up itself.
 * Nothing outside interpose/ includes this: bridge/ and hooks/ see gm_real and the mode through
 * shim.h, never the lookups by name or by pointer. */
#ifndef GRAPHMEM_DOORS_H
#define GRAPHMEM_DOORS_H

#include "shim.h"

#define GM_EXPORT __attribute__((visibility("default")))

/* ---- init.c --------------------------------------------------------------------------------- */

/* Runs start-up once (pthread_once): options, the driver library, the real table, the pointer
 * index, the fork handler. One acquire load after the first call: the slow part, which reads a
 * thread-local flag (a __tls_get_addr call in a shared library), stays out of line, or the
 * compiler hoists that read into every exported call. */
void gm_shim_init_slow(void);
static inline void gm_shim_init(void) {
    if (__builtin_expect(!atomic_load_explicit(&gm_shim_hot.init_done, memory_order_acquire), 0))
        gm_shim_init_slow();
}

/* ---- hooks.c: the tables generated from hooks.def -------------------------------------------- */

extern const char *const gm_hook_names[GM_HOOK_COUNT];
/* Index of an exact hooked name, or -1. */
int gm_hook_find(const char *name);
/* Our exported function for hook id. */
void *gm_hook_function(int id);
/* Fills gm_real from the driver library and builds the pointer index. */
void gm_hooks_resolve(void *driver);
/* The hook replacing a driver entry point, found by the pointer the driver returned; NULL when
 * that pointer is not one of the hooked entries. */
void *gm_hook_for_driver_pointer(void *driver_fn);

/* ---- real_dlsym.c --------------------------------------------------------------------------- */

typedef void *(*gm_dlsym_fn)(void *, const char *);
/* glibc's dlsym, NULL until gm_dlsym_bootstrap found it; the entry stub jumps through it. */
extern _Atomic(gm_dlsym_fn) gm_real_dlsym_fn;
gm_dlsym_fn gm_dlsym_bootstrap(void);
/* The real dlsym, bootstrapped with dlvsym (never call the public dlsym internally). */
void *gm_real_dlsym(void *handle, const char *name);

#endif
