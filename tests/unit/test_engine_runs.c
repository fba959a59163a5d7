/* Runs (core/README.md, "Records"): allocations of a graph of one size that are all still open
 * when the next one is made get adjacent addresses in one chunk, so that a first launch maps them a
 * handle at a time instead of once each; a free closes the run, and whatever keeps the next
 * allocation from the addresses right after the run (another size, device or access, a full run,
 * addresses taken, a failed node) gives it a window of its own. The data check runs every graph. */
#include "check.h"
#include "engine_sim.h"

#define S1 0x51

static uint64_t page(void) {
    return sim_page();
}

static uint64_t maps_made(sim_t *s) {
    return host_backend_calls(s->hb, HOST_OP_MAP);
}

/* n one-page allocations in a chain, all live together, then a node using them all, then their
 * frees. The indices of the alloc nodes go to `allocs`. */
static void open_chain(sim_t *s, sim_graph_t *g, uint32_t n, uint32_t *allocs) {
    uint32_t prev = UINT32_MAX, users[SIM_MAX_NODES];
    for (uint32_t i = 0; i < n; i++) {
        allocs[i] = sim_alloc(s, g, page(), &prev, prev != UINT32_MAX);
        REQUIRE(allocs[i] != UINT32_MAX);
        prev = allocs[i];
    }
    uint32_t use = sim_plain(s, g, allocs, n);
    REQUIRE(use != UINT32_MAX);
    gm_status_t st;
    for (uint32_t i = 0; i < n; i++) {
        users[i] = sim_free(s, g, g->va[allocs[i]], &use, 1, &st);
        REQUIRE(users[i] != UINT32_MAX);
    }
}

/* 16 pages live together: adjacent addresses, and the first launch maps each handle of the plan
 * once (4 handles of 4 pages, 5 when the run straddles one more), where a window of each
 * allocation's own made 16 mappings or more. The plan is still the lower bound. */
