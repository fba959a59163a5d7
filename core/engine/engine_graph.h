/* Graphs and their markers (engine_graph.c). */
#ifndef GRAPHMEM_ENGINE_GRAPH_H
#define GRAPHMEM_ENGINE_GRAPH_H

#include "engine_internal.h"

gm_graph_t *gm_graph_get(gm_engine_t *e, uint64_t key, bool create);
void gm_graphs_destroy_all(gm_engine_t *e);
/* Window families (a graph's serial, shared by its clones and by graphs whose records a parent
 * plans): every graph and part of family `from` joins `to`, so their execs take turns on the
 * windows. Merging only adds turns: never wrong, at worst a wait more. */
void gm_family_merge(gm_engine_t *e, uint64_t from, uint64_t to);

#endif
