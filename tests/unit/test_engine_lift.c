/* GRAPHMEM_LIFT_RESTRICTIONS: markers destroyed one by one (gm_engine_marker_destroy) and small
 * allocations that never reuse bytes inside a graph, since an edge or node proving an order may
 * be removed later. */
#include "check.h"
#include "engine_sim.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define S1 0x51

static bool call_ok(void *arg) {
    (*(int *)arg)++;
    return true;
}

static bool call_fails(void *arg) {
    (*(int *)arg)++;
    return false;
}

/* Exec `first` of graph `fg` leaves its allocation at `va` live: exec `second` (of `sg`, the same
 * graph or a clone) is refused until it is freed outside, then runs and leaves it live itself. */
static void live_address_turns(sim_t *s, sim_graph_t *fg, uint64_t first, sim_graph_t *sg,
                               uint64_t second, uint64_t va) {
    CHECK_EQ_INT(sim_launch(s, first, S1), GM_OK);
    CHECK(sim_run_data(s, fg, NULL));
    CHECK_EQ_INT(sim_launch(s, second, S1), GM_ERR_INVALID_VALUE);
    CHECK(sim_forget_live(s, va));
    CHECK_EQ_INT(gm_engine_free_outside(s->engine, va, S1), GM_OK);
    CHECK_EQ_INT(sim_launch(s, second, S1), GM_OK);
    CHECK(sim_run_data(s, sg, NULL));
}

/* A destroyed free node: the allocation escapes from the next instantiation on (a relaunch is
 * refused until it is freed outside); the driver's refusal changes nothing; a node that is no
 * marker is left to the caller. */
static void test_free_marker_destroyed(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, 1 * MiB, NULL, 0);
    uint32_t k = sim_plain(&s, &g, &a, 1);
    uint32_t f = sim_free(&s, &g, g.va[a], &k, 1, NULL);
    REQUIRE(f != UINT32_MAX);
    int calls = 0;
    CHECK_EQ_INT(
        gm_engine_marker_destroy(s.engine, g.nodes[k], (gm_driver_call_t){call_ok, &calls}),
        GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(calls, 0);
    CHECK_EQ_INT(
        gm_engine_marker_destroy(s.engine, g.nodes[f], (gm_driver_call_t){call_fails, &calls}),
        GM_ERR_DRIVER);
    CHECK_EQ_INT(gm_engine_marker(s.engine, g.nodes[f], NULL), GM_MARKER_FREE);
    CHECK_EQ_INT(
        gm_engine_marker_destroy(s.engine, g.nodes[f], (gm_driver_call_t){call_ok, &calls}), GM_OK);
    CHECK_EQ_INT(calls, 2);
    CHECK_EQ_INT(gm_engine_marker(s.engine, g.nodes[f], NULL), GM_MARKER_NONE);
    CHECK(!(gm_engine_marker(s.engine, g.nodes[f], NULL) != GM_MARKER_NONE));
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_ERR_INVALID_VALUE); /* unfreed (§A6.1) */
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[a], S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[a], S1), GM_OK);
    /* A new free node for it may be added again. */
    gm_status_t st;
    sim_free(&s, &g, g.va[a], &k, 1, &st);
    CHECK_EQ_INT(st, GM_OK);
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, (uint64_t[]){g.key}, 1));
}

/* A destroyed alloc node: its allocation leaves the graph with its free; the other one stays and
 * is the only memory planned. An exec made before keeps its plan. */
