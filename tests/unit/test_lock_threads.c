/* The engine's lock (common/lock.c; core/README.md, "Patient, then first in line"): exclusion,
 * the impatient waiter's turn, and the condition wait, on one CPU and on all. No timing in any
 * check: each waits for the state it needs to see, bounded only by a generous limit that turns a
 * hang into a failure. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "lock.h"
#include "util.h"

#define LIMIT_NS 20000000000ull /* 20 s */

/* ---- exclusion ---------------------------------------------------------------------------------
 * Threads add to a plain counter under the lock, most sections brief, some long enough that the
 * others run out of patience (several impatient at once, others standing back), while signals
 * interrupt their futex waits: every increment counts, the lock ends free with nobody impatient,
 * and ThreadSanitizer sees no race. */

#define ADDERS 4
#define ADDS 20000

typedef struct shared {
    gm_lock_t lock;
    unsigned long count; /* under lock */
    int inside;          /* under lock: threads inside a section, always 1 there */
    bool overlap;
    atomic_int finished; /* adders done */
} shared_t;

static void *add_loop(void *arg) {
    shared_t *s = arg;
    for (int i = 0; i < ADDS; i++) {
        gm_lock(&s->lock);
        s->overlap |= ++s->inside != 1;
        s->count++;
        if (i % 1000 == 0)
            gm_nap(100000); /* 100 us: waiters run out of patience */
        s->inside--;
        gm_unlock(&s->lock);
    }
    atomic_fetch_add(&s->finished, 1);
    return NULL;
}

static void on_signal(int sig) {
    (void)sig;
}

static void test_exclusion(void) {
    shared_t s = {.count = 0};
    gm_lock_init(&s.lock);
    atomic_init(&s.finished, 0);
    struct sigaction action, saved;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal; /* no SA_RESTART: a futex wait returns EINTR */
    sigemptyset(&action.sa_mask);
    REQUIRE(sigaction(SIGUSR1, &action, &saved) == 0);
    pthread_t t[ADDERS];
    int made = 0;
    while (made < ADDERS && pthread_create(&t[made], NULL, add_loop, &s) == 0)
        made++;
    /* Until the adders are done: a signal to each, every 200 us. */
    while (atomic_load(&s.finished) < made) {
        gm_nap(200000);
        for (int i = 0; i < made; i++)
            pthread_kill(t[i], SIGUSR1);
    }
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    sigaction(SIGUSR1, &saved, NULL);
    REQUIRE(made == ADDERS);
    printf("impatient waiters served: %u\n", atomic_load(&s.lock.served));
    CHECK(s.count == (unsigned long)ADDERS * ADDS);
    CHECK(!s.overlap);
    CHECK(atomic_load(&s.lock.served) > 0);
    CHECK(atomic_load(&s.lock.state) == 0);
    CHECK(atomic_load(&s.lock.impatient) == 0);
    gm_lock_destroy(&s.lock);
}

/* ---- the impatient waiter goes first -----------------------------------------------------------
 * This thread holds the lock until the other thread's wait for it ran out of patience, lets it go
 * and at once asks for it again, as a launching loop does: the lock goes to the waiter first. With
 * a mutex that lets any thread take it (glibc's), this thread took it back first nearly every
 * time. */

#define TURNS 20

typedef struct turn {
    gm_lock_t lock;
    atomic_int waiter_sections; /* written under lock by the waiter */
    atomic_bool go;             /* the waiter may ask for the lock again */
} turn_t;

static void *wait_once_per_go(void *arg) {
    turn_t *t = arg;
    for (int i = 0; i < TURNS; i++) {
        while (!atomic_load(&t->go))
            gm_nap(1000);
        atomic_store(&t->go, false);
        gm_lock(&t->lock);
        atomic_fetch_add(&t->waiter_sections, 1);
        gm_unlock(&t->lock);
    }
    return NULL;
}

static void test_impatient_goes_first(void) {
    turn_t t;
    gm_lock_init(&t.lock);
    atomic_init(&t.waiter_sections, 0);
    atomic_init(&t.go, false);
    pthread_t w;
    REQUIRE(pthread_create(&w, NULL, wait_once_per_go, &t) == 0);
    int first = 0, impatient = 0;
    for (int i = 0; i < TURNS; i++) {
        gm_lock(&t.lock);
        atomic_store(&t.go, true);
        uint64_t limit = gm_now_ns() + LIMIT_NS;
        while (atomic_load(&t.lock.impatient) == 0 && gm_now_ns() < limit)
            gm_nap(10000);
        impatient += atomic_load(&t.lock.impatient) == 1;
        gm_unlock(&t.lock);
        gm_lock(&t.lock);
        first += atomic_load(&t.waiter_sections) == i + 1;
        gm_unlock(&t.lock);
        while (atomic_load(&t.waiter_sections) < i + 1 && gm_now_ns() < limit)
            gm_nap(1000);
    }
    pthread_join(w, NULL);
    printf("the waiter impatient %d times of %d, first every time it was: %d\n", impatient, TURNS,
           first);
    CHECK(impatient == TURNS);
    CHECK(first == TURNS);
    CHECK(atomic_load(&t.lock.impatient) == 0);
    gm_lock_destroy(&t.lock);
}

/* ---- the condition ------------------------------------------------------------------------------
 * A waiter checks its condition under the lock and waits; another thread changes it under the lock
 * and broadcasts. The waiter sees the change and holds the lock again when it returns. */

typedef struct flagged {
    gm_lock_t lock;
    gm_cond_t changed;
    int value; /* under lock */
} flagged_t;

static void *raise_values(void *arg) {
    flagged_t *f = arg;
    for (int i = 0; i < 1000; i++) {
        gm_lock(&f->lock);
        f->value++;
        gm_cond_broadcast(&f->changed);
        gm_unlock(&f->lock);
    }
    return NULL;
}

static void test_condition(void) {
    flagged_t f = {.value = 0};
    gm_lock_init(&f.lock);
    gm_cond_init(&f.changed);
    /* Held before the other thread starts: it can change nothing before the first wait. */
    gm_lock(&f.lock);
    pthread_t t;
    if (pthread_create(&t, NULL, raise_values, &f) != 0) {
        gm_unlock(&f.lock);
        REQUIRE(false);
    }
    int seen = 0, waits = 0;
    while (f.value < 1000) {
        seen = f.value;
        gm_cond_wait(&f.changed, &f.lock);
        CHECK(f.value >= seen);
        waits++;
    }
    gm_unlock(&f.lock);
    pthread_join(t, NULL);
    CHECK(f.value == 1000);
    CHECK(waits >= 1);
    gm_lock_destroy(&f.lock);
}

static void run_all(void) {
    RUN_TEST(test_exclusion);
    RUN_TEST(test_impatient_goes_first);
    RUN_TEST(test_condition);
}

/* The same tests in a child pinned to one CPU before any lock is used: the lock reads the CPU
 * count once, and on one CPU its waiters do not spin (they go straight to the sleeps). */
static bool run_on_one_cpu(void) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            _exit(2);
        printf("-- pinned to one CPU\n");
        run_all();
        fflush(stdout);
        _exit(gm_check_failures ? 1 : 0);
    }
    int status = 0;
    return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

int main(void) {
    CHECK(run_on_one_cpu());
    printf("-- on every CPU this process may use\n");
    run_all();
    return gm_check_summary();
}
