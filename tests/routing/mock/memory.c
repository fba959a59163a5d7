/* Device memory: stream-ordered allocation (captured ones become graph memory nodes), the
 * default pool, plain allocations, and the fake address space they come from. */
#include "mock.h"

#include <stdint.h>
#include <sys/mman.h>

/* Addresses are carved from one PROT_NONE reservation so they can never alias host memory or
 * the ranges cuMemAddressReserve hands out; they are never dereferenced. */
#define GM_MOCK_FAKE_SPAN ((size_t)1 << 40)
#define GM_MOCK_FAKE_ALIGN ((size_t)512)

static uintptr_t fake_base, fake_next;

CUdeviceptr gm_mock_fake_address(size_t bytes) {
    if (!fake_base) {
        void *p = mmap(NULL, GM_MOCK_FAKE_SPAN, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return 0;
        fake_base = fake_next = (uintptr_t)p;
    }
    uintptr_t a = fake_next;
    fake_next += (bytes + GM_MOCK_FAKE_ALIGN - 1) & ~(GM_MOCK_FAKE_ALIGN - 1);
    if (fake_next - fake_base > GM_MOCK_FAKE_SPAN)
        return 0;
    return (CUdeviceptr)a;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream s) {
    if (!dptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_held_here(GM_MOCK_HOLD_ALLOCATION);
    CUresult rc;
    gm_mock_node_t *node = gm_mock_stream_capture_node(s, CU_GRAPH_NODE_TYPE_MEM_ALLOC, &rc);
    if (rc != CUDA_SUCCESS)
        return rc;
    gm_mock_lock();
    CUdeviceptr p = gm_mock_fake_address(bytes);
    if (node) {
        node->alloc.bytesize = bytes;
        node->alloc.dptr = p;
        node->alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        node->alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    }
    gm_mock_unlock();
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *dptr = p;
    return CUDA_SUCCESS;
}

static CUresult cuMemAllocAsync_impl(CUdeviceptr *dptr, size_t bytes, CUstream s) {
    return alloc_async(dptr, bytes, s);
}
GM_MOCK_PAIR(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytes, CUstream s), (dptr, bytes, s))

static CUresult cuMemAllocFromPoolAsync_impl(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                                             CUstream s) {
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, bytes, s);
}
GM_MOCK_PAIR(cuMemAllocFromPoolAsync,
             (CUdeviceptr * dptr, size_t bytes, CUmemoryPool pool, CUstream s),
             (dptr, bytes, pool, s))

static CUresult cuMemFreeAsync_impl(CUdeviceptr dptr, CUstream s) {
    CUresult rc;
    gm_mock_node_t *node = gm_mock_stream_capture_node(s, CU_GRAPH_NODE_TYPE_MEM_FREE, &rc);
    if (node) {
        gm_mock_lock();
        node->free_ptr = dptr;
        gm_mock_unlock();
    }
    return rc;
}
GM_MOCK_PAIR(cuMemFreeAsync, (CUdeviceptr dptr, CUstream s), (dptr, s))

GM_MOCK_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
    GM_MOCK_CALL("cuMemAlloc_v2");
    if (!dptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_lock();
    *dptr = gm_mock_fake_address(bytes);
    gm_mock_unlock();
    return *dptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

GM_MOCK_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
    GM_MOCK_CALL("cuMemFree_v2");
    (void)dptr;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    GM_MOCK_CALL("cuMemGetInfo_v2");
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    *total = (size_t)80 << 30;
    *free_bytes = (size_t)79 << 30;
    return CUDA_SUCCESS;
}

/* One default pool per (only) device; a fake non-NULL handle with settable attributes. */
static char default_pool_storage;
#define GM_MOCK_POOL ((CUmemoryPool)&default_pool_storage)
static cuuint64_t pool_release_threshold;

static CUresult get_pool(CUmemoryPool *pool, CUdevice dev) {
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *pool = GM_MOCK_POOL;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
    GM_MOCK_CALL("cuDeviceGetDefaultMemPool");
    return get_pool(pool, dev);
}

GM_MOCK_API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
    GM_MOCK_CALL("cuDeviceGetMemPool");
    return get_pool(pool, dev);
}

GM_MOCK_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                           void *value) {
    GM_MOCK_CALL("cuMemPoolSetAttribute");
    if (pool != GM_MOCK_POOL || !value)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        pool_release_threshold = *(cuuint64_t *)value;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                           void *value) {
    GM_MOCK_CALL("cuMemPoolGetAttribute");
    if (pool != GM_MOCK_POOL || !value)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        *(cuuint64_t *)value = pool_release_threshold;
        break;
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = 1;
        break;
    default:
        *(cuuint64_t *)value = 0;
    }
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
    GM_MOCK_CALL("cuMemPoolTrimTo");
    (void)minBytesToKeep;
    return pool == GM_MOCK_POOL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GM_MOCK_API CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool pool,
                                        CUmemLocation *location) {
    GM_MOCK_CALL("cuMemPoolGetAccess");
    if (!flags || !location || pool != GM_MOCK_POOL)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == 0
                 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                 : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}

/* A host function: on a capturing stream a HOST node after the frontier (which it replaces), as
 * a kernel launch is captured; elsewhere it runs at once. */
static CUresult cuLaunchHostFunc_impl(CUstream s, CUhostFn fn, void *data) {
    CUresult rc;
    gm_mock_node_t *node = gm_mock_stream_capture_node(s, CU_GRAPH_NODE_TYPE_HOST, &rc);
    if (rc == CUDA_SUCCESS && node == NULL && fn != NULL)
        fn(data);
    return rc;
}
GM_MOCK_PAIR(cuLaunchHostFunc, (CUstream s, CUhostFn fn, void *data), (s, fn, data))
