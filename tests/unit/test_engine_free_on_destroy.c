/* GRAPHMEM_FREE_ON_DESTROY (engine config `free_on_destroy`): destroying an exec frees its
 * allocations still live once its last launch finished; without it they stay live until freed,
 * as the driver keeps them (§A9.1). An AutoFreeOnLaunch exec launched and destroyed in a loop is
 * the case it is for: each cycle leaves one launch's allocation behind. */
#include "check.h"
#include "engine_sim.h"

#define KiB (1ull << 10)
#define S1 0x51

static uint64_t alloc_va(const sim_graph_t *g) {
    for (uint32_t n = 0; n < g->node_count; n++)
        if (g->kind[n] == SIM_ALLOC)
            return g->va[n];
    return 0;
}

static void cycles(bool free_on_destroy) {
    gm_engine_config_t c = sim_default_config();
    c.free_on_destroy = free_on_destroy;
    sim_t s;
    REQUIRE(sim_init(&s, &c));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 256 * KiB, true);
    uint64_t va = alloc_va(&g);
    for (uint64_t cycle = 0; cycle < 3; cycle++) {
        uint64_t exec = 0xE0 + cycle;
        REQUIRE(sim_instantiate(&s, &g, exec, GM_EXEC_AUTO_FREE) == GM_OK);
        /* With the allocation of the previous cycle still live, the driver refuses the launch
         * (its address is taken until it is freed, §A9.1). */
        gm_status_t launched = sim_launch(&s, exec, S1);
        CHECK_EQ_INT(launched, cycle == 0 || free_on_destroy ? GM_OK : GM_ERR_INVALID_VALUE);
        REQUIRE(gm_engine_exec_destroy(s.engine, exec, GM_NO_CALL) == GM_OK);
        /* The launch has not run yet: trim keeps its memory either way. */
        REQUIRE(gm_engine_trim(s.engine, 0) == GM_OK);
        CHECK(sim_attr(&s, GM_ATTR_RESERVED_CURRENT) > 0);
        host_backend_complete_all(s.hb);
    }
    REQUIRE(gm_engine_trim(s.engine, 0) == GM_OK);
    if (free_on_destroy) {
        CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
        CHECK_EQ_INT(gm_engine_free_outside(s.engine, va, GM_NO_STREAM), GM_ERR_INVALID_VALUE);
    } else {
        CHECK(sim_attr(&s, GM_ATTR_RESERVED_CURRENT) > 0); /* live: the program must free it */
        CHECK_EQ_INT(gm_engine_free_outside(s.engine, va, GM_NO_STREAM), GM_OK);
        REQUIRE(gm_engine_trim(s.engine, 0) == GM_OK);
        CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    }
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

static void test_destroy_keeps_live_allocations(void) {
    cycles(false);
}

static void test_free_on_destroy_after_the_last_run(void) {
    cycles(true);
}

int main(void) {
    RUN_TEST(test_destroy_keeps_live_allocations);
    RUN_TEST(test_free_on_destroy_after_the_last_run);
    return gm_check_summary();
}
