// Another thread's per-thread default stream forks from a capture: a helper thread waits on its
// own per-thread stream for an event the capture recorded, allocates and frees there (a memory
// node each natively, a marker each under graphmem, which the driver does not count as the side's
// work, so graphmem checks the join itself), and rejoins the origin through an event or never
// does. The capture's own thread ends it: natively cudaErrorStreamCaptureUnjoined when the side
// never rejoined, a graph that runs when it did. Built with --default-stream per-thread
// (CMakeLists.txt), so stream 0 is the calling thread's per-thread stream (the driver's _ptsz
// entries with NULL); cudaStreamPerThread names it too. The origin is a stream of its own, or the
// capturing thread's own per-thread stream.
//
// graphmem once noted the streams that received markers by handle, and every thread's per-thread
// stream has the same one: the end asked its own thread's per-thread stream instead of the
// helper's (not in the capture: no verdict), or took the helper's note for the origin's own when
// the capture began on the ending thread's per-thread stream; and a capture begun on a third
// thread's per-thread stream dropped the helper's note. Each time the unjoined capture returned a
// graph.
#include "entries.cuh"
#include "threads.cuh"

static const size_t kWords = 1 << 16, kBytes = kWords * sizeof(uint32_t);

// A case: the origin (`origin_per_thread`: the capturing thread's per-thread stream), whether the
// helper rejoins, how it names its per-thread stream, and whether a third thread begins and ends
// a capture of its own on its per-thread stream while the helper's fork is open.
struct Case {
    const char *tag;
    bool origin_per_thread, joined, named_zero, third_thread;
};

static Case g_case;

static cudaStream_t per_thread(bool named_zero) {
    return named_zero ? (cudaStream_t)0 : cudaStreamPerThread;
}

// A capture on the calling thread's per-thread stream with an allocation freed inside, ended:
// observed, the graph destroyed.
static void third_thread_capture(void) {
    char key[96];
    const char *tag = g_case.tag;
    cudaStream_t s = per_thread(true);
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    void *p = nullptr;
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(&p, kBytes, s);
    if (rc == cudaSuccess)
        rc = cudaFreeAsync(p, s);
    obs_rc(KEY("third_captured"), rc);
    cudaGraph_t g = nullptr;
    obs_rc(KEY("third_end"), cudaStreamEndCapture(s, &g));
    obs_yes(KEY("third_graph"), g != nullptr);
    if (g)
        cudaGraphDestroy(g);
    (void)cudaGetLastError();
}

static void one_case(void) {
    const Case &c = g_case;
    const char *tag = c.tag;
    char key[96];
    cudaStream_t own = nullptr;
    cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    cudaStream_t origin = c.origin_per_thread ? per_thread(true) : own;
    cudaEvent_t fork = nullptr, join = nullptr;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    g_bad = new_counter();
    uint32_t *out = capture_buffer(origin, kWords);
    cudaDeviceSynchronize();

    // The helper: its per-thread stream exists and its runtime is set up before the capture.
    Gate gate;
    cudaError_t side_rc = cudaSuccess;
    cudaStreamCaptureStatus side_during = cudaStreamCaptureStatusNone,
                            side_after = cudaStreamCaptureStatusNone;
    std::thread helper([&] {
        cudaStream_t s = per_thread(c.named_zero);
        cudaStreamSynchronize(s);
        gate.open(1);
        gate.wait(2); // the fork is recorded
        cudaError_t rc = cudaStreamWaitEvent(s, fork, 0);
        void *p = nullptr;
        if (rc == cudaSuccess)
            rc = cudaMallocAsync(&p, kBytes, s);
        if (rc == cudaSuccess && c.joined) {
            rc = fill_words(s, p, kWords, 5);
            if (rc == cudaSuccess) {
                k_add<<<kGrid, kBlock, 0, s>>>(out, (const uint32_t *)p, kWords, 1);
                rc = cudaGetLastError();
            }
        }
        if (rc == cudaSuccess)
            rc = cudaFreeAsync(p, s);
        if (rc == cudaSuccess && c.joined)
            rc = cudaEventRecord(join, s);
        side_rc = rc;
        cudaStreamIsCapturing(s, &side_during);
        (void)cudaGetLastError();
        gate.open(3);
        gate.wait(4); // the capture ended
        cudaStreamIsCapturing(s, &side_after);
        (void)cudaGetLastError();
        gate.open(5);
    });
    gate.wait(1);

    cudaError_t rc = cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal);
    obs_rc(KEY("begin"), rc);
    if (rc == cudaSuccess)
        rc = cudaEventRecord(fork, origin);
    obs_rc(KEY("record_fork"), rc);
    gate.open(2);
    gate.wait(3);
    obs_rc(KEY("side_calls"), side_rc);
    obs(KEY("side_status_during"), capture_status_name(side_during));
    if (c.third_thread) {
        std::thread third(third_thread_capture);
        third.join();
    }
    if (c.joined)
        obs_rc(KEY("wait_join"), cudaStreamWaitEvent(origin, join, 0));
    cudaGraph_t g = nullptr;
    obs_rc(KEY("end_capture"), cudaStreamEndCapture(origin, &g));
    obs_yes(KEY("graph"), g != nullptr);
    obs_capturing(KEY("origin_status_after_end"), origin);
    gate.open(4);
    gate.wait(5);
    obs(KEY("side_status_after_end"), capture_status_name(side_after));
    helper.join();

    if (g) {
        cudaGraphExec_t e = nullptr;
        obs_rc(KEY("instantiate"), cudaGraphInstantiate(&e, g, 0));
        for (int i = 0; e && i < 2; i++) {
            cudaMemsetAsync(out, 0, kBytes, origin);
            obs_rc(KEY("launch"), cudaGraphLaunch(e, origin));
            obs_ok(KEY("data"), check_words(origin, out, kWords, 6));
        }
        if (e)
            cudaGraphExecDestroy(e);
        cudaGraphDestroy(g);
    }
    // The origin captures again as usual afterwards.
    rc = cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal);
    void *p = nullptr;
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(&p, kBytes, origin);
    if (rc == cudaSuccess)
        rc = cudaFreeAsync(p, origin);
    g = nullptr;
    cudaError_t end = cudaStreamEndCapture(origin, &g);
    obs_rc(KEY("again_captured"), rc);
    obs_rc(KEY("again_end"), end);
    if (g)
        cudaGraphDestroy(g);
    obs_rc(KEY("final_sync"), cudaDeviceSynchronize());
    cudaFree(out);
    cudaFree(g_bad);
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaStreamDestroy(own);
}

static void run(Case c) {
    g_case = c;
    run_isolated(c.tag, one_case);
}

int main() {
    run({"stream_unjoined", false, false, true, false});
    run({"stream_joined", false, true, true, false});
    run({"stream_unjoined_named", false, false, false, false});
    run({"per_thread_unjoined", true, false, true, false});
    run({"per_thread_joined", true, true, true, false});
    run({"per_thread_unjoined_named", true, false, false, false});
    run({"stream_unjoined_third", false, false, true, true});
    run({"stream_joined_third", false, true, true, true});
    return 0;
}