static void test_alloc_marker_destroyed(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, 4 * MiB, NULL, 0);
    uint32_t b = sim_alloc(&s, &g, 1 * MiB, &a, 1);
    uint32_t k = sim_plain(&s, &g, &b, 1);
    uint32_t fa = sim_free(&s, &g, g.va[a], &k, 1, NULL);
    uint32_t fb = sim_free(&s, &g, g.va[b], &fa, 1, NULL);
    REQUIRE(fb != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    CHECK_EQ_INT(gm_engine_marker_destroy(s.engine, g.nodes[a], GM_NO_CALL), GM_OK);
    CHECK_EQ_INT(gm_engine_marker(s.engine, g.nodes[fa], NULL), GM_MARKER_NONE);
    CHECK(!gm_engine_owns(s.engine, g.va[a]) || gm_engine_graph_instantiated(s.engine, g.key));
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK); /* the old exec: both allocations */
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 5 * MiB);
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK(!gm_engine_owns(s.engine, g.va[a])); /* its address went with the last exec */
    REQUIRE(sim_instantiate(&s, &g, 0xE2, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 1 * MiB);
    CHECK(sim_teardown(&s, (uint64_t[]){0xE2}, 1, (uint64_t[]){g.key}, 1));
}

/* A small allocation made after another was freed reuses its bytes, on the proof of the path
 * between them; under the option it does not (the path could be removed). */
static void test_small_no_reuse(void) {
    for (int lift = 0; lift < 2; lift++) {
        sim_t s;
        gm_engine_config_t c = sim_default_config();
        c.lift_restrictions = lift;
        REQUIRE(sim_init(&s, &c));
        sim_graph_t g;
        sim_graph_init(&s, &g);
        uint32_t a = sim_alloc(&s, &g, 4 * KiB, NULL, 0);
        uint32_t f = sim_free(&s, &g, g.va[a], &a, 1, NULL);
        uint32_t b = sim_alloc(&s, &g, 4 * KiB, &f, 1);
        REQUIRE(b != UINT32_MAX);
        CHECK_EQ_INT(g.va[a] == g.va[b], !lift);
        sim_graph_destroy(s.engine, g.key);
        CHECK(sim_fini(&s));
    }
}

/* Allocations of a page or more are packed below a larger small limit only when reuse inside a
 * chunk can be proven: under the option a chain of two of them gets windows of its own, whose
 * pages the plan shares (packed, the second would take new bytes of the chunk: two pages held). */
static void test_large_packed_only_when_proven(void) {
    for (int lift = 0; lift < 2; lift++) {
        sim_t s;
        gm_engine_config_t c = sim_default_config();
        c.lift_restrictions = lift;
        c.small_limit = 4 * sim_page();
        REQUIRE(sim_init(&s, &c));
        sim_graph_t g;
        sim_graph_init(&s, &g);
        uint32_t a = sim_alloc(&s, &g, sim_page(), NULL, 0);
        uint32_t f = sim_free(&s, &g, g.va[a], &a, 1, NULL);
        uint32_t b = sim_alloc(&s, &g, sim_page(), &f, 1);
        REQUIRE(b != UINT32_MAX);
        uint32_t k = sim_plain(&s, &g, &b, 1);
        REQUIRE(sim_free(&s, &g, g.va[b], &k, 1, NULL) != UINT32_MAX);
        CHECK_EQ_INT(g.va[a] == g.va[b], !lift); /* packed: b reuses a's bytes */
        REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
        CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
        CHECK(sim_run_data(&s, &g, NULL));
        CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_HIGH), sim_page());
        uint64_t exec = 0xE1, graph = g.key;
        CHECK(sim_teardown(&s, &exec, 1, &graph, 1));
    }
}

/* A graph instantiated twice: both execs use its addresses and take turns. A launch of one takes
 * the windows from the other once the other's run is over (waiting on the host for it), with the
 * data right; an allocation one exec left live blocks the other's launch until it is freed, as it
 * blocks a relaunch of its own exec; destroying one keeps the other working. */
