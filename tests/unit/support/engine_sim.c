#include "engine_sim.h"

#include "check.h"
#include "engine_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_PAGE (64u << 10)

gm_engine_config_t sim_default_config(void) {
    return (gm_engine_config_t){
        .device_count = 2,
        .small_limit = 16u << 10,
        .max_handle = 4 * SIM_PAGE,
        .max_reserved = 0,
        .release_threshold = UINT64_MAX,
        .cross_stream = GM_CROSS_STREAM_SERIALIZE,
        .defer_fences = true, /* as the library's default (GRAPHMEM_EAGER_FENCES=0) */
    };
}

uint64_t sim_page(void) {
    return SIM_PAGE;
}

bool sim_init(sim_t *s, const gm_engine_config_t *config) {
    memset(s, 0, sizeof *s);
    s->config = config ? *config : sim_default_config();
    s->hb = host_backend_create(SIM_PAGE, s->config.device_count);
    if (!s->hb)
        return false;
    s->engine = gm_engine_create(host_backend_ops(s->hb), &s->config);
    s->next_key = 0x1000;
    return s->engine != NULL;
}

bool sim_fini(sim_t *s) {
    gm_engine_destroy(s->engine);
    bool clean = host_backend_check_clean(s->hb);
    host_backend_destroy(s->hb);
    return clean;
}

bool sim_init_lifted(sim_t *s) {
    gm_engine_config_t c = sim_default_config();
    c.lift_restrictions = true;
    return sim_init(s, &c);
}

bool sim_teardown(sim_t *s, const uint64_t *execs, size_t exec_count, const uint64_t *graphs,
                  size_t graph_count) {
    host_backend_complete_all(s->hb);
    for (size_t i = 0; i < exec_count; i++)
        gm_engine_exec_destroy(s->engine, execs[i], GM_NO_CALL);
    for (size_t i = 0; i < graph_count; i++)
        sim_graph_destroy(s->engine, graphs[i]);
    return sim_fini(s);
}

void sim_graph_init(sim_t *s, sim_graph_t *g) {
    memset(g, 0, sizeof *g);
    g->key = s->next_key++;
}

static uint32_t add_node(sim_t *s, sim_graph_t *g, sim_kind_t kind, const uint32_t *deps,
                         uint32_t n) {
    uint32_t i = g->node_count++;
    g->nodes[i] = s->next_key++;
    g->kind[i] = kind;
    for (uint32_t k = 0; k < n; k++) {
        g->edge_from[g->edge_count] = deps[k];
        g->edge_to[g->edge_count++] = i;
    }
    return i;
}

uint32_t sim_node_index(const sim_graph_t *g, uint64_t node) {
    for (uint32_t i = 0; i < g->node_count; i++)
        if (g->nodes[i] == node)
            return i;
    return UINT32_MAX;
}

size_t sim_node_parents(void *arg, uint64_t node, uint64_t *parents, size_t cap) {
    const sim_graph_t *g = arg;
    uint32_t v = sim_node_index(g, node);
    size_t n = 0;
    for (uint32_t e = 0; e < g->edge_count && n < cap; e++)
        if (g->edge_to[e] == v)
            parents[n++] = g->nodes[g->edge_from[e]];
    return n;
}

/* The search for a new marker's ancestors, as the shim hands it to the engine (gm_search_t): from
 * the node's dependencies, run inside the marker's critical section. */
static gm_ancestors_t search_from(sim_graph_t *g, const uint32_t *deps, uint32_t n,
                                  uint64_t keys[SIM_MAX_NODES]) {
    for (uint32_t k = 0; k < n; k++)
        keys[k] = g->nodes[deps[k]];
    return (gm_ancestors_t){NULL, 0, {keys, n, sim_node_parents, g}};
}

uint32_t sim_plain(sim_t *s, sim_graph_t *g, const uint32_t *deps, uint32_t n) {
    return add_node(s, g, SIM_PLAIN, deps, n);
}

/* The driver's node add, called by the engine inside its critical section (gm_node_call_t). */
typedef struct sim_node_add {
    sim_t *s;
    sim_graph_t *g;
    sim_kind_t kind;
    const uint32_t *deps;
    uint32_t n, index;
} sim_node_add_t;

