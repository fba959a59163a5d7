// What a first launch's mappings cost: graphmem maps a physical handle whole into each
// allocation's window (cuMemMap takes no offset), so a 4 MiB allocation packed into a 32 MiB
// handle maps 32 MiB. This times, for 256 windows, cuMemMap of one 32 MiB handle each followed by
// cuMemSetAccess over the whole 32 MiB, or over the allocation's 4 MiB only (the driver answers
// that with an error: access covers whole mappings), and the same with a 4 MiB handle per window
// (the driver's shape), then the unmaps; and one 1 GiB window of 32 mappings with access and unmap
// per mapping or in one call. On an H100 the cost follows the number of mappings (about 30 us
// each for access), whatever their size or the number of calls (bench/RESULTS.md).
#include <chrono>
#include <cstdio>
#include <cuda.h>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_) {                                                                                  \
            printf("%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)r_);                           \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

static CUmemAllocationProp device_memory() {
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    return prop;
}

static CUmemAccessDesc read_write(const CUmemAllocationProp &prop) {
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return access;
}

static const int kWindows = 256;
static const size_t MiB = 1 << 20;

static int run(const char *name, size_t handle_bytes, size_t access_bytes) {
    CUmemAllocationProp prop = device_memory();
    CUmemAccessDesc access = read_write(prop);
    std::vector<CUmemGenericAllocationHandle> handles(kWindows);
    for (auto &h : handles)
        CK(cuMemCreate(&h, handle_bytes, &prop, 0));
    CUdeviceptr base;
    size_t window = 64 * MiB;
    CK(cuMemAddressReserve(&base, window * kWindows, 0, 0, 0));
    double t0 = now_ms();
    for (int i = 0; i < kWindows; i++)
        CK(cuMemMap(base + i * window, handle_bytes, 0, handles[i], 0));
    double t1 = now_ms();
    CUresult set = CUDA_SUCCESS;
    for (int i = 0; i < kWindows && set == CUDA_SUCCESS; i++)
        set = cuMemSetAccess(base + i * window, access_bytes, &access, 1);
    double t2 = now_ms();
    if (set != CUDA_SUCCESS)
        printf("set_access_cost %-28s cuMemSetAccess -> %d\n", name, (int)set);
    for (int i = 0; i < kWindows; i++)
        CK(cuMemUnmap(base + i * window, handle_bytes));
    double t3 = now_ms();
    printf("set_access_cost %-28s map %.2f ms, set access %.2f ms, unmap %.2f ms\n", name, t1 - t0,
           t2 - t1, t3 - t2);
    for (auto h : handles)
        CK(cuMemRelease(h));
    CK(cuMemAddressFree(base, window * kWindows));
    return 0;
}

// One 1 GiB window backed by 32 handles of 32 MiB mapped back to back (a large allocation): access
// and unmap per mapping, or one call over the whole window.
static int joint(bool one_call) {
    const int n = 32;
    const size_t hb = 32 * MiB;
    CUmemAllocationProp prop = device_memory();
    CUmemAccessDesc access = read_write(prop);
    std::vector<CUmemGenericAllocationHandle> handles(n);
    for (auto &h : handles)
        CK(cuMemCreate(&h, hb, &prop, 0));
    CUdeviceptr base;
    CK(cuMemAddressReserve(&base, hb * n, 0, 0, 0));
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
        CK(cuMemMap(base + i * hb, hb, 0, handles[i], 0));
    double t1 = now_ms();
    CUresult set = CUDA_SUCCESS;
    if (one_call)
        set = cuMemSetAccess(base, hb * n, &access, 1);
    for (int i = 0; !one_call && i < n && set == CUDA_SUCCESS; i++)
        set = cuMemSetAccess(base + i * hb, hb, &access, 1);
    double t2 = now_ms();
    CUresult unmap = CUDA_SUCCESS;
    if (one_call)
        unmap = cuMemUnmap(base, hb * n);
    for (int i = 0; (!one_call || unmap != CUDA_SUCCESS) && i < n; i++)
        cuMemUnmap(base + i * hb, hb);
    double t3 = now_ms();
    printf("set_access_cost 1GiB_of_32_handles_%-10s map %.2f ms, set access %.2f ms (%d), unmap "
           "%.2f ms (%d)\n",
           one_call ? "one_call" : "per_handle", t1 - t0, t2 - t1, (int)set, t3 - t2, (int)unmap);
    for (auto h : handles)
        CK(cuMemRelease(h));
    CK(cuMemAddressFree(base, hb * n));
    return 0;
}

int main() {
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    for (int round = 0; round < 3; round++) {
        if (run("32MiB_handle_access_32MiB", 32 * MiB, 32 * MiB) ||
            run("32MiB_handle_access_4MiB", 32 * MiB, 4 * MiB) ||
            run("4MiB_handle_access_4MiB", 4 * MiB, 4 * MiB) || joint(false) || joint(true))
            return 1;
    }
    return 0;
}
