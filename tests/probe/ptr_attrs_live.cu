// Probe (natively and under graphmem; helper-62, run on the H200 in the eighteenth session): 133
// OBS lines natively, 141 under graphmem, most differing. Under graphmem the small allocations A
// and B share a 256-aligned chunk and L1, L2 one mapping: range attributes and
// cuMemGetAddressRange cover the neighbour, BUFFER_ID is shared, cuMemGetAccess reads 3,
// cuMemRetainAllocationHandle succeeds, SYNC_MEMOPS is refused (NOT_SUPPORTED); natively each
// allocation has a range of its own, RetainAllocationHandle is refused. Memory type, device
// ordinal and the managed-only calls agree. tests/SEMANTICS.md §A14.2.
//
// Pointer queries on LIVE graph allocations (SEMANTICS §A14.2, "unverified"): every
// CUpointer_attribute, cuMemGetAddressRange, cudaPointerGetAttributes, cuMemGetAccess,
// cuMemRetainAllocationHandle (+ properties), cuIpcGetMemHandle, dma-buf export, SYNC_MEMOPS and
// the managed-only range calls. One captured graph allocates A, B (1000 bytes each) and L1, L2
// (8 MiB each, L2 made while L1 is unfreed), fills them and frees none: after launch + sync all
// four are live (defined behaviour). Raw values never reach OBS: ranges and ids are compared with
// the pointer itself and with the pair's other member ("nb"), handles with NULL/current/default.
//
// graphmem forwards all of these (shim/interpose/hooks.def: cuPointerGetAttribute(s),
// cuMemGetAddressRange_v2 GM_FORWARD; the rest not listed), so the driver describes graphmem's own
// VMM mappings (bridge/backend_cuda.c:handle_create: cuMemCreate, plain pinned device memory, no
// handle types, no gpuDirectRDMACapable flag; map: cuMemMap of whole handles). Expected:
// - A/B: graphmem byte-packs them 256-aligned into one chunk (core/plan/pack.c, GM_PACK_ALIGN):
//   B is not 4 KiB aligned, A's RANGE/MAPPING/address range start below or at A and cover B,
//   BUFFER_ID and MEMORY_BLOCK_ID of A and B equal. Natively each graph allocation has a VA
//   range of its own (expect range start == ptr, nb not covered, ids distinct) -> DIFFERS.
// - L1/L2: GRAPHMEM_RUNS puts L2 right after L1 and both escape into one escape arena mapped a
//   handle at a time (core/README.md "Runs"): L1's range covers L2 under graphmem -> DIFFERS.
// - CONTEXT (VMM memory is not context-bound: expect null under graphmem), MEMPOOL_HANDLE (null
//   under graphmem; natively maybe the graph pool), IS_GPU_DIRECT_RDMA_CAPABLE (0 under graphmem),
//   cuMemRetainAllocationHandle (succeeds on graphmem's VMM handle; natively unknown),
//   cuMemGetAccess for the resident device (graphmem 3; §A12.2 saw 0 natively for a peer): likely
//   DIFFER.
// - MEMORY_TYPE, DEVICE_POINTER, DEVICE_ORDINAL via cudaPointerGetAttributes, managed-only calls
//   (INVALID_VALUE both): expected same.
#include "entries.cuh"

#include <cuda.h>

static const size_t kSmall = 1000, kLarge = 8u << 20;

static CUdeviceptr dp(const void *p) {
    return (CUdeviceptr)(uintptr_t)p;
}

static const char *cu_name(CUresult r) {
    const char *n = nullptr;
    cuGetErrorName(r, &n);
    return n ? n : "unknown";
}

// "<name>_<what>" in a static buffer (obs copies it out at once).
static const char *k(const char *name, const char *what) {
    static char key[96];
    snprintf(key, sizeof key, "%s_%s", name, what);
    return key;
}

static void obs_kv(const char *name, const char *what, CUresult r, const char *value) {
    char key[96], v[160];
    snprintf(key, sizeof key, "%s_%s", name, what);
    snprintf(v, sizeof v, "%s %s", cu_name(r), r == CUDA_SUCCESS ? value : "-");
    obs(key, v);
}

static CUcontext g_ctx;
static CUmemoryPool g_default_pool, g_current_pool;

