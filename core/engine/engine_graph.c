/* Graphs and their markers: every marker is made, attached to its node, aborted and ended here
 * (an alloc marker lives in its record, engine_record.c, which gives it its address); frees
 * validated as the driver does, introspection, and the end of a graph (destroyed, or moved into a
 * parent). */
#include "engine_graph.h"

#include <stdlib.h>
#include <string.h>

#include "engine_record.h"
#include "log.h"

gm_graph_t *gm_graph_new(gm_engine_t *e, uint64_t key) {
    gm_graph_t *g = calloc(1, sizeof *g);
    if (g) {
        g->key = key;
        g->serial = ++e->next_graph_serial;
    }
    return g;
}

gm_graph_t *gm_graph_get(gm_engine_t *e, uint64_t key, bool create) {
    if (e->graph_memo && e->graph_memo->key == key)
        return e->graph_memo;
    gm_graph_t *g = gm_map_get(&e->graphs, key);
    if (g)
        e->graph_memo = g;
    if (g || !create)
        return g;
    if (!(g = gm_graph_new(e, key)))
        return NULL;
    if (gm_map_put(&e->graphs, key, g) != GM_OK) {
        free(g);
        return NULL;
    }
    return e->graph_memo = g;
}

static gm_graph_t *graph_unlist(gm_engine_t *e, uint64_t key) {
    if (e->graph_memo && e->graph_memo->key == key)
        e->graph_memo = NULL;
    return gm_map_remove(&e->graphs, key);
}

/* ---- node index: marker nodes to their markers ---------------------------------------------- */

/* Room to note one more marker node: nothing may fail once the driver made it. */
static bool node_room(gm_engine_t *e) {
    return gm_grow((void **)&e->nodes_pending, &e->pending_cap, e->pending_count + 1,
                   sizeof *e->nodes_pending) == GM_OK &&
           gm_map_reserve(&e->nodes, e->pending_count + 1) == GM_OK;
}

static void node_note(gm_engine_t *e, uint64_t node, gm_marker_t *m) {
    e->nodes_pending[e->pending_count++] = (gm_node_entry_t){node, m};
}

/* Marker m's node enters `nodes` (a handle the driver gave out again replaces the stale entry):
 * its room is reserved, so nothing fails. */
static void index_node(gm_engine_t *e, uint64_t node, gm_marker_t *m) {
    gm_map_put(&e->nodes, node, m);
    m->indexed = true;
}

/* Moves the pending nodes into `nodes`, in the order they were made. */
static void nodes_settle(gm_engine_t *e) {
    for (uint32_t i = 0; i < e->pending_count; i++)
        index_node(e, e->nodes_pending[i].node, e->nodes_pending[i].marker);
    e->pending_count = 0;
}

/* A graph with `markers` markers ends: those of its markers still pending leave the list without
 * entering the map (graph_free then removes only the indexed ones from it). When the list is
 * mostly other graphs' the list is settled instead, so that graphs ending one after another never
 * scan the same long list again and again. */
static void nodes_drop_graph(gm_engine_t *e, const gm_graph_t *g, uint64_t markers) {
    if (e->pending_count > 2 * markers + 64) {
        nodes_settle(e);
        return;
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < e->pending_count; i++)
        if (e->nodes_pending[i].marker->graph != g)
            e->nodes_pending[kept++] = e->nodes_pending[i];
    e->pending_count = kept;
}

gm_marker_t *gm_node_marker(gm_engine_t *e, uint64_t node) {
    nodes_settle(e);
    return gm_map_get(&e->nodes, node);
}

/* The pending nodes a search looks at before it settles them: a marker's ancestor is usually the
 * marker made just before it on its stream, one of the last few made. */
#define NODES_RECENT 8u

/* gm_node_marker, answered from the last pending nodes when it can (newest first, as the map
 * would answer after settling them). */
static gm_marker_t *node_marker_recent(gm_engine_t *e, uint64_t node) {
    uint32_t stop = e->pending_count > NODES_RECENT ? e->pending_count - NODES_RECENT : 0;
    for (uint32_t i = e->pending_count; i-- > stop;)
        if (e->nodes_pending[i].node == node)
            return e->nodes_pending[i].marker;
    return gm_node_marker(e, node);
}

/* Keeps `node`'s parents `up` (`n` of them, as `parents` answered) as the lead of the marker being
 * made: when the driver told them all, they fit and are distinct (the read-back's edges). */
static void lead_keep(gm_lead_t *lead, uint64_t node, const uint64_t *up, size_t n) {
    if (!lead || n == GM_PARENTS_UNKNOWN || n > GM_KNOWN_DEPS)
        return;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (up[i] == up[j])
                return;
    *lead = (gm_lead_t){.node = node, .count = (uint8_t)n, .known = true};
    for (size_t i = 0; i < n; i++)
        lead->deps[i] = up[i];
}

