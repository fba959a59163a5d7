/* Engine scenarios from the graph-memory documentation: building graphs, validating frees,
 * instantiating, launching, escaping allocations and the relaunch rules. */
#include "check.h"
#include "engine_sim.h"

#define MiB (1ull << 20)
#define S1 0x51
#define S2 0x52

/* Explicit alloc -> kernel -> free; addresses fixed and distinct; markers introspectable. */
static void test_explicit_alloc_free(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, 1 * MiB, NULL, 0);
    REQUIRE(a != UINT32_MAX);
    uint32_t k = sim_plain(&s, &g, &a, 1);
    gm_status_t st;
    uint32_t f = sim_free(&s, &g, g.va[a], &k, 1, &st);
    REQUIRE(f != UINT32_MAX);
    CHECK(gm_engine_owns(s.engine, g.va[a]));
    CHECK(!gm_engine_owns(s.engine, g.va[a] + 1));
    CHECK(gm_engine_graph_has_markers(s.engine, g.key));
    gm_marker_info_t info;
    CHECK_EQ_INT(gm_engine_marker(s.engine, g.nodes[a], &info), GM_MARKER_ALLOC);
    CHECK_EQ_U64(info.va, g.va[a]);
    CHECK_EQ_U64(info.params.size, 1 * MiB);
    CHECK_EQ_INT(gm_engine_marker(s.engine, g.nodes[f], &info), GM_MARKER_FREE);
    CHECK_EQ_U64(info.va, g.va[a]);
    CHECK_EQ_INT(gm_engine_marker(s.engine, g.nodes[k], NULL), GM_MARKER_NONE);
    CHECK((gm_engine_marker(s.engine, g.nodes[a], NULL) != GM_MARKER_NONE) &&
          (gm_engine_marker(s.engine, g.nodes[f], NULL) != GM_MARKER_NONE));
    CHECK(!(gm_engine_marker(s.engine, g.nodes[k], NULL) != GM_MARKER_NONE));

    /* §A2.1: freeing twice or a foreign address is refused. */
    CHECK(sim_free(&s, &g, g.va[a], &f, 1, &st) == UINT32_MAX);
    CHECK_EQ_INT(st, GM_ERR_INVALID_VALUE);
    sim_free(&s, &g, 0x1234, NULL, 0, &st);
    CHECK_EQ_INT(st, GM_ERR_INVALID_VALUE);

    /* Instantiation maps nothing (§A5.2); the first launch maps (§A6.5), Used = Reserved. */
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    CHECK(gm_engine_serves(s.engine, 0xE1));
    CHECK(!gm_engine_serves(s.engine, 0xBAD));
    CHECK(gm_engine_graph_instantiated(s.engine, g.key));
    CHECK_EQ_INT(sim_instantiate(&s, &g, 0xE2, 0), GM_ERR_NOT_SUPPORTED);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 1 * MiB);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 1 * MiB);
    CHECK(sim_run_data(&s, &g, NULL));
    /* Freed inside its graph: never live, so an outside free is refused (§A8.3). */
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[a], GM_NO_STREAM), GM_ERR_INVALID_VALUE);
    /* Relaunch on the same stream: no backend call, its fence is deferred until needed; with
     * deferral off, one call, the fence that follows the launch. */
    host_backend_reset_calls(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_U64(host_backend_total_calls(s.hb), 0);
    host_backend_set_deferral(s.hb, false);
    CHECK_EQ_INT(gm_engine_attr_set(s.engine, 0, GM_ATTR_USED_HIGH, 0), GM_OK); /* a change */
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_U64(host_backend_total_calls(s.hb), 1);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_FENCE_RECORD), 1);
    host_backend_set_deferral(s.hb, true);
    /* An exec the engine does not serve: the driver's call, nothing else. */
    host_backend_reset_calls(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xBAD, S1), GM_OK);
    CHECK_EQ_U64(host_backend_total_calls(s.hb), 0);

    sim_graph_destroy(s.engine, g.key);       /* the exec keeps working (§A9.2) */
    CHECK(gm_engine_owns(s.engine, g.va[a])); /* its exec still makes it at each launch */
    CHECK(!(gm_engine_marker(s.engine, g.nodes[a], NULL) !=
            GM_MARKER_NONE)); /* node handles may come back */
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    CHECK(!gm_engine_serves(s.engine, 0xE1));
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 1 * MiB); /* until a trim (§A9.3) */
    host_backend_complete_all(s.hb);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_HIGH), 1 * MiB);
    CHECK(sim_fini(&s));
}

