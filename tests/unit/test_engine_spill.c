/* Items placed across the escape arena's end (gm_plan_item_t.spill_pages), over the host backend:
 * the bench's escape workload (bench/gpu_footprint.cu, "escape") at a scale of pages. A chain of
 * six allocations of 4 units, two live at a time, makes three of 2 units it never frees, after
 * the second, fourth and sixth. The bound is 12 units (the last two of the chain and two
 * escaping); with the escape arena closed to other items the plan took 14 (the driver's 12). */
#include "check.h"
#include "engine_sim.h"

#define S1 0x51
#define S2 0x52

typedef struct escape_graph {
    sim_graph_t g;
    uint64_t escaping[3];
} escape_graph_t;

static void build(sim_t *s, escape_graph_t *x, uint64_t unit) {
    sim_graph_init(s, &x->g);
    uint32_t last = UINT32_MAX, prev = UINT32_MAX;
    for (int i = 0; i < 6; i++) {
        uint32_t a = sim_alloc(s, &x->g, 4 * unit, last == UINT32_MAX ? NULL : &last,
                               last == UINT32_MAX ? 0 : 1);
        REQUIRE(a != UINT32_MAX);
        last = sim_plain(s, &x->g, &a, 1);
        if (prev != UINT32_MAX)
            last = sim_free(s, &x->g, x->g.va[prev], &last, 1, NULL);
        prev = a;
        if (i % 2) {
            uint32_t e = sim_alloc(s, &x->g, 2 * unit, &last, 1);
            REQUIRE(e != UINT32_MAX);
            last = sim_plain(s, &x->g, &e, 1);
            x->escaping[i / 2] = x->g.va[e];
        }
    }
    REQUIRE(sim_free(s, &x->g, x->g.va[prev], &last, 1, NULL) != UINT32_MAX);
}

/* The plan reaches the bound with the escape arena no larger than the escaping allocations; a
 * launch keeps every byte, the escaping ones through a later graph that reuses the shared arena
 * on the stream, and a relaunch once they are freed outside. */
static void spill_at(const gm_engine_config_t *config, uint64_t unit) {
    sim_t s;
    REQUIRE(sim_init(&s, config));
    escape_graph_t x;
    build(&s, &x, unit);
    REQUIRE(sim_instantiate(&s, &x.g, 0xE1, 0) == GM_OK);
    gm_exec_report_t report = sim_report(&s);
    CHECK_EQ_U64(report.planned_bytes, 12 * unit);
    CHECK_EQ_U64(report.escape_bytes, 6 * unit);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &x.g, NULL));

    /* A graph of temporaries on the same stream maps the shared arena, spill pages included. */
    sim_graph_t h;
    sim_graph_init(&s, &h);
    uint32_t b = sim_alloc(&s, &h, 10 * unit, NULL, 0);
    uint32_t k = sim_plain(&s, &h, &b, 1);
    sim_free(&s, &h, h.va[b], &k, 1, NULL);
    REQUIRE(sim_instantiate(&s, &h, 0xE2, 0) == GM_OK);
    for (int i = 0; i < 2; i++) {
        REQUIRE(sim_launch(&s, 0xE2, S1) == GM_OK);
        CHECK(sim_run_data(&s, &h, NULL));
    }
    for (int i = 0; i < 3; i++) /* their bytes held through h's launches */
        CHECK(sim_free_outside(&s, x.escaping[i], S1));
    REQUIRE(sim_launch(&s, 0xE1, S2) == GM_OK);
    CHECK(sim_run_data(&s, &x.g, NULL));
    for (int i = 0; i < 3; i++)
        CHECK(sim_free_outside(&s, x.escaping[i], S2));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1, 0xE2}, 2, (uint64_t[]){x.g.key, h.key}, 2));
}

static void test_chain_spills_into_the_shared_arena(void) {
    spill_at(NULL, sim_page());
}

/* The same with every allocation a window of its own (GRAPHMEM_RUNS=0), and with handles cut
 * smaller than the items (a spill mapping several handles of each arena). */
static void test_without_runs_and_with_small_handles(void) {
    gm_engine_config_t c = sim_default_config();
    c.no_runs = true;
    spill_at(&c, sim_page());
    c = sim_default_config();
    c.max_handle = 2 * sim_page();
    spill_at(&c, sim_page() * 3);
}

int main(void) {
    RUN_TEST(test_chain_spills_into_the_shared_arena);
    RUN_TEST(test_without_runs_and_with_small_handles);
    return gm_check_summary();
}
