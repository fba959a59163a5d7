// Stress: many graphs with random allocation DAGs launched on several streams. Every allocation
// gets a signature (graph, allocation, launch number) written by one kernel and verified by a
// later kernel of the same graph; half of the graphs leave one allocation unfreed
// (AutoFreeOnLaunch), which is verified from the stream just before the graph's next launch,
// after other graphs have run. Graphs change streams over time. Any aliasing of memory whose
// lifetimes conflict shows up as a wrong signature.
//
// usage: stress [iterations=700] [graphs=16] [streams=4] [seed=1]
// prints: OBS corruption <wrong words>, OBS first_error <name>, INFO launches <count>
#include "common.cuh"

#include <vector>

static __device__ uint32_t sig(uint32_t launch, uint32_t g, uint32_t i, size_t j) {
    uint32_t x =
        launch * 0x9E3779B1u ^ g * 0x85EBCA77u ^ i * 0xC2B2AE3Du ^ (uint32_t)j * 0x27D4EB2Fu;
    return x ^ (x >> 15);
}

static __global__ void k_bump(uint32_t *count) {
    *count += 1;
}

static __global__ void k_sign(uint32_t *p, size_t n, const uint32_t *count, uint32_t g,
                              uint32_t i) {
    uint32_t c = *count;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x)
        p[j] = sig(c, g, i, j);
}

static __global__ void k_verify(const uint32_t *p, size_t n, const uint32_t *count, uint32_t g,
                                uint32_t i, unsigned *bad) {
    uint32_t c = *count;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n;
         j += (size_t)gridDim.x * blockDim.x)
        if (p[j] != sig(c, g, i, j))
            atomicAdd(bad, 1u);
}

static uint64_t rng_state;
static uint32_t rnd(uint32_t bound) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % bound;
}

static size_t random_words(void) {
    static const size_t sizes[] = {1u << 10, 1u << 12, 1u << 16, 1u << 18, 1u << 19};
    return sizes[rnd(5)];
}

struct Graph {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    void *escaped;
    size_t escaped_words;
    uint32_t escaped_index;
    int last_stream;
};

static cudaError_t add_kernel(cudaGraphNode_t *node, cudaGraph_t g,
                              std::vector<cudaGraphNode_t> deps, void *func, void **args) {
    cudaKernelNodeParams k = {};
    k.func = func;
    k.gridDim = dim3(kGrid);
    k.blockDim = dim3(kBlock);
    k.kernelParams = args;
    return cudaGraphAddKernelNode(node, g, deps.data(), deps.size(), &k);
}

// Explicit random DAG: bump -> for each allocation: alloc (after the bump and maybe after an
// earlier free) -> sign -> verify (maybe also after a random earlier node) -> free.
static void build_explicit(Graph *G, uint32_t gi, uint32_t *count, unsigned *bad) {
    cudaGraphCreate(&G->graph, 0);
    cudaGraphNode_t root = nullptr;
    void *bump_args[] = {&count};
    add_kernel(&root, G->graph, {}, (void *)k_bump, bump_args);
    std::vector<cudaGraphNode_t> frees, any;
    uint32_t allocs = 3 + rnd(6);
    bool escape = gi % 2 == 0;
    for (uint32_t i = 0; i < allocs; i++) {
        size_t words = random_words();
        std::vector<cudaGraphNode_t> deps = {root};
        if (!frees.empty() && rnd(2))
            deps.push_back(frees[rnd((uint32_t)frees.size())]);
        cudaMemAllocNodeParams p = alloc_params(words * sizeof(uint32_t));
        cudaGraphNode_t na = nullptr, ns = nullptr, nv = nullptr, nf = nullptr;
        cudaGraphAddMemAllocNode(&na, G->graph, deps.data(), deps.size(), &p);
        void *sign_args[] = {&p.dptr, &words, &count, &gi, &i};
        add_kernel(&ns, G->graph, {na}, (void *)k_sign, sign_args);
        std::vector<cudaGraphNode_t> vdeps = {ns};
        if (!any.empty() && rnd(2))
            vdeps.push_back(any[rnd((uint32_t)any.size())]);
        void *verify_args[] = {&p.dptr, &words, &count, &gi, &i, &bad};
        add_kernel(&nv, G->graph, vdeps, (void *)k_verify, verify_args);
        any.push_back(ns);
        any.push_back(nv);
        if (escape && i == allocs - 1) {
            G->escaped = p.dptr;
            G->escaped_words = words;
            G->escaped_index = i;
        } else {
            cudaGraphAddMemFreeNode(&nf, G->graph, &nv, 1, p.dptr);
            frees.push_back(nf);
        }
    }
}

