// Introspection of memory nodes (§A15, §A16): node types, alloc and free node
// parameters, error codes for wrong node types and NULLs, node and edge counts, dependencies,
// and which memory-node keywords cudaGraphDebugDotPrint writes.
#include "common.cuh"

#include <string>
#include <unistd.h>

static std::string slurp(const char *path) {
    std::string s;
    FILE *f = fopen(path, "r");
    if (!f)
        return s;
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        s.append(buf, got);
    fclose(f);
    return s;
}

static void dot_keywords(cudaGraph_t g, unsigned flags, const char *tag) {
    char path[64], key[96];
    snprintf(path, sizeof path, "/tmp/graphmem_scn_dot_%d.dot", (int)getpid());
    snprintf(key, sizeof key, "dot_%s_rc", tag);
    obs_rc(key, cudaGraphDebugDotPrint(g, path, flags));
    std::string dot = slurp(path);
    remove(path);
    const char *words[] = {"MEM_ALLOC", "MEM_FREE", "MemAlloc", "MemFree",
                           "KERNEL",    "bytesize", "dptr"};
    std::string found;
    for (const char *w : words)
        if (dot.find(w) != std::string::npos)
            found += std::string(found.empty() ? "" : ",") + w;
    snprintf(key, sizeof key, "dot_%s_keywords", tag);
    obs(key, found.empty() ? "none" : found.c_str());
}

int main() {
    require_graph_memory();
    const size_t bytes = 3 << 20;
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nk = nullptr, nf = nullptr, empty = nullptr;
    cudaMemAccessDesc desc = {};
    desc.location.type = cudaMemLocationTypeDevice;
    desc.location.id = 0;
    desc.flags = cudaMemAccessFlagsProtReadWrite;
    cudaMemAllocNodeParams in = alloc_params(bytes);
    in.accessDescs = &desc;
    in.accessDescCount = 1;
    obs_rc("add_alloc", cudaGraphAddMemAllocNode(&na, g, nullptr, 0, &in));
    add_fill(&nk, g, &na, 1, in.dptr, bytes / 4, 1);
    obs_rc("add_free", cudaGraphAddMemFreeNode(&nf, g, &nk, 1, in.dptr));
    cudaGraphAddEmptyNode(&empty, g, &nf, 1);

    cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
    cudaGraphNodeGetType(na, &t);
    obs_int("alloc_node_type", t);
    cudaGraphNodeGetType(nf, &t);
    obs_int("free_node_type", t);

    cudaMemAllocNodeParams out = {};
    obs_rc("alloc_get_params", cudaGraphMemAllocNodeGetParams(na, &out));
    obs_yes("alloc_params_bytesize", out.bytesize == bytes);
    obs_yes("alloc_params_dptr", out.dptr == in.dptr);
    obs_yes("alloc_params_alloc_type", out.poolProps.allocType == cudaMemAllocationTypePinned);
    obs_yes("alloc_params_location", out.poolProps.location.type == cudaMemLocationTypeDevice &&
                                         out.poolProps.location.id == 0);
    obs_int("alloc_params_access_desc_count", (long long)out.accessDescCount);
    obs_yes("alloc_params_access_descs_node_owned", out.accessDescs != &desc);
    obs_rc("alloc_get_params_free_node", cudaGraphMemAllocNodeGetParams(nf, &out));
    obs_rc("alloc_get_params_empty_node", cudaGraphMemAllocNodeGetParams(empty, &out));
    obs_rc("alloc_get_params_null_node", cudaGraphMemAllocNodeGetParams(nullptr, &out));
    obs_rc("alloc_get_params_null_out", cudaGraphMemAllocNodeGetParams(na, nullptr));

    void *freed = nullptr;
    obs_rc("free_get_params", cudaGraphMemFreeNodeGetParams(nf, &freed));
    obs_yes("free_params_dptr", freed == in.dptr);
    obs_rc("free_get_params_alloc_node", cudaGraphMemFreeNodeGetParams(na, &freed));
    obs_rc("free_get_params_null_node", cudaGraphMemFreeNodeGetParams(nullptr, &freed));
    obs_rc("free_get_params_null_out", cudaGraphMemFreeNodeGetParams(nf, nullptr));

    size_t count = 0;
    obs_rc("get_nodes", cudaGraphGetNodes(g, nullptr, &count));
    obs_int("node_count", (long long)count);
    count = 0;
    cudaGraphGetRootNodes(g, nullptr, &count);
    obs_int("root_count", (long long)count);
    cudaGraphNode_t roots[4] = {};
    count = 4;
    cudaGraphGetRootNodes(g, roots, &count);
    obs_yes("root_is_alloc_node", count == 1 && roots[0] == na);
    count = 0;
    obs_rc("get_edges", cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &count));
    obs_int("edge_count", (long long)count);
    cudaGraphNode_t deps[4] = {};
    count = 4;
    cudaGraphNodeGetDependencies(nf, deps, nullptr, &count);
    obs_yes("free_depends_on_kernel", count == 1 && deps[0] == nk);
    count = 4;
    cudaGraphNodeGetDependentNodes(na, deps, nullptr, &count);
    obs_yes("alloc_feeds_kernel", count == 1 && deps[0] == nk);

    dot_keywords(g, 0, "plain");
    dot_keywords(g, cudaGraphDebugDotFlagsVerbose, "verbose");

    // Captured nodes (§A15.6): what the pool contributes to the node's parameters.
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    void *p = nullptr;
    cudaMallocAsync(&p, 1000, s);
    cudaFreeAsync(p, s);
    cudaGraph_t cg = nullptr;
    obs_rc("capture_end", cudaStreamEndCapture(s, &cg));
    cudaGraphNode_t nodes[4] = {};
    count = graph_nodes(cg, nodes, 4);
    obs_int("captured_node_count", (long long)count);
    for (size_t i = 0; i < count; i++) {
        cudaGraphNodeGetType(nodes[i], &t);
        if (t == cudaGraphNodeTypeMemAlloc) {
            cudaGraphMemAllocNodeGetParams(nodes[i], &out);
            obs_yes("captured_dptr", out.dptr == p);
            obs_int("captured_bytesize", (long long)out.bytesize);
            obs_int("captured_alloc_type", out.poolProps.allocType);
            obs_int("captured_location_type", out.poolProps.location.type);
            obs_int("captured_location_id", out.poolProps.location.id);
            obs_int("captured_handle_types", out.poolProps.handleTypes);
            obs_int("captured_access_desc_count", (long long)out.accessDescCount);
        } else if (t == cudaGraphNodeTypeMemFree) {
            cudaGraphMemFreeNodeGetParams(nodes[i], &freed);
            obs_yes("captured_free_dptr", freed == p);
        }
    }
    dot_keywords(cg, cudaGraphDebugDotFlagsVerbose, "captured_verbose");
    cudaGraphDestroy(cg);
    cudaGraphDestroy(g);
    return 0;
}
