/* Items placed across the escape arena's end (gm_plan_item_t.spill_pages), over the host backend:
 * the bench's escape workload (bench/gpu_footprint.cu, "escape") at a scale of pages. A chain of
 * six allocations of 4 units, two live at a time, makes three of 2 units it never frees, after
 * the second, fourth and sixth. The bound is 12 units (the last two of the chain and two
 * escaping); with the escape arena closed to other items the plan took 14 (the driver's 12).
 * Spill pages are mapped from both arenas: checked beside another graph of the stream's group,
 * across AutoFree relaunches, trims and stream changes, and through an AutoFree takeover of the
 * escape memory (GRAPHMEM_LIFT_RESTRICTIONS). */
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

static void temporaries(sim_t *s, sim_graph_t *h, uint64_t bytes) {
    sim_graph_init(s, h);
    uint32_t b = sim_alloc(s, h, bytes, NULL, 0);
    uint32_t k = sim_plain(s, h, &b, 1);
    sim_free(s, h, h->va[b], &k, 1, NULL);
}

/* Another member (temporaries of `h_bytes`) cuts the group's arena first; the chain relaunches
 * under AutoFree with that member between, and trims in between; then it moves stream. */
static void with_another_member(const gm_engine_config_t *config, uint64_t unit, uint64_t h_bytes) {
    sim_t s;
    REQUIRE(sim_init(&s, config));
    sim_graph_t h;
    temporaries(&s, &h, h_bytes);
    REQUIRE(sim_instantiate(&s, &h, 0xE2, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE2, S1) == GM_OK); /* h cuts the group arena first */
    CHECK(sim_run_data(&s, &h, NULL));
    escape_graph_t x;
    build(&s, &x, unit);
    REQUIRE(sim_instantiate(&s, &x.g, 0xE1, GM_EXEC_AUTO_FREE) == GM_OK);
    CHECK_EQ_U64(sim_report_of(&s, 0xE1).planned_bytes, 12 * unit);
    for (int round = 0; round < 4; round++) {
        REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
        CHECK(sim_run_data(&s, &x.g, NULL));
        REQUIRE(sim_launch(&s, 0xE2, S1) == GM_OK);
        CHECK(sim_run_data(&s, &h, NULL));
        if (round % 2) {
            host_backend_complete_all(s.hb);
            gm_engine_trim(s.engine, 0);
        }
    }
    for (int i = 0; i < 3; i++)
        CHECK(sim_free_outside(&s, x.escaping[i], S1));
    host_backend_complete_all(s.hb);
    REQUIRE(sim_launch(&s, 0xE1, S2) == GM_OK);
    CHECK(sim_run_data(&s, &x.g, NULL));
    REQUIRE(sim_launch(&s, 0xE2, S2) == GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    for (int i = 0; i < 3; i++)
        CHECK(sim_free_outside(&s, x.escaping[i], S2));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1, 0xE2}, 2, (uint64_t[]){x.g.key, h.key}, 2));
}

/* In every configuration that changes how spill pages are mapped: the remap policy, the UAF
 * check, handles of 2 and 8 pages, no runs. */
static void test_spill_beside_another_member(void) {
    uint64_t P = sim_page();
    for (int v = 0; v < 6; v++) {
        gm_engine_config_t c = sim_default_config();
        if (v == 1)
            c.cross_stream = GM_CROSS_STREAM_REMAP;
        if (v == 2)
            c.uaf_check = true;
        if (v == 3)
            c.max_handle = 2 * P;
        if (v == 4)
            c.no_runs = true;
        if (v == 5)
            c.max_handle = 8 * P;
        for (uint64_t unit = 1; unit <= 3; unit++)
            for (uint64_t hb = 1; hb <= 13; hb += 3)
                with_another_member(&c, unit * P, hb * P);
    }
}

/* Two execs of the chain graph (LIFT_RESTRICTIONS), both AutoFree, taking each other's escape
 * memory in turn, with another graph between. */
static void test_takeover_with_spills(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    escape_graph_t x;
    build(&s, &x, sim_page());
    sim_graph_t h;
    temporaries(&s, &h, 7 * sim_page());
    REQUIRE(sim_instantiate(&s, &x.g, 0xE1, GM_EXEC_AUTO_FREE) == GM_OK);
    REQUIRE(sim_instantiate(&s, &x.g, 0xE3, GM_EXEC_AUTO_FREE) == GM_OK);
    REQUIRE(sim_instantiate(&s, &h, 0xE2, 0) == GM_OK);
    for (int round = 0; round < 4; round++) {
        uint64_t stream = round % 2 ? S2 : S1;
        CHECK_EQ_INT(sim_launch(&s, round % 2 ? 0xE3 : 0xE1, stream), GM_OK);
        CHECK(sim_run_data(&s, &x.g, NULL));
        CHECK_EQ_INT(sim_launch(&s, 0xE2, stream), GM_OK);
        CHECK(sim_run_data(&s, &h, NULL));
    }
    host_backend_complete_all(s.hb);
    for (int i = 0; i < 3; i++)
        CHECK(sim_free_outside(&s, x.escaping[i], S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1, 0xE2, 0xE3}, 3, (uint64_t[]){x.g.key, h.key}, 2));
}

int main(void) {
    RUN_TEST(test_chain_spills_into_the_shared_arena);
    RUN_TEST(test_without_runs_and_with_small_handles);
    RUN_TEST(test_spill_beside_another_member);
    RUN_TEST(test_takeover_with_spills);
    return gm_check_summary();
}
