/* A lock taken in turn (a ticket lock), and a condition to wait on while holding it.
 *
 * Why not a pthread mutex: the engine lock and the defer lock are held across the driver's call of
 * a launch, so a thread launching in a loop lets them go for a few instructions between calls. A
 * glibc mutex goes to whoever takes it first, and a thread that wakes from a wait for it takes
 * microseconds to run: the launching thread had it back long before, time after time. On an H200
 * a thread capturing beside one launching two graphs by turns waited up to 1.6 ms for a capture
 * step, and made a quarter of the driver's captures (bench/RESULTS.md, "Turns at the engine's
 * locks"). Here every thread takes a ticket and the lock passes from one ticket to the next: a
 * waiter goes before every thread that asks after it.
 *
 * A waiter spins briefly (most sections last a few microseconds), then sleeps on a futex. Nothing
 * here is a cancellation point. Not recursive. */
#ifndef GRAPHMEM_TURN_LOCK_H
#define GRAPHMEM_TURN_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct gm_turn_lock {
    _Atomic uint32_t next;     /* the next ticket given out */
    _Atomic uint32_t serving;  /* the ticket that holds the lock (free when it equals next) */
    _Atomic uint32_t sleepers; /* waiters asleep on `serving`, or about to be */
} gm_turn_lock_t;

typedef struct gm_turn_cond {
    _Atomic uint32_t seq; /* raised by every broadcast */
} gm_turn_cond_t;

void gm_turn_lock_init(gm_turn_lock_t *lock);
void gm_turn_lock(gm_turn_lock_t *lock);
/* Takes the lock only if nobody holds it or waits for it. */
bool gm_turn_trylock(gm_turn_lock_t *lock);
void gm_turn_unlock(gm_turn_lock_t *lock);
/* Whether nobody holds it (a snapshot). */
bool gm_turn_lock_free(gm_turn_lock_t *lock);

void gm_turn_cond_init(gm_turn_cond_t *cond);
/* Lets `lock` go, sleeps until a broadcast of `cond` made after this call began (or spuriously),
 * and takes `lock` again, in turn. The caller holds `lock` and checks its condition in a loop. */
void gm_turn_wait(gm_turn_cond_t *cond, gm_turn_lock_t *lock);
/* Wakes every waiter of `cond`; made with the lock held, so no waiter misses it. */
void gm_turn_broadcast(gm_turn_cond_t *cond);

#endif