/* Fork/join: two branches' allocations are live together and must not share memory; a later
 * allocation after the join reuses the address of a freed one (§A1.11). */
static void test_fork_join(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t root = sim_plain(&s, &g, NULL, 0);
    uint32_t a = sim_alloc(&s, &g, 2 * MiB, &root, 1);
    uint32_t b = sim_alloc(&s, &g, 3 * MiB, &root, 1);
    uint32_t ka = sim_plain(&s, &g, &a, 1), kb = sim_plain(&s, &g, &b, 1);
    uint32_t fa = sim_free(&s, &g, g.va[a], &ka, 1, NULL);
    uint32_t fb = sim_free(&s, &g, g.va[b], &kb, 1, NULL);
    uint32_t join[2] = {fa, fb};
    uint32_t j = sim_plain(&s, &g, join, 2);
    uint32_t c = sim_alloc(&s, &g, 4 * MiB, &j, 1);
    uint32_t kc = sim_plain(&s, &g, &c, 1);
    sim_free(&s, &g, g.va[c], &kc, 1, NULL);
    /* Small ones: the second reuses the first's bytes only after its free. */
    uint32_t x = sim_alloc(&s, &g, 1000, &kc, 1);
    uint32_t fx = sim_free(&s, &g, g.va[x], &x, 1, NULL);
    uint32_t y = sim_alloc(&s, &g, 1000, &fx, 1);
    uint32_t z = sim_alloc(&s, &g, 1000, &y, 1);
    CHECK_EQ_U64(g.va[y], g.va[x]);
    CHECK(g.va[z] != g.va[y]);
    uint32_t fyz[2];
    fyz[0] = sim_free(&s, &g, g.va[y], &z, 1, NULL);
    fyz[1] = sim_free(&s, &g, g.va[z], &z, 1, NULL);
    CHECK(fyz[0] != UINT32_MAX && fyz[1] != UINT32_MAX);
    CHECK(g.va[a] != g.va[b] && g.va[b] != g.va[c] && g.va[a] != g.va[c]);

    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    uint64_t used = sim_attr(&s, GM_ATTR_USED_CURRENT);
    /* a and b overlap (5 MiB); c after both: the lower bound is 5 MiB plus the small chunk. */
    CHECK(used >= 5 * MiB);
    CHECK(used <= 5 * MiB + 4 * sim_page());
    CHECK(sim_run_data(&s, &g, NULL));
    uint64_t rng = 3;
    for (int i = 0; i < 8; i++) {
        REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
        CHECK(sim_run_data(&s, &g, &rng));
    }
    CHECK(sim_fini(&s));
}

/* A chunk holding an allocation that escapes goes whole into the exec's private arena: chunks of
 * one page (while the small limit is a page at most) keep the graph's other small allocations
 * out of it, in the shared arena. e (an eighth of a page, never freed) and six allocations of
 * three sixteenths, all live together: e and four of them fill the first page, the other two
 * take a second chunk. With chunks of four pages all seven made one chunk of two pages, private
 * as a whole. */
static void escape_beside_temporaries(const gm_engine_config_t *config) {
    sim_t s;
    REQUIRE(sim_init(&s, config));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    const uint64_t page = sim_page();
    uint32_t last = sim_alloc(&s, &g, page / 8, NULL, 0);
    uint32_t temps[6];
    for (int i = 0; i < 6; i++)
        last = temps[i] = sim_alloc(&s, &g, page * 3 / 16, &last, 1);
    for (int i = 0; i < 6; i++)
        last = sim_free(&s, &g, g.va[temps[i]], &last, 1, NULL);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, GM_EXEC_AUTO_FREE) == GM_OK);
    gm_exec_report_t report = sim_report(&s);
    CHECK_EQ_U64(report.escape_bytes, page);      /* the first chunk */
    CHECK_EQ_U64(report.planned_bytes, 2 * page); /* and the second, shared */
    for (int i = 0; i < 3; i++) {
        REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
        CHECK(sim_run_data(&s, &g, NULL));
    }
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, (uint64_t[]){g.key}, 1));
}

