// Re-creation of NVIDIA cuda-samples Samples/3_CUDA_Features/graphMemoryFootprint, with every
// CUDA return code observed, then extensions: the four graph-memory attributes, resetting the
// high watermarks with cudaDeviceSetGraphMemAttribute, and
// cudaGraphInstantiateFlagAutoFreeOnLaunch.
//
// The sample prints UsedMemCurrent ("FOOTPRINT") after each step. graphmem is meant to use less
// memory than the driver, so byte counts are INFO (and in the sample's own FOOTPRINT lines); OBS
// only what the driver's semantics demand (tests/SEMANTICS.md §A5.2, §A6.5, §A6.6, §A6.9, §A9.3,
// §A10.4-§A10.9, §A11.1): zero before any launch and after a trim with nothing live, at least the
// live bytes while allocations are live, unchanged by frees and by a trim while allocations are
// unfreed, highs >= currents.
#include "samples.cuh"

#include <vector>

#define NUM_GRAPHS 8
#define THREADS_PER_BLOCK 512

static const size_t kBytes = 64 * 1024 * 1024;

// Blocks the device for clock_count cycles (the samples' clockBlock).
__global__ void clockBlock(clock_t clock_count) {
    unsigned int start_clock = (unsigned int)clock();

    clock_t clock_offset = 0;

    while (clock_offset < clock_count) {
        unsigned int end_clock = (unsigned int)clock();

        // The code below should work like
        // this (thanks to modular arithmetics):
        //
        // clock_offset = (clock_t) (end_clock > start_clock ?
        //                           end_clock - start_clock :
        //                           end_clock + (0xffffffffu - start_clock));
        //
        // Indeed, let m = 2^32 then
        // end - start = end + m - start (mod m).

        clock_offset = (clock_t)(end_clock - start_clock);
    }
}

// Extension: writes the allocation, so that the unfreed allocations hold checkable data.
__global__ void fillFloats(float *p, size_t n, float v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v + (float)(i & 1023);
}

__global__ void countWrong(const float *p, size_t n, float v, unsigned *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != v + (float)(i & 1023))
            atomicAdd(bad, 1u);
}

// The last UsedMemCurrent read, for the OBS relations between steps.
static unsigned long long g_lastFootprint = 0;

// The sample's printMemoryFootprint: attribute 0 (UsedMemCurrent) read into a size_t.
void printMemoryFootprint(int device, const char *tag) {
    size_t footprint = 0;
    CK(cudaDeviceGetGraphMemAttribute(device, (cudaGraphMemAttributeType)0, &footprint),
       K("%s_get_footprint", tag));
    printf("    FOOTPRINT: %lu bytes\n", (unsigned long)footprint);
    info(K("%s_footprint", tag), "%zu", footprint);
    g_lastFootprint = footprint;
}

void prepareAllocParams(cudaMemAllocNodeParams *allocParams, size_t bytes, int device) {
    memset(allocParams, 0, sizeof(*allocParams));

    allocParams->bytesize = bytes;
    allocParams->poolProps.allocType = cudaMemAllocationTypePinned;
    allocParams->poolProps.location.id = device;
    allocParams->poolProps.location.type = cudaMemLocationTypeDevice;
}

