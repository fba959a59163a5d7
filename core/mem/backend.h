/* The only way core/ reaches a device. shim/ implements it with the CUDA driver (VMM + events);
 * tests implement it over host memory (memfd + mmap, simulated fences, fault injection).
 *
 * Contract, for every operation: returns GM_OK or an error status and, on error, changes nothing
 * (no half-done mapping, no leaked handle). Sizes and addresses passed to va_*, map, unmap and
 * set_access are multiples of `granularity`. Handles are mapped whole (a VMM mapping cannot start
 * inside a handle), and one handle may be mapped at many addresses at once (aliasing).
 *
 * Fences model GPU order: fence_record marks everything enqueued on a stream so far; nothing may be
 * unmapped, remapped or handed to another stream before a fence proves its last user finished. */
#ifndef GRAPHMEM_BACKEND_H
#define GRAPHMEM_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

typedef struct gm_backend {
    void *ctx;
    uint64_t granularity; /* physical page size, 2 MiB on current GPUs */

    /* Virtual address space: reserve a range nobody else in the process will get. */
    gm_status_t (*va_reserve)(void *ctx, uint64_t size, uint64_t *va_out);
    gm_status_t (*va_release)(void *ctx, uint64_t va, uint64_t size);

    /* Physical memory on `device`. GM_ERR_OUT_OF_MEMORY when the device has none left. */
    gm_status_t (*handle_create)(void *ctx, int device, uint64_t size, uint64_t *handle_out);
    gm_status_t (*handle_release)(void *ctx, uint64_t handle);

    /* Map the whole handle at va (size = the handle's size); unmap exactly such a range. */
    gm_status_t (*map)(void *ctx, uint64_t va, uint64_t size, uint64_t handle);
    gm_status_t (*unmap)(void *ctx, uint64_t va, uint64_t size);
    /* Give each listed device read-write access to a mapped range. */
    gm_status_t (*set_access)(void *ctx, uint64_t va, uint64_t size, const int *devices,
                              int device_count);

    /* GPU order. Streams are opaque identities chosen by the caller. */
    gm_status_t (*fence_record)(void *ctx, uint64_t stream, uint64_t *fence_out);
    gm_status_t (*fence_query)(void *ctx, uint64_t fence); /* GM_OK done, GM_ERR_NOT_READY */
    gm_status_t (*fence_wait_stream)(void *ctx, uint64_t stream, uint64_t fence);
    gm_status_t (*fence_wait_host)(void *ctx, uint64_t fence);
    void (*fence_destroy)(void *ctx, uint64_t fence);
    /* Waits on the host for everything enqueued on `stream` (a stream the current call was handed):
     * the proof left when a fence cannot be recorded after a launch. */
    gm_status_t (*stream_sync)(void *ctx, uint64_t stream);
    /* Optional (NULL: every launch records its fence at once). Whether a launch on `stream` may
     * leave its fence deferred, to be realized later by a call that was not handed the stream:
     * only for a stream whose every way into a capture passes gm_engine_stream_join, and that
     * any thread may name. stream_idle then says whether everything enqueued on it finished
     * (GM_OK, GM_ERR_NOT_READY), and fence_record may be called for it from any thread. */
    bool (*fence_may_defer)(void *ctx, uint64_t stream);
    gm_status_t (*stream_idle)(void *ctx, uint64_t stream);
} gm_backend_t;

#endif