static void test_escape_keeps_its_own_chunk(void) {
    escape_beside_temporaries(NULL);
}

/* The same graph under GRAPHMEM_LIFT_RESTRICTIONS with a small limit of four pages: only
 * allocations below a page are packed there, so chunks are one page too. */
static void test_lift_packs_in_one_page_chunks(void) {
    gm_engine_config_t c = sim_default_config();
    c.lift_restrictions = true;
    c.small_limit = 4 * sim_page();
    escape_beside_temporaries(&c);
}

/* Around the small limit (0, 1, odd, a page and either side, beyond): every allocation below it
 * fits a chunk, every other one gets a window, with and without GRAPHMEM_LIFT_RESTRICTIONS; the
 * launch's data stays intact. */
static void test_sizes_around_the_small_limit(void) {
    const uint64_t page = sim_page();
    const uint64_t limits[] = {0, 1, 257, page - 1, page, page + 1, 3 * page + 7};
    for (int lift = 0; lift < 2; lift++)
        for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
            gm_engine_config_t c = sim_default_config();
            c.small_limit = limits[i];
            c.lift_restrictions = lift;
            sim_t s;
            REQUIRE(sim_init(&s, &c));
            sim_graph_t g;
            sim_graph_init(&s, &g);
            const uint64_t sizes[] = {0, 1, limits[i] ? limits[i] - 1 : 0, limits[i],
                                      limits[i] + 1};
            uint32_t last = UINT32_MAX;
            for (size_t k = 0; k < 5; k++) {
                uint32_t a = sim_alloc(&s, &g, sizes[k], last == UINT32_MAX ? NULL : &last,
                                       last != UINT32_MAX);
                CHECK(a != UINT32_MAX);
                if (a != UINT32_MAX)
                    last = a;
            }
            CHECK(sim_instantiate(&s, &g, 0xE1, GM_EXEC_AUTO_FREE) == GM_OK);
            CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
            CHECK(sim_run_data(&s, &g, NULL));
            CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, (uint64_t[]){g.key}, 1));
        }
}

/* A free not ordered after its own alloc (§A2.5) must not let later allocations take packed
 * bytes (pack.h): j takes k's bytes after k's proper free, j's free follows only alloc(k), and p
 * follows that free but not k's, so k's user and p may run at once; p must not get k's bytes.
 * graphmem once reported every free to the packer and gave p k's address. */
static void test_improper_free_leaves_bytes_alone(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    const uint64_t size = 4096;
    uint32_t k = sim_alloc(&s, &g, size, NULL, 0);
    uint32_t user_k = sim_plain(&s, &g, &k, 1);
    uint32_t free_k = sim_free(&s, &g, g.va[k], &user_k, 1, NULL);
    uint32_t j = sim_alloc(&s, &g, size, &free_k, 1);
    CHECK(g.va[j] == g.va[k]); /* a proper free: j reuses k's bytes */
    gm_status_t st;
    uint32_t free_j = sim_free(&s, &g, g.va[j], &k, 1, &st); /* after alloc(k) only */
    CHECK_EQ_INT(st, GM_OK);
    uint32_t p = sim_alloc(&s, &g, size, &free_j, 1);
    uint32_t user_p = sim_plain(&s, &g, &p, 1);
    sim_free(&s, &g, g.va[p], &user_p, 1, NULL);
    CHECK(g.va[p] + size <= g.va[k] || g.va[k] + size <= g.va[p]);
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

/* Packed bytes are reused only where the free is proven to come first, across branches and
 * through a large allocation's marker: y on branch 2 takes x2's bytes (freed before it on its
 * branch), never x1's (freed on branch 1, unordered with y); z after the join, whose path to the
 * frees runs through large allocations on both branches, takes bytes of one of them. */
static void test_packed_reuse_across_branches(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    const uint64_t size = 4096, big = 4 * sim_page();
    uint32_t root = sim_plain(&s, &g, NULL, 0);
    uint32_t x1 = sim_alloc(&s, &g, size, &root, 1);
    uint32_t f1 = sim_free(&s, &g, g.va[x1], &x1, 1, NULL);
    uint32_t b1 = sim_alloc(&s, &g, big, &f1, 1);
    uint32_t fb1 = sim_free(&s, &g, g.va[b1], &b1, 1, NULL);
    uint32_t x2 = sim_alloc(&s, &g, size, &root, 1);
    uint32_t f2 = sim_free(&s, &g, g.va[x2], &x2, 1, NULL);
    uint32_t y = sim_alloc(&s, &g, size, &f2, 1);
    CHECK_EQ_U64(g.va[y], g.va[x2]);
    CHECK(g.va[y] != g.va[x1]);
    uint32_t fy = sim_free(&s, &g, g.va[y], &y, 1, NULL);
    uint32_t b2 = sim_alloc(&s, &g, big, &fy, 1);
    uint32_t fb2 = sim_free(&s, &g, g.va[b2], &b2, 1, NULL);
    uint32_t join[2] = {fb1, fb2};
    uint32_t j = sim_plain(&s, &g, join, 2);
    uint32_t z = sim_alloc(&s, &g, size, &j, 1);
    CHECK(g.va[z] == g.va[x1] || g.va[z] == g.va[x2]);
    uint32_t fz = sim_free(&s, &g, g.va[z], &z, 1, NULL);
    CHECK(fz != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, (uint64_t[]){g.key}, 1));
}

