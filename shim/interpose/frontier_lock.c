/* The frontier locks (frontier_lock.h). Streams hash to 256 stripes. A stripe has two ways in:
 *
 * - The fast way, one word: the stream (its low 48 bits), how many hold it and whether the one
 *   holder is EXCLUSIVE. A call takes it with one compare-and-swap when the word is free, or
 *   holds its own stream SHARED and it wants SHARED; it lets go with another. A capture's calls,
 *   one thread on one stream, never go further: two locked read-modify-writes a call, where a mutex
 *   and a condition cost twice that (a captured allocation and free cost 50 ns more on the mock).
 * - The slow way, a mutex over a list of holds, each on its holder's stack, and a condition for
 *   every wait. A call goes there when the word holds another stream of the stripe, or a mode that
 *   excludes it, or when another call is there already: while any call uses the slow way, the
 *   word's SLOW bit keeps every new call out of the fast way. A call there waits only for holds of
 *   its own stream, in the list or in the word; the last fast holder to let go of a word that has
 *   SLOW set wakes the waiters.
 *
 * A stream whose handle does not fit in 48 bits always takes the slow way. */
#include "frontier_lock.h"

#include <pthread.h>

#define STRIPES 256
#define STREAM_BITS 48
#define STREAM_MASK ((1ull << STREAM_BITS) - 1)
#define ONE_HOLDER (1ull << STREAM_BITS)
#define COUNT_MASK (((1ull << 14) - 1) << STREAM_BITS)
#define EXCLUSIVE_BIT (1ull << 62)
#define SLOW_BIT (1ull << 63)

typedef struct stripe {
    _Alignas(64) _Atomic uint64_t word;
    _Atomic uint64_t mark; /* gm_frontier_mark's: the marking thread's token, 0 when none */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    gm_frontier_hold_t *holds; /* the slow way's */
    unsigned slow_calls; /* calls on the slow way, waiting or holding: SLOW is set meanwhile */
    unsigned waiting;    /* calls waiting on `changed` */
} stripe_t;

/* Initialized statically (a range designator, GNU C, accepted by gcc and clang in C11 mode): a
 * fast holder that finds SLOW set wakes waiters through a mutex nothing else may have set up. */
static stripe_t stripes[STRIPES] = {
    [0 ... STRIPES - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER}};

static stripe_t *stripe_of(CUstream stream) {
    uint64_t key = (uint64_t)(uintptr_t)stream;
    return &stripes[(key * 0x9E3779B97F4A7C15ull) >> 56];
}

static uint64_t holders(uint64_t word) {
    return (word & COUNT_MASK) >> STREAM_BITS;
}

/* ---- the fast way --------------------------------------------------------------------------- */

static bool fast_lock(stripe_t *s, gm_frontier_hold_t *hold) {
    uint64_t key = (uint64_t)(uintptr_t)hold->stream;
    if ((key & ~STREAM_MASK) != 0)
        return false;
    uint64_t word = atomic_load_explicit(&s->word, memory_order_relaxed);
    for (;;) {
        uint64_t next;
        if (word == 0)
            next = key | ONE_HOLDER | (hold->kind == GM_FRONTIER_EXCLUSIVE ? EXCLUSIVE_BIT : 0);
        else if (hold->kind == GM_FRONTIER_SHARED && (word & (SLOW_BIT | EXCLUSIVE_BIT)) == 0 &&
                 (word & STREAM_MASK) == key && (word & COUNT_MASK) != COUNT_MASK)
            next = word + ONE_HOLDER;
        else
            return false;
        if (atomic_compare_exchange_weak_explicit(&s->word, &word, next, memory_order_acquire,
                                                  memory_order_relaxed))
            return true;
    }
}

static void fast_unlock(stripe_t *s) {
    uint64_t word = atomic_load_explicit(&s->word, memory_order_relaxed), next;
    do
        next = holders(word) == 1 ? word & SLOW_BIT : word - ONE_HOLDER;
    while (!atomic_compare_exchange_weak_explicit(&s->word, &word, next, memory_order_release,
                                                  memory_order_relaxed));
    if ((next & SLOW_BIT) != 0 && holders(next) == 0) {
        pthread_mutex_lock(&s->lock);
        if (s->waiting != 0)
            pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
    }
}

/* ---- the slow way --------------------------------------------------------------------------- */

/* Whether another hold on `hold`'s stream keeps it waiting: for SHARED, an EXCLUSIVE one waiting
 * or holding (writers first, so a stream of launches cannot starve a marker); for EXCLUSIVE, a
 * SHARED one or an EXCLUSIVE one holding. The word's holders count as holds of its stream. */
static bool must_wait(const stripe_t *s, const gm_frontier_hold_t *hold) {
    uint64_t word = atomic_load_explicit(&s->word, memory_order_acquire);
    if (holders(word) != 0 && (word & STREAM_MASK) == (uint64_t)(uintptr_t)hold->stream &&
        (hold->kind == GM_FRONTIER_EXCLUSIVE || (word & EXCLUSIVE_BIT) != 0))
        return true;
    for (const gm_frontier_hold_t *h = s->holds; h != NULL; h = h->next) {
        if (h == hold || h->stream != hold->stream)
            continue;
        if (hold->kind == GM_FRONTIER_SHARED ? h->kind == GM_FRONTIER_EXCLUSIVE
                                             : h->kind == GM_FRONTIER_SHARED || h->holding)
            return true;
    }
    return false;
}

