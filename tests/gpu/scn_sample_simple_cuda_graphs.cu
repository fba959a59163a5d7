// Re-creation of NVIDIA cuda-samples Samples/3_CUDA_Features/simpleCudaGraphs (cudaGraphsManual:
// memcpy, memset, reduce, reduceFinal, memcpy and host nodes built by hand, cloned, both execs
// launched GRAPH_LAUNCH_ITERATIONS times; cudaGraphsUsingStreamCapture: the same captured from
// three forked streams with a host function), every CUDA return code observed and every host
// callback's sum observed (the reductions are deterministic). Then the graph-memory twist:
//   T1 the manual graph with outputVec as a graph allocation (alloc node -> memset -> reduce ->
//      reduceFinal -> free node); clone (refused natively, SEMANTICS.md §A3.3), second
//      instantiation (refused, §A3.7), cudaGraphExecKernelNodeSetParams on the reduce node;
//   T2 the captured graph with outputVec and result as cudaMallocAsync allocations made on the
//      forked streams and freed with cudaFreeAsync on the origin stream; clone refused;
//   T3 cudaGraphExecUpdate of T2's exec from a second capture of the same work (new addresses,
//      §A3.10), and from T2-shaped captures whose sizes differ.
#include "samples.cuh"

#include <cooperative_groups.h>

#include <vector>

namespace cg = cooperative_groups;

#define THREADS_PER_BLOCK 512
#define GRAPH_LAUNCH_ITERATIONS 3

typedef struct callBackData {
    const char *fn_name;
    double *data;
} callBackData_t;

__global__ void reduce(float *inputVec, double *outputVec, size_t inputSize, size_t outputSize) {
    __shared__ double tmp[THREADS_PER_BLOCK];

    cg::thread_block cta = cg::this_thread_block();
    size_t globaltid = blockIdx.x * blockDim.x + threadIdx.x;

    double temp_sum = 0.0;
    for (size_t i = globaltid; i < inputSize; i += gridDim.x * blockDim.x) {
        temp_sum += (double)inputVec[i];
    }
    tmp[cta.thread_rank()] = temp_sum;

    cg::sync(cta);

    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);

    double beta = temp_sum;
    double temp;

    for (int i = tile32.size() / 2; i > 0; i >>= 1) {
        if (tile32.thread_rank() < (unsigned)i) {
            temp = tmp[cta.thread_rank() + i];
            beta += temp;
            tmp[cta.thread_rank()] = beta;
        }
        cg::sync(tile32);
    }
    cg::sync(cta);

    if (cta.thread_rank() == 0 && blockIdx.x < outputSize) {
        beta = 0.0;
        for (unsigned i = 0; i < cta.size(); i += tile32.size()) {
            beta += tmp[i];
        }
        outputVec[blockIdx.x] = beta;
    }
}

__global__ void reduceFinal(double *inputVec, double *result, size_t inputSize) {
    __shared__ double tmp[THREADS_PER_BLOCK];

    cg::thread_block cta = cg::this_thread_block();
    size_t globaltid = blockIdx.x * blockDim.x + threadIdx.x;

    double temp_sum = 0.0;
    for (size_t i = globaltid; i < inputSize; i += gridDim.x * blockDim.x) {
        temp_sum += (double)inputVec[i];
    }
    tmp[cta.thread_rank()] = temp_sum;

    cg::sync(cta);

    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);

    // do reduction in shared mem
    if ((blockDim.x >= 512) && (cta.thread_rank() < 256)) {
        tmp[cta.thread_rank()] = temp_sum = temp_sum + tmp[cta.thread_rank() + 256];
    }

    cg::sync(cta);

    if ((blockDim.x >= 256) && (cta.thread_rank() < 128)) {
        tmp[cta.thread_rank()] = temp_sum = temp_sum + tmp[cta.thread_rank() + 128];
    }

    cg::sync(cta);

    if ((blockDim.x >= 128) && (cta.thread_rank() < 64)) {
        tmp[cta.thread_rank()] = temp_sum = temp_sum + tmp[cta.thread_rank() + 64];
    }

    cg::sync(cta);

    if (cta.thread_rank() < 32) {
        // Fetch final intermediate sum from 2nd warp
        if (blockDim.x >= 64)
            temp_sum += tmp[cta.thread_rank() + 32];
        // Reduce final warp using shuffle
        for (int offset = tile32.size() / 2; offset > 0; offset /= 2) {
            temp_sum += tile32.shfl_down(temp_sum, offset);
        }
    }
    // write result for this block to global mem
    if (cta.thread_rank() == 0)
        result[0] = temp_sum;
}

void init_input(float *a, size_t size) {
    for (size_t i = 0; i < size; i++)
        a[i] = (rand() & 0xFF) / (float)RAND_MAX;
}

// Sums the host callbacks saw, in order, observed after each synchronization.
static std::vector<double> g_sums;

void CUDART_CB myHostNodeCallback(void *data) {
    // Check status of GPU after stream operations are done
    callBackData_t *tmp = (callBackData_t *)(data);
    // checkCudaErrors(tmp->status);

    double *result = (double *)(tmp->data);
    char *function = (char *)(tmp->fn_name);
    printf("[%s] Host callback final reduced sum = %lf\n", function, *result);
    g_sums.push_back(*result);
    *result = 0.0; // reset the result
}