/* Whether the new marker's dependencies are one node that is no marker: its lead. */
static bool has_lead(gm_engine_t *e, const gm_search_t *search) {
    return search->count == 1 && !node_marker_recent(e, search->deps[0]);
}

/* The markers among the ancestors of a new marker of `g` (gm_search_t), under the engine lock:
 * a node is a marker when the engine knows its node. Between two markers on one stream there are
 * usually a few kernels, so the budget finds the previous marker while keeping the capture path
 * cheap. The parents of its lead, the first node asked about, go to `lead` (may be NULL). */
static size_t search_markers(gm_engine_t *e, const gm_search_t *search,
                             const gm_marker_t *markers_out[GM_ANCESTOR_MAX], gm_lead_t *lead) {
    uint64_t queue[GM_SEARCH_BUDGET];
    size_t head = 0, tail = 0, found = 0;
    for (size_t i = 0; i < search->count && tail < GM_SEARCH_BUDGET; i++)
        queue[tail++] = search->deps[i];
    while (head < tail && found < GM_ANCESTOR_MAX) {
        bool first = head == 0 && search->count == 1;
        uint64_t node = queue[head++];
        const gm_marker_t *m = node_marker_recent(e, node);
        if (m) {
            markers_out[found++] = m;
            continue;
        }
        uint64_t up[GM_SEARCH_PARENTS];
        size_t n = search->parents(search->arg, node, up, GM_SEARCH_PARENTS);
        if (first)
            lead_keep(lead, node, up, n);
        if (n == GM_PARENTS_UNKNOWN)
            n = 0;
        for (size_t i = 0; i < n && i < GM_SEARCH_PARENTS && tail < GM_SEARCH_BUDGET; i++) {
            bool seen = false;
            for (size_t j = 0; j < tail && !seen; j++)
                seen = queue[j] == up[i];
            if (!seen)
                queue[tail++] = up[i];
        }
    }
    return found;
}

/* Whether a search for a new marker of `g` is made (engine.h, gm_search_t). */
static bool searched(const gm_engine_t *e, const gm_graph_t *g, const gm_search_t *search) {
    return !e->config.lift_restrictions && g && g->packers && search->parents;
}

size_t gm_engine_find_ancestors(gm_engine_t *e, uint64_t graph, const uint64_t *deps, size_t count,
                                gm_parents_fn parents, void *arg,
                                uint64_t markers_out[GM_ANCESTOR_MAX]) {
    gm_search_t search = {deps, count, parents, arg};
    const gm_marker_t *found[GM_ANCESTOR_MAX];
    gm_engine_lock(e);
    const gm_graph_t *g = gm_graph_get(e, graph, false);
    size_t n = searched(e, g, &search) ? search_markers(e, &search, found, NULL) : 0;
    for (size_t i = 0; i < n; i++)
        markers_out[i] = found[i]->node;
    gm_engine_unlock_unchanged(e);
    return n;
}

/* The markers a new marker of `g` follows: those given, or those its search finds; its lead's
 * parents to `lead` where the search (or, without one, a question of its own) asked them. */
static size_t markers_before(gm_engine_t *e, const gm_graph_t *g, const gm_ancestors_t *anc,
                             const gm_marker_t *out[GM_ANCESTOR_MAX], gm_lead_t *lead) {
    if (anc && anc->search.parents && searched(e, g, &anc->search))
        return search_markers(e, &anc->search, out, lead);
    if (anc && anc->search.parents && !e->config.lift_restrictions && has_lead(e, &anc->search)) {
        uint64_t up[GM_SEARCH_PARENTS];
        uint64_t node = anc->search.deps[0];
        lead_keep(lead, node, up,
                  anc->search.parents(anc->search.arg, node, up, GM_SEARCH_PARENTS));
    }
    if (anc && anc->search.parents)
        return 0;
    size_t n = 0;
    for (size_t i = 0; anc && i < anc->count && n < GM_ANCESTOR_MAX; i++)
        if ((out[n] = node_marker_recent(e, anc->markers[i])))
            n++;
    return n;
}

/* Room for one more of the graph's node facts before its marker's node is added (nothing may
 * fail after the driver made the node). False under GRAPHMEM_LIFT_RESTRICTIONS, where markers may
 * go, or without host memory: the marker is then left out, and the read-back asks the driver about
 * its node; the order of those kept is still the order they were made in. */
static bool fact_room(const gm_engine_t *e, gm_graph_t *g) {
    return !e->config.lift_restrictions &&
           gm_grow((void **)&g->facts, &g->fact_cap, g->fact_count + 1, sizeof *g->facts) == GM_OK;
}

