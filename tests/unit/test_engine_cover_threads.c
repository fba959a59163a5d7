/* Covers (engine.h, "Covers") under threads, over the host backend. Two threads cover the pages
 * of graph allocations, as the shim does around the driver's check of a memset or copy node, and
 * check while the cover is held that every covered page is mapped and stays mapped to the same
 * handle. Two threads launch those graphs, let them finish and trim, so that the same pages are
 * unmapped and mapped again all the time. A launch that maps over a scratch page shows up as a
 * backend misuse (a map over a mapping) or a failed launch; a trim that unmaps a page under a
 * cover as a page found unmapped or changed. Also run under ThreadSanitizer (label "threads"). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "check.h"
#include "engine_sim.h"

#define KiB (1ull << 10)
#define GRAPHS 4
#define LAUNCHERS 2
#define COVERERS 2
#define ROUNDS 3000
#define MAX_PAGES 16
#define STREAM(i) (0x200u + (uint64_t)(i))

/* The address and size of the allocation of a graph made by sim_one_alloc_graph. */
static void alloc_of(const sim_graph_t *g, uint64_t *va, uint64_t *size) {
    for (uint32_t n = 0; n < g->node_count; n++)
        if (g->kind[n] == SIM_ALLOC) {
            *va = g->va[n];
            *size = g->size[n];
        }
}

typedef struct world {
    sim_t s;
    sim_graph_t g[GRAPHS];
    uint64_t va[GRAPHS], size[GRAPHS];
    atomic_uint_fast64_t failed_launches, unmapped, changed, covered_pages;
} world_t;

typedef struct role {
    world_t *w;
    int index;
} role_t;

static void *launcher(void *arg) {
    role_t *r = arg;
    world_t *w = r->w;
    for (int round = 0; round < ROUNDS; round++) {
        /* Each exec is launched by one thread only, as CUDA requires of an exec in use. */
        int k = r->index + LAUNCHERS * (round % (GRAPHS / LAUNCHERS));
        if (sim_launch(&w->s, 0x100 + (uint64_t)k, STREAM(r->index)) != GM_OK)
            atomic_fetch_add(&w->failed_launches, 1);
        host_backend_complete_all(w->s.hb);
        gm_engine_trim(w->s.engine, 0);
    }
    return NULL;
}

static void *coverer(void *arg) {
    role_t *r = arg;
    world_t *w = r->w;
    uint64_t page = sim_page(), seed = 0x9e3779b97f4a7c15ull * (uint64_t)(r->index + 1);
    for (int round = 0; round < ROUNDS; round++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((seed >> 33) % GRAPHS);
        uint64_t first = w->va[k] - w->va[k] % page, pages = 0, handles[MAX_PAGES];
        gm_cover_t c;
        gm_engine_cover_begin(w->s.engine, &c, 0);
        gm_engine_cover_range(&c, w->va[k], w->size[k]);
        for (uint64_t p = first; p < w->va[k] + w->size[k] && pages < MAX_PAGES; p += page) {
            handles[pages] = host_backend_handle_at(w->s.hb, p, NULL);
            if (!handles[pages] || !(host_backend_access(w->s.hb, p) & 1))
                atomic_fetch_add(&w->unmapped, 1);
            pages++;
        }
        for (int i = 0; i < 3; i++)
            sched_yield(); /* the driver's check takes a while */
        for (uint64_t i = 0; i < pages; i++)
            if (host_backend_handle_at(w->s.hb, first + i * page, NULL) != handles[i])
                atomic_fetch_add(&w->changed, 1);
        atomic_fetch_add(&w->covered_pages, pages);
        gm_engine_cover_end(&c);
    }
    return NULL;
}

