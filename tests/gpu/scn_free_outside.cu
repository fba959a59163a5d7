// Freeing graph allocations outside their graph (§A2.3, §A2.4, §A8.2, §A8.3, §A8.6):
// free-only graphs made while the owner exec lives and after the owner graph and exec are both
// destroyed; cudaFreeAsync and cudaFree after destruction; frees of allocations that are not
// live or that their own graph frees (error codes: the native run is the reference).
#include "common.cuh"

static const size_t n = 1 << 16, bytes = n * sizeof(uint32_t);

// alloc -> fill(v), optionally followed by its own free node.
static cudaGraph_t build(void **a, uint32_t v, bool own_free) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr, nfree = nullptr;
    add_alloc(&na, g, nullptr, 0, bytes, a);
    add_fill(&nf, g, &na, 1, *a, n, v);
    if (own_free)
        cudaGraphAddMemFreeNode(&nfree, g, &nf, 1, *a);
    return g;
}

static cudaError_t free_graph(cudaGraph_t *gf, void *a) {
    cudaGraphCreate(gf, 0);
    cudaGraphNode_t node = nullptr;
    return cudaGraphAddMemFreeNode(&node, *gf, nullptr, 0, a);
}

// Launches the owner once, then destroys its graph (or graph and exec) before freeing.
static void after_destroy(cudaStream_t s, const char *how) {
    char key[96];
    void *a = nullptr;
    cudaGraph_t g = build(&a, 5, false);
    cudaGraphExec_t e = nullptr;
    cudaGraphInstantiate(&e, g, 0);
    cudaGraphLaunch(e, s);
    cudaStreamSynchronize(s);
    cudaGraphDestroy(g);
    bool exec_alive = strcmp(how, "free_graph_exec_alive") == 0;
    if (!exec_alive)
        cudaGraphExecDestroy(e);
    snprintf(key, sizeof key, "%s_data_before", how);
    obs_ok(key, check_words(s, a, n, 5));
    cudaError_t rc;
    if (strncmp(how, "free_graph", 10) == 0) {
        cudaGraph_t gf = nullptr;
        snprintf(key, sizeof key, "%s_add_node", how);
        obs_rc(key, free_graph(&gf, a));
        cudaGraphExec_t ef = nullptr;
        snprintf(key, sizeof key, "%s_instantiate", how);
        obs_rc(key, cudaGraphInstantiate(&ef, gf, 0));
        rc = cudaGraphLaunch(ef, s);
        cudaStreamSynchronize(s);
        cudaGraphExecDestroy(ef);
        cudaGraphDestroy(gf);
    } else if (strcmp(how, "free_async") == 0) {
        rc = cudaFreeAsync(a, s);
    } else {
        rc = cudaFree(a);
    }
    snprintf(key, sizeof key, "%s_free", how);
    obs_rc(key, rc);
    snprintf(key, sizeof key, "%s_sync", how);
    obs_rc(key, cudaStreamSynchronize(s));
    if (exec_alive) {
        obs_rc("free_graph_exec_alive_relaunch", cudaGraphLaunch(e, s));
        obs_ok("free_graph_exec_alive_relaunch_data", check_words(s, a, n, 5));
        obs_rc("free_graph_exec_alive_final_free", cudaFreeAsync(a, s));
        cudaStreamSynchronize(s);
        cudaGraphExecDestroy(e);
    }
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    after_destroy(s, "free_graph_exec_alive");
    after_destroy(s, "free_graph_all_destroyed");
    after_destroy(s, "free_async");
    after_destroy(s, "cuda_free");

    // A2.4: an allocation freed by its own graph cannot get a free node in another graph.
    void *a = nullptr;
    cudaGraph_t g = build(&a, 6, true);
    cudaGraph_t gf = nullptr;
    obs_rc("free_node_other_graph_when_owner_frees", free_graph(&gf, a));
    cudaGraphDestroy(gf);
    // A8.3: nor be freed outside after a launch.
    cudaGraphExec_t e = nullptr;
    cudaGraphInstantiate(&e, g, 0);
    cudaGraphLaunch(e, s);
    obs_rc("owner_freed_launch_sync", cudaStreamSynchronize(s));
    obs_rc("cuda_free_of_owner_freed", cudaFree(a));
    obs_rc("owner_freed_relaunch", cudaGraphLaunch(e, s));
    obs_rc("owner_freed_relaunch_sync", cudaStreamSynchronize(s));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);

    // A2.4 the other way round: once another graph frees it, the owner cannot.
    g = build(&a, 7, false);
    obs_rc("other_graph_free_first", free_graph(&gf, a));
    cudaGraphNode_t nodes[4] = {};
    size_t count = graph_nodes(g, nodes, 4);
    cudaGraphNode_t own = nullptr;
    obs_rc("owner_free_after_other", cudaGraphAddMemFreeNode(&own, g, nodes, count, a));
    cudaGraphDestroy(gf);

    // A8.6: free before the graph ever ran (the allocation is not live).
    obs_rc("cuda_free_never_launched", cudaFree(a));
    obs_rc("free_async_never_launched", cudaFreeAsync(a, s));
    obs_rc("never_launched_sync", cudaStreamSynchronize(s));
    cudaGraphDestroy(g);
    return 0;
}
