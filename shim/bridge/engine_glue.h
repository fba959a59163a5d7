/* The engine as the shim sees it: created on the first graph-memory operation, with the CUDA
 * backend, once the driver has shown it has what graphmem needs (VMM, memory pools, the capture
 * entries). Otherwise graphmem warns once and passes everything through. */
#ifndef GRAPHMEM_ENGINE_GLUE_H
#define GRAPHMEM_ENGINE_GLUE_H

#include "captures.h"
#include "engine.h"
#include "interpose/shim.h"

/* The engine, or NULL when graphmem passes through (disabled, unsupported, failed). */
gm_engine_t *gm_glue_engine(void);
/* The engine if it exists already (gm_shim_hot.engine); never creates it (for hooks that only
 * matter once it does). Inline: every forwarded free asks it. */
static inline gm_engine_t *gm_glue_engine_if_started(void) {
    if (gm_shim_mode() != GM_MODE_ACTIVE)
        return NULL;
    return atomic_load_explicit(&gm_shim_hot.engine, memory_order_acquire);
}
/* The driver's number of devices (0 before the engine starts). */
int gm_glue_device_count(void);

/* Whether anything is known of `graph` (NULL: never) in the engine or the registry of nested
 * graphs: a marker went into it, a child or body was added, a node of it touches graph memory. */
bool gm_graph_known(gm_engine_t *engine, CUgraph graph);
/* `graph` was just made by the driver (created, a capture's, a clone, a child node's copy, a
 * conditional body, a device-launch copy): anything known in the engine or the registry of nested
 * graphs under its handle belongs to a graph that died without graphmem's seeing it (the driver
 * destroys a failed capture's graph itself), and is forgotten now, before anything is added to the
 * new graph; no note of a capture names the handle any more, and an end in flight no longer takes
 * it for its capture's graph (joins.h). Costs two short lock holds when nothing is known (the
 * usual case). The graphs nested in a copy (its own child graphs and bodies) get new handles too
 * and are not walked. */
void gm_graph_forget_stale(CUgraph graph);

CUresult gm_cuda_result(gm_status_t status);

/* GRAPHMEM_UAF_CHECK (nothing else: a no-op without it): once a free is done or a launch has run,
 * nothing freed may stay mapped, so a late access faults. Waits for `stream` first when `wait`
 * (the work the free or the launch was ordered after), then trims every device. */
void gm_uaf_unmap_freed(gm_engine_t *engine, bool wait, CUstream stream, bool ptsz);

/* A driver call the engine makes inside its critical section (gm_driver_call_t): the engine's own
 * driver calls run in RELAXED capture mode while a capture is in flight, the application's call
 * in the application's mode, exactly as it would run without graphmem. Begin before the engine
 * call, end after it; `result` is the driver's code. */
typedef struct gm_app_call {
    CUresult (*fn)(void *args);
    void *args;
    gm_relaxed_t relaxed;
    CUresult result;
} gm_app_call_t;
gm_driver_call_t gm_app_call_begin(gm_app_call_t *call, CUresult (*fn)(void *), void *args);
void gm_app_call_end(gm_app_call_t *call);

/* Around a driver call by which `stream` may join a capture (begin capture, waiting for an event;
 * every_stream: a context going away): the engine's deferred fence on it is realized first, and
 * none is deferred on it until the end (core/README.md, "Deferred fences"). Default streams never
 * carry one and cost nothing. */
typedef struct gm_join {
    gm_engine_t *engine; /* NULL: nothing to end */
    bool fast;           /* gm_engine_join_fast's answer */
} gm_join_t;
gm_join_t gm_join_begin(CUstream stream, bool ptsz, bool every_stream);
void gm_join_end(gm_join_t join);

#endif
