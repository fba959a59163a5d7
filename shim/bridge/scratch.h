/* Scratch backing for the driver's pointer checks. The driver checks that memset and memcpy nodes
 * touch mapped memory when such a node is made and again when its graph is instantiated; a graph
 * allocation of graphmem is not mapped then (memory is mapped at launch). For the duration of
 * such a call, graphmem maps one scratch page of the current device at every unmapped page of
 * its own reservation that the node touches, then removes those mappings again. The scratch page
 * is never counted as graph memory and nothing is ever written to it. */
#ifndef GRAPHMEM_SCRATCH_H
#define GRAPHMEM_SCRATCH_H

#include "engine.h"
#include "interpose/shim.h"
#include "topology.h"

#define GM_SCRATCH_MAX 1024 /* pages: 2 GiB of 2 MiB pages; kept small, it lives on the stack */

typedef struct gm_scratch {
    gm_engine_t *engine;
    int device;
    uint32_t count;
    uint64_t pages[GM_SCRATCH_MAX];
} gm_scratch_t;

/* Starts an empty cover (engine NULL: nothing will be mapped). */
void gm_scratch_begin(gm_scratch_t *s, gm_engine_t *engine);
void gm_scratch_cover_range(gm_scratch_t *s, CUdeviceptr start, uint64_t bytes);
void gm_scratch_cover_memset(gm_scratch_t *s, const CUDA_MEMSET_NODE_PARAMS *p);
void gm_scratch_cover_memcpy(gm_scratch_t *s, const CUDA_MEMCPY3D *p);
void gm_scratch_cover_memcpy2d(gm_scratch_t *s, const CUDA_MEMCPY2D *p);
/* Every memset and memcpy node of a topology read back. */
void gm_scratch_cover_topology(gm_scratch_t *s, const gm_topology_buf_t *topo);
/* Removes every mapping the cover made. */
void gm_scratch_end(gm_scratch_t *s);

#endif