static void fact_append(gm_graph_t *g, bool room, uint64_t node, gm_marker_kind_t kind,
                        gm_node_call_t add, const gm_lead_t *lead) {
    if (!room)
        return;
    gm_node_fact_t *f = &g->facts[g->fact_count++];
    *f = (gm_node_fact_t){.node = node, .facts = {.kind = kind}};
    uint32_t at = g->fact_count - 1;
    if (lead->known &&
        gm_grow((void **)&g->leads, &g->lead_cap, at + 1, sizeof *g->leads) == GM_OK) {
        memset(&g->leads[g->lead_count], 0, (at - g->lead_count) * sizeof *g->leads);
        g->leads[at] = *lead;
        g->lead_count = at + 1;
    }
    if (!add.deps || add.dep_count > GM_KNOWN_DEPS)
        return;
    for (size_t i = 0; i < add.dep_count; i++)
        f->facts.deps[i] = add.deps[i];
    f->facts.dep_count = (uint8_t)add.dep_count;
    f->facts.deps_known = true;
}

/* The walk of a graph's facts beside the driver's list of its nodes: which way, once a node
 * matched one end, and the next fact expected. */
typedef struct fact_walk {
    int step; /* 0 until known, then +1 or -1 */
    int64_t next;
} fact_walk_t;

static const gm_node_fact_t *fact_match(const gm_graph_t *g, fact_walk_t *w, uint64_t node) {
    int64_t last = (int64_t)g->fact_count - 1;
    if (last < 0)
        return NULL;
    if (w->step == 0) {
        if (g->facts[0].node == node)
            *w = (fact_walk_t){1, 0};
        else if (g->facts[last].node == node)
            *w = (fact_walk_t){-1, last};
        else
            return NULL;
    }
    if (w->next < 0 || w->next > last || g->facts[w->next].node != node)
        return NULL;
    w->next += w->step;
    return &g->facts[w->next - w->step];
}

/* The fact whose lead `node` is, when it is the fact next to the walk's place: made just after its
 * lead, a marker is listed just after it (just before it, backwards: the fact matched last). */
static const gm_lead_t *lead_match(const gm_graph_t *g, const fact_walk_t *w, uint64_t node) {
    int64_t at = w->step >= 0 ? w->next : w->next + 1;
    if (at < 0 || at >= (int64_t)g->lead_count)
        return NULL;
    const gm_lead_t *lead = &g->leads[at];
    return lead->known && lead->node == node ? lead : NULL;
}

/* Nodes matched a slice at a time, so the engine lock is never held long. */
#define FACTS_SLICE 4096

void gm_engine_node_facts(gm_engine_t *e, uint64_t graph, const uint64_t *nodes, size_t count,
                          gm_node_facts_t *facts_out) {
    fact_walk_t walk = {0, 0};
    for (size_t at = 0; at < count; at += FACTS_SLICE) {
        size_t end = count - at < FACTS_SLICE ? count : at + FACTS_SLICE;
        gm_engine_lock(e);
        const gm_graph_t *g = gm_graph_get(e, graph, false);
        for (size_t i = at; i < end; i++) {
            const gm_node_fact_t *f = g ? fact_match(g, &walk, nodes[i]) : NULL;
            const gm_lead_t *led = g && !f ? lead_match(g, &walk, nodes[i]) : NULL;
            facts_out[i] = f ? f->facts : (gm_node_facts_t){.kind = GM_MARKER_NONE};
            if (led) {
                facts_out[i].deps_known = true;
                facts_out[i].dep_count = led->count;
                for (uint8_t k = 0; k < led->count; k++)
                    facts_out[i].deps[k] = led->deps[k];
            }
            if ((f || led) && g->edges_edited)
                facts_out[i].deps_known = false, facts_out[i].dep_count = 0;
        }
        gm_engine_unlock_unchanged(e);
    }
}

void gm_engine_graph_edges_edited(gm_engine_t *e, uint64_t graph) {
    gm_engine_lock(e);
    gm_graph_t *g = gm_graph_get(e, graph, false);
    if (g)
        g->edges_edited = true;
    gm_engine_unlock_unchanged(e);
}

static void graph_free(gm_engine_t *e, gm_graph_t *g);

gm_graph_t *gm_graph_take(gm_engine_t *e, uint64_t graph, bool *created) {
    gm_graph_t *g = gm_graph_get(e, graph, false);
    *created = g == NULL;
    return g ? g : gm_graph_get(e, graph, true);
}

void gm_graph_unlist_new(gm_engine_t *e, gm_graph_t *g, bool created) {
    if (!created || !g)
        return;
    graph_unlist(e, g->key);
    graph_free(e, g);
}

/* ---- alloc markers ------------------------------------------------------------------------- */

