/* The launch fast path (core/README.md, "Launch protocol"): a relaunch on the stream of the exec's
 * last launch, with nothing changed since, makes its driver call holding no mutex, only while no
 * section of the engine lock is in progress and no holder of the defer lock (a join realizing a
 * fence) is inside its own. Seen from the driver's call: whether the engine lock was held around
 * it, and whether a relaunch on another thread got its call made while a section or a join was
 * inside its own. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "engine_internal.h"
#include "engine_sim.h"

#define MiB (1ull << 20)
#define S1 0x51u
#define S2 0x52u

typedef struct seen_call {
    sim_t *s;
    uint64_t stream;
    bool under_engine_lock;
} seen_call_t;

/* The driver's launch, noting whether the engine lock is held (by this thread: no other runs). */
static bool seen_submit(void *arg) {
    seen_call_t *c = arg;
    c->under_engine_lock = !sim_engine_lock_free(c->s->engine);
    host_backend_submit(c->s->hb, c->stream);
    return true;
}

/* Launches exec on stream; whether the driver's call ran without the engine lock (the fast path).
 */
static bool launched_fast(sim_t *s, uint64_t exec, uint64_t stream) {
    seen_call_t c = {s, stream, true};
    CHECK_EQ_INT(
        gm_engine_launch(s->engine, exec, stream, false, (gm_driver_call_t){seen_submit, &c}),
        GM_OK);
    return !c.under_engine_lock;
}

/* Exec 0xA of graph `a` (one 1 MiB allocation) launched twice on S1: armed, its next relaunch
 * there takes the fast path. With `b`, a second graph instantiated as exec 0xB. */
static void armed_exec(sim_t *s, sim_graph_t *a, sim_graph_t *b) {
    REQUIRE(sim_init(s, NULL));
    sim_one_alloc_graph(s, a, 1 * MiB, false);
    REQUIRE(sim_instantiate(s, a, 0xA, 0) == GM_OK);
    if (b) {
        sim_one_alloc_graph(s, b, 1 * MiB, false);
        REQUIRE(sim_instantiate(s, b, 0xB, 0) == GM_OK);
    }
    REQUIRE(sim_launch(s, 0xA, S1) == GM_OK);
    REQUIRE(sim_launch(s, 0xA, S1) == GM_OK);
}

/* The runs finish; A's data is checked; the engine ends with nothing left. */
static void finish(sim_t *s, const sim_graph_t *a) {
    host_backend_complete_all(s->hb);
    CHECK(sim_run_data(s, a, NULL));
    CHECK(sim_fini(s));
}

/* With `lock` held: waits at most `ms` for *flag (set under `lock`, `changed` broadcast); its
 * value then. */
static bool flag_within(pthread_cond_t *changed, pthread_mutex_t *lock, const bool *flag, long ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += ms * 1000 * 1000;
    until.tv_sec += until.tv_nsec / 1000000000;
    until.tv_nsec %= 1000000000;
    while (!*flag && pthread_cond_timedwait(changed, lock, &until) == 0)
        ;
    return *flag;
}

/* Which launches take the fast path: from the third launch in a row of an exec on one stream
 * (the second arms it), after nothing or after a section that changed nothing; not the first
 * after a change, a stream change or an upload, and never while execs or streams alternate. */
