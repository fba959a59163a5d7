/* The cuGetProcAddress door. cudart (static or shared) asks the driver's resolver for itself, then
 * resolves ~440 entries through the pointer it got; cuda-bindings resolves everything through
 * cuGetProcAddress_v2 found by dlsym. The real resolver runs first and its verdict stands (result
 * code, NULL pointer, symbol status, versions newer than the driver); only a pointer that is one
 * of the driver's hooked entries is replaced, by the hook of that exact entry. The self-lookups
 * ("cuGetProcAddress" at 11030 and 12000) come back as graphmem's own resolvers the same way. */
#include "doors.h"

static void route(CUresult result, void **pfn) {
    if (result != CUDA_SUCCESS || pfn == NULL || *pfn == NULL)
        return;
    if (gm_shim_mode() != GM_MODE_ACTIVE)
        return;
    void *hook = gm_hook_for_driver_pointer(*pfn);
    if (hook != NULL)
        *pfn = hook;
}

CUresult gm_hook_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags) {
    CUresult result = gm_real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    route(result, pfn);
    return result;
}

CUresult gm_hook_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus) {
    CUresult result = gm_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
    route(result, pfn);
    return result;
}
