// Native probe (run without graphmem by scripts/gpu-check): what the driver does with the calls a
// launch served by graphmem may make while some stream captures, and from a thread without a
// current context. One line per case: `probe <name> <result>`.
// (a) cuGraphLaunch / cuGraphUpload of an exec with memory nodes (and (b) without) on the stream
//     that captures, in each capture mode: the call, the capture's status after it, EndCapture,
//     the captured graph's nodes, and whether that graph instantiates and runs;
// (c) from a thread with no current context: event query/record/sync, stream wait, trim, VMM
//     unmap/release/create/map;
// (d) calls on other streams (event record, stream wait, launches, trim, VMM map/set access)
//     while a stream captures, made by the capturing thread or another thread, in the default or
//     the relaxed thread mode: does the capture survive?
// (e) cuEventRecord / cuStreamWaitEvent on the legacy stream while a blocking stream (a created
//     one, or a thread's per-thread default stream) captures in global mode.
#include <cuda.h>
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdio.h>
#include <string>
#include <thread>

static CUcontext ctx;
static CUstream s1, s2, sb; // non-blocking, non-blocking, blocking
static CUdeviceptr buf;
static CUgraphExec mem_exec, plain_exec;
static CUevent done;
static CUmemGenericAllocationHandle handle;
static CUdeviceptr va;
static size_t gran;

static const char *rn(CUresult r) {
    const char *name = "unknown";
    cuGetErrorName(r, &name);
    return name;
}

static const char *sn(CUstreamCaptureStatus st) {
    return st == CU_STREAM_CAPTURE_STATUS_NONE     ? "none"
           : st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? "active"
                                                   : "invalidated";
}

static CUgraphExec make_exec(bool mem) {
    CUgraph g;
    cuGraphCreate(&g, 0);
    CUDA_MEMSET_NODE_PARAMS ms = {};
    ms.elementSize = 4;
    ms.width = 256;
    ms.height = 1;
    ms.value = 7;
    ms.dst = buf;
    if (mem) {
        CUDA_MEM_ALLOC_NODE_PARAMS ap = {};
        ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
        ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        ap.poolProps.location.id = 0;
        ap.bytesize = 4 << 20;
        CUgraphNode a, m, f;
        cuGraphAddMemAllocNode(&a, g, NULL, 0, &ap);
        ms.dst = ap.dptr;
        cuGraphAddMemsetNode(&m, g, &a, 1, &ms, ctx);
        cuGraphAddMemFreeNode(&f, g, &m, 1, ap.dptr);
    } else {
        CUgraphNode m;
        cuGraphAddMemsetNode(&m, g, NULL, 0, &ms, ctx);
    }
    CUgraphExec e = NULL;
    CUresult r = cuGraphInstantiate(&e, g, 0);
    if (r != CUDA_SUCCESS)
        printf("probe setup_instantiate_%s %s\n", mem ? "mem" : "plain", rn(r));
    cuGraphDestroy(g);
    return e;
}

// The capture's status, EndCapture, the captured graph's nodes, then instantiate and run it.
static std::string finish_capture(CUstream s) {
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    cuStreamIsCapturing(s, &st);
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(s, &g);
    char out[512];
    int len = snprintf(out, sizeof out, "capture_after=%s end=%s", sn(st), rn(end));
    if (g) {
        CUgraphNode nodes[16];
        size_t n = 16;
        cuGraphGetNodes(g, nodes, &n);
        len += snprintf(out + len, sizeof out - len, " nodes=%zu types=", n);
        for (size_t i = 0; i < n && i < 16; i++) {
            CUgraphNodeType t;
            cuGraphNodeGetType(nodes[i], &t);
            len += snprintf(out + len, sizeof out - len, "%s%d", i ? "," : "", (int)t);
        }
        CUgraphExec e = NULL;
        CUresult inst = cuGraphInstantiate(&e, g, 0), run = CUDA_ERROR_NOT_READY;
        if (inst == CUDA_SUCCESS && (run = cuGraphLaunch(e, s)) == CUDA_SUCCESS)
            run = cuStreamSynchronize(s);
        snprintf(out + len, sizeof out - len, " instantiate=%s run=%s", rn(inst), rn(run));
        if (e)
            cuGraphExecDestroy(e);
        cuGraphDestroy(g);
    }
    return out;
}

// Ends captures a probe left on other streams, and waits for everything.
static void settle(const char *name) {
    CUstream all[] = {s1, s2, sb};
    for (CUstream s : all) {
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
        if (cuStreamIsCapturing(s, &st) == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE) {
            CUgraph g = NULL;
            printf("probe %s_stray_capture %s\n", name, rn(cuStreamEndCapture(s, &g)));
            if (g)
                cuGraphDestroy(g);
        }
    }
    CUresult r = cuCtxSynchronize();
    if (r != CUDA_SUCCESS)
        printf("probe %s_sync %s\n", name, rn(r));
}