void createVirtAddrReuseGraph(cudaGraphExec_t *graphExec, size_t bytes, int device) {
    cudaGraph_t graph = nullptr;
    cudaGraphNode_t allocNodeA, allocNodeB, freeNodeA, freeNodeB;
    cudaMemAllocNodeParams allocParams;
    float *d_a, *d_b;

    CK(cudaGraphCreate(&graph, 0), "va_graph_create");
    prepareAllocParams(&allocParams, bytes, device);

    CK(cudaGraphAddMemAllocNode(&allocNodeA, graph, NULL, 0, &allocParams), "va_alloc_a");
    d_a = (float *)allocParams.dptr;
    CK(cudaGraphAddMemFreeNode(&freeNodeA, graph, &allocNodeA, 1, (void *)d_a), "va_free_a");

    // The dependency between the allocation of d_b and the free of d_a allows d_b to reuse the
    // same VA.
    CK(cudaGraphAddMemAllocNode(&allocNodeB, graph, &freeNodeA, 1, &allocParams), "va_alloc_b");
    d_b = (float *)allocParams.dptr;

    // graphmem gives allocations of 2 MiB and more address ranges of their own (SEMANTICS.md
    // §A1.11): the sample's line differs; INFO only.
    if (d_a == d_b) {
        printf("Check confirms that d_a and d_b share a virtual address.\n");
    } else {
        printf("Check shows that d_a and d_b DO NOT share a virtual address.\n");
    }
    info("va_shared", "%s", d_a == d_b ? "yes" : "no");

    CK(cudaGraphAddMemFreeNode(&freeNodeB, graph, &allocNodeB, 1, (void *)d_b), "va_free_b");

    CK(cudaGraphInstantiate(graphExec, graph, 0), "va_instantiate");
    CK(cudaGraphDestroy(graph), "va_graph_destroy");
}

// alloc -> clockBlock kernel -> free (the kernel keeps the graph running for a while).
void createSimpleAllocFreeGraph(const char *tag, cudaGraphExec_t *graphExec, float **dPtr,
                                size_t bytes, int device) {
    cudaGraph_t graph = nullptr;
    cudaGraphNode_t allocNodeA, freeNodeA, blockDeviceNode;
    cudaMemAllocNodeParams allocParams;

    CK(cudaGraphCreate(&graph, 0), K("%s_graph_create", tag));
    prepareAllocParams(&allocParams, bytes, device);

    CK(cudaGraphAddMemAllocNode(&allocNodeA, graph, NULL, 0, &allocParams), K("%s_alloc", tag));
    (*dPtr) = (float *)allocParams.dptr;

    cudaKernelNodeParams blockDeviceNodeParams = {};
    int clockRate = 0; // kHz
    CK(cudaDeviceGetAttribute(&clockRate, cudaDevAttrClockRate, device), K("%s_clock_rate", tag));
    clock_t time_clocks = (clock_t)clockRate * 20; // about 20 ms
    void *blockDeviceArgs[1] = {(void *)&time_clocks};
    blockDeviceNodeParams.gridDim = dim3(1, 1, 1);
    blockDeviceNodeParams.blockDim = dim3(1, 1, 1);
    blockDeviceNodeParams.sharedMemBytes = 0;
    blockDeviceNodeParams.extra = NULL;
    blockDeviceNodeParams.func = (void *)clockBlock;
    blockDeviceNodeParams.kernelParams = (void **)blockDeviceArgs;
    CK(cudaGraphAddKernelNode(&blockDeviceNode, graph, &allocNodeA, 1, &blockDeviceNodeParams),
       K("%s_block_kernel_node", tag));

    CK(cudaGraphAddMemFreeNode(&freeNodeA, graph, &blockDeviceNode, 1, (void *)*dPtr),
       K("%s_free", tag));

    CK(cudaGraphInstantiate(graphExec, graph, 0), K("%s_instantiate", tag));
    CK(cudaGraphDestroy(graph), K("%s_graph_destroy", tag));
}

// alloc only (the allocation outlives the graph). `fill` (extension) adds a kernel writing it;
// `flags` (extension) are the instantiation flags.
void createSimpleAllocNoFreeGraph(const char *tag, cudaGraphExec_t *graphExec, float **dPtr,
                                  size_t bytes, int device, bool fill = false,
                                  unsigned long long flags = 0, float value = 0) {
    cudaGraph_t graph = nullptr;
    cudaGraphNode_t allocNodeA;
    cudaMemAllocNodeParams allocParams;

    CK(cudaGraphCreate(&graph, 0), K("%s_graph_create", tag));
    prepareAllocParams(&allocParams, bytes, device);

    CK(cudaGraphAddMemAllocNode(&allocNodeA, graph, NULL, 0, &allocParams), K("%s_alloc", tag));
    (*dPtr) = (float *)allocParams.dptr;

    if (fill) {
        cudaGraphNode_t fillNode;
        float *p = *dPtr;
        size_t n = bytes / sizeof(float);
        void *args[3] = {(void *)&p, (void *)&n, (void *)&value};
        cudaKernelNodeParams k = {};
        k.func = (void *)fillFloats;
        k.gridDim = dim3(264, 1, 1);
        k.blockDim = dim3(THREADS_PER_BLOCK, 1, 1);
        k.kernelParams = args;
        CK(cudaGraphAddKernelNode(&fillNode, graph, &allocNodeA, 1, &k), K("%s_fill_node", tag));
    }

    CK(cudaGraphInstantiate(graphExec, graph, flags), K("%s_instantiate", tag));
    CK(cudaGraphDestroy(graph), K("%s_graph_destroy", tag));
}