static const char *handle_kind(const void *h) {
    return !h                    ? "null"
           : h == g_ctx          ? "current_context"
           : h == g_default_pool ? "default_pool"
           : h == g_current_pool ? "current_pool"
                                 : "other";
}

// [base, base + size) relative to p (bytes) and nb.
static const char *range_desc(char *buf, size_t n, uint64_t base, uint64_t size, const void *p,
                              size_t bytes, const void *nb) {
    uint64_t a = dp(p), b = dp(nb);
    snprintf(buf, n, "start_is_ptr=%s covers_ptr=%s covers_nb=%s", base == a ? "yes" : "no",
             base <= a && a + bytes <= base + size ? "yes" : "no",
             base <= b && b < base + size ? "yes" : "no");
    return buf;
}

static void describe(const char *name, const void *p, size_t bytes, const void *nb) {
    char v[160];
    uint64_t x = 0, y = 0;
    CUresult r;
    info(name, "ptr_low_bits=%#llx", (unsigned long long)(dp(p) & 0x1fffff));
    obs_yes(k(name, "aligned_256"), dp(p) % 256 == 0);
    obs_yes(k(name, "aligned_4k"), dp(p) % 4096 == 0);
    obs_yes(k(name, "aligned_2m"), dp(p) % (2u << 20) == 0);
    r = cuPointerGetAttribute(&x, CU_POINTER_ATTRIBUTE_CONTEXT, dp(p));
    obs_kv(name, "context", r, handle_kind((void *)x));
    struct {
        CUpointer_attribute a;
        const char *what;
    } plain[] = {{CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "memory_type"},
                 {CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, "legacy_ipc"},
                 {CU_POINTER_ATTRIBUTE_MAPPED, "mapped"},
                 {CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, "allowed_handle_types"},
                 {CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, "rdma_capable"},
                 {CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, "access_flags"},
                 {CU_POINTER_ATTRIBUTE_IS_MANAGED, "is_managed"},
                 {CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE, "hw_decompress"},
                 {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "device_ordinal"}};
    for (auto &q : plain) {
        x = 0;
        r = cuPointerGetAttribute(&x, q.a, dp(p));
        snprintf(v, sizeof v, "%llu", (unsigned long long)x);
        obs_kv(name, q.what, r, v);
    }
    x = 0;
    r = cuPointerGetAttribute(&x, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, dp(p));
    obs_kv(name, "device_pointer", r, x == dp(p) ? "is_ptr" : "other");
    x = 0;
    r = cuPointerGetAttribute(&x, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, dp(p));
    obs_kv(name, "mempool", r, handle_kind((void *)x));
    x = y = 0;
    r = cuPointerGetAttribute(&x, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dp(p));
    if (r == CUDA_SUCCESS)
        r = cuPointerGetAttribute(&y, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dp(p));
    obs_kv(name, "range_attr", r, range_desc(v, sizeof v, x, y, p, bytes, nb));
    info(name, "range_attr start-ptr=%lld size=%llu", (long long)(x - dp(p)),
         (unsigned long long)y);
    x = y = 0;
    r = cuPointerGetAttribute(&x, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, dp(p));
    if (r == CUDA_SUCCESS)
        r = cuPointerGetAttribute(&y, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, dp(p));
    obs_kv(name, "mapping", r, range_desc(v, sizeof v, x, y, p, bytes, nb));
    info(name, "mapping base-ptr=%lld size=%llu", (long long)(x - dp(p)), (unsigned long long)y);
    CUdeviceptr base = 0;
    size_t size = 0;
    r = cuMemGetAddressRange(&base, &size, dp(p));
    obs_kv(name, "address_range", r, range_desc(v, sizeof v, base, size, p, bytes, nb));
    info(name, "address_range base-ptr=%lld size=%zu", (long long)(base - dp(p)), size);
    // Process-wide ids, compared with the neighbour's.
    for (auto a : {CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID}) {
        x = y = 0;
        r = cuPointerGetAttribute(&x, a, dp(p));
        CUresult r2 = cuPointerGetAttribute(&y, a, dp(nb));
        snprintf(v, sizeof v, "nb_rc=%s same_as_nb=%s", cu_name(r2), x == y ? "yes" : "no");
        obs_kv(name, a == CU_POINTER_ATTRIBUTE_BUFFER_ID ? "buffer_id" : "block_id", r, v);
    }
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    unsigned long long flags = 0;
    r = cuMemGetAccess(&flags, &loc, dp(p));
    snprintf(v, sizeof v, "%llu", flags);
    obs_kv(name, "mem_get_access_dev0", r, v);
    CUmemGenericAllocationHandle h = 0;
    r = cuMemRetainAllocationHandle(&h, (void *)p);
    obs_kv(name, "retain_handle", r, "retained");
    if (r == CUDA_SUCCESS) {
        CUmemAllocationProp prop = {};
        r = cuMemGetAllocationPropertiesFromHandle(&prop, h);
        snprintf(v, sizeof v, "type=%d loc=%d/%d handle_types=%d rdma=%d", (int)prop.type,
                 (int)prop.location.type, prop.location.id, (int)prop.requestedHandleTypes,
                 (int)prop.allocFlags.gpuDirectRDMACapable);
        obs_kv(name, "handle_props", r, v);
        obs_cu(k(name, "handle_release"), cuMemRelease(h));
    }
    CUipcMemHandle ipc;
    obs_cu(k(name, "ipc_get_handle"), cuIpcGetMemHandle(&ipc, dp(p)));
    int fd = -1;
    size_t span = (bytes + 4095) & ~(size_t)4095;
    r = cuMemGetHandleForAddressRange(&fd, dp(p), span, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    obs_cu(k(name, "dmabuf"), r);
    if (r == CUDA_SUCCESS && fd >= 0)
        close(fd);
    unsigned one = 1;
    obs_cu(k(name, "set_sync_memops"),
           cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, dp(p)));
    cudaPointerAttributes pa = {};
    cudaError_t rc = cudaPointerGetAttributes(&pa, p);
    snprintf(v, sizeof v, "type=%d device=%d devptr_is_ptr=%s host_null=%s", (int)pa.type,
             pa.device, pa.devicePointer == p ? "yes" : "no", pa.hostPointer ? "no" : "yes");
    char rv[200];
    snprintf(rv, sizeof rv, "%s %s", cudaGetErrorName(rc), v);
    obs(k(name, "rt_attributes"), rv);
    (void)cudaGetLastError();
    // Managed-only calls on device memory.
    int rm = 0;
    obs_cu(
        k(name, "range_read_mostly"),
        cuMemRangeGetAttribute(&rm, sizeof rm, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, dp(p), bytes));
    obs_cu(k(name, "advise"), cuMemAdvise(dp(p), bytes, CU_MEM_ADVISE_SET_READ_MOSTLY, loc));
    obs_cu(k(name, "prefetch"), cuMemPrefetchAsync(dp(p), bytes, loc, 0, 0));
    obs_rc(k(name, "sync_after"), cudaDeviceSynchronize());
}

