/* AutoFreeOnLaunch across the execs of one window family (GRAPHMEM_LIFT_RESTRICTIONS;
 * core/README.md, "A graph instantiated twice"): a launch of an exec with the flag frees the
 * allocations another exec of its graph left live at its addresses and takes the escape memory
 * holding them as it is mapped (engine_launch.c escape_takeover, engine_part.c
 * gm_part_take_escape), only where the holder's escape plan is the launcher's and the launch makes
 * every one of its allocations again. */
#include "check.h"
#include "engine_sim.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define S1 0x51

static void sum_freed_others(const gm_exec_report_t *rep, void *arg) {
    *(uint64_t *)arg += rep->freed_others;
}

/* An exec with AutoFreeOnLaunch launched while another exec of its graph (instantiated twice, or
 * a clone's) holds allocations at its addresses frees them, as it frees its own (§A6.2), and
 * takes the memory holding them as it is mapped: the data is intact up to its run, nothing is
 * mapped anew, and a launch the driver refuses leaves the holder as it was. An upload leaves them
 * live. The holder, without the flag, is refused then; one whose exec was destroyed keeps its
 * allocation until it is freed (§A9.1). */
static void test_autofree_takes_twin(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t h, hc;
    sim_one_alloc_graph(&s, &h, 2 * MiB, true);
    sim_clone_view(&s, &h, &hc);
    REQUIRE(gm_engine_graph_clone(s.engine, h.key, hc.key, sim_clone_map(true)) == GM_OK);
    const uint64_t va = h.va[0];
    REQUIRE(sim_instantiate(&s, &h, 0xF1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &h, 0xF2, GM_EXEC_AUTO_FREE) == GM_OK);
    REQUIRE(sim_instantiate(&s, &hc, 0xF3, GM_EXEC_AUTO_FREE) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    const uint64_t held = host_backend_handle_at(s.hb, va, NULL);
    const uint64_t reserved = sim_attr(&s, GM_ATTR_RESERVED_CURRENT);
    CHECK(held != 0);

    CHECK_EQ_INT(sim_upload(&s, 0xF2, S1 + 1), GM_OK);
    s.fail_submits = 1;
    CHECK_EQ_INT(sim_launch(&s, 0xF2, S1 + 1), GM_ERR_DRIVER);
    CHECK_EQ_U64(host_backend_handle_at(s.hb, va, NULL), held);
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_ERR_INVALID_VALUE); /* still its own, unfreed */

    CHECK_EQ_INT(sim_launch(&s, 0xF2, S1 + 1), GM_OK);
    CHECK_EQ_U64(host_backend_handle_at(s.hb, va, NULL), held);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), reserved);
    CHECK(sim_run_data(&s, &h, NULL)); /* F1's data was intact up to the run */
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(sim_launch(&s, 0xF3, S1), GM_OK); /* the clone's exec takes it in turn */
    CHECK(sim_run_data(&s, &hc, NULL));
    CHECK_EQ_U64(host_backend_handle_at(s.hb, va, NULL), held);
    uint64_t freed_others = 0;
    gm_engine_report(s.engine, sum_freed_others, &freed_others);
    CHECK_EQ_U64(freed_others, 2);

    /* Freed through the original's address, then F1 makes it again. */
    CHECK(sim_free_outside(&s, va, S1));
    CHECK_EQ_INT(sim_launch(&s, 0xF1, S1), GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    /* F1 destroyed with it live: the address stays taken until it is freed. */
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xF1, GM_NO_CALL);
    CHECK_EQ_INT(sim_launch(&s, 0xF2, S1), GM_ERR_INVALID_VALUE);
    CHECK(sim_free_outside(&s, va, S1));
    CHECK_EQ_INT(sim_launch(&s, 0xF2, S1), GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    CHECK(sim_free_outside(&s, va, S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0xF2, 0xF3}, 2, (uint64_t[]){h.key, hc.key}, 2));
}

/* Graph g of allocations a and b of `size` used by node k, nothing freed in it, and its exec
 * `first` (no flag) launched on S1 and run: both are left live. */
static void two_left_live(sim_t *s, sim_graph_t *g, uint64_t size, uint32_t *a, uint32_t *b,
                          uint32_t *k, uint64_t first) {
    sim_graph_init(s, g);
    *a = sim_alloc(s, g, size, NULL, 0);
    *b = sim_alloc(s, g, size, NULL, 0);
    *k = sim_plain(s, g, (uint32_t[]){*a, *b}, 2);
    REQUIRE(*k != UINT32_MAX);
    REQUIRE(sim_instantiate(s, g, first, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(s, first, S1), GM_OK);
    CHECK(sim_run_data(s, g, NULL));
}

/* The holder freed one of its two allocations on S2 behind work not finished; the
 * AutoFree launch on S1 that takes its escape memory (the freed bytes with it) must wait on S1
 * for that free, as it waits for frees of its own allocations (order, after_points). */
static void test_takeover_waits_for_holder_free(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    uint32_t a, b, k;
    two_left_live(&s, &g, 1 * MiB, &a, &b, &k, 0xA1);
    REQUIRE(sim_instantiate(&s, &g, 0xA2, GM_EXEC_AUTO_FREE) == GM_OK);
    host_backend_complete_all(s.hb);
    host_backend_submit(s.hb, S1 + 1); /* a kernel on S2 still reading b */
    CHECK(sim_free_outside(&s, g.va[b], S1 + 1));
    uint64_t waits = host_backend_stream_waits(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xA2, S1), GM_OK); /* takes A1's escape memory, b's bytes too */
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 1);
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[a], S1));
    CHECK(sim_free_outside(&s, g.va[b], S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0xA1, 0xA2}, 2, (uint64_t[]){g.key}, 1));
}

