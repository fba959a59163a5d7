/* Proofs of order (engine_record.c, gm_clock_t): what a marker's clock claims about earlier
 * allocations and frees, against the truth of the graph.
 * - test_moved_child_clock_spaces: a child graph moved into a parent keeps nothing proven about its
 *   markers (its chain numbers are the child's; read as the parent's they once let z, unordered
 *   with the child node, take the child allocation's bytes).
 * - test_random_differential: random DAGs of plain, alloc and free markers (improper frees and
 *   large allocations among them), optionally with a moved child: every claim the clocks make is
 *   compared with the record-id sets the engine used before clocks (same ancestors found) and with
 *   reachability; at the end every two allocations sharing bytes must be ordered.
 * - test_layers_keep_reuse: many markers whose search finds nothing each start a chain, and reuse
 *   goes on after a thousand of them (a cap on chains once stopped it).
 * - test_joined_chains_stay_bounded: such chains joined into one stream again and again leave a
 *   clock of 64 chains at most, and reuse goes on.
 * - test_foreign_frees_take_no_chain: frees of another graph's allocations take no place.
 * - test_lifted_proves_nothing: under GRAPHMEM_LIFT_RESTRICTIONS no marker gets a place or clock.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "engine_graph.h"
#include "engine_sim.h"

static bool overlap(uint64_t a, uint64_t as, uint64_t b, uint64_t bs) {
    return a < b + bs && b < a + as;
}

/* ---- reachability over a sim graph --------------------------------------------------------- */

static bool reaches(const sim_graph_t *g, uint32_t from, uint32_t to) {
    if (from == to)
        return true;
    bool seen[SIM_MAX_NODES] = {false};
    uint32_t stack[SIM_MAX_NODES], top = 0;
    stack[top++] = from;
    seen[from] = true;
    while (top) {
        uint32_t v = stack[--top];
        for (uint32_t e = 0; e < g->edge_count; e++)
            if (g->edge_from[e] == v && !seen[g->edge_to[e]]) {
                if (g->edge_to[e] == to)
                    return true;
                seen[g->edge_to[e]] = true;
                stack[top++] = g->edge_to[e];
            }
    }
    return false;
}

/* ---- 1 ------------------------------------------------------------------------------------- */

static void append_node(sim_graph_t *dst, const sim_graph_t *src, uint32_t i, const uint32_t *deps,
                        uint32_t n) {
    uint32_t k = dst->node_count++;
    dst->nodes[k] = src->nodes[i];
    dst->kind[k] = src->kind[i];
    dst->va[k] = src->va[i];
    dst->size[k] = src->size[i];
    dst->freed[k] = src->freed[i];
    for (uint32_t d = 0; d < n; d++) {
        dst->edge_from[dst->edge_count] = deps[d];
        dst->edge_to[dst->edge_count++] = k;
    }
}

static void test_moved_child_clock_spaces(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t child, parent;
    sim_graph_init(&s, &child);
    sim_graph_init(&s, &parent);
    const uint64_t sz = 4096; /* packed (small limit 16 KiB) */
    /* The child: a, a kernel using it, free(a): a's free is chain 0, position 2 of the child. */
    uint32_t a = sim_alloc(&s, &child, sz, NULL, 0);
    uint32_t ua = sim_plain(&s, &child, &a, 1);
    uint32_t fa = sim_free(&s, &child, child.va[a], &ua, 1, NULL);
    REQUIRE(a != UINT32_MAX && fa != UINT32_MAX);
    /* cuGraphAddNode(parent, child, CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) into an empty parent. */
    gm_engine_graph_moved(s.engine, child.key, parent.key, GM_NO_CALL);
    /* The parent's topology holds the child's nodes (expanded in place), unordered with what
     * follows: the child node has no dependents. */
    uint32_t pa = 0, pua = 1, pfa = 2;
    append_node(&parent, &child, a, NULL, 0);
    append_node(&parent, &child, ua, &pa, 1);
    append_node(&parent, &child, fa, &pua, 1);
    (void)pfa;
    /* Captured into the parent afterwards: x, then y after x, then z after y. In the parent's
     * chain space x is (0, 1), y is (0, 2); z's clock holds 2 for chain 0, which is also the
     * position of the child's free(a) on the child's chain 0. */
    uint32_t x = sim_alloc(&s, &parent, sz, NULL, 0);
    uint32_t y = sim_alloc(&s, &parent, sz, &x, 1);
    uint32_t z = sim_alloc(&s, &parent, sz, &y, 1);
    REQUIRE(x != UINT32_MAX && y != UINT32_MAX && z != UINT32_MAX);
    /* Nothing orders the child node with x, y or z: none may share a's bytes. */
    CHECK(!reaches(&parent, pfa, x) && !reaches(&parent, pfa, z));
    CHECK(!overlap(parent.va[pa], sz, parent.va[x], sz));
    CHECK(!overlap(parent.va[pa], sz, parent.va[y], sz));
    CHECK(!overlap(parent.va[pa], sz, parent.va[z], sz));
    /* And the data: a run where the child node and z run side by side. */
    REQUIRE(sim_instantiate(&s, &parent, 0xE1, GM_EXEC_AUTO_FREE) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, 0x51) == GM_OK);
    CHECK(sim_run_data(&s, &parent, NULL));
    uint64_t execs[] = {0xE1}, graphs[] = {parent.key, child.key};
    CHECK(sim_teardown(&s, execs, 1, graphs, 2));
}

