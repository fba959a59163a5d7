/* Work beside the caller (shim/bridge/side_work.c): every piece of work runs exactly once and has
 * returned when its join returns, from one thread or four at once (each join sees its own result;
 * under ThreadSanitizer a join that returned before the worker finished is a race on it); a start
 * while the worker is busy runs on a thread of its own; the worker is named graphmem-plan; the
 * worker and those threads block the signals sent to the process but not their own faults; a join
 * is no cancellation point; a child after fork, which has no worker, gets a new one while the
 * parent's is still busy; and the worker and those threads run on the CPUs graphmem started with,
 * not only on the one their maker is pinned to, or where their maker may when those CPUs are not
 * allowed. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "interpose/shim.h"
#include "side_work.h"

/* interpose/init.c's answer: the CPUs graphmem started with (NULL: unknown). */
static const cpu_set_t *start_cpus;
const cpu_set_t *gm_start_cpus(void) {
    return start_cpus;
}

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

/* Where the work ran: its thread's CPUs, and whether on the worker or a thread of its own. */
typedef struct placed {
    cpu_set_t cpus;
    pthread_t caller;
    bool elsewhere;
    atomic_bool done;
} placed_t;

static void run_placed(void *arg) {
    placed_t *p = arg;
    sched_getaffinity(0, sizeof p->cpus, &p->cpus);
    p->elsewhere = !pthread_equal(pthread_self(), p->caller);
    atomic_store(&p->done, true);
}

/* In a child (no worker yet, as in a process whose first instantiation this is), graphmem started
 * on `start`: the caller pinned to `pinned` starts work on the worker, then (the worker held) on a
 * thread of its own; each must run on `want`. The child's exit status: 0 when every placement was
 * right. */
static int placements_in_child(const cpu_set_t *start, const cpu_set_t *pinned,
                               const cpu_set_t *want) {
    gm_side_forget_after_fork();
    start_cpus = start;
    if (sched_setaffinity(0, sizeof *pinned, pinned) != 0)
        return 2;
    int wrong = 0;
    for (int round = 0; round < 2; round++) {
        gm_side_work_t held, w;
        if (round == 1)
            occupy(&held);
        placed_t p = {.caller = pthread_self()};
        if (!gm_side_start(&w, run_placed, &p))
            return 3;
        wrong += w.where != (round == 0 ? GM_SIDE_WORKER : GM_SIDE_THREAD);
        for (int i = 0; i < 2000 && !atomic_load(&p.done); i++)
            usleep(1000); /* the worker takes it (a join first would take it back) */
        gm_side_join(&w);
        wrong += !p.elsewhere || !CPU_EQUAL(&p.cpus, want);
        if (round == 1) {
            atomic_store(&release, true);
            gm_side_join(&held);
        }
    }
    return wrong;
}

static int in_child(const cpu_set_t *start, const cpu_set_t *pinned, const cpu_set_t *want) {
    pid_t pid = fork();
    if (pid == 0)
        _exit(placements_in_child(start, pinned, want));
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_threads_run_on_the_start_cpus(void) {
    cpu_set_t all, one;
    REQUIRE(sched_getaffinity(0, sizeof all, &all) == 0);
    if (CPU_COUNT(&all) < 2) {
        printf("  (one CPU allowed: nothing to tell apart, the placement checks are skipped)\n");
        return;
    }
    CPU_ZERO(&one);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &all)) {
            CPU_SET(cpu, &one);
            break;
        }
    /* Started with every allowed CPU, made by a caller pinned to one: on every allowed CPU. */
    CHECK_EQ_U64(in_child(&all, &one, &all), 0);
    /* Start CPUs unknown: where the caller may run, as any thread. */
    CHECK_EQ_U64(in_child(NULL, &one, &one), 0);
    /* Start CPUs of which none is allowed now (a cpuset changed): where the caller may run. */
    cpu_set_t gone;
    CPU_ZERO(&gone);
    CPU_SET(CPU_SETSIZE - 1, &gone);
    REQUIRE(!CPU_ISSET(CPU_SETSIZE - 1, &all));
    CHECK_EQ_U64(in_child(&gone, &one, &one), 0);
}

int main(void) {
    RUN_TEST(test_threads_run_on_the_start_cpus);
    RUN_TEST(test_one_thread);
    atomic_store(&runs, 0);
    RUN_TEST(test_worker_named);
    RUN_TEST(test_four_threads);
    RUN_TEST(test_busy_worker);
    RUN_TEST(test_join_is_no_cancellation_point);
    RUN_TEST(test_fork_child_gets_a_new_worker);
    return gm_check_summary();
}
