// What each driver call a captured marker needs costs on a capturing stream, against the driver's
// own captured cudaMallocAsync / cudaFreeAsync (shim/hooks/alloc_hooks.c makes a marker of a
// capture query, an empty node and a frontier update). Each row: one call repeated 2,000 times in
// one capture (begin, end and destroy outside the timing), µs a call; median and minimum of 7
// batches after a warm-up, rows interleaved. Also what a zero-byte captured memset or copy leaves
// on the frontier (does one call both add a node and move the frontier?). Measured on an H200
// (driver 580, 2026-11-28, bench/RESULTS.md "Capture: one engine lock a marker"). Build and run on
// the GPU machine:
//   nvcc -O2 -o /tmp/capture_calls tests/probe/capture_calls.cu -lcuda && /tmp/capture_calls
#include <cuda.h>

#include "../../bench/bench_common.cuh"

static const int N = 2000;
static cudaStream_t s;
static CUgraph graph;    // the capture's graph
static CUgraphNode tail; // the stream's one capture dependency after begin()

#define CU(call)                                                                                   \
    do {                                                                                           \
        if ((call) != CUDA_SUCCESS)                                                                \
            bench_fail(__FILE__, __LINE__, #call, "failed");                                       \
    } while (0)

static void set_frontier(CUgraphNode node) {
    CU(cuStreamUpdateCaptureDependencies_v2((CUstream)s, &node, nullptr, 1,
                                            CU_STREAM_SET_CAPTURE_DEPENDENCIES));
}

static void query(CUgraph *g, const CUgraphNode **deps, const CUgraphEdgeData **edges,
                  size_t *count) {
    CUstreamCaptureStatus status;
    cuuint64_t id;
    CU(cuStreamGetCaptureInfo_v3((CUstream)s, &status, &id, g, deps, edges, count));
}

// A capture whose stream depends on one empty node (`tail`), so that every row starts alike.
static void begin() {
    begin_capture(s);
    const CUgraphNode *deps;
    const CUgraphEdgeData *edges;
    size_t count;
    query(&graph, &deps, &edges, &count);
    CU(cuGraphAddEmptyNode(&tail, graph, nullptr, 0));
    set_frontier(tail);
}

// µs a call of `op(i)`, N calls in one capture, after `setup()` and before `finish()`.
template <class Setup, class Op, class Finish>
static double per_call(Setup setup, Op op, Finish finish) {
    begin();
    setup();
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        op(i);
    double t = now_us() - t0;
    finish();
    CK(cudaGraphDestroy(end_capture(s)));
    return t / N;
}

static void *ptrs[N];
static CUgraphNode nodes[N];
static auto nothing = [] {};

static double native_alloc() {
    return per_call(
        nothing, [](int i) { CK(cudaMallocAsync(&ptrs[i], MiB, s)); },
        [] {
            for (int i = 0; i < N; i++)
                CK(cudaFreeAsync(ptrs[i], s));
        });
}

static double native_free() {
    return per_call(
        [] {
            for (int i = 0; i < N; i++)
                CK(cudaMallocAsync(&ptrs[i], MiB, s));
        },
        [](int i) { CK(cudaFreeAsync(ptrs[i], s)); }, nothing);
}

static double native_pair() {
    return per_call(
        nothing,
        [](int) {
            void *p;
            CK(cudaMallocAsync(&p, MiB, s));
            CK(cudaFreeAsync(p, s));
        },
        nothing);
}

static double info_v3() {
    return per_call(
        nothing,
        [](int) {
            CUgraph g;
            const CUgraphNode *deps;
            const CUgraphEdgeData *edges;
            size_t count;
            query(&g, &deps, &edges, &count);
        },
        nothing);
}

static double info_v3_no_edges() {
    return per_call(
        nothing,
        [](int) {
            CUgraph g;
            const CUgraphNode *deps;
            size_t count;
            query(&g, &deps, nullptr, &count);
        },
        nothing);
}

static double info_v3_status_only() {
    return per_call(
        nothing, [](int) { query(nullptr, nullptr, nullptr, nullptr); }, nothing);
}

static double is_capturing() {
    return per_call(
        nothing,
        [](int) {
            CUstreamCaptureStatus status;
            CU(cuStreamIsCapturing((CUstream)s, &status));
        },
        nothing);
}

// A chain of empty nodes after `tail`, the last one the frontier at the end.
static double add_empty() {
    return per_call(
        nothing,
        [](int i) { CU(cuGraphAddEmptyNode(&nodes[i], graph, i ? &nodes[i - 1] : &tail, 1)); },
        [] { set_frontier(nodes[N - 1]); });
}

static double add_node_v2_empty() {
    return per_call(
        nothing,
        [](int i) {
            CUgraphNodeParams params;
            memset(&params, 0, sizeof params);
            params.type = CU_GRAPH_NODE_TYPE_EMPTY;
            CU(cuGraphAddNode_v2(&nodes[i], graph, i ? &nodes[i - 1] : &tail, nullptr, 1, &params));
        },
        [] { set_frontier(nodes[N - 1]); });
}

static double update_set() {
    return per_call(
        [] {
            for (int i = 0; i < N; i++)
                CU(cuGraphAddEmptyNode(&nodes[i], graph, i ? &nodes[i - 1] : &tail, 1));
        },
        [](int i) { set_frontier(nodes[i]); }, nothing);
}

static double node_get_deps() {
    return per_call(
        nothing,
        [](int) {
            CUgraphNode deps[4];
            CUgraphEdgeData edges[4];
            size_t count = 4;
            CU(cuGraphNodeGetDependencies_v2(tail, deps, edges, &count));
        },
        nothing);
}

// graphmem's marker, twice a pair: query, empty node after the frontier, frontier update.
static double marker_pair() {
    auto marker = [] {
        CUgraph g;
        const CUgraphNode *deps;
        const CUgraphEdgeData *edges;
        size_t count;
        query(&g, &deps, &edges, &count);
        CUgraphNode node;
        CU(cuGraphAddEmptyNode(&node, g, deps, count));
        set_frontier(node);
    };
    return per_call(
        nothing,
        [&](int) {
            marker();
            marker();
        },
        nothing);
}

static double captured_kernel() {
    return per_call(
        nothing, [](int) { touch_on(s, nullptr); }, nothing);
}

// The node a zero-byte captured memset or copy leaves as the stream's frontier (-1: none new).
static void zero_byte_ops() {
    void *p;
    CK(cudaMalloc(&p, MiB));
    begin();
    const char *names[2] = {"memset0", "memcpy0"};
    for (int op = 0; op < 2; op++) {
        CUresult r = op == 0 ? cuMemsetD8Async((CUdeviceptr)p, 0, 0, (CUstream)s)
                             : cuMemcpyAsync((CUdeviceptr)p, (CUdeviceptr)p + 4096, 0, (CUstream)s);
        CUgraph g;
        const CUgraphNode *deps;
        const CUgraphEdgeData *edges;
        size_t count;
        query(&g, &deps, &edges, &count);
        int type = -1;
        if (count == 1 && deps[0] != tail) {
            CUgraphNodeType t;
            CU(cuGraphNodeGetType(deps[0], &t));
            type = (int)t;
        }
        printf("%s: rc %d, frontier of %zu, new node type %d\n", names[op], (int)r, count, type);
    }
    CK(cudaGraphDestroy(end_capture(s)));
    CK(cudaFree(p));
}

int main(int, char **argv) {
    bench_init(argv[0]);
    s = new_stream();
    struct row {
        const char *name;
        double (*fn)();
        std::vector<double> us;
    } rows[] = {{"native_alloc", native_alloc},
                {"native_free", native_free},
                {"native_pair", native_pair},
                {"info_v3", info_v3},
                {"info_v3_no_edges", info_v3_no_edges},
                {"info_v3_status_only", info_v3_status_only},
                {"is_capturing", is_capturing},
                {"add_empty", add_empty},
                {"add_node_v2_empty", add_node_v2_empty},
                {"update_set", update_set},
                {"node_get_deps", node_get_deps},
                {"marker_pair", marker_pair},
                {"captured_kernel", captured_kernel}};
    for (int rep = 0; rep < 8; rep++) // the first is a warm-up
        for (auto &r : rows) {
            double us = r.fn();
            if (rep)
                r.us.push_back(us);
        }
    for (auto &r : rows)
        printf("%-22s %.3f us (min %.3f)\n", r.name, median(r.us),
               *std::min_element(r.us.begin(), r.us.end()));
    zero_byte_ops();
    return 0;
}
