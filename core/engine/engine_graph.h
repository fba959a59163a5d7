/* Graphs and their markers (engine_graph.c). */
#ifndef GRAPHMEM_ENGINE_GRAPH_H
#define GRAPHMEM_ENGINE_GRAPH_H

#include "engine_internal.h"

gm_graph_t *gm_graph_get(gm_engine_t *e, uint64_t key, bool create);
void gm_graphs_destroy_all(gm_engine_t *e);

#endif
