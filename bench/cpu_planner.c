/* Planner benchmark (prints, never fails): graphmem's plan against the exact lower bound and
 * against a driver-like online baseline, on synthetic graphs of four kinds, plus the time to plan
 * 10,000 allocations. Items are built as the engine builds them with its defaults: allocations
 * >= 2 MiB own an item, smaller ones are packed online into chunks of one page (2 MiB) in
 * creation order, and handles are at most 64 MiB (core/common/options.def,
 * core/engine/engine_life.c). PACK_LIMIT=8M in the environment packs below 8 MiB into 128 MiB
 * chunks instead (a limit above a page: sixteen of the largest packed allocations a chunk).
 *
 * Baseline: every allocation placed at creation, byte-granular (512 B aligned), at the lowest
 * address not occupied by an allocation whose free is not proven to precede it (the driver's
 * rule), footprint = span rounded up to 2 MiB. It is an idealised driver: no 32 MiB granularity. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bitset.h"
#include "dag.h"
#include "pack.h"
#include "plan.h"

#define KIB (1ull << 10)
#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define PAGE (2 * MIB)
#define MAX_HANDLE (64 * MIB)
#define PACK_LIMIT (getenv("PACK_LIMIT") ? 8 * MIB : 2 * MIB)
#define CHUNK (PACK_LIMIT <= PAGE ? PAGE : 16 * PACK_LIMIT)

static uint64_t rng_state;

static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t rnd_range(uint64_t lo, uint64_t hi) {
    return lo + rnd() % (hi - lo + 1);
}

static uint64_t log_uniform(uint64_t lo, uint64_t hi) {
    double u = (double)(rnd() >> 11) / 9007199254740992.0;
    return (uint64_t)exp(log((double)lo) + u * (log((double)hi) - log((double)lo)));
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct graph {
    uint32_t nodes, edges, cap_nodes, cap_edges, n, items;
    uint32_t *from, *to;
    gm_plan_alloc_t *allocs;
    uint32_t *stream;
} graph_t;

static uint32_t add_node(graph_t *g, uint32_t pred, uint32_t pred2) {
    uint32_t v = g->nodes++;
    uint32_t preds[2] = {pred, pred2};
    for (int k = 0; k < 2; k++) {
        if (preds[k] == GM_NO_NODE || (k == 1 && pred2 == pred))
            continue;
        if (g->edges == g->cap_edges) {
            g->cap_edges = g->cap_edges ? 2 * g->cap_edges : 1024;
            g->from = realloc(g->from, g->cap_edges * sizeof *g->from);
            g->to = realloc(g->to, g->cap_edges * sizeof *g->to);
        }
        g->from[g->edges] = preds[k];
        g->to[g->edges++] = v;
    }
    return v;
}

typedef struct shape {
    const char *name;
    uint32_t allocs, streams;
    uint64_t min_size, max_size;
    uint32_t escape_pct; /* allocations never freed */
    uint32_t mean_life;  /* operations an allocation stays live, on average */
    uint32_t join_pct;   /* chance that an operation also waits on another stream */
    bool pytorch;        /* forward activations kept for a backward phase */
} shape_t;

