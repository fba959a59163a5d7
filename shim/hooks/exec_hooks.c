/* Instantiation, launch, upload and destruction of graphs holding graphmem allocations; graphs
 * without any pass straight through. */
#include <pthread.h>
#include <stdlib.h>

#include "interpose/driver.h"

#include "bridge/backend_cuda.h"
#include "bridge/captures.h"
#include "bridge/device_copies.h"
#include "bridge/engine_glue.h"
#include "bridge/markers.h"
#include "bridge/scratch.h"
#include "bridge/side_work.h"
#include "bridge/streams.h"
#include "bridge/topology.h"
#include "log.h"
#include "options.h"
#include "stats.h"
#include "util.h"

#define GM_INSTANTIATE_FLAG_AUTO_FREE 1ull
#define GM_INSTANTIATE_FLAG_UPLOAD 2ull
#define GM_INSTANTIATE_FLAG_DEVICE_LAUNCH 4ull

/* The engine's plan of a graph of at least this many nodes is made on graphmem's worker thread
 * while the driver instantiates (it took a quarter to a third of the driver's time:
 * bench/RESULTS.md, "Planning while the driver instantiates"; a DAG of 20 allocations, 60 nodes,
 * instantiated in 0.78x the time it took planned after the driver); a smaller graph is planned
 * after the driver, on the caller's thread, where waking the worker (about 2 us) would cost about
 * what it saves. */
#define PLAN_AHEAD_NODES 32u

/* A plan made alongside the driver (gm_engine_instantiate_plan), joined before the commit. */
typedef struct plan_ahead {
    bool started;
    gm_side_work_t side;
    gm_engine_t *engine;
    uint64_t graph;
    const gm_topology_t *topology; /* the instantiation's, unchanged until the join */
    unsigned flags;
    gm_status_t status;
    gm_planned_exec_t *planned;
    bool used; /* joined for a commit: the debug line says so */
} plan_ahead_t;

typedef struct instantiation {
    gm_engine_t *engine; /* NULL: not ours, forward unchanged */
    gm_topology_buf_t topology;
    plan_ahead_t ahead;
    gm_scratch_t cover; /* the driver checks memset/memcpy targets while it instantiates */
    /* Device launch under GRAPHMEM_LIFT_RESTRICTIONS: the marker-free copy the driver
     * instantiates instead of the graph (bridge/device_copies.h); NULL otherwise. */
    CUgraph device_copy;
    /* For the debug line that says where an instantiation's time went: from the start, the
     * topology read and the memset/memcpy cover until the plan's thread is started, then the
     * driver. */
    uint64_t started_ns, topology_ns, read_ns, driver_started_ns;
} instantiation_t;

/* The engine's flags for an instantiation with the driver's `flags`. */
static unsigned engine_flags(const instantiation_t *inst, unsigned long long flags) {
    unsigned engine = (flags & GM_INSTANTIATE_FLAG_AUTO_FREE) ? GM_EXEC_AUTO_FREE : 0;
    if (inst->device_copy != NULL)
        engine |= GM_EXEC_PINNED;
    return engine;
}

static void plan_ahead_main(void *arg) {
    plan_ahead_t *a = arg;
    a->status = gm_engine_instantiate_plan(a->engine, a->graph, a->topology, a->flags, &a->planned);
}

/* Starts the plan of a large graph beside the caller (bridge/side_work.h), to be joined before
 * the commit; it makes no driver call. When no thread can take it, the plan is made after the
 * driver, as for a small graph. */
static void start_plan_ahead(instantiation_t *inst, CUgraph graph, unsigned long long flags) {
    plan_ahead_t *a = &inst->ahead;
    if (inst->topology.view.node_count < PLAN_AHEAD_NODES)
        return;
    *a = (plan_ahead_t){.engine = inst->engine,
                        .graph = (uint64_t)(uintptr_t)graph,
                        .topology = &inst->topology.view,
                        .flags = engine_flags(inst, flags)};
    a->started = gm_side_start(&a->side, plan_ahead_main, a);
}

