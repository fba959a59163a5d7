#include "conflict.h"

#include <stdlib.h>
#include <string.h>

#include "bitset.h"

gm_status_t gm_conflict_build(uint32_t n, const uint64_t *before, const uint64_t *after,
                              uint64_t *conflict) {
    size_t words = gm_bits_words(n);
    uint64_t tail = n % 64 ? ~0ull >> (64 - n % 64) : ~0ull;
    for (size_t i = 0; i < n; i++) {
        const uint64_t *b = before + i * words, *a = after + i * words;
        uint64_t *c = conflict + i * words;
        for (size_t w = 0; w < words; w++)
            c[w] = ~(a[w] | b[w]);
        c[words - 1] &= tail;
        gm_bits_clear(c, i);
    }
    return GM_OK;
}

gm_status_t gm_conflict_groups(uint32_t n, const uint64_t *conflict, uint32_t m,
                               const uint32_t *first, uint64_t *out) {
    size_t words = gm_bits_words(n), out_words = gm_bits_words(m);
    if (m == 0)
        return GM_OK;
    /* Groups 0..singles-1 hold exactly allocation g each: their bits copy over word by word, so
     * the common case (one allocation per group) costs n/64 words per row, not n bit tests. */
    uint32_t singles = 0;
    while (singles < m && first[singles] == singles && first[singles + 1] == singles + 1)
        singles++;
    uint64_t *merged = malloc((words ? words : 1) * sizeof *merged);
    if (!merged)
        return GM_ERR_OUT_OF_MEMORY;
    for (uint32_t g = 0; g < m; g++) {
        uint64_t *row = out + (size_t)g * out_words;
        memset(row, 0, out_words * sizeof *row);
        uint32_t lo = first[g], hi = first[g + 1];
        if (lo == hi)
            continue;
        const uint64_t *r = conflict + (size_t)lo * words;
        if (hi - lo > 1) {
            memcpy(merged, r, words * sizeof *merged);
            for (uint32_t a = lo + 1; a < hi; a++)
                gm_bits_or(merged, conflict + (size_t)a * words, words);
            r = merged;
        }
        size_t full = singles / 64;
        memcpy(row, r, full * sizeof *row);
        if (singles % 64)
            row[full] = r[full] & (~0ull >> (64 - singles % 64));
        for (uint32_t h = singles; h < m; h++)
            if (gm_bits_any_range(r, first[h], first[h + 1]))
                gm_bits_set(row, h);
        gm_bits_clear(row, g);
    }
    free(merged);
    return GM_OK;
}
