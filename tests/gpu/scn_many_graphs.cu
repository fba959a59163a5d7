// More graphs, nested graphs, pools and forked streams than graphmem's fixed tables held (issue:
// cudaGraphDestroyNode with more than 256 graphs segfaulted; join notes 256, nested graphs 64,
// pools 512 were truncated silently). Every graph allocates, fills, copies into its slot of an
// ordinary buffer and frees; observations are counts of return codes and of wrong slots. Each
// part runs in a process of its own (entries.cuh).
#include "entries.cuh"

static const size_t kWords = 1 << 14; // 64 KiB per allocation
static cudaStream_t g_s = nullptr;
static uint32_t *g_out = nullptr; // kWords words per slot

static void setup(int slots) {
    cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking);
    obs_rc("setup_out", cudaMalloc(&g_out, slots * kWords * sizeof(uint32_t)));
}

static uint32_t *slot(int i) {
    return g_out + (size_t)i * kWords;
}

// alloc -> fill(1000 + i) -> copy into slot i -> free; the kernel nodes come back in fill, copy.
static cudaGraph_t build(int i, RcCount &rc, cudaGraphNode_t nd[4]) {
    cudaGraph_t g = nullptr;
    void *p = nullptr;
    rc.add(cudaGraphCreate(&g, 0));
    rc.add(add_alloc(&nd[0], g, nullptr, 0, kWords * sizeof(uint32_t), &p));
    rc.add(add_fill(&nd[1], g, &nd[0], 1, p, kWords, 1000 + i));
    rc.add(add_add(&nd[2], g, &nd[1], 1, slot(i), p, kWords, 0));
    rc.add(cudaGraphAddMemFreeNode(&nd[3], g, &nd[2], 1, p));
    return g;
}

// Clears the slots, launches the n execs on g_s, then counts the slots not holding their data.
static void launch_and_check(const char *key, int slots, RcCount &rc, cudaGraphExec_t *e, int n) {
    cudaMemsetAsync(g_out, 0, slots * kWords * sizeof(uint32_t), g_s);
    for (int i = 0; i < n; i++)
        rc.add(cudaGraphLaunch(e[i], g_s));
    rc.add(cudaStreamSynchronize(g_s));
    int bad = 0;
    for (int i = 0; i < slots; i++)
        bad += !check_words(g_s, slot(i), kWords, 1000 + i);
    obs_int(key, bad);
}

static void destroy_nodes(void) {
    const int n = 300;
    setup(n);
    static cudaGraph_t g[n];
    static cudaGraphExec_t e[n];
    static cudaGraphNode_t nd[n][4];
    RcCount build_rc, inst_rc, launch_rc, exec_rc, graph_rc;
    for (int i = 0; i < n; i++)
        g[i] = build(i, build_rc, nd[i]);
    build_rc.report("build_rc");
    // The copy kernel, the free node, the alloc node of every graph: natively all refused.
    const int which[3] = {2, 3, 0};
    const char *key[3] = {"destroy_kernel_node_rc", "destroy_free_node_rc",
                          "destroy_alloc_node_rc"};
    for (int k = 0; k < 3; k++) {
        RcCount rc;
        for (int i = 0; i < n; i++)
            rc.add(cudaGraphDestroyNode(nd[i][which[k]]));
        rc.report(key[k]);
    }
    for (int i = 0; i < n; i++)
        inst_rc.add(cudaGraphInstantiate(&e[i], g[i], 0));
    inst_rc.report("instantiate_rc");
    for (int round = 0; round < 2; round++)
        launch_and_check("bad_slots", n, launch_rc, e, n);
    launch_rc.report("launch_rc");
    for (int i = 0; i < n; i++) {
        exec_rc.add(cudaGraphExecDestroy(e[i]));
        graph_rc.add(cudaGraphDestroy(g[i]));
    }
    exec_rc.report("exec_destroy_rc");
    graph_rc.report("graph_destroy_rc");
}

