/* Two threads enqueueing into one capturing stream (shim/README.md, "Capture safety", frontier
 * locks), over the mock driver, which can hold one thread's next dependency update
 * (gm_mock_hold_next_update). Three scenarios; exit 1 when one fails.
 * 1. Thread B's cuMemAllocAsync is held after its capture query and marker node, before
 *    graphmem's frontier SET. Thread A meanwhile runs a host function (k0), allocates w, runs one
 * on it (k_w), frees it and allocates z (z may take w's bytes); B is let go once A is done, or
 * after a second if A waits for it. A's next host function (k_z, on z) must come after k_w, and k_w
 *    after k0: neither may drop out of the stream's order behind B's marker (with z in w's bytes,
 *    that would be two live allocations sharing bytes).
 * 2. A stream that does not capture, while another one does: a thread blocked inside a call on it
 *    (a host function the mock runs at once, waiting) must not hold up an allocation and a free on
 *    it, as the driver would not.
 * 3. A thread cancelled inside a call made under a stream's lock (held in the mock's update) must
 *    leave the lock free: an allocation on that capturing stream then goes through.
 * 4. A hooked entry (cuStreamUpdateCaptureDependencies, ADD) from thread A while B's allocation
 *    is held before its SET: A's added node must stay in the stream's order, so that A's next host
 *    function follows it. */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "mock_test.h"

static CUstream s;
static CUcontext ctx;
static CUdeviceptr b_ptr;

static void kernel(void *arg) {
    (void)arg;
}

static void *thread_b(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    gm_mock_hold_next_update();
    CK(cuMemAllocAsync(&b_ptr, 4096, s));
    return NULL;
}

/* The node a captured operation just made: the stream's one dependency now. */
static CUgraphNode last_node(void) {
    CUstreamCaptureStatus status;
    const CUgraphNode *deps = NULL;
    size_t n = 0;
    CK(cuStreamGetCaptureInfo(s, &status, NULL, NULL, &deps, NULL, &n));
    return n == 1 ? deps[0] : NULL;
}

static int reaches(CUgraphNode from, CUgraphNode to, int depth) {
    if (from == to)
        return 1;
    if (depth > 64)
        return 0;
    CUgraphNode deps[16];
    size_t n = 16;
    CK(cuGraphNodeGetDependencies(to, deps, NULL, &n));
    for (size_t i = 0; i < n; i++)
        if (reaches(from, deps[i], depth + 1))
            return 1;
    return 0;
}

static CUdeviceptr w, z;
static CUgraphNode k0, k_w;
static atomic_bool a_done;

static void *thread_a(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    CK(cuLaunchHostFunc(s, kernel, NULL));
    k0 = last_node();
    CK(cuMemAllocAsync(&w, 4096, s));
    CK(cuLaunchHostFunc(s, kernel, NULL));
    k_w = last_node();
    CK(cuMemFreeAsync(w, s));
    CK(cuMemAllocAsync(&z, 4096, s));
    atomic_store(&a_done, true);
    return NULL;
}

