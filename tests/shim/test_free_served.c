/* cuMemFreeAsync of a graph allocation graphmem serves (shim/hooks/alloc_hooks.c) on a stream the
 * driver refuses: one destroyed, or one whose capture was invalidated. The driver never sees such
 * a free, so graphmem must answer with the driver's error and free nothing (§A4.11), whether the
 * exec that made the allocation lives or was destroyed. Such a free was taken for one outside
 * graphs: it answered CUDA_ERROR_UNKNOWN where the driver refused the fence's event record, and
 * freed the allocation where the driver took it. The hook runs over the real engine, with the
 * host backend's memory and the CUDA backend's fences (backend_cuda.c) over a driver of plain
 * structs: streams that tell their capture status and refuse an event record as the driver is
 * expected to (the codes are not measured: tests/gpu/scn_free_dead_stream.cu).
 * Also, under GRAPHMEM_UAF_CHECK=1, which synchronizes an async free's stream before unmapping:
 * a free on the legacy default stream, NULL or CU_STREAM_LEGACY named through either ABI, is not
 * waited for (ac728da: the named handle was), while a created stream and the per-thread default
 * stream are.
 * Also: a free of an address graphmem may own but does not goes to the driver. And the driver's
 * capture rules for frees it never sees: cuMemFree while a capture forbids it (the driver's answer
 * to cuMemFree(0) in the caller's mode), and an async free on the legacy stream while a blocking
 * stream captures (the fence's record there, refused with IMPLICIT). */
#include <string.h>

#include "check.h"
#include "engine_sim.h"
#include "fake_capture.h"
#include "backend_cuda.h"
#include "captures.h"
#include "engine_glue.h"
#include "engine_internal.h"
#include "options.h"

/* What the rest of the shim (interpose/) would give. */
gm_shim_hot_t gm_shim_hot = {.mode = GM_MODE_ACTIVE};
_Thread_local int gm_shim_busy;
void *gm_driver_handle(void) {
    return NULL;
}
const char *gm_driver_resolve(void *driver) {
    (void)driver;
    return "no driver in this test";
}
void gm_shim_fall_back(const char *reason) {
    (void)reason;
}
const cpu_set_t *gm_start_cpus(void) {
    return NULL;
}

/* A stream of the fake driver: fake_capture.h's, plus a destroyed flag (a driver that still
 * recognizes the handle and refuses it) and the events recorded on it. An event record on an
 * invalidated capture is refused, unless `lenient` (what the driver does there is not measured). */
typedef struct stream {
    fake_stream_t capture; /* first: the handle is the struct */
    bool destroyed, lenient;
    unsigned records;
} stream_t;

static CUstream handle(stream_t *s) {
    return (CUstream)s;
}

/* NULL, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD: no stream_t behind the handle; an idle stream
 * outside any capture. */
