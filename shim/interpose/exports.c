/* The exported functions, generated from hooks.def: one per exact driver ABI name, the first of
 * graphmem's three doors (shim/README.md). This file is the top of the library: each function
 * starts graphmem, counts the call and forwards it or runs its hook, and nothing in graphmem calls
 * back into it (the doors hand out its addresses from the table in hooks.c). */
#include "doors.h"

static inline void count_call(gm_hook_id_t id) {
    atomic_fetch_add_explicit(&gm_hook_calls[id], 1, memory_order_relaxed);
}

/* A driver without the entry (older than the name) gets what a missing symbol would give the
 * caller of that driver: the call cannot be made. */
#define GM_ENTRY(name, params, call)                                                               \
    GM_EXPORT CUresult CUDAAPI name params {                                                       \
        gm_shim_init();                                                                            \
        count_call(GM_HOOK_ID_##name);                                                             \
        if (gm_real.name == NULL)                                                                  \
            return CUDA_ERROR_NOT_FOUND;                                                           \
        return call;                                                                               \
    }
#define GM_FORWARD(name, params, args) GM_ENTRY(name, params, gm_real.name args)
#define GM_HOOK(name, params, args) GM_ENTRY(name, params, gm_hook_##name args)
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
#undef GM_ENTRY
