/* The frontier locks (shim/interpose/frontier_lock.c) under threads, also under ThreadSanitizer:
 * - exclusion: threads take random streams SHARED or EXCLUSIVE, two of the streams on one stripe
 *   and one whose handle takes the slow way only; an EXCLUSIVE holder is alone on its stream, a
 *   SHARED one sees no EXCLUSIVE, and what an EXCLUSIVE holder wrote (a plain word) every later
 *   holder of the stream reads;
 * - per stream: a call holding a stream, fast or slow, keeps no other stream of its stripe waiting;
 * - writers first: an EXCLUSIVE waiting for a SHARED holder keeps a new SHARED call on that stream
 *   back until it has held and let go;
 * - EXCLUSIVE against EXCLUSIVE on one stream, fast and slow;
 * - marks (gm_frontier_mark): an EXCLUSIVE hold finds the stream marked by its own thread only
 *   when no other hold of that stream came since the thread's last mark, made on that stream (a
 *   mark is the stripe's: the caller keeps the stream it marked), on one thread and under threads
 *   taking random streams (a stripe's two streams among them). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "check.h"
#include "interpose/frontier_lock.h"

gm_shim_hot_t gm_shim_hot;

static void sleep_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

/* The stripe frontier_lock.c puts a handle on (its hash, copied here to find two on one). */
static unsigned stripe_index(CUstream stream) {
    return (unsigned)(((uint64_t)(uintptr_t)stream * 0x9E3779B97F4A7C15ull) >> 56);
}

/* A second handle on `stream`'s stripe. */
static CUstream stripe_mate(CUstream stream) {
    for (uintptr_t h = (uintptr_t)stream + 16;; h += 16)
        if (stripe_index((CUstream)h) == stripe_index(stream))
            return (CUstream)h;
}

/* ---- exclusion ------------------------------------------------------------------------------ */

#define STREAMS 4
#define THREADS 6
#define ROUNDS 20000

static CUstream streams[STREAMS];
static atomic_int exclusive_in[STREAMS], shared_in[STREAMS];
static long payload[STREAMS];        /* written only under EXCLUSIVE */
static atomic_long written[STREAMS]; /* what the last EXCLUSIVE holder wrote */
static atomic_int violations;

static void *exclusion_thread(void *arg) {
    uint64_t rng = 0x9E3779B97F4A7C15ull * (uint64_t)((uintptr_t)arg + 1);
    for (int round = 0; round < ROUNDS; round++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int i = (int)((rng >> 33) % STREAMS);
        bool exclusive = (rng >> 40) % 4 == 0;
        gm_frontier_hold_t hold;
        gm_frontier_lock(&hold, streams[i], exclusive ? GM_FRONTIER_EXCLUSIVE : GM_FRONTIER_SHARED);
        if (exclusive) {
            if (atomic_fetch_add(&exclusive_in[i], 1) != 0 || atomic_load(&shared_in[i]) != 0)
                atomic_fetch_add(&violations, 1);
            payload[i]++;
            atomic_store(&written[i], payload[i]);
            if ((rng >> 50) % 8 == 0)
                sched_yield();
            atomic_fetch_sub(&exclusive_in[i], 1);
        } else {
            atomic_fetch_add(&shared_in[i], 1);
            if (atomic_load(&exclusive_in[i]) != 0 || payload[i] != atomic_load(&written[i]))
                atomic_fetch_add(&violations, 1);
            if ((rng >> 50) % 8 == 0)
                sched_yield();
            atomic_fetch_sub(&shared_in[i], 1);
        }
        gm_frontier_unlock(&hold);
    }
    return NULL;
}

static void test_exclusion(void) {
    streams[0] = (CUstream)(uintptr_t)0x7f0000001000;
    streams[1] = stripe_mate(streams[0]);
    streams[2] = (CUstream)(uintptr_t)0x7f0000002340;
    streams[3] = (CUstream)(uintptr_t)0xffff800000003000ull; /* beyond 48 bits: the slow way only */
    pthread_t threads[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, exclusion_thread, (void *)t) == 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    CHECK_EQ_INT(atomic_load(&violations), 0);
}

/* ---- one thread holds, another asks --------------------------------------------------------- */

