// The driver's pointer check races launches and trims. Graph G: allocation A (8 MiB) -> memset of
// A -> a kernel checking every word -> free of A; exec E of G. One host thread launches E,
// synchronizes and trims, over and over, so A's memory is mapped again at every launch. Another
// thread meanwhile sets the memset node's parameters in G (cudaGraphMemsetNodeSetParams, the same
// ones) as fast as it can: each call makes the driver check that A's pages are mapped. (Adding
// more memset nodes on A to G instead is no test: the driver refuses every one, InvalidValue,
// while graphmem accepts them; see the note in shim/README.md.) graphmem covers unmapped pages with
// a scratch page for that check (engine.h, "Covers"); a cover made or removed outside the engine's
// order collides with the launch's own mapping (the launch fails) or loses a page to the trim (the
// call fails).
#include "threads.cuh"

static const size_t kBytes = 8u << 20;
static const int kLaunches = 1500;
static const uint32_t kValue = 0x5eed1234u;

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t alloc, memset_node, check, free_node;
    void *a = nullptr;
    obs_rc("alloc_node", add_alloc(&alloc, g, nullptr, 0, kBytes, &a));
    cudaMemsetParams mp = memset_words(a, kBytes, kValue);
    obs_rc("memset_node", cudaGraphAddMemsetNode(&memset_node, g, &alloc, 1, &mp));
    obs_rc("check_node", add_check(&check, g, &memset_node, 1, a, kBytes / 4, kValue, bad,
                                   (const void *)k_check_value));
    obs_rc("free_node", cudaGraphAddMemFreeNode(&free_node, g, &check, 1, a));
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));

    const char *tags[] = {"set_params", "set_params_again"};
    for (int variant = 0; variant < 2; variant++) {
        FirstError launch_err, poke_err;
        std::atomic<bool> running{true};
        long long pokes = 0, first_failed = -1;
        double t0 = host_seconds();
        std::thread poker([&] {
            while (running.load()) {
                cudaError_t rc = cudaGraphMemsetNodeSetParams(memset_node, &mp);
                if (rc != cudaSuccess && first_failed < 0)
                    first_failed = pokes;
                poke_err.note(rc);
                pokes++;
            }
        });
        for (int i = 0; i < kLaunches && e; i++) {
            cudaError_t rc = cudaGraphLaunch(e, s);
            if (rc == cudaSuccess)
                rc = cudaStreamSynchronize(s);
            if (rc == cudaSuccess)
                rc = cudaDeviceGraphMemTrim(0);
            launch_err.note(rc);
            if (rc != cudaSuccess)
                break;
        }
        running = false;
        poker.join();
        char key[64];
        snprintf(key, sizeof key, "%s_seconds", tags[variant]);
        info(key, "%.3f (%lld driver checks meanwhile, the first failed: %lld)",
             host_seconds() - t0, pokes, first_failed);
        snprintf(key, sizeof key, "%s_launches", tags[variant]);
        obs_rc(key, launch_err.get());
        snprintf(key, sizeof key, "%s_pokes", tags[variant]);
        obs_rc(key, poke_err.get());
        snprintf(key, sizeof key, "%s_device_sync", tags[variant]);
        obs_rc(key, cudaDeviceSynchronize());
        snprintf(key, sizeof key, "%s_wrong_words", tags[variant]);
        obs_wrong(key, bad);
    }
    if (e)
        cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    obs_rc("final_trim", cudaDeviceGraphMemTrim(0));
    obs_yes("final_used_zero", read_attrs().used == 0);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}