// One parent with 100 moved children side by side; then a chain of 64 levels, each with memory
// nodes of its own and the next level moved in. 64 is the deepest chain measured to work natively
// everywhere: on an H100 (driver 580.159) the driver itself crashed building a chain of 100 and
// launching one of 70, where an H200 with the same driver ran 100.
static void nested(void) {
    const int n = 100, depth = 64;
    setup(n);
    cudaGraphNode_t nd[4];
    RcCount build_rc, move_rc, launch_rc;
    cudaGraph_t wide = nullptr;
    build_rc.add(cudaGraphCreate(&wide, 0));
    for (int i = 0; i < n; i++)
        move_rc.add(add_moved_child(wide, build(i, build_rc, nd)));
    build_rc.report("wide_build_rc");
    move_rc.report("wide_move_rc");
    cudaGraphExec_t ew = nullptr;
    obs_rc("wide_instantiate", cudaGraphInstantiate(&ew, wide, 0));
    for (int round = 0; round < 2; round++)
        launch_and_check("wide_bad_slots", n, launch_rc, &ew, 1);
    launch_rc.report("wide_launch_rc");
    obs_rc("wide_exec_destroy", cudaGraphExecDestroy(ew));
    obs_rc("wide_graph_destroy", cudaGraphDestroy(wide));

    RcCount chain_build_rc, chain_move_rc, chain_rc;
    cudaGraph_t inner = nullptr;
    for (int level = depth - 1; level >= 0; level--) {
        cudaGraph_t g = build(level, chain_build_rc, nd);
        if (inner)
            chain_move_rc.add(add_moved_child(g, inner));
        inner = g;
    }
    chain_build_rc.report("chain_build_rc");
    chain_move_rc.report("chain_move_rc");
    cudaGraphExec_t ec = nullptr;
    obs_rc("chain_instantiate", cudaGraphInstantiate(&ec, inner, 0));
    for (int round = 0; round < 2; round++)
        launch_and_check("chain_bad_slots", depth, chain_rc, &ec, 1);
    chain_rc.report("chain_launch_rc");
    obs_rc("chain_exec_destroy", cudaGraphExecDestroy(ec));
    obs_rc("chain_graph_destroy", cudaGraphDestroy(inner));
}

static cudaError_t capture_from_pool(cudaMemPool_t pool, int i, RcCount &rc) {
    void *p = nullptr;
    cudaError_t m = rc.add(cudaMallocFromPoolAsync(&p, kWords * sizeof(uint32_t), pool, g_s));
    if (m != cudaSuccess) // no kernels on a pointer the driver did not give
        return m;
    rc.add(fill_words(g_s, p, kWords, 1000 + i));
    k_add<<<kGrid, kBlock, 0, g_s>>>(slot(i), (const uint32_t *)p, kWords, 0);
    rc.add(cudaGetLastError());
    return rc.add(cudaFreeAsync(p, g_s));
}