/* An allocation escapes, is used by a later graph and freed outside (§A8.1, §A8.2, §A6.1). */
static void test_escape_and_relaunch_rules(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g, h;
    sim_graph_init(&s, &g);
    sim_graph_init(&s, &h);
    uint32_t a = sim_alloc(&s, &g, 1 * MiB, NULL, 0);
    uint64_t va = g.va[a];
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    gm_exec_report_t report = sim_report(&s);
    CHECK_EQ_U64(report.planned_bytes, 1 * MiB);
    CHECK_EQ_U64(report.escape_bytes, 1 * MiB); /* all of it in the exec's private arena */
    /* Not launched yet: not live, an outside free is refused (§A8.6). */
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, va, S1), GM_ERR_INVALID_VALUE);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    /* Unfreed: a relaunch is refused. */
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_ERR_INVALID_VALUE);
    CHECK_EQ_INT(sim_upload(&s, 0xE1, S1), GM_OK); /* an upload frees nothing */

    /* A consumer graph on another stream uses it; graph and exec of the owner go away. */
    uint32_t k = sim_plain(&s, &h, NULL, 0);
    uint32_t b = sim_alloc(&s, &h, 2 * MiB, &k, 1);
    sim_free(&s, &h, h.va[b], &b, 1, NULL);
    REQUIRE(sim_instantiate(&s, &h, 0xE2, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE2, S2) == GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    sim_graph_destroy(s.engine, g.key);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    CHECK(gm_engine_owns(s.engine, va)); /* its memory is still live (§A9.1) */
    host_backend_complete_all(s.hb);
    gm_engine_trim(s.engine, 0);
    CHECK(sim_forget_live(&s, va)); /* the trim kept the unfreed allocation's bytes */
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 1 * MiB);
    host_backend_submit(s.hb, S2); /* a kernel still using it, then cudaFreeAsync on S2 */
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, va, S2), GM_OK);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, va, S2), GM_ERR_INVALID_VALUE); /* A8.5 */
    /* The async free is not known to be done: trim keeps the memory until it is. */
    gm_engine_trim(s.engine, 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 1 * MiB);
    host_backend_complete_all(s.hb);
    gm_engine_trim(s.engine, 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK(sim_fini(&s));
}

/* AutoFreeOnLaunch: each relaunch frees the previous allocation and makes it again at the same
 * address; an async outside free orders the next relaunch after it (§A6.2). */
static void test_auto_free_loop(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, 3 * MiB, NULL, 0);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, GM_EXEC_AUTO_FREE) == GM_OK);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
        CHECK(sim_run_data(&s, &g, NULL));
        CHECK(gm_engine_owns(s.engine, g.va[a]));
    }
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 3 * MiB);
    /* Freed on S2 behind work not finished, relaunched on S1: the relaunch waits for S2. */
    host_backend_submit(s.hb, S2);
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[a], S2), GM_OK);
    sim_forget_live(&s, g.va[a]);
    uint64_t waits = host_backend_stream_waits(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 1);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_fini(&s));
}

