/* A frontier already known (shim/README.md, "A frontier already known"), over the mock driver: a
 * captured allocation or free right after this thread's previous one on the same stream skips the
 * capture query, and any other call on the stream, or a capture's end anywhere, makes the next one
 * ask again. Exit 1 when a scenario fails.
 * 1. 50 allocation and free pairs make two capture queries in all (the first marker asks, and asks
 *    again after looking up its stream's device), and none
 *    with GRAPHMEM_KNOWN_FRONTIER=0 is skipped (the test is run both ways; argv[1] says which).
 * 2. Between an allocation w and its free, a call on the stream from each kind of entry: a host
 *    function (an enqueue entry, GM_ENQUEUE), the same from another thread, a node added to the
 *    stream's dependencies (cuStreamUpdateCaptureDependencies, a hook holding the stream), and an
 *    allocation the driver serves itself (a pool graphmem does not serve). Then z is allocated
 *    (in w's bytes) and a host function runs on it. Every node of the graph must come before that
 *    last host function: one leaf, as the driver's graph has. A marker that took its own last
 *    marker as the frontier past one of these calls leaves that call's node a second leaf (its
 *    work may then run beside the use of z, in the same bytes).
 * 3. A capture ended on another stream, and a stream destroyed, make the next marker ask.
 * 4. A stripe's mark is shared by its streams (frontier_lock.c): a marker on one stream, a host
 *    function there, a marker on a stream of the same stripe, then an allocation on the first
 *    must ask (its thread's mark is from the other stream): its graph keeps one leaf, and no
 *    marker goes into the other stream's graph. (Taking the other stream's marker would also be
 *    caught after the fact: the SET across graphs fails and the marker is made again after
 *    asking, the fallback for a failed marker on a known frontier.)
 * 5. With another thread holding a stream of the same stripe (held in the mock's update), the
 *    allocation's lock is not taken at once: it asks first, then takes the lock; a free right
 *    after it then asks only that once, and the graph keeps one leaf.
 * 6. An allocation that entered with no capture anywhere (the entry's idle path, straight to the
 *    driver) and reached the driver after a capture began on its stream and a marker was made
 *    there (held in the mock's allocation meanwhile) is captured after that marker: the next
 *    marker must ask, and the graph keeps one leaf. */
#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_test.h"

static CUstream s;

static void host_function(void *arg) {
    (void)arg;
}

/* ---- 1: pairs ------------------------------------------------------------------------------- */

static int pairs_skip_queries(bool known_wanted) {
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    long before = gm_mock_capture_queries();
    for (int i = 0; i < 50; i++) {
        CUdeviceptr p = 0;
        CK(cuMemAllocAsync(&p, 4096, s));
        CK(cuMemFreeAsync(p, s));
    }
    long queries = gm_mock_capture_queries() - before;
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    CK(cuGraphDestroy(g));
    bool ok = known_wanted ? queries <= 2 : queries >= 100; /* the first marker asks twice */
    printf("1. 50 pairs made %ld capture queries (%s)\n", queries, ok ? "as expected" : "WRONG");
    return ok ? 0 : 1;
}

/* ---- 2: a call between a marker and the next ------------------------------------------------ */

/* Leaves of `g`: nodes no edge leaves from. */
static size_t leaves(CUgraph g) {
    size_t node_count = 0, edge_count = 0;
    CK(cuGraphGetNodes(g, NULL, &node_count));
    CK(cuGraphGetEdges(g, NULL, NULL, NULL, &edge_count));
    CUgraphNode *nodes = calloc(node_count + 1, sizeof *nodes);
    CUgraphNode *from = calloc(edge_count + 1, sizeof *from);
    CUgraphNode *to = calloc(edge_count + 1, sizeof *to);
    if (nodes == NULL || from == NULL || to == NULL)
        exit(2);
    CK(cuGraphGetNodes(g, nodes, &node_count));
    CK(cuGraphGetEdges(g, from, to, NULL, &edge_count));
    size_t count = 0;
    for (size_t i = 0; i < node_count; i++) {
        bool has_edge_out = false;
        for (size_t j = 0; j < edge_count && !has_edge_out; j++)
            has_edge_out = from[j] == nodes[i];
        count += !has_edge_out;
    }
    free(nodes), free(from), free(to);
    return count;
}

static void *host_function_on_s(void *arg) {
    (void)arg;
    CK(cuLaunchHostFunc(s, host_function, NULL));
    return NULL;
}

typedef enum between {
    HOST_FUNCTION,
    HOST_FUNCTION_OTHER_THREAD,
    ADDED_DEPENDENCY,
    DRIVER_ALLOCATION,
    BETWEEN_KINDS
} between_t;