static void test_covers_hold_against_launch_and_trim(void) {
    world_t *w = calloc(1, sizeof *w);
    REQUIRE(w && sim_init(&w->s, NULL));
    for (int k = 0; k < GRAPHS; k++) {
        sim_one_alloc_graph(&w->s, &w->g[k], (64 + 96 * (uint64_t)k) * KiB, false);
        alloc_of(&w->g[k], &w->va[k], &w->size[k]);
        REQUIRE(w->size[k] && sim_instantiate(&w->s, &w->g[k], 0x100 + (uint64_t)k, 0) == GM_OK);
    }
    pthread_t threads[LAUNCHERS + COVERERS];
    role_t roles[LAUNCHERS + COVERERS];
    for (int i = 0; i < LAUNCHERS + COVERERS; i++) {
        roles[i] = (role_t){w, i < LAUNCHERS ? i : i - LAUNCHERS};
        REQUIRE(pthread_create(&threads[i], NULL, i < LAUNCHERS ? launcher : coverer, &roles[i]) ==
                0);
    }
    for (int i = 0; i < LAUNCHERS + COVERERS; i++)
        pthread_join(threads[i], NULL);
    host_backend_complete_all(w->s.hb);
    CHECK_EQ_U64(atomic_load(&w->failed_launches), 0);
    CHECK_EQ_U64(atomic_load(&w->unmapped), 0);
    CHECK_EQ_U64(atomic_load(&w->changed), 0);
    CHECK(atomic_load(&w->covered_pages) >= (uint64_t)COVERERS * ROUNDS);
    CHECK_EQ_U64(host_backend_counts(w->s.hb).misuses, 0);
    for (int k = 0; k < GRAPHS; k++) { /* mapped again, its own memory: the data holds */
        CHECK(sim_launch(&w->s, 0x100 + (uint64_t)k, STREAM(0)) == GM_OK);
        CHECK(sim_run_data(&w->s, &w->g[k], NULL));
        host_backend_complete_all(w->s.hb);
    }
    CHECK(sim_fini(&w->s));
    free(w);
}

/* A cover of a page no part maps gets the scratch page, one that a part maps keeps the part's
 * handle, and a range outside the reservation is left alone. The scratch mapping outlives the
 * cover, idle: the next cover of the page takes it without a new mapping, and the launch that maps
 * the page unmaps it first. Single-threaded: what each case does to the mappings. */
static void test_cover_maps_only_unmapped_pages(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a, b;
    sim_one_alloc_graph(&s, &a, 128 * KiB, false);
    sim_one_alloc_graph(&s, &b, 128 * KiB, false);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &b, 0xB, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, STREAM(0)) == GM_OK);
    uint64_t va_a = 0, va_b = 0, size = 0;
    alloc_of(&a, &va_a, &size);
    alloc_of(&b, &va_b, &size);
    uint64_t handle_a = host_backend_handle_at(s.hb, va_a, NULL);
    REQUIRE(handle_a != 0);
    CHECK_EQ_U64(host_backend_handle_at(s.hb, va_b, NULL), 0);
    uint64_t mappings = host_backend_counts(s.hb).mappings;
    gm_cover_t c;
    gm_engine_cover_begin(s.engine, &c, 0);
    gm_engine_cover_range(&c, va_a, 128 * KiB);
    gm_engine_cover_range(&c, va_b, 128 * KiB);
    uint64_t outside = 0x1000;
    gm_engine_cover_range(&c, outside, 4096);
    uint64_t scratch = host_backend_handle_at(s.hb, va_b, NULL);
    CHECK_EQ_U64(host_backend_handle_at(s.hb, va_a, NULL), handle_a);
    CHECK(scratch != 0);
    CHECK(host_backend_access(s.hb, va_b) & 1);
    CHECK_EQ_U64(host_backend_counts(s.hb).mappings, mappings + c.count);
    CHECK(c.count >= 2);
    uint64_t covered = c.count;
    uint64_t reserved = sim_attr(&s, GM_ATTR_RESERVED_CURRENT);
    gm_engine_cover_end(&c);
    CHECK_EQ_U64(host_backend_handle_at(s.hb, va_b, NULL), scratch); /* idle */
    CHECK_EQ_U64(host_backend_counts(s.hb).mappings, mappings + covered);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), reserved); /* never graph memory */

    /* The next cover of the page maps nothing new. */
    gm_engine_cover_begin(s.engine, &c, 0);
    gm_engine_cover_range(&c, va_b, 128 * KiB);
    CHECK_EQ_U64(c.count, covered);
    CHECK_EQ_U64(host_backend_counts(s.hb).mappings, mappings + covered);
    gm_engine_cover_end(&c);

    /* b's first launch maps its memory where the scratch page was, and the data is b's. */
    CHECK_EQ_INT(sim_launch(&s, 0xB, STREAM(1)), GM_OK);
    uint64_t handle_b = host_backend_handle_at(s.hb, va_b, NULL);
    CHECK(handle_b != 0 && handle_b != scratch);
    CHECK(sim_run_data(&s, &b, NULL));
    CHECK_EQ_U64(host_backend_counts(s.hb).misuses, 0);
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

