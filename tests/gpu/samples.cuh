// Helpers of the scn_sample_*.cu scenarios: re-creations of NVIDIA's cuda-samples that use graph
// memory (graphMemoryNodes, graphMemoryFootprint, graphConditionalNodes, streamOrderedAllocation,
// simpleCudaGraphs, jacobiCudaGraphs), written from what the samples do (API calls, order, flags,
// checks, printouts) by a helper session of the nineteenth session; no copy of the samples'
// repository was at hand, so details may differ from the real ones.
//
// On top of common.cuh's OBS and INFO lines, the samples' own printouts are kept as plain lines
// (the harness compares OBS lines only; some plain lines carry values that differ under graphmem by
// design: footprints, whether two allocations share an address, README "Known limitations").
// Nothing aborts: a failing call is observed and the program goes on. sample_unexpected counts the
// calls a sample wraps in checkCudaErrors that failed and the failed result checks; the final
// verdict and the exit code follow it.
#pragma once

#include "common.cuh"

static int sample_unexpected = 0;

// A formatted key (a ring of buffers, so that several may be alive in one call).
static inline const char *K(const char *fmt, ...) {
    static char ring[32][192];
    static unsigned next = 0;
    char *buf = ring[next++ % 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof ring[0], fmt, ap);
    va_end(ap);
    return buf;
}

// A call the sample checks (checkCudaErrors): its code is observed; a failure is unexpected.
static inline cudaError_t CK(cudaError_t rc, const char *key) {
    obs_rc(key, rc);
    sample_unexpected += rc != cudaSuccess;
    return rc;
}

// A probe: the code is the observation (obs_rc), failures may be what the driver is expected to
// answer; returned, as CK returns it.
static inline cudaError_t PROBE(cudaError_t rc, const char *key) {
    obs_rc(key, rc);
    return rc;
}

// A result check of the sample (or of the scenario): PASSED/FAILED, a failure is unexpected.
static inline bool OBS_PASS(const char *key, bool ok) {
    obs(key, ok ? "PASSED" : "FAILED");
    sample_unexpected += !ok;
    return ok;
}

// FNV-1a over bytes: checksums of deterministic results.
static inline uint64_t sample_fnv(const void *p, size_t n, uint64_t h = 1469598103934665603ull) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static inline void OBS_HASH(const char *key, const void *p, size_t n) {
    char buf[32];
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)sample_fnv(p, n));
    obs(key, buf);
}

// A double printed exactly (hex float): deterministic GPU results compared bit for bit.
static inline void OBS_DOUBLE(const char *key, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%a", v);
    obs(key, buf);
}

// The graph-memory attributes of `device` (each read observed by its code under `tag`).
struct SampleGraphMem {
    unsigned long long used, used_high, reserved, reserved_high;
};

static inline SampleGraphMem sample_graph_mem(int device, const char *tag) {
    SampleGraphMem a = {0, 0, 0, 0};
    CK(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemCurrent, &a.used),
       K("%s_get_used", tag));
    CK(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &a.used_high),
       K("%s_get_used_high", tag));
    CK(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemCurrent, &a.reserved),
       K("%s_get_reserved", tag));
    CK(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &a.reserved_high),
       K("%s_get_reserved_high", tag));
    info(K("%s_graph_mem", tag), "used=%llu used_high=%llu reserved=%llu reserved_high=%llu",
         a.used, a.used_high, a.reserved, a.reserved_high);
    // Relations the driver's definitions demand whatever the allocator's granularity.
    obs_yes(K("%s_highs_ge_currents", tag), a.used_high >= a.used && a.reserved_high >= a.reserved);
    obs_yes(K("%s_reserved_ge_used", tag), a.reserved >= a.used);
    return a;
}

// The final verdict: OBS lines, the sample-style line, and the exit code.
static inline int sample_finish(const char *name) {
    obs_int("unexpected_count", sample_unexpected);
    obs("final_verdict", sample_unexpected ? "FAILED" : "PASSED");
    printf("%s %s\n", name, sample_unexpected ? "FAILED" : "PASSED");
    fflush(stdout);
    return sample_unexpected ? EXIT_FAILURE : EXIT_SUCCESS;
}

// What findCudaDevice prints (helper_cuda.h), and the driver version line of the graph samples.
static inline int sample_find_device(void) {
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0) {
        printf("SKIP no CUDA device: %s\n", rc != cudaSuccess ? cudaGetErrorName(rc) : "count 0");
        exit(77); /* a skip, as every scenario's */
    }
    int dev = 0;
    CK(cudaSetDevice(dev), "setup_set_device");
    cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    cudaGetDeviceProperties(&prop, dev);
    printf("GPU Device %d: \"%s\" with compute capability %d.%d\n\n", dev, prop.name, prop.major,
           prop.minor);
    info("device_name", "%s", prop.name);
    return dev;
}

// The graph samples' own check of the driver and device (their "Waiving execution" lines), a skip
// where it fails.
static inline void sample_require_graph_memory(int device) {
    int driverVersion = 0, deviceSupportsMemoryPools = 0;
    cudaDriverGetVersion(&driverVersion);
    printf("Driver version is: %d.%d\n", driverVersion / 1000, (driverVersion % 100) / 10);
    info("driver_version", "%d", driverVersion);
    if (driverVersion < 11040) {
        printf("Waiving execution as driver does not support Graph Memory Nodes\n");
        exit(77);
    }
    cudaDeviceGetAttribute(&deviceSupportsMemoryPools, cudaDevAttrMemoryPoolsSupported, device);
    if (!deviceSupportsMemoryPools) {
        printf("Waiving execution as device does not support Memory Pools\n");
        exit(77);
    }
}
