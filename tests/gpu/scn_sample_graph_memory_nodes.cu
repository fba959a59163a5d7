// Re-creation of NVIDIA cuda-samples Samples/3_CUDA_Features/graphMemoryNodes, with every CUDA
// return code observed (OBS) instead of checkCudaErrors, then extensions (relaunches, access
// descriptors, relaunch refused while an allocation is unfreed, a free-only graph relaunched).
//
// The sample's part keeps its order, its API calls and their arguments, its leaks (graphExec is
// reassigned without destroying the previous exec) and its printouts. Differences: a fixed seed
// (srand(2024)) instead of srand(time(0)) so that checksums are stable, and every call observed.
#include "samples.cuh"

#include <vector>

#define THREADS_PER_BLOCK 512
#define ALLOWABLE_VARIANCE 1.e-6f
#define NUM_ELEMENTS 8000000

// Stores the square of each input element in output array
__global__ void squareArray(const float *input, float *output, int numElements) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;

    if (idx < numElements) {
        output[idx] = input[idx] * input[idx];
    }
}

// Stores the negative of each input element in output array
__global__ void negateArray(const float *input, float *output, int numElements) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;

    if (idx < numElements) {
        output[idx] = input[idx] * -1;
    }
}

struct negSquareArrays {
    float *input;
    float *square;
    float *negSquare;
    int numElements;
    size_t bytes;
    size_t numBlocks;
};

void fillRandomly(float *array, int numElements) {
    for (int n = 0; n < numElements; n++) {
        array[n] = rand() / (float)RAND_MAX;
    }
}

void resetOutputArrays(negSquareArrays *hostArrays) {
    fillRandomly(hostArrays->square, hostArrays->numElements);
    fillRandomly(hostArrays->negSquare, hostArrays->numElements);
}

void prepareHostArrays(negSquareArrays *hostArrays) {
    hostArrays->numElements = NUM_ELEMENTS;
    size_t bytes = hostArrays->numElements * sizeof(float);

    size_t numBlocks = hostArrays->numElements / (size_t)THREADS_PER_BLOCK;
    if ((numBlocks % (size_t)THREADS_PER_BLOCK) != 0) {
        numBlocks++;
    }

    hostArrays->input = (float *)malloc(bytes);
    hostArrays->square = (float *)malloc(bytes);
    hostArrays->negSquare = (float *)malloc(bytes);
    hostArrays->bytes = bytes;
    hostArrays->numBlocks = numBlocks;

    fillRandomly(hostArrays->input, hostArrays->numElements);
    fillRandomly(hostArrays->square, hostArrays->numElements);
    fillRandomly(hostArrays->negSquare, hostArrays->numElements);
}

void createFreeGraph(const char *tag, cudaGraphExec_t *graphExec, float *dPtr) {
    cudaGraph_t graph = nullptr;
    cudaGraphNode_t freeNode;

    CK(cudaGraphCreate(&graph, 0), K("%s_graph_create", tag));

    CK(cudaGraphAddMemFreeNode(&freeNode, graph, NULL, 0, (void *)dPtr), K("%s_free_node", tag));

    CK(cudaGraphInstantiate(graphExec, graph, 0), K("%s_instantiate", tag));
    CK(cudaGraphDestroy(graph), K("%s_graph_destroy", tag));
}

/**
 * The sample's createNegateSquaresGraphExplicitly:
 *
 * alloc d_input
 *       |
 * alloc d_square
 *       |
 * Memcpy a to device
 *       |
 * launch kernel squareArray ------->---- Memcpy d_square to host
 *       |                                      |
 * free d_input                                 |
 *       |                                      |
 * allocate d_negSquare                         |
 *       |                                      |
 * launch kernel negateArray -------->--- free d_square
 *       |
 * Memcpy d_negSquare to host
 *       |
 * free d_negSquare
 *
 * If d_negSquare_out is non null, d_negSquare is not freed and is returned there. `access`
 * (extension, NULL in the sample's part) becomes the allocation nodes' access descriptor.
 */
