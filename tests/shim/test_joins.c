/* The unjoined-fork notes of captures (shim/bridge/joins.c) over a driver of plain structs: an end
 * that leaves its capture going (the driver refused it from the wrong thread) puts back every
 * note, under the capture id they were made with, so the end that comes still finds the capture's
 * graph and an unjoined side stream, live or destroyed; a graph handle given out again while an
 * end is in flight is no longer the capture's. Per-thread default streams of two threads are two
 * streams: a capture begun on one leaves the other's notes alone, and an end judges another
 * thread's by its last marker, since it cannot ask it. Only the driver entries the notes call are
 * filled in. */
#include <pthread.h>

#include "check.h"
#include "fake_capture.h"
#include "joins.h"

static CUstream handle(fake_stream_t *s) {
    return (CUstream)s;
}

static CUgraph graph_of(uintptr_t key) {
    return (CUgraph)key;
}

/* The origin's frontier is `root`; the side stream last captured `side_tail`, which the origin
 * joined when `joined` (an edge side_tail -> root). */
typedef struct capture {
    fake_node_t root, side_tail;
    fake_stream_t origin, side;
} capture_t;

static void capture_init(capture_t *c, cuuint64_t id, bool joined) {
    *c = (capture_t){0};
    if (joined)
        c->root = (fake_node_t){.dep_count = 1, .deps = {&c->side_tail}};
    fake_stream_capture(&c->origin, id, (CUgraphNode)&c->root);
    fake_stream_capture(&c->side, id, (CUgraphNode)&c->side_tail);
}

/* Capture `id` began on the origin into `g`; its side stream received a marker (through a
 * per-thread-stream entry with `ptsz`). */
static void note_capture(capture_t *c, cuuint64_t id, bool ptsz, CUgraph g) {
    gm_joins_note_begin(id, handle(&c->origin), false, g);
    gm_joins_note(id, handle(&c->side), ptsz, g, (CUgraphNode)&c->side_tail);
}

/* The end of capture `id` on `c->origin`: whether it was found unjoined, and the graph found. */
static bool finish(capture_t *c, cuuint64_t id, bool over, CUgraph *graph, uint32_t *notes) {
    gm_joins_ending_t ending;
    bool unjoined = gm_joins_finish(handle(&c->origin), false, id, fake_is_marker, &ending);
    *graph = ending.graph;
    if (notes != NULL)
        *notes = ending.count;
    gm_joins_ended(&ending, over);
    return unjoined;
}

/* An end refused from the wrong thread leaves the capture going: the end that comes finds the
 * unjoined side stream as the first did (the side's note was lost before). */
static void test_wrong_thread_end_keeps_side_notes(void) {
    capture_t c;
    capture_init(&c, 7, false);
    const CUgraph g = graph_of(0x7000);
    note_capture(&c, 7, false, g);
    CUgraph found = NULL;
    uint32_t notes = 0;
    CHECK(finish(&c, 7, false, &found, &notes));
    CHECK(found == g);
    CHECK_EQ_INT(notes, 2);
    CHECK(finish(&c, 7, true, &found, &notes));
    CHECK(found == g);
    CHECK_EQ_INT(notes, 2);
    CHECK(!finish(&c, 7, true, &found, &notes)); /* over: nothing noted any more */
    CHECK(found == NULL);
    CHECK_EQ_INT(notes, 0);

    /* Joined: no verdict either time. */
    capture_init(&c, 8, true);
    note_capture(&c, 8, false, g);
    CHECK(!finish(&c, 8, false, &found, NULL));
    CHECK(!finish(&c, 8, true, &found, NULL));
}

/* An invalidated capture that no longer tells its id: its notes go back under the id its origin
 * was noted under at begin, so the next end still finds the graph to forget (the origin went back
 * under id 0 before, where no end looks). */
