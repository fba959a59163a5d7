/* Work beside the caller (shim/bridge/side_work.c): every piece of work runs exactly once and has
 * returned when its join returns, from one thread or four at once (each join sees its own result;
 * under ThreadSanitizer a join that returned before the worker finished is a race on it); a start
 * while the worker is busy runs on a thread of its own; the worker is named graphmem-plan; the
 * worker and those threads block the signals sent to the process but not their own faults; a join
 * is no cancellation point; and a child after fork, which has no worker, gets a new one while the
 * parent's is still busy. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "side_work.h"

/* The fork test starts threads in a child of a process with threads, which ThreadSanitizer
 * refuses unless told otherwise (it cannot vouch for the child; the test needs its threads). */
const char *__tsan_default_options(void);
__attribute__((visibility("default"))) const char *__tsan_default_options(void) {
    return "die_after_fork=0";
}

static atomic_ulong runs;

typedef struct job {
    unsigned long input, output;
    pthread_t caller;
    /* False when run elsewhere with SIGUSR1 deliverable (a signal for the process) or SIGSEGV
     * blocked (a fault of the thread's own, which must reach the handlers). */
    bool signals_blocked_elsewhere;
    unsigned spin;
} job_t;

static atomic_ulong runs_on_worker; /* by the thread named graphmem-plan */

static void run_job(void *arg) {
    job_t *j = arg;
    volatile unsigned sink = 0;
    for (unsigned i = 0; i < j->spin; i++)
        sink += i;
    sigset_t now;
    if (!pthread_equal(pthread_self(), j->caller) &&
        (pthread_sigmask(SIG_BLOCK, NULL, &now) != 0 || !sigismember(&now, SIGUSR1) ||
         sigismember(&now, SIGSEGV)))
        j->signals_blocked_elsewhere = false;
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (strcmp(name, "graphmem-plan") == 0)
        atomic_fetch_add(&runs_on_worker, 1);
    j->output = j->input * 3 + 1;
    atomic_fetch_add(&runs, 1);
}

/* `count` start-join rounds; the number of failed checks. */
/* `count` start-join rounds; the number of failed checks. Each round's job and work are on the
 * heap, wiped and freed right after the join: the worker touching either after the join is a use
 * after free under AddressSanitizer and a race under ThreadSanitizer. */
static unsigned rounds(unsigned count, unsigned seed) {
    unsigned failed = 0;
    for (unsigned i = 0; i < count; i++) {
        seed = seed * 1103515245u + 12345u;
        struct {
            job_t job;
            gm_side_work_t work;
        } *r = malloc(sizeof *r);
        if (r == NULL)
            return failed + 1;
        r->job = (job_t){.input = i + seed,
                         .caller = pthread_self(),
                         .signals_blocked_elsewhere = true,
                         .spin = (seed >> 8) % 2000};
        if (!gm_side_start(&r->work, run_job, &r->job))
            run_job(&r->job);
        volatile unsigned sink = 0;
        for (unsigned k = 0; k < (seed >> 16) % 2000; k++) /* the driver's turn */
            sink += k;
        if ((seed >> 4) % 7 == 0)
            sched_yield();
        gm_side_join(&r->work);
        failed += r->job.output != r->job.input * 3 + 1 || !r->job.signals_blocked_elsewhere;
        memset(r, 0xab, sizeof *r);
        free(r);
    }
    return failed;
}

static void test_one_thread(void) {
    atomic_store(&runs, 0);
    CHECK_EQ_U64(rounds(2000, 1), 0);
    CHECK_EQ_U64(atomic_load(&runs), 2000);
}

/* Work the worker took runs on the thread named for ps and gdb; work taken back does not. */
static void test_worker_named(void) {
    atomic_store(&runs_on_worker, 0);
    job_t j = {.input = 9, .caller = pthread_self(), .signals_blocked_elsewhere = true};
    gm_side_work_t w;
    REQUIRE(gm_side_start(&w, run_job, &j));
    CHECK(w.where == GM_SIDE_WORKER);
    for (int i = 0; i < 1000 && atomic_load(&runs) == 0; i++)
        usleep(1000); /* the worker takes it */
    gm_side_join(&w);
    CHECK_EQ_U64(j.output, 28);
    CHECK_EQ_U64(atomic_load(&runs_on_worker), 1);
}

static void *rounds_main(void *arg) {
    return (void *)(uintptr_t)rounds(2000, (unsigned)(uintptr_t)arg);
}

