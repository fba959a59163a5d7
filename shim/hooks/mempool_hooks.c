/* Memory pools: the calls that make, destroy, open up or select a pool. The driver answers first;
 * on success graphmem mirrors the change (bridge/mempools.h), so that a captured allocation learns
 * its pool's device and access without asking the driver, which could invalidate a GLOBAL
 * capture. cuDeviceSetMemPool is here too: it selects the pool cuMemAllocAsync takes. Each
 * driver call and its mirror are one step (mirror_lock): two threads selecting pools at once
 * leave the mirror on the pool the driver kept, and a destroyed pool's handle given to a pool
 * made meanwhile is never forgotten after the new pool was learnt. */
#include <pthread.h>

#include "bridge/mempools.h"

static pthread_mutex_t mirror_lock = PTHREAD_MUTEX_INITIALIZER;

CUresult gm_hook_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
    pthread_mutex_lock(&mirror_lock);
    CUresult result = gm_real.cuMemPoolCreate(pool, poolProps);
    if (result == CUDA_SUCCESS && pool != NULL && poolProps != NULL)
        gm_mempool_created(*pool, poolProps);
    pthread_mutex_unlock(&mirror_lock);
    return result;
}

CUresult gm_hook_cuMemPoolDestroy(CUmemoryPool pool) {
    pthread_mutex_lock(&mirror_lock);
    CUresult result = gm_real.cuMemPoolDestroy(pool);
    if (result == CUDA_SUCCESS)
        gm_mempool_destroyed(pool);
    pthread_mutex_unlock(&mirror_lock);
    return result;
}

CUresult gm_hook_cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
    pthread_mutex_lock(&mirror_lock);
    CUresult result = gm_real.cuMemPoolSetAccess(pool, map, count);
    if (result == CUDA_SUCCESS)
        gm_mempool_access_set(pool, map, count);
    pthread_mutex_unlock(&mirror_lock);
    return result;
}

CUresult gm_hook_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
    pthread_mutex_lock(&mirror_lock);
    CUresult result = gm_real.cuDeviceSetMemPool(dev, pool);
    if (result == CUDA_SUCCESS)
        gm_mempool_current_set(dev, pool);
    pthread_mutex_unlock(&mirror_lock);
    return result;
}
