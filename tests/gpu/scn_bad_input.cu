// Bad input must return an error code, never crash (§A8.5, §A8.8): NULL graph and exec
// handles, double frees of graph allocations, frees of foreign pointers, and, last, handles used
// after they were destroyed (undefined behaviour natively, observed for the record).
#include "common.cuh"

static const size_t n = 1 << 12, bytes = n * sizeof(uint32_t);

// A launched graph whose allocation is left unfreed.
static void *escaped(cudaStream_t s, cudaGraph_t *g, cudaGraphExec_t *e) {
    void *a = nullptr;
    cudaGraphCreate(g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr;
    add_alloc(&na, *g, nullptr, 0, bytes, &a);
    add_fill(&nf, *g, &na, 1, a, n, 1);
    cudaGraphInstantiate(e, *g, 0);
    cudaGraphLaunch(*e, s);
    cudaStreamSynchronize(s);
    return a;
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaGraphExec_t e = nullptr;
    cudaGraph_t g = nullptr;
    cudaGraphNode_t node = nullptr;

    obs_rc("launch_null_exec", cudaGraphLaunch(nullptr, s));
    obs_rc("upload_null_exec", cudaGraphUpload(nullptr, s));
    obs_rc("instantiate_null_graph", cudaGraphInstantiate(&e, nullptr, 0));
    obs_rc("instantiate_null_out", cudaGraphInstantiate(nullptr, nullptr, 0));
    obs_rc("exec_destroy_null", cudaGraphExecDestroy(nullptr));
    obs_rc("graph_destroy_null", cudaGraphDestroy(nullptr));
    int dummy = 0;
    obs_rc("free_node_null_graph", cudaGraphAddMemFreeNode(&node, nullptr, nullptr, 0, &dummy));

    void *a = escaped(s, &g, &e);
    obs_rc("cuda_free", cudaFree(a));
    obs_rc("cuda_free_again", cudaFree(a));
    obs_rc("free_async_after_free", cudaFreeAsync(a, s));
    obs_rc("sync_after_double_free", cudaStreamSynchronize(s));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);

    a = escaped(s, &g, &e);
    obs_rc("free_async", cudaFreeAsync(a, s));
    obs_rc("free_async_again", cudaFreeAsync(a, s));
    obs_rc("sync_after_double_free_async", cudaStreamSynchronize(s));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);

    void *host = malloc(bytes);
    int on_stack = 0;
    obs_rc("free_async_host_pointer", cudaFreeAsync(host, s));
    obs_rc("free_async_stack_pointer", cudaFreeAsync(&on_stack, s));
    obs_rc("free_async_bogus_pointer", cudaFreeAsync((void *)(uintptr_t)0x10000, s));
    obs_rc("cuda_free_bogus_pointer", cudaFree((void *)(uintptr_t)0x10000));
    obs_rc("sync_after_foreign_frees", cudaStreamSynchronize(s));
    free(host);
    void *pooled = nullptr;
    cudaMallocAsync(&pooled, bytes, s);
    obs_rc("pool_free_async", cudaFreeAsync(pooled, s));
    obs_rc("pool_free_async_again", cudaFreeAsync(pooled, s));
    obs_rc("sync_after_pool_double_free", cudaStreamSynchronize(s));

    // Handles used after destruction.
    a = escaped(s, &g, &e);
    cudaFree(a);
    obs_rc("exec_destroy", cudaGraphExecDestroy(e));
    obs_rc("launch_destroyed_exec", cudaGraphLaunch(e, s));
    obs_rc("sync_after_destroyed_exec", cudaStreamSynchronize(s));
    obs_rc("graph_destroy", cudaGraphDestroy(g));
    obs_rc("instantiate_destroyed_graph", cudaGraphInstantiate(&e, g, 0));
    obs_rc("final_sync", cudaDeviceSynchronize());
    return 0;
}