static void test_invalidated_end_keeps_the_id(void) {
    capture_t c;
    capture_init(&c, 9, false);
    c.origin.status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    c.side.status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    const CUgraph g = graph_of(0x9000);
    note_capture(&c, 9, false, g);
    c.origin.id = 0;
    c.side.id = 0;
    CUgraph found = NULL;
    uint32_t notes = 0;
    CHECK(!finish(&c, 0, false, &found, &notes)); /* invalidated: no unjoined verdict */
    CHECK(found == g);
    CHECK_EQ_INT(notes, 2);
    CHECK(!finish(&c, 0, true, &found, &notes));
    CHECK(found == g);
    CHECK_EQ_INT(notes, 2);
    CHECK(!finish(&c, 0, true, &found, &notes));
    CHECK(found == NULL);
}

/* A side stream destroyed before the ends: its last nodes, kept at its destruction, survive an
 * end that leaves the capture going. `ptsz`: its marker came through a per-thread-stream entry
 * (a program built with --default-stream per-thread), which names the same stream. */
static void destroyed_side_survives(bool ptsz) {
    capture_t c;
    cuuint64_t id = ptsz ? 12 : 11;
    capture_init(&c, id, false);
    const CUgraph g = graph_of(0xb000 + id);
    note_capture(&c, id, ptsz, g);
    gm_joins_stream_destroyed(handle(&c.side));
    c.side.status = CU_STREAM_CAPTURE_STATUS_NONE; /* gone */
    unsigned asks = c.side.asks;
    CUgraph found = NULL;
    CHECK(finish(&c, id, false, &found, NULL));
    CHECK(finish(&c, id, true, &found, NULL));
    CHECK(found == g);
    CHECK_EQ_INT(c.side.asks, asks); /* the dead stream is never asked */
}

static void test_destroyed_side_survives(void) {
    destroyed_side_survives(false);
    destroyed_side_survives(true);
}

/* A note made for a capture while its end is in flight, the end then over: it goes with the
 * capture (it stayed in the list for good, scanned by every later note). */
static void test_note_during_final_end_goes(void) {
    capture_t c;
    capture_init(&c, 21, false);
    const CUgraph g = graph_of(0x21000);
    note_capture(&c, 21, false, g);
    gm_joins_ending_t ending;
    (void)gm_joins_finish(handle(&c.origin), false, 21, fake_is_marker, &ending);
    gm_joins_note(21, handle(&c.side), false, g, (CUgraphNode)(uintptr_t)0x2101);
    gm_joins_ended(&ending, true);
    CUgraph found = NULL;
    uint32_t notes = 0;
    CHECK(!finish(&c, 21, true, &found, &notes));
    CHECK_EQ_INT(notes, 0);
}

/* Notes made while an end is in flight (another thread captures into the same capture) merge
 * with those put back: one note a stream. */
static void test_notes_made_meanwhile_merge(void) {
    capture_t c;
    capture_init(&c, 13, true);
    fake_stream_t other = {0};
    fake_stream_capture(&other, 13, (CUgraphNode)&c.side_tail);
    const CUgraph g = graph_of(0xd000);
    note_capture(&c, 13, false, g);
    gm_joins_ending_t ending;
    CHECK(!gm_joins_finish(handle(&c.origin), false, 13, fake_is_marker, &ending));
    gm_joins_note(13, handle(&c.side), false, g, (CUgraphNode)&c.side_tail);
    gm_joins_note(13, handle(&other), false, g, (CUgraphNode)&c.side_tail);
    gm_joins_ended(&ending, false);
    CUgraph found = NULL;
    uint32_t notes = 0;
    CHECK(!finish(&c, 13, true, &found, &notes));
    CHECK_EQ_INT(notes, 3);
    CHECK(found == g);
}

/* The graph's handle given out again to a new graph while the end is in flight (what
 * gm_graph_forget_stale does): the end must not take the new graph for the capture's. */
static void test_handle_given_out_during_the_end(void) {
    capture_t c;
    capture_init(&c, 15, true);
    const CUgraph g = graph_of(0xf000);
    gm_joins_note_begin(15, handle(&c.origin), false, g);
    gm_joins_ending_t ending;
    (void)gm_joins_finish(handle(&c.origin), false, 15, fake_is_marker, &ending);
    CHECK(ending.graph == g);
    CHECK(gm_joins_graph_still_mine(&ending));
    gm_joins_forget_graph(graph_of(0xf001));
    CHECK(gm_joins_graph_still_mine(&ending));
    gm_joins_forget_graph(g);
    CHECK(!gm_joins_graph_still_mine(&ending));
    gm_joins_ended(&ending, false);
    CUgraph found = graph_of(1);
    uint32_t notes = 0;
    (void)finish(&c, 15, true, &found, &notes);
    CHECK_EQ_INT(notes, 1); /* the origin's note went back, without the handle */
    CHECK(found == NULL);
}

