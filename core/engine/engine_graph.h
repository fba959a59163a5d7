/* Graphs and their markers (engine_graph.c). */
#ifndef GRAPHMEM_ENGINE_GRAPH_H
#define GRAPHMEM_ENGINE_GRAPH_H

#include "engine_internal.h"

/* A new graph entry, not listed (a plan lists it at its commit); NULL without host memory. */
gm_graph_t *gm_graph_new(gm_engine_t *e, uint64_t key);
/* `key`'s entry, listed (create: a new one when there is none, NULL without host memory). */
gm_graph_t *gm_graph_get(gm_engine_t *e, uint64_t key, bool create);
/* `key`'s entry, listed now if it was not (*created): a call that then fails unlists it again
 * with gm_graph_unlist_new, so that it leaves no trace and the graph stays unknown. */
gm_graph_t *gm_graph_take(gm_engine_t *e, uint64_t key, bool *created);
void gm_graph_unlist_new(gm_engine_t *e, gm_graph_t *g, bool created);
void gm_graphs_destroy_all(gm_engine_t *e);
/* The marker whose node is `node`, or NULL: the only way `nodes` is read (node index). */
gm_marker_t *gm_node_marker(gm_engine_t *e, uint64_t node);
/* Window families (a graph's serial, shared by its clones and by graphs whose records a parent
 * plans): every graph and part of family `from` joins `to`, so their execs take turns on the
 * windows. Merging only adds turns: never wrong, at worst a wait more. */
void gm_family_merge(gm_engine_t *e, uint64_t from, uint64_t to);

#endif