/* Allocations and frees on streams; frees wait on the allocating stream (event join). */
static void generate(graph_t *g, const shape_t *sh) {
    memset(g, 0, sizeof *g);
    g->allocs = calloc(sh->allocs, sizeof *g->allocs);
    g->stream = calloc(sh->allocs, sizeof *g->stream);
    uint32_t last[8], root = add_node(g, GM_NO_NODE, GM_NO_NODE);
    for (uint32_t s = 0; s < sh->streams; s++)
        last[s] = root;
    /* due[k]: the operation count at which allocation k is freed (UINT32_MAX: never). */
    uint32_t *due = malloc(sh->allocs * sizeof *due), *pending = malloc(sh->allocs * sizeof *due);
    uint32_t pending_count = 0, ops = 0;
    uint32_t *acts = malloc(sh->allocs * sizeof *acts), act_count = 0;
    for (;;) {
        bool allocating = g->n < sh->allocs;
        if (!allocating && pending_count == 0)
            break;
        uint32_t s = (uint32_t)rnd_range(0, sh->streams - 1);
        uint32_t join = GM_NO_NODE;
        if (sh->streams > 1 && rnd() % 100 < sh->join_pct)
            join = last[rnd_range(0, sh->streams - 1)];
        /* Free what is due (earliest first), else allocate. */
        uint32_t best = UINT32_MAX;
        for (uint32_t p = 0; p < pending_count; p++)
            if (due[pending[p]] <= ops &&
                (best == UINT32_MAX || due[pending[p]] < due[pending[best]]))
                best = p;
        if (best == UINT32_MAX && !allocating) {
            for (uint32_t p = 0; p < pending_count; p++)
                if (best == UINT32_MAX || due[pending[p]] < due[pending[best]])
                    best = p;
        }
        if (best != UINT32_MAX) {
            uint32_t k = pending[best];
            pending[best] = pending[--pending_count];
            gm_plan_alloc_t *a = &g->allocs[k];
            uint32_t t = g->stream[k];
            a->free_node = last[s] = add_node(g, last[s], last[t]);
            ops++;
            continue;
        }
        uint32_t k = g->n++;
        gm_plan_alloc_t *a = &g->allocs[k];
        a->alloc_node = last[s] = add_node(g, last[s], join);
        g->stream[k] = s;
        a->free_node = GM_NO_NODE;
        ops++;
        if (sh->pytorch) {
            /* First half: forward (every third allocation an activation, kept); second half:
             * backward, freeing activations in reverse; the rest are short temporaries. */
            a->size = log_uniform(sh->min_size, sh->max_size);
            bool forward = k < sh->allocs / 2;
            if (forward && k % 3 == 0) {
                acts[act_count++] = k;
                continue; /* freed in the backward phase */
            }
            due[k] = ops + (uint32_t)rnd_range(1, 6);
            pending[pending_count++] = k;
            if (!forward && act_count > 0 && k % 3 == 0) {
                uint32_t act = acts[--act_count];
                due[act] = ops;
                pending[pending_count++] = act;
            }
            if (k + 1 == sh->allocs)
                while (act_count > 0) {
                    uint32_t act = acts[--act_count];
                    due[act] = ops;
                    pending[pending_count++] = act;
                }
            continue;
        }
        a->size = log_uniform(sh->min_size, sh->max_size);
        if (rnd() % 100 < sh->escape_pct)
            continue;
        due[k] = ops + (uint32_t)rnd_range(1, 2 * sh->mean_life);
        pending[pending_count++] = k;
    }
    free(due);
    free(pending);
    free(acts);
}

/* before[j] bit k: k's free precedes j's alloc (and follows k's alloc). */
static uint64_t *ordering(const graph_t *g) {
    gm_dag_t dag;
    if (gm_dag_build(&dag, g->nodes, g->edges, g->from, g->to) != GM_OK)
        abort();
    uint32_t *an = malloc(g->n * sizeof *an), *fn = malloc(g->n * sizeof *fn);
    for (uint32_t i = 0; i < g->n; i++) {
        an[i] = g->allocs[i].alloc_node;
        fn[i] = g->allocs[i].free_node;
    }
    size_t words = gm_bits_words(g->n);
    uint64_t *before = malloc((size_t)g->n * words * sizeof *before + 8);
    bool *proper = malloc(g->n + 1);
    if (gm_dag_free_before_alloc(&dag, g->n, an, fn, proper, before) != GM_OK)
        abort();
    gm_dag_free(&dag);
    free(an);
    free(fn);
    free(proper);
    return before;
}

typedef struct query {
    const uint64_t *row;
    const uint32_t *pack_to_alloc;
} query_t;

static bool reusable(uint32_t id, void *arg) {
    const query_t *q = arg;
    return gm_bits_test(q->row, q->pack_to_alloc[id]);
}

