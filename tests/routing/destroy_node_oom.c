/* cuGraphDestroyNode of a plain node in a graph holding graphmem's allocations, while host memory
 * runs out, over the mock driver. graphmem refuses to destroy any node of such a graph, as the
 * driver refuses it for a graph with memory nodes (tests/SEMANTICS.md §A3.2): an allocation may
 * reuse a freed one's bytes because a path through that node orders the free before it, and with
 * the node gone the two could run at once. To know, graphmem reads the nodes of every graph
 * holding its markers, which takes host memory: when it cannot read them it must refuse too (with
 * CUDA_ERROR_OUT_OF_MEMORY), never take the node for one of a plain graph. Then, with memory back,
 * the destroy gets the driver's answer (CUDA_ERROR_NOT_SUPPORTED), and the graph has every node
 * it had. Exit 1 when either answer is wrong. */
#include <cuda.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "mock_test.h"

/* Every malloc of the process (graphmem's and the mock's) comes here: the program's definition
 * comes first in the search order. */
void *__libc_malloc(size_t size);
static atomic_bool no_host_memory;

__attribute__((visibility("default"))) void *malloc(size_t size) {
    return atomic_load(&no_host_memory) ? NULL : __libc_malloc(size);
}

static void host_function(void *arg) {
    (void)arg;
}

static size_t node_count(CUgraph g) {
    size_t count = 0;
    CK(cuGraphGetNodes(g, NULL, &count));
    return count;
}

int main(void) {
    CUstream s = mock_test_stream(NULL);
    /* w, a host function on it (the node to destroy), w freed, z allocated after the free (in w's
     * bytes under graphmem) and used. */
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUdeviceptr w = 0, z = 0;
    CK(cuMemAllocAsync(&w, 4096, s));
    CK(cuLaunchHostFunc(s, host_function, NULL));
    CUstreamCaptureStatus status;
    const CUgraphNode *frontier = NULL;
    size_t frontier_count = 0;
    CK(cuStreamGetCaptureInfo(s, &status, NULL, NULL, &frontier, NULL, &frontier_count));
    if (frontier_count != 1) {
        printf("the host function is not the frontier (%zu nodes)\n", frontier_count);
        return 2;
    }
    CUgraphNode user_of_w = frontier[0];
    CK(cuMemFreeAsync(w, s));
    CK(cuMemAllocAsync(&z, 4096, s));
    CK(cuLaunchHostFunc(s, host_function, NULL));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    size_t nodes_before = node_count(g);

    atomic_store(&no_host_memory, true);
    CUresult without_memory = cuGraphDestroyNode(user_of_w);
    atomic_store(&no_host_memory, false);
    CUresult with_memory = cuGraphDestroyNode(user_of_w);
    size_t nodes_after = node_count(g);

    bool ok = without_memory == CUDA_ERROR_OUT_OF_MEMORY &&
              with_memory == CUDA_ERROR_NOT_SUPPORTED && nodes_after == nodes_before;
    printf("destroying a node of a graph with allocations: %d without host memory, %d with; "
           "%zu nodes before, %zu after (%s)\n",
           (int)without_memory, (int)with_memory, nodes_before, nodes_after,
           ok ? "as expected"
              : "WRONG: the node went, or the answers are not the refusals expected");
    CK(cuGraphDestroy(g));
    CK(cuStreamDestroy(s));
    return ok ? 0 : 1;
}
