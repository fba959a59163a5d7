// Memset and memcpy nodes on a graph allocation that a free node frees: the driver refuses a new
// one with InvalidValue whatever its dependencies and in any graph, and accepts it while no free
// node exists, or new parameters for a node made before the free
// (SEMANTICS §A1.15; measured on an H100, driver 580). Each case builds a fresh graph (alloc A).
#include "common.cuh"

static const size_t kBytes = 4u << 20;

static __global__ void noop() {}

static cudaGraphNode_t alloc(cudaGraph_t g, void **p) {
    cudaMemAllocNodeParams a = {};
    a.poolProps.allocType = cudaMemAllocationTypePinned;
    a.poolProps.location.type = cudaMemLocationTypeDevice;
    a.poolProps.location.id = 0;
    a.bytesize = kBytes;
    cudaGraphNode_t n = nullptr;
    cudaGraphAddMemAllocNode(&n, g, nullptr, 0, &a);
    *p = a.dptr;
    return n;
}

static cudaGraphNode_t kernel(cudaGraph_t g, const cudaGraphNode_t *deps, size_t n) {
    cudaKernelNodeParams k = {};
    k.func = (void *)noop;
    k.gridDim = dim3(1);
    k.blockDim = dim3(1);
    cudaGraphNode_t node = nullptr;
    cudaGraphAddKernelNode(&node, g, deps, n, &k);
    return node;
}

static void report(const char *name, cudaError_t rc) {
    obs_rc(name, rc);
    (void)cudaGetLastError();
}

int main() {
    require_graph_memory();
    void *a, *b;
    cudaGraphNode_t n, al, fr, k, m;
    for (int c = 0; c < 14; c++) {
        cudaGraph_t g;
        cudaGraphCreate(&g, 0);
        al = alloc(g, &a);
        cudaMemsetParams p = memset_words(a, kBytes, 7);
        switch (c) {
        case 0:
            report("no_free_dep_alloc", cudaGraphAddMemsetNode(&n, g, &al, 1, &p));
            break;
        case 1:
            report("no_free_no_deps", cudaGraphAddMemsetNode(&n, g, nullptr, 0, &p));
            break;
        case 2:
            cudaGraphAddMemFreeNode(&fr, g, &al, 1, a);
            report("free_after_alloc_memset_dep_alloc", cudaGraphAddMemsetNode(&n, g, &al, 1, &p));
            break;
        case 3:
            cudaGraphAddMemFreeNode(&fr, g, &al, 1, a);
            report("memset_dep_free", cudaGraphAddMemsetNode(&n, g, &fr, 1, &p));
            break;
        case 4:
            k = kernel(g, &al, 1);
            cudaGraphAddMemFreeNode(&fr, g, &k, 1, a);
            report("alloc_kernel_free_memset_dep_kernel", cudaGraphAddMemsetNode(&n, g, &k, 1, &p));
            break;
        case 5:
            cudaGraphAddMemsetNode(&m, g, &al, 1, &p);
            cudaGraphAddMemFreeNode(&fr, g, &m, 1, a);
            report("memset_free_then_memset_dep_alloc", cudaGraphAddMemsetNode(&n, g, &al, 1, &p));
            break;
        case 6: {
            cudaGraphAddMemsetNode(&m, g, &al, 1, &p);
            cudaGraphAddMemFreeNode(&fr, g, &m, 1, a);
            cudaGraphExec_t e;
            cudaGraphInstantiate(&e, g, 0);
            report("instantiated_then_memset_dep_alloc", cudaGraphAddMemsetNode(&n, g, &al, 1, &p));
            cudaGraphExecDestroy(e);
            break;
        }
        case 7: {
            cudaGraphAddMemFreeNode(&fr, g, &al, 1, a);
            cudaGraph_t h;
            cudaGraphCreate(&h, 0);
            report("other_graph_memset_no_deps", cudaGraphAddMemsetNode(&n, h, nullptr, 0, &p));
            cudaGraphDestroy(h);
            break;
        }
        case 8: {
            cudaGraphAddMemFreeNode(&fr, g, &al, 1, a);
            cudaGraphNode_t al2 = alloc(g, &b);
            report(
                "memcpy_dep_alloc2_src_freed_a",
                cudaGraphAddMemcpyNode1D(&n, g, &al2, 1, b, a, kBytes, cudaMemcpyDeviceToDevice));
            break;
        }
        case 9: {
            cudaGraphNode_t al2 = alloc(g, &b);
            cudaGraphNode_t deps[2] = {al, al2};
            report("memcpy_both_live", cudaGraphAddMemcpyNode1D(&n, g, deps, 2, b, a, kBytes,
                                                                cudaMemcpyDeviceToDevice));
            break;
        }
        case 11: {
            cudaGraphAddMemFreeNode(&fr, g, &al, 1, a);
            cudaMemsetParams q = memset_words((char *)a + 8192, 4096, 7);
            report("interior_memset_dep_alloc", cudaGraphAddMemsetNode(&n, g, &al, 1, &q));
            break;
        }
        case 12: {
            cudaGraphAddMemFreeNode(&fr, g, &al, 1, a);
            cudaGraphNode_t al2 = alloc(g, &b);
            report("memcpy_dst_interior_freed",
                   cudaGraphAddMemcpyNode1D(&n, g, &al2, 1, (char *)a + 4096, b, 4096,
                                            cudaMemcpyDeviceToDevice));
            break;
        }
        case 13: { // captured: no check at capture, natively
            cudaStream_t s;
            cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            void *q = nullptr;
            cudaGraph_t h = nullptr;
            cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
            cudaMallocAsync(&q, kBytes, s);
            cudaFreeAsync(q, s);
            report("captured_memset_after_free", cudaMemsetAsync(q, 0, kBytes, s));
            report("captured_end", cudaStreamEndCapture(s, &h));
            if (h)
                cudaGraphDestroy(h);
            cudaStreamDestroy(s);
            break;
        }
        case 10: {
            cudaGraphAddMemsetNode(&m, g, &al, 1, &p);
            cudaGraphAddMemFreeNode(&fr, g, &m, 1, a);
            cudaMemsetParams q = memset_words(a, kBytes, 7);
            q.value = 9;
            report("set_params_before_free", cudaGraphMemsetNodeSetParams(m, &q));
            break;
        }
        }
        cudaGraphDestroy(g);
    }
    return 0;
}
