/* Captures as the shim tracks them: how many are in flight in the process, whether a stream is
 * capturing, and the RELAXED capture mode graphmem's own driver work runs in while any is. */
#ifndef GRAPHMEM_CAPTURES_H
#define GRAPHMEM_CAPTURES_H

#include "interpose/shim.h"

/* Captures begun and not yet ended in this process (gm_shim_hot.captures_in_flight), raised and
 * lowered by the capture hooks (hooks/capture_hooks.c): the hot path asks the driver whether a
 * stream is capturing only while this is non-zero. The hot paths' one question of it, on one
 * relaxed load: no capture anywhere in the process. */
static inline bool gm_no_capture_anywhere(void) {
    return GM_IDLE_NO_CAPTURE;
}
/* Whether `stream` is capturing (or a capture on it was invalidated, or the driver cannot say);
 * false at the cost of one load while no capture is in flight. */
bool gm_stream_capturing(CUstream stream, bool ptsz);

/* GM_RELAXED(statements): runs graphmem's own work that may reach the driver while a capture is in
 * flight (an engine call, the captured-allocation path) in RELAXED capture mode, then gives the
 * calling thread its mode back. GLOBAL and THREAD_LOCAL captures make "unsafe" calls fail and
 * invalidate the capture, also another thread's; graphmem's work must never do that. Outside any
 * capture it costs one load. The statements must not leave by return, break or goto: the mode
 * would not come back. This is the one way hooks enter RELAXED mode; gm_app_call_begin
 * (engine_glue.h) is the other user of the pair below, for the application's own call inside an
 * engine call. */
#define GM_RELAXED(...)                                                                            \
    do {                                                                                           \
        gm_relaxed_t gm_relaxed_scope = gm_relaxed_begin();                                        \
        __VA_ARGS__;                                                                               \
        gm_relaxed_end(gm_relaxed_scope);                                                          \
    } while (0)

/* GM_RELAXED_ALWAYS(statements): the same without the test of the count, for the driver calls a
 * GLOBAL capture forbids (event and stream queries and host waits, VMM calls): a scope that began
 * while no capture was in flight may last (a host wait for a fence, say) while another thread
 * begins one, and such a call from this thread would then invalidate that capture. */
#define GM_RELAXED_ALWAYS(...)                                                                     \
    do {                                                                                           \
        gm_relaxed_t gm_relaxed_scope = gm_relaxed_begin_always();                                 \
        __VA_ARGS__;                                                                               \
        gm_relaxed_end(gm_relaxed_scope);                                                          \
    } while (0)

typedef struct gm_relaxed {
    CUstreamCaptureMode saved;
    bool active;
} gm_relaxed_t;
gm_relaxed_t gm_relaxed_begin(void);
gm_relaxed_t gm_relaxed_begin_always(void);
void gm_relaxed_end(gm_relaxed_t relaxed);

#endif