static void test_which_launches_are_fast(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a;
    sim_one_alloc_graph(&s, &a, 1 * MiB, false);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    CHECK(!launched_fast(&s, 0xA, S1));
    CHECK(!launched_fast(&s, 0xA, S1)); /* armed from the second launch in a row */
    CHECK(launched_fast(&s, 0xA, S1));
    /* A read of counters changes nothing: the path stays open. */
    uint64_t reserved = 0;
    CHECK_EQ_INT(gm_engine_attr_get(s.engine, 0, GM_ATTR_RESERVED_CURRENT, &reserved), GM_OK);
    CHECK_EQ_U64(reserved, 1 * MiB);
    CHECK(launched_fast(&s, 0xA, S1));
    /* A trim is a change: one launch through the whole protocol, then fast again. */
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK(!launched_fast(&s, 0xA, S1));
    CHECK(launched_fast(&s, 0xA, S1));
    /* Another stream: the protocol orders it after S1, then it is the steady stream. */
    CHECK(!launched_fast(&s, 0xA, S2));
    CHECK(!launched_fast(&s, 0xA, S2));
    CHECK(launched_fast(&s, 0xA, S2));
    /* Alternating streams, or execs, never arm: each launch goes through the protocol. */
    sim_graph_t b;
    sim_one_alloc_graph(&s, &b, 1 * MiB, false);
    REQUIRE(sim_instantiate(&s, &b, 0xB, 0) == GM_OK);
    for (int i = 0; i < 3; i++) {
        CHECK(!launched_fast(&s, 0xA, S1));
        CHECK(!launched_fast(&s, 0xA, S2));
    }
    for (int i = 0; i < 3; i++) {
        CHECK(!launched_fast(&s, 0xA, S1));
        CHECK(!launched_fast(&s, 0xB, S1));
    }
    CHECK_EQ_INT(sim_upload(&s, 0xA, S1), GM_OK);
    CHECK(!launched_fast(&s, 0xA, S1));
    CHECK(!launched_fast(&s, 0xA, S1));
    CHECK(launched_fast(&s, 0xA, S1));
    /* Every launch counted, fast ones included. */
    CHECK_EQ_U64(sim_report_of(&s, 0xA).launches, 21);
    CHECK_EQ_U64(sim_report_of(&s, 0xA).uploads, 1);
    finish(&s, &a);
}

/* The driver's launch that fails (a launch into a capturing stream, say): nothing submitted. */
static bool failed_submit(void *arg) {
    (void)arg;
    return false;
}

/* gm_engine_relaunch, the fast path alone (what the launch hook tries first, before asking
 * whether the engine serves the exec): it calls the driver only for the armed exec on its stream
 * with nothing changed since, and says so; every other case is left to gm_engine_launch, with no
 * call made. A failed call changes nothing, not even the count. */
static void test_relaunch_alone(void) {
    sim_t s;
    sim_graph_t a, b;
    armed_exec(&s, &a, &b);
    seen_call_t c = {&s, S1, true};
    gm_driver_call_t call = {seen_submit, &c};
    gm_status_t st = GM_ERR_BACKEND;
    CHECK(!gm_engine_relaunch(s.engine, 0xA, S2, call, &st)); /* another stream */
    CHECK(!gm_engine_relaunch(s.engine, 0xB, S1, call, &st)); /* not the armed exec */
    CHECK(!gm_engine_relaunch(s.engine, 0xC, S1, call, &st)); /* not an exec at all */
    CHECK(!gm_engine_relaunch(s.engine, 0, S1, call, &st));
    CHECK(c.under_engine_lock && st == GM_ERR_BACKEND); /* no call made */
    CHECK(gm_engine_relaunch(s.engine, 0xA, S1, call, &st));
    CHECK(st == GM_OK && !c.under_engine_lock);
    CHECK(gm_engine_relaunch(s.engine, 0xA, S1, (gm_driver_call_t){failed_submit, NULL}, &st));
    CHECK(st == GM_ERR_DRIVER);
    CHECK_EQ_U64(sim_report_of(&s, 0xA).launches, 3);
    c.under_engine_lock = true;
    CHECK(gm_engine_relaunch(s.engine, 0xA, S1, call, &st)); /* still armed */
    CHECK(st == GM_OK && !c.under_engine_lock);
    CHECK_EQ_U64(sim_report_of(&s, 0xA).launches, 4);
    /* Another exec's launch changes the engine: no relaunch of A until it is armed again. */
    REQUIRE(sim_launch(&s, 0xB, S1) == GM_OK);
    CHECK(!gm_engine_relaunch(s.engine, 0xA, S1, call, &st));
    CHECK(!gm_engine_relaunch(s.engine, 0xB, S1, call, &st)); /* B's first launch in a row */
    REQUIRE(sim_launch(&s, 0xB, S1) == GM_OK);
    CHECK(gm_engine_relaunch(s.engine, 0xB, S1, call, &st));
    /* B destroyed while armed: its handle is disarmed, and an exec made under it again is not
     * relaunched before it is armed in its own right. */
    CHECK_EQ_INT(gm_engine_exec_destroy(s.engine, 0xB, GM_NO_CALL), GM_OK);
    CHECK(!gm_engine_armed(s.engine, 0xB));
    CHECK(!gm_engine_relaunch(s.engine, 0xB, S1, call, &st));
    REQUIRE(sim_instantiate(&s, &b, 0xB, 0) == GM_OK);
    CHECK(!gm_engine_relaunch(s.engine, 0xB, S1, call, &st));
    REQUIRE(sim_launch(&s, 0xB, S1) == GM_OK);
    CHECK(!gm_engine_relaunch(s.engine, 0xB, S1, call, &st));
    REQUIRE(sim_launch(&s, 0xB, S1) == GM_OK);
    CHECK(gm_engine_armed(s.engine, 0xB) && gm_engine_relaunch(s.engine, 0xB, S1, call, &st));
    host_backend_complete_all(s.hb);
    CHECK(sim_run_data(&s, &a, NULL));
    CHECK(sim_fini(&s));
}

