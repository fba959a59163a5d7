/* Property test of the whole planning path as the engine drives it: random multi-stream graphs,
 * small allocations packed online with gm_pack, large ones in their own items, then gm_plan_build.
 * Checked against an independent oracle (ancestor sets built while the graph is created):
 * conflicting allocations never share a physical byte nor a packed byte, items' handles cover
 * their pages, footprint >= lower bound >= any live set of one execution, and on small graphs
 * the lower bound equals the brute-force maximum clique. */
#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "check.h"
#include "pack.h"
#include "plan.h"

#define MIB (1ull << 20)
#define PAGE (2 * MIB)

static uint64_t rng;

typedef struct alloc {
    uint64_t size;
    uint32_t alloc_node, free_node; /* GM_NO_NODE: escaping */
    uint32_t stream;
    uint32_t item, chunk; /* chunk UINT32_MAX: an item of its own */
    uint32_t pack_id;
    uint64_t offset;
} alloc_t;

typedef struct graph {
    uint32_t nodes, edges, edge_cap, n, items;
    uint32_t *from, *to;
    size_t words;  /* of an ancestor row */
    uint64_t *anc; /* anc[v]: nodes that reach v (v included) */
    alloc_t *allocs;
} graph_t;

static uint64_t *anc_row(graph_t *g, uint32_t v) {
    return g->anc + (size_t)v * g->words;
}

static bool reaches(graph_t *g, uint32_t u, uint32_t v) {
    return gm_bits_test(anc_row(g, v), u);
}

static uint32_t add_node(graph_t *g, uint32_t pred, uint32_t pred2) {
    uint32_t v = g->nodes++;
    gm_bits_set(anc_row(g, v), v);
    uint32_t preds[2] = {pred, pred2};
    for (int k = 0; k < 2; k++) {
        if (preds[k] == GM_NO_NODE || (k == 1 && pred2 == pred))
            continue;
        if (g->edges == g->edge_cap) {
            g->edge_cap *= 2;
            g->from = realloc(g->from, g->edge_cap * sizeof *g->from);
            g->to = realloc(g->to, g->edge_cap * sizeof *g->to);
        }
        g->from[g->edges] = preds[k];
        g->to[g->edges++] = v;
        gm_bits_or(anc_row(g, v), anc_row(g, preds[k]), g->words);
    }
    return v;
}

static bool proper(graph_t *g, const alloc_t *a) {
    return a->free_node != GM_NO_NODE && a->free_node != a->alloc_node &&
           reaches(g, a->alloc_node, a->free_node);
}

static bool ends_before(graph_t *g, const alloc_t *a, const alloc_t *b) {
    return proper(g, a) && reaches(g, a->free_node, b->alloc_node);
}

static bool conflict(graph_t *g, uint32_t i, uint32_t j) {
    const alloc_t *a = &g->allocs[i], *b = &g->allocs[j];
    return i != j && a->size && b->size && !ends_before(g, a, b) && !ends_before(g, b, a);
}

typedef struct query {
    graph_t *g;
    const uint32_t *pack_to_alloc;
    uint32_t node;
} query_t;

static bool reusable(uint32_t id, void *arg) {
    query_t *q = arg;
    const alloc_t *k = &q->g->allocs[q->pack_to_alloc[id]];
    return k->free_node != GM_NO_NODE && reaches(q->g, k->free_node, q->node);
}

