// GRAPHMEM_LIFT_RESTRICTIONS: a graph with memory nodes instantiated twice and cloned, which the
// driver refuses (§A3.7, §A3.3). Graph G (alloc X, a kernel that stamps every word of X with a
// token of its own run, waits, and counts the words that no longer hold it, free X): its two execs
// are launched by two threads on two streams at once, 40 times each; they share X's address, so two
// runs at once would overwrite each other's stamps. Graph H (alloc Y, fill, no free): Y escapes, so
// the second exec's launch is refused while the first's Y is live, and runs once Y is freed; one
// exec destroyed, the other still runs. Then clones of both: the clone of G keeps X's address, and
// its exec runs against G's remaining exec from two threads the same way; the clone of H sees the Y
// that H's exec left live; G destroyed, its clone's exec still runs. Last, a parent holding a copy
// of G's clone as a child node runs against that clone's exec from two threads. tests/python/
// test_gpu_conformance.py runs it natively, under graphmem as it is (the same observations: the
// second instantiation and the clone refused) and with the option (the observations it expects).
// Last, AutoFreeOnLaunch across two execs of one graph (autofree_phase).
#include <thread>

#include "common.cuh"

static const size_t kBytes = 16u << 20, kWords = kBytes / 4;
static const int kLaunches = 40;

// One block: thread 0 draws the run's token, every thread stamps its words, waits about 50 us of
// the GPU's clock, and counts the words that changed meanwhile.
static __global__ void k_stamp(uint32_t *p, size_t n, unsigned *next_token, unsigned *bad) {
    __shared__ unsigned token;
    if (threadIdx.x == 0)
        token = atomicAdd(next_token, 1) + 1;
    __syncthreads();
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        p[i] = token;
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    while (now - start < 50000);
    unsigned wrong = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        wrong += p[i] != token;
    if (wrong)
        atomicAdd(bad, wrong);
}

static cudaError_t add_stamp(cudaGraphNode_t *node, cudaGraph_t g, cudaGraphNode_t dep, void *x,
                             unsigned *next_token, unsigned *bad) {
    size_t n = kWords;
    void *args[] = {&x, &n, &next_token, &bad};
    cudaKernelNodeParams k = {};
    k.func = (void *)k_stamp;
    k.gridDim = dim3(1);
    k.blockDim = dim3(1024);
    k.kernelParams = args;
    return cudaGraphAddKernelNode(node, g, &dep, 1, &k);
}

// Launches `a` on one stream and `b` on another from two threads, kLaunches times each; the two
// launch results, observed as <key>_first and <key>_second.
static void launch_pair(const char *key, cudaGraphExec_t a, cudaGraphExec_t b) {
    cudaError_t rc[2] = {cudaSuccess, cudaSuccess};
    auto run = [&](int i) {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        for (int k = 0; k < kLaunches && rc[i] == cudaSuccess; k++)
            rc[i] = cudaGraphLaunch(i ? b : a, s);
        if (rc[i] == cudaSuccess)
            rc[i] = cudaStreamSynchronize(s);
        cudaStreamDestroy(s);
    };
    std::thread ta(run, 0), tb(run, 1);
    ta.join();
    tb.join();
    char name[96];
    snprintf(name, sizeof name, "%s_first", key);
    obs_rc(name, rc[0]);
    snprintf(name, sizeof name, "%s_second", key);
    obs_rc(name, rc[1]);
}

// Y made by `first` and left live: `second`, which would make it too, is refused until Y is
// freed, then runs and fills it. Observed as <prefix>_<step>.
static void escape_turns(const char *prefix, cudaGraphExec_t first, cudaGraphExec_t second, void *y,
                         cudaStream_t s) {
    char key[96];
    auto rc = [&](const char *step, cudaError_t r) {
        snprintf(key, sizeof key, "%s_%s", prefix, step);
        obs_rc(key, r);
    };
    rc("first_launch", cudaGraphLaunch(first, s));
    rc("first_sync", cudaStreamSynchronize(s));
    rc("second_while_live", cudaGraphLaunch(second, s));
    rc("free", cudaFree(y));
    rc("second_after_free", cudaGraphLaunch(second, s));
    rc("second_sync", cudaStreamSynchronize(s));
    snprintf(key, sizeof key, "%s_second_data", prefix);
    obs_ok(key, check_words(s, y, kWords, 44));
    rc("free_again", cudaFree(y));
}

