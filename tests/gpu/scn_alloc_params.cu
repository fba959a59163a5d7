// Parameter validation of explicit alloc and free nodes (§A1.1-§A1.7, §A2.1, §A2.2):
// NULL arguments, bad pool properties, impossible sizes, access descriptors, the generic
// cudaGraphAddNode entry, and free nodes for addresses that are not graph allocations.
#include "common.cuh"

#include <climits>

static cudaError_t try_alloc(cudaGraph_t g, cudaMemAllocNodeParams p) {
    cudaGraphNode_t node = nullptr;
    return cudaGraphAddMemAllocNode(&node, g, nullptr, 0, &p);
}

int main() {
    require_graph_memory();
    int devices = 0;
    cudaGetDeviceCount(&devices);
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t node = nullptr, first = nullptr;
    cudaMemAllocNodeParams p = alloc_params(4096);

    obs_rc("null_params", cudaGraphAddMemAllocNode(&node, g, nullptr, 0, nullptr));
    obs_rc("null_node_out", cudaGraphAddMemAllocNode(nullptr, g, nullptr, 0, &p));
    p = alloc_params(4096);
    obs_rc("null_graph", cudaGraphAddMemAllocNode(&node, nullptr, nullptr, 0, &p));
    p = alloc_params(4096);
    obs_rc("deps_count_without_list", cudaGraphAddMemAllocNode(&node, g, nullptr, 1, &p));

    p = alloc_params(4096);
    p.poolProps.allocType = cudaMemAllocationTypeInvalid;
    obs_rc("alloc_type_invalid", try_alloc(g, p));
    p = alloc_params(4096);
    p.poolProps.allocType = (cudaMemAllocationType)0x7f;
    obs_rc("alloc_type_out_of_range", try_alloc(g, p));
    p = alloc_params(4096);
    p.poolProps.location.type = cudaMemLocationTypeInvalid;
    obs_rc("location_type_invalid", try_alloc(g, p));
    p = alloc_params(4096);
    p.poolProps.location.id = devices;
    obs_rc("location_id_past_devices", try_alloc(g, p));
    p = alloc_params(4096);
    p.poolProps.location.id = -1;
    obs_rc("location_id_negative", try_alloc(g, p));
    p = alloc_params(4096);
    p.poolProps.handleTypes = cudaMemHandleTypePosixFileDescriptor;
    obs_rc("handle_types_posix_fd", try_alloc(g, p));
    p = alloc_params(SIZE_MAX);
    obs_rc("bytesize_size_max", try_alloc(g, p));
    p = alloc_params(0);
    obs_rc("bytesize_zero", try_alloc(g, p));

    cudaMemAccessDesc desc[9];
    for (int i = 0; i < 9; i++) {
        desc[i].location.type = cudaMemLocationTypeDevice;
        desc[i].location.id = i % devices;
        desc[i].flags = cudaMemAccessFlagsProtReadWrite;
    }
    p = alloc_params(4096);
    p.accessDescs = desc;
    p.accessDescCount = (size_t)devices + 1;
    obs_rc("access_descs_more_than_devices", try_alloc(g, p));
    p = alloc_params(4096);
    p.accessDescs = desc;
    p.accessDescCount = 1;
    obs_rc("access_desc_resident_rw", try_alloc(g, p));
    desc[0].flags = cudaMemAccessFlagsProtRead;
    obs_rc("access_desc_read_only", try_alloc(g, p));
    desc[0].flags = cudaMemAccessFlagsProtNone;
    obs_rc("access_desc_none", try_alloc(g, p));
    desc[0].flags = cudaMemAccessFlagsProtReadWrite;
    desc[0].location.id = devices;
    obs_rc("access_desc_bad_device", try_alloc(g, p));

    p = alloc_params(4096);
    obs_rc("valid", cudaGraphAddMemAllocNode(&first, g, nullptr, 0, &p));
    obs_yes("valid_dptr_nonnull", p.dptr != nullptr);
    void *a = p.dptr;
    cudaGraphNode_t dup[2] = {first, first};
    p = alloc_params(4096);
    obs_rc("duplicate_dependencies", cudaGraphAddMemAllocNode(&node, g, dup, 2, &p));

    // A1.1: cudaGraphAddNode writes the address back into nodeParams->alloc.dptr.
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeMemAlloc;
    np.alloc.poolProps = alloc_params(0).poolProps;
    np.alloc.bytesize = 8192;
    cudaGraphNode_t generic = nullptr;
    obs_rc("add_node_alloc", cudaGraphAddNode(&generic, g, nullptr, nullptr, 0, &np));
    obs_yes("add_node_alloc_dptr_nonnull", np.alloc.dptr != nullptr);
    obs_yes("add_node_alloc_dptr_distinct", np.alloc.dptr != a);
    cudaGraphNodeType t = cudaGraphNodeTypeEmpty;
    cudaGraphNodeGetType(generic, &t);
    obs_yes("add_node_alloc_type", t == cudaGraphNodeTypeMemAlloc);

    // Free nodes.
    obs_rc("free_null_dptr", cudaGraphAddMemFreeNode(&node, g, &first, 1, nullptr));
    void *plain = nullptr;
    cudaMalloc(&plain, 4096);
    obs_rc("free_cuda_malloc_address", cudaGraphAddMemFreeNode(&node, g, &first, 1, plain));
    obs_rc("free_bogus_address",
           cudaGraphAddMemFreeNode(&node, g, &first, 1, (void *)(uintptr_t)0x1234000));
    obs_rc("free_interior_address", cudaGraphAddMemFreeNode(&node, g, &first, 1, (char *)a + 256));
    cudaGraphNode_t freed = nullptr;
    obs_rc("free_valid", cudaGraphAddMemFreeNode(&freed, g, &first, 1, a));
    obs_rc("free_twice_same_graph", cudaGraphAddMemFreeNode(&node, g, &freed, 1, a));
    void *b = np.alloc.dptr;
    np = {};
    np.type = cudaGraphNodeTypeMemFree;
    np.free.dptr = b;
    cudaGraphNode_t generic_free = nullptr;
    obs_rc("add_node_free", cudaGraphAddNode(&generic_free, g, &generic, nullptr, 1, &np));

    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    obs_rc("launch", cudaGraphLaunch(e, s));
    obs_rc("sync", cudaStreamSynchronize(s));
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaFree(plain);
    return 0;
}
