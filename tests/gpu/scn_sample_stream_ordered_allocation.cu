// Re-creation of NVIDIA cuda-samples Samples/2_Concepts_and_Techniques/streamOrderedAllocation
// (basicStreamOrderedAllocation, streamOrderedAllocationPostSync: cudaMallocAsync/cudaFreeAsync on
// the default pool, then MAX_ITER iterations with the default pool's release threshold raised to
// ULONG_MAX), every CUDA return code observed. Outside graphs graphmem passes all of it to the
// driver: every OBS must match. Then extensions:
//   X1 a created pool (cudaMemPoolCreate, release threshold) with cudaMallocFromPoolAsync;
//   X2 one iteration of the PostSync loop captured into a graph (default pool: the captured
//      cudaMallocAsync/cudaFreeAsync become graph memory), launched MAX_ITER times;
//   X3 the same captured from the created pool (cudaMallocFromPoolAsync during capture);
//   X4 the whole MAX_ITER loop (without its synchronizations) captured as one graph, launched 3x;
//   pool attributes around the graphs: graph memory is not the pools' (SEMANTICS.md §A13.5).
#include "samples.cuh"

#include <climits>
#include <cmath>

#define MAX_ITER 20

/* Add two vectors on the GPU */
__global__ void vectorAddGPU(const float *a, const float *b, float *c, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;

    if (idx < N) {
        c[idx] = a[idx] + b[idx];
    }
}

// The sample's result check, plus an exact one (c = a + b is one IEEE addition, bit-exact).
static int checkResults(const char *tag, const char *name, int nelem, const float *a,
                        const float *b, const float *c) {
    float errorNorm, refNorm, ref, diff;
    printf("> Checking the results from vectorAddGPU() ...\n");
    errorNorm = 0.f;
    refNorm = 0.f;

    long long wrong = 0;
    for (int n = 0; n < nelem; n++) {
        ref = a[n] + b[n];
        diff = c[n] - ref;
        errorNorm += diff * diff;
        refNorm += ref * ref;
        wrong += memcmp(&ref, &c[n], sizeof(float)) != 0;
    }

    errorNorm = (float)sqrt((double)errorNorm);
    refNorm = (float)sqrt((double)refNorm);
    bool ok = errorNorm / refNorm < 1.e-6f;
    if (ok)
        printf("%s PASSED\n", name);
    OBS_PASS(K("%s_verdict", tag), ok);
    obs_int(K("%s_wrong_words", tag), wrong);
    OBS_HASH(K("%s_c_hash", tag), c, (size_t)nelem * sizeof(float));
    if (wrong)
        sample_unexpected++;
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

int basicStreamOrderedAllocation(const int dev, const int nelem, const float *a, const float *b,
                                 float *c) {
    float *d_a, *d_b, *d_c; // Device buffers
    size_t bytes = nelem * sizeof(float);

    cudaStream_t stream = nullptr;
    printf("Starting basicStreamOrderedAllocation()\n");
    CK(cudaSetDevice(dev), "basic_set_device");
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "basic_stream_create");

    CK(cudaMallocAsync(&d_a, bytes, stream), "basic_malloc_a");
    CK(cudaMallocAsync(&d_b, bytes, stream), "basic_malloc_b");
    CK(cudaMallocAsync(&d_c, bytes, stream), "basic_malloc_c");
    CK(cudaMemcpyAsync(d_a, a, bytes, cudaMemcpyHostToDevice, stream), "basic_memcpy_a");
    CK(cudaMemcpyAsync(d_b, b, bytes, cudaMemcpyHostToDevice, stream), "basic_memcpy_b");

    dim3 block(256);
    dim3 grid((unsigned int)ceil(nelem / (float)block.x));
    vectorAddGPU<<<grid, block, 0, stream>>>(d_a, d_b, d_c, nelem);
    CK(cudaGetLastError(), "basic_kernel");

    CK(cudaFreeAsync(d_a, stream), "basic_free_a");
    CK(cudaFreeAsync(d_b, stream), "basic_free_b");
    CK(cudaMemcpyAsync(c, d_c, bytes, cudaMemcpyDeviceToHost, stream), "basic_memcpy_c");
    CK(cudaFreeAsync(d_c, stream), "basic_free_c");
    CK(cudaStreamSynchronize(stream), "basic_sync");

    /* Compare the results */
    int ret = checkResults("basic", "basicStreamOrderedAllocation", nelem, a, b, c);

    CK(cudaStreamDestroy(stream), "basic_stream_destroy");

    return ret;
}

