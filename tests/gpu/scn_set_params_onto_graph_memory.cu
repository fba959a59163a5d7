// Memset and memcpy nodes made on ordinary memory, then set onto a graph allocation through the
// node alone (cudaGraphMemsetNodeSetParams, cudaGraphMemcpyNodeSetParams1D,
// cudaGraphNodeSetParams): the graph holding the node is instantiated afterwards, when the driver
// checks each node's target again. Under graphmem that target is mapped only while graphmem covers
// it, and the setters say nothing of the node's graph. Each graph: alloc A -> memset or copy (set
// onto A) -> check every word of A -> free A; after the set, an unrelated graph's launch (under
// graphmem it unmaps the scratch pages a cover left idle, which would otherwise still back A);
// then instantiate, launch, check. Each setter runs in a process of its own (entries.cuh), so that
// one setter's effect cannot stand in for another's.
#include "entries.cuh"

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
        cudaGraphNodeParams p = memset_node_params(a, kBytes, value);
        rc = cudaGraphNodeSetParams(middle, &p);
    }
    snprintf(key, sizeof key, "%s_set_params", name);
    obs_rc(key, rc);

    snprintf(key, sizeof key, "%s_other_launch", name);
    launch_unrelated_graph(s, kBytes, key);

    run_graph_observed(name, g, s);
    cudaGraphDestroy(g);
}

static void each_setter(Setter setter, const char *name, uint32_t value) {
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    void *ordinary = nullptr, *source = nullptr;
    obs_rc("ordinary", cudaMalloc(&ordinary, kBytes));
    obs_rc("source", cudaMalloc(&source, kBytes));
    obs_rc("source_fill", cudaMemset(source, 0x5a, kBytes));
    run(name, setter, s, ordinary, source, value, bad);
    unsigned h = 1;
    cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost);
    char key[80];
    snprintf(key, sizeof key, "%s_wrong_words", name);
    obs_int(key, h);
    cudaFree(ordinary);
    cudaFree(source);
    cudaFree(bad);
    cudaStreamDestroy(s);
}

static void memset_case(void) {
    each_setter(MEMSET_SETTER, "memset", 7);
}

static void memcpy_case(void) {
    each_setter(MEMCPY_SETTER, "memcpy", 0x5a5a5a5a);
}

static void generic_case(void) {
    each_setter(GENERIC_SETTER, "generic", 9);
}

int main() {
    run_isolated("memset", memset_case);
    run_isolated("memcpy", memcpy_case);
    run_isolated("generic", generic_case);
    return 0;
}