/* Joins a plan started ahead; its exec goes unless `keep` (the driver made the exec). */
static bool join_plan_ahead(instantiation_t *inst, bool keep) {
    plan_ahead_t *a = &inst->ahead;
    if (!a->started)
        return false;
    gm_side_join(&a->side);
    a->started = false;
    a->used = keep;
    if (!keep) {
        gm_engine_instantiate_abandon(inst->engine, a->planned);
        a->planned = NULL;
    }
    return true;
}

/* The driver checks a call's own arguments (its flags, the output pointer) before it looks at the
 * graph's nodes: a refusal graphmem makes for the memory nodes (device launch, a second exec) comes
 * after those checks. They are asked of the driver on an empty graph, with the same arguments but
 * for an upload (nothing goes to the stream for a refused call) and device launch (an empty graph
 * is no graph to launch from the device: the driver refuses it for that); its code where it
 * refuses them (tests/gpu/scn_instantiate_flags.cu, measured on the H200), else CUDA_SUCCESS. */
static CUresult arguments_refused(CUgraphExec *exec_out, unsigned long long flags,
                                  CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
    CUgraph empty = NULL;
    if (gm_real.cuGraphInstantiateWithFlags == NULL ||
        (params != NULL && gm_real.cuGraphInstantiateWithParams == NULL) ||
        gm_real.cuGraphCreate(&empty, 0) != CUDA_SUCCESS)
        return CUDA_SUCCESS; /* cannot ask: graphmem's own refusal stands */
    CUgraphExec made = NULL;
    CUresult r;
    if (params != NULL) {
        CUDA_GRAPH_INSTANTIATE_PARAMS asked = *params;
        asked.flags &= ~(GM_INSTANTIATE_FLAG_UPLOAD | GM_INSTANTIATE_FLAG_DEVICE_LAUNCH);
        r = gm_real.cuGraphInstantiateWithParams(&made, empty, &asked);
        if (r != CUDA_SUCCESS) {
            params->result_out = asked.result_out;
            params->hErrNode_out = NULL;
        }
    } else
        r = gm_real.cuGraphInstantiateWithFlags(exec_out != NULL ? &made : NULL, empty,
                                                flags & ~GM_INSTANTIATE_FLAG_DEVICE_LAUNCH);
    if (made != NULL)
        gm_real.cuGraphExecDestroy(made);
    gm_real.cuGraphDestroy(empty);
    return r;
}

/* Before the driver instantiates: the restrictions the driver puts on memory nodes, then the
 * topology (read now, while the graph is known to be unchanged). */
