/* The frontier locks (frontier_lock.h). Streams hash to 256 stripes; a stripe's mutex guards a list
 * of the holds of its streams, each on its holder's stack, and every wait is on the stripe's
 * condition. A call looks only at holds of its own stream, so streams sharing a stripe share a
 * mutex held for a few instructions, never a wait. */
#include "frontier_lock.h"

#include <pthread.h>

#define STRIPES 256

typedef struct stripe {
    _Alignas(64) pthread_mutex_t lock;
    pthread_cond_t changed;
    gm_frontier_hold_t *holds;
    unsigned waiting; /* calls waiting on `changed`: a release wakes them only when there are */
} stripe_t;

static stripe_t stripes[STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;

static void stripes_init(void) {
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_init(&stripes[i].lock, NULL);
        pthread_cond_init(&stripes[i].changed, NULL);
    }
}

static stripe_t *stripe_of(CUstream stream) {
    uint64_t key = (uint64_t)(uintptr_t)stream;
    return &stripes[(key * 0x9E3779B97F4A7C15ull) >> 56];
}

/* Whether another hold on `hold`'s stream keeps it waiting: for SHARED, an EXCLUSIVE one waiting
 * or holding (writers first, so a stream of launches cannot starve a marker); for EXCLUSIVE, a
 * SHARED one or an EXCLUSIVE one holding. */
static bool must_wait(const stripe_t *s, const gm_frontier_hold_t *hold) {
    for (const gm_frontier_hold_t *h = s->holds; h != NULL; h = h->next) {
        if (h == hold || h->stream != hold->stream)
            continue;
        if (hold->kind == GM_FRONTIER_SHARED ? h->kind == GM_FRONTIER_EXCLUSIVE
                                             : h->kind == GM_FRONTIER_SHARED || h->holding)
            return true;
    }
    return false;
}

static void list_add(stripe_t *s, gm_frontier_hold_t *hold) {
    hold->prev = NULL;
    hold->next = s->holds;
    if (s->holds != NULL)
        s->holds->prev = hold;
    s->holds = hold;
}

static void list_remove(stripe_t *s, gm_frontier_hold_t *hold) {
    if (hold->prev != NULL)
        hold->prev->next = hold->next;
    else
        s->holds = hold->next;
    if (hold->next != NULL)
        hold->next->prev = hold->prev;
}

static void wait_changed(stripe_t *s) {
    s->waiting++;
    pthread_cond_wait(&s->changed, &s->lock);
    s->waiting--;
}

void gm_frontier_lock(gm_frontier_hold_t *hold, CUstream stream, gm_frontier_hold_kind_t kind) {
    pthread_once(&stripes_once, stripes_init);
    /* pthread_cond_wait is a cancellation point; and a hold left listed by a thread cancelled in
     * the driver's call would stop its stream for good. */
    int cancel_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    *hold = (gm_frontier_hold_t){stream, kind, false, cancel_state, NULL, NULL};
    stripe_t *s = stripe_of(stream);
    pthread_mutex_lock(&s->lock);
    if (kind == GM_FRONTIER_EXCLUSIVE)
        list_add(s, hold); /* waiting, it already keeps new SHARED calls back */
    while (must_wait(s, hold))
        wait_changed(s);
    hold->holding = true;
    if (kind == GM_FRONTIER_SHARED)
        list_add(s, hold);
    pthread_mutex_unlock(&s->lock);
}

void gm_frontier_unlock(gm_frontier_hold_t *hold) {
    stripe_t *s = stripe_of(hold->stream);
    pthread_mutex_lock(&s->lock);
    list_remove(s, hold);
    if (s->waiting != 0)
        pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    pthread_setcancelstate(hold->cancel_state, NULL);
}
