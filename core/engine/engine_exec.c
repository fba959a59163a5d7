/* Instantiation: from a graph's topology and its records to one planned part per device. */
#include "engine_exec.h"

#include <stdlib.h>
#include <string.h>

#include "engine_graph.h"
#include "engine_part.h"

static gm_status_t collect_foreign(uint64_t token, gm_graph_t *g, gm_exec_t *x) {
    x->foreign = calloc(g->free_count ? g->free_count : 1, sizeof *x->foreign);
    if (!x->foreign)
        return GM_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < g->free_count; i++) {
        gm_record_t *r = g->frees[i]->record;
        if (r->owner != g && gm_marker_index(g->frees[i], token) != GM_NO_NODE) {
            r->exec_refs++;
            x->foreign[x->foreign_count++] = r;
        }
    }
    return GM_OK;
}

/* The shape cuGraphExecUpdate compares: the topology with each marker's kind. */
gm_status_t gm_exec_shape(gm_engine_t *e, const gm_topology_t *topo, gm_shape_t *out) {
    gm_status_t st = gm_shape_build(out, topo->node_count, topo->nodes, topo->edge_count,
                                    topo->edge_from, topo->edge_to);
    for (uint32_t i = 0; st == GM_OK && i < topo->node_count; i++) {
        const gm_marker_t *m = gm_node_marker(e, topo->nodes[i]);
        out->kind[i] = m ? (uint8_t)m->kind : 0;
    }
    return st;
}

/* One lookup of each node of the topology: its kind in the shape, the position of each marker
 * among them (stamped with `token`), and the allocations of other graphs whose alloc markers the
 * topology holds: those of conditional bodies read into it (GRAPHMEM_LIFT_RESTRICTIONS), planned
 * with g's own. Their graphs join g's window family at the commit (gm_exec_settle). */
static gm_status_t scan_nodes(gm_engine_t *e, const gm_graph_t *g, const gm_topology_t *topo,
                              uint64_t token, gm_shape_t *shape, gm_record_t ***out,
                              uint32_t *count) {
    *out = NULL;
    *count = 0;
    uint32_t cap = 0;
    for (uint32_t i = 0; i < topo->node_count; i++) {
        gm_marker_t *m = gm_node_marker(e, topo->nodes[i]);
        shape->kind[i] = m ? (uint8_t)m->kind : 0;
        if (!m)
            continue;
        m->seen = token;
        m->seen_index = i;
        if (m->kind != GM_MARKER_ALLOC || m->record->owner == g)
            continue;
        if (gm_grow((void **)out, &cap, *count + 1, sizeof **out) != GM_OK)
            return GM_ERR_OUT_OF_MEMORY;
        (*out)[(*count)++] = m->record;
    }
    return GM_OK;
}

/* ---- build: new, prepare, plan ---------------------------------------------------------------
 * An instantiation reads the engine under the lock only to prepare its exec: the markers' places
 * in the topology, the records each part plans (referenced, so they outlive anything that happens
 * meanwhile) and their addresses. The plan itself reads only that and the caller's topology, and
 * writes only the new exec, which no other thread can see before the commit: it runs without the
 * lock (the 10,000-pair DAG's plan held it for tens of ms, and every capture and launch of other
 * threads waited; core/README.md, "Threads and locks"). */

gm_status_t gm_exec_new(const gm_engine_t *e, const gm_topology_t *topo, uint64_t exec,
                        unsigned flags, gm_exec_t **out) {
    gm_exec_t *x = calloc(1, sizeof *x);
    if (!x || !(x->parts = calloc(e->config.device_count, sizeof *x->parts)) ||
        gm_shape_build(&x->shape, topo->node_count, topo->nodes, topo->edge_count, topo->edge_from,
                       topo->edge_to) != GM_OK) {
        if (x)
            free(x->parts);
        free(x);
        return GM_ERR_OUT_OF_MEMORY;
    }
    x->key = exec;
    x->flags = flags;
    *out = x;
    return GM_OK;
}

