/* Instantiation: from a graph's topology and its records to one planned part per device. */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

typedef struct build {
    gm_engine_t *e;
    gm_map_t index; /* node key -> index + 1 */
    const gm_topology_t *topo;
} build_t;

static uint32_t node_index(const build_t *b, uint64_t node) {
    uintptr_t v = (uintptr_t)gm_map_get(&b->index, node);
    return v ? (uint32_t)(v - 1) : GM_NO_NODE;
}

static void part_free(gm_engine_t *e, gm_part_t *p) {
    for (uint32_t i = 0; i < p->record_count; i++) {
        gm_record_t *r = p->records[i];
        if (r->live_part == p)
            r->live_part = NULL;
        r->exec_refs--;
        gm_record_unref_check(e, r);
    }
    for (uint32_t i = 0; i < p->point_count; i++)
        gm_fence_unref(e, p->points[i].fence);
    gm_fence_unref(e, p->run_fence);
    gm_arena_fini(&p->escape);
    gm_plan_free(&p->plan);
    free(p->items);
    free(p->records);
    free(p->escaping);
    free(p->points);
    free(p->shared_maps.maps);
    free(p->escape_maps.maps);
    free(p);
}

/* Builds the part of `g` on `device`: items in the order records come, one per large record and
 * one per chunk used. */
static gm_status_t part_build(build_t *b, gm_graph_t *g, int device, gm_part_t **out) {
    gm_engine_t *e = b->e;
    gm_part_t *p = calloc(1, sizeof *p);
    gm_plan_alloc_t *allocs = NULL;
    gm_map_t item_of_chunk = {0}; /* chunk -> its item + 1: records of one chunk share an item */
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->record_count; i++)
        n += g->records[i]->params.device == device;
    if (!p || !(p->records = calloc(n, sizeof *p->records)) ||
        !(p->items = calloc(n, sizeof *p->items)) ||
        !(p->escaping = calloc(n, sizeof *p->escaping)) || !(allocs = calloc(n, sizeof *allocs)) ||
        gm_map_reserve(&item_of_chunk, n) != GM_OK)
        goto fail;
    p->device = device;
    for (uint32_t i = 0; i < g->record_count; i++) {
        gm_record_t *r = g->records[i];
        uint32_t node = node_index(b, r->alloc.node);
        if (r->params.device != device || node == GM_NO_NODE)
            continue;
        uint32_t item = p->item_count;
        uintptr_t known = r->chunk ? (uintptr_t)gm_map_get(&item_of_chunk, (uintptr_t)r->chunk) : 0;
        if (known)
            item = (uint32_t)(known - 1);
        if (item == p->item_count) {
            if (r->chunk) /* reserved above: cannot fail */
                gm_map_put(&item_of_chunk, (uintptr_t)r->chunk, (void *)(uintptr_t)(item + 1));
            p->items[item].va = r->chunk ? r->chunk->va : r->va;
            p->item_count++;
        }
        p->items[item].access_mask |= r->params.access_mask;
        gm_marker_t *fm = r->free_marker;
        uint32_t free_node = fm && fm->node ? node_index(b, fm->node) : GM_NO_NODE;
        allocs[p->record_count] = (gm_plan_alloc_t){
            .size = r->params.size,
            .alloc_node = node,
            .free_node = free_node,
            .item = item,
            .item_offset = r->chunk ? r->chunk_offset : 0,
        };
        if (free_node == GM_NO_NODE)
            p->escaping[p->escaping_count++] = r;
        p->records[p->record_count++] = r;
    }
    gm_plan_input_t in = {
        .node_count = b->topo->node_count,
        .edge_count = b->topo->edge_count,
        .edge_from = b->topo->edge_from,
        .edge_to = b->topo->edge_to,
        .alloc_count = p->record_count,
        .allocs = allocs,
        .item_count = p->item_count,
        .page = e->page,
        .max_handle = e->config.max_handle,
        .no_alias = e->config.no_alias,
    };
    uint64_t t0 = gm_now_ns();
    st = gm_plan_build(&in, &p->plan);
    if (st != GM_OK)
        goto fail;
    p->plan_ns = gm_now_ns() - t0;
    for (uint32_t k = 0; k < p->item_count; k++) {
        const gm_plan_item_t *pi = &p->plan.items[k];
        p->items[k].pages = pi->pages;
        p->items[k].arena_page = pi->arena_page;
        p->items[k].escaping = pi->escaping;
    }
    for (uint32_t k = 0; k < p->plan.escape.handle_count; k++)
        if ((st = gm_arena_append(&p->escape, p->plan.escape.handle_pages[k])) != GM_OK)
            goto fail;
    for (uint32_t i = 0; i < p->record_count; i++)
        p->records[i]->exec_refs++;
    free(allocs);
    gm_map_fini(&item_of_chunk);
    *out = p;
    return GM_OK;
