// Graphs with memory across device resets (cudaDeviceReset: the primary context is destroyed and
// made again), as test suites do between tests. Four rounds, each in a fresh context: graph A
// (16 MiB signed and checked by its kernel, freed in the graph) and graph B (8 MiB signed, not
// freed: it escapes), each launched twice (B's second launch refused while its allocation is
// unfreed, then allowed after cudaFree). In odd rounds the program cleans up before the reset
// (execs and graphs destroyed, B's allocation freed); in even rounds it leaves all of it to the
// reset, which ends those objects natively. Then the next round's objects, whose handles may be
// the old ones' again, must behave as new. Measured on driver 580: the graph memory attributes
// are not zero after a reset (the driver keeps what it reserved); graphmem must report the same.
#include "threads.cuh"

static void one_round(int round) {
    char key[96];
    auto rc = [&](const char *step, cudaError_t r) {
        char name[96];
        snprintf(name, sizeof name, "r%d_%s", round, step);
        obs_rc(name, r);
    };
    GraphMemAttrs fresh = read_attrs();
    char when[32];
    snprintf(when, sizeof when, "r%d_fresh", round);
    info_attrs(when, fresh);
    snprintf(key, sizeof key, "r%d_fresh_reserved_zero", round);
    obs_yes(key, fresh.reserved == 0);
    snprintf(key, sizeof key, "r%d_fresh_used_high_zero", round);
    obs_yes(key, fresh.used_high == 0);
    cudaStream_t s;
    rc("stream", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *bad = new_counter();
    Work a, b;
    rc("make_a", make_work(&a, s, 16u << 20, 1 + 2 * round, 1000, 1, bad, false, 0));
    rc("make_b", make_work(&b, s, 8u << 20, 2 + 2 * round, 1000, 1, bad, true, 0));
    rc("launch_a0", cudaGraphLaunch(a.exec, s));
    rc("launch_a1", cudaGraphLaunch(a.exec, s));
    rc("launch_b", cudaGraphLaunch(b.exec, s));
    rc("sync", cudaStreamSynchronize(s));
    rc("relaunch_b_unfreed", cudaGraphLaunch(b.exec, s));
    snprintf(key, sizeof key, "r%d_wrong_words", round);
    obs_wrong(key, bad);
    GraphMemAttrs used = read_attrs();
    snprintf(key, sizeof key, "r%d_used_holds_b", round);
    obs_yes(key, used.used >= (8u << 20));
    if (round % 2) {
        rc("free_b", cudaFree(b.escaped));
        rc("relaunch_b_freed", cudaGraphLaunch(b.exec, s));
        rc("sync_again", cudaStreamSynchronize(s));
        rc("free_b_again", cudaFree(b.escaped));
        destroy_work(&a);
        destroy_work(&b);
        cudaStreamDestroy(s);
        cudaFree(bad);
    }
    rc("reset", cudaDeviceReset());
}

int main() {
    require_graph_memory();
    for (int round = 0; round < 4; round++)
        one_round(round);
    return 0;
}