/* Under GRAPHMEM_UAF_CHECK a cover leaves nothing behind (a stale pointer must fault, not land
 * on a scratch page); otherwise an idle scratch mapping goes when its graph's addresses go back. */
static void test_idle_scratch_ends(void) {
    for (int uaf = 0; uaf < 2; uaf++) {
        gm_engine_config_t config = sim_default_config();
        config.uaf_check = uaf;
        sim_t s;
        REQUIRE(sim_init(&s, &config));
        sim_graph_t g;
        sim_one_alloc_graph(&s, &g, 128 * KiB, false);
        uint64_t va = 0, size = 0;
        alloc_of(&g, &va, &size);
        uint64_t mappings = host_backend_counts(s.hb).mappings;
        gm_cover_t c;
        gm_engine_cover_begin(s.engine, &c, 0);
        gm_engine_cover_range(&c, va, 4096);
        CHECK_EQ_U64(c.count, 1);
        gm_engine_cover_end(&c);
        CHECK_EQ_U64(host_backend_counts(s.hb).mappings, mappings + !uaf);
        sim_graph_destroy(s.engine, g.key);
        CHECK_EQ_U64(host_backend_handle_at(s.hb, va, NULL), 0);
        CHECK_EQ_U64(host_backend_counts(s.hb).mappings, mappings);
        CHECK_EQ_U64(host_backend_counts(s.hb).misuses, 0);
        CHECK(sim_fini(&s));
    }
}

/* A launch waiting for covers goes before covers that start after it: thread A holds a cover, B
 * launches an exec that must map (it waits), C then starts a cover of another graph's pages. C's
 * cover may start only once B's launch is done, after A's cover ended. Without that order a
 * thread covering in a loop holds launches off for good. */
typedef struct order_world {
    sim_t s;
    sim_graph_t g[2];
    uint64_t va[2], size[2];
    atomic_bool launched;               /* B's driver call ran (under the engine lock) */
    atomic_int launched_when_c_covered; /* -1: C's cover has not started yet */
} order_world_t;

static bool order_driver_call(void *arg) {
    order_world_t *w = arg;
    host_backend_submit(w->s.hb, STREAM(0));
    atomic_store(&w->launched, true);
    return true;
}

static void *order_launch(void *arg) {
    order_world_t *w = arg;
    CHECK_EQ_INT(gm_engine_launch(w->s.engine, 0x300, STREAM(0), false,
                                  (gm_driver_call_t){order_driver_call, w}),
                 GM_OK);
    return NULL;
}

static void *order_cover(void *arg) {
    order_world_t *w = arg;
    gm_cover_t c;
    gm_engine_cover_begin(w->s.engine, &c, 0);
    gm_engine_cover_range(&c, w->va[1], w->size[1]);
    atomic_store(&w->launched_when_c_covered, atomic_load(&w->launched));
    gm_engine_cover_end(&c);
    return NULL;
}

static void test_waiting_launch_goes_before_new_covers(void) {
    order_world_t *w = calloc(1, sizeof *w);
    REQUIRE(w && sim_init(&w->s, NULL));
    atomic_store(&w->launched_when_c_covered, -1);
    for (int k = 0; k < 2; k++) {
        sim_one_alloc_graph(&w->s, &w->g[k], 128 * KiB, false);
        alloc_of(&w->g[k], &w->va[k], &w->size[k]);
        REQUIRE(sim_instantiate(&w->s, &w->g[k], 0x300 + (uint64_t)k, 0) == GM_OK);
    }
    gm_cover_t held;
    gm_engine_cover_begin(w->s.engine, &held, 0);
    gm_engine_cover_range(&held, w->va[0], w->size[0]);
    pthread_t b, c;
    REQUIRE(pthread_create(&b, NULL, order_launch, w) == 0);
    usleep(100 * 1000); /* B is waiting for the held cover by now */
    REQUIRE(pthread_create(&c, NULL, order_cover, w) == 0);
    usleep(100 * 1000); /* C would have covered by now if it did not wait for B */
    CHECK(!atomic_load(&w->launched));
    CHECK_EQ_INT(atomic_load(&w->launched_when_c_covered), -1);
    gm_engine_cover_end(&held);
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    CHECK(atomic_load(&w->launched));
    CHECK_EQ_INT(atomic_load(&w->launched_when_c_covered), 1); /* B's call came first */
    host_backend_complete_all(w->s.hb);
    CHECK(sim_fini(&w->s));
    free(w);
}

