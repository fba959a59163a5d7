// Captured frees graphmem answers without the driver (shim/hooks/alloc_hooks.c free_served,
// captured_free), and whether the capture survives them; both as the driver on the H200:
//   double_free      a capture frees its own allocation twice: INVALID_VALUE, capture going.
//   child_free       a capture into a child-graph node's graph (BeginCaptureToGraph) frees an
//                    escaped graph allocation: NOT_SUPPORTED, capture going.
// Each in GLOBAL mode; observed: the code, the capture's status after, the end, and a launch of
// what the capture made. Not here: a capture's own allocation freed on a stream outside the
// capture, which the driver refuses with STREAM_CAPTURE_UNSUPPORTED and invalidates the capture,
// where graphmem answers INVALID_VALUE and leaves it going (README, Known limitations).
#include "entries.cuh"

static const size_t kBytes = 1u << 20, kWords = kBytes / sizeof(uint32_t);

static void end_observed(cudaStream_t s) {
    obs("status_after", capture_status_name(s));
    cudaGraph_t g = nullptr;
    obs_rc("end", cudaStreamEndCapture(s, &g));
    obs_yes("graph_made", g != nullptr);
    if (g) {
        cudaGraphExec_t e = nullptr;
        obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
        if (e) {
            obs_rc("launch", cudaGraphLaunch(e, s));
            obs_rc("sync", cudaStreamSynchronize(s));
            cudaGraphExecDestroy(e);
        }
        cudaGraphDestroy(g);
    }
    (void)cudaGetLastError();
}

static void double_free(void) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *a = nullptr;
    obs_rc("begin", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    obs_rc("malloc", cudaMallocAsync(&a, kBytes, s));
    obs_rc("fill", fill_words(s, a, kWords, 3));
    obs_rc("free", cudaFreeAsync(a, s));
    obs_rc("free_again", cudaFreeAsync(a, s));
    end_observed(s);
    cudaStreamDestroy(s);
}

static void child_free(void) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    // An escaped, live graph allocation.
    void *a = nullptr;
    cudaGraph_t ga = nullptr;
    cudaGraphExec_t ea = nullptr;
    obs_rc("setup_begin", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    obs_rc("setup_malloc", cudaMallocAsync(&a, kBytes, s));
    obs_rc("setup_end", cudaStreamEndCapture(s, &ga));
    obs_rc("setup_instantiate", cudaGraphInstantiate(&ea, ga, 0));
    obs_rc("setup_launch", cudaGraphLaunch(ea, s));
    obs_rc("setup_sync", cudaStreamSynchronize(s));
    // A child-graph node's graph.
    cudaGraph_t plain = nullptr, holder = nullptr, inner = nullptr;
    cudaGraphCreate(&plain, 0);
    cudaGraphNode_t empty, child;
    cudaGraphAddEmptyNode(&empty, plain, nullptr, 0);
    cudaGraphCreate(&holder, 0);
    obs_rc("child_node", cudaGraphAddChildGraphNode(&child, holder, nullptr, 0, plain));
    obs_rc("child_graph", cudaGraphChildGraphNodeGetGraph(child, &inner));
    obs_rc("begin_into_child", cudaStreamBeginCaptureToGraph(s, inner, nullptr, nullptr, 0,
                                                             cudaStreamCaptureModeGlobal));
    obs_rc("free_into_child", cudaFreeAsync(a, s));
    obs("status_after", capture_status_name(s));
    cudaGraph_t ended = nullptr;
    obs_rc("end", cudaStreamEndCapture(s, &ended));
    (void)cudaGetLastError();
    obs_rc("free_outside", cudaFreeAsync(a, s)); // still live?
    obs_rc("final_sync", cudaStreamSynchronize(s));
    cudaGraphDestroy(holder);
    cudaGraphDestroy(plain);
    cudaGraphExecDestroy(ea);
    cudaGraphDestroy(ga);
    cudaStreamDestroy(s);
}

int main() {
    run_isolated("double_free", double_free);
    run_isolated("child_free", child_free);
    return 0;
}