// Captured random program over a fork of `side` streams: each allocation lives on one stream
// (malloc, sign, verify, free there), streams occasionally wait for each other, all rejoin.
static void build_captured(Graph *G, uint32_t gi, uint32_t *count, unsigned *bad,
                           cudaStream_t origin, cudaStream_t *side, int nside, cudaEvent_t *ev) {
    cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal);
    k_bump<<<1, 1, 0, origin>>>(count);
    cudaEventRecord(ev[0], origin);
    for (int k = 0; k < nside; k++)
        cudaStreamWaitEvent(side[k], ev[0], 0);
    uint32_t allocs = 3 + rnd(6);
    bool escape = gi % 2 == 0;
    for (uint32_t i = 0; i < allocs; i++) {
        cudaStream_t s = side[rnd(nside)];
        size_t words = random_words();
        uint32_t *p = nullptr;
        cudaMallocAsync(&p, words * sizeof(uint32_t), s);
        k_sign<<<kGrid, kBlock, 0, s>>>(p, words, count, gi, i);
        if (rnd(2)) {
            cudaStream_t other = side[rnd(nside)];
            cudaEventRecord(ev[1 + i], other);
            cudaStreamWaitEvent(s, ev[1 + i], 0);
        }
        k_verify<<<kGrid, kBlock, 0, s>>>(p, words, count, gi, i, bad);
        if (escape && i == allocs - 1) {
            G->escaped = p;
            G->escaped_words = words;
            G->escaped_index = i;
        } else {
            cudaFreeAsync(p, s);
        }
    }
    for (int k = 0; k < nside; k++) {
        cudaEventRecord(ev[1 + k], side[k]);
        cudaStreamWaitEvent(origin, ev[1 + k], 0);
    }
    cudaStreamEndCapture(origin, &G->graph);
}

int main(int argc, char **argv) {
    require_graph_memory();
    int iterations = argc > 1 ? atoi(argv[1]) : 700;
    int ngraphs = argc > 2 ? atoi(argv[2]) : 16;
    int nstreams = argc > 3 ? atoi(argv[3]) : 4;
    rng_state = argc > 4 ? strtoull(argv[4], nullptr, 10) : 1;

    std::vector<cudaStream_t> streams(nstreams);
    for (auto &s : streams)
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStream_t side[3];
    for (auto &s : side)
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    std::vector<cudaEvent_t> ev(16), done(ngraphs);
    for (auto &e : ev)
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    for (auto &e : done)
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    uint32_t *counts = nullptr;
    unsigned *bad = nullptr;
    cudaMalloc(&counts, ngraphs * sizeof(uint32_t));
    cudaMemset(counts, 0, ngraphs * sizeof(uint32_t));
    cudaMalloc(&bad, sizeof(unsigned));
    cudaMemset(bad, 0, sizeof(unsigned));

    std::vector<Graph> graphs(ngraphs);
    cudaError_t first = cudaSuccess;
    auto note = [&](cudaError_t rc) {
        if (first == cudaSuccess && rc != cudaSuccess)
            first = rc;
    };
    for (int gi = 0; gi < ngraphs; gi++) {
        Graph *G = &graphs[gi];
        G->escaped = nullptr;
        G->last_stream = -1;
        if (gi % 4 < 2)
            build_explicit(G, gi, counts + gi, bad);
        else
            build_captured(G, gi, counts + gi, bad, streams[0], side, 3, ev.data());
        note(cudaGraphInstantiateWithFlags(
            &G->exec, G->graph, G->escaped ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0));
    }
    note(cudaDeviceSynchronize());

    long long launches = 0;
    for (int it = 0; it < iterations; it++) {
        for (int gi = 0; gi < ngraphs; gi++) {
            Graph *G = &graphs[gi];
            int si = (gi + it / 50) % nstreams;
            cudaStream_t s = streams[si];
            if (G->last_stream >= 0) {
                // Order after the previous launch (maybe on another stream), then verify what
                // it left unfreed before the relaunch frees it.
                note(cudaStreamWaitEvent(s, done[gi], 0));
                if (G->escaped)
                    k_verify<<<kGrid, kBlock, 0, s>>>((const uint32_t *)G->escaped,
                                                      G->escaped_words, counts + gi, gi,
                                                      G->escaped_index, bad);
            }
            note(cudaGraphLaunch(G->exec, s));
            note(cudaEventRecord(done[gi], s));
            G->last_stream = si;
            launches++;
        }
    }
    note(cudaDeviceSynchronize());
    unsigned h = 0;
    note(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
    obs_int("corruption", h);
    obs("first_error", cudaGetErrorName(first));
    info("launches", "%lld", launches);
    GraphMemAttrs a = read_attrs();
    info_attrs("end", a);
    for (auto &G : graphs) {
        if (G.escaped)
            cudaFree(G.escaped);
        cudaGraphExecDestroy(G.exec);
        cudaGraphDestroy(G.graph);
    }
    return 0;
}
