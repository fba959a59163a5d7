// Graphs with memory in contexts the program creates and destroys (cuCtxCreate, cuCtxDestroy),
// as driver-API test suites do test by test. Four rounds, each in a new context on device 0:
// graph G (alloc 8 MiB, memset to the round's value, no free: it escapes) and graph H (alloc
// 16 MiB, memset, free), built with the explicit node calls, instantiated and launched; G's words
// are read back, and G's relaunch is refused while its allocation is unfreed. In odd rounds the
// program frees G's allocation and destroys execs, graphs and stream before cuCtxDestroy; in even
// rounds it leaves them to cuCtxDestroy. A later round's objects, whose handles may be the old
// ones' again, must behave as new. H is also launched on the default stream, whose graph memory
// graphmem shares across contexts: the next round's launch there must not touch the events of the
// destroyed context (with sixteen more graphs launched there each round, it crashed the driver in
// cuEventQuery before graphmem marked them gone).
// Graph K, made once, is instantiated again in every round's context, its exec each time left
// to cuCtxDestroy.
#include "common.cuh"

#include "driver_graphs.cuh"
#include <vector>

static const size_t kG = 8u << 20, kH = 16u << 20;

static CUresult add_alloc_node(CUgraphNode *node, CUgraph g, const CUgraphNode *dep, size_t n,
                               size_t bytes, CUdeviceptr *dptr) {
    CUDA_MEM_ALLOC_NODE_PARAMS p = {};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = 0;
    p.bytesize = bytes;
    CUresult r = cuGraphAddMemAllocNode(node, g, dep, n, &p);
    *dptr = p.dptr;
    return r;
}

static CUresult add_memset_node(CUgraphNode *node, CUgraph g, CUgraphNode dep, CUdeviceptr dst,
                                size_t bytes, unsigned value, CUcontext ctx) {
    CUDA_MEMSET_NODE_PARAMS p = {};
    p.dst = dst;
    p.value = value;
    p.elementSize = 4;
    p.width = bytes / 4;
    p.height = 1;
    p.pitch = bytes;
    return cuGraphAddMemsetNode(node, g, &dep, 1, &p, ctx);
}

// Graph K (alloc 4 MiB, free), made in the first round's context and kept across all of them:
// each round instantiates it again in its own context and launches that exec, never destroying
// it (cuCtxDestroy ends it).
static CUgraph carried = nullptr;

static void carried_round(int round, CUstream s, void (*rc)(int, const char *, CUresult)) {
    if (carried == nullptr) {
        cuGraphCreate(&carried, 0);
        CUgraphNode a, f;
        CUdeviceptr p = 0;
        rc(round, "k_alloc", add_alloc_node(&a, carried, nullptr, 0, 4u << 20, &p));
        rc(round, "k_free", cuGraphAddMemFreeNode(&f, carried, &a, 1, p));
    }
    CUgraphExec ek = nullptr;
    rc(round, "k_instantiate", cuGraphInstantiate(&ek, carried, 0));
    if (ek != nullptr) {
        rc(round, "k_launch", cuGraphLaunch(ek, s));
        rc(round, "k_sync", cuStreamSynchronize(s));
    }
}

// Sixteen graphs (alloc 2 MiB, free) made, instantiated and launched on the default stream, left
// to cuCtxDestroy: the number of calls that failed.
static int default_stream_graphs(void) {
    int failed = 0;
    for (int i = 0; i < 16; i++) {
        CUgraph g = nullptr;
        CUgraphNode a, f;
        CUdeviceptr p = 0;
        CUgraphExec e = nullptr;
        failed += cuGraphCreate(&g, 0) != CUDA_SUCCESS;
        failed += add_alloc_node(&a, g, nullptr, 0, 2u << 20, &p) != CUDA_SUCCESS;
        failed += cuGraphAddMemFreeNode(&f, g, &a, 1, p) != CUDA_SUCCESS;
        failed += cuGraphInstantiate(&e, g, 0) != CUDA_SUCCESS;
        failed += e == nullptr || cuGraphLaunch(e, nullptr) != CUDA_SUCCESS;
    }
    return failed;
}

static void one_round(int round, CUdevice dev) {
    auto rc = [&](const char *step, CUresult r) { obs_round_step(round, step, r); };
    CUcontext ctx = nullptr;
    rc("ctx_create", cuCtxCreate(&ctx, nullptr, 0, dev));
    CUstream s = nullptr;
    rc("stream", cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUgraph g = nullptr, h = nullptr;
    cuGraphCreate(&g, 0);
    cuGraphCreate(&h, 0);
    CUgraphNode ag, mg, ah, mh, fh;
    CUdeviceptr pg = 0, ph = 0;
    unsigned value = 0x5100u + (unsigned)round;
    rc("g_alloc", add_alloc_node(&ag, g, nullptr, 0, kG, &pg));
    rc("g_memset", add_memset_node(&mg, g, ag, pg, kG, value, ctx));
    rc("h_alloc", add_alloc_node(&ah, h, nullptr, 0, kH, &ph));
    rc("h_memset", add_memset_node(&mh, h, ah, ph, kH, value, ctx));
    rc("h_free", cuGraphAddMemFreeNode(&fh, h, &mh, 1, ph));
    CUgraphExec eg = nullptr, eh = nullptr;
    rc("g_instantiate", cuGraphInstantiate(&eg, g, 0));
    rc("h_instantiate", cuGraphInstantiate(&eh, h, 0));
    rc("h_launch", cuGraphLaunch(eh, s));
    rc("g_launch", cuGraphLaunch(eg, s));
    rc("h_relaunch", cuGraphLaunch(eh, s));
    rc("sync", cuStreamSynchronize(s));
    rc("h_launch_default_stream", cuGraphLaunch(eh, nullptr));
    char key[64];
    snprintf(key, sizeof key, "r%d_default_stream_failures", round);
    obs_int(key, default_stream_graphs());
    rc("ctx_sync", cuCtxSynchronize());
    std::vector<unsigned> words(kG / 4, 0);
    rc("read_g", cuMemcpyDtoH(words.data(), pg, kG));
    carried_round(round, s, obs_round_step);
    size_t wrong = 0;
    for (unsigned w : words)
        wrong += w != value;
    snprintf(key, sizeof key, "r%d_g_wrong_words", round);
    obs_int(key, (long long)wrong);
    rc("g_relaunch_unfreed", cuGraphLaunch(eg, s));
    if (round % 2) {
        rc("g_free", cuMemFree(pg));
        rc("g_relaunch_freed", cuGraphLaunch(eg, s));
        rc("sync_again", cuStreamSynchronize(s));
        rc("g_free_again", cuMemFree(pg));
        cuGraphExecDestroy(eg);
        cuGraphExecDestroy(eh);
        cuGraphDestroy(g);
        cuGraphDestroy(h);
        cuStreamDestroy(s);
    }
    rc("ctx_destroy", cuCtxDestroy(ctx));
}

int main() {
    require_graph_memory();
    CUdevice dev = 0;
    cuDeviceGet(&dev, 0);
    for (int round = 0; round < 4; round++)
        one_round(round, dev);
    return 0;
}
