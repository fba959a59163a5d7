// Re-creation of NVIDIA cuda-samples Samples/3_CUDA_Features/graphConditionalNodes (simpleIfGraph,
// simpleDoWhileGraph, capturedWhileGraph, simpleIfElseGraph, simpleSwitchGraph; device printf as
// in the sample), every CUDA return code observed, then the graph-memory part:
//   M1 explicit graph: alloc A -> init kernel (sets the IF condition) -> IF/ELSE node whose bodies
//      update A -> check kernel -> free A; launched with both conditions, relaunched at the end.
//   M2 explicit graph launched on the legacy stream like the sample: alloc B -> memset node on B
//      -> do-WHILE node (body captured with cudaStreamBeginCaptureToGraph, as simpleDoWhileGraph)
//      adding 1 to B per iteration -> check kernel -> free B.
//   M3 capturedWhileGraph with cudaMallocAsync before and cudaFreeAsync after the WHILE node,
//      the node added by hand through cudaStreamGetCaptureInfo /
//      cudaStreamUpdateCaptureDependencies.
//   M4 refusals: memory nodes inside IF, ELSE, SWITCH and WHILE bodies (explicit and captured), a
//      body freeing the parent's allocation: added fine, refused at instantiation natively
//      (tests/SEMANTICS.md §A3.11, §A3.12); a memset node in a body on the parent's allocation is
//      accepted (§A1.17); cloning a graph with memory nodes is refused (§A3.3).
#include "samples.cuh"

// ------------------------------------------------------------------ the sample's kernels

__global__ void ifGraphKernelA(char *dPtr, cudaGraphConditionalHandle handle) {
    // In this example, condition is set if *dPtr is odd
    unsigned int value = *dPtr & 0x01;
    cudaGraphSetConditional(handle, value);
    printf("GPU: Handle set to %d\n", value);
}

// This kernel will only be executed if the condition is true
__global__ void ifGraphKernelC(void) {
    printf("GPU: Hello from the GPU! The condition was true.\n");
}

// This kernel will only be executed if the condition is false
__global__ void ifGraphKernelD(void) {
    printf("GPU: Hello from the GPU! The condition was false.\n");
}

__global__ void doWhileEmptyKernel(void) {
    printf("GPU: doWhileEmptyKernel()\n");
    return;
}

__global__ void doWhileLoopKernel(char *dPtr, cudaGraphConditionalHandle handle) {
    if (--(*dPtr) == 0) {
        cudaGraphSetConditional(handle, 0);
    }
    printf("GPU: counter = %d\n", *dPtr);
}

__global__ void capturedWhileKernel(char *dPtr, cudaGraphConditionalHandle handle) {
    printf("GPU: counter = %d\n", *dPtr);
    if (*dPtr) {
        (*dPtr)--;
    }
    cudaGraphSetConditional(handle, *dPtr);
}

__global__ void capturedWhileEmptyKernel(void) {
    printf("GPU: capturedWhileEmptyKernel()\n");
    return;
}

__global__ void switchGraphKernelA(char *dPtr, cudaGraphConditionalHandle handle) {
    unsigned int value = *dPtr;
    cudaGraphSetConditional(handle, value);
    printf("GPU: Handle set to %d\n", value);
}

__global__ void switchGraphKernelC(void) {
    printf("GPU: Hello from switchGraphKernelC(), running on the GPU!\n");
}
__global__ void switchGraphKernelD(void) {
    printf("GPU: Hello from switchGraphKernelD(), running on the GPU!\n");
}
__global__ void switchGraphKernelE(void) {
    printf("GPU: Hello from switchGraphKernelE(), running on the GPU!\n");
}
__global__ void switchGraphKernelF(void) {
    printf("GPU: Hello from switchGraphKernelF(), running on the GPU!\n");
}

static int g_driverVersion = 0;

// Reads the sample's one-byte device value back (an observation the sample does not make).
static void obsByte(const char *key, char *dPtr) {
    char v = 0x7f;
    CK(cudaMemcpy(&v, dPtr, 1, cudaMemcpyDeviceToHost), K("%s_read", key));
    obs_int(key, v);
}

// ------------------------------------------------------------------ the sample's graphs

void simpleIfGraph(void) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graphExec = nullptr;
    cudaGraphNode_t kernelNode;
    cudaGraphNode_t conditionalNode;

    void *kernelArgs[2];

    // Allocate a byte of device memory to use as input
    char *dPtr = nullptr;
    CK(cudaMalloc((void **)&dPtr, 1), "if_malloc");

    printf("simpleIfGraph: Building graph...\n");
    CK(cudaGraphCreate(&graph, 0), "if_graph_create");

    // Create conditional handle.
    cudaGraphConditionalHandle handle;
    CK(cudaGraphConditionalHandleCreate(&handle, graph), "if_handle_create");

    // Use a kernel upstream of the conditional to set the handle value
    cudaGraphNodeParams params = {};
    params.type = cudaGraphNodeTypeKernel;
    params.kernel.func = (void *)ifGraphKernelA;
    params.kernel.blockDim.x = params.kernel.blockDim.y = params.kernel.blockDim.z = 1;
    params.kernel.gridDim.x = params.kernel.gridDim.y = params.kernel.gridDim.z = 1;
    params.kernel.kernelParams = kernelArgs;
    kernelArgs[0] = &dPtr;
    kernelArgs[1] = &handle;
    CK(cudaGraphAddNode(&kernelNode, graph, NULL, NULL, 0, &params), "if_kernel_node");

    cudaGraphNodeParams cParams = {};
    cParams.type = cudaGraphNodeTypeConditional;
    cParams.conditional.handle = handle;
    cParams.conditional.type = cudaGraphCondTypeIf;
    cParams.conditional.size = 1;
    CK(cudaGraphAddNode(&conditionalNode, graph, &kernelNode, NULL, 1, &cParams),
       "if_conditional_node");

    cudaGraph_t bodyGraph = cParams.conditional.phGraph_out[0];

    // Populate the body of the conditional node
    cudaGraphNode_t bodyNode;
    params.kernel.func = (void *)ifGraphKernelC;
    params.kernel.kernelParams = nullptr;
    CK(cudaGraphAddNode(&bodyNode, bodyGraph, NULL, NULL, 0, &params), "if_body_node");

    CK(cudaGraphInstantiate(&graphExec, graph, 0), "if_instantiate");

    // Initialize device memory and launch the graph
    CK(cudaMemset(dPtr, 0, 1), "if_memset0"); // Set dPtr to 0
    printf("Host: Launching graph with device memory set to 0\n");
    CK(cudaGraphLaunch(graphExec, 0), "if_launch0");
    CK(cudaDeviceSynchronize(), "if_sync0");

    // Initialize device memory and launch the graph
    CK(cudaMemset(dPtr, 1, 1), "if_memset1"); // Set dPtr to 1
    printf("Host: Launching graph with device memory set to 1\n");
    CK(cudaGraphLaunch(graphExec, 0), "if_launch1");
    CK(cudaDeviceSynchronize(), "if_sync1");

    // Cleanup
    CK(cudaGraphExecDestroy(graphExec), "if_exec_destroy");
    CK(cudaGraphDestroy(graph), "if_graph_destroy");
    CK(cudaFree(dPtr), "if_free");

    printf("simpleIfGraph: Complete\n\n");
}

