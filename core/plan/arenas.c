/* Which arena each item goes to, and where in it (plan.h: the shared arena, and the exec's private
 * escape arena).
 *
 * Escaping items (an allocation of theirs outlives the graph) make the escape arena at the bottom
 * of one joint arena; every other item is placed around them, and those that land below them
 * share the escape arena (pages an escaping allocation only takes later). An item may also cross
 * the escape arena's end: its first pages are the escape arena's last, and the rest the shared
 * arena's first (gm_plan_item_t.spill_pages), where that makes the joint arena smaller
 * (place_around).
 *
 * Two layouts of the escaping items are tried. Back to back is the simple one. Placed by their
 * units, they may also share pages with each other: a chunk of packed allocations escapes as a
 * whole when one of its allocations does, while the others end inside the graph (PyTorch's
 * graphs keep each step's output in a chunk with the step's temporaries), so two such chunks can
 * overlap where their temporaries never meet. The layout with the smaller footprint is kept, the
 * smaller escape arena on a tie: the escape arena is private, the shared one is shared with the
 * other graphs of a group. */
#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "place.h"
#include "plan.h"
#include "plan_work.h"

/* Per group, what both layouts place. */
typedef struct joint {
    const work_t *w;
    const gm_plan_t *plan;
    uint64_t *pages, *start, *fixed, *offset;
    uint64_t *spare; /* place_around's first placement while it tries the second */
} joint_t;

/* Places `pages` (per group; 0 = left out) around the groups `fixed` holds (NULL: none), no item
 * straddling `barrier` (0: any may); `enough` is a size no placement can beat (0: unknown);
 * `shuffles`, `search` and `beat` as in gm_place_input_t. */
static gm_status_t place(const joint_t *j, const uint64_t *pages, const uint64_t *fixed,
                         uint64_t barrier, uint64_t enough, uint32_t shuffles, uint32_t search,
                         uint64_t beat, uint64_t *total) {
    /* Against `beat` (the same groups placed with a barrier), the greedy orders are not tried
     * again: without the barrier they gave nearly nothing (test_plan_property's footprint / bound
     * 1.2055 against 1.2066 on its medium graphs, bench_cpu_planner's escape rows 0-2 MiB) for
     * two fifths of the planning time of graphs with escaping allocations. */
    const work_t *w = j->w;
    gm_place_input_t pin = {.count = w->m,
                            .pages = pages,
                            .unit_first = w->unit_first,
                            .unit_at = w->unit_at,
                            .unit_pages = w->unit_pages,
                            .conflict = w->unit_conflict,
                            .words = gm_bits_words(w->units),
                            .start = j->start,
                            .fixed = fixed,
                            .barrier = barrier,
                            .enough = enough,
                            .no_greedy = beat != 0,
                            .shuffles = shuffles,
                            .search = search,
                            .beat = beat};
    return gm_place(&pin, j->offset, total);
}

/* Across the escape arena's end, at most SPILL_SHUFFLES orders near the topological one are tried,
 * fewer for graphs of more units so that they place at most SPILL_SHUFFLE_WORK units in all (an
 * order's cost grows with the units: 16 orders of 180 units took 8 ms; graphs of more than 512
 * units try none). In test_plan_property's random graphs, 3 in 4 of the orders that won were
 * among the first 16. */
#define SPILL_SHUFFLES 16u
#define SPILL_SHUFFLE_WORK 512u
/* And for graphs of at most SPILL_SEARCH_UNITS units, a search over offsets (place_search.c)
 * visiting at most SPILL_SEARCH_VISITS of them: a visit weighs pairs of units (a few µs at 32
 * units). The bench's escape workload needs 7; in test_plan_property's random graphs the search
 * seldom finds better than the orders, and with 1024 visits took up to 6 ms. */
#define SPILL_SEARCH_UNITS 32u
#define SPILL_SEARCH_VISITS 48u

/* The joint arena of one layout of the escaping items: `escape_at` per group (only escaping
 * groups read), `escape_pages` their extent. Writes j->offset for every group.
 *
 * Two placements of the other groups are tried, and the smaller kept (the first on a tie): none
 * across the escape arena's end, and any across it (the group's first pages in the escape arena,
 * its last ones at the start of the shared arena: gm_plan_item_t.spill_pages). Across it, a group
 * whose allocations end before the last escaping allocations begin takes their pages and goes
 * on into the shared arena, where the shared arena alone would have held it whole (the bench's
 * escape workload: 384 MiB, the driver's footprint and the bound, against 448). The greedy orders
 * fill the escape arena's pages with the first groups and lose there, so it tries orders near the
 * topological one and searches offsets instead. */