static void test_instantiated_twice(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 3 * MiB, false);
    const uint32_t a = 0;
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &g, 0xE2, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    uint64_t first = host_backend_handle_at(s.hb, g.va[a], NULL);
    CHECK(first != 0);
    CHECK(sim_run_data(&s, &g, NULL));
    /* E1 still runs on S1: E2 on another stream takes the window only after it. */
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1 + 1), GM_OK);
    CHECK(host_backend_handle_at(s.hb, g.va[a], NULL) != 0);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));

    /* An allocation left live by one exec belongs to its address until freed. */
    sim_graph_t h;
    sim_one_alloc_graph(&s, &h, 2 * MiB, true);
    const uint32_t x = 0;
    REQUIRE(sim_instantiate(&s, &h, 0xF1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &h, 0xF2, 0) == GM_OK); /* AutoFree: test_autofree_takes_twin */
    live_address_turns(&s, &h, 0xF1, &h, 0xF2, h.va[x]);
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_ERR_INVALID_VALUE);
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xF2, GM_NO_CALL); /* x stays live */
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_ERR_INVALID_VALUE);
    CHECK(sim_free_outside(&s, h.va[x], S1));
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_OK);
    CHECK(sim_free_outside(&s, h.va[x], S1));

    /* One destroyed, the other goes on. */
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE2, 0xF1}, 2, (uint64_t[]){g.key, h.key}, 2));
}

/* A graph of one allocation of `size` (node 0) used by node 1, freed in the graph unless `escape`,
 * and its clone (GRAPHMEM_LIFT_RESTRICTIONS). */
static void cloned_pair(sim_t *s, sim_graph_t *g, sim_graph_t *c, uint64_t size, bool escape) {
    sim_one_alloc_graph(s, g, size, escape);
    sim_clone_view(s, g, c);
    REQUIRE(gm_engine_graph_clone(s->engine, g->key, c->key, sim_clone_map(true)) == GM_OK);
}

/* A clone's markers stand for copies of the original's allocations at the same addresses: execs
 * of the two take turns on the windows, an allocation one left live blocks the other until
 * freed, the clone outlives its original. A clone that would free another graph's allocation
 * again, or whose nodes the driver cannot find, is refused and changes nothing. */
static void test_clone(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g, c;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, 3 * MiB, NULL, 0);
    uint32_t b = sim_alloc(&s, &g, 8 * KiB, &a, 1);
    uint32_t k = sim_plain(&s, &g, (uint32_t[]){a, b}, 2);
    uint32_t fb = sim_free(&s, &g, g.va[b], &k, 1, NULL);
    REQUIRE(sim_free(&s, &g, g.va[a], &fb, 1, NULL) != UINT32_MAX);
    sim_clone_view(&s, &g, &c);
    CHECK_EQ_INT(gm_engine_graph_clone(s.engine, g.key, c.key, sim_clone_map(false)),
                 GM_ERR_NOT_SUPPORTED);
    CHECK(!gm_engine_graph_has_markers(s.engine, c.key));
    REQUIRE(gm_engine_graph_clone(s.engine, g.key, c.key, sim_clone_map(true)) == GM_OK);
    gm_marker_info_t info;
    CHECK_EQ_INT(gm_engine_marker(s.engine, c.nodes[a], &info), GM_MARKER_ALLOC);
    CHECK_EQ_U64(info.va, g.va[a]);
    CHECK_EQ_INT(gm_engine_marker(s.engine, c.nodes[fb], &info), GM_MARKER_FREE);
    CHECK_EQ_U64(info.va, g.va[b]);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &c, 0xC1, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0xC1, S1 + 1), GM_OK);
    CHECK(sim_run_data(&s, &c, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));

    /* Escaping: an allocation left live by the original's exec is the clone's address too. */
    sim_graph_t h, hc;
    cloned_pair(&s, &h, &hc, 2 * MiB, true);
    const uint32_t x = 0;
    REQUIRE(sim_instantiate(&s, &h, 0xF1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &hc, 0xF2, 0) == GM_OK);
    live_address_turns(&s, &h, 0xF1, &hc, 0xF2, h.va[x]);
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_ERR_INVALID_VALUE);
    CHECK(sim_free_outside(&s, h.va[x], S1)); /* through the clone's */

    /* A graph freeing h's allocation: its clone would free it again. */
    sim_graph_t f, fc;
    sim_graph_init(&s, &f);
    gm_status_t st;
    REQUIRE(sim_free(&s, &f, h.va[x], NULL, 0, &st) != UINT32_MAX);
    sim_clone_view(&s, &f, &fc);
    CHECK_EQ_INT(gm_engine_graph_clone(s.engine, f.key, fc.key, sim_clone_map(true)),
                 GM_ERR_NOT_SUPPORTED);
    CHECK(!gm_engine_graph_has_markers(s.engine, fc.key));

    /* The original graph and its exec gone, the clone's exec goes on. */
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    sim_graph_destroy(s.engine, g.key);
    CHECK_EQ_INT(sim_launch(&s, 0xC1, S1), GM_OK);
    CHECK(sim_run_data(&s, &c, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_teardown(&s, (uint64_t[]){0xC1, 0xF1, 0xF2}, 3,
                       (uint64_t[]){c.key, h.key, hc.key, f.key}, 4));
}