void simpleDoWhileGraph(void) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graphExec = nullptr;
    cudaGraphNode_t conditionalNode;

    // Allocate a byte of device memory to use as input
    char *dPtr = nullptr;
    CK(cudaMalloc((void **)&dPtr, 1), "dowhile_malloc");

    printf("simpleDoWhileGraph: Building graph...\n");
    CK(cudaGraphCreate(&graph, 0), "dowhile_graph_create");

    cudaGraphConditionalHandle handle;
    CK(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault),
       "dowhile_handle_create");

    cudaGraphNodeParams cParams = {};
    cParams.type = cudaGraphNodeTypeConditional;
    cParams.conditional.handle = handle;
    cParams.conditional.type = cudaGraphCondTypeWhile;
    cParams.conditional.size = 1;
    CK(cudaGraphAddNode(&conditionalNode, graph, NULL, NULL, 0, &cParams),
       "dowhile_conditional_node");

    cudaGraph_t bodyGraph = cParams.conditional.phGraph_out[0];

    cudaStream_t captureStream = nullptr;
    CK(cudaStreamCreate(&captureStream), "dowhile_stream_create");

    CK(cudaStreamBeginCaptureToGraph(captureStream, bodyGraph, nullptr, nullptr, 0,
                                     cudaStreamCaptureModeRelaxed),
       "dowhile_begin_capture_to_graph");
    doWhileEmptyKernel<<<1, 1, 0, captureStream>>>();
    doWhileEmptyKernel<<<1, 1, 0, captureStream>>>();
    doWhileLoopKernel<<<1, 1, 0, captureStream>>>(dPtr, handle);
    CK(cudaGetLastError(), "dowhile_body_kernels");
    CK(cudaStreamEndCapture(captureStream, nullptr), "dowhile_end_capture");
    CK(cudaStreamDestroy(captureStream), "dowhile_stream_destroy");

    CK(cudaGraphInstantiate(&graphExec, graph, 0), "dowhile_instantiate");

    // Initialize device memory and launch the graph
    CK(cudaMemset(dPtr, 10, 1), "dowhile_memset"); // Set dPtr to 10
    printf("Host: Launching graph with loop counter set to 10\n");
    CK(cudaGraphLaunch(graphExec, 0), "dowhile_launch");
    CK(cudaDeviceSynchronize(), "dowhile_sync");
    obsByte("dowhile_counter_after", dPtr);

    // Cleanup
    CK(cudaGraphExecDestroy(graphExec), "dowhile_exec_destroy");
    CK(cudaGraphDestroy(graph), "dowhile_graph_destroy");
    CK(cudaFree(dPtr), "dowhile_free");

    printf("simpleDoWhileGraph: Complete\n\n");
}

void capturedWhileGraph(void) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graphExec = nullptr;

    cudaStreamCaptureStatus status;
    const cudaGraphNode_t *dependencies;
    size_t numDependencies;

    // Allocate a byte of device memory to use as input
    char *dPtr = nullptr;
    CK(cudaMalloc((void **)&dPtr, 1), "capwhile_malloc");

    printf("capturedWhileGraph: Building graph...\n");
    cudaStream_t captureStream = nullptr;
    CK(cudaStreamCreate(&captureStream), "capwhile_stream_create");

    CK(cudaStreamBeginCapture(captureStream, cudaStreamCaptureModeGlobal), "capwhile_begin");

    // Obtain the handle of the graph
    CK(cudaStreamGetCaptureInfo(captureStream, &status, NULL, &graph, &dependencies, NULL,
                                &numDependencies),
       "capwhile_capture_info1");

    // Create the conditional handle
    cudaGraphConditionalHandle handle;
    CK(cudaGraphConditionalHandleCreate(&handle, graph), "capwhile_handle_create");

    // Insert kernel node A
    capturedWhileKernel<<<1, 1, 0, captureStream>>>(dPtr, handle);
    CK(cudaGetLastError(), "capwhile_kernel_a");

    // Obtain the handle for node A
    CK(cudaStreamGetCaptureInfo(captureStream, &status, NULL, &graph, &dependencies, NULL,
                                &numDependencies),
       "capwhile_capture_info2");

    // Insert conditional node B
    cudaGraphNode_t conditionalNode;
    cudaGraphNodeParams cParams = {};
    cParams.type = cudaGraphNodeTypeConditional;
    cParams.conditional.handle = handle;
    cParams.conditional.type = cudaGraphCondTypeWhile;
    cParams.conditional.size = 1;
    CK(cudaGraphAddNode(&conditionalNode, graph, dependencies, NULL, numDependencies, &cParams),
       "capwhile_conditional_node");

    cudaGraph_t bodyGraph = cParams.conditional.phGraph_out[0];

    // Update stream capture dependencies to account for the node we manually added
    CK(cudaStreamUpdateCaptureDependencies(captureStream, &conditionalNode, NULL, 1,
                                           cudaStreamSetCaptureDependencies),
       "capwhile_update_deps");

    // Insert kernel node D
    capturedWhileEmptyKernel<<<1, 1, 0, captureStream>>>();
    CK(cudaGetLastError(), "capwhile_kernel_d");

    CK(cudaStreamEndCapture(captureStream, &graph), "capwhile_end_capture");
    CK(cudaStreamDestroy(captureStream), "capwhile_stream_destroy");

    // Populate conditional body graph using stream capture
    cudaStream_t bodyStream = nullptr;
    CK(cudaStreamCreate(&bodyStream), "capwhile_body_stream_create");

    CK(cudaStreamBeginCaptureToGraph(bodyStream, bodyGraph, nullptr, nullptr, 0,
                                     cudaStreamCaptureModeGlobal),
       "capwhile_body_begin");
    capturedWhileKernel<<<1, 1, 0, bodyStream>>>(dPtr, handle);
    CK(cudaGetLastError(), "capwhile_body_kernel");
    CK(cudaStreamEndCapture(bodyStream, nullptr), "capwhile_body_end");
    CK(cudaStreamDestroy(bodyStream), "capwhile_body_stream_destroy");

    CK(cudaGraphInstantiate(&graphExec, graph, 0), "capwhile_instantiate");

    // Initialize device memory and launch the graph
    // Set dPtr to 0
    CK(cudaMemset(dPtr, 0, 1), "capwhile_memset0");
    printf("Host: Launching graph with loop counter set to 0\n");
    CK(cudaGraphLaunch(graphExec, 0), "capwhile_launch0");
    CK(cudaDeviceSynchronize(), "capwhile_sync0");
    obsByte("capwhile_counter_after0", dPtr);

    // Set dPtr to 10
    CK(cudaMemset(dPtr, 10, 1), "capwhile_memset10");
    printf("Host: Launching graph with loop counter set to 10\n");
    CK(cudaGraphLaunch(graphExec, 0), "capwhile_launch10");
    CK(cudaDeviceSynchronize(), "capwhile_sync10");
    obsByte("capwhile_counter_after10", dPtr);

    // Cleanup
    CK(cudaGraphExecDestroy(graphExec), "capwhile_exec_destroy");
    CK(cudaGraphDestroy(graph), "capwhile_graph_destroy");
    CK(cudaFree(dPtr), "capwhile_free");

    printf("capturedWhileGraph: Complete\n\n");
}

