/* Records of graph allocations and their addresses (engine_record.c). */
#ifndef GRAPHMEM_ENGINE_RECORD_H
#define GRAPHMEM_ENGINE_RECORD_H

#include "engine_internal.h"

void gm_clock_release(gm_clock_t *clock);
/* What is proven to precede a new marker of `g` that follows these `count` markers (any graph's:
 * those of other graphs prove nothing). */
gm_status_t gm_proven_before(gm_engine_t *e, gm_graph_t *g, const gm_marker_t *const *markers,
                             size_t count, gm_clock_t *out);
/* Gives `m` (attached now, its `before` set) its place on a chain of `g` when it is the marker of
 * a packed allocation or of a free of one; nothing else is ever asked about. Without host memory
 * it gets none: nothing after it is proven to follow it. */
void gm_marker_place(gm_engine_t *e, gm_graph_t *g, gm_marker_t *m);
/* Whether the alloc of `r` is proven to precede the marker whose clock is `before`. */
bool gm_proven_made(const gm_clock_t *before, const gm_record_t *r);
/* A new record of `g` with its alloc marker (not attached to a node yet) and its fixed address,
 * found by that address; `before` (what is proven to precede it) becomes its marker's. The
 * caller has reserved room in e->addresses. On error nothing is left and `before` is released. */
gm_status_t gm_record_create(gm_engine_t *e, gm_graph_t *g, const gm_alloc_params_t *params,
                             gm_clock_t before, gm_record_t **out);
/* Its node was never made: its bytes go back as they were, and the record goes unless held. */
void gm_record_abort(gm_engine_t *e, gm_record_t *r);
void gm_record_unref_check(gm_engine_t *e, gm_record_t *r); /* destroys it when unreferenced */
/* A copy of `r` owned by `g` (a clone of r's graph, GRAPHMEM_LIFT_RESTRICTIONS): the same address
 * and window, found after r by that address, its alloc marker on `node`. A window of r's own
 * becomes a chunk both hold (`chunk`, zeroed, from the caller; freed here when r has one
 * already), released with the last. `copy` comes zeroed from the caller: nothing here can fail. */
void gm_record_clone(gm_engine_t *e, gm_graph_t *g, gm_record_t *r, uint64_t node,
                     gm_chunk_t *chunk, gm_record_t *copy);
void gm_packer_destroy(gm_engine_t *e, gm_packer_t *pk);
/* `r` (of `g`) is freed in `g`, or leaves it: the graph's open run, if `r` is in it, closes. */
void gm_run_forget(gm_graph_t *g, const gm_record_t *r);

#endif
