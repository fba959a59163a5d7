/* An instantiation with upload (CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) to the NULL stream in a
 * program built for the per-thread default stream (cuGraphInstantiateWithParams_ptsz), over the
 * mock driver: the upload ran on this thread's default stream, so graphmem's fence for it is
 * recorded there, and the launches that follow on that stream find the exec on their own stream.
 * graphmem must not touch the legacy default stream the program never named: an event recorded
 * there while another thread captures on a blocking stream would invalidate that capture
 * (cudaErrorStreamCaptureImplicit), and it waits for every blocking stream's work. Exit 1 when the
 * legacy stream was used. */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>

#include "mock_test.h"

static void host_function(void *arg) {
    (void)arg;
}

int main(void) {
    CUstream s = mock_test_stream(NULL);
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUdeviceptr p = 0;
    CK(cuMemAllocAsync(&p, 4096, s));
    CK(cuLaunchHostFunc(s, host_function, NULL));
    CK(cuMemFreeAsync(p, s));
    CUgraph graph;
    CK(cuStreamEndCapture(s, &graph));

    long before = gm_mock_legacy_stream_uses();
    CUDA_GRAPH_INSTANTIATE_PARAMS params = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                            .hUploadStream = NULL};
    CUgraphExec exec;
    CK(cuGraphInstantiateWithParams(&exec, graph, &params)); /* the _ptsz entry */
    CK(cuGraphLaunch(exec, NULL));
    CK(cuGraphLaunch(exec, NULL));
    CK(cuStreamSynchronize(NULL));
    long uses = gm_mock_legacy_stream_uses() - before;

    bool ok = uses == 0;
    printf("records and waits on the legacy stream: %ld (%s)\n", uses,
           ok ? "as expected" : "WRONG: the program named only its per-thread default stream");
    CK(cuGraphExecDestroy(exec));
    CK(cuGraphDestroy(graph));
    CK(cuStreamDestroy(s));
    return ok ? 0 : 1;
}