void simpleIfElseGraph(void) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graphExec = nullptr;
    cudaGraphNode_t kernelNode;
    cudaGraphNode_t conditionalNode;

    void *kernelArgs[2];

    // Allocate a byte of device memory to use as input
    char *dPtr = nullptr;
    CK(cudaMalloc((void **)&dPtr, 1), "ifelse_malloc");

    printf("simpleIfElseGraph: Building graph...\n");
    CK(cudaGraphCreate(&graph, 0), "ifelse_graph_create");

    // Create conditional handle.
    cudaGraphConditionalHandle handle;
    CK(cudaGraphConditionalHandleCreate(&handle, graph), "ifelse_handle_create");

    // Use a kernel upstream of the conditional to set the handle value
    cudaGraphNodeParams params = {};
    params.type = cudaGraphNodeTypeKernel;
    params.kernel.func = (void *)ifGraphKernelA;
    params.kernel.blockDim.x = params.kernel.blockDim.y = params.kernel.blockDim.z = 1;
    params.kernel.gridDim.x = params.kernel.gridDim.y = params.kernel.gridDim.z = 1;
    params.kernel.kernelParams = kernelArgs;
    kernelArgs[0] = &dPtr;
    kernelArgs[1] = &handle;
    CK(cudaGraphAddNode(&kernelNode, graph, NULL, NULL, 0, &params), "ifelse_kernel_node");

    cudaGraphNodeParams cParams = {};
    cParams.type = cudaGraphNodeTypeConditional;
    cParams.conditional.handle = handle;
    cParams.conditional.type = cudaGraphCondTypeIf;
    cParams.conditional.size = 2; // Set size to 2 to indicate an ELSE graph will be used
    CK(cudaGraphAddNode(&conditionalNode, graph, &kernelNode, NULL, 1, &cParams),
       "ifelse_conditional_node");

    cudaGraph_t bodyGraph = cParams.conditional.phGraph_out[0];

    // Populate the body of the first graph in the conditional node, executed if the condition
    // is true
    cudaGraphNode_t trueBodyNode;
    params.kernel.func = (void *)ifGraphKernelC;
    params.kernel.kernelParams = nullptr;
    CK(cudaGraphAddNode(&trueBodyNode, bodyGraph, NULL, NULL, 0, &params), "ifelse_true_node");

    // Populate the body of the second graph in the conditional node, executed if the condition
    // is false
    bodyGraph = cParams.conditional.phGraph_out[1];

    cudaGraphNode_t falseBodyNode;
    params.kernel.func = (void *)ifGraphKernelD;
    params.kernel.kernelParams = nullptr;
    CK(cudaGraphAddNode(&falseBodyNode, bodyGraph, NULL, NULL, 0, &params), "ifelse_false_node");

    CK(cudaGraphInstantiate(&graphExec, graph, 0), "ifelse_instantiate");

    // Initialize device memory and launch the graph
    CK(cudaMemset(dPtr, 0, 1), "ifelse_memset0"); // Set dPtr to 0
    printf("Host: Launching graph with device memory set to 0\n");
    CK(cudaGraphLaunch(graphExec, 0), "ifelse_launch0");
    CK(cudaDeviceSynchronize(), "ifelse_sync0");

    // Initialize device memory and launch the graph
    CK(cudaMemset(dPtr, 1, 1), "ifelse_memset1"); // Set dPtr to 1
    printf("Host: Launching graph with device memory set to 1\n");
    CK(cudaGraphLaunch(graphExec, 0), "ifelse_launch1");
    CK(cudaDeviceSynchronize(), "ifelse_sync1");

    // Cleanup
    CK(cudaGraphExecDestroy(graphExec), "ifelse_exec_destroy");
    CK(cudaGraphDestroy(graph), "ifelse_graph_destroy");
    CK(cudaFree(dPtr), "ifelse_free");

    printf("simpleIfElseGraph: Complete\n\n");
}

