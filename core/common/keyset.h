/* A set of 64-bit keys that any thread may query without waiting while one writer at a time (the
 * caller serializes writers) inserts and removes: how a launch of a graph graphmem does not serve
 * learns so without taking the engine's lock.
 *
 * Open addressing with linear probing over atomic slots; 0 marks an empty slot and 1 a removed
 * one (reused by later inserts), so keys 0 and 1 cannot be stored. A rebuilt table is published
 * with a store; the one it replaced is freed once no reader can be inside it: each reader counts
 * itself in, on one of several counters spread over cache lines, before it loads the table, and out
 * after its last probe, so a writer that sees every counter at zero after publishing knows that any
 * later reader loads the new table. Until then replaced tables wait on a list (tried again at each
 * write, and freed at fini). */
#ifndef GRAPHMEM_KEYSET_H
#define GRAPHMEM_KEYSET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "status.h"

#define GM_KEYSET_STRIPES 16

typedef struct gm_keyset_table gm_keyset_table_t;

typedef struct gm_keyset_stripe {
    _Alignas(64) atomic_uint readers;
} gm_keyset_stripe_t;

typedef struct gm_keyset {
    _Atomic(gm_keyset_table_t *) table;
    /* Changes with every insert and remove, to a value no set ever had (0: never changed, so
     * empty): what a memo (below) checks. */
    _Atomic uint64_t stamp;
    gm_keyset_table_t *retired; /* replaced tables not yet freed */
    uint32_t count, used;       /* keys, and slots not empty (keys + removed) */
    gm_keyset_stripe_t stripes[GM_KEYSET_STRIPES];
} gm_keyset_t;

/* Writers (serialized by the caller). GM_ERR_OUT_OF_MEMORY when the table cannot grow. */
gm_status_t gm_keyset_insert(gm_keyset_t *set, uint64_t key);
void gm_keyset_remove(gm_keyset_t *set, uint64_t key);
void gm_keyset_fini(gm_keyset_t *set);

/* Any thread, any time: a few loads and two uncontended atomic increments. */
bool gm_keyset_contains(gm_keyset_t *set, uint64_t key);

/* A thread's memo of recent answers: a repeated question (a launch of the same exec) is answered by
 * two loads while the set has not changed since, without the reader counting of
 * gm_keyset_contains. The caller keeps one per thread (thread-local, zeroed); it is not tied to a
 * set, since stamps are unique across sets (but 0, under which nothing is remembered). An answer
 * is reused only while the set's stamp is the one read before the answer was found, so it is the
 * answer gm_keyset_contains would give: a change that completed before the question changed the
 * stamp. */
#define GM_KEYSET_MEMO_WAYS 4
typedef struct gm_keyset_memo {
    struct {
        uint64_t key;
        uint64_t stamp_found; /* the stamp << 1 | the answer */
    } ways[GM_KEYSET_MEMO_WAYS];
} gm_keyset_memo_t;

/* Where the memo keeps the answer for `key`. */
static inline unsigned gm_keyset_memo_way(uint64_t key) {
    return (unsigned)(key >> 4 ^ key >> 10) % GM_KEYSET_MEMO_WAYS;
}

/* The memo's miss: asks the set and remembers the answer in `way` under `stamp`. */
bool gm_keyset_contains_remember(gm_keyset_t *set, uint64_t key, gm_keyset_memo_t *memo,
                                 unsigned way, uint64_t stamp);

static inline bool gm_keyset_contains_memo(gm_keyset_t *set, uint64_t key, gm_keyset_memo_t *memo) {
    uint64_t stamp = atomic_load_explicit(&set->stamp, memory_order_acquire);
    /* A set that never changed is empty: every change restamps before it returns, so none
     * completed before this question (a process that serves no exec yet launches its plain graphs
     * with this load alone). */
    if (stamp == 0)
        return false;
    unsigned way = gm_keyset_memo_way(key);
    if (memo->ways[way].key == key && memo->ways[way].stamp_found >> 1 == stamp)
        return memo->ways[way].stamp_found & 1;
    return gm_keyset_contains_remember(set, key, memo, way, stamp);
}

#endif
