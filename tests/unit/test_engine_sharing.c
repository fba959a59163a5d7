/* Sharing between graphs (graphMemoryFootprint's cases), the cross-stream policies, trim and the
 * attributes, the cap, no_alias and uaf_check. */
#include "check.h"
#include "engine_sim.h"

#define MiB (1ull << 20)

/* A graph with one allocation of `size`, freed in the graph unless `escape`. */
/* 8 graphs of 4 MiB in one stream: Reserved = one graph's, all addresses distinct (§A1.10). */
static void test_eight_graphs_one_stream_share(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g[8];
    for (int i = 0; i < 8; i++) {
        sim_one_alloc_graph(&s, &g[i], 4 * MiB, false);
        REQUIRE(sim_instantiate(&s, &g[i], 0xE0 + i, 0) == GM_OK);
        for (int j = 0; j < i; j++)
            CHECK(g[i].va[0] != g[j].va[0]);
    }
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 0);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 8; i++) {
            REQUIRE(sim_launch(&s, 0xE0 + i, 0x51) == GM_OK);
            CHECK(sim_run_data(&s, &g[i], NULL));
        }
    }
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 4 * MiB);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 4 * MiB);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), 0);
    CHECK(sim_fini(&s));
}

/* Graphs g[0..count) of 4 MiB allocated and freed inside, instantiated as execs 0xE0 + i; the first
 * `launched` launched on streams 0x100 + i and run, each finished before the next one when
 * `one_by_one` (a warm-up with a synchronize after each). */
static void graphs_on_streams(sim_t *s, sim_graph_t *g, int count, int launched, bool one_by_one) {
    for (int i = 0; i < count; i++) {
        sim_one_alloc_graph(s, &g[i], 4 * MiB, false);
        REQUIRE(sim_instantiate(s, &g[i], 0xE0 + i, 0) == GM_OK);
    }
    for (int i = 0; i < launched; i++) {
        REQUIRE(sim_launch(s, 0xE0 + i, 0x100 + i) == GM_OK);
        CHECK(sim_run_data(s, &g[i], NULL));
        if (one_by_one)
            host_backend_complete_all(s->hb);
    }
}

/* 8 graphs on 8 streams: they may overlap, so memory is the sum; serialize policy then moves
 * them onto one stream with waits and no new memory. */
static void test_eight_streams_sum(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g[8];
    graphs_on_streams(&s, g, 8, 8, false);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 32 * MiB);
    /* Graph 1 moves to graph 0's stream: it stays in its group; its launch waits for its
     * group's last stream only if another member ran there. */
    uint64_t waits = host_backend_stream_waits(s.hb);
    REQUIRE(sim_launch(&s, 0xE1, 0x100) == GM_OK);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 32 * MiB);
    CHECK(sim_fini(&s));
}

static void sum_adopted(const gm_exec_report_t *rep, void *arg) {
    *(uint64_t *)arg += rep->adopted;
}

/* 8 graphs on 8 streams, the first finished before the eighth is launched: the eighth takes the
 * first's memory instead of growing the footprint (the driver does the same), and from then on
 * the two run one after the other: the first, launched again while the eighth runs, waits for it.
 * A busy group is never taken, and its streams get no event recorded by the question. */
static void test_finished_group_reused(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g[8];
    graphs_on_streams(&s, g, 8, 7, false);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 28 * MiB);
    host_backend_complete(s.hb, 0x100, UINT64_MAX);
    host_backend_reset_calls(s.hb);
    REQUIRE(sim_launch(&s, 0xE7, 0x107) == GM_OK);
    CHECK(sim_run_data(&s, &g[7], NULL));
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 28 * MiB);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_HIGH), 28 * MiB);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_FENCE_RECORD), 0);
    uint64_t adopted = 0;
    gm_engine_report(s.engine, sum_adopted, &adopted);
    CHECK_EQ_U64(adopted, 1);
    uint64_t waits = host_backend_stream_waits(s.hb);
    REQUIRE(sim_launch(&s, 0xE0, 0x100) == GM_OK);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 1);
    CHECK(sim_run_data(&s, &g[0], NULL));
    /* Under remap each stream keeps memory of its own. */
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
    gm_engine_config_t c = sim_default_config();
    c.cross_stream = GM_CROSS_STREAM_REMAP;
    REQUIRE(sim_init(&s, &c));
    graphs_on_streams(&s, g, 2, 2, true);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 8 * MiB);
    CHECK(sim_fini(&s));
}