fail:
    free(allocs);
    gm_map_fini(&item_of_chunk);
    if (p) {
        p->record_count = 0; /* no references taken yet */
        part_free(e, p);
    }
    return st;
}

static void exec_free(gm_engine_t *e, gm_exec_t *x) {
    for (uint32_t i = 0; i < x->foreign_count; i++) {
        x->foreign[i]->exec_refs--;
        gm_record_unref_check(e, x->foreign[i]);
    }
    free(x->foreign);
    free(x->parts);
    gm_shape_free(&x->shape);
    free(x);
}

static gm_status_t collect_foreign(build_t *b, gm_graph_t *g, gm_exec_t *x) {
    x->foreign = calloc(g->free_count ? g->free_count : 1, sizeof *x->foreign);
    if (!x->foreign)
        return GM_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < g->free_count; i++) {
        gm_record_t *r = g->frees[i]->record;
        if (r->owner != g && node_index(b, g->frees[i]->node) != GM_NO_NODE) {
            r->exec_refs++;
            x->foreign[x->foreign_count++] = r;
        }
    }
    return GM_OK;
}

static void part_link(gm_engine_t *e, gm_part_t *p) {
    p->all_next = e->parts;
    if (e->parts)
        e->parts->all_prev = p;
    e->parts = p;
}

/* The shape cuGraphExecUpdate compares: the topology with each marker's kind. */
gm_status_t gm_exec_shape(gm_engine_t *e, const gm_topology_t *topo, gm_shape_t *out) {
    gm_status_t st = gm_shape_build(out, topo->node_count, topo->nodes, topo->edge_count,
                                    topo->edge_from, topo->edge_to);
    for (uint32_t i = 0; st == GM_OK && i < topo->node_count; i++) {
        const gm_marker_t *m = gm_map_get(&e->nodes, topo->nodes[i]);
        out->kind[i] = m ? (uint8_t)m->kind : 0;
    }
    return st;
}

/* A new exec object of `g` for `exec` (not yet registered), planned from `topo`. */
gm_status_t gm_exec_build(gm_engine_t *e, gm_graph_t *g, const gm_topology_t *topo, uint64_t exec,
                          unsigned flags, gm_exec_t **out) {
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    build_t b = {.e = e, .topo = topo};
    gm_exec_t *x = NULL;
    if (gm_map_reserve(&b.index, topo->node_count))
        goto out;
    for (uint32_t i = 0; i < topo->node_count; i++)
        gm_map_put(&b.index, topo->nodes[i], (void *)(uintptr_t)(i + 1));
    if (!(x = calloc(1, sizeof *x)) ||
        !(x->parts = calloc(e->config.device_count, sizeof *x->parts)))
        goto out;
    x->key = exec;
    x->graph = g;
    x->flags = flags;
    if ((st = collect_foreign(&b, g, x)) != GM_OK || (st = gm_exec_shape(e, topo, &x->shape)))
        goto out;
    for (int d = 0; d < e->config.device_count; d++) {
        bool any = false;
        for (uint32_t i = 0; i < g->record_count && !any; i++)
            any = g->records[i]->params.device == d;
        if (!any)
            continue;
        gm_part_t *p = NULL;
        if ((st = part_build(&b, g, d, &p)) != GM_OK)
            goto out;
        p->exec = x;
        p->graph_serial = g->serial;
        x->parts[x->part_count++] = p;
    }
    x->report.exec = exec;
    x->report.graph = g->key;
    x->report.device = x->part_count ? x->parts[0]->device : 0;
    for (uint32_t i = 0; i < x->part_count; i++) {
        gm_part_t *p = x->parts[i];
        x->report.allocations += p->record_count;
        x->report.lower_bound += p->plan.lower_bound;
        x->report.planned_bytes += (p->plan.shared.pages + p->plan.escape.pages) * e->page;
        x->report.mappings += p->plan.mappings;
        x->report.plan_ns += p->plan_ns;
    }
    *out = x;
    x = NULL;
    st = GM_OK;
out:
    if (x)
        gm_exec_discard(e, x);
    gm_map_fini(&b.index);
    return st;
}

/* An exec object that never ran: its parts are in no list yet. */
void gm_exec_discard(gm_engine_t *e, gm_exec_t *x) {
    for (uint32_t i = 0; i < x->part_count; i++)
        part_free(e, x->parts[i]);
    exec_free(e, x);
}

/* Makes `x` the exec of its key and its graph. */
void gm_exec_register(gm_engine_t *e, gm_exec_t *x) {
    for (uint32_t i = 0; i < x->part_count; i++)
        part_link(e, x->parts[i]);
    gm_map_put(&e->execs, x->key, x);
    x->graph->exec = x;
}

