/* The engine's backend over the CUDA driver: VMM for addresses and physical memory, events for
 * GPU order. Its calls that a GLOBAL capture forbids run in RELAXED capture mode whether or not a
 * capture was in flight when the engine's call began (GM_RELAXED_ALWAYS, captures.h): an event
 * query or host wait from a thread in GLOBAL mode would invalidate another thread's GLOBAL capture
 * (tests/probe/launch_in_capture.cu, part d), and one begun meanwhile is no exception. */
#include "backend_cuda.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "captures.h"
#include "streams.h"
#include "interpose/driver.h"
#include "log.h"
#include "util.h"

static gm_status_t status_of(CUresult result, const char *what) {
    if (result == CUDA_SUCCESS)
        return GM_OK;
    if (result == CUDA_ERROR_OUT_OF_MEMORY)
        return GM_ERR_OUT_OF_MEMORY;
    gm_log(GM_LOG_WARN, "%s failed with CUDA error %d", what, (int)result);
    return GM_ERR_BACKEND;
}

/* RELAXED here, not only by the callers: a captured allocation runs in the application's capture
 * mode and may need a new slab of address space. */
static gm_status_t va_reserve(void *ctx, uint64_t size, uint64_t *va_out) {
    (void)ctx;
    CUdeviceptr va = 0;
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuMemAddressReserve(&va, size, 0, 0, 0));
    if (r == CUDA_SUCCESS)
        *va_out = va;
    return status_of(r, "cuMemAddressReserve");
}

static gm_status_t va_release(void *ctx, uint64_t va, uint64_t size) {
    (void)ctx;
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuMemAddressFree(va, size));
    return status_of(r, "cuMemAddressFree");
}

CUmemAllocationProp gm_device_memory(int device) {
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    return prop;
}

size_t gm_device_page_size(void) {
    CUmemAllocationProp prop = gm_device_memory(0);
    size_t size = 0;
    if (gm_drv.cuMemGetAllocationGranularity(&size, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
        CUDA_SUCCESS)
        return 0;
    return size;
}

static gm_status_t handle_create(void *ctx, int device, uint64_t size, uint64_t *handle_out) {
    (void)ctx;
    CUmemAllocationProp prop = gm_device_memory(device);
    CUmemGenericAllocationHandle handle = 0;
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuMemCreate(&handle, size, &prop, 0));
    if (r == CUDA_SUCCESS)
        *handle_out = handle;
    return r == CUDA_ERROR_OUT_OF_MEMORY ? GM_ERR_OUT_OF_MEMORY : status_of(r, "cuMemCreate");
}

static gm_status_t handle_release(void *ctx, uint64_t handle) {
    (void)ctx;
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuMemRelease(handle));
    return status_of(r, "cuMemRelease");
}

static gm_status_t map(void *ctx, uint64_t va, uint64_t size, uint64_t handle) {
    (void)ctx;
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuMemMap(va, size, 0, handle, 0));
    if (r != CUDA_SUCCESS)
        gm_log(
            GM_LOG_WARN, "cuMemMap(va %#llx, size %#llx, handle %#llx) failed with CUDA error %d",
            (unsigned long long)va, (unsigned long long)size, (unsigned long long)handle, (int)r);
    return r == CUDA_SUCCESS               ? GM_OK
           : r == CUDA_ERROR_OUT_OF_MEMORY ? GM_ERR_OUT_OF_MEMORY
                                           : GM_ERR_BACKEND;
}

static gm_status_t unmap(void *ctx, uint64_t va, uint64_t size) {
    (void)ctx;
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuMemUnmap(va, size));
    if (r != CUDA_SUCCESS)
        gm_log(GM_LOG_WARN, "cuMemUnmap(va %#llx, size %#llx) failed with CUDA error %d",
               (unsigned long long)va, (unsigned long long)size, (int)r);
    return r == CUDA_SUCCESS ? GM_OK : GM_ERR_BACKEND;
}

