// Memset and memcpy nodes made on ordinary memory, then set onto a graph allocation through the
// node alone (cudaGraphMemsetNodeSetParams, cudaGraphMemcpyNodeSetParams1D,
// cudaGraphNodeSetParams): the graph holding the node is instantiated afterwards, when the driver
// checks each node's target again. Under graphmem that target is mapped only while graphmem covers
// it, and the setters say nothing of the node's graph. Each graph: alloc A -> memset or copy (set
// onto A) -> check every word of A -> free A; instantiate, launch, check.
#include "common.cuh"

static const size_t kBytes = 4u << 20;
static const size_t kWords = kBytes / 4;

enum Setter { MEMSET_SETTER, MEMCPY_SETTER, GENERIC_SETTER };

// One graph whose middle node starts on `ordinary` (a plain buffer) and is set onto A by `setter`;
// `source` holds words of `value` for the copy.
static void run(const char *name, Setter setter, cudaStream_t s, void *ordinary, void *source,
                uint32_t value, unsigned *bad) {
    char key[80];
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t alloc, middle, check, free_node;
    void *a = nullptr;
    snprintf(key, sizeof key, "%s_alloc_node", name);
    obs_rc(key, add_alloc(&alloc, g, nullptr, 0, kBytes, &a));
    cudaError_t rc;
    if (setter == MEMCPY_SETTER) {
        rc = cudaGraphAddMemcpyNode1D(&middle, g, &alloc, 1, ordinary, source, kBytes,
                                      cudaMemcpyDeviceToDevice);
    } else {
        cudaMemsetParams mp = memset_words(ordinary, kBytes, 1);
        rc = cudaGraphAddMemsetNode(&middle, g, &alloc, 1, &mp);
    }
    snprintf(key, sizeof key, "%s_middle_node", name);
    obs_rc(key, rc);
    snprintf(key, sizeof key, "%s_check_node", name);
    obs_rc(key,
           add_check(&check, g, &middle, 1, a, kWords, value, bad, (const void *)k_check_value));
    snprintf(key, sizeof key, "%s_free_node", name);
    obs_rc(key, cudaGraphAddMemFreeNode(&free_node, g, &check, 1, a));

    if (setter == MEMSET_SETTER) {
        cudaMemsetParams mp = memset_words(a, kBytes, value);
        rc = cudaGraphMemsetNodeSetParams(middle, &mp);
    } else if (setter == MEMCPY_SETTER) {
        rc = cudaGraphMemcpyNodeSetParams1D(middle, a, source, kBytes, cudaMemcpyDeviceToDevice);
    } else {
        cudaGraphNodeParams p = {};
        p.type = cudaGraphNodeTypeMemset;
        cudaMemsetParams m = memset_words(a, kBytes, value);
        p.memset.dst = m.dst;
        p.memset.pitch = m.pitch;
        p.memset.value = m.value;
        p.memset.elementSize = m.elementSize;
        p.memset.width = m.width;
        p.memset.height = m.height;
        rc = cudaGraphNodeSetParams(middle, &p);
    }
    snprintf(key, sizeof key, "%s_set_params", name);
    obs_rc(key, rc);

    cudaGraphExec_t e = nullptr;
    snprintf(key, sizeof key, "%s_instantiate", name);
    obs_rc(key, cudaGraphInstantiate(&e, g, 0));
    snprintf(key, sizeof key, "%s_launch", name);
    obs_rc(key, e ? cudaGraphLaunch(e, s) : cudaErrorInvalidValue);
    snprintf(key, sizeof key, "%s_sync", name);
    obs_rc(key, cudaStreamSynchronize(s));
    if (e)
        cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    void *ordinary = nullptr, *source = nullptr;
    obs_rc("ordinary", cudaMalloc(&ordinary, kBytes));
    obs_rc("source", cudaMalloc(&source, kBytes));
    obs_rc("source_fill", cudaMemset(source, 0x5a, kBytes));
    run("memset", MEMSET_SETTER, s, ordinary, source, 7, bad);
    run("memcpy", MEMCPY_SETTER, s, ordinary, source, 0x5a5a5a5a, bad);
    run("generic", GENERIC_SETTER, s, ordinary, source, 9, bad);
    unsigned h = 1;
    cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    obs_int("wrong_words", h);
    cudaFree(ordinary);
    cudaFree(source);
    cudaFree(bad);
    cudaStreamDestroy(s);
    return 0;
}
