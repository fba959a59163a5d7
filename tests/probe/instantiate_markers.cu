// Does the driver instantiate graphmem's form of a graph more slowly than the graph itself? The
// bench's captured DAG (bench/bench_common.cuh capture_dag: allocation, kernel, free per pair,
// forks and joins) natively, and a copy of it with every memory node replaced by an empty node
// (what graphmem's markers make of it), instantiated alternately in one process; median host ms of
// cudaGraphInstantiate per size. tests/probe/readback_cost.cu measured the read-back; the
// instantiation split under graphmem (GRAPHMEM_LOG_LEVEL=debug) showed the driver's own part
// above the native total on some runs. Measured on an H100 (driver 580, two runs): 0.369/0.335,
// 6.27/5.96, 30.2/29.7 ms and 0.424/0.408, 7.05/6.84, 32.3/33.0 ms (memory nodes/empty nodes, 100,
// 1000, 3000 pairs): the empty form instantiates as fast.
#include <cuda.h>

#include "../../bench/bench_common.cuh"

// The copy: same nodes in the same order, kernels with the same parameters, memory nodes empty.
static cudaGraph_t with_empty_nodes(cudaGraph_t g) {
    size_t n = 0, e = 0;
    CK(cudaGraphGetNodes(g, nullptr, &n));
    std::vector<cudaGraphNode_t> nodes(n), copy(n);
    CK(cudaGraphGetNodes(g, nodes.data(), &n));
    CK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &e));
    std::vector<cudaGraphNode_t> from(e), to(e);
    CK(cudaGraphGetEdges(g, from.data(), to.data(), nullptr, &e));
    cudaGraph_t out;
    CK(cudaGraphCreate(&out, 0));
    for (size_t i = 0; i < n; i++) {
        cudaGraphNodeType type;
        CK(cudaGraphNodeGetType(nodes[i], &type));
        if (type == cudaGraphNodeTypeKernel) {
            cudaKernelNodeParams p;
            CK(cudaGraphKernelNodeGetParams(nodes[i], &p));
            CK(cudaGraphAddKernelNode(&copy[i], out, nullptr, 0, &p));
        } else {
            CK(cudaGraphAddEmptyNode(&copy[i], out, nullptr, 0));
        }
    }
    for (size_t k = 0; k < e; k++) {
        size_t a = 0, b = 0;
        while (nodes[a] != from[k])
            a++;
        while (nodes[b] != to[k])
            b++;
        CK(cudaGraphAddDependencies(out, &copy[a], &copy[b], nullptr, 1));
    }
    return out;
}

int main(int, char **argv) {
    bench_init(argv[0]);
    cudaStream_t st[4];
    cudaEvent_t ev[5];
    for (cudaStream_t &s : st)
        s = new_stream();
    for (cudaEvent_t &x : ev)
        x = new_event();
    for (int pairs : {100, 1000, 3000}) {
        DagShape d = {pairs, 4 << 10, 64 * MiB, 1, 3, (uint64_t)pairs};
        cudaGraph_t g = capture_dag(d, st, ev);
        cudaGraph_t m = with_empty_nodes(g);
        std::vector<double> native, marked;
        for (int rep = 0; rep < 8; rep++) {
            cudaGraph_t which[2] = {g, m};
            for (int k = 0; k < 2; k++) {
                cudaGraphExec_t e = nullptr;
                double t0 = now_us();
                CK(cudaGraphInstantiate(&e, which[k], 0));
                double ms = (now_us() - t0) / 1000;
                if (rep)
                    (k ? marked : native).push_back(ms);
                CK(cudaGraphExecDestroy(e));
            }
        }
        printf("instantiate_markers pairs %d: memory nodes %.3f ms, empty nodes %.3f ms\n", pairs,
               median(native), median(marked));
        CK(cudaGraphDestroy(m));
        CK(cudaGraphDestroy(g));
    }
    return 0;
}