int main() {
    require_graph_memory();
    cudaFree(0);
    cuCtxGetCurrent(&g_ctx);
    cuDeviceGetDefaultMemPool(&g_default_pool, 0);
    cuDeviceGetMemPool(&g_current_pool, 0);
    int dmabuf = 0;
    cuDeviceGetAttribute(&dmabuf, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 0);
    info("dma_buf_supported", "%d", dmabuf);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    void *a = nullptr, *b = nullptr, *l1 = nullptr, *l2 = nullptr;
    cudaError_t rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    struct {
        void **p;
        size_t bytes;
        uint32_t v;
    } allocs[] = {{&a, kSmall, 10}, {&b, kSmall, 20}, {&l1, kLarge, 30}, {&l2, kLarge, 40}};
    for (auto &x : allocs)
        if (rc == cudaSuccess && (rc = cudaMallocAsync(x.p, x.bytes, s)) == cudaSuccess)
            rc = fill_words(s, *x.p, x.bytes / 4, x.v);
    cudaGraph_t g = nullptr;
    if (!end_capture_observed(s, rc, &g))
        return 0;
    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    launch_observed("first", e, s);
    describe("a", a, kSmall, b);
    describe("b", b, kSmall, a);
    describe("l1", l1, kLarge, l2);
    describe("l2", l2, kLarge, l1);
    const char *names[] = {"a", "b", "l1", "l2"};
    for (int i = 0; i < 4; i++) {
        obs_ok(k(names[i], "data_after_queries"),
               check_words(s, *allocs[i].p, allocs[i].bytes / 4, allocs[i].v));
        obs_rc(k(names[i], "free"), cudaFree(*allocs[i].p));
    }
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    return 0;
}