/* Upload maps and ties the exec to the stream; the launch then does nothing more (§A7.1). */
static void test_upload_then_launch(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, 1 * MiB, NULL, 0);
    sim_free(&s, &g, g.va[a], &a, 1, NULL);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    CHECK_EQ_INT(sim_upload(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 1 * MiB);
    host_backend_reset_calls(s.hb);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK_EQ_U64(host_backend_calls(s.hb, HOST_OP_MAP), 0);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_fini(&s));
}

/* A free-only graph frees an allocation of another graph (§A2.3, §A2.4). */
static void test_free_in_other_graph(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g, h, i;
    sim_graph_init(&s, &g);
    sim_graph_init(&s, &h);
    sim_graph_init(&s, &i);
    uint32_t a = sim_alloc(&s, &g, 1 * MiB, NULL, 0);
    uint64_t va = g.va[a];
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    sim_graph_destroy(s.engine, g.key);
    gm_status_t st;
    REQUIRE(sim_free(&s, &h, va, NULL, 0, &st) != UINT32_MAX);
    sim_free(&s, &i, va, NULL, 0, &st); /* already freed by another graph */
    CHECK_EQ_INT(st, GM_ERR_INVALID_VALUE);
    REQUIRE(sim_instantiate(&s, &h, 0xE2, 0) == GM_OK);
    for (int round = 0; round < 3; round++) {
        REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
        CHECK(sim_run_data(&s, &g, NULL));
        CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_ERR_INVALID_VALUE);
        REQUIRE(sim_launch(&s, 0xE2, S2) == GM_OK);
        CHECK(sim_run_data(&s, &h, NULL));
    }
    /* In-owner free after a foreign free is refused too. */
    sim_graph_t g2;
    sim_graph_init(&s, &g2);
    uint32_t b = sim_alloc(&s, &g2, 1 * MiB, NULL, 0);
    sim_free(&s, &g2, g2.va[b], &b, 1, &st);
    REQUIRE(st == GM_OK);
    sim_free(&s, &h, g2.va[b], NULL, 0, &st);
    CHECK_EQ_INT(st, GM_ERR_INVALID_VALUE);
    CHECK(sim_fini(&s));
}

/* The marker's driver call in the engine's step: counts its calls and refuses the node. */
static bool refuse_node(void *arg, uint64_t *node_out) {
    ++*(int *)arg;
    *node_out = 0;
    return false;
}

/* A marker the driver refuses leaves nothing behind (not even the graph, when it was the graph's
 * first); a moved child's markers belong to the parent. */

/* gm_engine_marked_graphs_any's question: notes each graph it is asked about (count first, then
 * the keys, at most three) and never matches, so every one is asked. */
