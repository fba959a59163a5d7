/* Fault injection: for every backend operation and every call of it in a scenario, that call
 * fails. The engine must return a clean error, the backend must never see a wrong call, nothing
 * may leak once the engine is destroyed, and the engine must keep working afterwards (data
 * written through the mappings survives). */
#include <stdio.h>

#include "check.h"
#include "engine_sim.h"

#define KiB (1ull << 10)
#define S1 0x51
#define S2 0x52

typedef struct world {
    sim_graph_t g[3];
    bool built, inst[3], destroyed2;
} world_t;

/* Launches and, when it went through, runs the graph on the host. */
static bool launch(sim_t *s, world_t *w, int i, uint64_t stream) {
    gm_status_t st = sim_launch(s, 0xE0 + (uint64_t)i, stream);
    if (st != GM_OK)
        return true;
    return sim_run_data(s, &w->g[i], NULL);
}

static bool build(sim_t *s, world_t *w) {
    sim_graph_t *g = w->g;
    for (int i = 0; i < 3; i++)
        sim_graph_init(s, &g[i]);
    /* g0: fork/join of two large and two small allocations, all freed. */
    uint32_t r = sim_plain(s, &g[0], NULL, 0);
    uint32_t a = sim_alloc(s, &g[0], 256 * KiB, &r, 1);
    uint32_t b = sim_alloc(s, &g[0], 150 * KiB, &r, 1);
    uint32_t c = sim_alloc(s, &g[0], 3000, &r, 1);
    uint32_t d = sim_alloc(s, &g[0], 5000, &r, 1);
    if (a == UINT32_MAX || b == UINT32_MAX || c == UINT32_MAX || d == UINT32_MAX)
        return false;
    uint32_t fr[4] = {
        sim_free(s, &g[0], g[0].va[a], &a, 1, NULL), sim_free(s, &g[0], g[0].va[b], &b, 1, NULL),
        sim_free(s, &g[0], g[0].va[c], &c, 1, NULL), sim_free(s, &g[0], g[0].va[d], &d, 1, NULL)};
    sim_plain(s, &g[0], fr, 4);
    /* g1: one escaping allocation and a small freed one. */
    uint32_t e = sim_alloc(s, &g[1], 256 * KiB, NULL, 0);
    uint32_t f = sim_alloc(s, &g[1], 100, &e, 1);
    if (e == UINT32_MAX || f == UINT32_MAX)
        return false;
    sim_free(s, &g[1], g[1].va[f], &f, 1, NULL);
    /* g2: a larger one, freed. */
    uint32_t h = sim_alloc(s, &g[2], 700 * KiB, NULL, 0);
    if (h == UINT32_MAX)
        return false;
    sim_free(s, &g[2], g[2].va[h], &h, 1, NULL);
    return true;
}

static bool scenario(sim_t *s, world_t *w) {
    bool ok = true;
    w->built = build(s, w);
    if (!w->built)
        return true;
    for (int i = 0; i < 3; i++)
        w->inst[i] = sim_instantiate(s, &w->g[i], 0xE0 + (uint64_t)i, 0) == GM_OK;
    ok = launch(s, w, 0, S1) && ok;
    ok = launch(s, w, 1, S1) && ok;
    ok = launch(s, w, 2, S2) && ok;
    ok = launch(s, w, 0, S2) && ok;
    /* Check before the free: after it (uaf_check) the memory may be gone. */
    ok = sim_forget_live(s, w->g[1].va[0]) && ok;
    gm_engine_free_outside(s->engine, w->g[1].va[0], S2);
    gm_engine_trim(s->engine, 0);
    host_backend_complete_all(s->hb);
    gm_engine_trim(s->engine, 0);
    ok = launch(s, w, 1, S1) && ok;
    ok = launch(s, w, 0, S1) && ok;
    ok = launch(s, w, 2, S1) && ok;
    gm_engine_exec_destroy(s->engine, 0xE2, GM_NO_CALL);
    sim_graph_destroy(s->engine, w->g[2].key);
    w->destroyed2 = true;
    host_backend_complete_all(s->hb);
    gm_engine_trim(s->engine, 0);
    uint64_t v;
    gm_engine_attr_get(s->engine, 0, GM_ATTR_USED_CURRENT, &v);
    return ok;
}

