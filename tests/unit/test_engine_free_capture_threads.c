/* An async free outside graphs racing a capture that begins on its stream (core/README.md,
 * "Launch protocol": a free outside graphs asks again under the defer lock). One thread frees a
 * live allocation on S1, asking the stream's capture status as the shim does; another begins a
 * capture on S1 through a join, as cuStreamBeginCapture does, and ends it. The free's fence must
 * never be recorded on the capturing stream (the host backend counts that as misuse, which
 * sim_fini reports), and a free refused because the stream captures changes nothing. */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "engine_sim.h"

#define S0 0x50u
#define S1 0x51u
#define ROUNDS 400

typedef struct race {
    sim_t s;
    atomic_int ready, go; /* the threads meet at them every round */
} race_t;

static bool still_outside(void *arg) {
    race_t *r = arg;
    return !host_backend_capturing(r->s.hb, S1);
}

static void *begin_capture(void *arg) {
    race_t *r = arg;
    atomic_store(&r->ready, 1);
    while (!atomic_load(&r->go))
        ;
    bool fast = gm_engine_join_begin(r->s.engine, S1);
    host_backend_set_capturing(r->s.hb, S1, true); /* the driver's begin, under the join */
    gm_engine_join_end(r->s.engine, fast);
    return NULL;
}

static void test_free_races_capture_begin(void) {
    static race_t r;
    REQUIRE(sim_init(&r.s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&r.s, &g, sim_page(), true); /* escapes: live after its launch */
    REQUIRE(sim_instantiate(&r.s, &g, 0xE1, 0) == GM_OK);
    int refused = 0, freed = 0;
    for (int round = 0; round < ROUNDS; round++) {
        REQUIRE(sim_launch(&r.s, 0xE1, S0) == GM_OK);
        REQUIRE(sim_forget_live(&r.s, g.va[0]));
        atomic_store(&r.ready, 0);
        atomic_store(&r.go, 0);
        pthread_t t;
        REQUIRE(pthread_create(&t, NULL, begin_capture, &r) == 0);
        while (!atomic_load(&r.ready))
            ;
        atomic_store(&r.go, 1);
        gm_status_t st = gm_engine_free_outside_checked(r.s.engine, g.va[0], S1,
                                                        (gm_driver_call_t){still_outside, &r});
        pthread_join(t, NULL);
        host_backend_set_capturing(r.s.hb, S1, false); /* the capture ends */
        if (st == GM_ERR_DRIVER) {
            refused++;
            /* Nothing changed: still live, freed now that the stream is outside captures. */
            CHECK_EQ_INT(gm_engine_free_outside_checked(r.s.engine, g.va[0], S1,
                                                        (gm_driver_call_t){still_outside, &r}),
                         GM_OK);
        } else {
            CHECK_EQ_INT(st, GM_OK);
            freed++;
        }
        host_backend_complete_all(r.s.hb);
    }
    CHECK_EQ_INT(refused + freed, ROUNDS);
    CHECK_EQ_U64(host_backend_counts(r.s.hb).misuses, 0);
    gm_engine_exec_destroy(r.s.engine, 0xE1, GM_NO_CALL);
    sim_graph_destroy(r.s.engine, g.key);
    host_backend_complete_all(r.s.hb);
    CHECK(sim_fini(&r.s));
}

int main(void) {
    RUN_TEST(test_free_races_capture_begin);
    return gm_check_summary();
}
