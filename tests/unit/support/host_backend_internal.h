/* Private to the host backend's files: its tables and shared helpers. */
#ifndef GRAPHMEM_TEST_HOST_BACKEND_INTERNAL_H
#define GRAPHMEM_TEST_HOST_BACKEND_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "host_backend.h"

/* Tables are plain arrays searched linearly: tests hold at most a few thousand objects and the
 * simplicity keeps the simulator obviously right. */
typedef struct hb_reservation {
    uint64_t va, size;
} hb_reservation_t;

typedef struct hb_handle {
    int fd; /* -1 once released */
    int device;
    uint64_t size;
    uint32_t map_count;
} hb_handle_t;

typedef struct hb_mapping {
    uint64_t va, size, handle;
    uint64_t access; /* device bitmask */
} hb_mapping_t;

typedef struct hb_wait {
    uint64_t pos;       /* the item on the waiting stream */
    uint32_t on_stream; /* index of the awaited stream */
    uint64_t on_pos;    /* awaited position */
} hb_wait_t;

typedef struct hb_item {
    host_work_fn fn;
    void *arg;
} hb_item_t;

typedef struct hb_stream {
    uint64_t key;
    uint64_t submitted, completed;
    bool running;   /* worker mode: item completed + 1 is being run */
    bool capturing; /* host_backend_set_capturing */
    hb_wait_t *waits;
    size_t wait_count, wait_cap;
    hb_item_t *items; /* worker mode: item at position p is items[p - 1] */
    size_t item_cap;
} hb_stream_t;

typedef struct hb_fence {
    bool alive;
    uint32_t stream;
    uint64_t pos;
} hb_fence_t;

typedef struct hb_fault {
    uint64_t countdown;
    gm_status_t status;
} hb_fault_t;

struct host_backend {
    gm_backend_t ops;
    pthread_mutex_t lock;
    pthread_cond_t progress; /* worker mode: an item completed or was submitted */
    bool workers;
    bool defer; /* fence_may_defer's answer */
    int device_count;
    uint64_t capacity[64];
    hb_reservation_t *res;
    size_t res_count, res_cap;
    hb_handle_t *handles; /* handle id = index + 1, never reused */
    size_t handle_count, handle_cap;
    hb_mapping_t *maps;
    size_t map_count, map_cap;
    hb_stream_t *streams;
    size_t stream_count, stream_cap;
    hb_fence_t *fences; /* fence id = index + 1, never reused */
    size_t fence_count, fence_cap;
    uint64_t calls[HOST_OP_COUNT];
    hb_fault_t faults[HOST_OP_COUNT];
    uint64_t stream_waits, host_waits, misuses;
};

/* Grows *array to hold one more element; aborts on host OOM (a test cannot go on anyway). */
void *hb_grow(void *array, size_t *cap, size_t count, size_t elem);
/* Counts the call and reports an injected fault. */
bool hb_inject(host_backend_t *hb, host_op_t op, gm_status_t *status);
gm_status_t hb_misuse(host_backend_t *hb, const char *what);
bool hb_fence_may_defer(void *ctx, uint64_t stream);
gm_status_t hb_stream_idle(void *ctx, uint64_t stream);

/* host_backend_fence.c */
gm_status_t hb_fence_record(void *ctx, uint64_t stream, uint64_t *fence_out);
gm_status_t hb_fence_query(void *ctx, uint64_t fence);
gm_status_t hb_fence_wait_stream(void *ctx, uint64_t stream, uint64_t fence);
gm_status_t hb_fence_wait_host(void *ctx, uint64_t fence);
void hb_fence_destroy(void *ctx, uint64_t fence);
gm_status_t hb_stream_sync(void *ctx, uint64_t stream);

#endif