static bool sim_add_node(void *arg, uint64_t *node_out) {
    sim_node_add_t *a = arg;
    if (a->s->fail_node_adds) {
        a->s->fail_node_adds--;
        return false;
    }
    a->index = add_node(a->s, a->g, a->kind, a->deps, a->n);
    *node_out = a->g->nodes[a->index];
    return true;
}

uint32_t sim_alloc_on(sim_t *s, sim_graph_t *g, const gm_alloc_params_t *params,
                      const uint32_t *deps, uint32_t n) {
    uint64_t keys[SIM_MAX_NODES];
    gm_ancestors_t anc = search_from(g, deps, n, keys);
    uint64_t va = 0, node = 0;
    sim_node_add_t add = {s, g, SIM_ALLOC, deps, n, UINT32_MAX};
    if (gm_engine_alloc_marker(s->engine, g->key, params, &anc,
                               (gm_node_call_t){.fn = sim_add_node, .arg = &add}, &va,
                               &node) != GM_OK)
        return UINT32_MAX;
    g->va[add.index] = va;
    g->size[add.index] = params->size;
    return add.index;
}

uint32_t sim_alloc(sim_t *s, sim_graph_t *g, uint64_t size, const uint32_t *deps, uint32_t n) {
    gm_alloc_params_t p = {.device = 0, .size = size};
    return sim_alloc_on(s, g, &p, deps, n);
}

uint32_t sim_free(sim_t *s, sim_graph_t *g, uint64_t va, const uint32_t *deps, uint32_t n,
                  gm_status_t *st) {
    uint64_t keys[SIM_MAX_NODES], node = 0;
    gm_ancestors_t anc = search_from(g, deps, n, keys);
    sim_node_add_t add = {s, g, SIM_FREE, deps, n, UINT32_MAX};
    gm_status_t r = gm_engine_free_marker(s->engine, g->key, va, &anc,
                                          (gm_node_call_t){.fn = sim_add_node, .arg = &add}, &node);
    if (st)
        *st = r;
    if (r != GM_OK)
        return UINT32_MAX;
    uint32_t i = add.index;
    g->va[i] = va;
    for (uint32_t a = 0; a < i; a++)
        if (g->kind[a] == SIM_ALLOC && g->va[a] == va && !g->freed[a])
            g->freed[a] = true;
    return i;
}

gm_topology_t sim_topology(const sim_graph_t *g) {
    return (gm_topology_t){g->node_count, g->nodes, g->edge_count, g->edge_from, g->edge_to};
}

gm_status_t sim_instantiate(sim_t *s, const sim_graph_t *g, uint64_t exec, unsigned flags) {
    gm_topology_t t = sim_topology(g);
    return gm_engine_instantiate(s->engine, g->key, &t, exec, flags);
}

typedef struct sim_submit {
    sim_t *s;
    uint64_t stream;
} sim_submit_t;

/* The driver's launch: one item on the stream (or a driver failure, when the test asked). */
static bool submit(void *arg) {
    sim_submit_t *c = arg;
    if (c->s->fail_submits) {
        c->s->fail_submits--;
        return false;
    }
    host_backend_submit(c->s->hb, c->stream);
    return true;
}

static gm_status_t run(sim_t *s, uint64_t exec, uint64_t stream, bool upload) {
    sim_submit_t c = {s, stream};
    return gm_engine_launch(s->engine, exec, stream, upload, (gm_driver_call_t){submit, &c});
}

gm_status_t sim_launch(sim_t *s, uint64_t exec, uint64_t stream) {
    return run(s, exec, stream, false);
}

gm_status_t sim_upload(sim_t *s, uint64_t exec, uint64_t stream) {
    return run(s, exec, stream, true);
}

/* Byte i of an allocation holds byte (i % 8) of its pattern: word accesses where aligned.
 * Accesses are volatile: two allocations at different addresses may be the same physical bytes,
 * which the compiler cannot know, so it must not reorder a check above an earlier fill. */
