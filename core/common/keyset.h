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

#endif