/* The engine's items: own item for >= PACK_LIMIT, online packing for the rest. */
static void make_items(graph_t *g, const uint64_t *before) {
    size_t words = gm_bits_words(g->n);
    gm_pack_t *pack = gm_pack_create(CHUNK, 512);
    uint32_t *pack_to_alloc = malloc(g->n * sizeof *pack_to_alloc);
    uint32_t *alloc_to_pack = malloc(g->n * sizeof *alloc_to_pack);
    uint32_t *chunk_item = malloc(g->n * sizeof *chunk_item);
    uint32_t *free_order = malloc(g->n * sizeof *free_order), next_free = 0;
    /* Allocations by free node, to mark them freed at the right point of creation order. */
    uint32_t *by_free = calloc(g->nodes + 1, sizeof *by_free);
    for (uint32_t i = 0; i < g->n; i++)
        if (g->allocs[i].free_node != GM_NO_NODE)
            by_free[g->allocs[i].free_node + 1]++;
    for (uint32_t v = 0; v < g->nodes; v++)
        by_free[v + 1] += by_free[v];
    uint32_t *cursor = malloc((g->nodes + 1) * sizeof *cursor);
    memcpy(cursor, by_free, (g->nodes + 1) * sizeof *cursor);
    for (uint32_t i = 0; i < g->n; i++)
        if (g->allocs[i].free_node != GM_NO_NODE)
            free_order[cursor[g->allocs[i].free_node]++] = i;
    uint32_t pos = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        gm_plan_alloc_t *a = &g->allocs[i];
        /* Frees created before this allocation are known to the packer (when proper). */
        for (; pos < by_free[a->alloc_node]; pos++) {
            uint32_t k = free_order[pos];
            if (g->allocs[k].size < PACK_LIMIT && alloc_to_pack[k] != UINT32_MAX)
                gm_pack_mark_freed(pack, alloc_to_pack[k]);
        }
        alloc_to_pack[i] = UINT32_MAX;
        if (a->size >= PACK_LIMIT) {
            a->item = g->items++;
            a->item_offset = 0;
            continue;
        }
        query_t q = {before + (size_t)i * words, pack_to_alloc};
        uint32_t id, chunk;
        uint64_t off;
        if (gm_pack_alloc(pack, a->size, reusable, &q, &id, &chunk, &off) != GM_OK)
            abort();
        pack_to_alloc[id] = i;
        alloc_to_pack[i] = id;
        a->item = UINT32_MAX - chunk;
        a->item_offset = off;
    }
    (void)next_free;
    for (uint32_t c = 0; c < gm_pack_chunk_count(pack); c++)
        chunk_item[c] = g->items++;
    for (uint32_t i = 0; i < g->n; i++)
        if (g->allocs[i].size < PACK_LIMIT)
            g->allocs[i].item = chunk_item[UINT32_MAX - g->allocs[i].item];
    gm_pack_destroy(pack);
    free(pack_to_alloc);
    free(alloc_to_pack);
    free(chunk_item);
    free(free_order);
    free(by_free);
    free(cursor);
}

typedef struct span {
    uint64_t lo, hi;
} span_t;