/* ---- 2 ------------------------------------------------------------------------------------- */

typedef struct model {
    /* Old semantics, per node: sets of record ids (as bitsets over node indices of alloc nodes). */
    uint8_t freed[SIM_MAX_NODES][SIM_MAX_NODES]; /* freed[m][alloc node] */
    uint8_t made[SIM_MAX_NODES][SIM_MAX_NODES];
    bool is_marker[SIM_MAX_NODES];
    uint32_t rec_of[SIM_MAX_NODES];  /* marker node -> its alloc node */
    bool packed[SIM_MAX_NODES];      /* alloc node: packed */
    uint32_t free_of[SIM_MAX_NODES]; /* alloc node -> its free node (UINT32_MAX: none) */
} model_t;

static model_t M;

/* The old gm_proven_before over the ancestors the engine finds now (before the node exists). */
static void model_before(sim_t *s, sim_graph_t *g, const uint32_t *deps, uint32_t n, uint8_t *freed,
                         uint8_t *made) {
    memset(freed, 0, SIM_MAX_NODES);
    memset(made, 0, SIM_MAX_NODES);
    uint64_t keys[SIM_MAX_NODES], found[GM_ANCESTOR_MAX];
    for (uint32_t k = 0; k < n; k++)
        keys[k] = g->nodes[deps[k]];
    size_t count = gm_engine_find_ancestors(s->engine, g->key, keys, n, sim_node_parents, g, found);
    for (size_t i = 0; i < count; i++) {
        uint32_t m = sim_node_index(g, found[i]);
        if (m == UINT32_MAX || !M.is_marker[m])
            continue; /* a moved child's marker: another graph to the old code too */
        for (uint32_t r = 0; r < SIM_MAX_NODES; r++) {
            freed[r] |= M.freed[m][r];
            made[r] |= M.made[m][r];
        }
        uint32_t r = M.rec_of[m];
        if (M.packed[r]) {
            if (g->kind[m] == SIM_FREE)
                freed[r] = 1;
            else
                made[r] = 1;
        }
    }
}

static const gm_marker_t *marker_of(sim_t *s, uint64_t node) {
    return gm_node_marker(s->engine, node);
}

static bool covers(const gm_clock_t *c, const gm_marker_t *m) {
    if (!m || !m->position)
        return false;
    const gm_clock_entry_t *at = gm_clock_entries(c);
    for (uint32_t k = 0; k < c->count; k++)
        if (at[k].chain == m->chain)
            return at[k].position >= m->position;
    return false;
}

static uint32_t claims_more, claims_less, unsound, claims_true, overlaps;

static void check_clock(sim_t *s, const sim_graph_t *g, uint32_t node, const uint8_t *freed,
                        const uint8_t *made) {
    const gm_marker_t *m = marker_of(s, g->nodes[node]);
    if (!m)
        return;
    for (uint32_t r = 0; r < g->node_count; r++) {
        if (g->kind[r] != SIM_ALLOC || !M.is_marker[r] || !M.packed[r] || r == node)
            continue;
        const gm_marker_t *am = marker_of(s, g->nodes[r]);
        bool c_made = covers(&m->before, am);
        const gm_marker_t *fm = M.free_of[r] != UINT32_MAX && M.free_of[r] < node
                                    ? marker_of(s, g->nodes[M.free_of[r]])
                                    : NULL;
        bool c_freed = covers(&m->before, fm);
        claims_true += c_made + c_freed;
        if (c_made && !made[r])
            claims_more++;
        if (c_freed && !freed[r])
            claims_more++;
        if ((!c_made && made[r]) || (!c_freed && freed[r]))
            claims_less++;
        if ((c_made && !reaches(g, r, node)) || (c_freed && !reaches(g, M.free_of[r], node))) {
            if (unsound++ < 5)
                fprintf(stderr, "  unsound claim at node %u about alloc %u\n", node, r);
        }
    }
}