// Observes the sums the callbacks reported since the last call: their count, that all are equal
// to the first one ever seen for `ref` (if given), and the value (hex) under `tag`.
static void obsSums(const char *tag, int expectedCount, double *ref) {
    obs_int(K("%s_callbacks", tag), (long long)g_sums.size());
    if ((int)g_sums.size() != expectedCount)
        sample_unexpected++;
    bool same = true;
    for (double s : g_sums)
        same &= s == g_sums[0];
    if (!g_sums.empty()) {
        OBS_DOUBLE(K("%s_sum", tag), g_sums[0]);
        if (ref) {
            if (*ref == 0.0)
                *ref = g_sums[0];
            OBS_PASS(K("%s_sums_match_reference", tag), same && g_sums[0] == *ref);
        } else {
            OBS_PASS(K("%s_sums_equal", tag), same);
        }
    }
    g_sums.clear();
}

static double g_reference = 0.0; // the sample's sum (both of its graphs must give it)
static double g_hostSum = 0.0;   // the sum in double on the host (INFO: order differs)

void cudaGraphsManual(float *inputVec_h, float *inputVec_d, double *outputVec_d, double *result_d,
                      size_t inputSize, size_t numOfBlocks) {
    cudaStream_t streamForGraph = nullptr;
    cudaGraph_t graph = nullptr;
    std::vector<cudaGraphNode_t> nodeDependencies;
    cudaGraphNode_t memcpyNode, kernelNode, memsetNode;
    double result_h = 0.0;

    CK(cudaStreamCreate(&streamForGraph), "manual_stream_create");

    cudaKernelNodeParams kernelNodeParams = {};
    cudaMemcpy3DParms memcpyParams = {};
    cudaMemsetParams memsetParams = {};

    memcpyParams.srcArray = NULL;
    memcpyParams.srcPos = make_cudaPos(0, 0, 0);
    memcpyParams.srcPtr = make_cudaPitchedPtr(inputVec_h, sizeof(float) * inputSize, inputSize, 1);
    memcpyParams.dstArray = NULL;
    memcpyParams.dstPos = make_cudaPos(0, 0, 0);
    memcpyParams.dstPtr = make_cudaPitchedPtr(inputVec_d, sizeof(float) * inputSize, inputSize, 1);
    memcpyParams.extent = make_cudaExtent(sizeof(float) * inputSize, 1, 1);
    memcpyParams.kind = cudaMemcpyHostToDevice;

    memsetParams.dst = (void *)outputVec_d;
    memsetParams.value = 0;
    memsetParams.pitch = 0;
    memsetParams.elementSize = sizeof(float); // elementSize can be max 4 bytes
    memsetParams.width = numOfBlocks * 2;
    memsetParams.height = 1;

    CK(cudaGraphCreate(&graph, 0), "manual_graph_create");
    CK(cudaGraphAddMemcpyNode(&memcpyNode, graph, NULL, 0, &memcpyParams), "manual_memcpy_node");
    CK(cudaGraphAddMemsetNode(&memsetNode, graph, NULL, 0, &memsetParams), "manual_memset_node");

    nodeDependencies.push_back(memsetNode);
    nodeDependencies.push_back(memcpyNode);

    void *kernelArgs[4] = {(void *)&inputVec_d, (void *)&outputVec_d, &inputSize, &numOfBlocks};

    kernelNodeParams.func = (void *)reduce;
    kernelNodeParams.gridDim = dim3(numOfBlocks, 1, 1);
    kernelNodeParams.blockDim = dim3(THREADS_PER_BLOCK, 1, 1);
    kernelNodeParams.sharedMemBytes = 0;
    kernelNodeParams.kernelParams = (void **)kernelArgs;
    kernelNodeParams.extra = NULL;

    CK(cudaGraphAddKernelNode(&kernelNode, graph, nodeDependencies.data(), nodeDependencies.size(),
                              &kernelNodeParams),
       "manual_reduce_node");

    nodeDependencies.clear();
    nodeDependencies.push_back(kernelNode);

    memset(&memsetParams, 0, sizeof(memsetParams));
    memsetParams.dst = result_d;
    memsetParams.value = 0;
    memsetParams.elementSize = sizeof(float);
    memsetParams.width = 2;
    memsetParams.height = 1;
    CK(cudaGraphAddMemsetNode(&memsetNode, graph, NULL, 0, &memsetParams),
       "manual_result_memset_node");

    nodeDependencies.push_back(memsetNode);

    kernelNodeParams = {};
    kernelNodeParams.func = (void *)reduceFinal;
    kernelNodeParams.gridDim = dim3(1, 1, 1);
    kernelNodeParams.blockDim = dim3(THREADS_PER_BLOCK, 1, 1);
    kernelNodeParams.sharedMemBytes = 0;
    void *kernelArgs2[3] = {(void *)&outputVec_d, (void *)&result_d, &numOfBlocks};
    kernelNodeParams.kernelParams = kernelArgs2;
    kernelNodeParams.extra = NULL;

    CK(cudaGraphAddKernelNode(&kernelNode, graph, nodeDependencies.data(), nodeDependencies.size(),
                              &kernelNodeParams),
       "manual_reduce_final_node");
    nodeDependencies.clear();
    nodeDependencies.push_back(kernelNode);

    memset(&memcpyParams, 0, sizeof(memcpyParams));

    memcpyParams.srcArray = NULL;
    memcpyParams.srcPos = make_cudaPos(0, 0, 0);
    memcpyParams.srcPtr = make_cudaPitchedPtr(result_d, sizeof(double), 1, 1);
    memcpyParams.dstArray = NULL;
    memcpyParams.dstPos = make_cudaPos(0, 0, 0);
    memcpyParams.dstPtr = make_cudaPitchedPtr(&result_h, sizeof(double), 1, 1);
    memcpyParams.extent = make_cudaExtent(sizeof(double), 1, 1);
    memcpyParams.kind = cudaMemcpyDeviceToHost;
    CK(cudaGraphAddMemcpyNode(&memcpyNode, graph, nodeDependencies.data(), nodeDependencies.size(),
                              &memcpyParams),
       "manual_result_memcpy_node");
    nodeDependencies.clear();
    nodeDependencies.push_back(memcpyNode);

    cudaGraphNode_t hostNode;
    cudaHostNodeParams hostParams = {};
    hostParams.fn = myHostNodeCallback;
    callBackData_t hostFnData;
    hostFnData.data = &result_h;
    hostFnData.fn_name = "cudaGraphsManual";
    hostParams.userData = &hostFnData;

    CK(cudaGraphAddHostNode(&hostNode, graph, nodeDependencies.data(), nodeDependencies.size(),
                            &hostParams),
       "manual_host_node");

    cudaGraphNode_t *nodes = NULL;
    size_t numNodes = 0;
    CK(cudaGraphGetNodes(graph, nodes, &numNodes), "manual_get_nodes");
    printf("\nNum of nodes in the graph created manually = %zu\n", numNodes);
    obs_int("manual_num_nodes", (long long)numNodes);

    cudaGraphExec_t graphExec = nullptr;
    CK(cudaGraphInstantiate(&graphExec, graph, 0), "manual_instantiate");

    cudaGraph_t clonedGraph = nullptr;
    cudaGraphExec_t clonedGraphExec = nullptr;
    CK(cudaGraphClone(&clonedGraph, graph), "manual_clone");
    CK(cudaGraphInstantiate(&clonedGraphExec, clonedGraph, 0), "manual_clone_instantiate");

    for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++) {
        CK(cudaGraphLaunch(graphExec, streamForGraph), K("manual_launch%d", i));
    }

    CK(cudaStreamSynchronize(streamForGraph), "manual_sync");
    obsSums("manual", GRAPH_LAUNCH_ITERATIONS, &g_reference);

    printf("Cloned Graph Output.. \n");
    for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++) {
        CK(cudaGraphLaunch(clonedGraphExec, streamForGraph), K("manual_clone_launch%d", i));
    }
    CK(cudaStreamSynchronize(streamForGraph), "manual_clone_sync");
    obsSums("manual_clone", GRAPH_LAUNCH_ITERATIONS, &g_reference);

    CK(cudaGraphExecDestroy(graphExec), "manual_exec_destroy");
    CK(cudaGraphExecDestroy(clonedGraphExec), "manual_clone_exec_destroy");
    CK(cudaGraphDestroy(graph), "manual_graph_destroy");
    CK(cudaGraphDestroy(clonedGraph), "manual_clone_graph_destroy");
    CK(cudaStreamDestroy(streamForGraph), "manual_stream_destroy");
}