static bool note_graph(void *arg, uint64_t graph) {
    uint64_t *seen = arg;
    if (seen[0] < 3)
        seen[1 + seen[0]] = graph;
    seen[0]++;
    return false;
}
static void test_abort_and_move(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    gm_alloc_params_t p = {.device = 0, .size = 4096};
    uint64_t va = 0, node = 0;
    int calls = 0;
    gm_node_call_t refuse = {.fn = refuse_node, .arg = &calls};
    CHECK_EQ_INT(gm_engine_alloc_marker(s.engine, 0x77, &p, NULL, refuse, &va, &node),
                 GM_ERR_DRIVER);
    CHECK_EQ_INT(calls, 1);
    CHECK(!gm_engine_graph_has_markers(s.engine, 0x77));
    /* Nor is the graph known: the refused marker was its first (a failed call leaves no trace). */
    CHECK(!gm_engine_graph_known(s.engine, 0x77));
    CHECK_EQ_INT(gm_engine_free_marker(s.engine, 0x78, 0x1000, NULL, refuse, &node),
                 GM_ERR_INVALID_VALUE); /* no allocation there: refused before the driver */
    CHECK(!gm_engine_graph_known(s.engine, 0x78));
    /* Refused by the engine before the driver is asked. */
    p.device = 5;
    CHECK_EQ_INT(gm_engine_alloc_marker(s.engine, 0x77, &p, NULL, refuse, &va, &node),
                 GM_ERR_INVALID_VALUE);
    p.device = 0;
    p.size = UINT64_MAX;
    CHECK_EQ_INT(gm_engine_alloc_marker(s.engine, 0x77, &p, NULL, refuse, &va, &node),
                 GM_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(calls, 1);
    CHECK(!gm_engine_graph_known(s.engine, 0x77));

    sim_graph_t child, parent;
    sim_graph_init(&s, &child);
    sim_graph_init(&s, &parent);
    uint32_t a = sim_alloc(&s, &child, 1 * MiB, NULL, 0);
    s.fail_node_adds = 1;
    gm_status_t st;
    CHECK(sim_free(&s, &child, child.va[a], &a, 1, &st) == UINT32_MAX);
    CHECK_EQ_INT(st, GM_ERR_DRIVER);
    CHECK_EQ_U64(child.node_count, 1);
    /* Nothing of the refused free stayed: the allocation is still unfreed, and escapes. */
    CHECK_EQ_INT(gm_engine_free_marker(s.engine, child.key, child.va[a], NULL, refuse, &node),
                 GM_ERR_DRIVER);
    CHECK_EQ_INT(calls, 2);
    CHECK(gm_engine_graph_known(s.engine, child.key)); /* a graph known before stays known */
    gm_engine_graph_moved(s.engine, child.key, parent.key, GM_NO_CALL);
    /* The markers are the parent's now, but the child still holds memory nodes to the driver:
     * its edges and nodes stay fixed (§A3.5), and node searches must look into it. */
    CHECK(gm_engine_graph_has_markers(s.engine, child.key));
    CHECK(gm_engine_graph_has_markers(s.engine, parent.key));
    uint64_t marked[4] = {0};
    CHECK(!gm_engine_marked_graphs_any(s.engine, note_graph, marked));
    CHECK_EQ_U64(marked[0], 2);
    CHECK((marked[1] == child.key && marked[2] == parent.key) ||
          (marked[1] == parent.key && marked[2] == child.key));
    /* The parent's topology holds the child's nodes. */
    parent.nodes[0] = child.nodes[a];
    parent.kind[0] = SIM_ALLOC;
    parent.va[0] = child.va[a];
    parent.size[0] = 1 * MiB;
    parent.node_count = 1;
    REQUIRE(sim_instantiate(&s, &parent, 0xE1, GM_EXEC_AUTO_FREE) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &parent, NULL));
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 1 * MiB);
    /* The parent's destruction takes its moved child: the handle may name a new graph. */
    uint64_t both[2] = {parent.key, child.key};
    REQUIRE(gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL) == GM_OK);
    REQUIRE(gm_engine_graphs_destroy(s.engine, both, 2, GM_NO_CALL) == GM_OK);
    CHECK(!gm_engine_graph_has_markers(s.engine, child.key));
    CHECK(sim_fini(&s));
}

/* An allocation larger than its device can ever back is refused when its node is made, with
 * out-of-memory, and leaves the graph as it was (§A1.6): nothing to forget afterwards. */