static gm_status_t set_access(void *ctx, uint64_t va, uint64_t size, const int *devices,
                              int device_count) {
    (void)ctx;
    CUmemAccessDesc descs[GM_MAX_DEVICES];
    for (int i = 0; i < device_count && i < GM_MAX_DEVICES; i++) {
        descs[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        descs[i].location.id = devices[i];
        descs[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuMemSetAccess(va, size, descs, (size_t)device_count));
    if (r != CUDA_SUCCESS)
        gm_log(GM_LOG_WARN,
               "cuMemSetAccess(va %#llx, size %#llx, %d devices) failed with CUDA error %d",
               (unsigned long long)va, (unsigned long long)size, device_count, (int)r);
    return r == CUDA_SUCCESS ? GM_OK : GM_ERR_BACKEND;
}

/* A fence is an event of one context: an event records only on a stream of its own context.
 * Events are recycled per context, since creating one costs more than recording it. A fence
 * whose context was destroyed is `gone` (gm_backend_cuda_context_ended): its event went with the
 * context, so the driver never sees it again, and its work is over (a context's destruction waits
 * for it), so it counts as done.
 *
 * The driver forbids any call on a context while it is destroyed (cuda.h, cuCtxDestroy). A
 * context's end runs under the engine lock, as every use of an event does but two: a join's
 * (engine.h, gm_engine_join_*) realizes the deferred fence of the stream the program handed over,
 * in that stream's context, under the defer lock; and the host wait (fence_wait_host) runs
 * unlocked, so that others go on meanwhile. The host wait therefore polls, each query under
 * `event_gate`, which a context's end holds across the driver's call and the marking of its
 * fences: an end waits for one query at most, never for the GPU work a wait is after. */
typedef struct fence {
    CUevent event;
    CUcontext context;
    struct fence *next;                /* in a recycled list */
    struct fence *all_prev, *all_next; /* every fence made and not dropped (under fence_lock) */
    atomic_bool gone;
} fence_t;

static fence_t *all_fences;

#define RECYCLED_PER_CONTEXT 256

static pthread_mutex_t fence_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t event_gate = PTHREAD_MUTEX_INITIALIZER;
static struct {
    CUcontext context;
    fence_t *head;
    int count;
} recycled[GM_MAX_DEVICES];

static fence_t *fence_take(CUcontext context) {
    fence_t *f = NULL;
    pthread_mutex_lock(&fence_lock);
    for (int i = 0; i < GM_MAX_DEVICES && !f; i++)
        if (recycled[i].head && recycled[i].context == context) {
            f = recycled[i].head;
            recycled[i].head = f->next;
            recycled[i].count--;
        }
    pthread_mutex_unlock(&fence_lock);
    return f;
}

/* An event made in the calling thread's current context. */
static fence_t *fence_new(CUresult *result) {
    fence_t *f = calloc(1, sizeof *f);
    if (!f) {
        *result = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    *result = gm_drv.cuCtxGetCurrent(&f->context);
    if (*result == CUDA_SUCCESS)
        *result = gm_drv.cuEventCreate(&f->event, CU_EVENT_DISABLE_TIMING);
    if (*result != CUDA_SUCCESS) {
        free(f);
        return NULL;
    }
    pthread_mutex_lock(&fence_lock);
    GM_LIST_PUSH(all_fences, f, all_prev, all_next);
    pthread_mutex_unlock(&fence_lock);
    return f;
}

static void fence_drop(fence_t *f) {
    if (!atomic_load(&f->gone))
        gm_drv.cuEventDestroy_v2(f->event);
    pthread_mutex_lock(&fence_lock);
    GM_LIST_UNLINK(all_fences, f, all_prev, all_next);
    pthread_mutex_unlock(&fence_lock);
    free(f);
}

void gm_backend_cuda_context_ending(void) {
    pthread_mutex_lock(&event_gate);
}

void gm_backend_cuda_context_ended(CUcontext context, bool gone) {
    fence_t *drop = NULL;
    unsigned marked = 0;
    pthread_mutex_lock(&fence_lock);
    for (fence_t *f = all_fences; gone && f; f = f->all_next)
        if (f->context == context) {
            atomic_store(&f->gone, true);
            marked++;
        }
    for (int i = 0; gone && i < GM_MAX_DEVICES; i++) {
        if (!recycled[i].head || recycled[i].context != context)
            continue;
        while (recycled[i].head) { /* nobody holds them: they go now */
            fence_t *f = recycled[i].head;
            recycled[i].head = f->next;
            GM_LIST_UNLINK(all_fences, f, all_prev, all_next);
            f->next = drop;
            drop = f;
        }
        recycled[i].count = 0;
    }
    pthread_mutex_unlock(&fence_lock);
    pthread_mutex_unlock(&event_gate); /* the host waits see `gone` from now on */
    while (drop) {
        fence_t *f = drop;
        drop = f->next;
        free(f);
    }
    if (gone)
        gm_log(GM_LOG_DEBUG, "context %p gone: %u of graphmem's events with it", (void *)context,
               marked);
}

static void fence_recycle(fence_t *f);

/* Records a fence of the current context on `stream` into `*(fence_t **)fence_out` (an op of
 * in_context). When a recycled event fails to record and a new one succeeds, the old one was
 * stale (its context was destroyed and another took its address); when both fail, the stream was
 * the trouble and the old one goes back. */
static CUresult record_here(CUstream stream, void *fence_out) {
    fence_t **out = fence_out;
    CUcontext current = NULL;
    CUresult r = gm_drv.cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS)
        return r;
    fence_t *old = fence_take(current);
    if (old && (r = gm_drv.cuEventRecord(old->event, stream)) == CUDA_SUCCESS) {
        *out = old;
        return r;
    }
    fence_t *f = fence_new(&r);
    if (f && (r = gm_drv.cuEventRecord(f->event, stream)) != CUDA_SUCCESS) {
        fence_drop(f);
        f = NULL;
    }
    if (old && f)
        fence_drop(old);
    else if (old)
        fence_recycle(old);
    if (!f)
        return r;
    *out = f;
    return CUDA_SUCCESS;
}

/* Makes `context` (NULL: any) current for one call when it is not already; `*pushed` says
 * whether leave_context must pop it again. */
static CUresult enter_context(CUcontext context, bool *pushed) {
    CUcontext current = NULL;
    *pushed = false;
    if (!context || (gm_drv.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context))
        return CUDA_SUCCESS;
    CUresult r = gm_drv.cuCtxPushCurrent_v2(context);
    *pushed = r == CUDA_SUCCESS;
    return r;
}

static void leave_context(bool pushed) {
    CUcontext popped;
    if (pushed)
        gm_drv.cuCtxPopCurrent_v2(&popped);
}

/* Runs `op(stream, arg)` with `context` current. */
static CUresult in_context(CUcontext context, CUresult (*op)(CUstream, void *), CUstream stream,
                           void *arg) {
    bool pushed;
    CUresult r = enter_context(context, &pushed);
    if (r == CUDA_SUCCESS)
        r = op(stream, arg);
    leave_context(pushed);
    return r;
}

/* Runs `op` on `stream` in the current context, or, when the stream belongs to another one (a
 * launch on another device's stream, or a thread with no context at all), in the stream's own. */
static CUresult in_stream_context(CUcontext context, CUresult (*op)(CUstream, void *),
                                  CUstream stream, void *arg) {
    CUresult r = in_context(context, op, stream, arg);
    if ((r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_CONTEXT) && !context) {
        CUcontext own = NULL;
        if (gm_drv.cuStreamGetCtx(stream, &own) == CUDA_SUCCESS && own)
            r = in_context(own, op, stream, arg);
    }
    return r;
}

/* Runs `op` on the stream of `key` (one the current engine call was handed), with the context
 * current that names it: a stream may wait for an event of any context, only a default stream
 * needs its own context current to be named. `own`: in the stream's own context when the current
 * one cannot reach it (in_stream_context), as a query, a record or a host wait needs. */
static CUresult on_stream(uint64_t key, CUresult (*op)(CUstream, void *), void *arg, bool own) {
    CUcontext context;
    CUstream stream;
    if (!gm_stream_handle(key, &stream, &context))
        return CUDA_ERROR_INVALID_HANDLE; /* another thread's per-thread stream: never touched */
    return own ? in_stream_context(context, op, stream, arg) : in_context(context, op, stream, arg);
}

/* The driver's code for this thread's last fence record that failed, until asked
 * (gm_backend_cuda_record_failure). */
static _Thread_local CUresult record_failure = CUDA_ERROR_UNKNOWN;

CUresult gm_backend_cuda_record_failure(void) {
    CUresult r = record_failure;
    record_failure = CUDA_ERROR_UNKNOWN;
    return r;
}

CUresult gm_backend_cuda_sticky_or(CUresult refusal) {
    CUresult sticky = CUDA_SUCCESS;
    GM_RELAXED(sticky = gm_real.cuMemFree_v2(0));
    return sticky != CUDA_SUCCESS ? sticky : refusal;
}

static gm_status_t fence_record(void *ctx, uint64_t stream_key, uint64_t *fence_out) {
    (void)ctx;
    fence_t *f = NULL;
    CUresult r = on_stream(stream_key, record_here, &f, true);
    /* Only this record's code: one left unread by an earlier failure goes. */
    record_failure = r == CUDA_SUCCESS ? CUDA_ERROR_UNKNOWN : r;
    if (r != CUDA_SUCCESS)
        return status_of(r, "cuEventRecord");
    *fence_out = (uint64_t)(uintptr_t)f;
    return GM_OK;
}

/* Deferred fences only on streams the application created: a default stream has no handle
 * another thread can name (per-thread), or is shared by every thread of its context (legacy),
 * and every way a created stream enters a capture is hooked (shim/hooks/capture_hooks.c and
 * stream_hooks.c). */
static bool fence_may_defer(void *ctx, uint64_t stream_key) {
    (void)ctx;
    CUcontext context;
    CUstream stream;
    return gm_stream_handle(stream_key, &stream, &context) && context == NULL &&
           !gm_stream_is_default(stream);
}

static CUresult query(CUstream stream, void *unused) {
    (void)unused;
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuStreamQuery(stream));
    return r;
}

static gm_status_t stream_idle(void *ctx, uint64_t stream_key) {
    (void)ctx;
    CUresult r = on_stream(stream_key, query, NULL, true); /* another thread's: a handle error */
    if (r == CUDA_ERROR_NOT_READY)
        return GM_ERR_NOT_READY;
    /* Gone with its context, or with the driver at the process's exit (the runtime's teardown
     * releases the primary context after the driver began to deinitialize): the engine logs it. */
    if (r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_INVALID_CONTEXT ||
        r == CUDA_ERROR_CONTEXT_IS_DESTROYED || r == CUDA_ERROR_DEINITIALIZED)
        return GM_ERR_INVALID_VALUE;
    return status_of(r, "cuStreamQuery");
}

static CUevent event_of(uint64_t fence) {
    return ((fence_t *)(uintptr_t)fence)->event;
}

/* Queries and host waits need no current context: a trim from a thread that never used the
 * runtime works (tests/probe/launch_in_capture.cu, part c). */
static bool gone(uint64_t fence) {
    return atomic_load(&((fence_t *)(uintptr_t)fence)->gone);
}

static gm_status_t fence_query(void *ctx, uint64_t fence) {
    (void)ctx;
    if (gone(fence))
        return GM_OK;
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuEventQuery(event_of(fence)));
    if (r == CUDA_ERROR_NOT_READY)
        return GM_ERR_NOT_READY;
    return status_of(r, "cuEventQuery");
}