/* A side stream destroyed while an end is in flight (its notes taken): the end that leaves the
 * capture going puts the side's note back as destroyed, with what it captured last, so the next
 * end finds it unjoined without asking the dead stream (it came back as a live stream before). */
static void side_destroyed_during_the_end(bool ptsz) {
    capture_t c;
    cuuint64_t id = ptsz ? 19 : 17;
    capture_init(&c, id, false);
    const CUgraph g = graph_of(0x11000 + id);
    note_capture(&c, id, ptsz, g);
    gm_joins_ending_t ending;
    CHECK(gm_joins_finish(handle(&c.origin), false, id, fake_is_marker, &ending));
    gm_joins_stream_destroyed(handle(&c.side)); /* another thread, meanwhile */
    c.side.status = CU_STREAM_CAPTURE_STATUS_NONE;
    unsigned asks = c.side.asks;
    gm_joins_ended(&ending, false);
    CUgraph found = NULL;
    uint32_t notes = 0;
    CHECK(finish(&c, id, true, &found, &notes));
    CHECK_EQ_INT(notes, 2);
    CHECK_EQ_INT(c.side.asks, asks);
    CHECK(found == g);
    /* Ended over: the kept nodes go with the notes (no leak under AddressSanitizer). */
    gm_joins_note_begin(id + 1, handle(&c.origin), false, g);
    fake_stream_capture(&c.side, id + 1, (CUgraphNode)&c.side_tail);
    gm_joins_note(id + 1, handle(&c.side), ptsz, g, (CUgraphNode)&c.side_tail);
    CHECK(gm_joins_finish(handle(&c.origin), false, id + 1, fake_is_marker, &ending));
    gm_joins_stream_destroyed(handle(&c.side));
    gm_joins_ended(&ending, true);
}

static void test_side_destroyed_during_the_end(void) {
    side_destroyed_during_the_end(false);
    side_destroyed_during_the_end(true);
}

/* fn(arg) on a thread of its own, whose per-thread default stream is `per_thread`. */
typedef struct on_thread {
    void (*fn)(void *);
    void *arg;
    fake_stream_t *per_thread;
} on_thread_t;

static void *run_on_thread(void *arg) {
    on_thread_t *run = arg;
    fake_per_thread = run->per_thread;
    run->fn(run->arg);
    return NULL;
}

/* Runs fn(arg) on another thread and waits for it. */
static void on_thread(void (*fn)(void *), void *arg, fake_stream_t *per_thread) {
    on_thread_t run = {fn, arg, per_thread};
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, run_on_thread, &run) == 0);
    pthread_join(thread, NULL);
}

/* A marker put on the calling thread's per-thread default stream, named as a program built with
 * --default-stream per-thread names it (NULL through a _ptsz entry) or as CU_STREAM_PER_THREAD. */
typedef struct per_thread_note {
    cuuint64_t id;
    CUgraph graph;
    CUgraphNode marker;
    bool named_null;
} per_thread_note_t;

static void note_per_thread(void *arg) {
    const per_thread_note_t *n = arg;
    if (n->named_null)
        gm_joins_note(n->id, NULL, true, n->graph, n->marker);
    else
        gm_joins_note(n->id, CU_STREAM_PER_THREAD, false, n->graph, n->marker);
}

/* Another thread's per-thread stream forks from a capture and receives a marker: the end, on the
 * capture's own thread, cannot ask that stream (naming it asks its own), so it judges it by the
 * marker, and finds it unjoined unless the origin's frontier reaches it. It was asked on the
 * ending thread's own per-thread stream before (which was not in the capture: no verdict), and
 * when the capture began on the ending thread's per-thread stream, the other thread's note was
 * taken for the origin's own. */
