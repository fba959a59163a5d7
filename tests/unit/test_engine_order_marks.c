/* Event order's bookkeeping (engine_order.c) at its own level, gm_order_served and
 * gm_order_after: which marks a stream keeps when its list of 64 is full (the one waited for least
 * recently goes; the mark a wait names directly stays), that a stream that never launched
 * passes order on without taking a place, and how far an event carries order (its stream's own
 * mark and the 8 most recent it follows). */
#include "check.h"
#include "engine_order.h"
#include "engine_sim.h"

#define A 0x100
#define B 0x101
#define RELAY 0x300
#define X(i) (0x200 + (uint64_t)(i))
#define EVENT(i) (0x600 + (uint64_t)(i))

/* Stream x serves a launch, records an event after it, and `who` waits for that event. */
static gm_order_mark_t follow(gm_engine_t *e, uint64_t who, uint64_t x, uint64_t event) {
    gm_order_mark_t mark = gm_order_served(e, x);
    gm_engine_event_record(e, event, x);
    gm_engine_stream_wait(e, who, event);
    return mark;
}

/* `who` follows streams X(0) .. X(n - 1), each after one served launch: their marks in x. */
static void follow_many(gm_engine_t *e, uint64_t who, int n, gm_order_mark_t *x) {
    for (int i = 0; i < n; i++)
        x[i] = follow(e, who, X(i), EVENT(i));
}

/* A follows 64 streams; B waits for A's event recorded after A's own launch: B follows that
 * launch (the event's own mark is the last B takes), and the 8 most recent of A's. */
static void test_direct_mark_stays(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    gm_engine_t *e = s.engine;
    gm_order_mark_t x[64];
    follow_many(e, A, 64, x);
    gm_order_mark_t a = follow(e, B, A, 0x500);
    CHECK(gm_order_after(e, B, a));
    CHECK(gm_order_after(e, B, x[63]));
    CHECK(gm_order_after(e, B, x[56]));
    CHECK(!gm_order_after(e, B, x[55])); /* beyond what an event carries */
    CHECK(gm_order_after(e, A, x[0]));
    CHECK(sim_fini(&s));
}

/* B follows A first, then 63 other streams, then A's newer launch (A's entry is now B's latest
 * wait), then one more stream: the least recent of the others goes, not A. */
static void test_refreshed_mark_kept(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    gm_engine_t *e = s.engine;
    follow(e, B, A, 0x500);
    gm_order_mark_t x[63];
    follow_many(e, B, 63, x);
    gm_order_mark_t a2 = follow(e, B, A, 0x500);
    follow(e, B, 0x1FF, 0x700);
    CHECK(gm_order_after(e, B, a2));
    CHECK(!gm_order_after(e, B, x[0]));
    CHECK(gm_order_after(e, B, x[1]));
    CHECK(sim_fini(&s));
}

/* B follows 63 streams; a relay that never launched waits for A's launch and B waits for the
 * relay's event: B follows A, and the relay's own mark, which orders nothing, takes no place. */
static void test_relay_takes_no_place(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    gm_engine_t *e = s.engine;
    gm_order_mark_t x[63];
    follow_many(e, B, 63, x);
    gm_order_mark_t a = follow(e, RELAY, A, 0x500);
    gm_engine_event_record(e, 0x501, RELAY);
    gm_engine_stream_wait(e, B, 0x501);
    CHECK(gm_order_after(e, B, a));
    CHECK(gm_order_after(e, B, x[0])); /* 64 places: 63 streams and A */
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_direct_mark_stays);
    RUN_TEST(test_refreshed_mark_kept);
    RUN_TEST(test_relay_takes_no_place);
    return gm_check_summary();
}