static void fill(uint64_t va, uint64_t size, uint64_t pattern) {
    volatile unsigned char *p = (volatile unsigned char *)(uintptr_t)va;
    uint64_t i = 0;
    for (; va % 8 == 0 && i + 8 <= size; i += 8)
        *(volatile uint64_t *)(uintptr_t)(va + i) = pattern;
    for (; i < size; i++)
        p[i] = (unsigned char)(pattern >> (8 * (i % 8)));
}

static bool intact(uint64_t va, uint64_t size, uint64_t pattern) {
    const volatile unsigned char *p = (const volatile unsigned char *)(uintptr_t)va;
    uint64_t i = 0;
    for (; va % 8 == 0 && i + 8 <= size; i += 8)
        if (*(const volatile uint64_t *)(uintptr_t)(va + i) != pattern)
            break;
    for (; i < size; i++) {
        if (p[i] != (unsigned char)(pattern >> (8 * (i % 8)))) {
            fprintf(stderr, "sim: allocation at %#llx (%llu bytes) clobbered at byte %llu\n",
                    (unsigned long long)va, (unsigned long long)size, (unsigned long long)i);
            return false;
        }
    }
    return true;
}

static void live_drop(sim_t *s, uint64_t va) {
    for (uint32_t i = 0; i < s->live_count; i++) {
        if (s->live_va[i] == va) {
            s->live_count--;
            s->live_va[i] = s->live_va[s->live_count];
            s->live_size[i] = s->live_size[s->live_count];
            s->live_pattern[i] = s->live_pattern[s->live_count];
            return;
        }
    }
}

bool sim_run_data(sim_t *s, const sim_graph_t *g, uint64_t *rng) {
    uint32_t indeg[SIM_MAX_NODES] = {0};
    uint64_t pattern[SIM_MAX_NODES] = {0};
    bool done[SIM_MAX_NODES] = {false}, ok = true;
    for (uint32_t e = 0; e < g->edge_count; e++)
        indeg[g->edge_to[e]]++;
    /* What the previous run left live is freed by this one (AutoFreeOnLaunch) or was freed
     * before it: intact up to now, gone from here on. */
    for (uint32_t a = 0; a < g->node_count; a++)
        if (g->kind[a] == SIM_ALLOC)
            ok = sim_forget_live(s, g->va[a]) && ok;
    for (uint32_t step = 0; step < g->node_count; step++) {
        /* Pick a ready node: alloc before plain before free (or random). */
        uint32_t pick = UINT32_MAX, ready = 0;
        for (uint32_t v = 0; v < g->node_count; v++) {
            if (done[v] || indeg[v])
                continue;
            ready++;
            if (rng) {
                if (gm_rand(rng) % ready == 0)
                    pick = v;
            } else if (pick == UINT32_MAX || g->kind[v] < g->kind[pick] ||
                       (g->kind[v] == SIM_ALLOC && g->kind[pick] != SIM_ALLOC)) {
                pick = v;
            }
        }
        if (pick == UINT32_MAX)
            return false; /* a cycle: not a DAG */
        done[pick] = true;
        for (uint32_t e = 0; e < g->edge_count; e++)
            if (g->edge_from[e] == pick)
                indeg[g->edge_to[e]]--;
        if (g->kind[pick] == SIM_ALLOC) {
            pattern[pick] = 0x9e3779b97f4a7c15ull * ++s->pattern_seq;
            fill(g->va[pick], g->size[pick], pattern[pick]);
        } else if (g->kind[pick] == SIM_FREE) {
            /* The allocation at that address that is live now (earlier ones sharing the address
             * were freed already and hold pattern 0). */
            bool own = false;
            for (uint32_t a = 0; a < g->node_count; a++) {
                if (g->kind[a] == SIM_ALLOC && g->va[a] == g->va[pick] && pattern[a]) {
                    ok = intact(g->va[a], g->size[a], pattern[a]) && ok;
                    pattern[a] = 0;
                    own = true;
                }
            }
            if (!own) /* an allocation of another graph */
                ok = sim_forget_live(s, g->va[pick]) && ok;
        }
    }
    for (uint32_t a = 0; a < g->node_count; a++) {
        if (g->kind[a] != SIM_ALLOC || !pattern[a])
            continue;
        s->live_va[s->live_count] = g->va[a];
        s->live_size[s->live_count] = g->size[a];
        s->live_pattern[s->live_count++] = pattern[a];
    }
    for (uint32_t i = 0; i < s->live_count; i++)
        ok = intact(s->live_va[i], s->live_size[i], s->live_pattern[i]) && ok;
    return ok;
}

