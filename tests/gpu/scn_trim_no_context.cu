// cuDeviceGraphMemTrim from a thread that never touched the runtime API and has no current
// context. The trim names its device, so it needs no context; graphmem's share of it (deciding
// which graphs are idle, unmapping, giving memory back) must work from such a thread too. The
// main thread launched a graph whose allocation is freed inside it and synchronized: natively
// the trim gives that memory back (UsedMemCurrent drops to 0). Then the same with 1000 trims in
// a row from such a thread (graphmem must not fail or complain at each).
#include "threads.cuh"

#include <cuda.h>

static const char *cu_name(CUresult r) {
    const char *name = "unknown";
    cuGetErrorName(r, &name);
    return name;
}

// In a thread of its own: whether it had a current context, and the first non-success trim.
static void trim_thread(int count, bool *had_context, CUresult *first) {
    CUcontext ctx = nullptr;
    *had_context = cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr;
    *first = CUDA_SUCCESS;
    for (int i = 0; i < count; i++) {
        CUresult r = cuDeviceGraphMemTrim(0);
        if (r != CUDA_SUCCESS && *first == CUDA_SUCCESS)
            *first = r;
    }
}

static void round_trip(const char *tag, Work *x, cudaStream_t s, int trims, unsigned *bad) {
    char key[96];
    snprintf(key, sizeof key, "%s_launch", tag);
    obs_rc(key, cudaGraphLaunch(x->exec, s));
    snprintf(key, sizeof key, "%s_sync", tag);
    obs_rc(key, cudaStreamSynchronize(s));
    snprintf(key, sizeof key, "%s_wrong_words", tag);
    obs_wrong(key, bad);
    GraphMemAttrs a = read_attrs();
    snprintf(key, sizeof key, "%s_used_before", tag);
    obs_yes(key, a.used >= x->words * sizeof(uint32_t));
    char when[48];
    snprintf(when, sizeof when, "%s_before", tag);
    info_attrs(when, a);

    bool had_context = true;
    CUresult first = CUDA_ERROR_UNKNOWN;
    std::thread t(trim_thread, trims, &had_context, &first);
    t.join();
    snprintf(key, sizeof key, "%s_thread_had_context", tag);
    obs_yes(key, had_context);
    snprintf(key, sizeof key, "%s_trim", tag);
    obs(key, cu_name(first));
    a = read_attrs();
    snprintf(key, sizeof key, "%s_used_zero_after", tag);
    obs_yes(key, a.used == 0);
    snprintf(key, sizeof key, "%s_reserved_zero_after", tag);
    obs_yes(key, a.reserved == 0);
    snprintf(when, sizeof when, "%s_after", tag);
    info_attrs(when, a);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    Work x;
    obs_rc("make", make_work(&x, s, 16u << 20, 1, 1000, 1, bad, false, 0));

    round_trip("once", &x, s, 1, bad);
    round_trip("loop", &x, s, 1000, bad);

    // The memory comes back at the next launch.
    obs_rc("relaunch", cudaGraphLaunch(x.exec, s));
    obs_rc("relaunch_sync", cudaStreamSynchronize(s));
    obs_wrong("relaunch_wrong_words", bad);

    destroy_work(&x);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}