void createNegateSquaresGraphExplicitly(const char *tag, cudaGraphExec_t *graphExec, int device,
                                        negSquareArrays *hostArrays, float **d_negSquare_out = NULL,
                                        const cudaMemAccessDesc *access = NULL) {
    // Array buffers on device
    float *d_input, *d_square, *d_negSquare;

    // Memory allocation parameters
    cudaMemAllocNodeParams allocParams;
    memset(&allocParams, 0, sizeof(allocParams));
    allocParams.bytesize = hostArrays->bytes;
    allocParams.poolProps.allocType = cudaMemAllocationTypePinned;
    allocParams.poolProps.location.id = device;
    allocParams.poolProps.location.type = cudaMemLocationTypeDevice;
    if (access) {
        allocParams.accessDescs = access;
        allocParams.accessDescCount = 1;
    }

    // Kernel launch parameters
    cudaKernelNodeParams kernelNodeParams = {};
    kernelNodeParams.gridDim = dim3(hostArrays->numBlocks, 1, 1);
    kernelNodeParams.blockDim = dim3(THREADS_PER_BLOCK, 1, 1);
    kernelNodeParams.sharedMemBytes = 0;
    kernelNodeParams.extra = NULL;

    cudaGraph_t graph = nullptr;
    cudaGraphNode_t allocNodeInput, allocNodeSquare, allocNodeNegSquare;
    cudaGraphNode_t copyNodeInput, copyNodeSquare, copyNodeNegSquare;
    cudaGraphNode_t squareKernelNode, negateKernelNode;
    cudaGraphNode_t freeNodeInput, freeNodeSquare;

    // Buffer for storing graph node dependencies
    std::vector<cudaGraphNode_t> nodeDependencies;

    CK(cudaGraphCreate(&graph, 0), K("%s_graph_create", tag));

    CK(cudaGraphAddMemAllocNode(&allocNodeInput, graph, NULL, 0, &allocParams),
       K("%s_alloc_input", tag));
    d_input = (float *)allocParams.dptr;
    obs_yes(K("%s_alloc_input_nonnull", tag), d_input != NULL);

    // To keep the graph structure simple (fewer branching dependencies),
    // allocNodeSquare should depend on allocNodeInput
    CK(cudaGraphAddMemAllocNode(&allocNodeSquare, graph, &allocNodeInput, 1, &allocParams),
       K("%s_alloc_square", tag));
    d_square = (float *)allocParams.dptr;
    obs_yes(K("%s_square_input_distinct", tag), d_square != d_input);

    // copyNodeInput needs to depend on allocNodeInput because copyNodeInput
    // writes to d_input. It does so here indirectly through allocNodeSquare.
    CK(cudaGraphAddMemcpyNode1D(&copyNodeInput, graph, &allocNodeSquare, 1, d_input,
                                hostArrays->input, hostArrays->bytes, cudaMemcpyHostToDevice),
       K("%s_memcpy_input_node", tag));

    void *squareKernelArgs[3] = {(void *)&d_input, (void *)&d_square,
                                 (void *)&(hostArrays->numElements)};
    kernelNodeParams.func = (void *)squareArray;
    kernelNodeParams.kernelParams = (void **)squareKernelArgs;

    // Square kernel depends on copyNodeInput to ensure all data is on the device
    // before kernel launch.
    CK(cudaGraphAddKernelNode(&squareKernelNode, graph, &copyNodeInput, 1, &kernelNodeParams),
       K("%s_square_kernel_node", tag));

    CK(cudaGraphAddMemcpyNode1D(&copyNodeSquare, graph, &squareKernelNode, 1, hostArrays->square,
                                d_square, hostArrays->bytes, cudaMemcpyDeviceToHost),
       K("%s_memcpy_square_node", tag));

    // Free of d_input depends on the square kernel to ensure that d_input is not
    // freed while being read by the kernel. It also depends on the alloc of
    // d_input via squareKernelNode > copyNodeInput > allocNodeSquare >
    // allocNodeInput.
    CK(cudaGraphAddMemFreeNode(&freeNodeInput, graph, &squareKernelNode, 1, d_input),
       K("%s_free_input_node", tag));

    // Allocation of C depends on free of A so CUDA can reuse the virtual address.
    CK(cudaGraphAddMemAllocNode(&allocNodeNegSquare, graph, &freeNodeInput, 1, &allocParams),
       K("%s_alloc_negsquare", tag));
    d_negSquare = (float *)allocParams.dptr;

    // The sample prints this line only when the driver reused d_input's address. graphmem keeps
    // allocations of 2 MiB and more on address ranges of their own (tests/SEMANTICS.md §A1.11):
    // INFO only, but the real sample's stdout differs here.
    if (d_negSquare == d_input) {
        printf("Check verified that d_negSquare and d_input share a virtual address.\n");
    }
    info(K("%s_negsquare_reuses_input_va", tag), "%s", d_negSquare == d_input ? "yes" : "no");
    obs_yes(K("%s_negsquare_square_distinct", tag), d_negSquare != d_square);

    void *negateKernelArgs[3] = {(void *)&d_square, (void *)&d_negSquare,
                                 (void *)&(hostArrays->numElements)};
    kernelNodeParams.func = (void *)negateArray;
    kernelNodeParams.kernelParams = (void **)negateKernelArgs;

    CK(cudaGraphAddKernelNode(&negateKernelNode, graph, &allocNodeNegSquare, 1, &kernelNodeParams),
       K("%s_negate_kernel_node", tag));

    nodeDependencies.push_back(copyNodeSquare);
    nodeDependencies.push_back(negateKernelNode);
    CK(cudaGraphAddMemFreeNode(&freeNodeSquare, graph, nodeDependencies.data(),
                               nodeDependencies.size(), d_square),
       K("%s_free_square_node", tag));
    nodeDependencies.clear();

    CK(cudaGraphAddMemcpyNode1D(&copyNodeNegSquare, graph, &negateKernelNode, 1,
                                hostArrays->negSquare, d_negSquare, hostArrays->bytes,
                                cudaMemcpyDeviceToHost),
       K("%s_memcpy_negsquare_node", tag));

    if (d_negSquare_out == NULL) {
        cudaGraphNode_t freeNodeNegSquare;
        CK(cudaGraphAddMemFreeNode(&freeNodeNegSquare, graph, &copyNodeNegSquare, 1, d_negSquare),
           K("%s_free_negsquare_node", tag));
    } else {
        *d_negSquare_out = d_negSquare;
    }

    size_t numNodes = 0;
    CK(cudaGraphGetNodes(graph, NULL, &numNodes), K("%s_get_nodes", tag));
    obs_int(K("%s_num_nodes", tag), (long long)numNodes);

    CK(cudaGraphInstantiate(graphExec, graph, 0), K("%s_instantiate", tag));
    CK(cudaGraphDestroy(graph), K("%s_graph_destroy", tag));
}

