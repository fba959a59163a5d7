// Lifetimes seen through the runtime while a launch still runs (§A9, §A11.1, §A10): a graph A
// (64 MiB: signed over, then 3 x 100 ms of sleep-and-check, k_sign_check of threads.cuh) launched
// on stream s1, and while it runs:
// - destroy_mid_run_trim / _no_trim: A's exec and graph are destroyed (then, or not, a trim), and a
//   new graph B (64 MiB, same size, signed with another id) is captured, instantiated and launched
//   on s2. A must still find its own signature (a_wrong 0) and B its own (b_wrong 0): the driver
//   keeps memory of a scheduled or running launch (§A11.1) and never lets B share it while A runs.
//   graphmem: the exec's part goes in the engine step that destroys it (shim/hooks/exec_hooks.c:
//   gm_hook_cuGraphExecDestroy), but its memory must stay until A's fence says it finished
//   (core/engine/engine_part.c, "decided by recorded fences only"); B on s2 joins or waits for the
//   arena's latest user (GRAPHMEM_CROSS_STREAM=serialize). B's address equal to A's old one is
//   INFO only (scn_trim_race and stress never destroy a running exec).
// - trim_while_running: A not destroyed; trim and a High reset while it runs (Used stays >= need,
//   UsedHigh == Used after the reset); after sync a trim gives everything back although the exec
//   exists (§A11.1), and a relaunch remaps (data checked).
// - destroy_escaping_mid_run: A's allocation escapes (AutoFree exec); exec and graph destroyed and
//   a trim while it runs; after sync the escaped allocation holds A's signature, survives another
//   trim (Used >= need), and cudaFree + trim bring Used to 0.
// Byte counts go to INFO: while B runs beside A the driver needs two footprints, graphmem one
// (documented, §A6.8). Written by a review helper as a probe; on the H200 (eighteenth session) its
// 68 OBS lines matched natively and under graphmem.
#include "entries.cuh"
#include "threads.cuh"

static const size_t kBytes = 64u << 20, kWords = kBytes / 4;

struct Signed {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    uint32_t *p = nullptr, *count = nullptr;
    unsigned *bad = nullptr;
    uint32_t id = 0;
};

static cudaError_t make_signed(Signed *w, cudaStream_t s, uint32_t id, uint32_t spin_ns, int rounds,
                               bool escape, unsigned long long flags) {
    w->id = id;
    w->bad = new_counter();
    cudaMalloc(&w->count, sizeof(uint32_t));
    cudaMemset(w->count, 0, sizeof(uint32_t));
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess && (rc = cudaMallocAsync(&w->p, kBytes, s)) == cudaSuccess) {
        k_bump_count<<<1, 1, 0, s>>>(w->count);
        k_sign_check<<<kWorkGrid, kWorkBlock, 0, s>>>(w->p, kWords, w->count, id, spin_ns, rounds,
                                                      w->bad);
        rc = cudaGetLastError();
        if (rc == cudaSuccess && !escape)
            rc = cudaFreeAsync(w->p, s);
    }
    cudaError_t end = cudaStreamEndCapture(s, &w->g);
    if (rc == cudaSuccess)
        rc = end;
    if (rc == cudaSuccess)
        rc = cudaGraphInstantiateWithFlags(&w->e, w->g, flags);
    return rc;
}

static void obs_used(const char *key, uint64_t need) {
    GraphMemAttrs a = read_attrs();
    char k[96];
    snprintf(k, sizeof k, "%s_used_ge_need", key);
    obs_yes(k, a.used >= need);
    info_attrs(key, a);
}

static bool running(cudaEvent_t ev) {
    cudaError_t rc = cudaEventQuery(ev);
    (void)cudaGetLastError();
    return rc == cudaErrorNotReady;
}

