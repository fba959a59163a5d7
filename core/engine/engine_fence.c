/* Fences shared by their holders. A fence is recorded only by the call that enqueued the work it
 * follows, on the stream that call was handed: recording later, or on another stream, could land
 * in a capture that began in between (an event record captured into someone's graph, or an error
 * that invalidates it). Queries never block; the engine never waits on the host under its lock. */
#include "engine_fence.h"

#include <stdlib.h>

gm_status_t gm_fence_record(gm_engine_t *e, uint64_t stream, gm_fence_t **out) {
    gm_fence_t *f = calloc(1, sizeof *f);
    if (!f)
        return GM_ERR_OUT_OF_MEMORY;
    gm_status_t st = e->backend.fence_record(e->backend.ctx, stream, &f->handle);
    if (st != GM_OK) {
        free(f);
        return st;
    }
    f->refs = 1;
    *out = f;
    return GM_OK;
}

void gm_fence_unref(gm_engine_t *e, gm_fence_t *f) {
    if (f && --f->refs == 0) {
        e->backend.fence_destroy(e->backend.ctx, f->handle);
        free(f);
    }
}

void gm_fence_set(gm_engine_t *e, gm_fence_t **slot, gm_fence_t *f) {
    if (f)
        f->refs++;
    gm_fence_unref(e, *slot);
    *slot = f;
}

bool gm_fence_done(gm_engine_t *e, gm_fence_t *f) {
    if (!f || f->done)
        return true;
    f->done = e->backend.fence_query(e->backend.ctx, f->handle) == GM_OK;
    return f->done;
}
