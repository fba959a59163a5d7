#include "tally.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "util.h"

_Thread_local gm_tally_t *gm_tally_mine;

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static gm_tally_t *blocks; /* of living threads (under list_lock) */
/* Ended threads' counts, and counts made without a block. */
static _Atomic uint64_t ended[GM_TALLY_SLOTS];
static pthread_key_t end_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static atomic_bool key_made; /* cleared at unload */

/* A thread ends: its counts join the totals, its block goes. Counting again later in the same
 * thread's end (another destructor calling the driver) makes a new block, whose destructor the
 * system runs in a later round (POSIX runs them again while values are set). */
static void thread_ends(void *block) {
    gm_tally_t *t = block;
    pthread_mutex_lock(&list_lock);
    for (size_t i = 0; i < GM_TALLY_SLOTS; i++)
        atomic_fetch_add_explicit(&ended[i],
                                  atomic_load_explicit(&t->counts[i], memory_order_relaxed),
                                  memory_order_relaxed);
    GM_LIST_UNLINK(blocks, t, prev, next);
    pthread_mutex_unlock(&list_lock);
    if (gm_tally_mine == t)
        gm_tally_mine = NULL;
    free(t);
}

static void make_key(void) {
    atomic_store(&key_made, pthread_key_create(&end_key, thread_ends) == 0);
}

gm_tally_t *gm_tally_start(void) {
    pthread_once(&key_once, make_key);
    gm_tally_t *t = atomic_load(&key_made) ? calloc(1, sizeof *t) : NULL;
    if (t == NULL)
        return NULL;
    if (pthread_setspecific(end_key, t) != 0) {
        free(t);
        return NULL;
    }
    pthread_mutex_lock(&list_lock);
    GM_LIST_PUSH(blocks, t, prev, next);
    pthread_mutex_unlock(&list_lock);
    gm_tally_mine = t;
    return t;
}

void gm_tally_add_shared(size_t slot, uint64_t n) {
    atomic_fetch_add_explicit(&ended[slot], n, memory_order_relaxed);
}

uint64_t gm_tally_sum(size_t slot) {
    pthread_mutex_lock(&list_lock);
    uint64_t sum = atomic_load_explicit(&ended[slot], memory_order_relaxed);
    for (gm_tally_t *t = blocks; t; t = t->next)
        sum += atomic_load_explicit(&t->counts[slot], memory_order_relaxed);
    pthread_mutex_unlock(&list_lock);
    return sum;
}

void gm_tally_reset_after_fork(void) {
    /* Another thread of the parent may have held the lock at the fork, halfway through linking
     * or unlinking a block: the `next` links lead through every block fully linked (one half
     * linked is left behind, leaked), and the list is made anew from this thread's block. */
    pthread_mutex_init(&list_lock, NULL);
    for (gm_tally_t *t = blocks, *next; t; t = next) {
        next = t->next;
        if (t != gm_tally_mine)
            free(t); /* its thread does not exist here */
    }
    blocks = gm_tally_mine;
    if (blocks)
        blocks->prev = blocks->next = NULL;
    for (size_t i = 0; i < GM_TALLY_SLOTS; i++) {
        atomic_store_explicit(&ended[i], 0, memory_order_relaxed);
        if (gm_tally_mine)
            atomic_store_explicit(&gm_tally_mine->counts[i], 0, memory_order_relaxed);
    }
}

void gm_tally_fini(void) {
    if (atomic_exchange(&key_made, false))
        pthread_key_delete(end_key);
}
