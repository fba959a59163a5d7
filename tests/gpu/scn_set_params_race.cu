// Thread A replaces the graph of P's child node over and over (cudaGraphNodeSetParams, each time
// with a copy of a fresh one-node graph); thread B makes graphs with one allocation node and reads
// the node's type back right away and after a short spin: natively always MEM_ALLOC. graphmem
// forgets the node's old graph in the same step as the driver's call, as for cuGraphDestroy: a
// graph B makes in between may get the old handle, and forgetting the old graph afterwards would
// forget B's markers with it (the node would read EMPTY; launched, its kernels would meet memory
// nothing maps). On an H200 no lost node was seen either way (20,000 rounds).
#include <atomic>
#include <thread>

#include "entries.cuh"

static const int kRounds = 20000;

static void race_case(void) {
    cudaFree(nullptr); // context on this thread
    cudaGraph_t p = nullptr, x = nullptr;
    cudaGraphCreate(&p, 0);
    cudaGraphCreate(&x, 0);
    cudaGraphNode_t e = nullptr, child = nullptr;
    cudaGraphAddEmptyNode(&e, x, nullptr, 0);
    obs_rc("p_child", cudaGraphAddChildGraphNode(&child, p, nullptr, 0, x));
    cudaGraphDestroy(x);
    std::atomic<bool> stop{false};
    RcCount sets;
    std::thread a([&] {
        cudaSetDevice(0);
        for (int i = 0; i < kRounds && !stop.load(); i++) {
            cudaGraph_t y = nullptr;
            cudaGraphCreate(&y, 0);
            cudaGraphNode_t n;
            cudaGraphAddEmptyNode(&n, y, nullptr, 0);
            cudaGraphNodeParams np = {};
            np.type = cudaGraphNodeTypeGraph;
            np.graph.graph = y;
            sets.add(cudaGraphNodeSetParams(child, &np));
            cudaGraphDestroy(y);
        }
        stop.store(true);
    });
    long long made = 0, lost = 0;
    while (!stop.load()) {
        cudaGraph_t g = nullptr;
        if (cudaGraphCreate(&g, 0) != cudaSuccess)
            break;
        cudaMemAllocNodeParams ap = alloc_params(1u << 16);
        cudaGraphNode_t al = nullptr;
        if (cudaGraphAddMemAllocNode(&al, g, nullptr, 0, &ap) == cudaSuccess) {
            made++;
            for (volatile int spin = 0; spin < 2000; spin++) {
            }
            cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
            if (cudaGraphNodeGetType(al, &t) != cudaSuccess || t != cudaGraphNodeTypeMemAlloc)
                lost++;
        }
        cudaGraphDestroy(g);
    }
    a.join();
    sets.report("set_child_codes");
    obs_yes("b_made_graphs", made > 0);
    obs_int("b_alloc_nodes_lost", lost);
    info("b_made", "%lld", made);
    cudaGraphDestroy(p);
}

int main() {
    run_isolated("race", race_case, true, 300);
    return 0;
}
