/* The unjoined-fork notes (shim/bridge/joins.c) under threads: each capturing thread notes its
 * captures, a side stream and its own per-thread default stream in each, and ends them, some ends
 * leaving the capture going, while another thread gives the capture graphs' handles out again
 * (gm_joins_forget_graph, as gm_graph_forget_stale does), destroys the capturers' side streams
 * and streams of its own, and begins and ends captures on its own per-thread stream. An end asked
 * after a handle was given out never takes it for its capture's graph, the notes an end puts back
 * are found by the next, a capture begun on one thread's per-thread stream leaves the notes of the
 * others' alone, and no note is lost or doubled. And a per-thread stream's SET races the end of
 * its capture (test_set_beside_the_end). Also run under ThreadSanitizer. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>

#include "check.h"
#include "fake_capture.h"
#include "joins.h"

#define THREADS 4
#define ROUNDS 3000

/* The capture graph a thread's end is in flight for, and the last handle the giver gave out. */
static _Atomic uintptr_t in_flight[THREADS], given_out[THREADS];
static atomic_bool giving = true;
/* Captures the giver began on its per-thread stream. */
static atomic_uint_fast64_t giver_begins;

/* Each capturer's streams: the origin, the side and its per-thread stream share a node (the
 * sides' tail is the origin's frontier), set before the threads start; only the capture id
 * changes. The giver destroys the sides while their notes may be held by an end in flight. */
static fake_stream_t origins[THREADS], sides[THREADS], per_threads[THREADS];
static fake_node_t shared[THREADS];

static void *capturer(void *arg) {
    long t = (long)arg;
    fake_stream_t *origin = &origins[t], *side = &sides[t];
    fake_per_thread = &per_threads[t];
    for (uint32_t round = 1; round <= ROUNDS; round++) {
        cuuint64_t id = ((cuuint64_t)(t + 1) << 32) | round;
        const CUgraph graph = (CUgraph)(uintptr_t)(((uintptr_t)(t + 1) << 40) | round << 4);
        atomic_store(&origin->id, id);
        atomic_store(&side->id, id);
        atomic_store(&per_threads[t].id, id);
        gm_joins_note_begin(id, (CUstream)origin, false, graph);
        gm_joins_note(id, (CUstream)side, round % 2, graph, (CUgraphNode)&shared[t]);
        gm_joins_note(id, round % 3 ? NULL : CU_STREAM_PER_THREAD, round % 3, graph,
                      (CUgraphNode)&shared[t]);
        /* Every few rounds the notes wait in the list until a whole begin of the giver's went by
         * them. */
        uint_fast64_t begins = atomic_load(&giver_begins);
        while (round % 16 == 0 && atomic_load(&giver_begins) < begins + 2)
            sched_yield();
        /* An end that leaves the capture going, then the one that ends it. */
        for (int end = 0; end < 2; end++) {
            gm_joins_ending_t ending;
            CHECK(!gm_joins_finish((CUstream)origin, false, id, fake_is_marker, &ending));
            CHECK_EQ_INT(ending.count, 3);
            atomic_store(&in_flight[t], (uintptr_t)ending.graph);
            for (volatile int spin = 0; spin < 50; spin++)
                ;
            bool gone = atomic_load(&given_out[t]) == (uintptr_t)graph;
            bool mine = gm_joins_graph_still_mine(&ending);
            /* Given out before the question: never the capture's any more. */
            CHECK(!gone || !mine);
            CHECK(ending.graph == graph || (ending.graph == NULL && end == 1));
            gm_joins_ended(&ending, end == 1);
        }
        atomic_store(&in_flight[t], 0);
    }
    return NULL;
}

/* Gives the graphs of ends in flight out again, notes and destroys streams of its own, and begins
 * and ends captures on its per-thread stream. */
static void *giver(void *unused) {
    (void)unused;
    static fake_stream_t mine, per_thread; /* capture nothing */
    fake_per_thread = &per_thread;
    for (uint64_t i = 0; atomic_load(&giving); i++) {
        long t = (long)(i % THREADS);
        uintptr_t graph = atomic_load(&in_flight[t]);
        if (graph != 0) {
            gm_joins_forget_graph((CUgraph)graph);
            atomic_store(&given_out[t], graph);
        }
        gm_joins_stream_destroyed((CUstream)&sides[t]);
        gm_joins_note(i + 1, (CUstream)&mine, false, NULL, NULL);
        gm_joins_stream_destroyed((CUstream)&mine);
        gm_joins_ending_t ending;
        (void)gm_joins_finish((CUstream)&mine, false, i + 1, fake_is_marker, &ending);
        gm_joins_ended(&ending, true);
        gm_joins_note_begin(1ull << 63 | i, NULL, true, NULL);
        atomic_fetch_add(&giver_begins, 1);
        (void)gm_joins_finish(NULL, true, 1ull << 63 | i, fake_is_marker, &ending);
        gm_joins_ended(&ending, true);
    }
    return NULL;
}