gm_status_t gm_engine_alloc_marker(gm_engine_t *e, uint64_t graph, const gm_alloc_params_t *params,
                                   const gm_ancestors_t *ancestors, gm_node_call_t add,
                                   uint64_t *va_out, uint64_t *node_out) {
    if (!params || !va_out || !node_out || !add.fn || params->device < 0 ||
        params->device >= e->config.device_count ||
        (e->config.device_count < 64 && params->access_mask >> e->config.device_count))
        return GM_ERR_INVALID_VALUE;
    uint64_t limit = e->config.max_allocation[params->device];
    if (limit && params->size > limit)
        return GM_ERR_OUT_OF_MEMORY; /* more than the device can ever back (§A1.6) */
    gm_engine_lock(e);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    bool created;
    gm_graph_t *g = gm_graph_take(e, graph, &created);
    gm_clock_t before;
    gm_record_t *r;
    uint64_t node = 0;
    const gm_marker_t *after[GM_ANCESTOR_MAX];
    gm_lead_t lead;
    lead.known = false; /* lead_keep fills the rest */
    if (!g ||
        gm_grow((void **)&g->records, &g->record_cap, g->record_count + 1, sizeof *g->records) ||
        gm_map_reserve(&e->addresses, 1) || !node_room(e) ||
        (st = gm_proven_before(e, g, after, markers_before(e, g, ancestors, after, &lead),
                               &before)) != GM_OK ||
        (st = gm_record_create(e, g, params, before, &r)) != GM_OK)
        goto out;
    bool fact_kept = fact_room(e, g);
    if (!add.fn(add.arg, &node)) {
        gm_record_abort(e, r); /* the address goes back: nobody saw it */
        st = GM_ERR_DRIVER;
        goto out;
    }
    g->records[g->record_count++] = r;
    r->alloc.node = node;
    r->alloc.captured = add.captured;
    fact_append(g, fact_kept, node, GM_MARKER_ALLOC, add, &lead);
    gm_marker_place(e, g, &r->alloc);
    node_note(e, node, &r->alloc); /* room made above */
    *va_out = r->va;
    *node_out = node;
    st = GM_OK;
    if (GM_LOG_ENABLED(GM_LOG_TRACE))
        gm_log(GM_LOG_TRACE, "capture: graph %#llx: %llu B at %#llx (%s %#llx + %llu)",
               (unsigned long long)graph, (unsigned long long)params->size,
               (unsigned long long)r->va, r->chunk ? "chunk" : "window",
               (unsigned long long)(r->chunk ? r->chunk->va : r->va),
               (unsigned long long)(r->chunk ? r->chunk_offset : 0));
out:
    if (st != GM_OK)
        gm_graph_unlist_new(e, g, created);
    gm_engine_unlock(e);
    return st;
}

/* ---- free markers -------------------------------------------------------------------------- */

static bool free_allowed(const gm_record_t *r) {
    return !r->freed_in_owner && !r->foreign_free && (r->owner || r->live || r->exec_refs);
}

/* The allocation a free of `va` in `g` refers to, or NULL when the driver would refuse the free
 * (§A2.1, §A2.4). Several records share an address inside one graph (then all but one are freed
 * already), and across a graph and its clones (gm_engine_graph_clone): g's own comes first. */
static gm_record_t *free_target(gm_engine_t *e, const gm_graph_t *g, uint64_t va) {
    gm_record_t *other = NULL;
    for (gm_record_t *r = gm_map_get(&e->addresses, va); r; r = r->va_next) {
        if (!free_allowed(r))
            continue;
        if (r->owner == g)
            return r;
        if (!other)
            other = r;
    }
    return other;
}

gm_status_t gm_engine_free_marker(gm_engine_t *e, uint64_t graph, uint64_t va,
                                  const gm_ancestors_t *ancestors, gm_node_call_t add,
                                  uint64_t *node_out) {
    if (!node_out || !add.fn)
        return GM_ERR_INVALID_VALUE;
    gm_engine_lock(e);
    gm_status_t st = GM_ERR_INVALID_VALUE;
    bool created;
    gm_graph_t *g = gm_graph_take(e, graph, &created);
    gm_record_t *r = g ? free_target(e, g, va) : NULL;
    gm_marker_t *m = r ? gm_spare_take(&e->spare_markers, sizeof *m) : NULL;
    uint64_t node = 0;
    if (!g || (r && !m))
        st = GM_ERR_OUT_OF_MEMORY;
    if (!m)
        goto out;
    *m = (gm_marker_t){.kind = GM_MARKER_FREE, .record = r, .graph = g};
    const gm_marker_t *after[GM_ANCESTOR_MAX];
    gm_lead_t lead;
    lead.known = false; /* lead_keep fills the rest */
    if (gm_grow((void **)&g->frees, &g->free_cap, g->free_count + 1, sizeof *g->frees) ||
        !node_room(e) ||
        gm_proven_before(e, g, after, markers_before(e, g, ancestors, after, &lead), &m->before)) {
        gm_spare_give(&e->spare_markers, m);
        st = GM_ERR_OUT_OF_MEMORY;
        goto out;
    }
    bool fact_kept = fact_room(e, g);
    if (!add.fn(add.arg, &node)) {
        gm_clock_release(&m->before);
        gm_spare_give(&e->spare_markers, m);
        st = GM_ERR_DRIVER;
        goto out;
    }
    m->node = node;
    m->captured = add.captured;
    fact_append(g, fact_kept, node, GM_MARKER_FREE, add, &lead);
    gm_marker_place(e, g, m);
    if (r->owner == g) {
        gm_run_forget(g, r);
        r->free_marker = m;
        r->freed_in_owner = true;
        /* Only a free that follows its alloc lets later allocations take the packed bytes
         * (pack.h): one not ordered after it leaves them live to the end, as the planner does. */
        if (r->packer && gm_proven_made(&m->before, r))
            gm_pack_mark_freed(r->packer->pack, r->pack_id);
    } else {
        r->foreign_free = m;
    }
    node_note(e, node, m); /* room made above */
    g->frees[g->free_count++] = m;
    *node_out = node;
    st = GM_OK;
    if (GM_LOG_ENABLED(GM_LOG_TRACE))
        gm_log(GM_LOG_TRACE, "capture: graph %#llx: free of %#llx%s", (unsigned long long)graph,
               (unsigned long long)va, r->owner == g ? "" : " (made by another graph)");
out:
    if (st != GM_OK)
        gm_graph_unlist_new(e, g, created);
    gm_engine_unlock(e);
    return st;
}

