// Native probe: what reading a captured graph back costs, per driver call, as the graph grows
// (graphmem's instantiation reads nodes, edges and node types of every graph with allocations).
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__global__ void touch(char *p) {
    if (p)
        p[0] = 1;
}

static void measure(int pairs) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t g;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < pairs; i++) {
        void *p;
        cudaMallocAsync(&p, 4096, s);
        touch<<<1, 1, 0, s>>>((char *)p);
        cudaFreeAsync(p, s);
    }
    cudaStreamEndCapture(s, &g);
    size_t n = 0, e = 0;
    double t0 = now_ms();
    cuGraphGetNodes((CUgraph)g, NULL, &n);
    CUgraphNode *nodes = (CUgraphNode *)calloc(n, sizeof *nodes);
    cuGraphGetNodes((CUgraph)g, nodes, &n);
    double t1 = now_ms();
    cuGraphGetEdges_v2((CUgraph)g, NULL, NULL, NULL, &e);
    CUgraphNode *from = (CUgraphNode *)calloc(e + 1, sizeof *from);
    CUgraphNode *to = (CUgraphNode *)calloc(e + 1, sizeof *to);
    CUgraphEdgeData *data = (CUgraphEdgeData *)calloc(e + 1, sizeof *data);
    cuGraphGetEdges_v2((CUgraph)g, from, to, data, &e);
    double t2 = now_ms();
    CUgraphNodeType type;
    for (size_t i = 0; i < n; i++)
        cuGraphNodeGetType(nodes[i], &type);
    double t3 = now_ms();
    cuGraphGetEdges_v2((CUgraph)g, from, to, NULL, &e);
    double t4 = now_ms();
    size_t total = 0;
    CUgraphNode deps[64];
    for (size_t i = 0; i < n; i++) {
        size_t count = 64;
        cuGraphNodeGetDependencies_v2(nodes[i], deps, NULL, &count);
        total += count;
    }
    double t5 = now_ms();
    printf("nodes=%zu edges=%zu getnodes=%.3fms getedges_v2=%.3fms types=%.3fms "
           "getedges_v2_nodata=%.3fms per_node_deps=%.3fms (%zu edges)\n",
           n, e, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, total);
    free(nodes);
    free(from);
    free(to);
    free(data);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
}

int main() {
    cudaFree(0);
    for (int pairs : {100, 1000, 3000, 10000, 30000})
        measure(pairs);
    return 0;
}