static void one_world(uint64_t seed, bool with_move, uint32_t nodes) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    memset(&M, 0, sizeof M);
    for (uint32_t i = 0; i < SIM_MAX_NODES; i++)
        M.free_of[i] = UINT32_MAX;
    uint64_t rng = seed;
    sim_graph_t g, child;
    sim_graph_init(&s, &g);
    sim_graph_init(&s, &child);
    if (with_move) { /* a child of packed allocations, some freed, moved in first */
        uint32_t prev = UINT32_MAX;
        for (int k = 0; k < 6; k++) {
            uint32_t a = sim_alloc(&s, &child, 256u << (gm_rand(&rng) % 6),
                                   prev == UINT32_MAX ? NULL : &prev, prev == UINT32_MAX ? 0 : 1);
            REQUIRE(a != UINT32_MAX);
            prev = a;
            if (gm_rand(&rng) % 2) {
                uint32_t f = sim_free(&s, &child, child.va[a], &prev, 1, NULL);
                REQUIRE(f != UINT32_MAX);
                prev = f;
            }
        }
        gm_engine_graph_moved(s.engine, child.key, g.key, GM_NO_CALL);
        /* Expanded in place, no edges to the rest. */
        uint32_t base = g.node_count;
        for (uint32_t i = 0; i < child.node_count; i++) {
            uint32_t deps[8], n = 0;
            for (uint32_t e = 0; e < child.edge_count; e++)
                if (child.edge_to[e] == i)
                    deps[n++] = base + child.edge_from[e];
            append_node(&g, &child, i, deps, n);
        }
        /* Model: allocs of the child, with their frees. */
        for (uint32_t i = 0; i < child.node_count; i++) {
            uint32_t v = base + i;
            if (g.kind[v] == SIM_ALLOC) {
                M.packed[v] = true;
                M.rec_of[v] = v;
            } else if (g.kind[v] == SIM_FREE) {
                for (uint32_t a = base; a < v; a++)
                    if (g.kind[a] == SIM_ALLOC && g.va[a] == g.va[v] && M.free_of[a] == UINT32_MAX)
                        M.free_of[a] = v;
            }
        }
    }
    uint32_t first_own = g.node_count;
    uint8_t freed[SIM_MAX_NODES], made[SIM_MAX_NODES];
    while (g.node_count < nodes) {
        uint32_t deps[4], n = 0;
        uint32_t want = (uint32_t)(gm_rand(&rng) % 4);
        /* Dependencies mostly among recent nodes (streams), sometimes far back (joins). */
        for (uint32_t k = 0; k < want && g.node_count > first_own; k++) {
            uint32_t span = g.node_count - first_own;
            uint32_t back = gm_rand(&rng) % 3 ? (uint32_t)(gm_rand(&rng) % (span < 6 ? span : 6))
                                              : (uint32_t)(gm_rand(&rng) % span);
            uint32_t d = g.node_count - 1 - back;
            bool dup = false;
            for (uint32_t j = 0; j < n; j++)
                dup |= deps[j] == d;
            if (!dup)
                deps[n++] = d;
        }
        uint32_t kind = (uint32_t)(gm_rand(&rng) % 10);
        if (kind < 3) {
            sim_plain(&s, &g, deps, n);
        } else if (kind < 7) {
            uint64_t size =
                gm_rand(&rng) % 8 == 0 ? 20000 : (uint64_t)(256u << (gm_rand(&rng) % 6));
            model_before(&s, &g, deps, n, freed, made);
            uint32_t a = sim_alloc(&s, &g, size, deps, n);
            REQUIRE(a != UINT32_MAX);
            M.is_marker[a] = true;
            M.rec_of[a] = a;
            M.packed[a] = marker_of(&s, g.nodes[a])->record->packer != NULL;
            memcpy(M.freed[a], freed, sizeof freed);
            memcpy(M.made[a], made, sizeof made);
            check_clock(&s, &g, a, freed, made);
        } else {
            /* Free a random unfreed allocation of this graph (own ones only). */
            uint32_t cand[SIM_MAX_NODES], c = 0;
            for (uint32_t v = first_own; v < g.node_count; v++)
                if (g.kind[v] == SIM_ALLOC && M.free_of[v] == UINT32_MAX)
                    cand[c++] = v;
            if (!c)
                continue;
            uint32_t r = cand[gm_rand(&rng) % c];
            /* Mostly proper frees (after the alloc); some improper ones. */
            if (gm_rand(&rng) % 5 && n < 4) {
                bool dup = false;
                for (uint32_t j = 0; j < n; j++)
                    dup |= deps[j] == r;
                if (!dup)
                    deps[n++] = r;
            }
            model_before(&s, &g, deps, n, freed, made);
            gm_status_t st;
            uint32_t f = sim_free(&s, &g, g.va[r], deps, n, &st);
            if (f == UINT32_MAX)
                continue;
            M.is_marker[f] = true;
            M.rec_of[f] = r;
            M.free_of[r] = f;
            memcpy(M.freed[f], freed, sizeof freed);
            memcpy(M.made[f], made, sizeof made);
        }
    }
    /* Pairwise: overlapping bytes only between ordered lifetimes. */
    for (uint32_t i = 0; i < g.node_count; i++)
        for (uint32_t j = i + 1; j < g.node_count; j++) {
            if (g.kind[i] != SIM_ALLOC || g.kind[j] != SIM_ALLOC ||
                !overlap(g.va[i], g.size[i], g.va[j], g.size[j]))
                continue;
            overlaps++;
            uint32_t fi = M.free_of[i], fj = M.free_of[j];
            bool ok = (fi != UINT32_MAX && reaches(&g, i, fi) && reaches(&g, fi, j)) ||
                      (fj != UINT32_MAX && reaches(&g, j, fj) && reaches(&g, fj, i));
            if (!ok && unsound++ < 5)
                fprintf(stderr, "  seed %llu: allocs %u and %u share bytes, unordered\n",
                        (unsigned long long)seed, i, j);
        }
    uint64_t graphs[] = {g.key, child.key};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 2));
}