void cudaGraphsUsingStreamCapture(float *inputVec_h, float *inputVec_d, double *outputVec_d,
                                  double *result_d, size_t inputSize, size_t numOfBlocks) {
    cudaStream_t stream1 = nullptr, stream2 = nullptr, stream3 = nullptr, streamForGraph = nullptr;
    cudaEvent_t forkStreamEvent, memsetEvent1, memsetEvent2;
    cudaGraph_t graph = nullptr;
    double result_h = 0.0;

    CK(cudaStreamCreate(&stream1), "capture_stream1_create");
    CK(cudaStreamCreate(&stream2), "capture_stream2_create");
    CK(cudaStreamCreate(&stream3), "capture_stream3_create");
    CK(cudaStreamCreate(&streamForGraph), "capture_stream_for_graph_create");

    CK(cudaEventCreate(&forkStreamEvent), "capture_event_fork_create");
    CK(cudaEventCreate(&memsetEvent1), "capture_event_memset1_create");
    CK(cudaEventCreate(&memsetEvent2), "capture_event_memset2_create");

    CK(cudaStreamBeginCapture(stream1, cudaStreamCaptureModeGlobal), "capture_begin");

    CK(cudaEventRecord(forkStreamEvent, stream1), "capture_record_fork");
    CK(cudaStreamWaitEvent(stream2, forkStreamEvent, 0), "capture_wait_fork2");
    CK(cudaStreamWaitEvent(stream3, forkStreamEvent, 0), "capture_wait_fork3");

    CK(cudaMemcpyAsync(inputVec_d, inputVec_h, sizeof(float) * inputSize, cudaMemcpyDefault,
                       stream1),
       "capture_memcpy_input");

    CK(cudaMemsetAsync(outputVec_d, 0, sizeof(double) * numOfBlocks, stream2),
       "capture_memset_output");

    CK(cudaEventRecord(memsetEvent1, stream2), "capture_record_memset1");

    CK(cudaMemsetAsync(result_d, 0, sizeof(double), stream3), "capture_memset_result");
    CK(cudaEventRecord(memsetEvent2, stream3), "capture_record_memset2");

    CK(cudaStreamWaitEvent(stream1, memsetEvent1, 0), "capture_wait_memset1");

    reduce<<<numOfBlocks, THREADS_PER_BLOCK, 0, stream1>>>(inputVec_d, outputVec_d, inputSize,
                                                           numOfBlocks);
    CK(cudaGetLastError(), "capture_reduce");

    CK(cudaStreamWaitEvent(stream1, memsetEvent2, 0), "capture_wait_memset2");

    reduceFinal<<<1, THREADS_PER_BLOCK, 0, stream1>>>(outputVec_d, result_d, numOfBlocks);
    CK(cudaGetLastError(), "capture_reduce_final");
    CK(cudaMemcpyAsync(&result_h, result_d, sizeof(double), cudaMemcpyDefault, stream1),
       "capture_memcpy_result");

    callBackData_t hostFnData = {};
    hostFnData.data = &result_h;
    hostFnData.fn_name = "cudaGraphsUsingStreamCapture";
    cudaHostFn_t fn = myHostNodeCallback;
    CK(cudaLaunchHostFunc(stream1, fn, &hostFnData), "capture_host_func");
    CK(cudaStreamEndCapture(stream1, &graph), "capture_end");

    cudaGraphNode_t *nodes = NULL;
    size_t numNodes = 0;
    CK(cudaGraphGetNodes(graph, nodes, &numNodes), "capture_get_nodes");
    printf("\nNum of nodes in the graph created using stream capture API = %zu\n", numNodes);
    obs_int("capture_num_nodes", (long long)numNodes);

    cudaGraphExec_t graphExec = nullptr;
    CK(cudaGraphInstantiate(&graphExec, graph, 0), "capture_instantiate");

    cudaGraph_t clonedGraph = nullptr;
    cudaGraphExec_t clonedGraphExec = nullptr;
    CK(cudaGraphClone(&clonedGraph, graph), "capture_clone");
    CK(cudaGraphInstantiate(&clonedGraphExec, clonedGraph, 0), "capture_clone_instantiate");

    for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++) {
        CK(cudaGraphLaunch(graphExec, streamForGraph), K("capture_launch%d", i));
    }

    CK(cudaStreamSynchronize(streamForGraph), "capture_sync");
    obsSums("capture", GRAPH_LAUNCH_ITERATIONS, &g_reference);

    printf("Cloned Graph Output.. \n");
    for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++) {
        CK(cudaGraphLaunch(clonedGraphExec, streamForGraph), K("capture_clone_launch%d", i));
    }

    CK(cudaStreamSynchronize(streamForGraph), "capture_clone_sync");
    obsSums("capture_clone", GRAPH_LAUNCH_ITERATIONS, &g_reference);

    CK(cudaGraphExecDestroy(graphExec), "capture_exec_destroy");
    CK(cudaGraphExecDestroy(clonedGraphExec), "capture_clone_exec_destroy");
    CK(cudaGraphDestroy(graph), "capture_graph_destroy");
    CK(cudaGraphDestroy(clonedGraph), "capture_clone_graph_destroy");
    CK(cudaStreamDestroy(stream1), "capture_stream1_destroy");
    CK(cudaStreamDestroy(stream2), "capture_stream2_destroy");
    CK(cudaStreamDestroy(streamForGraph), "capture_stream_for_graph_destroy");
}

