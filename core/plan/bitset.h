/* Fixed-width bit rows stored as arrays of 64-bit words, and the word-level operations the planner
 * needs on them. A matrix is `rows` consecutive rows of `gm_bits_words(cols)` words each, so a row
 * is a plain pointer and every operation stays a tight loop over words. */
#ifndef GRAPHMEM_BITSET_H
#define GRAPHMEM_BITSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline size_t gm_bits_words(size_t bits) {
    return (bits + 63) / 64;
}

static inline void gm_bits_set(uint64_t *row, size_t bit) {
    row[bit / 64] |= 1ull << (bit % 64);
}

static inline void gm_bits_clear(uint64_t *row, size_t bit) {
    row[bit / 64] &= ~(1ull << (bit % 64));
}

static inline bool gm_bits_test(const uint64_t *row, size_t bit) {
    return (row[bit / 64] >> (bit % 64)) & 1u;
}

static inline void gm_bits_or(uint64_t *dst, const uint64_t *src, size_t words) {
    for (size_t w = 0; w < words; w++)
        dst[w] |= src[w];
}

/* True when any bit of [lo, hi) is set. */
static inline bool gm_bits_any_range(const uint64_t *row, size_t lo, size_t hi) {
    if (lo >= hi)
        return false;
    size_t wl = lo / 64, wh = (hi - 1) / 64;
    uint64_t first = ~0ull << (lo % 64);
    uint64_t last = ~0ull >> (63 - (hi - 1) % 64);
    if (wl == wh)
        return (row[wl] & first & last) != 0;
    if (row[wl] & first)
        return true;
    for (size_t w = wl + 1; w < wh; w++)
        if (row[w])
            return true;
    return (row[wh] & last) != 0;
}

/* Visits set bits in increasing order: `for (size_t w = 0; w < words; w++) for (uint64_t b =
 * row[w]; b; b &= b - 1) use(w * 64 + gm_bits_ctz(b));` keeps the cost proportional to the set
 * bits plus the words. */
static inline unsigned gm_bits_ctz(uint64_t word) {
    return (unsigned)__builtin_ctzll(word);
}

#endif
