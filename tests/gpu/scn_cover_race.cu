// The driver's pointer check races launches and trims. Graph G: allocation A (8 MiB) -> memset of
// A -> a kernel checking every word -> free of A; exec E of G. One host thread launches E,
// synchronizes and trims, over and over, so A's memory is mapped again at every launch. Another
// thread meanwhile sets the memset node's parameters in G (cudaGraphMemsetNodeSetParams, the same
// ones) as fast as it can, or adds new memset nodes on A to G: each call makes the driver check
// that A's pages are mapped. graphmem covers unmapped pages with a scratch page for that check
// (engine.h, "Covers"); a cover made or removed outside the engine's order collides with the
// launch's own mapping (the launch fails) or loses a page to the trim (the call fails).
#include "threads.cuh"

static const size_t kBytes = 8u << 20;
static const int kLaunches = 1500;
static const uint32_t kValue = 0x5eed1234u;
static const long long kMaxNodes = 20000; // nodes added to G at most

enum Poke { kSetParams, kAddNodes };

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
    cudaMemsetParams mp = {};
    mp.dst = a;
    mp.elementSize = 4;
    mp.width = kBytes / 4;
    mp.height = 1;
    mp.value = kValue;
    obs_rc("memset_node", cudaGraphAddMemsetNode(&memset_node, g, &alloc, 1, &mp));
    obs_rc("check_node", add_check(&check, g, &memset_node, 1, a, kBytes / 4, kValue, bad));
    obs_rc("free_node", cudaGraphAddMemFreeNode(&free_node, g, &check, 1, a));
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));

    const char *tags[] = {"set_params", "add_nodes"};
    for (int variant = kSetParams; variant <= kAddNodes; variant++) {
        FirstError launch_err, poke_err;
        std::atomic<bool> running{true};
        long long pokes = 0;
        double t0 = host_seconds();
        std::thread poker([&] {
            while (running.load() && (variant == kSetParams || pokes < kMaxNodes)) {
                cudaGraphNode_t n;
                poke_err.note(variant == kSetParams
                                  ? cudaGraphMemsetNodeSetParams(memset_node, &mp)
                                  : cudaGraphAddMemsetNode(&n, g, &alloc, 1, &mp));
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
        info(key, "%.3f (%lld driver checks meanwhile)", host_seconds() - t0, pokes);
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
