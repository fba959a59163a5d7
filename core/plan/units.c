/* A group of several allocations (a chunk of packed ones) cut into units: page ranges where the
 * set of allocations on them changes, each with conflicts of its own (core/README.md, "Plan"). */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "plan_work.h"
#include "util.h"

/* Pages [*first, *end) of its item that internal allocation k touches. */
static void alloc_pages(const work_t *w, uint32_t k, uint64_t *first, uint64_t *end) {
    uint64_t offset = w->in->allocs[w->alloc_of[k]].item_offset, page = w->in->page;
    *first = offset / page;
    *end = pages_of(offset + w->size[k], page);
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct member_key {
    uint64_t first; /* first page in the item */
    uint32_t pos;   /* position in the group, for a stable order */
} member_key_t;

static int by_first_page(const void *a, const void *b) {
    const member_key_t *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Page numbers inside one group span its chunk, a few dozen pages at most (a handle), so the sorts
 * below count them when their range is this small: qsort through a comparator was a quarter of
 * instantiating 1,000 packed allocations. Larger ranges fall back to qsort. */
#define COUNT_RANGE 256u

/* keys[0, n) in (first, pos) order: a stable counting sort by first (keys come in pos order),
 * through `scratch`; false when the range is too wide for it. */
static bool count_members(member_key_t *keys, member_key_t *scratch, uint32_t n) {
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t k = 0; k < n; k++) {
        lo = keys[k].first < lo ? keys[k].first : lo;
        hi = keys[k].first > hi ? keys[k].first : hi;
    }
    if (hi - lo >= COUNT_RANGE)
        return false;
    uint32_t at[COUNT_RANGE + 1] = {0};
    for (uint32_t k = 0; k < n; k++)
        at[keys[k].first - lo + 1]++;
    for (uint64_t v = 0; v < hi - lo; v++)
        at[v + 1] += at[v];
    for (uint32_t k = 0; k < n; k++)
        scratch[at[keys[k].first - lo]++] = keys[k];
    memcpy(keys, scratch, (size_t)n * sizeof *keys);
    return true;
}

/* Members of each group of several allocations in the order of their first page, the
 * per-allocation arrays permuted alike. */
static gm_status_t sort_members(work_t *w) {
    member_key_t *keys = malloc(((size_t)w->n + 1) * sizeof *keys);
    member_key_t *scratch = malloc(((size_t)w->n + 1) * sizeof *scratch);
    uint32_t *alloc_of = malloc(((size_t)w->n + 1) * sizeof *alloc_of);
    if (!keys || !scratch || !alloc_of) {
        free(keys);
        free(scratch);
        free(alloc_of);
        return GM_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t g = 0; g < w->m; g++) {
        uint32_t k0 = w->first[g], k1 = w->first[g + 1];
        for (uint32_t k = k0; k < k1; k++) {
            uint64_t end;
            alloc_pages(w, k, &keys[k].first, &end);
            keys[k].pos = k - k0;
        }
        if (k1 - k0 > 1 && !count_members(keys + k0, scratch, k1 - k0))
            qsort(keys + k0, k1 - k0, sizeof *keys, by_first_page);
        for (uint32_t k = k0; k < k1; k++)
            alloc_of[k] = w->alloc_of[k0 + keys[k].pos];
    }
    free(scratch);
    /* alloc_of is the new order; the other arrays follow it through the input allocation. */
    for (uint32_t k = 0; k < w->n; k++) {
        const gm_plan_alloc_t *a = &w->in->allocs[alloc_of[k]];
        w->alloc_of[k] = alloc_of[k];
        w->alloc_node[k] = a->alloc_node;
        w->free_node[k] = a->free_node;
        w->size[k] = a->size;
    }
    free(keys);
    free(alloc_of);
    return GM_OK;
}

static gm_status_t add_extra(work_t *w, uint32_t k) {
    if (gm_grow((void **)&w->extra, &w->extra_cap, w->extra_count + 1, sizeof *w->extra) != GM_OK)
        return GM_ERR_OUT_OF_MEMORY;
    w->extra[w->extra_count++] = k;
    return GM_OK;
}

/* A group's pages cut where the set of allocations on them changes: one unit per piece with
 * allocations on it (pages with none are no unit: nothing there meets anything). A group whose
 * allocations run on into many pieces (more extra members than SPLIT_EXTRAS per allocation) is
 * kept as one unit, the union of its allocations' conflicts. Planning costs grow with the square
 * of the units (their conflict matrix, the spans of a fit), so a group gets at most SPLIT_UNITS
 * of them and all groups together at most as many units again as there are groups: adjacent
 * pieces are merged into runs (pages of a run between its pieces join it; a merged unit holds
 * what its pieces hold, and its extra members are its first piece's, since an allocation that
 * began before the run and reaches a later piece crosses the first). */
#define SPLIT_EXTRAS 4u
#define SPLIT_UNITS 8u

static void add_unit(work_t *w, uint32_t range_from, uint64_t at, uint64_t pages) {
    uint32_t u = w->units++;
    w->range_first[u] = range_from;
    w->extra_first[u + 1] = w->extra_count;
    w->unit_at[u] = at;
    w->unit_pages[u] = pages;
}

/* The group's units from `from` on, merged into runs of adjacent ones when there are more than
 * its share (SPLIT_UNITS, and w->unit_budget extra units left overall). Writes go to indices at
 * or below those still to be read. */
static void merge_units(work_t *w, uint32_t from, uint32_t extras_from) {
    uint32_t k = w->units - from;
    uint32_t allowed = 1 + (w->unit_budget < SPLIT_UNITS - 1 ? w->unit_budget : SPLIT_UNITS - 1);
    if (k > allowed) {
        uint32_t run = (k + allowed - 1) / allowed, out = from, cursor = extras_from;
        for (uint32_t first = from; first < w->units; first += run, out++) {
            uint32_t last = first + run < w->units ? first + run - 1 : w->units - 1;
            uint32_t e0 = w->extra_first[first], e1 = w->extra_first[first + 1];
            uint64_t at = w->unit_at[first], end = w->unit_at[last] + w->unit_pages[last];
            w->range_first[out] = w->range_first[first];
            if (e1 > e0) /* extra is NULL while no unit has any: memmove wants real pointers */
                memmove(&w->extra[cursor], &w->extra[e0], (size_t)(e1 - e0) * sizeof *w->extra);
            cursor += e1 - e0;
            w->extra_first[out + 1] = cursor;
            w->unit_at[out] = at;
            w->unit_pages[out] = end - at;
        }
        w->units = out;
        w->extra_count = cursor;
    }
    w->unit_budget -= w->units - from - 1;
}

/* bound[0, n), values in [lo, hi], sorted: counted when the range is small (COUNT_RANGE). */
static void sort_bounds(uint64_t *bound, uint32_t n, uint64_t lo, uint64_t hi) {
    if (hi - lo >= COUNT_RANGE) {
        qsort(bound, n, sizeof *bound, by_value);
        return;
    }
    uint32_t count[COUNT_RANGE] = {0};
    for (uint32_t b = 0; b < n; b++)
        count[bound[b] - lo]++;
    uint32_t out = 0;
    for (uint64_t v = 0; v <= hi - lo; v++)
        for (uint32_t c = 0; c < count[v]; c++)
            bound[out++] = lo + v;
}

static gm_status_t split_group(work_t *w, uint32_t g, uint64_t *bound, uint32_t *active) {
    uint32_t k0 = w->first[g], k1 = w->first[g + 1], nb = 0, live = 0;
    uint32_t units_before = w->units, extras_before = w->extra_count;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t k = k0; k < k1; k++) {
        alloc_pages(w, k, &bound[nb], &bound[nb + 1]);
        lo = bound[nb] < lo ? bound[nb] : lo;
        hi = bound[nb + 1] > hi ? bound[nb + 1] : hi;
        nb += 2;
    }
    if (k1 - k0 > 1) {
        sort_bounds(bound, nb, lo, hi);
        uint32_t r = k0;
        for (uint32_t b = 0; b + 1 < nb; b++) {
            if (bound[b] == bound[b + 1])
                continue;
            uint32_t kept = 0; /* allocations on page bound[b] that began before it */
            for (uint32_t x = 0; x < live; x++) {
                uint64_t first, end;
                alloc_pages(w, active[x], &first, &end);
                if (end > bound[b])
                    active[kept++] = active[x];
            }
            live = kept;
            uint32_t r0 = r;
            for (uint64_t first = 0, end = 0; r < k1; r++) {
                alloc_pages(w, r, &first, &end);
                if (first != bound[b])
                    break;
            }
            if (r0 == r && live == 0)
                continue;
            for (uint32_t x = 0; x < live; x++)
                if (add_extra(w, active[x]) != GM_OK)
                    return GM_ERR_OUT_OF_MEMORY;
            add_unit(w, r0, bound[b], bound[b + 1] - bound[b]);
            for (uint32_t k = r0; k < r; k++)
                active[live++] = k;
        }
        if (w->extra_count - extras_before <= SPLIT_EXTRAS * (k1 - k0)) {
            merge_units(w, units_before, extras_before);
            return GM_OK;
        }
        w->units = units_before; /* too many pieces: the group as one unit */
        w->extra_count = extras_before;
    }
    add_unit(w, k0, lo, hi - lo);
    return GM_OK;
}

gm_status_t gm_plan_split_units(work_t *w) {
    size_t cap = 2 * (size_t)w->n + 1;
    w->unit_first = malloc(((size_t)w->m + 1) * sizeof *w->unit_first);
    w->range_first = malloc((cap + 1) * sizeof *w->range_first);
    w->extra_first = malloc((cap + 1) * sizeof *w->extra_first);
    w->unit_at = malloc(cap * sizeof *w->unit_at);
    w->unit_pages = malloc(cap * sizeof *w->unit_pages);
    uint64_t *bound = malloc(cap * sizeof *bound);
    uint32_t *active = malloc(cap * sizeof *active);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!w->unit_first || !w->range_first || !w->extra_first || !w->unit_at || !w->unit_pages ||
        !bound || !active || sort_members(w) != GM_OK)
        goto out;
    w->extra_first[0] = 0;
    w->unit_budget = w->m;
    st = GM_OK;
    for (uint32_t g = 0; g < w->m && st == GM_OK; g++) {
        w->unit_first[g] = w->units;
        st = split_group(w, g, bound, active);
    }
    w->unit_first[w->m] = w->units;
    w->range_first[w->units] = w->n;
out:
    free(bound);
    free(active);
    return st;
}
