/* A capturing stream's frontier lock: graphmem's captured marker against every other thread's call
 * on the same stream (shim/README.md, "One capturing stream, several threads").
 *
 * The driver appends a captured node after the stream's whole frontier and makes it the frontier
 * in one step. graphmem's marker takes three calls (the capture query, the empty node, the SET of
 * the frontier to it), so what another thread enqueued into the stream between the query and the
 * SET would drop out of the stream's order. The marker's calls hold the stream's lock EXCLUSIVE
 * (shim/hooks/alloc_hooks.c, only on a stream that captures); every other call that enqueues into
 * the stream, changes its capture dependencies or reads them holds it SHARED, taken by its exported
 * entry (interpose/exports.c, from hooks.def). Only while a capture is in flight and the engine
 * runs: without either no marker can be made.
 *
 * Per stream exactly: a call waits only for calls on its own stream, so one that blocks in the
 * driver holds up no other stream. A waiting EXCLUSIVE keeps new SHARED calls on its stream back.
 * A thread holds at most one lock, taken at an entry before any other lock of graphmem's, and
 * nothing waits for one while holding another: every other lock is inner to it. */
#ifndef GRAPHMEM_FRONTIER_LOCK_H
#define GRAPHMEM_FRONTIER_LOCK_H

#include "shim.h"

typedef enum gm_frontier_hold_kind {
    GM_FRONTIER_SHARED,
    GM_FRONTIER_EXCLUSIVE,
    /* An entry whose hook locks for itself (the captured allocations and frees): the entry takes
     * no lock, and only its idle path, which forwards without the hook, takes the mark away
     * afterwards (gm_frontier_after_unlocked). */
    GM_FRONTIER_NONE,
} gm_frontier_hold_kind_t;

/* One call's hold, on its own stack, listed on the stream's stripe while it waits or holds. */
typedef struct gm_frontier_hold {
    CUstream stream;
    gm_frontier_hold_kind_t kind;
    bool holding; /* an EXCLUSIVE waits (false) until no other call holds the stream */
    bool fast;    /* held through the stripe's word, not its list (frontier_lock.c) */
    /* EXCLUSIVE: the stream's mark was this thread's when the hold was taken (gm_frontier_mark) */
    bool marked_mine;
    struct gm_frontier_hold *prev, *next;
} gm_frontier_hold_t;

/* Whether a call on `stream` takes the lock now. A default stream never does: the per-thread one
 * is the calling thread's own, and the legacy one cannot capture. Relaxed loads: a call that reads
 * no capture races with a capture's begin in another thread, and could not know whether it is in
 * the graph at all; whatever orders a call after the begin also orders it after the counter's
 * rise, which comes before the driver's begin (hooks/capture_hooks.c). An EXCLUSIVE one does not
 * wait for the engine: a captured allocation starts it. */
static inline bool gm_frontier_lock_needed(CUstream stream, gm_frontier_hold_kind_t kind) {
    if (stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD)
        return false;
    return atomic_load_explicit(&gm_shim_hot.captures_in_flight, memory_order_relaxed) != 0 &&
           (kind == GM_FRONTIER_EXCLUSIVE ||
            atomic_load_explicit(&gm_shim_hot.engine, memory_order_relaxed) != NULL);
}

/* Waits for and takes `stream`'s lock. The waits are no cancellation point. A thread cancelled in
 * a driver call made under the lock lets it go as the cancellation unwinds: every holder keeps its
 * hold in a cleanup variable (the shim is compiled with -fexceptions). */
void gm_frontier_lock(gm_frontier_hold_t *hold, CUstream stream, gm_frontier_hold_kind_t kind);
/* Takes `stream`'s lock only if that needs no wait (the stripe's word is free, or holds the stream
 * SHARED for a SHARED call); false, and nothing held, otherwise. */
bool gm_frontier_try_lock(gm_frontier_hold_t *hold, CUstream stream, gm_frontier_hold_kind_t kind);
void gm_frontier_unlock(gm_frontier_hold_t *hold);

/* A frontier already known (shim/README.md, "A frontier already known"). A marker that has just
 * made its node the stream's frontier marks the stream, holding it EXCLUSIVE, as left by this
 * thread. Any later hold on the stream takes the mark away: a SHARED one as it is taken (whatever
 * its call does may change the frontier), an EXCLUSIVE one too, noting in `marked_mine` whether
 * the mark was the taking thread's. The mark is the stripe's, shared by its streams: a hold whose
 * `marked_mine` is set knows that no hold on any of them came since this thread's last mark, and
 * when the thread made that mark on this stream (the caller keeps which), that no call on the
 * stream reached graphmem since. Another stream's hold only takes a mark away too early. */
void gm_frontier_mark(gm_frontier_hold_t *hold);
/* Takes `stream`'s mark away without a hold (gm_frontier_after_unlocked). */
void gm_frontier_unmark(CUstream stream);

/* A call on `stream` made without the lock, because no capture was in flight or no engine ran
 * when it began: a capture may have begun on the stream meanwhile and the call landed in it,
 * after a marker whose thread would take that marker for the frontier. Its mark goes when a
 * capture is in flight now. Whatever ordered the call into the capture (the driver's own lock,
 * taken after the begin's rise of the count) makes that rise visible here. */
static inline void gm_frontier_after_unlocked(CUstream stream) {
    if (stream != NULL && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD &&
        atomic_load_explicit(&gm_shim_hot.captures_in_flight, memory_order_relaxed) != 0)
        gm_frontier_unmark(stream);
}

/* Captures that begin or end (an end on a capture's origin takes its side streams' capture with
 * it: unjoined, they capture nothing after it and the graph is gone), streams destroyed, contexts
 * ended and a fork: none of these is seen by holds on every stream it touches. Each raises this
 * count before and after the driver's call (gm_frontier_capture_change_begins / _ends), and a
 * frontier known from before a raise, or read while a change was under way, is not used. */
void gm_frontier_capture_change_begins(void);
void gm_frontier_capture_change_ends(void);
uint64_t gm_frontier_capture_changes(void);

/* The cuda.h whose every entry taking a stream is listed in hooks.def (checked by hand against
 * its functions). A frontier is kept only with a driver no newer than this: a newer one may have
 * stream entries graphmem does not export. */
#define GM_HOOKS_CUDA_VERSION 13000

#endif
