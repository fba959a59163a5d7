#include "cut.h"

#include <stdbool.h>
#include <stdlib.h>

static gm_status_t cut_evenly(uint64_t pages, uint64_t max_pages, uint64_t **out,
                              uint32_t *count_out) {
    uint64_t count = (pages + max_pages - 1) / max_pages;
    if (count > UINT32_MAX)
        return GM_ERR_INVALID_VALUE;
    uint64_t *h = malloc(count * sizeof *h);
    if (!h)
        return GM_ERR_OUT_OF_MEMORY;
    for (uint64_t k = 0; k < count; k++)
        h[k] = k + 1 < count ? max_pages : pages - k * max_pages;
    *out = h;
    *count_out = (uint32_t)count;
    return GM_OK;
}

typedef struct cost {
    uint64_t cost, handles;
} cost_t;

static bool cheaper(cost_t a, cost_t b) {
    return a.cost != b.cost ? a.cost < b.cost : a.handles < b.handles;
}

/* best[p]: cheapest cutting of [0, p) with a cut at p, each handle [q, p) costing what its
 * mappings cost: the items overlapping it (those starting before p less those ending by q)
 * times (map_cost + p - q), and its making, handle_cost. */
static void cut_weighted(size_t P, size_t W, gm_cut_cost_t cost, const uint32_t *starts_before,
                         const uint32_t *ends_by, cost_t *best, uint32_t *prev) {
    best[0] = (cost_t){0, 0};
    for (size_t p = 1; p <= P; p++) {
        cost_t b = {UINT64_MAX, UINT64_MAX};
        for (size_t q = p > W ? p - W : 0; q < p; q++) {
            uint64_t items = starts_before[p] - ends_by[q];
            cost_t c = {best[q].cost + items * (cost.map_pages + (p - q)) + cost.handle_pages,
                        best[q].handles + 1};
            if (cheaper(c, b)) {
                b = c;
                prev[p] = (uint32_t)q;
            }
        }
        best[p] = b;
    }
}

/* best[p] as above, counting only the items a cut at p splits (extra mappings), from the cheapest
 * cut within the last W positions (a monotone queue keeps the sliding-window minimum). */
static gm_status_t cut_crossings(size_t P, size_t W, const int64_t *crossing, cost_t *best,
                                 uint32_t *prev) {
    uint32_t *window = malloc((P + 1) * sizeof *window);
    if (!window)
        return GM_ERR_OUT_OF_MEMORY;
    size_t head = 0, tail = 0;
    best[0] = (cost_t){0, 0};
    for (size_t p = 1; p <= P; p++) {
        size_t q = p - 1;
        while (tail > head && !cheaper(best[window[tail - 1]], best[q]))
            tail--;
        window[tail++] = (uint32_t)q;
        while (window[head] + W < p)
            head++;
        size_t from = window[head];
        best[p] =
            (cost_t){best[from].cost + (p < P ? (uint64_t)crossing[p] : 0), best[from].handles + 1};
        prev[p] = (uint32_t)from;
    }
    free(window);
    return GM_OK;
}

gm_status_t gm_cut_arena(uint64_t pages, uint64_t max_pages, gm_cut_cost_t cost, uint32_t count,
                         const uint64_t *start, const uint64_t *len, uint64_t **handle_pages_out,
                         uint32_t *handle_count_out) {
    *handle_pages_out = NULL;
    *handle_count_out = 0;
    if (max_pages == 0)
        return GM_ERR_INVALID_VALUE;
    if (pages == 0)
        return GM_OK;
    if (pages > GM_CUT_EXACT_PAGES)
        return cut_evenly(pages, max_pages, handle_pages_out, handle_count_out);
    size_t P = (size_t)pages, W = max_pages < pages ? (size_t)max_pages : P;
    bool weighted = (uint64_t)P * W <= GM_CUT_EXACT_WORK;
    /* Weighted: starts_before and ends_by; else crossing[p], the items a cut at p would split. */
    int64_t *crossing = weighted ? NULL : calloc(P + 2, sizeof *crossing);
    uint32_t *starts_before = weighted ? calloc(P + 2, sizeof *starts_before) : NULL;
    uint32_t *ends_by = weighted ? calloc(P + 2, sizeof *ends_by) : NULL;
    cost_t *best = malloc((P + 1) * sizeof *best);
    uint32_t *prev = malloc((P + 1) * sizeof *prev);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!best || !prev || (weighted ? !starts_before || !ends_by : !crossing))
        goto out;
    st = GM_ERR_INVALID_VALUE;
    for (uint32_t i = 0; i < count; i++) {
        if (len[i] == 0)
            continue;
        if (start[i] + len[i] > pages || start[i] + len[i] < start[i])
            goto out;
        if (weighted) {
            starts_before[start[i] + 1]++;
            ends_by[start[i] + len[i]]++;
        } else if (len[i] >= 2) {
            crossing[start[i] + 1]++;
            crossing[start[i] + len[i]]--;
        }
    }
    for (size_t p = 1; p <= P; p++) {
        if (weighted) {
            starts_before[p] += starts_before[p - 1];
            ends_by[p] += ends_by[p - 1];
        } else {
            crossing[p] += crossing[p - 1];
        }
    }
    if (weighted)
        cut_weighted(P, W, cost, starts_before, ends_by, best, prev);
    else if ((st = cut_crossings(P, W, crossing, best, prev)) != GM_OK)
        goto out;
    st = GM_ERR_OUT_OF_MEMORY;
    uint64_t handles = best[P].handles;
    uint64_t *h = malloc(handles * sizeof *h);
    if (!h)
        goto out;
    size_t k = handles, p = P;
    while (p > 0) {
        h[--k] = p - prev[p];
        p = prev[p];
    }
    *handle_pages_out = h;
    *handle_count_out = (uint32_t)handles;
    st = GM_OK;
out:
    free(crossing);
    free(starts_before);
    free(ends_by);
    free(best);
    free(prev);
    return st;
}
