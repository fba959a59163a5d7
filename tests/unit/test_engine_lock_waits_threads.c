/* Who waits for the engine's locks, and for how long (core/README.md, "Threads and locks"). */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine_internal.h"
#include "engine_sim.h"
#include "log.h"

#define S1 0x51u

/* ---- an instantiation's plan holds no lock ----------------------------------------------------
 * The plan of a large graph took the engine lock for its whole length (the 10,000-pair DAG's for
 * tens of ms on the H200 host: every capture and launch of other threads waited, where the
 * driver's instantiation let them through). It runs without the lock now. Seen from inside the
 * plan: at trace level the planner writes one message per item (gm_log, one write(2) on stderr);
 * with stderr a full pipe, that write blocks, so the instantiating thread stays inside its plan
 * until this thread reads, and meanwhile this thread looks at the lock. No timing involved. */

typedef struct planner {
    sim_t *s;
    uint64_t graph;
    gm_topology_t topo;
    gm_planned_exec_t *planned;
    gm_status_t status;
    atomic_bool done;
} planner_t;

static void *plan_once(void *arg) {
    planner_t *p = arg;
    p->status = gm_engine_instantiate_plan(p->s->engine, p->graph, &p->topo, 0, &p->planned);
    atomic_store(&p->done, true);
    return NULL;
}

/* A DAG of allocations (64 KiB to 1 MiB, items of their own), a use and a free each, every node
 * after one or two earlier ones. */
static void wide_graph(sim_t *s, sim_graph_t *g) {
    uint64_t rng = 7;
    sim_graph_init(s, g);
    while (g->node_count + 3 <= SIM_MAX_NODES) {
        uint32_t deps[2], n = 0;
        if (g->node_count) {
            deps[n++] = (uint32_t)gm_rand_range(&rng, 0, g->node_count - 1);
            deps[n++] = (uint32_t)gm_rand_range(&rng, 0, g->node_count - 1);
        }
        uint32_t a = sim_alloc(s, g, gm_rand_range(&rng, 1, 16) * 64 * 1024, deps, n);
        uint32_t use = sim_plain(s, g, &a, 1);
        gm_status_t st;
        sim_free(s, g, g->va[a], &use, 1, &st);
    }
}

/* Reads what is in the pipe now, up to `cap` bytes; appends it to `seen` (kept NUL-ended, its last
 * bytes only). */
static void read_some(int fd, char *seen, size_t seen_cap, size_t cap) {
    char buf[256];
    ssize_t n = read(fd, buf, cap < sizeof buf ? cap : sizeof buf);
    if (n <= 0)
        return;
    size_t have = strlen(seen), keep = seen_cap - 1 - (size_t)n;
    if (have > keep) {
        memmove(seen, seen + have - keep, keep);
        have = keep;
    }
    memcpy(seen + have, buf, (size_t)n);
    seen[have + (size_t)n] = '\0';
}

static void test_plan_holds_no_lock(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    wide_graph(&s, &g);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    fcntl(fds[1], F_SETPIPE_SZ, 4096);
    /* Full before the plan begins: its first message blocks until this thread reads. */
    int flags = fcntl(fds[1], F_GETFL);
    fcntl(fds[1], F_SETFL, flags | O_NONBLOCK);
    while (write(fds[1], "................", 16) == 16)
        ;
    fcntl(fds[1], F_SETFL, flags);
    fflush(stderr);
    int saved_stderr = dup(2);
    REQUIRE(saved_stderr >= 0 && dup2(fds[1], 2) == 2);
    int level = gm_log_get_level();
    gm_log_set_level(GM_LOG_TRACE);

    planner_t p = {.s = &s, .graph = g.key, .topo = sim_topology(&g)};
    atomic_init(&p.done, false);
    pthread_t t;
    bool started = pthread_create(&t, NULL, plan_once, &p) == 0;
    char seen[512] = "";
    bool inside = false, free_inside = false;
    /* Small reads: a message of the plan fits only after several, so the planner, once one of its
     * item messages is read, is blocked writing the next (or about to be). */
    while (started && !inside && !atomic_load(&p.done)) {
        read_some(fds[0], seen, sizeof seen, 32);
        if (strstr(seen, "plan: item")) {
            inside = true;
            free_inside = sim_engine_lock_free(s.engine);
        }
    }
    int rflags = fcntl(fds[0], F_GETFL);
    fcntl(fds[0], F_SETFL, rflags | O_NONBLOCK);
    while (started && !atomic_load(&p.done))
        read_some(fds[0], seen, sizeof seen, sizeof seen);
    if (started)
        pthread_join(t, NULL);
    gm_log_set_level(level);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    close(fds[0]);
    close(fds[1]);
    REQUIRE(started);
    CHECK(inside);
    CHECK(free_inside);
    CHECK_EQ_INT(p.status, GM_OK);
    if (p.status == GM_OK) {
        CHECK_EQ_INT(gm_engine_instantiate_commit(s.engine, p.planned, 0xE), GM_OK);
        /* The exec planned that way runs with every allocation's bytes its own. */
        CHECK_EQ_INT(sim_launch(&s, 0xE, S1), GM_OK);
        host_backend_complete_all(s.hb);
        CHECK(sim_run_data(&s, &g, NULL));
    }
    CHECK(sim_fini(&s));
}

