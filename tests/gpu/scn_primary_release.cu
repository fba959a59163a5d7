// A device's primary context released by the program (cuDevicePrimaryCtxRelease), in two phases.
//
// `last`: the driver API only, so that nothing else holds the primary context. Four rounds, each
// retaining it, making it current, instantiating and launching sixteen graphs (alloc 2 MiB, free)
// on the default stream, synchronizing and releasing it: the last reference, so the driver resets
// the context (cuda.h) with the graphs, execs and graphmem's events in it. The next round's
// retain makes a new one, where the first launch meets the default stream's graph memory again.
//
// `race`: as `last`, while a second thread waits for the primary context to go inactive and
// retains it at once, making a new one (the same handle, a new id) that it then hands back. A
// release can only learn that its context went by asking the driver afterwards, and the retain
// may come first (whether it does is up to timing: a review's probe saw it in 12 of 24 rounds at
// 8fd497d, this program in none of 24 on one H200): graphmem tells the contexts apart by id.
// test_primary_release_marks_gone (tests/python/test_gpu_conformance.py) counts, under
// GRAPHMEM_LOG_LEVEL=debug, that every context that went had graphmem's events marked gone:
// `releases_to_zero` of them (INFO).
//
// `kept`: the runtime holds the primary context too, so a retain and release by the program (as a
// library sharing the context does) leaves it active. Graph A signs 64 MiB and checks the words
// for 400 ms on one stream; while it runs, the program retains and releases the primary context,
// then launches graph B (64 MiB, signed at once) on a second stream. A's words must not change
// under it: graphmem's events of the context still order its memory.
#include "threads.cuh"

#include "driver_graphs.cuh"

// Releases that ended a primary context, counted natively (the state and the id tell).
static int releases_to_zero = 0;

static int primary_active(CUdevice dev) {
    unsigned flags = 0;
    int active = -1;
    cuDevicePrimaryCtxGetState(dev, &flags, &active);
    return active;
}

static void last_reference(CUdevice dev) {
    char key[64];
    for (int round = 0; round < 4; round++) {
        CUcontext ctx = nullptr;
        snprintf(key, sizeof key, "last_r%d_retain", round);
        obs(key, cu_name(cuDevicePrimaryCtxRetain(&ctx, dev)));
        snprintf(key, sizeof key, "last_r%d_set_current", round);
        obs(key, cu_name(cuCtxSetCurrent(ctx)));
        snprintf(key, sizeof key, "last_r%d_failures", round);
        obs_int(key, sixteen_graphs(dev));
        snprintf(key, sizeof key, "last_r%d_sync", round);
        obs(key, cu_name(cuCtxSynchronize()));
        cuCtxSetCurrent(nullptr);
        snprintf(key, sizeof key, "last_r%d_release", round);
        obs(key, cu_name(cuDevicePrimaryCtxRelease(dev)));
        snprintf(key, sizeof key, "last_r%d_active_after", round);
        int active = primary_active(dev);
        obs_int(key, active);
        releases_to_zero += active == 0;
    }
}

static unsigned long long context_id(CUcontext ctx) {
    unsigned long long id = 0;
    cuCtxGetId(ctx, &id);
    return id;
}

static void race_retain(CUdevice dev) {
    char key[64];
    for (int round = 0; round < 8; round++) {
        CUcontext ctx = nullptr, next = nullptr;
        cuDevicePrimaryCtxRetain(&ctx, dev);
        unsigned long long first = context_id(ctx);
        cuCtxSetCurrent(ctx);
        snprintf(key, sizeof key, "race_r%d_failures", round);
        obs_int(key, sixteen_graphs(dev));
        snprintf(key, sizeof key, "race_r%d_sync", round);
        obs(key, cu_name(cuCtxSynchronize()));
        cuCtxSetCurrent(nullptr);
        std::atomic<bool> go{false};
        std::thread other([&] {
            while (!go.load())
                ;
            while (primary_active(dev) != 0)
                ;
            cuDevicePrimaryCtxRetain(&next, dev);
        });
        go.store(true);
        snprintf(key, sizeof key, "race_r%d_release", round);
        obs(key, cu_name(cuDevicePrimaryCtxRelease(dev)));
        other.join();
        releases_to_zero++;
        snprintf(key, sizeof key, "race_r%d_new_context", round);
        obs_yes(key, next != nullptr && context_id(next) != first);
        cuCtxSetCurrent(next); // the default stream's memory again, in the new context
        snprintf(key, sizeof key, "race_r%d_failures_after", round);
        obs_int(key, sixteen_graphs(dev));
        snprintf(key, sizeof key, "race_r%d_sync_after", round);
        obs(key, cu_name(cuCtxSynchronize()));
        cuCtxSetCurrent(nullptr);
        snprintf(key, sizeof key, "race_r%d_release_after", round);
        obs(key, cu_name(cuDevicePrimaryCtxRelease(dev)));
        releases_to_zero += primary_active(dev) == 0;
    }
}

static void kept_reference(CUdevice dev) {
    require_graph_memory(); // the runtime's reference from here on
    unsigned *bad = new_counter();
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    Work a, b;
    const size_t bytes = 64u << 20;
    obs_rc("kept_make_a", make_work(&a, s1, bytes, 1, 200u * 1000 * 1000, 2, bad, false, 0));
    obs_rc("kept_make_b", make_work(&b, s2, bytes, 2, 0, 1, bad, false, 0));
    obs_rc("kept_launch_b_first", cudaGraphLaunch(b.exec, s2)); // B's memory is mapped
    obs_rc("kept_sync_b_first", cudaStreamSynchronize(s2));
    obs_rc("kept_launch_a", cudaGraphLaunch(a.exec, s1));
    CUcontext ctx = nullptr;
    obs("kept_retain", cu_name(cuDevicePrimaryCtxRetain(&ctx, dev)));
    obs("kept_release", cu_name(cuDevicePrimaryCtxRelease(dev)));
    obs_int("kept_active_after", primary_active(dev));
    obs_rc("kept_launch_b", cudaGraphLaunch(b.exec, s2));
    obs_rc("kept_sync_b", cudaStreamSynchronize(s2));
    obs_rc("kept_sync_a", cudaStreamSynchronize(s1));
    obs_wrong("kept_wrong_words", bad);
    destroy_work(&a);
    destroy_work(&b);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
}

int main() {
    CUdevice dev = driver_device();
    last_reference(dev);
    race_retain(dev);
    info("releases_to_zero", "%d", releases_to_zero);
    kept_reference(dev);
    return 0;
}
