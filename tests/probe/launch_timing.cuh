// What the launch-cost probes (fence_cost.cu, event_node_fence.cu) share: a checked call that
// returns 1 from the enclosing function, a one-warp kernel for graphs to launch, a host clock, and
// the two launch timings (host cost per launch; GPU time per launch when launches outrun it).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        int r_ = (int)(x);                                                                         \
        if (r_) {                                                                                  \
            printf("%s:%d %s -> %d\n", __FILE__, __LINE__, #x, r_);                                \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void touch(int *p) {
    if (p)
        p[threadIdx.x] += 1;
}

static double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Host us per cudaGraphLaunch of e on s, each followed by after(i) (a fence to compare): median of
// 30 batches of 20 after 50 warm-up launches, as bench/gpu_launch.cu measures. -1 on an error.
template <class After> static double launch_us(cudaGraphExec_t e, cudaStream_t s, After after) {
    for (int i = 0; i < 50; i++)
        if (cudaGraphLaunch(e, s) || after(i))
            return -1;
    cudaStreamSynchronize(s);
    std::vector<double> samples;
    for (int rep = 0; rep < 30; rep++) {
        double t0 = now_us();
        for (int i = 0; i < 20; i++)
            if (cudaGraphLaunch(e, s) || after(i))
                return -1;
        samples.push_back((now_us() - t0) / 20);
        cudaStreamSynchronize(s);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

// GPU us per launch where launches outrun the GPU: 2000 launches (each followed by after(i)) and
// one synchronize.
template <class After> static double throughput_us(cudaGraphExec_t e, cudaStream_t s, After after) {
    cudaStreamSynchronize(s);
    double t0 = now_us();
    for (int i = 0; i < 2000; i++)
        if (cudaGraphLaunch(e, s) || after(i))
            return -1;
    cudaStreamSynchronize(s);
    return (now_us() - t0) / 2000;
}