/* A child by copy is a clone moved into the parent: the parent's execs then share the original's
 * windows, so execs of the original and of the parent take turns on them too. */
static void test_child_by_clone(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g, c, parent;
    cloned_pair(&s, &g, &c, 3 * MiB, false);
    sim_graph_init(&s, &parent);
    uint64_t parent_key = parent.key;
    gm_engine_graph_moved(s.engine, c.key, parent_key, GM_NO_CALL);
    parent = c; /* the parent's topology: the child's nodes, expanded */
    parent.key = parent_key;
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &parent, 0xD1, 0) == GM_OK);
    for (int round = 0; round < 3; round++) {
        CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
        CHECK(sim_run_data(&s, &g, NULL));
        CHECK_EQ_INT(sim_launch(&s, 0xD1, S1 + 1), GM_OK);
        CHECK(sim_run_data(&s, &parent, NULL));
    }
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1, 0xD1}, 2, (uint64_t[]){g.key, parent_key, c.key}, 3));
}

static uint64_t misuses(sim_t *s) {
    return host_backend_counts(s->hb).misuses;
}

/* A moved child's markers are its parent's: a clone of it is refused, not an empty copy. */
static void test_clone_moved_child(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t c, p, cc;
    sim_graph_init(&s, &c);
    sim_graph_init(&s, &p);
    uint32_t a = sim_alloc(&s, &c, 3 * MiB, NULL, 0);
    REQUIRE(sim_plain(&s, &c, &a, 1) != UINT32_MAX);
    gm_engine_graph_moved(s.engine, c.key, p.key, GM_NO_CALL);
    CHECK(gm_engine_graph_has_markers(s.engine, c.key)); /* the shim asks the engine */
    sim_clone_view(&s, &c, &cc);
    CHECK_EQ_INT(gm_engine_graph_clone(s.engine, c.key, cc.key, sim_clone_map(true)),
                 GM_ERR_NOT_SUPPORTED);
    sim_graph_destroy(s.engine, p.key);
    sim_graph_destroy(s.engine, c.key);
    CHECK(sim_fini(&s));
}

/* A free node added to a clone frees the clone's own copy, not the original's allocation. */
static void test_clone_free_own(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g, c;
    cloned_pair(&s, &g, &c, 2 * MiB, true);
    const uint32_t a = 0, k = 1;
    gm_status_t st;
    REQUIRE(sim_free(&s, &c, c.va[a], &k, 1, &st) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &c, 0xC1, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xC1, S1), GM_OK);
    CHECK(sim_run_data(&s, &c, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0xC1, S1), GM_OK); /* nothing left unfreed */
    CHECK(sim_teardown(&s, (uint64_t[]){0xC1}, 1, (uint64_t[]){c.key, g.key}, 2));
}

/* Execs of one graph with different allocation sets (the graph grew between them): while one
 * holds an unfreed allocation it keeps all its escape windows, so the other's launch needing one
 * of them is refused (not mapped over it) until that allocation is freed, AutoFreeOnLaunch or
 * not: that launch would not make it again. */
static void test_twins_escape_window(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 1 * MiB, true);
    const uint32_t a = 0;
    REQUIRE(sim_instantiate(&s, &g, 0xE2, GM_EXEC_AUTO_FREE) == GM_OK); /* {a} */
    uint32_t b = sim_alloc(&s, &g, 1 * MiB, NULL, 0);
    REQUIRE(sim_plain(&s, &g, &b, 1) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK); /* {a, b} */
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[a], S1), GM_OK); /* b stays live */
    uint64_t before = misuses(&s);
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1), GM_ERR_INVALID_VALUE);
    CHECK_EQ_U64(misuses(&s) - before, 0);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[b], S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1), GM_OK);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[a], S1), GM_OK);
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1, 0xE2}, 2, (uint64_t[]){g.key}, 1));
}

