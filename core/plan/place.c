#include "place.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bitset.h"

typedef struct span {
    uint64_t lo, hi;
} span_t;

typedef struct workspace {
    const gm_place_input_t *in;
    uint32_t *order;
    uint64_t *placed;        /* bit row: units already given an offset */
    span_t *spans, *scratch; /* forbidden offsets of the item being fitted */
    size_t span_cap;
    uint64_t *offset;      /* per item */
    uint64_t *unit_offset; /* per placed unit: its first page in the arena */
} workspace_t;

/* Sorts n spans by lo; returns the buffer holding the result (`a` or `scratch`). Insertion sort
 * over runs of SORT_RUN, then bottom-up merges between the two buffers, copying pairs of runs that
 * are already in order. Ties may come out in any order: the gap scan only uses the running maximum
 * of hi. glibc's qsort (comparator through a pointer, elements moved by memcpy) took two thirds of
 * gm_place's time on 4,000 items. Spans arrive partly ordered (they are gathered by item index,
 * and items are numbered in creation order): on plan10k's placement, runs of 32 with the ordered
 * check beat runs of 8 by 30%, and with the items numbered at random runs of 32 were still the
 * fastest of 4 to 64. */
#define SORT_RUN 32

static span_t *sort_spans(span_t *a, span_t *scratch, uint32_t n) {
    for (uint32_t run = 0; run < n; run += SORT_RUN) {
        uint32_t end = run + SORT_RUN < n ? run + SORT_RUN : n;
        for (uint32_t k = run + 1; k < end; k++) {
            span_t x = a[k];
            uint32_t p = k;
            for (; p > run && a[p - 1].lo > x.lo; p--)
                a[p] = a[p - 1];
            a[p] = x;
        }
    }
    span_t *src = a, *dst = scratch;
    for (uint32_t width = SORT_RUN; width < n; width *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * width) {
            uint32_t mid = lo + width < n ? lo + width : n;
            uint32_t hi = mid + width < n ? mid + width : n;
            uint32_t x = lo, y = mid, out = lo;
            if (mid < hi && src[mid - 1].lo <= src[mid].lo) {
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof *dst);
                continue;
            }
            while (x < mid && y < hi) {
                bool take_y = src[y].lo < src[x].lo;
                dst[out++] = src[take_y ? y : x];
                y += take_y;
                x += !take_y;
            }
            while (x < mid)
                dst[out++] = src[x++];
            while (y < hi)
                dst[out++] = src[y++];
        }
        span_t *swap = src;
        src = dst;
        dst = swap;
    }
    return src;
}

/* The lowest offset in the gap [lo, hi) of allowed offsets (hi = UINT64_MAX: open) at which an
 * item of `need` pages does not straddle the barrier, or UINT64_MAX. */
static uint64_t gap_position(uint64_t lo, uint64_t hi, uint64_t need, uint64_t barrier) {
    if (barrier > lo && barrier < lo + need)
        lo = barrier; /* every offset from lo up to the barrier straddles it */
    return lo < hi ? lo : UINT64_MAX;
}

static bool push_span(workspace_t *ws, uint32_t *n, uint64_t lo, uint64_t hi) {
    if (*n == ws->span_cap) {
        size_t cap = ws->span_cap * 2 + 64;
        span_t *spans = realloc(ws->spans, cap * sizeof *spans);
        if (!spans)
            return false;
        ws->spans = spans;
        span_t *scratch = realloc(ws->scratch, cap * sizeof *scratch);
        if (!scratch)
            return false;
        ws->scratch = scratch;
        ws->span_cap = cap;
    }
    ws->spans[(*n)++] = (span_t){lo, hi};
    return true;
}

/* The offset o for item `i` given the units placed so far. Each of its units u, at o + at(u),
 * must miss every placed unit it conflicts with (found by walking the set bits of its conflict
 * row AND placed): that forbids a span of o. The answer is the lowest o, not straddling the
 * barrier, of the first gap between forbidden spans (first fit) or of the narrowest one (best
 * fit; for an item of one unit, the narrowest gap of pages around it). */