/* Graphs warmed up one after another on their own streams, then run at the same time: the warm-up
 * adopts (one group, one graph's memory), and the first steady round gives each adopted graph its
 * own stream's group back, once, instead of a wait per launch (a review measured 79 stream waits
 * in 80 launches without that). */
static void test_adopted_leave_when_busy(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g[8];
    graphs_on_streams(&s, g, 8, 8, true); /* warm-up */
    uint64_t adopted = 0;
    gm_engine_report(s.engine, sum_adopted, &adopted);
    CHECK_EQ_U64(adopted, 7);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 4 * MiB);
    uint64_t waits = host_backend_stream_waits(s.hb);
    for (int round = 0; round < 10; round++)
        for (int i = 0; i < 8; i++) {
            REQUIRE(sim_launch(&s, 0xE0 + i, 0x100 + i) == GM_OK);
            CHECK(sim_run_data(&s, &g[i], NULL));
        }
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 32 * MiB);
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));

    /* Still running itself, an adopted graph waits like any member; idle, it leaves. */
    REQUIRE(sim_init(&s, NULL));
    graphs_on_streams(&s, g, 2, 1, true);
    REQUIRE(sim_launch(&s, 0xE1, 0x101) == GM_OK); /* adopts graph 0's group */
    waits = host_backend_stream_waits(s.hb);
    REQUIRE(sim_launch(&s, 0xE0, 0x100) == GM_OK); /* waits for graph 1 */
    REQUIRE(sim_launch(&s, 0xE1, 0x101) == GM_OK); /* graph 1 still runs: waits for graph 0 */
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 2);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 4 * MiB);
    host_backend_complete_all(s.hb);
    REQUIRE(sim_launch(&s, 0xE0, 0x100) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, 0x101) == GM_OK); /* idle, its group busy on stream 0: leaves */
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 2);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 8 * MiB);
    for (int i = 0; i < 2; i++)
        CHECK(sim_run_data(&s, &g[i], NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

/* 8 graphs each leaving 4 MiB unfreed: the sum, and a trim keeps it (§A6.9, §A11.1). */
static void test_eight_unfreed_sum(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g[8];
    for (int i = 0; i < 8; i++) {
        sim_one_alloc_graph(&s, &g[i], 4 * MiB, true);
        REQUIRE(sim_instantiate(&s, &g[i], 0xE0 + i, 0) == GM_OK);
        REQUIRE(sim_launch(&s, 0xE0 + i, 0x51) == GM_OK);
        CHECK(sim_run_data(&s, &g[i], NULL));
    }
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 32 * MiB);
    host_backend_complete_all(s.hb);
    gm_engine_trim(s.engine, 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 32 * MiB);
    for (int i = 0; i < 8; i++) {
        CHECK(sim_forget_live(&s, g[i].va[0]));
        CHECK_EQ_INT(gm_engine_free_outside(s.engine, g[i].va[0], GM_NO_STREAM), GM_OK);
    }
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 32 * MiB); /* a free does not lower Used */
    gm_engine_trim(s.engine, 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK(sim_fini(&s));
}

/* The attribute walk of §A10.8 and the argument checks of §A10.1-§A10.3. */
static void test_attributes_double_memory(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    uint64_t v;
    CHECK_EQ_INT(gm_engine_attr_get(s.engine, -1, 0, &v), GM_ERR_INVALID_DEVICE);
    CHECK_EQ_INT(gm_engine_attr_get(s.engine, 2, 0, &v), GM_ERR_INVALID_DEVICE);
    CHECK_EQ_INT(gm_engine_attr_get(s.engine, 0, 7, &v), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(gm_engine_attr_get(s.engine, 0, 0, NULL), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(gm_engine_attr_set(s.engine, 0, GM_ATTR_USED_CURRENT, 0), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(gm_engine_attr_set(s.engine, 0, GM_ATTR_USED_HIGH, 5), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(gm_engine_attr_set(s.engine, 9, GM_ATTR_USED_HIGH, 0), GM_ERR_INVALID_DEVICE);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 9), GM_ERR_INVALID_DEVICE);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 1), GM_OK);

    sim_graph_t g1, g2;
    sim_one_alloc_graph(&s, &g1, 16 * MiB, true);
    sim_one_alloc_graph(&s, &g2, 16 * MiB, true);
    REQUIRE(sim_instantiate(&s, &g1, 0xE1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &g2, 0xE2, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, 0x51) == GM_OK);
    host_backend_complete_all(s.hb);
    for (int a = 0; a < 4; a++)
        CHECK_EQ_U64(sim_attr(&s, a), 16 * MiB);
    REQUIRE(sim_launch(&s, 0xE2, 0x51) == GM_OK);
    host_backend_complete_all(s.hb);
    for (int a = 0; a < 4; a++)
        CHECK_EQ_U64(sim_attr(&s, a), 32 * MiB);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g1.va[0], GM_NO_STREAM), GM_OK);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g2.va[0], GM_NO_STREAM), GM_OK);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    gm_engine_exec_destroy(s.engine, 0xE2, GM_NO_CALL);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_HIGH), 32 * MiB);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_HIGH), 32 * MiB);
    CHECK_EQ_INT(gm_engine_attr_set(s.engine, 0, GM_ATTR_USED_HIGH, 0), GM_OK);
    CHECK_EQ_INT(gm_engine_attr_set(s.engine, 0, GM_ATTR_RESERVED_HIGH, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_HIGH), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_HIGH), 0);
    CHECK(sim_fini(&s));
}

