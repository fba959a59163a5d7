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
/* Around the driver's call that destroys `context`, or may (a primary context's reset or release),
 * under the engine lock in one step with it. Ending: no host wait queries an event from here on
 * (one under way is waited for). Ended: they query again; with `gone` (the context was destroyed),
 * its fences' events went with it and their work is over: they count as done from now on and
 * never reach the driver again (the engine may still hold them). */
void gm_backend_cuda_context_ending(void);
void gm_backend_cuda_context_ended(CUcontext context, bool gone);
/* The driver's code for the last fence record of this thread that failed (a stream destroyed, or
 * in a capture that was invalidated), CUDA_ERROR_UNKNOWN when none failed since the last ask: an
 * engine call refused for it answers the application with the driver's own error. */
CUresult gm_backend_cuda_record_failure(void);
/* `refusal`, graphmem's own answer to a call it serves without the driver (a free of an allocation
 * that is not live, a relaunch while one is unfreed), unless the current context holds a sticky
 * error (a kernel's fault): the driver answers every call with that error before it looks at the
 * arguments (tests/gpu/scn_free_after_fault.cu), and so does graphmem then. Asked with
 * cuMemFree(0), which does nothing else, in RELAXED mode. */
CUresult gm_backend_cuda_sticky_or(CUresult refusal);

#endif