typedef struct leave_world {
    sim_t s;
    sim_graph_t g[2];
    atomic_bool launched;
} leave_world_t;

static void *leave_launch(void *arg) {
    leave_world_t *w = arg;
    CHECK_EQ_INT(sim_launch(&w->s, 0x401, 0x501), GM_OK);
    atomic_store(&w->launched, true);
    return NULL;
}

/* An adopted part about to leave its group (engine_part.c, gm_part_enter) unmaps: while a cover
 * holds its pages, its launch waits, and the pages keep their handle until the cover ends. */
static void test_leaving_launch_waits_for_cover(void) {
    leave_world_t *w = calloc(1, sizeof *w);
    REQUIRE(w && sim_init(&w->s, NULL));
    uint64_t va = 0, size = 0, page = sim_page();
    for (int k = 0; k < 2; k++) {
        sim_one_alloc_graph(&w->s, &w->g[k], 256 * KiB, false);
        REQUIRE(sim_instantiate(&w->s, &w->g[k], 0x400 + (uint64_t)k, 0) == GM_OK);
        REQUIRE(sim_launch(&w->s, 0x400 + (uint64_t)k, 0x500 + (uint64_t)k) == GM_OK);
        host_backend_complete_all(w->s.hb); /* graph 1 adopts graph 0's finished group */
    }
    alloc_of(&w->g[1], &va, &size);
    REQUIRE(sim_launch(&w->s, 0x400, 0x500) == GM_OK); /* the group busy on stream 0x500 */
    uint64_t first = va - va % page, handle = host_backend_handle_at(w->s.hb, first, NULL);
    REQUIRE(handle != 0);
    gm_cover_t held;
    gm_engine_cover_begin(w->s.engine, &held, 0);
    gm_engine_cover_range(&held, va, size);
    pthread_t b;
    REQUIRE(pthread_create(&b, NULL, leave_launch, w) == 0);
    usleep(100 * 1000); /* B would have left the group by now if it did not wait */
    CHECK(!atomic_load(&w->launched));
    CHECK_EQ_U64(host_backend_handle_at(w->s.hb, first, NULL), handle);
    gm_engine_cover_end(&held);
    pthread_join(b, NULL);
    CHECK(atomic_load(&w->launched));
    CHECK_EQ_U64(sim_attr(&w->s, GM_ATTR_RESERVED_CURRENT), 2 * 256 * KiB); /* it left */
    CHECK_EQ_U64(host_backend_counts(w->s.hb).misuses, 0);
    host_backend_complete_all(w->s.hb);
    CHECK(sim_fini(&w->s));
    free(w);
}

/* A cover of more pages than any fixed table would hold (1,100 here) covers them all, and they
 * stay idle; a trim unmaps idle scratch mappings, and one whose unmap fails stays until the next
 * launch unmaps it before it maps; one device's scratch page held by a cover is not shared with a
 * cover for another device, but an idle one makes way for it. */