void simpleSwitchGraph(void) {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graphExec = nullptr;
    cudaGraphNode_t kernelNode;
    cudaGraphNode_t conditionalNode;

    void *kernelArgs[2];

    char *dPtr = nullptr;
    CK(cudaMalloc((void **)&dPtr, 1), "switch_malloc");

    printf("simpleSwitchGraph: Building graph...\n");
    CK(cudaGraphCreate(&graph, 0), "switch_graph_create");

    cudaGraphConditionalHandle handle;
    CK(cudaGraphConditionalHandleCreate(&handle, graph), "switch_handle_create");

    cudaGraphNodeParams params = {};
    params.type = cudaGraphNodeTypeKernel;
    params.kernel.func = (void *)switchGraphKernelA;
    params.kernel.blockDim.x = params.kernel.blockDim.y = params.kernel.blockDim.z = 1;
    params.kernel.gridDim.x = params.kernel.gridDim.y = params.kernel.gridDim.z = 1;
    params.kernel.kernelParams = kernelArgs;
    kernelArgs[0] = &dPtr;
    kernelArgs[1] = &handle;
    CK(cudaGraphAddNode(&kernelNode, graph, NULL, NULL, 0, &params), "switch_kernel_node");

    cudaGraphNodeParams cParams = {};
    cParams.type = cudaGraphNodeTypeConditional;
    cParams.conditional.handle = handle;
    cParams.conditional.type = cudaGraphCondTypeSwitch;
    cParams.conditional.size = 4;
    CK(cudaGraphAddNode(&conditionalNode, graph, &kernelNode, NULL, 1, &cParams),
       "switch_conditional_node");

    void (*bodies[4])(void) = {switchGraphKernelC, switchGraphKernelD, switchGraphKernelE,
                               switchGraphKernelF};
    for (int i = 0; i < 4; i++) {
        cudaGraphNode_t bodyNode;
        params.kernel.func = (void *)bodies[i];
        params.kernel.kernelParams = nullptr;
        CK(cudaGraphAddNode(&bodyNode, cParams.conditional.phGraph_out[i], NULL, NULL, 0, &params),
           K("switch_body_node%d", i));
    }

    CK(cudaGraphInstantiate(&graphExec, graph, 0), "switch_instantiate");

    for (char i = 0; i < 5; i++) {
        CK(cudaMemset(dPtr, i, 1), K("switch_memset%d", i));
        printf("Host: Launching graph with device memory set to %d\n", i);
        CK(cudaGraphLaunch(graphExec, 0), K("switch_launch%d", i));
        CK(cudaDeviceSynchronize(), K("switch_sync%d", i));
    }

    CK(cudaGraphExecDestroy(graphExec), "switch_exec_destroy");
    CK(cudaGraphDestroy(graph), "switch_graph_destroy");
    CK(cudaFree(dPtr), "switch_free");

    printf("simpleSwitchGraph: Complete\n\n");
}

// ------------------------------------------------------------------ graph memory part

static const unsigned kThreads = 256, kBlocks = 132;

// A[i] = 3i + 1; one thread sets the IF condition from the parity of *dPtr.
__global__ void memInitKernel(uint32_t *a, size_t n, const char *dPtr,
                              cudaGraphConditionalHandle handle) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        a[i] = 3u * (uint32_t)i + 1u;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        cudaGraphSetConditional(handle, *dPtr & 0x01);
}

__global__ void addValue(uint32_t *p, size_t n, uint32_t v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] += v;
}

// Words not equal to 3i + 1 + *expected.
__global__ void checkPattern(const uint32_t *p, size_t n, const unsigned *expected, unsigned *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != 3u * (uint32_t)i + 1u + *expected)
            atomicAdd(bad, 1u);
}

// Words not equal to *expected.
__global__ void checkValue(const uint32_t *p, size_t n, const unsigned *expected, unsigned *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != *expected)
            atomicAdd(bad, 1u);
}

// doWhileLoopKernel without the printf.
__global__ void quietLoopKernel(char *dPtr, cudaGraphConditionalHandle handle) {
    if (--(*dPtr) == 0)
        cudaGraphSetConditional(handle, 0);
}

// capturedWhileKernel without the printf.
__global__ void quietCapturedWhileKernel(char *dPtr, cudaGraphConditionalHandle handle) {
    if (*dPtr)
        (*dPtr)--;
    cudaGraphSetConditional(handle, *dPtr);
}

struct Dev {
    char *dPtr = nullptr;
    unsigned *expected = nullptr, *bad = nullptr;
};

static cudaMemAllocNodeParams allocParams(size_t bytes) {
    cudaMemAllocNodeParams p;
    memset(&p, 0, sizeof p);
    p.bytesize = bytes;
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = 0;
    return p;
}

static cudaKernelNodeParams kernelParams(void *func, void **args, unsigned blocks,
                                         unsigned threads) {
    cudaKernelNodeParams k = {};
    k.func = func;
    k.gridDim = dim3(blocks, 1, 1);
    k.blockDim = dim3(threads, 1, 1);
    k.kernelParams = args;
    return k;
}

// Adds a conditional node of `type` with `size` bodies to `g` after `deps`.
static cudaGraphNodeParams addConditional(const char *key, cudaGraph_t g, cudaGraphNode_t *node,
                                          const cudaGraphNode_t *deps, size_t ndeps,
                                          cudaGraphConditionalHandle handle,
                                          cudaGraphConditionalNodeType type, unsigned size) {
    cudaGraphNodeParams c = {};
    c.type = cudaGraphNodeTypeConditional;
    c.conditional.handle = handle;
    c.conditional.type = type;
    c.conditional.size = size;
    CK(cudaGraphAddNode(node, g, deps, NULL, ndeps, &c), key);
    return c;
}

// Sets the device inputs on `s` before a launch: the byte, the expected value, the counter.
static void setInputs(const char *key, const Dev &d, cudaStream_t s, char byte, unsigned expected) {
    CK(cudaMemsetAsync(d.dPtr, byte, 1, s), K("%s_set_byte", key));
    CK(cudaMemcpyAsync(d.expected, &expected, sizeof expected, cudaMemcpyHostToDevice, s),
       K("%s_set_expected", key));
    CK(cudaMemsetAsync(d.bad, 0, sizeof(unsigned), s), K("%s_set_counter", key));
}

