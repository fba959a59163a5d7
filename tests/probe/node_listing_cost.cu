// Native probe: what listing a graph's nodes costs (cuGraphGetNodes), and what the driver answers
// when the room given is larger or smaller than the graph. graphmem's read-back lists a graph it
// read before in one call, with room for the count it had and some more, and takes an answer below
// the room as the whole list (shim/bridge/topology.c, "node counts remembered"); the documentation
// says the driver then returns the number of nodes and sets the rest of the room to NULL.
//
// On a captured chain of 1,000 allocation + free pairs (2,000 nodes), 50 rounds, each after an
// instantiation and its destruction (which push the graph's nodes out of the caches, as a
// read-back before the driver's instantiation finds them): the count call and the list call with
// exact room (one after the other, as graphmem made them), then the list call alone, in µs (min /
// median). Then the answers: with room for 2,100 nodes (count, and whether the 100 past it are
// NULL) and for 1,000 (count; a count of 1,000 or of 2,000 both tell graphmem the list is not
// whole).
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        int rc_ = (int)(x);                                                                        \
        if (rc_ != 0) {                                                                            \
            printf("%s failed: %d\n", #x, rc_);                                                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_us() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void report(const char *what, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    printf("%s %.1f / %.1f us\n", what, v.front(), v[v.size() / 2]);
}

int main() {
    CK(cudaFree(0));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 1000; i++) {
        void *p;
        CK(cudaMallocAsync(&p, 1 << 20, s));
        CK(cudaFreeAsync(p, s));
    }
    CK(cudaStreamEndCapture(s, &g));
    size_t n = 0;
    CK(cuGraphGetNodes((CUgraph)g, NULL, &n));
    std::vector<CUgraphNode> nodes(n + 100);
    std::vector<double> count_then_list, list_alone;
    for (int round = 0; round < 50; round++) {
        cudaGraphExec_t x;
        CK(cudaGraphInstantiate(&x, g, 0));
        CK(cudaGraphExecDestroy(x));
        double t0 = now_us();
        size_t c = 0;
        CK(cuGraphGetNodes((CUgraph)g, NULL, &c));
        CK(cuGraphGetNodes((CUgraph)g, nodes.data(), &c));
        count_then_list.push_back(now_us() - t0);
        CK(cudaGraphInstantiate(&x, g, 0));
        CK(cudaGraphExecDestroy(x));
        t0 = now_us();
        c = n;
        CK(cuGraphGetNodes((CUgraph)g, nodes.data(), &c));
        list_alone.push_back(now_us() - t0);
    }
    printf("nodes=%zu\n", n);
    report("count, then list:", count_then_list);
    report("list alone:", list_alone);
    for (size_t i = 0; i < nodes.size(); i++)
        nodes[i] = (CUgraphNode)&nodes; /* not NULL */
    size_t c = n + 100;
    CK(cuGraphGetNodes((CUgraph)g, nodes.data(), &c));
    size_t nulls = 0;
    for (size_t i = n; i < n + 100; i++)
        nulls += nodes[i] == NULL;
    printf("room %zu: count %zu, %zu of the %d entries past the nodes NULL\n", n + 100, c, nulls,
           100);
    c = n / 2;
    CK(cuGraphGetNodes((CUgraph)g, nodes.data(), &c));
    printf("room %zu: count %zu\n", n / 2, c);
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    return 0;
}