static void test_cover_edges(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    uint64_t page = sim_page();
    sim_graph_t big, small;
    sim_one_alloc_graph(&s, &big, 1100 * page, false);
    sim_one_alloc_graph(&s, &small, 128 * KiB, false);
    REQUIRE(sim_instantiate(&s, &small, 0x5A, 0) == GM_OK);
    uint64_t va_big = 0, va_small = 0, size = 0;
    alloc_of(&big, &va_big, &size);
    alloc_of(&small, &va_small, &size);
    uint64_t mappings = host_backend_counts(s.hb).mappings;

    gm_cover_t c;
    gm_engine_cover_begin(s.engine, &c, 0);
    gm_engine_cover_range(&c, va_big, 1100 * page);
    CHECK_EQ_U64(c.count, 1100);
    CHECK(host_backend_handle_at(s.hb, va_big + 1099 * page, NULL) != 0);
    gm_engine_cover_end(&c);
    CHECK_EQ_U64(host_backend_counts(s.hb).mappings, mappings + 1100);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK_EQ_U64(host_backend_counts(s.hb).mappings, mappings);

    /* The trim's unmap fails: the launch that maps the page unmaps it and succeeds. */
    gm_engine_cover_begin(s.engine, &c, 0);
    gm_engine_cover_range(&c, va_small, 4096);
    REQUIRE(c.count == 1);
    gm_engine_cover_end(&c);
    host_backend_fail_nth(s.hb, HOST_OP_UNMAP, 1, GM_ERR_BACKEND);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 0), GM_OK);
    CHECK(host_backend_handle_at(s.hb, va_small, NULL) != 0); /* still idle */
    CHECK_EQ_INT(sim_launch(&s, 0x5A, STREAM(0)), GM_OK);
    CHECK(sim_run_data(&s, &small, NULL));
    host_backend_complete_all(s.hb);

    /* A page of an allocation gets its device's scratch page whatever device the cover is for
     * (test_cover_takes_the_allocation_device): covers begun for devices 0 and 1 share it. */
    gm_cover_t d0, d1;
    gm_engine_cover_begin(s.engine, &d0, 0);
    gm_engine_cover_begin(s.engine, &d1, 1);
    gm_engine_cover_range(&d0, va_big, 4096);
    gm_engine_cover_range(&d1, va_big, 4096);
    CHECK_EQ_U64(d0.count, 1);
    CHECK_EQ_U64(d1.count, 1);
    CHECK_EQ_U64(host_backend_access(s.hb, va_big), 1); /* device 0 only: the allocation's */
    gm_engine_cover_end(&d1);
    gm_engine_cover_end(&d0);
    CHECK_EQ_INT(gm_engine_trim(s.engine, 1), GM_OK);
    CHECK_EQ_U64(host_backend_handle_at(s.hb, va_big, NULL), 0);
    CHECK_EQ_U64(host_backend_counts(s.hb).misuses, 0);
    CHECK(sim_fini(&s));
}

/* A graph goes while a cover holds a scratch page in its window, one larger than an address slab
 * (so the address space gives that range back to the driver): the range goes back only once the
 * cover ended and its page is unmapped, never under a mapping. */
static void test_window_goes_under_cover(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_graph_init(&s, &g);
    uint32_t a = sim_alloc(&s, &g, 3ull << 30, NULL, 0); /* 3 GiB: beyond a slab */
    REQUIRE(a != UINT32_MAX);
    uint64_t va = g.va[a];
    gm_cover_t c;
    gm_engine_cover_begin(s.engine, &c, 0);
    gm_engine_cover_range(&c, va, 4096); /* one thread: the driver's check of a memset node */
    CHECK_EQ_U64(c.count, 1);
    sim_graph_destroy(s.engine, g.key);                 /* another: the graph goes meanwhile */
    CHECK(host_backend_handle_at(s.hb, va, NULL) != 0); /* still held */
    gm_engine_cover_end(&c);
    CHECK_EQ_U64(host_backend_handle_at(s.hb, va, NULL), 0);
    CHECK_EQ_U64(host_backend_counts(s.hb).misuses, 0);
    CHECK(sim_fini(&s));
}

/* The launch that must map a page holding an idle scratch mapping unmaps it first; when that unmap
 * fails it tries again right before it maps there, and never maps over the scratch page. */
static void test_launch_over_idle_scratch_whose_unmap_fails(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 128 * KiB, false);
    REQUIRE(sim_instantiate(&s, &g, 0xA, 0) == GM_OK);
    uint64_t va = 0, size = 0;
    alloc_of(&g, &va, &size);
    gm_cover_t c;
    gm_engine_cover_begin(s.engine, &c, 0);
    gm_engine_cover_range(&c, va, 4096);
    REQUIRE(c.count == 1);
    gm_engine_cover_end(&c); /* the scratch mapping stays, idle */
    host_backend_fail_nth(s.hb, HOST_OP_UNMAP, 1, GM_ERR_BACKEND);
    CHECK_EQ_INT(sim_launch(&s, 0xA, STREAM(0)), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_U64(host_backend_counts(s.hb).misuses, 0);
    host_backend_complete_all(s.hb);
    CHECK(sim_teardown(&s, (uint64_t[]){0xA}, 1, (uint64_t[]){g.key}, 1));
}

/* What the driver's update call found at the new graph's allocation. */
typedef struct update_look {
    sim_t *s;
    uint64_t va;
    uint64_t handle; /* the mapping there during the call (0: none) */
    int calls;
} update_look_t;

static bool look_at_target(void *arg) {
    update_look_t *look = arg;
    look->calls++;
    look->handle = host_backend_handle_at(look->s->hb, look->va, NULL);
    return true;
}

