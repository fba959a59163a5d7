/* Stream identities for the engine. A regular stream is its handle. A default stream belongs to a
 * context: the legacy default stream is one identity per context, a per-thread default stream
 * (NULL through a _ptsz entry, or CU_STREAM_PER_THREAD) one identity per thread and context,
 * because each thread has its own in every context. */
#ifndef GRAPHMEM_STREAMS_H
#define GRAPHMEM_STREAMS_H

#include "interpose/shim.h"

uint64_t gm_stream_key(CUstream stream, bool ptsz);
/* Whether `stream` names a default stream (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) rather
 * than one the application created. */
static inline bool gm_stream_is_default(CUstream stream) {
    return stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}
/* The handle of a stream identity, usable from this thread once `*context` (when not NULL) is
 * current; a regular stream carries its own context (`*context` NULL). False for another thread's
 * per-thread default stream, which no other thread can name: graphmem only ever records and waits
 * on the stream the current call was handed, so asking for one is a bug, refused. */
bool gm_stream_handle(uint64_t key, CUstream *stream, CUcontext *context);

/* Whether `key` names a stream graphmem can record on and wait for: false for a default stream of
 * a context it had no room to remember (no host memory, or more contexts than keys tell apart),
 * which gm_stream_handle cannot name and which shares its key with every other such context. A
 * graph launch graphmem serves there is refused (its fence could be neither recorded nor waited
 * for, and its memory would be taken as free while the launch runs). */
bool gm_stream_key_usable(uint64_t key);

/* Runs on the child side of fork: the parent's contexts do not exist there. */
void gm_streams_forget_after_fork(void);

#endif