/**
 * The sample's doNegateSquaresInStream:
 * ---------------------------------------------------------------------
 * | STREAM                             | STREAM2                      |
 * ---------------------------------------------------------------------
 * alloc d_input
 * alloc d_square
 * Memcpy a to device
 * launch kernel squareArray
 * record squareKernelCompleteEvent -->-- wait squareKernelCompleteEvent
 * free d_input                                 |
 * allocate d_negSquare                   Memcpy d_square to host
 * launch kernel negateArray                    |
 * record negateKernelCompleteEvent -->-- wait negateKernelCompleteEvent
 * Memcpy d_negSquare to host                   |
 * free d_negSquare                       free d_square
 * wait squareFreeEvent --------------<---- record squareFreeEvent
 */
void doNegateSquaresInStream(const char *tag, cudaStream_t stream1, negSquareArrays *hostArrays,
                             float **d_negSquare_out = NULL) {
    float *d_input = NULL, *d_square = NULL, *d_negSquare = NULL;
    cudaStream_t stream2 = NULL;
    cudaEvent_t squareKernelCompleteEvent = NULL, negateKernelCompleteEvent = NULL,
                squareFreeEvent = NULL;

    CK(cudaStreamCreateWithFlags(&stream2, cudaStreamNonBlocking), K("%s_stream2_create", tag));

    CK(cudaEventCreate(&squareKernelCompleteEvent), K("%s_event1_create", tag));
    CK(cudaEventCreate(&negateKernelCompleteEvent), K("%s_event2_create", tag));
    CK(cudaEventCreate(&squareFreeEvent), K("%s_event3_create", tag));

    // Virtual addresses are assigned synchronously when cudaMallocAsync is
    // called, thus there is no performace benefit gained by separating the
    // allocations into two streams.
    CK(cudaMallocAsync(&d_input, hostArrays->bytes, stream1), K("%s_malloc_input", tag));
    CK(cudaMallocAsync(&d_square, hostArrays->bytes, stream1), K("%s_malloc_square", tag));

    CK(cudaMemcpyAsync(d_input, hostArrays->input, hostArrays->bytes, cudaMemcpyHostToDevice,
                       stream1),
       K("%s_memcpy_input", tag));
    squareArray<<<hostArrays->numBlocks, THREADS_PER_BLOCK, 0, stream1>>>(d_input, d_square,
                                                                          hostArrays->numElements);
    CK(cudaGetLastError(), K("%s_square_kernel", tag));
    CK(cudaEventRecord(squareKernelCompleteEvent, stream1), K("%s_record1", tag));

    CK(cudaStreamWaitEvent(stream2, squareKernelCompleteEvent, 0), K("%s_wait1", tag));
    CK(cudaMemcpyAsync(hostArrays->square, d_square, hostArrays->bytes, cudaMemcpyDeviceToHost,
                       stream2),
       K("%s_memcpy_square", tag));

    CK(cudaFreeAsync(d_input, stream1), K("%s_free_input", tag));
    CK(cudaMallocAsync(&d_negSquare, hostArrays->bytes, stream1), K("%s_malloc_negsquare", tag));
    negateArray<<<hostArrays->numBlocks, THREADS_PER_BLOCK, 0, stream1>>>(d_square, d_negSquare,
                                                                          hostArrays->numElements);
    CK(cudaGetLastError(), K("%s_negate_kernel", tag));
    CK(cudaEventRecord(negateKernelCompleteEvent, stream1), K("%s_record2", tag));
    CK(cudaMemcpyAsync(hostArrays->negSquare, d_negSquare, hostArrays->bytes,
                       cudaMemcpyDeviceToHost, stream1),
       K("%s_memcpy_negsquare", tag));
    if (d_negSquare_out == NULL) {
        CK(cudaFreeAsync(d_negSquare, stream1), K("%s_free_negsquare", tag));
    } else {
        *d_negSquare_out = d_negSquare;
    }

    CK(cudaStreamWaitEvent(stream2, negateKernelCompleteEvent, 0), K("%s_wait2", tag));
    CK(cudaFreeAsync(d_square, stream2), K("%s_free_square", tag));
    CK(cudaEventRecord(squareFreeEvent, stream2), K("%s_record3", tag));

    CK(cudaStreamWaitEvent(stream1, squareFreeEvent, 0), K("%s_wait3", tag));

    CK(cudaStreamDestroy(stream2), K("%s_stream2_destroy", tag));
    CK(cudaEventDestroy(squareKernelCompleteEvent), K("%s_event1_destroy", tag));
    CK(cudaEventDestroy(negateKernelCompleteEvent), K("%s_event2_destroy", tag));
    CK(cudaEventDestroy(squareFreeEvent), K("%s_event3_destroy", tag));
}

