// Graph memory of two devices side by side (§A10, §A11 per device; issue: per-device
// pools): the four attributes and trim of one device never move with the other's launches, trims
// and resets; graphs on different devices keep their data apart, also while both hold unfreed
// allocations; a graph is relaunched after its device was trimmed; a capture on a stream of the
// device that is not current allocates on the stream's device.
#include "common.cuh"

static const size_t kMiB = 1u << 20;

// A captured graph on `s` (of the current device): allocate, fill with v + i, free unless `keep`.
static cudaGraphExec_t capture(cudaStream_t s, size_t bytes, uint32_t v, bool keep, void **out) {
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    void *p = nullptr;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaMallocAsync(&p, bytes, s);
    fill_words(s, p, bytes / sizeof(uint32_t), v);
    if (!keep)
        cudaFreeAsync(p, s);
    cudaError_t rc = cudaStreamEndCapture(s, &g);
    if (rc == cudaSuccess)
        rc = cudaGraphInstantiate(&e, g, 0);
    obs_rc("capture_instantiate", rc);
    cudaGraphDestroy(g);
    *out = p;
    return e;
}

static void launch(cudaGraphExec_t e, cudaStream_t s, const char *key) {
    cudaError_t rc = cudaGraphLaunch(e, s);
    if (rc == cudaSuccess)
        rc = cudaStreamSynchronize(s);
    obs_rc(key, rc);
}

static void obs_device(const char *when, int device, uint64_t need) {
    char key[48];
    snprintf(key, sizeof key, "%s_dev%d", when, device);
    obs_attr_relations(key, read_attrs_of(device), need);
}

static void obs_zero(const char *when, int device) {
    char key[96];
    GraphMemAttrs a = read_attrs_of(device);
    snprintf(key, sizeof key, "%s_dev%d_reserved_zero", when, device);
    obs_yes(key, a.reserved == 0);
    snprintf(key, sizeof key, "%s_dev%d_used_zero", when, device);
    obs_yes(key, a.used == 0);
}

