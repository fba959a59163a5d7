/* An exec destroyed and its graph instantiated again (the graph-memory guide's address-fixedness
 * example): the new exec launches, its escaping allocation comes back at the same address, and
 * frees outside the graph work after every round. Found on a GPU, reproduced here. */
#include "check.h"
#include "engine_sim.h"

static void test_rounds_of_instantiate_launch_free_destroy(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint64_t big = 3 * sim_page();
    uint32_t tmp = sim_alloc(&s, &g, big, NULL, 0);
    uint32_t k1 = sim_plain(&s, &g, &tmp, 1);
    uint32_t out = sim_alloc(&s, &g, big, &k1, 1);
    uint32_t k2 = sim_plain(&s, &g, &out, 1);
    gm_status_t st = GM_OK;
    sim_free(&s, &g, g.va[tmp], &k2, 1, &st);
    REQUIRE(st == GM_OK);
    const uint64_t stream = 0x5000;
    for (int round = 0; round < 3; round++) {
        uint64_t exec = 0xe000 + (uint64_t)round % 2; /* the driver recycles exec handles */
        CHECK_EQ_INT(sim_instantiate(&s, &g, exec, GM_EXEC_AUTO_FREE), GM_OK);
        for (int launch = 0; launch < 3; launch++) {
            CHECK_EQ_INT(sim_launch(&s, exec, stream), GM_OK);
            CHECK(sim_run_data(&s, &g, NULL));
            host_backend_complete_all(s.hb);
        }
        CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[out], stream), GM_OK);
        CHECK(sim_forget_live(&s, g.va[out]));
        host_backend_complete_all(s.hb);
        gm_engine_exec_destroy(s.engine, exec, GM_NO_CALL);
    }
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

/* PyTorch destroys a captured graph right after instantiating it, then frees the graph's
 * escaping allocations inside the capture of another graph (make_graphed_callables): the
 * allocations must still be graphmem's while the exec lives. */
static void test_graph_destroyed_exec_alive_allocations_still_owned(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t fwd, bwd;
    sim_graph_init(&s, &fwd);
    uint32_t saved = sim_alloc(&s, &fwd, 2 * sim_page(), NULL, 0);
    sim_plain(&s, &fwd, &saved, 1);
    CHECK_EQ_INT(sim_instantiate(&s, &fwd, 0xf00, GM_EXEC_AUTO_FREE), GM_OK);
    sim_graph_destroy(s.engine, fwd.key);
    CHECK(gm_engine_owns(s.engine, fwd.va[saved]));
    sim_graph_init(&s, &bwd);
    uint32_t k = sim_plain(&s, &bwd, NULL, 0);
    gm_status_t st = GM_ERR_BACKEND;
    sim_free(&s, &bwd, fwd.va[saved], &k, 1, &st);
    CHECK_EQ_INT(st, GM_OK);
    CHECK_EQ_INT(sim_instantiate(&s, &bwd, 0xb00, 0), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xf00, 0x77), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xb00, 0x77), GM_OK);
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xf00, GM_NO_CALL);
    gm_engine_exec_destroy(s.engine, 0xb00, GM_NO_CALL);
    sim_graph_destroy(s.engine, bwd.key);
    CHECK(sim_fini(&s));
}

/* Two graphs share a group on one stream; after launches that take the fast path (nothing to
 * map), one moves to another stream: it must wait for the other's run (GPU stress test). */
static void test_mover_waits_for_fast_path_launch_of_other_member(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t x, y;
    sim_one_alloc_graph(&s, &x, 2 * sim_page(), false);
    sim_one_alloc_graph(&s, &y, 2 * sim_page(), false);
    REQUIRE(sim_instantiate(&s, &x, 0xA1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &y, 0xB1, 0) == GM_OK);
    /* Both move together from stream to stream, x first (the stress test's pattern): after x's
     * move, y's launch on the new stream takes the fast path, so y ran last when x moves on. */
    for (uint64_t stream = 0x61; stream < 0x65; stream++) {
        uint64_t waits = host_backend_stream_waits(s.hb);
        REQUIRE(sim_launch(&s, 0xA1, stream) == GM_OK);
        if (stream > 0x61)
            CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 1);
        REQUIRE(sim_launch(&s, 0xB1, stream) == GM_OK);
        REQUIRE(sim_launch(&s, 0xA1, stream) == GM_OK);
        REQUIRE(sim_launch(&s, 0xB1, stream) == GM_OK);
    }
    CHECK(sim_run_data(&s, &x, NULL));
    CHECK(sim_run_data(&s, &y, NULL));
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xA1, GM_NO_CALL);
    gm_engine_exec_destroy(s.engine, 0xB1, GM_NO_CALL);
    CHECK(sim_fini(&s));
}

/* An exec that went without a destroy graphmem saw (its context destroyed) and whose handle the
 * driver gives out again: to a new exec of another graph, which instantiates and launches (it
 * was refused as a duplicate), and to an exec graphmem does not serve, which it then no longer
 * takes for the old one (gm_engine_exec_gone). The old exec's live allocation stays live, as
 * after a destroy (§A9.1). */
static void test_exec_handle_given_out_again(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    const uint64_t stream = 0x5000, reused = 0xE1;
    sim_graph_t g, h;
    sim_one_alloc_graph(&s, &g, 2 * sim_page(), true);
    sim_one_alloc_graph(&s, &h, sim_page(), false);
    REQUIRE(sim_instantiate(&s, &g, reused, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, reused, stream), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_INT(sim_instantiate(&s, &h, reused, 0), GM_OK); /* g's exec is gone */
    CHECK_EQ_INT(sim_launch(&s, reused, stream), GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    gm_engine_exec_gone(s.engine, reused); /* then a plain graph's exec under it */
    CHECK(!gm_engine_serves(s.engine, reused));
    CHECK(sim_free_outside(&s, g.va[0], stream)); /* g's allocation was live all along */
    host_backend_complete_all(s.hb);
    CHECK(sim_teardown(&s, NULL, 0, (uint64_t[]){g.key, h.key}, 2));
}

int main(void) {
    RUN_TEST(test_exec_handle_given_out_again);
    RUN_TEST(test_mover_waits_for_fast_path_launch_of_other_member);
    RUN_TEST(test_graph_destroyed_exec_alive_allocations_still_owned);
    RUN_TEST(test_rounds_of_instantiate_launch_free_destroy);
    return gm_check_summary();
}