void createNegateSquaresGraphWithStreamCapture(const char *tag, cudaGraphExec_t *graphExec,
                                               negSquareArrays *hostArrays,
                                               float **d_negSquare_out = NULL) {
    cudaGraph_t graph = nullptr;
    cudaStream_t stream = nullptr;

    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), K("%s_stream_create", tag));

    CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), K("%s_begin_capture", tag));
    doNegateSquaresInStream(tag, stream, hostArrays, d_negSquare_out);
    CK(cudaStreamEndCapture(stream, &graph), K("%s_end_capture", tag));

    size_t numNodes = 0;
    CK(cudaGraphGetNodes(graph, NULL, &numNodes), K("%s_get_nodes", tag));
    obs_int(K("%s_num_nodes", tag), (long long)numNodes);

    CK(cudaGraphInstantiate(graphExec, graph, 0), K("%s_instantiate", tag));
    CK(cudaStreamDestroy(stream), K("%s_stream_destroy", tag));
    CK(cudaGraphDestroy(graph), K("%s_graph_destroy", tag));
}

void prepareRefArrays(negSquareArrays *hostArrays, negSquareArrays *deviceRefArrays,
                      bool **foundValidationFailure) {
    deviceRefArrays->bytes = hostArrays->bytes;
    deviceRefArrays->numElements = hostArrays->numElements;

    for (int i = 0; i < hostArrays->numElements; i++) {
        hostArrays->square[i] = hostArrays->input[i] * hostArrays->input[i];
        hostArrays->negSquare[i] = hostArrays->square[i] * -1;
    }

    CK(cudaMalloc((void **)&deviceRefArrays->negSquare, deviceRefArrays->bytes),
       "setup_ref_malloc");
    CK(cudaMemcpy(deviceRefArrays->negSquare, hostArrays->negSquare, hostArrays->bytes,
                  cudaMemcpyHostToDevice),
       "setup_ref_memcpy");

    CK(cudaMallocManaged((void **)foundValidationFailure, sizeof(bool)), "setup_malloc_managed");
    **foundValidationFailure = false;
}

int checkValidationFailure(const char *tag, bool *foundValidationFailure) {
    bool failed = *foundValidationFailure;
    OBS_PASS(K("%s_validation", tag), !failed);
    if (failed) {
        printf("Validation FAILURE!\n\n");
        *foundValidationFailure = false;
        return EXIT_FAILURE;
    } else {
        printf("Validation PASSED!\n\n");
        return EXIT_SUCCESS;
    }
}