static void test_random_differential(void) {
    claims_more = claims_less = unsound = claims_true = overlaps = 0;
    for (uint64_t seed = 1; seed <= 300; seed++)
        one_world(seed * 0x9e3779b97f4a7c15ull, false, 200);
    printf("  one graph: clock claims beyond the sets %u, fewer %u, unsound %u (claims %u, "
           "overlaps %u)\n",
           claims_more, claims_less, unsound, claims_true, overlaps);
    CHECK_EQ_U64(claims_more, 0);
    CHECK_EQ_U64(unsound, 0);
}

static void test_random_differential_moved(void) {
    claims_more = claims_less = unsound = claims_true = overlaps = 0;
    for (uint64_t seed = 1; seed <= 300; seed++)
        one_world(seed * 0x2545f4914f6cdd1dull, true, 120);
    printf("  moved child: clock claims beyond the sets %u, fewer %u, unsound %u\n", claims_more,
           claims_less, unsound);
    CHECK_EQ_U64(unsound, 0);
}

/* GRAPHMEM_LIFT_RESTRICTIONS: no marker gets a place or a clock, whatever its ancestors. */
static void test_lifted_proves_nothing(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t prev = sim_alloc(&s, &g, 4096, NULL, 0), bad = 0;
    for (int k = 0; k < 50; k++) {
        uint32_t f = sim_free(&s, &g, g.va[prev], &prev, 1, NULL);
        uint32_t a = sim_alloc(&s, &g, 4096, &f, 1);
        REQUIRE(f != UINT32_MAX && a != UINT32_MAX);
        const gm_marker_t *mf = marker_of(&s, g.nodes[f]), *ma = marker_of(&s, g.nodes[a]);
        bad += mf->position || mf->before.count || ma->position || ma->before.count;
        bad += g.va[a] == g.va[prev];
        prev = a;
    }
    CHECK_EQ_U64(bad, 0);
    uint64_t graphs[] = {g.key};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 1));
}

/* ---- chains without a found ancestor, and frees of other graphs ---------------------------- */

static uint64_t next_key = 0x100000;

static bool add_key(void *arg, uint64_t *node_out) {
    (void)arg;
    *node_out = next_key++;
    return true;
}

static uint64_t alloc_marker(gm_engine_t *e, uint64_t graph, const uint64_t *anc, size_t n,
                             uint64_t *node) {
    gm_alloc_params_t p = {.device = 0, .size = 4096};
    gm_ancestors_t a = {.markers = anc, .count = n};
    uint64_t va = 0;
    if (gm_engine_alloc_marker(e, graph, &p, &a, (gm_node_call_t){.fn = add_key, .arg = NULL}, &va,
                               node) != GM_OK)
        return 0;
    return va;
}

static uint64_t free_marker(gm_engine_t *e, uint64_t graph, uint64_t va, const uint64_t *anc,
                            size_t n) {
    uint64_t node = 0;
    gm_ancestors_t a = {.markers = anc, .count = n};
    if (gm_engine_free_marker(e, graph, va, &a, (gm_node_call_t){.fn = add_key, .arg = NULL},
                              &node) != GM_OK)
        return 0;
    return node;
}