/* An exec updated to a graph whose allocation's page holds a scratch mapping a cover left idle (the
 * capture of a memset on it, its node's creation): the driver checks memset and memcpy targets as
 * it updates and refuses graph memory no exec maps (tests/SEMANTICS.md §A3.16), so the idle
 * mapping goes before the call. It was still there before (the H200: a captured memset on the new
 * graph's allocation, and the update taken where the driver refused it). */
static void test_update_finds_no_idle_scratch(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a, b;
    sim_one_alloc_graph(&s, &a, 128 * KiB, false);
    sim_one_alloc_graph(&s, &b, 128 * KiB, false);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, STREAM(0)) == GM_OK);
    host_backend_complete_all(s.hb);
    uint64_t va = 0, size = 0;
    alloc_of(&b, &va, &size);
    gm_cover_t c;
    gm_engine_cover_begin(s.engine, &c, 0);
    gm_engine_cover_range(&c, va, 4096);
    REQUIRE(c.count == 1);
    gm_engine_cover_end(&c); /* the scratch mapping stays, idle */
    REQUIRE(host_backend_handle_at(s.hb, va, NULL) != 0);
    update_look_t look = {&s, va, 0, 0};
    gm_topology_t t = sim_topology(&b);
    uint64_t error_node = 0;
    CHECK_EQ_INT(gm_engine_exec_update(s.engine, 0xA, b.key, &t,
                                       (gm_driver_call_t){look_at_target, &look}, &error_node),
                 GM_OK);
    CHECK_EQ_INT(look.calls, 1);
    CHECK_EQ_U64(look.handle, 0);
    CHECK_EQ_INT(sim_launch(&s, 0xA, STREAM(0)), GM_OK); /* b's allocation now */
    CHECK(sim_run_data(&s, &b, NULL));
    CHECK_EQ_U64(host_backend_counts(s.hb).misuses, 0);
    host_backend_complete_all(s.hb);
    CHECK(sim_teardown(&s, (uint64_t[]){0xA}, 1, (uint64_t[]){a.key, b.key}, 2));
}

/* The driver refuses a new memset or memcpy node on the address of an allocation that a free node
 * frees (SEMANTICS §A1.15): a cover asked to look says so for an address in such an allocation
 * (its start or inside), not for one in an allocation that escapes its graph, whatever device the
 * cover was begun for. */
static void test_cover_flags_freed_addresses(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t freed, escaping;
    sim_one_alloc_graph(&s, &freed, 128 * KiB, false);
    sim_one_alloc_graph(&s, &escaping, 128 * KiB, true);
    uint64_t va_freed = 0, va_escaping = 0, size = 0;
    alloc_of(&freed, &va_freed, &size);
    alloc_of(&escaping, &va_escaping, &size);
    const uint64_t starts[] = {va_freed, va_freed + 4096, va_freed, va_escaping,
                               va_escaping + 4096};
    const bool check[] = {true, true, false, true, true};
    const bool expect[] = {true, true, false, false, false};
    /* Also with the device not known (-1: the shim's thread has no current context, the node's
     * context given in its parameters) and out of range: the check is made all the same. */
    const int devices[] = {0, -1, 7};
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 5; i++) {
            gm_cover_t c;
            gm_engine_cover_begin(s.engine, &c, devices[d]);
            c.check_freed = check[i];
            gm_engine_cover_range(&c, starts[i], 4096);
            CHECK_EQ_INT(c.freed, expect[i]);
            gm_engine_cover_end(&c);
        }
    CHECK(sim_fini(&s));
}

/* A one-device engine and a cover whose device is not known (-1: no current context in the shim):
 * the only device is taken, so a page no part maps still gets the scratch page (the driver's
 * check of the node then answers as for mapped memory), and the cover holds it until its end. */
static void test_one_device_cover_without_device(void) {
    gm_engine_config_t config = sim_default_config();
    config.device_count = 1;
    sim_t s;
    REQUIRE(sim_init(&s, &config));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 128 * KiB, false);
    uint64_t va = 0, size = 0;
    alloc_of(&g, &va, &size);
    gm_cover_t c;
    gm_engine_cover_begin(s.engine, &c, -1);
    gm_engine_cover_range(&c, va, 4 * KiB);
    CHECK(c.held && c.count == 1);
    gm_engine_cover_end(&c);
    CHECK(sim_fini(&s));
}

