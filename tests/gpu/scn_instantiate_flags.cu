// Instantiation flags on graphs holding graph memory, beyond scn_autofree_loop (AutoFree, its
// flags) and scn_upload (WithParams + Upload): each case captures a fresh graph (X = 1 MiB filled
// and escaping, T = 1 MiB allocated, filled and freed inside), instantiates it one way, observes
// cudaGraphExecGetFlags, whether graph memory Used is non-zero before any launch, launches and
// checks X; then frees X, destroys, trims (Used must be 0 again).
// - autofree_priority (AutoFree|UseNodePriority, PyTorch's flags), priority_only (a relaunch with
//   X unfreed refused, then allowed after cudaFree), params_all (WithParams AutoFree|Upload|
//   UseNodePriority into a stream: GetFlags does not report Upload).
// - driver_upload_flag / runtime_upload_flag: the Upload bit through cuGraphInstantiateWithFlags,
//   which takes no stream (the driver refuses it); unknown_flag: bit 0x100.
// - second_*: with an exec of the graph alive, instantiations that are also malformed. The driver
//   checks the call's arguments first (INVALID_VALUE for DeviceLaunch|AutoFree, 0x100, a NULL
//   output; WithParams result_out ERROR), then device launch of memory nodes (result_out
//   NODE_OPERATION_NOT_SUPPORTED), and only then refuses the second exec (NOT_SUPPORTED).
//   graphmem refused the second exec first (H200, helper-62's probe: NOT_SUPPORTED for all five,
//   result_out untouched) before exec_hooks.c asked the driver about the arguments
//   (arguments_refused).
#include "entries.cuh"

static const size_t kBytes = 1u << 20;
static cudaStream_t S;

static cudaGraph_t capture(void **x) {
    void *t = nullptr;
    cudaError_t rc = cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess && (rc = cudaMallocAsync(x, kBytes, S)) == cudaSuccess &&
        (rc = cudaMallocAsync(&t, kBytes, S)) == cudaSuccess &&
        (rc = fill_words(S, t, kBytes / 4, 5)) == cudaSuccess &&
        (rc = cudaFreeAsync(t, S)) == cudaSuccess)
        rc = fill_words(S, *x, kBytes / 4, 77);
    cudaGraph_t g = nullptr;
    cudaError_t end = cudaStreamEndCapture(S, &g);
    if (rc != cudaSuccess || end != cudaSuccess) {
        obs_rc("capture_failed", rc != cudaSuccess ? rc : end);
        return nullptr;
    }
    return g;
}

// After the instantiation `rc` of case `c`: flags, Used, launches, data, cleanup, trim.
static void run_case(const char *c, cudaError_t rc, cudaGraph_t g, cudaGraphExec_t e, void *x,
                     int launches) {
    obs_key(c, "instantiate", rc);
    if (rc == cudaSuccess && e) {
        unsigned long long flags = 0;
        obs_key(c, "get_flags_rc", cudaGraphExecGetFlags(e, &flags));
        obs_key_int(c, "flags", (long long)flags);
        GraphMemAttrs a = read_attrs();
        obs_key_int(c, "used_before_launch_nonzero", a.used != 0);
        for (int i = 0; i < launches; i++)
            obs_key(c, "launch", cudaGraphLaunch(e, S));
        obs_key(c, "sync", cudaStreamSynchronize(S));
        char key[96];
        obs_ok(round_key(key, sizeof key, c, "data"), check_words(S, x, kBytes / 4, 77));
        obs_key_int(c, "used_after_launch_nonzero", read_attrs().used != 0);
        obs_key(c, "free_x", cudaFree(x));
        obs_key(c, "exec_destroy", cudaGraphExecDestroy(e));
    }
    if (g)
        cudaGraphDestroy(g);
    cudaDeviceGraphMemTrim(0);
    reset_highs();
    GraphMemAttrs a = read_attrs();
    obs_key_int(c, "all_zero_after_trim",
                a.used == 0 && a.used_high == 0 && a.reserved == 0 && a.reserved_high == 0);
}