/* Layers after long runs of kernels (each first marker's search finds nothing): a, free(a) after
 * it, b after the free; b takes a's bytes in every layer. */
static void test_layers_keep_reuse(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    const uint64_t graph = 0x77;
    uint32_t reused = 0;
    for (uint32_t layer = 0; layer < 1100; layer++) {
        uint64_t na, nb;
        uint64_t va = alloc_marker(s.engine, graph, NULL, 0, &na);
        uint64_t nf = va ? free_marker(s.engine, graph, va, &na, 1) : 0;
        REQUIRE(nf);
        uint64_t vb = alloc_marker(s.engine, graph, &nf, 1, &nb);
        REQUIRE(vb);
        reused += vb == va;
        REQUIRE(free_marker(s.engine, graph, vb, &nb, 1));
    }
    CHECK_EQ_U64(reused, 1100);
    uint64_t graphs[] = {graph};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 1));
}

/* Each layer: a side allocation whose search finds nothing (a new chain) and its free, then a
 * main allocation after that free and the last main free, and its free. However many layers, a
 * clock lists at most 64 chains (it listed every side chain joined so far, quadratic in the
 * capture), and every main allocation still takes bytes freed before it (the side allocations,
 * proven after nothing, take new ones). */
static void test_joined_chains_stay_bounded(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    const uint64_t graph = 0x78;
    enum { LAYERS = 3000 };
    static uint64_t earlier[2 * LAYERS];
    uint64_t main_free = 0;
    uint32_t widest = 0, reused = 0, count = 0;
    for (uint32_t layer = 0; layer < LAYERS; layer++) {
        uint64_t ns, nm;
        uint64_t vs = alloc_marker(s.engine, graph, NULL, 0, &ns);
        uint64_t fs = vs ? free_marker(s.engine, graph, vs, &ns, 1) : 0;
        REQUIRE(fs);
        earlier[count++] = vs;
        uint64_t joins[2] = {fs, main_free};
        uint64_t vm = alloc_marker(s.engine, graph, joins, layer ? 2 : 1, &nm);
        REQUIRE(vm);
        const gm_marker_t *m = gm_node_marker(s.engine, nm);
        widest = m->before.count > widest ? m->before.count : widest;
        bool again = false;
        for (uint32_t k = count; k > 0 && !again; k--)
            again = earlier[k - 1] == vm;
        reused += again;
        earlier[count++] = vm;
        REQUIRE((main_free = free_marker(s.engine, graph, vm, &nm, 1)) != 0);
    }
    CHECK(widest <= 64);
    CHECK_EQ_U64(reused, LAYERS);
    uint64_t graphs[] = {graph};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 1));
}

/* Graph B frees `foreign` packed allocations of graph A, then on one stream makes x, frees it and
 * makes y: y takes x's bytes, and B's chains are only its own markers'. */
static void foreign_run(uint32_t foreign) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    const uint64_t A = 0x71, B = 0x72;
    static uint64_t va[2000];
    uint64_t node = 0;
    for (uint32_t i = 0; i < foreign; i++)
        REQUIRE((va[i] = alloc_marker(s.engine, A, NULL, 0, &node)) != 0);
    for (uint32_t i = 0; i < foreign; i++)
        REQUIRE(free_marker(s.engine, B, va[i], NULL, 0));
    uint64_t nx, ny;
    uint64_t vx = alloc_marker(s.engine, B, NULL, 0, &nx);
    uint64_t nf = vx ? free_marker(s.engine, B, vx, &nx, 1) : 0;
    REQUIRE(nf);
    uint64_t vy = alloc_marker(s.engine, B, &nf, 1, &ny);
    CHECK_EQ_U64(vy, vx);
    CHECK_EQ_U64(((gm_graph_t *)gm_map_get(&s.engine->graphs, B))->chain_count, 1);
    uint64_t graphs[] = {A, B};
    CHECK(sim_teardown(&s, NULL, 0, graphs, 2));
}

static void test_foreign_frees_take_no_chain(void) {
    foreign_run(10);
    foreign_run(1100);
}

int main(void) {
    RUN_TEST(test_lifted_proves_nothing);
    RUN_TEST(test_moved_child_clock_spaces);
    RUN_TEST(test_random_differential);
    RUN_TEST(test_random_differential_moved);
    RUN_TEST(test_layers_keep_reuse);
    RUN_TEST(test_joined_chains_stay_bounded);
    RUN_TEST(test_foreign_frees_take_no_chain);
    return gm_check_summary();
}