// A capture on `cap` (NULL: the capturing thread's per-thread stream) in `mode` with one memset
// in it; then `op` runs in the capturing thread (`same`) or in another thread with the context
// current, in the relaxed thread mode if asked; then the capturing thread ends the capture.
static void during_capture(const char *name, CUstream cap, CUstreamCaptureMode mode, bool same,
                           bool relaxed, std::function<CUresult(CUstream)> op) {
    std::mutex m;
    std::condition_variable cv;
    int step = 0;
    auto go = [&](int s) {
        std::lock_guard<std::mutex> l(m);
        step = s;
        cv.notify_all();
    };
    auto wait = [&](int s) {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return step >= s; });
    };
    CUresult call = CUDA_ERROR_UNKNOWN;
    CUstream s = cap ? cap : CU_STREAM_PER_THREAD;
    auto run_op = [&] {
        cuCtxSetCurrent(ctx);
        CUstreamCaptureMode mm = CU_STREAM_CAPTURE_MODE_RELAXED;
        if (relaxed)
            cuThreadExchangeStreamCaptureMode(&mm);
        call = op(s);
        if (relaxed)
            cuThreadExchangeStreamCaptureMode(&mm);
    };
    std::thread capturer([&] {
        cuCtxSetCurrent(ctx);
        CUresult begin = cuStreamBeginCapture(s, mode);
        cuMemsetD32Async(buf, 1, 64, s);
        if (same) {
            run_op();
        } else {
            go(1);
            wait(2);
        }
        std::string rest = finish_capture(s);
        printf("probe %s begin=%s call=%s %s\n", name, rn(begin), rn(call), rest.c_str());
    });
    if (!same) {
        wait(1);
        std::thread other(run_op);
        other.join();
        go(2);
    }
    capturer.join();
    settle(name);
}

static const CUstreamCaptureMode kModes[3] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                              CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                              CU_STREAM_CAPTURE_MODE_RELAXED};
static const char *kModeNames[3] = {"global", "thread_local", "relaxed"};

static CUresult map_set_access_unmap(void) {
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUresult r = cuMemMap(va, gran, 0, handle, 0);
    if (r != CUDA_SUCCESS)
        return r;
    r = cuMemSetAccess(va, gran, &acc, 1);
    CUresult u = cuMemUnmap(va, gran);
    return r != CUDA_SUCCESS ? r : u;
}

static void no_context(void) {
    cuGraphLaunch(mem_exec, s1);
    cuEventRecord(done, s1);
    cuStreamSynchronize(s1);
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    cuMemMap(va, gran, 0, handle, 0);
    cuMemSetAccess(va, gran, &acc, 1);
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CUmemGenericAllocationHandle own = 0;
    CUdeviceptr own_va = 0;
    cuMemAddressReserve(&own_va, gran, 0, 0, 0);
    bool mapped = true, released = false;
    std::thread t([&] {
        CUcontext c = NULL;
        cuCtxGetCurrent(&c);
        printf("probe c_thread_context %s\n", c ? "current" : "none");
        printf("probe c_event_query %s\n", rn(cuEventQuery(done)));
        printf("probe c_event_synchronize %s\n", rn(cuEventSynchronize(done)));
        printf("probe c_event_record %s\n", rn(cuEventRecord(done, s1)));
        printf("probe c_stream_wait_event %s\n", rn(cuStreamWaitEvent(s2, done, 0)));
        printf("probe c_stream_query %s\n", rn(cuStreamQuery(s1)));
        CUevent e = NULL;
        printf("probe c_event_create %s\n", rn(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING)));
        if (e)
            cuEventDestroy(e);
        printf("probe c_graph_mem_trim %s\n", rn(cuDeviceGraphMemTrim(0)));
        CUresult r = cuMemUnmap(va, gran);
        mapped = r != CUDA_SUCCESS;
        printf("probe c_mem_unmap %s\n", rn(r));
        r = cuMemRelease(handle);
        released = r == CUDA_SUCCESS;
        printf("probe c_mem_release %s\n", rn(r));
        printf("probe c_mem_create %s\n", rn(cuMemCreate(&own, gran, &prop, 0)));
        printf("probe c_mem_map %s\n", rn(cuMemMap(own_va, gran, 0, own, 0)));
        printf("probe c_mem_set_access %s\n", rn(cuMemSetAccess(own_va, gran, &acc, 1)));
        printf("probe c_mem_unmap_own %s\n", rn(cuMemUnmap(own_va, gran)));
        cuCtxGetCurrent(&c);
        printf("probe c_thread_context_after %s\n", c ? "current" : "none");
    });
    t.join();
    cuuint64_t used = 0;
    cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used);
    printf("probe c_graph_mem_used_after_trim %llu\n", (unsigned long long)used);
    if (mapped)
        cuMemUnmap(va, gran);
    if (released) { // a new handle for (d)
        prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
        cuMemCreate(&handle, gran, &prop, 0);
    }
    if (own)
        cuMemRelease(own);
    cuMemAddressFree(own_va, gran);
    settle("c");
}

