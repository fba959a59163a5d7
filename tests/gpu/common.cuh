// Shared helpers for the GPU conformance scenarios.
//
// Every scenario prints one line per observation: `OBS <key> <value>` lines are compared between
// a native run and a run under graphmem, `INFO <key> <value>` lines (byte counts, addresses) are
// only logged. Observations never abort the program: a surprise is printed and the scenario goes
// on, so one run on the GPU machine reports everything at once.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static inline void obs(const char *key, const char *value) {
    printf("OBS %s %s\n", key, value);
    fflush(stdout);
}

static inline void info(const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("INFO %s ", key);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

// The error name, then clear the runtime's last error so that a non-sticky error observed here
// does not leak into the next observation.
static inline void obs_rc(const char *key, cudaError_t rc) {
    obs(key, cudaGetErrorName(rc));
    (void)cudaGetLastError();
}

// A driver API call's error name.
static inline void obs_cu(const char *key, CUresult r) {
    const char *name = "unknown";
    cuGetErrorName(r, &name);
    obs(key, name);
}

static inline void obs_ok(const char *key, bool ok) {
    obs(key, ok ? "ok" : "bad");
}

static inline void obs_yes(const char *key, bool yes) {
    obs(key, yes ? "yes" : "no");
}

static inline void obs_same(const char *key, const void *a, const void *b) {
    obs(key, a == b ? "same" : "different");
}

static inline void obs_int(const char *key, long long v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    obs(key, buf);
}

// Nodes of `g` that no node depends on: one for the chain a single capturing stream makes, where a
// node a capture left out of the stream's order is one more. 0 when the graph cannot be read.
static inline size_t graph_leaves(cudaGraph_t g) {
    size_t n = 0, count = 0;
    if (cudaGraphGetNodes(g, nullptr, &n) != cudaSuccess || n == 0)
        return 0;
    cudaGraphNode_t *nodes = (cudaGraphNode_t *)calloc(n, sizeof *nodes);
    if (nodes == nullptr || cudaGraphGetNodes(g, nodes, &n) != cudaSuccess) {
        free(nodes);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        size_t dependents = 0;
        if (cudaGraphNodeGetDependentNodes(nodes[i], nullptr, nullptr, &dependents) !=
            cudaSuccess) {
            count = 0;
            break;
        }
        count += dependents == 0;
    }
    free(nodes);
    return count;
}

// `<round>_<what>` observed (`what` alone for an empty `round`): the keys of a scenario's rounds.
static inline const char *round_key(char *key, size_t size, const char *round, const char *what) {
    snprintf(key, size, "%s%s%s", round, round[0] ? "_" : "", what);
    return key;
}

static inline void obs_key(const char *round, const char *what, cudaError_t rc) {
    char key[96];
    obs_rc(round_key(key, sizeof key, round, what), rc);
}

static inline void obs_key_int(const char *round, const char *what, long long v) {
    char key[96];
    obs_int(round_key(key, sizeof key, round, what), v);
}

// Exit 77 (CTest's skip code) when the machine cannot run graph memory at all: no device, or a
// device without stream-ordered memory pools (graph memory needs them, Programming Guide 16.2).
static inline void require_graph_memory(void) {
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0) {
        printf("SKIP no CUDA device: %s\n", rc != cudaSuccess ? cudaGetErrorName(rc) : "count 0");
        exit(77);
    }
    int pools = 0;
    cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0);
    if (!pools) {
        printf("SKIP device 0 has no memory pool support\n");
        exit(77);
    }
    cudaSetDevice(0);
}

// Exit 77 unless devices 0 and 1 both serve graph memory and can access each other's memory
// (the peer-access scenarios; written for two devices, the ones past 1 stay unused).
static inline void require_two_peer_devices(void) {
    require_graph_memory();
    int count = 0, pools = 0, peer01 = 0, peer10 = 0;
    cudaGetDeviceCount(&count);
    if (count < 2) {
        printf("SKIP needs two CUDA devices, found %d\n", count);
        exit(77);
    }
    cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 1);
    cudaDeviceCanAccessPeer(&peer01, 0, 1);
    cudaDeviceCanAccessPeer(&peer10, 1, 0);
    if (!pools || !peer01 || !peer10) {
        printf("SKIP devices 0 and 1 lack memory pools or peer access\n");
        exit(77);
    }
}

