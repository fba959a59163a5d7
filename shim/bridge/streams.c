#include "streams.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "interpose/driver.h"
#include "log.h"

/* Default-stream keys: low byte a tag that no stream handle has (handles are aligned pointers),
 * the next 16 bits the context's index in `contexts`, then the thread number for per-thread
 * streams. */
#define TAG_LEGACY 1ull
#define TAG_PER_THREAD 2ull
#define CONTEXT_BITS 16
#define CHUNK 256
#define MAX_CONTEXTS (1u << CONTEXT_BITS)

/* Contexts seen on default streams, append-only in chunks that never move, so an index stays
 * valid and readable without a lock. */
static _Atomic(_Atomic(CUcontext) *) chunks[MAX_CONTEXTS / CHUNK];
static atomic_uint context_count;
static pthread_mutex_t context_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local CUcontext cached_context;
static _Thread_local uint64_t cached_index_plus_one;

static CUcontext context_at(unsigned i) {
    _Atomic(CUcontext) *chunk = atomic_load(&chunks[i / CHUNK]);
    return chunk ? atomic_load(&chunk[i % CHUNK]) : NULL;
}

/* The index of the current context; MAX_CONTEXTS when there is no room (no host memory, or more
 * contexts than keys can tell apart): such a key is refused by gm_stream_handle. */
static uint64_t context_index(void) {
    CUcontext ctx = NULL;
    gm_drv.cuCtxGetCurrent(&ctx);
    if (cached_index_plus_one && ctx == cached_context)
        return cached_index_plus_one - 1;
    unsigned n = atomic_load(&context_count), i = 0;
    while (i < n && context_at(i) != ctx)
        i++;
    if (i == n) {
        pthread_mutex_lock(&context_lock);
        n = atomic_load(&context_count);
        for (i = 0; i < n && context_at(i) != ctx;)
            i++;
        if (i == n && n < MAX_CONTEXTS && !atomic_load(&chunks[n / CHUNK]))
            atomic_store(&chunks[n / CHUNK], calloc(CHUNK, sizeof(_Atomic(CUcontext))));
        if (i == n && n < MAX_CONTEXTS && atomic_load(&chunks[n / CHUNK])) {
            atomic_store(&atomic_load(&chunks[n / CHUNK])[n % CHUNK], ctx);
            atomic_store(&context_count, n + 1);
        } else if (i == n) {
            static atomic_bool warned;
            if (!atomic_exchange(&warned, true))
                gm_log(GM_LOG_WARN, "no room to remember a context's default streams: graph "
                                    "launches served by graphmem are refused there");
            i = MAX_CONTEXTS;
        }
        pthread_mutex_unlock(&context_lock);
    }
    /* No room is not remembered: the next call tries again. */
    cached_context = ctx;
    cached_index_plus_one = i < MAX_CONTEXTS ? (uint64_t)i + 1 : 0;
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
    return per_thread ? key | thread_id() << (8 + CONTEXT_BITS + 1) | TAG_PER_THREAD
                      : key | TAG_LEGACY;
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

/* The context index of a default-stream key (MAX_CONTEXTS and above: no room). */
static uint64_t key_context_index(uint64_t key) {
    return (key >> 8) & ((2ull << CONTEXT_BITS) - 1);
}

static bool names_default(uint64_t key) {
    uint64_t tag = key & 0xff;
    return tag == TAG_LEGACY || tag == TAG_PER_THREAD;
}

bool gm_stream_key_usable(uint64_t key) {
    return !names_default(key) || key_context_index(key) < MAX_CONTEXTS;
}

bool gm_stream_handle(uint64_t key, CUstream *stream, CUcontext *context) {
    uint64_t tag = key & 0xff;
    *context = NULL;
    *stream = (CUstream)(uintptr_t)key;
    if (!names_default(key))
        return true;
    uint64_t index = key_context_index(key);
    if (index >= MAX_CONTEXTS)
        return false;
    *context = context_at((unsigned)index);
    *stream = tag == TAG_PER_THREAD ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    return tag == TAG_LEGACY || key >> (8 + CONTEXT_BITS + 1) == thread_id();
}

void gm_streams_forget_after_fork(void) {
    pthread_mutex_init(&context_lock, NULL);
    atomic_store(&context_count, 0); /* the parent's chunks are reused, overwritten */
    cached_context = NULL;
    cached_index_plus_one = 0;
    thread_number = 0; /* the child's threads start over */
}
