/* Fences shared by their holders (engine_fence.c). */
#ifndef GRAPHMEM_ENGINE_FENCE_H
#define GRAPHMEM_ENGINE_FENCE_H

#include "engine_internal.h"

/* Records a fence on `stream` (handed over by the caller of the current engine call). */
gm_status_t gm_fence_record(gm_engine_t *e, uint64_t stream, gm_fence_t **out);
/* Deferred fences (core/README.md, "Deferred fences"). Whether a launch on `stream` may leave its
 * fence deferred: the option, and a backend that can prove a stream idle and says the stream
 * cannot enter a capture without a join (gm_engine_join_*, engine.h). */
bool gm_fence_may_defer(const gm_engine_t *e, uint64_t stream);
/* Around the driver's call of a served launch or upload and its fence: begin takes the defer
 * lock, so no stream joins a capture between the call and the fence (a fence recorded after a
 * capture began on the stream would land in it); end returns the fence that follows the call (a
 * new reference): the stream's deferred one when `defer`, else one recorded now; NULL when
 * !launched, or when recording failed and the stream was synchronized instead. */
void gm_fence_launch_begin(gm_engine_t *e);
gm_fence_t *gm_fence_launch_end(gm_engine_t *e, uint64_t stream, bool launched, bool defer);
/* Whether f is still deferred (its stream's listed one, nothing realized it since). */
static inline bool gm_fence_still_deferred(gm_fence_t *f) {
    return atomic_load_explicit(&f->deferred, memory_order_acquire);
}
/* Realizes a deferred fence now (nothing for a recorded one or NULL). Engine lock held. It stays
 * deferred when its stream is busy and gets no event (no memory for one): then it is not done. */
void gm_fence_realize(gm_engine_t *e, gm_fence_t *f);
/* Makes `stream` wait for f unless it is done; *waited says whether a wait was enqueued.
 * GM_ERR_OUT_OF_MEMORY for a fence that stays deferred (no event to wait for). */
gm_status_t gm_fence_wait_stream(gm_engine_t *e, uint64_t stream, gm_fence_t *f, bool *waited);
void gm_fence_unref(gm_engine_t *e, gm_fence_t *f); /* NULL is fine */
/* Points *slot at f (a new reference), releasing what it held. */
void gm_fence_set(gm_engine_t *e, gm_fence_t **slot, gm_fence_t *f);
/* Whether the work before f has finished (NULL: nothing to wait for); realizes a deferred f.
 * Never blocks. */
bool gm_fence_done(gm_engine_t *e, gm_fence_t *f);
/* The same, for a question whose "no" costs nothing: a deferred f whose stream is still busy
 * stays deferred (no event recorded on a stream the caller was not handed, and the stream's
 * launches keep their fast path). */
bool gm_fence_finished(gm_engine_t *e, gm_fence_t *f);

#endif