// Words [0, n) of p hold v + i, read back through the host (works for memory of any device).
static inline bool host_check(const void *p, size_t n, uint32_t v) {
    uint32_t *h = (uint32_t *)malloc(n * sizeof(uint32_t));
    bool ok = h && cudaMemcpy(h, p, n * sizeof(uint32_t), cudaMemcpyDefault) == cudaSuccess;
    for (size_t i = 0; ok && i < n; i++)
        ok = h[i] == v + (uint32_t)i;
    free(h);
    (void)cudaGetLastError();
    return ok;
}

// ---- kernels: every data check goes through a device-side counter of mismatching words ----

static __global__ void k_fill(uint32_t *p, size_t n, uint32_t v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v + (uint32_t)i;
}

static __global__ void k_check(const uint32_t *p, size_t n, uint32_t v, unsigned *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != v + (uint32_t)i)
            atomicAdd(bad, 1u);
}

// A zeroed device counter of wrong words (NULL without device memory).
static inline unsigned *new_counter(void) {
    unsigned *d = nullptr;
    if (cudaMalloc(&d, sizeof(unsigned)) == cudaSuccess)
        cudaMemset(d, 0, sizeof(unsigned));
    (void)cudaGetLastError();
    return d;
}

// Every word holds `v` (what a 32-bit memset wrote).
static __global__ void k_check_value(const uint32_t *p, size_t n, uint32_t v, unsigned *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != v)
            atomicAdd(bad, 1u);
}

// dst[i] = src[i] + add: with k_fill(src, v) the result matches k_check(dst, v + add).
static __global__ void k_add(uint32_t *dst, const uint32_t *src, size_t n, uint32_t add) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i] + add;
}

static const unsigned kGrid = 64, kBlock = 256;

// One device counter for host-side checks, allocated outside any graph.
static unsigned *g_bad = nullptr;

// Checks that words [0, n) of p hold v + i, ordered after the work already in `s`. Returns false
// (and prints the error) when the check itself could not run, e.g. after a sticky fault.
static inline bool check_words(cudaStream_t s, const void *p, size_t n, uint32_t v) {
    cudaError_t rc = cudaSuccess;
    if (!g_bad)
        rc = cudaMalloc(&g_bad, sizeof(unsigned));
    unsigned bad = 1;
    if (rc == cudaSuccess)
        rc = cudaMemsetAsync(g_bad, 0, sizeof(unsigned), s);
    if (rc == cudaSuccess) {
        k_check<<<kGrid, kBlock, 0, s>>>((const uint32_t *)p, n, v, g_bad);
        rc = cudaGetLastError();
    }
    if (rc == cudaSuccess)
        rc = cudaMemcpyAsync(&bad, g_bad, sizeof bad, cudaMemcpyDeviceToHost, s);
    if (rc == cudaSuccess)
        rc = cudaStreamSynchronize(s);
    if (rc != cudaSuccess) {
        info("check_error", "%s", cudaGetErrorName(rc));
        return false;
    }
    return bad == 0;
}

// Words of `p` (`bytes`) not equal to `v`, checked after the work already in `s`; -1 when the
// check could not run (e.g. after a sticky fault).
static inline long long wrong_words(cudaStream_t s, const void *p, size_t bytes, uint32_t v) {
    unsigned *bad = nullptr, h = 1;
    cudaError_t rc = cudaMalloc(&bad, sizeof h);
    if (rc == cudaSuccess)
        rc = cudaMemsetAsync(bad, 0, sizeof h, s);
    if (rc == cudaSuccess) {
        k_check_value<<<kGrid, kBlock, 0, s>>>((const uint32_t *)p, bytes / 4, v, bad);
        rc = cudaStreamSynchronize(s);
    }
    if (rc == cudaSuccess)
        rc = cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(bad);
    (void)cudaGetLastError();
    return rc == cudaSuccess ? (long long)h : -1LL;
}

