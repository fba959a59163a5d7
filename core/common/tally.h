/* Counters each thread adds to without an atomic read-modify-write: the statistics (stats.h) and
 * the calls of every hooked driver entry point, which every such call counts while the statistics
 * will be shown (shim/interpose/exports.c). A shared counter
 * costs each call a locked add, and threads calling at once pull its cache line back and forth.
 *
 * Each thread counts into a block of its own (made at its first count, listed for readers); only
 * the owner writes it, by a relaxed load and store, and readers load it relaxed. A thread that
 * ends adds its block to the totals of ended threads (its key's destructor) and frees it. A sum
 * is those totals plus every listed block. */
#ifndef GRAPHMEM_TALLY_H
#define GRAPHMEM_TALLY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Counters in a block: room for the statistics and the hook list's calls (the shim checks its
 * hook count against GM_TALLY_SLOTS at compile time). */
#define GM_TALLY_SLOTS 288

typedef struct gm_tally gm_tally_t;
struct gm_tally {
    gm_tally_t *prev, *next;
    _Atomic uint64_t counts[GM_TALLY_SLOTS];
};

extern _Thread_local gm_tally_t *gm_tally_mine;
/* The calling thread's block, made and listed now; NULL without memory (then counts go to the
 * shared totals, atomically). */
gm_tally_t *gm_tally_start(void);
void gm_tally_add_shared(size_t slot, uint64_t n);

static inline void gm_tally_add(size_t slot, uint64_t n) {
    gm_tally_t *t = gm_tally_mine;
    if (__builtin_expect(t == NULL, 0) && (t = gm_tally_start()) == NULL) {
        gm_tally_add_shared(slot, n);
        return;
    }
    uint64_t now = atomic_load_explicit(&t->counts[slot], memory_order_relaxed);
    atomic_store_explicit(&t->counts[slot], now + n, memory_order_relaxed);
}

/* The count of every thread, ended ones included. */
uint64_t gm_tally_sum(size_t slot);
/* In a forked child (one thread): every count starts again from zero, the parent's other
 * threads' blocks go. */
void gm_tally_reset_after_fork(void);
/* At unload: ending threads no longer call into the library. */
void gm_tally_fini(void);

#endif
