// Probe (natively and under graphmem; helper-62, run on the H200 in the eighteenth session): 12 of
// 73 OBS lines differ. Natively the queries fail on a graph address (type INVALID_VALUE, range
// NOT_FOUND) at every stage the probe tried outside a launch, uploaded or launched included;
// under graphmem they describe its mapping (device memory, mapped), from the capture on.
// tests/SEMANTICS.md §A14.2.
//
// Pointer queries on graph addresses at each point of their life (SEMANTICS §A14.2 "before the
// first launch, while live, after the free, after exec destruction": unverified). Queries only,
// nothing is written outside a lifetime. Graph G1 (captured): P = 8 MiB allocated, filled, freed
// in the graph; E = 8 MiB allocated, filled, escaping. Graph G2 (captured): M = 4 MiB allocated,
// memset by a CAPTURED cudaMemsetAsync, freed. At every stage, for P, E and M:
// cuPointerGetAttribute(MEMORY_TYPE) code, MAPPED (cuPointerGetAttributes, which never fails),
// cuMemGetAddressRange code and whether the range covers [p, p + bytes), cudaPointerGetAttributes
// code and type; and whether graph memory Used is non-zero.
//
// Expected natively: the driver reserves each graph allocation's VA when its node is made and maps
// physical memory at upload / first launch (§A5.2, §A6.5); whether it answers pointer queries
// before that is what this measures. Under graphmem, the address is a reserved-but-unmapped VMM
// range until the first upload/launch (core/engine/engine_part.c maps at first launch), so queries
// on P and E before it should fail (INVALID_VALUE, type unregistered); but M, whose captured memset
// had the scratch cover (shim/hooks/copy_hooks.c -> bridge/scratch.c; §A4.13: "a page a cover
// mapped the scratch page at keeps it, idle, until the next launch off the fast path or a trim")
// should answer as MAPPED before G2 ever runs, and stop answering once G1's first launch or the
// trim unmaps the idle cover -- an answer that changes with an unrelated graph's launch. After a
// trim P's memory (freed in the graph, exec idle) is unmapped in both; E stays mapped while live.
// Likely differences: captured/instantiated stages (P/E: depends on the native answer; M: graphmem
// mapped), the M rows across G1's launch and the trim.
#include "entries.cuh"

#include <cuda.h>

static const size_t kBig = 8u << 20, kMid = 4u << 20;

static const char *cu_name(CUresult r) {
    const char *n = nullptr;
    cuGetErrorName(r, &n);
    return n ? n : "unknown";
}

static void query(const char *stage, const char *name, const void *p, size_t bytes) {
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)p;
    unsigned type = 0;
    CUresult r = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d);
    unsigned long long mapped = 0;
    CUpointer_attribute a = CU_POINTER_ATTRIBUTE_MAPPED;
    void *data[] = {&mapped};
    CUresult rm = cuPointerGetAttributes(1, &a, data, d);
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult rr = cuMemGetAddressRange(&base, &size, d);
    bool covers = rr == CUDA_SUCCESS && base <= d && d + bytes <= base + size;
    cudaPointerAttributes pa = {};
    cudaError_t rt = cudaPointerGetAttributes(&pa, p);
    (void)cudaGetLastError();
    char key[96], v[256];
    snprintf(key, sizeof key, "%s_%s", stage, name);
    snprintf(v, sizeof v,
             "type_rc=%s type=%u mapped_rc=%s mapped=%d range_rc=%s covers=%s rt=%s "
             "rt_type=%d",
             cu_name(r), r == CUDA_SUCCESS ? type : 0u, cu_name(rm), mapped != 0, cu_name(rr),
             covers ? "yes" : "no", cudaGetErrorName(rt), (int)pa.type);
    obs(key, v);
    if (rr == CUDA_SUCCESS)
        info(key, "range base-ptr=%lld size=%zu", (long long)(base - d), size);
}

static void *g_p, *g_e, *g_m;

static void stage(const char *name) {
    query(name, "p", g_p, kBig);
    query(name, "e", g_e, kBig);
    query(name, "m", g_m, kMid);
    GraphMemAttrs a = read_attrs();
    char key[96];
    snprintf(key, sizeof key, "%s_used_nonzero", name);
    obs_yes(key, a.used != 0);
    info_attrs(name, a);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraph_t g1 = nullptr, g2 = nullptr;
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess && (rc = cudaMallocAsync(&g_p, kBig, s)) == cudaSuccess &&
        (rc = cudaMallocAsync(&g_e, kBig, s)) == cudaSuccess &&
        (rc = fill_words(s, g_p, kBig / 4, 1)) == cudaSuccess &&
        (rc = fill_words(s, g_e, kBig / 4, 2)) == cudaSuccess)
        rc = cudaFreeAsync(g_p, s);
    if (!end_capture_observed(s, rc, &g1))
        return 0;
    rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    if (rc == cudaSuccess && (rc = cudaMallocAsync(&g_m, kMid, s)) == cudaSuccess &&
        (rc = cudaMemsetAsync(g_m, 0x5a, kMid, s)) == cudaSuccess)
        rc = cudaFreeAsync(g_m, s);
    if (!end_capture_observed(s, rc, &g2))
        return 0;
    stage("captured");

    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    obs_rc("instantiate_g1", cudaGraphInstantiate(&e1, g1, 0));
    obs_rc("instantiate_g2", cudaGraphInstantiate(&e2, g2, 0));
    stage("instantiated");

    obs_rc("upload_g1", cudaGraphUpload(e1, s));
    obs_rc("upload_g1_sync", cudaStreamSynchronize(s));
    stage("g1_uploaded");

    launch_observed("g1", e1, s);
    obs_ok("e_data", check_words(s, g_e, kBig / 4, 2));
    stage("g1_launched");

    obs_rc("trim1", cudaDeviceGraphMemTrim(0));
    stage("trimmed");

    obs_rc("g1_exec_destroy", cudaGraphExecDestroy(e1));
    stage("g1_exec_destroyed");
    obs_rc("g1_graph_destroy", cudaGraphDestroy(g1));
    stage("g1_graph_destroyed");
    obs_rc("trim2", cudaDeviceGraphMemTrim(0));
    stage("g1_gone_trimmed");
    obs_ok("e_data_after_destroy", check_words(s, g_e, kBig / 4, 2));

    obs_rc("e_free", cudaFree(g_e));
    stage("e_freed");
    obs_rc("trim3", cudaDeviceGraphMemTrim(0));
    stage("e_freed_trimmed");

    launch_observed("g2", e2, s);
    stage("g2_launched");
    obs_rc("trim4", cudaDeviceGraphMemTrim(0));
    stage("g2_trimmed");
    cudaGraphExecDestroy(e2);
    cudaGraphDestroy(g2);
    stage("all_gone");
    return 0;
}