static CUresult wait_event(CUstream stream, void *event) {
    return gm_drv.cuStreamWaitEvent(stream, event, 0);
}

static gm_status_t fence_wait_stream(void *ctx, uint64_t stream_key, uint64_t fence) {
    (void)ctx;
    if (gone(fence))
        return GM_OK;
    return status_of(on_stream(stream_key, wait_event, event_of(fence), false),
                     "cuStreamWaitEvent");
}

/* Yields 64 times, then sleeps from 50 µs, doubling up to 1 ms: a wait for a run that ends soon
 * returns soon, one for a long run costs little. No cancellation point (gm_nap): the waiting
 * launch holds a reference to the fence. */
static void back_off(unsigned round) {
    if (round < 64) {
        sched_yield();
        return;
    }
    unsigned shift = round - 64 < 5 ? round - 64 : 5;
    gm_nap((50000L << shift) > 1000000L ? 1000000L : 50000L << shift);
}

/* Unlocked (the engine's lock is released meanwhile): polls, each query under the event gate, so
 * that a context's end never destroys the event under a call (fence_t). */
static gm_status_t fence_wait_host(void *ctx, uint64_t fence) {
    (void)ctx;
    fence_t *f = (fence_t *)(uintptr_t)fence;
    for (unsigned round = 0;; round++) {
        pthread_mutex_lock(&event_gate);
        CUresult r = CUDA_SUCCESS;
        if (!atomic_load(&f->gone))
            GM_RELAXED_ALWAYS(r = gm_drv.cuEventQuery(f->event));
        pthread_mutex_unlock(&event_gate);
        if (r != CUDA_ERROR_NOT_READY)
            return status_of(r, "cuEventQuery");
        back_off(round);
    }
}