static void test_impossible_size(void) {
    gm_engine_config_t c = sim_default_config();
    c.max_allocation[1] = 4 * MiB;
    sim_t s;
    REQUIRE(sim_init(&s, &c));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    gm_alloc_params_t big = {.device = 1, .size = 4 * MiB + 1},
                      fits = {.device = 1, .size = 4 * MiB};
    uint64_t va = 0, node = 0;
    int calls = 0;
    CHECK_EQ_INT(gm_engine_alloc_marker(s.engine, g.key, &big, NULL,
                                        (gm_node_call_t){.fn = refuse_node, .arg = &calls}, &va,
                                        &node),
                 GM_ERR_OUT_OF_MEMORY);
    CHECK_EQ_INT(calls, 0);
    CHECK(!gm_engine_graph_has_markers(s.engine, g.key));
    CHECK(sim_alloc_on(&s, &g, &fits, NULL, 0) != UINT32_MAX);
    big.device = 0; /* no limit on device 0 */
    CHECK(sim_alloc_on(&s, &g, &big, NULL, 0) != UINT32_MAX);
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

static bool fresh_node(void *arg, uint64_t *node_out) {
    *node_out = ++*(uint64_t *)arg;
    return true;
}

/* A marker keeps whether a stream capture made it (gm_node_call_t.captured), which the shim's
 * unjoined check asks (shim/bridge/joins.c): the driver judges a captured memory node left on a
 * side stream, never one the application added through the graph API. */
static void test_marker_tells_captured(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    gm_alloc_params_t p = {.device = 0, .size = 1 * MiB};
    uint64_t next = 0x7700000, va[2] = {0, 0}, alloc[2] = {0, 0}, freed[2] = {0, 0};
    for (int captured = 0; captured < 2; captured++) {
        gm_node_call_t call = {.fn = fresh_node, .arg = &next, .captured = captured};
        REQUIRE(gm_engine_alloc_marker(s.engine, g.key, &p, NULL, call, &va[captured],
                                       &alloc[captured]) == GM_OK);
        REQUIRE(gm_engine_free_marker(s.engine, g.key, va[captured], NULL, call,
                                      &freed[captured]) == GM_OK);
    }
    for (int captured = 0; captured < 2; captured++) {
        gm_marker_info_t info = {.captured = !captured};
        CHECK_EQ_INT(gm_engine_marker(s.engine, alloc[captured], &info), GM_MARKER_ALLOC);
        CHECK_EQ_INT(info.captured, captured);
        info.captured = !captured;
        CHECK_EQ_INT(gm_engine_marker(s.engine, freed[captured], &info), GM_MARKER_FREE);
        CHECK_EQ_INT(info.captured, captured);
    }
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

static bool find_in_second_clone(void *arg, uint64_t node, uint64_t *clone_out) {
    (void)arg;
    *clone_out = node + 2 * SIM_CLONE_OFFSET;
    return true;
}

/* Records sharing an address (GRAPHMEM_LIFT_RESTRICTIONS): two clones of a graph hold copies of
 * its allocation at its address, each clone's copy next to the original in the address's chain.
 * Destroying the second clone takes a record from the chain's middle, then the original its head;
 * the remaining records stay found (the address owned, the clone's free marker known, its launch
 * makes the allocation), and after the last graph the address is free of records. */
static void test_records_sharing_an_address(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g, c1, c2;
    sim_one_alloc_graph(&s, &g, 4096, false);
    const uint64_t va = g.va[0];
    sim_clone_view(&s, &g, &c1);
    REQUIRE(gm_engine_graph_clone(s.engine, g.key, c1.key, sim_clone_map(true)) == GM_OK);
    sim_clone_view(&s, &c1, &c2);
    REQUIRE(gm_engine_graph_clone(s.engine, g.key, c2.key,
                                  (gm_node_map_t){find_in_second_clone, NULL}) == GM_OK);
    CHECK_EQ_INT(gm_engine_marker(s.engine, c2.nodes[2], NULL), GM_MARKER_FREE);
    sim_graph_destroy(s.engine, c2.key); /* the chain's middle */
    CHECK_EQ_INT(gm_engine_marker(s.engine, c2.nodes[2], NULL), GM_MARKER_NONE);
    CHECK(gm_engine_owns(s.engine, va));
    sim_graph_destroy(s.engine, g.key); /* its head */
    CHECK(gm_engine_owns(s.engine, va));
    CHECK_EQ_INT(gm_engine_marker(s.engine, c1.nodes[2], NULL), GM_MARKER_FREE);
    REQUIRE(sim_instantiate(&s, &c1, 0xE7, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE7, S1), GM_OK);
    CHECK(sim_run_data(&s, &c1, NULL));
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE7, GM_NO_CALL);
    sim_graph_destroy(s.engine, c1.key);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK); /* the exec's part goes, and its records */
    CHECK(!gm_engine_owns(s.engine, va));
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_impossible_size);
    RUN_TEST(test_marker_tells_captured);
    RUN_TEST(test_explicit_alloc_free);
    RUN_TEST(test_fork_join);
    RUN_TEST(test_escape_and_relaunch_rules);
    RUN_TEST(test_escape_keeps_its_own_chunk);
    RUN_TEST(test_lift_packs_in_one_page_chunks);
    RUN_TEST(test_sizes_around_the_small_limit);
    RUN_TEST(test_improper_free_leaves_bytes_alone);
    RUN_TEST(test_packed_reuse_across_branches);
    RUN_TEST(test_auto_free_loop);
    RUN_TEST(test_upload_then_launch);
    RUN_TEST(test_free_in_other_graph);
    RUN_TEST(test_abort_and_move);
    RUN_TEST(test_records_sharing_an_address);
    return gm_check_summary();
}
