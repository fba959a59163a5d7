#include "streams.h"

#include <sys/syscall.h>
#include <unistd.h>

#define GM_STREAM_KEY_PER_THREAD_TAG 2ull

static _Thread_local uint64_t thread_key;

static uint64_t per_thread_key(void) {
    if (thread_key == 0)
        thread_key = ((uint64_t)syscall(SYS_gettid) << 8) | GM_STREAM_KEY_PER_THREAD_TAG;
    return thread_key;
}

uint64_t gm_stream_key(CUstream stream, bool ptsz) {
    uintptr_t value = (uintptr_t)stream;
    if (value == 0)
        return ptsz ? per_thread_key() : GM_STREAM_KEY_LEGACY;
    if (stream == CU_STREAM_LEGACY)
        return GM_STREAM_KEY_LEGACY;
    if (stream == CU_STREAM_PER_THREAD)
        return per_thread_key();
    return (uint64_t)value;
}

CUstream gm_stream_handle(uint64_t key) {
    if (key == GM_STREAM_KEY_LEGACY)
        return CU_STREAM_LEGACY;
    if ((key & 0xff) == GM_STREAM_KEY_PER_THREAD_TAG && key > 0xff)
        return key == per_thread_key() ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    return (CUstream)(uintptr_t)key;
}