static CUresult prepare(CUgraph graph, CUgraphExec *exec_out, unsigned long long flags,
                        instantiation_t *inst, CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
    inst->engine = NULL;
    inst->device_copy = NULL;
    inst->topology = (gm_topology_buf_t){0};
    inst->ahead = (plan_ahead_t){0};
    gm_scratch_begin(&inst->cover, NULL);
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || graph == NULL)
        return CUDA_SUCCESS;
    uint64_t key = (uint64_t)(uintptr_t)graph;
    bool markers = gm_engine_graph_has_markers(engine, key);
    bool lift = gm_option_bool(GM_OPT_LIFT_RESTRICTIONS);
    if (!markers && gm_conditional_bodies_have_markers(engine, graph)) {
        if (!lift)
            return CUDA_ERROR_INVALID_VALUE; /* memory nodes in a conditional body */
        markers = true;                      /* planned with its bodies */
    }
    if (!markers) {
        /* Memsets or copies on another graph's memory, maybe not mapped yet: covered as below,
         * and nothing to plan. A read-back failure leaves the driver to answer. */
        if (gm_touches(graph) && gm_topology_read(engine, graph, &inst->topology) == CUDA_SUCCESS) {
            gm_scratch_begin(&inst->cover, engine);
            gm_scratch_cover_graph(&inst->cover, graph, &inst->topology);
        }
        return CUDA_SUCCESS;
    }
    bool device_launch = flags & GM_INSTANTIATE_FLAG_DEVICE_LAUNCH;
    /* With AutoFree too, the driver refuses the flags before looking at any node. */
    if (device_launch && (flags & GM_INSTANTIATE_FLAG_AUTO_FREE))
        return CUDA_SUCCESS;
    if (device_launch && !lift) {
        CUresult refused = arguments_refused(exec_out, flags, params);
        if (refused != CUDA_SUCCESS)
            return refused;
        if (params != NULL) {
            params->result_out = CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED;
            params->hErrNode_out = gm_first_marker(engine, graph, false);
        }
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* One exec at a time for graphs with memory nodes, unless GRAPHMEM_LIFT_RESTRICTIONS: then
     * the execs share the graph's addresses and take turns (core/README.md). */
    if (!lift && gm_engine_graph_instantiated(engine, key)) {
        CUresult refused = arguments_refused(exec_out, flags, params);
        return refused != CUDA_SUCCESS ? refused : CUDA_ERROR_NOT_SUPPORTED;
    }
    /* GRAPHMEM_LIFT_RESTRICTIONS: launches from the device are invisible to graphmem, so every
     * allocation must end in the graph (the exec is pinned, engine.h GM_EXEC_PINNED). */
    if (device_launch && !gm_engine_graph_self_contained(engine, key)) {
        gm_log(GM_LOG_WARN,
               "instantiate: graph %p refused for device launch: an allocation escapes it or it "
               "frees another graph's (GRAPHMEM_LIFT_RESTRICTIONS)",
               (void *)graph);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (gm_conditional_bodies_have_markers(engine, graph)) {
        if (!lift)
            return CUDA_ERROR_INVALID_VALUE;
        /* A body runs zero or more times: what it allocates it must free, and the reverse. */
        CUgraph body = gm_conditional_body_not_contained(engine, graph);
        if (body != NULL) {
            gm_log(
                GM_LOG_WARN,
                "instantiate: graph %p refused: conditional body %p allocates memory it does not "
                "free or frees memory it did not allocate; a body may run zero or more times, so "
                "each allocation in it must be freed in it (GRAPHMEM_LIFT_RESTRICTIONS)",
                (void *)graph, (void *)body);
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    inst->started_ns = gm_now_ns();
    CUresult r = gm_topology_read(engine, graph, &inst->topology);
    inst->topology_ns = gm_now_ns() - inst->started_ns;
    if (r != CUDA_SUCCESS) {
        gm_log(GM_LOG_DEBUG, "instantiate: reading the topology of graph %p failed (%d)",
               (void *)graph, (int)r);
        return r;
    }
    if (device_launch) {
        uint32_t markers_read = 0;
        for (uint32_t i = 0; i < inst->topology.view.node_count; i++)
            markers_read +=
                gm_engine_marker(engine, inst->topology.view.nodes[i], NULL) != GM_MARKER_NONE;
        r = gm_device_copy_make(engine, graph, markers_read, &inst->device_copy);
        if (r != CUDA_SUCCESS) {
            gm_log(GM_LOG_WARN,
                   "instantiate: graph %p refused for device launch: no copy without memory "
                   "nodes (%d; memory nodes in child graphs or conditional bodies are not "
                   "copied out)",
                   (void *)graph, (int)r);
            gm_topology_free(&inst->topology);
            return r;
        }
        gm_graph_forget_stale(inst->device_copy); /* a new graph: a new handle */
    }
    inst->engine = engine;
    gm_scratch_begin(&inst->cover, engine);
    gm_scratch_cover_graph(&inst->cover, graph, &inst->topology);
    start_plan_ahead(inst, graph, flags);
    inst->driver_started_ns = gm_now_ns();
    inst->read_ns = inst->driver_started_ns - inst->started_ns;
    return CUDA_SUCCESS;
}

static bool driver_done(void *arg) {
    (void)arg;
    return true;
}

/* The engine's part of an instantiation the driver accepted: plan the exec, and for an
 * instantiation with ..._FLAG_UPLOAD map it for its stream as an upload would (`ptsz`: the call
 * came through a _ptsz entry, whose NULL stream is the thread's default stream). */
static gm_status_t plan(instantiation_t *inst, CUgraph graph, uint64_t key,
                        unsigned long long flags, CUstream upload_stream, bool ptsz) {
    gm_status_t status;
    if (join_plan_ahead(inst, true))
        status = inst->ahead.status == GM_OK
                     ? gm_engine_instantiate_commit(inst->engine, inst->ahead.planned, key)
                     : inst->ahead.status;
    else
        status = gm_engine_instantiate(inst->engine, (uint64_t)(uintptr_t)graph,
                                       &inst->topology.view, key, engine_flags(inst, flags));
    if (status == GM_OK && (flags & GM_INSTANTIATE_FLAG_UPLOAD)) {
        /* The driver uploaded already: map and tie the exec to the stream as an upload. */
        uint64_t stream = gm_stream_key(upload_stream, ptsz);
        /* A default stream of a context with no key of its own: no fence (as launch refuses). */
        status = gm_stream_key_usable(stream)
                     ? gm_engine_launch(inst->engine, key, stream, true,
                                        (gm_driver_call_t){driver_done, NULL})
                     : GM_ERR_OUT_OF_MEMORY;
        if (status != GM_OK)
            gm_engine_exec_destroy(inst->engine, key, GM_NO_CALL);
    }
    return status;
}

/* The driver made an exec under this handle: an exec graphmem still knows under it is gone
 * without a destroy graphmem saw (a context destroyed or reset takes its execs), and must not meet
 * the new one, served or not (a plain graph's launch taken for a served one). */
static void forget_reused(CUgraphExec exec) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    uint64_t key = (uint64_t)(uintptr_t)exec;
    if (engine == NULL || !gm_engine_serves(engine, key))
        return;
    gm_log(GM_LOG_DEBUG, "exec %p: handle given out again, the exec it named is gone",
           (void *)exec);
    gm_device_copy_forget(exec);
    gm_engine_exec_gone(engine, key);
}

/* After the driver made the exec: plan it; on failure the exec is destroyed again so the caller
 * sees one clean error. */
static CUresult finish(instantiation_t *inst, CUgraph graph, CUresult result, CUgraphExec *exec,
                       unsigned long long flags, CUstream upload_stream, bool ptsz) {
    gm_scratch_end(&inst->cover); /* before anything maps the real memory */
    if (result == CUDA_SUCCESS)
        forget_reused(*exec);
    if (inst->engine == NULL) {
        gm_topology_free(&inst->topology);
        return result;
    }
    uint64_t driver_ns = gm_now_ns() - inst->driver_started_ns;
    if (result != CUDA_SUCCESS)
        join_plan_ahead(inst, false); /* the driver refused: the plan goes */
    if (result == CUDA_SUCCESS) {
        uint64_t engine_started_ns = gm_now_ns();
        gm_status_t status;
        GM_RELAXED(status =
                       plan(inst, graph, (uint64_t)(uintptr_t)*exec, flags, upload_stream, ptsz));
        CUcontext context = NULL;
        if (status == GM_OK && inst->device_copy != NULL &&
            gm_drv.cuCtxGetCurrent(&context) == CUDA_SUCCESS)
            gm_engine_exec_set_context(inst->engine, (uint64_t)(uintptr_t)*exec,
                                       (uint64_t)(uintptr_t)context);
        if (status == GM_OK && inst->device_copy != NULL &&
            !gm_device_copy_register(*exec, inst->device_copy)) {
            gm_engine_exec_destroy(inst->engine, (uint64_t)(uintptr_t)*exec, GM_NO_CALL);
            status = GM_ERR_OUT_OF_MEMORY;
        }
        if (status == GM_OK)
            inst->device_copy = NULL; /* the exec's now */
        if (status != GM_OK) {
            gm_log(GM_LOG_DEBUG, "instantiate: graph %p (%u nodes, %u edges) refused: %s",
                   (void *)graph, inst->topology.view.node_count, inst->topology.view.edge_count,
                   gm_status_name(status));
            gm_real.cuGraphExecDestroy(*exec);
            result = gm_cuda_result(status);
        } else {
            gm_stat_add(GM_STAT_instantiations, 1);
            gm_log(GM_LOG_DEBUG,
                   "instantiate: graph %p, %u nodes, %u edges: read back %.3f ms (topology %.3f), "
                   "driver %.3f ms, engine %.3f ms after it%s",
                   (void *)graph, inst->topology.view.node_count, inst->topology.view.edge_count,
                   inst->read_ns / 1e6, inst->topology_ns / 1e6, driver_ns / 1e6,
                   (gm_now_ns() - engine_started_ns) / 1e6,
                   inst->ahead.used ? " (planned alongside the driver)" : "");
        }
    }
    gm_topology_free(&inst->topology);
    if (inst->device_copy != NULL)
        gm_real.cuGraphDestroy(inst->device_copy);
    return result;
}

/* The graph the driver instantiates: the marker-free copy for device launch, else the graph. */
static CUgraph driver_graph(const instantiation_t *inst, CUgraph graph) {
    return inst->device_copy != NULL ? inst->device_copy : graph;
}

/* An instantiation is not cancelled between prepare and finish: a plan on the worker still points
 * into the caller's frame, and a cover holds mappings still until finish ends it. */
static int cancel_off(void) {
    int state = PTHREAD_CANCEL_ENABLE;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    return state;
}

static CUresult cancel_restore(int state, CUresult result) {
    pthread_setcancelstate(state, NULL);
    return result;
}

typedef CUresult (*legacy_instantiate_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);

/* cuGraphInstantiate and _v2: the 5-argument ABIs (no flags). */
static CUresult instantiate_legacy(legacy_instantiate_fn real, CUgraphExec *exec, CUgraph graph,
                                   CUgraphNode *error_node, char *log, size_t log_size) {
    int cancel = cancel_off();
    instantiation_t inst;
    CUresult r = prepare(graph, exec, 0, &inst, NULL);
    if (r != CUDA_SUCCESS)
        return cancel_restore(cancel, r);
    r = real(exec, graph, error_node, log, log_size);
    return cancel_restore(cancel, finish(&inst, graph, r, exec, 0, NULL, false));
}

CUresult gm_hook_cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize) {
    return instantiate_legacy(gm_real.cuGraphInstantiate, phGraphExec, hGraph, phErrorNode,
                              logBuffer, bufferSize);
}

CUresult gm_hook_cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode, char *logBuffer,
                                       size_t bufferSize) {
    return instantiate_legacy(gm_real.cuGraphInstantiate_v2, phGraphExec, hGraph, phErrorNode,
                              logBuffer, bufferSize);
}

