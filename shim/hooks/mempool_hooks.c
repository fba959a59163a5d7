/* Memory pools: the calls that make, destroy, open up or select a pool. The driver answers first;
 * on success graphmem mirrors the change (bridge/mempools.h), so that a captured allocation learns
 * its pool's device and access without asking the driver, which could invalidate a GLOBAL
 * capture. cuDeviceSetMemPool is here too: it selects the pool cuMemAllocAsync takes. */
#include "bridge/mempools.h"

CUresult gm_hook_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
    CUresult result = gm_real.cuMemPoolCreate(pool, poolProps);
    if (result == CUDA_SUCCESS && pool != NULL && poolProps != NULL)
        gm_mempool_created(*pool, poolProps);
    return result;
}

CUresult gm_hook_cuMemPoolDestroy(CUmemoryPool pool) {
    CUresult result = gm_real.cuMemPoolDestroy(pool);
    if (result == CUDA_SUCCESS)
        gm_mempool_destroyed(pool);
    return result;
}

CUresult gm_hook_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
    CUresult result = gm_real.cuMemPoolSetAccess(pool, map, count);
    if (result == CUDA_SUCCESS)
        gm_mempool_access_set(pool, map, count);
    return result;
}

CUresult gm_hook_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
    CUresult result = gm_real.cuDeviceSetMemPool(dev, pool);
    if (result == CUDA_SUCCESS)
        gm_mempool_current_set(dev, pool);
    return result;
}