typedef struct ask {
    CUstream stream;
    gm_frontier_hold_kind_t kind;
    atomic_bool holding, release, done;
} ask_t;

static void *asker(void *arg) {
    ask_t *a = arg;
    gm_frontier_hold_t hold;
    gm_frontier_lock(&hold, a->stream, a->kind);
    atomic_store(&a->holding, true);
    while (!atomic_load(&a->release))
        sleep_us(100);
    gm_frontier_unlock(&hold);
    atomic_store(&a->done, true);
    return NULL;
}

static void start(ask_t *a, pthread_t *thread, CUstream stream, gm_frontier_hold_kind_t kind) {
    *a = (ask_t){.stream = stream, .kind = kind};
    CHECK(pthread_create(thread, NULL, asker, a) == 0);
}

/* Whether `a` holds within `ms` milliseconds. */
static bool holds_within(ask_t *a, int ms) {
    for (int i = 0; i < ms * 10 && !atomic_load(&a->holding); i++)
        sleep_us(100);
    return atomic_load(&a->holding);
}

static void finish(ask_t *a, pthread_t thread) {
    atomic_store(&a->release, true);
    pthread_join(thread, NULL);
}

/* A hold on one stream of a stripe, the first one there (fast) or behind another (slow), keeps no
 * other stream of the stripe waiting, whatever the modes. */
static void test_other_stream_never_waits(void) {
    CUstream x = (CUstream)(uintptr_t)0x7f0000005000, y = stripe_mate(x);
    for (int k = 0; k < 4; k++) {
        gm_frontier_hold_kind_t first = k & 1 ? GM_FRONTIER_EXCLUSIVE : GM_FRONTIER_SHARED;
        gm_frontier_hold_kind_t second = k & 2 ? GM_FRONTIER_EXCLUSIVE : GM_FRONTIER_SHARED;
        ask_t a, b;
        pthread_t ta, tb;
        start(&a, &ta, x, first);
        CHECK(holds_within(&a, 2000));
        start(&b, &tb, y, second);
        CHECK(holds_within(&b, 2000));
        finish(&b, tb);
        finish(&a, ta);
    }
}

/* An EXCLUSIVE waiting for a SHARED holder keeps a later SHARED call on the stream back. */
static void test_writer_first(void) {
    CUstream x = (CUstream)(uintptr_t)0x7f0000006000;
    ask_t reader, writer, late;
    pthread_t tr, tw, tl;
    start(&reader, &tr, x, GM_FRONTIER_SHARED);
    CHECK(holds_within(&reader, 2000));
    start(&writer, &tw, x, GM_FRONTIER_EXCLUSIVE);
    CHECK(!holds_within(&writer, 50));
    start(&late, &tl, x, GM_FRONTIER_SHARED);
    CHECK(!holds_within(&late, 50));
    finish(&reader, tr);
    CHECK(holds_within(&writer, 2000));
    CHECK(!holds_within(&late, 50));
    finish(&writer, tw);
    CHECK(holds_within(&late, 2000));
    finish(&late, tl);
}

/* EXCLUSIVE against EXCLUSIVE on one stream: through the word and through the list. */
static void test_exclusive_pairs(void) {
    CUstream streams2[2] = {(CUstream)(uintptr_t)0x7f0000007000,
                            (CUstream)(uintptr_t)0xffff800000008000ull};
    for (int i = 0; i < 2; i++) {
        ask_t a, b;
        pthread_t ta, tb;
        start(&a, &ta, streams2[i], GM_FRONTIER_EXCLUSIVE);
        CHECK(holds_within(&a, 2000));
        start(&b, &tb, streams2[i], GM_FRONTIER_EXCLUSIVE);
        CHECK(!holds_within(&b, 50));
        finish(&a, ta);
        CHECK(holds_within(&b, 2000));
        finish(&b, tb);
    }
}

/* ---- marks ---------------------------------------------------------------------------------- */

static bool exclusive_finds_own_mark(CUstream stream) {
    gm_frontier_hold_t hold;
    gm_frontier_lock(&hold, stream, GM_FRONTIER_EXCLUSIVE);
    bool mine = hold.marked_mine;
    gm_frontier_unlock(&hold);
    return mine;
}

