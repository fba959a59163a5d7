/* The exported functions, generated from hooks.def: one per exact driver ABI name, the first of
 * graphmem's three doors (shim/README.md). This file is the top of the library: each function
 * starts graphmem, counts the call (when the counts will be shown) and forwards it or runs its
 * hook, and nothing in graphmem calls back into it (the doors hand out its addresses from the
 * table in hooks.c). A call forwarded while its hook is idle reads gm_shim_hot and gm_real only. */
#include "doors.h"
#include "frontier_lock.h"
#include "stats.h"

_Static_assert(GM_STAT_COUNT + GM_HOOK_COUNT <= GM_TALLY_SLOTS,
               "the per-thread counters (core/common/tally.h) need a slot for every hook");

/* The lock is let go when the entry returns, and also when the thread is cancelled inside the
 * driver's call (the cancellation's unwinding runs this: the shim is compiled with -fexceptions,
 * shim/CMakeLists.txt), or later calls on the stream would wait for good. */
static void let_go(gm_frontier_hold_t **held) {
    gm_frontier_unlock(*held);
}

/* A driver without the entry (older than the name) gets what a missing symbol would give the
 * caller of that driver: the call cannot be made. A call on `stream` holds the stream's frontier
 * lock over the hook or the driver's call while a capture is in flight (frontier_lock.h), and one
 * made without it takes the stream's mark away if a capture began meanwhile
 * (gm_frontier_after_unlocked); a name that takes no stream passes NULL, for which both fold
 * away. */
#define GM_ENTRY(name, params, args, idle, stream, hold, call)                                     \
    GM_EXPORT CUresult CUDAAPI name params {                                                       \
        gm_shim_init();                                                                            \
        if (atomic_load_explicit(&gm_shim_hot.count_calls, memory_order_relaxed))                  \
            gm_stat_call(GM_HOOK_ID_##name);                                                       \
        if (gm_real.name == NULL)                                                                  \
            return CUDA_ERROR_NOT_FOUND;                                                           \
        if (idle) {                                                                                \
            CUresult unlocked_result = gm_real.name args;                                          \
            gm_frontier_after_unlocked(stream);                                                    \
            return unlocked_result;                                                                \
        }                                                                                          \
        if (GM_FRONTIER_##hold == GM_FRONTIER_NONE)                                                \
            return call; /* the hook locks for itself */                                           \
        if (!gm_frontier_lock_needed(stream, GM_FRONTIER_##hold)) {                                \
            CUresult unlocked_result = call;                                                       \
            gm_frontier_after_unlocked(stream);                                                    \
            return unlocked_result;                                                                \
        }                                                                                          \
        gm_frontier_hold_t frontier_hold;                                                          \
        gm_frontier_lock(&frontier_hold, stream, GM_FRONTIER_##hold);                              \
        gm_frontier_hold_t *held __attribute__((cleanup(let_go))) = &frontier_hold;                \
        return call;                                                                               \
    }
/* The routing tests' copy of the library calls every hook, idle or not (shim/CMakeLists.txt):
 * the same driver calls must come out, or a hook does more than forward while hooks.def says it is
 * idle. */
#ifdef GRAPHMEM_EVERY_HOOK_CALLED
#define GM_IDLE_SHORTCUT(idle) false
#else
#define GM_IDLE_SHORTCUT(idle) (idle)
#endif
#define GM_FORWARD(name, params, args)                                                             \
    GM_ENTRY(name, params, args, true, NULL, SHARED, gm_real.name args)
#define GM_HOOK(name, params, args, idle)                                                          \
    GM_ENTRY(name, params, args, GM_IDLE_SHORTCUT(GM_IDLE_##idle), NULL, SHARED,                   \
             gm_hook_##name args)
#define GM_HOOK_ON(name, params, args, idle, stream, hold)                                         \
    GM_ENTRY(name, params, args, GM_IDLE_SHORTCUT(GM_IDLE_##idle), stream, hold,                   \
             gm_hook_##name args)
/* Forwarded without a hook, the entry alone: idle while no capture is in flight or no engine
 * runs, the lock's own test. */
#define GM_ENQUEUE(name, params, args, stream)                                                     \
    GM_ENTRY(name, params, args, GM_IDLE_SHORTCUT(GM_IDLE_NO_CAPTURE_OR_ENGINE), stream, SHARED,   \
             gm_real.name args)
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
#undef GM_HOOK_ON
#undef GM_ENQUEUE
#undef GM_ENTRY
#undef GM_IDLE_SHORTCUT
