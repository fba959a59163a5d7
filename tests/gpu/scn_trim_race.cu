// Trim races launches. One host thread launches a graph (32 MiB allocated, signature written,
// sleep, every word checked, freed) and synchronizes, over and over; another thread calls
// cudaDeviceGraphMemTrim(0) as fast as it can meanwhile. Trim may give back memory only of
// graphs that are neither running nor scheduled: memory unmapped between graphmem's preparation
// of a launch and the driver's launch faults (illegal address) or loses the signature.
// Variants: the second thread resets and reads the graph memory attributes instead of trimming;
// two launching threads on two streams (two graphs, each first launched on its own stream) plus
// the trimming thread.
#include "threads.cuh"

static const size_t kBytes = 32u << 20;
static const int kIterations = 3000;

static void run_graph(Work *w, cudaStream_t s, int iterations, FirstError *err) {
    for (int i = 0; i < iterations; i++) {
        cudaError_t rc = cudaGraphLaunch(w->exec, s);
        if (rc == cudaSuccess)
            rc = cudaStreamSynchronize(s);
        err->note(rc);
        if (rc != cudaSuccess)
            break;
    }
}

enum Disturb { kTrim, kAttributes };

static void disturb(Disturb what, std::atomic<int> *running, FirstError *err, long long *calls) {
    long long n = 0;
    while (running->load() > 0) {
        if (what == kTrim) {
            err->note(cudaDeviceGraphMemTrim(0));
        } else {
            uint64_t zero = 0, v = 0;
            err->note(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero));
            err->note(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &zero));
            err->note(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &v));
            err->note(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &v));
            err->note(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &v));
            err->note(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &v));
        }
        n++;
    }
    *calls = n;
}

// `count` launching threads (graph i on stream i) and one disturbing thread.
static void variant(const char *tag, Work *w, cudaStream_t *s, int count, Disturb what,
                    unsigned *bad) {
    char key[96];
    FirstError launch_err[2], disturb_err;
    std::atomic<int> running{count};
    long long calls = 0;
    double t0 = host_seconds();
    std::thread d(disturb, what, &running, &disturb_err, &calls);
    std::thread t[2];
    for (int i = 0; i < count; i++)
        t[i] = std::thread([&, i] {
            run_graph(&w[i], s[i], kIterations, &launch_err[i]);
            running--;
        });
    for (int i = 0; i < count; i++)
        t[i].join();
    d.join();
    snprintf(key, sizeof key, "%s_seconds", tag);
    info(key, "%.3f (%lld disturbing calls)", host_seconds() - t0, calls);
    for (int i = 0; i < count; i++) {
        snprintf(key, sizeof key, "%s_launch%d", tag, i);
        obs_rc(key, launch_err[i].get());
    }
    snprintf(key, sizeof key, "%s_disturb", tag);
    obs_rc(key, disturb_err.get());
    snprintf(key, sizeof key, "%s_device_sync", tag);
    obs_rc(key, cudaDeviceSynchronize());
    snprintf(key, sizeof key, "%s_wrong_words", tag);
    obs_wrong(key, bad);
    info_attrs(tag, read_attrs());
}

int main() {
    require_graph_memory();
    cudaStream_t s[2];
    cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    Work w[2];
    obs_rc("make0", make_work(&w[0], s[0], kBytes, 1, 20000, 1, bad, false, 0));
    obs_rc("make1", make_work(&w[1], s[1], kBytes, 2, 20000, 1, bad, false, 0));

    variant("trim", w, s, 1, kTrim, bad);
    variant("attributes", w, s, 1, kAttributes, bad);
    variant("two_streams_trim", w, s, 2, kTrim, bad);
    obs_rc("final_trim", cudaDeviceGraphMemTrim(0));
    GraphMemAttrs a = read_attrs();
    obs_yes("final_used_zero", a.used == 0);

    destroy_work(&w[0]);
    destroy_work(&w[1]);
    cudaFree(bad);
    cudaStreamDestroy(s[0]);
    cudaStreamDestroy(s[1]);
    return 0;
}
