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

static bool lifted_sim(sim_t *s) {
    gm_engine_config_t c = sim_default_config();
    c.lift_restrictions = true;
    return sim_init(s, &c);
}

/* A destroyed free node: the allocation escapes from the next instantiation on (a relaunch is
 * refused until it is freed outside); the driver's refusal changes nothing; a node that is no
 * marker is left to the caller. */
static void test_free_marker_destroyed(void) {
    sim_t s;
    REQUIRE(lifted_sim(&s));
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
    CHECK(!gm_engine_is_marker(s.engine, g.nodes[f]));
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
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

/* A destroyed alloc node: its allocation leaves the graph with its free; the other one stays and
 * is the only memory planned. An exec made before keeps its plan. */
static void test_alloc_marker_destroyed(void) {
    sim_t s;
    REQUIRE(lifted_sim(&s));
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
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE2, GM_NO_CALL);
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
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

/* A graph instantiated twice: both execs use its addresses and take turns. A launch of one takes
 * the windows from the other once the other's run is over (waiting on the host for it), with the
 * data right; an allocation one exec left live blocks the other's launch until it is freed, as it
 * blocks a relaunch of its own exec; destroying one keeps the other working. */
static void test_instantiated_twice(void) {
    sim_t s;
    REQUIRE(lifted_sim(&s));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, 3 * MiB, NULL, 0);
    uint32_t k = sim_plain(&s, &g, &a, 1);
    REQUIRE(sim_free(&s, &g, g.va[a], &k, 1, NULL) != UINT32_MAX);
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
    sim_graph_init(&s, &h);
    uint32_t x = sim_alloc(&s, &h, 2 * MiB, NULL, 0);
    REQUIRE(sim_plain(&s, &h, &x, 1) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &h, 0xF1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &h, 0xF2, GM_EXEC_AUTO_FREE) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0xF2, S1), GM_ERR_INVALID_VALUE);
    CHECK(sim_forget_live(&s, h.va[x]));
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, h.va[x], S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xF2, S1), GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0xF2, S1), GM_OK); /* its own, AutoFreeOnLaunch */
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_ERR_INVALID_VALUE);
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xF2, GM_NO_CALL); /* x stays live */
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_ERR_INVALID_VALUE);
    CHECK(sim_forget_live(&s, h.va[x]));
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, h.va[x], S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_OK);
    CHECK(sim_forget_live(&s, h.va[x]));
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, h.va[x], S1), GM_OK);

    /* One destroyed, the other goes on. */
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE2, GM_NO_CALL);
    gm_engine_exec_destroy(s.engine, 0xF1, GM_NO_CALL);
    sim_graph_destroy(s.engine, g.key);
    sim_graph_destroy(s.engine, h.key);
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_free_marker_destroyed);
    RUN_TEST(test_alloc_marker_destroyed);
    RUN_TEST(test_small_no_reuse);
    RUN_TEST(test_instantiated_twice);
    return gm_check_summary();
}
