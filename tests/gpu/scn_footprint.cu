// The graphMemoryFootprint sample (§A1.10, §A5.2, §A6.5, §A6.6, §A6.8, §A6.9, §A9.3, §A10.4,
// §A10.5, §A10.9, §A11.1): the four attributes before and after launches, frees and trims, for 8
// graphs that free what they allocate (one stream, then 8 streams) and for 8 graphs that each
// leave an allocation unfreed. Byte counts are INFO; relations are observed.
#include "common.cuh"

static const int kGraphs = 8;
static const size_t kBytes = 64u << 20, kWords = kBytes / sizeof(uint32_t);

static cudaGraph_t build(bool free_it, void **dptr) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr, nfree = nullptr;
    add_alloc(&na, g, nullptr, 0, kBytes, dptr);
    add_fill(&nf, g, &na, 1, *dptr, kWords, 1);
    if (free_it)
        cudaGraphAddMemFreeNode(&nfree, g, &nf, 1, *dptr);
    return g;
}

static void trim_and_observe(const char *when) {
    char key[96];
    snprintf(key, sizeof key, "%s_before_trim_sync", when);
    obs_rc(key, cudaDeviceSynchronize());
    snprintf(key, sizeof key, "%s_trim", when);
    obs_rc(key, cudaDeviceGraphMemTrim(0));
    GraphMemAttrs a = read_attrs();
    snprintf(key, sizeof key, "%s_trim_used_zero", when);
    obs_yes(key, a.used == 0);
    snprintf(key, sizeof key, "%s_trim_reserved_zero", when);
    obs_yes(key, a.reserved == 0);
    snprintf(key, sizeof key, "%s_trim", when);
    info_attrs(key, a);
}

int main() {
    require_graph_memory();
    cudaStream_t s[kGraphs];
    for (int i = 0; i < kGraphs; i++)
        cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking);

    cudaGraph_t g[kGraphs] = {};
    cudaGraphExec_t e[kGraphs] = {};
    void *p[kGraphs];
    for (int i = 0; i < kGraphs; i++) {
        g[i] = build(true, &p[i]);
        cudaGraphInstantiate(&e[i], g[i], 0);
    }
    GraphMemAttrs a = read_attrs();
    obs_yes("instantiated_used_zero", a.used == 0);
    obs_yes("instantiated_reserved_zero", a.reserved == 0);
    info_attrs("instantiated", a);

    bool ok = true;
    for (int i = 0; i < kGraphs; i++)
        ok &= cudaGraphLaunch(e[i], s[0]) == cudaSuccess;
    obs_ok("one_stream_launches", ok);
    // Read right after the asynchronous launches: mapping happens at launch (§A6.5).
    a = read_attrs();
    obs_attr_relations("one_stream_unsynced", a, kBytes);
    obs_rc("one_stream_sync", cudaStreamSynchronize(s[0]));
    a = read_attrs();
    obs_attr_relations("one_stream", a, kBytes);
    obs_yes("one_stream_shares_memory", a.used < 2 * kBytes);
    trim_and_observe("one_stream");

    ok = true;
    for (int i = 0; i < kGraphs; i++)
        ok &= cudaGraphLaunch(e[i], s[i]) == cudaSuccess;
    obs_ok("eight_streams_launches", ok);
    a = read_attrs();
    obs_attr_relations("eight_streams_unsynced", a, kBytes);
    trim_and_observe("eight_streams");

    for (int i = 0; i < kGraphs; i++) {
        cudaGraphExecDestroy(e[i]);
        cudaGraphDestroy(g[i]);
    }
    reset_highs();

    for (int i = 0; i < kGraphs; i++) {
        g[i] = build(false, &p[i]);
        cudaGraphInstantiate(&e[i], g[i], 0);
    }
    bool distinct = true;
    for (int i = 0; i < kGraphs; i++)
        for (int j = 0; j < i; j++)
            distinct &= p[i] != p[j];
    obs_yes("unfreed_distinct_addresses", distinct);
    ok = true;
    for (int i = 0; i < kGraphs; i++)
        ok &= cudaGraphLaunch(e[i], s[0]) == cudaSuccess;
    obs_ok("unfreed_launches", ok);
    obs_rc("unfreed_sync", cudaStreamSynchronize(s[0]));
    a = read_attrs();
    obs_attr_relations("unfreed", a, kGraphs * kBytes);
    obs_rc("unfreed_trim", cudaDeviceGraphMemTrim(0));
    a = read_attrs();
    obs_attr_relations("unfreed_trimmed", a, kGraphs * kBytes);
    bool data = true;
    for (int i = 0; i < kGraphs; i++)
        data &= check_words(s[0], p[i], kWords, 1);
    obs_ok("unfreed_data_after_trim", data);

    ok = true;
    for (int i = 0; i < kGraphs; i++)
        ok &= cudaFree(p[i]) == cudaSuccess;
    obs_ok("unfreed_cuda_free", ok);
    GraphMemAttrs freed = read_attrs();
    // A free does not lower Used; only a trim does (§A9.3, §A10.9).
    obs_yes("freed_used_unchanged", freed.used == a.used);
    info_attrs("freed", freed);
    trim_and_observe("freed");
    a = read_attrs();
    obs_yes("freed_trim_highs_kept",
            a.used_high >= kGraphs * kBytes && a.reserved_high >= kGraphs * kBytes);
    reset_highs();
    a = read_attrs();
    obs_yes("reset_highs_zero", a.used_high == 0 && a.reserved_high == 0);
    info_attrs("reset", a);
    for (int i = 0; i < kGraphs; i++) {
        cudaGraphExecDestroy(e[i]);
        cudaGraphDestroy(g[i]);
    }
    return 0;
}