/* ---- a section in progress on one thread, a relaunch on another ------------------------------ */

typedef struct relauncher {
    sim_t *s;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool go, done;
    gm_status_t status;
} relauncher_t;

static void *relaunch(void *arg) {
    relauncher_t *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->go)
        pthread_cond_wait(&r->changed, &r->lock);
    pthread_mutex_unlock(&r->lock);
    gm_status_t st = sim_launch(r->s, 0xA, S1);
    pthread_mutex_lock(&r->lock);
    r->status = st;
    r->done = true;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

typedef struct inside {
    relauncher_t *r;
    bool relaunched_meanwhile;
} inside_t;

/* The section's driver call: lets the relaunch go, gives it 200 ms to finish, notes whether it
 * did. It must not: the relaunch waits for the section's end. */
static bool inside_section(void *arg) {
    inside_t *in = arg;
    relauncher_t *r = in->r;
    pthread_mutex_lock(&r->lock);
    r->go = true;
    pthread_cond_broadcast(&r->changed);
    in->relaunched_meanwhile = flag_within(&r->changed, &r->lock, &r->done, 200);
    pthread_mutex_unlock(&r->lock);
    return true;
}

typedef enum section_kind { CALL_LOCKED, EXEC_DESTROY } section_kind_t;

/* Exec 0xA armed on S1, then a section whose driver call runs while another thread relaunches
 * 0xA there: a context's destruction (gm_engine_call_locked), or another exec's destruction. */
static void run_section_against_relaunch(section_kind_t kind) {
    sim_t s;
    sim_graph_t a, b;
    armed_exec(&s, &a, &b);
    CHECK(launched_fast(&s, 0xA, S1)); /* armed: the relaunch below would take the fast path */
    relauncher_t r = {.s = &s, .status = GM_ERR_BACKEND};
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.changed, NULL);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, relaunch, &r) == 0);
    inside_t in = {&r, true};
    gm_driver_call_t call = {inside_section, &in};
    if (kind == CALL_LOCKED)
        CHECK(gm_engine_call_locked(s.engine, call));
    else
        CHECK_EQ_INT(gm_engine_exec_destroy(s.engine, 0xB, call), GM_OK);
    CHECK(!in.relaunched_meanwhile);
    pthread_join(t, NULL);
    CHECK(r.done);
    CHECK_EQ_INT(r.status, GM_OK);
    pthread_cond_destroy(&r.changed);
    pthread_mutex_destroy(&r.lock);
    finish(&s, &a);
}

static void test_section_holds_off_relaunch(void) {
    run_section_against_relaunch(CALL_LOCKED);
    run_section_against_relaunch(EXEC_DESTROY);
}

/* ---- a join realizing the stream's fence, a relaunch on another thread ----------------------- */

static relauncher_t *recording_for;
static gm_status_t (*real_record)(void *, uint64_t, uint64_t *);

/* The backend's record of the event that realizes S1's deferred fence: a relaunch of A on S1 that
 * got its driver call made now would come after the event that is to prove it done. */
static gm_status_t record_probe(void *ctx, uint64_t stream, uint64_t *fence_out) {
    if (recording_for && stream == S1) {
        inside_t in = {recording_for, true};
        inside_section(&in);
        CHECK(!in.relaunched_meanwhile);
        recording_for = NULL;
    }
    return real_record(ctx, stream, fence_out);
}

/* A join on S1 (a capture about to begin there) realizes its deferred fence while A's runs are
 * pending: the event is recorded with the fast path held off, and the relaunch waits for the
 * join's end (then it goes through the protocol: the fence it was armed with is realized). */
