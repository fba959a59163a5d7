// Two threads end one capture at once: the thread that began a thread-local capture, and another
// thread. The capture holds an allocation that is filled, copied out and freed; whichever end
// gives a graph, that graph must instantiate, launch and copy the right data, round after round.
// graphmem once let the refused end, when it ran last, take the capture's graph for a failed one
// and forget its allocation while the application held the graph (the next launch then wrote to
// unmapped memory).
//
// Either end may come first, and the driver answers each order differently (H200, driver 580):
// the owner first gets the graph and the other end is refused; the other end first is refused
// with cudaErrorStreamCaptureWrongThread but ends the capture all the same, without a graph, and
// the owner's end then finds no capture (cudaErrorIllegalState). So the racing rounds observe
// only what holds in both orders; the order each round took is logged. Then each order is forced
// (the other end joined before the owner's, or made after it), in thread-local mode and in
// relaxed mode, where the other thread's end, when first, takes the graph itself.
#include "common.cuh"

#include <atomic>
#include <thread>

static const int kRounds = 300, kForcedRounds = 20;
static const size_t kWords = 1 << 14, kBytes = kWords * sizeof(uint32_t);

static cudaStream_t s;
static uint32_t *result = nullptr;

// A capture that allocates, fills with `round`, copies into `result` and frees.
static cudaError_t capture_round(cudaStreamCaptureMode mode, int round) {
    cudaError_t rc = cudaStreamBeginCapture(s, mode);
    void *p = nullptr;
    if (rc == cudaSuccess)
        rc = cudaMallocAsync(&p, kBytes, s);
    if (rc == cudaSuccess)
        rc = fill_words(s, p, kWords, (uint32_t)round);
    if (rc == cudaSuccess) {
        k_add<<<kGrid, kBlock, 0, s>>>(result, (const uint32_t *)p, kWords, 0);
        rc = cudaFreeAsync(p, s);
    }
    return rc;
}

// Instantiates, launches and checks `g`'s copy of `round`, then destroys it.
static bool runs_right(cudaGraph_t g, int round) {
    cudaGraphExec_t x;
    cudaError_t run = instantiate_and_run(g, s, &x);
    bool data = run == cudaSuccess && check_words(s, result, kWords, (uint32_t)round);
    if (x)
        cudaGraphExecDestroy(x);
    cudaGraphDestroy(g);
    if (!data) {
        obs_rc("run", run);
        obs_ok("data", data);
    }
    return data;
}

static bool still_capturing() {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    return cudaStreamIsCapturing(s, &status) != cudaSuccess ||
           status != cudaStreamCaptureStatusNone;
}

typedef struct ends {
    cudaError_t owner, other;
    cudaGraph_t owner_graph, other_graph;
} ends_t;

enum order { RACE, OTHER_FIRST, OWNER_FIRST };

// Both ends of one capture, in `how` order.
static ends_t end_both(enum order how) {
    ends_t e = {cudaSuccess, cudaSuccess, nullptr, nullptr};
    std::atomic<bool> go{false};
    std::thread other([&] {
        while (!go.load(std::memory_order_acquire))
            ;
        e.other = cudaStreamEndCapture(s, &e.other_graph);
    });
    if (how == OTHER_FIRST) {
        go.store(true, std::memory_order_release);
        other.join();
    }
    if (how == RACE)
        go.store(true, std::memory_order_release);
    e.owner = cudaStreamEndCapture(s, &e.owner_graph);
    if (how == OWNER_FIRST)
        go.store(true, std::memory_order_release);
    if (how != OTHER_FIRST)
        other.join();
    (void)cudaGetLastError();
    return e;
}

// The rounds of one mode and order: the codes of the first round observed when the order is
// forced, every round's graph run, the rounds that went as one of the driver's two orders
// counted.
static void rounds(const char *label, cudaStreamCaptureMode mode, enum order how, int count) {
    int consistent = 0, owner_first = 0, other_first = 0;
    for (int round = 0; round < count; round++) {
        cudaError_t rc = capture_round(mode, round);
        if (rc != cudaSuccess) {
            obs_key(label, "capture", rc);
            break;
        }
        ends_t e = end_both(how);
        if (how != RACE && round == 0) {
            obs_key(label, "owner_end", e.owner);
            obs_key(label, "other_end", e.other);
            obs_key_int(label, "owner_graph", e.owner_graph != nullptr);
            obs_key_int(label, "other_graph", e.other_graph != nullptr);
            obs_key_int(label, "capturing_after", still_capturing());
        }
        bool owner_got = e.owner == cudaSuccess && e.owner_graph != nullptr;
        bool other_got = e.other == cudaSuccess && e.other_graph != nullptr;
        bool owner_went_first = owner_got && !other_got && e.other_graph == nullptr;
        bool other_went_first = !owner_got && e.owner == cudaErrorIllegalState &&
                                e.owner_graph == nullptr &&
                                (other_got || e.other == cudaErrorStreamCaptureWrongThread);
        if ((!owner_went_first && !other_went_first) || still_capturing()) {
            obs_key(label, "owner_end", e.owner);
            obs_key(label, "other_end", e.other);
            break;
        }
        owner_first += owner_went_first;
        other_first += other_went_first;
        cudaGraph_t g = owner_got ? e.owner_graph : e.other_graph;
        if (g != nullptr && !runs_right(g, round))
            break;
        consistent++;
    }
    obs_key_int(label, "consistent_rounds", consistent);
    info(label, "owner first %d, other first %d", owner_first, other_first);
}

int main() {
    require_graph_memory();
    g_bad = new_counter();
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaMalloc(&result, kBytes);
    rounds("race", cudaStreamCaptureModeThreadLocal, RACE, kRounds);
    rounds("thread_local_other_first", cudaStreamCaptureModeThreadLocal, OTHER_FIRST,
           kForcedRounds);
    rounds("thread_local_owner_first", cudaStreamCaptureModeThreadLocal, OWNER_FIRST,
           kForcedRounds);
    rounds("relaxed_other_first", cudaStreamCaptureModeRelaxed, OTHER_FIRST, kForcedRounds);
    rounds("relaxed_owner_first", cudaStreamCaptureModeRelaxed, OWNER_FIRST, kForcedRounds);
    rounds("relaxed_race", cudaStreamCaptureModeRelaxed, RACE, kRounds);
    cudaFree(result);
    cudaFree(g_bad);
    cudaStreamDestroy(s);
    return 0;
}
