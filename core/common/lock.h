/* The engine's locks: a lock whose waiters, once they have waited longer than a patience, go
 * before every thread that arrives after them, and a condition to wait on while holding one
 * (core/README.md, "Patient, then first in line").
 *
 * Why not a glibc mutex: the engine lock and the defer lock are held across the driver's call of a
 * launch, so a thread launching in a loop lets them go for a few instructions between calls and,
 * with a mutex, takes them back before a woken waiter runs, time after time. Why not strict turns
 * (a ticket lock): they hand over at every release, each hand-over waiting for the next thread to
 * run. Here a waiter spins first (most sections last microseconds, and a sleeping waiter's wake-up
 * takes longer than they do), and hands over only once it ran out of patience.
 *
 * Not recursive. Nothing here is a cancellation point: a thread cancelled while it holds or waits
 * for one would hold it for good. */
#ifndef GRAPHMEM_LOCK_H
#define GRAPHMEM_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Under ThreadSanitizer the lock says what it is, so that the sanitizer checks the order in which
 * locks are taken as it did for the mutexes (it sees the atomics inside either way). */
#if defined(__SANITIZE_THREAD__)
#define GM_LOCK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GM_LOCK_TSAN 1
#endif
#endif
#ifdef GM_LOCK_TSAN
#include <sanitizer/tsan_interface.h>
#define GM_LOCK_ANNOTATE(call) call
#else
#define GM_LOCK_ANNOTATE(call) ((void)0)
#endif

/* How long a waiter spins like any other before it counts itself impatient, and how long it spins
 * at each later step before it sleeps: ten to twenty launches' driver calls on an H200 host, where
 * the driver's own capture step waits 30-40 us at its 99.9th percentile beside a launching thread.
 */
#define GM_LOCK_PATIENCE_NS 50000u

typedef struct gm_lock {
    _Atomic uint32_t state;     /* 0: free; 1: held; 2: held, and a waiter may sleep on it */
    _Atomic uint32_t impatient; /* waiters past their patience: while not 0, arrivals stand back */
    _Atomic uint32_t served;    /* raised each time an impatient waiter takes the lock */
} gm_lock_t;

typedef struct gm_cond {
    _Atomic uint32_t seq; /* raised by every broadcast */
} gm_cond_t;

void gm_lock_init(gm_lock_t *lock);
void gm_lock_destroy(gm_lock_t *lock);
/* The waits of gm_lock once the lock was not free at once. */
void gm_lock_wait(gm_lock_t *lock);
/* Wakes a waiter asleep on `state`. */
void gm_lock_wake(gm_lock_t *lock);

/* Step 1: free, and nobody impatient. */
static inline bool gm_lock_take_at_once(gm_lock_t *lock) {
    uint32_t free_state = 0;
    /* Relaxed read of `impatient`: a count read late lets one arrival through ahead of an
     * impatient waiter, which delays its turn by one section. */
    return atomic_load_explicit(&lock->impatient, memory_order_relaxed) == 0 &&
           atomic_compare_exchange_strong_explicit(&lock->state, &free_state, 1,
                                                   memory_order_acquire, memory_order_relaxed);
}

static inline bool gm_trylock(gm_lock_t *lock) {
    GM_LOCK_ANNOTATE(__tsan_mutex_pre_lock(lock, __tsan_mutex_try_lock));
    bool took = gm_lock_take_at_once(lock);
    GM_LOCK_ANNOTATE(__tsan_mutex_post_lock(
        lock, took ? __tsan_mutex_try_lock : __tsan_mutex_try_lock | __tsan_mutex_try_lock_failed,
        0));
    return took;
}

static inline void gm_lock(gm_lock_t *lock) {
    GM_LOCK_ANNOTATE(__tsan_mutex_pre_lock(lock, 0));
    if (!gm_lock_take_at_once(lock))
        gm_lock_wait(lock);
    GM_LOCK_ANNOTATE(__tsan_mutex_post_lock(lock, 0, 0));
}

static inline void gm_unlock(gm_lock_t *lock) {
    GM_LOCK_ANNOTATE(__tsan_mutex_pre_unlock(lock, 0));
    if (atomic_exchange_explicit(&lock->state, 0, memory_order_release) == 2)
        gm_lock_wake(lock);
    GM_LOCK_ANNOTATE(__tsan_mutex_post_unlock(lock, 0));
}

void gm_cond_init(gm_cond_t *cond);
/* Lets `lock` go, sleeps until a broadcast of `cond` made after this call began (or spuriously),
 * and takes `lock` again. The caller holds `lock` and checks its condition in a loop. */
void gm_cond_wait(gm_cond_t *cond, gm_lock_t *lock);
/* Wakes every waiter of `cond`; made with `lock` held, so no waiter misses it. */
void gm_cond_broadcast(gm_cond_t *cond);

#endif