gm_status_t gm_exec_prepare(gm_engine_t *e, gm_graph_t *g, const gm_topology_t *topo,
                            gm_exec_t *x) {
    gm_status_t st;
    gm_record_t **inner = NULL;
    uint32_t inner_count = 0;
    const uint64_t token = ++e->build_token;
    x->graph = g;
    x->report.exec = x->key;
    x->report.graph = g->key;
    /* The run stays open until the commit (gm_exec_settle). */
    if ((st = scan_nodes(e, g, topo, token, &x->shape, &inner, &inner_count)) != GM_OK ||
        (st = collect_foreign(token, g, x)) != GM_OK)
        goto out;
    for (int d = 0; d < e->config.device_count; d++) {
        bool any = false;
        for (uint32_t i = 0; i < g->record_count && !any; i++)
            any = g->records[i]->params.device == d;
        for (uint32_t i = 0; i < inner_count && !any; i++)
            any = inner[i]->params.device == d;
        if (!any)
            continue;
        gm_part_t *p = NULL;
        gm_record_set_t records = {g->records, g->record_count, inner, inner_count};
        if ((st = gm_part_prepare(e, g, &records, d, token, &p)) != GM_OK)
            goto out;
        p->exec = x;
        x->parts[x->part_count++] = p;
    }
out:
    free(inner);
    return st;
}

gm_status_t gm_exec_plan(const gm_engine_t *e, gm_exec_t *x, const gm_topology_t *topo) {
    x->report.device = x->part_count ? x->parts[0]->device : 0;
    for (uint32_t i = 0; i < x->part_count; i++) {
        gm_part_t *p = x->parts[i];
        gm_status_t st = gm_part_plan(e, p, topo);
        if (st != GM_OK)
            return st;
        x->report.allocations += p->record_count;
        x->report.lower_bound += p->plan.lower_bound;
        x->report.planned_bytes += (p->plan.shared.pages + p->plan.escape.pages) * e->page;
        x->report.escape_bytes += p->plan.escape.pages * e->page;
        x->report.mappings += p->plan.mappings;
        x->report.plan_ns += p->plan_ns;
    }
    return GM_OK;
}

gm_status_t gm_exec_build(gm_engine_t *e, gm_graph_t *g, const gm_topology_t *topo, uint64_t exec,
                          unsigned flags, gm_exec_t **out) {
    gm_exec_t *x = NULL;
    gm_status_t st = gm_exec_new(e, topo, exec, flags, &x);
    if (st == GM_OK && ((st = gm_exec_prepare(e, g, topo, x)) != GM_OK ||
                        (st = gm_exec_plan(e, x, topo)) != GM_OK)) {
        gm_exec_discard(e, x);
        x = NULL;
    }
    *out = x;
    return st;
}

/* An exec object that never ran: its parts are in no list yet. */
void gm_exec_discard(gm_engine_t *e, gm_exec_t *x) {
    for (uint32_t i = 0; i < x->part_count; i++)
        gm_part_discard(e, x->parts[i]);
    gm_exec_free(e, x);
}

/* Makes `x` the exec of its key and its graph. */
void gm_exec_register(gm_engine_t *e, gm_exec_t *x) {
    for (uint32_t i = 0; i < x->part_count; i++)
        gm_part_link(e, x->parts[i]);
    gm_map_put(&e->execs, x->key, x);
    x->graph_next = x->graph->execs;
    x->graph->execs = x;
}

bool gm_topology_valid(const gm_topology_t *topo) {
    return topo && (!topo->node_count || topo->nodes) &&
           (!topo->edge_count || (topo->edge_from && topo->edge_to));
}

/* Where next_other_owner goes on: a part, and a record of it. */
typedef struct owner_cursor {
    uint32_t part, record;
} owner_cursor_t;

/* The next graph other than x's own whose allocation x plans (a body's, under lift), walking the
 * parts' records from `at` (zeroed to start; NULL at the end). A graph may come more than once. */
static const gm_graph_t *next_other_owner(const gm_exec_t *x, owner_cursor_t *at) {
    for (; at->part < x->part_count; at->part++, at->record = 0) {
        const gm_part_t *p = x->parts[at->part];
        while (at->record < p->record_count) {
            const gm_graph_t *o = p->records[at->record++]->owner;
            if (o && o != x->graph)
                return o;
        }
    }
    return NULL;
}

/* The window families `x` belongs to once committed: its graph's, and those of the other graphs
 * whose allocations it plans (conditional bodies read into it under GRAPHMEM_LIFT_RESTRICTIONS;
 * none otherwise), which gm_exec_settle merges into it. Up to `cap` (at least 1) into `out`;
 * returns how many there are. */
static uint32_t exec_families(const gm_exec_t *x, uint64_t *out, uint32_t cap) {
    uint32_t count = 0;
    out[count++] = x->graph->serial;
    owner_cursor_t at = {0};
    for (const gm_graph_t *o; (o = next_other_owner(x, &at));) {
        bool listed = false;
        for (uint32_t f = 0; f < count && f < cap && !listed; f++)
            listed = out[f] == o->serial;
        if (!listed && count++ < cap)
            out[count - 1] = o->serial;
    }
    return count;
}