// ---------------------------------------------------------------- graph-memory twist

// Clones g and, if that works anyway, instantiates and launches the clone (probes).
static void probeClone(const char *tag, cudaGraph_t g, cudaStream_t s, int launches) {
    cudaGraph_t clone = nullptr;
    cudaError_t rc = PROBE(cudaGraphClone(&clone, g), K("%s_clone", tag));
    if (rc != cudaSuccess || !clone)
        return;
    cudaGraphExec_t e = nullptr;
    rc = PROBE(cudaGraphInstantiate(&e, clone, 0), K("%s_clone_instantiate", tag));
    for (int i = 0; rc == cudaSuccess && i < launches; i++)
        PROBE(cudaGraphLaunch(e, s), K("%s_clone_launch%d", tag, i));
    PROBE(cudaStreamSynchronize(s), K("%s_clone_sync", tag));
    g_sums.clear();
    if (e)
        PROBE(cudaGraphExecDestroy(e), K("%s_clone_exec_destroy", tag));
    PROBE(cudaGraphDestroy(clone), K("%s_clone_graph_destroy", tag));
}

// T1: cudaGraphsManual with outputVec allocated by the graph.
static void manualWithGraphMemory(float *inputVec_h, float *inputVec_d, double *result_d,
                                  size_t inputSize, size_t numOfBlocks) {
    printf("\n[T1] manual graph with outputVec as a graph allocation\n");
    cudaStream_t streamForGraph = nullptr;
    CK(cudaStreamCreate(&streamForGraph), "t1_stream_create");
    cudaGraph_t graph = nullptr;
    CK(cudaGraphCreate(&graph, 0), "t1_graph_create");
    double result_h = 0.0;

    cudaMemAllocNodeParams allocParams;
    memset(&allocParams, 0, sizeof allocParams);
    allocParams.bytesize = sizeof(double) * numOfBlocks;
    allocParams.poolProps.allocType = cudaMemAllocationTypePinned;
    allocParams.poolProps.location.type = cudaMemLocationTypeDevice;
    allocParams.poolProps.location.id = 0;
    cudaGraphNode_t allocNode, memcpyNode, memsetNode, reduceNode, resultMemsetNode, finalNode,
        resultCopyNode, freeNode, hostNode;
    CK(cudaGraphAddMemAllocNode(&allocNode, graph, NULL, 0, &allocParams), "t1_alloc_node");
    double *outputVec_d = (double *)allocParams.dptr;

    cudaMemcpy3DParms memcpyParams = {};
    memcpyParams.srcPtr = make_cudaPitchedPtr(inputVec_h, sizeof(float) * inputSize, inputSize, 1);
    memcpyParams.dstPtr = make_cudaPitchedPtr(inputVec_d, sizeof(float) * inputSize, inputSize, 1);
    memcpyParams.extent = make_cudaExtent(sizeof(float) * inputSize, 1, 1);
    memcpyParams.kind = cudaMemcpyHostToDevice;
    CK(cudaGraphAddMemcpyNode(&memcpyNode, graph, NULL, 0, &memcpyParams), "t1_memcpy_node");

    cudaMemsetParams memsetParams = {};
    memsetParams.dst = (void *)outputVec_d;
    memsetParams.elementSize = sizeof(float);
    memsetParams.width = numOfBlocks * 2;
    memsetParams.height = 1;
    CK(cudaGraphAddMemsetNode(&memsetNode, graph, &allocNode, 1, &memsetParams), "t1_memset_node");

    cudaGraphNode_t deps[2] = {memsetNode, memcpyNode};
    void *kernelArgs[4] = {(void *)&inputVec_d, (void *)&outputVec_d, &inputSize, &numOfBlocks};
    cudaKernelNodeParams reduceParams = {};
    reduceParams.func = (void *)reduce;
    reduceParams.gridDim = dim3(numOfBlocks, 1, 1);
    reduceParams.blockDim = dim3(THREADS_PER_BLOCK, 1, 1);
    reduceParams.kernelParams = (void **)kernelArgs;
    CK(cudaGraphAddKernelNode(&reduceNode, graph, deps, 2, &reduceParams), "t1_reduce_node");

    memset(&memsetParams, 0, sizeof memsetParams);
    memsetParams.dst = result_d;
    memsetParams.elementSize = sizeof(float);
    memsetParams.width = 2;
    memsetParams.height = 1;
    CK(cudaGraphAddMemsetNode(&resultMemsetNode, graph, NULL, 0, &memsetParams),
       "t1_result_memset_node");

    cudaGraphNode_t deps2[2] = {reduceNode, resultMemsetNode};
    void *kernelArgs2[3] = {(void *)&outputVec_d, (void *)&result_d, &numOfBlocks};
    cudaKernelNodeParams finalParams = {};
    finalParams.func = (void *)reduceFinal;
    finalParams.gridDim = dim3(1, 1, 1);
    finalParams.blockDim = dim3(THREADS_PER_BLOCK, 1, 1);
    finalParams.kernelParams = kernelArgs2;
    CK(cudaGraphAddKernelNode(&finalNode, graph, deps2, 2, &finalParams), "t1_reduce_final_node");
    CK(cudaGraphAddMemFreeNode(&freeNode, graph, &finalNode, 1, outputVec_d), "t1_free_node");

    memset(&memcpyParams, 0, sizeof memcpyParams);
    memcpyParams.srcPtr = make_cudaPitchedPtr(result_d, sizeof(double), 1, 1);
    memcpyParams.dstPtr = make_cudaPitchedPtr(&result_h, sizeof(double), 1, 1);
    memcpyParams.extent = make_cudaExtent(sizeof(double), 1, 1);
    memcpyParams.kind = cudaMemcpyDeviceToHost;
    CK(cudaGraphAddMemcpyNode(&resultCopyNode, graph, &finalNode, 1, &memcpyParams),
       "t1_result_memcpy_node");

    cudaHostNodeParams hostParams = {};
    hostParams.fn = myHostNodeCallback;
    callBackData_t hostFnData;
    hostFnData.data = &result_h;
    hostFnData.fn_name = "T1 manual+graphmem";
    hostParams.userData = &hostFnData;
    CK(cudaGraphAddHostNode(&hostNode, graph, &resultCopyNode, 1, &hostParams), "t1_host_node");

    size_t numNodes = 0;
    CK(cudaGraphGetNodes(graph, NULL, &numNodes), "t1_get_nodes");
    obs_int("t1_num_nodes", (long long)numNodes);

    cudaGraphExec_t graphExec = nullptr;
    CK(cudaGraphInstantiate(&graphExec, graph, 0), "t1_instantiate");
    probeClone("t1", graph, streamForGraph, GRAPH_LAUNCH_ITERATIONS);
    cudaGraphExec_t second = nullptr;
    cudaError_t rc = PROBE(cudaGraphInstantiate(&second, graph, 0), "t1_instantiate_second");
    if (rc == cudaSuccess && second)
        PROBE(cudaGraphExecDestroy(second), "t1_instantiate_second_destroy");

    for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++)
        CK(cudaGraphLaunch(graphExec, streamForGraph), K("t1_launch%d", i));
    CK(cudaStreamSynchronize(streamForGraph), "t1_sync");
    obsSums("t1", GRAPH_LAUNCH_ITERATIONS, &g_reference);

    // The reduce node over the first half of the input, then back (cudaGraphExecKernelNodeSetParams
    // with arguments naming the graph's own allocation).
    size_t half = inputSize / 2;
    void *halfArgs[4] = {(void *)&inputVec_d, (void *)&outputVec_d, &half, &numOfBlocks};
    cudaKernelNodeParams halfParams = reduceParams;
    halfParams.kernelParams = (void **)halfArgs;
    CK(cudaGraphExecKernelNodeSetParams(graphExec, reduceNode, &halfParams), "t1_set_params_half");
    CK(cudaGraphLaunch(graphExec, streamForGraph), "t1_half_launch");
    CK(cudaStreamSynchronize(streamForGraph), "t1_half_sync");
    double halfRef = 0.0;
    obsSums("t1_half", 1, &halfRef);
    obs_yes("t1_half_differs", halfRef != g_reference);
    CK(cudaGraphExecKernelNodeSetParams(graphExec, reduceNode, &reduceParams),
       "t1_set_params_back");
    for (int i = 0; i < 2; i++)
        CK(cudaGraphLaunch(graphExec, streamForGraph), K("t1_back_launch%d", i));
    CK(cudaStreamSynchronize(streamForGraph), "t1_back_sync");
    obsSums("t1_back", 2, &g_reference);

    CK(cudaGraphExecDestroy(graphExec), "t1_exec_destroy");
    CK(cudaGraphDestroy(graph), "t1_graph_destroy");
    CK(cudaStreamDestroy(streamForGraph), "t1_stream_destroy");
}

