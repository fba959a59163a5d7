/* What the routing tests that drive the mock driver directly share: its test controls (exported by
 * the mock, not driver entries; tests/routing/mock/mock.h says what each does) and a check that
 * exits 2 on a driver error, naming the call. */
#ifndef GRAPHMEM_TESTS_ROUTING_MOCK_TEST_H
#define GRAPHMEM_TESTS_ROUTING_MOCK_TEST_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

void gm_mock_hold_next_update(void);
void gm_mock_hold_next_allocation(void);
void gm_mock_wait_held(void);
void gm_mock_release_update(void);
long gm_mock_capture_queries(void);
long gm_mock_legacy_stream_uses(void);
void gm_mock_fail_node_lists(int count);

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #x, (int)r_);                 \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* The driver started, device 0's primary context current on this thread (and returned), and a
 * non-blocking stream made in it. */
static inline CUstream mock_test_stream(CUcontext *ctx_out) {
    CK(cuInit(0));
    CUdevice device;
    CUcontext ctx;
    CK(cuDeviceGet(&device, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, device));
    CK(cuCtxSetCurrent(ctx));
    if (ctx_out != NULL)
        *ctx_out = ctx;
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    return stream;
}

#endif
