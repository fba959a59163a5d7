/* Deferred fences (core/README.md, "Deferred fences"): a served launch records no fence; the proof
 * that its work finished is taken when something first needs it (a trim, a launch on another
 * stream sharing the memory, a stream going away or joining a capture), from an idle stream
 * without an event, otherwise from an event recorded then; never on a stream while it captures. */
#include <pthread.h>

#include "check.h"
#include "engine_internal.h"
#include "engine_sim.h"

#define MiB (1ull << 20)
#define S1 0x51u
#define S2 0x52u

/* Two graphs of one 1 MiB allocation each, launched on S1: they share one group's memory. */
static void two_execs(sim_t *s, sim_graph_t *a, sim_graph_t *b) {
    REQUIRE(sim_init(s, NULL));
    sim_one_alloc_graph(s, a, 1 * MiB, false);
    sim_one_alloc_graph(s, b, 1 * MiB, false);
    REQUIRE(sim_instantiate(s, a, 0xA, 0) == GM_OK);
    REQUIRE(sim_instantiate(s, b, 0xB, 0) == GM_OK);
    REQUIRE(sim_launch(s, 0xA, S1) == GM_OK);
    REQUIRE(sim_launch(s, 0xB, S1) == GM_OK);
}

/* Launches on one stream cost no backend call; a trim realizes the stream's one deferred fence:
 * while the work runs, with an event (memory kept), once it is done, from the idle stream. */
static void test_trim_realizes(void) {
    sim_t s;
    sim_graph_t a, b;
    two_execs(&s, &a, &b);
    host_backend_reset_calls(s.hb);
    for (int i = 0; i < 10; i++)
        CHECK_EQ_INT(sim_launch(&s, i % 2 ? 0xA : 0xB, S1), GM_OK);
    CHECK_EQ_U64(host_backend_total_calls(s.hb), 0);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_STREAM_IDLE), 1);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_FENCE_RECORD), 1);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 1 * MiB);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    /* Launched again and finished: the idle stream is the proof, no event. */
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    host_backend_complete_all(s.hb);
    host_backend_reset_calls(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_FENCE_RECORD), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK(sim_fini(&s));
}

/* An exec sharing the group's memory launched on another stream waits there for the deferred
 * fence of the group's latest user, realized then; its data stays intact. */
static void test_other_stream_waits(void) {
    sim_t s;
    sim_graph_t a, b;
    two_execs(&s, &a, &b);
    uint64_t waits = host_backend_stream_waits(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xA, S2), GM_OK);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 1);
    CHECK(sim_run_data(&s, &a, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

/* A stream that joins a capture has its deferred fence realized first; while it captures, a trim
 * touches it no more (the host backend counts any touch as misuse, which sim_fini reports). */
static void test_join_realizes(void) {
    sim_t s;
    sim_graph_t a, b;
    two_execs(&s, &a, &b);
    host_backend_reset_calls(s.hb);
    bool fast = gm_engine_join_begin(s.engine, S1);
    CHECK(!fast); /* a fence is deferred: the join takes the lock */
    host_backend_set_capturing(s.hb, S1, true);
    gm_engine_join_end(s.engine, fast);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_FENCE_RECORD), 1);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 1 * MiB);
    /* The capture refuses a launch: nothing deferred, nothing changed. */
    s.fail_submits = 1;
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_ERR_DRIVER);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    host_backend_set_capturing(s.hb, S1, false);
    /* With nothing deferred a join costs no lock. */
    fast = gm_engine_join_begin(s.engine, S2);
    CHECK(fast);
    gm_engine_join_end(s.engine, fast);
    CHECK(sim_fini(&s));
}

/* A context going away (GM_NO_STREAM) realizes every stream's deferred fence. */
static void test_join_every_stream(void) {
    sim_t s;
    sim_graph_t a, b;
    two_execs(&s, &a, &b);
    sim_graph_t c;
    sim_one_alloc_graph(&s, &c, 1 * MiB, false);
    REQUIRE(sim_instantiate(&s, &c, 0xC, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xC, S2), GM_OK); /* another group: S1's fence stays deferred */
    host_backend_complete_all(s.hb);
    host_backend_reset_calls(s.hb);
    gm_engine_join_end(s.engine, gm_engine_join_begin(s.engine, GM_NO_STREAM));
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_STREAM_IDLE), 2);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_FENCE_RECORD), 0);
    host_backend_reset_calls(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK); /* proven idle: no further backend query */
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_STREAM_IDLE), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK(sim_fini(&s));
}