static void destroy_mid_run(bool trim) {
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    Signed a, b;
    obs_rc("a_make", make_signed(&a, s1, 1, 100000000u, 3, false, 0));
    obs_rc("a_launch", cudaGraphLaunch(a.e, s1));
    cudaEventRecord(ev, s1);
    obs_rc("a_exec_destroy", cudaGraphExecDestroy(a.e));
    obs_rc("a_graph_destroy", cudaGraphDestroy(a.g));
    obs_yes("a_running_after_destroy", running(ev)); // the destroys did not wait for A
    obs_used("a_destroyed", kBytes);
    if (trim) {
        obs_rc("trim_while_a_runs", cudaDeviceGraphMemTrim(0));
        obs_used("a_destroyed_trimmed", kBytes);
    }
    obs_rc("b_make", make_signed(&b, s2, 2, 1000000u, 1, false, 0));
    info("b_takes_a_address", "%s", a.p == b.p ? "yes" : "no");
    obs_rc("b_launch", cudaGraphLaunch(b.e, s2));
    obs_yes("a_running_after_b_launch", running(ev));
    obs_used("b_launched", kBytes);
    obs_rc("b_sync", cudaStreamSynchronize(s2));
    obs_rc("a_sync", cudaStreamSynchronize(s1));
    obs_wrong("a_wrong", a.bad);
    obs_wrong("b_wrong", b.bad);
    cudaGraphExecDestroy(b.e);
    cudaGraphDestroy(b.g);
    obs_rc("final_trim", cudaDeviceGraphMemTrim(0));
    obs_yes("final_used_zero", read_attrs().used == 0);
}

static void destroy_mid_run_trim(void) {
    destroy_mid_run(true);
}
static void destroy_mid_run_no_trim(void) {
    destroy_mid_run(false);
}

static void trim_while_running(void) {
    cudaStream_t s1;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    Signed a;
    obs_rc("a_make", make_signed(&a, s1, 3, 100000000u, 3, false, 0));
    obs_rc("a_launch", cudaGraphLaunch(a.e, s1));
    obs_rc("trim_while_a_runs", cudaDeviceGraphMemTrim(0));
    obs_used("running_trimmed", kBytes);
    reset_highs();
    GraphMemAttrs h = read_attrs();
    obs_yes("reset_while_running_high_is_current",
            h.used_high == h.used && h.reserved_high == h.reserved && h.used_high >= kBytes);
    obs_rc("a_sync", cudaStreamSynchronize(s1));
    obs_wrong("a_wrong", a.bad);
    obs_rc("trim_after_sync", cudaDeviceGraphMemTrim(0));
    obs_yes("idle_exec_trimmed_used_zero", read_attrs().used == 0);
    obs_rc("relaunch_after_trim", cudaGraphLaunch(a.e, s1));
    obs_rc("relaunch_sync", cudaStreamSynchronize(s1));
    obs_wrong("relaunch_wrong", a.bad);
    obs_used("relaunched", kBytes);
    cudaGraphExecDestroy(a.e);
    cudaGraphDestroy(a.g);
    obs_rc("final_trim", cudaDeviceGraphMemTrim(0));
    obs_yes("final_used_zero", read_attrs().used == 0);
}

static void destroy_escaping_mid_run(void) {
    cudaStream_t s1;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    Signed a;
    obs_rc("a_make",
           make_signed(&a, s1, 4, 100000000u, 3, true, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    obs_rc("a_launch", cudaGraphLaunch(a.e, s1));
    obs_rc("a_exec_destroy", cudaGraphExecDestroy(a.e));
    obs_rc("a_graph_destroy", cudaGraphDestroy(a.g));
    obs_rc("trim_while_a_runs", cudaDeviceGraphMemTrim(0));
    obs_used("a_destroyed_trimmed", kBytes);
    obs_rc("a_sync", cudaStreamSynchronize(s1));
    obs_wrong("a_wrong", a.bad);
    obs_rc("trim_after_sync", cudaDeviceGraphMemTrim(0));
    obs_used("escaped_trimmed", kBytes);
    k_verify_sig<<<kWorkGrid, kWorkBlock, 0, s1>>>(a.p, kWords, a.count, a.id, a.bad);
    obs_rc("verify_sync", cudaStreamSynchronize(s1));
    obs_wrong("escaped_wrong", a.bad);
    obs_rc("escaped_free", cudaFree(a.p));
    obs_rc("final_trim", cudaDeviceGraphMemTrim(0));
    obs_yes("final_used_zero", read_attrs().used == 0);
}

int main() {
    run_isolated("destroy_mid_run_trim", destroy_mid_run_trim);
    run_isolated("destroy_mid_run_no_trim", destroy_mid_run_no_trim);
    run_isolated("trim_while_running", trim_while_running);
    run_isolated("destroy_escaping_mid_run", destroy_escaping_mid_run);
    return 0;
}
