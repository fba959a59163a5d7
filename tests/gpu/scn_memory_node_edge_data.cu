// Edge data into explicit memory nodes (cudaGraphAddNode with edge data): a programmatic edge
// from a kernel (its programmatic or launch-order port, or the programmatic type), the fields
// that must be zero (to_port, the reserved bytes) set, an unknown type or port, and a
// programmatic edge from a node that is no kernel. Each into an allocation node and into a free
// node, in a graph of its own; the codes must be the driver's (graphmem adds an empty node for
// each memory node, and once cleared every programmatic edge wholesale, to_port and the reserved
// bytes with it, so edge data the driver refuses was taken). A graph taking every accepted edge
// then runs, with its data checked.
#include "common.cuh"

static const size_t kWords = 1 << 16, kBytes = kWords * sizeof(uint32_t);

// CUgraphEdgeData's values (cuda.h): kernel output ports and dependency types.
enum : unsigned char { kPortProgrammatic = 1, kPortLaunchOrder = 2, kTypeProgrammatic = 1 };

typedef struct variant {
    const char *name;
    unsigned char from_port, to_port, type, reserved0;
    bool from_kernel;
} variant_t;

static const variant_t kVariants[] = {
    {"plain", 0, 0, 0, 0, true},
    {"programmatic", kPortProgrammatic, 0, kTypeProgrammatic, 0, true},
    {"launch_order", kPortLaunchOrder, 0, kTypeProgrammatic, 0, true},
    {"programmatic_type_port_0", 0, 0, kTypeProgrammatic, 0, true},
    {"default_type_programmatic_port", kPortProgrammatic, 0, 0, 0, true},
    {"default_type_launch_order_port", kPortLaunchOrder, 0, 0, 0, true},
    {"to_port", 0, 1, 0, 0, true},
    {"programmatic_to_port", kPortProgrammatic, 1, kTypeProgrammatic, 0, true},
    {"unknown_type", 0, 0, 7, 0, true},
    {"programmatic_port_unknown_type", kPortProgrammatic, 0, 7, 0, true},
    {"unknown_port", 9, 0, 0, 0, true},
    {"programmatic_type_unknown_port", 9, 0, kTypeProgrammatic, 0, true},
    {"reserved", 0, 0, 0, 1, true},
    {"programmatic_reserved", kPortProgrammatic, 0, kTypeProgrammatic, 1, true},
    {"programmatic_from_empty", kPortProgrammatic, 0, kTypeProgrammatic, 0, false},
};

static cudaGraphEdgeData edge_of(const variant_t &v) {
    cudaGraphEdgeData e;
    memset(&e, 0, sizeof e);
    e.from_port = v.from_port;
    e.to_port = v.to_port;
    e.type = v.type;
    e.reserved[0] = v.reserved0;
    return e;
}

static __global__ void k_touch(unsigned *sink) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        atomicAdd(sink, 1u);
}

// A kernel node counting into `sink`.
static cudaError_t add_touch(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                             size_t count, unsigned *sink) {
    void *args[] = {&sink};
    cudaKernelNodeParams k = {};
    k.func = (void *)k_touch;
    k.gridDim = dim3(1);
    k.blockDim = dim3(32);
    k.kernelParams = args;
    return cudaGraphAddKernelNode(node, g, deps, count, &k);
}

// The edge's upstream node: a kernel, or an empty node.
static cudaError_t add_upstream(cudaGraphNode_t *node, cudaGraph_t g, bool kernel, unsigned *sink) {
    return kernel ? add_touch(node, g, nullptr, 0, sink)
                  : cudaGraphAddEmptyNode(node, g, nullptr, 0);
}

static cudaError_t add_alloc_node(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                                  const cudaGraphEdgeData *edges, size_t count, void **dptr) {
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeMemAlloc;
    p.alloc.poolProps = alloc_params(0).poolProps;
    p.alloc.bytesize = kBytes;
    cudaError_t rc = cudaGraphAddNode(node, g, deps, edges, count, &p);
    *dptr = p.alloc.dptr;
    return rc;
}