int main() {
    require_graph_memory();
    cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking);
    void *x = nullptr;
    cudaGraph_t g;
    cudaGraphExec_t e;

    g = capture(&x), e = nullptr;
    run_case("autofree_priority",
             cudaGraphInstantiateWithFlags(&e, g,
                                           cudaGraphInstantiateFlagAutoFreeOnLaunch |
                                               cudaGraphInstantiateFlagUseNodePriority),
             g, e, x, 3);

    g = capture(&x), e = nullptr;
    cudaError_t rc = cudaGraphInstantiateWithFlags(&e, g, cudaGraphInstantiateFlagUseNodePriority);
    if (rc == cudaSuccess) {
        obs_rc("priority_only_first_launch", cudaGraphLaunch(e, S));
        obs_rc("priority_only_relaunch_unfreed", cudaGraphLaunch(e, S));
        obs_rc("priority_only_free", cudaFreeAsync(x, S));
    }
    run_case("priority_only", rc, g, e, x, 1);

    g = capture(&x), e = nullptr;
    cudaGraphInstantiateParams ip = {};
    ip.flags = cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |
               cudaGraphInstantiateFlagUseNodePriority;
    ip.uploadStream = S;
    rc = cudaGraphInstantiateWithParams(&e, g, &ip);
    obs_int("params_all_result_out", ip.result_out);
    obs_yes("params_all_err_node_null", ip.errNode_out == nullptr);
    run_case("params_all", rc, g, e, x, 2);

    g = capture(&x), e = nullptr;
    CUresult r = cuGraphInstantiateWithFlags((CUgraphExec *)&e, (CUgraph)g,
                                             CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
    obs_cu("driver_upload_flag_cu", r);
    run_case("driver_upload_flag", r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue, g, e, x,
             1);

    g = capture(&x), e = nullptr;
    run_case("runtime_upload_flag",
             cudaGraphInstantiateWithFlags(&e, g, cudaGraphInstantiateFlagUpload), g, e, x, 1);

    g = capture(&x), e = nullptr;
    r = cuGraphInstantiateWithFlags((CUgraphExec *)&e, (CUgraph)g, 0x100);
    obs_cu("unknown_flag_cu", r);
    run_case("unknown_flag", r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue, g, e, x, 1);

    // A second instantiation while the first exec lives, each also malformed.
    g = capture(&x), e = nullptr;
    obs_rc("second_first_instantiate", cudaGraphInstantiateWithFlags(&e, g, 0));
    CUgraphExec e2 = nullptr;
    // Observed, and an exec the driver made anyway destroyed again at once.
    auto second = [&](const char *key, CUresult r2) {
        obs_cu(key, r2);
        if (r2 == CUDA_SUCCESS && e2)
            cuGraphExecDestroy(e2);
        e2 = nullptr;
    };
    second("second_device_launch_autofree",
           cuGraphInstantiateWithFlags(&e2, (CUgraph)g,
                                       CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                           CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    second("second_unknown_flag", cuGraphInstantiateWithFlags(&e2, (CUgraph)g, 0x100));
    second("second_null_out", cuGraphInstantiateWithFlags(nullptr, (CUgraph)g, 0));
    CUDA_GRAPH_INSTANTIATE_PARAMS p = {};
    p.flags = CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH;
    p.result_out = (CUgraphInstantiateResult)77;
    second("second_params_device_launch", cuGraphInstantiateWithParams(&e2, (CUgraph)g, &p));
    obs_int("second_params_device_launch_result_out", (int)p.result_out);
    p = {};
    p.flags = 0x100;
    p.result_out = (CUgraphInstantiateResult)77;
    second("second_params_unknown_flag", cuGraphInstantiateWithParams(&e2, (CUgraph)g, &p));
    obs_int("second_params_unknown_flag_result_out", (int)p.result_out);
    second("second_plain", cuGraphInstantiateWithFlags(&e2, (CUgraph)g, 0));
    run_case("second", cudaSuccess, g, e, x, 1);
    return 0;
}