// Reads the counter of wrong words after the work in `s`; observed as `<key>_wrong_words`.
static void obsWrong(const char *key, const Dev &d, cudaStream_t s) {
    unsigned bad = ~0u;
    CK(cudaMemcpyAsync(&bad, d.bad, sizeof bad, cudaMemcpyDeviceToHost, s),
       K("%s_read_counter", key));
    CK(cudaStreamSynchronize(s), K("%s_read_sync", key));
    obs_int(K("%s_wrong_words", key), bad == ~0u ? -1LL : (long long)bad);
    OBS_PASS(K("%s_data", key), bad == 0);
}

// M1: alloc A -> init (IF condition) -> IF/ELSE (true: A += 1; false: A += 2) -> check -> free A.
static cudaGraphExec_t buildM1(const Dev &d, cudaGraph_t *out) {
    const size_t bytes = 8u << 20, n = bytes / 4;
    bool ifElse = g_driverVersion >= 12080;
    cudaGraph_t g = nullptr;
    CK(cudaGraphCreate(&g, 0), "m1_graph_create");
    cudaGraphConditionalHandle h;
    CK(cudaGraphConditionalHandleCreate(&h, g), "m1_handle_create");
    cudaMemAllocNodeParams ap = allocParams(bytes);
    cudaGraphNode_t nAlloc, nInit, nIf, nCheck, nFree;
    CK(cudaGraphAddMemAllocNode(&nAlloc, g, NULL, 0, &ap), "m1_alloc");
    uint32_t *a = (uint32_t *)ap.dptr;
    size_t nn = n;
    char *dPtr = d.dPtr;
    void *initArgs[4] = {&a, &nn, &dPtr, &h};
    cudaKernelNodeParams k = kernelParams((void *)memInitKernel, initArgs, kBlocks, kThreads);
    CK(cudaGraphAddKernelNode(&nInit, g, &nAlloc, 1, &k), "m1_init_node");
    cudaGraphNodeParams c =
        addConditional("m1_if_node", g, &nIf, &nInit, 1, h, cudaGraphCondTypeIf, ifElse ? 2 : 1);
    for (unsigned b = 0; b < (ifElse ? 2u : 1u); b++) {
        uint32_t v = b == 0 ? 1u : 2u;
        void *addArgs[3] = {&a, &nn, &v};
        cudaKernelNodeParams kb = kernelParams((void *)addValue, addArgs, kBlocks, kThreads);
        cudaGraphNode_t nb;
        CK(cudaGraphAddKernelNode(&nb, c.conditional.phGraph_out[b], NULL, 0, &kb),
           K("m1_body%u_node", b));
    }
    unsigned *expected = d.expected, *bad = d.bad;
    void *checkArgs[4] = {&a, &nn, &expected, &bad};
    k = kernelParams((void *)checkPattern, checkArgs, kBlocks, kThreads);
    CK(cudaGraphAddKernelNode(&nCheck, g, &nIf, 1, &k), "m1_check_node");
    CK(cudaGraphAddMemFreeNode(&nFree, g, &nCheck, 1, a), "m1_free");
    size_t numNodes = 0;
    CK(cudaGraphGetNodes(g, NULL, &numNodes), "m1_get_nodes");
    obs_int("m1_num_nodes", (long long)numNodes);
    cudaGraphExec_t e = nullptr;
    CK(cudaGraphInstantiate(&e, g, 0), "m1_instantiate");
    *out = g;
    return e;
}

static void launchM1(const char *key, cudaGraphExec_t e, const Dev &d, cudaStream_t s, char byte) {
    bool ifElse = g_driverVersion >= 12080;
    unsigned expected = (byte & 1) ? 1u : (ifElse ? 2u : 0u);
    setInputs(key, d, s, byte, expected);
    CK(cudaGraphLaunch(e, s), K("%s_launch", key));
    obsWrong(key, d, s);
}

// M2: alloc B -> memset B (0) -> do-WHILE [B += 1; counter--] -> check (B == iterations) -> free.
// Launched on the legacy stream, with cudaMemset/cudaMemcpy inputs, as the sample does.
static void runM2(const Dev &d) {
    const size_t bytes = 4u << 20, n = bytes / 4;
    cudaGraph_t g = nullptr;
    CK(cudaGraphCreate(&g, 0), "m2_graph_create");
    cudaGraphConditionalHandle h;
    CK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault), "m2_handle_create");
    cudaMemAllocNodeParams ap = allocParams(bytes);
    cudaGraphNode_t nAlloc, nMemset, nWhile, nCheck, nFree;
    CK(cudaGraphAddMemAllocNode(&nAlloc, g, NULL, 0, &ap), "m2_alloc");
    uint32_t *b = (uint32_t *)ap.dptr;
    cudaMemsetParams ms;
    memset(&ms, 0, sizeof ms);
    ms.dst = b;
    ms.value = 0;
    ms.elementSize = 4;
    ms.width = n;
    ms.height = 1;
    CK(cudaGraphAddMemsetNode(&nMemset, g, &nAlloc, 1, &ms), "m2_memset_node");
    cudaGraphNodeParams c =
        addConditional("m2_while_node", g, &nWhile, &nMemset, 1, h, cudaGraphCondTypeWhile, 1);
    cudaStream_t cs = nullptr;
    CK(cudaStreamCreate(&cs), "m2_body_stream_create");
    CK(cudaStreamBeginCaptureToGraph(cs, c.conditional.phGraph_out[0], nullptr, nullptr, 0,
                                     cudaStreamCaptureModeRelaxed),
       "m2_body_begin");
    addValue<<<kBlocks, kThreads, 0, cs>>>(b, n, 1u);
    quietLoopKernel<<<1, 1, 0, cs>>>(d.dPtr, h);
    CK(cudaGetLastError(), "m2_body_kernels");
    CK(cudaStreamEndCapture(cs, nullptr), "m2_body_end");
    CK(cudaStreamDestroy(cs), "m2_body_stream_destroy");
    size_t nn = n;
    unsigned *expected = d.expected, *bad = d.bad;
    void *checkArgs[4] = {&b, &nn, &expected, &bad};
    cudaKernelNodeParams k = kernelParams((void *)checkValue, checkArgs, kBlocks, kThreads);
    CK(cudaGraphAddKernelNode(&nCheck, g, &nWhile, 1, &k), "m2_check_node");
    CK(cudaGraphAddMemFreeNode(&nFree, g, &nCheck, 1, b), "m2_free");
    cudaGraphExec_t e = nullptr;
    CK(cudaGraphInstantiate(&e, g, 0), "m2_instantiate");
    const char counts[3] = {10, 3, 1};
    for (int i = 0; i < 3; i++) {
        unsigned expectedHost = (unsigned)counts[i];
        CK(cudaMemset(d.dPtr, counts[i], 1), K("m2_run%d_set_byte", i));
        CK(cudaMemcpy(d.expected, &expectedHost, sizeof expectedHost, cudaMemcpyHostToDevice),
           K("m2_run%d_set_expected", i));
        CK(cudaMemset(d.bad, 0, sizeof(unsigned)), K("m2_run%d_set_counter", i));
        printf("Host: Launching memory graph with loop counter set to %d\n", counts[i]);
        CK(cudaGraphLaunch(e, 0), K("m2_run%d_launch", i));
        CK(cudaDeviceSynchronize(), K("m2_run%d_sync", i));
        unsigned bad = ~0u;
        CK(cudaMemcpy(&bad, d.bad, sizeof bad, cudaMemcpyDeviceToHost), K("m2_run%d_read", i));
        obs_int(K("m2_run%d_wrong_words", i), bad == ~0u ? -1LL : (long long)bad);
        OBS_PASS(K("m2_run%d_data", i), bad == 0);
        obsByte(K("m2_run%d_counter_after", i), d.dPtr);
    }
    CK(cudaGraphExecDestroy(e), "m2_exec_destroy");
    CK(cudaGraphDestroy(g), "m2_graph_destroy");
}