// Launches `e` on `s` and waits, observed as `<prefix>_launch` (cudaErrorInvalidValue without an
// exec) and `<prefix>_sync`; run_graph_observed instantiates `g` first (`<prefix>_instantiate`).
static inline void launch_observed(const char *prefix, cudaGraphExec_t e, cudaStream_t s) {
    obs_key(prefix, "launch", e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    obs_key(prefix, "sync", cudaStreamSynchronize(s));
}

static inline void run_graph_observed(const char *prefix, cudaGraph_t g, cudaStream_t s) {
    cudaGraphExec_t e = nullptr;
    obs_key(prefix, "instantiate", cudaGraphInstantiate(&e, g, 0));
    launch_observed(prefix, e, s);
    if (e)
        cudaGraphExecDestroy(e);
}

// An IF node in `g` (condition 1 by default), observed as `key`; its body (nullptr on failure).
static inline cudaGraph_t add_if_node(cudaGraph_t g, const char *key) {
    cudaGraphConditionalHandle h;
    cudaError_t rc = cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault);
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeConditional;
    np.conditional.handle = h;
    np.conditional.type = cudaGraphCondTypeIf;
    np.conditional.size = 1;
    cudaGraphNode_t node;
    if (rc == cudaSuccess)
        rc = cudaGraphAddNode(&node, g, nullptr, nullptr, 0, &np);
    obs_rc(key, rc);
    return rc == cudaSuccess ? np.conditional.phGraph_out[0] : nullptr;
}

// The graph of the child-graph node `child` set to `graph` through the node alone
// (cudaGraphNodeSetParams).
static inline cudaError_t
set_child_graph(cudaGraphNode_t child, cudaGraph_t graph,
                cudaGraphChildGraphNodeOwnership own = cudaGraphChildGraphOwnershipClone) {
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeGraph;
    np.graph.graph = graph;
    np.graph.ownership = own;
    return cudaGraphNodeSetParams(child, &np);
}

// Instantiates `g` into *x, launches it on `s` and waits for it: the first error (*x stays
// nullptr when the instantiation failed).
static inline cudaError_t instantiate_and_run(cudaGraph_t g, cudaStream_t s, cudaGraphExec_t *x) {
    *x = nullptr;
    cudaError_t rc = cudaGraphInstantiate(x, g, 0);
    if (rc == cudaSuccess)
        rc = cudaGraphLaunch(*x, s);
    if (rc == cudaSuccess)
        rc = cudaStreamSynchronize(s);
    return rc;
}

// Ends the capture on `s` into *g and observes "capture" (`rc`, the first error of the captured
// calls) and "end_capture"; true when both succeeded and the graph can be used.
static inline bool end_capture_observed(cudaStream_t s, cudaError_t rc, cudaGraph_t *g) {
    *g = nullptr;
    cudaError_t end = cudaStreamEndCapture(s, g);
    obs_rc("capture", rc);
    obs_rc("end_capture", end);
    return rc == cudaSuccess && end == cudaSuccess;
}

// Captures, instantiates and launches on `s` a graph that allocates and frees `bytes`, observed
// as `key` (the first error, or success). Under graphmem the first launch of an exec unmaps the
// scratch pages a cover left idle (they would otherwise keep backing another graph's allocation
// that never launched); natively it is an ordinary graph launch.
static inline void launch_unrelated_graph(cudaStream_t s, size_t bytes, const char *key) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    void *p = nullptr;
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess) {
        cudaError_t captured = cudaMallocAsync(&p, bytes, s);
        if (captured == cudaSuccess)
            captured = cudaFreeAsync(p, s);
        rc = cudaStreamEndCapture(s, &g);
        rc = captured != cudaSuccess ? captured : rc;
    }
    if (rc == cudaSuccess)
        rc = cudaGraphInstantiate(&e, g, 0);
    if (rc == cudaSuccess)
        rc = cudaGraphLaunch(e, s);
    if (rc == cudaSuccess)
        rc = cudaStreamSynchronize(s);
    obs_rc(key, rc);
    if (e)
        cudaGraphExecDestroy(e);
    if (g)
        cudaGraphDestroy(g);
}

