// A context destroyed while another thread's launch waits for work in it. Four rounds, the
// driver API only, on device 0:
// - graph G (alloc 32 MiB, free), made once;
// - in a new context C2: G instantiated, launched on a stream of C2 behind a host function that
//   sleeps 300 ms, and its exec destroyed (the driver and graphmem free its memory once its run
//   is over);
// - thread A, in the primary context: G instantiated again and launched on a stream of its own.
//   Under graphmem that launch may map G's windows only after the run in C2 gave them up, so it
//   waits on the host for graphmem's event of that run, an event of C2;
// - thread B, 50 ms later: cuCtxDestroy(C2), which waits for C2's work and takes its events.
// The driver forbids any call on a context while it is destroyed (cuda.h, cuCtxDestroy), so
// graphmem's wait on C2's event must end before the destruction begins. Observed: every call's
// result; graphmem reports no CUDA error (test_gpu_conformance). INFO: how long A's launch took
// (under graphmem, the wait).
#include "threads.cuh"

#include "driver_graphs.cuh"

static void sleep_300ms(void *) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

static void one_round(int round, CUdevice dev, CUcontext primary, CUgraph g) {
    CUcontext c2 = nullptr;
    obs_round_step(round, "ctx_create", cuCtxCreate(&c2, nullptr, 0, dev));
    CUstream s2 = nullptr;
    obs_round_step(round, "stream_c2", cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CUgraphExec x2 = nullptr;
    obs_round_step(round, "instantiate_c2", cuGraphInstantiate(&x2, g, 0));
    obs_round_step(round, "host_sleep_c2", cuLaunchHostFunc(s2, sleep_300ms, nullptr));
    obs_round_step(round, "launch_c2", cuGraphLaunch(x2, s2));
    obs_round_step(round, "exec_destroy_c2", cuGraphExecDestroy(x2));
    cuCtxSetCurrent(nullptr);

    CUresult launch = CUDA_ERROR_UNKNOWN, sync = CUDA_ERROR_UNKNOWN, destroy = CUDA_ERROR_UNKNOWN;
    double launch_ms = 0;
    std::thread a([&] {
        cuCtxSetCurrent(primary);
        CUstream s1 = nullptr;
        CUgraphExec x1 = nullptr;
        cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING);
        if (cuGraphInstantiate(&x1, g, 0) == CUDA_SUCCESS) {
            auto t0 = std::chrono::steady_clock::now();
            launch = cuGraphLaunch(x1, s1);
            launch_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count();
            sync = cuStreamSynchronize(s1);
            cuGraphExecDestroy(x1);
        }
        cuStreamDestroy(s1);
    });
    std::thread b([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        destroy = cuCtxDestroy(c2);
    });
    a.join();
    b.join();
    obs_round_step(round, "launch_primary", launch);
    obs_round_step(round, "sync_primary", sync);
    obs_round_step(round, "ctx_destroy", destroy);
    char key[64];
    snprintf(key, sizeof key, "r%d_launch_primary_ms", round);
    info(key, "%.1f", launch_ms); /* graphmem's launch waited for the run in C2: about 300 */
}

int main() {
    CUdevice dev = driver_device();
    CUcontext primary = nullptr;
    cuDevicePrimaryCtxRetain(&primary, dev);
    cuCtxSetCurrent(primary);
    CUgraph g = nullptr;
    cuGraphCreate(&g, 0);
    CUgraphNode a, f;
    CUDA_MEM_ALLOC_NODE_PARAMS p = device_alloc_params(dev, 32u << 20);
    obs("alloc_node", cu_name(cuGraphAddMemAllocNode(&a, g, nullptr, 0, &p)));
    obs("free_node", cu_name(cuGraphAddMemFreeNode(&f, g, &a, 1, p.dptr)));
    for (int round = 0; round < 4; round++)
        one_round(round, dev, primary, g);
    cuCtxSetCurrent(primary);
    cuGraphDestroy(g);
    return 0;
}