/* A trim while a launch may still run keeps its memory; once finished it goes, and the next
 * launch maps again (§A11.1, §A11.2). */
static void test_trim_respects_running_launch(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 2 * MiB, false);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, 0x51) == GM_OK);
    gm_engine_trim(s.engine, 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 2 * MiB);
    host_backend_complete_all(s.hb);
    gm_engine_trim(s.engine, 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    REQUIRE(sim_launch(&s, 0xE1, 0x51) == GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 2 * MiB);
    CHECK(sim_run_data(&s, &g, NULL));
    gm_exec_report_t r = sim_report(&s);
    CHECK_EQ_U64(r.launches, 2);
    CHECK_EQ_U64(r.remaps, 1);
    CHECK_EQ_U64(r.allocations, 1);
    CHECK_EQ_U64(r.lower_bound, 2 * MiB);
    CHECK_EQ_U64(r.planned_bytes, 2 * MiB);
    CHECK_EQ_U64(r.escape_bytes, 0); /* freed in the graph: all of it shareable */
    CHECK_EQ_U64(r.mapped_bytes, 2 * MiB);
    CHECK(sim_fini(&s));
}

/* Two graphs sharing a group alternate between two streams. SERIALIZE: stream waits, memory
 * stays shared. REMAP: no waits between graphs, the mover leaves for the other stream's group
 * after a fence (host wait) shows its run finished. */
static void cross_stream(gm_cross_stream_policy_t policy) {
    gm_engine_config_t c = sim_default_config();
    c.cross_stream = policy;
    sim_t s;
    REQUIRE(sim_init(&s, &c));
    sim_graph_t a, b;
    sim_one_alloc_graph(&s, &a, 4 * MiB, false);
    sim_one_alloc_graph(&s, &b, 4 * MiB, false);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &b, 0xB, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, 0x51) == GM_OK);
    REQUIRE(sim_launch(&s, 0xB, 0x51) == GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 4 * MiB);
    /* b moves to stream 0x52 while a's run on 0x51 has not finished. */
    REQUIRE(sim_launch(&s, 0xB, 0x52) == GM_OK);
    if (policy == GM_CROSS_STREAM_SERIALIZE) {
        CHECK_EQ_U64(host_backend_stream_waits(s.hb), 0); /* b ran last: the driver orders it */
        REQUIRE(sim_launch(&s, 0xA, 0x51) == GM_OK);      /* a after b: wait on 0x52 */
        CHECK_EQ_U64(host_backend_stream_waits(s.hb), 1);
        CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 4 * MiB);
        CHECK_EQ_U64(host_backend_completed(s.hb, 0x51), 0);
        /* a's new run cannot complete before b's run on 0x52. */
        CHECK_EQ_U64(host_backend_complete(s.hb, 0x51, 100), 2);
    } else {
        CHECK_EQ_U64(host_backend_host_waits(s.hb), 1);
        CHECK_EQ_U64(host_backend_stream_waits(s.hb), 0);
        CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 8 * MiB);
        REQUIRE(sim_launch(&s, 0xA, 0x51) == GM_OK);
        CHECK_EQ_U64(host_backend_stream_waits(s.hb), 0);
    }
    CHECK(sim_run_data(&s, &a, NULL));
    CHECK(sim_run_data(&s, &b, NULL));
    CHECK(sim_fini(&s));
}

