#include "keyset.h"

#include <stdlib.h>

#define EMPTY 0u
#define REMOVED 1u

struct gm_keyset_table {
    uint32_t mask;
    gm_keyset_table_t *next_retired;
    _Atomic uint64_t slots[];
};

static uint32_t slot_of(uint64_t key, uint32_t mask) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* Stamps of every set: a change takes the next (gm_keyset_t.stamp). */
static _Atomic uint64_t last_stamp;

/* After a change, before the writer returns: a reader that reads the new stamp sees the change. */
static void restamp(gm_keyset_t *set) {
    atomic_store_explicit(&set->stamp, atomic_fetch_add(&last_stamp, 1) + 1, memory_order_release);
}

/* Threads spread over the reader counters in the order they first read. */
static atomic_uint next_stripe;
static _Thread_local unsigned my_stripe_plus_one;

static bool probe(const gm_keyset_table_t *t, uint64_t key) {
    for (uint32_t i = slot_of(key, t->mask);; i = (i + 1) & t->mask) {
        uint64_t k = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (k == key)
            return true;
        if (k == EMPTY)
            return false;
    }
}

bool gm_keyset_contains(gm_keyset_t *set, uint64_t key) {
    if (key <= REMOVED)
        return false;
    if (!my_stripe_plus_one)
        my_stripe_plus_one = atomic_fetch_add(&next_stripe, 1) % GM_KEYSET_STRIPES + 1;
    atomic_uint *readers = &set->stripes[my_stripe_plus_one - 1].readers;
    atomic_fetch_add(readers, 1); /* seq_cst: before the table is loaded, see free_retired */
    const gm_keyset_table_t *t = atomic_load(&set->table);
    bool found = t && probe(t, key);
    atomic_fetch_sub(readers, 1);
    return found;
}

bool gm_keyset_contains_remember(gm_keyset_t *set, uint64_t key, gm_keyset_memo_t *memo,
                                 unsigned way, uint64_t stamp) {
    bool found = gm_keyset_contains(set, key);
    /* Every set that never changed has stamp 0: an answer found under it (a key inserted since
     * the stamp was read) would be taken for any of them. */
    if (stamp == 0)
        return found;
    memo->ways[way].key = key;
    memo->ways[way].stamp_found = stamp << 1 | found;
    return found;
}

/* Frees the replaced tables when no reader is inside any table: a reader that counts itself in
 * later loads the current table. */
static void free_retired(gm_keyset_t *set) {
    if (!set->retired)
        return;
    for (int i = 0; i < GM_KEYSET_STRIPES; i++)
        if (atomic_load(&set->stripes[i].readers))
            return;
    while (set->retired) {
        gm_keyset_table_t *next = set->retired->next_retired;
        free(set->retired);
        set->retired = next;
    }
}

static void put(gm_keyset_table_t *t, uint64_t key) {
    uint32_t i = slot_of(key, t->mask);
    while (atomic_load_explicit(&t->slots[i], memory_order_relaxed) != EMPTY)
        i = (i + 1) & t->mask;
    atomic_store_explicit(&t->slots[i], key, memory_order_relaxed);
}

/* A table of the keys alone, at least 16 slots and at least four per key. */
static gm_status_t rebuild(gm_keyset_t *set) {
    uint32_t cap = 16;
    while (cap < 4 * (set->count + 1))
        cap *= 2;
    gm_keyset_table_t *t = calloc(1, sizeof *t + cap * sizeof t->slots[0]);
    if (!t)
        return GM_ERR_OUT_OF_MEMORY;
    t->mask = cap - 1;
    gm_keyset_table_t *old = atomic_load_explicit(&set->table, memory_order_relaxed);
    for (uint32_t i = 0; old && i <= old->mask; i++) {
        uint64_t k = atomic_load_explicit(&old->slots[i], memory_order_relaxed);
        if (k > REMOVED)
            put(t, k);
    }
    atomic_store(&set->table, t); /* seq_cst: before free_retired reads the counters */
    if (old) {
        old->next_retired = set->retired;
        set->retired = old;
    }
    set->used = set->count;
    return GM_OK;
}

gm_status_t gm_keyset_insert(gm_keyset_t *set, uint64_t key) {
    if (key <= REMOVED)
        return GM_ERR_INVALID_VALUE;
    gm_keyset_table_t *t = atomic_load_explicit(&set->table, memory_order_relaxed);
    if (t && probe(t, key))
        return GM_OK;
    if (!t || 4 * (set->used + 1) > 3 * (t->mask + 1)) {
        gm_status_t st = rebuild(set);
        if (st != GM_OK)
            return st;
        t = atomic_load_explicit(&set->table, memory_order_relaxed);
    }
    free_retired(set);
    /* The first removed or empty slot on the key's path. Reusing a removed slot is safe for a
     * concurrent reader: it stops only at an empty slot, and only a rebuild makes new ones. */
    uint32_t i = slot_of(key, t->mask);
    uint64_t k;
    while ((k = atomic_load_explicit(&t->slots[i], memory_order_relaxed)) > REMOVED)
        i = (i + 1) & t->mask;
    atomic_store_explicit(&t->slots[i], key, memory_order_release);
    set->count++;
    set->used += k == EMPTY;
    restamp(set);
    return GM_OK;
}

void gm_keyset_remove(gm_keyset_t *set, uint64_t key) {
    gm_keyset_table_t *t = atomic_load_explicit(&set->table, memory_order_relaxed);
    if (!t || key <= REMOVED)
        return;
    for (uint32_t i = slot_of(key, t->mask);; i = (i + 1) & t->mask) {
        uint64_t k = atomic_load_explicit(&t->slots[i], memory_order_relaxed);
        if (k == EMPTY)
            return;
        if (k == key) {
            atomic_store_explicit(&t->slots[i], REMOVED, memory_order_release);
            set->count--;
            restamp(set);
            free_retired(set);
            return;
        }
    }
}

void gm_keyset_fini(gm_keyset_t *set) {
    free(atomic_load_explicit(&set->table, memory_order_relaxed));
    atomic_store_explicit(&set->table, NULL, memory_order_relaxed);
    restamp(set);
    while (set->retired) {
        gm_keyset_table_t *next = set->retired->next_retired;
        free(set->retired);
        set->retired = next;
    }
}