// The sample's captured work with outputVec and result allocated on the forked streams
// (cudaMallocAsync) and freed on stream1 (cudaFreeAsync); `inputSize` and `numOfBlocks` let T3
// capture graphs of another size. *result_h is the host target.
static cudaGraph_t captureWithGraphMemory(const char *tag, float *inputVec_h, float *inputVec_d,
                                          size_t inputSize, size_t numOfBlocks, double *result_h,
                                          callBackData_t *hostFnData) {
    cudaStream_t stream1 = nullptr, stream2 = nullptr, stream3 = nullptr;
    cudaEvent_t forkStreamEvent, memsetEvent1, memsetEvent2;
    cudaGraph_t graph = nullptr;
    CK(cudaStreamCreate(&stream1), K("%s_stream1_create", tag));
    CK(cudaStreamCreate(&stream2), K("%s_stream2_create", tag));
    CK(cudaStreamCreate(&stream3), K("%s_stream3_create", tag));
    CK(cudaEventCreate(&forkStreamEvent), K("%s_event_fork_create", tag));
    CK(cudaEventCreate(&memsetEvent1), K("%s_event_memset1_create", tag));
    CK(cudaEventCreate(&memsetEvent2), K("%s_event_memset2_create", tag));

    double *outputVec_d = nullptr, *result_d = nullptr;
    CK(cudaStreamBeginCapture(stream1, cudaStreamCaptureModeGlobal), K("%s_begin", tag));
    CK(cudaEventRecord(forkStreamEvent, stream1), K("%s_record_fork", tag));
    CK(cudaStreamWaitEvent(stream2, forkStreamEvent, 0), K("%s_wait_fork2", tag));
    CK(cudaStreamWaitEvent(stream3, forkStreamEvent, 0), K("%s_wait_fork3", tag));
    CK(cudaMemcpyAsync(inputVec_d, inputVec_h, sizeof(float) * inputSize, cudaMemcpyDefault,
                       stream1),
       K("%s_memcpy_input", tag));
    CK(cudaMallocAsync(&outputVec_d, sizeof(double) * numOfBlocks, stream2),
       K("%s_malloc_output", tag));
    CK(cudaMemsetAsync(outputVec_d, 0, sizeof(double) * numOfBlocks, stream2),
       K("%s_memset_output", tag));
    CK(cudaEventRecord(memsetEvent1, stream2), K("%s_record_memset1", tag));
    CK(cudaMallocAsync(&result_d, sizeof(double), stream3), K("%s_malloc_result", tag));
    CK(cudaMemsetAsync(result_d, 0, sizeof(double), stream3), K("%s_memset_result", tag));
    CK(cudaEventRecord(memsetEvent2, stream3), K("%s_record_memset2", tag));
    CK(cudaStreamWaitEvent(stream1, memsetEvent1, 0), K("%s_wait_memset1", tag));
    reduce<<<numOfBlocks, THREADS_PER_BLOCK, 0, stream1>>>(inputVec_d, outputVec_d, inputSize,
                                                           numOfBlocks);
    CK(cudaGetLastError(), K("%s_reduce", tag));
    CK(cudaStreamWaitEvent(stream1, memsetEvent2, 0), K("%s_wait_memset2", tag));
    reduceFinal<<<1, THREADS_PER_BLOCK, 0, stream1>>>(outputVec_d, result_d, numOfBlocks);
    CK(cudaGetLastError(), K("%s_reduce_final", tag));
    CK(cudaFreeAsync(outputVec_d, stream1), K("%s_free_output", tag));
    CK(cudaMemcpyAsync(result_h, result_d, sizeof(double), cudaMemcpyDefault, stream1),
       K("%s_memcpy_result", tag));
    CK(cudaFreeAsync(result_d, stream1), K("%s_free_result", tag));
    CK(cudaLaunchHostFunc(stream1, myHostNodeCallback, hostFnData), K("%s_host_func", tag));
    CK(cudaStreamEndCapture(stream1, &graph), K("%s_end", tag));

    size_t numNodes = 0;
    CK(cudaGraphGetNodes(graph, NULL, &numNodes), K("%s_get_nodes", tag));
    obs_int(K("%s_num_nodes", tag), (long long)numNodes);

    CK(cudaEventDestroy(forkStreamEvent), K("%s_event_fork_destroy", tag));
    CK(cudaEventDestroy(memsetEvent1), K("%s_event_memset1_destroy", tag));
    CK(cudaEventDestroy(memsetEvent2), K("%s_event_memset2_destroy", tag));
    CK(cudaStreamDestroy(stream1), K("%s_stream1_destroy", tag));
    CK(cudaStreamDestroy(stream2), K("%s_stream2_destroy", tag));
    CK(cudaStreamDestroy(stream3), K("%s_stream3_destroy", tag));
    return graph;
}

