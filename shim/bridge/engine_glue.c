#include "engine_glue.h"

#include <pthread.h>

#include "backend_cuda.h"
#include "joins.h"
#include "mempools.h"
#include "nested.h"
#include "streams.h"
#include "side_work.h"
#include "topology.h"
#include "interpose/driver.h"
#include "interpose/frontier_lock.h"
#include "log.h"
#include "options.h"
#include "stats.h"

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool start_failed;
static gm_backend_t backend;
static int device_count;

CUresult gm_cuda_result(gm_status_t status) {
    switch (status) {
    case GM_OK:
        return CUDA_SUCCESS;
    case GM_ERR_INVALID_VALUE:
        return CUDA_ERROR_INVALID_VALUE;
    case GM_ERR_OUT_OF_MEMORY:
        return CUDA_ERROR_OUT_OF_MEMORY;
    case GM_ERR_NOT_SUPPORTED:
        return CUDA_ERROR_NOT_SUPPORTED;
    case GM_ERR_INVALID_DEVICE:
        return CUDA_ERROR_INVALID_DEVICE;
    case GM_ERR_NOT_READY:
        return CUDA_ERROR_NOT_READY;
    case GM_ERR_UPDATE_FAILURE:
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    case GM_ERR_BACKEND:
    case GM_ERR_DRIVER: /* the caller returns the driver's own code instead */
        return CUDA_ERROR_UNKNOWN;
    }
    return CUDA_ERROR_UNKNOWN;
}

static bool run_app_call(void *arg) {
    gm_app_call_t *call = arg;
    gm_relaxed_end(call->relaxed);
    call->result = call->fn(call->args);
    call->relaxed = gm_relaxed_begin();
    return call->result == CUDA_SUCCESS;
}

gm_driver_call_t gm_app_call_begin(gm_app_call_t *call, CUresult (*fn)(void *), void *args) {
    *call = (gm_app_call_t){fn, args, gm_relaxed_begin(), CUDA_ERROR_UNKNOWN};
    return (gm_driver_call_t){run_app_call, call};
}

void gm_app_call_end(gm_app_call_t *call) {
    gm_relaxed_end(call->relaxed);
}

/* What graphmem needs from the driver and every device; the reason when something is missing. */
static const char *check_support(uint64_t *granularity) {
    const char *missing = gm_driver_resolve(gm_driver_handle());
    if (missing != NULL)
        return missing;
    if (gm_real.cuStreamGetCaptureInfo_v3 == NULL || gm_real.cuGraphAddNode_v2 == NULL)
        return "the driver is older than CUDA 12.3 (no cuStreamGetCaptureInfo_v3)";
    if (gm_drv.cuDeviceGetCount(&device_count) != CUDA_SUCCESS || device_count <= 0)
        return "no CUDA device (or the driver is not initialized)";
    if (device_count > GM_MAX_DEVICES)
        device_count = GM_MAX_DEVICES;
    for (int d = 0; d < device_count; d++) {
        int vmm = 0, pools = 0;
        gm_drv.cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                    d);
        gm_drv.cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d);
        if (!vmm)
            return "a device without virtual memory management";
        if (!pools)
            return "a device without memory pools";
    }
    *granularity = gm_device_page_size();
    if (*granularity == 0)
        return "cuMemGetAllocationGranularity failed";
    return NULL;
}

static gm_engine_t *start_engine(void) {
    uint64_t granularity = 0;
    const char *missing = check_support(&granularity);
    if (missing != NULL) {
        gm_shim_fall_back(missing);
        return NULL;
    }
    gm_mempools_learn_defaults(device_count);
    gm_backend_cuda_init(&backend, granularity);
    gm_engine_config_t config = {
        .device_count = device_count,
        .small_limit = gm_option_u64(GM_OPT_SMALL_LIMIT),
        .max_handle = gm_option_u64(GM_OPT_MAX_HANDLE),
        .max_reserved = gm_option_u64(GM_OPT_MAX_RESERVED),
        .release_threshold = gm_option_u64(GM_OPT_RELEASE_THRESHOLD),
        .cross_stream = (gm_cross_stream_policy_t)gm_option_u64(GM_OPT_CROSS_STREAM),
        /* Use-after-free checking implies no aliasing: a late access inside a launch then cannot
         * touch another allocation either. */
        .no_alias = gm_option_bool(GM_OPT_NO_ALIAS) || gm_option_bool(GM_OPT_UAF_CHECK),
        .uaf_check = gm_option_bool(GM_OPT_UAF_CHECK),
        .no_runs = !gm_option_bool(GM_OPT_RUNS),
        .free_on_destroy = gm_option_bool(GM_OPT_FREE_ON_DESTROY),
        .lift_restrictions = gm_option_bool(GM_OPT_LIFT_RESTRICTIONS),
        .defer_fences = !gm_option_bool(GM_OPT_EAGER_FENCES),
    };
    /* The driver refuses a graph allocation above twice the device's memory when the node is
     * made (tests/probe/alloc_limits.cu: 158.4 GiB on an 79.2 GiB H100, 280 GiB on an H200). */
    for (int d = 0; d < device_count; d++) {
        size_t total = 0;
        if (gm_drv.cuDeviceTotalMem_v2(&total, d) == CUDA_SUCCESS)
            config.max_allocation[d] = 2 * (uint64_t)total;
    }
    /* Handles must be whole pages of the device. */
    config.max_handle -= config.max_handle % granularity;
    if (config.max_handle < granularity)
        config.max_handle = granularity;
    gm_engine_t *created = gm_engine_create(&backend, &config);
    if (created == NULL)
        gm_shim_fall_back("the engine could not start (out of host memory)");
    else
        gm_log(GM_LOG_INFO, "serving graph memory on %d device(s), page %llu bytes", device_count,
               (unsigned long long)granularity);
    return created;
}

