// Re-creation of NVIDIA cuda-samples Samples/3_CUDA_Features/jacobiCudaGraphs (main.cpp +
// jacobi.cu): the CPU Jacobi solve, then the three GPU methods the sample selects with
// -gpumethod (0: JacobiMethodGpuCudaGraphExecKernelSetParams, 1:
// JacobiMethodGpuCudaGraphExecUpdate, 2: JacobiMethodGpu without graphs), here all three in turn
// (or only the one given with -gpumethod=N), every CUDA code observed (the per-iteration calls as
// counts of failures), then the graph-memory twist with d_sum as a graph allocation made inside
// every graph:
//   T0 method 0 with an explicit alloc node (8 bytes) -> memset -> JacobiMethod -> memcpy to the
//      host -> free node, the kernel's arguments switched every iteration with
//      cudaGraphExecKernelNodeSetParams (arguments naming the graph's own allocation);
//   T1 method 1 with cudaMallocAsync/cudaFreeAsync of d_sum in every capture, so that every
//      cudaGraphExecUpdate moves the exec to a new graph's allocation (SEMANTICS.md §A3.10).
#include "samples.cuh"

#include <cooperative_groups.h>

#include <cmath>
#include <vector>

namespace cg = cooperative_groups;

#define N_ROWS 512
#define ROWS_PER_CTA 8

// ------------------------------------------------------------------ jacobi.cu

static __global__ void JacobiMethod(const float *A, const double *b, const float conv_threshold,
                                    double *x, double *x_new, double *sum) {
    // Handle to thread block group
    cg::thread_block cta = cg::this_thread_block();
    __shared__ double x_shared[N_ROWS]; // N_ROWS == n
    __shared__ double b_shared[ROWS_PER_CTA + 1];

    for (int i = threadIdx.x; i < N_ROWS; i += blockDim.x) {
        x_shared[i] = x[i];
    }

    if (threadIdx.x < ROWS_PER_CTA) {
        int k = threadIdx.x;
        for (int i = k + (blockIdx.x * ROWS_PER_CTA); (k < ROWS_PER_CTA) && (i < N_ROWS);
             k += ROWS_PER_CTA, i += ROWS_PER_CTA) {
            b_shared[i % (ROWS_PER_CTA + 1)] = b[i];
        }
    }

    cg::sync(cta);

    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);

    for (int k = 0, i = blockIdx.x * ROWS_PER_CTA; (k < ROWS_PER_CTA) && (i < N_ROWS); k++, i++) {
        double rowThreadSum = 0.0;
        for (int j = threadIdx.x; j < N_ROWS; j += blockDim.x) {
            rowThreadSum += (A[i * N_ROWS + j] * x_shared[j]);
        }

        for (int offset = tile32.size() / 2; offset > 0; offset /= 2) {
            rowThreadSum += tile32.shfl_down(rowThreadSum, offset);
        }

        if (tile32.thread_rank() == 0) {
            atomicAdd(&b_shared[i % (ROWS_PER_CTA + 1)], -rowThreadSum);
        }
    }

    cg::sync(cta);

    if (threadIdx.x < ROWS_PER_CTA) {
        cg::thread_block_tile<ROWS_PER_CTA> tile8 = cg::tiled_partition<ROWS_PER_CTA>(cta);
        double temp_sum = 0.0;

        int k = threadIdx.x;

        for (int i = k + (blockIdx.x * ROWS_PER_CTA); (k < ROWS_PER_CTA) && (i < N_ROWS);
             k += ROWS_PER_CTA, i += ROWS_PER_CTA) {
            double dx = b_shared[i % (ROWS_PER_CTA + 1)];
            dx /= A[i * N_ROWS + i];

            x_new[i] = (x_shared[i] + dx);
            temp_sum += fabs(dx);
        }

        for (int offset = tile8.size() / 2; offset > 0; offset /= 2) {
            temp_sum += tile8.shfl_down(temp_sum, offset);
        }

        if (tile8.thread_rank() == 0) {
            atomicAdd(sum, temp_sum);
        }
    }
}

