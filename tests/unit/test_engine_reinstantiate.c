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
        gm_engine_exec_destroyed(s.engine, exec);
    }
    gm_engine_graph_destroyed(s.engine, g.key);
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_rounds_of_instantiate_launch_free_destroy);
    return gm_check_summary();
}