void cleanupGraphs(const char *tag, cudaGraphExec_t *graphs, int numGraphs) {
    for (int i = 0; i < numGraphs; i++) {
        CK(cudaGraphExecDestroy(graphs[i]), K("%s_exec_destroy%d", tag, i));
    }
}

void virtualAddressReuseSingleGraph(size_t bytes, int device) {
    cudaStream_t stream = nullptr;
    cudaGraphExec_t graphExec = nullptr;

    printf("================================\n");
    printf("Running virtual address reuse example.\n");
    printf("Sequential allocations & frees within a single graph enable CUDA to reuse virtual "
           "addresses.\n\n");

    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "va_stream_create");
    createVirtAddrReuseGraph(&graphExec, bytes, device);
    CK(cudaGraphLaunch(graphExec, stream), "va_launch");
    CK(cudaStreamSynchronize(stream), "va_sync");
    printMemoryFootprint(device, "va_after_launch");
    // The exec keeps its memory after the launch (§A10.6).
    obs_yes("va_after_launch_footprint_ge_bytes", g_lastFootprint >= bytes);

    CK(cudaGraphExecDestroy(graphExec), "va_exec_destroy");
    CK(cudaStreamDestroy(stream), "va_stream_destroy");
}

// Physical memory is reused by graphs launched into one stream.
void physicalMemoryReuseSingleStream(size_t bytes, int device) {
    cudaStream_t stream = nullptr;
    cudaGraphExec_t graphs[NUM_GRAPHS];
    float *dPtrs[NUM_GRAPHS];

    printf("================================\n");
    printf("Running physical memory reuse example.\n");
    printf("CUDA reuses the same physical memory for allocations from separate graphs when the "
           "allocation lifetimes don't overlap.\n\n");

    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "single_stream_create");

    for (int i = 0; i < NUM_GRAPHS; i++) {
        createSimpleAllocFreeGraph(K("single_graph%d", i), &graphs[i], &dPtrs[i], bytes, device);
    }

    printf("Creating the graph execs does not reserve any physical memory.\n");
    printMemoryFootprint(device, "single_instantiated");
    obs_yes("single_instantiated_footprint_zero", g_lastFootprint == 0);

    CK(cudaGraphLaunch(graphs[0], stream), "single_launch0");
    printf("\nThe first graph launched reserves the memory it needs.\n");
    printMemoryFootprint(device, "single_first_launch");
    // Mapped by the time the launch returns (§A6.5).
    obs_yes("single_first_launch_footprint_ge_bytes", g_lastFootprint >= bytes);
    unsigned long long first = g_lastFootprint;

    CK(cudaGraphLaunch(graphs[0], stream), "single_relaunch0");
    printf("A subsequent launch of the same graph in the same stream reuses the same physical "
           "memory. ");
    printf("Thus the memory footprint does not grow here.\n");
    printMemoryFootprint(device, "single_relaunch");
    obs_yes("single_relaunch_no_growth", g_lastFootprint == first);

    printf("\nSubsequent launches of other graphs in the same stream also reuse the physical "
           "memory. ");
    printf("Thus the memory footprint does not grow here.\n");
    bool grew = false;
    for (int i = 1; i < NUM_GRAPHS; i++) {
        CK(cudaGraphLaunch(graphs[i], stream), K("single_launch%d", i));
        printf("%02d: ", i);
        printMemoryFootprint(device, K("single_launch%d", i));
        grew |= g_lastFootprint != first;
    }
    // Graphs of one stream never overlap and share memory (§A6.6).
    obs_yes("single_other_graphs_no_growth", !grew);

    CK(cudaStreamSynchronize(stream), "single_sync");

    cleanupGraphs("single", graphs, NUM_GRAPHS);
    CK(cudaStreamDestroy(stream), "single_stream_destroy");
}

