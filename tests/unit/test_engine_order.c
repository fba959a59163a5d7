/* Event order between streams (engine_order.c): graphs the program runs one after another on two
 * streams, ordered by events, share one group's memory even while their runs have not finished;
 * without the events, or with an event recorded before the launch it would have to follow, they
 * keep memory of their own. Either way a launch still waits for the group's latest user through
 * graphmem's own fence: event order chooses the group, it never replaces the fence. The engine's
 * hooks are called as the shim calls them around cuEventRecord and cuStreamWaitEvent. */
#include "check.h"
#include "engine_sim.h"

#define MiB (1ull << 20)
#define STREAM_A 0x100
#define STREAM_B 0x101
#define STREAM_C 0x102
#define EVENT 0xEE

static const uint64_t sizes[4] = {4 * MiB, 8 * MiB, 16 * MiB, 12 * MiB};

static void four_graphs(sim_t *s, sim_graph_t *g) {
    for (int i = 0; i < 4; i++) {
        sim_one_alloc_graph(s, &g[i], sizes[i], false);
        REQUIRE(sim_instantiate(s, &g[i], 0xE0 + i, 0) == GM_OK);
    }
}

/* cuEventRecord(EVENT, from) then cuStreamWaitEvent(to, EVENT), as the shim reports them. */
static void record_and_wait(sim_t *s, uint64_t from, uint64_t to) {
    gm_engine_event_record(s->engine, EVENT, from);
    gm_engine_stream_wait(s->engine, to, EVENT);
}

static void sum_adopted(const gm_exec_report_t *rep, void *arg) {
    *(uint64_t *)arg += rep->adopted;
}

static uint64_t adopted(sim_t *s) {
    uint64_t n = 0;
    gm_engine_report(s->engine, sum_adopted, &n);
    return n;
}

/* Graph i on stream A or B in turn, each launch after an event recorded behind the one before
 * (`ordered`), for `rounds` rounds; nothing finishes meanwhile. */
static void take_turns(sim_t *s, sim_graph_t *g, bool ordered, int rounds) {
    for (int round = 0; round < rounds; round++)
        for (int i = 0; i < 4; i++) {
            uint64_t stream = i % 2 ? STREAM_B : STREAM_A, other = i % 2 ? STREAM_A : STREAM_B;
            if (ordered && (round || i))
                record_and_wait(s, other, stream);
            REQUIRE(sim_launch(s, 0xE0 + i, stream) == GM_OK);
            CHECK(sim_run_data(s, &g[i], NULL));
        }
}

/* The bench's 4graphs_events: the largest graph's memory (16 MiB), where two groups would hold
 * 16 + 12; each launch on the other stream still waits for graphmem's fence. Steady rounds keep
 * it so: an adopted graph does not leave a group its stream is ordered behind. */
static void test_ordered_turns_share(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g[4];
    four_graphs(&s, g);
    take_turns(&s, g, true, 1);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_HIGH), 16 * MiB);
    CHECK_EQ_U64(adopted(&s), 2);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), 3);
    take_turns(&s, g, true, 3);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_HIGH), 16 * MiB);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), 15);
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

/* No events: the runs may overlap, so each stream keeps its own memory. */
static void test_unordered_turns_apart(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g[4];
    four_graphs(&s, g);
    take_turns(&s, g, false, 2);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_HIGH), 28 * MiB);
    CHECK_EQ_U64(adopted(&s), 0);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), 0);
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

/* An event recorded before the launch it would have to follow, one re-recorded on a stream with
 * no served launch, one destroyed, a wait by a stream whose handle was given out again, and marks
 * forgotten with a context: none orders B after graph 0's run. */
static void test_stale_marks_order_nothing(void) {
    for (int variant = 0; variant < 5; variant++) {
        sim_t s;
        REQUIRE(sim_init(&s, NULL));
        sim_graph_t g[4];
        four_graphs(&s, g);
        REQUIRE(sim_launch(&s, 0xE2, STREAM_A) == GM_OK); /* A's group holds 16 MiB */
        host_backend_complete_all(s.hb);
        if (variant == 0) /* recorded before graph 0's launch */
            gm_engine_event_record(s.engine, EVENT, STREAM_A);
        REQUIRE(sim_launch(&s, 0xE0, STREAM_A) == GM_OK);
        if (variant != 0)
            gm_engine_event_record(s.engine, EVENT, STREAM_A);
        if (variant == 1) /* re-recorded where nothing was served */
            gm_engine_event_record(s.engine, EVENT, STREAM_C);
        if (variant == 2)
            gm_engine_event_destroyed(s.engine, EVENT);
        gm_engine_stream_wait(s.engine, STREAM_B, EVENT);
        if (variant == 3) /* B goes; a new stream gets its handle */
            REQUIRE(gm_engine_stream_destroy(s.engine, STREAM_B, GM_NO_CALL) == GM_OK);
        if (variant == 4) /* a context goes: its streams' handles may come back */
            gm_engine_order_reset(s.engine);
        REQUIRE(sim_launch(&s, 0xE1, STREAM_B) == GM_OK);
        CHECK(sim_run_data(&s, &g[1], NULL));
        CHECK_EQ_U64(adopted(&s), 0);
        CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_HIGH), 24 * MiB);
        host_backend_complete_all(s.hb);
        CHECK(sim_fini(&s));
    }
}

/* Graph 0 runs on A (whose group holds 16 MiB), `order` relates B to it, then graph 1's first
 * launch on B: it takes A's group when B follows graph 0, and still waits for graphmem's fence. */
static void after_graph0(void (*order)(sim_t *s)) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g[4];
    four_graphs(&s, g);
    REQUIRE(sim_launch(&s, 0xE2, STREAM_A) == GM_OK);
    host_backend_complete_all(s.hb);
    REQUIRE(sim_launch(&s, 0xE0, STREAM_A) == GM_OK);
    order(&s);
    REQUIRE(sim_launch(&s, 0xE1, STREAM_B) == GM_OK);
    CHECK(sim_run_data(&s, &g[1], NULL));
    CHECK_EQ_U64(adopted(&s), 1);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_HIGH), 16 * MiB);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), 1);
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

static void a_to_b(sim_t *s) {
    record_and_wait(s, STREAM_A, STREAM_B);
}

/* C waits for A's event, then B for an event C records after that wait. */
static void a_to_c_to_b(sim_t *s) {
    record_and_wait(s, STREAM_A, STREAM_C);
    gm_engine_event_record(s->engine, EVENT + 1, STREAM_C);
    gm_engine_stream_wait(s->engine, STREAM_B, EVENT + 1);
}

/* The same recorded after graph 0's launch: B follows it, and graph 1 takes A's group. */
static void test_mark_after_launch_orders(void) {
    after_graph0(a_to_b);
}

/* Order is transitive: B follows graph 0 through C. */
static void test_order_is_transitive(void) {
    after_graph0(a_to_c_to_b);
}

int main(void) {
    RUN_TEST(test_ordered_turns_share);
    RUN_TEST(test_unordered_turns_apart);
    RUN_TEST(test_stale_marks_order_nothing);
    RUN_TEST(test_mark_after_launch_orders);
    RUN_TEST(test_order_is_transitive);
    return gm_check_summary();
}