static void report_execs(gm_exec_report_fn fn, void *arg) {
    gm_engine_t *current = atomic_load(&gm_shim_hot.engine);
    if (current != NULL)
        gm_engine_report(current, fn, arg);
}

/* After fork the child inherits the parent's engine, whose device memory and events belong to the
 * parent's CUDA context: the child abandons it untouched and starts from a clean slate. */
static void forget_after_fork(void) {
    gm_frontier_capture_change_begins(); /* no frontier kept in the parent is used here */
    atomic_store(&gm_shim_hot.engine, NULL);
    atomic_store(&start_failed, false);
    pthread_mutex_init(&start_lock, NULL);
    gm_backend_cuda_forget_after_fork();
    gm_streams_forget_after_fork();
    gm_topology_forget_after_fork();
    gm_side_forget_after_fork();
}

/* Registered by the first start attempt, before anything they cover exists: the engine's
 * statistics and the fork handler are the engine's business, so start-up (interpose/init.c) needs
 * to know nothing of the engine. Child handlers run in registration order, after init.c's. */
static pthread_once_t process_hooks_once = PTHREAD_ONCE_INIT;

static void register_process_hooks(void) {
    gm_stats_register_execs(report_execs);
    pthread_atfork(NULL, NULL, forget_after_fork);
}

gm_engine_t *gm_glue_engine(void) {
    gm_engine_t *current = atomic_load_explicit(&gm_shim_hot.engine, memory_order_acquire);
    if (current != NULL || gm_shim_mode() != GM_MODE_ACTIVE)
        return gm_shim_mode() == GM_MODE_ACTIVE ? current : NULL;
    if (atomic_load(&start_failed))
        return NULL;
    pthread_once(&process_hooks_once, register_process_hooks);
    pthread_mutex_lock(&start_lock);
    current = atomic_load(&gm_shim_hot.engine);
    if (current == NULL && !atomic_load(&start_failed)) {
        /* Busy: a door the driver reaches meanwhile (its dlsym, say) passes through. */
        GM_RELAXED(gm_shim_busy++; current = start_engine(); gm_shim_busy--);
        if (current == NULL)
            atomic_store(&start_failed, true);
        atomic_store_explicit(&gm_shim_hot.engine, current, memory_order_release);
    }
    pthread_mutex_unlock(&start_lock);
    return current;
}

static void uaf_unmap(gm_engine_t *started, bool wait, CUstream stream, bool ptsz) {
    if (wait)
        GM_DRV_PT(cuStreamSynchronize, ptsz)(stream);
    for (int d = 0; d < device_count; d++)
        gm_engine_trim(started, d);
}

void gm_uaf_unmap_freed(gm_engine_t *started, bool wait, CUstream stream, bool ptsz) {
    if (!gm_option_bool(GM_OPT_UAF_CHECK))
        return;
    /* graphmem's own work: a capture another thread runs in global mode must not see it. */
    GM_RELAXED(uaf_unmap(started, wait, stream, ptsz));
}

int gm_glue_device_count(void) {
    return device_count;
}

bool gm_graph_known(gm_engine_t *engine, CUgraph graph) {
    return graph != NULL &&
           (gm_engine_graph_known(engine, (uint64_t)(uintptr_t)graph) || gm_nested_names(graph));
}

void gm_graph_forget_stale(CUgraph graph) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (graph == NULL || engine == NULL)
        return;
    if (gm_graph_known(engine, graph))
        GM_RELAXED((void)gm_graph_destroy_nested(engine, graph, GM_NO_CALL));
    gm_joins_forget_graph(graph);
}

gm_join_t gm_join_begin(CUstream stream, bool ptsz, bool every_stream) {
    gm_join_t join = {gm_glue_engine_if_started(), true};
    if (join.engine == NULL || (!every_stream && gm_stream_is_default(stream))) {
        join.engine = NULL;
        return join;
    }
    join.fast = gm_engine_join_fast(join.engine);
    if (!join.fast) { /* realizing calls the driver: keep those calls out of any capture */
        uint64_t key = every_stream ? GM_NO_STREAM : gm_stream_key(stream, ptsz);
        GM_RELAXED(gm_engine_join_slow(join.engine, key));
    }
    return join;
}

void gm_join_end(gm_join_t join) {
    if (join.engine != NULL)
        gm_engine_join_end(join.engine, join.fast);
}
