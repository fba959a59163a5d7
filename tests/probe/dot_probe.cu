// Native probe (run without graphmem by scripts/gpu-check): prints the driver's DOT output for a
// graph with memory nodes next to one with empty nodes, with each flag set graphmem rewrites.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>

static void dump(cudaGraph_t graph, unsigned flags, const char *tag) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/graphmem_probe_%s_%u.dot", tag, flags);
    CUresult r = cuGraphDebugDotPrint((CUgraph)graph, path, flags);
    printf("=== %s flags=%u result=%d\n", tag, flags, (int)r);
    FILE *f = fopen(path, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f))
        fputs(line, stdout);
    if (f)
        fclose(f);
}

int main() {
    cudaFree(0);
    cudaGraph_t mem, empty;
    cudaGraphCreate(&mem, 0);
    cudaGraphCreate(&empty, 0);
    cudaMemAllocNodeParams params = {};
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = 1 << 20;
    cudaGraphNode_t a, f, e1, e2;
    printf("alloc=%d\n", (int)cudaGraphAddMemAllocNode(&a, mem, NULL, 0, &params));
    printf("free=%d\n", (int)cudaGraphAddMemFreeNode(&f, mem, &a, 1, params.dptr));
    printf("node handles alloc=%p free=%p dptr=%p\n", (void *)a, (void *)f, params.dptr);
    cudaGraphAddEmptyNode(&e1, empty, NULL, 0);
    cudaGraphAddEmptyNode(&e2, empty, &e1, 1);
    printf("empty handles %p %p\n", (void *)e1, (void *)e2);
    unsigned flag_sets[] = {0, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE, CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES,
                            CU_GRAPH_DEBUG_DOT_FLAGS_MEM_ALLOC_NODE_PARAMS |
                                CU_GRAPH_DEBUG_DOT_FLAGS_MEM_FREE_NODE_PARAMS,
                            CU_GRAPH_DEBUG_DOT_FLAGS_RUNTIME_TYPES};
    for (unsigned i = 0; i < sizeof flag_sets / sizeof flag_sets[0]; i++) {
        dump(mem, flag_sets[i], "mem");
        dump(empty, flag_sets[i], "empty");
    }
    // Behaviour rows the research marks as unverified.
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeMemFree;
    printf("nodesetparams_on_free=%s\n", cudaGetErrorName(cudaGraphNodeSetParams(f, &np)));
    printf("destroynode_on_alloc=%s\n", cudaGetErrorName(cudaGraphDestroyNode(a)));
    cudaGraphExec_t exec;
    printf("instantiate=%s\n", cudaGetErrorName(cudaGraphInstantiate(&exec, mem, 0)));
    printf("exec_nodesetparams_on_free=%s\n",
           cudaGetErrorName(cudaGraphExecNodeSetParams(exec, f, &np)));
    return 0;
}