__global__ void validateGPU(float *d_negSquare, negSquareArrays devRefArrays,
                            bool *foundValidationFailure) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    float ref, diff;

    if (idx < devRefArrays.numElements) {
        ref = devRefArrays.negSquare[idx];
        diff = d_negSquare[idx] - ref;
        diff *= diff;
        ref *= ref;
        if (diff / ref > ALLOWABLE_VARIANCE) {
            *foundValidationFailure = true;
        }
    }
}

void validateHost(negSquareArrays *hostArrays, bool *foundValidationFailure) {
    float ref, diff;

    for (int i = 0; i < hostArrays->numElements; i++) {
        ref = hostArrays->input[i] * hostArrays->input[i] * -1;
        diff = hostArrays->negSquare[i] - ref;
        diff *= diff;
        ref *= ref;
        if (diff / ref > ALLOWABLE_VARIANCE) {
            *foundValidationFailure = true;
        }
    }
}

// Probe's own check (not in the sample): the host copies of square and negSquare, bit for bit
// against the host's products (one IEEE multiply each, so exact), and a checksum.
static void exactHostCheck(const char *tag, negSquareArrays *h, bool checkSquare) {
    long long badSq = 0, badNeg = 0;
    for (int i = 0; i < h->numElements; i++) {
        float sq = h->input[i] * h->input[i];
        float neg = sq * -1;
        badSq += memcmp(&sq, &h->square[i], sizeof(float)) != 0;
        badNeg += memcmp(&neg, &h->negSquare[i], sizeof(float)) != 0;
    }
    if (checkSquare)
        obs_int(K("%s_host_square_wrong", tag), badSq);
    obs_int(K("%s_host_negsquare_wrong", tag), badNeg);
    OBS_HASH(K("%s_host_negsquare_hash", tag), h->negSquare, h->bytes);
    if (badNeg || (checkSquare && badSq))
        sample_unexpected++;
}

// ---------------------------------------------------------------- the sample's main, observed

