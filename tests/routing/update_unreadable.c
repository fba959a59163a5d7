/* cuGraphExecUpdate of an exec with graphmem's allocations from a graph with allocations, over the
 * mock driver, while the graph's nodes cannot be listed (the mock answers
 * CUDA_ERROR_OUT_OF_MEMORY, as the driver might without host memory). graphmem reads the graph
 * back to pair its markers with the exec's and plan the exec anew; the driver sees the markers as
 * empty nodes and would take the update, leaving the exec to run on addresses no plan of it
 * covers. So an update whose read-back failed must be refused with the read's error (the result
 * CU_GRAPH_EXEC_UPDATE_ERROR), and go through once the graph can be read. Exit 1 otherwise. */
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>

#include "mock_test.h"

static void host_function(void *arg) {
    (void)arg;
}

/* An allocation, a host function, its free: the same shape each time. */
static CUgraph captured(CUstream s) {
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUdeviceptr p = 0;
    CK(cuMemAllocAsync(&p, 4096, s));
    CK(cuLaunchHostFunc(s, host_function, NULL));
    CK(cuMemFreeAsync(p, s));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    return g;
}

int main(void) {
    CUstream s = mock_test_stream(NULL);
    CUgraph a = captured(s), b = captured(s);
    CUgraphExec exec;
    CK(cuGraphInstantiateWithFlags(&exec, a, 0));

    CUgraphExecUpdateResultInfo unread = {.result = CU_GRAPH_EXEC_UPDATE_SUCCESS};
    gm_mock_fail_node_lists(1);
    CUresult unreadable = cuGraphExecUpdate_v2(exec, b, &unread);
    gm_mock_fail_node_lists(0);
    CUgraphExecUpdateResultInfo read = {.result = CU_GRAPH_EXEC_UPDATE_ERROR};
    CUresult readable = cuGraphExecUpdate_v2(exec, b, &read);

    bool ok = unreadable == CUDA_ERROR_OUT_OF_MEMORY &&
              unread.result == CU_GRAPH_EXEC_UPDATE_ERROR && readable == CUDA_SUCCESS &&
              read.result == CU_GRAPH_EXEC_UPDATE_SUCCESS;
    printf("update from a graph that cannot be read: %d (result %d); once it can: %d (result %d) "
           "(%s)\n",
           (int)unreadable, (int)unread.result, (int)readable, (int)read.result,
           ok ? "as expected" : "WRONG: refused with the read's error, then taken, expected");
    CK(cuGraphExecDestroy(exec));
    CK(cuGraphDestroy(a));
    CK(cuGraphDestroy(b));
    CK(cuStreamDestroy(s));
    return ok ? 0 : 1;
}