static void mark_stream(CUstream stream) {
    gm_frontier_hold_t hold;
    gm_frontier_lock(&hold, stream, GM_FRONTIER_EXCLUSIVE);
    gm_frontier_mark(&hold);
    gm_frontier_unlock(&hold);
}

static void *shared_hold_once(void *arg) {
    gm_frontier_hold_t hold;
    gm_frontier_lock(&hold, (CUstream)arg, GM_FRONTIER_SHARED);
    gm_frontier_unlock(&hold);
    return NULL;
}

static void *exclusive_hold_once(void *arg) {
    return exclusive_finds_own_mark((CUstream)arg) ? (void *)1 : NULL;
}

static void test_marks_one_by_one(void) {
    CUstream fast = (CUstream)(uintptr_t)0x7f0000009000;
    CUstream slow = (CUstream)(uintptr_t)0xffff80000000a000ull;
    CUstream both[2] = {fast, slow};
    for (int i = 0; i < 2; i++) {
        CUstream x = both[i];
        CHECK(!exclusive_finds_own_mark(x)); /* never marked */
        mark_stream(x);
        CHECK(exclusive_finds_own_mark(x));
        CHECK(!exclusive_finds_own_mark(x)); /* the hold before took it */
        pthread_t t;
        void *other_found = (void *)1;
        mark_stream(x);
        pthread_create(&t, NULL, shared_hold_once, x);
        pthread_join(t, NULL);
        CHECK(!exclusive_finds_own_mark(x)); /* another thread's SHARED hold came */
        mark_stream(x);
        pthread_create(&t, NULL, exclusive_hold_once, x);
        pthread_join(t, &other_found);
        CHECK(other_found == NULL); /* not that thread's mark */
        CHECK(!exclusive_finds_own_mark(x));
        mark_stream(x);
        CHECK(exclusive_finds_own_mark(x)); /* its own holds only */
    }
}

#define MARK_STREAMS 3
static CUstream mark_streams[MARK_STREAMS];
static atomic_long last_holder[MARK_STREAMS]; /* the thread that held each stream last */
static atomic_int false_marks, own_marks;

static void *marking_thread(void *arg) {
    long me = (long)(uintptr_t)arg + 1;
    int marked_on = -1; /* the stream of this thread's last mark */
    uint64_t rng = 0x2545F4914F6CDD1Dull * (uint64_t)me;
    for (int round = 0; round < ROUNDS; round++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        int i = (int)((rng >> 33) % MARK_STREAMS);
        bool exclusive = (rng >> 40) % 2 == 0;
        gm_frontier_hold_t hold;
        gm_frontier_lock(&hold, mark_streams[i],
                         exclusive ? GM_FRONTIER_EXCLUSIVE : GM_FRONTIER_SHARED);
        if (exclusive && hold.marked_mine && marked_on == i) {
            atomic_fetch_add(&own_marks, 1);
            if (atomic_load(&last_holder[i]) != me)
                atomic_fetch_add(&false_marks, 1);
        }
        atomic_store(&last_holder[i], me);
        if (exclusive && (rng >> 50) % 2 == 0) {
            gm_frontier_mark(&hold);
            marked_on = i;
        }
        gm_frontier_unlock(&hold);
    }
    return NULL;
}

static void test_marks_under_threads(void) {
    mark_streams[0] = (CUstream)(uintptr_t)0x7f000000b000;
    mark_streams[1] = stripe_mate(mark_streams[0]);
    mark_streams[2] = (CUstream)(uintptr_t)0xffff80000000c000ull;
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++)
        REQUIRE(pthread_create(&threads[t], NULL, marking_thread, (void *)(uintptr_t)t) == 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    CHECK_EQ_INT(atomic_load(&false_marks), 0);
    CHECK(atomic_load(&own_marks) > 0);
}

int main(void) {
    RUN_TEST(test_exclusion);
    RUN_TEST(test_other_stream_never_waits);
    RUN_TEST(test_writer_first);
    RUN_TEST(test_exclusive_pairs);
    RUN_TEST(test_marks_one_by_one);
    RUN_TEST(test_marks_under_threads);
    return gm_check_summary();
}