CUresult gm_hook_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             unsigned long long flags) {
    int cancel = cancel_off();
    instantiation_t inst;
    CUresult r = prepare(hGraph, phGraphExec, flags, &inst, NULL);
    if (r != CUDA_SUCCESS)
        return cancel_restore(cancel, r);
    r = gm_real.cuGraphInstantiateWithFlags(phGraphExec, driver_graph(&inst, hGraph), flags);
    return cancel_restore(cancel, finish(&inst, hGraph, r, phGraphExec, flags, NULL, false));
}

static CUresult instantiate_with_params(bool ptsz, CUgraphExec *phGraphExec, CUgraph hGraph,
                                        CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
    CUresult (*real)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *) =
        GM_REAL_PT(cuGraphInstantiateWithParams, ptsz);
    if (params == NULL || phGraphExec == NULL)
        return real(phGraphExec, hGraph, params);
    int cancel = cancel_off();
    instantiation_t inst;
    CUresult r = prepare(hGraph, phGraphExec, params->flags, &inst, params);
    if (r != CUDA_SUCCESS)
        return cancel_restore(cancel, r);
    r = real(phGraphExec, driver_graph(&inst, hGraph), params);
    if (r != CUDA_SUCCESS && inst.device_copy != NULL) /* the copy goes: name the graph's node */
        params->hErrNode_out =
            gm_device_copy_original(hGraph, inst.device_copy, params->hErrNode_out);
    return cancel_restore(
        cancel, finish(&inst, hGraph, r, phGraphExec, params->flags, params->hUploadStream, ptsz));
}