static void other_threads_side(bool origin_per_thread, bool named_null, bool joined) {
    cuuint64_t id = 21 + (origin_per_thread ? 2 : 0) + (named_null ? 4 : 0) + (joined ? 8 : 0);
    capture_t c;
    capture_init(&c, id, joined);
    const CUgraph g = graph_of(0x21000 + id);
    CUstream origin = origin_per_thread ? NULL : handle(&c.origin);
    fake_per_thread = origin_per_thread ? &c.origin : NULL;
    gm_joins_note_begin(id, origin, origin_per_thread, g);
    per_thread_note_t n = {id, g, (CUgraphNode)&c.side_tail, named_null};
    on_thread(note_per_thread, &n, &c.side);
    gm_joins_ending_t ending;
    CHECK(gm_joins_finish(origin, origin_per_thread, id, fake_is_marker, &ending) == !joined);
    CHECK_EQ_INT(ending.count, 2);
    CHECK(ending.graph == g);
    gm_joins_ended(&ending, true);
    fake_per_thread = NULL;
}

/* This thread's own per-thread stream as the side: asked, as any stream (its tails are the
 * truth); in another context, it is another stream, judged by its marker. */
static void own_side(bool other_context) {
    cuuint64_t id = other_context ? 41 : 40;
    capture_t c;
    capture_init(&c, id, false);
    const CUgraph g = graph_of(0x40000 + id);
    gm_joins_note_begin(id, handle(&c.origin), false, g);
    fake_per_thread = &c.side;
    gm_joins_note(id, NULL, true, g, (CUgraphNode)&c.side_tail);
    if (other_context)
        fake_context = (CUcontext)0x2000;
    unsigned asks = c.side.asks;
    gm_joins_ending_t ending;
    CHECK(gm_joins_finish(handle(&c.origin), false, id, fake_is_marker, &ending));
    CHECK_EQ_INT(ending.count, 2);
    CHECK_EQ_INT(c.side.asks, asks + !other_context);
    gm_joins_ended(&ending, true);
    fake_per_thread = NULL;
    fake_context = (CUcontext)0x1000;
}

static void test_per_thread_sides_of_two_threads(void) {
    for (int origin_per_thread = 0; origin_per_thread < 2; origin_per_thread++)
        for (int named_null = 0; named_null < 2; named_null++)
            for (int joined = 0; joined < 2; joined++)
                other_threads_side(origin_per_thread, named_null, joined);
    own_side(false);
    own_side(true);
}

/* A capture begun on a thread's per-thread stream (`origin`), a marker on it, and ended on that
 * thread once the test's thread did its part between (`between`). */
typedef struct per_thread_capture {
    cuuint64_t id;
    CUgraph graph;
    fake_stream_t origin;
    fake_node_t root;
    pthread_barrier_t between;
    bool unjoined, graph_found;
    uint32_t notes;
} per_thread_capture_t;

static void *per_thread_capture(void *arg) {
    per_thread_capture_t *p = arg;
    fake_stream_capture(&p->origin, p->id, (CUgraphNode)&p->root);
    fake_per_thread = &p->origin;
    gm_joins_note_begin(p->id, NULL, true, p->graph);
    gm_joins_note(p->id, NULL, true, p->graph, (CUgraphNode)&p->root);
    pthread_barrier_wait(&p->between); /* begun */
    pthread_barrier_wait(&p->between); /* the test's thread began its own */
    gm_joins_ending_t ending;
    p->unjoined = gm_joins_finish(NULL, true, p->id, fake_is_marker, &ending);
    p->graph_found = ending.graph == p->graph;
    p->notes = ending.count;
    gm_joins_ended(&ending, true);
    return NULL;
}

/* A capture begun on this thread's per-thread stream forgets notes of that stream from other
 * captures, never those of another thread's per-thread stream, which may be in a capture of its
 * own (whose end found no graph to forget before), or a side of another capture (whose end found
 * no unjoined side before). */