static void test_ends_and_given_out_handles(void) {
    for (int t = 0; t < THREADS; t++) {
        fake_stream_capture(&origins[t], 0, (CUgraphNode)&shared[t]);
        fake_stream_capture(&sides[t], 0, (CUgraphNode)&shared[t]);
        fake_stream_capture(&per_threads[t], 0, (CUgraphNode)&shared[t]);
    }
    pthread_t ids[THREADS], other;
    pthread_create(&other, NULL, giver, NULL);
    for (long t = 0; t < THREADS; t++)
        pthread_create(&ids[t], NULL, capturer, (void *)t);
    for (long t = 0; t < THREADS; t++)
        pthread_join(ids[t], NULL);
    atomic_store(&giving, false);
    pthread_join(other, NULL);
}

/* ---- a per-thread stream's SET beside the end ----------------------------------------------
 * Another thread's per-thread stream receives a marker the origin never reaches, then SETs its
 * dependencies to nothing (gm_joins_dependencies_set) while the capture's thread ends the capture.
 * An end begun after the SET returned never judges the marker taken out; one begun before may
 * (the driver would judge the stream as the end found it). */
#define SET_ROUNDS 2000

static fake_stream_t set_origin, set_side;
static fake_node_t set_root, set_marker; /* set_root does not depend on set_marker */
static atomic_uint_fast64_t set_round, set_noted, set_done;

static CUresult set_to_nothing(void *arg) {
    fake_stream_t *s = arg;
    s->tail_count = 0;
    return CUDA_SUCCESS;
}

static void *setter(void *unused) {
    (void)unused;
    fake_per_thread = &set_side;
    for (uint_fast64_t round = 1; round <= SET_ROUNDS; round++) {
        while (atomic_load(&set_round) < round)
            sched_yield();
        set_side.tail_count = 1;
        set_side.tails[0] = (CUgraphNode)&set_marker;
        gm_joins_note(round, NULL, true, (CUgraph)(uintptr_t)(round << 4),
                      (CUgraphNode)&set_marker);
        atomic_store(&set_noted, round);
        for (volatile unsigned spin = 0; spin < (unsigned)(round * 7919 % 4000); spin++)
            ;
        CHECK_EQ_INT(gm_joins_dependencies_set(NULL, true, NULL, 0, set_to_nothing, &set_side),
                     CUDA_SUCCESS);
        atomic_store(&set_done, round);
    }
    return NULL;
}

static void test_set_beside_the_end(void) {
    pthread_t other;
    pthread_create(&other, NULL, setter, NULL);
    unsigned judged = 0, after = 0;
    for (uint_fast64_t round = 1; round <= SET_ROUNDS; round++) {
        fake_stream_capture(&set_origin, round, (CUgraphNode)&set_root);
        gm_joins_note_begin(round, (CUstream)&set_origin, false, (CUgraph)(uintptr_t)(round << 4));
        atomic_store(&set_round, round);
        while (atomic_load(&set_noted) < round)
            sched_yield();
        for (volatile unsigned spin = 0; spin < (unsigned)(round % 2 ? 0 : round * 104729 % 400);
             spin++)
            ;
        bool set_before = atomic_load(&set_done) == round;
        gm_joins_ending_t ending;
        bool unjoined =
            gm_joins_finish((CUstream)&set_origin, false, round, fake_is_marker, &ending);
        CHECK_EQ_INT(ending.count, 2);
        CHECK(!(set_before && unjoined));
        judged += unjoined;
        after += set_before;
        gm_joins_ended(&ending, true);
        while (atomic_load(&set_done) < round)
            sched_yield();
    }
    pthread_join(other, NULL);
    printf("     %u of %u ends found the marker judged, %u began after the SET\n", judged,
           SET_ROUNDS, after);
}

int main(void) {
    fake_capture_install();
    RUN_TEST(test_ends_and_given_out_handles);
    RUN_TEST(test_set_beside_the_end);
    return gm_check_summary();
}
