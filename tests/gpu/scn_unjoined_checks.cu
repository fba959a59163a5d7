// The unjoined-fork check graphmem makes at the end of a capture (shim/bridge/joins.c), for the
// markers the driver does not count as captured work, against the driver's own verdict.
//   wide_set     a side stream with captured alloc/fill/free rejoins the origin by an event; the
//                origin's dependency set is then SET to 300 empty nodes added through the graph,
//                followed by its current set. Natively joined; graphmem's search once seeded only
//                256 roots and ended with STREAM_CAPTURE_UNJOINED (H200, before c468759).
//   wide_add     the same with ADD (where the driver puts the new nodes is INFO).
//   lossy_*      a side stream allocates and never rejoins (natively UNJOINED); the origin's
//                set then carries edge data (SET with a kernel port or a programmatic edge, or a
//                wait on a programmatic event). graphmem asked the capture queries without edge
//                data, was refused (LOSSY_QUERY), skipped the check and ended with success (before
//                c468759).
//   side_dangling the side stream's set is SET to an empty node the program added through the graph
//                and never joined: the driver judges neither that node nor the allocation taken
//                out of the set (cuStreamUpdateCaptureDependencies), and ends with success;
//                graphmem judged the node and said UNJOINED (before the check kept to markers).
//   side_empty   control: the side stream's set SET to nothing.
#include "entries.cuh"

#include <vector>

static const size_t kBytes = 1u << 20, kWords = kBytes / sizeof(uint32_t);
static const int kWide = 300;

static __global__ void k_touch(unsigned *sink) {
    if (threadIdx.x == 0 && blockIdx.x == 0)
        atomicAdd(sink, 1u);
}

static std::vector<cudaGraphNode_t> frontier(cudaStream_t s, cudaGraph_t *graph,
                                             bool *has_edge_data = nullptr) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t *deps = nullptr;
    const cudaGraphEdgeData *edges = nullptr;
    size_t count = 0;
    cudaError_t rc = cudaStreamGetCaptureInfo(s, &st, nullptr, graph, &deps, &edges, &count);
    std::vector<cudaGraphNode_t> out;
    if (rc == cudaSuccess && deps)
        out.assign(deps, deps + count);
    if (has_edge_data) {
        *has_edge_data = false;
        for (size_t i = 0; edges && i < count; i++) {
            static const cudaGraphEdgeData zero = {};
            *has_edge_data |= memcmp(&edges[i], &zero, sizeof zero) != 0;
        }
    }
    (void)cudaGetLastError();
    return out;
}

struct Streams {
    cudaStream_t s0 = nullptr, s1 = nullptr, s2 = nullptr;
    cudaEvent_t ev0 = nullptr, e1 = nullptr, e2 = nullptr;
    uint32_t *ordinary = nullptr;
    unsigned *sink = nullptr;
    Streams() {
        for (cudaStream_t *s : {&s0, &s1, &s2})
            cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
        for (cudaEvent_t *e : {&ev0, &e1, &e2})
            cudaEventCreateWithFlags(e, cudaEventDisableTiming);
        cudaMalloc(&ordinary, kBytes);
        sink = new_counter();
    }
};

// Origin s0 forks s1, which allocates, fills and frees, then rejoins s0 by e1.
static void fork_alloc_join(Streams &x) {
    obs_rc("begin", cudaStreamBeginCapture(x.s0, cudaStreamCaptureModeGlobal));
    obs_rc("s0_fill", fill_words(x.s0, x.ordinary, kWords, 1));
    obs_rc("record_ev0", cudaEventRecord(x.ev0, x.s0));
    obs_rc("s1_wait_ev0", cudaStreamWaitEvent(x.s1, x.ev0, 0));
    void *p = nullptr;
    obs_rc("s1_malloc", cudaMallocAsync(&p, kBytes, x.s1));
    obs_rc("s1_fill", fill_words(x.s1, p, kWords, 2));
    obs_rc("s1_free", cudaFreeAsync(p, x.s1));
    obs_rc("record_e1", cudaEventRecord(x.e1, x.s1));
    obs_rc("s0_wait_e1", cudaStreamWaitEvent(x.s0, x.e1, 0));
}

static std::vector<cudaGraphNode_t> empties(cudaGraph_t g) {
    std::vector<cudaGraphNode_t> out(kWide);
    cudaError_t first = cudaSuccess;
    for (auto &n : out) {
        cudaError_t rc = cudaGraphAddEmptyNode(&n, g, nullptr, 0);
        if (first == cudaSuccess)
            first = rc;
    }
    obs_rc("add_empties", first);
    return out;
}

