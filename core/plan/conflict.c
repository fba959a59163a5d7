#include "conflict.h"

#include <stdlib.h>
#include <string.h>

#include "bitset.h"

/* Row i of the allocation conflict matrix is NOT(before[i] OR after[i]) without bit i, where
 * after is the transpose of before. The backward reachability pass hands out the rows of after
 * one at a time; each conflict row is lifted to groups as soon as it is known, so no n x n matrix
 * beyond `before` is ever stored (for 10,000 allocations another 12.5 MB, whose page faults alone
 * cost several milliseconds). Groups of several allocations collect the union of their members'
 * rows first and are lifted once the pass is over; an allocation that is an extra member of other
 * groups adds its row to theirs too. */
typedef struct lift {
    uint32_t n, m;
    uint32_t singles; /* groups [0, singles) hold exactly allocation g each */
    size_t words, out_words;
    const uint64_t *before;
    const uint32_t *first;
    const uint32_t *group_of; /* allocation -> group, for allocations of the other groups */
    const uint32_t *extra_first, *extra; /* extra members of each group (NULL: none) */
    const uint32_t *in_first, *in;       /* allocation -> the groups it is an extra member of */
    uint64_t *named;                     /* bit row: allocations some group names as extra */
    uint64_t *conflict;                  /* scratch row for a single-allocation group */
    uint64_t *merged; /* one row per other group: the union of its members' rows */
    uint64_t *out;
} lift_t;

/* Row g of `out` from a row over allocations: bits of single-allocation groups copy over word by
 * word (n/64 words per row, not n bit tests). */
static void lift_row(const lift_t *l, const uint64_t *r, uint32_t g) {
    uint64_t *row = l->out + (size_t)g * l->out_words;
    memset(row, 0, l->out_words * sizeof *row);
    size_t full = l->singles / 64;
    memcpy(row, r, full * sizeof *row);
    if (l->singles % 64)
        row[full] = r[full] & (~0ull >> (64 - l->singles % 64));
    /* Past the singles: a row with few set bits marks, for each, its allocation's group and the
     * groups naming it as an extra member (rows of large graphs are sparse: an allocation meets
     * few others). A dense one takes a range test per group, and the set bits of allocations
     * named as extra members mark their groups. A single named allocation marks them too. */
    size_t set = 0;
    for (size_t w = full; w < l->words; w++)
        set += (size_t)__builtin_popcountll(r[w]);
    bool dense = set > l->m - l->singles;
    for (uint32_t h = l->singles; dense && h < l->m; h++)
        if (gm_bits_any_range(r, l->first[h], l->first[h + 1]))
            gm_bits_set(row, h);
    for (size_t w = l->in ? 0 : full; w < l->words; w++) {
        uint64_t b = dense ? (l->named ? r[w] & l->named[w] : 0) : r[w];
        if (w == l->words - 1 && l->n % 64)
            b &= ~0ull >> (64 - l->n % 64);
        for (; b; b &= b - 1) {
            uint32_t a = (uint32_t)(w * 64 + gm_bits_ctz(b));
            if (a >= l->singles && !dense)
                gm_bits_set(row, l->group_of[a]);
            for (uint32_t x = l->in ? l->in_first[a] : 0; l->in && x < l->in_first[a + 1]; x++)
                gm_bits_set(row, l->in[x]);
        }
    }
    gm_bits_clear(row, g);
}

static uint64_t *merged_row(const lift_t *l, uint32_t g) {
    return l->merged + (size_t)(g - l->singles) * l->words;
}

/* Allocation i's conflict row goes straight to its group, or into the union of its group's rows.
 * Its own bit and the bits past n may be set: lift_row reads bits below n only, and bit i lands
 * in i's own group, whose bit it clears. */
