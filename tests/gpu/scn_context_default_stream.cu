// Graphs with memory launched on the default stream in contexts the program creates and destroys:
// four rounds, each in a new context on device 0, of sixteen graphs (alloc 2 MiB, free)
// instantiated and launched on stream 0, then cuCtxSynchronize and cuCtxDestroy with the execs
// left to it. graphmem shares graph memory on the default stream across contexts, and its events
// of a destroyed context went with it: before graphmem marked them gone, the next round's first
// launch queried one and crashed in the driver (cuEventQuery, SIGSEGV on driver 580).
#include "common.cuh"

#include "driver_graphs.cuh"

int main() {
    // The driver API only: a runtime call would make the primary context first, and then the
    // contexts below are not the first the default stream's memory met.
    CUdevice dev = driver_device();
    char key[64];
    for (int round = 0; round < 4; round++) {
        CUcontext ctx = nullptr;
        snprintf(key, sizeof key, "r%d_ctx_create", round);
        obs(key, cu_name(cuCtxCreate(&ctx, nullptr, 0, dev)));
        snprintf(key, sizeof key, "r%d_failures", round);
        obs_int(key, sixteen_graphs(dev));
        snprintf(key, sizeof key, "r%d_sync", round);
        obs(key, cu_name(cuCtxSynchronize()));
        snprintf(key, sizeof key, "r%d_ctx_destroy", round);
        obs(key, cu_name(cuCtxDestroy(ctx)));
    }
    return 0;
}