static bool default_handle(CUstream stream) {
    return stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

static unsigned default_records;

/* A blocking stream captures: the legacy stream's capture query answers IMPLICIT and leaves the
 * capture going; an event record there is refused with IMPLICIT, which invalidates the capture
 * (tests/probe/free_mode_mirror.cu). */
static bool blocking_capture;
static unsigned implicit_refusals;

static bool legacy_handle(CUstream stream) {
    return stream == NULL || stream == CU_STREAM_LEGACY;
}

/* A stream on which another thread begins a capture right after graphmem's next status query. */
static stream_t *begins_after_query;

static CUresult CUDAAPI capture_info(CUstream stream, CUstreamCaptureStatus *status, cuuint64_t *id,
                                     CUgraph *graph, const CUgraphNode **tails,
                                     const CUgraphEdgeData **edges, size_t *count) {
    if (blocking_capture && legacy_handle(stream))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (default_handle(stream)) {
        *status = CU_STREAM_CAPTURE_STATUS_NONE;
        return CUDA_SUCCESS;
    }
    if (((stream_t *)stream)->destroyed)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = fake_capture_info(stream, status, id, graph, tails, edges, count);
    if (edges != NULL)
        *edges = NULL;
    if ((stream_t *)stream == begins_after_query) {
        fake_stream_capture(&begins_after_query->capture, 7, NULL);
        begins_after_query = NULL;
    }
    return r;
}

static CUresult CUDAAPI event_record(CUevent event, CUstream stream) {
    (void)event;
    if (blocking_capture && legacy_handle(stream)) {
        implicit_refusals++;
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    if (default_handle(stream)) {
        default_records++;
        return CUDA_SUCCESS;
    }
    stream_t *s = (stream_t *)stream;
    if (s->destroyed)
        return CUDA_ERROR_INVALID_HANDLE;
    if (atomic_load(&s->capture.status) == CU_STREAM_CAPTURE_STATUS_INVALIDATED && !s->lenient)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    s->records++;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI stream_ctx(CUstream stream, CUcontext *context) {
    if (!default_handle(stream) && ((stream_t *)stream)->destroyed)
        return CUDA_ERROR_INVALID_HANDLE;
    *context = (CUcontext)0xC0;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI ctx_current(CUcontext *context) {
    *context = (CUcontext)0xC0;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI event_create(CUevent *event, unsigned int flags) {
    static uintptr_t next = 0xE000;
    (void)flags;
    *event = (CUevent)(next += 16);
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI event_ok(CUevent event) {
    (void)event;
    return CUDA_SUCCESS; /* query: done; destroy */
}

static CUresult CUDAAPI stream_ok(CUstream stream) {
    (void)stream;
    return CUDA_SUCCESS; /* query: idle; synchronize */
}

/* Host waits for a stream: how many, through which ABI, and the last stream waited for. */
static unsigned syncs, syncs_ptsz;
static CUstream synced;

static CUresult CUDAAPI sync_counted(CUstream stream) {
    syncs++;
    synced = stream;
    return CUDA_SUCCESS;
}

static CUresult CUDAAPI sync_counted_ptsz(CUstream stream) {
    syncs_ptsz++;
    synced = stream;
    return CUDA_SUCCESS;
}

/* A captured free's marker: this driver makes no nodes (the captured path is tested elsewhere). */
static CUresult CUDAAPI no_node(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                size_t count) {
    (void)node, (void)graph, (void)deps, (void)count;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* The driver's cuMemFree: what it answers for cuMemFree(0) in the caller's mode (the rule a capture
 * in flight may forbid it by), and the addresses it was asked for. */
static CUresult mode_answer;
static unsigned mirror_asks, other_frees;

static CUresult CUDAAPI driver_mem_free(CUdeviceptr dptr) {
    if (dptr != 0) {
        other_frees++;
        return CUDA_ERROR_INVALID_VALUE;
    }
    mirror_asks++;
    return mode_answer;
}

/* A node's dependencies: none known to this driver (asked for a marker's lead, engine.h). */
static CUresult CUDAAPI no_dependencies(CUgraphNode node, CUgraphNode *deps, CUgraphEdgeData *edges,
                                        size_t *count) {
    (void)node, (void)deps, (void)edges, (void)count;
    return CUDA_ERROR_INVALID_VALUE;
}

static void driver_install(void) {
    fake_capture_install();
    gm_real.cuStreamGetCaptureInfo_v3 = capture_info;
    gm_real.cuStreamGetCaptureInfo_v3_ptsz = capture_info;
    gm_drv.cuEventRecord = event_record;
    gm_drv.cuStreamGetCtx = stream_ctx;
    gm_drv.cuCtxGetCurrent = ctx_current;
    gm_drv.cuEventCreate = event_create;
    gm_drv.cuEventQuery = event_ok;
    gm_drv.cuEventDestroy_v2 = event_ok;
    gm_drv.cuStreamQuery = stream_ok;
    gm_drv.cuStreamSynchronize = stream_ok;
    gm_drv.cuStreamSynchronize_ptsz = stream_ok;
    gm_drv.cuGraphAddEmptyNode = no_node;
    gm_drv.cuGraphNodeGetDependencies_v2 = no_dependencies;
    gm_real.cuMemFree_v2 = driver_mem_free;
}

/* The engine over the host backend's memory and the CUDA backend's fences, as the hooks'. */
static bool world_init(sim_t *s) {
    memset(s, 0, sizeof *s);
    s->config = sim_default_config();
    s->hb = host_backend_create(sim_page(), s->config.device_count);
    if (!s->hb)
        return false;
    gm_backend_t mixed = *host_backend_ops(s->hb), cuda;
    gm_backend_cuda_init(&cuda, sim_page());
    mixed.fence_record = cuda.fence_record;
    mixed.fence_query = cuda.fence_query;
    mixed.fence_wait_stream = cuda.fence_wait_stream;
    mixed.fence_wait_host = cuda.fence_wait_host;
    mixed.fence_destroy = cuda.fence_destroy;
    mixed.stream_sync = cuda.stream_sync;
    mixed.fence_may_defer = cuda.fence_may_defer;
    mixed.stream_idle = cuda.stream_idle;
    s->engine = gm_engine_create(&mixed, &s->config);
    s->next_key = 0x1000;
    atomic_store(&gm_shim_hot.engine, s->engine);
    return s->engine != NULL;
}

static void world_fini(sim_t *s) {
    atomic_store(&gm_shim_hot.engine, NULL);
    gm_engine_destroy(s->engine);
    CHECK(host_backend_check_clean(s->hb));
    host_backend_destroy(s->hb);
}

#define EXEC 0xE1

/* The world, and in it an allocation its graph leaves live, launched once on `launch`; the exec
 * destroyed unless `exec_alive`. 0 when the world could not be made (live_allocation_end ends
 * both). */
static uint64_t live_allocation(sim_t *s, sim_graph_t *g, stream_t *launch, bool exec_alive) {
    if (!world_init(s))
        return 0;
    sim_one_alloc_graph(s, g, 256u << 10, true);
    if (sim_instantiate(s, g, EXEC, 0) != GM_OK ||
        sim_launch(s, EXEC, (uint64_t)(uintptr_t)handle(launch)) != GM_OK)
        return 0;
    if (!exec_alive)
        gm_engine_exec_destroy(s->engine, EXEC, GM_NO_CALL);
    return g->va[0];
}

/* The end of a test of live_allocation: its exec (when still alive), its graph, the world. */
static void live_allocation_end(sim_t *s, sim_graph_t *g, bool exec_alive) {
    if (exec_alive)
        gm_engine_exec_destroy(s->engine, EXEC, GM_NO_CALL);
    sim_graph_destroy(s->engine, g->key);
    world_fini(s);
}

/* A stream the driver refuses gets the driver's error, and the allocation stays live: a free on a
 * good stream then ends it, and one more is refused as not live (§A8.6). `captures`: captures in
 * flight elsewhere (graphmem asks a stream's capture status only then). */
static void refused(bool exec_alive, bool destroyed, bool lenient, long captures,
                    CUresult expected) {
    sim_t s;
    stream_t launch = {0}, bad = {0}, good = {0};
    sim_graph_t g;
    uint64_t va = live_allocation(&s, &g, &launch, exec_alive);
    REQUIRE(va != 0);
    bad.destroyed = destroyed;
    bad.lenient = lenient;
    if (!destroyed) {
        fake_stream_capture(&bad.capture, 9, NULL);
        atomic_store(&bad.capture.status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    }
    atomic_store(&gm_shim_hot.captures_in_flight, captures);
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, handle(&bad)), expected);
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync_ptsz((CUdeviceptr)va, handle(&bad)), expected);
    CHECK_EQ_INT(bad.records, 0);
    atomic_store(&gm_shim_hot.captures_in_flight, 0);
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, handle(&good)), CUDA_SUCCESS);
    CHECK_EQ_INT(good.records, 1);
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, handle(&good)), CUDA_ERROR_INVALID_VALUE);
    live_allocation_end(&s, &g, exec_alive);
}

/* The capture was invalidated: the stream's status says so (§A4.11). */
static void test_invalidated_exec_alive(void) {
    refused(true, false, false, 1, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

static void test_invalidated_exec_destroyed(void) {
    refused(false, false, false, 1, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

/* Whatever an event record there does: the status alone refuses the free (the free was taken as
 * one outside graphs, and ended the allocation, when the record went through). */
static void test_invalidated_record_accepted(void) {
    refused(true, false, true, 1, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    refused(false, false, true, 1, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

/* Invalidated after graphmem found no capture on the stream (played by not asking: no capture
 * in flight when it looked): the driver refuses the fence's record, and its code is the answer. */
static void test_invalidated_unasked(void) {
    refused(false, false, false, 0, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

/* A destroyed stream the driver still tells apart: its error, from the status query while a
 * capture is in flight, else from the fence's record. */
static void test_destroyed_exec_alive(void) {
    refused(true, true, false, 0, CUDA_ERROR_INVALID_HANDLE);
    refused(true, true, false, 1, CUDA_ERROR_INVALID_HANDLE);
}

static void test_destroyed_exec_destroyed(void) {
    refused(false, true, false, 0, CUDA_ERROR_INVALID_HANDLE);
    refused(false, true, false, 1, CUDA_ERROR_INVALID_HANDLE);
}

/* A capture begins on the stream (another thread's cuStreamBeginCapture) right after graphmem
 * found it outside captures: the free is asked again in one step with its fence's record, so the
 * record never lands in the capture, which gets the free as a marker instead (before, the fence
 * was recorded into the capture and the free taken as one outside graphs). */
static void test_capture_begins_after_query(void) {
    sim_t s;
    stream_t launch = {0}, racing = {0};
    sim_graph_t g;
    uint64_t va = live_allocation(&s, &g, &launch, true);
    REQUIRE(va != 0);
    atomic_store(&gm_shim_hot.captures_in_flight, 1);
    begins_after_query = &racing;
    /* The captured path's marker, refused by this driver: the free changes nothing. */
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, handle(&racing)),
                 CUDA_ERROR_NOT_SUPPORTED);
    CHECK(atomic_load(&racing.capture.status) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_EQ_INT(racing.records, 0);
    CHECK(racing.capture.asks >= 2); /* asked again before the record */
    atomic_store(&gm_shim_hot.captures_in_flight, 0);
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, handle(&launch)), CUDA_SUCCESS);
    live_allocation_end(&s, &g, true);
}

/* An async free of a live allocation on `stream` through the legacy (`ptsz` false) or per-thread
 * ABI, under GRAPHMEM_UAF_CHECK=1: whether graphmem waited for the stream on the host first. */
static void free_under_uaf_check(CUstream stream, bool ptsz, bool waited) {
    sim_t s;
    stream_t launch = {0};
    sim_graph_t g;
    uint64_t va = live_allocation(&s, &g, &launch, true);
    REQUIRE(va != 0);
    gm_drv.cuStreamSynchronize = sync_counted;
    gm_drv.cuStreamSynchronize_ptsz = sync_counted_ptsz;
    syncs = syncs_ptsz = default_records = 0;
    synced = (CUstream)(uintptr_t)0xBAD;
    CUresult freed = ptsz ? gm_hook_cuMemFreeAsync_ptsz((CUdeviceptr)va, stream)
                          : gm_hook_cuMemFreeAsync((CUdeviceptr)va, stream);
    CHECK_EQ_INT(freed, CUDA_SUCCESS);
    CHECK_EQ_INT(default_records, (int)default_handle(stream)); /* the free's fence */
    CHECK_EQ_INT(syncs + syncs_ptsz, (int)waited);
    if (waited) {
        CHECK_EQ_INT(ptsz ? syncs_ptsz : syncs, 1);
        CHECK(synced == stream);
    }
    gm_drv.cuStreamSynchronize = stream_ok;
    gm_drv.cuStreamSynchronize_ptsz = stream_ok;
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, handle(&launch)),
                 CUDA_ERROR_INVALID_VALUE); /* freed: no longer live */
    live_allocation_end(&s, &g, true);
}

static void test_legacy_not_waited_under_uaf_check(void) {
    char *uaf[] = {"GRAPHMEM_UAF_CHECK=1", NULL}, *none[] = {NULL};
    REQUIRE(gm_options_load(uaf) == 0);
    stream_t created = {0};
    free_under_uaf_check(CU_STREAM_LEGACY, false, false);
    free_under_uaf_check(CU_STREAM_LEGACY, true, false);
    free_under_uaf_check(NULL, false, false);
    /* Waited for: the per-thread default stream (NULL in the per-thread ABI, or named) and a
     * created stream. */
    free_under_uaf_check(NULL, true, true);
    free_under_uaf_check(CU_STREAM_PER_THREAD, false, true);
    free_under_uaf_check(handle(&created), false, true);
    free_under_uaf_check(handle(&created), true, true);
    gm_options_load(none);
}

/* The driver's own free, for frees graphmem passes on: counted, with a code of its own. */
static unsigned driver_frees;

static CUresult CUDAAPI driver_free(CUdeviceptr dptr, CUstream stream) {
    (void)dptr, (void)stream;
    driver_frees++;
    return CUDA_ERROR_NOT_PERMITTED;
}

/* An address the lock-free set cannot rule out (gm_engine_may_own: here every address, as after
 * a failed insert into the set) that is no allocation graphmem owns: its free, refused by the
 * served path, goes to the driver and gets the driver's answer, outside captures and in one, as
 * it did when ownership was asked first under the engine lock. */
static void test_unowned_address_goes_to_the_driver(void) {
    sim_t s;
    REQUIRE(world_init(&s));
    gm_real.cuMemFreeAsync = driver_free;
    gm_real.cuMemFreeAsync_ptsz = driver_free;
    driver_frees = 0;
    atomic_store(&s.engine->address_keys_partial, true);
    stream_t idle = {0}, capturing = {0};
    const CUdeviceptr other = 0x7f0000100000;
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync(other, handle(&idle)), CUDA_ERROR_NOT_PERMITTED);
    CHECK_EQ_INT(driver_frees, 1);
    fake_stream_capture(&capturing.capture, 11, NULL);
    atomic_store(&gm_shim_hot.captures_in_flight, 1);
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync_ptsz(other, handle(&capturing)), CUDA_ERROR_NOT_PERMITTED);
    CHECK_EQ_INT(driver_frees, 2);
    CHECK_EQ_INT(idle.records + capturing.records, 0);
    atomic_store(&gm_shim_hot.captures_in_flight, 0);
    world_fini(&s);
}

/* A free on the legacy stream (named through either ABI) while a blocking stream captures: the
 * driver's own free there answers IMPLICIT and invalidates the capture, freeing nothing. graphmem
 * goes on to the fence's record, which the driver refuses the same way (before, it answered the
 * query's IMPLICIT and left the capture going: no record was tried). */
static void test_legacy_free_while_blocking_captures(void) {
    sim_t s;
    stream_t launch = {0};
    sim_graph_t g;
    uint64_t va = live_allocation(&s, &g, &launch, true);
    REQUIRE(va != 0);
    atomic_store(&gm_shim_hot.captures_in_flight, 1);
    blocking_capture = true;
    implicit_refusals = 0;
    /* Each tried the record there (a recycled fence, then a new one): the capture invalidated,
     * as by the driver's free. */
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, CU_STREAM_LEGACY),
                 CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    unsigned first = implicit_refusals;
    CHECK(first >= 1);
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync_ptsz((CUdeviceptr)va, CU_STREAM_LEGACY),
                 CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CHECK(implicit_refusals > first);
    blocking_capture = false;
    atomic_store(&gm_shim_hot.captures_in_flight, 0);
    /* Still live: a free then ends it, and one more is refused. */
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, handle(&launch)), CUDA_SUCCESS);
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, handle(&launch)),
                 CUDA_ERROR_INVALID_VALUE);
    /* Freed again there: the driver refuses the stream before it looks at the pointer (H200),
     * so IMPLICIT and the capture invalidated, not INVALID_VALUE (before: no record was tried). */
    atomic_store(&gm_shim_hot.captures_in_flight, 1);
    blocking_capture = true;
    unsigned before = implicit_refusals;
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, CU_STREAM_LEGACY),
                 CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CHECK(implicit_refusals > before);
    blocking_capture = false;
    atomic_store(&gm_shim_hot.captures_in_flight, 0);
    live_allocation_end(&s, &g, true);
}

