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
static CUgraph graph;
static CUgraphNode first;
static void begin() {
    begin_capture(s);
    CUstreamCaptureStatus st;
    cuuint64_t id;
    const CUgraphNode *deps;
    const CUgraphEdgeData *ed;
    size_t n;
    cuStreamGetCaptureInfo_v3((CUstream)s, &st, &id, &graph, &deps, &ed, &n);
    CUgraphNode node;
    cuGraphAddEmptyNode(&node, graph, nullptr, 0);
    cuStreamUpdateCaptureDependencies_v2((CUstream)s, &node, nullptr, 1,
                                         CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    first = node;
}
static void end() {
    CK(cudaGraphDestroy(end_capture(s)));
}
typedef double (*fn_t)();
static double t_native_alloc() {
    void *p[N];
    begin();
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        CK(cudaMallocAsync(&p[i], MiB, s));
    double t = now_us() - t0;
    for (int i = 0; i < N; i++)
        CK(cudaFreeAsync(p[i], s));
    end();
    return t / N;
}
static double t_native_free() {
    void *p[N];
    begin();
    for (int i = 0; i < N; i++)
        CK(cudaMallocAsync(&p[i], MiB, s));
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        CK(cudaFreeAsync(p[i], s));
    double t = now_us() - t0;
    end();
    return t / N;
}
static double t_native_pair() {
    begin();
    double t0 = now_us();
    for (int i = 0; i < N; i++) {
        void *p;
        CK(cudaMallocAsync(&p, MiB, s));
        CK(cudaFreeAsync(p, s));
    }
    double t = now_us() - t0;
    end();
    return t / N;
}
static double t_info() {
    begin();
    CUstreamCaptureStatus st;
    cuuint64_t id;
    CUgraph g;
    const CUgraphNode *deps;
    const CUgraphEdgeData *ed;
    size_t n;
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        cuStreamGetCaptureInfo_v3((CUstream)s, &st, &id, &g, &deps, &ed, &n);
    double t = now_us() - t0;
    end();
    return t / N;
}
static double t_info_noedge() {
    begin();
    CUstreamCaptureStatus st;
    cuuint64_t id;
    CUgraph g;
    const CUgraphNode *deps;
    size_t n;
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        cuStreamGetCaptureInfo_v3((CUstream)s, &st, &id, &g, &deps, nullptr, &n);
    double t = now_us() - t0;
    end();
    return t / N;
}
static double t_info_status() {
    begin();
    CUstreamCaptureStatus st;
    cuuint64_t id;
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        cuStreamGetCaptureInfo_v3((CUstream)s, &st, &id, nullptr, nullptr, nullptr, nullptr);
    double t = now_us() - t0;
    end();
    return t / N;
}
static double t_iscap() {
    begin();
    CUstreamCaptureStatus st;
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        cuStreamIsCapturing((CUstream)s, &st);
    double t = now_us() - t0;
    end();
    return t / N;
}
static double t_empty() {
    begin();
    CUgraphNode last = first;
    double t0 = now_us();
    for (int i = 0; i < N; i++) {
        CUgraphNode n;
        cuGraphAddEmptyNode(&n, graph, &last, 1);
        last = n;
    }
    double t = now_us() - t0;
    cuStreamUpdateCaptureDependencies_v2((CUstream)s, &last, nullptr, 1,
                                         CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    end();
    return t / N;
}
static double t_addnode() {
    begin();
    CUgraphNode last = first;
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_EMPTY;
    double t0 = now_us();
    for (int i = 0; i < N; i++) {
        CUgraphNode n;
        cuGraphAddNode_v2(&n, graph, &last, nullptr, 1, &p);
        last = n;
    }
    double t = now_us() - t0;
    cuStreamUpdateCaptureDependencies_v2((CUstream)s, &last, nullptr, 1,
                                         CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    end();
    return t / N;
}
static double t_update() {
    begin();
    CUgraphNode nodes[N];
    CUgraphNode last = first;
    for (int i = 0; i < N; i++) {
        cuGraphAddEmptyNode(&nodes[i], graph, &last, 1);
        last = nodes[i];
    }
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        cuStreamUpdateCaptureDependencies_v2((CUstream)s, &nodes[i], nullptr, 1,
                                             CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    double t = now_us() - t0;
    end();
    return t / N;
}
static double t_getdeps() {
    begin();
    CUgraphNode last = first, n;
    cuGraphAddEmptyNode(&n, graph, &last, 1);
    cuStreamUpdateCaptureDependencies_v2((CUstream)s, &n, nullptr, 1,
                                         CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    CUgraphNode deps[4];
    CUgraphEdgeData ed[4];
    double t0 = now_us();
    for (int i = 0; i < N; i++) {
        size_t c = 4;
        cuGraphNodeGetDependencies_v2(n, deps, ed, &c);
    }
    double t = now_us() - t0;
    end();
    return t / N;
}
static double t_marker_pair() {
    begin();
    double t0 = now_us();
    for (int i = 0; i < 2 * N; i++) {
        CUstreamCaptureStatus st;
        cuuint64_t id;
        CUgraph g;
        const CUgraphNode *deps;
        const CUgraphEdgeData *ed;
        size_t n;
        cuStreamGetCaptureInfo_v3((CUstream)s, &st, &id, &g, &deps, &ed, &n);
        CUgraphNode node;
        cuGraphAddEmptyNode(&node, g, deps, n);
        cuStreamUpdateCaptureDependencies_v2((CUstream)s, &node, nullptr, 1,
                                             CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    }
    double t = now_us() - t0;
    end();
    return t / N;
}
static double t_kernel() {
    begin();
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        touch_on(s, nullptr);
    double t = now_us() - t0;
    end();
    return t / N;
}
int main(int, char **argv) {
    bench_init(argv[0]);
    s = new_stream();
    struct {
        const char *name;
        fn_t f;
        std::vector<double> v;
    } rows[] = {{"native_alloc", t_native_alloc},  {"native_free", t_native_free},
                {"native_pair", t_native_pair},    {"info_v3", t_info},
                {"info_v3_noedge", t_info_noedge}, {"info_v3_status_only", t_info_status},
                {"is_capturing", t_iscap},         {"add_empty", t_empty},
                {"add_node_v2_empty", t_addnode},  {"update_set", t_update},
                {"node_get_deps", t_getdeps},      {"marker_pair(3 calls x2)", t_marker_pair},
                {"captured_kernel", t_kernel}};
    for (int rep = 0; rep < 8; rep++)
        for (auto &r : rows) {
            double x = r.f();
            if (rep)
                r.v.push_back(x);
        }
    for (auto &r : rows)
        printf("%-26s %.3f us (min %.3f)\n", r.name, median(r.v),
               *std::min_element(r.v.begin(), r.v.end()));
    // zero-size ops in capture: what node do they leave?
    void *p;
    CK(cudaMalloc(&p, MiB));
    begin();
    CUresult r1 = cuMemsetD8Async((CUdeviceptr)p, 0, 0, (CUstream)s);
    CUstreamCaptureStatus st;
    cuuint64_t id;
    CUgraph g;
    const CUgraphNode *deps;
    const CUgraphEdgeData *ed;
    size_t n;
    cuStreamGetCaptureInfo_v3((CUstream)s, &st, &id, &g, &deps, &ed, &n);
    CUgraphNodeType ty = (CUgraphNodeType)-1;
    if (n == 1 && deps[0] != first)
        cuGraphNodeGetType(deps[0], &ty);
    printf("memset0: rc %d frontier %zu new=%d type %d\n", r1, n, n == 1 && deps[0] != first,
           (int)ty);
    CUresult r2 = cuMemcpyAsync((CUdeviceptr)p, (CUdeviceptr)p + 4096, 0, (CUstream)s);
    CUgraphNode before = n ? deps[0] : nullptr;
    cuStreamGetCaptureInfo_v3((CUstream)s, &st, &id, &g, &deps, &ed, &n);
    ty = (CUgraphNodeType)-1;
    if (n == 1 && deps[0] != before)
        cuGraphNodeGetType(deps[0], &ty);
    printf("memcpy0: rc %d frontier %zu new=%d type %d\n", r2, n, n == 1 && deps[0] != before,
           (int)ty);
    end();
    return 0;
}