/* ---- an impatient section goes before the launching loop --------------------------------------
 * A launch holds the engine lock across the driver's call, so a thread that launches in a loop
 * lets it go for a few instructions between calls. With a glibc mutex it took the lock back before
 * a woken waiter ran, and another thread's capture waited for hundreds of launches (on an H200 a
 * capture cycle's 99.9th percentile 0.32-0.48 ms beside a launching thread, the driver's
 * 0.03-0.06 ms). Now a waiter past its patience is impatient, and the thread that lets the lock go
 * stands back until the waiter has had it (core/README.md, "Patient, then first in line"). Here
 * the launching thread's driver call holds the lock until this thread's section is impatient for
 * it; then the launching thread goes on launching, and this thread's section, a launch of its own,
 * must run before the next launch's driver call (with a mutex it never did). No timing: each side
 * waits for what it needs to see (20 s at most, so that a hang fails). */

#define TURNS 10
#define LIMIT_NS 20000000000ull
#define S2 0x52u

typedef struct launcher {
    sim_t *s;
    atomic_bool stop, hold, holding;
    atomic_ulong calls; /* driver calls begun */
    atomic_int saw_impatient;
} launcher_t;

/* The driver's launch: counted; while `hold` is set, it holds the lock until a waiter for it is
 * impatient. */
static bool counted_submit(void *arg) {
    launcher_t *l = arg;
    atomic_fetch_add(&l->calls, 1);
    if (atomic_exchange(&l->hold, false)) {
        atomic_store(&l->holding, true);
        uint64_t limit = gm_now_ns() + LIMIT_NS;
        while (atomic_load(&l->s->engine->lock.impatient) == 0 && gm_now_ns() < limit)
            gm_nap(10000);
        atomic_fetch_add(&l->saw_impatient, atomic_load(&l->s->engine->lock.impatient) != 0);
        atomic_store(&l->holding, false);
    }
    host_backend_submit(l->s->hb, S1);
    return true;
}

/* Two execs by turns on S1: every launch takes the whole protocol (neither is ever armed). */
static void *launch_loop(void *arg) {
    launcher_t *l = arg;
    for (uint64_t i = 0; !atomic_load(&l->stop); i++)
        if (gm_engine_launch(l->s->engine, i & 1 ? 0xA : 0xB, S1, false,
                             (gm_driver_call_t){counted_submit, l}) != GM_OK)
            break;
    return NULL;
}

typedef struct seen {
    launcher_t *l;
    unsigned long calls;
} seen_t;

/* This thread's driver call: how many of the launching thread's had begun by then. */
static bool note_calls(void *arg) {
    seen_t *seen = arg;
    seen->calls = atomic_load(&seen->l->calls);
    host_backend_submit(seen->l->s->hb, S2);
    return true;
}

static void test_impatient_section_goes_first(void) {
    sim_t s;
    sim_graph_t a, b, c;
    REQUIRE(sim_init_two_execs(&s, &a, &b));
    sim_one_alloc_graph(&s, &c, 1ull << 20, false);
    REQUIRE(sim_instantiate(&s, &c, 0xC, 0) == GM_OK);
    launcher_t l = {.s = &s};
    atomic_init(&l.stop, false);
    atomic_init(&l.hold, false);
    atomic_init(&l.holding, false);
    atomic_init(&l.calls, 0);
    atomic_init(&l.saw_impatient, 0);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, launch_loop, &l) == 0);
    int first = 0;
    for (int turn = 0; turn < TURNS; turn++) {
        atomic_store(&l.hold, true);
        uint64_t limit = gm_now_ns() + LIMIT_NS;
        while (!atomic_load(&l.holding) && gm_now_ns() < limit)
            gm_nap(1000);
        /* The held call is counted; a launch that went before this section would count one more. */
        seen_t seen = {.l = &l};
        unsigned long held = atomic_load(&l.calls);
        CHECK_EQ_INT(
            gm_engine_launch(s.engine, 0xC, S2, false, (gm_driver_call_t){note_calls, &seen}),
            GM_OK);
        first += seen.calls == held;
    }
    atomic_store(&l.stop, true);
    pthread_join(t, NULL);
    printf("this thread's section impatient %d times of %d, before the next launch %d times\n",
           atomic_load(&l.saw_impatient), TURNS, first);
    CHECK(atomic_load(&l.saw_impatient) == TURNS);
    CHECK(first == TURNS);
    host_backend_complete_all(s.hb);
    CHECK(sim_run_data(&s, &a, NULL));
    CHECK(sim_run_data(&s, &b, NULL));
    CHECK(sim_run_data(&s, &c, NULL));
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_plan_holds_no_lock);
    RUN_TEST(test_impatient_section_goes_first);
    return gm_check_summary();
}