/* What the build left for the commit, so that a plan abandoned or refused leaves no trace: the
 * graph's run is closed (its plan takes the run's allocations as they are: one added later goes
 * apart, so that the items of this exec stay those of any later exec of the graph, as
 * escape_takeover compares them, and none lands where this exec's mappings of the run reach past
 * its end), and the families of the graphs whose allocations it plans join the graph's (anything
 * else using their windows, the body instantiated or cloned itself, then takes turns with it). */
void gm_exec_settle(gm_engine_t *e, gm_exec_t *x) {
    gm_graph_t *g = x->graph;
    g->run = (gm_run_t){0};
    owner_cursor_t at = {0};
    for (const gm_graph_t *o; (o = next_other_owner(x, &at));)
        gm_family_merge(e, o->serial, g->serial); /* nothing to do once merged */
    /* The graph's family may also have merged into another since the plan (a clone moved into a
     * parent, gm_family_merge), which renamed the graph's serial but not the parts no list held
     * yet: they take the family's name now, before the launches use it. */
    for (uint32_t i = 0; i < x->part_count; i++)
        x->parts[i]->graph_serial = g->serial;
}

/* Whether a live exec's part (a pinned one, with `pinned_only`) belongs to one of the window
 * families `serials`. */
static bool family_has_exec(const gm_engine_t *e, const uint64_t *serials, uint32_t count,
                            bool pinned_only) {
    for (const gm_part_t *q = e->parts; q; q = q->all_next) {
        if (q->exec->destroyed || (pinned_only && !q->pinned))
            continue;
        for (uint32_t f = 0; f < count; f++)
            if (q->graph_serial == serials[f])
                return true;
    }
    return false;
}

/* GM_EXEC_PINNED (engine.h): what it refuses, once the exec is built; then its parts are pinned.
 * Any exec of a family with a pinned exec alive is refused too. */
gm_status_t gm_exec_pin_check(const gm_engine_t *e, gm_exec_t *x) {
    if (x->part_count == 0)
        return GM_OK;
    bool pinned = x->flags & GM_EXEC_PINNED;
    uint64_t few[8], *families = few;
    uint32_t count = exec_families(x, few, 8);
    if (count > 8) {
        if (!(families = malloc(count * sizeof *families)))
            return GM_ERR_OUT_OF_MEMORY;
        count = exec_families(x, families, count); /* no more than counted with less room */
    }
    bool taken = family_has_exec(e, families, count, !pinned);
    if (families != few)
        free(families);
    if (taken)
        return GM_ERR_NOT_SUPPORTED;
    for (uint32_t i = 0; i < x->part_count; i++)
        if (pinned && (x->parts[i]->escaping_count || x->foreign_count))
            return GM_ERR_INVALID_VALUE;
    for (uint32_t i = 0; pinned && i < x->part_count; i++)
        x->parts[i]->pinned = true;
    return GM_OK;
}

static void exec_end(gm_engine_t *e, uint64_t exec, bool gone);

gm_status_t gm_engine_instantiate_plan(gm_engine_t *e, uint64_t graph, const gm_topology_t *topo,
                                       unsigned flags, gm_planned_exec_t **out) {
    *out = NULL;
    if (!gm_topology_valid(topo))
        return GM_ERR_INVALID_VALUE;
    gm_exec_t *x = NULL;
    gm_status_t st = gm_exec_new(e, topo, 0, flags, &x);
    if (st != GM_OK)
        return st;
    gm_engine_lock(e);
    gm_graph_t *g = gm_graph_get(e, graph, false);
    /* A graph graphmem does not know (its conditional bodies hold the markers) is listed at the
     * commit only: an abandoned plan leaves it unknown. */
    if (!g && (g = gm_graph_new(e, graph)))
        x->owns_graph = true;
    /* One exec per graph is checked at the commit, once an exec gone under the new handle is
     * forgotten (the driver gave the handle again: its graph may be this one). */
    st = g ? gm_exec_prepare(e, g, topo, x) : GM_ERR_OUT_OF_MEMORY;
    if (st != GM_OK) {
        gm_exec_discard(e, x);
        gm_engine_unlock(e);
        return st;
    }
    gm_engine_unlock(e);
    /* Without the lock (see "build" above). */
    if ((st = gm_exec_plan(e, x, topo)) != GM_OK) {
        gm_engine_lock(e);
        gm_exec_discard(e, x);
        gm_engine_unlock(e);
        return st;
    }
    *out = x;
    return GM_OK;
}

