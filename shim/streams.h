/* Stream identities for the engine. A regular stream is its handle. The legacy default stream is
 * one identity; a per-thread default stream (NULL through a _ptsz entry, or CU_STREAM_PER_THREAD)
 * is one identity per thread, because each thread has its own. */
#ifndef GRAPHMEM_STREAMS_H
#define GRAPHMEM_STREAMS_H

#include "shim.h"

#define GM_STREAM_KEY_LEGACY 1ull

uint64_t gm_stream_key(CUstream stream, bool ptsz);
/* A handle that orders after everything the identity ran so far, usable from this thread: a
 * per-thread stream of another thread is reached through the legacy stream, which waits for all
 * blocking streams of the context (conservative, never wrong). */
CUstream gm_stream_handle(uint64_t key);

#endif