// M3: capturedWhileGraph with graph memory: cudaMallocAsync C, memset C, kernel A (sets the
// condition), WHILE node added by hand [C += 1; counter--], check C, cudaFreeAsync C.
static void runM3(const Dev &d, cudaStream_t s) {
    const size_t bytes = 256u << 10, n = bytes / 4;
    cudaStreamCaptureStatus status;
    const cudaGraphNode_t *dependencies = nullptr;
    size_t numDependencies = 0;
    cudaGraph_t graph = nullptr;
    uint32_t *cbuf = nullptr;

    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "m3_begin");
    CK(cudaMallocAsync((void **)&cbuf, bytes, s), "m3_malloc_async");
    CK(cudaMemsetAsync(cbuf, 0, bytes, s), "m3_memset_async");
    CK(cudaStreamGetCaptureInfo(s, &status, NULL, &graph, &dependencies, NULL, &numDependencies),
       "m3_capture_info1");
    obs_int("m3_capture_info1_num_deps", (long long)numDependencies);
    cudaGraphConditionalHandle h;
    CK(cudaGraphConditionalHandleCreate(&h, graph), "m3_handle_create");
    quietCapturedWhileKernel<<<1, 1, 0, s>>>(d.dPtr, h);
    CK(cudaGetLastError(), "m3_kernel_a");
    CK(cudaStreamGetCaptureInfo(s, &status, NULL, &graph, &dependencies, NULL, &numDependencies),
       "m3_capture_info2");
    cudaGraphNode_t nWhile;
    cudaGraphNodeParams c = addConditional("m3_while_node", graph, &nWhile, dependencies,
                                           numDependencies, h, cudaGraphCondTypeWhile, 1);
    cudaGraph_t body = c.conditional.phGraph_out[0];
    CK(cudaStreamUpdateCaptureDependencies(s, &nWhile, NULL, 1, cudaStreamSetCaptureDependencies),
       "m3_update_deps");
    checkValue<<<kBlocks, kThreads, 0, s>>>(cbuf, n, d.expected, d.bad);
    CK(cudaGetLastError(), "m3_check_kernel");
    CK(cudaFreeAsync(cbuf, s), "m3_free_async");
    CK(cudaStreamEndCapture(s, &graph), "m3_end_capture");

    cudaStream_t bs = nullptr;
    CK(cudaStreamCreate(&bs), "m3_body_stream_create");
    CK(cudaStreamBeginCaptureToGraph(bs, body, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal),
       "m3_body_begin");
    addValue<<<kBlocks, kThreads, 0, bs>>>(cbuf, n, 1u);
    quietCapturedWhileKernel<<<1, 1, 0, bs>>>(d.dPtr, h);
    CK(cudaGetLastError(), "m3_body_kernels");
    CK(cudaStreamEndCapture(bs, nullptr), "m3_body_end");
    CK(cudaStreamDestroy(bs), "m3_body_stream_destroy");

    size_t numNodes = 0;
    CK(cudaGraphGetNodes(graph, NULL, &numNodes), "m3_get_nodes");
    obs_int("m3_num_nodes", (long long)numNodes);
    cudaGraphExec_t e = nullptr;
    CK(cudaGraphInstantiate(&e, graph, 0), "m3_instantiate");
    // Counter c: node A makes it c-1 (0 stays 0); the body then runs c-1 times.
    const char counts[3] = {0, 10, 4};
    for (int i = 0; i < 3; i++) {
        const char *key = K("m3_run%d", i);
        unsigned expected = counts[i] > 0 ? (unsigned)(counts[i] - 1) : 0u;
        setInputs(key, d, s, counts[i], expected);
        CK(cudaGraphLaunch(e, s), K("%s_launch", key));
        obsWrong(key, d, s);
        obsByte(K("%s_counter_after", key), d.dPtr);
    }
    CK(cudaGraphExecDestroy(e), "m3_exec_destroy");
    CK(cudaGraphDestroy(graph), "m3_graph_destroy");
}

// Instantiates g (a probe), launches and destroys the exec if it was made anyway.
static void probeInstantiate(const char *key, cudaGraph_t g, cudaStream_t s) {
    cudaGraphExec_t e = nullptr;
    cudaError_t rc = PROBE(cudaGraphInstantiate(&e, g, 0), K("%s_instantiate", key));
    if (rc == cudaSuccess && e) {
        PROBE(cudaGraphLaunch(e, s), K("%s_launch", key));
        PROBE(cudaStreamSynchronize(s), K("%s_sync", key));
        PROBE(cudaGraphExecDestroy(e), K("%s_exec_destroy", key));
    }
}

