// Two threads at once: one captures small graphs (begin, a 1 MiB alloc, its free, end, destroy)
// while the other launches two graphs with memory nodes by turns on its stream (so no launch is a
// steady relaunch: each takes graphmem's whole launch protocol, and its locks). First for 300 ms
// side by side, then while the main thread instantiates a captured DAG of 10,000 pairs three times
// (the driver's instantiation holds its own lock: the other threads wait for it natively too).
//
// Metrics, per thread and phase: calls per ms, and the 50th / 99.9th percentile and the longest
// of the call's time in µs (a capture cycle; a launch):
//   threads_captures_per_ms, threads_capture_{p50,p999,max}_us
//   threads_launches_per_ms, threads_launch_{p50,p999,max}_us
//   threads_capture_during_instantiate_{p999,max}_us,
//   threads_launch_during_instantiate_{p999,max}_us
#include <unistd.h>

#include <atomic>
#include <thread>

#include "bench_common.cuh"

enum Phase { WARM, SIDE_BY_SIDE, DURING_INSTANTIATE, STOP };

static std::atomic<int> phase{WARM};

struct Samples {
    std::vector<double> us[3]; // by phase: SIDE_BY_SIDE, DURING_INSTANTIATE
};

static cudaGraphExec_t one_alloc_exec(cudaStream_t s, size_t bytes) {
    begin_capture(s);
    void *p = alloc_on(s, bytes);
    touch_on(s, p);
    free_on(s, p);
    cudaGraphExec_t e = instantiate(end_capture(s));
    CK(cudaGraphUpload(e, s));
    CK(cudaStreamSynchronize(s));
    return e;
}

static void launch_loop(cudaGraphExec_t x, cudaGraphExec_t y, cudaStream_t s, Samples *out) {
    CK(cudaSetDevice(0));
    for (unsigned n = 0;; n++) {
        int ph = phase.load();
        if (ph == STOP)
            break;
        double t0 = now_us();
        launch(n & 1 ? x : y, s);
        double t1 = now_us();
        if (ph != WARM)
            out->us[ph].push_back(t1 - t0);
        if ((n & 63) == 63)
            CK(cudaStreamSynchronize(s)); // the launch queue never fills
    }
    CK(cudaStreamSynchronize(s));
}

static void capture_loop(cudaStream_t s, Samples *out) {
    CK(cudaSetDevice(0));
    for (;;) {
        int ph = phase.load();
        if (ph == STOP)
            break;
        double t0 = now_us();
        // Thread-local: the launching thread's synchronizations stay legal meanwhile.
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        void *p = alloc_on(s, 1 * MiB);
        free_on(s, p);
        cudaGraph_t g = end_capture(s);
        CK(cudaGraphDestroy(g));
        double t1 = now_us();
        if (ph != WARM)
            out->us[ph].push_back(t1 - t0);
    }
}

static double at(std::vector<double> v, double q) {
    BENCH_REQUIRE(!v.empty(), "no samples in a phase");
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, (size_t)(q * (double)v.size()))];
}

int main(int, char **argv) {
    bench_init(argv[0]);
    cudaStream_t st[4], launches = new_stream(), captures = new_stream();
    cudaEvent_t ev[5];
    for (cudaStream_t &s : st)
        s = new_stream();
    for (cudaEvent_t &e : ev)
        e = new_event();
    cudaGraphExec_t x = one_alloc_exec(launches, 1 * MiB), y = one_alloc_exec(launches, 2 * MiB);
    DagShape d = {10000, 4 << 10, 64 * MiB, 1, 3, 10000};
    cudaGraph_t big = capture_dag(d, st, ev);

    Samples launched, captured;
    std::thread launcher(launch_loop, x, y, launches, &launched);
    std::thread capturer(capture_loop, captures, &captured);
    usleep(100 * 1000);
    phase = SIDE_BY_SIDE;
    double t0 = now_us();
    usleep(300 * 1000);
    phase = DURING_INSTANTIATE;
    double side_ms = (now_us() - t0) / 1000;
    for (int i = 0; i < 3; i++) {
        cudaGraphExec_t e = nullptr;
        CK(cudaGraphInstantiate(&e, big, 0));
        CK(cudaGraphExecDestroy(e));
    }
    phase = STOP;
    launcher.join();
    capturer.join();

    metric("threads_captures_per_ms", captured.us[SIDE_BY_SIDE].size() / side_ms);
    metric("threads_capture_p50_us", at(captured.us[SIDE_BY_SIDE], 0.5));
    metric("threads_capture_p999_us", at(captured.us[SIDE_BY_SIDE], 0.999));
    metric("threads_capture_max_us", at(captured.us[SIDE_BY_SIDE], 1.0));
    metric("threads_launches_per_ms", launched.us[SIDE_BY_SIDE].size() / side_ms);
    metric("threads_launch_p50_us", at(launched.us[SIDE_BY_SIDE], 0.5));
    metric("threads_launch_p999_us", at(launched.us[SIDE_BY_SIDE], 0.999));
    metric("threads_launch_max_us", at(launched.us[SIDE_BY_SIDE], 1.0));
    metric("threads_capture_during_instantiate_p999_us",
           at(captured.us[DURING_INSTANTIATE], 0.999));
    metric("threads_capture_during_instantiate_max_us", at(captured.us[DURING_INSTANTIATE], 1.0));
    metric("threads_launch_during_instantiate_p999_us", at(launched.us[DURING_INSTANTIATE], 0.999));
    metric("threads_launch_during_instantiate_max_us", at(launched.us[DURING_INSTANTIATE], 1.0));

    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphExecDestroy(y));
    CK(cudaGraphDestroy(big));
    for (cudaStream_t s : st)
        CK(cudaStreamDestroy(s));
    for (cudaEvent_t e : ev)
        CK(cudaEventDestroy(e));
    CK(cudaStreamDestroy(launches));
    CK(cudaStreamDestroy(captures));
    return 0;
}