CUresult gm_hook_cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
    return instantiate_with_params(false, phGraphExec, hGraph, instantiateParams);
}

CUresult
gm_hook_cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                          CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams) {
    return instantiate_with_params(true, phGraphExec, hGraph, instantiateParams);
}

/* ---- launch and upload ---------------------------------------------------------------------- */

typedef struct launch_args {
    CUresult (*real)(CUgraphExec, CUstream);
    CUgraphExec exec;
    CUstream stream;
    CUresult result; /* the driver's answer, when the engine's fast path made the call */
} launch_args_t;

static CUresult call_launch(void *arg) {
    launch_args_t *a = arg;
    return a->real(a->exec, a->stream);
}

/* The application's own call, made by the engine's fast path, where graphmem makes no driver call
 * of its own around it (so nothing to run in RELAXED mode). */
static bool call_launch_now(void *arg) {
    launch_args_t *a = arg;
    a->result = a->real(a->exec, a->stream);
    return a->result == CUDA_SUCCESS;
}

/* A launch or upload into a capturing stream: the driver refuses every one, with or without
 * memory nodes, and invalidates the capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, measured on
 * driver 580 by tests/probe/launch_in_capture.cu, part a). Left to the driver, which answers
 * exactly that; the engine must not touch the stream. */
