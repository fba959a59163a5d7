// Routing test program: makes every graph-memory runtime call graphmem must see, and reports
// where the runtime's driver entry points live. Built three ways (static cudart, shared cudart,
// per-thread default stream); it runs on the mock driver and, unchanged, on a real GPU.
//
// Output is deterministic (no addresses) so a run without graphmem and a run with it can be
// compared line by line; lines starting with "entry " depend on the preload and are compared
// separately by the test.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        printf("%s -> %s\n", #call, cudaGetErrorName(err_));                                       \
        if (err_ != cudaSuccess)                                                                   \
            failures++;                                                                            \
    } while (0)

// Driver entries whose runtime resolution the test checks: base name and ABI version.
static const struct {
    const char *name;
    int version;
} entries[] = {
    {"cuMemAllocAsync", 11020},
    {"cuMemFreeAsync", 11020},
    {"cuMemAllocFromPoolAsync", 11020},
    {"cuStreamBeginCapture", 10000},
    {"cuStreamBeginCapture", 10010},
    {"cuStreamBeginCaptureToGraph", 12030},
    {"cuStreamEndCapture", 10000},
    {"cuGraphInstantiate", 10000},
    {"cuGraphInstantiate", 11000},
    {"cuGraphInstantiate", 11040},
    {"cuGraphInstantiateWithFlags", 11040},
    {"cuGraphInstantiateWithParams", 12000},
    {"cuGraphLaunch", 10000},
    {"cuGraphUpload", 11010},
    {"cuGraphExecDestroy", 10000},
    {"cuGraphDestroy", 10000},
    {"cuGraphAddMemAllocNode", 11040},
    {"cuGraphAddMemFreeNode", 11040},
    {"cuGraphAddNode", 12020},
    {"cuGraphAddNode", 12030},
    {"cuDeviceGraphMemTrim", 11040},
    {"cuDeviceGetGraphMemAttribute", 11040},
    {"cuDeviceSetGraphMemAttribute", 11040},
    {"cuStreamGetCaptureInfo", 12030},
    {"cuStreamIsCapturing", 10000},
    {"cuGetProcAddress", 11030},
    {"cuGetProcAddress", 12000},
};

static void report_entries(void) {
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        for (unsigned long long flags = 0; flags <= 2; flags += 2) {
            void *fn = NULL;
            cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
            cudaError_t err = cudaGetDriverEntryPointByVersion(
                entries[i].name, &fn, (unsigned)entries[i].version, flags, &status);
            Dl_info info;
            const char *obj = "-", *sym = "-";
            if (fn && dladdr(fn, &info)) {
                obj = info.dli_fname ? strrchr(info.dli_fname, '/')
                                           ? strrchr(info.dli_fname, '/') + 1
                                           : info.dli_fname
                                     : "?";
                sym = info.dli_sname ? info.dli_sname : "?";
            }
            printf("entry %s@%d flags=%llu -> %s status=%d object=%s symbol=%s\n", entries[i].name,
                   entries[i].version, flags, cudaGetErrorName(err), (int)status, obj, sym);
        }
    }
}

int main(void) {
    // Unbuffered, so a crash under test still shows how far the program got.
    setvbuf(stdout, NULL, _IONBF, 0);
    int dev = -1;
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDevice(&dev));

    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));

    // Stream-ordered allocation outside a capture: a pool allocation, not graph memory.
    void *p = NULL;
    CHECK(cudaMallocAsync(&p, 1 << 20, s));
    CHECK(cudaFreeAsync(p, s));
    CHECK(cudaStreamSynchronize(s));

    // Captured allocation and free: graph memory.
    cudaGraph_t g = NULL;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    CHECK(cudaStreamIsCapturing(s, &cs));
    printf("capturing=%d\n", (int)(cs == cudaStreamCaptureStatusActive));
    void *q = NULL;
    CHECK(cudaMallocAsync(&q, 4 << 20, s));
    CHECK(cudaFreeAsync(q, s));
    CHECK(cudaStreamEndCapture(s, &g));

    cudaGraphExec_t ge = NULL;
    CHECK(cudaGraphInstantiate(&ge, g, 0));
    CHECK(cudaGraphUpload(ge, s));
    CHECK(cudaGraphLaunch(ge, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(ge));
    CHECK(cudaGraphDestroy(g));

    // Explicit memory nodes.
    cudaGraph_t h = NULL;
    CHECK(cudaGraphCreate(&h, 0));
    cudaMemAllocNodeParams ap;
    memset(&ap, 0, sizeof(ap));
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = 2 << 20;
    cudaGraphNode_t an = NULL, fnode = NULL;
    CHECK(cudaGraphAddMemAllocNode(&an, h, NULL, 0, &ap));
    CHECK(cudaGraphAddMemFreeNode(&fnode, h, &an, 1, ap.dptr));
    cudaGraphExec_t he = NULL;
    CHECK(cudaGraphInstantiateWithFlags(&he, h, 0));
    CHECK(cudaGraphLaunch(he, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(he));
    CHECK(cudaGraphDestroy(h));

    // A capture into a graph after one of its nodes: the first captured allocation has a frontier
    // (the stream's device is looked up then, a call on the stream that retires the frontier
    // array the capture info handed out).
    cudaGraph_t k = NULL;
    CHECK(cudaGraphCreate(&k, 0));
    cudaGraphNode_t first = NULL;
    CHECK(cudaGraphAddEmptyNode(&first, k, NULL, 0));
    CHECK(cudaStreamBeginCaptureToGraph(s, k, &first, NULL, 1, cudaStreamCaptureModeGlobal));
    void *r = NULL;
    CHECK(cudaMallocAsync(&r, 1 << 20, s));
    CHECK(cudaFreeAsync(r, s));
    cudaGraph_t same = NULL;
    CHECK(cudaStreamEndCapture(s, &same));
    printf("capture_to_graph_same=%d\n", (int)(same == k));
    cudaGraphExec_t ke = NULL;
    CHECK(cudaGraphInstantiate(&ke, k, 0));
    CHECK(cudaGraphLaunch(ke, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(ke));
    CHECK(cudaGraphDestroy(k));

    size_t used = 1;
    CHECK(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
    CHECK(cudaDeviceGraphMemTrim(0));
    CHECK(cudaStreamDestroy(s));

    report_entries();
    printf("failures=%d\n", failures);
    return failures ? 1 : 0;
}