static void test_realize_holds_off_relaunch(void) {
    sim_t s;
    sim_graph_t a;
    armed_exec(&s, &a, NULL);
    CHECK(launched_fast(&s, 0xA, S1));
    relauncher_t r = {.s = &s, .status = GM_ERR_BACKEND};
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.changed, NULL);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, relaunch, &r) == 0);
    real_record = s.engine->backend.fence_record;
    s.engine->backend.fence_record = record_probe;
    recording_for = &r;
    bool fast = gm_engine_join_begin(s.engine, S1);
    CHECK(!fast);
    CHECK(recording_for == NULL); /* the probe ran: the stream was busy, an event was recorded */
    gm_engine_join_end(s.engine, fast);
    pthread_join(t, NULL);
    CHECK(r.done);
    CHECK_EQ_INT(r.status, GM_OK);
    s.engine->backend.fence_record = real_record;
    pthread_cond_destroy(&r.changed);
    pthread_mutex_destroy(&r.lock);
    finish(&s, &a);
}

/* ---- a relaunch in flight, a join on another thread ----------------------------------------- */

typedef struct held_call {
    sim_t *s;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool in_call, release, join_done;
    gm_status_t status;
} held_call_t;

/* The relaunch's driver call: says it is in, waits to be let go, then submits. */
static bool held_submit(void *arg) {
    held_call_t *h = arg;
    pthread_mutex_lock(&h->lock);
    h->in_call = true;
    pthread_cond_broadcast(&h->changed);
    while (!h->release)
        pthread_cond_wait(&h->changed, &h->lock);
    pthread_mutex_unlock(&h->lock);
    host_backend_submit(h->s->hb, S1);
    return true;
}

static void *relaunch_held(void *arg) {
    held_call_t *h = arg;
    h->status = gm_engine_launch(h->s->engine, 0xA, S1, false, (gm_driver_call_t){held_submit, h});
    return NULL;
}

static void *join_s1(void *arg) {
    held_call_t *h = arg;
    gm_engine_join_end(h->s->engine, gm_engine_join_begin(h->s->engine, S1));
    pthread_mutex_lock(&h->lock);
    h->join_done = true;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* A fast relaunch whose driver call has not returned yet: a join on its stream (which realizes the
 * fence the relaunch counts on) waits for the call, as it would for the defer lock. */
static void test_relaunch_in_flight_holds_off_join(void) {
    sim_t s;
    sim_graph_t a;
    armed_exec(&s, &a, NULL);
    CHECK(launched_fast(&s, 0xA, S1));
    held_call_t h = {.s = &s, .status = GM_ERR_BACKEND};
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.changed, NULL);
    pthread_t launcher, joiner;
    REQUIRE(pthread_create(&launcher, NULL, relaunch_held, &h) == 0);
    pthread_mutex_lock(&h.lock);
    while (!h.in_call)
        pthread_cond_wait(&h.changed, &h.lock);
    pthread_mutex_unlock(&h.lock);
    CHECK(sim_engine_lock_free(s.engine)); /* the relaunch holds no engine lock */
    REQUIRE(pthread_create(&joiner, NULL, join_s1, &h) == 0);
    pthread_mutex_lock(&h.lock);
    CHECK(!flag_within(&h.changed, &h.lock, &h.join_done, 200));
    h.release = true;
    pthread_cond_broadcast(&h.changed);
    pthread_mutex_unlock(&h.lock);
    pthread_join(launcher, NULL);
    pthread_join(joiner, NULL);
    CHECK_EQ_INT(h.status, GM_OK);
    CHECK(h.join_done);
    pthread_cond_destroy(&h.changed);
    pthread_mutex_destroy(&h.lock);
    finish(&s, &a);
}

/* ---- a section that waits inside closes the path again --------------------------------------- */

typedef struct opener {
    sim_t *s;
    gm_cond_t *cond;
    bool fast_seen, done; /* done: under the engine lock */
} opener_t;

/* While the section waits: three launches of A, the first two through the whole protocol (the
 * second arms A and opens the path on its release), the third on the fast path; then the section
 * may go on. */