/* Streams with random event joins; creation order = node order (a topological order). */
static void generate(graph_t *g, uint32_t target_allocs, uint32_t streams, uint64_t max_size) {
    /* Allocations below the pack limit go to chunks: below a page (many to a page), or, as with a
     * larger GRAPHMEM_SMALL_LIMIT, spanning several pages of a chunk. */
    uint64_t pack_limit = PAGE << gm_rand_range(&rng, 0, 3);
    uint32_t max_nodes = 4 * target_allocs + 16;
    memset(g, 0, sizeof *g);
    g->words = gm_bits_words(max_nodes);
    g->anc = calloc((size_t)max_nodes * g->words, sizeof *g->anc);
    g->edge_cap = 64;
    g->from = malloc(g->edge_cap * sizeof *g->from);
    g->to = malloc(g->edge_cap * sizeof *g->to);
    g->allocs = calloc(target_allocs + 1, sizeof *g->allocs);
    uint32_t last[8], root = add_node(g, GM_NO_NODE, GM_NO_NODE), live = 0;
    uint32_t *live_ids = malloc((target_allocs + 1) * sizeof *live_ids);
    for (uint32_t s = 0; s < streams; s++)
        last[s] = root;
    /* Chunks of one page (the engine's default while the limit is a page at most) or 32 MiB. */
    uint64_t chunk_bytes = pack_limit <= PAGE && gm_rand(&rng) % 2 ? PAGE : 32 * MIB;
    gm_pack_t *pack = gm_pack_create(chunk_bytes, 512);
    uint32_t *pack_to_alloc = malloc((target_allocs + 1) * sizeof *pack_to_alloc);
    uint32_t *chunk_item = malloc((target_allocs + 1) * sizeof *chunk_item);
    uint32_t escape_pct = (uint32_t)gm_rand_range(&rng, 0, 20);
    while (g->nodes + 3 < max_nodes) {
        uint32_t s = (uint32_t)gm_rand_range(&rng, 0, streams - 1);
        uint32_t t = (uint32_t)gm_rand_range(&rng, 0, streams - 1);
        uint32_t join = gm_rand(&rng) % 6 == 0 ? last[t] : GM_NO_NODE;
        uint64_t r = gm_rand(&rng) % 100;
        bool can_alloc = g->n < target_allocs;
        if (!can_alloc && live == 0)
            break;
        if (live > 0 && (r < 45 || !can_alloc)) {
            uint32_t pick = (uint32_t)gm_rand_range(&rng, 0, live - 1), k = live_ids[pick];
            live_ids[pick] = live_ids[--live];
            alloc_t *a = &g->allocs[k];
            if (gm_rand(&rng) % 100 < escape_pct)
                continue; /* never freed in the graph */
            /* Usually an event join from the allocating stream; sometimes none (a racy free,
             * live to the end for the planner). */
            uint32_t ordered = gm_rand(&rng) % 10 ? last[a->stream] : GM_NO_NODE;
            uint32_t v = last[s] = add_node(g, last[s], ordered != GM_NO_NODE ? ordered : join);
            a->free_node = v;
            if (a->chunk != UINT32_MAX && proper(g, a))
                gm_pack_mark_freed(pack, a->pack_id);
            continue;
        }
        if (r < 55 || !can_alloc) {
            last[s] = add_node(g, last[s], join); /* a kernel */
            continue;
        }
        uint32_t v = last[s] = add_node(g, last[s], join);
        alloc_t *a = &g->allocs[g->n];
        /* Log-uniform sizes, with a share of exact zeros. */
        uint64_t hi_bit = 63 - (uint64_t)__builtin_clzll(max_size);
        uint64_t b = gm_rand_range(&rng, 8, hi_bit);
        a->size = gm_rand(&rng) % 50 == 0 ? 0 : gm_rand_range(&rng, 1ull << b, (2ull << b) - 1);
        if (a->size > max_size)
            a->size = max_size;
        a->alloc_node = v;
        a->free_node = GM_NO_NODE;
        a->stream = s;
        if (a->size >= pack_limit) {
            a->chunk = UINT32_MAX;
            a->item = g->items++;
            a->offset = 0;
        } else {
            query_t q = {g, pack_to_alloc, v};
            uint32_t id, chunk;
            uint64_t off;
            if (gm_pack_alloc(pack, a->size, reusable, &q, &id, &chunk, &off) != GM_OK)
                abort();
            pack_to_alloc[id] = g->n;
            a->pack_id = id;
            a->chunk = chunk;
            a->offset = off;
        }
        live_ids[live++] = g->n++;
    }
    /* Items of chunks, numbered after a first pass so each chunk gets one. */
    for (uint32_t c = 0; c < gm_pack_chunk_count(pack); c++)
        chunk_item[c] = g->items++;
    for (uint32_t i = 0; i < g->n; i++)
        if (g->allocs[i].chunk != UINT32_MAX)
            g->allocs[i].item = chunk_item[g->allocs[i].chunk];
    gm_pack_destroy(pack);
    free(pack_to_alloc);
    free(chunk_item);
    free(live_ids);
}

