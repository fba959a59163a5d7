// Graph memory attributes and trim (§A10, §A11): error codes for invalid devices,
// attributes and values; which attributes can be set; the cuda-bindings relations right after an
// unsynchronized launch of a 1-byte graph (§A10.7); the hip-tests double-memory sequence with
// byte counts as INFO (§A10.8); High reset semantics (§A10.4).
#include "common.cuh"

#include <climits>

static void errors(void) {
    int devices = 0;
    cudaGetDeviceCount(&devices);
    uint64_t v = 0;
    obs_rc("get_device_negative",
           cudaDeviceGetGraphMemAttribute(-1, cudaGraphMemAttrUsedMemCurrent, &v));
    obs_rc("get_device_count",
           cudaDeviceGetGraphMemAttribute(devices, cudaGraphMemAttrUsedMemCurrent, &v));
    obs_rc("get_device_int_max",
           cudaDeviceGetGraphMemAttribute(INT_MAX, cudaGraphMemAttrUsedMemCurrent, &v));
    obs_rc("get_attr_invalid", cudaDeviceGetGraphMemAttribute(0, (cudaGraphMemAttributeType)7, &v));
    obs_rc("get_value_null",
           cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, nullptr));
    v = 0;
    obs_rc("set_device_negative",
           cudaDeviceSetGraphMemAttribute(-1, cudaGraphMemAttrUsedMemHigh, &v));
    obs_rc("set_device_count",
           cudaDeviceSetGraphMemAttribute(devices, cudaGraphMemAttrUsedMemHigh, &v));
    obs_rc("set_attr_invalid", cudaDeviceSetGraphMemAttribute(0, (cudaGraphMemAttributeType)7, &v));
    obs_rc("set_used_current",
           cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &v));
    obs_rc("set_reserved_current",
           cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &v));
    obs_rc("set_used_high_zero",
           cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &v));
    obs_rc("set_reserved_high_zero",
           cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &v));
    v = 1;
    obs_rc("set_used_high_nonzero",
           cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &v));
    obs_rc("set_reserved_high_nonzero",
           cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &v));
    obs_rc("set_value_null",
           cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, nullptr));
    obs_rc("trim_device_negative", cudaDeviceGraphMemTrim(-1));
    obs_rc("trim_device_count", cudaDeviceGraphMemTrim(devices));
    obs_rc("trim_no_graph_memory", cudaDeviceGraphMemTrim(0));
    GraphMemAttrs a = read_attrs();
    obs_yes("fresh_all_zero",
            a.used == 0 && a.used_high == 0 && a.reserved == 0 && a.reserved_high == 0);
}

static void one_byte(cudaStream_t s) {
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nf = nullptr;
    void *p = nullptr;
    add_alloc(&na, g, nullptr, 0, 1, &p);
    cudaGraphAddMemFreeNode(&nf, g, &na, 1, p);
    cudaGraphExec_t e = nullptr;
    cudaGraphInstantiate(&e, g, 0);
    obs_rc("one_byte_launch", cudaGraphLaunch(e, s));
    GraphMemAttrs a = read_attrs();
    obs_yes("one_byte_used_ge_1", a.used >= 1);
    obs_yes("one_byte_used_high_eq_used", a.used_high == a.used);
    obs_yes("one_byte_reserved_eq_used_high", a.reserved == a.used_high);
    obs_yes("one_byte_reserved_high_eq_reserved", a.reserved_high == a.reserved);
    info_attrs("one_byte", a);
    cudaStreamSynchronize(s);
    a = read_attrs();
    obs_yes("one_byte_synced_used_kept", a.used >= 1);
    cudaDeviceGraphMemTrim(0);
    a = read_attrs();
    obs_yes("one_byte_trimmed_used_zero", a.used == 0 && a.reserved == 0);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
}

static void double_memory(cudaStream_t s) {
    const size_t size = 256u << 20;
    cudaGraph_t g[2] = {};
    cudaGraphExec_t e[2] = {};
    void *p[2];
    uint64_t zero = 0;
    cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero);
    cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrReservedMemHigh, &zero);
    for (int i = 0; i < 2; i++) {
        cudaGraphCreate(&g[i], 0);
        cudaGraphNode_t na = nullptr;
        add_alloc(&na, g[i], nullptr, 0, size, &p[i]);
        cudaGraphInstantiate(&e[i], g[i], 0);
        char key[64];
        snprintf(key, sizeof key, "double%d_launch", i);
        obs_rc(key, cudaGraphLaunch(e[i], s));
        cudaStreamSynchronize(s);
        GraphMemAttrs a = read_attrs();
        snprintf(key, sizeof key, "double%d", i);
        obs_attr_relations(key, a, (i + 1) * size);
        snprintf(key, sizeof key, "double%d_used_high_ge_need", i);
        obs_yes(key, a.used_high >= (i + 1) * size);
    }
    // Trim while both allocations are unfreed keeps them (§A11.1).
    cudaDeviceGraphMemTrim(0);
    GraphMemAttrs a = read_attrs();
    obs_attr_relations("double_unfreed_trim", a, 2 * size);
    for (int i = 0; i < 2; i++) {
        cudaFree(p[i]);
        cudaGraphExecDestroy(e[i]);
        cudaGraphDestroy(g[i]);
    }
    a = read_attrs();
    obs_yes("double_freed_used_kept", a.used >= 2 * size);
    obs_rc("double_trim", cudaDeviceGraphMemTrim(0));
    a = read_attrs();
    obs_yes("double_trimmed_used_zero", a.used == 0);
    obs_yes("double_trimmed_reserved_zero", a.reserved == 0);
    obs_yes("double_trimmed_highs_kept", a.used_high >= 2 * size && a.reserved_high >= 2 * size);
    info_attrs("double_trimmed", a);
    reset_highs();
    a = read_attrs();
    obs_yes("double_reset_highs_zero", a.used_high == 0 && a.reserved_high == 0);
    info_attrs("double_reset", a);
}

// A10.4: a reset while memory is in use sets the High to the current value.
static void reset_while_used(cudaStream_t s) {
    const size_t size = 32u << 20;
    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr;
    void *p = nullptr;
    add_alloc(&na, g, nullptr, 0, size, &p);
    cudaGraphExec_t e = nullptr;
    cudaGraphInstantiate(&e, g, 0);
    cudaGraphLaunch(e, s);
    cudaStreamSynchronize(s);
    reset_highs();
    GraphMemAttrs a = read_attrs();
    obs_yes("reset_in_use_used_high_eq_used", a.used_high == a.used);
    obs_yes("reset_in_use_reserved_high_eq_reserved", a.reserved_high == a.reserved);
    obs_yes("reset_in_use_used_nonzero", a.used >= size);
    info_attrs("reset_in_use", a);
    cudaFree(p);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaDeviceGraphMemTrim(0);
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    errors();
    one_byte(s);
    double_memory(s);
    reset_while_used(s);
    return 0;
}
