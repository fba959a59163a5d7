// Node destruction on one thread while other threads capture graphs with memory nodes and destroy
// them. The driver refuses to destroy a node of a graph holding memory nodes (§A3.1) and has no
// query for a node's graph, so graphmem looks for the node in every graph holding markers; those
// graphs are other threads', and one destroyed while graphmem reads it is a use after free in the
// driver. Thread 0 destroys nodes of graphs of its own: a plain graph (taken) and a graph that
// captured an allocation (refused). The others capture, instantiate, launch and destroy graphs of
// allocations, round after round.
#include "common.cuh"

#include <pthread.h>

#include <atomic>

static const int kCapturers = 3, kRounds = 400;

__global__ void touch(int *p) {
    if (p)
        p[threadIdx.x] = threadIdx.x;
}

static std::atomic<int> capturers_left{kCapturers};
static std::atomic<int> failures{0};

static void note(cudaError_t rc) {
    if (rc != cudaSuccess && failures.fetch_add(1) == 0)
        fprintf(stderr, "error: %s\n", cudaGetErrorName(rc));
}

// A graph of one allocation, a kernel on it and its free, captured on `s`.
static cudaGraph_t capture_allocation(cudaStream_t s) {
    note(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    int *p = nullptr;
    note(cudaMallocAsync((void **)&p, 4096, s));
    touch<<<1, 32, 0, s>>>(p);
    note(cudaFreeAsync(p, s));
    cudaGraph_t g = nullptr;
    note(cudaStreamEndCapture(s, &g));
    return g;
}

static void *capturer(void *) {
    cudaStream_t s;
    note(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int round = 0; round < kRounds && failures.load() == 0; round++) {
        cudaGraph_t g = capture_allocation(s);
        if (round % 8 == 0) {
            cudaGraphExec_t exec = nullptr;
            note(cudaGraphInstantiate(&exec, g, 0));
            note(cudaGraphLaunch(exec, s));
            note(cudaStreamSynchronize(s));
            note(cudaGraphExecDestroy(exec));
        }
        note(cudaGraphDestroy(g));
    }
    note(cudaStreamDestroy(s));
    capturers_left.fetch_sub(1);
    return nullptr;
}

int main() {
    note(cudaFree(nullptr));
    cudaStream_t s;
    note(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    pthread_t threads[kCapturers];
    for (int i = 0; i < kCapturers; i++)
        pthread_create(&threads[i], nullptr, capturer, nullptr);
    int plain_taken = 0, plain_other = 0, memory_refused = 0, memory_other = 0, rounds = 0;
    while (capturers_left.load() > 0 || rounds < 50) {
        rounds++;
        // A plain graph: two empty nodes, the second after the first; its node may go.
        cudaGraph_t plain;
        note(cudaGraphCreate(&plain, 0));
        cudaGraphNode_t first, second;
        note(cudaGraphAddEmptyNode(&first, plain, nullptr, 0));
        note(cudaGraphAddEmptyNode(&second, plain, &first, 1));
        cudaError_t rc = cudaGraphDestroyNode(second);
        (void)cudaGetLastError();
        (rc == cudaSuccess ? plain_taken : plain_other)++;
        note(cudaGraphDestroy(plain));
        // A graph holding an allocation and its free: its kernel may not go.
        cudaGraph_t memory = capture_allocation(s);
        size_t n = 0;
        note(cudaGraphGetNodes(memory, nullptr, &n));
        cudaGraphNode_t nodes[8];
        n = n < 8 ? n : 8;
        note(cudaGraphGetNodes(memory, nodes, &n));
        cudaGraphNode_t kernel = nullptr;
        for (size_t i = 0; i < n; i++) {
            cudaGraphNodeType type;
            note(cudaGraphNodeGetType(nodes[i], &type));
            if (type == cudaGraphNodeTypeKernel)
                kernel = nodes[i];
        }
        rc = kernel ? cudaGraphDestroyNode(kernel) : cudaErrorUnknown;
        (void)cudaGetLastError();
        (rc == cudaErrorNotSupported ? memory_refused : memory_other)++;
        note(cudaGraphDestroy(memory));
    }
    for (int i = 0; i < kCapturers; i++)
        pthread_join(threads[i], nullptr);
    note(cudaStreamDestroy(s));
    obs_int("errors", failures.load());
    obs_int("plain_destroys_refused", plain_other);
    obs_int("memory_destroys_not_refused", memory_other);
    obs_yes("plain_destroys_made", plain_taken > 0);
    obs_yes("memory_destroys_refused", memory_refused > 0);
    info("rounds", "%d", rounds);
    return 0;
}
