// A captured allocation and a captured free whose stream waits on an event that a kernel launch
// recorded with cudaLaunchAttributeProgrammaticEvent: the capture's frontier then carries a
// programmatic edge (from the kernel's programmatic port), which the driver takes into its own
// memory node. graphmem's marker is an empty node, which refuses such an edge (graphmem once
// failed the cudaMallocAsync with cudaErrorInvalidValue here); it now takes a full edge instead.
// s1 launches k_spin with a programmatic event e1; s2 waits on e1, allocates 1 MiB, fills it and
// copies it into a result outside the graph; s1 waits for that, launches k_spin with a
// programmatic event e2; s2 waits on e2 and frees; s1 joins s2. Natively and under graphmem: every
// call's result, the launch, and the result's words.
#include "common.cuh"

static const size_t kBytes = 1u << 20, kWords = kBytes / sizeof(uint32_t);

static __global__ void k_spin(unsigned *sink) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        atomicAdd(sink, 1u);
}

static cudaError_t launch_with_event(cudaStream_t s, cudaEvent_t event, unsigned *sink) {
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeProgrammaticEvent;
    attr.val.programmaticEvent.event = event;
    attr.val.programmaticEvent.flags = 0;
    attr.val.programmaticEvent.triggerAtBlockStart = 0;
    return launch_with_attribute(s, attr, k_spin, sink);
}

int main() {
    require_graph_memory();
    cudaStream_t s1, s2;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEvent_t e1, e2, copied, done;
    for (cudaEvent_t *e : {&e1, &e2, &copied, &done})
        cudaEventCreateWithFlags(e, cudaEventDisableTiming);
    unsigned *sink = new_counter();
    uint32_t *result = nullptr;
    cudaMalloc(&result, kBytes);
    cudaMemset(result, 0, kBytes);

    obs_rc("begin", cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    obs_rc("launch_e1", launch_with_event(s1, e1, sink));
    obs_rc("wait_e1", cudaStreamWaitEvent(s2, e1, 0));
    void *p = nullptr;
    cudaError_t alloc = cudaMallocAsync(&p, kBytes, s2);
    obs_rc("alloc_after_programmatic_edge", alloc);
    if (alloc == cudaSuccess) {
        obs_rc("fill", fill_words(s2, p, kWords, 77));
        k_add<<<kGrid, kBlock, 0, s2>>>(result, (const uint32_t *)p, kWords, 0);
        obs_rc("copy", cudaGetLastError());
    }
    obs_rc("record_copied", cudaEventRecord(copied, s2));
    obs_rc("wait_copied", cudaStreamWaitEvent(s1, copied, 0));
    obs_rc("launch_e2", launch_with_event(s1, e2, sink));
    obs_rc("wait_e2", cudaStreamWaitEvent(s2, e2, 0));
    if (alloc == cudaSuccess)
        obs_rc("free_after_programmatic_edge", cudaFreeAsync(p, s2));
    obs_rc("record_done", cudaEventRecord(done, s2));
    obs_rc("join", cudaStreamWaitEvent(s1, done, 0));
    cudaGraph_t g = nullptr;
    obs_rc("end", cudaStreamEndCapture(s1, &g));
    cudaGraphExec_t e = nullptr;
    if (g) {
        obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
        if (e) {
            obs_rc("launch", cudaGraphLaunch(e, s1));
            obs_rc("sync", cudaStreamSynchronize(s1));
            obs_ok("result", check_words(s1, result, kWords, 77));
            info_attrs("after_launch", read_attrs());
            cudaGraphExecDestroy(e);
        }
        cudaGraphDestroy(g);
    }
    (void)cudaGetLastError();
    for (cudaEvent_t ev : {e1, e2, copied, done})
        cudaEventDestroy(ev);
    cudaFree(result);
    cudaFree(sink);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    return 0;
}