static gm_status_t fit(workspace_t *ws, uint32_t i, bool best_fit, uint64_t *out) {
    const gm_place_input_t *in = ws->in;
    uint32_t n = 0;
    for (uint32_t u = gm_place_first_unit(in, i); u < gm_place_first_unit(in, i + 1); u++) {
        const uint64_t *row = in->conflict + (size_t)u * in->words;
        uint64_t at = gm_place_unit_at(in, u), len = gm_place_unit_pages(in, u),
                 last_hi = UINT64_MAX;
        for (size_t w = 0; w < in->words; w++)
            for (uint64_t b = row[w] & ws->placed[w]; b; b &= b - 1) {
                uint32_t v = (uint32_t)(w * 64 + gm_bits_ctz(b));
                uint64_t lo = ws->unit_offset[v], hi = lo + gm_place_unit_pages(in, v);
                /* o + at < hi and o + at + len > lo */
                if (hi <= at)
                    continue;
                if (lo == last_hi) { /* the next unit of a chunk: one span grows */
                    ws->spans[n - 1].hi = hi - at;
                    last_hi = hi;
                    continue;
                }
                uint64_t from = lo + 1 > at + len ? lo + 1 - at - len : 0;
                if (!push_span(ws, &n, from, hi - at))
                    return GM_ERR_OUT_OF_MEMORY;
                last_hi = hi;
            }
    }
    const span_t *spans = sort_spans(ws->spans, ws->scratch, n);
    uint64_t need = in->pages[i], cursor = 0, best = UINT64_MAX, best_gap = UINT64_MAX;
    for (uint32_t k = 0; k < n; k++) {
        if (spans[k].lo > cursor) {
            uint64_t at = gap_position(cursor, spans[k].lo, need, in->barrier);
            if (at != UINT64_MAX) {
                if (!best_fit) {
                    *out = at;
                    return GM_OK;
                }
                if (spans[k].lo - cursor < best_gap) {
                    best_gap = spans[k].lo - cursor;
                    best = at;
                }
            }
        }
        if (spans[k].hi > cursor)
            cursor = spans[k].hi;
    }
    *out = best != UINT64_MAX ? best : gap_position(cursor, UINT64_MAX, need, in->barrier);
    return GM_OK;
}

static uint64_t put(workspace_t *ws, uint32_t i, uint64_t offset) {
    const gm_place_input_t *in = ws->in;
    ws->offset[i] = offset;
    gm_place_put_units(in, i, offset, ws->unit_offset, ws->placed);
    return offset + in->pages[i];
}

/* Places every item in ws->order; stops early once the arena reaches `limit` (it can only grow,
 * and the caller keeps a strategy only when it ends strictly below the best so far). */
static gm_status_t run(workspace_t *ws, bool best_fit, uint64_t limit, uint64_t *arena_out) {
    const gm_place_input_t *in = ws->in;
    memset(ws->placed, 0, in->words * sizeof *ws->placed);
    uint64_t arena = 0, end;
    for (uint32_t i = 0; in->fixed && i < in->count; i++) {
        if (in->fixed[i] == GM_PLACE_FREE || in->pages[i] == 0)
            continue;
        if ((end = put(ws, i, in->fixed[i])) > arena)
            arena = end;
    }
    for (uint32_t k = 0; k < in->count && arena < limit; k++) {
        uint32_t i = ws->order[k];
        if (in->pages[i] == 0 || (in->fixed && in->fixed[i] != GM_PLACE_FREE))
            continue;
        uint64_t offset;
        gm_status_t st = fit(ws, i, best_fit, &offset);
        if (st != GM_OK)
            return st;
        if ((end = put(ws, i, offset)) > arena)
            arena = end;
    }
    *arena_out = arena;
    return GM_OK;
}

typedef struct sort_key {
    uint64_t major, minor;
    uint32_t item;
} sort_key_t;

static int by_key(const void *a, const void *b) {
    const sort_key_t *x = a, *y = b;
    if (x->major != y->major)
        return x->major < y->major ? -1 : 1;
    if (x->minor != y->minor)
        return x->minor < y->minor ? -1 : 1;
    return x->item < y->item ? -1 : x->item > y->item;
}

typedef enum order_kind {
    ORDER_SIZE,  /* largest first, then earliest */
    ORDER_START, /* earliest first, then largest */
} order_kind_t;

typedef struct strategy {
    order_kind_t order;
    bool best_fit;
} strategy_t;

static const strategy_t strategies[] = {
    {ORDER_SIZE, true},   /* greedy by size, best fit (TFLite, XLA kSpatial) */
    {ORDER_START, false}, /* topological first fit: optimal on a single stream */
    {ORDER_SIZE, false},
    {ORDER_START, true},
};

