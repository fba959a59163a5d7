/* GM_EXEC_PINNED (GRAPHMEM_LIFT_RESTRICTIONS, device launch): once its first upload mapped it, the
 * exec's memory stays mapped while it exists, trims and other graphs' launches leave it alone, it
 * shares bytes with no other exec; after its destruction it stays until gm_engine_device_idle.
 * What it refuses: escaping allocations, another exec of its window family, an exec update. */
#include "check.h"
#include "engine_sim.h"

#define MiB (1ull << 20)
#define S1 0x51
#define S2 0x52

static bool mapped(sim_t *s, uint64_t va) {
    return host_backend_handle_at(s->hb, va, NULL) != 0;
}

/* A lifted engine with graph g (one 4 MiB allocation freed in it) and its pinned exec 0xD1 in
 * context 0xC0. */
static void pinned_exec(sim_t *s, sim_graph_t *g) {
    REQUIRE(sim_init_lifted(s));
    sim_one_alloc_graph(s, g, 4 * MiB, false);
    REQUIRE(sim_instantiate(s, g, 0xD1, GM_EXEC_PINNED) == GM_OK);
    gm_engine_exec_set_context(s->engine, 0xD1, 0xC0);
}

static void test_pinned_stays_mapped(void) {
    sim_t s;
    sim_graph_t g, h;
    pinned_exec(&s, &g);
    sim_one_alloc_graph(&s, &h, 4 * MiB, false);
    REQUIRE(sim_instantiate(&s, &h, 0xE1, 0) == GM_OK);
    CHECK(!mapped(&s, g.va[0])); /* nothing before its first upload */
    CHECK_EQ_INT(sim_upload(&s, 0xD1, S1), GM_OK);
    CHECK(mapped(&s, g.va[0]));
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK(mapped(&s, g.va[0])); /* a device launch may come any time */
    /* Another graph on the same stream gets bytes of its own. */
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 8 * MiB);
    CHECK_EQ_INT(sim_launch(&s, 0xD1, S2), GM_OK); /* host launches as any exec */
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 4 * MiB);
    CHECK(mapped(&s, g.va[0]));

    /* Destroyed: kept until no device launch can run (its context synchronized), then given back.
     */
    CHECK_EQ_INT(gm_engine_exec_destroy(s.engine, 0xD1, GM_NO_CALL), GM_OK);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK(mapped(&s, g.va[0]));
    /* A new pinned exec of the graph may be made, but not mapped over the old one's windows. */
    REQUIRE(sim_instantiate(&s, &g, 0xD2, GM_EXEC_PINNED) == GM_OK);
    gm_engine_exec_set_context(s.engine, 0xD2, 0xC0);
    CHECK_EQ_INT(sim_upload(&s, 0xD2, S1), GM_ERR_NOT_SUPPORTED);
    gm_engine_device_idle(
        s.engine, 0xC1,
        gm_engine_sync_mark(s.engine)); /* another context: says nothing of this one */
    CHECK_EQ_INT(sim_upload(&s, 0xD2, S1), GM_ERR_NOT_SUPPORTED);
    gm_engine_device_idle(s.engine, 0xC0, gm_engine_sync_mark(s.engine));
    CHECK_EQ_INT(sim_upload(&s, 0xD2, S1), GM_OK);
    CHECK(mapped(&s, g.va[0]));
    CHECK_EQ_INT(gm_engine_exec_destroy(s.engine, 0xD2, GM_NO_CALL), GM_OK);
    gm_engine_device_idle(s.engine, 0xC0, gm_engine_sync_mark(s.engine));
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK(!mapped(&s, g.va[0]));
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    sim_graph_destroy(s.engine, g.key);
    sim_graph_destroy(s.engine, h.key);
    CHECK(sim_fini(&s));
}

static bool driver_ok(void *arg) {
    (*(int *)arg)++;
    return true;
}

static void test_pinned_refusals(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g, esc;
    sim_one_alloc_graph(&s, &g, 4 * MiB, false);
    sim_one_alloc_graph(&s, &esc, 4 * MiB, true);
    /* An allocation escaping the graph: its frees could never be ordered after device launches. */
    CHECK_EQ_INT(sim_instantiate(&s, &esc, 0xD0, GM_EXEC_PINNED), GM_ERR_INVALID_VALUE);
    CHECK(!gm_engine_serves(s.engine, 0xD0));
    /* One exec of a window family beside a pinned one, either way round. */
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    CHECK_EQ_INT(sim_instantiate(&s, &g, 0xD1, GM_EXEC_PINNED), GM_ERR_NOT_SUPPORTED);
    CHECK_EQ_INT(gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL), GM_OK);
    REQUIRE(sim_instantiate(&s, &g, 0xD1, GM_EXEC_PINNED) == GM_OK);
    CHECK_EQ_INT(sim_instantiate(&s, &g, 0xE2, 0), GM_ERR_NOT_SUPPORTED);
    sim_graph_t c;
    sim_clone_view(&s, &g, &c);
    REQUIRE(gm_engine_graph_clone(s.engine, g.key, c.key, sim_clone_map(true)) == GM_OK);
    CHECK_EQ_INT(sim_instantiate(&s, &c, 0xE3, 0), GM_ERR_NOT_SUPPORTED);
    /* An update: its device launches run the plan it has. */
    int calls = 0;
    uint64_t error_node = 0;
    gm_topology_t t = sim_topology(&g);
    CHECK_EQ_INT(gm_engine_exec_update(s.engine, 0xD1, g.key, &t,
                                       (gm_driver_call_t){driver_ok, &calls}, &error_node),
                 GM_ERR_NOT_SUPPORTED);
    CHECK_EQ_INT(calls, 0);
    CHECK_EQ_INT(sim_upload(&s, 0xD1, S1), GM_OK);
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xD1, GM_NO_CALL);
    gm_engine_device_idle(s.engine, 0xC0, gm_engine_sync_mark(s.engine));
    sim_graph_destroy(s.engine, g.key);
    sim_graph_destroy(s.engine, c.key);
    sim_graph_destroy(s.engine, esc.key);
    CHECK(sim_fini(&s));
}

