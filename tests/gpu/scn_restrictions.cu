// Restrictions on graphs holding memory nodes (§A3): clone, second instantiation, child
// graphs by clone and by move, node destruction, edge removal, parameter updates, exec update,
// memory nodes in conditional bodies, and device-launch instantiation. Codes marked [I] in the
// research are observed here; the native run is the reference.
#include "common.cuh"

static const size_t n = 1 << 12, bytes = n * sizeof(uint32_t);

struct Full {
    cudaGraph_t g = nullptr;
    cudaGraphNode_t alloc = nullptr, fill = nullptr, free = nullptr;
    void *a;
};

// alloc -> fill -> free.
static Full full(void) {
    Full f;
    cudaGraphCreate(&f.g, 0);
    add_alloc(&f.alloc, f.g, nullptr, 0, bytes, &f.a);
    add_fill(&f.fill, f.g, &f.alloc, 1, f.a, n, 1);
    cudaGraphAddMemFreeNode(&f.free, f.g, &f.fill, 1, f.a);
    return f;
}

static cudaError_t add_child(cudaGraph_t parent, cudaGraph_t child,
                             cudaGraphChildGraphNodeOwnership own, cudaGraphNode_t *node) {
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeGraph;
    np.graph.graph = child;
    np.graph.ownership = own;
    return cudaGraphAddNode(node, parent, nullptr, nullptr, 0, &np);
}

// A conditional IF node (condition defaults to 1) in `parent` after `deps`; returns its body.
static cudaGraph_t add_if(cudaGraph_t parent, const cudaGraphNode_t *deps, size_t ndeps,
                          cudaGraphNode_t *node) {
    cudaGraphConditionalHandle h;
    cudaGraphConditionalHandleCreate(&h, parent, 1, cudaGraphCondAssignDefault);
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeConditional;
    np.conditional.handle = h;
    np.conditional.type = cudaGraphCondTypeIf;
    np.conditional.size = 1;
    obs_rc("conditional_node", cudaGraphAddNode(node, parent, deps, nullptr, ndeps, &np));
    return np.conditional.phGraph_out ? np.conditional.phGraph_out[0] : nullptr;
}

