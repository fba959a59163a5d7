/* A gm_backend_t over host memory, for testing core/ on any CPU.
 *
 * Aliasing is real: a reservation is a PROT_NONE mmap, a handle is a memfd, a mapping is a
 * MAP_SHARED|MAP_FIXED view of the whole memfd, so two mappings of one handle see the same bytes.
 * Access (set_access) makes a mapping readable and writable and records which devices got it.
 *
 * GPU order is simulated: every stream is a queue of work items. The test submits items (what
 * the shim's launches would enqueue) and completes them; fence_record marks the queue's current
 * end; fence_wait_stream adds an item that cannot complete before the awaited fence;
 * fence_wait_host completes everything the fence covers (and what that depends on).
 *
 * Worker mode (host_backend_use_workers) plays a GPU that runs concurrently with the host: items
 * carry work (a function), worker threads run them with host_backend_run_next in queue order once
 * their waits are complete, and host waits block until the workers got there. A test can then
 * launch from several threads while the "GPU" really reads and writes the mapped memory.
 *
 * Misuse that a real driver would refuse or that would corrupt memory (mapping over a mapping,
 * releasing a mapped handle, unmapping something not mapped, ...) fails with
 * GM_ERR_INVALID_VALUE and is counted: host_backend_check_clean() reports it. */
#ifndef GRAPHMEM_TEST_HOST_BACKEND_H
#define GRAPHMEM_TEST_HOST_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

typedef struct host_backend host_backend_t;

typedef enum host_op {
    HOST_OP_VA_RESERVE = 0,
    HOST_OP_VA_RELEASE,
    HOST_OP_HANDLE_CREATE,
    HOST_OP_HANDLE_RELEASE,
    HOST_OP_MAP,
    HOST_OP_UNMAP,
    HOST_OP_SET_ACCESS,
    HOST_OP_FENCE_RECORD,
    HOST_OP_FENCE_QUERY,
    HOST_OP_FENCE_WAIT_STREAM,
    HOST_OP_FENCE_WAIT_HOST,
    HOST_OP_STREAM_SYNC,
    HOST_OP_STREAM_IDLE,
    HOST_OP_COUNT,
} host_op_t;

const char *host_op_name(host_op_t op);

/* `granularity` must be a multiple of the system page size. */
host_backend_t *host_backend_create(uint64_t granularity, int device_count);
void host_backend_destroy(host_backend_t *hb);
const gm_backend_t *host_backend_ops(host_backend_t *hb);

/* Physical memory per device: handle_create fails with GM_ERR_OUT_OF_MEMORY beyond it (0 = no
 * limit). */
void host_backend_set_capacity(host_backend_t *hb, int device, uint64_t bytes);

/* Fault injection: the nth call (1 = the next one) of `op` from now fails with `status` and
 * changes nothing. One pending fault per op; n = 0 cancels. */
void host_backend_fail_nth(host_backend_t *hb, host_op_t op, uint64_t nth, gm_status_t status);
uint64_t host_backend_calls(const host_backend_t *hb, host_op_t op);
/* Calls of every operation together. */
uint64_t host_backend_total_calls(const host_backend_t *hb);
void host_backend_reset_calls(host_backend_t *hb);

/* Simulated queues. submit returns the new item's position (1, 2, ...) on the stream. */
uint64_t host_backend_submit(host_backend_t *hb, uint64_t stream);

typedef void (*host_work_fn)(void *arg);
/* Worker mode; call before anything is submitted. */
void host_backend_use_workers(host_backend_t *hb);
/* An item that runs `fn(arg)` when a worker reaches it, after item `after_pos` of stream
 * `after_stream` completed (after_pos 0: no such wait; how a driver orders the launches of one
 * exec on different streams). */
uint64_t host_backend_submit_work(host_backend_t *hb, uint64_t stream, host_work_fn fn, void *arg,
                                  uint64_t after_stream, uint64_t after_pos);
/* Worker mode: runs the next item of `stream` when it may start (outside the backend's lock),
 * then completes it. Returns false when none could run; then waits up to `wait_ms` for news. */
bool host_backend_run_next(host_backend_t *hb, uint64_t stream, int wait_ms);
/* Worker mode: blocks until every item submitted so far completed. */
void host_backend_drain(host_backend_t *hb);
/* Completes items of `stream` up to position `up_to`, stopping before an item whose awaited
 * fence is not complete. Returns the position now completed. */
uint64_t host_backend_complete(host_backend_t *hb, uint64_t stream, uint64_t up_to);
void host_backend_complete_all(host_backend_t *hb);
uint64_t host_backend_completed(const host_backend_t *hb, uint64_t stream);
uint64_t host_backend_stream_waits(const host_backend_t *hb); /* fence_wait_stream calls done */
uint64_t host_backend_host_waits(const host_backend_t *hb);   /* fence_wait_host calls done */

/* Deferred fences (core/README.md): on by default for every stream; off, every launch records
 * its fence at once. */
void host_backend_set_deferral(host_backend_t *hb, bool on);
/* A simulated capture on `stream`: while it lasts, a fence recorded, a query or a synchronize on
 * the stream is misuse (graphmem would have broken someone's capture; a wait enqueued by a launch
 * that the driver then refuses for the capture is not). Begin through the engine's
 * join (gm_engine_join_begin/end), as the shim does. */
void host_backend_set_capturing(host_backend_t *hb, uint64_t stream, bool capturing);
bool host_backend_capturing(host_backend_t *hb, uint64_t stream);

/* What exists now. */
typedef struct host_backend_counts {
    uint64_t reservations, reserved_bytes;
    uint64_t handles, handle_bytes;
    uint64_t mappings, mapped_bytes;
    uint64_t fences;
    uint64_t misuses; /* refused calls that a correct caller never makes */
} host_backend_counts_t;

host_backend_counts_t host_backend_counts(const host_backend_t *hb);
/* Bytes of handles of `device` now held. */
uint64_t host_backend_device_bytes(const host_backend_t *hb, int device);
/* Bitmask of devices with access to the mapping containing `va`; 0 when not mapped or mapped
 * without access. */
uint64_t host_backend_access(host_backend_t *hb, uint64_t va);
/* The handle mapped at `va` (0 when none) and its size. */
uint64_t host_backend_handle_at(host_backend_t *hb, uint64_t va, uint64_t *size_out);

/* True when nothing is reserved, held, mapped or pending and no misuse happened; otherwise
 * prints what is left to stderr. */
bool host_backend_check_clean(const host_backend_t *hb);

#endif
