/* Introspection: markers still look like memory nodes to node-type and get-params queries. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/engine_glue.h"
#include "bridge/markers.h"

CUresult gm_hook_cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type) {
    gm_marker_kind_t kind = gm_marker_of(hNode, NULL);
    if (kind == GM_MARKER_NONE || type == NULL)
        return gm_real.cuGraphNodeGetType(hNode, type);
    *type = kind == GM_MARKER_ALLOC ? CU_GRAPH_NODE_TYPE_MEM_ALLOC : CU_GRAPH_NODE_TYPE_MEM_FREE;
    return CUDA_SUCCESS;
}

/* The access list returned by get-params must stay valid while the node lives and belong to the
 * node, not the caller. Its content depends only on the access mask, so one array per distinct
 * mask is kept for the life of the process (few distinct masks exist). */
typedef struct access_list {
    uint64_t mask;
    int resident;
    size_t count;
    CUmemAccessDesc descs[GM_MAX_DEVICES];
    struct access_list *next;
} access_list_t;

/* A list, prepended to and never freed: the entries handed out stay where they are. */
static access_list_t *access_lists;
static pthread_mutex_t access_lock = PTHREAD_MUTEX_INITIALIZER;

/* The driver reports the list the node was given. NULL only without host memory. */
static const access_list_t *access_list_for(uint64_t mask, int resident) {
    pthread_mutex_lock(&access_lock);
    access_list_t *found = access_lists;
    while (found && (found->mask != mask || found->resident != resident))
        found = found->next;
    if (!found && (found = calloc(1, sizeof *found)) != NULL) {
        found->mask = mask;
        found->resident = resident;
        for (int d = 0; d < GM_MAX_DEVICES; d++) {
            if (!(mask & (1ull << d)))
                continue;
            found->descs[found->count].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            found->descs[found->count].location.id = d;
            found->descs[found->count].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            found->count++;
        }
        found->next = access_lists;
        access_lists = found;
    }
    pthread_mutex_unlock(&access_lock);
    return found;
}

/* Who answers a get-params call on `node`. Returns its marker kind; GM_MARKER_NONE: not a marker,
 * the driver answers. For a marker, *refusal is the driver's answer to a node of another type or
 * to a NULL output (INVALID_VALUE), else CUDA_SUCCESS: graphmem answers. */
static gm_marker_kind_t params_of(CUgraphNode node, gm_marker_kind_t want, const void *out,
                                  gm_marker_info_t *info, CUresult *refusal) {
    gm_marker_kind_t kind = gm_marker_of(node, info);
    *refusal = kind != GM_MARKER_NONE && (kind != want || out == NULL) ? CUDA_ERROR_INVALID_VALUE
                                                                       : CUDA_SUCCESS;
    return kind;
}

CUresult gm_hook_cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                              CUDA_MEM_ALLOC_NODE_PARAMS *params_out) {
    gm_marker_info_t info;
    CUresult refusal;
    if (params_of(hNode, GM_MARKER_ALLOC, params_out, &info, &refusal) == GM_MARKER_NONE)
        return gm_real.cuGraphMemAllocNodeGetParams(hNode, params_out);
    if (refusal != CUDA_SUCCESS)
        return refusal;
    const access_list_t *access = access_list_for(info.params.listed_mask, info.params.device);
    memset(params_out, 0, sizeof *params_out);
    params_out->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params_out->poolProps.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    params_out->poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params_out->poolProps.location.id = info.params.device;
    params_out->accessDescs = access ? access->descs : NULL;
    params_out->accessDescCount = access ? access->count : 0;
    params_out->bytesize = info.params.size;
    params_out->dptr = info.va;
    return CUDA_SUCCESS;
}

CUresult gm_hook_cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out) {
    gm_marker_info_t info;
    CUresult refusal;
    if (params_of(hNode, GM_MARKER_FREE, dptr_out, &info, &refusal) == GM_MARKER_NONE)
        return gm_real.cuGraphMemFreeNodeGetParams(hNode, dptr_out);
    if (refusal == CUDA_SUCCESS)
        *dptr_out = info.va;
    return refusal;
}