/* Small allocations a and c packed in one chunk window; the graph frees c from the
 * second instantiation on. The escape plans are equal (one chunk item, same pages), but the
 * AutoFree exec would not make c again: while the first exec holds c, its launch is refused
 * (makes_again); once c is freed it takes a. */
static void test_takeover_makes_again(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    uint32_t a, c, k;
    two_left_live(&s, &g, 4 * KiB, &a, &c, &k, 0xB1);
    gm_status_t st;
    REQUIRE(sim_free(&s, &g, g.va[c], &k, 1, &st) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xB2, GM_EXEC_AUTO_FREE) == GM_OK); /* a escapes */
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xB2, S1), GM_ERR_INVALID_VALUE); /* c would be freed unseen */
    CHECK(sim_free_outside(&s, g.va[c], S1));
    CHECK_EQ_INT(sim_launch(&s, 0xB2, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[a], S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0xB1, 0xB2}, 2, (uint64_t[]){g.key}, 1));
}

/* Equal slots and one escaping item each at a common address, but the plans' escape
 * windows differ: {a, b} for the first exec, {a, c} for the second (b freed in the graph and c
 * added after the first instantiation). The first holds only a (b freed outside), which the
 * second makes again: the takeover must still be refused (the second would run with c's window
 * unmapped and b's mapped), and once a is freed the second maps its own. */
static void test_takeover_items_differ(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    uint32_t a, b, k;
    two_left_live(&s, &g, 1 * MiB, &a, &b, &k, 0xD1);
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[b], S1)); /* a stays live */
    gm_status_t st;
    REQUIRE(sim_free(&s, &g, g.va[b], &k, 1, &st) != UINT32_MAX);
    uint32_t c = sim_alloc(&s, &g, 1 * MiB, NULL, 0);
    REQUIRE(sim_plain(&s, &g, &c, 1) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xD2, GM_EXEC_AUTO_FREE) == GM_OK); /* a, c escape */
    uint64_t before = host_backend_counts(s.hb).misuses;
    CHECK_EQ_INT(sim_launch(&s, 0xD2, S1), GM_ERR_INVALID_VALUE);
    CHECK_EQ_U64(host_backend_counts(s.hb).misuses - before, 0);
    CHECK(sim_free_outside(&s, g.va[a], S1));
    CHECK_EQ_INT(sim_launch(&s, 0xD2, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[a], S1));
    CHECK(sim_free_outside(&s, g.va[c], S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0xD1, 0xD2}, 2, (uint64_t[]){g.key}, 1));
}

/* A takeover on another stream under a cap: the launcher's shared memory is made room for
 * by trimming the holder's group (released idle), its escape memory is the holder's. */
static void test_takeover_under_cap(void) {
    sim_t s;
    gm_engine_config_t cfg = sim_default_config();
    cfg.lift_restrictions = true;
    cfg.max_reserved = 2 * MiB;
    REQUIRE(sim_init(&s, &cfg));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, 1 * MiB, NULL, 0);
    uint32_t t = sim_alloc(&s, &g, 1 * MiB, NULL, 0);
    uint32_t k = sim_plain(&s, &g, (uint32_t[]){a, t}, 2);
    REQUIRE(sim_free(&s, &g, g.va[t], &k, 1, NULL) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xC1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &g, 0xC2, GM_EXEC_AUTO_FREE) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xC1, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    uint64_t held = host_backend_handle_at(s.hb, g.va[a], NULL);
    CHECK_EQ_INT(sim_launch(&s, 0xC2, S1 + 1), GM_OK);
    CHECK_EQ_U64(host_backend_handle_at(s.hb, g.va[a], NULL), held);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_attr(&s, GM_ATTR_RESERVED_CURRENT) <= 2 * MiB);
    CHECK_EQ_INT(sim_launch(&s, 0xC1, S1), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(sim_launch(&s, 0xC2, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[a], S1));
    CHECK_EQ_INT(sim_launch(&s, 0xC1, S1 + 1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[a], S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0xC1, 0xC2}, 2, (uint64_t[]){g.key}, 1));
}

/* An exec of two devices takes both parts of the holder: one launch, counted once. */
static void test_takeover_two_devices(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    gm_alloc_params_t p0 = {.size = 1 * MiB, .device = 0}, p1 = {.size = 1 * MiB, .device = 1};
    uint32_t a = sim_alloc_on(&s, &g, &p0, NULL, 0);
    uint32_t b = sim_alloc_on(&s, &g, &p1, NULL, 0);
    REQUIRE(sim_plain(&s, &g, (uint32_t[]){a, b}, 2) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0x71, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &g, 0x72, GM_EXEC_AUTO_FREE) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0x71, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0x72, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    uint64_t freed_others = 0;
    gm_engine_report(s.engine, sum_freed_others, &freed_others);
    CHECK_EQ_U64(freed_others,
                 1); /* "launches ... that freed allocations another exec left live" */
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[a], S1));
    CHECK(sim_free_outside(&s, g.va[b], S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0x71, 0x72}, 2, (uint64_t[]){g.key}, 1));
}

int main(void) {
    RUN_TEST(test_autofree_takes_twin);
    RUN_TEST(test_takeover_waits_for_holder_free);
    RUN_TEST(test_takeover_makes_again);
    RUN_TEST(test_takeover_items_differ);
    RUN_TEST(test_takeover_under_cap);
    RUN_TEST(test_takeover_two_devices);
    return gm_check_summary();
}