static void make_order(const gm_place_input_t *in, order_kind_t kind, sort_key_t *keys,
                       uint32_t *order) {
    for (uint32_t i = 0; i < in->count; i++) {
        uint64_t size_key = ~in->pages[i];
        keys[i] = kind == ORDER_SIZE ? (sort_key_t){size_key, in->start[i], i}
                                     : (sort_key_t){in->start[i], size_key, i};
    }
    qsort(keys, in->count, sizeof *keys, by_key);
    for (uint32_t i = 0; i < in->count; i++)
        order[i] = keys[i].item;
}

/* Places every item in ws->order, keeping the offsets in `offset_out` when the arena is smaller
 * than `best`. */
static gm_status_t try_order(workspace_t *ws, bool best_fit, uint64_t *best, uint64_t *offset_out) {
    size_t n = ws->in->count;
    memset(ws->offset, 0, n * sizeof *ws->offset);
    uint64_t arena;
    gm_status_t st = run(ws, best_fit, *best, &arena);
    if (st == GM_OK && arena < *best) {
        *best = arena;
        memcpy(offset_out, ws->offset, n * sizeof *offset_out);
    }
    return st;
}

/* The topological order with each pair of neighbours swapped at random: first fit in topological
 * order is optimal on one stream, but where fixed items (an escape arena) sit in the way, the
 * best order often differs from it by a few swaps (an item left for a later one that fits only
 * there). xorshift64 on `rng`. */
static void shuffled_order(const gm_place_input_t *in, sort_key_t *keys, uint32_t *order,
                           uint64_t *rng) {
    make_order(in, ORDER_START, keys, order);
    /* Neighbours among the items to place: the fixed ones (placed first, whatever the order) go
     * to the end, keeping the order of the others. */
    uint32_t movable = 0;
    for (uint32_t i = 0; i < in->count; i++)
        if (!in->fixed || in->fixed[order[i]] == GM_PLACE_FREE)
            order[movable++] = order[i];
    for (uint32_t i = 0, k = movable; i < in->count; i++)
        if (in->fixed && in->fixed[keys[i].item] != GM_PLACE_FREE)
            order[k++] = keys[i].item;
    for (uint32_t i = 0; i + 1 < movable; i++) {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        if (*rng & 1) {
            uint32_t t = order[i];
            order[i] = order[i + 1];
            order[i + 1] = t;
            i++; /* an item moves one place at most */
        }
    }
}

gm_status_t gm_place(const gm_place_input_t *in, uint64_t *offset_out, uint64_t *arena_out) {
    uint32_t n = in->count;
    memset(offset_out, 0, (size_t)n * sizeof *offset_out);
    *arena_out = 0;
    if (n == 0)
        return GM_OK;
    size_t units = in->unit_first ? in->unit_first[n] : n;
    workspace_t ws = {.in = in};
    ws.order = malloc((size_t)n * sizeof *ws.order);
    ws.placed = malloc(in->words * sizeof *ws.placed);
    ws.offset = malloc((size_t)n * sizeof *ws.offset);
    ws.unit_offset = malloc((units + 1) * sizeof *ws.unit_offset);
    sort_key_t *keys = malloc((size_t)n * sizeof *keys);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!ws.order || !ws.placed || !ws.offset || !ws.unit_offset || !keys)
        goto out;
    uint64_t best = in->beat ? in->beat : UINT64_MAX;
    /* A later order is kept only when strictly smaller, so stopping at a lower bound changes
     * nothing but the time. */
    for (size_t s = 0;
         !in->no_greedy && s < sizeof strategies / sizeof strategies[0] && best > in->enough; s++) {
        make_order(in, strategies[s].order, keys, ws.order);
        if ((st = try_order(&ws, strategies[s].best_fit, &best, offset_out)) != GM_OK)
            goto out;
    }
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (uint32_t s = 0; s < in->shuffles && best > in->enough; s++) {
        shuffled_order(in, keys, ws.order, &rng);
        if ((st = try_order(&ws, false, &best, offset_out)) != GM_OK)
            goto out;
    }
    if (in->search && best > in->enough)
        gm_place_search(in, offset_out, &best);
    *arena_out = best;
    st = GM_OK;
out:
    free(ws.order);
    free(ws.placed);
    free(ws.spans);
    free(ws.scratch);
    free(ws.offset);
    free(ws.unit_offset);
    free(keys);
    return st;
}