// Pools made with cudaMemPoolCreate. Each reserves address space of about twice the device's
// memory (466 fit on an H200), so more than 512 are made one after the other, each used in a
// capture of its own and destroyed; then 200 alive together serve one capture.
static void pools(void) {
    const int n = 600, together = 200;
    setup(n);
    static cudaMemPool_t pool[n];
    static cudaGraphExec_t e[n];
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    RcCount create_rc, capture_rc, end_rc, launch_rc, destroy_rc;
    for (int i = 0; i < n; i++) {
        cudaGraph_t g = nullptr;
        cudaMemPool_t one = nullptr;
        if (create_rc.add(cudaMemPoolCreate(&one, &props)) != cudaSuccess)
            continue;
        capture_rc.add(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
        capture_from_pool(one, i, capture_rc);
        end_rc.add(cudaStreamEndCapture(g_s, &g));
        end_rc.add(cudaGraphInstantiate(&e[i], g, 0));
        end_rc.add(cudaGraphDestroy(g));
        launch_rc.add(cudaGraphLaunch(e[i], g_s));
        destroy_rc.add(cudaStreamSynchronize(g_s));
        destroy_rc.add(cudaGraphExecDestroy(e[i]));
        destroy_rc.add(cudaMemPoolDestroy(one));
    }
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += !check_words(g_s, slot(i), kWords, 1000 + i);
    obs_int("one_by_one_bad_slots", bad);
    create_rc.report("one_by_one_create_rc");
    capture_rc.report("one_by_one_capture_rc");
    end_rc.report("one_by_one_end_instantiate_rc");
    launch_rc.report("one_by_one_launch_rc");
    destroy_rc.report("one_by_one_destroy_rc");

    RcCount tcreate_rc, tcapture_rc, tlaunch_rc, tdestroy_rc;
    for (int i = 0; i < together; i++)
        tcreate_rc.add(cudaMemPoolCreate(&pool[i], &props));
    tcreate_rc.report("together_create_rc");
    cudaGraph_t g = nullptr;
    cudaGraphExec_t eg = nullptr;
    obs_rc("together_begin", cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < together; i++)
        capture_from_pool(pool[i], i, tcapture_rc);
    tcapture_rc.report("together_capture_rc");
    obs_rc("together_end", cudaStreamEndCapture(g_s, &g));
    obs_rc("together_instantiate", cudaGraphInstantiate(&eg, g, 0));
    for (int round = 0; round < 2; round++)
        launch_and_check("together_bad_slots", together, tlaunch_rc, &eg, 1);
    tlaunch_rc.report("together_launch_rc");
    obs_rc("together_exec_destroy", cudaGraphExecDestroy(eg));
    obs_rc("together_graph_destroy", cudaGraphDestroy(g));
    for (int i = 0; i < together; i++)
        tdestroy_rc.add(cudaMemPoolDestroy(pool[i]));
    tdestroy_rc.report("together_pool_destroy_rc");
}

// 300 captures, each forking a second stream and joining it back; then one capture forking 300
// streams off the same allocation and joining them all.
static void forks(void) {
    const int n = 300;
    setup(n);
    static cudaGraphExec_t e[n];
    static cudaStream_t side[n];
    static cudaEvent_t ev[n];
    cudaStream_t s2 = nullptr;
    cudaEvent_t fork = nullptr, join = nullptr;
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    RcCount capture_rc, end_rc, inst_rc, launch_rc, destroy_rc;
    for (int i = 0; i < n; i++) {
        void *p = nullptr;
        cudaGraph_t g = nullptr;
        capture_rc.add(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
        capture_rc.add(cudaMallocAsync(&p, kWords * sizeof(uint32_t), g_s));
        capture_rc.add(cudaEventRecord(fork, g_s));
        capture_rc.add(cudaStreamWaitEvent(s2, fork, 0));
        capture_rc.add(fill_words(s2, p, kWords, 1000 + i));
        capture_rc.add(cudaEventRecord(join, s2));
        capture_rc.add(cudaStreamWaitEvent(g_s, join, 0));
        k_add<<<kGrid, kBlock, 0, g_s>>>(slot(i), (const uint32_t *)p, kWords, 0);
        capture_rc.add(cudaFreeAsync(p, g_s));
        end_rc.add(cudaStreamEndCapture(g_s, &g));
        inst_rc.add(cudaGraphInstantiate(&e[i], g, 0));
        cudaGraphDestroy(g);
    }
    capture_rc.report("captures_rc");
    end_rc.report("captures_end_rc");
    inst_rc.report("captures_instantiate_rc");
    launch_and_check("captures_bad_slots", n, launch_rc, e, n);
    launch_rc.report("captures_launch_rc");
    for (int i = 0; i < n; i++)
        destroy_rc.add(cudaGraphExecDestroy(e[i]));
    destroy_rc.report("captures_exec_destroy_rc");

    RcCount wide_rc;
    uint32_t *p = nullptr;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t ew = nullptr;
    for (int i = 0; i < n; i++) {
        wide_rc.add(cudaStreamCreateWithFlags(&side[i], cudaStreamNonBlocking));
        wide_rc.add(cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming));
    }
    wide_rc.add(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
    wide_rc.add(cudaMallocAsync(&p, n * kWords * sizeof(uint32_t), g_s));
    wide_rc.add(cudaEventRecord(fork, g_s));
    for (int i = 0; i < n; i++) {
        wide_rc.add(cudaStreamWaitEvent(side[i], fork, 0));
        wide_rc.add(fill_words(side[i], p + (size_t)i * kWords, kWords, 1000 + i));
        wide_rc.add(cudaEventRecord(ev[i], side[i]));
    }
    for (int i = 0; i < n; i++)
        wide_rc.add(cudaStreamWaitEvent(g_s, ev[i], 0));
    k_add<<<kGrid, kBlock, 0, g_s>>>(g_out, p, n * kWords, 0);
    wide_rc.add(cudaFreeAsync(p, g_s));
    wide_rc.report("wide_capture_rc");
    obs_rc("wide_end", cudaStreamEndCapture(g_s, &g));
    obs_rc("wide_instantiate", cudaGraphInstantiate(&ew, g, 0));
    RcCount wide_launch_rc;
    for (int round = 0; round < 2; round++)
        launch_and_check("wide_bad_slots", n, wide_launch_rc, &ew, 1);
    wide_launch_rc.report("wide_launch_rc");
    obs_rc("wide_exec_destroy", cudaGraphExecDestroy(ew));
    obs_rc("wide_graph_destroy", cudaGraphDestroy(g));
}

int main() {
    run_isolated("destroy_nodes", destroy_nodes);
    run_isolated("nested", nested);
    run_isolated("pools", pools);
    run_isolated("forks", forks);
    return 0;
}
