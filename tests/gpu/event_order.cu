// Graphs a program runs one after another on two streams, ordered by events, and the same
// unordered. Four graphs of 16, 32, 64 and 48 MiB, each writing a signature over its allocation,
// sleeping about 20 ms and checking it; they go to streams A, B, A, B in turn.
//  - ordered: each launch waits (cudaStreamWaitEvent) for an event recorded after the one before.
//    They never run at once, so graphmem lets them share one group's memory even though none has
//    finished when the next is launched (core/README.md, "Event order"); four rounds.
//  - unordered: fresh graphs on two fresh streams without events: they may run at once, and so
//    must keep memory of their own.
//  - misled: graph X runs 20 ms on stream A, an event is recorded after it on A, then re-recorded
//    by a graph's event node on an idle stream C (graphmem does not see that record), and B waits
//    for it: graphmem believes B follows X and lets Y share X's memory, but its own fence must
//    still keep Y from running over X (0 wrong words). Event order is a hint, never the proof.
//  - threads: two host threads take turns, each launching its graph on its own stream after
//    waiting for the other's event, ten rounds: 0 wrong words.
//  - chained: X runs 20 ms on stream P; Q waits for an event recorded after it on P, and R for
//    an event recorded on Q after that wait; Y launched on R follows X through Q (order is
//    transitive), so Y shares X's 16 MiB, with 0 wrong words.
// OBS lines (return codes, wrong words) must match the native run; the reserved high-water marks
// are INFO (graphmem: the largest graph, 64 MiB, ordered; 64 + 48 unordered) and checked by
// tests/python/test_gpu_conformance.py (test_event_order).
#include "threads.cuh"

static const size_t kMiB = 1u << 20;
static const size_t kSizes[4] = {16 * kMiB, 32 * kMiB, 64 * kMiB, 48 * kMiB};

// Two host threads take turns through events: thread t launches w[t] on s[t] after waiting for
// the other's event, `rounds` times each.
static bool threads_take_turns(Work *w, cudaStream_t *s, cudaEvent_t *ev, int rounds) {
    std::atomic<int> turn{0};
    std::atomic<bool> ok{true};
    auto body = [&](int t) {
        for (int r = 0; r < rounds; r++) {
            int mine = 2 * r + t;
            while (turn.load() != mine)
                std::this_thread::yield();
            if (mine)
                ok = ok && cudaStreamWaitEvent(s[t], ev[1 - t], 0) == cudaSuccess;
            ok = ok && cudaGraphLaunch(w[t].exec, s[t]) == cudaSuccess;
            ok = ok && cudaEventRecord(ev[t], s[t]) == cudaSuccess;
            turn.store(mine + 1);
        }
    };
    std::thread a(body, 0), b(body, 1);
    a.join();
    b.join();
    return ok;
}

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
    cudaStream_t s[12];
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

    // Misled: a record graphmem does not see (a graph's event node) makes its hint wrong.
    Work x, y;
    bool made = make_work(&x, s[4], 16 * kMiB, 21, 4000000, 5, bad, false, 0) == cudaSuccess;
    made &= make_work(&y, s[5], 16 * kMiB, 22, 4000000, 5, bad, false, 0) == cudaSuccess;
    cudaEvent_t seen;
    cudaEventCreateWithFlags(&seen, cudaEventDisableTiming);
    cudaGraph_t recorder = nullptr;
    cudaGraphExec_t recorder_exec = nullptr;
    cudaGraphNode_t record_node;
    cudaGraphCreate(&recorder, 0);
    made &= cudaGraphAddEventRecordNode(&record_node, recorder, nullptr, 0, seen) == cudaSuccess;
    made &= cudaGraphInstantiate(&recorder_exec, recorder, 0) == cudaSuccess;
    obs_ok("make_misled", made);
    fresh_memory();
    bool ok = cudaGraphLaunch(x.exec, s[4]) == cudaSuccess;
    ok &= cudaEventRecord(seen, s[4]) == cudaSuccess;
    ok &= !recorder_exec || cudaGraphLaunch(recorder_exec, s[6]) == cudaSuccess;
    ok &= cudaStreamWaitEvent(s[5], seen, 0) == cudaSuccess;
    ok &= cudaGraphLaunch(y.exec, s[5]) == cudaSuccess;
    obs_ok("misled_launches", ok);
    info_attrs("misled", read_attrs());
    obs_rc("misled_sync", cudaDeviceSynchronize());
    obs_wrong("misled_wrong_words", bad);
    destroy_work(&x);
    destroy_work(&y);
    if (recorder_exec)
        cudaGraphExecDestroy(recorder_exec);
    cudaGraphDestroy(recorder);
    cudaEventDestroy(seen);

    // Two threads take turns through events.
    Work pair[2];
    cudaEvent_t turn_ev[2];
    for (cudaEvent_t &e : turn_ev)
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    made = make_work(&pair[0], s[7], 16 * kMiB, 31, 2000000, 2, bad, false, 0) == cudaSuccess;
    made &= make_work(&pair[1], s[8], 32 * kMiB, 32, 2000000, 2, bad, false, 0) == cudaSuccess;
    obs_ok("make_threads", made);
    fresh_memory();
    obs_ok("threads_launches", threads_take_turns(pair, s + 7, turn_ev, 10));
    obs_rc("threads_sync", cudaDeviceSynchronize());
    info_attrs("threads", read_attrs());
    obs_wrong("threads_wrong_words", bad);
    for (Work &w : pair)
        destroy_work(&w);
    for (cudaEvent_t e : turn_ev)
        cudaEventDestroy(e);

    // Chained: Y on R follows X on P through an event recorded on Q after Q waited for P.
    Work cx, cy;
    cudaEvent_t link[2];
    for (cudaEvent_t &e : link)
        cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    made = make_work(&cx, s[9], 16 * kMiB, 41, 4000000, 5, bad, false, 0) == cudaSuccess;
    made &= make_work(&cy, s[11], 16 * kMiB, 42, 4000000, 5, bad, false, 0) == cudaSuccess;
    obs_ok("make_chained", made);
    fresh_memory();
    ok = cudaGraphLaunch(cx.exec, s[9]) == cudaSuccess;
    ok &= cudaEventRecord(link[0], s[9]) == cudaSuccess;
    ok &= cudaStreamWaitEvent(s[10], link[0], 0) == cudaSuccess;
    ok &= cudaEventRecord(link[1], s[10]) == cudaSuccess;
    ok &= cudaStreamWaitEvent(s[11], link[1], 0) == cudaSuccess;
    ok &= cudaGraphLaunch(cy.exec, s[11]) == cudaSuccess;
    obs_ok("chained_launches", ok);
    info_attrs("chained", read_attrs());
    obs_rc("chained_sync", cudaDeviceSynchronize());
    obs_wrong("chained_wrong_words", bad);
    destroy_work(&cx);
    destroy_work(&cy);
    for (cudaEvent_t e : link)
        cudaEventDestroy(e);

    cudaEventDestroy(ev);
    cudaFree(bad);
    for (cudaStream_t st : s)
        cudaStreamDestroy(st);
    return 0;
}