/* A stream that the backend can no longer reach went away with its context: its deferred fence
 * counts as done. A failed fence record after a launch leaves the stream synchronized instead. */
static void test_unreachable_stream(void) {
    sim_t s;
    sim_graph_t a, b;
    two_execs(&s, &a, &b);
    host_backend_complete_all(s.hb);
    host_backend_fail_nth(s.hb, HOST_OP_STREAM_IDLE, 1, GM_ERR_BACKEND);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    host_backend_set_deferral(s.hb, false);
    host_backend_fail_nth(s.hb, HOST_OP_FENCE_RECORD, 1, GM_ERR_BACKEND);
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_STREAM_SYNC), 1);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK(sim_fini(&s));
}

/* The launch fast path (a relaunch on the same stream with nothing changed) makes no backend call,
 * and anything that changed in between sends the next launch through the whole protocol: a trim
 * that unmapped the memory (the launch maps it again), a join that realized the deferred fence
 * (the launch defers a new one, which a trim must respect), a relaunch with an unfreed allocation
 * (refused, as without the fast path). */
static void test_fast_path(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a, esc;
    sim_one_alloc_graph(&s, &a, 1 * MiB, false);
    sim_one_alloc_graph(&s, &esc, 1 * MiB, true);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &esc, 0xE, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    host_backend_reset_calls(s.hb);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    CHECK_EQ_U64(host_backend_total_calls(s.hb), 0);
    CHECK(sim_run_data(&s, &a, NULL));
    /* A trim once the runs finished unmaps; the next launch maps again. */
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 1 * MiB);
    CHECK(sim_run_data(&s, &a, NULL));
    /* A join realizes the deferred fence (the run is done: no event); the relaunch defers a new
     * one, and a trim while that run is pending keeps the memory. */
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    host_backend_complete_all(s.hb);
    gm_engine_join_end(s.engine, gm_engine_join_begin(s.engine, S1));
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 1 * MiB);
    /* Another exec of the group launched in between: the next launch of `a` must make it the
     * group's latest user again, or `b` on another stream would not wait for it. */
    sim_graph_t b;
    sim_one_alloc_graph(&s, &b, 1 * MiB, false);
    REQUIRE(sim_instantiate(&s, &b, 0xB, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xB, S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    uint64_t waits = host_backend_stream_waits(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xB, S2), GM_OK);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 1);
    host_backend_complete_all(s.hb);
    /* An exec whose allocation escapes is never relaunched before the free (§A6.1). */
    CHECK_EQ_INT(sim_launch(&s, 0xE, S1), GM_OK);
    CHECK(sim_run_data(&s, &esc, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0xE, S1), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(sim_launch(&s, 0xE, S1), GM_ERR_INVALID_VALUE);
    host_backend_complete_all(s.hb);
    CHECK(sim_forget_live(&s, esc.va[0]));
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, esc.va[0], GM_NO_STREAM), GM_OK);
    CHECK(sim_fini(&s));
}

/* A busy stream whose deferred fence gets no event (no memory for one) proves nothing, and
 * nothing waits for it on the host under the engine lock: the fence stays deferred. A trim keeps
 * the memory; a launch that must wait for it on another stream is refused and changes nothing,
 * and goes through once an event can be recorded; a join on the stream itself (the call hands it
 * over, about to capture) waits for it on the host, since a capturing stream's fence could never
 * be realized. */