static void captureWithGraphMemoryAndUpdate(float *inputVec_h, float *inputVec_d, size_t inputSize,
                                            size_t numOfBlocks) {
    printf("\n[T2] captured graph with outputVec and result as cudaMallocAsync allocations\n");
    cudaStream_t streamForGraph = nullptr;
    CK(cudaStreamCreate(&streamForGraph), "t2_stream_create");
    double result_h = 0.0;
    callBackData_t hostFnData = {};
    hostFnData.data = &result_h;
    hostFnData.fn_name = "T2 capture+graphmem";

    cudaGraph_t graph = captureWithGraphMemory("t2", inputVec_h, inputVec_d, inputSize, numOfBlocks,
                                               &result_h, &hostFnData);
    cudaGraphExec_t graphExec = nullptr;
    CK(cudaGraphInstantiate(&graphExec, graph, 0), "t2_instantiate");
    probeClone("t2", graph, streamForGraph, GRAPH_LAUNCH_ITERATIONS);
    for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++)
        CK(cudaGraphLaunch(graphExec, streamForGraph), K("t2_launch%d", i));
    CK(cudaStreamSynchronize(streamForGraph), "t2_sync");
    obsSums("t2", GRAPH_LAUNCH_ITERATIONS, &g_reference);

    // T3: exec updates. (a) the same work captured again (new addresses): taken natively
    // (§A3.10); the exec then uses the new graph's allocations.
    printf("\n[T3] cudaGraphExecUpdate with graphs holding memory nodes\n");
    cudaGraph_t again = captureWithGraphMemory("t3_same", inputVec_h, inputVec_d, inputSize,
                                               numOfBlocks, &result_h, &hostFnData);
    cudaGraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    cudaError_t rc = PROBE(cudaGraphExecUpdate(graphExec, again, &info), "t3_same_update");
    obs_int("t3_same_update_result", (long long)info.result);
    obs_yes("t3_same_update_error_node_null", info.errorNode == nullptr);
    if (rc != cudaSuccess) {
        // What the jacobi sample does when an update fails: destroy and instantiate again.
        CK(cudaGraphExecDestroy(graphExec), "t3_same_reinstantiate_destroy");
        graphExec = nullptr;
        CK(cudaGraphInstantiate(&graphExec, again, 0), "t3_same_reinstantiate");
    }
    for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++)
        CK(cudaGraphLaunch(graphExec, streamForGraph), K("t3_same_launch%d", i));
    CK(cudaStreamSynchronize(streamForGraph), "t3_same_sync");
    obsSums("t3_same", GRAPH_LAUNCH_ITERATIONS, &g_reference);

    // (b) the same shape over half the input with a quarter of the blocks (other sizes of both
    // allocations): taken natively whatever the sizes (§A3.10); the sum changes.
    cudaGraph_t smaller =
        captureWithGraphMemory("t3_smaller", inputVec_h, inputVec_d, inputSize / 2, numOfBlocks / 4,
                               &result_h, &hostFnData);
    memset(&info, 0, sizeof info);
    rc = PROBE(cudaGraphExecUpdate(graphExec, smaller, &info), "t3_smaller_update");
    obs_int("t3_smaller_update_result", (long long)info.result);
    if (rc != cudaSuccess) {
        CK(cudaGraphExecDestroy(graphExec), "t3_smaller_reinstantiate_destroy");
        graphExec = nullptr;
        CK(cudaGraphInstantiate(&graphExec, smaller, 0), "t3_smaller_reinstantiate");
    }
    for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++)
        CK(cudaGraphLaunch(graphExec, streamForGraph), K("t3_smaller_launch%d", i));
    CK(cudaStreamSynchronize(streamForGraph), "t3_smaller_sync");
    double smallerRef = 0.0;
    obsSums("t3_smaller", GRAPH_LAUNCH_ITERATIONS, &smallerRef);

    // (c) back to the full size: the sample's sum again.
    cudaGraph_t full = captureWithGraphMemory("t3_full", inputVec_h, inputVec_d, inputSize,
                                              numOfBlocks, &result_h, &hostFnData);
    memset(&info, 0, sizeof info);
    rc = PROBE(cudaGraphExecUpdate(graphExec, full, &info), "t3_full_update");
    obs_int("t3_full_update_result", (long long)info.result);
    if (rc != cudaSuccess) {
        CK(cudaGraphExecDestroy(graphExec), "t3_full_reinstantiate_destroy");
        graphExec = nullptr;
        CK(cudaGraphInstantiate(&graphExec, full, 0), "t3_full_reinstantiate");
    }
    for (int i = 0; i < GRAPH_LAUNCH_ITERATIONS; i++)
        CK(cudaGraphLaunch(graphExec, streamForGraph), K("t3_full_launch%d", i));
    CK(cudaStreamSynchronize(streamForGraph), "t3_full_sync");
    obsSums("t3_full", GRAPH_LAUNCH_ITERATIONS, &g_reference);

    // (d) a graph without memory nodes (the sample's captured shape is different: topology).
    cudaGraph_t plain = nullptr;
    CK(cudaGraphCreate(&plain, 0), "t3_plain_graph_create");
    cudaGraphNode_t empty;
    CK(cudaGraphAddEmptyNode(&empty, plain, NULL, 0), "t3_plain_empty_node");
    memset(&info, 0, sizeof info);
    PROBE(cudaGraphExecUpdate(graphExec, plain, &info), "t3_plain_update");
    obs_int("t3_plain_update_result", (long long)info.result);
    // The exec still runs the last graph taken.
    CK(cudaGraphLaunch(graphExec, streamForGraph), "t3_after_refused_launch");
    CK(cudaStreamSynchronize(streamForGraph), "t3_after_refused_sync");
    obsSums("t3_after_refused", 1, &g_reference);

    CK(cudaGraphExecDestroy(graphExec), "t2_exec_destroy");
    for (cudaGraph_t g : {graph, again, smaller, full, plain})
        CK(cudaGraphDestroy(g), K("t3_graph_destroy_%d", g == graph     ? 0
                                                         : g == again   ? 1
                                                         : g == smaller ? 2
                                                         : g == full    ? 3
                                                                        : 4));
    CK(cudaStreamDestroy(streamForGraph), "t2_stream_destroy");
}

