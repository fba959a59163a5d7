// Instantiations of a graph large enough that graphmem plans it on a thread of its own while the
// driver instantiates (shim/hooks/exec_hooks.c, PLAN_AHEAD_NODES): one the driver refuses (unknown
// flags; the plan made meanwhile must leave nothing), then one through each entry that succeeds,
// the last with the upload flag. Every exec is launched twice and each link's result checked (0
// wrong words), natively and under graphmem alike.
#include "common.cuh"

static const int kLinks = 200;
static const size_t kBytes = 1u << 20, kWords = 1024;

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *result = nullptr;
    cudaMalloc(&result, kLinks * kWords * sizeof(uint32_t));

    // Each link: alloc, fill, copy its first words out, free: four nodes a link.
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < kLinks && rc == cudaSuccess; i++) {
        void *p = nullptr;
        rc = cudaMallocAsync(&p, kBytes, s);
        if (rc == cudaSuccess)
            rc = fill_words(s, p, kBytes / 4, 10000u * (uint32_t)i);
        if (rc == cudaSuccess) {
            k_add<<<kGrid, kBlock, 0, s>>>(result + i * kWords, (const uint32_t *)p, kWords, 3);
            rc = cudaFreeAsync(p, s);
        }
    }
    cudaGraph_t g = nullptr;
    if (!end_capture_observed(s, rc, &g))
        return 0;
    size_t nodes = 0;
    cudaGraphGetNodes(g, nullptr, &nodes);
    info("nodes", "%zu", nodes);

    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate_bad_flags", cudaGraphInstantiateWithFlags(&e, g, 1ull << 40));
    auto run = [&](const char *name, cudaGraphExec_t exec) {
        for (int launch = 0; launch < 2; launch++) {
            cudaMemsetAsync(result, 0, kLinks * kWords * sizeof(uint32_t), s);
            obs_rc(name, cudaGraphLaunch(exec, s));
            obs_rc("sync", cudaStreamSynchronize(s));
            bool ok = true;
            for (int i = 0; i < kLinks; i++)
                ok = check_words(s, result + i * kWords, kWords, 10000u * (uint32_t)i + 3) && ok;
            obs_ok("results", ok);
        }
        obs_rc("exec_destroy", cudaGraphExecDestroy(exec));
    };
    obs_rc("instantiate_with_flags", cudaGraphInstantiateWithFlags(&e, g, 0));
    run("launch_with_flags", e);
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    run("launch_instantiate", e);
    cudaGraphInstantiateParams ip = {};
    ip.flags = cudaGraphInstantiateFlagUpload;
    ip.uploadStream = s;
    obs_rc("instantiate_with_upload", cudaGraphInstantiateWithParams(&e, g, &ip));
    obs_rc("sync_upload", cudaStreamSynchronize(s));
    run("launch_uploaded", e);

    cudaGraphDestroy(g);
    cudaFree(result);
    cudaStreamDestroy(s);
    return 0;
}