static const char *const between_names[] = {"a host function", "another thread's host function",
                                            "an added dependency",
                                            "an allocation the driver serves"};

/* A pool graphmem does not know (the mock takes any): the driver makes the node. */
static CUmemoryPool const foreign_pool = (CUmemoryPool)(uintptr_t)0x5eed;

static void call_between(between_t kind, CUgraph graph) {
    if (kind == HOST_FUNCTION) {
        CK(cuLaunchHostFunc(s, host_function, NULL));
    } else if (kind == HOST_FUNCTION_OTHER_THREAD) {
        pthread_t other;
        pthread_create(&other, NULL, host_function_on_s, NULL);
        pthread_join(other, NULL);
    } else if (kind == ADDED_DEPENDENCY) {
        CUgraphNode added;
        CK(cuGraphAddEmptyNode(&added, graph, NULL, 0));
        CK(cuStreamUpdateCaptureDependencies(s, &added, NULL, 1,
                                             CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
    } else {
        CUdeviceptr p = 0;
        CK(cuMemAllocFromPoolAsync(&p, 4096, foreign_pool, s));
    }
}

static int call_between_markers(between_t kind) {
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUstreamCaptureStatus status;
    CUgraph graph = NULL;
    CK(cuStreamGetCaptureInfo(s, &status, NULL, &graph, NULL, NULL, NULL));
    CUdeviceptr w = 0, z = 0;
    CK(cuMemAllocAsync(&w, 4096, s));
    call_between(kind, graph);
    CK(cuMemFreeAsync(w, s));
    CK(cuMemAllocAsync(&z, 4096, s));
    CK(cuLaunchHostFunc(s, host_function, NULL));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    size_t count = leaves(g);
    CK(cuGraphDestroy(g));
    printf("2. with %s between two markers, the graph has %zu leaves (%s)\n", between_names[kind],
           count, count == 1 ? "as the driver's" : "the driver's has ONE");
    return count == 1 ? 0 : 1;
}

/* ---- 3: an end elsewhere -------------------------------------------------------------------- */

static int end_elsewhere_asks_again(bool known_wanted) {
    CUstream other;
    CK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CK(cuStreamBeginCapture(other, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUdeviceptr p = 0, q = 0;
    CK(cuMemAllocAsync(&p, 4096, s));
    CUgraph g_other;
    CK(cuStreamEndCapture(other, &g_other));
    long before = gm_mock_capture_queries();
    CK(cuMemAllocAsync(&q, 4096, s));
    long queries = gm_mock_capture_queries() - before;
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    CK(cuGraphDestroy(g));
    CK(cuGraphDestroy(g_other));
    CK(cuStreamDestroy(other));
    bool ok = !known_wanted || queries == 1;
    printf("3. after a capture ended on another stream, the next marker made %ld capture queries "
           "(%s)\n",
           queries, ok ? "as expected" : "WRONG");
    return ok ? 0 : 1;
}

static int stream_destroyed_asks_again(bool known_wanted) {
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUdeviceptr p = 0, q = 0;
    CK(cuMemAllocAsync(&p, 4096, s));
    CUstream other;
    CK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CK(cuStreamDestroy(other));
    long before = gm_mock_capture_queries();
    CK(cuMemAllocAsync(&q, 4096, s));
    long queries = gm_mock_capture_queries() - before;
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    CK(cuGraphDestroy(g));
    bool ok = !known_wanted || queries == 1;
    printf("3. after a stream was destroyed, the next marker made %ld capture queries (%s)\n",
           queries, ok ? "as expected" : "WRONG");
    return ok ? 0 : 1;
}

/* ---- 4 and 5: streams of one stripe --------------------------------------------------------- */

/* The stripe frontier_lock.c puts a handle on (its hash, copied here). */
static unsigned stripe_index(CUstream stream) {
    return (unsigned)(((uint64_t)(uintptr_t)stream * 0x9E3779B97F4A7C15ull) >> 56);
}

/* A new stream on `stream`'s stripe (the others made on the way are destroyed). */
static CUstream stripe_mate(CUstream stream) {
    static CUstream made[1024];
    int count = 0;
    CUstream mate = NULL;
    while (mate == NULL && count < 1024) {
        CK(cuStreamCreate(&made[count], CU_STREAM_NON_BLOCKING));
        if (stripe_index(made[count]) == stripe_index(stream))
            mate = made[count];
        count++;
    }
    for (int i = 0; i < count; i++)
        if (made[i] != mate)
            CK(cuStreamDestroy(made[i]));
    return mate;
}

static int marks_of_one_stripe(CUstream mate) {
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CK(cuStreamBeginCapture(mate, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUdeviceptr w = 0, m = 0, z = 0;
    CK(cuMemAllocAsync(&w, 4096, s));
    CK(cuLaunchHostFunc(s, host_function, NULL));
    CK(cuMemAllocAsync(&m, 4096, mate));
    CK(cuMemAllocAsync(&z, 4096, s));
    CK(cuLaunchHostFunc(s, host_function, NULL));
    CUgraph g, g_mate;
    CK(cuStreamEndCapture(s, &g));
    CK(cuStreamEndCapture(mate, &g_mate));
    size_t count = leaves(g), mate_nodes = 0;
    CK(cuGraphGetNodes(g_mate, NULL, &mate_nodes));
    CK(cuGraphDestroy(g));
    CK(cuGraphDestroy(g_mate));
    bool ok = count == 1 && mate_nodes == 1;
    printf("4. after a marker on a stream of the same stripe, the graph has %zu leaves and the "
           "other %zu nodes (%s)\n",
           count, mate_nodes, ok ? "as the driver's" : "the driver's have ONE each");
    return ok ? 0 : 1;
}

static CUstream held_mate;

static void *hold_mate(void *arg) {
    (void)arg;
    gm_mock_hold_next_update();
    CK(cuStreamUpdateCaptureDependencies(held_mate, NULL, NULL, 0,
                                         CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
    return NULL;
}

static int lock_not_taken_at_once(CUstream mate, bool known_wanted) {
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CK(cuStreamBeginCapture(mate, CU_STREAM_CAPTURE_MODE_RELAXED));
    held_mate = mate;
    pthread_t holder;
    pthread_create(&holder, NULL, hold_mate, NULL);
    gm_mock_wait_held();
    CUdeviceptr w = 0, z = 0;
    CK(cuMemAllocAsync(&w, 4096, s));
    CK(cuLaunchHostFunc(s, host_function, NULL));
    CK(cuMemAllocAsync(&z, 4096, s));
    long before = gm_mock_capture_queries();
    CK(cuMemFreeAsync(z, s));
    long queries = gm_mock_capture_queries() - before;
    CK(cuLaunchHostFunc(s, host_function, NULL));
    gm_mock_release_update();
    pthread_join(holder, NULL);
    CUgraph g, g_mate;
    CK(cuStreamEndCapture(s, &g));
    CK(cuStreamEndCapture(mate, &g_mate));
    size_t count = leaves(g);
    CK(cuGraphDestroy(g));
    CK(cuGraphDestroy(g_mate));
    bool ok = count == 1 && queries == (known_wanted ? 1 : 2);
    printf(
        "5. beside a held stream of the same stripe, a free after an allocation made %ld capture "
        "queries and the graph has %zu leaves (%s)\n",
        queries, count, ok ? "as expected" : "WRONG");
    return ok ? 0 : 1;
}

/* ---- 6: an allocation that raced a begin ---------------------------------------------------- */

static void *allocate_on_s(void *arg) {
    gm_mock_hold_next_allocation();
    CK(cuMemAllocAsync((CUdeviceptr *)arg, 4096, s));
    return NULL;
}

static int raced_allocation_ends_the_frontier(void) {
    CUdeviceptr raced = 0, w = 0, z = 0;
    pthread_t racer;
    pthread_create(&racer, NULL, allocate_on_s, &raced);
    gm_mock_wait_held();
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CK(cuMemAllocAsync(&w, 4096, s));
    gm_mock_release_update();
    pthread_join(racer, NULL);
    CK(cuMemFreeAsync(w, s));
    CK(cuMemAllocAsync(&z, 4096, s));
    CK(cuLaunchHostFunc(s, host_function, NULL));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    size_t count = leaves(g);
    CK(cuGraphDestroy(g));
    printf("6. with an allocation that raced the capture's begin between two markers, the graph "
           "has %zu leaves (%s)\n",
           count, count == 1 ? "as the driver's" : "the driver's has ONE");
    return count == 1 ? 0 : 1;
}

int main(int argc, char **argv) {
    bool known_wanted = argc < 2 || strcmp(argv[1], "off") != 0;
    s = mock_test_stream(NULL);
    int failed = pairs_skip_queries(known_wanted);
    for (between_t kind = 0; kind < BETWEEN_KINDS; kind++)
        failed |= call_between_markers(kind);
    failed |= end_elsewhere_asks_again(known_wanted);
    failed |= stream_destroyed_asks_again(known_wanted);
    CUstream mate = stripe_mate(s);
    if (mate == NULL) {
        printf("no stream on the first one's stripe in 1024\n");
        return 2;
    }
    failed |= marks_of_one_stripe(mate);
    failed |= lock_not_taken_at_once(mate, known_wanted);
    failed |= raced_allocation_ends_the_frontier();
    CK(cuStreamDestroy(mate));
    CK(cuStreamDestroy(s));
    return failed;
}
