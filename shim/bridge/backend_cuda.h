#ifndef GRAPHMEM_BACKEND_CUDA_H
#define GRAPHMEM_BACKEND_CUDA_H

#include "backend.h"
#include "engine.h"

void gm_backend_cuda_init(gm_backend_t *backend, uint64_t granularity);
void gm_backend_cuda_forget_after_fork(void);

#endif