static gm_status_t place_around(joint_t *j, const uint64_t *escape_at, uint64_t escape_pages,
                                uint64_t *total) {
    const work_t *w = j->w;
    bool others = false;
    for (uint32_t g = 0; g < w->m; g++) {
        bool escaping = j->plan->items[w->group_item[g]].escaping;
        j->fixed[g] = escaping ? escape_at[g] : GM_PLACE_FREE;
        others |= !escaping && j->pages[g] > 0;
    }
    /* Every placement holds the allocations live together: the lower bound in pages. */
    uint64_t enough = pages_of(j->plan->lower_bound, w->in->page), across;
    gm_status_t st = place(j, j->pages, j->fixed, escape_pages, enough, 0, 0, 0, total);
    uint32_t shuffles = SPILL_SHUFFLE_WORK / (w->units ? w->units : 1);
    shuffles = shuffles < SPILL_SHUFFLES ? shuffles : SPILL_SHUFFLES;
    uint32_t search = w->units <= SPILL_SEARCH_UNITS ? SPILL_SEARCH_VISITS : 0;
    if (st != GM_OK || escape_pages == 0 || !others || *total <= enough || !(shuffles || search))
        return st;
    memcpy(j->spare, j->offset, (size_t)w->m * sizeof *j->spare);
    if ((st = place(j, j->pages, j->fixed, 0, enough, shuffles, search, *total, &across)) != GM_OK)
        return st;
    if (across < *total)
        *total = across;
    else
        memcpy(j->offset, j->spare, (size_t)w->m * sizeof *j->spare);
    return GM_OK;
}

/* The escaping groups placed among themselves by their units, into `escape_at`; their extent in
 * `escape_pages`. */
static gm_status_t place_escaping(joint_t *j, uint64_t *escape_at, uint64_t *escape_pages) {
    const work_t *w = j->w;
    uint64_t *pages = malloc(((size_t)w->m + 1) * sizeof *pages);
    if (!pages)
        return GM_ERR_OUT_OF_MEMORY;
    for (uint32_t g = 0; g < w->m; g++)
        pages[g] = j->plan->items[w->group_item[g]].escaping ? j->pages[g] : 0;
    gm_status_t st = place(j, pages, NULL, 0, 0, 0, 0, 0, escape_pages);
    for (uint32_t g = 0; g < w->m && st == GM_OK; g++)
        escape_at[g] = j->offset[g];
    free(pages);
    return st;
}

typedef struct layout {
    uint64_t *escape_at; /* per group: offset of an escaping group */
    uint64_t *offset;    /* per group: offset in the joint arena */
    uint64_t escape_pages, total;
} layout_t;

static void layout_free(layout_t *l) {
    free(l->escape_at);
    free(l->offset);
}

static gm_status_t layout_alloc(layout_t *l, uint32_t m) {
    l->escape_at = malloc(((size_t)m + 1) * sizeof *l->escape_at);
    l->offset = malloc(((size_t)m + 1) * sizeof *l->offset);
    return l->escape_at && l->offset ? GM_OK : GM_ERR_OUT_OF_MEMORY;
}

/* Both layouts (the second only where it makes the escape arena smaller); `best` is the one
 * kept. */
static gm_status_t choose_layout(joint_t *j, layout_t *layouts, layout_t **best) {
    const work_t *w = j->w;
    const gm_plan_t *plan = j->plan;
    layout_t *a = &layouts[0], *b = &layouts[1];
    gm_status_t st;
    if ((st = layout_alloc(a, w->m)) != GM_OK)
        return st;
    uint32_t escaping = 0;
    for (uint32_t g = 0; g < w->m; g++) {
        const gm_plan_item_t *item = &plan->items[w->group_item[g]];
        a->escape_at[g] = item->arena_page; /* back to back (gm_plan_place_items) */
        escaping += item->escaping;
    }
    a->escape_pages = plan->escape.pages;
    *best = a;
    if ((st = place_around(j, a->escape_at, a->escape_pages, &a->total)) != GM_OK)
        return st;
    memcpy(a->offset, j->offset, (size_t)w->m * sizeof *a->offset);
    if (escaping < 2)
        return GM_OK;
    if ((st = layout_alloc(b, w->m)) != GM_OK ||
        (st = place_escaping(j, b->escape_at, &b->escape_pages)) != GM_OK)
        return st;
    if (b->escape_pages >= a->escape_pages)
        return GM_OK; /* no page shared: the same footprint as back to back */
    if ((st = place_around(j, b->escape_at, b->escape_pages, &b->total)) != GM_OK)
        return st;
    memcpy(b->offset, j->offset, (size_t)w->m * sizeof *b->offset);
    if (b->total < a->total || (b->total == a->total && b->escape_pages < a->escape_pages))
        *best = b;
    return GM_OK;
}