static void test_cross_stream_serialize(void) {
    cross_stream(GM_CROSS_STREAM_SERIALIZE);
}

static void test_cross_stream_remap(void) {
    cross_stream(GM_CROSS_STREAM_REMAP);
}

/* The cap: past it, idle memory is trimmed first, then OUT_OF_MEMORY with nothing changed. */
static void test_cap(void) {
    gm_engine_config_t c = sim_default_config();
    c.max_reserved = 6 * MiB;
    sim_t s;
    REQUIRE(sim_init(&s, &c));
    sim_graph_t a, b, big;
    sim_one_alloc_graph(&s, &a, 4 * MiB, false);
    sim_one_alloc_graph(&s, &b, 2 * MiB, false);
    sim_one_alloc_graph(&s, &big, 8 * MiB, false);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &b, 0xB, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &big, 0xC, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, 0x51) == GM_OK);
    REQUIRE(sim_launch(&s, 0xB, 0x52) == GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 6 * MiB);
    /* a still running: its memory cannot go, so b's relaunch elsewhere does not fit. */
    CHECK_EQ_INT(sim_launch(&s, 0xC, 0x53), GM_ERR_OUT_OF_MEMORY);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 2 * MiB + 4 * MiB);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xC, 0x53), GM_ERR_OUT_OF_MEMORY); /* 8 > 6 even when empty */
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);       /* trimmed trying */
    CHECK_EQ_U64(host_backend_counts(s.hb).mappings, 0);
    REQUIRE(sim_launch(&s, 0xA, 0x51) == GM_OK);
    REQUIRE(sim_launch(&s, 0xB, 0x52) == GM_OK);
    CHECK(sim_run_data(&s, &a, NULL));
    CHECK(sim_run_data(&s, &b, NULL));
    CHECK(sim_fini(&s));
}

/* no_alias: every allocation its own memory, nothing shared, even on one stream. */
static void test_no_alias(void) {
    gm_engine_config_t c = sim_default_config();
    c.no_alias = true;
    sim_t s;
    REQUIRE(sim_init(&s, &c));
    sim_graph_t g[3];
    for (int i = 0; i < 3; i++) {
        sim_graph_init(&s, &g[i]);
        uint32_t x = sim_alloc(&s, &g[i], 1 * MiB, NULL, 0);
        uint32_t fx = sim_free(&s, &g[i], g[i].va[x], &x, 1, NULL);
        uint32_t y = sim_alloc(&s, &g[i], 1000, &fx, 1);
        sim_free(&s, &g[i], g[i].va[y], &y, 1, NULL);
        CHECK(g[i].va[x] != g[i].va[y]);
        REQUIRE(sim_instantiate(&s, &g[i], 0xE0 + i, 0) == GM_OK);
        REQUIRE(sim_launch(&s, 0xE0 + i, 0x51) == GM_OK);
        CHECK(sim_run_data(&s, &g[i], NULL));
    }
    /* 1 MiB + one 64 KiB page per graph, three graphs. */
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 3 * (1 * MiB + sim_page()));
    CHECK(sim_fini(&s));
}

/* uaf_check: memory is mapped only while a launch may run or an allocation is unfreed. */
static void test_uaf_check(void) {
    gm_engine_config_t c = sim_default_config();
    c.uaf_check = true;
    sim_t s;
    REQUIRE(sim_init(&s, &c));
    sim_graph_t g, h;
    sim_one_alloc_graph(&s, &g, 1 * MiB, false);
    sim_one_alloc_graph(&s, &h, 1 * MiB, true);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &h, 0xE2, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, 0x51) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE2, 0x51) == GM_OK);
    CHECK(host_backend_handle_at(s.hb, g.va[0], NULL) != 0);
    host_backend_complete_all(s.hb);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 1 * MiB); /* polls: g is unmapped */
    CHECK(host_backend_handle_at(s.hb, g.va[0], NULL) == 0);
    CHECK(host_backend_handle_at(s.hb, h.va[0], NULL) != 0);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, h.va[0], GM_NO_STREAM), GM_OK);
    CHECK(host_backend_handle_at(s.hb, h.va[0], NULL) == 0);
    REQUIRE(sim_launch(&s, 0xE1, 0x51) == GM_OK);
    CHECK(host_backend_handle_at(s.hb, g.va[0], NULL) != 0);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_fini(&s));
}

