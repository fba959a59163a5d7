/* Fences shared by their holders (engine_fence.c). */
#ifndef GRAPHMEM_ENGINE_FENCE_H
#define GRAPHMEM_ENGINE_FENCE_H

#include "engine_internal.h"

/* Records a fence on `stream` (handed over by the caller of the current engine call). */
gm_status_t gm_fence_record(gm_engine_t *e, uint64_t stream, gm_fence_t **out);
void gm_fence_unref(gm_engine_t *e, gm_fence_t *f); /* NULL is fine */
/* Points *slot at f (a new reference), releasing what it held. */
void gm_fence_set(gm_engine_t *e, gm_fence_t **slot, gm_fence_t *f);
/* Whether the work before f has finished (NULL: nothing to wait for). Never blocks. */
bool gm_fence_done(gm_engine_t *e, gm_fence_t *f);

#endif
