// Helpers of the driver-API scenarios (contexts made, reset and released by the program): device
// 0 without the runtime, the name of a CUresult and its observation in a numbered round, an
// allocation node's parameters, and sixteen graphs with memory launched on the default stream.
#pragma once

#include "common.cuh"

#include <cuda.h>
#include <cstdio>
#include <cstdlib>

// Device 0 through the driver alone (a runtime call would make the primary context); exit 77
// (CTest's skip code) without one.
static inline CUdevice driver_device(void) {
    int count = 0;
    CUdevice dev = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
        printf("SKIP no CUDA device\n");
        exit(77);
    }
    cuDeviceGet(&dev, 0);
    return dev;
}

static inline const char *cu_name(CUresult r) {
    const char *name = "unknown";
    cuGetErrorName(r, &name);
    return name;
}

// OBS r<round>_<step> <the result's name>.
static inline void obs_round_step(int round, const char *step, CUresult r) {
    char key[96];
    snprintf(key, sizeof key, "r%d_%s", round, step);
    obs(key, cu_name(r));
}

// The parameters of an allocation node of `bytes` on device `dev` (pinned device memory).
static inline CUDA_MEM_ALLOC_NODE_PARAMS device_alloc_params(CUdevice dev, size_t bytes) {
    CUDA_MEM_ALLOC_NODE_PARAMS p = {};
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = dev;
    p.bytesize = bytes;
    return p;
}

// Sixteen graphs (alloc 2 MiB on `dev`, free) made, instantiated and launched on the default
// stream of the current context: the calls that failed. Graphs and execs are left to the context.
static inline int sixteen_graphs(CUdevice dev) {
    int failed = 0;
    for (int i = 0; i < 16; i++) {
        CUgraph g = nullptr;
        CUgraphNode a, f;
        CUDA_MEM_ALLOC_NODE_PARAMS p = device_alloc_params(dev, 2u << 20);
        CUgraphExec e = nullptr;
        failed += cuGraphCreate(&g, 0) != CUDA_SUCCESS;
        failed += cuGraphAddMemAllocNode(&a, g, nullptr, 0, &p) != CUDA_SUCCESS;
        failed += cuGraphAddMemFreeNode(&f, g, &a, 1, p.dptr) != CUDA_SUCCESS;
        failed += cuGraphInstantiate(&e, g, 0) != CUDA_SUCCESS;
        failed += e == nullptr || cuGraphLaunch(e, nullptr) != CUDA_SUCCESS;
    }
    return failed;
}
