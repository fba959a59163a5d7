// Native probe: which graph-allocation sizes the driver refuses, and where. For 2^k bytes
// (k = 30..63), the device's total memory +/- 2 MiB and SIZE_MAX: a captured cuMemAllocAsync
// (its code, whether the capture survives, EndCapture), an explicit cuGraphAddMemAllocNode, an
// uncaptured cuMemAllocAsync and a cuMemAddressReserve (size rounded up to 2 MiB); for sizes
// between half and twice the device's memory, the accepted graphs are also launched. Then the
// smallest size each path refuses. Lines: `probe alloc_limits.<what> <value>`.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

static const char *cu_name(CUresult r) {
    const char *s = NULL;
    return cuGetErrorName(r, &s) == CUDA_SUCCESS ? s : "unknown";
}

static CUdevice g_dev;
static CUstream g_s;
static size_t g_total;
static bool g_quiet; // while bisecting

// Instantiates, launches and synchronizes g; "-" when the size is not launched.
static void launch(CUgraph g, bool want, char *out, size_t len) {
    if (!want) {
        snprintf(out, len, "-");
        return;
    }
    CUgraphExec e = NULL;
    CUresult i = cuGraphInstantiate(&e, g, 0);
    CUresult l = i == CUDA_SUCCESS ? cuGraphLaunch(e, g_s) : i;
    CUresult y = cuStreamSynchronize(g_s);
    snprintf(out, len, "instantiate=%s launch=%s sync=%s", cu_name(i), cu_name(l), cu_name(y));
    if (e)
        cuGraphExecDestroy(e);
    cuDeviceGraphMemTrim(g_dev);
}

