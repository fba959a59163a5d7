// Memory of a finished graph on another stream. Eight graphs on eight streams: graph 0 runs alone
// and finishes; graphs 1-6 start long runs (a signature written over their 16 MiB, slept on and
// checked); graph 7's first launch then finds graph 0's memory idle. The driver reuses it, and so
// does graphmem (the part joins stream 0's finished group instead of growing the footprint); from
// then on graphs 0 and 7 share memory, so every later launch of one must wait for the other's,
// on whichever stream: graph 0 is relaunched at once while graph 7 still runs, then all eight
// go round five more times back to back, each on its own stream, and once more with graphs 0 and
// 7 swapping streams. Natively the graphs never share memory; under graphmem an ordering missed
// shows up as wrong words. Footprints are INFO (graphmem's: 7 × 16 MiB where 8 would be without
// the reuse).
#include "threads.cuh"

static const int kGraphs = 8;
static const size_t kBytes = 16u << 20;

int main() {
    require_graph_memory();
    cudaStream_t s[kGraphs];
    for (cudaStream_t &st : s)
        cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    Work w[kGraphs];
    bool made = true;
    for (int i = 0; i < kGraphs; i++) // graph 0 short, the others about 20 ms
        made &= make_work(&w[i], s[i], kBytes, (uint32_t)i + 1, i ? 4000000 : 0, i ? 5 : 1, bad,
                          false, 0) == cudaSuccess;
    obs_ok("make", made);

    obs_rc("first_launch_0", cudaGraphLaunch(w[0].exec, s[0]));
    obs_rc("first_sync_0", cudaStreamSynchronize(s[0]));
    bool ok = true;
    for (int i = 1; i < kGraphs; i++)
        ok &= cudaGraphLaunch(w[i].exec, s[i]) == cudaSuccess;
    obs_ok("first_launches", ok);
    info_attrs("after_first_launches", read_attrs());
    obs_rc("relaunch_0", cudaGraphLaunch(w[0].exec, s[0]));
    obs_rc("first_round_sync", cudaDeviceSynchronize());
    obs_wrong("first_round_wrong_words", bad);

    ok = true;
    for (int round = 0; round < 5; round++)
        for (int i = 0; i < kGraphs; i++)
            ok &= cudaGraphLaunch(w[i].exec, s[i]) == cudaSuccess;
    obs_ok("rounds_launches", ok);
    obs_rc("rounds_sync", cudaDeviceSynchronize());
    obs_wrong("rounds_wrong_words", bad);

    ok = true;
    for (int i = 0; i < kGraphs; i++)
        ok &= cudaGraphLaunch(w[i].exec, s[i == 0 ? 7 : i == 7 ? 0 : i]) == cudaSuccess;
    obs_ok("swapped_launches", ok);
    obs_rc("swapped_sync", cudaDeviceSynchronize());
    obs_wrong("swapped_wrong_words", bad);
    info_attrs("end", read_attrs());

    for (Work &x : w)
        destroy_work(&x);
    cudaFree(bad);
    for (cudaStream_t st : s)
        cudaStreamDestroy(st);
    return 0;
}