// Captures on `s1` (device 1) with device 0 current. Only allocation and free are captured: a
// kernel may not be launched into another device's stream.
static void cross_device_capture(cudaStream_t s1) {
    cudaSetDevice(0);
    GraphMemAttrs before0 = read_attrs_of(0), before1 = read_attrs_of(1);
    cudaGraph_t g = nullptr;
    void *p = nullptr, *q = nullptr;
    obs_rc("cross_begin", cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    obs_rc("cross_malloc", cudaMallocAsync(&p, 8 * kMiB, s1));
    obs_rc("cross_malloc_freed", cudaMallocAsync(&q, 4 * kMiB, s1));
    obs_rc("cross_free", cudaFreeAsync(q, s1));
    obs_rc("cross_end", cudaStreamEndCapture(s1, &g));
    cudaGraphNode_t nodes[8];
    size_t n = graph_nodes(g, nodes, 8);
    for (size_t i = 0; i < n; i++) {
        cudaGraphNodeType type;
        cudaGraphNodeGetType(nodes[i], &type);
        if (type != cudaGraphNodeTypeMemAlloc)
            continue;
        cudaMemAllocNodeParams params = {};
        cudaGraphMemAllocNodeGetParams(nodes[i], &params);
        char key[64];
        snprintf(key, sizeof key, "cross_node_%zu_location", params.bytesize / kMiB);
        obs_int(key, params.poolProps.location.id);
    }
    cudaGraphExec_t e = nullptr;
    obs_rc("cross_instantiate", cudaGraphInstantiate(&e, g, 0));
    cudaGraphDestroy(g);
    obs_rc("cross_launch", cudaGraphLaunch(e, s1));
    obs_rc("cross_sync", cudaStreamSynchronize(s1));
    obs_yes("cross_dev0_used_unchanged", read_attrs_of(0).used == before0.used);
    obs_yes("cross_dev1_used_grew_8MiB", read_attrs_of(1).used >= before1.used + 8 * kMiB);
    cudaPointerAttributes at = {};
    obs_rc("cross_pointer_attributes", cudaPointerGetAttributes(&at, p));
    obs_int("cross_pointer_device", at.device);
    cudaSetDevice(1);
    fill_words(s1, p, 8 * kMiB / 4, 3000);
    cudaStreamSynchronize(s1);
    obs_ok("cross_data", host_check(p, 8 * kMiB / 4, 3000));
    obs_rc("cross_free_outside", cudaFree(p));
    cudaGraphExecDestroy(e);
    cudaDeviceGraphMemTrim(1);
}

int main() {
    require_two_peer_devices();
    cudaStream_t s[2];
    for (int d = 1; d >= 0; d--) {
        cudaSetDevice(d);
        cudaStreamCreateWithFlags(&s[d], cudaStreamNonBlocking);
    }
    obs_zero("fresh", 0);
    obs_zero("fresh", 1);

    // Graphs that free what they allocate: 64 MiB on device 0, 96 MiB on device 1.
    void *p0 = nullptr, *p1 = nullptr;
    cudaSetDevice(0);
    cudaGraphExec_t e0 = capture(s[0], 64 * kMiB, 10, false, &p0);
    cudaSetDevice(1);
    cudaGraphExec_t e1 = capture(s[1], 96 * kMiB, 20, false, &p1);
    obs_zero("instantiated", 0);
    obs_zero("instantiated", 1);
    cudaSetDevice(0);
    launch(e0, s[0], "launch_dev0");
    GraphMemAttrs a0 = read_attrs_of(0);
    obs_yes("after_dev0_launch_dev0_reserved_ge_64MiB", a0.reserved >= 64 * kMiB);
    obs_yes("after_dev0_launch_dev0_high_ge_64MiB", a0.used_high >= 64 * kMiB);
    obs_zero("after_dev0_launch", 1);
    cudaSetDevice(1);
    launch(e1, s[1], "launch_dev1");
    GraphMemAttrs a1 = read_attrs_of(1);
    obs_yes("after_dev1_launch_dev1_reserved_ge_96MiB", a1.reserved >= 96 * kMiB);
    obs_yes("after_dev1_launch_dev0_unchanged",
            read_attrs_of(0).reserved == a0.reserved && read_attrs_of(0).used_high == a0.used_high);

    // Trim and high resets are per device.
    obs_rc("trim_dev0", cudaDeviceGraphMemTrim(0));
    obs_yes("trim_dev0_dev0_reserved_zero", read_attrs_of(0).reserved == 0);
    obs_yes("trim_dev0_dev1_unchanged", read_attrs_of(1).reserved == a1.reserved);
    uint64_t zero = 0;
    obs_rc("reset_dev1_high",
           cudaDeviceSetGraphMemAttribute(1, cudaGraphMemAttrReservedMemHigh, &zero));
    obs_yes("reset_dev1_dev1_high_is_current",
            read_attrs_of(1).reserved_high == read_attrs_of(1).reserved);
    obs_yes("reset_dev1_dev0_high_kept", read_attrs_of(0).reserved_high == a0.reserved_high);
    obs_rc("trim_dev1", cudaDeviceGraphMemTrim(1));
    obs_zero("trim_both", 0);
    obs_zero("trim_both", 1);

    // Relaunch after the trims: memory comes back on the right device only.
    cudaSetDevice(0);
    launch(e0, s[0], "relaunch_dev0");
    obs_device("relaunch", 0, 64 * kMiB);
    obs_yes("relaunch_dev0_dev1_reserved_zero", read_attrs_of(1).reserved == 0);

    // Unfreed allocations on both devices at once keep their own data and their own memory.
    void *k0 = nullptr, *k1 = nullptr;
    cudaSetDevice(0);
    cudaGraphExec_t u0 = capture(s[0], 40 * kMiB, 1000, true, &k0);
    cudaSetDevice(1);
    cudaGraphExec_t u1 = capture(s[1], 40 * kMiB, 2000, true, &k1);
    cudaSetDevice(0);
    obs_rc("unfreed_launch_dev0", cudaGraphLaunch(u0, s[0]));
    cudaSetDevice(1);
    obs_rc("unfreed_launch_dev1", cudaGraphLaunch(u1, s[1]));
    cudaSetDevice(0);
    launch(e0, s[0], "launch_dev0_beside_unfreed");
    cudaSetDevice(1);
    launch(e1, s[1], "launch_dev1_beside_unfreed");
    cudaDeviceSynchronize();
    cudaSetDevice(0);
    cudaDeviceSynchronize();
    obs_ok("unfreed_dev0_data", host_check(k0, 40 * kMiB / 4, 1000));
    obs_ok("unfreed_dev1_data", host_check(k1, 40 * kMiB / 4, 2000));
    cudaPointerAttributes at0 = {}, at1 = {};
    cudaPointerGetAttributes(&at0, k0);
    cudaPointerGetAttributes(&at1, k1);
    obs_int("unfreed_dev0_pointer_device", at0.device);
    obs_int("unfreed_dev1_pointer_device", at1.device);
    cudaDeviceGraphMemTrim(0);
    cudaDeviceGraphMemTrim(1);
    obs_device("unfreed_trimmed", 0, 40 * kMiB);
    obs_device("unfreed_trimmed", 1, 40 * kMiB);
    obs_rc("free_dev1_unfreed", cudaFree(k1));
    obs_device("dev1_freed", 0, 40 * kMiB);
    cudaDeviceGraphMemTrim(1);
    obs_zero("dev1_freed_trimmed", 1);
    obs_rc("free_dev0_unfreed", cudaFree(k0));
    cudaDeviceGraphMemTrim(0);
    obs_zero("all_freed_trimmed", 0);

    // A capture on device 1's stream while device 0 is current: cudaMallocAsync takes the stream's
    // device, not the current one (§A4.2: the pool of the stream's device).
    cross_device_capture(s[1]);

    for (cudaGraphExec_t e : {e0, e1, u0, u1})
        cudaGraphExecDestroy(e);
    return 0;
}
