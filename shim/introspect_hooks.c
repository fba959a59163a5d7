/* Introspection: markers still look like memory nodes to node-type and get-params queries. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine_glue.h"
#include "markers.h"

static gm_marker_kind_t marker_of(CUgraphNode node, gm_marker_info_t *info) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || node == NULL)
        return GM_MARKER_NONE;
    return gm_engine_marker(engine, (uint64_t)(uintptr_t)node, info);
}

CUresult gm_hook_cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type) {
    gm_marker_kind_t kind = marker_of(hNode, NULL);
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
    CUmemAccessDesc *descs;
} access_list_t;

#define GM_ACCESS_LISTS 128
static access_list_t access_lists[GM_ACCESS_LISTS];
static int access_list_count;
static pthread_mutex_t access_lock = PTHREAD_MUTEX_INITIALIZER;

/* The driver reports the list the node was given. */
static const access_list_t *access_list_for(uint64_t mask, int resident) {
    const access_list_t *found = NULL;
    pthread_mutex_lock(&access_lock);
    for (int i = 0; i < access_list_count && !found; i++)
        if (access_lists[i].mask == mask && access_lists[i].resident == resident)
            found = &access_lists[i];
    if (!found && access_list_count < GM_ACCESS_LISTS) {
        access_list_t *list = &access_lists[access_list_count];
        list->mask = mask;
        list->resident = resident;
        list->count = 0;
        list->descs = calloc(GM_MAX_DEVICES, sizeof *list->descs);
        for (int d = 0; list->descs && d < GM_MAX_DEVICES; d++) {
            if (!(mask & (1ull << d)))
                continue;
            list->descs[list->count].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            list->descs[list->count].location.id = d;
            list->descs[list->count].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            list->count++;
        }
        if (list->descs) {
            access_list_count++;
            found = list;
        }
    }
    pthread_mutex_unlock(&access_lock);
    return found;
}

CUresult gm_hook_cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                              CUDA_MEM_ALLOC_NODE_PARAMS *params_out) {
    gm_marker_info_t info;
    gm_marker_kind_t kind = marker_of(hNode, &info);
    if (kind == GM_MARKER_NONE)
        return gm_real.cuGraphMemAllocNodeGetParams(hNode, params_out);
    if (kind != GM_MARKER_ALLOC || params_out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
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
    gm_marker_kind_t kind = marker_of(hNode, &info);
    if (kind == GM_MARKER_NONE)
        return gm_real.cuGraphMemFreeNodeGetParams(hNode, dptr_out);
    if (kind != GM_MARKER_FREE || dptr_out == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *dptr_out = info.va;
    return CUDA_SUCCESS;
}