static int by_lo(const void *a, const void *b) {
    const span_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static uint64_t baseline(const graph_t *g, const uint64_t *before) {
    size_t words = gm_bits_words(g->n);
    uint64_t *addr = malloc(g->n * sizeof *addr), top = 0;
    span_t *spans = malloc(g->n * sizeof *spans);
    for (uint32_t j = 0; j < g->n; j++) {
        uint64_t size = (g->allocs[j].size + 511) & ~511ull;
        uint32_t count = 0;
        for (uint32_t k = 0; k < j; k++)
            if (!gm_bits_test(before + (size_t)j * words, k))
                spans[count++] = (span_t){addr[k], addr[k] + ((g->allocs[k].size + 511) & ~511ull)};
        qsort(spans, count, sizeof *spans, by_lo);
        uint64_t cursor = 0;
        for (uint32_t c = 0; c < count && spans[c].lo < cursor + size; c++)
            if (spans[c].hi > cursor)
                cursor = spans[c].hi;
        addr[j] = cursor;
        if (cursor + size > top)
            top = cursor + size;
    }
    free(addr);
    free(spans);
    return (top + PAGE - 1) / PAGE * PAGE;
}

static gm_plan_input_t plan_input(const graph_t *g) {
    return (gm_plan_input_t){g->nodes,  g->edges, g->from, g->to,      g->n,
                             g->allocs, g->items, PAGE,    MAX_HANDLE, false};
}

static void graph_free(graph_t *g) {
    free(g->from);
    free(g->to);
    free(g->allocs);
    free(g->stream);
}

typedef struct totals {
    double ratio_sum, worst;
    uint32_t cases, worse_than_baseline;
    uint64_t mappings, mapped_pages;
} totals_t;

static double mib(uint64_t bytes) {
    return (double)bytes / (double)MIB;
}

static void run_case(const shape_t *sh, uint64_t seed, totals_t *t) {
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    graph_t g;
    generate(&g, sh);
    uint64_t *before = ordering(&g);
    make_items(&g, before);
    uint64_t base = baseline(&g, before);
    gm_plan_input_t in = plan_input(&g);
    gm_plan_t plan;
    double t0 = now_ms();
    if (gm_plan_build(&in, &plan) != GM_OK)
        abort();
    double ms = now_ms() - t0;
    uint64_t lb = plan.lower_bound, lb_pages = (lb + PAGE - 1) / PAGE * PAGE;
    uint64_t foot = (plan.shared.pages + plan.escape.pages) * PAGE, mapped = 0;
    for (uint32_t it = 0; it < plan.item_count; it++)
        mapped += plan.items[it].pages;
    double ratio = lb_pages ? (double)foot / (double)lb_pages : 1.0;
    double base_ratio = lb_pages ? (double)base / (double)lb_pages : 1.0;
    double per_gib = mapped ? (double)plan.mappings / ((double)(mapped * PAGE) / (double)GIB) : 0;
    printf("%-9s %4llu %6u %5u %10.1f %10.1f %10.1f %6.3f %10.1f %6.3f %6llu %7.1f %8.2f\n",
           sh->name, (unsigned long long)seed, g.n, g.items, mib(lb), mib(lb_pages), mib(foot),
           ratio, mib(base), base_ratio, (unsigned long long)plan.mappings, per_gib, ms);
    t->ratio_sum += ratio;
    if (ratio > t->worst)
        t->worst = ratio;
    t->cases++;
    t->worse_than_baseline += foot > base;
    t->mappings += plan.mappings;
    t->mapped_pages += mapped;
    gm_plan_free(&plan);
    free(before);
    graph_free(&g);
}

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* 10,000 allocations on 4 streams: the whole gm_plan_build (reachability, conflicts, lower
 * bound, placement, cuts), median of 5. */
static double plan_10k(const shape_t *shape) {
    shape_t sh = *shape;
    rng_state = 12345;
    graph_t g;
    generate(&g, &sh);
    uint64_t *before = ordering(&g);
    make_items(&g, before);
    gm_plan_input_t in = plan_input(&g);
    double runs[5];
    for (int r = 0; r < 5; r++) {
        gm_plan_t plan;
        double t0 = now_ms();
        if (gm_plan_build(&in, &plan) != GM_OK)
            abort();
        runs[r] = now_ms() - t0;
        if (r == 0)
            printf("%s: %u allocations, %u nodes, %u edges, %u items, footprint/LB %.3f\n", sh.name,
                   g.n, g.nodes, g.edges, g.items,
                   (double)((plan.shared.pages + plan.escape.pages) * PAGE) /
                       (double)((plan.lower_bound + PAGE - 1) / PAGE * PAGE));
        gm_plan_free(&plan);
    }
    qsort(runs, 5, sizeof runs[0], by_double);
    printf("%s: runs %.1f %.1f %.1f %.1f %.1f ms\n", sh.name, runs[0], runs[1], runs[2], runs[3],
           runs[4]);
    free(before);
    graph_free(&g);
    return runs[2];
}

int main(void) {
    static const shape_t shapes[] = {
        {"chain", 300, 1, 4 * KIB, 512 * MIB, 0, 12, 0, false},
        {"streams2", 300, 2, 4 * KIB, 512 * MIB, 0, 12, 15, false},
        {"streams4", 300, 4, 4 * KIB, 512 * MIB, 0, 16, 15, false},
        {"pytorch", 1000, 1, 4 * KIB, MIB, 0, 0, 0, true},
        {"pytorch2", 1000, 2, 4 * KIB, MIB, 0, 0, 10, true},
        {"escape", 300, 3, 4 * KIB, 512 * MIB, 15, 12, 15, false},
    };
    printf("%-9s %4s %6s %5s %10s %10s %10s %6s %10s %6s %6s %7s %8s\n", "suite", "seed", "allocs",
           "items", "LB_MiB", "LBpg_MiB", "gm_MiB", "gm/LB", "base_MiB", "bs/LB", "maps",
           "maps/GiB", "plan_ms");
    totals_t t = {0};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (uint64_t seed = 1; seed <= 5; seed++)
            run_case(&shapes[s], seed, &t);
    /* Sizes over six orders of magnitude; and allocations of 2-8 MiB, packed with PACK_LIMIT=8M
     * (chunks of many pieces: the planner's units, whose cost grows with their square). */
    static const shape_t big = {"plan10k", 10000, 4, 256, GIB, 5, 40, 10, false};
    static const shape_t medium = {"medium10k", 10000, 4, 2 * MIB, 8 * MIB - 1, 0, 30, 0, false};
    double ms = plan_10k(&big), medium_ms = plan_10k(&medium);
    double per_gib = (double)t.mappings / ((double)(t.mapped_pages * PAGE) / (double)GIB);
    printf("planner mean=%.2f worst=%.2f worse_than_baseline=%u maps_per_gib=%.0f "
           "plan10k_ms=%.0f medium10k_ms=%.0f\n",
           t.ratio_sum / t.cases, t.worst, t.worse_than_baseline, per_gib, ms, medium_ms);
    return 0;
}