static void test_begin_keeps_other_threads_notes(void) {
    static per_thread_capture_t other = {.id = 51, .graph = (CUgraph)0x51000};
    REQUIRE(pthread_barrier_init(&other.between, NULL, 2) == 0);
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, per_thread_capture, &other) == 0);
    pthread_barrier_wait(&other.between);
    /* A capture on a regular stream, whose side is another thread's per-thread stream. */
    capture_t fork;
    capture_init(&fork, 53, false);
    const CUgraph g = graph_of(0x53000);
    gm_joins_note_begin(53, handle(&fork.origin), false, g);
    per_thread_note_t n = {53, g, (CUgraphNode)&fork.side_tail, true};
    on_thread(note_per_thread, &n, &fork.side);

    capture_t mine;
    capture_init(&mine, 52, true);
    fake_per_thread = &mine.origin;
    gm_joins_note_begin(52, NULL, true, graph_of(0x52000));

    pthread_barrier_wait(&other.between);
    pthread_join(thread, NULL);
    pthread_barrier_destroy(&other.between);
    CHECK(other.graph_found);
    CHECK_EQ_INT(other.notes, 1);
    CHECK(!other.unjoined);
    gm_joins_ending_t ending;
    CHECK(gm_joins_finish(handle(&fork.origin), false, 53, fake_is_marker, &ending));
    CHECK_EQ_INT(ending.count, 2);
    gm_joins_ended(&ending, true);
    CHECK(!gm_joins_finish(NULL, true, 52, fake_is_marker, &ending));
    CHECK_EQ_INT(ending.count, 1);
    gm_joins_ended(&ending, true);
    fake_per_thread = NULL;
}

/* An origin whose frontier is wider than the search's first room (256 nodes): the side's last
 * node is reached from the 300th. Joined: no verdict (the roots past the 256th were dropped
 * before, and a joined capture was found unjoined). */
static void test_wide_origin_frontier(void) {
    enum { WIDE = 300 };
    static fake_node_t roots[WIDE];
    static CUgraphNode frontier[WIDE];
    capture_t c;
    capture_init(&c, 31, false);
    for (int i = 0; i < WIDE; i++) {
        roots[i] = (fake_node_t){0};
        frontier[i] = (CUgraphNode)&roots[i];
    }
    roots[WIDE - 1] = (fake_node_t){.dep_count = 1, .deps = {&c.side_tail}};
    c.origin.wide = frontier;
    c.origin.tail_count = WIDE;
    const CUgraph g = graph_of(0x31000);
    note_capture(&c, 31, false, g);
    CUgraph found = NULL;
    CHECK(!finish(&c, 31, true, &found, NULL));
    /* Not joined from any of them: unjoined. */
    capture_init(&c, 32, false);
    roots[WIDE - 1] = (fake_node_t){0};
    c.origin.wide = frontier;
    c.origin.tail_count = WIDE;
    note_capture(&c, 32, false, g);
    CHECK(finish(&c, 32, true, &found, NULL));
}

/* Dependencies that carry edge data (a programmatic edge, a kernel port), on the origin or on the
 * side: the driver refuses to list them without their data (LOSSY_QUERY), and an unjoined side
 * was then let through unjudged. */
static void test_edge_data_frontiers(void) {
    CUgraph found = NULL;
    const CUgraph g = graph_of(0x33000);
    for (int lossy = 0; lossy < 2; lossy++) {
        for (int joined = 0; joined < 2; joined++) {
            capture_t c;
            cuuint64_t id = 33 + (cuuint64_t)(2 * lossy + joined);
            capture_init(&c, id, joined);
            c.origin.edge_data = lossy == 0;
            c.side.edge_data = lossy == 1;
            note_capture(&c, id, false, g);
            CHECK(finish(&c, id, true, &found, NULL) == !joined);
        }
    }
}

/* A side stream whose marker was taken out of its dependency set, which the program SET to a node
 * it added through the graph API and never joined: the driver judges neither (its documentation,
 * and the H200: xp probe r60_unjoined_checks side_dangling ended with success natively, where
 * graphmem said UNJOINED). Live or destroyed before the end; the marker kept beside the node is
 * still judged. */