static gm_status_t visit(void *ctx, uint32_t i, const uint64_t *after) {
    lift_t *l = ctx;
    const uint64_t *before = l->before + (size_t)i * l->words;
    bool single = i < l->singles;
    uint64_t *row = single ? l->conflict : merged_row(l, l->group_of[i]);
    for (size_t w = 0; w < l->words; w++) {
        uint64_t c = ~(after[w] | before[w]);
        row[w] = single ? c : row[w] | c;
    }
    for (uint32_t x = l->in ? l->in_first[i] : 0; l->in && x < l->in_first[i + 1]; x++) {
        uint64_t *other = merged_row(l, l->in[x]);
        for (size_t w = 0; w < l->words; w++)
            other[w] |= ~(after[w] | before[w]);
    }
    if (single)
        lift_row(l, row, i);
    return GM_OK;
}

/* The inverse of the extra lists: for each allocation, the groups naming it (counting sort). */
static gm_status_t invert_extras(lift_t *l, uint32_t n, uint32_t **in_first, uint32_t **in) {
    uint32_t total = l->extra_first[l->m];
    *in_first = calloc((size_t)n + 2, sizeof **in_first);
    *in = malloc(((size_t)total + 1) * sizeof **in);
    l->named = calloc(l->words + 1, sizeof *l->named);
    if (!*in_first || !*in || !l->named)
        return GM_ERR_OUT_OF_MEMORY;
    for (uint32_t x = 0; x < total; x++) {
        if (l->extra[x] >= n)
            return GM_ERR_INVALID_VALUE;
        (*in_first)[l->extra[x] + 2]++;
        gm_bits_set(l->named, l->extra[x]);
    }
    for (uint32_t a = 0; a < n; a++)
        (*in_first)[a + 2] += (*in_first)[a + 1];
    for (uint32_t g = 0; g < l->m; g++)
        for (uint32_t x = l->extra_first[g]; x < l->extra_first[g + 1]; x++)
            (*in)[(*in_first)[l->extra[x] + 1]++] = g;
    l->in_first = *in_first;
    l->in = *in;
    return GM_OK;
}

gm_status_t gm_conflict_groups(const gm_dag_t *dag, uint32_t n, const uint32_t *alloc_node,
                               const uint32_t *free_node, const bool *proper,
                               const uint64_t *before, uint32_t m, const uint32_t *first,
                               const uint32_t *extra_first, const uint32_t *extra, uint64_t *out) {
    lift_t l = {.n = n,
                .m = m,
                .words = gm_bits_words(n),
                .out_words = gm_bits_words(m),
                .before = before,
                .first = first,
                .extra_first = extra_first,
                .extra = extra_first ? extra : NULL,
                .out = out};
    if (m == 0 ? n != 0 : (first[0] != 0 || first[m] != n))
        return GM_ERR_INVALID_VALUE;
    for (uint32_t g = 0; g < m; g++)
        if (first[g] > first[g + 1] || (l.extra && extra_first[g] > extra_first[g + 1]))
            return GM_ERR_INVALID_VALUE;
    if (l.extra && m && extra_first[0] != 0)
        return GM_ERR_INVALID_VALUE;
    memset(out, 0, (size_t)m * l.out_words * sizeof *out);
    if (n == 0)
        return GM_OK;
    while (l.singles < m && first[l.singles] == l.singles &&
           first[l.singles + 1] == l.singles + 1 &&
           (!l.extra || extra_first[l.singles] == extra_first[l.singles + 1]))
        l.singles++;
    uint32_t *group_of = malloc((size_t)n * sizeof *group_of), *in_first = NULL, *in = NULL;
    l.conflict = malloc(l.words * sizeof *l.conflict);
    l.merged = calloc((size_t)(m - l.singles) * l.words + 1, sizeof *l.merged);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!group_of || !l.conflict || !l.merged ||
        (l.extra && (st = invert_extras(&l, n, &in_first, &in)) != GM_OK))
        goto out;
    for (uint32_t g = 0; g < m; g++)
        for (uint32_t a = first[g]; a < first[g + 1]; a++)
            group_of[a] = g;
    l.group_of = group_of;
    st = gm_dag_alloc_after_free(dag, n, alloc_node, free_node, proper, visit, &l);
    for (uint32_t g = l.singles; g < m && st == GM_OK; g++)
        lift_row(&l, merged_row(&l, g), g); /* a group of extra members only has an empty range */
out:
    free(group_of);
    free(in_first);
    free(in);
    free(l.named);
    free(l.conflict);
    free(l.merged);
    return st;
}