static void wide(bool set) {
    Streams x;
    fork_alloc_join(x);
    cudaGraph_t g = nullptr;
    std::vector<cudaGraphNode_t> now = frontier(x.s0, &g);
    obs_int("frontier_before", (long long)now.size());
    std::vector<cudaGraphNode_t> wide = empties(g);
    if (set) {
        wide.insert(wide.end(), now.begin(), now.end()); // the joined nodes come last
        obs_rc("update",
               cudaStreamUpdateCaptureDependencies(x.s0, wide.data(), nullptr, wide.size(),
                                                   cudaStreamSetCaptureDependencies));
    } else {
        obs_rc("update",
               cudaStreamUpdateCaptureDependencies(x.s0, wide.data(), nullptr, wide.size(),
                                                   cudaStreamAddCaptureDependencies));
    }
    std::vector<cudaGraphNode_t> after = frontier(x.s0, &g);
    obs_int("frontier_after", (long long)after.size());
    for (size_t i = 0; i < after.size(); i++)
        for (cudaGraphNode_t n : now)
            if (after[i] == n)
                info("joined_node_index", "%zu", i);
    end_and_run("", x.s0);
}

static void wide_set(void) {
    wide(true);
}
static void wide_add(void) {
    wide(false);
}

// s1 allocates and never rejoins; then the origin's set gets edge data.
static void fork_alloc_unjoined(Streams &x) {
    obs_rc("begin", cudaStreamBeginCapture(x.s0, cudaStreamCaptureModeGlobal));
    obs_rc("record_ev0", cudaEventRecord(x.ev0, x.s0));
    obs_rc("s1_wait_ev0", cudaStreamWaitEvent(x.s1, x.ev0, 0));
    void *p = nullptr;
    obs_rc("s1_malloc_unjoined", cudaMallocAsync(&p, kBytes, x.s1));
}

static void lossy_port(unsigned char type, unsigned char port) {
    Streams x;
    fork_alloc_unjoined(x);
    k_touch<<<1, 32, 0, x.s0>>>(x.sink);
    obs_rc("s0_kernel", cudaGetLastError());
    cudaGraph_t g = nullptr;
    std::vector<cudaGraphNode_t> now = frontier(x.s0, &g);
    std::vector<cudaGraphEdgeData> data(now.size());
    for (auto &d : data) {
        d = {};
        d.type = type;
        d.from_port = port;
    }
    obs_rc("update_with_edge_data",
           cudaStreamUpdateCaptureDependencies(x.s0, now.data(), data.data(), now.size(),
                                               cudaStreamSetCaptureDependencies));
    bool has = false;
    frontier(x.s0, &g, &has);
    obs_yes("origin_has_edge_data", has);
    end_and_run("", x.s0);
}

static void lossy_completion(void) {
    lossy_port(cudaGraphDependencyTypeDefault, cudaGraphKernelNodePortLaunchCompletion);
}
static void lossy_programmatic(void) {
    lossy_port(cudaGraphDependencyTypeProgrammatic, cudaGraphKernelNodePortProgrammatic);
}

// The origin waits on an event a kernel on s2 recorded with cudaLaunchAttributeProgrammaticEvent.
static void lossy_event(void) {
    Streams x;
    fork_alloc_unjoined(x);
    obs_rc("s2_wait_ev0", cudaStreamWaitEvent(x.s2, x.ev0, 0));
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeProgrammaticEvent;
    attr.val.programmaticEvent.event = x.e2;
    attr.val.programmaticEvent.flags = 0;
    attr.val.programmaticEvent.triggerAtBlockStart = 0;
    obs_rc("s2_launch_with_event", launch_with_attribute(x.s2, attr, k_touch, x.sink));
    obs_rc("s0_wait_e2", cudaStreamWaitEvent(x.s0, x.e2, 0));
    cudaGraph_t g = nullptr;
    bool has = false;
    frontier(x.s0, &g, &has);
    obs_yes("origin_has_edge_data", has);
    end_and_run("", x.s0);
}

static void side_set(bool dangling) {
    Streams x;
    fork_alloc_unjoined(x);
    cudaGraph_t g = nullptr;
    frontier(x.s0, &g);
    cudaGraphNode_t n = nullptr;
    if (dangling) {
        obs_rc("add_dangling", cudaGraphAddEmptyNode(&n, g, nullptr, 0));
        obs_rc("s1_set", cudaStreamUpdateCaptureDependencies(x.s1, &n, nullptr, 1,
                                                             cudaStreamSetCaptureDependencies));
    } else {
        obs_rc("s1_set", cudaStreamUpdateCaptureDependencies(x.s1, nullptr, nullptr, 0,
                                                             cudaStreamSetCaptureDependencies));
    }
    end_and_run("", x.s0);
}

static void side_dangling(void) {
    side_set(true);
}
static void side_empty(void) {
    side_set(false);
}

int main() {
    run_isolated("wide_set", wide_set);
    run_isolated("wide_add", wide_add);
    run_isolated("lossy_completion", lossy_completion);
    run_isolated("lossy_programmatic", lossy_programmatic);
    run_isolated("lossy_event", lossy_event);
    run_isolated("side_dangling", side_dangling);
    run_isolated("side_empty", side_empty);
    return 0;
}