static unsigned runs_so_far(unsigned *next_token) {
    unsigned runs = 0;
    cudaMemcpy(&runs, next_token, sizeof runs, cudaMemcpyDeviceToHost);
    return runs;
}

// The stamp runs so far, observed as `key`.
static void obs_runs(const char *key, unsigned *next_token) {
    obs_int(key, (long long)runs_so_far(next_token));
}

// AutoFreeOnLaunch across the execs of one graph: graph K (alloc Z, fill 55, no free) instantiated
// without the flag (k1) and with it (k2). Z left live by k1 and cleared by the program is freed by
// k2's launch, which makes it again and fills it in the memory that held it (nothing new is
// reserved); k1 is then refused until Z is freed. Graph W (alloc, stamp, no free) instantiated
// twice with the flag: launched by two threads on two streams, each launch frees the allocation
// the other's left live, and no two runs overlap.
static void autofree_phase(unsigned *next_token, unsigned *bad) {
    bool built = true;
    cudaGraph_t k = nullptr, w = nullptr;
    cudaGraphCreate(&k, 0);
    cudaGraphCreate(&w, 0);
    cudaGraphNode_t az, fz, aw, sw;
    void *z = nullptr, *wp = nullptr;
    built &= add_alloc(&az, k, nullptr, 0, kBytes, &z) == cudaSuccess;
    built &= add_fill(&fz, k, &az, 1, z, kWords, 55) == cudaSuccess;
    built &= add_alloc(&aw, w, nullptr, 0, kBytes, &wp) == cudaSuccess;
    built &= add_stamp(&sw, w, aw, wp, next_token, bad) == cudaSuccess;
    obs_ok("autofree_built", built);
    const unsigned long long autofree = cudaGraphInstantiateFlagAutoFreeOnLaunch;
    cudaGraphExec_t k1 = nullptr, k2 = nullptr, w1 = nullptr, w2 = nullptr;
    cudaGraphInstantiate(&k1, k, 0);
    obs_rc("autofree_instantiate", cudaGraphInstantiate(&k2, k, autofree));
    cudaGraphInstantiate(&w1, w, autofree);
    cudaGraphInstantiate(&w2, w, autofree);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    obs_rc("autofree_first_launch", cudaGraphLaunch(k1, s));
    obs_rc("autofree_clear", cudaMemsetAsync(z, 0, kBytes, s));
    cudaStreamSynchronize(s);
    uint64_t reserved = read_attrs().reserved;
    obs_rc("autofree_second_while_live", cudaGraphLaunch(k2, s));
    obs_ok("autofree_second_data", check_words(s, z, kWords, 55));
    obs_yes("autofree_took_memory", read_attrs().reserved <= reserved); // k1's, nothing new
    obs_rc("autofree_first_while_live", cudaGraphLaunch(k1, s));
    obs_rc("autofree_free", cudaFree(z));
    obs_rc("autofree_first_after_free", cudaGraphLaunch(k1, s));
    obs_ok("autofree_first_data", check_words(s, z, kWords, 55));
    obs_rc("autofree_free_again", cudaFree(z));
    unsigned before = runs_so_far(next_token);
    launch_pair("autofree_threads_launch", w1, w2);
    obs_int("autofree_runs", (long long)(runs_so_far(next_token) - before));
    obs_rc("autofree_threads_free", cudaFree(wp));
    cudaStreamDestroy(s);
    for (cudaGraphExec_t e : {k1, k2, w1, w2})
        cudaGraphExecDestroy(e);
    cudaGraphDestroy(k);
    cudaGraphDestroy(w);
}