// streamOrderedAllocationPostSync(): the release threshold keeps the pool's memory across the
// synchronizations.
int streamOrderedAllocationPostSync(const int dev, const int nelem, const float *a, const float *b,
                                    float *c) {
    float *d_a, *d_b, *d_c; // Device buffers
    size_t bytes = nelem * sizeof(float);

    cudaStream_t stream = nullptr;
    cudaMemPool_t memPool;
    cudaEvent_t start, end;
    printf("Starting streamOrderedAllocationPostSync()\n");
    CK(cudaSetDevice(dev), "postsync_set_device");
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "postsync_stream_create");
    CK(cudaEventCreate(&start), "postsync_event_start_create");
    CK(cudaEventCreate(&end), "postsync_event_end_create");

    CK(cudaDeviceGetDefaultMemPool(&memPool, dev), "postsync_get_default_pool");
    uint64_t thresholdVal = ULONG_MAX;
    // set high release threshold on the default pool so that cudaFreeAsync will not actually
    // release memory to the system. By default, the release threshold for a memory pool is set to
    // zero. This implies that the CUDA driver is allowed to release a memory chunk back to the
    // system as long as it does not contain any active suballocations.
    CK(cudaMemPoolSetAttribute(memPool, cudaMemPoolAttrReleaseThreshold, (void *)&thresholdVal),
       "postsync_set_threshold");

    // Record teh start event
    CK(cudaEventRecord(start, stream), "postsync_record_start");
    int failures = 0;
    for (int i = 0; i < MAX_ITER; i++) {
        failures += cudaMallocAsync(&d_a, bytes, stream) != cudaSuccess;
        failures += cudaMallocAsync(&d_b, bytes, stream) != cudaSuccess;
        failures += cudaMallocAsync(&d_c, bytes, stream) != cudaSuccess;
        failures += cudaMemcpyAsync(d_a, a, bytes, cudaMemcpyHostToDevice, stream) != cudaSuccess;
        failures += cudaMemcpyAsync(d_b, b, bytes, cudaMemcpyHostToDevice, stream) != cudaSuccess;

        dim3 block(256);
        dim3 grid((unsigned int)ceil(nelem / (float)block.x));
        vectorAddGPU<<<grid, block, 0, stream>>>(d_a, d_b, d_c, nelem);
        failures += cudaGetLastError() != cudaSuccess;

        failures += cudaFreeAsync(d_a, stream) != cudaSuccess;
        failures += cudaFreeAsync(d_b, stream) != cudaSuccess;
        failures += cudaMemcpyAsync(c, d_c, bytes, cudaMemcpyDeviceToHost, stream) != cudaSuccess;
        failures += cudaFreeAsync(d_c, stream) != cudaSuccess;
        failures += cudaStreamSynchronize(stream) != cudaSuccess;
    }
    // The loop's 220 calls, each checked by the sample: one observation.
    obs_int("postsync_loop_failed_calls", failures);
    sample_unexpected += failures;
    CK(cudaEventRecord(end, stream), "postsync_record_end");
    // Wait for the end event to complete
    CK(cudaEventSynchronize(end), "postsync_event_sync");

    float msecTotal = 0.0f;
    CK(cudaEventElapsedTime(&msecTotal, start, end), "postsync_elapsed");
    printf("Total elapsed time = %f ms over %d iterations\n", msecTotal, MAX_ITER);
    info("postsync_elapsed_ms", "%f", msecTotal);

    /* Compare the results */
    int ret = checkResults("postsync", "streamOrderedAllocationPostSync", nelem, a, b, c);

    CK(cudaStreamDestroy(stream), "postsync_stream_destroy");

    return ret;
}

// ---------------------------------------------------------------- extensions (not in the sample)

struct PoolAttrs {
    unsigned long long reservedCurrent, reservedHigh, usedCurrent, usedHigh;
};