// Graphs that may run at once need physical memory of their own (the driver's footprint grows;
// graphmem serializes such launches by default and may not grow: growth is INFO, §A6.8).
void simultaneousStreams(size_t bytes, int device) {
    cudaStream_t streams[NUM_GRAPHS];
    cudaGraphExec_t graphs[NUM_GRAPHS];
    float *dPtrs[NUM_GRAPHS];

    printf("================================\n");
    printf("Running simultaneous streams example.\n");
    printf("Graphs that can run concurrently need separate physical memory. ");
    printf("In this example, each graph launched in a separate stream increases the total memory "
           "footprint.\n\n");

    printf(
        "When launching a new graph, CUDA may reuse physical memory from a graph whose execution "
        "has already ");
    printf("finished -- even if the new graph is being launched in a different stream from the "
           "completed graph. ");
    printf("Therefore, a kernel node is added to the graphs to increase runtime.\n\n");

    for (int i = 0; i < NUM_GRAPHS; i++) {
        createSimpleAllocFreeGraph(K("multi_graph%d", i), &graphs[i], &dPtrs[i], bytes, device);
        CK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking),
           K("multi_stream_create%d", i));
    }

    printf("Initial footprint:\n");
    printMemoryFootprint(device, "multi_initial");
    obs_yes("multi_initial_footprint_zero", g_lastFootprint == 0);

    printf("\nEach graph launch in a seperate stream grows the memory footprint:\n");
    bool enough = true;
    unsigned long long previous = 0;
    bool monotonic = true;
    for (int i = 0; i < NUM_GRAPHS; i++) {
        CK(cudaGraphLaunch(graphs[i], streams[i]), K("multi_launch%d", i));
        printf("%02d: ", i);
        printMemoryFootprint(device, K("multi_launch%d", i));
        enough &= g_lastFootprint >= bytes;
        monotonic &= g_lastFootprint >= previous;
        previous = g_lastFootprint;
    }
    obs_yes("multi_footprint_ge_bytes", enough);
    obs_yes("multi_footprint_monotonic", monotonic);
    info("multi_grew_past_one_graph", "%s", previous > bytes ? "yes" : "no");

    for (int i = 0; i < NUM_GRAPHS; i++) {
        CK(cudaStreamSynchronize(streams[i]), K("multi_sync%d", i));
        CK(cudaGraphExecDestroy(graphs[i]), K("multi_exec_destroy%d", i));
        CK(cudaStreamDestroy(streams[i]), K("multi_stream_destroy%d", i));
    }
}