// Returns whether the captured allocation was refused.
static bool captured(const char *label, size_t bytes, bool want) {
    cuStreamBeginCapture(g_s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CUdeviceptr p = 0;
    CUresult a = cuMemAllocAsync(&p, bytes, g_s);
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    cuStreamIsCapturing(g_s, &st);
    CUresult f = a == CUDA_SUCCESS ? cuMemFreeAsync(p, g_s) : CUDA_SUCCESS;
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(g_s, &g);
    char run[160];
    launch(g, want && g && a == CUDA_SUCCESS, run, sizeof run);
    if (!g_quiet)
        printf(
            "probe alloc_limits.captured.%s alloc=%s capture_after=%s free=%s end=%s graph=%s %s\n",
            label, cu_name(a),
            st == CU_STREAM_CAPTURE_STATUS_ACTIVE        ? "active"
            : st == CU_STREAM_CAPTURE_STATUS_INVALIDATED ? "invalidated"
                                                         : "none",
            cu_name(f), cu_name(end), g ? "yes" : "no", run);
    if (g)
        cuGraphDestroy(g);
    return a != CUDA_SUCCESS;
}

static bool explicit_node(const char *label, size_t bytes, bool want) {
    CUgraph g = NULL;
    cuGraphCreate(&g, 0);
    CUDA_MEM_ALLOC_NODE_PARAMS ap = {};
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.poolProps.location.id = g_dev;
    ap.bytesize = bytes;
    CUgraphNode n = NULL, fn = NULL;
    CUresult a = cuGraphAddMemAllocNode(&n, g, NULL, 0, &ap);
    if (a == CUDA_SUCCESS)
        cuGraphAddMemFreeNode(&fn, g, &n, 1, ap.dptr);
    char run[160];
    launch(g, want && a == CUDA_SUCCESS, run, sizeof run);
    if (!g_quiet)
        printf("probe alloc_limits.explicit.%s add=%s %s\n", label, cu_name(a), run);
    cuGraphDestroy(g);
    return a != CUDA_SUCCESS;
}

static bool uncaptured(const char *label, size_t bytes) {
    CUdeviceptr p = 0;
    CUresult a = cuMemAllocAsync(&p, bytes, g_s);
    if (a == CUDA_SUCCESS)
        cuMemFreeAsync(p, g_s);
    CUresult y = cuStreamSynchronize(g_s);
    CUmemoryPool pool;
    cuDeviceGetDefaultMemPool(&pool, g_dev);
    cuMemPoolTrimTo(pool, 0);
    printf("probe alloc_limits.uncaptured.%s alloc=%s sync=%s\n", label, cu_name(a), cu_name(y));
    return a != CUDA_SUCCESS;
}

static bool reserve(const char *label, size_t bytes) {
    const size_t g = (size_t)2 << 20;
    size_t rounded = bytes > SIZE_MAX - g ? bytes & ~(g - 1) : (bytes + g - 1) & ~(g - 1);
    CUdeviceptr va = 0;
    CUresult r = cuMemAddressReserve(&va, rounded, 0, 0, 0);
    if (r == CUDA_SUCCESS)
        cuMemAddressFree(va, rounded);
    printf("probe alloc_limits.reserve.%s rounded=%zu result=%s\n", label, rounded, cu_name(r));
    return r != CUDA_SUCCESS;
}

int main() {
    cudaFree(0);
    cuCtxGetDevice(&g_dev);
    size_t avail = 0;
    cuMemGetInfo(&avail, &g_total);
    printf("probe alloc_limits.device_memory total=%zu free=%zu\n", g_total, avail);
    cuStreamCreate(&g_s, CU_STREAM_NON_BLOCKING);
    size_t sizes[40];
    char labels[40][32];
    int n = 0;
    for (int k = 30; k < 64; k++, n++) {
        sizes[n] = (size_t)1 << k;
        snprintf(labels[n], sizeof labels[n], "2^%d", k);
    }
    sizes[n] = g_total - ((size_t)2 << 20);
    snprintf(labels[n++], 32, "total-2MiB");
    sizes[n] = g_total + ((size_t)2 << 20);
    snprintf(labels[n++], 32, "total+2MiB");
    sizes[n] = SIZE_MAX;
    snprintf(labels[n++], 32, "SIZE_MAX");
    size_t smallest[4] = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
    bool any[4] = {false, false, false, false};
    for (int i = 0; i < n; i++) {
        size_t b = sizes[i];
        bool want = b >= g_total / 2 && b <= g_total * 2;
        bool failed[4] = {captured(labels[i], b, want), explicit_node(labels[i], b, want),
                          uncaptured(labels[i], b), reserve(labels[i], b)};
        for (int m = 0; m < 4; m++)
            if (failed[m] && (!any[m] || b < smallest[m])) {
                any[m] = true;
                smallest[m] = b;
            }
        fflush(stdout);
    }
    const char *paths[4] = {"captured", "explicit", "uncaptured", "reserve"};
    for (int m = 0; m < 4; m++)
        if (any[m])
            printf("probe alloc_limits.smallest_refused.%s %zu\n", paths[m], smallest[m]);
        else
            printf("probe alloc_limits.smallest_refused.%s none\n", paths[m]);
    // The exact threshold of the two graph paths, to 2 MiB, between the largest accepted and the
    // smallest refused size of the table (assumes refusal is monotonic in the size).
    g_quiet = true;
    for (int m = 0; m < 2; m++) {
        if (!any[m])
            continue;
        size_t lo = 0, hi = smallest[m];
        for (int i = 0; i < n; i++)
            if (sizes[i] < hi && sizes[i] > lo) {
                bool refused =
                    m == 0 ? captured("", sizes[i], false) : explicit_node("", sizes[i], false);
                if (!refused)
                    lo = sizes[i];
            }
        while (hi - lo > ((size_t)2 << 20)) {
            size_t mid = lo + (hi - lo) / 2;
            bool refused = m == 0 ? captured("", mid, false) : explicit_node("", mid, false);
            (refused ? hi : lo) = mid;
        }
        printf("probe alloc_limits.threshold.%s accepted=%zu refused=%zu\n", paths[m], lo, hi);
    }
    return 0;
}
