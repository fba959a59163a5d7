/* cuGraphExecUpdate (§A3.10): the driver's node pairing for memory nodes, which it cannot see
 * under graphmem (tests/probe/exec_update.cu has the driver's answers these cases mirror), and the
 * exec re-planned for the update's graph in one step with the driver's call. */
#include <string.h>

#include "check.h"
#include "engine_sim.h"
#include "shape.h"

#define MiB (1ull << 20)
#define S1 0x51

/* A chain of nodes of the given kinds (0 none, 1 alloc, 2 free); `edges` overrides the chain. */
static void chain(gm_shape_t *s, const char *kinds, const uint32_t (*edges)[2], uint32_t count) {
    uint32_t n = (uint32_t)strlen(kinds), from[16] = {0}, to[16] = {0}, e = 0;
    uint64_t nodes[16] = {0};
    for (uint32_t i = 0; i < n; i++)
        nodes[i] = 100 + i;
    if (edges)
        for (; e < count; e++) {
            from[e] = edges[e][0];
            to[e] = edges[e][1];
        }
    else
        for (; e + 1 < n; e++) {
            from[e] = e;
            to[e] = e + 1;
        }
    REQUIRE(gm_shape_build(s, n, nodes, e, from, to) == GM_OK);
    for (uint32_t i = 0; i < n; i++)
        s->kind[i] = (uint8_t)(kinds[i] == 'A'   ? GM_MARKER_ALLOC
                               : kinds[i] == 'F' ? GM_MARKER_FREE
                                                 : GM_MARKER_NONE);
}

/* The probe's cases: A T V F (E) against the second graph, pairing from the exit nodes. */
static void test_pairing_as_the_driver(void) {
    gm_shape_t a, b;
    uint32_t at = 0;
    chain(&a, "ATVF", NULL, 0);
    chain(&b, "ATVF", NULL, 0);
    CHECK_EQ_INT(gm_shape_pair(&a, &b, &at), GM_SHAPE_SAME);
    gm_shape_free(&b);
    chain(&b, "ATVE", NULL, 0); /* free_removed_empty: b.node3 */
    CHECK_EQ_INT(gm_shape_pair(&a, &b, &at), GM_SHAPE_KIND_CHANGED);
    CHECK_EQ_U64(at, 3);
    gm_shape_free(&b);
    chain(&b, "ATV", NULL, 0); /* free_removed: the driver's topology check */
    CHECK_EQ_INT(gm_shape_pair(&a, &b, &at), GM_SHAPE_OTHER);
    gm_shape_free(&b);
    gm_shape_free(&a);

    chain(&a, "ATVFE", NULL, 0);
    chain(&b, "ATVEF", NULL, 0); /* free_moved_order: b.node4 */
    CHECK_EQ_INT(gm_shape_pair(&a, &b, &at), GM_SHAPE_KIND_CHANGED);
    CHECK_EQ_U64(at, 4);
    gm_shape_free(&b);
    /* free_moved_edge: A T V F@4 E@2, i.e. A->T->V->E->F: the exit F pairs with a's E. */
    static const uint32_t moved[][2] = {{0, 1}, {1, 2}, {4, 3}, {2, 4}};
    chain(&b, "ATVFE", moved, 4);
    CHECK_EQ_INT(gm_shape_pair(&a, &b, &at), GM_SHAPE_KIND_CHANGED);
    CHECK_EQ_U64(at, 3);
    gm_shape_free(&b);
    chain(&b, "ATVFA", NULL, 0); /* escape_added: b.node4 */
    CHECK_EQ_INT(gm_shape_pair(&a, &b, &at), GM_SHAPE_KIND_CHANGED);
    CHECK_EQ_U64(at, 4);
    gm_shape_free(&b);
    gm_shape_free(&a);

    /* from_plain: an exec without memory nodes; the driver reports b.node3. */
    chain(&b, "ATVF", NULL, 0);
    CHECK_EQ_U64(gm_shape_first_marker(&b), 3);
    gm_shape_free(&b);
    chain(&b, "ETVE", NULL, 0);
    CHECK_EQ_U64(gm_shape_first_marker(&b), UINT32_MAX);
    gm_shape_free(&b);
}

typedef struct driver {
    int calls;
    bool fail;
} driver_t;

static bool driver_update(void *arg) {
    driver_t *d = arg;
    d->calls++;
    return !d->fail;
}

static gm_status_t update(sim_t *s, uint64_t exec, const sim_graph_t *g, driver_t *d,
                          uint64_t *error_node) {
    gm_topology_t t = sim_topology(g);
    return gm_engine_exec_update(s->engine, exec, g->key, &t, (gm_driver_call_t){driver_update, d},
                                 error_node);
}

/* Same shape, other sizes: taken; the exec then runs with the second graph's allocations, and
 * the first graph may be instantiated again. */