static cudaError_t add_free_node(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                                 const cudaGraphEdgeData *edges, size_t count, void *dptr) {
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeMemFree;
    p.free.dptr = dptr;
    return cudaGraphAddNode(node, g, deps, edges, count, &p);
}

// An allocation node after the upstream node, through the variant's edge.
static bool alloc_after(const variant_t &v, unsigned *sink) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t up = nullptr, a = nullptr;
    cudaError_t rc = add_upstream(&up, g, v.from_kernel, sink);
    void *p = nullptr;
    cudaGraphEdgeData e = edge_of(v);
    if (rc == cudaSuccess)
        rc = add_alloc_node(&a, g, &up, &e, 1, &p);
    char key[96];
    snprintf(key, sizeof key, "alloc_%s", v.name);
    obs_rc(key, rc);
    cudaGraphDestroy(g);
    return rc == cudaSuccess;
}

// A free node after its allocation and the upstream node, through the variant's edge.
static void free_after(const variant_t &v, unsigned *sink) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t deps[2] = {nullptr, nullptr}, f = nullptr;
    void *p = nullptr;
    cudaError_t rc = add_alloc_node(&deps[0], g, nullptr, nullptr, 0, &p);
    if (rc == cudaSuccess)
        rc = add_upstream(&deps[1], g, v.from_kernel, sink);
    cudaGraphEdgeData edges[2];
    memset(edges, 0, sizeof edges);
    edges[1] = edge_of(v);
    if (rc == cudaSuccess)
        rc = add_free_node(&f, g, deps, edges, 2, p);
    char key[96];
    snprintf(key, sizeof key, "free_%s", v.name);
    obs_rc(key, rc);
    cudaGraphDestroy(g);
}

// Every variant the driver took into an allocation node, one chain of them in one graph: each
// allocation filled, checked and freed after a kernel through that edge; then run twice.
static void run_accepted(cudaStream_t s, const bool *accepted, unsigned *sink) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t last = nullptr;
    cudaError_t rc = cudaSuccess;
    int taken = 0;
    for (size_t i = 0; i < sizeof kVariants / sizeof *kVariants && rc == cudaSuccess; i++) {
        if (!accepted[i] || !kVariants[i].from_kernel)
            continue;
        cudaGraphNode_t up = nullptr, a = nullptr, fill = nullptr, check = nullptr, f = nullptr;
        void *p = nullptr;
        rc = add_touch(&up, g, last ? &last : nullptr, last ? 1 : 0, sink);
        cudaGraphEdgeData e = edge_of(kVariants[i]);
        if (rc == cudaSuccess)
            rc = add_alloc_node(&a, g, &up, &e, 1, &p);
        if (rc == cudaSuccess)
            rc = add_fill(&fill, g, &a, 1, p, kWords, 100u * (uint32_t)i);
        if (rc == cudaSuccess)
            rc = add_check(&check, g, &fill, 1, p, kWords, 100u * (uint32_t)i, g_bad);
        if (rc == cudaSuccess)
            rc = add_free_node(&f, g, &check, nullptr, 1, p);
        last = f;
        taken++;
    }
    obs_rc("chain_built", rc);
    info("chain_links", "%d", taken);
    cudaGraphExec_t x = nullptr;
    obs_rc("chain_instantiate", cudaGraphInstantiate(&x, g, 0));
    obs_rc("chain_launch", cudaGraphLaunch(x, s));
    obs_rc("chain_relaunch", cudaGraphLaunch(x, s));
    obs_rc("chain_sync", cudaStreamSynchronize(s));
    unsigned bad = ~0u;
    cudaMemcpy(&bad, g_bad, sizeof bad, cudaMemcpyDeviceToHost);
    obs_int("chain_bad_words", bad);
    cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *sink = new_counter();
    g_bad = new_counter();
    const size_t count = sizeof kVariants / sizeof *kVariants;
    bool accepted[count];
    for (size_t i = 0; i < count; i++) {
        accepted[i] = alloc_after(kVariants[i], sink);
        free_after(kVariants[i], sink);
    }
    run_accepted(s, accepted, sink);
    cudaFree(sink);
    cudaFree(g_bad);
    cudaStreamDestroy(s);
    return 0;
}