// P, touching `a` (an allocation of G1 that escapes it), instantiated before G1 ever launched (an
// unrelated graph launches first: under graphmem it unmaps the scratch pages an earlier cover
// left idle); then G1 launches, P runs, and every word of `a` (`bytes`) must be `value`; `a` is
// freed. Observed as `<round>_unrelated`, `<round>_p_instantiate_before_g1_launch`,
// `<round>_g1_instantiate`, `_g1_launch`, `_p_launch`, `_sync`, `_a_wrong_words` (no prefix
// for an empty `round`).
static inline void run_before_allocating_graph(const char *round, cudaGraph_t p, cudaGraph_t g1,
                                               void *a, size_t bytes, uint32_t value,
                                               cudaStream_t s) {
    char key[96];
    launch_unrelated_graph(s, bytes, round_key(key, sizeof key, round, "unrelated"));
    cudaGraphExec_t ep = nullptr, e1 = nullptr;
    obs_key(round, "p_instantiate_before_g1_launch", cudaGraphInstantiate(&ep, p, 0));
    obs_key(round, "g1_instantiate", cudaGraphInstantiate(&e1, g1, 0));
    obs_key(round, "g1_launch", e1 ? cudaGraphLaunch(e1, s) : cudaErrorInvalidValue);
    obs_key(round, "p_launch", ep ? cudaGraphLaunch(ep, s) : cudaErrorInvalidValue);
    obs_key(round, "sync", cudaStreamSynchronize(s));
    obs_key_int(round, "a_wrong_words", e1 && ep ? wrong_words(s, a, bytes, value) : -1LL);
    if (e1)
        cudaFree(a);
    for (cudaGraphExec_t e : {ep, e1})
        if (e)
            cudaGraphExecDestroy(e);
}

// A call a GLOBAL capture forbids (cudaMalloc) invalidates the capture on `s`, which then ends
// with no graph (§A4.10): observed as "forbidden_malloc", "end_capture", "end_capture_graph_null".
static inline void fail_global_capture(cudaStream_t s) {
    void *forbidden = nullptr;
    obs_rc("forbidden_malloc", cudaMalloc(&forbidden, 64));
    cudaGraph_t made = nullptr;
    obs_rc("end_capture", cudaStreamEndCapture(s, &made));
    obs_yes("end_capture_graph_null", made == nullptr);
    (void)cudaGetLastError();
    if (forbidden)
        cudaFree(forbidden);
}

static inline cudaError_t fill_words(cudaStream_t s, void *p, size_t n, uint32_t v) {
    k_fill<<<kGrid, kBlock, 0, s>>>((uint32_t *)p, n, v);
    return cudaGetLastError();
}

// kernel<<<1, 32, 0, s>>>(sink) launched with one launch attribute (cudaLaunchKernelEx).
static inline cudaError_t launch_with_attribute(cudaStream_t s, cudaLaunchAttribute attr,
                                                void (*kernel)(unsigned *), unsigned *sink) {
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1);
    config.blockDim = dim3(32);
    config.stream = s;
    config.attrs = &attr;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, sink);
}

// ---- explicit graph construction ----

static inline cudaMemAllocNodeParams alloc_params(size_t bytes) {
    cudaMemAllocNodeParams p = {};
    p.poolProps.allocType = cudaMemAllocationTypePinned;
    p.poolProps.handleTypes = cudaMemHandleTypeNone;
    p.poolProps.location.type = cudaMemLocationTypeDevice;
    p.poolProps.location.id = 0;
    p.bytesize = bytes;
    return p;
}

// A memset of `bytes` at p, 32-bit words of `value`, one row.
static inline cudaMemsetParams memset_words(void *p, size_t bytes, uint32_t value) {
    cudaMemsetParams m = {};
    m.dst = p;
    m.elementSize = 4;
    m.width = bytes / 4;
    m.height = 1;
    m.value = value;
    return m;
}

// The same memset as generic node parameters (cudaGraphAddNode, cudaGraphNodeSetParams,
// cudaGraphExecNodeSetParams).
static inline cudaGraphNodeParams memset_node_params(void *p, size_t bytes, uint32_t value) {
    cudaGraphNodeParams n = {};
    n.type = cudaGraphNodeTypeMemset;
    cudaMemsetParams m = memset_words(p, bytes, value);
    n.memset.dst = m.dst;
    n.memset.pitch = m.pitch;
    n.memset.value = m.value;
    n.memset.elementSize = m.elementSize;
    n.memset.width = m.width;
    n.memset.height = m.height;
    return n;
}