/* A pinned exec destroyed before its first upload goes at once: nothing waits for a synchronize
 * (else every cuCtxSynchronize would take the engine lock). Found by a review. */
static void test_pinned_waiting_unmapped(void) {
    sim_t s;
    sim_graph_t g;
    pinned_exec(&s, &g);
    CHECK_EQ_INT(gm_engine_exec_destroy(s.engine, 0xD1, GM_NO_CALL), GM_OK);
    CHECK(!gm_engine_has_pinned_waiting(s.engine));
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

/* A synchronize that began before the exec's destruction says nothing of device launches made
 * meanwhile: its mark frees nothing destroyed after it. Found by a review. */
static void test_sync_before_destroy(void) {
    sim_t s;
    sim_graph_t g;
    pinned_exec(&s, &g);
    CHECK_EQ_INT(sim_upload(&s, 0xD1, S1), GM_OK);
    host_backend_complete_all(s.hb);
    uint64_t mark = gm_engine_sync_mark(s.engine); /* cuCtxSynchronize begins */
    CHECK_EQ_INT(gm_engine_exec_destroy(s.engine, 0xD1, GM_NO_CALL), GM_OK);
    gm_engine_device_idle(s.engine, 0xC0, mark); /* ... and returns */
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK(mapped(&s, g.va[0]));
    CHECK(gm_engine_has_pinned_waiting(s.engine));
    gm_engine_device_idle(s.engine, 0xC0, gm_engine_sync_mark(s.engine));
    CHECK(!gm_engine_has_pinned_waiting(s.engine));
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK(!mapped(&s, g.va[0]));
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

/* A live exec of H, then a pinned exec of G, then G added to H as a child by copy: their families
 * merge after both instantiations; H's exec shares no window with G's and must still launch after
 * a trim. An exec update into a pinned exec's family is refused. Found by a review. */
static void test_pinned_merge_after(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g, h, c;
    sim_one_alloc_graph(&s, &g, 4 * MiB, false);
    sim_one_alloc_graph(&s, &h, 4 * MiB, false);
    REQUIRE(sim_instantiate(&s, &h, 0xE1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &g, 0xD1, GM_EXEC_PINNED) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_INT(sim_upload(&s, 0xD1, S2), GM_OK);
    sim_clone_view(&s, &g, &c);
    REQUIRE(gm_engine_graph_clone(s.engine, g.key, c.key, sim_clone_map(true)) == GM_OK);
    gm_engine_graph_moved(s.engine, c.key, h.key, GM_NO_CALL);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    int calls = 0;
    uint64_t error_node = 0;
    gm_topology_t t = sim_topology(&g);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_exec_update(s.engine, 0xE1, g.key, &t,
                                       (gm_driver_call_t){driver_ok, &calls}, &error_node),
                 GM_ERR_NOT_SUPPORTED);
    CHECK_EQ_INT(calls, 0);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    gm_engine_exec_destroy(s.engine, 0xD1, GM_NO_CALL);
    gm_engine_device_idle(s.engine, 0, gm_engine_sync_mark(s.engine));
    sim_graph_destroy(s.engine, g.key);
    sim_graph_destroy(s.engine, h.key);
    sim_graph_destroy(s.engine, c.key);
    CHECK(sim_fini(&s));
}

/* A pinned exec gone with its context (cuCtxDestroy; the driver gave its handle to another exec,
 * gm_engine_exec_gone): no device launch of it can run and no synchronize of that context will
 * come, so it is unpinned at once: a trim gives its memory back and a new pinned exec of its
 * graph is not refused. (It waited for a synchronize of the dead context forever.) */
static void test_pinned_gone_with_its_context(void) {
    sim_t s;
    sim_graph_t g;
    pinned_exec(&s, &g);
    CHECK_EQ_INT(sim_upload(&s, 0xD1, S1), GM_OK);
    host_backend_complete_all(s.hb);
    CHECK(mapped(&s, g.va[0]));
    gm_engine_exec_gone(s.engine, 0xD1);
    gm_engine_device_idle(s.engine, 0xC1, gm_engine_sync_mark(s.engine)); /* another context */
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK(!gm_engine_has_pinned_waiting(s.engine));
    CHECK(!mapped(&s, g.va[0]));
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    REQUIRE(sim_instantiate(&s, &g, 0xD2, GM_EXEC_PINNED) == GM_OK);
    gm_engine_exec_set_context(s.engine, 0xD2, 0xC1);
    CHECK_EQ_INT(sim_upload(&s, 0xD2, S1), GM_OK);
    gm_engine_exec_destroy(s.engine, 0xD2, GM_NO_CALL);
    gm_engine_device_idle(s.engine, 0xC1, gm_engine_sync_mark(s.engine));
    CHECK(sim_teardown(&s, NULL, 0, &g.key, 1));
}

int main(void) {
    RUN_TEST(test_pinned_gone_with_its_context);
    RUN_TEST(test_pinned_waiting_unmapped);
    RUN_TEST(test_sync_before_destroy);
    RUN_TEST(test_pinned_merge_after);
    RUN_TEST(test_pinned_stays_mapped);
    RUN_TEST(test_pinned_refusals);
    return gm_check_summary();
}
