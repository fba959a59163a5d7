/* Execs: instantiation, update's new plan, destruction (engine_exec.c). */
#ifndef GRAPHMEM_ENGINE_EXEC_H
#define GRAPHMEM_ENGINE_EXEC_H

#include "engine_internal.h"

bool gm_topology_valid(const gm_topology_t *topo); /* arrays present for the counts given */
gm_status_t gm_exec_shape(gm_engine_t *e, const gm_topology_t *topo, gm_shape_t *out);
/* A new exec object for `exec` (not yet registered) with the topology's shape: no lock needed. */
gm_status_t gm_exec_new(const gm_engine_t *e, const gm_topology_t *topo, uint64_t exec,
                        unsigned flags, gm_exec_t **out);
/* Its graph `g`, the markers' kinds in its shape and its parts prepared (gm_part_prepare): under
 * the lock. A failure leaves it to be discarded. */
gm_status_t gm_exec_prepare(gm_engine_t *e, gm_graph_t *g, const gm_topology_t *topo, gm_exec_t *x);
/* Plans its prepared parts: without the lock while no other thread can see it (gm_part_plan). */
gm_status_t gm_exec_plan(const gm_engine_t *e, gm_exec_t *x, const gm_topology_t *topo);
/* All three, under the lock (an exec update's new plan). */
gm_status_t gm_exec_build(gm_engine_t *e, gm_graph_t *g, const gm_topology_t *topo, uint64_t exec,
                          unsigned flags, gm_exec_t **out);
void gm_exec_discard(gm_engine_t *e, gm_exec_t *x);
/* GM_EXEC_PINNED's refusals for a built exec (engine.h); pins its parts when it is one. */
gm_status_t gm_exec_pin_check(const gm_engine_t *e, gm_exec_t *x);
void gm_exec_settle(gm_engine_t *e, gm_exec_t *x); /* taken: run closed, families merged */
void gm_exec_register(gm_engine_t *e, gm_exec_t *x);
void gm_exec_retire(gm_engine_t *e, gm_exec_t *x); /* destroyed: its parts go when reclaimed */
void gm_execs_destroy_all(gm_engine_t *e);

#endif