// A conditional node of `type` (size bodies) whose body `which` allocates, fills and frees.
static void refusalExplicit(const char *key, cudaGraphConditionalNodeType type, unsigned size,
                            unsigned which, cudaStream_t s) {
    cudaGraph_t g = nullptr;
    CK(cudaGraphCreate(&g, 0), K("%s_graph_create", key));
    // The default condition picks the allocating body, except for WHILE (0: the loop could never
    // end should the graph be accepted; the probe is about the instantiation).
    unsigned defaultValue = type == cudaGraphCondTypeWhile ? 0u
                            : type == cudaGraphCondTypeIf  ? (which == 0 ? 1u : 0u)
                                                           : which;
    cudaGraphConditionalHandle h;
    CK(cudaGraphConditionalHandleCreate(&h, g, defaultValue, cudaGraphCondAssignDefault),
       K("%s_handle_create", key));
    cudaGraphNode_t nc;
    cudaGraphNodeParams c =
        addConditional(K("%s_conditional_node", key), g, &nc, NULL, 0, h, type, size);
    cudaGraph_t body = c.conditional.phGraph_out[which];
    cudaMemAllocNodeParams ap = allocParams(1u << 20);
    cudaGraphNode_t na, nk, nf;
    PROBE(cudaGraphAddMemAllocNode(&na, body, NULL, 0, &ap), K("%s_body_alloc", key));
    uint32_t *p = (uint32_t *)ap.dptr;
    size_t n = (1u << 20) / 4;
    uint32_t v = 5;
    void *args[3] = {&p, &n, &v};
    cudaKernelNodeParams k = kernelParams((void *)addValue, args, kBlocks, kThreads);
    PROBE(cudaGraphAddKernelNode(&nk, body, &na, 1, &k), K("%s_body_kernel", key));
    PROBE(cudaGraphAddMemFreeNode(&nf, body, &nk, 1, p), K("%s_body_free", key));
    probeInstantiate(key, g, s);
    PROBE(cudaGraphDestroy(g), K("%s_graph_destroy", key));
}

static void runM4(const Dev &d, cudaStream_t s, cudaGraph_t m1Graph) {
    // (a) IF body allocating; (b) ELSE body; (c) SWITCH body 1; (d) WHILE body (explicit).
    refusalExplicit("m4_if_body", cudaGraphCondTypeIf, 1, 0, s);
    if (g_driverVersion >= 12080) {
        refusalExplicit("m4_else_body", cudaGraphCondTypeIf, 2, 1, s);
        refusalExplicit("m4_switch_body", cudaGraphCondTypeSwitch, 3, 1, s);
    }
    refusalExplicit("m4_while_body", cudaGraphCondTypeWhile, 1, 0, s);

    // (e) a WHILE body filled by a capture into it that allocates and frees.
    {
        const char *key = "m4_captured_body";
        cudaGraph_t g = nullptr;
        CK(cudaGraphCreate(&g, 0), K("%s_graph_create", key));
        cudaGraphConditionalHandle h;
        CK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault),
           K("%s_handle_create", key));
        cudaGraphNode_t nc;
        cudaGraphNodeParams c = addConditional(K("%s_conditional_node", key), g, &nc, NULL, 0, h,
                                               cudaGraphCondTypeWhile, 1);
        cudaStream_t bs = nullptr;
        CK(cudaStreamCreateWithFlags(&bs, cudaStreamNonBlocking), K("%s_stream_create", key));
        PROBE(cudaStreamBeginCaptureToGraph(bs, c.conditional.phGraph_out[0], nullptr, nullptr, 0,
                                            cudaStreamCaptureModeGlobal),
              K("%s_begin", key));
        uint32_t *p = nullptr;
        cudaError_t m =
            PROBE(cudaMallocAsync((void **)&p, 1u << 20, bs), K("%s_malloc_async", key));
        if (m == cudaSuccess) {
            addValue<<<kBlocks, kThreads, 0, bs>>>(p, (1u << 20) / 4, 1u);
            PROBE(cudaGetLastError(), K("%s_kernel", key));
            PROBE(cudaFreeAsync(p, bs), K("%s_free_async", key));
        }
        quietLoopKernel<<<1, 1, 0, bs>>>(d.dPtr, h);
        PROBE(cudaGetLastError(), K("%s_loop_kernel", key));
        cudaGraph_t ended = nullptr;
        PROBE(cudaStreamEndCapture(bs, &ended), K("%s_end", key));
        obs_yes(K("%s_end_returns_body", key), ended == c.conditional.phGraph_out[0]);
        CK(cudaStreamDestroy(bs), K("%s_stream_destroy", key));
        CK(cudaMemset(d.dPtr, 2, 1), K("%s_set_byte", key)); // the loop ends after 2 runs
        CK(cudaDeviceSynchronize(), K("%s_set_byte_sync", key));
        probeInstantiate(key, g, s);
        PROBE(cudaGraphDestroy(g), K("%s_graph_destroy", key));
    }

    // (f) an IF body whose free node frees the parent's allocation (§A3.12).
    {
        const char *key = "m4_body_frees_parent";
        cudaGraph_t g = nullptr;
        CK(cudaGraphCreate(&g, 0), K("%s_graph_create", key));
        cudaGraphConditionalHandle h;
        CK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault),
           K("%s_handle_create", key));
        cudaMemAllocNodeParams ap = allocParams(4u << 20);
        cudaGraphNode_t na, nc, nf;
        CK(cudaGraphAddMemAllocNode(&na, g, NULL, 0, &ap), K("%s_alloc", key));
        cudaGraphNodeParams c = addConditional(K("%s_conditional_node", key), g, &nc, &na, 1, h,
                                               cudaGraphCondTypeIf, 1);
        PROBE(cudaGraphAddMemFreeNode(&nf, c.conditional.phGraph_out[0], NULL, 0, ap.dptr),
              K("%s_body_free", key));
        probeInstantiate(key, g, s);
        PROBE(cudaGraphDestroy(g), K("%s_graph_destroy", key));
    }

    // (g) an IF body memset on the parent's allocation (accepted natively, §A1.17): alloc E ->
    // IF [memset E = 0x2a] -> check E -> free E, launched twice.
    {
        const char *key = "m4_body_memset";
        const size_t bytes = 4u << 20, n = bytes / 4;
        cudaGraph_t g = nullptr;
        CK(cudaGraphCreate(&g, 0), K("%s_graph_create", key));
        cudaGraphConditionalHandle h;
        CK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault),
           K("%s_handle_create", key));
        cudaMemAllocNodeParams ap = allocParams(bytes);
        cudaGraphNode_t na, nc, nm, nk, nf;
        CK(cudaGraphAddMemAllocNode(&na, g, NULL, 0, &ap), K("%s_alloc", key));
        uint32_t *e = (uint32_t *)ap.dptr;
        cudaGraphNodeParams c = addConditional(K("%s_conditional_node", key), g, &nc, &na, 1, h,
                                               cudaGraphCondTypeIf, 1);
        cudaMemsetParams ms;
        memset(&ms, 0, sizeof ms);
        ms.dst = e;
        ms.value = 0x2a;
        ms.elementSize = 4;
        ms.width = n;
        ms.height = 1;
        PROBE(cudaGraphAddMemsetNode(&nm, c.conditional.phGraph_out[0], NULL, 0, &ms),
              K("%s_body_memset_node", key));
        size_t nn = n;
        unsigned *expected = d.expected, *bad = d.bad;
        void *checkArgs[4] = {&e, &nn, &expected, &bad};
        cudaKernelNodeParams k = kernelParams((void *)checkValue, checkArgs, kBlocks, kThreads);
        CK(cudaGraphAddKernelNode(&nk, g, &nc, 1, &k), K("%s_check_node", key));
        CK(cudaGraphAddMemFreeNode(&nf, g, &nk, 1, e), K("%s_free", key));
        cudaGraphExec_t ex = nullptr;
        cudaError_t rc = PROBE(cudaGraphInstantiate(&ex, g, 0), K("%s_instantiate", key));
        for (int i = 0; rc == cudaSuccess && i < 2; i++) {
            const char *rk = K("%s_run%d", key, i);
            setInputs(rk, d, s, 0, 0x2au);
            CK(cudaGraphLaunch(ex, s), K("%s_launch", rk));
            obsWrong(rk, d, s);
        }
        if (ex)
            CK(cudaGraphExecDestroy(ex), K("%s_exec_destroy", key));
        CK(cudaGraphDestroy(g), K("%s_graph_destroy", key));
    }

    // (h) cloning M1's graph (memory nodes outside the bodies): refused natively (§A3.3).
    cudaGraph_t clone = nullptr;
    cudaError_t rc = PROBE(cudaGraphClone(&clone, m1Graph), "m4_clone_m1");
    if (rc == cudaSuccess && clone)
        PROBE(cudaGraphDestroy(clone), "m4_clone_m1_destroy");
    // A second instantiation of M1's graph while its exec lives: refused natively (§A3.7).
    cudaGraphExec_t second = nullptr;
    rc = PROBE(cudaGraphInstantiate(&second, m1Graph, 0), "m4_instantiate_m1_again");
    if (rc == cudaSuccess && second)
        PROBE(cudaGraphExecDestroy(second), "m4_instantiate_m1_again_destroy");
}

