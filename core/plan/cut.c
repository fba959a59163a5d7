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
    uint64_t maps, handles;
} cost_t;

static bool cheaper(cost_t a, cost_t b) {
    return a.maps != b.maps ? a.maps < b.maps : a.handles < b.handles;
}

gm_status_t gm_cut_arena(uint64_t pages, uint64_t max_pages, uint32_t count, const uint64_t *start,
                         const uint64_t *len, uint64_t **handle_pages_out,
                         uint32_t *handle_count_out) {
    *handle_pages_out = NULL;
    *handle_count_out = 0;
    if (max_pages == 0)
        return GM_ERR_INVALID_VALUE;
    if (pages == 0)
        return GM_OK;
    if (pages > GM_CUT_EXACT_PAGES)
        return cut_evenly(pages, max_pages, handle_pages_out, handle_count_out);
    size_t P = (size_t)pages;
    /* crossing[p]: items a cut at p would split, i.e. extra mappings that cut costs. */
    int64_t *crossing = calloc(P + 2, sizeof *crossing);
    cost_t *best = malloc((P + 1) * sizeof *best);
    uint32_t *prev = malloc((P + 1) * sizeof *prev);
    uint32_t *window = malloc((P + 1) * sizeof *window);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!crossing || !best || !prev || !window)
        goto out;
    for (uint32_t i = 0; i < count; i++) {
        if (len[i] < 2 || start[i] + len[i] > pages) {
            st = len[i] < 2 ? GM_OK : GM_ERR_INVALID_VALUE;
            if (st != GM_OK)
                goto out;
            continue;
        }
        crossing[start[i] + 1]++;
        crossing[start[i] + len[i]]--;
    }
    for (size_t p = 1; p <= P; p++)
        crossing[p] += crossing[p - 1];
    /* best[p]: cheapest cutting of [0, p) with a cut at p, from the cheapest cut within the last
     * max_pages positions (a monotone queue keeps the sliding-window minimum). */
    size_t head = 0, tail = 0;
    best[0] = (cost_t){0, 0};
    for (size_t p = 1; p <= P; p++) {
        size_t q = p - 1;
        while (tail > head && !cheaper(best[window[tail - 1]], best[q]))
            tail--;
        window[tail++] = (uint32_t)q;
        while (window[head] + max_pages < p)
            head++;
        size_t from = window[head];
        best[p] =
            (cost_t){best[from].maps + (p < P ? (uint64_t)crossing[p] : 0), best[from].handles + 1};
        prev[p] = (uint32_t)from;
    }
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
    free(best);
    free(prev);
    free(window);
    return st;
}
