/* Internal interface of the shim. Every file here includes cuda.h with the driver's internal view
 * (__CUDA_API_VERSION_INTERNAL), so each exact ABI name, legacy ones included, has its own
 * prototype and our definitions are checked against it. */
#ifndef GRAPHMEM_SHIM_H
#define GRAPHMEM_SHIM_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GM_EXPORT __attribute__((visibility("default")))

/* Hook ids, one per exact name of shim/hooks.def. */
typedef enum gm_hook_id {
#define GM_FORWARD(name, params, args) GM_HOOK_ID_##name,
#define GM_HOOK(name, params, args) GM_HOOK_ID_##name,
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
    GM_HOOK_COUNT
} gm_hook_id_t;

/* The driver's own entry for each hooked name (NULL when the driver lacks it). */
typedef struct gm_real_table {
#define GM_FORWARD(name, params, args) CUresult(CUDAAPI *name) params;
#define GM_HOOK(name, params, args) CUresult(CUDAAPI *name) params;
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
} gm_real_table_t;

extern gm_real_table_t gm_real;
extern _Atomic uint64_t gm_hook_calls[GM_HOOK_COUNT];

/* Hand-written hooks (GM_HOOK entries). */
#define GM_FORWARD(name, params, args)
#define GM_HOOK(name, params, args) CUresult gm_hook_##name params;
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK

/* ---- init.c: lazy start-up ------------------------------------------------------------------ */

typedef enum gm_mode {
    GM_MODE_ACTIVE = 0,  /* graphmem serves graph memory */
    GM_MODE_PASSTHROUGH, /* GRAPHMEM_DISABLE=1, or something graphmem needs is missing */
} gm_mode_t;

/* Runs start-up once (pthread_once): options, the driver library, the real table, the pointer
 * index, the exit handler. Cheap after the first call. */
void gm_shim_init(void);
gm_mode_t gm_shim_mode(void);
/* The driver library handle (dlopen of libcuda.so.1), NULL if it could not be loaded. */
void *gm_driver_handle(void);
/* Switches to pass-through for the rest of the process, with one clear message. */
void gm_shim_fall_back(const char *reason);

/* Per-thread depth of graphmem's own work: while non-zero, the dlsym override passes lookups
 * straight through (the driver's own start-up may call dlsym while graphmem loads it). */
extern _Thread_local int gm_shim_busy;

/* ---- hooks.c: the tables generated from hooks.def -------------------------------------------- */

/* Index of an exact hooked name, or -1. */
int gm_hook_find(const char *name);
/* Our exported function for hook id. */
void *gm_hook_function(int id);
/* Fills gm_real from the driver library and builds the pointer index. */
void gm_hooks_resolve(void *driver);
/* The hook replacing a driver entry point, found by the pointer the driver returned; NULL when
 * that pointer is not one of the hooked entries. */
void *gm_hook_for_driver_pointer(void *driver_fn);
extern const char *const gm_hook_names[GM_HOOK_COUNT];

/* ---- dlsym.c -------------------------------------------------------------------------------- */

/* The real dlsym, bootstrapped with dlvsym (never call the public dlsym internally). */
void *gm_real_dlsym(void *handle, const char *name);

/* ---- capture.c ------------------------------------------------------------------------------ */

/* Captures begun and not yet ended in this process: the hot path asks the driver whether a stream
 * is capturing only while this is non-zero. */
extern _Atomic long gm_captures_in_flight;
/* Whether `stream` is capturing (or a capture on it was invalidated, or the driver cannot say);
 * false at the cost of one load while no capture is in flight. */
bool gm_stream_capturing(CUstream stream, bool ptsz);

#endif