static void test_update_replans(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a, b;
    sim_one_alloc_graph(&s, &a, 1 * MiB, false);
    sim_one_alloc_graph(&s, &b, 3 * MiB, false);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    CHECK(sim_run_data(&s, &a, NULL));
    driver_t d = {0};
    uint64_t node = 1;
    CHECK_EQ_INT(update(&s, 0xA, &b, &d, &node), GM_OK);
    CHECK_EQ_INT(d.calls, 1);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    CHECK(sim_run_data(&s, &b, NULL)); /* b's addresses are mapped for the exec now */
    /* The exec belongs to b: a is free to be instantiated, b is not. */
    CHECK_EQ_INT(sim_instantiate(&s, &b, 0xC, 0), GM_ERR_NOT_SUPPORTED);
    REQUIRE(sim_instantiate(&s, &a, 0xB, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xB, S1) == GM_OK);
    CHECK(sim_run_data(&s, &a, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

/* alloc -> use -> plain: an escaping allocation, three nodes. */
static void escaping3(sim_t *s, sim_graph_t *g, uint64_t size) {
    sim_graph_init(s, g);
    uint32_t n0 = sim_alloc(s, g, size, NULL, 0);
    uint32_t n1 = sim_plain(s, g, &n0, 1);
    REQUIRE(sim_plain(s, g, &n1, 1) != UINT32_MAX);
}

/* A free node where the exec's graph has a plain one: refused as the driver refuses it, without
 * the driver's call; a refusal by the driver itself: the same. Either way the exec keeps its
 * plan and runs as before. */
static void test_update_refused_keeps_plan(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a, b, c;
    escaping3(&s, &a, 1 * MiB);
    sim_one_alloc_graph(&s, &b, 1 * MiB, false); /* alloc -> use -> free */
    escaping3(&s, &c, 2 * MiB);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    CHECK(sim_run_data(&s, &a, NULL));
    driver_t d = {0};
    uint64_t node = 0;
    CHECK_EQ_INT(update(&s, 0xA, &b, &d, &node), GM_ERR_UPDATE_FAILURE);
    CHECK_EQ_U64(node, b.nodes[2]);
    CHECK_EQ_INT(d.calls, 0);
    d.fail = true;
    CHECK_EQ_INT(update(&s, 0xA, &c, &d, &node), GM_ERR_DRIVER);
    CHECK_EQ_INT(d.calls, 1);
    /* Still a's exec: its allocation is live (a relaunch is refused until it is freed). */
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_ERR_INVALID_VALUE);
    CHECK(sim_forget_live(&s, a.va[0]));
    REQUIRE(gm_engine_free_outside(s.engine, a.va[0], S1) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    CHECK(sim_run_data(&s, &a, NULL));
    CHECK(sim_forget_live(&s, a.va[0]));
    REQUIRE(gm_engine_free_outside(s.engine, a.va[0], S1) == GM_OK);
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

/* The exec's allocation escaped and is live when it is updated: it stays live (freed later, like
 * one of a destroyed exec), the updated exec launches at once with the new graph's allocation, and
 * the two never share a byte (sim_run_data checks every live allocation). */
static void test_update_keeps_live_allocations(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a, b;
    sim_one_alloc_graph(&s, &a, 1 * MiB, true);
    sim_one_alloc_graph(&s, &b, 1 * MiB, true);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    CHECK(sim_run_data(&s, &a, NULL));
    driver_t d = {0};
    uint64_t node = 0;
    CHECK_EQ_INT(update(&s, 0xA, &b, &d, &node), GM_OK);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    CHECK(sim_run_data(&s, &b, NULL));
    host_backend_complete_all(s.hb);
    REQUIRE(gm_engine_trim(s.engine, 0) == GM_OK); /* keeps both: they are live */
    CHECK(sim_forget_live(&s, a.va[0]));
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, a.va[0], S1), GM_OK);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, a.va[0], S1), GM_ERR_INVALID_VALUE);
    CHECK(sim_forget_live(&s, b.va[0]));
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, b.va[0], S1), GM_OK);
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

/* An exec without memory nodes updated from a graph with them: refused at the first marker met
 * from the exits. An exec updated from a graph that has an exec of its own: refused (the graph's
 * addresses are that exec's). */
static void test_update_other_refusals(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a, b;
    sim_one_alloc_graph(&s, &a, 1 * MiB, false);
    sim_one_alloc_graph(&s, &b, 1 * MiB, false);
    driver_t d = {0};
    uint64_t node = 0;
    CHECK_EQ_INT(update(&s, 0xF, &b, &d, &node), GM_ERR_UPDATE_FAILURE);
    CHECK_EQ_U64(node, b.nodes[2]);
    CHECK_EQ_INT(d.calls, 0);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &b, 0xB, 0) == GM_OK);
    CHECK_EQ_INT(update(&s, 0xA, &b, &d, &node), GM_ERR_UPDATE_FAILURE);
    CHECK_EQ_U64(node, 0);
    CHECK_EQ_INT(d.calls, 0);
    /* Its own graph: just the driver's call. */
    CHECK_EQ_INT(update(&s, 0xA, &a, &d, &node), GM_OK);
    CHECK_EQ_INT(d.calls, 1);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    CHECK(sim_run_data(&s, &a, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_pairing_as_the_driver);
    RUN_TEST(test_update_replans);
    RUN_TEST(test_update_refused_keeps_plan);
    RUN_TEST(test_update_keeps_live_allocations);
    RUN_TEST(test_update_other_refusals);
    return gm_check_summary();
}