int main() {
    cudaFree(0);
    cuCtxGetCurrent(&ctx);
    cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING);
    cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING);
    cuStreamCreate(&sb, CU_STREAM_DEFAULT);
    cuMemAlloc(&buf, 1 << 20);
    cuEventCreate(&done, CU_EVENT_DISABLE_TIMING);
    mem_exec = make_exec(true);
    plain_exec = make_exec(false);
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    cuMemCreate(&handle, gran, &prop, 0);
    cuMemAddressReserve(&va, gran, 0, 0, 0);
    printf("probe setup_launch_mem %s\n", rn(cuGraphLaunch(mem_exec, s1)));
    printf("probe setup_sync %s\n", rn(cuStreamSynchronize(s1)));

    char name[128];
    for (int m = 0; m < 3; m++) { // (a), (b)
        for (int mem = 1; mem >= 0; mem--) {
            CUgraphExec e = mem ? mem_exec : plain_exec;
            snprintf(name, sizeof name, "a_%s_launch_%s", kModeNames[m], mem ? "mem" : "plain");
            during_capture(name, s1, kModes[m], true, false,
                           [&](CUstream s) { return cuGraphLaunch(e, s); });
            snprintf(name, sizeof name, "a_%s_upload_%s", kModeNames[m], mem ? "mem" : "plain");
            during_capture(name, s1, kModes[m], true, false,
                           [&](CUstream s) { return cuGraphUpload(e, s); });
        }
    }

    no_context(); // (c)

    cuEventRecord(done, s2);
    cuStreamSynchronize(s2);
    struct Op {
        const char *name;
        std::function<CUresult(CUstream)> fn;
    } ops[] = {
        {"event_record_s2", [](CUstream) { return cuEventRecord(done, s2); }},
        {"stream_wait_event_s2", [](CUstream) { return cuStreamWaitEvent(s2, done, 0); }},
        {"event_query", [](CUstream) { return cuEventQuery(done); }},
        {"event_synchronize", [](CUstream) { return cuEventSynchronize(done); }},
        {"event_create",
         [](CUstream) {
             CUevent e = NULL;
             CUresult r = cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
             if (e)
                 cuEventDestroy(e);
             return r;
         }},
        {"launch_mem_s2", [](CUstream) { return cuGraphLaunch(mem_exec, s2); }},
        {"launch_plain_s2", [](CUstream) { return cuGraphLaunch(plain_exec, s2); }},
        {"upload_mem_s2", [](CUstream) { return cuGraphUpload(mem_exec, s2); }},
        {"stream_synchronize_s2", [](CUstream) { return cuStreamSynchronize(s2); }},
        {"graph_mem_trim", [](CUstream) { return cuDeviceGraphMemTrim(0); }},
        {"vmm_map_access_unmap", [](CUstream) { return map_set_access_unmap(); }},
    };
    for (int m = 0; m < 3; m++) // (d)
        for (int who = 0; who < 2; who++)
            for (int relaxed = 0; relaxed < 2; relaxed++)
                for (const Op &op : ops) {
                    if (m > 0 && (who || relaxed)) // other modes: the capturing thread only
                        continue;
                    snprintf(name, sizeof name, "d_%s_%s_%s_%s", kModeNames[m],
                             who ? "other_thread" : "same_thread", relaxed ? "relaxed" : "default",
                             op.name);
                    during_capture(name, s1, kModes[m], !who, relaxed, op.fn);
                }

    Op legacy_ops[] = {
        {"event_record_legacy", [](CUstream) { return cuEventRecord(done, CU_STREAM_LEGACY); }},
        {"stream_wait_event_legacy",
         [](CUstream) { return cuStreamWaitEvent(CU_STREAM_LEGACY, done, 0); }},
        {"event_record_own_per_thread",
         [](CUstream) { return cuEventRecord(done, CU_STREAM_PER_THREAD); }},
        {"launch_plain_legacy",
         [](CUstream) { return cuGraphLaunch(plain_exec, CU_STREAM_LEGACY); }},
    };
    const char *targets[3] = {"nonblocking", "blocking", "per_thread"};
    CUstream target_streams[3] = {s1, sb, NULL};
    for (int t = 0; t < 3; t++) // (e)
        for (int who = 0; who < 2; who++)
            for (int relaxed = 0; relaxed < 2; relaxed++)
                for (const Op &op : legacy_ops) {
                    if (who == 0 && t == 2 && strcmp(op.name, "event_record_own_per_thread") == 0)
                        continue; // that is the capturing stream itself
                    snprintf(name, sizeof name, "e_%s_global_%s_%s_%s", targets[t],
                             who ? "other_thread" : "same_thread", relaxed ? "relaxed" : "default",
                             op.name);
                    during_capture(name, target_streams[t], CU_STREAM_CAPTURE_MODE_GLOBAL, !who,
                                   relaxed, op.fn);
                }
    return 0;
}