static void test_failed_record_trim(void) {
    sim_t s;
    sim_graph_t a, b;
    two_execs(&s, &a, &b); /* A then B queued on S1, a deferred fence */
    host_backend_fail_nth(s.hb, HOST_OP_FENCE_RECORD, 1, GM_ERR_OUT_OF_MEMORY);
    host_backend_reset_calls(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_STREAM_SYNC), 0);
    CHECK_EQ_U64(host_backend_completed(s.hb, S1), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 1 * MiB); /* kept: still running */
    CHECK(host_backend_handle_at(s.hb, a.va[0], NULL) != 0);
    /* An event now: the next trim realizes the fence and, once the work is done, gives back. */
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_FENCE_RECORD), 2);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK(sim_fini(&s));
}

static void test_failed_record_peer(void) {
    sim_t s;
    sim_graph_t a, b;
    two_execs(&s, &a, &b);
    host_backend_fail_nth(s.hb, HOST_OP_FENCE_RECORD, 1, GM_ERR_OUT_OF_MEMORY);
    host_backend_reset_calls(s.hb);
    uint64_t waits = host_backend_stream_waits(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xA, S2), GM_ERR_OUT_OF_MEMORY);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_STREAM_SYNC), 0);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_FENCE_WAIT_HOST), 0);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits);
    CHECK_EQ_U64(host_backend_completed(s.hb, S1), 0);
    /* Refused, nothing changed; with an event this time, S2 waits for S1's work. */
    CHECK_EQ_INT(sim_launch(&s, 0xA, S2), GM_OK);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 1);
    CHECK(sim_run_data(&s, &a, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

static void test_failed_record_join(void) {
    sim_t s;
    sim_graph_t a, b;
    two_execs(&s, &a, &b);
    host_backend_fail_nth(s.hb, HOST_OP_FENCE_RECORD, 1, GM_ERR_OUT_OF_MEMORY);
    host_backend_reset_calls(s.hb);
    bool fast = gm_engine_join_begin(s.engine, S1);
    CHECK(!fast);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_STREAM_SYNC), 1);
    CHECK_EQ_U64(host_backend_completed(s.hb, S1), 2); /* waited for: the fence is done */
    host_backend_set_capturing(s.hb, S1, true);
    gm_engine_join_end(s.engine, fast);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK); /* touches the capturing stream no more */
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    host_backend_set_capturing(s.hb, S1, false);
    CHECK(sim_fini(&s));
}

/* The backend's host wait for a stream, noting whether the engine lock was held meanwhile. */
static gm_engine_t *probed;
static gm_status_t (*real_sync)(void *, uint64_t);
static int syncs_under_engine_lock;

static gm_status_t sync_probe(void *ctx, uint64_t stream) {
    syncs_under_engine_lock += !sim_engine_lock_free(probed);
    return real_sync(ctx, stream);
}

static bool destroyed(void *arg) {
    (void)arg;
    return true;
}

/* A stream destroyed while its busy stream's fence gets no event: its join waits for it on the
 * host, before the engine lock is taken (it did under the lock, stalling every launch). */
static void test_failed_record_stream_destroy(void) {
    sim_t s;
    sim_graph_t a, b;
    two_execs(&s, &a, &b);
    probed = s.engine;
    real_sync = s.engine->backend.stream_sync;
    s.engine->backend.stream_sync = sync_probe;
    syncs_under_engine_lock = 0;
    host_backend_fail_nth(s.hb, HOST_OP_FENCE_RECORD, 1, GM_ERR_OUT_OF_MEMORY);
    host_backend_reset_calls(s.hb);
    CHECK_EQ_INT(gm_engine_stream_destroy(s.engine, S1, (gm_driver_call_t){destroyed, NULL}),
                 GM_OK);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_STREAM_SYNC), 1);
    CHECK_EQ_INT(syncs_under_engine_lock, 0);
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_trim_realizes);
    RUN_TEST(test_other_stream_waits);
    RUN_TEST(test_join_realizes);
    RUN_TEST(test_join_every_stream);
    RUN_TEST(test_unreachable_stream);
    RUN_TEST(test_fast_path);
    RUN_TEST(test_failed_record_trim);
    RUN_TEST(test_failed_record_peer);
    RUN_TEST(test_failed_record_join);
    RUN_TEST(test_failed_record_stream_destroy);
    return gm_check_summary();
}