// Thread block size for finalError kernel should be multiple of 32
static __global__ void finalError(double *x, double *g_sum) {
    // Handle to thread block group
    cg::thread_block cta = cg::this_thread_block();
    extern __shared__ double warpSum[];
    double sum = 0.0;

    int globalThreadId = blockIdx.x * blockDim.x + threadIdx.x;

    for (int i = globalThreadId; i < N_ROWS; i += blockDim.x * gridDim.x) {
        double d = x[i] - 1.0;
        sum += fabs(d);
    }

    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);

    for (int offset = tile32.size() / 2; offset > 0; offset /= 2) {
        sum += tile32.shfl_down(sum, offset);
    }

    if (tile32.thread_rank() == 0) {
        warpSum[threadIdx.x / warpSize] = sum;
    }

    cg::sync(cta);

    double blockSum = 0.0;
    if (threadIdx.x < (blockDim.x / warpSize)) {
        blockSum = warpSum[threadIdx.x];
    }

    if (threadIdx.x < 32) {
        for (int offset = tile32.size() / 2; offset > 0; offset /= 2) {
            blockSum += tile32.shfl_down(blockSum, offset);
        }
        if (tile32.thread_rank() == 0) {
            atomicAdd(g_sum, blockSum);
        }
    }
}

// Per-method tallies: codes of the per-iteration calls, iteration count, result.
struct Tally {
    int failedCalls = 0;
    cudaError_t firstError = cudaSuccess;
    int iterations = 0;
    int updateFallbacks = 0; // method 1: updates that were refused (and re-instantiated)
    void add(cudaError_t rc) {
        if (rc != cudaSuccess) {
            if (!failedCalls)
                firstError = rc;
            failedCalls++;
            (void)cudaGetLastError();
        }
    }
};

