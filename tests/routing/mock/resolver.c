/* cuGetProcAddress and cuGetProcAddress_v2, following the contract in cuda.h:
 * - the ABI is the newest one whose version is <= cudaVersion (cuGraphInstantiate@11040 is the
 *   3-argument cuGraphInstantiateWithFlags, cuStreamGetCaptureInfo@12030 is _v3);
 * - CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM picks the ABI's _ptsz/_ptds twin when it has
 *   one; DEFAULT and LEGACY_STREAM pick the legacy entry (DEFAULT means per-thread only through
 *   cuda.h's inline wrapper, which ORs in the flag itself);
 * - a known name with no ABI old enough: CUDA_SUCCESS, NULL, VERSION_NOT_SUFFICIENT;
 * - an unknown name (the empty-name probe included): CUDA_SUCCESS, NULL, SYMBOL_NOT_FOUND;
 * - cudaVersion above the driver's: CUDA_ERROR_INVALID_VALUE, NULL. cuda.h leaves symbolStatus
 *   unspecified there; the mock reports SYMBOL_NOT_FOUND so a pass-through test sees a value. */
#include "mock.h"
#include "table.h"

#include <dlfcn.h>
#include <string.h>

static CUresult resolve(const char *symbol, void **pfn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status) {
    if (!symbol || !pfn ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (version > GM_MOCK_DRIVER_VERSION) {
        if (status)
            *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_INVALID_VALUE;
    }
    const gm_mock_proc_t *best = NULL;
    int known = 0;
    for (size_t i = 0; i < gm_mock_nprocs; i++) {
        const gm_mock_proc_t *p = &gm_mock_procs[i];
        if (strcmp(p->base, symbol) != 0)
            continue;
        known = 1;
        if (p->version <= version && (!best || p->version > best->version))
            best = p;
    }
    if (!best) {
        if (status)
            *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_SUCCESS;
    }
    int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    *pfn = gm_mock_lookup(per_thread ? best->per_thread : best->legacy);
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

static void log_query(const char *entry, const char *symbol, int version, cuuint64_t flags,
                      CUresult rc, void *const *pfn, const CUdriverProcAddressQueryResult *status) {
    Dl_info info;
    const char *fn = "-";
    if (rc == CUDA_SUCCESS && pfn && *pfn && dladdr(*pfn, &info) && info.dli_sname)
        fn = info.dli_sname;
    gm_mock_logf("query %s name=%s version=%d flags=%llu rc=%d status=%d fn=%s", entry,
                 symbol ? (*symbol ? symbol : "<empty>") : "<null>", version,
                 (unsigned long long)flags, (int)rc, status ? (int)*status : -1, fn);
}

GM_MOCK_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                         cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
    GM_MOCK_CALL("cuGetProcAddress_v2");
    CUresult rc = resolve(symbol, pfn, cudaVersion, flags, status);
    log_query("cuGetProcAddress_v2", symbol, cudaVersion, flags, rc, pfn, status);
    return rc;
}

GM_MOCK_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                      cuuint64_t flags) {
    GM_MOCK_CALL("cuGetProcAddress");
    CUresult rc = resolve(symbol, pfn, cudaVersion, flags, NULL);
    log_query("cuGetProcAddress", symbol, cudaVersion, flags, rc, pfn, NULL);
    return rc;
}