// Unfreed allocations keep their physical memory; trimming gives back only freed memory.
void unfreedAllocations(size_t bytes, int device) {
    cudaStream_t stream = nullptr;
    cudaGraphExec_t graphs[NUM_GRAPHS];
    float *dPtrs[NUM_GRAPHS];

    printf("================================\n");
    printf("Running unfreed streams example.\n");
    printf("CUDA cannot reuse phyiscal memory from graphs which do not free their "
           "allocations.\n\n");

    for (int i = 0; i < NUM_GRAPHS; i++) {
        createSimpleAllocNoFreeGraph(K("unfreed_graph%d", i), &graphs[i], &dPtrs[i], bytes, device);
    }
    bool distinct = true;
    for (int i = 0; i < NUM_GRAPHS; i++)
        for (int j = 0; j < i; j++)
            distinct &= dPtrs[i] != dPtrs[j];
    // Live allocations of different graphs never share an address (§A1.10).
    obs_yes("unfreed_distinct_addresses", distinct);

    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "unfreed_stream_create");

    printf("Despite being launched in the same stream, each graph launch grows the memory "
           "footprint. ");
    printf("Since the allocation is not freed, CUDA keeps the memory valid for use.\n");
    bool enough = true;
    for (int i = 0; i < NUM_GRAPHS; i++) {
        CK(cudaGraphLaunch(graphs[i], stream), K("unfreed_launch%d", i));
        printf("%02d: ", i);
        printMemoryFootprint(device, K("unfreed_launch%d", i));
        enough &= g_lastFootprint >= (unsigned long long)(i + 1) * bytes;
    }
    // Memory holding an unfreed allocation is not reused (§A6.9).
    obs_yes("unfreed_footprint_ge_live_bytes", enough);

    CK(cudaStreamSynchronize(stream), "unfreed_sync");
    unsigned long long beforeTrim = g_lastFootprint;

    CK(cudaDeviceGraphMemTrim(device), "unfreed_trim");
    printf("\nTrimming does not impact the memory footprint since the un-freed allocations are "
           "still holding onto the memory.\n");
    printMemoryFootprint(device, "unfreed_trimmed");
    obs_yes("unfreed_trim_footprint_unchanged", g_lastFootprint == beforeTrim);
    obs_yes("unfreed_trim_footprint_ge_live_bytes", g_lastFootprint >= NUM_GRAPHS * bytes);

    for (int i = 0; i < NUM_GRAPHS; i++) {
        CK(cudaFree(dPtrs[i]), K("unfreed_cuda_free%d", i));
    }
    printf("\nFreeing the allocations does not shrink the footprint.\n");
    printMemoryFootprint(device, "unfreed_freed");
    // A free does not lower Used; only a trim does (§A9.3, §A10.9).
    obs_yes("unfreed_freed_footprint_unchanged", g_lastFootprint == beforeTrim);

    CK(cudaDeviceGraphMemTrim(device), "unfreed_freed_trim");
    printf(
        "\nSince the allocations are now freed, trimming does reduce the footprint even when the "
        "graph execs are not yet destroyed.\n");
    printMemoryFootprint(device, "unfreed_freed_trimmed");
    obs_yes("unfreed_freed_trimmed_footprint_zero", g_lastFootprint == 0);

    cleanupGraphs("unfreed", graphs, NUM_GRAPHS);
    CK(cudaStreamDestroy(stream), "unfreed_stream_destroy");
}

void cleanupMemory(int device, const char *tag) {
    CK(cudaDeviceGraphMemTrim(device), K("%s_cleanup_trim", tag));
    printf("\nCleaning up example by trimming device memory.\n");
    printMemoryFootprint(device, K("%s_cleanup", tag));
    // Nothing live, every exec destroyed: a trim gives everything back (§A11.1).
    obs_yes(K("%s_cleanup_footprint_zero", tag), g_lastFootprint == 0);
    printf("\n");
}

// ---------------------------------------------------------------- extensions (not in the sample)