/* A free marker goes: its allocation forgets it. With `unfree` the allocation is no longer freed
 * in its graph either; a graph that ends keeps that fact for the execs made from it. */
static void free_marker_release(gm_engine_t *e, gm_marker_t *m, bool unfree) {
    gm_record_t *r = m->record;
    if (r->free_marker == m) {
        r->free_marker = NULL;
        if (unfree)
            r->freed_in_owner = false;
    }
    if (r->foreign_free == m)
        r->foreign_free = NULL;
    gm_clock_release(&m->before);
    gm_spare_give(&e->spare_markers, m);
    gm_record_unref_check(e, r);
}

/* ---- introspection and the end of graphs -------------------------------------------------- */

gm_marker_kind_t gm_engine_marker(gm_engine_t *e, uint64_t node, gm_marker_info_t *info_out) {
    gm_engine_lock(e);
    gm_marker_t *m = gm_node_marker(e, node);
    gm_marker_kind_t kind = m ? m->kind : GM_MARKER_NONE;
    if (m && info_out) {
        info_out->va = m->record->va;
        info_out->params = m->record->params;
        info_out->captured = m->captured;
    }
    gm_engine_unlock_unchanged(e);
    return kind;
}

bool gm_engine_graph_known(gm_engine_t *e, uint64_t graph) {
    gm_engine_lock(e);
    bool known = gm_graph_get(e, graph, false) || gm_map_get(&e->moved, graph);
    gm_engine_unlock_unchanged(e);
    return known;
}

bool gm_engine_graph_has_markers(gm_engine_t *e, uint64_t graph) {
    gm_engine_lock(e);
    gm_graph_t *g = gm_graph_get(e, graph, false);
    bool has = (g && (g->record_count || g->free_count)) || gm_map_get(&e->moved, graph);
    gm_engine_unlock_unchanged(e);
    return has;
}

bool gm_engine_graph_self_contained(gm_engine_t *e, uint64_t graph) {
    gm_engine_lock(e);
    const gm_graph_t *g = gm_graph_get(e, graph, false);
    bool contained = true;
    for (uint32_t i = 0; g && contained && i < g->record_count; i++)
        contained = g->records[i]->freed_in_owner && g->records[i]->free_marker;
    for (uint32_t i = 0; g && contained && i < g->free_count; i++)
        contained = g->frees[i]->record->owner == g;
    gm_engine_unlock_unchanged(e);
    return contained;
}

bool gm_engine_marked_graphs_any(gm_engine_t *e, bool (*match)(void *arg, uint64_t graph),
                                 void *arg) {
    gm_engine_lock(e);
    bool found = false;
    uint32_t pos = 0;
    uint64_t key;
    void *value;
    while (!found && gm_map_next(&e->graphs, &pos, &key, &value)) {
        const gm_graph_t *g = value;
        found = (g->record_count || g->free_count) && match(arg, key);
    }
    for (pos = 0; !found && gm_map_next(&e->moved, &pos, &key, &value);)
        found = match(arg, key);
    gm_engine_unlock_unchanged(e);
    return found;
}

/* Marker `m`'s node leaves the map, if it is there: a handle the driver gave out again (after a
 * context reset took m's graph without a destroy graphmem saw) names the newer marker, which
 * keeps it. */
static void unindex(gm_engine_t *e, gm_marker_t *m) {
    if (m->indexed)
        gm_map_remove_if(&e->nodes, m->node, m);
    m->indexed = false;
}

/* Marker `m`'s node leaves the index (pending or in the map). */
static void forget_node(gm_engine_t *e, gm_marker_t *m) {
    if (!m->indexed)
        nodes_settle(e);
    unindex(e, m);
}

