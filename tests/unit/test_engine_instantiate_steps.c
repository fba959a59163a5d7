/* Instantiation in two steps (engine.h, gm_engine_instantiate_plan / _commit / _abandon): the shim
 * plans while the driver instantiates, then commits under the handle the driver gave, or abandons
 * when the driver refused. Each step leaves the engine as one gm_engine_instantiate would. The
 * threaded worlds of test_engine_threads.c plan, yield and commit (or abandon) while other threads
 * launch, trim and capture. */
#include "check.h"
#include "engine_sim.h"

#define S1 0x51

static gm_topology_t topology(const sim_graph_t *g) {
    return (gm_topology_t){g->node_count, g->nodes, g->edge_count, g->edge_from, g->edge_to};
}

/* Planned, then committed: the exec launches and its data is whole, as one instantiated at once. */
static void test_plan_then_commit(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 3 * sim_page(), false);
    gm_topology_t t = topology(&g);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK && x);
    /* Nothing knows it yet: not served, the graph has no exec. */
    CHECK(!gm_engine_serves(s.engine, 0xE1));
    CHECK(!gm_engine_graph_instantiated(s.engine, g.key));
    REQUIRE(gm_engine_instantiate_commit(s.engine, x, 0xE1) == GM_OK);
    CHECK(gm_engine_serves(s.engine, 0xE1));
    CHECK(gm_engine_graph_instantiated(s.engine, g.key));
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_U64(sim_report(&s).exec, 0xE1);
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* The driver refused: the abandoned plan leaves nothing (the backend is clean at the end), and the
 * graph instantiates again. */
static void test_abandon_leaves_nothing(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, sim_page(), true);
    gm_topology_t t = topology(&g);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK);
    gm_engine_instantiate_abandon(s.engine, x);
    gm_engine_instantiate_abandon(s.engine, NULL); /* nothing planned: nothing to do */
    CHECK(!gm_engine_graph_instantiated(s.engine, g.key));
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[0], S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* Two plans of one graph (two threads instantiating it at once): the first commit wins, the
 * second is refused as the driver's second instantiation is (§A3.7) and leaves nothing. */
static void test_second_commit_refused(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, sim_page(), false);
    gm_topology_t t = topology(&g);
    gm_planned_exec_t *a = NULL, *b = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &a) == GM_OK);
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &b) == GM_OK);
    REQUIRE(gm_engine_instantiate_commit(s.engine, a, 0xE1) == GM_OK);
    CHECK_EQ_INT(gm_engine_instantiate_commit(s.engine, b, 0xE2), GM_ERR_NOT_SUPPORTED);
    CHECK(!gm_engine_serves(s.engine, 0xE2));
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* The driver gave the handle of an exec graphmem still knows (its context went without a destroy
 * graphmem saw) for a new exec of the same graph: the commit forgets the old exec before it
 * checks for one exec per graph, so the new one is accepted. */
static void test_commit_forgets_the_exec_gone(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, sim_page(), false);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    host_backend_complete_all(s.hb);
    gm_topology_t t = topology(&g);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK);
    REQUIRE(gm_engine_instantiate_commit(s.engine, x, 0xE1) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* The graph was destroyed between the plan and the commit (the caller's race): the commit is
 * refused and nothing is left. */
static void test_graph_gone_before_commit(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, sim_page(), false);
    gm_topology_t t = topology(&g);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK);
    sim_graph_destroy(s.engine, g.key);
    CHECK_EQ_INT(gm_engine_instantiate_commit(s.engine, x, 0xE1), GM_ERR_NOT_SUPPORTED);
    CHECK(!gm_engine_serves(s.engine, 0xE1));
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_plan_then_commit);
    RUN_TEST(test_abandon_leaves_nothing);
    RUN_TEST(test_second_commit_refused);
    RUN_TEST(test_commit_forgets_the_exec_gone);
    RUN_TEST(test_graph_gone_before_commit);
    return gm_check_summary();
}
