/* Per-device graph memory: trim and the graph-memory attributes. The driver answers first (it
 * validates the device, the attribute and the value exactly as it always does, and it owns whatever
 * graph memory graphmem leaves to it); graphmem then adds its own. */
#include "bridge/captures.h"
#include "bridge/engine_glue.h"
#include "stats.h"

CUresult gm_hook_cuDeviceGraphMemTrim(CUdevice device) {
    CUresult result = gm_real.cuDeviceGraphMemTrim(device);
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (result != CUDA_SUCCESS || engine == NULL)
        return result;
    gm_status_t status;
    GM_RELAXED(status = gm_engine_trim(engine, device));
    gm_stat_add(GM_STAT_trims, 1);
    return gm_cuda_result(status);
}

/* Get and set alike: the driver's answer, then graphmem's share of the same attribute. */
static CUresult graph_mem_attribute(CUdevice device, CUgraphMem_attribute attr, void *value,
                                    bool set) {
    CUresult result = set ? gm_real.cuDeviceSetGraphMemAttribute(device, attr, value)
                          : gm_real.cuDeviceGetGraphMemAttribute(device, attr, value);
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (result != CUDA_SUCCESS || engine == NULL)
        return result;
    if (set)
        return gm_cuda_result(gm_engine_attr_set(engine, device, (int)attr, *(cuuint64_t *)value));
    uint64_t ours = 0;
    gm_status_t status; /* GRAPHMEM_UAF_CHECK queries fences here */
    GM_RELAXED(status = gm_engine_attr_get(engine, device, (int)attr, &ours));
    if (status != GM_OK)
        return gm_cuda_result(status);
    *(cuuint64_t *)value += ours;
    return CUDA_SUCCESS;
}

CUresult gm_hook_cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value) {
    return graph_mem_attribute(device, attr, value, false);
}

CUresult gm_hook_cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value) {
    return graph_mem_attribute(device, attr, value, true);
}
