/* Who waits for the engine's locks, and for how long (core/README.md, "Threads and locks").
 *
 * Turns: a launch holds the engine lock and the defer lock across the driver's call, so a thread
 * that launches in a loop lets them go for a few instructions between calls. With locks that let
 * a running thread take them again before a sleeping waiter wakes (glibc's mutexes), another
 * thread's capture step (a marker, a join) waited for hundreds of such launches: on an H200, a
 * thread capturing one alloc + free graph after another beside a thread launching two graphs by
 * turns made 2,500-6,800 captures in 300 ms against the driver's 17,000-27,000, with 0.3-1.2 ms
 * at the 99.9th percentile (bench/RESULTS.md). The locks are taken in turn: a waiter goes before
 * every thread that asks after it. Seen here as the number of launches that complete while one
 * call of another thread waits for the lock, each launch's driver call taking 20 us. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "check.h"
#include "engine_internal.h"
#include "engine_sim.h"

#define MiB (1ull << 20)
#define S1 0x51u
#define S2 0x52u
#define ROUNDS 40

/* At most this many launches can complete while one call waits its turn: the launch holding the
 * lock, one that asked before the waiter, and the next, which may finish before the waiter reads
 * the count again. */
#define LAUNCHES_PER_TURN 3

typedef struct launcher {
    sim_t *s;
    atomic_bool stop;
    atomic_ulong launches;
} launcher_t;

static void spin_us(long us) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* The driver's launch: 20 us (a slow call; on the GPU 2-3 us, the waiter's wake-up longer). */
static bool slow_submit(void *arg) {
    launcher_t *l = arg;
    spin_us(20);
    host_backend_submit(l->s->hb, S1);
    atomic_fetch_add(&l->launches, 1);
    return true;
}

/* Two execs by turns on S1: every launch takes the whole protocol (neither is ever armed). */
static void *launch_loop(void *arg) {
    launcher_t *l = arg;
    for (uint64_t i = 0; !atomic_load(&l->stop); i++)
        if (gm_engine_launch(l->s->engine, i & 1 ? 0xA : 0xB, S1, false,
                             (gm_driver_call_t){slow_submit, l}) != GM_OK)
            break;
    return NULL;
}

static void wait_for_launches(launcher_t *l, unsigned long n) {
    while (atomic_load(&l->launches) < n)
        spin_us(10);
}

static void test_waiters_take_turns(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a, b;
    sim_one_alloc_graph(&s, &a, 1 * MiB, false);
    sim_one_alloc_graph(&s, &b, 1 * MiB, false);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &b, 0xB, 0) == GM_OK);
    launcher_t l = {.s = &s};
    atomic_init(&l.stop, false);
    atomic_init(&l.launches, 0);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, launch_loop, &l) == 0);
    wait_for_launches(&l, 10);
    unsigned long most_section = 0, most_join = 0;
    for (int round = 0; round < ROUNDS; round++) {
        /* A section of the engine lock (a read of an attribute, as a marker's would be). */
        unsigned long before = atomic_load(&l.launches);
        uint64_t value = 0;
        CHECK_EQ_INT(gm_engine_attr_get(s.engine, 0, GM_ATTR_RESERVED_CURRENT, &value), GM_OK);
        unsigned long during = atomic_load(&l.launches) - before;
        most_section = during > most_section ? during : most_section;
        /* A join of another stream (a capture beginning): S1's deferred fence is listed, so it
         * takes the defer lock. */
        before = atomic_load(&l.launches);
        bool fast = gm_engine_join_begin(s.engine, S2);
        gm_engine_join_end(s.engine, fast);
        during = atomic_load(&l.launches) - before;
        most_join = during > most_join ? during : most_join;
        CHECK(!fast);
        wait_for_launches(&l, atomic_load(&l.launches) + 2);
    }
    atomic_store(&l.stop, true);
    pthread_join(t, NULL);
    printf("most launches during one wait: %lu (engine lock), %lu (defer lock), of %lu\n",
           most_section, most_join, (unsigned long)atomic_load(&l.launches));
    CHECK(most_section <= LAUNCHES_PER_TURN);
    CHECK(most_join <= LAUNCHES_PER_TURN);
    host_backend_complete_all(s.hb);
    CHECK(sim_run_data(&s, &a, NULL));
    CHECK(sim_run_data(&s, &b, NULL));
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_waiters_take_turns);
    return gm_check_summary();
}
