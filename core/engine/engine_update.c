/* cuGraphExecUpdate of execs graphmem serves. The driver sees graphmem's markers as empty nodes,
 * so it would take an update that swaps a memory node for another kind of node, and the updated
 * exec would use addresses planned for no exec. The engine pairs the nodes as the driver does
 * (shape.h), refuses what the driver refuses for memory nodes, and where the driver takes the
 * update plans the exec anew for the update's graph: in one step with the driver's call. */
#include "engine_cover.h"
#include "engine_exec.h"
#include "engine_graph.h"

gm_status_t gm_engine_exec_update(gm_engine_t *e, uint64_t exec, uint64_t graph,
                                  const gm_topology_t *topo, gm_driver_call_t call,
                                  uint64_t *error_node) {
    if (!gm_topology_valid(topo))
        return GM_ERR_INVALID_VALUE;
    *error_node = 0;
    gm_engine_lock(e);
    /* The driver checks the memset and memcpy nodes' targets as it updates: graph memory no exec
     * maps is refused there (tests/SEMANTICS.md §A3.16). A scratch page a cover left idle at such
     * a target (the capture of the memset, its node's creation) would make it take the update:
     * idle mappings go first, and no cover starts until the driver's call is over (the lock). */
    gm_cover_wait(e);
    gm_exec_t *x = gm_map_get(&e->execs, exec), *y = NULL;
    gm_shape_t b = {0};
    gm_graph_t *g = NULL;
    bool listed_here = false; /* g was unknown: a refused update unlists it again */
    uint32_t at = 0;
    gm_status_t st = gm_exec_shape(e, topo, &b);
    if (st != GM_OK)
        goto out;
    if (!x) {
        /* An exec without memory nodes: the driver would pair a memory node of `graph` with a
         * node of another kind and report the first it meets. */
        at = gm_shape_first_marker(&b);
        if (at != UINT32_MAX) {
            *error_node = b.nodes[at];
            st = GM_ERR_UPDATE_FAILURE;
        } else if (call.fn && !call.fn(call.arg)) {
            st = GM_ERR_DRIVER;
        }
        goto out;
    }
    if (x->flags & GM_EXEC_PINNED) {
        st = GM_ERR_NOT_SUPPORTED; /* its device launches could be running on the old plan */
        goto out;
    }
    if (gm_shape_pair(&x->shape, &b, &at) == GM_SHAPE_KIND_CHANGED) {
        *error_node = b.nodes[at];
        st = GM_ERR_UPDATE_FAILURE;
        goto out;
    }
    if (!(g = gm_graph_take(e, graph, &listed_here))) {
        st = GM_ERR_OUT_OF_MEMORY;
        goto out;
    }
    if (g->execs && (g->execs != x || x->graph_next) && !e->config.lift_restrictions) {
        st = GM_ERR_UPDATE_FAILURE; /* its addresses belong to another exec (§A3.7) */
        goto out;
    }
    /* Planned before the driver's call, so that nothing is left to fail after it. */
    if (g != x->graph && ((st = gm_exec_build(e, g, topo, exec, x->flags, &y)) != GM_OK ||
                          (st = gm_exec_pin_check(e, y)) != GM_OK))
        goto out;
    if (call.fn && !call.fn(call.arg)) {
        st = GM_ERR_DRIVER;
        goto out;
    }
    if (y) {
        y->report.launches = x->report.launches;
        y->report.uploads = x->report.uploads;
        gm_exec_retire(e, x); /* as a destroyed exec: live allocations stay live */
        gm_exec_settle(e, y);
        gm_exec_register(e, y);
        y = NULL;
    }
    listed_here = false;
out:
    if (y)
        gm_exec_discard(e, y);
    gm_graph_unlist_new(e, g, listed_here); /* after y, which planned against it */
    gm_shape_free(&b);
    gm_engine_unlock(e);
    return st;
}