static void *open_meanwhile(void *arg) {
    opener_t *o = arg;
    CHECK(!launched_fast(o->s, 0xA, S1));
    CHECK(!launched_fast(o->s, 0xA, S1));
    o->fast_seen = launched_fast(o->s, 0xA, S1);
    gm_lock(&o->s->engine->lock); /* a plain flag: no section, the path untouched */
    o->done = true;
    gm_cond_broadcast(o->cond);
    gm_unlock(&o->s->engine->lock);
    return NULL;
}

/* A section that waits on a condition of the engine lock (a launch or trim waiting for covers,
 * gm_cover_wait) lets other sections run, which may open the path: gm_engine_wait closes it again
 * before the section goes on, and its release opens it again only as it found it. */
static void test_wait_closes_again(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a;
    sim_one_alloc_graph(&s, &a, 1 * MiB, false);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    gm_engine_t *e = s.engine;
    gm_cond_t cond;
    gm_cond_init(&cond);
    opener_t o = {&s, &cond, false, false};
    gm_engine_lock(e);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, open_meanwhile, &o) == 0);
    while (!o.done)
        gm_engine_wait(e, &cond);
    CHECK(!e->fast_open);
    gm_engine_unlock_unchanged(e);
    pthread_join(t, NULL);
    CHECK(o.fast_seen);
    CHECK(launched_fast(&s, 0xA, S1)); /* open again: the waiting section changed nothing */
    finish(&s, &a);
}

/* ---- many relaunches against sections and joins ---------------------------------------------- */

#define STRESS_ROUNDS 5000

typedef struct stress {
    sim_t s;
    atomic_int windows;                  /* sections' and joins' driver calls in progress */
    atomic_uint_fast64_t overlaps, fast; /* launch calls inside one; calls on the fast path */
    atomic_bool stop;
} stress_t;

typedef struct stress_call {
    stress_t *w;
    uint64_t stream;
} stress_call_t;

/* A launch's driver call: none may run while a section or a join is inside its own window. */
static bool stress_submit(void *arg) {
    stress_call_t *c = arg;
    stress_t *w = c->w;
    if (atomic_load(&w->windows))
        atomic_fetch_add(&w->overlaps, 1);
    if (sim_engine_lock_free(w->s.engine) && atomic_load(&w->s.engine->fast_gate))
        atomic_fetch_add(&w->fast, 1); /* maybe another thread's section: counts as a hint */
    for (volatile int i = 0; i < 50; i++)
        ;
    if (atomic_load(&w->windows))
        atomic_fetch_add(&w->overlaps, 1);
    host_backend_submit(w->s.hb, c->stream);
    return true;
}

/* A window: a section's or a join's driver call (another thread's launch must not come inside). */
static bool stress_window(void *arg) {
    stress_t *w = arg;
    atomic_fetch_add(&w->windows, 1);
    for (int k = 0; k < 3; k++)
        sched_yield();
    atomic_fetch_sub(&w->windows, 1);
    return true;
}

typedef struct stress_launcher {
    stress_t *w;
    uint64_t exec, stream;
} stress_launcher_t;

static void *stress_launch(void *arg) {
    stress_launcher_t *l = arg;
    stress_call_t c = {l->w, l->stream};
    for (int i = 0; i < STRESS_ROUNDS; i++) {
        CHECK_EQ_INT(gm_engine_launch(l->w->s.engine, l->exec, l->stream, false,
                                      (gm_driver_call_t){stress_submit, &c}),
                     GM_OK);
        if (l->exec != 0xA) /* B now and then: a launch of another exec closes the path */
            for (int k = 0; k < 200; k++)
                sched_yield();
    }
    return NULL;
}

static void *stress_sections(void *arg) {
    stress_t *w = arg;
    uint64_t v, rng = 7;
    while (!atomic_load(&w->stop)) {
        gm_engine_call_locked(w->s.engine, (gm_driver_call_t){stress_window, w});
        gm_engine_attr_get(w->s.engine, 0, GM_ATTR_RESERVED_CURRENT, &v);
        for (int k = 0; k < 20; k++)
            sched_yield();
        if (gm_rand(&rng) % 8 == 0)
            gm_engine_trim(w->s.engine, 0);
    }
    return NULL;
}

