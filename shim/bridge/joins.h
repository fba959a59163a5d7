#ifndef GRAPHMEM_JOINS_H
#define GRAPHMEM_JOINS_H

#include "interpose/shim.h"

/* A marker was added to `stream`'s frontier in capture `capture`, into `graph`. */
void gm_joins_note(cuuint64_t capture, CUstream stream, bool ptsz, CUgraph graph);
/* Capture `capture` began on `stream`, into `graph`: what its end forgets if it fails, and its id
 * should the end no longer be told it. Notes of the stream from other captures go. */
void gm_joins_note_begin(cuuint64_t capture, CUstream stream, bool ptsz, CUgraph graph);
/* `graph`'s handle was given out again to a new graph: no note names it any more, so the end of
 * the capture it was made for cannot forget the new graph. */
void gm_joins_forget_graph(CUgraph graph);
/* `stream` is about to be destroyed (cuStreamDestroy): its notes keep what it captured last. */
void gm_joins_stream_destroyed(CUstream stream);
/* Called before capture `capture` of `origin` ends (0: the driver no longer says which); forgets
 * its notes. Returns whether a stream that received markers never rejoined `origin` (the driver's
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED) and, in *graph_out, the graph the capture went into (NULL
 * if unknown, or given out again since): once a capture is invalidated the driver no longer says
 * which graph it was. */
bool gm_joins_finish(CUstream origin, bool ptsz, cuuint64_t capture, CUgraph *graph_out);

#endif