/* Whether `done` is set within a second. */
static bool within_a_second(atomic_bool *done) {
    for (int ms = 0; ms < 1000 && !atomic_load(done); ms++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    return atomic_load(done);
}

static int two_threads_one_stream(void) {
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    pthread_t a, b;
    pthread_create(&b, NULL, thread_b, NULL);
    gm_mock_wait_held();
    pthread_create(&a, NULL, thread_a, NULL);
    bool a_waited = !within_a_second(&a_done);
    gm_mock_release_update();
    pthread_join(b, NULL);
    pthread_join(a, NULL);
    CK(cuLaunchHostFunc(s, kernel, NULL));
    CUgraphNode k_z = last_node();
    CK(cuMemFreeAsync(z, s));
    CK(cuMemFreeAsync(b_ptr, s));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    int shared = z == w, ordered = reaches(k_w, k_z, 0), first = reaches(k0, k_w, 0);
    printf("1. A %s for B's marker; z %s w's bytes; the host function on w %s the one on z; A's "
           "first host function %s the one on w\n",
           a_waited ? "waited" : "did not wait", shared ? "takes" : "does not take",
           ordered ? "precedes" : "does NOT precede", first ? "precedes" : "does NOT precede");
    CK(cuGraphDestroy(g));
    CK(cuStreamDestroy(s));
    return ordered && first ? 0 : 1;
}

/* ---- 2: a stream that does not capture ------------------------------------------------------ */

static CUstream quiet;
static atomic_bool in_host_function, let_host_function_go, quiet_done;

static void waiting_host_function(void *arg) {
    (void)arg;
    atomic_store(&in_host_function, true);
    while (!atomic_load(&let_host_function_go))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

static void *blocked_in_call(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    CK(cuLaunchHostFunc(quiet, waiting_host_function, NULL));
    return NULL;
}

static void *alloc_and_free_on_quiet(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    CUdeviceptr p = 0;
    CK(cuMemAllocAsync(&p, 4096, quiet));
    CK(cuMemFreeAsync(p, quiet));
    atomic_store(&quiet_done, true);
    return NULL;
}

static int quiet_stream_beside_a_capture(void) {
    CUstream capturing;
    CK(cuStreamCreate(&capturing, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&quiet, CU_STREAM_NON_BLOCKING));
    CK(cuStreamBeginCapture(capturing, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUdeviceptr in_graph = 0;
    CK(cuMemAllocAsync(&in_graph, 4096, capturing)); /* the engine runs */
    pthread_t blocked, other;
    pthread_create(&blocked, NULL, blocked_in_call, NULL);
    while (!atomic_load(&in_host_function))
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    pthread_create(&other, NULL, alloc_and_free_on_quiet, NULL);
    bool went_through = within_a_second(&quiet_done);
    atomic_store(&let_host_function_go, true);
    pthread_join(blocked, NULL);
    pthread_join(other, NULL);
    CK(cuMemFreeAsync(in_graph, capturing));
    CUgraph g;
    CK(cuStreamEndCapture(capturing, &g));
    CK(cuGraphDestroy(g));
    printf("2. an allocation and a free on a stream that does not capture %s for a call blocked "
           "there\n",
           went_through ? "did not wait" : "WAITED");
    return went_through ? 0 : 1;
}

/* ---- 3: cancelled under a stream's lock ----------------------------------------------------- */

static CUstream victim_stream;
static atomic_bool after_cancel_done;

static void *cancelled_in_update(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    gm_mock_hold_next_update();
    CUgraphNode none = NULL;
    cuStreamUpdateCaptureDependencies(victim_stream, &none, NULL, 0,
                                      CU_STREAM_ADD_CAPTURE_DEPENDENCIES);
    return NULL;
}

static void *alloc_after_cancel(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    CUdeviceptr p = 0;
    CK(cuMemAllocAsync(&p, 4096, victim_stream));
    CK(cuMemFreeAsync(p, victim_stream));
    atomic_store(&after_cancel_done, true);
    return NULL;
}

static int cancelled_holder(void) {
    CK(cuStreamCreate(&victim_stream, CU_STREAM_NON_BLOCKING));
    CK(cuStreamBeginCapture(victim_stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    pthread_t victim, after;
    pthread_create(&victim, NULL, cancelled_in_update, NULL);
    gm_mock_wait_held();
    pthread_cancel(victim);
    pthread_join(victim, NULL);
    pthread_create(&after, NULL, alloc_after_cancel, NULL);
    bool went_through = within_a_second(&after_cancel_done);
    if (!went_through) {
        printf("3. an allocation after a thread was cancelled under the stream's lock WAITED\n");
        fflush(stdout);
        _exit(1); /* the allocating thread waits for good */
    }
    pthread_join(after, NULL);
    CUgraph g;
    CK(cuStreamEndCapture(victim_stream, &g));
    CK(cuGraphDestroy(g));
    printf("3. an allocation after a thread was cancelled under the stream's lock went through\n");
    return 0;
}

/* ---- 4: a hooked entry between a marker's query and its SET ---------------------------------- */

static CUstream fourth;
static CUgraphNode added;
static atomic_bool add_done;

static void *held_alloc(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    gm_mock_hold_next_update();
    CUdeviceptr p = 0;
    CK(cuMemAllocAsync(&p, 4096, fourth));
    return NULL;
}

/* Only the update, a hooked entry (the node was made before B was held). */
static void *add_dependency(void *arg) {
    (void)arg;
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamUpdateCaptureDependencies(fourth, &added, NULL, 1,
                                         CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
    atomic_store(&add_done, true);
    return NULL;
}

static int hooked_entry_between(void) {
    CK(cuStreamCreate(&fourth, CU_STREAM_NON_BLOCKING));
    CK(cuStreamBeginCapture(fourth, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUstreamCaptureStatus status;
    CUgraph graph = NULL;
    CK(cuStreamGetCaptureInfo(fourth, &status, NULL, &graph, NULL, NULL, NULL));
    CK(cuGraphAddEmptyNode(&added, graph, NULL, 0));
    pthread_t held, adder;
    pthread_create(&held, NULL, held_alloc, NULL);
    gm_mock_wait_held();
    pthread_create(&adder, NULL, add_dependency, NULL);
    bool adder_waited = !within_a_second(&add_done);
    gm_mock_release_update();
    pthread_join(held, NULL);
    pthread_join(adder, NULL);
    CK(cuLaunchHostFunc(fourth, kernel, NULL));
    const CUgraphNode *deps = NULL;
    size_t n = 0;
    CK(cuStreamGetCaptureInfo(fourth, &status, NULL, NULL, &deps, NULL, &n));
    CUgraphNode host = n == 1 ? deps[0] : NULL;
    int ordered = host != NULL && reaches(added, host, 0);
    CUgraph g;
    CK(cuStreamEndCapture(fourth, &g));
    CK(cuGraphDestroy(g));
    printf("4. an added dependency %s for the held marker; the next host function %s it\n",
           adder_waited ? "waited" : "did not wait", ordered ? "follows" : "does NOT follow");
    return ordered ? 0 : 1;
}

int main(void) {
    CK(cuInit(0));
    CUdevice d;
    CK(cuDeviceGet(&d, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, d));
    CK(cuCtxSetCurrent(ctx));
    int failed = two_threads_one_stream();
    failed |= quiet_stream_beside_a_capture();
    failed |= hooked_entry_between();
    failed |= cancelled_holder();
    return failed;
}