/* The scratch page stands for the allocation's own memory: of the allocation's device, with its
 * access, whatever device the cover was begun for (the current one, in the shim). Measured on two
 * H200s (tests/gpu/scn_cover_device.cu): a memset node of device 1's allocation added for device
 * 0 is refused natively, one added with device 1's context is taken; a cover of device 0 took the
 * first (and the graph faulted at launch) and refused the second. */
static void test_cover_takes_the_allocation_device(void) {
    gm_engine_config_t config = sim_default_config();
    config.device_count = 2;
    sim_t s;
    REQUIRE(sim_init(&s, &config));
    for (uint64_t access = 0; access < 2; access++) {
        sim_graph_t g;
        sim_graph_init(&s, &g);
        gm_alloc_params_t p = {.device = 1, .size = 128 * KiB, .access_mask = access};
        uint32_t a = sim_alloc_on(&s, &g, &p, NULL, 0);
        REQUIRE(a != UINT32_MAX);
        uint32_t k = sim_plain(&s, &g, &a, 1);
        REQUIRE(sim_free(&s, &g, g.va[a], &k, 1, NULL) != UINT32_MAX);
        for (int at_start = 1; at_start >= 0; at_start--) {
            uint64_t va = g.va[a] + (at_start ? 0 : 64 * KiB); /* inside: found by a scan */
            gm_cover_t c;
            gm_engine_cover_begin(s.engine, &c, 0);
            gm_engine_cover_range(&c, va, 4 * KiB);
            CHECK(c.count == 1);
            CHECK_EQ_U64(host_backend_access(s.hb, va), 2u | access);
            gm_engine_cover_end(&c);
        }
        sim_graph_destroy(s.engine, g.key);
    }
    CHECK(sim_fini(&s));
}

typedef struct trimmer {
    sim_t *s;
    atomic_bool done;
    gm_status_t status;
} trimmer_t;

static void *trim_in_thread(void *arg) {
    trimmer_t *t = arg;
    t->status = gm_engine_trim(t->s->engine, 0);
    atomic_store(&t->done, true);
    return NULL;
}

/* A trim waiting for a cover, cancelled in its wait: a wait that took the cancel ended the thread
 * holding the engine lock, and every later call of the engine blocked for good. Now graphmem's
 * wait is no cancellation point, and the trim finishes when the cover ends. */
static void test_cancelled_wait_for_cover(void) {
    sim_t s;
    sim_graph_t a;
    REQUIRE(sim_init(&s, NULL));
    sim_one_alloc_graph(&s, &a, 128 * KiB, false);
    REQUIRE(sim_instantiate(&s, &a, 0xA, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, STREAM(0)) == GM_OK);
    uint64_t va = 0, size = 0;
    alloc_of(&a, &va, &size);
    gm_cover_t held;
    gm_engine_cover_begin(s.engine, &held, 0);
    gm_engine_cover_range(&held, va, size);
    trimmer_t t = {.s = &s};
    pthread_t b;
    REQUIRE(pthread_create(&b, NULL, trim_in_thread, &t) == 0);
    usleep(100 * 1000); /* B waits for the cover by now */
    pthread_cancel(b);
    usleep(100 * 1000); /* and would have ended by now, had the wait taken the cancel */
    bool usable = sim_engine_lock_free(s.engine);
    CHECK(usable);
    if (!usable)
        return; /* held by a thread that is gone: any call would block */
    CHECK(!atomic_load(&t.done));
    gm_engine_cover_end(&held);
    pthread_join(b, NULL);
    CHECK(atomic_load(&t.done));
    CHECK_EQ_INT(t.status, GM_OK);
    host_backend_complete_all(s.hb);
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_cover_maps_only_unmapped_pages);
    RUN_TEST(test_idle_scratch_ends);
    RUN_TEST(test_window_goes_under_cover);
    RUN_TEST(test_launch_over_idle_scratch_whose_unmap_fails);
    RUN_TEST(test_cover_flags_freed_addresses);
    RUN_TEST(test_cover_edges);
    RUN_TEST(test_cover_takes_the_allocation_device);
    RUN_TEST(test_one_device_cover_without_device);
    RUN_TEST(test_covers_hold_against_launch_and_trim);
    RUN_TEST(test_waiting_launch_goes_before_new_covers);
    RUN_TEST(test_leaving_launch_waits_for_cover);
    RUN_TEST(test_cancelled_wait_for_cover);
    RUN_TEST(test_update_finds_no_idle_scratch);
    return gm_check_summary();
}
