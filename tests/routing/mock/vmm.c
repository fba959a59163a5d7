/* Virtual memory management over host memory: a reservation is a PROT_NONE mapping, a physical
 * handle is a memfd, cuMemMap maps the memfd at the address and cuMemSetAccess makes it
 * readable and writable. Aliasing (one handle mapped twice) therefore behaves as on a GPU, and
 * graphmem's own mappings can be checked by touching them from the host. */
#include "mock.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define GM_MOCK_GRANULARITY ((size_t)2 << 20)

typedef struct {
    int fd;
    size_t size;
} gm_mock_handle_t;

static CUresult check_prop(const CUmemAllocationProp *prop) {
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    return prop->location.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

GM_MOCK_API CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                                   const CUmemAllocationProp *prop,
                                                   CUmemAllocationGranularity_flags option) {
    GM_MOCK_CALL("cuMemGetAllocationGranularity");
    (void)option;
    if (!granularity)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = check_prop(prop);
    if (rc == CUDA_SUCCESS)
        *granularity = GM_MOCK_GRANULARITY;
    return rc;
}

GM_MOCK_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                         CUdeviceptr addr, unsigned long long flags) {
    GM_MOCK_CALL("cuMemAddressReserve");
    (void)addr; /* a hint only */
    if (!ptr || size == 0 || size % GM_MOCK_GRANULARITY || flags || (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < GM_MOCK_GRANULARITY)
        alignment = GM_MOCK_GRANULARITY;
    /* Over-reserve and trim to honour the alignment. */
    size_t span = size + alignment;
    char *p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t start = ((uintptr_t)p + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (start > (uintptr_t)p)
        munmap(p, start - (uintptr_t)p);
    munmap((char *)start + size, (uintptr_t)p + span - start - size);
    *ptr = (CUdeviceptr)start;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    GM_MOCK_CALL("cuMemAddressFree");
    if (!ptr || size == 0 || ptr % GM_MOCK_GRANULARITY || size % GM_MOCK_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    return munmap((void *)(uintptr_t)ptr, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GM_MOCK_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                 const CUmemAllocationProp *prop, unsigned long long flags) {
    GM_MOCK_CALL("cuMemCreate");
    if (!handle || size == 0 || size % GM_MOCK_GRANULARITY || flags)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = check_prop(prop);
    if (rc != CUDA_SUCCESS)
        return rc;
    gm_mock_handle_t *h = malloc(sizeof(*h));
    if (!h)
        return CUDA_ERROR_OUT_OF_MEMORY;
    h->fd = memfd_create("gm_mock_handle", MFD_CLOEXEC);
    if (h->fd < 0 || ftruncate(h->fd, (off_t)size) != 0) {
        if (h->fd >= 0)
            close(h->fd);
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->size = size;
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

/* Mappings keep the memfd alive, so releasing a mapped handle is safe, as in the driver. */
GM_MOCK_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    GM_MOCK_CALL("cuMemRelease");
    gm_mock_handle_t *h = (gm_mock_handle_t *)(uintptr_t)handle;
    if (!h)
        return CUDA_ERROR_INVALID_VALUE;
    close(h->fd);
    free(h);
    return CUDA_SUCCESS;
}

/* The driver maps whole handles only: a non-zero offset is refused, as measured on an H200. */
GM_MOCK_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                              CUmemGenericAllocationHandle handle, unsigned long long flags) {
    GM_MOCK_CALL("cuMemMap");
    gm_mock_handle_t *h = (gm_mock_handle_t *)(uintptr_t)handle;
    if (!h || !ptr || ptr % GM_MOCK_GRANULARITY || size != h->size || offset || flags)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, 0);
    return p == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    GM_MOCK_CALL("cuMemUnmap");
    if (!ptr || size == 0 || ptr % GM_MOCK_GRANULARITY || size % GM_MOCK_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    /* Back to a bare reservation. */
    void *p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    return p == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                    size_t count) {
    GM_MOCK_CALL("cuMemSetAccess");
    if (!ptr || !desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int prot = PROT_NONE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id != 0)
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ)
            prot = PROT_READ;
        else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            prot = PROT_READ | PROT_WRITE;
    }
    return mprotect((void *)(uintptr_t)ptr, size, prot) == 0 ? CUDA_SUCCESS
                                                             : CUDA_ERROR_INVALID_VALUE;
}
