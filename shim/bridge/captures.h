/* Captures as the shim tracks them: how many are in flight in the process, whether a stream is
 * capturing, and the RELAXED capture mode graphmem's own driver work runs in while any is. */
#ifndef GRAPHMEM_CAPTURES_H
#define GRAPHMEM_CAPTURES_H

#include "interpose/shim.h"

/* Captures begun and not yet ended in this process, raised and lowered by the capture hooks
 * (hooks/capture_hooks.c): the hot path asks the driver whether a stream is capturing only while
 * this is non-zero. */
extern _Atomic long gm_captures_in_flight;
/* Whether `stream` is capturing (or a capture on it was invalidated, or the driver cannot say);
 * false at the cost of one load while no capture is in flight. */
bool gm_stream_capturing(CUstream stream, bool ptsz);

/* Runs internal driver work that the capture mode of the calling thread could refuse (GLOBAL and
 * THREAD_LOCAL captures make "unsafe" calls fail and invalidate the capture): RELAXED for the
 * duration, then the caller's mode back. */
typedef struct gm_relaxed {
    CUstreamCaptureMode saved;
    bool active;
} gm_relaxed_t;
gm_relaxed_t gm_relaxed_begin(void);
void gm_relaxed_end(gm_relaxed_t relaxed);

#endif
