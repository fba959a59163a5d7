/* The engine's backend over the CUDA driver: VMM for addresses and physical memory, events for
 * GPU order. Called only from inside engine calls, which the glue brackets in RELAXED capture
 * mode, so none of these calls can invalidate an application's capture. */
#include "backend_cuda.h"

#include <pthread.h>
#include <stdlib.h>

#include "driver.h"
#include "log.h"
#include "streams.h"

static gm_status_t status_of(CUresult result, const char *what) {
    if (result == CUDA_SUCCESS)
        return GM_OK;
    if (result == CUDA_ERROR_OUT_OF_MEMORY)
        return GM_ERR_OUT_OF_MEMORY;
    gm_log(GM_LOG_WARN, "%s failed with CUDA error %d", what, (int)result);
    return GM_ERR_BACKEND;
}

static gm_status_t va_reserve(void *ctx, uint64_t size, uint64_t *va_out) {
    (void)ctx;
    CUdeviceptr va = 0;
    CUresult r = gm_drv.cuMemAddressReserve(&va, size, 0, 0, 0);
    if (r == CUDA_SUCCESS)
        *va_out = va;
    return status_of(r, "cuMemAddressReserve");
}

static gm_status_t va_release(void *ctx, uint64_t va, uint64_t size) {
    (void)ctx;
    return status_of(gm_drv.cuMemAddressFree(va, size), "cuMemAddressFree");
}

static gm_status_t handle_create(void *ctx, int device, uint64_t size, uint64_t *handle_out) {
    (void)ctx;
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    CUmemGenericAllocationHandle handle = 0;
    CUresult r = gm_drv.cuMemCreate(&handle, size, &prop, 0);
    if (r == CUDA_SUCCESS)
        *handle_out = handle;
    return r == CUDA_ERROR_OUT_OF_MEMORY ? GM_ERR_OUT_OF_MEMORY : status_of(r, "cuMemCreate");
}

static gm_status_t handle_release(void *ctx, uint64_t handle) {
    (void)ctx;
    return status_of(gm_drv.cuMemRelease(handle), "cuMemRelease");
}

static gm_status_t map(void *ctx, uint64_t va, uint64_t size, uint64_t handle) {
    (void)ctx;
    CUresult r = gm_drv.cuMemMap(va, size, 0, handle, 0);
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
    CUresult r = gm_drv.cuMemUnmap(va, size);
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
    CUresult r = gm_drv.cuMemSetAccess(va, size, descs, (size_t)device_count);
    if (r != CUDA_SUCCESS)
        gm_log(GM_LOG_WARN,
               "cuMemSetAccess(va %#llx, size %#llx, %d devices) failed with CUDA error %d",
               (unsigned long long)va, (unsigned long long)size, device_count, (int)r);
    return r == CUDA_SUCCESS ? GM_OK : GM_ERR_BACKEND;
}

/* Events are recycled: creating one costs more than recording it. */
static pthread_mutex_t event_lock = PTHREAD_MUTEX_INITIALIZER;
static CUevent free_events[256];
static int free_event_count;

static gm_status_t fence_record(void *ctx, uint64_t stream, uint64_t *fence_out) {
    (void)ctx;
    CUevent event = NULL;
    pthread_mutex_lock(&event_lock);
    if (free_event_count > 0)
        event = free_events[--free_event_count];
    pthread_mutex_unlock(&event_lock);
    if (event == NULL) {
        CUresult r = gm_drv.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS)
            return status_of(r, "cuEventCreate");
    }
    CUresult r = gm_drv.cuEventRecord(event, gm_stream_handle(stream));
    if (r != CUDA_SUCCESS) {
        gm_drv.cuEventDestroy_v2(event);
        return status_of(r, "cuEventRecord");
    }
    *fence_out = (uint64_t)(uintptr_t)event;
    return GM_OK;
}

static gm_status_t fence_query(void *ctx, uint64_t fence) {
    (void)ctx;
    CUresult r = gm_drv.cuEventQuery((CUevent)(uintptr_t)fence);
    if (r == CUDA_ERROR_NOT_READY)
        return GM_ERR_NOT_READY;
    return status_of(r, "cuEventQuery");
}

static gm_status_t fence_wait_stream(void *ctx, uint64_t stream, uint64_t fence) {
    (void)ctx;
    return status_of(
        gm_drv.cuStreamWaitEvent(gm_stream_handle(stream), (CUevent)(uintptr_t)fence, 0),
        "cuStreamWaitEvent");
}

static gm_status_t fence_wait_host(void *ctx, uint64_t fence) {
    (void)ctx;
    return status_of(gm_drv.cuEventSynchronize((CUevent)(uintptr_t)fence), "cuEventSynchronize");
}

static void fence_destroy(void *ctx, uint64_t fence) {
    (void)ctx;
    CUevent event = (CUevent)(uintptr_t)fence;
    pthread_mutex_lock(&event_lock);
    if (free_event_count < (int)(sizeof free_events / sizeof free_events[0])) {
        free_events[free_event_count++] = event;
        event = NULL;
    }
    pthread_mutex_unlock(&event_lock);
    if (event != NULL)
        gm_drv.cuEventDestroy_v2(event);
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
    };
}

void gm_backend_cuda_forget_after_fork(void) {
    /* The parent's events are not valid in the child: drop them without destroying. */
    pthread_mutex_init(&event_lock, NULL);
    free_event_count = 0;
}