static void graph_free(gm_engine_t *e, gm_graph_t *g) {
    /* Every marker of g names g (gm_engine_graph_moved renames a child's): after the drop, its
     * pending ones are gone and the others are in the map. */
    nodes_drop_graph(e, g, (uint64_t)g->free_count + g->record_count);
    for (uint32_t i = 0; i < g->free_count; i++) {
        unindex(e, g->frees[i]);
        free_marker_release(e, g->frees[i], false);
    }
    g->run = (gm_run_t){0};
    while (g->packers) {
        gm_packer_t *pk = g->packers;
        g->packers = pk->next;
        gm_packer_destroy(e, pk);
    }
    for (uint32_t i = 0; i < g->record_count; i++) {
        gm_record_t *r = g->records[i];
        unindex(e, &r->alloc);
        r->owner = NULL;
        gm_record_unref_check(e, r);
    }
    for (gm_exec_t *x = g->execs, *next; x; x = next) {
        next = x->graph_next;
        x->graph = NULL;
        x->graph_next = NULL;
    }
    free(g->records);
    free(g->frees);
    free(g->chains);
    free(g->facts);
    free(g->leads);
    free(g);
}

/* ---- markers destroyed one by one (GRAPHMEM_LIFT_RESTRICTIONS) ------------------------------ */

/* An attached free marker ends: its allocation is no longer freed by it. */
static void free_marker_end(gm_engine_t *e, gm_marker_t *m) {
    gm_graph_t *g = m->graph;
    for (uint32_t i = 0; i < g->free_count; i++)
        if (g->frees[i] == m) {
            memmove(&g->frees[i], &g->frees[i + 1], (g->free_count - i - 1) * sizeof *g->frees);
            g->free_count--;
            break;
        }
    forget_node(e, m);
    free_marker_release(e, m, true);
}

/* An attached alloc marker ends: its allocation leaves the graph, with its free in the graph.
 * Packed bytes are not given back to the packer: an exec may still plan them (nothing reuses
 * bytes under the option anyway). */
static void alloc_marker_end(gm_engine_t *e, gm_marker_t *m) {
    gm_record_t *r = m->record;
    gm_graph_t *g = r->owner;
    if (r->free_marker)
        free_marker_end(e, r->free_marker);
    for (uint32_t i = 0; g && i < g->record_count; i++)
        if (g->records[i] == r) {
            memmove(&g->records[i], &g->records[i + 1],
                    (g->record_count - i - 1) * sizeof *g->records);
            g->record_count--;
            break;
        }
    forget_node(e, m);
    if (g)
        gm_run_forget(g, r);
    r->owner = NULL;
    gm_record_unref_check(e, r);
}

gm_status_t gm_engine_marker_destroy(gm_engine_t *e, uint64_t node, gm_driver_call_t call) {
    gm_engine_lock(e);
    gm_marker_t *m = gm_node_marker(e, node);
    gm_status_t st = GM_ERR_INVALID_VALUE;
    if (m) {
        st = call.fn && !call.fn(call.arg) ? GM_ERR_DRIVER : GM_OK;
        if (st == GM_OK && m->kind == GM_MARKER_FREE)
            free_marker_end(e, m);
        else if (st == GM_OK)
            alloc_marker_end(e, m);
    }
    gm_engine_unlock(e);
    return st;
}

gm_status_t gm_engine_graphs_destroy_each(gm_engine_t *e, gm_graph_source_t ending,
                                          gm_driver_call_t call) {
    gm_engine_lock(e);
    gm_status_t st = GM_OK;
    uint64_t graph;
    if (call.fn && !call.fn(call.arg))
        st = GM_ERR_DRIVER;
    else
        while (ending.next(ending.arg, &graph)) {
            gm_graph_t *g = graph_unlist(e, graph);
            gm_map_remove(&e->moved, graph);
            if (g)
                graph_free(e, g);
        }
    gm_engine_unlock(e);
    return st;
}

typedef struct graph_array {
    const uint64_t *graphs;
    size_t count, next;
} graph_array_t;

static bool next_in_array(void *arg, uint64_t *graph_out) {
    graph_array_t *a = arg;
    if (a->next >= a->count)
        return false;
    *graph_out = a->graphs[a->next++];
    return true;
}

gm_status_t gm_engine_graphs_destroy(gm_engine_t *e, const uint64_t *graphs, size_t count,
                                     gm_driver_call_t call) {
    graph_array_t array = {graphs, count, 0};
    return gm_engine_graphs_destroy_each(e, (gm_graph_source_t){next_in_array, &array}, call);
}

void gm_graphs_destroy_all(gm_engine_t *e) {
    uint32_t pos = 0;
    void *v;
    while (gm_map_next(&e->graphs, &pos, NULL, &v))
        graph_free(e, v);
    gm_map_fini(&e->graphs);
    e->graph_memo = NULL;
    gm_map_fini(&e->moved);
}

void gm_family_merge(gm_engine_t *e, uint64_t from, uint64_t to) {
    if (from == to)
        return;
    uint32_t pos = 0;
    void *v;
    while (gm_map_next(&e->graphs, &pos, NULL, &v))
        if (((gm_graph_t *)v)->serial == from)
            ((gm_graph_t *)v)->serial = to;
    for (gm_part_t *q = e->parts; q; q = q->all_next)
        if (q->graph_serial == from)
            q->graph_serial = to;
}

