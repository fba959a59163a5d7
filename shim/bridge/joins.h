#ifndef GRAPHMEM_JOINS_H
#define GRAPHMEM_JOINS_H

#include "interpose/shim.h"

/* Marker `marker` was made `stream`'s frontier in capture `capture`, into `graph`. A stream is
 * noted by its identity (gm_stream_key): each thread's per-thread default stream is its own. */
void gm_joins_note(cuuint64_t capture, CUstream stream, bool ptsz, CUgraph graph,
                   CUgraphNode marker);
/* Capture `capture` began on `stream`, into `graph`: what its end forgets if it fails, and its id
 * should the end no longer be told it. Notes of the stream from other captures go. */
void gm_joins_note_begin(cuuint64_t capture, CUstream stream, bool ptsz, CUgraph graph);
/* `graph`'s handle was given out again to a new graph: no note names it any more, so the end of
 * the capture it was made for cannot forget the new graph. */
void gm_joins_forget_graph(CUgraph graph);
/* `stream` (no default stream) is about to be destroyed (cuStreamDestroy): its notes, made
 * through either ABI, keep what it captured last, those an end in flight holds too. */
void gm_joins_stream_destroyed(CUstream stream);
/* The application sets the capture dependencies of `stream`, a default stream, to the `count`
 * nodes `deps` (cuStreamUpdateCaptureDependencies, SET), through `set` (the driver's call, which
 * returns its code): made under the notes' lock, so an end on another thread finds the note as the
 * call left it. Once the call succeeded, the stream's last marker, when not among `deps`, is no
 * longer what the stream captured last: the driver does not judge a node taken out of a stream's
 * dependencies, and an end on another thread, which cannot ask another thread's per-thread
 * stream, no longer judges it by that marker. */
CUresult gm_joins_dependencies_set(CUstream stream, bool ptsz, const CUgraphNode *deps,
                                   size_t count, CUresult (*set)(void *arg), void *arg);
/* A capture's end in flight: what gm_joins_finish took for it until gm_joins_ended. The caller's
 * (on its stack); only joins.c touches the fields. */
typedef struct gm_joins_ending {
    struct noted_stream *notes; /* the capture's notes, out of the list */
    uint32_t count, cap;
    CUgraph graph;  /* the graph the capture went into (NULL: unknown, or given out again) */
    bool given_out; /* `graph`'s handle was given out again since gm_joins_finish */
    /* Streams of `notes` destroyed since gm_joins_finish, with what they captured last. */
    struct noted_stream *gone;
    uint32_t gone_count, gone_cap;
    cuuint64_t capture; /* the capture's id (0: unknown) */
    struct gm_joins_ending *next;
} gm_joins_ending_t;

/* Whether `node` is a marker a capture made (bridge/markers.h, which sits above this file): of a
 * stream's last nodes only those are judged, the rest being the driver's (or no one's) to judge. */
typedef bool (*gm_joins_is_marker_fn)(CUgraphNode node);

/* Called before capture `capture` of `origin` ends (0: the driver no longer says which, and the
 * id its origin was noted under is used): takes the capture's notes into *ending. Returns whether
 * a stream that received markers never rejoined `origin` (the driver's
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED), and in ending->graph the graph the capture went into:
 * once a capture is invalidated the driver no longer says which graph it was. */
bool gm_joins_finish(CUstream origin, bool ptsz, cuuint64_t capture,
                     gm_joins_is_marker_fn is_marker, gm_joins_ending_t *ending);
/* Whether ending->graph is still the capture's graph: its handle was not given out again to a
 * new graph since gm_joins_finish (gm_joins_forget_graph). Asked in the end's locked step, after
 * the driver's call, so that a new graph under that handle is never forgotten with the dead one. */
bool gm_joins_graph_still_mine(gm_joins_ending_t *ending);
/* The driver's end returned. `over`: the capture is over and its notes go. Else it goes on
 * (another thread's to end): its notes go back under the ids they were made with, side streams'
 * and destroyed streams' last nodes included. */
void gm_joins_ended(gm_joins_ending_t *ending, bool over);

#endif