static void test_side_set_to_a_graph_node(void) {
    CUgraph found = NULL;
    const CUgraph g = graph_of(0x37000);
    for (int destroyed = 0; destroyed < 2; destroyed++) {
        for (int keeps_marker = 0; keeps_marker < 2; keeps_marker++) {
            capture_t c;
            cuuint64_t id = 37 + (cuuint64_t)(2 * destroyed + keeps_marker);
            capture_init(&c, id, false);
            note_capture(&c, id, false, g);
            fake_node_t dangling = {.dep_count = 1, .deps = {&c.side_tail}, .api_node = true};
            c.side.tails[0] = (CUgraphNode)&dangling;
            if (keeps_marker) {
                c.side.tails[1] = (CUgraphNode)&c.side_tail;
                c.side.tail_count = 2;
            }
            if (destroyed)
                gm_joins_stream_destroyed(handle(&c.side));
            CHECK(finish(&c, id, true, &found, NULL) == (bool)keeps_marker);
        }
    }
}

/* The driver's SET, as the fake driver takes it: the stream's last nodes become `deps`. */
typedef struct fake_set {
    fake_stream_t *stream;
    const CUgraphNode *deps;
    unsigned count;
    int calls;
} fake_set_t;

static CUresult fake_set_call(void *arg) {
    fake_set_t *set = arg;
    set->calls++;
    set->stream->tail_count = set->count;
    for (unsigned i = 0; i < set->count; i++)
        set->stream->tails[i] = set->deps[i];
    return CUDA_SUCCESS;
}

typedef struct per_thread_set {
    per_thread_note_t note;
    fake_set_t set;
} per_thread_set_t;

static void note_then_set(void *arg) {
    per_thread_set_t *p = arg;
    note_per_thread(&p->note);
    p->set.stream = fake_per_thread;
    CHECK_EQ_INT(gm_joins_dependencies_set(p->note.named_null ? NULL : CU_STREAM_PER_THREAD,
                                           p->note.named_null, p->set.deps, p->set.count,
                                           fake_set_call, &p->set),
                 CUDA_SUCCESS);
    CHECK_EQ_INT(p->set.calls, 1);
}

/* Another thread's per-thread stream forks, receives a marker, then SETs its dependencies: to
 * nothing, to a node added through the graph API, or to a set that keeps the marker. The driver
 * no longer judges a marker taken out (the H200, tests/gpu/scn_unjoined_api_nodes.cu
 * ptds_taken_out_*: ended with success natively, UNJOINED under graphmem before); one kept is
 * judged still. The end, on the capture's thread, cannot ask that stream: the note's marker goes
 * with the SET. */
static void test_other_threads_side_set(void) {
    for (int kept = 0; kept < 3; kept++) {
        for (int named_null = 0; named_null < 2; named_null++) {
            cuuint64_t id = 61 + (cuuint64_t)(2 * kept + named_null);
            capture_t c;
            capture_init(&c, id, false);
            const CUgraph g = graph_of(0x61000 + id);
            gm_joins_note_begin(id, handle(&c.origin), false, g);
            fake_node_t api = {.api_node = true};
            CUgraphNode deps[2] = {(CUgraphNode)&api, (CUgraphNode)&c.side_tail};
            per_thread_set_t p = {{id, g, (CUgraphNode)&c.side_tail, named_null},
                                  {NULL, deps, (unsigned)kept, 0}};
            on_thread(note_then_set, &p, &c.side);
            gm_joins_ending_t ending;
            CHECK(gm_joins_finish(handle(&c.origin), false, id, fake_is_marker, &ending) ==
                  (kept == 2));
            gm_joins_ended(&ending, true);
        }
    }
}

int main(void) {
    fake_capture_install();
    RUN_TEST(test_wrong_thread_end_keeps_side_notes);
    RUN_TEST(test_invalidated_end_keeps_the_id);
    RUN_TEST(test_note_during_final_end_goes);
    RUN_TEST(test_destroyed_side_survives);
    RUN_TEST(test_notes_made_meanwhile_merge);
    RUN_TEST(test_handle_given_out_during_the_end);
    RUN_TEST(test_side_destroyed_during_the_end);
    RUN_TEST(test_per_thread_sides_of_two_threads);
    RUN_TEST(test_begin_keeps_other_threads_notes);
    RUN_TEST(test_wide_origin_frontier);
    RUN_TEST(test_edge_data_frontiers);
    RUN_TEST(test_side_set_to_a_graph_node);
    RUN_TEST(test_other_threads_side_set);
    return gm_check_summary();
}
