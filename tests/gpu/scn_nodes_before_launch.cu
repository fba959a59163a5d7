// Memset and memcpy nodes whose target is a graph allocation that has never been mapped
// (§A1.13, iree-org/iree#13984): 1D and 3D copies, memsets of every element size, and
// a device-to-device copy between two graph allocations; added before the first launch.
#include "common.cuh"

int main() {
    require_graph_memory();
    const size_t n = 1 << 16, bytes = n * sizeof(uint32_t);
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    uint32_t *hin = nullptr, *hout = nullptr;
    cudaMallocHost(&hin, bytes);
    cudaMallocHost(&hout, 4 * bytes);
    for (size_t i = 0; i < n; i++)
        hin[i] = 9 * (uint32_t)i + 1;

    cudaGraph_t g = nullptr;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t na = nullptr, nb = nullptr, m1 = nullptr, m2 = nullptr, m4 = nullptr,
                    c1 = nullptr, c3 = nullptr, cdd = nullptr, out = nullptr;
    void *a = nullptr, *b = nullptr;
    add_alloc(&na, g, nullptr, 0, 4 * bytes, &a);
    add_alloc(&nb, g, nullptr, 0, bytes, &b);
    cudaGraphNode_t both[2] = {na, nb};

    // a = [memset 8-bit | memset 16-bit | memset 32-bit | 1D copy of hin]
    cudaMemsetParams ms = {};
    ms.dst = a;
    ms.value = 0xab;
    ms.elementSize = 1;
    ms.width = bytes;
    ms.height = 1;
    obs_rc("memset8_node", cudaGraphAddMemsetNode(&m1, g, &na, 1, &ms));
    ms.dst = (char *)a + bytes;
    ms.value = 0x1234;
    ms.elementSize = 2;
    ms.width = bytes / 2;
    obs_rc("memset16_node", cudaGraphAddMemsetNode(&m2, g, &na, 1, &ms));
    ms.dst = (char *)a + 2 * bytes;
    ms.value = 0xdeadbeef;
    ms.elementSize = 4;
    ms.width = bytes / 4;
    obs_rc("memset32_node", cudaGraphAddMemsetNode(&m4, g, &na, 1, &ms));
    obs_rc("memcpy1d_node", cudaGraphAddMemcpyNode1D(&c1, g, &na, 1, (char *)a + 3 * bytes, hin,
                                                     bytes, cudaMemcpyHostToDevice));
    // b = hin through a 3D copy node, then a device-to-device copy b -> a's last quarter is
    // checked against hin again.
    cudaMemcpy3DParms p3 = {};
    p3.srcPtr = make_cudaPitchedPtr(hin, bytes, bytes, 1);
    p3.dstPtr = make_cudaPitchedPtr(b, bytes, bytes, 1);
    p3.extent = make_cudaExtent(bytes, 1, 1);
    p3.kind = cudaMemcpyHostToDevice;
    obs_rc("memcpy3d_node", cudaGraphAddMemcpyNode(&c3, g, both, 2, &p3));
    cudaGraphNode_t after[5] = {m1, m2, m4, c1, c3};
    obs_rc("memcpy_d2d_node", cudaGraphAddMemcpyNode1D(&cdd, g, after, 5, (char *)a + 3 * bytes, b,
                                                       bytes, cudaMemcpyDeviceToDevice));
    obs_rc("memcpy_out_node",
           cudaGraphAddMemcpyNode1D(&out, g, &cdd, 1, hout, a, 4 * bytes, cudaMemcpyDeviceToHost));
    cudaGraphNode_t fa = nullptr, fb = nullptr;
    cudaGraphAddMemFreeNode(&fa, g, &out, 1, a);
    cudaGraphAddMemFreeNode(&fb, g, &out, 1, b);

    cudaGraphExec_t e = nullptr;
    obs_rc("instantiate", cudaGraphInstantiate(&e, g, 0));
    for (int launch = 0; launch < 2; launch++) {
        memset(hout, 0, 4 * bytes);
        char key[64];
        snprintf(key, sizeof key, "launch%d", launch);
        obs_rc(key, cudaGraphLaunch(e, s));
        snprintf(key, sizeof key, "launch%d_sync", launch);
        obs_rc(key, cudaStreamSynchronize(s));
        const uint8_t *b8 = (const uint8_t *)hout;
        const uint16_t *b16 = (const uint16_t *)(b8 + bytes);
        const uint32_t *b32 = (const uint32_t *)(b8 + 2 * bytes);
        const uint32_t *copied = (const uint32_t *)(b8 + 3 * bytes);
        bool m8 = true, m16 = true, m32 = true, cp = true;
        for (size_t i = 0; i < bytes; i++)
            m8 &= b8[i] == 0xab;
        for (size_t i = 0; i < bytes / 2; i++)
            m16 &= b16[i] == 0x1234;
        for (size_t i = 0; i < n; i++) {
            m32 &= b32[i] == 0xdeadbeef;
            cp &= copied[i] == hin[i];
        }
        snprintf(key, sizeof key, "launch%d_memset8", launch);
        obs_ok(key, m8);
        snprintf(key, sizeof key, "launch%d_memset16", launch);
        obs_ok(key, m16);
        snprintf(key, sizeof key, "launch%d_memset32", launch);
        obs_ok(key, m32);
        snprintf(key, sizeof key, "launch%d_copies", launch);
        obs_ok(key, cp);
    }
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    return 0;
}
