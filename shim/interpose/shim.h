/* What every file of the shim includes first: cuda.h with the driver's internal view
 * (__CUDA_API_VERSION_INTERNAL), so each exact ABI name, legacy ones included, has its own
 * prototype and our definitions are checked against it; the hook ids, the driver's own pointers
 * (gm_real) and the hook declarations generated from hooks.def; and what start-up (init.c) offers
 * the rest of the shim. It lives in interpose/ because everything it declares is made there, and
 * bridge/ and hooks/ sit on top of it. What only the doors need is in doors.h. */
#ifndef GRAPHMEM_SHIM_H
#define GRAPHMEM_SHIM_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <sched.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hook ids, one per exact name of shim/interpose/hooks.def. */
typedef enum gm_hook_id {
#define GM_FORWARD(name, params, args) GM_HOOK_ID_##name,
#define GM_HOOK(name, params, args, idle) GM_HOOK_ID_##name,
#define GM_HOOK_ON(name, params, args, idle, stream, hold) GM_HOOK_ID_##name,
#define GM_ENQUEUE(name, params, args, stream) GM_HOOK_ID_##name,
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
#undef GM_HOOK_ON
#undef GM_ENQUEUE
    GM_HOOK_COUNT
} gm_hook_id_t;

/* The driver's own entry for each hooked name (NULL when the driver lacks it). */
typedef struct gm_real_table {
#define GM_FORWARD(name, params, args) CUresult(CUDAAPI *name) params;
#define GM_HOOK(name, params, args, idle) CUresult(CUDAAPI *name) params;
#define GM_HOOK_ON(name, params, args, idle, stream, hold) CUresult(CUDAAPI *name) params;
#define GM_ENQUEUE(name, params, args, stream) CUresult(CUDAAPI *name) params;
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
#undef GM_HOOK_ON
#undef GM_ENQUEUE
} gm_real_table_t;

extern gm_real_table_t gm_real;

/* The driver's entry for `name` as called through a plain entry or through its per-thread default
 * stream twin `name_ptsz` (ptsz true), the two side by side in hooks.def and so in gm_real. Hooks
 * serve both twins with one body and a `ptsz` flag; this is the one place that turns the flag back
 * into the entry. A name without a twin in the list, or a twin of another signature, does not
 * compile. */
#define GM_REAL_PT(name, ptsz) ((ptsz) ? gm_real.name##_ptsz : gm_real.name)

/* Hand-written hooks (GM_HOOK entries). */
#define GM_FORWARD(name, params, args)
#define GM_HOOK(name, params, args, idle) CUresult gm_hook_##name params;
#define GM_HOOK_ON(name, params, args, idle, stream, hold) CUresult gm_hook_##name params;
#define GM_ENQUEUE(name, params, args, stream)
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
#undef GM_HOOK_ON
#undef GM_ENQUEUE

/* ---- init.c: lazy start-up ------------------------------------------------------------------ */

typedef enum gm_mode {
    GM_MODE_ACTIVE = 0,  /* graphmem serves graph memory */
    GM_MODE_PASSTHROUGH, /* GRAPHMEM_DISABLE=1, or something graphmem needs is missing */
} gm_mode_t;

/* The words an exported entry reads before it forwards a call as it is, alone on one cache line
 * (defined in init.c; each field is written where its comment says). A forwarded call that also
 * touched a hook's code and data on other lines and pages cost the driver's alloc + free pair
 * about 20 ns more on an H200 host; the entry alone, reading this line and gm_real's, cost
 * nothing measurable (bench/RESULTS.md, "Forwarded calls on one cache line"). */
typedef struct gm_shim_hot {
    /* aligned (and so sized) to a line of its own */
    _Alignas(64) atomic_int init_done; /* init.c: start-up finished (doors.h, gm_shim_init) */
    _Atomic gm_mode_t mode;            /* init.c: read on every hook, gm_shim_mode */
    /* init.c: the per-hook call counts will be read (statistics printed or written at exit) */
    atomic_bool count_calls;
    /* hooks/capture_hooks.c: captures begun and not yet ended (asked through bridge/captures.h,
     * gm_no_capture_anywhere) */
    _Atomic long captures_in_flight;
    /* bridge/engine_glue.c: the engine once started (gm_glue_engine_if_started) */
    _Atomic(struct gm_engine *) engine;
} gm_shim_hot_t;

extern gm_shim_hot_t gm_shim_hot;
_Static_assert(sizeof(gm_shim_hot_t) == 64, "gm_shim_hot fills one cache line");

static inline gm_mode_t gm_shim_mode(void) {
    return atomic_load_explicit(&gm_shim_hot.mode, memory_order_relaxed);
}

/* When a hook has nothing to do and its exported entry forwards the call as it is, without
 * calling it (hooks.def, GM_HOOK's last argument): a test of gm_shim_hot alone, the hook's own
 * first test or a stricter one (NO_ENGINE ignores the mode, which the hooks also check). Relaxed
 * loads: a capture or an engine that begins meanwhile is one the call was not ordered after. The
 * event records, event destroys and waits ask for the engine again after the driver's call; one
 * that starts during the call costs them an event-order mark, a hint (core/README.md, "Event
 * order"), never a proof, and no served launch exists yet then. */
#define GM_IDLE_NEVER false
#define GM_IDLE_NO_CAPTURE                                                                         \
    (atomic_load_explicit(&gm_shim_hot.captures_in_flight, memory_order_relaxed) == 0)
#define GM_IDLE_NO_ENGINE (atomic_load_explicit(&gm_shim_hot.engine, memory_order_relaxed) == NULL)
#define GM_IDLE_NO_CAPTURE_OR_ENGINE (GM_IDLE_NO_CAPTURE || GM_IDLE_NO_ENGINE)

/* The driver library handle (dlopen of libcuda.so.1), NULL if it could not be loaded. */
void *gm_driver_handle(void);
/* Switches to pass-through for the rest of the process, with one clear message. */
void gm_shim_fall_back(const char *reason);
/* The CPUs the thread that started graphmem (by its first call into the driver) was allowed, NULL
 * when unknown: where graphmem's own threads run (bridge/side_work.c), rather than where the
 * thread that happens to make one was pinned since. */
const cpu_set_t *gm_start_cpus(void);

/* Per-thread depth of graphmem's own work: while non-zero, the dlsym override passes lookups
 * straight through (the driver's own start-up may call dlsym while graphmem loads it). */
extern _Thread_local int gm_shim_busy;

#endif
