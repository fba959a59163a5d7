/* Stream identities (shim/bridge/streams.c): default streams are keyed by their context's index in
 * a table that grows in chunks of 256. A context the table has no room for (its chunk cannot be
 * allocated here, --wrap=calloc; or more contexts than keys tell apart) gets a key graphmem cannot
 * name a stream by (gm_stream_handle refuses it) and shares with every other such context: it is
 * not usable (gm_stream_key_usable), so a served launch there is refused rather than fenced by
 * nothing. That is not remembered: once memory is back, the same context gets a usable key of its
 * own. Regular streams are always usable. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "interpose/driver.h"
#include "streams.h"

gm_driver_table_t gm_drv;
gm_real_table_t gm_real;

void *__real_calloc(size_t count, size_t size);
void *__wrap_calloc(size_t count, size_t size);

static atomic_bool no_host_memory;

void *__wrap_calloc(size_t count, size_t size) {
    return atomic_load(&no_host_memory) ? NULL : __real_calloc(count, size);
}

static CUcontext current;

static CUresult CUDAAPI get_current(CUcontext *ctx) {
    *ctx = current;
    return CUDA_SUCCESS;
}

static CUcontext context_number(unsigned i) {
    return (CUcontext)(uintptr_t)(0x10000 + 64 * (uintptr_t)i);
}

static void test_context_without_room(void) {
    /* The first chunk's 256 contexts, each with a usable key of its own. */
    uint64_t first = 0;
    for (unsigned i = 0; i < 256; i++) {
        current = context_number(i);
        uint64_t key = gm_stream_key(NULL, false);
        CHECK(gm_stream_key_usable(key));
        if (i == 0)
            first = key;
        else
            CHECK(key != first);
    }
    /* The 257th needs a second chunk, and there is no host memory for it. */
    current = context_number(256);
    atomic_store(&no_host_memory, true);
    uint64_t legacy = gm_stream_key(CU_STREAM_LEGACY, false);
    uint64_t per_thread = gm_stream_key(NULL, true);
    atomic_store(&no_host_memory, false);
    CUstream stream;
    CUcontext context;
    CHECK(!gm_stream_key_usable(legacy));
    CHECK(!gm_stream_key_usable(per_thread));
    CHECK(!gm_stream_handle(legacy, &stream, &context));
    /* Memory back: the same context gets a key of its own, which names it. */
    uint64_t later = gm_stream_key(CU_STREAM_LEGACY, false);
    CHECK(gm_stream_key_usable(later));
    CHECK(later != legacy);
    CHECK(gm_stream_handle(later, &stream, &context));
    CHECK(stream == CU_STREAM_LEGACY && context == context_number(256));
    /* A regular stream is its handle. */
    CHECK(gm_stream_key_usable(gm_stream_key((CUstream)(uintptr_t)0x7f0000001000ull, false)));
}

int main(void) {
    gm_drv.cuCtxGetCurrent = get_current;
    RUN_TEST(test_context_without_room);
    return gm_check_summary();
}
