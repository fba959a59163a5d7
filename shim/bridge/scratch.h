/* Scratch backing for the driver's pointer checks. The driver checks that memset and memcpy nodes
 * touch mapped memory when such a node is made and again when its graph is instantiated; a graph
 * allocation of graphmem is not mapped then (memory is mapped at launch). For the duration of
 * such a call, the engine covers every unmapped page of its own reservation that the node touches
 * with one scratch page of the current device, and holds every mapping of the reservation still
 * (engine.h, "Covers"). This file only says which ranges a node touches. The scratch page is
 * never counted as graph memory and nothing is ever written to it. */
#ifndef GRAPHMEM_SCRATCH_H
#define GRAPHMEM_SCRATCH_H

#include "engine.h"
#include "interpose/shim.h"
#include "topology.h"

typedef gm_cover_t gm_scratch_t;

/* Starts an empty cover of the current device (engine NULL: nothing will be mapped). */
void gm_scratch_begin(gm_scratch_t *s, gm_engine_t *engine);
void gm_scratch_cover_range(gm_scratch_t *s, CUdeviceptr start, uint64_t bytes);
void gm_scratch_cover_memset(gm_scratch_t *s, const CUDA_MEMSET_NODE_PARAMS *p);
void gm_scratch_cover_memcpy(gm_scratch_t *s, const CUDA_MEMCPY3D *p);
void gm_scratch_cover_memcpy2d(gm_scratch_t *s, const CUDA_MEMCPY2D *p);
/* The memset or memcpy target of generic node parameters (cuGraphAddNode, cuGraphNodeSetParams,
 * cuGraphExecNodeSetParams); other node types touch nothing it covers. */
void gm_scratch_cover_node(gm_scratch_t *s, const CUgraphNodeParams *p);
/* `rows` rows of `row_bytes` bytes, `pitch` apart, from `start` (memsets and 2D copies). */
void gm_scratch_cover_rows(gm_scratch_t *s, CUdeviceptr start, size_t pitch, size_t row_bytes,
                           size_t rows);
/* Every memset and memcpy node of `graph`, read back as `topo`, and of its conditional bodies at
 * any depth: they run inside their conditional node, outside the topology the engine plans, and
 * the driver checks their targets when it instantiates too (tests/SEMANTICS.md §A1.17). */
void gm_scratch_cover_graph(gm_scratch_t *s, CUgraph graph, const gm_topology_buf_t *topo);
/* Removes every mapping the cover made and lets waiting launches and trims go on. */
void gm_scratch_end(gm_scratch_t *s);

#endif