gm_status_t gm_engine_instantiate_commit(gm_engine_t *e, gm_planned_exec_t *x, uint64_t exec) {
    gm_engine_lock(e);
    /* The driver has just made an exec under this handle: one graphmem still knows under it is
     * gone without a destroy it saw (gm_engine_exec_gone). */
    exec_end(e, exec, true);
    gm_status_t st = GM_ERR_NOT_SUPPORTED;
    /* Its graph, still the one planned (destroying a graph while it is instantiated is the
     * caller's race; the exec is refused then, never tied to another graph). */
    gm_graph_t *now = gm_graph_get(e, x->report.graph, false);
    if (x->owns_graph && now && !now->record_count && !now->free_count) {
        /* Listed meanwhile by another plan's commit of the same graph, still without markers of
         * its own: this plan's graph is that one. */
        free(x->graph);
        x->graph = now;
        x->owns_graph = false;
    }
    if (x->owns_graph ? now != NULL : now != x->graph)
        goto out;
    /* The graphs whose allocations it plans, still there (a body destroyed meanwhile, the
     * caller's race, would leave its window out of this exec's family). */
    for (uint32_t i = 0; i < x->part_count; i++)
        for (uint32_t k = 0; k < x->parts[i]->record_count; k++)
            if (!x->parts[i]->records[k]->owner)
                goto out;
    if (x->graph->execs && !e->config.lift_restrictions)
        goto out; /* one exec per graph at a time (§A3.7) */
    st = GM_ERR_OUT_OF_MEMORY;
    if (gm_map_reserve(&e->execs, 1) || (x->owns_graph && gm_map_reserve(&e->graphs, 1)) ||
        gm_keyset_insert(&e->served, exec))
        goto out;
    if ((st = gm_exec_pin_check(e, x)) != GM_OK) {
        gm_keyset_remove(&e->served, exec);
        goto out;
    }
    x->key = exec;
    x->report.exec = exec;
    if (x->owns_graph)
        gm_map_put(&e->graphs, x->graph->key, x->graph); /* reserved above */
    x->owns_graph = false;
    gm_exec_settle(e, x);
    gm_exec_register(e, x);
    x = NULL;
out:
    if (x)
        gm_exec_discard(e, x);
    gm_engine_unlock(e);
    return st;
}

void gm_engine_instantiate_abandon(gm_engine_t *e, gm_planned_exec_t *x) {
    if (!x)
        return;
    gm_engine_lock(e);
    gm_exec_discard(e, x);
    gm_engine_unlock(e);
}

gm_status_t gm_engine_instantiate(gm_engine_t *e, uint64_t graph, const gm_topology_t *topo,
                                  uint64_t exec, unsigned flags) {
    gm_planned_exec_t *x = NULL;
    gm_status_t st = gm_engine_instantiate_plan(e, graph, topo, flags, &x);
    return st == GM_OK ? gm_engine_instantiate_commit(e, x, exec) : st;
}

bool gm_engine_has_pinned_waiting(gm_engine_t *e) {
    return atomic_load_explicit(&e->pinned_waiting, memory_order_relaxed) != 0;
}

void gm_engine_exec_set_context(gm_engine_t *e, uint64_t exec, uint64_t context) {
    gm_engine_lock(e);
    gm_exec_t *x = gm_map_get(&e->execs, exec);
    if (x)
        x->context = context;
    gm_engine_unlock_unchanged(e);
}

uint64_t gm_engine_sync_mark(gm_engine_t *e) {
    return atomic_load(&e->pin_clock);
}

void gm_engine_device_idle(gm_engine_t *e, uint64_t context, uint64_t mark) {
    gm_engine_lock(e);
    for (gm_part_t *p = e->parts, *next; p; p = next) {
        next = p->all_next;
        if (!p->pinned || !p->pin_stamp || p->pin_stamp > mark || p->exec->context != context)
            continue;
        p->pinned = false;
        p->pin_stamp = 0;
        atomic_fetch_sub_explicit(&e->pinned_waiting, 1, memory_order_relaxed);
        /* Its host launches are still behind their fences: trimmed and reclaimed as any other. */
        gm_part_trim(e, p, true);
        gm_part_try_reclaim(e, p);
    }
    for (int d = 0; d < e->config.device_count; d++)
        gm_pool_settle(e->pools[d]);
    gm_engine_unlock(e);
}

bool gm_engine_graph_instantiated(gm_engine_t *e, uint64_t graph) {
    gm_engine_lock(e);
    gm_graph_t *g = gm_graph_get(e, graph, false);
    bool inst = g && g->execs;
    gm_engine_unlock_unchanged(e);
    return inst;
}

