// Graphs a program runs one after another on two streams, ordered by events, and the same
// unordered. Four graphs of 16, 32, 64 and 48 MiB, each writing a signature over its allocation,
// sleeping about 20 ms and checking it; they go to streams A, B, A, B in turn.
//  - ordered: each launch waits (cudaStreamWaitEvent) for an event recorded after the one before.
//    They never run at once, so graphmem lets them share one group's memory even though none has
//    finished when the next is launched (core/README.md, "Event order"); four rounds.
//  - unordered: fresh graphs on two fresh streams without events: they may run at once, and so
//    must keep memory of their own.
// OBS lines (return codes, wrong words) must match the native run; the reserved high-water marks
// are INFO (graphmem: the largest graph, 64 MiB, ordered; 64 + 48 unordered) and checked by
// tests/python/test_gpu_conformance.py (test_event_order).
#include "threads.cuh"

static const size_t kMiB = 1u << 20;
static const size_t kSizes[4] = {16 * kMiB, 32 * kMiB, 64 * kMiB, 48 * kMiB};

static bool make_four(Work *w, cudaStream_t capture, unsigned *bad, uint32_t first_id) {
    bool made = true;
    for (int i = 0; i < 4; i++)
        made &= make_work(&w[i], capture, kSizes[i], first_id + (uint32_t)i, 4000000, 5, bad, false,
                          0) == cudaSuccess;
    return made;
}

static void fresh_memory(void) {
    cudaDeviceSynchronize();
    cudaDeviceGraphMemTrim(0);
    reset_highs();
}

// Graph i on stream s[i % 2], `rounds` times over; with `ev`, each launch after an event recorded
// behind the launch before it.
static bool take_turns(Work *w, cudaStream_t *s, cudaEvent_t ev, int rounds) {
    bool ok = true;
    for (int round = 0; round < rounds; round++)
        for (int i = 0; i < 4; i++) {
            cudaStream_t here = s[i % 2];
            if (ev && (round || i))
                ok &= cudaStreamWaitEvent(here, ev, 0) == cudaSuccess;
            ok &= cudaGraphLaunch(w[i].exec, here) == cudaSuccess;
            if (ev)
                ok &= cudaEventRecord(ev, here) == cudaSuccess;
        }
    return ok;
}

int main() {
    require_graph_memory();
    cudaStream_t s[4];
    for (cudaStream_t &st : s)
        cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    cudaEvent_t ev;
    cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    unsigned *bad = new_counter();

    Work ordered[4], unordered[4];
    obs_ok("make_ordered", make_four(ordered, s[0], bad, 1));
    fresh_memory();
    obs_ok("ordered_first_round", take_turns(ordered, s, ev, 1));
    info_attrs("ordered_first_round", read_attrs());
    obs_ok("ordered_rounds", take_turns(ordered, s, ev, 3));
    obs_rc("ordered_sync", cudaDeviceSynchronize());
    info_attrs("ordered_end", read_attrs());
    obs_wrong("ordered_wrong_words", bad);
    for (Work &w : ordered)
        destroy_work(&w);

    obs_ok("make_unordered", make_four(unordered, s[2], bad, 11));
    fresh_memory();
    obs_ok("unordered_round", take_turns(unordered, s + 2, nullptr, 1));
    info_attrs("unordered_round", read_attrs());
    obs_rc("unordered_sync", cudaDeviceSynchronize());
    obs_wrong("unordered_wrong_words", bad);
    for (Work &w : unordered)
        destroy_work(&w);

    cudaEventDestroy(ev);
    cudaFree(bad);
    for (cudaStream_t st : s)
        cudaStreamDestroy(st);
    return 0;
}