static PoolAttrs poolAttrs(cudaMemPool_t pool, const char *tag) {
    PoolAttrs p = {0, 0, 0, 0};
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &p.reservedCurrent),
       K("%s_pool_reserved", tag));
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &p.reservedHigh),
       K("%s_pool_reserved_high", tag));
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &p.usedCurrent),
       K("%s_pool_used", tag));
    CK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &p.usedHigh),
       K("%s_pool_used_high", tag));
    info(K("%s_pool_attrs", tag), "reserved=%llu reserved_high=%llu used=%llu used_high=%llu",
         p.reservedCurrent, p.reservedHigh, p.usedCurrent, p.usedHigh);
    return p;
}

// One iteration of the PostSync loop without its synchronization, on `stream`, allocating from
// `pool` (NULL: cudaMallocAsync, the device's current pool). Returns the number of failed calls;
// the first failure's code goes to *first.
static int enqueueIteration(cudaStream_t stream, cudaMemPool_t pool, int nelem, const float *a,
                            const float *b, float *c, cudaError_t *first) {
    size_t bytes = nelem * sizeof(float);
    float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
    cudaError_t rc[11];
    int k = 0;
    if (pool) {
        rc[k++] = cudaMallocFromPoolAsync(&d_a, bytes, pool, stream);
        rc[k++] = cudaMallocFromPoolAsync(&d_b, bytes, pool, stream);
        rc[k++] = cudaMallocFromPoolAsync(&d_c, bytes, pool, stream);
    } else {
        rc[k++] = cudaMallocAsync(&d_a, bytes, stream);
        rc[k++] = cudaMallocAsync(&d_b, bytes, stream);
        rc[k++] = cudaMallocAsync(&d_c, bytes, stream);
    }
    rc[k++] = cudaMemcpyAsync(d_a, a, bytes, cudaMemcpyHostToDevice, stream);
    rc[k++] = cudaMemcpyAsync(d_b, b, bytes, cudaMemcpyHostToDevice, stream);
    dim3 block(256);
    dim3 grid((unsigned int)ceil(nelem / (float)block.x));
    vectorAddGPU<<<grid, block, 0, stream>>>(d_a, d_b, d_c, nelem);
    rc[k++] = cudaGetLastError();
    rc[k++] = cudaFreeAsync(d_a, stream);
    rc[k++] = cudaFreeAsync(d_b, stream);
    rc[k++] = cudaMemcpyAsync(c, d_c, bytes, cudaMemcpyDeviceToHost, stream);
    rc[k++] = cudaFreeAsync(d_c, stream);
    int failures = 0;
    for (int i = 0; i < k; i++)
        if (rc[i] != cudaSuccess) {
            if (!failures && first)
                *first = rc[i];
            failures++;
        }
    return failures;
}

// Captures `iterations` iterations on `stream` into a graph; observed under `tag`.
static cudaGraph_t captureIterations(const char *tag, cudaStream_t stream, cudaMemPool_t pool,
                                     int iterations, int nelem, const float *a, const float *b,
                                     float *c) {
    cudaGraph_t graph = nullptr;
    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), K("%s_begin", tag));
    int failures = 0;
    cudaError_t first = cudaSuccess;
    for (int i = 0; i < iterations; i++)
        failures += enqueueIteration(stream, pool, nelem, a, b, c, &first);
    obs_int(K("%s_captured_failed_calls", tag), failures);
    obs(K("%s_captured_first_error", tag), cudaGetErrorName(first));
    sample_unexpected += failures;
    CK(cudaStreamEndCapture(stream, &graph), K("%s_end", tag));
    size_t numNodes = 0;
    CK(cudaGraphGetNodes(graph, NULL, &numNodes), K("%s_get_nodes", tag));
    obs_int(K("%s_num_nodes", tag), (long long)numNodes);
    return graph;
}