static void exec_forget(gm_engine_t *e, gm_exec_t *x) {
    if (gm_grow((void **)&e->dead_reports, &e->dead_cap, e->dead_count + 1,
                sizeof *e->dead_reports) == GM_OK)
        e->dead_reports[e->dead_count++] = x->report;
    for (gm_exec_t **xp = x->graph ? &x->graph->execs : NULL; xp && *xp; xp = &(*xp)->graph_next)
        if (*xp == x) {
            *xp = x->graph_next;
            break;
        }
    x->graph = NULL;
    x->graph_next = NULL;
    x->destroyed = true;
}

void gm_exec_retire(gm_engine_t *e, gm_exec_t *x) {
    exec_forget(e, x);
    if (x->part_count == 0) {
        gm_exec_free(e, x);
        return;
    }
    /* Reclaiming may free the exec with its last part: iterate over a copy. */
    gm_part_t *parts[GM_MAX_DEVICES];
    uint32_t n = x->part_count;
    memcpy(parts, x->parts, n * sizeof *parts);
    for (uint32_t i = 0; i < n; i++)
        gm_part_try_reclaim(e, parts[i]);
}

/* The exec is gone for the driver: graphmem forgets its handle, and its memory goes as its runs
 * and live allocations allow. `gone`: without a destroy graphmem saw, so with its context, whose
 * destruction waited for its work: no device launch of it can run any more, and no synchronize
 * of that context will come to unpin it. Under the lock. */
static void exec_end(gm_engine_t *e, uint64_t exec, bool gone) {
    gm_engine_disarm(e, exec);
    if (e->last_launch_exec == exec)
        e->last_launch_exec = 0; /* an exec made under the handle again starts a row of its own */
    gm_exec_t *x = gm_map_remove(&e->execs, exec);
    gm_keyset_remove(&e->served, exec);
    for (uint32_t i = 0; gone && x && i < x->part_count; i++)
        x->parts[i]->pinned = false;
    /* Pinned parts wait for a synchronize that began after this (gm_engine_device_idle); one
     * never mapped goes at once, its count with it (engine_part.c, part_free). */
    uint64_t stamp = x ? atomic_fetch_add(&e->pin_clock, 1) + 1 : 0;
    for (uint32_t i = 0; x && i < x->part_count; i++)
        if (x->parts[i]->pinned) {
            x->parts[i]->pin_stamp = stamp;
            atomic_fetch_add_explicit(&e->pinned_waiting, 1, memory_order_relaxed);
        }
    for (uint32_t i = 0; x && e->config.free_on_destroy && i < x->part_count; i++)
        gm_part_free_live(e, x->parts[i]);
    if (x)
        gm_exec_retire(e, x);
}

gm_status_t gm_engine_exec_destroy(gm_engine_t *e, uint64_t exec, gm_driver_call_t call) {
    gm_engine_lock(e);
    gm_status_t st = GM_OK;
    if (call.fn && !call.fn(call.arg))
        st = GM_ERR_DRIVER;
    else
        exec_end(e, exec, false);
    gm_engine_unlock(e);
    return st;
}

void gm_engine_exec_gone(gm_engine_t *e, uint64_t exec) {
    gm_engine_lock(e);
    exec_end(e, exec, true);
    gm_engine_unlock(e);
}

void gm_execs_destroy_all(gm_engine_t *e) {
    uint32_t pos = 0;
    void *v;
    while (gm_map_next(&e->execs, &pos, NULL, &v)) {
        gm_exec_t *x = v;
        exec_forget(e, x);
        if (x->part_count == 0)
            gm_exec_free(e, x); /* nothing to unmap: parts free the others */
    }
    gm_map_fini(&e->execs);
    while (e->parts) {
        gm_part_t *p = e->parts;
        gm_part_unmap_shared(e, p);
        gm_part_unmap_escape(e, p);
        for (uint32_t i = 0; i < p->escape.count; i++)
            gm_pool_empty(e->pools[p->device], &p->escape, i);
        for (uint32_t i = 0; i < p->escaping_count; i++)
            p->escaping[i]->live = false; /* teardown: nobody can free them any more */
        p->unfreed = 0;
        p->busy = false;
        gm_part_t *before = e->parts;
        gm_part_try_reclaim(e, p);
        if (e->parts == before) {
            /* A backend call refused: drop the part anyway, the backend keeps what it holds. */
            p->shared_maps.count = p->escape_maps.count = 0;
            for (uint32_t i = 0; i < p->escape.count; i++)
                p->escape.handles[i] = NULL;
            gm_part_try_reclaim(e, p);
            if (e->parts == before)
                break;
        }
    }
}
