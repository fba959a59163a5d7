#include "side_work.h"

#include <signal.h>

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

/* pthread_create with every signal blocked, so the new thread starts with them blocked. */
static bool create_quiet(pthread_t *thread, void *(*main)(void *), void *arg) {
    sigset_t all, saved;
    sigfillset(&all);
    bool masked = pthread_sigmask(SIG_SETMASK, &all, &saved) == 0;
    bool made = pthread_create(thread, NULL, main, arg) == 0;
    if (masked)
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return made;
}

bool gm_side_start(gm_side_work_t *work, void (*run)(void *), void *arg) {
    *work = (gm_side_work_t){.run = run, .arg = arg};
    pthread_mutex_lock(&lock);
    if (!worker_made) {
        pthread_t worker;
        worker_made = create_quiet(&worker, worker_main, NULL);
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
    if (!create_quiet(&work->thread, thread_main, work))
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