static void test_four_threads(void) {
    atomic_store(&runs, 0);
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        REQUIRE(pthread_create(&t[i], NULL, rounds_main, (void *)(i + 7)) == 0);
    for (int i = 0; i < 4; i++) {
        void *failed;
        pthread_join(t[i], &failed);
        CHECK_EQ_U64((uintptr_t)failed, 0);
    }
    CHECK_EQ_U64(atomic_load(&runs), 8000);
}

/* Work that holds the worker until released. */
static atomic_bool release, holding;

static void hold(void *arg) {
    (void)arg;
    atomic_store(&holding, true);
    while (!atomic_load(&release))
        sched_yield();
}

/* Occupies the worker; a start that finds nothing posted got the worker itself. */
static void occupy(gm_side_work_t *held) {
    atomic_store(&release, false);
    atomic_store(&holding, false);
    REQUIRE(gm_side_start(held, hold, NULL));
    CHECK(held->where == GM_SIDE_WORKER); /* idle after the last test's joins */
    while (!atomic_load(&holding))
        sched_yield();
}

static void test_busy_worker(void) {
    gm_side_work_t held, other;
    occupy(&held);
    job_t j = {.input = 5, .caller = pthread_self(), .signals_blocked_elsewhere = true};
    REQUIRE(gm_side_start(&other, run_job, &j));
    CHECK(other.where == GM_SIDE_THREAD);
    gm_side_join(&other);
    CHECK_EQ_U64(j.output, 16);
    CHECK(j.signals_blocked_elsewhere);
    atomic_store(&release, true);
    gm_side_join(&held);
}

/* A thread with a cancellation pending starts and joins work: the join returns (the work done)
 * and only the next cancellation point ends the thread. */
static atomic_bool joined_before_cancel;

/* Starts and joins work with the thread's cancellation pending; whether the join returned with the
 * work done. A frame of its own, returned from before the cancellation unwinds the thread: frames a
 * cancellation unwinds keep their stack poisoned under AddressSanitizer, which then reports its own
 * write to that stack when the thread ends. */
__attribute__((noinline)) static bool join_with_cancel_pending(gm_side_work_t *held) {
    job_t j = {
        .input = 1, .caller = pthread_self(), .signals_blocked_elsewhere = true, .spin = 100000};
    gm_side_work_t w;
    if (!gm_side_start(&w, run_job, &j))
        run_job(&j);
    gm_side_join(&w);
    if (held != NULL) {
        atomic_store(&release, true);
        gm_side_join(held);
    }
    return j.output == 4;
}

static void *cancelled_main(void *arg) {
    pthread_cancel(pthread_self());
    atomic_store(&joined_before_cancel, join_with_cancel_pending(arg));
    pthread_testcancel();
    return NULL;
}

static void cancelled_join(gm_side_work_t *held) {
    atomic_store(&joined_before_cancel, false);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, cancelled_main, held) == 0);
    void *result;
    pthread_join(t, &result);
    CHECK(result == PTHREAD_CANCELED);
    CHECK(atomic_load(&joined_before_cancel));
}

static void test_join_is_no_cancellation_point(void) {
    cancelled_join(NULL); /* on the worker, or taken back */
    gm_side_work_t held;
    occupy(&held);
    cancelled_join(&held); /* on a thread of its own, and the worker's join */
}

/* fork while the worker is busy: the child's starts get a worker of its own. */
static void test_fork_child_gets_a_new_worker(void) {
    gm_side_work_t held;
    occupy(&held);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        gm_side_forget_after_fork();
        job_t j = {.input = 2, .caller = pthread_self(), .signals_blocked_elsewhere = true};
        gm_side_work_t w;
        bool ok = gm_side_start(&w, run_job, &j) && w.where == GM_SIDE_WORKER;
        gm_side_join(&w);
        _exit(ok && j.output == 7 && rounds(200, 3) == 0 ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    atomic_store(&release, true);
    gm_side_join(&held);
}

int main(void) {
    RUN_TEST(test_one_thread);
    atomic_store(&runs, 0);
    RUN_TEST(test_worker_named);
    RUN_TEST(test_four_threads);
    RUN_TEST(test_busy_worker);
    RUN_TEST(test_join_is_no_cancellation_point);
    RUN_TEST(test_fork_child_gets_a_new_worker);
    return gm_check_summary();
}