int main() {
    require_graph_memory();
    unsigned *bad = new_counter(), *next_token = new_counter();
    bool built = true;

    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t ax, kx, fx;
    void *x = nullptr;
    built &= add_alloc(&ax, g, nullptr, 0, kBytes, &x) == cudaSuccess;
    built &= add_stamp(&kx, g, ax, x, next_token, bad) == cudaSuccess;
    built &= cudaGraphAddMemFreeNode(&fx, g, &kx, 1, x) == cudaSuccess;
    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    obs_rc("instantiate_first", cudaGraphInstantiate(&e1, g, 0));
    cudaError_t second = cudaGraphInstantiate(&e2, g, 0);
    obs_rc("instantiate_second", second);

    cudaGraph_t h = nullptr;
    cudaGraphCreate(&h, 0);
    cudaGraphNode_t ay, fy;
    void *y = nullptr;
    built &= add_alloc(&ay, h, nullptr, 0, kBytes, &y) == cudaSuccess;
    built &= add_fill(&fy, h, &ay, 1, y, kWords, 44) == cudaSuccess;
    cudaGraphExec_t f1 = nullptr, f2 = nullptr;
    cudaGraphInstantiate(&f1, h, 0);
    cudaError_t escape_second = cudaGraphInstantiate(&f2, h, 0);
    obs_ok("built", built);
    cudaGraph_t gc = nullptr, hc = nullptr;
    cudaError_t cloned = cudaGraphClone(&gc, g);
    obs_rc("clone", cloned);
    if (cloned == cudaSuccess)
        cudaGraphClone(&hc, h);

    if (second == cudaSuccess && escape_second == cudaSuccess) {
        launch_pair("threads_launch", e1, e2);
        obs_runs("runs", next_token);
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        escape_turns("escape", f1, f2, y, s);

        obs_rc("destroy_first", cudaGraphExecDestroy(e1));
        e1 = nullptr;
        obs_rc("second_after_destroy", cudaGraphLaunch(e2, s));
        obs_rc("second_after_destroy_sync", cudaStreamSynchronize(s));
        cudaStreamDestroy(s);
    }
    cudaGraphExec_t ec = nullptr, fc = nullptr, ep = nullptr;
    cudaGraph_t parent = nullptr;
    if (cloned == cudaSuccess && second == cudaSuccess) {
        cudaGraphNode_t nodes[8];
        size_t count = 8;
        cudaGraphGetNodes(gc, nodes, &count);
        void *xc = nullptr;
        for (size_t i = 0; i < count; i++) {
            cudaGraphNodeType type;
            cudaGraphNodeGetType(nodes[i], &type);
            cudaMemAllocNodeParams p = {};
            if (type == cudaGraphNodeTypeMemAlloc &&
                cudaGraphMemAllocNodeGetParams(nodes[i], &p) == cudaSuccess)
                xc = p.dptr;
        }
        obs_yes("clone_same_address", xc == x);
        obs_rc("clone_instantiate", cudaGraphInstantiate(&ec, gc, 0));
        cudaGraphInstantiate(&fc, hc, 0);
        launch_pair("clone_threads_launch", e2, ec);
        obs_runs("clone_runs", next_token);
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        escape_turns("clone_escape", f2, fc, y, s);

        cudaGraphExecDestroy(e2);
        e2 = nullptr;
        obs_rc("original_graph_destroy", cudaGraphDestroy(g));
        g = nullptr;
        obs_rc("clone_after_original_gone", cudaGraphLaunch(ec, s));
        obs_rc("clone_after_original_gone_sync", cudaStreamSynchronize(s));
        cudaStreamDestroy(s);

        cudaGraphCreate(&parent, 0);
        cudaGraphNode_t child;
        obs_rc("child_by_clone", cudaGraphAddChildGraphNode(&child, parent, nullptr, 0, gc));
        obs_rc("child_parent_instantiate", cudaGraphInstantiate(&ep, parent, 0));
        launch_pair("child_threads_launch", ep, ec);
        obs_runs("child_runs", next_token);
    }
    if (second == cudaSuccess)
        autofree_phase(next_token, bad);
    unsigned wrong = 0;
    cudaMemcpy(&wrong, bad, sizeof wrong, cudaMemcpyDeviceToHost);
    obs_int("wrong_words", wrong);
    for (cudaGraphExec_t e : {e1, e2, f1, f2, ec, fc, ep})
        if (e)
            cudaGraphExecDestroy(e);
    for (cudaGraph_t graph : {g, h, gc, hc, parent})
        if (graph)
            cudaGraphDestroy(graph);
    cudaFree(bad);
    cudaFree(next_token);
    return 0;
}