static void list_add(stripe_t *s, gm_frontier_hold_t *hold) {
    hold->prev = NULL;
    hold->next = s->holds;
    if (s->holds != NULL)
        s->holds->prev = hold;
    s->holds = hold;
}

static void list_remove(stripe_t *s, gm_frontier_hold_t *hold) {
    if (hold->prev != NULL)
        hold->prev->next = hold->next;
    else
        s->holds = hold->next;
    if (hold->next != NULL)
        hold->next->prev = hold->prev;
}

static void slow_lock(stripe_t *s, gm_frontier_hold_t *hold) {
    pthread_mutex_lock(&s->lock);
    if (s->slow_calls++ == 0)
        atomic_fetch_or_explicit(&s->word, SLOW_BIT, memory_order_seq_cst);
    if (hold->kind == GM_FRONTIER_EXCLUSIVE)
        list_add(s, hold); /* waiting, it already keeps new SHARED calls back */
    if (must_wait(s, hold)) {
        /* pthread_cond_wait is a cancellation point, and a thread cancelled in it would leave
         * its EXCLUSIVE hold listed. */
        int cancel_state;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
        do {
            s->waiting++;
            pthread_cond_wait(&s->changed, &s->lock);
            s->waiting--;
        } while (must_wait(s, hold));
        pthread_setcancelstate(cancel_state, NULL);
    }
    hold->holding = true;
    if (hold->kind == GM_FRONTIER_SHARED)
        list_add(s, hold);
    pthread_mutex_unlock(&s->lock);
}

static void slow_unlock(stripe_t *s, gm_frontier_hold_t *hold) {
    pthread_mutex_lock(&s->lock);
    list_remove(s, hold);
    if (--s->slow_calls == 0)
        atomic_fetch_and_explicit(&s->word, ~SLOW_BIT, memory_order_release);
    if (s->waiting != 0)
        pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

/* ---- the marks of known frontiers ---------------------------------------------------------- */

/* A thread's token: the address of a thread-local byte, distinct among live threads and never 0.
 * A thread that reuses a dead one's address starts with no known frontier of its own. */
static _Thread_local char token_anchor;
static _Atomic uint64_t capture_changes;

static uint64_t token(void) {
    return (uint64_t)(uintptr_t)&token_anchor;
}

/* Taking a hold takes the stream's mark away (frontier_lock.h); the mark is read after the hold
 * is taken, so it sees every mark and removal made under holds of the stream before. */
static void take_mark(stripe_t *s, gm_frontier_hold_t *hold) {
    if (hold->kind == GM_FRONTIER_EXCLUSIVE) {
        hold->marked_mine = atomic_exchange_explicit(&s->mark, 0, memory_order_relaxed) == token();
    } else if (atomic_load_explicit(&s->mark, memory_order_relaxed) != 0) {
        atomic_store_explicit(&s->mark, 0, memory_order_relaxed);
    }
}

void gm_frontier_mark(gm_frontier_hold_t *hold) {
    atomic_store_explicit(&stripe_of(hold->stream)->mark, token(), memory_order_relaxed);
}

void gm_frontier_unmark(CUstream stream) {
    stripe_t *s = stripe_of(stream);
    if (atomic_load_explicit(&s->mark, memory_order_relaxed) != 0)
        atomic_store_explicit(&s->mark, 0, memory_order_relaxed);
}

/* Odd while a change is under way (two at once leave it even, but each raise still differs from
 * what a marker read before it). */
void gm_frontier_capture_change_begins(void) {
    atomic_fetch_add_explicit(&capture_changes, 1, memory_order_seq_cst);
}

void gm_frontier_capture_change_ends(void) {
    atomic_fetch_add_explicit(&capture_changes, 1, memory_order_seq_cst);
}

uint64_t gm_frontier_capture_changes(void) {
    return atomic_load_explicit(&capture_changes, memory_order_seq_cst);
}

/* ---- both ----------------------------------------------------------------------------------- */

void gm_frontier_lock(gm_frontier_hold_t *hold, CUstream stream, gm_frontier_hold_kind_t kind) {
    *hold = (gm_frontier_hold_t){stream, kind, false, false, false, NULL, NULL};
    stripe_t *s = stripe_of(stream);
    if (fast_lock(s, hold))
        hold->fast = true;
    else
        slow_lock(s, hold);
    take_mark(s, hold);
}

bool gm_frontier_try_lock(gm_frontier_hold_t *hold, CUstream stream, gm_frontier_hold_kind_t kind) {
    *hold = (gm_frontier_hold_t){stream, kind, false, false, false, NULL, NULL};
    stripe_t *s = stripe_of(stream);
    if (!(hold->fast = fast_lock(s, hold)))
        return false;
    take_mark(s, hold);
    return true;
}

void gm_frontier_unlock(gm_frontier_hold_t *hold) {
    stripe_t *s = stripe_of(hold->stream);
    if (hold->fast)
        fast_unlock(s);
    else
        slow_unlock(s, hold);
}