static void graph_free(graph_t *g) {
    free(g->anc);
    free(g->from);
    free(g->to);
    free(g->allocs);
}

static uint64_t pages_of(uint64_t bytes) {
    return (bytes + PAGE - 1) / PAGE;
}

/* Largest live set of the creation order (one legal execution): a floor for the lower bound. */
static uint64_t sequential_peak(graph_t *g) {
    uint64_t live = 0, peak = 0;
    for (uint32_t v = 0; v < g->nodes; v++) {
        for (uint32_t i = 0; i < g->n; i++) {
            const alloc_t *a = &g->allocs[i];
            if (a->alloc_node == v)
                live += a->size;
            if (a->free_node == v && proper(g, a))
                live -= a->size;
        }
        if (live > peak)
            peak = live;
    }
    return peak;
}

/* Maximum-weight clique of the conflict graph by enumeration (n small). */
static uint64_t brute_clique(graph_t *g) {
    uint64_t best = 0;
    for (uint32_t set = 0; set < (1u << g->n); set++) {
        uint64_t w = 0;
        bool clique = true;
        for (uint32_t i = 0; i < g->n && clique; i++) {
            if (!(set >> i & 1))
                continue;
            w += g->allocs[i].size;
            for (uint32_t j = i + 1; j < g->n && clique; j++)
                if ((set >> j & 1) && g->allocs[i].size && g->allocs[j].size && !conflict(g, i, j))
                    clique = false;
        }
        if (clique && w > best)
            best = w;
    }
    return best;
}

/* The handles of `arena` as bounds: bound[h] is where handle h starts. */
static uint64_t *arena_bounds(const gm_plan_arena_t *arena, uint64_t max_pages) {
    uint64_t *bound = malloc(((size_t)arena->handle_count + 1) * sizeof *bound);
    bound[0] = 0;
    for (uint32_t h = 0; h < arena->handle_count; h++) {
        CHECK(arena->handle_pages[h] >= 1 && arena->handle_pages[h] <= max_pages);
        bound[h + 1] = bound[h] + arena->handle_pages[h];
    }
    CHECK_EQ_U64(bound[arena->handle_count], arena->pages);
    return bound;
}

/* How many handles of `bound` pages [lo, hi) touch. */
static uint64_t handles_touched(const uint64_t *bound, uint32_t count, uint64_t lo, uint64_t hi) {
    uint64_t touched = 0;
    for (uint32_t h = 0; h < count; h++)
        touched += bound[h] < hi && lo < bound[h + 1];
    return touched;
}

/* Each item's pages in its arena, and the handles it points at cover them, each needed. An
 * escaping item's spill pages are the shared arena's first ones. The mappings the items
 * make in this arena, added to *mappings. */
static void check_arena(const gm_plan_t *plan, const gm_plan_arena_t *arena, bool escaping,
                        uint64_t max_pages, uint64_t *mappings) {
    uint64_t *bound = arena_bounds(arena, max_pages);
    for (uint32_t it = 0; it < plan->item_count; it++) {
        const gm_plan_item_t *item = &plan->items[it];
        if (!item->escaping)
            CHECK_EQ_U64(item->spill_pages, 0);
        if (item->escaping != escaping) {
            if (!escaping && item->spill_pages) {
                REQUIRE(item->spill_pages < item->pages && item->spill_pages <= arena->pages);
                *mappings += handles_touched(bound, arena->handle_count, 0, item->spill_pages);
            }
            continue;
        }
        if (item->pages == 0) {
            CHECK_EQ_U64(item->handle_count, 0);
            continue;
        }
        uint64_t lo = item->arena_page, hi = lo + item->pages - item->spill_pages;
        REQUIRE(hi <= arena->pages);
        /* An item spills only past the escape arena's end. */
        if (item->spill_pages)
            CHECK_EQ_U64(hi, arena->pages);
        REQUIRE(item->first_handle + item->handle_count <= arena->handle_count);
        REQUIRE(item->handle_count > 0);
        /* Covers its pages, and every handle it maps is needed. */
        CHECK(bound[item->first_handle] <= lo && lo < bound[item->first_handle + 1]);
        uint32_t last = item->first_handle + item->handle_count - 1;
        CHECK(bound[last] < hi && hi <= bound[last + 1]);
        *mappings += item->handle_count;
    }
    free(bound);
}