/* ---- clones (GRAPHMEM_LIFT_RESTRICTIONS) ---------------------------------------------------- */

/* What a clone takes: its nodes for the original's markers, and the memory for its copies, all
 * found before anything changes. `free_record[i]` is the index in the original's records of the
 * allocation its i-th free frees. */
typedef struct clone_plan {
    uint32_t records, frees; /* of the original, once the plan's arrays exist */
    uint64_t *alloc_nodes, *free_nodes;
    uint32_t *free_record;
    gm_record_t **copies;
    gm_chunk_t **chunks;
    gm_marker_t **free_markers;
} clone_plan_t;

static void clone_plan_free(clone_plan_t *cp) {
    for (uint32_t i = 0; i < cp->records; i++) {
        free(cp->copies[i]);
        free(cp->chunks[i]);
    }
    for (uint32_t i = 0; i < cp->frees; i++)
        free(cp->free_markers[i]);
    free(cp->alloc_nodes);
    free(cp->free_nodes);
    free(cp->free_record);
    free(cp->copies);
    free(cp->chunks);
    free(cp->free_markers);
}

/* Each free's record by index, through a map from record to index filled once. */
static gm_status_t index_free_records(const gm_graph_t *g, uint32_t *free_record) {
    gm_map_t index = {0};
    gm_status_t st = gm_map_reserve(&index, g->record_count);
    for (uint32_t k = 0; st == GM_OK && k < g->record_count; k++)
        gm_map_put(&index, (uint64_t)(uintptr_t)g->records[k], (void *)(uintptr_t)(k + 1));
    for (uint32_t i = 0; st == GM_OK && i < g->free_count; i++) {
        uintptr_t k = (uintptr_t)gm_map_get(&index, (uint64_t)(uintptr_t)g->frees[i]->record);
        /* A free of another graph's allocation: its clone would free it a second time. */
        if (k == 0)
            st = GM_ERR_NOT_SUPPORTED;
        else
            free_record[i] = (uint32_t)(k - 1);
    }
    gm_map_fini(&index);
    return st;
}

static gm_status_t clone_prepare(gm_engine_t *e, const gm_graph_t *g, gm_graph_t *c,
                                 gm_node_map_t find, clone_plan_t *cp) {
    uint32_t n = g->record_count, f = g->free_count;
    cp->alloc_nodes = calloc(n + 1, sizeof *cp->alloc_nodes);
    cp->free_nodes = calloc(f + 1, sizeof *cp->free_nodes);
    cp->free_record = calloc(f + 1, sizeof *cp->free_record);
    cp->copies = calloc(n + 1, sizeof *cp->copies);
    cp->chunks = calloc(n + 1, sizeof *cp->chunks);
    cp->free_markers = calloc(f + 1, sizeof *cp->free_markers);
    if (!cp->alloc_nodes || !cp->free_nodes || !cp->free_record || !cp->copies || !cp->chunks ||
        !cp->free_markers)
        return GM_ERR_OUT_OF_MEMORY;
    cp->records = n;
    cp->frees = f;
    if (gm_grow((void **)&c->records, &c->record_cap, n, sizeof *c->records) ||
        gm_grow((void **)&c->frees, &c->free_cap, f, sizeof *c->frees) ||
        (nodes_settle(e), gm_map_reserve(&e->nodes, n + f)))
        return GM_ERR_OUT_OF_MEMORY;
    gm_status_t st = index_free_records(g, cp->free_record);
    if (st != GM_OK)
        return st;
    for (uint32_t i = 0; i < n; i++) {
        gm_record_t *r = g->records[i];
        if (!(cp->copies[i] = calloc(1, sizeof *cp->copies[i])) ||
            (!r->chunk && !(cp->chunks[i] = calloc(1, sizeof *cp->chunks[i]))))
            return GM_ERR_OUT_OF_MEMORY;
        /* A node the driver cannot find in the clone (one inside a child graph): refused. */
        if (!find.fn(find.arg, r->alloc.node, &cp->alloc_nodes[i]))
            return GM_ERR_NOT_SUPPORTED;
    }
    for (uint32_t i = 0; i < f; i++) {
        if (!(cp->free_markers[i] = calloc(1, sizeof *cp->free_markers[i])))
            return GM_ERR_OUT_OF_MEMORY;
        if (!find.fn(find.arg, g->frees[i]->node, &cp->free_nodes[i]))
            return GM_ERR_NOT_SUPPORTED;
    }
    return GM_OK;
}