/* With the fault gone: everything still alive works and a new graph works. */
static bool recover(sim_t *s, world_t *w) {
    bool ok = true;
    host_backend_complete_all(s->hb);
    if (w->built) {
        ok = sim_forget_live(s, w->g[1].va[0]) && ok;
        gm_engine_free_outside(s->engine, w->g[1].va[0], GM_NO_STREAM);
        for (int i = 0; i < 2; i++) {
            if (!w->inst[i])
                w->inst[i] = sim_instantiate(s, &w->g[i], 0xE0 + (uint64_t)i, 0) == GM_OK;
            if (!w->inst[i] || sim_launch(s, 0xE0 + (uint64_t)i, S2) != GM_OK) {
                fprintf(stderr, "recover: graph %d does not launch\n", i);
                return false;
            }
            ok = sim_run_data(s, &w->g[i], NULL) && ok;
        }
    }
    sim_graph_t n;
    sim_graph_init(s, &n);
    uint32_t a = sim_alloc(s, &n, 512 * KiB, NULL, 0);
    uint32_t b = sim_alloc(s, &n, 1000, &a, 1);
    if (a == UINT32_MAX || b == UINT32_MAX)
        return false;
    sim_free(s, &n, n.va[a], &b, 1, NULL);
    ok = sim_instantiate(s, &n, 0xF0, 0) == GM_OK && ok;
    ok = sim_launch(s, 0xF0, S1) == GM_OK && ok;
    return sim_run_data(s, &n, NULL) && ok;
}

static const host_op_t fault_ops[] = {
    HOST_OP_VA_RESERVE,
    HOST_OP_VA_RELEASE,
    HOST_OP_HANDLE_CREATE,
    HOST_OP_HANDLE_RELEASE,
    HOST_OP_MAP,
    HOST_OP_UNMAP,
    HOST_OP_SET_ACCESS,
    HOST_OP_FENCE_RECORD,
    HOST_OP_FENCE_QUERY,
    HOST_OP_FENCE_WAIT_STREAM,
    HOST_OP_FENCE_WAIT_HOST,
    HOST_OP_STREAM_SYNC,
};

static void run_all(const char *name, const gm_engine_config_t *config) {
    uint64_t calls[HOST_OP_COUNT];
    {
        sim_t s;
        world_t w = {0};
        REQUIRE(sim_init(&s, config));
        CHECK(scenario(&s, &w));
        for (int op = 0; op < HOST_OP_COUNT; op++)
            calls[op] = host_backend_calls(s.hb, (host_op_t)op);
        CHECK(recover(&s, &w));
        CHECK(sim_fini(&s));
    }
    uint64_t runs = 0;
    for (size_t k = 0; k < sizeof fault_ops / sizeof *fault_ops; k++) {
        host_op_t op = fault_ops[k];
        gm_status_t codes[2] = {GM_ERR_BACKEND, GM_ERR_OUT_OF_MEMORY};
        for (int c = 0; c < (op == HOST_OP_HANDLE_CREATE ? 2 : 1); c++) {
            for (uint64_t n = 1; n <= calls[op]; n++) {
                sim_t s;
                world_t w = {0};
                REQUIRE(sim_init(&s, config));
                host_backend_fail_nth(s.hb, op, n, codes[c]);
                bool ok = scenario(&s, &w);
                host_backend_fail_nth(s.hb, op, 0, GM_OK);
                ok = recover(&s, &w) && ok;
                ok = sim_fini(&s) && ok;
                runs++;
                if (!ok) {
                    fprintf(stderr, "%s: failing %s call %llu of %llu broke the engine\n", name,
                            host_op_name(op), (unsigned long long)n, (unsigned long long)calls[op]);
                    CHECK(ok);
                }
            }
        }
    }
    printf("%s: %llu injected faults\n", name, (unsigned long long)runs);
    CHECK(runs > 20);
}

static void test_faults_serialize(void) {
    gm_engine_config_t c = sim_default_config();
    run_all("serialize", &c);
}

static void test_faults_remap_tight_threshold(void) {
    gm_engine_config_t c = sim_default_config();
    c.cross_stream = GM_CROSS_STREAM_REMAP;
    c.release_threshold = 0;
    run_all("remap", &c);
}

static void test_faults_uaf(void) {
    gm_engine_config_t c = sim_default_config();
    c.uaf_check = true;
    run_all("uaf", &c);
}

/* Two failures in a row: a mapping's access cannot be set, and taking the mapping back fails too.
 * The launch fails cleanly, the mapping is kept to unmap later (the handle was released while
 * still mapped before, and every later launch mapped over it), and the next launch goes through
 * with its data. */
static void test_access_then_unmap_fail(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 64 * KiB, false);
    REQUIRE(sim_instantiate(&s, &g, 0xA, 0) == GM_OK);
    host_backend_fail_nth(s.hb, HOST_OP_SET_ACCESS, 1, GM_ERR_BACKEND);
    host_backend_fail_nth(s.hb, HOST_OP_UNMAP, 1, GM_ERR_BACKEND);
    CHECK(sim_launch(&s, 0xA, S1) != GM_OK);
    CHECK_EQ_U64(host_backend_counts(s.hb).misuses, 0);
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_U64(host_backend_counts(s.hb).misuses, 0);
    host_backend_complete_all(s.hb);
    CHECK(sim_teardown(&s, (uint64_t[]){0xA}, 1, (uint64_t[]){g.key}, 1));
}

int main(void) {
    RUN_TEST(test_faults_serialize);
    RUN_TEST(test_faults_remap_tight_threshold);
    RUN_TEST(test_faults_uaf);
    RUN_TEST(test_access_then_unmap_fail);
    return gm_check_summary();
}
