#include "captures.h"

#include "interpose/driver.h"

bool gm_stream_capturing(CUstream stream, bool ptsz) {
    if (gm_no_capture_anywhere())
        return false;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = GM_REAL_PT(cuStreamIsCapturing, ptsz)(stream, &status);
    /* An error (the legacy stream while a blocking stream captures, say): the driver answers. */
    return r != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
}

gm_relaxed_t gm_relaxed_begin_always(void) {
    gm_relaxed_t relaxed = {CU_STREAM_CAPTURE_MODE_RELAXED, false};
    if (gm_drv.cuThreadExchangeStreamCaptureMode == NULL)
        return relaxed;
    relaxed.active = gm_drv.cuThreadExchangeStreamCaptureMode(&relaxed.saved) == CUDA_SUCCESS;
    return relaxed;
}

gm_relaxed_t gm_relaxed_begin(void) {
    /* Outside any capture the exchange is pure overhead: skip it. */
    if (gm_no_capture_anywhere())
        return (gm_relaxed_t){CU_STREAM_CAPTURE_MODE_RELAXED, false};
    return gm_relaxed_begin_always();
}

void gm_relaxed_end(gm_relaxed_t relaxed) {
    if (relaxed.active)
        gm_drv.cuThreadExchangeStreamCaptureMode(&relaxed.saved);
}