/* A clone moved into a parent after an exec of its original was made: the original's execs keep
 * taking turns with each other (the graph and its parts change family together). */
static void test_moved_clone_family(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g, c, p;
    cloned_pair(&s, &g, &c, 3 * MiB, false);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    sim_graph_init(&s, &p);
    gm_engine_graph_moved(s.engine, c.key, p.key, GM_NO_CALL);
    REQUIRE(sim_instantiate(&s, &g, 0xE2, 0) == GM_OK);
    uint64_t before = misuses(&s);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1 + 1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_U64(misuses(&s) - before, 0);
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1, 0xE2}, 2, (uint64_t[]){p.key, g.key}, 2));
}

/* A conditional body (GRAPHMEM_LIFT_RESTRICTIONS): the parent's topology holds the body's nodes
 * between the conditional node and an exit node, as the shim reads it; the body's allocations
 * are planned and mapped with the parent's exec, whose own graph has none. A body that does not
 * free what it allocates is not self-contained (the shim refuses to instantiate it). */
static void test_conditional_body(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t body, open;
    sim_graph_init(&s, &body);
    uint32_t a = sim_alloc(&s, &body, 3 * MiB, NULL, 0);
    uint32_t k = sim_plain(&s, &body, &a, 1);
    uint32_t f = sim_free(&s, &body, body.va[a], &k, 1, NULL);
    REQUIRE(f != UINT32_MAX);
    CHECK(gm_engine_graph_self_contained(s.engine, body.key));
    sim_graph_init(&s, &open);
    uint32_t x = sim_alloc(&s, &open, 1 * MiB, NULL, 0);
    REQUIRE(sim_plain(&s, &open, &x, 1) != UINT32_MAX);
    CHECK(!gm_engine_graph_self_contained(s.engine, open.key));

    /* Parent: before -> conditional -> after; the body between the conditional and its exit. */
    const uint64_t before = 0xB0, cond = 0xB1, after = 0xB2, exit = 0xB3, parent = 0x7A7A;
    uint64_t nodes[8] = {before, cond, after, exit, body.nodes[a], body.nodes[k], body.nodes[f]};
    uint32_t from[] = {0, 1, 3, 1, 4, 5, 6}, to[] = {1, 3, 2, 4, 5, 6, 3};
    gm_topology_t topo = {7, nodes, 7, from, to};
    REQUIRE(gm_engine_instantiate(s.engine, parent, &topo, 0xA1, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xA1, S1), GM_OK);
    CHECK(host_backend_handle_at(s.hb, body.va[a], NULL) != 0);
    CHECK(sim_run_data(&s, &body, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0xA1, S1), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 3 * MiB);
    CHECK(sim_teardown(&s, (uint64_t[]){0xA1}, 1, (uint64_t[]){body.key, open.key, parent}, 3));
}

/* A conditional body planned by its parent's exec while something else uses its windows: its
 * clone, a child copy of it, or the body instantiated itself. Planning the body with the parent
 * merges the window families, so the two execs take turns (no map over a mapping). */