static void test_open_allocations_map_together(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a[16];
    open_chain(&s, &g, 16, a);
    for (uint32_t i = 1; i < 16; i++)
        CHECK_EQ_U64(g.va[a[i]], g.va[a[i - 1]] + page());
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    uint64_t before = maps_made(&s);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(maps_made(&s) - before <= 5);
    CHECK(sim_run_data(&s, &g, NULL));
    gm_exec_report_t r = sim_report(&s);
    CHECK(r.mappings <= 5);
    CHECK_EQ_U64(r.lower_bound, 16 * page());
    CHECK_EQ_U64(r.planned_bytes, 16 * page());
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* GRAPHMEM_RUNS=0: the same allocations get windows of their own, one mapping each at least. */
static void test_runs_off(void) {
    sim_t s;
    gm_engine_config_t config = sim_default_config();
    config.no_runs = true;
    REQUIRE(sim_init(&s, &config));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a[16];
    open_chain(&s, &g, 16, a);
    for (uint32_t i = 1; i < 16; i++)
        CHECK(g.va[a[i]] != g.va[a[i - 1]] + page());
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_report(&s).mappings >= 16);
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* alloc a, alloc b, free a, alloc c: the free closes the run {a, b}, so c is not placed after b
 * (a and c are never live together: the plan gives c a's pages, two pages in all). */
static void test_free_closes_the_run(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, page(), NULL, 0);
    uint32_t b = sim_alloc(&s, &g, page(), &a, 1);
    REQUIRE(a != UINT32_MAX && b != UINT32_MAX);
    CHECK_EQ_U64(g.va[b], g.va[a] + page());
    gm_status_t st;
    uint32_t fa = sim_free(&s, &g, g.va[a], &b, 1, &st);
    REQUIRE(fa != UINT32_MAX);
    uint32_t c = sim_alloc(&s, &g, page(), &fa, 1);
    REQUIRE(c != UINT32_MAX);
    CHECK(g.va[c] != g.va[b] + page());
    uint32_t fb = sim_free(&s, &g, g.va[b], &c, 1, &st);
    REQUIRE(fb != UINT32_MAX && sim_free(&s, &g, g.va[c], &fb, 1, &st) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    gm_exec_report_t r = sim_report(&s);
    CHECK_EQ_U64(r.lower_bound, 2 * page());
    CHECK_EQ_U64(r.planned_bytes, 2 * page());
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* What keeps the next allocation out of the run: another size or access, a run full (16 largest
 * handles), the addresses after the run taken by another graph, a node the driver failed to make.
 * Each such allocation gets addresses apart, and every graph's data stays whole. */
static void test_what_breaks_a_run(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g, h;
    sim_graph_init(&s, &g);
    sim_graph_init(&s, &h);
    uint32_t mine[80], n = 0;
    mine[n++] = sim_alloc(&s, &g, page(), NULL, 0);
    /* Another size. */
    mine[n] = sim_alloc(&s, &g, 2 * page(), &mine[n - 1], 1);
    REQUIRE(mine[n] != UINT32_MAX);
    CHECK(g.va[mine[n]] != g.va[mine[n - 1]] + page());
    n++;
    /* Another access. */
    gm_alloc_params_t peer = {.device = 0, .size = 2 * page(), .access_mask = 1u << 1};
    mine[n] = sim_alloc_on(&s, &g, &peer, &mine[n - 1], 1);
    REQUIRE(mine[n] != UINT32_MAX);
    CHECK(g.va[mine[n]] != g.va[mine[n - 1]] + 2 * page());
    n++;
    /* Full: the run holds 64 pages (16 handles of 4), 32 of these. */
    const uint32_t run_start = n - 1;
    for (uint32_t i = 1; i < 32; i++, n++) {
        mine[n] = sim_alloc_on(&s, &g, &peer, &mine[n - 1], 1);
        REQUIRE(mine[n] != UINT32_MAX);
        CHECK_EQ_U64(g.va[mine[n]], g.va[mine[run_start]] + 2 * i * page());
    }
    mine[n] = sim_alloc_on(&s, &g, &peer, &mine[n - 1], 1);
    REQUIRE(mine[n] != UINT32_MAX);
    CHECK(g.va[mine[n]] != g.va[mine[run_start]] + 64 * page());
    n++;
    /* Taken: h's allocation gets the addresses right after the new run's window. */
    uint32_t x = sim_alloc(&s, &h, page(), NULL, 0);
    REQUIRE(x != UINT32_MAX);
    mine[n] = sim_alloc_on(&s, &g, &peer, &mine[n - 1], 1);
    REQUIRE(mine[n] != UINT32_MAX);
    CHECK(g.va[mine[n]] != g.va[mine[n - 1]] + 2 * page());
    n++;
    /* A failed node: its run closes, the next allocation starts another. */
    s.fail_node_adds = 1;
    CHECK(sim_alloc_on(&s, &g, &peer, &mine[n - 1], 1) == UINT32_MAX);
    mine[n] = sim_alloc_on(&s, &g, &peer, &mine[n - 1], 1);
    REQUIRE(mine[n] != UINT32_MAX);
    CHECK(g.va[mine[n]] != g.va[mine[n - 1]] + 2 * page() &&
          g.va[mine[n]] != g.va[mine[n - 1]] + 4 * page());
    n++;
    uint32_t f = mine[n - 1];
    uint32_t last = sim_plain(&s, &g, &f, 1);
    gm_status_t st;
    for (uint32_t i = 0; i < n; i++) {
        last = sim_free(&s, &g, g.va[mine[i]], &last, 1, &st);
        REQUIRE(last != UINT32_MAX);
    }
    REQUIRE(sim_free(&s, &h, h.va[x], &x, 1, &st) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &h, 0xE2, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    REQUIRE(sim_launch(&s, 0xE2, S1) == GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1, 0xE2}, 2, (uint64_t[]){g.key, h.key}, 2));
}

/* A run holding an allocation that outlives the graph: the run's chunk goes whole into the exec's
 * escape arena (as a packer chunk does), the escaping bytes stay whole until freed outside, and
 * the graph's memory is freed and made again at the next launch. */
static void test_run_with_an_escaping_allocation(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t out = sim_alloc(&s, &g, page(), NULL, 0);
    uint32_t tmp = sim_alloc(&s, &g, page(), &out, 1);
    REQUIRE(out != UINT32_MAX && tmp != UINT32_MAX);
    CHECK_EQ_U64(g.va[tmp], g.va[out] + page());
    uint32_t use = sim_plain(&s, &g, &tmp, 1);
    gm_status_t st;
    REQUIRE(sim_free(&s, &g, g.va[tmp], &use, 1, &st) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    for (int launch = 0; launch < 2; launch++) {
        REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
        CHECK(sim_run_data(&s, &g, NULL));
        host_backend_complete_all(s.hb);
        CHECK(sim_free_outside(&s, g.va[out], S1));
    }
    gm_exec_report_t r = sim_report(&s);
    CHECK_EQ_U64(r.lower_bound, 2 * page());
    CHECK_EQ_U64(r.escape_bytes, 2 * page());
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* GRAPHMEM_LIFT_RESTRICTIONS, a graph instantiated twice: E1 made while the graph holds m1
 * (escaping); then m2 of m1's size is added (freed in the graph) and E2 made with
 * AutoFreeOnLaunch. E1 leaves m1 live; E2's launch frees it and takes E1's escape memory, which
 * needs both execs to plan their escaping items alike. The instantiation closed the run, so m2
 * does not join m1's chunk (which made E2's escaping item two pages where E1's is one, and the
 * launch was refused). Found by review. */
static void test_instantiation_closes_the_run(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t m1 = sim_alloc(&s, &g, page(), NULL, 0);
    uint32_t k = sim_plain(&s, &g, &m1, 1);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    uint32_t m2 = sim_alloc(&s, &g, page(), &k, 1);
    uint32_t k2 = sim_plain(&s, &g, &m2, 1);
    gm_status_t st;
    REQUIRE(sim_free(&s, &g, g.va[m2], &k2, 1, &st) != UINT32_MAX);
    CHECK(g.va[m2] != g.va[m1] + page());
    REQUIRE(sim_instantiate(&s, &g, 0xE2, GM_EXEC_AUTO_FREE) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[m1], S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1, 0xE2}, 2, &g.key, 1));
}

/* GRAPHMEM_LIFT_RESTRICTIONS: a clone shares the run's chunk, so the run grows no more; the next
 * allocation of the original goes apart. From the review of runs. */
static void test_clone_closes_the_run(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g, c;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, page(), NULL, 0);
    uint32_t b = sim_alloc(&s, &g, page(), &a, 1);
    REQUIRE(b != UINT32_MAX && g.va[b] == g.va[a] + page());
    sim_clone_view(&s, &g, &c);
    REQUIRE(gm_engine_graph_clone(s.engine, g.key, c.key, sim_clone_map(true)) == GM_OK);
    uint32_t x = sim_alloc(&s, &g, page(), &b, 1);
    REQUIRE(x != UINT32_MAX);
    CHECK(g.va[x] != g.va[b] + page());
    sim_graph_destroy(s.engine, c.key);
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

/* Run members' alloc markers destroyed (last, first) with an exec holding them, and a failed
 * node: each closes the run, the next allocation starts apart, everything is released. From the
 * review of runs. */
static void test_marker_destroy_in_run(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t m[4];
    m[0] = sim_alloc(&s, &g, page(), NULL, 0);
    for (int i = 1; i < 4; i++)
        m[i] = sim_alloc(&s, &g, page(), &m[i - 1], 1);
    for (int i = 1; i < 4; i++)
        REQUIRE(g.va[m[i]] == g.va[m[0]] + (uint64_t)i * page());
    uint32_t k = sim_plain(&s, &g, m, 4);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_INT(gm_engine_marker_destroy(s.engine, g.nodes[m[3]], GM_NO_CALL), GM_OK);
    uint32_t x = sim_alloc(&s, &g, page(), &k, 1);
    CHECK(g.va[x] != g.va[m[3]] + page() && g.va[x] != g.va[m[3]]);
    CHECK_EQ_INT(gm_engine_marker_destroy(s.engine, g.nodes[m[0]], GM_NO_CALL), GM_OK);
    CHECK_EQ_INT(gm_engine_marker_destroy(s.engine, g.nodes[x], GM_NO_CALL), GM_OK);
    s.fail_node_adds = 1;
    CHECK(sim_alloc(&s, &g, page(), &k, 1) == UINT32_MAX);
    uint32_t y = sim_alloc(&s, &g, page(), &k, 1);
    uint32_t z = sim_alloc(&s, &g, page(), &y, 1);
    CHECK(g.va[z] == g.va[y] + page());
    host_backend_complete_all(s.hb);
    for (int i = 0; i < 4; i++)
        CHECK(sim_free_outside(&s, g.va[m[i]], S1));
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    CHECK(sim_teardown(&s, NULL, 0, &g.key, 1));
}

int main(void) {
    RUN_TEST(test_open_allocations_map_together);
    RUN_TEST(test_runs_off);
    RUN_TEST(test_free_closes_the_run);
    RUN_TEST(test_what_breaks_a_run);
    RUN_TEST(test_run_with_an_escaping_allocation);
    RUN_TEST(test_instantiation_closes_the_run);
    RUN_TEST(test_clone_closes_the_run);
    RUN_TEST(test_marker_destroy_in_run);
    return gm_check_summary();
}
