#ifndef GRAPHMEM_JOINS_H
#define GRAPHMEM_JOINS_H

#include "interpose/shim.h"

/* A marker was added to `stream`'s frontier in capture `capture`, into `graph`. */
void gm_joins_note(cuuint64_t capture, CUstream stream, bool ptsz, CUgraph graph);
/* Called before capture `capture` of `origin` ends; forgets its notes. Returns whether a stream
 * that received markers never rejoined `origin` (the driver's CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
 * and, in *graph_out, the graph the markers went into (NULL if none): once a capture is
 * invalidated the driver no longer says which graph it was. */
/* `stream` is about to be destroyed (cuStreamDestroy): its notes keep what it captured last. */
void gm_joins_stream_destroyed(CUstream stream);
bool gm_joins_finish(CUstream origin, bool ptsz, cuuint64_t capture, CUgraph *graph_out);

#endif