/* cuMemFree of a graph allocation: the driver's rule for cuMemFree is asked first (cuMemFree(0)):
 * while a capture is in flight it may forbid the call, and any time the context may hold a sticky
 * error; where it refuses, its code is the answer and nothing is freed (before, graphmem freed and
 * answered success where the driver invalidates the capture). The address itself never goes to
 * it. */
static void test_mem_free_asks_the_capture_rule(void) {
    sim_t s;
    stream_t launch = {0};
    sim_graph_t g;
    uint64_t va = live_allocation(&s, &g, &launch, true);
    REQUIRE(va != 0);
    mirror_asks = other_frees = 0;
    atomic_store(&gm_shim_hot.captures_in_flight, 1);
    mode_answer = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    CHECK_EQ_INT(gm_hook_cuMemFree_v2((CUdeviceptr)va), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_EQ_INT(mirror_asks, 1);
    /* Allowed (a Relaxed thread, another thread's ThreadLocal capture): freed. */
    mode_answer = CUDA_SUCCESS;
    CHECK_EQ_INT(gm_hook_cuMemFree_v2((CUdeviceptr)va), CUDA_SUCCESS);
    CHECK_EQ_INT(mirror_asks, 2);
    atomic_store(&gm_shim_hot.captures_in_flight, 0);
    CHECK_EQ_INT(gm_hook_cuMemFree_v2((CUdeviceptr)va), CUDA_ERROR_INVALID_VALUE); /* not live */
    CHECK_EQ_INT(mirror_asks, 3);
    CHECK_EQ_INT(other_frees, 0);
    live_allocation_end(&s, &g, true);
}

/* A kernel's fault left the context with a sticky error, which the driver answers every call with
 * before it looks at the pointer (the H200, tests/gpu/scn_free_after_fault.cu: cudaFree of an
 * allocation whose graph never launched read cudaErrorIllegalAddress natively,
 * cudaErrorInvalidValue under graphmem): a free of a live allocation frees nothing and answers it,
 * and so does a free graphmem refuses (not live), synchronous or on a stream. */
static void test_sticky_error_answers_first(void) {
    sim_t s;
    stream_t launch = {0}, other = {0};
    sim_graph_t g;
    uint64_t va = live_allocation(&s, &g, &launch, true);
    REQUIRE(va != 0);
    mirror_asks = other_frees = 0;
    mode_answer = CUDA_ERROR_ILLEGAL_ADDRESS;
    CHECK_EQ_INT(gm_hook_cuMemFree_v2((CUdeviceptr)va), CUDA_ERROR_ILLEGAL_ADDRESS);
    mode_answer = CUDA_SUCCESS;
    CHECK_EQ_INT(gm_hook_cuMemFree_v2((CUdeviceptr)va), CUDA_SUCCESS); /* it was still live */
    mode_answer = CUDA_ERROR_ILLEGAL_ADDRESS;
    CHECK_EQ_INT(gm_hook_cuMemFree_v2((CUdeviceptr)va), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, (CUstream)&other),
                 CUDA_ERROR_ILLEGAL_ADDRESS);
    mode_answer = CUDA_SUCCESS;
    CHECK_EQ_INT(gm_hook_cuMemFreeAsync((CUdeviceptr)va, (CUstream)&other),
                 CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ_INT(other_frees, 0);
    live_allocation_end(&s, &g, true);
}

int main(void) {
    driver_install();
    RUN_TEST(test_invalidated_exec_alive);
    RUN_TEST(test_invalidated_exec_destroyed);
    RUN_TEST(test_invalidated_record_accepted);
    RUN_TEST(test_invalidated_unasked);
    RUN_TEST(test_destroyed_exec_alive);
    RUN_TEST(test_destroyed_exec_destroyed);
    RUN_TEST(test_legacy_not_waited_under_uaf_check);
    RUN_TEST(test_capture_begins_after_query);
    RUN_TEST(test_unowned_address_goes_to_the_driver);
    RUN_TEST(test_legacy_free_while_blocking_captures);
    RUN_TEST(test_mem_free_asks_the_capture_rule);
    RUN_TEST(test_sticky_error_answers_first);
    return gm_check_summary();
}
