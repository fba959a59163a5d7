/* Work run beside the caller while it waits on the driver (the engine's plan of a large graph
 * while the driver instantiates it), on graphmem's one worker thread when that is idle, else on a
 * thread of its own. */
#ifndef GRAPHMEM_SIDE_WORK_H
#define GRAPHMEM_SIDE_WORK_H

#include <pthread.h>
#include <stdbool.h>

typedef struct gm_side_work {
    void (*run)(void *arg);
    void *arg;
    enum { GM_SIDE_NONE, GM_SIDE_WORKER, GM_SIDE_THREAD } where;  /* the caller's own */
    enum { GM_SIDE_POSTED, GM_SIDE_RUNNING, GM_SIDE_DONE } state; /* the worker's: under a lock */
    pthread_t thread;                                             /* GM_SIDE_THREAD */
} gm_side_work_t;

/* Starts run(arg) beside the caller; `work` must stay where it is until gm_side_join, so the
 * caller must not be cancelled in between (pthread_setcancelstate). False when no thread could
 * run it: the caller runs it itself. The threads take no signal sent to the process (the
 * application's handlers run on its own threads), only faults of their own. */
bool gm_side_start(gm_side_work_t *work, void (*run)(void *), void *arg);

/* Returns once run(arg) has returned: run here when the worker had not taken it yet (the driver
 * was quicker than the worker's wake-up), else waited for. Not a cancellation point. */
void gm_side_join(gm_side_work_t *work);

/* In a child after fork: the worker is gone with the parent's other threads (work a parent
 * thread posted is its business); the next start makes a new one. Work the forking thread itself
 * had started and not joined (a fork from a signal handler during the driver's call) has no thread
 * left to finish it: its join in the child would wait for good, in a child where the parent's
 * CUDA state is unusable anyway. */
void gm_side_forget_after_fork(void);

#endif