/* Where byte `offset` of `item` is, in one address space of the escape arena's pages followed by
 * the shared arena's: an escaping item's spill pages follow its escape pages there. */
static uint64_t joint_byte(const gm_plan_t *plan, const gm_plan_item_t *item, uint64_t offset) {
    uint64_t base = item->escaping ? item->arena_page : plan->escape.pages + item->arena_page;
    return base * PAGE + offset;
}

typedef struct stats {
    uint64_t cases, allocs, pairs_checked, pages, lb_pages, spills;
} stats_t;

static void run_case(uint32_t target, uint32_t streams, uint64_t max_size, bool no_alias,
                     stats_t *st) {
    graph_t g;
    generate(&g, target, streams, max_size);
    gm_plan_alloc_t *pa = malloc((g.n + 1) * sizeof *pa);
    for (uint32_t i = 0; i < g.n; i++)
        pa[i] = (gm_plan_alloc_t){g.allocs[i].size, g.allocs[i].alloc_node, g.allocs[i].free_node,
                                  g.allocs[i].item, g.allocs[i].offset};
    uint64_t max_handle = (gm_rand(&rng) % 3 + 1) * 16 * MIB;
    gm_plan_input_t in = {g.nodes, g.edges, g.from, g.to,       g.n,
                          pa,      g.items, PAGE,   max_handle, no_alias};
    gm_plan_t plan;
    if (gm_plan_build(&in, &plan) != GM_OK) {
        CHECK(!"gm_plan_build failed");
        goto out;
    }
    st->cases++;
    st->allocs += g.n;
    /* Items: extent, escape flag. */
    uint64_t *want_pages = calloc(g.items + 1, sizeof *want_pages);
    bool *want_escape = calloc(g.items + 1, sizeof *want_escape);
    for (uint32_t i = 0; i < g.n; i++) {
        const alloc_t *a = &g.allocs[i];
        if (a->size && pages_of(a->offset + a->size) > want_pages[a->item])
            want_pages[a->item] = pages_of(a->offset + a->size);
        want_escape[a->item] |= a->free_node == GM_NO_NODE;
    }
    for (uint32_t it = 0; it < g.items; it++) {
        CHECK_EQ_U64(plan.items[it].pages, want_pages[it]);
        /* An item holding an allocation that outlives the graph must be in the escape arena,
         * whole; others may share it (pages an escaping allocation only takes later). */
        if (want_escape[it])
            CHECK(plan.items[it].escaping && plan.items[it].spill_pages == 0);
        st->spills += plan.items[it].spill_pages > 0;
    }
    uint64_t mappings = 0;
    check_arena(&plan, &plan.shared, false, max_handle / PAGE, &mappings);
    check_arena(&plan, &plan.escape, true, max_handle / PAGE, &mappings);
    CHECK_EQ_U64(mappings, plan.mappings);
    /* Physical bytes and packed bytes of conflicting allocations never meet. */
    for (uint32_t i = 0; i < g.n; i++) {
        const alloc_t *a = &g.allocs[i];
        const gm_plan_item_t *ia = &plan.items[a->item];
        uint64_t pa_lo = joint_byte(&plan, ia, a->offset);
        for (uint32_t j = i + 1; j < g.n; j++) {
            const alloc_t *b = &g.allocs[j];
            const gm_plan_item_t *ib = &plan.items[b->item];
            if (!a->size || !b->size)
                continue;
            st->pairs_checked++;
            bool packed_overlap = a->item == b->item && a->offset < b->offset + b->size &&
                                  b->offset < a->offset + a->size;
            uint64_t pb_lo = joint_byte(&plan, ib, b->offset);
            bool phys_overlap = pa_lo < pb_lo + b->size && pb_lo < pa_lo + a->size;
            if (packed_overlap)
                CHECK(ends_before(&g, a, b)); /* i was created first: j reused its bytes */
            if (phys_overlap && conflict(&g, i, j)) {
                fprintf(stderr, "conflict %u %u share physical bytes\n", i, j);
                fprintf(stderr,
                        "DBG a item %u off %llu size %llu arena %llu esc %d pages %llu | b item %u "
                        "off %llu size %llu arena %llu esc %d pages %llu\n",
                        a->item, (unsigned long long)a->offset, (unsigned long long)a->size,
                        (unsigned long long)ia->arena_page, ia->escaping,
                        (unsigned long long)ia->pages, b->item, (unsigned long long)b->offset,
                        (unsigned long long)b->size, (unsigned long long)ib->arena_page,
                        ib->escaping, (unsigned long long)ib->pages);
                CHECK(!"conflicting allocations share physical memory");
            }
            if (no_alias && phys_overlap && a->item != b->item)
                CHECK(!"no_alias: two items share pages");
        }
    }
    uint64_t footprint = plan.shared.pages + plan.escape.pages;
    CHECK(footprint * PAGE >= plan.lower_bound);
    CHECK(plan.lower_bound >= sequential_peak(&g));
    uint64_t total = 0;
    for (uint32_t i = 0; i < g.n; i++)
        total += g.allocs[i].size;
    CHECK(plan.lower_bound <= total);
    if (g.n <= 14)
        CHECK_EQ_U64(plan.lower_bound, brute_clique(&g));
    st->pages += footprint;
    st->lb_pages += pages_of(plan.lower_bound);
    free(want_pages);
    free(want_escape);
    gm_plan_free(&plan);
out:
    free(pa);
    graph_free(&g);
}