static int runSample(int device) {
    negSquareArrays hostArrays, deviceRefArrays;
    cudaStream_t stream = nullptr;
    cudaGraphExec_t graphExec = nullptr, graphExecFreeC = nullptr;

    // Declare pointers for GPU buffers
    float *d_negSquare = NULL;
    bool *foundValidationFailure = NULL;

    sample_require_graph_memory(device);
    printf("Setting up sample.\n");

    prepareHostArrays(&hostArrays);
    prepareRefArrays(&hostArrays, &deviceRefArrays, &foundValidationFailure);
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "setup_stream_create");
    printf("Setup complete.\n\n");

    printf("Running negateSquares in a stream.\n");
    doNegateSquaresInStream("stream", stream, &hostArrays);
    CK(cudaStreamSynchronize(stream), "stream_sync");
    printf("Validating negateSquares in a stream...\n");
    validateHost(&hostArrays, foundValidationFailure);
    checkValidationFailure("stream", foundValidationFailure);
    exactHostCheck("stream", &hostArrays, true);
    resetOutputArrays(&hostArrays);

    printf("Running negateSquares in a stream-captured graph.\n");
    createNegateSquaresGraphWithStreamCapture("capture", &graphExec, &hostArrays);
    CK(cudaGraphLaunch(graphExec, stream), "capture_launch");
    CK(cudaStreamSynchronize(stream), "capture_sync");
    printf("Validating negateSquares in a stream-captured graph...\n");
    validateHost(&hostArrays, foundValidationFailure);
    checkValidationFailure("capture", foundValidationFailure);
    exactHostCheck("capture", &hostArrays, true);
    resetOutputArrays(&hostArrays);

    printf("Running negateSquares in an explicitly constructed graph.\n");
    createNegateSquaresGraphExplicitly("explicit", &graphExec, device, &hostArrays);
    CK(cudaGraphLaunch(graphExec, stream), "explicit_launch");
    CK(cudaStreamSynchronize(stream), "explicit_sync");
    printf("Validating negateSquares in an explicitly constructed graph...\n");
    validateHost(&hostArrays, foundValidationFailure);
    checkValidationFailure("explicit", foundValidationFailure);
    exactHostCheck("explicit", &hostArrays, true);
    resetOutputArrays(&hostArrays);

    // Each of the three examples below free d_negSquare outside the graph. As
    // demonstrated by validateGPU, d_negSquare can be accessed by outside the
    // graph before d_negSquare is freed.

    printf("Running negateSquares with d_negSquare freed outside the stream.\n");
    createNegateSquaresGraphExplicitly("outside_stream", &graphExec, device, &hostArrays,
                                       &d_negSquare);
    CK(cudaGraphLaunch(graphExec, stream), "outside_stream_launch");
    validateGPU<<<hostArrays.numBlocks, THREADS_PER_BLOCK, 0, stream>>>(
        d_negSquare, deviceRefArrays, foundValidationFailure);
    CK(cudaGetLastError(), "outside_stream_validate_gpu");
    // Since cudaFree is synchronous, the stream must synchronize before freeing
    // d_negSquare to ensure d_negSquare no longer being accessed.
    CK(cudaStreamSynchronize(stream), "outside_stream_sync");
    CK(cudaFree(d_negSquare), "outside_stream_cuda_free");
    printf("Validating negateSquares with d_negSquare freed outside the stream...\n");
    validateHost(&hostArrays, foundValidationFailure);
    checkValidationFailure("outside_stream", foundValidationFailure);
    exactHostCheck("outside_stream", &hostArrays, true);
    resetOutputArrays(&hostArrays);

    printf("Running negateSquares with d_negSquare freed outside the graph.\n");
    createNegateSquaresGraphExplicitly("outside_graph", &graphExec, device, &hostArrays,
                                       &d_negSquare);
    CK(cudaGraphLaunch(graphExec, stream), "outside_graph_launch");
    validateGPU<<<hostArrays.numBlocks, THREADS_PER_BLOCK, 0, stream>>>(
        d_negSquare, deviceRefArrays, foundValidationFailure);
    CK(cudaGetLastError(), "outside_graph_validate_gpu");
    CK(cudaFreeAsync(d_negSquare, stream), "outside_graph_free_async");
    CK(cudaStreamSynchronize(stream), "outside_graph_sync");
    printf("Validating negateSquares with d_negSquare freed outside the graph...\n");
    checkValidationFailure("outside_graph", foundValidationFailure);
    exactHostCheck("outside_graph", &hostArrays, true);
    resetOutputArrays(&hostArrays);

    printf("Running negateSquares with d_negSquare freed in a different graph.\n");
    createNegateSquaresGraphWithStreamCapture("different_graph", &graphExec, &hostArrays,
                                              &d_negSquare);
    createFreeGraph("different_graph_free", &graphExecFreeC, d_negSquare);
    CK(cudaGraphLaunch(graphExec, stream), "different_graph_launch");
    validateGPU<<<hostArrays.numBlocks, THREADS_PER_BLOCK, 0, stream>>>(
        d_negSquare, deviceRefArrays, foundValidationFailure);
    CK(cudaGetLastError(), "different_graph_validate_gpu");
    CK(cudaGraphLaunch(graphExecFreeC, stream), "different_graph_free_launch");
    CK(cudaStreamSynchronize(stream), "different_graph_sync");
    printf("Validating negateSquares with d_negSquare freed in a different graph...\n");
    checkValidationFailure("different_graph", foundValidationFailure);
    exactHostCheck("different_graph", &hostArrays, true);

    printf("Cleaning up sample.\n");
    CK(cudaGraphExecDestroy(graphExec), "cleanup_exec_destroy");
    CK(cudaGraphExecDestroy(graphExecFreeC), "cleanup_free_exec_destroy");
    CK(cudaFree(deviceRefArrays.negSquare), "cleanup_ref_free");
    CK(cudaFree(foundValidationFailure), "cleanup_managed_free");
    CK(cudaStreamDestroy(stream), "cleanup_stream_destroy");
    printf("Cleaning up complete.\n");
    free(hostArrays.input);
    free(hostArrays.square);
    free(hostArrays.negSquare);
    return EXIT_SUCCESS;
}

// ---------------------------------------------------------------- extensions (not in the sample)