/* The chosen layout into the items and the two arenas' sizes. */
static void apply_layout(const work_t *w, gm_plan_t *plan, const layout_t *l) {
    for (uint32_t g = 0; g < w->m; g++) {
        gm_plan_item_t *item = &plan->items[w->group_item[g]];
        if (item->pages == 0)
            continue;
        if (item->escaping) {
            item->arena_page = l->escape_at[g];
            continue;
        }
        item->escaping = l->offset[g] < l->escape_pages;
        item->arena_page = item->escaping ? l->offset[g] : l->offset[g] - l->escape_pages;
        if (item->escaping && l->offset[g] + item->pages > l->escape_pages)
            item->spill_pages = l->offset[g] + item->pages - l->escape_pages;
    }
    plan->escape.pages = l->escape_pages;
    plan->shared.pages = l->total > l->escape_pages ? l->total - l->escape_pages : 0;
}

gm_status_t gm_plan_place_items(work_t *w, gm_plan_t *plan, uint64_t *shared_len,
                                uint64_t *escape_len) {
    const gm_plan_input_t *in = w->in;
    for (uint32_t i = 0; i < in->alloc_count; i++) {
        const gm_plan_alloc_t *a = &in->allocs[i];
        gm_plan_item_t *item = &plan->items[a->item];
        if (a->free_node == GM_NO_NODE)
            item->escaping = true;
        if (a->size > 0 && pages_of(a->item_offset + a->size, in->page) > item->pages)
            item->pages = pages_of(a->item_offset + a->size, in->page);
    }
    for (uint32_t it = 0; it < plan->item_count; it++) {
        gm_plan_item_t *item = &plan->items[it];
        gm_plan_arena_t *arena = item->escaping ? &plan->escape : &plan->shared;
        /* Back to back: the escaping items' first layout; no_alias wants nothing shared. */
        if (item->escaping || in->no_alias) {
            item->arena_page = arena->pages;
            arena->pages += item->pages;
        }
    }
    gm_status_t st = GM_OK;
    if (!in->no_alias && w->m > 0) {
        joint_t j = {.w = w, .plan = plan};
        layout_t layouts[2] = {{0}}, *best = NULL;
        j.pages = malloc((size_t)w->m * sizeof *j.pages);
        j.start = malloc((size_t)w->m * sizeof *j.start);
        j.fixed = malloc((size_t)w->m * sizeof *j.fixed);
        j.offset = malloc((size_t)w->m * sizeof *j.offset);
        j.spare = malloc((size_t)w->m * sizeof *j.spare);
        st = GM_ERR_OUT_OF_MEMORY;
        if (j.pages && j.start && j.fixed && j.offset && j.spare) {
            for (uint32_t g = 0; g < w->m; g++) {
                j.pages[g] = plan->items[w->group_item[g]].pages;
                j.start[g] = UINT64_MAX;
                for (uint32_t k = w->first[g]; k < w->first[g + 1]; k++)
                    if (w->dag.rank[w->alloc_node[k]] < j.start[g])
                        j.start[g] = w->dag.rank[w->alloc_node[k]];
            }
            st = choose_layout(&j, layouts, &best);
            if (st == GM_OK)
                apply_layout(w, plan, best);
        }
        layout_free(&layouts[0]);
        layout_free(&layouts[1]);
        free(j.pages);
        free(j.start);
        free(j.fixed);
        free(j.offset);
        free(j.spare);
    }
    for (uint32_t it = 0; it < plan->item_count; it++) {
        const gm_plan_item_t *item = &plan->items[it];
        escape_len[it] = item->escaping ? item->pages - item->spill_pages : 0;
        shared_len[it] = item->escaping ? item->spill_pages : item->pages;
    }
    return st;
}