static void *stress_joins(void *arg) {
    stress_t *w = arg;
    while (!atomic_load(&w->stop)) {
        bool fast = gm_engine_join_begin(w->s.engine, S1);
        stress_window(w);
        gm_engine_join_end(w->s.engine, fast);
        for (int k = 0; k < 20; k++)
            sched_yield();
    }
    return NULL;
}

static void *stress_complete(void *arg) {
    stress_t *w = arg;
    while (!atomic_load(&w->stop)) {
        host_backend_complete_all(w->s.hb);
        sched_yield();
    }
    return NULL;
}

/* Two threads relaunch A on S1 (the fast path, one at a time through its gate), one launches B on
 * S2 now and then, while other threads run sections (a context's destruction, a read of counters,
 * a trim), joins on S1 and the GPU's completions: no launch's driver call inside a section's or a
 * join's, every launch counted, the data intact. */
static void test_stress(void) {
    stress_t *w = calloc(1, sizeof *w);
    REQUIRE(w != NULL);
    REQUIRE(sim_init(&w->s, NULL));
    sim_graph_t a, b;
    sim_one_alloc_graph(&w->s, &a, 1 * MiB, false);
    sim_one_alloc_graph(&w->s, &b, 1 * MiB, false);
    REQUIRE(sim_instantiate(&w->s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_instantiate(&w->s, &b, 0xB, 0) == GM_OK);
    stress_launcher_t launchers[3] = {{w, 0xA, S1}, {w, 0xA, S1}, {w, 0xB, S2}};
    pthread_t l[3], sections, joins, complete;
    REQUIRE(pthread_create(&sections, NULL, stress_sections, w) == 0);
    REQUIRE(pthread_create(&joins, NULL, stress_joins, w) == 0);
    REQUIRE(pthread_create(&complete, NULL, stress_complete, w) == 0);
    for (int i = 0; i < 3; i++)
        REQUIRE(pthread_create(&l[i], NULL, stress_launch, &launchers[i]) == 0);
    for (int i = 0; i < 3; i++)
        pthread_join(l[i], NULL);
    atomic_store(&w->stop, true);
    pthread_join(sections, NULL);
    pthread_join(joins, NULL);
    pthread_join(complete, NULL);
    printf("stress: %llu fast-path launches of %d\n", (unsigned long long)atomic_load(&w->fast),
           3 * STRESS_ROUNDS);
    CHECK_EQ_U64(atomic_load(&w->overlaps), 0);
    CHECK(atomic_load(&w->fast) > 0);
    CHECK_EQ_U64(sim_report_of(&w->s, 0xA).launches, 2 * STRESS_ROUNDS);
    /* A last run of each (a trim may have taken the memory since): the data check reads it. */
    CHECK_EQ_INT(sim_launch(&w->s, 0xA, S1), GM_OK);
    CHECK_EQ_INT(sim_launch(&w->s, 0xB, S2), GM_OK);
    host_backend_complete_all(w->s.hb);
    CHECK(sim_run_data(&w->s, &a, NULL));
    CHECK(sim_run_data(&w->s, &b, NULL));
    CHECK(sim_fini(&w->s));
    free(w);
}

/* ---- waiting for a relaunch that blocks ------------------------------------------------------ */

static sim_t *blocking_sim;
static atomic_bool blocking_in_call;

/* A driver launch that blocks 300 ms, as cuGraphLaunch does on a full launch queue. */
static bool blocking_submit(void *arg) {
    (void)arg;
    atomic_store(&blocking_in_call, true);
    struct timespec nap = {0, 300 * 1000 * 1000};
    nanosleep(&nap, NULL);
    host_backend_submit(blocking_sim->hb, S1);
    return true;
}

static void *relaunch_blocking(void *arg) {
    (void)arg;
    CHECK_EQ_INT(gm_engine_launch(blocking_sim->engine, 0xA, S1, false,
                                  (gm_driver_call_t){blocking_submit, NULL}),
                 GM_OK);
    return NULL;
}

/* Exec 0xA armed on S1 and relaunched there by thread `t`, whose driver call blocks 300 ms; returns
 * once that call is in flight. */
static void start_blocked_relaunch(sim_t *s, sim_graph_t *a, pthread_t *t) {
    armed_exec(s, a, NULL);
    blocking_sim = s;
    atomic_store(&blocking_in_call, false);
    REQUIRE(pthread_create(t, NULL, relaunch_blocking, NULL) == 0);
    while (!atomic_load(&blocking_in_call))
        sched_yield();
}

static void no_report(const gm_exec_report_t *report, void *arg) {
    (void)report;
    (void)arg;
}

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A section that finds a relaunch's driver call in flight waits for it (its close waits for the
 * gate) without burning its core: it yielded for the whole wait before gm_fast_backoff, 300 ms of
 * CPU for 300 ms. */