static CUresult synchronize(CUstream stream, void *unused) {
    (void)unused;
    CUresult r;
    GM_RELAXED_ALWAYS(r = gm_drv.cuStreamSynchronize(stream));
    return r;
}

static gm_status_t stream_sync(void *ctx, uint64_t stream_key) {
    (void)ctx;
    /* In the stream's own context when no context is current (a trim's thread may have none),
     * as its query and its event record are. */
    return status_of(on_stream(stream_key, synchronize, NULL, true), "cuStreamSynchronize");
}

static void fence_recycle(fence_t *f) {
    if (atomic_load(&f->gone)) {
        fence_drop(f);
        return;
    }
    pthread_mutex_lock(&fence_lock);
    int slot = -1;
    for (int i = 0; i < GM_MAX_DEVICES && slot < 0; i++)
        if (recycled[i].head && recycled[i].context == f->context)
            slot = i;
    for (int i = 0; i < GM_MAX_DEVICES && slot < 0; i++)
        if (!recycled[i].head)
            slot = i;
    if (slot >= 0 && recycled[slot].count < RECYCLED_PER_CONTEXT) {
        recycled[slot].context = f->context;
        f->next = recycled[slot].head;
        recycled[slot].head = f;
        recycled[slot].count++;
        f = NULL;
    }
    pthread_mutex_unlock(&fence_lock);
    if (f)
        fence_drop(f);
}

static void fence_destroy(void *ctx, uint64_t fence) {
    (void)ctx;
    fence_recycle((fence_t *)(uintptr_t)fence);
}

void gm_backend_cuda_init(gm_backend_t *backend, uint64_t granularity) {
    *backend = (gm_backend_t){
        .ctx = NULL,
        .granularity = granularity,
        .va_reserve = va_reserve,
        .va_release = va_release,
        .handle_create = handle_create,
        .handle_release = handle_release,
        .map = map,
        .unmap = unmap,
        .set_access = set_access,
        .fence_record = fence_record,
        .fence_query = fence_query,
        .fence_wait_stream = fence_wait_stream,
        .fence_wait_host = fence_wait_host,
        .fence_destroy = fence_destroy,
        .stream_sync = stream_sync,
        .fence_may_defer = fence_may_defer,
        .stream_idle = stream_idle,
    };
}

void gm_backend_cuda_forget_after_fork(void) {
    /* The parent's events are not valid in the child: forget them without destroying (their
     * memory stays: another thread may have held the lock at the fork). */
    pthread_mutex_init(&fence_lock, NULL);
    pthread_mutex_init(&event_gate, NULL);
    memset(recycled, 0, sizeof recycled);
    all_fences = NULL;
}