static void clone_and_instantiate(void) {
    Full f = full();
    cudaGraph_t c = nullptr;
    obs_rc("clone", cudaGraphClone(&c, f.g));
    cudaGraphExec_t e1 = nullptr, e2 = nullptr, e3 = nullptr;
    obs_rc("instantiate_first", cudaGraphInstantiate(&e1, f.g, 0));
    obs_rc("instantiate_second", cudaGraphInstantiate(&e2, f.g, 0));
    obs_rc("exec_destroy_first", cudaGraphExecDestroy(e1));
    obs_rc("instantiate_after_destroy", cudaGraphInstantiate(&e3, f.g, 0));

    // A3.10: update e3 from an identical graph, and from the graph it was made of.
    Full f2 = full();
    cudaGraphExecUpdateResultInfo ri = {};
    obs_rc("exec_update_identical", cudaGraphExecUpdate(e3, f2.g, &ri));
    obs_int("exec_update_identical_result", ri.result);
    ri = {};
    obs_rc("exec_update_same_graph", cudaGraphExecUpdate(e3, f.g, &ri));
    obs_int("exec_update_same_graph_result", ri.result);
    cudaGraphExecDestroy(e3);

    // §A3.8, §A3.9: parameters of memory nodes cannot be changed.
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeMemAlloc;
    np.alloc.poolProps = alloc_params(0).poolProps;
    np.alloc.bytesize = bytes;
    obs_rc("node_set_params_alloc", cudaGraphNodeSetParams(f.alloc, &np));
    cudaGraphExec_t e4 = nullptr;
    cudaGraphInstantiate(&e4, f.g, 0);
    obs_rc("exec_node_set_params_alloc", cudaGraphExecNodeSetParams(e4, f.alloc, &np));
    np = {};
    np.type = cudaGraphNodeTypeMemFree;
    np.free.dptr = f.a;
    obs_rc("node_set_params_free", cudaGraphNodeSetParams(f.free, &np));
    obs_rc("exec_node_set_params_free", cudaGraphExecNodeSetParams(e4, f.free, &np));
    cudaGraphExecDestroy(e4);

    obs_rc("remove_dependencies", cudaGraphRemoveDependencies(f.g, &f.alloc, &f.fill, nullptr, 1));
    obs_rc("destroy_kernel_node", cudaGraphDestroyNode(f.fill));
    obs_rc("destroy_free_node", cudaGraphDestroyNode(f.free));
    cudaGraphDestroy(f.g);
    cudaGraphDestroy(f2.g);

    // A graph whose only memory node is a free node has the same restrictions.
    cudaGraph_t owner = nullptr;
    cudaGraphExec_t eo = nullptr;
    cudaGraphCreate(&owner, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr;
    void *a = nullptr;
    add_alloc(&na, owner, nullptr, 0, bytes, &a);
    cudaGraphInstantiate(&eo, owner, 0);
    cudaGraph_t gf = nullptr;
    cudaGraphCreate(&gf, 0);
    cudaGraphAddMemFreeNode(&nf, gf, nullptr, 0, a);
    obs_rc("free_only_clone", cudaGraphClone(&c, gf));
    cudaGraphExec_t ef1 = nullptr, ef2 = nullptr;
    obs_rc("free_only_instantiate_first", cudaGraphInstantiate(&ef1, gf, 0));
    obs_rc("free_only_instantiate_second", cudaGraphInstantiate(&ef2, gf, 0));
    cudaGraphExecDestroy(ef1);
    cudaGraphExecDestroy(eo);
    cudaGraphDestroy(gf);
    cudaGraphDestroy(owner);
}

static void children(cudaStream_t s) {
    Full f = full();
    // Clone attempts go to graphs of their own so that a lifted restriction does not change
    // what the move below observes.
    cudaGraph_t parent = nullptr, cloned1 = nullptr, cloned2 = nullptr;
    cudaGraphCreate(&parent, 0);
    cudaGraphCreate(&cloned1, 0);
    cudaGraphCreate(&cloned2, 0);
    cudaGraphNode_t node = nullptr;
    obs_rc("child_add_clone", cudaGraphAddChildGraphNode(&node, cloned1, nullptr, 0, f.g));
    obs_rc("child_add_node_clone",
           add_child(cloned2, f.g, cudaGraphChildGraphOwnershipClone, &node));
    cudaGraphDestroy(cloned1);
    cudaGraphDestroy(cloned2);
    obs_rc("child_add_node_move", add_child(parent, f.g, cudaGraphChildGraphOwnershipMove, &node));
    cudaGraphExec_t e = nullptr;
    obs_rc("moved_child_instantiate_parent", cudaGraphInstantiate(&e, parent, 0));
    obs_rc("moved_child_launch", cudaGraphLaunch(e, s));
    obs_rc("moved_child_sync", cudaStreamSynchronize(s));
    obs_rc("moved_child_relaunch", cudaGraphLaunch(e, s));
    obs_rc("moved_child_resync", cudaStreamSynchronize(s));
    // The moved child, reached through its node, still holds memory nodes (§A3.5): its edges and
    // nodes stay as fixed as those of any such graph.
    cudaGraph_t moved = nullptr;
    obs_rc("moved_child_get_graph", cudaGraphChildGraphNodeGetGraph(node, &moved));
    obs_rc("moved_child_remove_edge",
           cudaGraphRemoveDependencies(moved, &f.alloc, &f.fill, nullptr, 1));
    obs_rc("moved_child_destroy_kernel_node", cudaGraphDestroyNode(f.fill));
    cudaGraph_t moved_clone = nullptr;
    obs_rc("moved_child_clone", cudaGraphClone(&moved_clone, moved));
    if (moved_clone)
        cudaGraphDestroy(moved_clone);
    cudaGraphExec_t ec = nullptr;
    obs_rc("moved_child_instantiate_alone", cudaGraphInstantiate(&ec, f.g, 0));
    cudaGraph_t other = nullptr;
    cudaGraphCreate(&other, 0);
    cudaGraphNode_t node2 = nullptr;
    obs_rc("moved_child_to_second_parent",
           add_child(other, f.g, cudaGraphChildGraphOwnershipMove, &node2));
    void *extra = nullptr;
    cudaGraphNode_t na = nullptr;
    obs_rc("moved_child_add_alloc", add_alloc(&na, f.g, nullptr, 0, bytes, &extra));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(parent);
    cudaGraphDestroy(other);

    // A3.6: the graph of an ordinary child node cannot get memory nodes.
    cudaGraph_t plain = nullptr, holder = nullptr;
    cudaGraphCreate(&plain, 0);
    cudaGraphCreate(&holder, 0);
    cudaGraphNode_t empty = nullptr, child = nullptr;
    cudaGraphAddEmptyNode(&empty, plain, nullptr, 0);
    cudaGraphAddChildGraphNode(&child, holder, nullptr, 0, plain);
    cudaGraph_t inner = nullptr;
    cudaGraphChildGraphNodeGetGraph(child, &inner);
    obs_rc("child_graph_add_alloc", add_alloc(&na, inner, nullptr, 0, bytes, &extra));
    // The same by capture into that graph: graphmem must not serve the captured allocation.
    obs_rc("child_capture_begin", cudaStreamBeginCaptureToGraph(s, inner, nullptr, nullptr, 0,
                                                                cudaStreamCaptureModeGlobal));
    void *captured = nullptr;
    obs_rc("child_capture_malloc", cudaMallocAsync(&captured, bytes, s));
    cudaGraph_t ended = nullptr;
    obs_rc("child_capture_end", cudaStreamEndCapture(s, &ended));
    (void)cudaGetLastError();
    cudaGraphDestroy(holder);
    cudaGraphDestroy(plain);
}

static void conditionals(cudaStream_t s) {
    // A3.11: alloc and free inside an IF body: the adds are accepted, instantiation is not.
    cudaGraph_t p = nullptr;
    cudaGraphCreate(&p, 0);
    cudaGraphNode_t cond = nullptr, na = nullptr, nf = nullptr, nfree = nullptr;
    cudaGraph_t body = add_if(p, nullptr, 0, &cond);
    void *a = nullptr;
    obs_rc("body_alloc", add_alloc(&na, body, nullptr, 0, bytes, &a));
    obs_rc("body_fill", add_fill(&nf, body, &na, 1, a, n, 2));
    obs_rc("body_free", cudaGraphAddMemFreeNode(&nfree, body, &nf, 1, a));
    cudaGraphExec_t e = nullptr;
    obs_rc("body_alloc_instantiate", cudaGraphInstantiate(&e, p, 0));
    cudaGraphDestroy(p);

    // A3.12: a free node in the body for an allocation of the parent.
    cudaGraphCreate(&p, 0);
    obs_rc("parent_alloc", add_alloc(&na, p, nullptr, 0, bytes, &a));
    body = add_if(p, &na, 1, &cond);
    obs_rc("body_free_parent_alloc", cudaGraphAddMemFreeNode(&nfree, body, nullptr, 0, a));
    obs_rc("body_free_parent_alloc_instantiate", cudaGraphInstantiate(&e, p, 0));
    cudaGraphDestroy(p);

    // A3.13: a kernel in the body using an allocation of the parent works.
    cudaGraphCreate(&p, 0);
    add_alloc(&na, p, nullptr, 0, bytes, &a);
    body = add_if(p, &na, 1, &cond);
    obs_rc("body_kernel_on_parent_alloc", add_fill(&nf, body, nullptr, 0, a, n, 3));
    obs_rc("body_kernel_instantiate", cudaGraphInstantiate(&e, p, 0));
    obs_rc("body_kernel_launch", cudaGraphLaunch(e, s));
    obs_ok("body_kernel_data", check_words(s, a, n, 3));
    obs_rc("body_kernel_free", cudaFree(a));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(p);
}

static void device_launch(void) {
    Full f = full();
    cudaGraphInstantiateParams ip = {};
    ip.flags = cudaGraphInstantiateFlagDeviceLaunch;
    cudaGraphExec_t e = nullptr;
    obs_rc("device_launch_instantiate", cudaGraphInstantiateWithParams(&e, f.g, &ip));
    obs_int("device_launch_result", ip.result_out);
    obs_yes("device_launch_err_node_is_memory_node",
            ip.errNode_out == f.alloc || ip.errNode_out == f.free);
    ip = {};
    ip.flags = cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagAutoFreeOnLaunch;
    obs_rc("device_launch_autofree_instantiate", cudaGraphInstantiateWithParams(&e, f.g, &ip));
    obs_int("device_launch_autofree_result", ip.result_out);
    cudaGraphDestroy(f.g);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    clone_and_instantiate();
    children(s);
    conditionals(s);
    device_launch();
    obs_rc("final_sync", cudaDeviceSynchronize());
    return 0;
}