int main() {
    size_t size = 1 << 24; // number of elements to reduce
    size_t maxBlocks = 512;

    // This will pick the best possible CUDA capable device
    sample_find_device();

    printf("%zu elements\n", size);
    printf("threads per block  = %d\n", THREADS_PER_BLOCK);
    printf("Graph Launch iterations = %d\n", GRAPH_LAUNCH_ITERATIONS);

    float *inputVec_d = NULL, *inputVec_h = NULL;
    double *outputVec_d = NULL, *result_d;

    CK(cudaMallocHost(&inputVec_h, sizeof(float) * size), "setup_malloc_host");
    CK(cudaMalloc(&inputVec_d, sizeof(float) * size), "setup_malloc_input");
    CK(cudaMalloc(&outputVec_d, sizeof(double) * maxBlocks), "setup_malloc_output");
    CK(cudaMalloc(&result_d, sizeof(double)), "setup_malloc_result");

    init_input(inputVec_h, size);
    for (size_t i = 0; i < size; i++)
        g_hostSum += inputVec_h[i];
    info("host_sum", "%a", g_hostSum);

    cudaGraphsManual(inputVec_h, inputVec_d, outputVec_d, result_d, size, maxBlocks);
    cudaGraphsUsingStreamCapture(inputVec_h, inputVec_d, outputVec_d, result_d, size, maxBlocks);
    // The sample's sum against the host's (in another order: close, not exact).
    OBS_PASS("sample_sum_close_to_host",
             g_reference != 0.0 && fabs(g_reference - g_hostSum) <= 1e-6 * fabs(g_hostSum));

    printf("\n==== Graph memory twist (not in the sample)\n");
    manualWithGraphMemory(inputVec_h, inputVec_d, result_d, size, maxBlocks);
    captureWithGraphMemoryAndUpdate(inputVec_h, inputVec_d, size, maxBlocks);

    CK(cudaDeviceGraphMemTrim(0), "final_trim");
    SampleGraphMem a = sample_graph_mem(0, "final");
    obs_yes("final_graph_used_zero", a.used == 0);

    CK(cudaFree(inputVec_d), "cleanup_free_input");
    CK(cudaFree(outputVec_d), "cleanup_free_output");
    CK(cudaFree(result_d), "cleanup_free_result");
    CK(cudaFreeHost(inputVec_h), "cleanup_free_host");
    return sample_finish("simpleCudaGraphs");
}