static void body_shared(int variant) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t body, c;
    sim_one_alloc_graph(&s, &body, 3 * MiB, false);
    const uint64_t before = 0xB0, cond = 0xB1, after = 0xB2, exit = 0xB3, parent = 0x7A7A;
    uint64_t nodes[7] = {before, cond, after, exit, body.nodes[0], body.nodes[1], body.nodes[2]};
    uint32_t from[] = {0, 1, 3, 1, 4, 5, 6}, to[] = {1, 3, 2, 4, 5, 6, 3};
    gm_topology_t topo = {7, nodes, 7, from, to};
    REQUIRE(gm_engine_instantiate(s.engine, parent, &topo, 0xA1, 0) == GM_OK);
    uint64_t other = body.key;
    if (variant < 2) { /* a clone of the body, moved into a graph of its own for a child copy */
        sim_clone_view(&s, &body, &c);
        REQUIRE(gm_engine_graph_clone(s.engine, body.key, c.key, sim_clone_map(true)) == GM_OK);
        if (variant == 1) {
            sim_graph_t q;
            sim_graph_init(&s, &q);
            gm_engine_graph_moved(s.engine, c.key, q.key, GM_NO_CALL);
            c.key = q.key;
        }
        other = c.key;
    } else {
        c = body;
    }
    REQUIRE(sim_instantiate(&s, &c, 0xC1, 0) == GM_OK);
    uint64_t before_misuses = misuses(&s);
    CHECK_EQ_INT(sim_launch(&s, 0xA1, S1), GM_OK); /* still running on S1 */
    CHECK_EQ_INT(sim_launch(&s, 0xC1, S1 + 1), GM_OK);
    CHECK(sim_run_data(&s, &c, NULL));
    CHECK_EQ_U64(misuses(&s) - before_misuses, 0);
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xA1, GM_NO_CALL);
    gm_engine_exec_destroy(s.engine, 0xC1, GM_NO_CALL);
    sim_graph_destroy(s.engine, parent);
    sim_graph_destroy(s.engine, body.key);
    if (other != body.key)
        sim_graph_destroy(s.engine, other);
    CHECK(sim_fini(&s));
}

static void test_body_shared(void) {
    for (int variant = 0; variant < 3; variant++)
        body_shared(variant);
}

/* A third graph freeing an address a clone family shares frees the record live there, whichever
 * exec of the family made it. */
static void test_foreign_free_in_family(void) {
    for (int which = 0; which < 2; which++) {
        sim_t s;
        REQUIRE(sim_init_lifted(&s));
        sim_graph_t h, hc, f;
        cloned_pair(&s, &h, &hc, 2 * MiB, true);
        REQUIRE(sim_instantiate(&s, &h, 0xF1, 0) == GM_OK);
        REQUIRE(sim_instantiate(&s, &hc, 0xF2, 0) == GM_OK);
        sim_graph_init(&s, &f);
        gm_status_t st;
        REQUIRE(sim_free(&s, &f, h.va[0], NULL, 0, &st) != UINT32_MAX);
        REQUIRE(sim_instantiate(&s, &f, 0xD1, 0) == GM_OK);
        CHECK_EQ_INT(sim_launch(&s, which ? 0xF2 : 0xF1, S1), GM_OK);
        CHECK_EQ_INT(sim_launch(&s, 0xD1, S1), GM_OK);                /* frees it */
        CHECK_EQ_INT(sim_launch(&s, 0xD1, S1), GM_ERR_INVALID_VALUE); /* nothing live to free */
        CHECK_EQ_INT(sim_launch(&s, which ? 0xF1 : 0xF2, S1), GM_OK); /* the address is free */
        host_backend_complete_all(s.hb);
        CHECK_EQ_INT(gm_engine_free_outside(s.engine, h.va[0], S1), GM_OK);
        CHECK(sim_teardown(&s, (uint64_t[]){0xF1, 0xF2, 0xD1}, 3,
                           (uint64_t[]){h.key, hc.key, f.key}, 3));
    }
}

int main(void) {
    RUN_TEST(test_free_marker_destroyed);
    RUN_TEST(test_alloc_marker_destroyed);
    RUN_TEST(test_small_no_reuse);
    RUN_TEST(test_large_packed_only_when_proven);
    RUN_TEST(test_instantiated_twice);
    RUN_TEST(test_clone);
    RUN_TEST(test_child_by_clone);
    RUN_TEST(test_clone_moved_child);
    RUN_TEST(test_clone_free_own);
    RUN_TEST(test_twins_escape_window);
    RUN_TEST(test_moved_clone_family);
    RUN_TEST(test_conditional_body);
    RUN_TEST(test_body_shared);
    RUN_TEST(test_foreign_free_in_family);
    return gm_check_summary();
}
