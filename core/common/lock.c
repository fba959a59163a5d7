#include "lock.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

/* Pauses between two reads of the clock while spinning. */
#define CLOCK_EVERY 64u
/* The longest a thread stands back for impatient waiters. One of them takes the lock within a
 * section or a wake-up, far sooner; the bound is for a count left up by a thread that never came
 * back from its wait (cancelled asynchronously, a longjmp out of a signal handler), which would
 * otherwise hold off every thread for good: then each lock costs this much. */
#define STAND_BACK_MAX_NS 50000000u

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Sleeps while *word is `value` (returns at once when it is not, on a wake or on a signal). The
 * raw system call: syscall(2) is no cancellation point, so neither is any wait here. */
static void futex_wait(_Atomic uint32_t *word, uint32_t value) {
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

/* The same, for at most `ns` nanoseconds (below a second). */
static void futex_wait_for(_Atomic uint32_t *word, uint32_t value, uint64_t ns) {
    struct timespec limit = {0, (long)ns};
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, &limit, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int count) {
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

void gm_lock_init(gm_lock_t *lock) {
    atomic_init(&lock->state, 0);
    atomic_init(&lock->impatient, 0);
    atomic_init(&lock->served, 0);
    GM_LOCK_ANNOTATE(__tsan_mutex_create(lock, 0));
}

void gm_lock_destroy(gm_lock_t *lock) {
    (void)lock;
    GM_LOCK_ANNOTATE(__tsan_mutex_destroy(lock, 0));
}

void gm_lock_wake(gm_lock_t *lock) {
    futex_wake(&lock->state, 1);
}

static bool take_if_free(gm_lock_t *lock) {
    uint32_t free_state = 0;
    return atomic_load_explicit(&lock->state, memory_order_relaxed) == 0 &&
           atomic_compare_exchange_strong_explicit(&lock->state, &free_state, 1,
                                                   memory_order_acquire, memory_order_relaxed);
}

/* One step of a spin: a pause, and every CLOCK_EVERY steps a read of the clock. False once
 * `deadline` has passed, after giving the core away once, in case the holder waits for one (more
 * threads than cores). Giving it away at every read cost a fifth of the launches of two threads
 * launching at once on two cores. */
static bool spin_step(unsigned step, uint64_t deadline) {
    relax();
    if (step % CLOCK_EVERY || gm_now_ns() < deadline)
        return true;
    sched_yield();
    return false;
}

/* How long a spin lasts: a patience, or nothing when this process runs on one CPU, where the
 * holder cannot run while a waiter spins (four threads taking turns on one CPU made 12 % fewer
 * launches, eight 28 % fewer, than with glibc's mutexes). Asked once; affinity changed later
 * is not seen. */
static uint64_t spin_ns(void) {
    static _Atomic int cpus; /* 0: not asked yet */
    int n = atomic_load_explicit(&cpus, memory_order_relaxed);
    if (n == 0) {
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 2;
        atomic_store_explicit(&cpus, n > 0 ? n : 2, memory_order_relaxed);
    }
    return n > 1 ? GM_LOCK_PATIENCE_NS : 0;
}

/* Spins for the lock for a patience; true when it took it. */
static bool spin_take(gm_lock_t *lock) {
    uint64_t deadline = gm_now_ns() + spin_ns();
    for (unsigned step = 1;; step++) {
        if (take_if_free(lock))
            return true;
        if (!spin_step(step, deadline))
            return take_if_free(lock);
    }
}

/* Takes the lock however long it takes, asleep. A thread that sleeps leaves `state` at 2, so the
 * release wakes one; one that takes it this way leaves it at 2 too, in case another sleeps. */
static void sleep_take(gm_lock_t *lock) {
    while (atomic_exchange_explicit(&lock->state, 2, memory_order_acquire) != 0)
        futex_wait(&lock->state, 2);
}

/* Stands back while a waiter is impatient, until one of them has taken the lock: spins for a
 * patience (that takes a section or a wake-up), then sleeps. Not until the count is 0: impatient
 * waiters that follow one another could keep it up for as long as they come. */
static void stand_back(gm_lock_t *lock) {
    uint32_t served = atomic_load(&lock->served);
    if (atomic_load(&lock->impatient) == 0)
        return;
    uint64_t start = gm_now_ns(), deadline = start + spin_ns();
    for (unsigned step = 1; atomic_load(&lock->served) == served; step++)
        if (!spin_step(step, deadline))
            break;
    /* Read `impatient` after `served`: a waiter raises `served` only after taking the lock, so a
     * count of 0 read after an unchanged `served` means none is left. */
    while (atomic_load(&lock->served) == served && atomic_load(&lock->impatient) != 0) {
        uint64_t waited = gm_now_ns() - start;
        if (waited >= STAND_BACK_MAX_NS)
            return;
        futex_wait_for(&lock->served, served, STAND_BACK_MAX_NS - waited);
    }
}

void gm_lock_wait(gm_lock_t *lock) {
    stand_back(lock);
    /* Patient: like any other thread. The patience counts from here, after standing back, so that
     * under steady contention a thread hands over at most once a patience, not at every release. */
    if (spin_take(lock))
        return;
    /* Impatient: from now on arrivals (the holder coming back included) stand back, so the lock
     * goes to a thread already waiting for it. Each waiter that gets it and comes back stands
     * back too. */
    atomic_fetch_add(&lock->impatient, 1);
    if (!spin_take(lock))
        sleep_take(lock);
    atomic_fetch_sub(&lock->impatient, 1);
    atomic_fetch_add(&lock->served, 1);
    futex_wake(&lock->served, INT_MAX);
}

void gm_cond_init(gm_cond_t *cond) {
    atomic_init(&cond->seq, 0);
}

void gm_cond_wait(gm_cond_t *cond, gm_lock_t *lock) {
    /* Read under the lock: a broadcast made after the lock goes changes it, so the futex returns.
     */
    uint32_t seq = atomic_load(&cond->seq);
    gm_unlock(lock);
    futex_wait(&cond->seq, seq);
    gm_lock(lock);
}

void gm_cond_broadcast(gm_cond_t *cond) {
    atomic_fetch_add(&cond->seq, 1);
    futex_wake(&cond->seq, INT_MAX);
}