static void memoryPart(void) {
    printf("==== Graph memory with conditional nodes (not in the sample)\n");
    Dev d;
    CK(cudaMalloc((void **)&d.dPtr, 1), "mem_dptr_malloc");
    CK(cudaMalloc((void **)&d.expected, sizeof(unsigned)), "mem_expected_malloc");
    CK(cudaMalloc((void **)&d.bad, sizeof(unsigned)), "mem_counter_malloc");
    cudaStream_t s = nullptr;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "mem_stream_create");

    cudaGraph_t m1Graph = nullptr;
    cudaGraphExec_t m1 = buildM1(d, &m1Graph);
    launchM1("m1_cond0", m1, d, s, 0);
    launchM1("m1_cond1", m1, d, s, 1);
    launchM1("m1_cond2", m1, d, s, 2);

    runM2(d);
    runM3(d, s);
    runM4(d, s, m1Graph);

    // M1 again after the refusals: the exec still runs right.
    launchM1("m1_after_refusals_cond1", m1, d, s, 1);
    launchM1("m1_after_refusals_cond0", m1, d, s, 0);
    CK(cudaGraphExecDestroy(m1), "m1_exec_destroy");
    CK(cudaGraphDestroy(m1Graph), "m1_graph_destroy");

    // Everything freed and destroyed: a trim leaves no graph memory (§A11.1).
    CK(cudaDeviceSynchronize(), "mem_final_sync");
    CK(cudaDeviceGraphMemTrim(0), "mem_final_trim");
    SampleGraphMem a = sample_graph_mem(0, "mem_final");
    obs_yes("mem_final_used_zero", a.used == 0);
    obs_yes("mem_final_reserved_zero", a.reserved == 0);

    CK(cudaStreamDestroy(s), "mem_stream_destroy");
    CK(cudaFree(d.dPtr), "mem_dptr_free");
    CK(cudaFree(d.expected), "mem_expected_free");
    CK(cudaFree(d.bad), "mem_counter_free");
}

int main() {
    sample_find_device();

    cudaDriverGetVersion(&g_driverVersion);
    printf("Driver version is: %d.%d\n", g_driverVersion / 1000, (g_driverVersion % 100) / 10);
    info("driver_version", "%d", g_driverVersion);

    if (g_driverVersion < 12030) {
        printf("Skipping execution as driver does not support Graph Conditional Nodes\n");
        return 0;
    }

    simpleIfGraph();
    simpleDoWhileGraph();
    capturedWhileGraph();

    if (g_driverVersion < 12080) {
        printf("Skipping execution as driver does not support if/else and switch type Graph "
               "Conditional Nodes\n");
    } else {
        simpleIfElseGraph();
        simpleSwitchGraph();
    }

    memoryPart();
    return sample_finish("graphConditionalNodes");
}