gm_status_t gm_engine_graph_clone(gm_engine_t *e, uint64_t original, uint64_t clone,
                                  gm_node_map_t find) {
    gm_engine_lock(e);
    gm_status_t st = GM_OK;
    gm_graph_t *g = gm_graph_get(e, original, false), *c = NULL;
    clone_plan_t cp = {0};
    /* A moved child: its markers are its parent's now, which a clone could not copy. */
    if (gm_map_get(&e->moved, original) || gm_graph_get(e, clone, false)) {
        st = GM_ERR_NOT_SUPPORTED;
        goto out;
    }
    if (!g || (!g->record_count && !g->free_count))
        goto out; /* nothing of graphmem's to copy */
    /* The clone shares the run's chunk: it grows no more. */
    g->run = (gm_run_t){0};
    if (!(c = gm_graph_get(e, clone, true))) {
        st = GM_ERR_OUT_OF_MEMORY;
        goto out;
    }
    if ((st = clone_prepare(e, g, c, find, &cp)) != GM_OK) {
        graph_unlist(e, clone);
        free(c->records);
        free(c->frees);
        free(c);
        goto out;
    }
    /* Execs of both take turns on the windows, as execs of one graph do (engine_launch.c). */
    c->serial = g->serial;
    for (uint32_t i = 0; i < g->record_count; i++) {
        gm_record_t *copy = cp.copies[i];
        gm_record_clone(e, c, g->records[i], cp.alloc_nodes[i], cp.chunks[i], copy);
        cp.copies[i] = NULL;
        cp.chunks[i] = NULL;
        c->records[c->record_count++] = copy;
        index_node(e, cp.alloc_nodes[i], &copy->alloc);
    }
    for (uint32_t i = 0; i < g->free_count; i++) {
        gm_record_t *copy = c->records[cp.free_record[i]];
        gm_marker_t *mc = cp.free_markers[i];
        cp.free_markers[i] = NULL;
        *mc = (gm_marker_t){
            .kind = GM_MARKER_FREE, .record = copy, .graph = c, .node = cp.free_nodes[i]};
        copy->free_marker = mc;
        copy->freed_in_owner = true;
        c->frees[c->free_count++] = mc;
        index_node(e, cp.free_nodes[i], mc);
    }
out:
    clone_plan_free(&cp);
    gm_engine_unlock(e);
    return st;
}

gm_status_t gm_engine_graph_moved(gm_engine_t *e, uint64_t child, uint64_t parent,
                                  gm_driver_call_t call) {
    gm_engine_lock(e);
    gm_status_t st = GM_OK;
    bool created = false;
    gm_graph_t *c = gm_graph_get(e, child, false);
    gm_graph_t *p = c && child != parent ? gm_graph_take(e, parent, &created) : NULL;
    if (!c || child == parent) { /* nothing of graphmem's moves: the driver's call alone */
        st = call.fn && !call.fn(call.arg) ? GM_ERR_DRIVER : GM_OK;
        goto out;
    }
    /* Room first: once the driver moved the child, its markers must become the parent's, or the
     * parent's plan would leave the child's allocations out (unmapped at launch). */
    if (!p || gm_map_reserve(&e->moved, 1) ||
        gm_grow((void **)&p->records, &p->record_cap, p->record_count + c->record_count,
                sizeof *p->records) ||
        gm_grow((void **)&p->frees, &p->free_cap, p->free_count + c->free_count,
                sizeof *p->frees)) {
        st = GM_ERR_OUT_OF_MEMORY;
        goto out;
    }
    if (call.fn && !call.fn(call.arg)) {
        st = GM_ERR_DRIVER;
        goto out;
    }
    graph_unlist(e, child);
    /* Its nodes are still memory nodes to the driver: edges and nodes of the child stay as fixed
     * as those of any graph holding markers (reached through cuGraphChildGraphNodeGetGraph). */
    if (c->record_count || c->free_count)
        gm_map_put(&e->moved, child, (void *)1);
    /* The child's places are numbered on the child's chains, which mean nothing among the
     * parent's: its markers give theirs up, so nothing is proven about them (no marker of the
     * parent is ever found to follow one: the search does not enter a child graph). Their node
     * facts go with the child (the parent's are of its own level). */
    for (uint32_t i = 0; i < c->record_count; i++) {
        c->records[i]->alloc.position = 0;
        gm_clock_release(&c->records[i]->alloc.before);
        c->records[i]->owner = p;
        c->records[i]->alloc.graph = p;
        p->records[p->record_count++] = c->records[i];
    }
    for (uint32_t i = 0; i < c->free_count; i++) {
        c->frees[i]->position = 0;
        gm_clock_release(&c->frees[i]->before);
        c->frees[i]->graph = p;
        p->frees[p->free_count++] = c->frees[i];
    }
    gm_packer_t **tail = &p->packers;
    while (*tail)
        tail = &(*tail)->next;
    *tail = c->packers;
    c->packers = NULL;
    c->record_count = c->free_count = 0;
    /* Parts of destroyed execs of the child map windows that are the parent's now; so do the
     * graphs that share the child's windows (its original, when it is a clone) and their parts:
     * the two families become one. */
    gm_family_merge(e, c->serial, p->serial);
    graph_free(e, c);
out:
    if (st != GM_OK)
        gm_graph_unlist_new(e, p, created);
    gm_engine_unlock(e);
    return st;
}