bool sim_forget_live(sim_t *s, uint64_t va) {
    for (uint32_t i = 0; i < s->live_count; i++) {
        if (s->live_va[i] == va) {
            bool ok = intact(s->live_va[i], s->live_size[i], s->live_pattern[i]);
            live_drop(s, va);
            return ok;
        }
    }
    return true;
}

bool sim_free_outside(sim_t *s, uint64_t va, uint64_t stream) {
    bool intact = sim_forget_live(s, va);
    return gm_engine_free_outside(s->engine, va, stream) == GM_OK && intact;
}

uint64_t sim_attr(sim_t *s, int attr) {
    uint64_t v = UINT64_MAX;
    gm_engine_attr_get(s->engine, 0, attr, &v);
    return v;
}

static void copy_report(const gm_exec_report_t *report, void *arg) {
    *(gm_exec_report_t *)arg = *report;
}

gm_exec_report_t sim_report(sim_t *s) {
    gm_exec_report_t report = {0};
    gm_engine_report(s->engine, copy_report, &report);
    return report;
}

static void copy_report_of(const gm_exec_report_t *report, void *arg) {
    gm_exec_report_t *want = arg;
    if (report->exec == want->exec)
        *want = *report;
}

gm_exec_report_t sim_report_of(sim_t *s, uint64_t exec) {
    gm_exec_report_t report = {.exec = exec};
    gm_engine_report(s->engine, copy_report_of, &report);
    return report;
}

void sim_one_alloc_graph(sim_t *s, sim_graph_t *g, uint64_t size, bool escape) {
    sim_graph_init(s, g);
    uint32_t a = sim_alloc(s, g, size, NULL, 0);
    uint32_t k = sim_plain(s, g, &a, 1);
    if (!escape)
        sim_free(s, g, g->va[a], &k, 1, NULL);
}

void sim_clone_view(sim_t *s, const sim_graph_t *g, sim_graph_t *c) {
    sim_graph_init(s, c); /* a key of its own */
    uint64_t key = c->key;
    *c = *g;
    c->key = key;
    for (uint32_t i = 0; i < c->node_count; i++)
        c->nodes[i] += SIM_CLONE_OFFSET;
}

static bool find_in_clone(void *found, uint64_t node, uint64_t *clone_out) {
    *clone_out = node + SIM_CLONE_OFFSET;
    return found != NULL;
}

gm_node_map_t sim_clone_map(bool found) {
    static int yes;
    return (gm_node_map_t){find_in_clone, found ? &yes : NULL};
}

void sim_graph_destroy(gm_engine_t *engine, uint64_t graph) {
    gm_engine_graphs_destroy(engine, &graph, 1, GM_NO_CALL);
}

bool sim_engine_lock_free(gm_engine_t *e) {
    if (!gm_trylock(&e->lock))
        return false;
    gm_unlock(&e->lock);
    return true;
}

bool sim_defer_lock_free(gm_engine_t *e) {
    if (!gm_trylock(&e->defer_lock))
        return false;
    bool blocked = atomic_load(&e->fast_blocked);
    gm_unlock(&e->defer_lock);
    return !blocked;
}

bool sim_init_two_execs(sim_t *s, sim_graph_t *a, sim_graph_t *b) {
    if (!sim_init(s, NULL))
        return false;
    sim_one_alloc_graph(s, a, 1ull << 20, false);
    sim_one_alloc_graph(s, b, 1ull << 20, false);
    return sim_instantiate(s, a, 0xA, 0) == GM_OK && sim_instantiate(s, b, 0xB, 0) == GM_OK;
}
