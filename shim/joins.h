#ifndef GRAPHMEM_JOINS_H
#define GRAPHMEM_JOINS_H

#include "shim.h"

/* A marker was added to `stream`'s frontier in capture `capture`. */
void gm_joins_note(cuuint64_t capture, CUstream stream, bool ptsz);
/* Called before the capture of `origin` ends: true when a stream that received markers in this
 * capture never rejoined `origin` (the driver's CUDA_ERROR_STREAM_CAPTURE_UNJOINED). Forgets the
 * notes of this capture either way. */
bool gm_joins_unjoined(CUstream origin, bool ptsz);

#endif
