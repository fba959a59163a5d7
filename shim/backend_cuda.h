#ifndef GRAPHMEM_BACKEND_CUDA_H
#define GRAPHMEM_BACKEND_CUDA_H

#include "backend.h"
#include "engine.h"
#include "shim.h"

void gm_backend_cuda_init(gm_backend_t *backend, uint64_t granularity);
void gm_backend_cuda_forget_after_fork(void);
/* The CUDA event of a backend fence (for the event record node of a launch fence). */
CUevent gm_backend_cuda_event(uint64_t fence);

#endif
