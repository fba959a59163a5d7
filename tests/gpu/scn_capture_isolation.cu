// A launch must not break a capture it has nothing to do with. Graphs X and Y (memory nodes,
// served by graphmem) were launched on s1 (X, then Y: one sharing group, Y used it last); then
// s1 begins a capture and X is launched on the idle stream s2. graphmem orders X after Y's launch
// on s1, and a wait it records on s1 while s1 captures joins s2 into that capture (the driver
// would see an event recorded in the capture): the launch, s2's capture status or s1's
// EndCapture would then differ from the native success / none / success.
// (a) created streams, capture mode relaxed, global and thread-local, the capture begun by the
//     launching thread itself and by another thread;
// (b) per-thread default streams: thread C launched X and Y on its per-thread stream and
//     captures there (global mode); thread B launches X on its own per-thread stream.
// After each case the captured graph is instantiated, launched and its data checked.
#include "threads.cuh"

static const size_t kWords = 1 << 20;
static cudaStream_t s1, s2;
static Work x, y;
static uint32_t *out;
static unsigned *bad;

static cudaError_t prime(cudaStream_t s) {
    cudaError_t rc = launch_both(&x, &y, s);
    return rc == cudaSuccess ? cudaStreamSynchronize(s) : rc;
}

// The capture: out = v + i, then out += 1.
static void begin_part(cudaStream_t s, cudaStreamCaptureMode mode, uint32_t v, cudaError_t *rc) {
    *rc = cudaStreamBeginCapture(s, mode);
    k_fill<<<kGrid, kBlock, 0, s>>>(out, kWords, v);
}

static void end_part(cudaStream_t s, cudaGraph_t *g, cudaError_t *rc) {
    k_add<<<kGrid, kBlock, 0, s>>>(out, out, kWords, 1);
    *rc = cudaStreamEndCapture(s, g);
}

// Ends a capture the stream should not be in (left behind by a broken launch).
static void cleanup(const char *tag, cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone) {
        cudaGraph_t g = nullptr;
        cudaError_t rc = cudaStreamEndCapture(s, &g);
        info(tag, "stray capture ended: %s", cudaGetErrorName(rc));
        if (g)
            cudaGraphDestroy(g);
    }
    (void)cudaGetLastError();
}

static void case_streams(const char *tag, cudaStreamCaptureMode mode, bool other, uint32_t v) {
    char key[96];
    obs_rc(KEY("prime"), prime(s1));
    cudaError_t begin = cudaSuccess, end = cudaSuccess;
    cudaGraph_t g = nullptr;
    Gate gate;
    std::thread t;
    if (other) {
        t = std::thread([&] {
            begin_part(s1, mode, v, &begin);
            gate.open(1);
            gate.wait(2);
            end_part(s1, &g, &end);
        });
        gate.wait(1);
    } else {
        begin_part(s1, mode, v, &begin);
    }
    cudaError_t launch = cudaGraphLaunch(x.exec, s2);
    (void)cudaGetLastError();
    obs_rc(KEY("begin"), begin);
    obs_rc(KEY("launch"), launch);
    obs_capturing(KEY("s2_capturing"), s2);
    obs_capturing(KEY("s1_capturing"), s1);
    if (other) {
        gate.open(2);
        t.join();
    } else {
        end_part(s1, &g, &end);
    }
    obs_rc(KEY("end_capture"), end);
    cleanup(tag, s2);
    obs_rc(KEY("sync_s2"), cudaStreamSynchronize(s2));
    finish_capture(tag, g, s1, out, kWords, v, bad);
}

static void case_per_thread(const char *tag, uint32_t v) {
    char key[96];
    cudaError_t prime_rc = cudaSuccess, begin = cudaSuccess, end = cudaSuccess,
                launch = cudaSuccess, sync = cudaSuccess;
    const char *b_status = "", *c_status = "";
    cudaGraph_t g = nullptr;
    Gate gate;
    std::thread c([&] {
        prime_rc = prime(cudaStreamPerThread);
        begin_part(cudaStreamPerThread, cudaStreamCaptureModeGlobal, v, &begin);
        gate.open(1);
        gate.wait(2);
        cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
        cudaStreamIsCapturing(cudaStreamPerThread, &st);
        c_status = capture_status_name(st);
        end_part(cudaStreamPerThread, &g, &end);
        cleanup(tag, cudaStreamPerThread);
        gate.open(3);
    });
    std::thread b([&] {
        gate.wait(1);
        launch = cudaGraphLaunch(x.exec, cudaStreamPerThread);
        cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
        cudaStreamIsCapturing(cudaStreamPerThread, &st);
        b_status = capture_status_name(st);
        gate.open(2);
        gate.wait(3); // the capture is over
        cleanup(tag, cudaStreamPerThread);
        sync = cudaStreamSynchronize(cudaStreamPerThread);
        (void)cudaGetLastError();
    });
    c.join();
    b.join();
    obs_rc(KEY("prime"), prime_rc);
    obs_rc(KEY("begin"), begin);
    obs_rc(KEY("launch"), launch);
    obs(KEY("launcher_capturing"), b_status);
    obs(KEY("capturer_capturing"), c_status);
    obs_rc(KEY("end_capture"), end);
    obs_rc(KEY("sync_launcher"), sync);
    finish_capture(tag, g, s1, out, kWords, v, bad);
}

int main() {
    require_graph_memory();
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    bad = new_counter();
    out = capture_buffer(s1, kWords);
    obs_rc("make_x", make_work(&x, s1, 8u << 20, 1, 20000, 2, bad, false, 0));
    obs_rc("make_y", make_work(&y, s1, 8u << 20, 2, 20000, 2, bad, false, 0));

    const cudaStreamCaptureMode modes[3] = {cudaStreamCaptureModeRelaxed,
                                            cudaStreamCaptureModeGlobal,
                                            cudaStreamCaptureModeThreadLocal};
    const char *names[3] = {"relaxed", "global", "thread_local"};
    for (int m = 0; m < 3; m++) {
        char tag[64];
        snprintf(tag, sizeof tag, "%s_same_thread", names[m]);
        case_streams(tag, modes[m], false, 100 * m + 1);
        snprintf(tag, sizeof tag, "%s_other_thread", names[m]);
        case_streams(tag, modes[m], true, 100 * m + 2);
    }
    case_per_thread("per_thread_global", 1000);

    destroy_work(&x);
    destroy_work(&y);
    cudaFree(out);
    cudaFree(bad);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    return 0;
}
