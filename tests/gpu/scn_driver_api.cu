// The driver API entry points for graph memory (§A1, §A4.1, §A4.12, §A10, §A11): capture
// with cuMemAllocAsync / cuMemAllocFromPoolAsync / cuMemFreeAsync on a created stream and on the
// per-thread default stream, explicit cuGraphAddMemAllocNode / cuGraphAddMemFreeNode /
// cuGraphAddNode, a zero-byte allocation, attributes, trim and cuMemFree of an escaped one.
#include "common.cuh"

#include <cuda.h>

static const size_t n = 1 << 16, bytes = n * sizeof(uint32_t);

static void capture(CUstream s, const char *tag, uint32_t *host) {
    char key[96];
    CUmemoryPool pool;
    cuDeviceGetDefaultMemPool(&pool, 0);
    snprintf(key, sizeof key, "%s_begin", tag);
    obs_cu(key, cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr p = 0, q = 0, z = 0;
    snprintf(key, sizeof key, "%s_alloc_async", tag);
    obs_cu(key, cuMemAllocAsync(&p, bytes, s));
    snprintf(key, sizeof key, "%s_alloc_from_pool_async", tag);
    obs_cu(key, cuMemAllocFromPoolAsync(&q, bytes, pool, s));
    snprintf(key, sizeof key, "%s_alloc_zero", tag);
    obs_cu(key, cuMemAllocAsync(&z, 0, s));
    cuMemsetD32Async(p, 0x5a5a5a5a, n, s);
    cuMemcpyDtoDAsync(q, p, bytes, s);
    cuMemcpyDtoHAsync(host, q, bytes, s);
    snprintf(key, sizeof key, "%s_free_async", tag);
    obs_cu(key, cuMemFreeAsync(p, s));
    cuMemFreeAsync(q, s);
    cuMemFreeAsync(z, s);
    CUgraph g = nullptr;
    snprintf(key, sizeof key, "%s_end", tag);
    obs_cu(key, cuStreamEndCapture(s, &g));
    CUgraphExec e = nullptr;
    snprintf(key, sizeof key, "%s_instantiate", tag);
    obs_cu(key, cuGraphInstantiate(&e, g, 0));
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        memset(host, 0, bytes);
        ok &= cuGraphLaunch(e, s) == CUDA_SUCCESS;
        ok &= cuStreamSynchronize(s) == CUDA_SUCCESS;
        for (size_t j = 0; j < n && ok; j++)
            ok = host[j] == 0x5a5a5a5a;
    }
    snprintf(key, sizeof key, "%s_launches_data", tag);
    obs_ok(key, ok);
    if (e)
        cuGraphExecDestroy(e);
    if (g)
        cuGraphDestroy(g);
}

static CUDA_MEM_ALLOC_NODE_PARAMS drv_params(size_t size) {
    CUDA_MEM_ALLOC_NODE_PARAMS p = {};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = 0;
    p.bytesize = size;
    return p;
}

static void explicit_nodes(CUstream s) {
    CUgraph g = nullptr;
    cuGraphCreate(&g, 0);
    CUgraphNode na = nullptr, nf = nullptr, ng = nullptr;
    CUDA_MEM_ALLOC_NODE_PARAMS p = drv_params(bytes);
    obs_cu("explicit_alloc_node", cuGraphAddMemAllocNode(&na, g, nullptr, 0, &p));
    obs_cu("explicit_free_node", cuGraphAddMemFreeNode(&nf, g, &na, 1, p.dptr));
    CUgraphNodeParams np = {};
    np.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    np.alloc.poolProps = p.poolProps;
    np.alloc.bytesize = bytes;
    obs_cu("explicit_add_node_alloc", cuGraphAddNode(&ng, g, nullptr, nullptr, 0, &np));
    obs_yes("explicit_add_node_dptr_nonnull", np.alloc.dptr != 0);
    CUDA_MEM_ALLOC_NODE_PARAMS back = {};
    obs_cu("explicit_get_params", cuGraphMemAllocNodeGetParams(na, &back));
    obs_yes("explicit_get_params_match", back.dptr == p.dptr && back.bytesize == bytes);
    CUdeviceptr freed = 0;
    obs_cu("explicit_free_get_params", cuGraphMemFreeNodeGetParams(nf, &freed));
    obs_yes("explicit_free_get_params_match", freed == p.dptr);
    CUgraphExec e = nullptr;
    obs_cu("explicit_instantiate", cuGraphInstantiate(&e, g, 0));
    obs_cu("explicit_launch", cuGraphLaunch(e, s));
    obs_cu("explicit_sync", cuStreamSynchronize(s));
    cuuint64_t used = 0;
    obs_cu("attr_get", cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
    obs_yes("attr_used_ge_two_allocations", used >= 2 * bytes);
    obs_cu("explicit_relaunch_unfreed", cuGraphLaunch(e, s));
    cuGraphExecDestroy(e);
    cuGraphDestroy(g);
    obs_cu("escaped_mem_free", cuMemFree(np.alloc.dptr));
    obs_cu("escaped_mem_free_again", cuMemFree(np.alloc.dptr));
    obs_cu("trim", cuDeviceGraphMemTrim(0));
    cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used);
    obs_yes("trim_used_zero", used == 0);
    cuuint64_t zero = 0;
    obs_cu("attr_reset_high",
           cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
    obs_cu("trim_invalid_device", cuDeviceGraphMemTrim(99));
}

int main() {
    require_graph_memory();
    obs_cu("init", cuInit(0));
    uint32_t *host = nullptr;
    cudaMallocHost(&host, bytes);
    CUstream s;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    capture(s, "stream", host);
    capture(CU_STREAM_PER_THREAD, "per_thread", host);
    explicit_nodes(s);
    obs_cu("final_sync", cuCtxSynchronize());
    return 0;
}
