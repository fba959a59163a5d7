// Two threads enqueue into one capturing stream at once (RELAXED mode), round after round: one
// allocates, writes a signature into the allocation, checks it and frees it (cudaMallocAsync /
// cudaFreeAsync), the other launches kernels. Every captured operation depends on the stream's
// whole frontier and replaces it, so the graph of one stream is a chain with a single node
// without dependents, whichever thread enqueued what. Under graphmem a captured allocation is a
// marker made in three driver calls; work the other thread enqueued between its first and its
// last would drop out of the stream's order (a second leaf), and a free marker not after its
// allocation's last use lets the next allocation take bytes still in use (wrong words when the
// graph runs). shim/README.md, "One capturing stream, several threads".
#include "common.cuh"

#include <pthread.h>

#include <atomic>

static const int kOps = 48, kRounds = 300, kWords = 256;

__global__ void write_signature(uint32_t *p, uint32_t signature) {
    for (int i = threadIdx.x; i < kWords; i += blockDim.x)
        p[i] = signature + i;
}

__global__ void check_signature(const uint32_t *p, uint32_t signature, unsigned *bad) {
    // A while for another kernel to overwrite the words, were the bytes shared.
    for (int spin = 0; spin < 200; spin++)
        __nanosleep(100);
    for (int i = threadIdx.x; i < kWords; i += blockDim.x)
        if (p[i] != signature + i)
            atomicAdd(bad, 1u);
}

__global__ void other_work(unsigned *count) {
    atomicAdd(count, 1u);
}

static cudaStream_t s;
static unsigned *bad, *count;
static std::atomic<int> go{0}, done{0};
static std::atomic<int> failures{0};
static std::atomic<long> kernel_launches{0}; // made with <<<>>>: the test counts them at the driver

static void note(cudaError_t rc) {
    if (rc != cudaSuccess && failures.fetch_add(1) == 0)
        fprintf(stderr, "error: %s\n", cudaGetErrorName(rc));
}

static void *allocator(void *) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    note(cudaThreadExchangeStreamCaptureMode(&mode));
    for (int round = 1;; round++) {
        int now;
        while ((now = go.load()) < round)
            if (now < 0)
                return nullptr;
        for (int i = 0; i < kOps; i++) {
            uint32_t *p = nullptr;
            note(cudaMallocAsync((void **)&p, kWords * sizeof(uint32_t), s));
            uint32_t signature = (uint32_t)(round * kOps + i) << 9;
            write_signature<<<1, 64, 0, s>>>(p, signature);
            check_signature<<<1, 64, 0, s>>>(p, signature, bad);
            kernel_launches.fetch_add(2);
            note(cudaFreeAsync(p, s));
        }
        done.fetch_add(1);
    }
}

int main() {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    note(cudaThreadExchangeStreamCaptureMode(&mode));
    note(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    note(cudaMallocManaged(&bad, sizeof *bad));
    note(cudaMallocManaged(&count, sizeof *count));
    *bad = *count = 0;
    pthread_t thread;
    pthread_create(&thread, nullptr, allocator, nullptr);
    int forked = 0, launched = 0;
    for (int round = 1; round <= kRounds && failures.load() == 0; round++) {
        note(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
        go.store(round);
        for (int i = 0; i < kOps; i++)
            other_work<<<1, 1, 0, s>>>(count);
        kernel_launches.fetch_add(kOps);
        while (done.load() < round)
            ;
        cudaGraph_t graph = nullptr;
        note(cudaStreamEndCapture(s, &graph));
        if (graph == nullptr)
            break;
        forked += graph_leaves(graph) > 1;
        // Every tenth graph runs: a shared byte shows as a wrong word.
        if (round % 10 == 0) {
            cudaGraphExec_t exec = nullptr;
            note(cudaGraphInstantiate(&exec, graph, 0));
            note(cudaGraphLaunch(exec, s));
            note(cudaStreamSynchronize(s));
            note(cudaGraphExecDestroy(exec));
            launched++;
        }
        note(cudaGraphDestroy(graph));
    }
    go.store(-1);
    pthread_join(thread, nullptr);
    note(cudaDeviceSynchronize());
    obs_int("errors", failures.load());
    obs_int("captures_with_more_than_one_leaf", forked);
    obs_int("wrong_words", *bad);
    obs_int("other_work_ran", *count == (unsigned)(launched * kOps));
    info("graphs_launched", "%d", launched);
    info("kernel_launches", "%ld", kernel_launches.load());
    return 0;
}