static int runExtensions(int device) {
    printf("\n==== Extensions (not in the sample)\n");
    negSquareArrays hostArrays, deviceRefArrays;
    bool *foundValidationFailure = NULL;
    cudaStream_t stream = nullptr;
    prepareHostArrays(&hostArrays);
    prepareRefArrays(&hostArrays, &deviceRefArrays, &foundValidationFailure);
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "x_stream_create");

    // X1, X2: graphs that free everything they allocate, launched several times in a row (with a
    // host check after each) and then back to back without synchronizing in between.
    for (int variant = 0; variant < 2; variant++) {
        const char *tag = variant == 0 ? "x_relaunch_explicit" : "x_relaunch_capture";
        cudaGraphExec_t e = nullptr;
        if (variant == 0)
            createNegateSquaresGraphExplicitly(tag, &e, device, &hostArrays);
        else
            createNegateSquaresGraphWithStreamCapture(tag, &e, &hostArrays);
        for (int i = 0; i < 4; i++) {
            resetOutputArrays(&hostArrays);
            CK(cudaGraphLaunch(e, stream), K("%s_launch%d", tag, i));
            CK(cudaStreamSynchronize(stream), K("%s_sync%d", tag, i));
            validateHost(&hostArrays, foundValidationFailure);
            checkValidationFailure(K("%s_%d", tag, i), foundValidationFailure);
            exactHostCheck(K("%s_%d", tag, i), &hostArrays, true);
        }
        resetOutputArrays(&hostArrays);
        bool launched = true;
        for (int i = 0; i < 5; i++)
            launched &= cudaGraphLaunch(e, stream) == cudaSuccess;
        OBS_PASS(K("%s_back_to_back_launches", tag), launched);
        CK(cudaStreamSynchronize(stream), K("%s_back_to_back_sync", tag));
        exactHostCheck(K("%s_back_to_back", tag), &hostArrays, true);
        CK(cudaGraphExecDestroy(e), K("%s_exec_destroy", tag));
    }

    // X3: the allocation escapes; each launch is followed by a device check and a cudaFreeAsync,
    // three times; then a relaunch while it is unfreed is refused (cudaErrorInvalidValue natively,
    // tests/SEMANTICS.md §A6.1), a cudaFree allows the next one.
    {
        const char *tag = "x_escape";
        cudaGraphExec_t e = nullptr;
        float *d = NULL;
        createNegateSquaresGraphExplicitly(tag, &e, device, &hostArrays, &d);
        for (int i = 0; i < 3; i++) {
            resetOutputArrays(&hostArrays);
            CK(cudaGraphLaunch(e, stream), K("%s_launch%d", tag, i));
            validateGPU<<<hostArrays.numBlocks, THREADS_PER_BLOCK, 0, stream>>>(
                d, deviceRefArrays, foundValidationFailure);
            CK(cudaGetLastError(), K("%s_validate_gpu%d", tag, i));
            CK(cudaFreeAsync(d, stream), K("%s_free_async%d", tag, i));
            CK(cudaStreamSynchronize(stream), K("%s_sync%d", tag, i));
            checkValidationFailure(K("%s_%d", tag, i), foundValidationFailure);
            exactHostCheck(K("%s_%d", tag, i), &hostArrays, false);
        }
        CK(cudaGraphLaunch(e, stream), K("%s_launch_before_refusal", tag));
        CK(cudaStreamSynchronize(stream), K("%s_sync_before_refusal", tag));
        PROBE(cudaGraphLaunch(e, stream), K("%s_relaunch_unfreed", tag));
        PROBE(cudaStreamSynchronize(stream), K("%s_sync_after_refusal", tag));
        validateGPU<<<hostArrays.numBlocks, THREADS_PER_BLOCK, 0, stream>>>(d, deviceRefArrays,
                                                                            foundValidationFailure);
        CK(cudaGetLastError(), K("%s_validate_gpu_after_refusal", tag));
        CK(cudaStreamSynchronize(stream), K("%s_sync_validate_after_refusal", tag));
        checkValidationFailure(K("%s_after_refusal", tag), foundValidationFailure);
        CK(cudaFree(d), K("%s_cuda_free", tag));
        CK(cudaGraphLaunch(e, stream), K("%s_relaunch_after_free", tag));
        validateGPU<<<hostArrays.numBlocks, THREADS_PER_BLOCK, 0, stream>>>(d, deviceRefArrays,
                                                                            foundValidationFailure);
        CK(cudaGetLastError(), K("%s_validate_gpu_after_free", tag));
        CK(cudaStreamSynchronize(stream), K("%s_sync_after_free", tag));
        checkValidationFailure(K("%s_after_free", tag), foundValidationFailure);
        CK(cudaFree(d), K("%s_cuda_free_last", tag));
        PROBE(cudaFree(d), K("%s_cuda_free_again", tag));
        CK(cudaGraphExecDestroy(e), K("%s_exec_destroy", tag));
    }

    // X4: allocation nodes with an access descriptor (read-write for the resident device), the
    // graph launched twice; then a read-only descriptor, refused natively (§A1.5).
    {
        const char *tag = "x_access";
        cudaMemAccessDesc desc;
        memset(&desc, 0, sizeof desc);
        desc.location.type = cudaMemLocationTypeDevice;
        desc.location.id = device;
        desc.flags = cudaMemAccessFlagsProtReadWrite;
        cudaGraphExec_t e = nullptr;
        createNegateSquaresGraphExplicitly(tag, &e, device, &hostArrays, NULL, &desc);
        for (int i = 0; i < 2; i++) {
            resetOutputArrays(&hostArrays);
            CK(cudaGraphLaunch(e, stream), K("%s_launch%d", tag, i));
            CK(cudaStreamSynchronize(stream), K("%s_sync%d", tag, i));
            validateHost(&hostArrays, foundValidationFailure);
            checkValidationFailure(K("%s_%d", tag, i), foundValidationFailure);
            exactHostCheck(K("%s_%d", tag, i), &hostArrays, true);
        }
        CK(cudaGraphExecDestroy(e), K("%s_exec_destroy", tag));

        cudaGraph_t g = nullptr;
        CK(cudaGraphCreate(&g, 0), K("%s_read_only_graph_create", tag));
        cudaMemAllocNodeParams p;
        memset(&p, 0, sizeof p);
        p.bytesize = hostArrays.bytes;
        p.poolProps.allocType = cudaMemAllocationTypePinned;
        p.poolProps.location.id = device;
        p.poolProps.location.type = cudaMemLocationTypeDevice;
        desc.flags = cudaMemAccessFlagsProtRead;
        p.accessDescs = &desc;
        p.accessDescCount = 1;
        cudaGraphNode_t n;
        PROBE(cudaGraphAddMemAllocNode(&n, g, NULL, 0, &p), K("%s_read_only_alloc_node", tag));
        CK(cudaGraphDestroy(g), K("%s_read_only_graph_destroy", tag));
    }

    // X5: the captured graph whose allocation another graph frees, the pair launched three times;
    // then the free-only graph launched alone, with nothing live: refused natively (§A2.6).
    {
        const char *tag = "x_free_graph";
        cudaGraphExec_t e = nullptr, ef = nullptr;
        float *d = NULL;
        createNegateSquaresGraphWithStreamCapture(tag, &e, &hostArrays, &d);
        createFreeGraph(K("%s_free", tag), &ef, d);
        for (int i = 0; i < 3; i++) {
            resetOutputArrays(&hostArrays);
            CK(cudaGraphLaunch(e, stream), K("%s_launch%d", tag, i));
            validateGPU<<<hostArrays.numBlocks, THREADS_PER_BLOCK, 0, stream>>>(
                d, deviceRefArrays, foundValidationFailure);
            CK(cudaGetLastError(), K("%s_validate_gpu%d", tag, i));
            CK(cudaGraphLaunch(ef, stream), K("%s_free_launch%d", tag, i));
            CK(cudaStreamSynchronize(stream), K("%s_sync%d", tag, i));
            checkValidationFailure(K("%s_%d", tag, i), foundValidationFailure);
            exactHostCheck(K("%s_%d", tag, i), &hostArrays, true);
        }
        PROBE(cudaGraphLaunch(ef, stream), K("%s_free_launch_not_live", tag));
        PROBE(cudaStreamSynchronize(stream), K("%s_sync_not_live", tag));
        CK(cudaGraphExecDestroy(e), K("%s_exec_destroy", tag));
        CK(cudaGraphExecDestroy(ef), K("%s_free_exec_destroy", tag));
    }

    // Everything is freed and every exec destroyed: a trim leaves no graph memory (§A11.1).
    CK(cudaDeviceSynchronize(), "x_final_sync");
    CK(cudaDeviceGraphMemTrim(device), "x_final_trim");
    SampleGraphMem a = sample_graph_mem(device, "x_final");
    obs_yes("x_final_used_zero", a.used == 0);
    obs_yes("x_final_reserved_zero", a.reserved == 0);

    CK(cudaFree(deviceRefArrays.negSquare), "x_ref_free");
    CK(cudaFree(foundValidationFailure), "x_managed_free");
    CK(cudaStreamDestroy(stream), "x_stream_destroy");
    free(hostArrays.input);
    free(hostArrays.square);
    free(hostArrays.negSquare);
    return EXIT_SUCCESS;
}

int main() {
    srand(2024); // the sample seeds with time(0); fixed here so that checksums are stable
    int device = sample_find_device();
    runSample(device);
    runExtensions(device);
    return sample_finish("graphMemoryNodes");
}
