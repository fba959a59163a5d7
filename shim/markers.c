#include "markers.h"

#include <pthread.h>
#include <string.h>

#include "driver.h"

CUresult gm_marker_add(CUgraphNode *node_out, CUgraph graph, const CUgraphNode *deps,
                       const CUgraphEdgeData *edge_data, size_t count) {
    bool plain = true;
    static const CUgraphEdgeData default_edge;
    for (size_t i = 0; edge_data != NULL && i < count && plain; i++)
        plain = memcmp(&edge_data[i], &default_edge, sizeof default_edge) == 0;
    if (plain)
        return gm_drv.cuGraphAddEmptyNode(node_out, graph, deps, count);
    CUgraphNodeParams params;
    memset(&params, 0, sizeof params);
    params.type = CU_GRAPH_NODE_TYPE_EMPTY;
    return gm_real.cuGraphAddNode_v2(node_out, graph, deps, edge_data, count, &params);
}

/* Breadth-first from the dependencies, at most this many driver nodes visited: between two
 * markers on one stream there are usually a few kernels, so the budget finds the previous marker
 * while keeping the capture path cheap. Finding nothing is always safe (no reuse is proven). */
#define SEARCH_BUDGET 64

void gm_find_ancestors(gm_engine_t *engine, const CUgraphNode *deps, size_t count,
                       gm_ancestor_set_t *set) {
    CUgraphNode queue[SEARCH_BUDGET];
    size_t head = 0, tail = 0, found = 0;
    for (size_t i = 0; i < count && tail < SEARCH_BUDGET; i++)
        queue[tail++] = deps[i];
    while (head < tail && found < GM_ANCESTOR_MAX) {
        CUgraphNode node = queue[head++];
        if (gm_engine_marker(engine, (uint64_t)(uintptr_t)node, NULL) != GM_MARKER_NONE) {
            set->markers[found++] = (uint64_t)(uintptr_t)node;
            continue;
        }
        CUgraphNode parents[8];
        size_t parent_count = 8;
        if (gm_drv.cuGraphNodeGetDependencies_v2(node, parents, NULL, &parent_count) !=
            CUDA_SUCCESS)
            continue; /* lossy edge data or too many parents: stop this branch, stay safe */
        for (size_t i = 0; i < parent_count && i < 8 && tail < SEARCH_BUDGET; i++) {
            bool seen = false;
            for (size_t j = 0; j < tail && !seen; j++)
                seen = queue[j] == parents[i];
            if (!seen)
                queue[tail++] = parents[i];
        }
    }
    set->view.markers = set->markers;
    set->view.count = found;
}

/* Pools created in this process, with the properties the driver does not let us read back. */
typedef struct known_pool {
    CUmemoryPool pool;
    CUmemPoolProps props;
} known_pool_t;

#define GM_KNOWN_POOLS 256
static known_pool_t known_pools[GM_KNOWN_POOLS];
static int known_pool_count;
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;

void gm_pool_created(CUmemoryPool pool, const CUmemPoolProps *props) {
    pthread_mutex_lock(&pools_lock);
    if (known_pool_count < GM_KNOWN_POOLS)
        known_pools[known_pool_count++] = (known_pool_t){pool, *props};
    pthread_mutex_unlock(&pools_lock);
}

void gm_pool_destroyed(CUmemoryPool pool) {
    pthread_mutex_lock(&pools_lock);
    for (int i = 0; i < known_pool_count; i++) {
        if (known_pools[i].pool == pool) {
            known_pools[i] = known_pools[--known_pool_count];
            break;
        }
    }
    pthread_mutex_unlock(&pools_lock);
}

static bool find_pool(CUmemoryPool pool, CUmemPoolProps *props) {
    bool found = false;
    pthread_mutex_lock(&pools_lock);
    for (int i = 0; i < known_pool_count && !found; i++) {
        if (known_pools[i].pool == pool) {
            *props = known_pools[i].props;
            found = true;
        }
    }
    pthread_mutex_unlock(&pools_lock);
    return found;
}

int gm_pool_device(CUmemoryPool pool) {
    CUmemPoolProps props;
    if (find_pool(pool, &props))
        return props.location.type == CU_MEM_LOCATION_TYPE_DEVICE ? props.location.id : -1;
    return -1;
}

bool gm_pool_servable(CUmemoryPool pool, int device) {
    CUmemPoolProps props;
    if (find_pool(pool, &props)) {
        static const unsigned char zero[sizeof props.reserved];
        return props.allocType == CU_MEM_ALLOCATION_TYPE_PINNED &&
               props.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
               props.handleTypes == CU_MEM_HANDLE_TYPE_NONE && props.usage == 0 &&
               memcmp(props.reserved, zero, sizeof zero) == 0;
    }
    /* Not created here: serve it only when it is the device's default pool (plain device memory).
     */
    CUmemoryPool default_pool = NULL;
    return gm_drv.cuDeviceGetDefaultMemPool(&default_pool, device) == CUDA_SUCCESS &&
           default_pool == pool;
}
