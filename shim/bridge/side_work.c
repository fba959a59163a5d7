#include "side_work.h"

#include <sched.h>
#include <signal.h>

#include "interpose/shim.h"

/* One worker, made at the first start and kept: a thread made for each large instantiation cost
 * about 20 µs of the caller's time (the debug line's read-back of a 300-node graph was half
 * thread creation). One piece of work at a time on it; a start that finds it busy (another
 * thread's instantiation) makes a thread of its own, as every start did before. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t posted = PTHREAD_COND_INITIALIZER;   /* slot filled */
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER; /* slot's work done */
static bool worker_made;
static gm_side_work_t *slot; /* the worker's work, posted or running; NULL: idle */

static void *worker_main(void *arg) {
    (void)arg;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL); /* graphmem's own thread */
    pthread_mutex_lock(&lock);
    for (;;) {
        while (slot == NULL || slot->state != GM_SIDE_POSTED)
            pthread_cond_wait(&posted, &lock);
        gm_side_work_t *work = slot;
        work->state = GM_SIDE_RUNNING;
        pthread_mutex_unlock(&lock);
        work->run(work->arg);
        pthread_mutex_lock(&lock);
        work->state = GM_SIDE_DONE; /* the joiner may free `work` once it sees this */
        slot = NULL;
        pthread_cond_broadcast(&finished);
    }
    return NULL;
}

static void *thread_main(void *arg) {
    gm_side_work_t *work = arg;
    work->run(work->arg);
    return NULL;
}

/* pthread_create, the worker with the default scheduling policy rather than that of the thread
 * that happened to make it (a real-time one would stay real-time for good; a thread for one piece
 * of work inherits its caller's), and either on `cpus` when not NULL. */
static bool create_with(pthread_t *thread, void *(*main)(void *), void *arg, bool worker,
                        const cpu_set_t *cpus) {
    pthread_attr_t attr;
    bool attr_made = (worker || cpus != NULL) && pthread_attr_init(&attr) == 0;
    if (attr_made && worker) {
        struct sched_param param = {.sched_priority = 0};
        pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
        pthread_attr_setschedparam(&attr, &param);
    }
    if (attr_made && cpus != NULL)
        pthread_attr_setaffinity_np(&attr, sizeof *cpus, cpus);
    bool made = pthread_create(thread, attr_made ? &attr : NULL, main, arg) == 0;
    if (attr_made)
        pthread_attr_destroy(&attr);
    return made;
}

/* pthread_create with the signals sent to the process blocked, so the new thread starts with them
 * blocked and they go to the application's threads. A fault of the thread's own (SIGSEGV and
 * the like) stays deliverable: blocked, the kernel would kill the process without running the
 * application's or a sanitizer's handler. The thread runs on the CPUs graphmem started with
 * (gm_start_cpus), not only where its maker is pinned: work beside a caller pinned to one CPU
 * would otherwise wait for the caller's own CPU, and the worker would share it for good. Where
 * those CPUs are no longer allowed (a cpuset changed since), it runs where its maker may. */
static bool create_quiet(pthread_t *thread, void *(*main)(void *), void *arg, bool worker) {
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    sigset_t blocked, saved;
    sigfillset(&blocked);
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        sigdelset(&blocked, faults[i]);
    const cpu_set_t *cpus = gm_start_cpus();
    bool masked = pthread_sigmask(SIG_SETMASK, &blocked, &saved) == 0;
    bool made = create_with(thread, main, arg, worker, cpus);
    if (!made && cpus != NULL)
        made = create_with(thread, main, arg, worker, NULL);
    if (masked)
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (made && worker)
        pthread_setname_np(*thread, "graphmem-plan"); /* what ps, top and gdb show */
    return made;
}

bool gm_side_start(gm_side_work_t *work, void (*run)(void *), void *arg) {
    *work = (gm_side_work_t){.run = run, .arg = arg};
    pthread_mutex_lock(&lock);
    if (!worker_made) {
        pthread_t worker;
        worker_made = create_quiet(&worker, worker_main, NULL, true);
        if (worker_made)
            pthread_detach(worker);
    }
    bool queued = worker_made && slot == NULL;
    if (queued) {
        work->where = GM_SIDE_WORKER;
        work->state = GM_SIDE_POSTED;
        slot = work;
        pthread_cond_signal(&posted);
    }
    pthread_mutex_unlock(&lock);
    if (queued)
        return true;
    if (!create_quiet(&work->thread, thread_main, work, false))
        return false;
    work->where = GM_SIDE_THREAD;
    return true;
}

void gm_side_join(gm_side_work_t *work) {
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    if (work->where == GM_SIDE_THREAD) {
        pthread_join(work->thread, NULL);
    } else if (work->where == GM_SIDE_WORKER) {
        pthread_mutex_lock(&lock);
        bool take_back = work->state == GM_SIDE_POSTED;
        if (take_back)
            slot = NULL; /* the worker never saw it */
        while (!take_back && work->state != GM_SIDE_DONE)
            pthread_cond_wait(&finished, &lock);
        pthread_mutex_unlock(&lock);
        if (take_back)
            work->run(work->arg);
    }
    work->where = GM_SIDE_NONE;
    pthread_setcancelstate(cancel, NULL);
}

void gm_side_forget_after_fork(void) {
    pthread_mutex_init(&lock, NULL);
    pthread_cond_init(&posted, NULL);
    pthread_cond_init(&finished, NULL);
    worker_made = false;
    slot = NULL;
}