static int scale(void) {
    const char *s = getenv("GRAPHMEM_TEST_SCALE");
    return s && atoi(s) > 0 ? atoi(s) : 1;
}

static void test_small_graphs(void) {
    stats_t st = {0};
    for (int round = 0; round < 10000 * scale() && gm_check_failures == 0; round++)
        run_case((uint32_t)gm_rand_range(&rng, 1, 14), (uint32_t)gm_rand_range(&rng, 1, 8),
                 1ull << gm_rand_range(&rng, 12, 30), gm_rand(&rng) % 10 == 0, &st);
    printf("small: %llu graphs, %llu allocations, %llu pairs, footprint/LB pages %.4f, %llu "
           "items across the escape arena's end\n",
           (unsigned long long)st.cases, (unsigned long long)st.allocs,
           (unsigned long long)st.pairs_checked, (double)st.pages / (double)st.lb_pages,
           (unsigned long long)st.spills);
}

static void test_medium_graphs(void) {
    stats_t st = {0};
    for (int round = 0; round < 1500 * scale() && gm_check_failures == 0; round++)
        run_case((uint32_t)gm_rand_range(&rng, 15, 300), (uint32_t)gm_rand_range(&rng, 1, 8),
                 1ull << gm_rand_range(&rng, 12, 30), gm_rand(&rng) % 10 == 0, &st);
    printf("medium: %llu graphs, %llu allocations, %llu pairs, footprint/LB pages %.4f, %llu "
           "items across the escape arena's end\n",
           (unsigned long long)st.cases, (unsigned long long)st.allocs,
           (unsigned long long)st.pairs_checked, (double)st.pages / (double)st.lb_pages,
           (unsigned long long)st.spills);
}

static void test_large_graphs(void) {
    stats_t st = {0};
    for (int round = 0; round < 8 * scale() && gm_check_failures == 0; round++)
        run_case((uint32_t)gm_rand_range(&rng, 1000, 3000), (uint32_t)gm_rand_range(&rng, 1, 8),
                 1ull << 30, false, &st);
    printf("large: %llu graphs, %llu allocations, %llu pairs, footprint/LB pages %.4f, %llu "
           "items across the escape arena's end\n",
           (unsigned long long)st.cases, (unsigned long long)st.allocs,
           (unsigned long long)st.pairs_checked, (double)st.pages / (double)st.lb_pages,
           (unsigned long long)st.spills);
}

int main(void) {
    rng = gm_test_seed(0x9A55);
    RUN_TEST(test_small_graphs);
    RUN_TEST(test_medium_graphs);
    RUN_TEST(test_large_graphs);
    return gm_check_summary();
}