gm_status_t gm_engine_instantiate(gm_engine_t *e, uint64_t graph, const gm_topology_t *topo,
                                  uint64_t exec, unsigned flags) {
    if (!topo || (topo->node_count && !topo->nodes) ||
        (topo->edge_count && (!topo->edge_from || !topo->edge_to)))
        return GM_ERR_INVALID_VALUE;
    pthread_mutex_lock(&e->lock);
    gm_status_t st = GM_ERR_INVALID_VALUE;
    gm_exec_t *x = NULL;
    gm_graph_t *g = gm_graph_get(e, graph, true);
    if (!g) {
        st = GM_ERR_OUT_OF_MEMORY;
        goto out;
    }
    if (g->exec) {
        st = GM_ERR_NOT_SUPPORTED; /* one exec per graph at a time (§A3.7) */
        goto out;
    }
    if (gm_map_get(&e->execs, exec))
        goto out;
    st = GM_ERR_OUT_OF_MEMORY;
    if (gm_map_reserve(&e->execs, 1) || gm_keyset_insert(&e->served, exec))
        goto out;
    if ((st = gm_exec_build(e, g, topo, exec, flags, &x)) != GM_OK) {
        gm_keyset_remove(&e->served, exec);
        goto out;
    }
    gm_exec_register(e, x);
out:
    pthread_mutex_unlock(&e->lock);
    return st;
}

bool gm_engine_graph_instantiated(gm_engine_t *e, uint64_t graph) {
    pthread_mutex_lock(&e->lock);
    gm_graph_t *g = gm_graph_get(e, graph, false);
    bool inst = g && g->exec;
    pthread_mutex_unlock(&e->lock);
    return inst;
}

/* Frees a part of a destroyed exec once nothing of it is mapped, held or live. */
void gm_part_try_reclaim(gm_engine_t *e, gm_part_t *p) {
    if (!p->exec->destroyed || p->shared_maps.count || p->escape_maps.count || p->unfreed ||
        p->busy)
        return;
    for (uint32_t i = 0; i < p->escape.count; i++)
        if (p->escape.handles[i] && gm_pool_empty(e->pools[p->device], &p->escape, i) != GM_OK)
            return;
    gm_exec_t *x = p->exec;
    if (p->group)
        gm_group_leave(e, p);
    if (p->all_prev)
        p->all_prev->all_next = p->all_next;
    else
        e->parts = p->all_next;
    if (p->all_next)
        p->all_next->all_prev = p->all_prev;
    for (uint32_t i = 0; i < x->part_count; i++)
        if (x->parts[i] == p)
            x->parts[i] = x->parts[--x->part_count];
    part_free(e, p);
    if (x->part_count == 0)
        exec_free(e, x);
}

static void exec_forget(gm_engine_t *e, gm_exec_t *x) {
    if (gm_grow((void **)&e->dead_reports, &e->dead_cap, e->dead_count + 1,
                sizeof *e->dead_reports) == GM_OK)
        e->dead_reports[e->dead_count++] = x->report;
    if (x->graph)
        x->graph->exec = NULL;
    x->graph = NULL;
    x->destroyed = true;
}

void gm_exec_retire(gm_engine_t *e, gm_exec_t *x) {
    exec_forget(e, x);
    if (x->part_count == 0) {
        exec_free(e, x);
        return;
    }
    /* Reclaiming may free the exec with its last part: iterate over a copy. */
    gm_part_t *parts[GM_MAX_DEVICES];
    uint32_t n = x->part_count;
    memcpy(parts, x->parts, n * sizeof *parts);
    for (uint32_t i = 0; i < n; i++)
        gm_part_try_reclaim(e, parts[i]);
}

gm_status_t gm_engine_exec_destroy(gm_engine_t *e, uint64_t exec, gm_driver_call_t call) {
    pthread_mutex_lock(&e->lock);
    gm_status_t st = GM_OK;
    if (call.fn && !call.fn(call.arg)) {
        st = GM_ERR_DRIVER;
        goto out;
    }
    gm_exec_t *x = gm_map_remove(&e->execs, exec);
    gm_keyset_remove(&e->served, exec);
    if (x)
        gm_exec_retire(e, x);
out:
    pthread_mutex_unlock(&e->lock);
    return st;
}

void gm_execs_destroy_all(gm_engine_t *e) {
    uint32_t pos = 0;
    void *v;
    while (gm_map_next(&e->execs, &pos, NULL, &v)) {
        gm_exec_t *x = v;
        exec_forget(e, x);
        if (x->part_count == 0)
            exec_free(e, x); /* nothing to unmap: parts free the others */
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
