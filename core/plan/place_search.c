/* A depth-first search over offsets, gm_place's last try for inputs that ask for it (place.h,
 * `search`). The greedy orders put each item at the lowest offset that fits; where fixed items sit
 * (an escape arena), the first items then take the pages a later one needed: in the bench's escape
 * workload a run of two chain allocations placed over the first escaping allocations leaves the
 * next run no room but above, where a run placed over the last escaping allocation instead lets
 * all of them share one place (12 units, the bound, against 16).
 *
 * The items to place go in topological order; each is tried at every offset where one of its
 * units starts or ends at an edge of a placed unit (or at 0) and that no conflict forbids, lowest
 * first, at most SEARCH_CANDIDATES of them. A branch stops once the arena reaches the best size
 * found; the whole search once it reached the lower bound (`enough`) or visited in->search
 * offsets. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "place.h"

#define SEARCH_CANDIDATES 16u
/* Inputs of more units are not searched: candidates() holds 1 + 4 * units^2 offsets, and each
 * visit weighs them all (place.h asks for few items). */
#define SEARCH_UNITS_MAX 256u

typedef struct search {
    const gm_place_input_t *in;
    uint32_t *items; /* to place, in topological order */
    uint32_t count;
    uint64_t *offset;  /* per item, in the branch being tried */
    uint64_t *unit_lo; /* per placed unit: its first page in the arena */
    uint64_t *placed;  /* bit row: units placed in the branch */
    uint64_t *best_offset, best;
    uint64_t *raw; /* candidates() scratch: 1 + 4 * units * units values */
    uint64_t visits;
} search_t;

static void put(search_t *s, uint32_t i, uint64_t offset) {
    s->offset[i] = offset;
    gm_place_put_units(s->in, i, offset, s->unit_lo, s->placed);
}

static void take_back(search_t *s, uint32_t i) {
    const gm_place_input_t *in = s->in;
    for (uint32_t u = gm_place_first_unit(in, i); u < gm_place_first_unit(in, i + 1); u++)
        gm_bits_clear(s->placed, u);
}

/* Whether item i fits at `offset`: across no barrier, and none of its units over a placed unit it
 * conflicts with. */
static bool fits(const search_t *s, uint32_t i, uint64_t offset) {
    const gm_place_input_t *in = s->in;
    if (in->barrier > offset && in->barrier < offset + in->pages[i])
        return false;
    for (uint32_t u = gm_place_first_unit(in, i); u < gm_place_first_unit(in, i + 1); u++) {
        const uint64_t *row = in->conflict + (size_t)u * in->words;
        uint64_t lo = offset + gm_place_unit_at(in, u), hi = lo + gm_place_unit_pages(in, u);
        for (size_t w = 0; w < in->words; w++)
            for (uint64_t b = row[w] & s->placed[w]; b; b &= b - 1) {
                uint32_t v = (uint32_t)(w * 64 + gm_bits_ctz(b));
                if (s->unit_lo[v] < hi && lo < s->unit_lo[v] + gm_place_unit_pages(in, v))
                    return false;
            }
    }
    return true;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The offsets to try for item i, lowest first, into `out` (room for SEARCH_CANDIDATES); how many.
 * `raw` has room for every edge alignment (gm_place_search). */
static uint32_t candidates(const search_t *s, uint32_t i, uint64_t *raw, uint64_t *out) {
    const gm_place_input_t *in = s->in;
    size_t units = in->unit_first ? in->unit_first[in->count] : in->count, n = 0;
    raw[n++] = 0;
    for (size_t v = 0; v < units; v++) {
        if (!gm_bits_test(s->placed, v))
            continue;
        uint64_t edges[2] = {s->unit_lo[v], s->unit_lo[v] + gm_place_unit_pages(in, (uint32_t)v)};
        for (uint32_t u = gm_place_first_unit(in, i); u < gm_place_first_unit(in, i + 1); u++) {
            uint64_t at = gm_place_unit_at(in, u), end = at + gm_place_unit_pages(in, u);
            for (int e = 0; e < 2; e++) {
                if (edges[e] >= at)
                    raw[n++] = edges[e] - at; /* u starts at the edge */
                if (edges[e] >= end)
                    raw[n++] = edges[e] - end; /* u ends at it */
            }
        }
    }
    qsort(raw, n, sizeof *raw, by_value);
    uint32_t kept = 0;
    for (size_t k = 0; k < n && kept < SEARCH_CANDIDATES; k++)
        if ((k == 0 || raw[k] != raw[k - 1]) && fits(s, i, raw[k]))
            out[kept++] = raw[k];
    return kept;
}

/* Places s->items[depth..] below s->best, given an arena of `arena` pages so far. */
static void descend(search_t *s, uint32_t depth, uint64_t arena) {
    const gm_place_input_t *in = s->in;
    if (depth == s->count) {
        if (arena >= s->best)
            return; /* nothing placed (fixed items only) at or above the best */
        s->best = arena;
        memcpy(s->best_offset, s->offset, (size_t)in->count * sizeof *s->best_offset);
        return;
    }
    uint32_t i = s->items[depth];
    uint64_t tries[SEARCH_CANDIDATES];
    uint32_t n = candidates(s, i, s->raw, tries);
    for (uint32_t k = 0; k < n && s->best > in->enough && s->visits < in->search; k++) {
        uint64_t end = tries[k] + in->pages[i];
        if ((end > arena ? end : arena) >= s->best)
            break; /* later offsets end higher */
        s->visits++;
        put(s, i, tries[k]);
        descend(s, depth + 1, end > arena ? end : arena);
        take_back(s, i);
    }
}

void gm_place_search(const gm_place_input_t *in, uint64_t *offset, uint64_t *best) {
    size_t units = in->unit_first ? in->unit_first[in->count] : in->count;
    if (units > SEARCH_UNITS_MAX)
        return;
    search_t s = {.in = in, .best = *best, .best_offset = offset};
    s.items = malloc(((size_t)in->count + 1) * sizeof *s.items);
    s.offset = calloc((size_t)in->count + 1, sizeof *s.offset);
    s.unit_lo = malloc((units + 1) * sizeof *s.unit_lo);
    s.placed = calloc(in->words + 1, sizeof *s.placed);
    s.raw = malloc((1 + 4 * units * units) * sizeof *s.raw);
    if (s.items && s.offset && s.unit_lo && s.placed && s.raw) { /* else the orders' stay */
        uint64_t arena = 0;
        for (uint32_t i = 0; i < in->count; i++) {
            if (in->pages[i] == 0)
                continue;
            if (in->fixed && in->fixed[i] != GM_PLACE_FREE) {
                put(&s, i, in->fixed[i]);
                arena = in->fixed[i] + in->pages[i] > arena ? in->fixed[i] + in->pages[i] : arena;
            } else {
                s.items[s.count++] = i;
            }
        }
        /* Topological order: by the rank of each item's earliest allocation, then index. */
        for (uint32_t k = 1; k < s.count; k++) {
            uint32_t x = s.items[k], p = k;
            for (; p > 0 && in->start[s.items[p - 1]] > in->start[x]; p--)
                s.items[p] = s.items[p - 1];
            s.items[p] = x;
        }
        descend(&s, 0, arena);
        *best = s.best;
    }
    free(s.items);
    free(s.offset);
    free(s.unit_lo);
    free(s.placed);
    free(s.raw);
}
