#include "scratch.h"

#include <pthread.h>

#include "backend_cuda.h"
#include "interpose/driver.h"

static pthread_mutex_t scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static CUmemGenericAllocationHandle scratch_handle[GM_MAX_DEVICES];
static uint64_t page_size;

/* One page of physical memory per device, made on first use and kept. */
static bool scratch_for(int device, CUmemGenericAllocationHandle *handle) {
    if (device < 0 || device >= GM_MAX_DEVICES)
        return false;
    pthread_mutex_lock(&scratch_lock);
    if (page_size == 0)
        page_size = gm_device_page_size();
    if (scratch_handle[device] == 0 && page_size != 0) {
        CUmemAllocationProp prop = gm_device_memory(device);
        if (gm_drv.cuMemCreate(&scratch_handle[device], page_size, &prop, 0) != CUDA_SUCCESS)
            scratch_handle[device] = 0;
    }
    *handle = scratch_handle[device];
    pthread_mutex_unlock(&scratch_lock);
    return *handle != 0;
}

void gm_scratch_begin(gm_scratch_t *s, gm_engine_t *engine) {
    s->engine = engine;
    s->count = 0;
    CUdevice device = 0;
    s->device = engine && gm_drv.cuCtxGetDevice(&device) == CUDA_SUCCESS ? device : -1;
}

void gm_scratch_cover_range(gm_scratch_t *s, CUdeviceptr start, uint64_t bytes) {
    CUmemGenericAllocationHandle handle;
    if (s->engine == NULL || bytes == 0 || !gm_engine_reserved(s->engine, start) ||
        !scratch_for(s->device, &handle))
        return;
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, s->device},
                              CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    for (uint64_t page = start - start % page_size; page < start + bytes; page += page_size) {
        if (s->count == GM_SCRATCH_MAX || !gm_engine_reserved(s->engine, page))
            return;
        bool seen = false;
        for (uint32_t i = 0; i < s->count && !seen; i++)
            seen = s->pages[i] == page;
        /* A page that is mapped already (its exec launched) refuses the map: leave it be. */
        if (seen || gm_drv.cuMemMap(page, page_size, 0, handle, 0) != CUDA_SUCCESS)
            continue;
        if (gm_drv.cuMemSetAccess(page, page_size, &access, 1) != CUDA_SUCCESS) {
            gm_drv.cuMemUnmap(page, page_size);
            continue;
        }
        s->pages[s->count++] = page;
    }
}

void gm_scratch_cover_memset(gm_scratch_t *s, const CUDA_MEMSET_NODE_PARAMS *p) {
    if (p == NULL || p->height == 0)
        return;
    gm_scratch_cover_range(s, p->dst, (p->height - 1) * p->pitch + p->width * p->elementSize);
}

static void cover_side(gm_scratch_t *s, CUmemorytype type, CUdeviceptr base, size_t x, size_t y,
                       size_t z, size_t pitch, size_t height, const CUDA_MEMCPY3D *p) {
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return;
    size_t depth = p->Depth ? p->Depth : 1, rows = p->Height ? p->Height : 1;
    size_t row_pitch = pitch ? pitch : p->WidthInBytes;
    size_t slice = row_pitch * (height ? height : rows);
    CUdeviceptr start = base + x + y * row_pitch + z * slice;
    gm_scratch_cover_range(s, start,
                           (depth - 1) * slice + (rows - 1) * row_pitch + p->WidthInBytes);
}

void gm_scratch_cover_memcpy(gm_scratch_t *s, const CUDA_MEMCPY3D *p) {
    if (p == NULL)
        return;
    cover_side(s, p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,
               p->srcHeight, p);
    cover_side(s, p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
               p->dstHeight, p);
}

void gm_scratch_cover_memcpy2d(gm_scratch_t *s, const CUDA_MEMCPY2D *p) {
    if (p == NULL || p->Height == 0)
        return;
    if (p->srcMemoryType == CU_MEMORYTYPE_DEVICE || p->srcMemoryType == CU_MEMORYTYPE_UNIFIED)
        gm_scratch_cover_range(s, p->srcDevice + p->srcXInBytes + p->srcY * p->srcPitch,
                               (p->Height - 1) * p->srcPitch + p->WidthInBytes);
    if (p->dstMemoryType == CU_MEMORYTYPE_DEVICE || p->dstMemoryType == CU_MEMORYTYPE_UNIFIED)
        gm_scratch_cover_range(s, p->dstDevice + p->dstXInBytes + p->dstY * p->dstPitch,
                               (p->Height - 1) * p->dstPitch + p->WidthInBytes);
}

void gm_scratch_cover_topology(gm_scratch_t *s, const gm_topology_buf_t *topo) {
    for (uint32_t i = 0; s->engine && i < topo->view.node_count; i++) {
        CUgraphNode node = (CUgraphNode)(uintptr_t)topo->nodes[i];
        CUgraphNodeType type = topo->types[i];
        if (type == CU_GRAPH_NODE_TYPE_MEMSET) {
            CUDA_MEMSET_NODE_PARAMS p;
            if (gm_drv.cuGraphMemsetNodeGetParams(node, &p) == CUDA_SUCCESS)
                gm_scratch_cover_memset(s, &p);
        } else if (type == CU_GRAPH_NODE_TYPE_MEMCPY) {
            CUDA_MEMCPY3D p;
            if (gm_drv.cuGraphMemcpyNodeGetParams(node, &p) == CUDA_SUCCESS)
                gm_scratch_cover_memcpy(s, &p);
        }
    }
}

void gm_scratch_end(gm_scratch_t *s) {
    for (uint32_t i = 0; i < s->count; i++)
        gm_drv.cuMemUnmap(s->pages[i], page_size);
    s->count = 0;
}
