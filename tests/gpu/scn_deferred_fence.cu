// Deferred fences (core/README.md): graphmem records no fence after a served launch; the proof
// that it finished is taken when first needed. Graphs X and Y (memory nodes, one sharing group
// under graphmem) are launched on s1 and still run (no synchronize) when:
// (a) s1 begins a capture (relaxed): the proof must be taken before the capture, not in it; X is
//     then launched on s2 (it waits for Y under graphmem: its words stay intact) and a trim runs
//     while s1 captures; the capture ends, is instantiated, launched and checked;
// (b) s1 joins s3's capture by waiting for an event recorded in it; X on s2 and a trim as above,
//     s3 ends the joined capture;
// (c) like (a), with another thread trimming in a loop throughout the capture;
// (d) s1 is destroyed instead, a new stream (which may get s1's handle) launches X.
// Everything observed (return codes, capture states, wrong words, captured data) must be what the
// driver gives natively.
#include "threads.cuh"

static const size_t kWords = 1 << 20;
static cudaStream_t s1, s2, s3;
static Work x, y;
static uint32_t *out;
static unsigned *bad;

// X then Y on s, left running: Y's kernel signs and re-checks its words for about 2 ms.
static cudaError_t pending(cudaStream_t s) {
    return launch_both(&x, &y, s);
}

static void case_begin(const char *tag, bool trim_thread, uint32_t v) {
    char key[96];
    obs_rc(KEY("pending"), pending(s1));
    std::atomic<bool> stop{false};
    std::atomic<int> trims{0};
    std::thread trimmer;
    if (trim_thread)
        trimmer = std::thread([&] {
            while (!stop.load()) {
                cudaDeviceGraphMemTrim(0);
                trims++;
            }
        });
    cudaGraph_t g = nullptr;
    obs_rc(KEY("begin"), cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
    k_fill<<<kGrid, kBlock, 0, s1>>>(out, kWords, v);
    obs_rc(KEY("launch_x_s2"), cudaGraphLaunch(x.exec, s2));
    obs_rc(KEY("trim"), cudaDeviceGraphMemTrim(0));
    // The trimming thread trims at least twice while s1 captures.
    int seen = trims.load();
    while (trim_thread && trims.load() < seen + 2)
        std::this_thread::yield();
    obs_capturing(KEY("s1_capturing"), s1);
    obs_capturing(KEY("s2_capturing"), s2);
    k_add<<<kGrid, kBlock, 0, s1>>>(out, out, kWords, 1);
    obs_rc(KEY("end_capture"), cudaStreamEndCapture(s1, &g));
    stop = true;
    if (trimmer.joinable())
        trimmer.join();
    obs_ok(KEY("trims_ran"), !trim_thread || trims.load() > 0);
    finish_capture(tag, g, s1, out, kWords, v, bad);
}

static void case_wait_event(const char *tag, uint32_t v) {
    char key[96];
    cudaEvent_t e3, e1;
    cudaEventCreateWithFlags(&e3, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&e1, cudaEventDisableTiming);
    obs_rc(KEY("pending"), pending(s1));
    cudaGraph_t g = nullptr;
    obs_rc(KEY("begin_s3"), cudaStreamBeginCapture(s3, cudaStreamCaptureModeRelaxed));
    k_fill<<<kGrid, kBlock, 0, s3>>>(out, kWords, v);
    obs_rc(KEY("record_s3"), cudaEventRecord(e3, s3));
    obs_rc(KEY("s1_waits"), cudaStreamWaitEvent(s1, e3, 0));
    obs_capturing(KEY("s1_capturing"), s1);
    obs_rc(KEY("launch_x_s2"), cudaGraphLaunch(x.exec, s2));
    obs_rc(KEY("trim"), cudaDeviceGraphMemTrim(0));
    k_add<<<kGrid, kBlock, 0, s1>>>(out, out, kWords, 1);
    obs_rc(KEY("record_s1"), cudaEventRecord(e1, s1));
    obs_rc(KEY("s3_waits"), cudaStreamWaitEvent(s3, e1, 0));
    obs_rc(KEY("end_capture"), cudaStreamEndCapture(s3, &g));
    obs_capturing(KEY("s1_after"), s1);
    finish_capture(tag, g, s1, out, kWords, v, bad);
    cudaEventDestroy(e3);
    cudaEventDestroy(e1);
}

static void case_destroy(const char *tag) {
    char key[96];
    cudaStream_t s4, s5;
    cudaStreamCreateWithFlags(&s4, cudaStreamNonBlocking);
    obs_rc(KEY("pending"), pending(s4));
    obs_rc(KEY("destroy"), cudaStreamDestroy(s4));
    cudaStreamCreateWithFlags(&s5, cudaStreamNonBlocking);
    obs_rc(KEY("launch_x_new_stream"), cudaGraphLaunch(x.exec, s5));
    obs_rc(KEY("sync"), cudaDeviceSynchronize());
    obs_wrong(KEY("wrong_words"), bad);
    obs_rc(KEY("trim"), cudaDeviceGraphMemTrim(0));
    cudaStreamDestroy(s5);
}

int main() {
    require_graph_memory();
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking);
    bad = new_counter();
    out = capture_buffer(s1, kWords);
    obs_rc("make_x", make_work(&x, s1, 8u << 20, 1, 20000, 2, bad, false, 0));
    obs_rc("make_y", make_work(&y, s1, 8u << 20, 2, 1000000, 2, bad, false, 0));

    case_begin("begin_capture", false, 10);
    case_wait_event("wait_event_join", 20);
    case_begin("begin_capture_trim_thread", true, 30);
    case_destroy("stream_destroyed");

    destroy_work(&x);
    destroy_work(&y);
    cudaFree(out);
    cudaFree(bad);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    cudaStreamDestroy(s3);
    return 0;
}
