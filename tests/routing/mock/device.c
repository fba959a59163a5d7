/* Initialization, versions, the one mock device and its primary context.
 *
 * The device claims what graphmem requires of a real one (memory pools, VMM, unified
 * addressing), so graphmem takes its active path under the mock instead of passing through. */
#include "mock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static atomic_int initialized;
static pthread_mutex_t mock_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The primary context: a fake non-NULL handle, current on every thread once retained. */
static char primary_ctx_storage;
#define GM_MOCK_CTX ((CUcontext)&primary_ctx_storage)
static _Thread_local CUcontext current_ctx;
static int primary_retained;

CUcontext gm_mock_primary_ctx(void) {
    return GM_MOCK_CTX;
}

void gm_mock_lock(void) {
    pthread_mutex_lock(&mock_mutex);
}

void gm_mock_unlock(void) {
    pthread_mutex_unlock(&mock_mutex);
}

CUresult gm_mock_check_init(void) {
    return atomic_load(&initialized) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

GM_MOCK_API CUresult cuInit(unsigned int flags) {
    GM_MOCK_CALL("cuInit");
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    atomic_store(&initialized, 1);
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDriverGetVersion(int *version) {
    GM_MOCK_CALL("cuDriverGetVersion");
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = GM_MOCK_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDeviceGetCount(int *count) {
    GM_MOCK_CALL("cuDeviceGetCount");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    GM_MOCK_CALL("cuDeviceGet");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    GM_MOCK_CALL("cuDevicePrimaryCtxRetain");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    gm_mock_lock();
    primary_retained++;
    gm_mock_unlock();
    *pctx = GM_MOCK_CTX;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxGetCurrent(CUcontext *pctx) {
    GM_MOCK_CALL("cuCtxGetCurrent");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = current_ctx;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxSetCurrent(CUcontext ctx) {
    GM_MOCK_CALL("cuCtxSetCurrent");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ctx && ctx != GM_MOCK_CTX)
        return CUDA_ERROR_INVALID_CONTEXT;
    current_ctx = ctx;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode) {
    GM_MOCK_CALL("cuModuleGetLoadingMode");
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}

/* Attributes of an H100-like device; anything not listed is 0 (feature absent). */
static int attribute_value(CUdevice_attribute attr) {
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
        return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
        return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        return 1980000;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        return 132;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        return 9;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        return 2048;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        return 5120;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        return 52428800;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        return 2619000;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        return 5;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        return 232448;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        return 32;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        return 0x19;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
        return 512;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
        return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
        return 2147483647;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED:
        return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
        return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    default:
        return 0;
    }
}

GM_MOCK_API CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev) {
    GM_MOCK_CALL("cuDeviceGetAttribute");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!value || (int)attr <= 0 || attr >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *value = attribute_value(attr);
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    GM_MOCK_CALL("cuDeviceGetName");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    strncpy(name, "graphmem mock device", (size_t)len - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

#define GM_MOCK_TOTAL_MEM ((size_t)80 << 30)

GM_MOCK_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    GM_MOCK_CALL("cuDeviceTotalMem_v2");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = GM_MOCK_TOTAL_MEM;
    return CUDA_SUCCESS;
}

static CUresult device_uuid(CUuuid *uuid, CUdevice dev) {
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    memcpy(uuid->bytes, "graphmem-mockdev", sizeof(uuid->bytes));
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
    GM_MOCK_CALL("cuDeviceGetUuid");
    return device_uuid(uuid, dev);
}

GM_MOCK_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
    GM_MOCK_CALL("cuDeviceGetUuid_v2");
    return device_uuid(uuid, dev);
}

/* Both ABIs of cuDevicePrimaryCtxRelease behave alike. */
static CUresult primary_release(CUdevice dev) {
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    gm_mock_lock();
    rc = primary_retained > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (primary_retained > 0)
        primary_retained--;
    gm_mock_unlock();
    return rc;
}

GM_MOCK_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    GM_MOCK_CALL("cuDevicePrimaryCtxRelease_v2");
    return primary_release(dev);
}

GM_MOCK_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    GM_MOCK_CALL("cuDevicePrimaryCtxGetState");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    gm_mock_lock();
    *active = primary_retained > 0;
    gm_mock_unlock();
    *flags = 0;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
    GM_MOCK_CALL("cuDevicePrimaryCtxSetFlags_v2");
    (void)flags;
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* Context queries need a current context, as in the driver. */
static CUresult need_ctx(void) {
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    return current_ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

GM_MOCK_API CUresult cuCtxGetDevice(CUdevice *dev) {
    GM_MOCK_CALL("cuCtxGetDevice");
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    *dev = 0;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxSynchronize(void) {
    GM_MOCK_CALL("cuCtxSynchronize");
    return need_ctx();
}

GM_MOCK_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) {
    GM_MOCK_CALL("cuCtxGetApiVersion");
    (void)ctx;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = 3020;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxGetFlags(unsigned int *flags) {
    GM_MOCK_CALL("cuCtxGetFlags");
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = 0;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id) {
    GM_MOCK_CALL("cuCtxGetId");
    (void)ctx;
    if (!id)
        return CUDA_ERROR_INVALID_VALUE;
    *id = 1;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    GM_MOCK_CALL("cuCtxPushCurrent_v2");
    CUresult rc = gm_mock_check_init();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ctx != GM_MOCK_CTX)
        return CUDA_ERROR_INVALID_CONTEXT;
    /* One context only: the stack degenerates to "current or not". */
    current_ctx = ctx;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
    GM_MOCK_CALL("cuCtxPopCurrent_v2");
    CUresult rc = need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (pctx)
        *pctx = current_ctx;
    current_ctx = NULL;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
    GM_MOCK_CALL("cuCtxGetStreamPriorityRange");
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxGetLimit(size_t *value, CUlimit limit) {
    GM_MOCK_CALL("cuCtxGetLimit");
    if (!value || limit >= CU_LIMIT_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *value = limit == CU_LIMIT_STACK_SIZE ? 1024 : 0;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx) {
    GM_MOCK_CALL("cuCtxGetDevice_v2");
    CUresult rc = ctx ? gm_mock_check_init() : need_ctx();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx && ctx != GM_MOCK_CTX)
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = 0;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
    GM_MOCK_CALL("cuDevicePrimaryCtxRelease");
    return primary_release(dev);
}