static void extensions(int device) {
    printf("================================\n");
    printf("Extensions (not in the sample): graph-memory attributes, high watermarks, "
           "AutoFreeOnLaunch.\n");
    cudaStream_t stream = nullptr;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "x_stream_create");
    unsigned *d_bad = nullptr;
    CK(cudaMalloc(&d_bad, sizeof(unsigned)), "x_counter_malloc");

    // After the sample's cleanups nothing is live or reserved; the highs still remember.
    SampleGraphMem a = sample_graph_mem(device, "x_start");
    obs_yes("x_start_used_zero", a.used == 0);
    obs_yes("x_start_reserved_zero", a.reserved == 0);
    obs_yes("x_start_highs_nonzero", a.used_high > 0 && a.reserved_high > 0);
    info("x_start_used_high_ge_8_graphs", "%s", a.used_high >= NUM_GRAPHS * kBytes ? "yes" : "no");

    // Resetting the highs with nothing in use brings them to 0 (§A10.3, §A10.4).
    unsigned long long zero = 0;
    CK(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &zero),
       "x_reset_used_high");
    CK(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &zero),
       "x_reset_reserved_high");
    a = sample_graph_mem(device, "x_reset_idle");
    obs_yes("x_reset_idle_highs_zero", a.used_high == 0 && a.reserved_high == 0);
    // Only the highs can be set, and only to zero (§A10.3).
    unsigned long long one = 1;
    PROBE(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemCurrent, &zero),
          "x_set_used_current");
    PROBE(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &one),
          "x_set_used_high_nonzero");

    // Two unfreed allocations live, written by their graphs; reset while in use: highs become
    // the currents (§A10.4).
    cudaGraphExec_t keep[2] = {nullptr, nullptr};
    float *kept[2] = {nullptr, nullptr};
    for (int i = 0; i < 2; i++) {
        createSimpleAllocNoFreeGraph(K("x_keep%d", i), &keep[i], &kept[i], kBytes, device, true, 0,
                                     (float)(10 * i + 1));
        CK(cudaGraphLaunch(keep[i], stream), K("x_keep%d_launch", i));
    }
    CK(cudaStreamSynchronize(stream), "x_keep_sync");
    a = sample_graph_mem(device, "x_keep");
    obs_yes("x_keep_used_ge_live", a.used >= 2 * kBytes);
    CK(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &zero),
       "x_keep_reset_used_high");
    CK(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &zero),
       "x_keep_reset_reserved_high");
    SampleGraphMem b = sample_graph_mem(device, "x_keep_reset");
    obs_yes("x_keep_reset_highs_eq_currents",
            b.used_high == b.used && b.reserved_high == b.reserved);
    obs_yes("x_keep_reset_currents_unchanged", b.used == a.used && b.reserved == a.reserved);
    // Relaunching an exec whose allocation is unfreed is refused (§A6.1).
    PROBE(cudaGraphLaunch(keep[0], stream), "x_keep0_relaunch_unfreed");
    PROBE(cudaStreamSynchronize(stream), "x_keep0_relaunch_unfreed_sync");
    for (int i = 0; i < 2; i++) {
        CK(cudaMemsetAsync(d_bad, 0, sizeof(unsigned), stream), K("x_keep%d_counter_reset", i));
        countWrong<<<264, THREADS_PER_BLOCK, 0, stream>>>(kept[i], kBytes / sizeof(float),
                                                          (float)(10 * i + 1), d_bad);
        CK(cudaGetLastError(), K("x_keep%d_check_kernel", i));
        unsigned bad = ~0u;
        CK(cudaMemcpyAsync(&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost, stream),
           K("x_keep%d_counter_read", i));
        CK(cudaStreamSynchronize(stream), K("x_keep%d_check_sync", i));
        OBS_PASS(K("x_keep%d_data", i), bad == 0);
    }
    for (int i = 0; i < 2; i++) {
        CK(cudaFreeAsync(kept[i], stream), K("x_keep%d_free_async", i));
        CK(cudaGraphExecDestroy(keep[i]), K("x_keep%d_exec_destroy", i));
    }
    CK(cudaStreamSynchronize(stream), "x_keep_free_sync");
    CK(cudaDeviceGraphMemTrim(device), "x_keep_trim");
    a = sample_graph_mem(device, "x_keep_trimmed");
    obs_yes("x_keep_trimmed_used_zero", a.used == 0);
    obs_yes("x_keep_trimmed_reserved_zero", a.reserved == 0);
    obs_yes("x_keep_trimmed_highs_kept",
            a.used_high >= 2 * kBytes && a.reserved_high >= 2 * kBytes);

    // AutoFreeOnLaunch: the exec's unfreed allocation is freed by its next launch, so eight
    // launches in one stream need the memory of one (§A6.2).
    cudaGraphExec_t af = nullptr;
    float *afPtr = nullptr;
    createSimpleAllocNoFreeGraph("x_autofree", &af, &afPtr, kBytes, device, true,
                                 cudaGraphInstantiateFlagAutoFreeOnLaunch, 7.0f);
    unsigned long long flags = 0;
    CK(cudaGraphExecGetFlags(af, &flags), "x_autofree_get_flags");
    obs_int("x_autofree_flags", (long long)flags);
    unsigned long long firstUsed = 0;
    bool launched = true, steady = true;
    for (int i = 0; i < NUM_GRAPHS; i++) {
        launched &= cudaGraphLaunch(af, stream) == cudaSuccess;
        printf("%02d: ", i);
        printMemoryFootprint(device, K("x_autofree_launch%d", i));
        if (i == 0)
            firstUsed = g_lastFootprint;
        else
            steady &= g_lastFootprint == firstUsed;
    }
    OBS_PASS("x_autofree_launches", launched);
    obs_yes("x_autofree_first_ge_bytes", firstUsed >= kBytes);
    // The driver's semantics do not demand it (a relaunch may map anew): INFO only.
    info("x_autofree_no_growth", "%s", steady ? "yes" : "no");
    CK(cudaMemsetAsync(d_bad, 0, sizeof(unsigned), stream), "x_autofree_counter_reset");
    countWrong<<<264, THREADS_PER_BLOCK, 0, stream>>>(afPtr, kBytes / sizeof(float), 7.0f, d_bad);
    CK(cudaGetLastError(), "x_autofree_check_kernel");
    unsigned bad = ~0u;
    CK(cudaMemcpyAsync(&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost, stream),
       "x_autofree_counter_read");
    CK(cudaStreamSynchronize(stream), "x_autofree_sync");
    OBS_PASS("x_autofree_data", bad == 0);
    SampleGraphMem c = sample_graph_mem(device, "x_autofree_done");
    obs_yes("x_autofree_done_used_ge_bytes", c.used >= kBytes);
    // The last launch's allocation is still live: the trim keeps it.
    CK(cudaDeviceGraphMemTrim(device), "x_autofree_trim_live");
    c = sample_graph_mem(device, "x_autofree_trimmed_live");
    obs_yes("x_autofree_trimmed_live_used_ge_bytes", c.used >= kBytes);
    CK(cudaFree(afPtr), "x_autofree_cuda_free");
    CK(cudaGraphExecDestroy(af), "x_autofree_exec_destroy");
    CK(cudaDeviceGraphMemTrim(device), "x_autofree_trim");
    c = sample_graph_mem(device, "x_autofree_trimmed");
    obs_yes("x_autofree_trimmed_used_zero", c.used == 0);
    obs_yes("x_autofree_trimmed_reserved_zero", c.reserved == 0);

    // Invalid devices for the attribute calls and trim (§A10.1, §A11.3).
    int count = 0;
    cudaGetDeviceCount(&count);
    unsigned long long v = 0;
    PROBE(cudaDeviceGetGraphMemAttribute(count, cudaGraphMemAttrUsedMemCurrent, &v),
          "x_get_device_count");
    PROBE(cudaDeviceGetGraphMemAttribute(-1, cudaGraphMemAttrUsedMemCurrent, &v),
          "x_get_device_negative");
    PROBE(cudaDeviceGraphMemTrim(count), "x_trim_device_count");

    CK(cudaFree(d_bad), "x_counter_free");
    CK(cudaStreamDestroy(stream), "x_stream_destroy");
}

int main() {
    int device = sample_find_device();

    sample_require_graph_memory(device);

    // A fresh process: all four attributes are 0 (§A10.5).
    SampleGraphMem a = sample_graph_mem(device, "fresh");
    obs_yes("fresh_all_zero",
            a.used == 0 && a.used_high == 0 && a.reserved == 0 && a.reserved_high == 0);

    virtualAddressReuseSingleGraph(kBytes, device);
    cleanupMemory(device, "va");

    physicalMemoryReuseSingleStream(kBytes, device);
    cleanupMemory(device, "single");

    simultaneousStreams(kBytes, device);
    cleanupMemory(device, "multi");

    unfreedAllocations(kBytes, device);
    cleanupMemory(device, "unfreed");

    printf("================================\n");
    printf("Sample complete.\n");

    extensions(device);
    return sample_finish("graphMemoryFootprint");
}
