#include "streams.h"

#include <pthread.h>

#include "driver.h"
#include "log.h"

/* Default-stream keys: low byte a tag that no stream handle has (handles are aligned pointers),
 * the next byte the context's index in `contexts`, then the thread id for per-thread streams. */
#define TAG_LEGACY 1ull
#define TAG_PER_THREAD 2ull
#define MAX_CONTEXTS 256

/* Contexts seen on default streams, append-only so an index stays valid without a lock. */
static _Atomic(CUcontext) contexts[MAX_CONTEXTS];
static atomic_int context_count;
static pthread_mutex_t context_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local CUcontext cached_context;
static _Thread_local uint64_t cached_index_plus_one;

static uint64_t context_index(void) {
    CUcontext ctx = NULL;
    gm_drv.cuCtxGetCurrent(&ctx);
    if (cached_index_plus_one && ctx == cached_context)
        return cached_index_plus_one - 1;
    int n = atomic_load(&context_count), i = 0;
    while (i < n && atomic_load(&contexts[i]) != ctx)
        i++;
    if (i == n) {
        pthread_mutex_lock(&context_lock);
        n = atomic_load(&context_count);
        for (i = 0; i < n && atomic_load(&contexts[i]) != ctx;)
            i++;
        if (i == n && n < MAX_CONTEXTS) {
            atomic_store(&contexts[n], ctx);
            atomic_store(&context_count, n + 1);
        } else if (i == n) {
            /* Out of indices: sharing index 0 only loses the context in the identity. */
            gm_log(GM_LOG_WARN, "more than %d contexts use default streams", MAX_CONTEXTS);
            i = 0;
        }
        pthread_mutex_unlock(&context_lock);
    }
    cached_context = ctx;
    cached_index_plus_one = (uint64_t)i + 1;
    return (uint64_t)i;
}

/* A number per thread, never given to another: a kernel thread id is reused once its thread
 * exits, and a new thread's per-thread stream is not ordered after the old one's work. */
static atomic_uint_fast64_t last_thread_number;
static _Thread_local uint64_t thread_number;

static uint64_t thread_id(void) {
    if (thread_number == 0)
        thread_number = atomic_fetch_add(&last_thread_number, 1) + 1;
    return thread_number;
}

static uint64_t default_key(bool per_thread) {
    uint64_t key = context_index() << 8;
    return per_thread ? key | thread_id() << 16 | TAG_PER_THREAD : key | TAG_LEGACY;
}

uint64_t gm_stream_key(CUstream stream, bool ptsz) {
    if (stream == NULL)
        return default_key(ptsz);
    if (stream == CU_STREAM_LEGACY)
        return default_key(false);
    if (stream == CU_STREAM_PER_THREAD)
        return default_key(true);
    return (uint64_t)(uintptr_t)stream;
}

bool gm_stream_handle(uint64_t key, CUstream *stream, CUcontext *context) {
    uint64_t tag = key & 0xff;
    *context = NULL;
    *stream = (CUstream)(uintptr_t)key;
    if (tag != TAG_LEGACY && tag != TAG_PER_THREAD)
        return true;
    *context = atomic_load(&contexts[(key >> 8) & 0xff]);
    *stream = tag == TAG_PER_THREAD ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    return tag == TAG_LEGACY || key >> 16 == thread_id();
}

void gm_streams_forget_after_fork(void) {
    pthread_mutex_init(&context_lock, NULL);
    atomic_store(&context_count, 0);
    cached_context = NULL;
    cached_index_plus_one = 0;
    thread_number = 0; /* the child's threads start over */
}
