/* The driver's answer to cuGraphNodeGetDependencies for a fake node whose `count_all` dependencies
 * are the object pointers in the array at `all` (tests/shim's fake drivers, each with a node type
 * of its own): without an array, how many; with one, at most *count written, their edges plain,
 * and *count set to how many. Each pointer is copied out as bytes: the array's element type is
 * the caller's. */
#ifndef GRAPHMEM_TEST_FAKE_DEPENDENCIES_H
#define GRAPHMEM_TEST_FAKE_DEPENDENCIES_H

#include <string.h>

#include "interpose/driver.h"

static inline CUresult fake_dependencies_of(const void *all, size_t count_all, CUgraphNode *deps,
                                            CUgraphEdgeData *edges, size_t *count) {
    if (deps == NULL) {
        *count = count_all;
        return CUDA_SUCCESS;
    }
    size_t written = *count < count_all ? *count : count_all;
    for (size_t i = 0; i < written; i++) {
        void *dep;
        memcpy(&dep, (const char *)all + i * sizeof dep, sizeof dep);
        deps[i] = (CUgraphNode)dep;
        if (edges != NULL)
            edges[i] = (CUgraphEdgeData){0};
    }
    *count = written;
    return CUDA_SUCCESS;
}

#endif