static void test_wait_for_blocked_relaunch_sleeps(void) {
    sim_t s;
    sim_graph_t a;
    pthread_t t;
    start_blocked_relaunch(&s, &a, &t);
    double cpu = seconds(CLOCK_THREAD_CPUTIME_ID), wall = seconds(CLOCK_MONOTONIC);
    gm_engine_report(s.engine, no_report, NULL); /* a section: closes, so waits for the gate */
    cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu, wall = seconds(CLOCK_MONOTONIC) - wall;
    printf("waited %.0f ms, %.0f ms of CPU\n", wall * 1e3, cpu * 1e3);
    CHECK(wall > 0.1);     /* it did wait for the call */
    CHECK(cpu < wall / 3); /* mostly asleep */
    pthread_join(t, NULL);
    finish(&s, &a);
}

/* A launch of any exec but the armed one never waits for the fast path's gate: with a relaunch
 * blocked in its driver call on another thread, the attempt for another handle (an exec graphmem
 * does not serve, which the launch hook tries before asking) returns at once, calling nothing.
 * It waited for the blocked call when the gate was taken before the exec was compared. */
static void test_unarmed_never_waits(void) {
    sim_t s;
    sim_graph_t a;
    pthread_t t;
    start_blocked_relaunch(&s, &a, &t);
    seen_call_t c = {&s, S1, true};
    gm_status_t st = GM_ERR_BACKEND;
    double wall = seconds(CLOCK_MONOTONIC);
    CHECK(!gm_engine_relaunch(s.engine, 0xC, S1, (gm_driver_call_t){seen_submit, &c}, &st));
    wall = seconds(CLOCK_MONOTONIC) - wall;
    CHECK(wall < 0.1);                     /* the blocked call takes 300 ms */
    CHECK(atomic_load(&blocking_in_call)); /* still in flight */
    CHECK(c.under_engine_lock && st == GM_ERR_BACKEND);
    pthread_join(t, NULL);
    finish(&s, &a);
}

static void *report_in_thread(void *arg) {
    gm_engine_report(((sim_t *)arg)->engine, no_report, NULL);
    return NULL;
}

/* A section waiting for a relaunch's driver call, cancelled in its wait. The wait sleeps holding
 * the defer lock with the fast path held off; with a sleep that took the cancel, the thread ended
 * holding both (and the engine lock), and every later launch or section blocked for good. Now the
 * wait is no cancellation point: the section finishes once the relaunch returns. */
static void test_cancelled_wait_for_relaunch(void) {
    sim_t s;
    sim_graph_t a;
    pthread_t relauncher, section;
    start_blocked_relaunch(&s, &a, &relauncher);
    REQUIRE(pthread_create(&section, NULL, report_in_thread, &s) == 0);
    struct timespec nap = {0, 50 * 1000 * 1000};
    nanosleep(&nap, NULL); /* the section sleeps in its wait for the gate by now */
    pthread_cancel(section);
    pthread_join(section, NULL);
    pthread_join(relauncher, NULL);
    bool usable = sim_engine_lock_free(s.engine) && sim_defer_lock_free(s.engine);
    CHECK(usable);
    if (!usable)
        return; /* held by a thread that is gone: any call would block */
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    finish(&s, &a);
}

int main(void) {
    RUN_TEST(test_which_launches_are_fast);
    RUN_TEST(test_relaunch_alone);
    RUN_TEST(test_section_holds_off_relaunch);
    RUN_TEST(test_wait_closes_again);
    RUN_TEST(test_realize_holds_off_relaunch);
    RUN_TEST(test_relaunch_in_flight_holds_off_join);
    RUN_TEST(test_stress);
    RUN_TEST(test_wait_for_blocked_relaunch_sleeps);
    RUN_TEST(test_unarmed_never_waits);
    RUN_TEST(test_cancelled_wait_for_relaunch);
    return gm_check_summary();
}
