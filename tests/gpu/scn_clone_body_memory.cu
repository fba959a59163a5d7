// A clone of a graph whose conditional body (IF, condition 1 by default) holds memory nodes: the
// body allocates A explicitly, fills and checks it, frees it; a second graph does the same with a
// captured cudaMallocAsync/cudaFreeAsync pair in its body (a capture into the body graph). The
// driver refuses to instantiate such a graph (§A3.11). Each graph is cloned, and the clone and the
// original are instantiated and, where that succeeds, launched. Without GRAPHMEM_LIFT_RESTRICTIONS
// graphmem must answer as the driver does, the clone included (its bodies are the driver's copies,
// which graphmem never saw being made).
#include "common.cuh"

static const size_t kBytes = 4u << 20;
static const size_t kWords = kBytes / 4;

// Body: alloc A (explicit nodes), fill, check, free.
static bool explicit_body(cudaGraph_t body, unsigned *bad) {
    cudaGraphNode_t al, fill, check, fr;
    void *a = nullptr;
    bool ok = add_alloc(&al, body, nullptr, 0, kBytes, &a) == cudaSuccess;
    ok = ok && add_fill(&fill, body, &al, 1, a, kWords, 7) == cudaSuccess;
    ok = ok && add_check(&check, body, &fill, 1, a, kWords, 7, bad) == cudaSuccess;
    return ok && cudaGraphAddMemFreeNode(&fr, body, &check, 1, a) == cudaSuccess;
}

// Body: a capture into it (cudaStreamBeginCaptureToGraph) of alloc, fill, free.
static bool captured_body(cudaGraph_t body, cudaStream_t s) {
    void *a = nullptr;
    cudaError_t rc =
        cudaStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal);
    if (rc != cudaSuccess)
        return false;
    cudaError_t captured = cudaMallocAsync(&a, kBytes, s);
    if (captured == cudaSuccess)
        captured = fill_words(s, a, kWords, 9);
    if (captured == cudaSuccess)
        captured = cudaFreeAsync(a, s);
    cudaGraph_t same = nullptr;
    rc = cudaStreamEndCapture(s, &same);
    return captured == cudaSuccess && rc == cudaSuccess && same == body;
}

static void round(const char *name, bool captured, cudaStream_t s, unsigned *bad) {
    char key[64];
    cudaGraph_t g = nullptr, clone = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraph_t body = add_if_node(g, round_key(key, sizeof key, name, "if_node"));
    obs_ok(round_key(key, sizeof key, name, "body_built"),
           body && (captured ? captured_body(body, s) : explicit_body(body, bad)));
    obs_key(name, "clone", cudaGraphClone(&clone, g));
    if (clone)
        run_graph_observed(round_key(key, sizeof key, name, "of_clone"), clone, s);
    run_graph_observed(name, g, s);
    if (clone)
        cudaGraphDestroy(clone);
    cudaGraphDestroy(g);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    round("explicit", false, s, bad);
    round("captured", true, s, bad);
    unsigned h = 1;
    obs_rc("bad_copy", cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
    obs_int("wrong_words", h);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}