static CUresult launch_into_capture(CUresult (*real)(CUgraphExec, CUstream), CUgraphExec exec,
                                    CUstream stream) {
    return real(exec, stream);
}

/* Launch and upload of an exec graphmem serves: one step of the engine (core/README.md, "Launch
 * protocol"), the driver's call included. Any other exec passes straight through, without waiting
 * on the engine's lock. */
static CUresult launch(CUgraphExec exec, CUstream stream, bool ptsz, bool upload) {
    CUresult (*real)(CUgraphExec, CUstream) =
        upload ? GM_REAL_PT(cuGraphUpload, ptsz) : GM_REAL_PT(cuGraphLaunch, ptsz);
    gm_engine_t *engine = gm_glue_engine_if_started();
    uint64_t key = (uint64_t)(uintptr_t)exec;
    if (engine == NULL)
        return real(exec, stream);
    launch_args_t args = {real, exec, stream, CUDA_SUCCESS};
    gm_status_t status;
    uint64_t stream_key = 0;
    bool keyed = false;
    /* A steady relaunch of the armed exec (gm_engine_relaunch): the driver's call alone, before
     * any other check, the few cache lines it reads being most of its cost. Any other exec is told
     * by one atomic load and never touches the fast path's gate. Only a served exec is armed, so
     * no gm_engine_serves; and no capture check: nothing is armed on a stream that captures (each
     * way into a capture realizes the stream's deferred fence), and into one the driver would
     * refuse the launch, ending the capture, as on the way below (launch_into_capture), the engine
     * left as it was. Under GRAPHMEM_UAF_CHECK nothing is ever armed (no fence is deferred). */
    if (!upload && gm_engine_armed(engine, key)) {
        stream_key = gm_stream_key(stream, ptsz);
        keyed = true;
        if (gm_engine_relaunch(engine, key, stream_key, (gm_driver_call_t){call_launch_now, &args},
                               &status)) {
            if (status == GM_OK)
                gm_stat_add(GM_STAT_launches, 1);
            return args.result;
        }
    }
    if (!gm_engine_serves(engine, key))
        return real(exec, stream);
    if (gm_stream_capturing(stream, ptsz))
        return launch_into_capture(real, exec, stream);
    if (!keyed)
        stream_key = gm_stream_key(stream, ptsz);
    if (!gm_stream_key_usable(stream_key))
        return CUDA_ERROR_OUT_OF_MEMORY; /* a default stream of a context with no key of its own */
    gm_app_call_t call;
    status = gm_engine_launch(engine, key, stream_key, upload,
                              gm_app_call_begin(&call, call_launch, &args));
    gm_app_call_end(&call);
    if (status == GM_ERR_DRIVER)
        return call.result;
    if (status != GM_OK) {
        gm_log(GM_LOG_DEBUG, "%s of exec %p refused: %s", upload ? "upload" : "launch",
               (void *)exec, gm_status_name(status));
        /* A relaunch while an allocation is unfreed, memory that cannot be mapped: the driver
         * would first answer a sticky error. */
        return gm_backend_cuda_sticky_or(gm_cuda_result(status));
    }
    gm_stat_add(upload ? GM_STAT_uploads : GM_STAT_launches, 1);
    if (!upload)
        gm_uaf_unmap_freed(engine, true, stream, ptsz);
    return CUDA_SUCCESS;
}

