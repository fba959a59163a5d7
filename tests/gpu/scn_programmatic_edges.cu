// Programmatic dependent launch between a free and the next allocation (cuBLAS launches kernels
// so on Hopper, inside PyTorch's captured graphs): a captured chain of eight 1 MiB allocations,
// one live at a time, where each free is followed by a kernel and then a kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization, so the edge between the two carries
// programmatic edge data. Each allocation is filled, copied into a result outside the graph and
// freed; the launch's results are checked (0 wrong words) natively and under graphmem, and the
// graph must hold a programmatic edge (else the scenario tests nothing).
//
// tests/python/test_gpu_conformance.py also reads graphmem's plan of this graph: the allocations
// are packed in one chunk, and each free is proven to come before the next allocation only by a
// path through the programmatic edge, so the chunk is one allocation's size when the path is
// followed (graphmem once stopped at such edges and made the chunk eight allocations long).
#include "common.cuh"

static const int kLinks = 8;
static const size_t kBytes = 1u << 20, kWords = kBytes / sizeof(uint32_t);

static __global__ void k_spacer(unsigned *sink) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        atomicAdd(sink, 1u);
}

// Launched with programmatic stream serialization: it may begin before the kernel ahead of it
// ends, and lets the next kernel begin early too.
static __global__ void k_programmatic(unsigned *sink) {
    cudaGridDependencySynchronize();
    if (threadIdx.x == 0 && blockIdx.x == 0)
        atomicAdd(sink, 1u);
    cudaTriggerProgrammaticLaunchCompletion();
}

static cudaError_t launch_programmatic(cudaStream_t s, unsigned *sink) {
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    return launch_with_attribute(s, attr, k_programmatic, sink);
}

// Edges of `g` whose data names a programmatic dependency.
static int programmatic_edges(cudaGraph_t g) {
    size_t count = 0;
    if (cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &count) != cudaSuccess || count == 0)
        return -1;
    cudaGraphNode_t *from = new cudaGraphNode_t[count], *to = new cudaGraphNode_t[count];
    cudaGraphEdgeData *data = new cudaGraphEdgeData[count];
    int found = -1;
    if (cudaGraphGetEdges(g, from, to, data, &count) == cudaSuccess) {
        found = 0;
        for (size_t i = 0; i < count; i++)
            found += data[i].type == cudaGraphDependencyTypeProgrammatic;
    }
    delete[] from;
    delete[] to;
    delete[] data;
    return found;
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *sink = new_counter();
    uint32_t *result = nullptr;
    cudaMalloc(&result, kBytes);
    cudaMemset(result, 0, kBytes);

    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < kLinks && rc == cudaSuccess; i++) {
        void *p = nullptr;
        rc = cudaMallocAsync(&p, kBytes, s);
        if (rc != cudaSuccess)
            break;
        fill_words(s, p, kWords, 1000u * (uint32_t)i);
        k_add<<<kGrid, kBlock, 0, s>>>(result, (const uint32_t *)p, kWords, 0); /* result = p */
        rc = cudaFreeAsync(p, s);
        if (rc != cudaSuccess)
            break;
        k_spacer<<<1, 32, 0, s>>>(sink);
        rc = launch_programmatic(s, sink);
    }
    cudaGraph_t g = nullptr;
    if (!end_capture_observed(s, rc, &g))
        return 0;
    int edges = programmatic_edges(g);
    obs_yes("holds_programmatic_edges", edges > 0);
    info("programmatic_edges", "%d", edges);
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    obs_rc("launch", cudaGraphLaunch(e, s));
    obs_rc("sync", cudaStreamSynchronize(s));
    // The last link's fill: result holds 1000 * 7 + j (each link overwrote it with its own).
    obs_ok("result", check_words(s, result, kWords, 1000u * (kLinks - 1)));
    info_attrs("after_launch", read_attrs());
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaFree(result);
    cudaFree(sink);
    cudaStreamDestroy(s);
    return 0;
}
