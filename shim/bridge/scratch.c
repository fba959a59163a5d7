#include "scratch.h"

#include <stdlib.h>

#include "captures.h"
#include "interpose/driver.h"

/* The engine's calls run RELAXED: they may map memory (cuMemCreate on first use, cuMemMap,
 * cuMemSetAccess), and a capture may be under way on this thread or another. */

void gm_scratch_begin(gm_scratch_t *s, gm_engine_t *engine) {
    CUdevice device = 0;
    bool known = false;
    if (engine)
        GM_RELAXED(known = gm_drv.cuCtxGetDevice(&device) == CUDA_SUCCESS);
    gm_engine_cover_begin(engine, s, known ? (int)device : -1);
}

void gm_scratch_cover_range(gm_scratch_t *s, CUdeviceptr start, uint64_t bytes) {
    if (s->engine)
        GM_RELAXED(gm_engine_cover_range(s, start, bytes));
}

void gm_scratch_cover_rows(gm_scratch_t *s, CUdeviceptr start, size_t pitch, size_t row_bytes,
                           size_t rows) {
    if (rows)
        gm_scratch_cover_range(s, start, (rows - 1) * pitch + row_bytes);
}

void gm_scratch_cover_memset(gm_scratch_t *s, const CUDA_MEMSET_NODE_PARAMS *p) {
    if (p != NULL)
        gm_scratch_cover_rows(s, p->dst, p->pitch, p->width * p->elementSize, p->height);
}

static void cover_side(gm_scratch_t *s, CUmemorytype type, CUdeviceptr base, size_t x, size_t y,
                       size_t z, size_t pitch, size_t height, const CUDA_MEMCPY3D *p) {
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return;
    size_t depth = p->Depth ? p->Depth : 1, rows = p->Height ? p->Height : 1;
    size_t row_pitch = pitch ? pitch : p->WidthInBytes;
    size_t slice = row_pitch * (height ? height : rows);
    CUdeviceptr start = base + x + y * row_pitch + z * slice;
    gm_scratch_cover_range(s, start,
                           (depth - 1) * slice + (rows - 1) * row_pitch + p->WidthInBytes);
}

void gm_scratch_cover_memcpy(gm_scratch_t *s, const CUDA_MEMCPY3D *p) {
    if (p == NULL)
        return;
    cover_side(s, p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,
               p->srcHeight, p);
    cover_side(s, p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
               p->dstHeight, p);
}

void gm_scratch_cover_memcpy2d(gm_scratch_t *s, const CUDA_MEMCPY2D *p) {
    if (p == NULL)
        return;
    if (p->srcMemoryType == CU_MEMORYTYPE_DEVICE || p->srcMemoryType == CU_MEMORYTYPE_UNIFIED)
        gm_scratch_cover_rows(s, p->srcDevice + p->srcXInBytes + p->srcY * p->srcPitch, p->srcPitch,
                              p->WidthInBytes, p->Height);
    if (p->dstMemoryType == CU_MEMORYTYPE_DEVICE || p->dstMemoryType == CU_MEMORYTYPE_UNIFIED)
        gm_scratch_cover_rows(s, p->dstDevice + p->dstXInBytes + p->dstY * p->dstPitch, p->dstPitch,
                              p->WidthInBytes, p->Height);
}

void gm_scratch_cover_node(gm_scratch_t *s, const CUgraphNodeParams *p) {
    if (p != NULL && p->type == CU_GRAPH_NODE_TYPE_MEMSET)
        gm_scratch_cover_rows(s, p->memset.dst, p->memset.pitch,
                              p->memset.width * p->memset.elementSize, p->memset.height);
    else if (p != NULL && p->type == CU_GRAPH_NODE_TYPE_MEMCPY)
        gm_scratch_cover_memcpy(s, &p->memcpy.copyParams);
}

static void cover_topology(gm_scratch_t *s, const gm_topology_buf_t *topo) {
    for (uint32_t i = 0; s->engine && i < topo->view.node_count; i++) {
        CUgraphNode node = (CUgraphNode)(uintptr_t)topo->nodes[i];
        CUgraphNodeType type = topo->types[i];
        if (type == CU_GRAPH_NODE_TYPE_MEMSET) {
            CUDA_MEMSET_NODE_PARAMS p;
            if (gm_drv.cuGraphMemsetNodeGetParams(node, &p) == CUDA_SUCCESS)
                gm_scratch_cover_memset(s, &p);
        } else if (type == CU_GRAPH_NODE_TYPE_MEMCPY) {
            CUDA_MEMCPY3D p;
            if (gm_drv.cuGraphMemcpyNodeGetParams(node, &p) == CUDA_SUCCESS)
                gm_scratch_cover_memcpy(s, &p);
        }
    }
}

static void cover_bodies(gm_scratch_t *s, CUgraph graph, int depth);

/* The graphs `list` gives for `graph` (its bodies, or its children), in a fresh array (NULL: none,
 * or no host memory); their number in *count. */
static CUgraph *nested_list(size_t (*list)(CUgraph, CUgraph *, size_t), CUgraph graph,
                            size_t *count) {
    size_t n = list(graph, NULL, 0);
    CUgraph *graphs = n ? calloc(n, sizeof *graphs) : NULL;
    *count = graphs ? list(graph, graphs, n) : 0; /* fewer if some went meanwhile */
    if (*count > n)
        *count = n;
    return graphs;
}

/* The conditional bodies of `graph` and of its child graphs, at any depth: each body's nodes (its
 * own child graphs read in with them) and the bodies nested in it. A child graph's nodes are in
 * the topology its parent was read into; its bodies are not (tests/SEMANTICS.md §A1.17). */
static void cover_bodies(gm_scratch_t *s, CUgraph graph, int depth) {
    if (depth >= GM_NESTING_MAX || !gm_nested_any_bodies()) /* child graphs hold none either */
        return;
    size_t n = 0;
    CUgraph *bodies = nested_list(gm_nested_bodies, graph, &n);
    for (size_t i = 0; i < n; i++) {
        gm_topology_buf_t body;
        if (gm_topology_read(s->engine, bodies[i], &body) == CUDA_SUCCESS) {
            cover_topology(s, &body);
            gm_topology_free(&body);
        }
        cover_bodies(s, bodies[i], depth + 1);
    }
    free(bodies);
    CUgraph *children = nested_list(gm_nested_children, graph, &n);
    for (size_t i = 0; i < n; i++)
        cover_bodies(s, children[i], depth + 1);
    free(children);
}

void gm_scratch_cover_graph(gm_scratch_t *s, CUgraph graph, const gm_topology_buf_t *topo) {
    if (s->engine == NULL)
        return;
    cover_topology(s, topo);
    cover_bodies(s, graph, 0);
}

void gm_scratch_end(gm_scratch_t *s) {
    if (s->held)
        GM_RELAXED(gm_engine_cover_end(s));
}
