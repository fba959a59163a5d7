/* Offsets of items in a page arena such that conflicting items never overlap: dynamic storage
 * allocation on a conflict graph (NP-hard), solved by several greedy orders, keeping the
 * smallest arena (as XLA's ChooseBestHeapAlgorithm does).
 *
 * An item may be made of units: page ranges at fixed places inside it, each with conflicts of
 * its own (a chunk of packed allocations, whose pages are used by different allocations at
 * different times). Units conflict, not items: another item may take pages of a chunk whose
 * allocations there it never meets, and the chunk moves as one piece. */
#ifndef GRAPHMEM_PLACE_H
#define GRAPHMEM_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef struct gm_place_input {
    uint32_t count;
    const uint64_t *pages; /* per item; 0 = not placed (offset 0) */
    /* Units: item i holds units [unit_first[i], unit_first[i + 1]), unit u covering pages
     * [unit_at[u], unit_at[u] + unit_pages[u]) of its item. unit_first NULL: unit i is item i,
     * all of its pages. */
    const uint32_t *unit_first;
    const uint64_t *unit_at, *unit_pages;
    const uint64_t *conflict; /* one row of `words` words per unit: bit v of row u = u, v
                               * conflict */
    size_t words;
    const uint64_t *start; /* per item: topological rank of its earliest allocation */
    const uint64_t *fixed; /* per item: a given offset, or GM_PLACE_FREE; may be NULL */
    uint64_t barrier;      /* no item may straddle this page offset (0 = none) */
    uint64_t enough;   /* an arena this small cannot be beaten (a lower bound): stop trying other
                        * orders once one reaches it (0 = try every order) */
    bool no_greedy;    /* skip the greedy orders (the caller knows what they give) */
    uint32_t shuffles; /* further orders tried after the greedy ones: the topological order with
                        * neighbours swapped at random (a fixed seed: plans are repeatable) */
    uint32_t search;   /* then a depth-first search over offsets visiting at most this many
                        * (place_search.c; 0 = none): for few items only (none beyond 256
                        * units) */
    uint64_t beat;     /* only an arena smaller than this is wanted: an order stops once it
                        * reaches it, and when none does, *arena_out is `beat` and the offsets
                        * are all 0 (0 = any) */
} gm_place_input_t;

#define GM_PLACE_FREE UINT64_MAX

/* Writes offset_out[i] for every item and the arena size (the highest end). */
gm_status_t gm_place(const gm_place_input_t *input, uint64_t *offset_out, uint64_t *arena_out);

/* The units of the items, read the same way by the orders (place.c) and the search
 * (place_search.c). Units of item i: [gm_place_first_unit(in, i), gm_place_first_unit(in,
 * i + 1)). */
static inline uint32_t gm_place_first_unit(const gm_place_input_t *in, uint32_t item) {
    return in->unit_first ? in->unit_first[item] : item;
}

/* Where unit u starts in its item, in pages. */
static inline uint64_t gm_place_unit_at(const gm_place_input_t *in, uint32_t unit) {
    return in->unit_first ? in->unit_at[unit] : 0;
}

static inline uint64_t gm_place_unit_pages(const gm_place_input_t *in, uint32_t unit) {
    return in->unit_first ? in->unit_pages[unit] : in->pages[unit];
}

/* Item i's units at `offset`: where each starts (`unit_lo`, per unit) and that it is placed (bit
 * row `placed`). */
static inline void gm_place_put_units(const gm_place_input_t *in, uint32_t i, uint64_t offset,
                                      uint64_t *unit_lo, uint64_t *placed) {
    for (uint32_t u = gm_place_first_unit(in, i); u < gm_place_first_unit(in, i + 1); u++) {
        unit_lo[u] = offset + gm_place_unit_at(in, u);
        placed[u / 64] |= 1ull << (u % 64);
    }
}

/* gm_place's last try (place_search.c): with `best` the smallest arena its orders reached (or
 * `beat`, when none beat it) and `offset` their offsets (per item), a depth-first search over
 * offsets that visits at most in->search of them; offsets and *best are replaced when it finds a
 * smaller arena. Out of host memory, it finds nothing. */
void gm_place_search(const gm_place_input_t *in, uint64_t *offset, uint64_t *best);

#endif