/* Peer access: the resident device and the access mask get access (§A12.1). */
static void test_access_mask(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    gm_alloc_params_t p = {.device = 1, .size = 1 * MiB, .access_mask = 1};
    uint32_t a = sim_alloc_on(&s, &g, &p, NULL, 0);
    p.access_mask = 0;
    uint32_t b = sim_alloc_on(&s, &g, &p, NULL, 0);
    REQUIRE(a != UINT32_MAX && b != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, 0x51) == GM_OK);
    CHECK_EQ_U64(host_backend_access(s.hb, g.va[a]), 3);
    CHECK_EQ_U64(host_backend_access(s.hb, g.va[b]), 2);
    CHECK_EQ_U64(host_backend_device_bytes(s.hb, 1), 2 * MiB);
    CHECK_EQ_U64(host_backend_device_bytes(s.hb, 0), 0);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_fini(&s));
}

/* One graph with allocations on two devices: a part per device, each on its own device. */
static void test_two_devices(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    gm_alloc_params_t p0 = {.device = 0, .size = 1 * MiB}, p1 = {.device = 1, .size = 2 * MiB};
    uint32_t a = sim_alloc_on(&s, &g, &p0, NULL, 0);
    uint32_t b = sim_alloc_on(&s, &g, &p1, &a, 1);
    sim_free(&s, &g, g.va[a], &b, 1, NULL);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, 0x51) == GM_OK);
    CHECK_EQ_U64(host_backend_device_bytes(s.hb, 0), 1 * MiB);
    CHECK_EQ_U64(host_backend_device_bytes(s.hb, 1), 2 * MiB);
    uint64_t v = 0;
    CHECK_EQ_INT(gm_engine_attr_get(s.engine, 1, GM_ATTR_RESERVED_CURRENT, &v), GM_OK);
    CHECK_EQ_U64(v, 2 * MiB);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_forget_live(&s, g.va[b]));
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[b], GM_NO_STREAM), GM_OK);
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 1), GM_OK);
    CHECK_EQ_U64(host_backend_device_bytes(s.hb, 1), 0);
    CHECK_EQ_U64(host_backend_device_bytes(s.hb, 0), 1 * MiB); /* trim is per device */
    CHECK(sim_fini(&s));
}

/* A destroyed stream is forgotten at once; its deferred fence is realized first, while the handle
 * still names it (a query, and a record since its work is not finished): a new stream that gets the
 * same handle waits for what the old one ran instead of being taken for it. */
static void test_stream_destroyed(void) {
    sim_t s;
    sim_graph_t a, b;
    REQUIRE(sim_init_two_execs(&s, &a, &b));
    REQUIRE(sim_launch(&s, 0xA, 0x51) == GM_OK);
    host_backend_reset_calls(s.hb);
    CHECK_EQ_INT(gm_engine_stream_destroy(s.engine, 0x51, GM_NO_CALL), GM_OK);
    CHECK_EQ_U64(host_backend_total_calls(s.hb), 2);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_STREAM_IDLE), 1);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_FENCE_RECORD), 1);
    REQUIRE(sim_launch(&s, 0xB, 0x51) == GM_OK);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), 1);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 1 * MiB);
    CHECK(sim_run_data(&s, &b, NULL));
    /* unknown stream: nothing to do */
    CHECK_EQ_INT(gm_engine_stream_destroy(s.engine, 0x77, GM_NO_CALL), GM_OK);
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_eight_graphs_one_stream_share);
    RUN_TEST(test_eight_streams_sum);
    RUN_TEST(test_finished_group_reused);
    RUN_TEST(test_adopted_leave_when_busy);
    RUN_TEST(test_eight_unfreed_sum);
    RUN_TEST(test_attributes_double_memory);
    RUN_TEST(test_trim_respects_running_launch);
    RUN_TEST(test_cross_stream_serialize);
    RUN_TEST(test_cross_stream_remap);
    RUN_TEST(test_cap);
    RUN_TEST(test_no_alias);
    RUN_TEST(test_uaf_check);
    RUN_TEST(test_access_mask);
    RUN_TEST(test_two_devices);
    RUN_TEST(test_stream_destroyed);
    return gm_check_summary();
}