static void extensions(int dev, int nelem, const float *a, const float *b, float *c) {
    printf("\n==== Extensions (not in the sample)\n");
    size_t bytes = nelem * sizeof(float);
    cudaStream_t stream = nullptr;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "x_stream_create");
    cudaMemPool_t defaultPool = nullptr;
    CK(cudaDeviceGetDefaultMemPool(&defaultPool, dev), "x_get_default_pool");
    cudaMemPool_t current = nullptr;
    CK(cudaDeviceGetMemPool(&current, dev), "x_get_current_pool");
    obs_yes("x_current_pool_is_default", current == defaultPool);

    // The default pool after the sample: nothing used; its memory kept by the threshold.
    PoolAttrs d0 = poolAttrs(defaultPool, "x_default_after_sample");
    obs_yes("x_default_after_sample_used_zero", d0.usedCurrent == 0);
    obs_yes("x_default_after_sample_reserved_ge_3_buffers", d0.reservedCurrent >= 3 * bytes);
    uint64_t threshold = 0;
    CK(cudaMemPoolGetAttribute(defaultPool, cudaMemPoolAttrReleaseThreshold, &threshold),
       "x_default_get_threshold");
    obs_yes("x_default_threshold_max", threshold == (uint64_t)ULONG_MAX);

    // X1: a created pool with a release threshold; the PostSync loop from it.
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t pool = nullptr;
    CK(cudaMemPoolCreate(&pool, &props), "x1_pool_create");
    uint64_t poolThreshold = 64ull << 20;
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &poolThreshold),
       "x1_pool_set_threshold");
    int failures = 0;
    for (int i = 0; i < MAX_ITER; i++) {
        memset(c, 0, bytes);
        failures += enqueueIteration(stream, pool, nelem, a, b, c, nullptr);
        failures += cudaStreamSynchronize(stream) != cudaSuccess;
    }
    obs_int("x1_loop_failed_calls", failures);
    sample_unexpected += failures;
    checkResults("x1", "createdPoolPostSync", nelem, a, b, c);
    PoolAttrs p1 = poolAttrs(pool, "x1_after_loop");
    obs_yes("x1_after_loop_used_zero", p1.usedCurrent == 0);
    obs_yes("x1_after_loop_reserved_ge_3_buffers", p1.reservedCurrent >= 3 * bytes);
    obs_yes("x1_after_loop_used_high_ge_3_buffers", p1.usedHigh >= 3 * bytes);

    // X2: one iteration captured (default pool), launched MAX_ITER times with a sync each.
    memset(c, 0, bytes);
    cudaGraph_t g2 = captureIterations("x2", stream, nullptr, 1, nelem, a, b, c);
    cudaGraphExec_t e2 = nullptr;
    CK(cudaGraphInstantiate(&e2, g2, 0), "x2_instantiate");
    PoolAttrs before = poolAttrs(defaultPool, "x2_default_before_launch");
    int launchFailures = 0;
    for (int i = 0; i < MAX_ITER; i++) {
        launchFailures += cudaGraphLaunch(e2, stream) != cudaSuccess;
        launchFailures += cudaStreamSynchronize(stream) != cudaSuccess;
    }
    obs_int("x2_launch_failed_calls", launchFailures);
    sample_unexpected += launchFailures;
    checkResults("x2", "capturedIterationDefaultPool", nelem, a, b, c);
    // Graph memory is not taken from the pool (§A13.5): the default pool did not move.
    PoolAttrs after = poolAttrs(defaultPool, "x2_default_after_launch");
    obs_yes("x2_default_pool_used_zero", after.usedCurrent == 0);
    obs_yes("x2_default_pool_reserved_unchanged", after.reservedCurrent == before.reservedCurrent);
    SampleGraphMem gm = sample_graph_mem(dev, "x2_after_launches");
    obs_yes("x2_graph_used_ge_3_buffers", gm.used >= 3 * bytes);

    // X3: the same captured from the created pool (cudaMallocFromPoolAsync during capture).
    memset(c, 0, bytes);
    cudaGraph_t g3 = captureIterations("x3", stream, pool, 1, nelem, a, b, c);
    cudaGraphExec_t e3 = nullptr;
    CK(cudaGraphInstantiate(&e3, g3, 0), "x3_instantiate");
    PoolAttrs p3before = poolAttrs(pool, "x3_pool_before_launch");
    launchFailures = 0;
    for (int i = 0; i < MAX_ITER; i++) {
        launchFailures += cudaGraphLaunch(e3, stream) != cudaSuccess;
        launchFailures += cudaStreamSynchronize(stream) != cudaSuccess;
    }
    obs_int("x3_launch_failed_calls", launchFailures);
    sample_unexpected += launchFailures;
    checkResults("x3", "capturedIterationCreatedPool", nelem, a, b, c);
    PoolAttrs p3after = poolAttrs(pool, "x3_pool_after_launch");
    obs_yes("x3_pool_used_zero", p3after.usedCurrent == 0);
    obs_yes("x3_pool_reserved_unchanged", p3after.reservedCurrent == p3before.reservedCurrent);

    // X4: the whole loop (MAX_ITER iterations, 60 allocations) captured as one graph; the two
    // graphs above alternate with it on the same stream, without synchronizing in between.
    memset(c, 0, bytes);
    cudaGraph_t g4 = captureIterations("x4", stream, nullptr, MAX_ITER, nelem, a, b, c);
    cudaGraphExec_t e4 = nullptr;
    CK(cudaGraphInstantiate(&e4, g4, 0), "x4_instantiate");
    launchFailures = 0;
    for (int i = 0; i < 3; i++) {
        launchFailures += cudaGraphLaunch(e4, stream) != cudaSuccess;
        launchFailures += cudaGraphLaunch(e2, stream) != cudaSuccess;
        launchFailures += cudaGraphLaunch(e3, stream) != cudaSuccess;
    }
    launchFailures += cudaStreamSynchronize(stream) != cudaSuccess;
    obs_int("x4_launch_failed_calls", launchFailures);
    sample_unexpected += launchFailures;
    checkResults("x4", "capturedLoopInterleaved", nelem, a, b, c);

    // Plain stream-ordered allocations again after the graphs: still the driver's pool.
    memset(c, 0, bytes);
    failures = enqueueIteration(stream, nullptr, nelem, a, b, c, nullptr);
    failures += cudaStreamSynchronize(stream) != cudaSuccess;
    obs_int("x5_plain_after_graphs_failed_calls", failures);
    sample_unexpected += failures;
    checkResults("x5", "plainAfterGraphs", nelem, a, b, c);

    CK(cudaGraphExecDestroy(e2), "x2_exec_destroy");
    CK(cudaGraphExecDestroy(e3), "x3_exec_destroy");
    CK(cudaGraphExecDestroy(e4), "x4_exec_destroy");
    CK(cudaGraphDestroy(g2), "x2_graph_destroy");
    CK(cudaGraphDestroy(g3), "x3_graph_destroy");
    CK(cudaGraphDestroy(g4), "x4_graph_destroy");
    CK(cudaDeviceGraphMemTrim(dev), "x_graph_trim");
    gm = sample_graph_mem(dev, "x_trimmed");
    obs_yes("x_trimmed_graph_used_zero", gm.used == 0);
    obs_yes("x_trimmed_graph_reserved_zero", gm.reserved == 0);
    // A graph trim does not touch the pools (§A11.5).
    PoolAttrs p5 = poolAttrs(pool, "x_after_graph_trim");
    obs_yes("x_graph_trim_pool_reserved_unchanged", p5.reservedCurrent == p3after.reservedCurrent);
    CK(cudaMemPoolTrimTo(pool, 0), "x_pool_trim");
    PoolAttrs p6 = poolAttrs(pool, "x_pool_trimmed");
    obs_yes("x_pool_trimmed_reserved_zero", p6.reservedCurrent == 0);
    CK(cudaMemPoolDestroy(pool), "x_pool_destroy");
    CK(cudaStreamDestroy(stream), "x_stream_destroy");
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    int nelem;
    int dev = 0; // use default device 0
    size_t bytes;
    float *a, *b, *c; // Host

    dev = sample_find_device();

    int isMemPoolSupported = 0;
    CK(cudaDeviceGetAttribute(&isMemPoolSupported, cudaDevAttrMemoryPoolsSupported, dev),
       "setup_pools_attribute");
    if (!isMemPoolSupported) {
        printf("Waiving execution as device does not support Memory Pools\n");
        exit(77);
    }

    // Allocate CPU memory.
    nelem = 1048576;
    bytes = nelem * sizeof(float);

    a = (float *)malloc(bytes);
    b = (float *)malloc(bytes);
    c = (float *)malloc(bytes);
    /* Initialize the vectors. */
    for (int n = 0; n < nelem; n++) {
        a[n] = rand() / (float)RAND_MAX;
        b[n] = rand() / (float)RAND_MAX;
    }

    int ret1 = basicStreamOrderedAllocation(dev, nelem, a, b, c);
    int ret2 = streamOrderedAllocationPostSync(dev, nelem, a, b, c);
    obs("sample_exit_code",
        (ret1 == EXIT_SUCCESS && ret2 == EXIT_SUCCESS) ? "EXIT_SUCCESS" : "EXIT_FAILURE");

    extensions(dev, nelem, a, b, c);

    /* Memory clean up */
    free(a);
    free(b);
    free(c);

    return sample_finish("streamOrderedAllocation");
}
