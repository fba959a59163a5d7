// Native probe: which cuGraphExecUpdate calls the driver accepts for graphs with memory nodes,
// with what result info, and, after an accepted update, which allocation the exec's kernels see
// and whether it is backed. One line per finding: `probe exec_update.<case>.<what> <value>`.
//
// Graphs are written as node lists: A = alloc node (the graph's size), E = empty node, T<k> /
// V<k> = kernel writing / verifying the allocation of node k (T* / V*: the case's `other`
// pointer), F<k> = free node of node k's allocation. Each node depends on the previous one,
// or on node j with a suffix @j (an edge added after all nodes exist when j comes later).
// Each case runs in a forked child so that a fault ends only that case.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__global__ void k_touch(uint32_t *p, size_t n, unsigned long long *seen) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *seen = (unsigned long long)p;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (uint32_t)i ^ 0x5a5a5a5au;
}

__global__ void k_verify(const uint32_t *p, size_t n, unsigned *bad) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != ((uint32_t)i ^ 0x5a5a5a5au))
            atomicAdd(bad, 1u);
}

static const char *cu_name(CUresult r) {
    const char *s = NULL;
    return cuGetErrorName(r, &s) == CUDA_SUCCESS ? s : "unknown";
}

static const char *g_case;
static void out(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(const char *what, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("probe exec_update.%s.%s ", g_case, what);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

struct Graph {
    CUgraph g;
    CUgraphNode node[8];
    void *ptr[8]; // allocation of each alloc node
    int count;
    size_t words;
    void *touched; // pointer the (first) T node writes
};

static unsigned long long *g_seen; // host-mapped
static unsigned *g_bad;            // host-mapped
static void *g_scratch;            // ordinary device memory, the `other` of plain graphs

static Graph build(const char *spec, size_t words, void *other) {
    Graph G;
    memset(&G, 0, sizeof G);
    G.words = words;
    cudaGraphCreate((cudaGraph_t *)&G.g, 0);
    int later_from[8], later_to[8], nlater = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        int i = G.count++;
        int dep = i - 1;
        char *at = strchr(tok, '@');
        if (at)
            dep = atoi(at + 1);
        bool late = dep >= i;
        size_t nd = dep >= 0 && !late ? 1 : 0;
        cudaGraphNode_t *deps = nd ? (cudaGraphNode_t *)&G.node[dep] : NULL;
        cudaGraphNode_t *self = (cudaGraphNode_t *)&G.node[i];
        char t = tok[1];
        void *p = t == '*' ? other : t >= '0' && t <= '7' ? G.ptr[t - '0'] : NULL;
        cudaError_t rc = cudaSuccess;
        if (tok[0] == 'A') {
            cudaMemAllocNodeParams ap = {};
            ap.poolProps.allocType = cudaMemAllocationTypePinned;
            ap.poolProps.location.type = cudaMemLocationTypeDevice;
            ap.poolProps.location.id = 0;
            ap.bytesize = words * sizeof(uint32_t);
            rc = cudaGraphAddMemAllocNode(self, (cudaGraph_t)G.g, deps, nd, &ap);
            G.ptr[i] = ap.dptr;
        } else if (tok[0] == 'E') {
            rc = cudaGraphAddEmptyNode(self, (cudaGraph_t)G.g, deps, nd);
        } else if (tok[0] == 'F') {
            rc = cudaGraphAddMemFreeNode(self, (cudaGraph_t)G.g, deps, nd, p);
        } else {
            uint32_t *w = (uint32_t *)p;
            size_t n = words;
            void *args_t[] = {&w, &n, &g_seen};
            void *args_v[] = {&w, &n, &g_bad};
            cudaKernelNodeParams k = {};
            k.func = tok[0] == 'T' ? (void *)k_touch : (void *)k_verify;
            k.gridDim = dim3(64);
            k.blockDim = dim3(256);
            k.kernelParams = tok[0] == 'T' ? args_t : args_v;
            rc = cudaGraphAddKernelNode(self, (cudaGraph_t)G.g, deps, nd, &k);
            if (tok[0] == 'T' && !G.touched)
                G.touched = p;
        }
        if (rc != cudaSuccess)
            printf("probe exec_update.%s.build_error %s node %d: %s\n", g_case, spec, i,
                   cudaGetErrorName(rc));
        if (late) {
            later_from[nlater] = dep;
            later_to[nlater++] = i;
        }
    }
    for (int j = 0; j < nlater; j++) {
        CUresult r =
            cuGraphAddDependencies(G.g, &G.node[later_from[j]], &G.node[later_to[j]], NULL, 1);
        if (r != CUDA_SUCCESS)
            printf("probe exec_update.%s.late_edge_error %s\n", g_case, cu_name(r));
    }
    (void)cudaGetLastError();
    return G;
}

static const char *role(CUgraphNode n, const Graph &a, const Graph &b) {
    static char buf[2][32];
    static int k;
    k ^= 1;
    snprintf(buf[k], sizeof buf[k], n ? "other" : "none");
    for (int i = 0; n && i < 8; i++) {
        if (n == a.node[i] && i < a.count)
            snprintf(buf[k], sizeof buf[k], "a.node%d", i);
        if (n == b.node[i] && i < b.count)
            snprintf(buf[k], sizeof buf[k], "b.node%d", i);
    }
    return buf[k];
}

// Launches e once; reports the codes, what the first T kernel saw and the wrong words.
static void launch(CUgraphExec e, CUstream s, const char *tag, const Graph &a, const Graph &b) {
    *g_seen = 0;
    *g_bad = 0;
    CUresult l = cuGraphLaunch(e, s);
    CUresult y = cuStreamSynchronize(s);
    unsigned long long seen = *g_seen;
    const char *who = seen == (unsigned long long)a.touched   ? "a_pointer"
                      : seen == (unsigned long long)b.touched ? "b_pointer"
                      : seen == 0                             ? "nothing"
                                                              : "other";
    out(tag, "launch=%s sync=%s kernel_saw=%s bad_words=%u", cu_name(l), cu_name(y), who, *g_bad);
}

// Whether a pointer lies in a mapped range now (cuMemGetAddressRange).
static void range(const char *tag, void *p) {
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult r = cuMemGetAddressRange(&base, &size, (CUdeviceptr)p);
    out(tag, "%s size=%zu", cu_name(r), size);
}

struct Case {
    const char *name, *a, *b;
    size_t a_words, b_words;
    int other;         // 0: scratch buffer, 1: A's first allocation (for B's T* / V*)
    bool launch_first; // launch A before the update (its unfreed allocations are then live)
};

static void run_case(const Case &c) {
    CUstream s;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    Graph a = build(c.a, c.a_words, g_scratch);
    Graph b = c.b ? build(c.b, c.b_words, c.other ? a.ptr[0] : g_scratch) : a;
    out("graphs", "a=\"%s\" (%zu words) b=\"%s\" (%zu words) a_alloc=%p b_alloc=%p", c.a, c.a_words,
        c.b ? c.b : "(a itself)", c.b_words, a.ptr[0], b.ptr[0]);
    CUgraphExec e = NULL;
    CUresult r = cuGraphInstantiate(&e, a.g, 0);
    out("instantiate_a", "%s", cu_name(r));
    if (c.launch_first)
        launch(e, s, "launch_a_before", a, b);
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    r = cuGraphExecUpdate(e, b.g, &info);
    out("update", "%s result=%d error_node=%s error_from=%s", cu_name(r), (int)info.result,
        role(info.errorNode, a, b), role(info.errorFromNode, a, b));
    launch(e, s, "launch_after_update", a, b);
    range("range_a_alloc", a.ptr[0]);
    range("range_b_alloc", b.ptr[0]);
    if (c.launch_first) { // free what A left live, then launch again
        for (int i = 0; i < a.count; i++)
            if (a.ptr[i])
                out("free_a_live", "%s", cu_name(cuMemFree((CUdeviceptr)a.ptr[i])));
        launch(e, s, "launch_after_free", a, b);
    }
    launch(e, s, "relaunch", a, b);
    out("exec_destroy", "%s", cu_name(cuGraphExecDestroy(e)));
    cuCtxSynchronize();
}

static const Case kCases[] = {
    {"same_graph", "A T0 V0 F0", NULL, 65536, 65536, 0, false},
    {"same_size", "A T0 V0 F0", "A T0 V0 F0", 65536, 65536, 0, false},
    {"grow", "A T0 V0 F0", "A T0 V0 F0", 65536, 1 << 20, 0, false},
    {"shrink", "A T0 V0 F0", "A T0 V0 F0", 1 << 20, 65536, 0, false},
    {"extra_alloc", "A T0 V0 F0", "A T0 V0 F0 A@0 F4", 65536, 65536, 0, false},
    {"kernels_use_a_pointer", "A T0 V0 F0", "A T* V* F0", 65536, 65536, 1, false},
    {"to_plain", "A T0 V0 F0", "E T* V* E", 65536, 65536, 0, false},
    {"from_plain", "E T* V* E", "A T0 V0 F0", 65536, 65536, 0, false},
    {"free_moved_order", "A T0 V0 F0 E", "A T0 V0 E F0", 65536, 65536, 0, false},
    {"free_moved_edge", "A T0 V0 F0 E", "A T0 V0 F0@4 E@2", 65536, 65536, 0, false},
    {"free_removed_empty", "A T0 V0 F0", "A T0 V0 E", 65536, 65536, 0, false},
    {"free_removed", "A T0 V0 F0", "A T0 V0", 65536, 65536, 0, false},
    {"escape_added", "A T0 V0 F0 E", "A T0 V0 F0 A", 65536, 65536, 0, false},
    {"live_unfreed", "A T0 V0", "A T0 V0", 65536, 65536, 0, true},
    {"live_unfreed_to_freeing", "A T0 V0 E", "A T0 V0 F0", 65536, 65536, 0, true},
};

int main() {
    for (const Case &c : kCases) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(60);
            g_case = c.name;
            cudaHostAlloc((void **)&g_seen, sizeof *g_seen, cudaHostAllocMapped);
            cudaHostAlloc((void **)&g_bad, sizeof *g_bad, cudaHostAllocMapped);
            cudaMalloc(&g_scratch, (1 << 20) * sizeof(uint32_t));
            run_case(c);
            fflush(stdout);
            exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            printf("probe exec_update.%s.child_status %d\n", c.name, status);
    }
    return 0;
}