CUresult gm_hook_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
    return launch(hGraphExec, hStream, false, false);
}

CUresult gm_hook_cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
    return launch(hGraphExec, hStream, true, false);
}

CUresult gm_hook_cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
    return launch(hGraphExec, hStream, false, true);
}

CUresult gm_hook_cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
    return launch(hGraphExec, hStream, true, true);
}

/* ---- destruction ---------------------------------------------------------------------------- */

/* The engine forgets an exec or graph in the same step as the driver destroys it: the driver may
 * hand the handle out again at once, to another thread, and that must not meet the old records. */

static CUresult call_exec_destroy(void *arg) {
    return gm_device_exec_destroy((CUgraphExec)arg, gm_real.cuGraphExecDestroy);
}

CUresult gm_hook_cuGraphExecDestroy(CUgraphExec hGraphExec) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    uint64_t key = (uint64_t)(uintptr_t)hGraphExec;
    if (engine == NULL || !gm_engine_serves(engine, key))
        return gm_real.cuGraphExecDestroy(hGraphExec);
    gm_app_call_t call;
    gm_engine_exec_destroy(engine, key, gm_app_call_begin(&call, call_exec_destroy, hGraphExec));
    gm_app_call_end(&call);
    return call.result;
}

/* The new graph's handle may be a dead graph's (gm_graph_forget_stale). */
CUresult gm_hook_cuGraphCreate(CUgraph *phGraph, unsigned int flags) {
    CUresult result = gm_real.cuGraphCreate(phGraph, flags);
    if (result == CUDA_SUCCESS)
        gm_graph_forget_stale(*phGraph);
    return result;
}

static CUresult call_graph_destroy(void *arg) {
    return gm_real.cuGraphDestroy((CUgraph)arg);
}

CUresult gm_hook_cuGraphDestroy(CUgraph hGraph) {
    gm_app_call_t call;
    gm_status_t st = gm_graph_destroy_nested(gm_glue_engine_if_started(), hGraph,
                                             gm_app_call_begin(&call, call_graph_destroy, hGraph));
    gm_app_call_end(&call);
    (void)st; /* GM_OK or GM_ERR_DRIVER: the driver's own code either way */
    return call.result;
}
