#ifndef GRAPHMEM_BACKEND_CUDA_H
#define GRAPHMEM_BACKEND_CUDA_H

#include "backend.h"
#include "engine.h"
#include "interpose/shim.h"

/* Plain device memory on `device` (pinned, no IPC handle types): what graphmem's physical handles
 * and scratch pages are made of. */
CUmemAllocationProp gm_device_memory(int device);
/* The minimum allocation granularity of such memory, graphmem's page size; 0 when the driver cannot
 * say. */
size_t gm_device_page_size(void);

void gm_backend_cuda_init(gm_backend_t *backend, uint64_t granularity);
void gm_backend_cuda_forget_after_fork(void);
/* `context` was destroyed: its fences' events went with it and their work is over. They count as
 * done from now on and never reach the driver again (the engine may still hold them). Called
 * under the engine lock, in the step that destroyed the context. */
void gm_backend_cuda_context_gone(CUcontext context);

#endif