// The end of every GPU method: finalError on the latest x, observed under `tag`.
static double finish(const char *tag, Tally &t, int k, double *d_sum, double *xLatest,
                     cudaStream_t stream) {
    double sum = 0.0;
    dim3 nthreads(256, 1, 1);
    dim3 nblocks((N_ROWS / nthreads.x) + 1, 1, 1);
    t.add(cudaMemsetAsync(d_sum, 0, sizeof(double), stream));
    size_t sharedMemSize = ((nthreads.x / 32) + 1) * sizeof(double);
    finalError<<<nblocks, nthreads, sharedMemSize, stream>>>(xLatest, d_sum);
    t.add(cudaGetLastError());
    t.add(cudaMemcpyAsync(&sum, d_sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
    t.add(cudaStreamSynchronize(stream));
    printf("GPU iterations : %d\n", k + 1);
    printf("GPU error : %.3e\n", sum);
    t.iterations = k + 1;
    info(K("%s_gpu_error", tag), "%.3e", sum);
    return sum;
}

static double JacobiMethodGpuCudaGraphExecKernelSetParams(
    const char *tag, Tally &t, const float *A, const double *b, const float conv_threshold,
    const int max_iter, double *x, double *x_new, cudaStream_t stream, bool graphMemory) {
    // CTA size
    dim3 nthreads(256, 1, 1);
    // grid size
    dim3 nblocks((N_ROWS / ROWS_PER_CTA) + 2, 1, 1);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graphExec = NULL;

    double sum = 0.0;
    double *d_sum = NULL;       // the sample's cudaMalloc'd sum (finalError uses it)
    double *d_graph_sum = NULL; // what the graph's kernel adds into
    CK(cudaMalloc(&d_sum, sizeof(double)), K("%s_malloc_sum", tag));

    std::vector<cudaGraphNode_t> nodeDependencies;
    cudaGraphNode_t memcpyNode, jacobiKernelNode, memsetNode, allocNode = nullptr, freeNode;
    cudaMemcpy3DParms memcpyParams = {};
    cudaMemsetParams memsetParams = {};

    CK(cudaGraphCreate(&graph, 0), K("%s_graph_create", tag));
    if (graphMemory) {
        cudaMemAllocNodeParams allocParams;
        memset(&allocParams, 0, sizeof allocParams);
        allocParams.bytesize = sizeof(double);
        allocParams.poolProps.allocType = cudaMemAllocationTypePinned;
        allocParams.poolProps.location.type = cudaMemLocationTypeDevice;
        allocParams.poolProps.location.id = 0;
        CK(cudaGraphAddMemAllocNode(&allocNode, graph, NULL, 0, &allocParams),
           K("%s_alloc_node", tag));
        d_graph_sum = (double *)allocParams.dptr;
        nodeDependencies.push_back(allocNode);
    } else {
        d_graph_sum = d_sum;
    }

    memsetParams.dst = (void *)d_graph_sum;
    memsetParams.value = 0;
    memsetParams.pitch = 0;
    // elementSize can be max 4 bytes, so we take sizeof(float) and width=2
    memsetParams.elementSize = sizeof(float);
    memsetParams.width = 2;
    memsetParams.height = 1;

    CK(cudaGraphAddMemsetNode(&memsetNode, graph, nodeDependencies.data(), nodeDependencies.size(),
                              &memsetParams),
       K("%s_memset_node", tag));
    nodeDependencies.clear();
    nodeDependencies.push_back(memsetNode);

    cudaKernelNodeParams NodeParams0 = {}, NodeParams1 = {};
    NodeParams0.func = (void *)JacobiMethod;
    NodeParams0.gridDim = nblocks;
    NodeParams0.blockDim = nthreads;
    NodeParams0.sharedMemBytes = 0;
    void *kernelArgs0[6] = {(void *)&A, (void *)&b,     (void *)&conv_threshold,
                            (void *)&x, (void *)&x_new, (void *)&d_graph_sum};
    NodeParams0.kernelParams = kernelArgs0;
    NodeParams0.extra = NULL;

    CK(cudaGraphAddKernelNode(&jacobiKernelNode, graph, nodeDependencies.data(),
                              nodeDependencies.size(), &NodeParams0),
       K("%s_kernel_node", tag));

    nodeDependencies.clear();
    nodeDependencies.push_back(jacobiKernelNode);

    memcpyParams.srcArray = NULL;
    memcpyParams.srcPos = make_cudaPos(0, 0, 0);
    memcpyParams.srcPtr = make_cudaPitchedPtr(d_graph_sum, sizeof(double), 1, 1);
    memcpyParams.dstArray = NULL;
    memcpyParams.dstPos = make_cudaPos(0, 0, 0);
    memcpyParams.dstPtr = make_cudaPitchedPtr(&sum, sizeof(double), 1, 1);
    memcpyParams.extent = make_cudaExtent(sizeof(double), 1, 1);
    memcpyParams.kind = cudaMemcpyDeviceToHost;

    CK(cudaGraphAddMemcpyNode(&memcpyNode, graph, nodeDependencies.data(), nodeDependencies.size(),
                              &memcpyParams),
       K("%s_memcpy_node", tag));
    if (graphMemory)
        CK(cudaGraphAddMemFreeNode(&freeNode, graph, &memcpyNode, 1, d_graph_sum),
           K("%s_free_node", tag));

    CK(cudaGraphInstantiate(&graphExec, graph, 0), K("%s_instantiate", tag));

    NodeParams1.func = (void *)JacobiMethod;
    NodeParams1.gridDim = nblocks;
    NodeParams1.blockDim = nthreads;
    NodeParams1.sharedMemBytes = 0;
    void *kernelArgs1[6] = {(void *)&A,     (void *)&b, (void *)&conv_threshold,
                            (void *)&x_new, (void *)&x, (void *)&d_graph_sum};
    NodeParams1.kernelParams = kernelArgs1;
    NodeParams1.extra = NULL;

    int k = 0;
    for (k = 0; k < max_iter; k++) {
        t.add(cudaGraphExecKernelNodeSetParams(graphExec, jacobiKernelNode,
                                               ((k & 1) == 0) ? &NodeParams0 : &NodeParams1));
        t.add(cudaGraphLaunch(graphExec, stream));
        t.add(cudaStreamSynchronize(stream));
        if (t.failedCalls > 16)
            break; // a broken run would otherwise spin through max_iter failing calls

        if (sum <= conv_threshold) {
            sum = finish(tag, t, k, d_sum, ((k & 1) == 0) ? x_new : x, stream);
            break;
        }
    }

    CK(cudaGraphExecDestroy(graphExec), K("%s_exec_destroy", tag));
    CK(cudaGraphDestroy(graph), K("%s_graph_destroy", tag));
    CK(cudaFree(d_sum), K("%s_free_sum", tag));
    return sum;
}

static double JacobiMethodGpuCudaGraphExecUpdate(const char *tag, Tally &t, const float *A,
                                                 const double *b, const float conv_threshold,
                                                 const int max_iter, double *x, double *x_new,
                                                 cudaStream_t stream, bool graphMemory) {
    // CTA size
    dim3 nthreads(256, 1, 1);
    // grid size
    dim3 nblocks((N_ROWS / ROWS_PER_CTA) + 2, 1, 1);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t graphExec = NULL;

    double sum = 0.0;
    double *d_sum = NULL;
    CK(cudaMalloc(&d_sum, sizeof(double)), K("%s_malloc_sum", tag));
    int firstFallback = -1;
    cudaGraphExecUpdateResult firstResult = cudaGraphExecUpdateSuccess;

    int k = 0;
    for (k = 0; k < max_iter; k++) {
        double *d_graph_sum = d_sum;
        t.add(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        if (graphMemory)
            t.add(cudaMallocAsync(&d_graph_sum, sizeof(double), stream));
        t.add(cudaMemsetAsync(d_graph_sum, 0, sizeof(double), stream));
        if ((k & 1) == 0) {
            JacobiMethod<<<nblocks, nthreads, 0, stream>>>(A, b, conv_threshold, x, x_new,
                                                           d_graph_sum);
        } else {
            JacobiMethod<<<nblocks, nthreads, 0, stream>>>(A, b, conv_threshold, x_new, x,
                                                           d_graph_sum);
        }
        t.add(cudaGetLastError());
        t.add(cudaMemcpyAsync(&sum, d_graph_sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
        if (graphMemory)
            t.add(cudaFreeAsync(d_graph_sum, stream));
        t.add(cudaStreamEndCapture(stream, &graph));

        if (graphExec == NULL) {
            t.add(cudaGraphInstantiate(&graphExec, graph, 0));
        } else {
            cudaGraphExecUpdateResultInfo updateResultInfo_out;
            memset(&updateResultInfo_out, 0, sizeof updateResultInfo_out);
            cudaError_t rc = cudaGraphExecUpdate(graphExec, graph, &updateResultInfo_out);
            (void)cudaGetLastError();
            if (updateResultInfo_out.result != cudaGraphExecUpdateSuccess) {
                if (firstFallback < 0) {
                    firstFallback = k;
                    firstResult = updateResultInfo_out.result;
                    obs(K("%s_first_update_code", tag), cudaGetErrorName(rc));
                }
                t.updateFallbacks++;
                if (graphExec != NULL) {
                    t.add(cudaGraphExecDestroy(graphExec));
                }
                printf("k = %d graph update failed with error - %d\n", k,
                       updateResultInfo_out.result);
                t.add(cudaGraphInstantiate(&graphExec, graph, 0));
            } else {
                t.add(rc);
            }
        }
        t.add(cudaGraphLaunch(graphExec, stream));
        t.add(cudaStreamSynchronize(stream));
        // The sample keeps every captured graph; with graph memory the graph is destroyed once
        // the exec took it over (an exec outlives its graph, SEMANTICS.md §A9.2).
        if (graphMemory)
            t.add(cudaGraphDestroy(graph));
        if (t.failedCalls > 16)
            break;

        if (sum <= conv_threshold) {
            sum = finish(tag, t, k, d_sum, ((k & 1) == 0) ? x_new : x, stream);
            break;
        }
    }
    obs_int(K("%s_first_fallback_iteration", tag), firstFallback);
    obs_int(K("%s_first_fallback_result", tag), (long long)firstResult);

    if (graphExec)
        CK(cudaGraphExecDestroy(graphExec), K("%s_exec_destroy", tag));
    CK(cudaFree(d_sum), K("%s_free_sum", tag));
    return sum;
}

static double JacobiMethodGpu(const char *tag, Tally &t, const float *A, const double *b,
                              const float conv_threshold, const int max_iter, double *x,
                              double *x_new, cudaStream_t stream) {
    // CTA size
    dim3 nthreads(256, 1, 1);
    // grid size
    dim3 nblocks((N_ROWS / ROWS_PER_CTA) + 2, 1, 1);
    double sum = 0.0;
    double *d_sum = NULL;
    CK(cudaMalloc(&d_sum, sizeof(double)), K("%s_malloc_sum", tag));
    int k = 0;

    for (k = 0; k < max_iter; k++) {
        t.add(cudaMemsetAsync(d_sum, 0, sizeof(double), stream));
        if ((k & 1) == 0) {
            JacobiMethod<<<nblocks, nthreads, 0, stream>>>(A, b, conv_threshold, x, x_new, d_sum);
        } else {
            JacobiMethod<<<nblocks, nthreads, 0, stream>>>(A, b, conv_threshold, x_new, x, d_sum);
        }
        t.add(cudaGetLastError());
        t.add(cudaMemcpyAsync(&sum, d_sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
        t.add(cudaStreamSynchronize(stream));
        if (t.failedCalls > 16)
            break;

        if (sum <= conv_threshold) {
            sum = finish(tag, t, k, d_sum, ((k & 1) == 0) ? x_new : x, stream);
            break;
        }
    }
    CK(cudaFree(d_sum), K("%s_free_sum", tag));
    return sum;
}

// ------------------------------------------------------------------ main.cpp

void createLinearSystem(float *A, double *b) {
    int i, j;
    for (i = 0; i < N_ROWS; i++) {
        b[i] = 2.0 * N_ROWS;
        for (j = 0; j < N_ROWS; j++)
            A[i * N_ROWS + j] = 1.0;
        A[i * N_ROWS + i] = N_ROWS + 1.0;
    }
}

int JacobiMethodCPU(float *A, double *b, float conv_threshold, int max_iter, double *sum,
                    double *x) {
    double *x_new;
    x_new = (double *)calloc(N_ROWS, sizeof(double));
    int k;

    for (k = 0; k < max_iter; k++) {
        *sum = 0.0;
        for (int i = 0; i < N_ROWS; i++) {
            double temp_dx = b[i];
            for (int j = 0; j < N_ROWS; j++)
                temp_dx -= A[i * N_ROWS + j] * x[j];
            temp_dx /= A[i * N_ROWS + i];
            x_new[i] += temp_dx;
            *sum += fabs(temp_dx);
        }

        for (int i = 0; i < N_ROWS; i++)
            x[i] = x_new[i];

        if (*sum <= conv_threshold)
            break;
    }
    free(x_new);
    return k + 1;
}

static const char *kMethodNames[4] = {"JacobiMethodGpuCudaGraphExecKernelSetParams",
                                      "JacobiMethodGpuCudaGraphExecUpdate", "JacobiMethodGpu",
                                      "(graph-memory twist)"};

int main(int argc, char **argv) {
    int only = -1;
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "-gpumethod=", 11) == 0)
            only = atoi(argv[i] + 11);
    if (only < -1 || only > 2) {
        printf("Error: gpumethod must be 0 or 1 or 2, gpumethod=%d is invalid\n", only);
        exit(EXIT_FAILURE);
    }

    sample_find_device();

    double *b = NULL;
    float *A = NULL;
    CK(cudaMallocHost(&b, N_ROWS * sizeof(double)), "setup_malloc_host_b");
    memset(b, 0, N_ROWS * sizeof(double));
    CK(cudaMallocHost(&A, N_ROWS * N_ROWS * sizeof(float)), "setup_malloc_host_a");
    memset(A, 0, N_ROWS * N_ROWS * sizeof(float));

    createLinearSystem(A, b);
    double *x = NULL;
    // start with array of all zeroes
    x = (double *)calloc(N_ROWS, sizeof(double));

    float conv_threshold = 1.0e-2;
    int max_iter = 4 * N_ROWS * N_ROWS;
    int cnt = 0;

    double sumCPU = 0.0;
    cnt = JacobiMethodCPU(A, b, conv_threshold, max_iter, &sumCPU, x);

    double sum = 0.0;
    // Compute error
    for (int i = 0; i < N_ROWS; i++) {
        double d = x[i] - 1.0;
        sum += fabs(d);
    }
    printf("CPU iterations : %d\n", cnt);
    printf("CPU error : %.3e\n", sum);
    obs_int("cpu_iterations", cnt);
    info("cpu_error", "%.3e", sum);

    float *d_A;
    double *d_b, *d_x, *d_x_new;
    cudaStream_t stream1 = nullptr;
    CK(cudaStreamCreateWithFlags(&stream1, cudaStreamNonBlocking), "setup_stream_create");
    CK(cudaMalloc(&d_b, sizeof(double) * N_ROWS), "setup_malloc_b");
    CK(cudaMalloc(&d_A, sizeof(float) * N_ROWS * N_ROWS), "setup_malloc_a");
    CK(cudaMalloc(&d_x, sizeof(double) * N_ROWS), "setup_malloc_x");
    CK(cudaMalloc(&d_x_new, sizeof(double) * N_ROWS), "setup_malloc_x_new");

    CK(cudaMemcpyAsync(d_A, A, sizeof(float) * N_ROWS * N_ROWS, cudaMemcpyHostToDevice, stream1),
       "setup_memcpy_a");
    CK(cudaMemcpyAsync(d_b, b, sizeof(double) * N_ROWS, cudaMemcpyHostToDevice, stream1),
       "setup_memcpy_b");

    // Methods 0, 1, 2 (the sample's), then 3 and 4 (method 0 and 1 with graph memory).
    const char *tags[5] = {"m0", "m1", "m2", "t0", "t1"};
    for (int m = 0; m < 5; m++) {
        if (only >= 0 && m != only)
            continue;
        int method = m < 3 ? m : m - 3;
        bool graphMemory = m >= 3;
        printf("\n---- gpumethod=%d %s%s%s\n", method, kMethodNames[method], graphMemory ? " " : "",
               graphMemory ? kMethodNames[3] : "");
        // Every method starts from x = 0, as in a fresh run of the sample.
        CK(cudaMemsetAsync(d_x, 0, sizeof(double) * N_ROWS, stream1), K("%s_memset_x", tags[m]));
        CK(cudaMemsetAsync(d_x_new, 0, sizeof(double) * N_ROWS, stream1),
           K("%s_memset_x_new", tags[m]));
        CK(cudaStreamSynchronize(stream1), K("%s_setup_sync", tags[m]));

        cudaEvent_t start, stop;
        cudaEventCreate(&start);
        cudaEventCreate(&stop);
        cudaEventRecord(start, stream1);
        Tally t;
        double sumGPU = 0.0;
        if (method == 0) {
            sumGPU = JacobiMethodGpuCudaGraphExecKernelSetParams(
                tags[m], t, d_A, d_b, conv_threshold, max_iter, d_x, d_x_new, stream1, graphMemory);
        } else if (method == 1) {
            sumGPU = JacobiMethodGpuCudaGraphExecUpdate(
                tags[m], t, d_A, d_b, conv_threshold, max_iter, d_x, d_x_new, stream1, graphMemory);
        } else {
            sumGPU = JacobiMethodGpu(tags[m], t, d_A, d_b, conv_threshold, max_iter, d_x, d_x_new,
                                     stream1);
        }
        cudaEventRecord(stop, stream1);
        cudaEventSynchronize(stop);
        float ms = 0;
        cudaEventElapsedTime(&ms, start, stop);
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        printf("GPU Processing time: %f (ms)\n", ms);
        info(K("%s_gpu_ms", tags[m]), "%f", ms);

        obs_int(K("%s_failed_calls", tags[m]), t.failedCalls);
        obs(K("%s_first_error", tags[m]), cudaGetErrorName(t.firstError));
        obs_int(K("%s_gpu_iterations", tags[m]), t.iterations);
        obs_int(K("%s_update_fallbacks", tags[m]), t.updateFallbacks);
        obs_yes(K("%s_iterations_match_cpu", tags[m]), t.iterations == cnt);
        sample_unexpected += t.failedCalls;
        bool passed = t.iterations > 0 && fabs(sum - sumGPU) < conv_threshold;
        printf("&&&& jacobiCudaGraphs %s\n", passed ? "PASSED" : "FAILED");
        OBS_PASS(K("%s_verdict", tags[m]), passed);
    }

    CK(cudaDeviceGraphMemTrim(0), "final_trim");
    SampleGraphMem gm = sample_graph_mem(0, "final");
    obs_yes("final_graph_used_zero", gm.used == 0);

    CK(cudaFree(d_b), "cleanup_free_b");
    CK(cudaFree(d_A), "cleanup_free_a");
    CK(cudaFree(d_x), "cleanup_free_x");
    CK(cudaFree(d_x_new), "cleanup_free_x_new");
    CK(cudaFreeHost(b), "cleanup_free_host_b");
    CK(cudaFreeHost(A), "cleanup_free_host_a");
    free(x);
    CK(cudaStreamDestroy(stream1), "cleanup_stream_destroy");
    return sample_finish("jacobiCudaGraphs");
}