static inline cudaError_t add_alloc(cudaGraphNode_t *node, cudaGraph_t g,
                                    const cudaGraphNode_t *deps, size_t ndeps, size_t bytes,
                                    void **dptr) {
    cudaMemAllocNodeParams p = alloc_params(bytes);
    cudaError_t rc = cudaGraphAddMemAllocNode(node, g, deps, ndeps, &p);
    *dptr = p.dptr;
    return rc;
}

static inline cudaError_t add_fill(cudaGraphNode_t *node, cudaGraph_t g,
                                   const cudaGraphNode_t *deps, size_t ndeps, void *p, size_t n,
                                   uint32_t v) {
    uint32_t *words = (uint32_t *)p;
    void *args[] = {&words, &n, &v};
    cudaKernelNodeParams k = {};
    k.func = (void *)k_fill;
    k.gridDim = dim3(kGrid);
    k.blockDim = dim3(kBlock);
    k.kernelParams = args;
    return cudaGraphAddKernelNode(node, g, deps, ndeps, &k);
}

static inline cudaError_t add_add(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                                  size_t ndeps, void *dst, const void *src, size_t n,
                                  uint32_t add) {
    uint32_t *d = (uint32_t *)dst;
    const uint32_t *s = (const uint32_t *)src;
    void *args[] = {&d, &s, &n, &add};
    cudaKernelNodeParams k = {};
    k.func = (void *)k_add;
    k.gridDim = dim3(kGrid);
    k.blockDim = dim3(kBlock);
    k.kernelParams = args;
    return cudaGraphAddKernelNode(node, g, deps, ndeps, &k);
}

// A kernel node checking the n words at p: k_check (the k_fill pattern from v) or, given as
// `kernel`, k_check_value (every word v).
static inline cudaError_t add_check(cudaGraphNode_t *node, cudaGraph_t g,
                                    const cudaGraphNode_t *deps, size_t ndeps, const void *p,
                                    size_t n, uint32_t v, unsigned *bad,
                                    const void *kernel = (const void *)k_check) {
    const uint32_t *words = (const uint32_t *)p;
    void *args[] = {&words, &n, &v, &bad};
    cudaKernelNodeParams k = {};
    k.func = (void *)kernel;
    k.gridDim = dim3(kGrid);
    k.blockDim = dim3(kBlock);
    k.kernelParams = args;
    return cudaGraphAddKernelNode(node, g, deps, ndeps, &k);
}

// Up to `cap` nodes of g; 0 when g is NULL or the query fails (after an earlier failure in the
// scenario), so that callers never walk an unfilled array.
static inline size_t graph_nodes(cudaGraph_t g, cudaGraphNode_t *out, size_t cap) {
    size_t n = cap;
    if (!g || cudaGraphGetNodes(g, out, &n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n < cap ? n : cap;
}

// ---- graph memory attributes ----

struct GraphMemAttrs {
    uint64_t used, used_high, reserved, reserved_high;
};

static inline GraphMemAttrs read_attrs_of(int device) {
    GraphMemAttrs a = {0, 0, 0, 0};
    cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemCurrent, &a.used);
    cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &a.used_high);
    cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemCurrent, &a.reserved);
    cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &a.reserved_high);
    return a;
}

static inline GraphMemAttrs read_attrs(void) {
    return read_attrs_of(0);
}

static inline void info_attrs(const char *when, GraphMemAttrs a) {
    char key[96];
    snprintf(key, sizeof key, "%s_attrs", when);
    info(key, "used=%llu used_high=%llu reserved=%llu reserved_high=%llu",
         (unsigned long long)a.used, (unsigned long long)a.used_high,
         (unsigned long long)a.reserved, (unsigned long long)a.reserved_high);
}

static inline void reset_highs(void) {
    uint64_t zero = 0;
    cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero);
    cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &zero);
}

// Observations that hold whatever the allocator's granularity: prefixed keys such as
// `<when>_used_ge_need yes`.
static inline void obs_attr_relations(const char *when, GraphMemAttrs a, uint64_t need) {
    char key[96];
    snprintf(key, sizeof key, "%s_used_ge_need", when);
    obs_yes(key, a.used >= need);
    snprintf(key, sizeof key, "%s_reserved_ge_used", when);
    obs_yes(key, a.reserved >= a.used);
    snprintf(key, sizeof key, "%s_highs_ge_currents", when);
    obs_yes(key, a.used_high >= a.used && a.reserved_high >= a.reserved);
    info_attrs(when, a);
}
