/* Event order between streams, as hints for choosing a sharing group (core/README.md, "Event
 * order"). A stream counts the served launches and uploads committed on it; an event recorded on
 * it carries that count (its mark) and the marks the stream itself is after; a stream that waits
 * for the event is after all of them (order is transitive: a wait for A's event puts B after what
 * A waited for). A group whose users all ran before a stream's position can take a first launch
 * there without making it wait for more than the program already waits for.
 *
 * Only ever a hint: the launch still waits for the group's latest user through graphmem's own fence
 * (engine_launch.c, order()), so a mark that is wrong (an event recorded in ways graphmem does not
 * see: a graph's event node, another process, a launch attribute) costs concurrency, never bytes.
 *
 * The order lock is separate from the engine lock, so event records and waits, which programs make
 * all the time, never wait for an instantiation. Lock order: engine, then order. */
#include "engine_order.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A stream remembers this many recording streams it waited for; past it the one waited for least
 * recently goes (a hint lost). An event carries its stream's own mark and the most recent this
 * many of those: transitive order reaches as far, and a wait costs at most this many searches of
 * the waiting stream's list, under the order lock every event hook takes. */
#define GM_ORDER_AFTER_MAX 64
#define GM_ORDER_EVENT_CARRY 8

typedef struct stream_order {
    uint64_t id;     /* unique to this stream's life: a handle given out again gets a new one */
    uint64_t served; /* served launches and uploads committed on it */
    gm_order_mark_t *after;
    uint32_t after_count, after_cap;
} stream_order_t;

/* What a recorded event stands for: the most recent marks its recording stream was after at the
 * record (GM_ORDER_EVENT_CARRY), oldest first, then its own. */
typedef struct event_order {
    gm_order_mark_t *marks;
    uint32_t count, cap;
} event_order_t;

void gm_order_init(gm_engine_t *e) {
    pthread_mutex_init(&e->order_lock, NULL);
}

/* Frees every stream's and event's entry; under the order lock or at the end. */
static void forget_all(gm_engine_t *e) {
    uint32_t pos = 0;
    void *v;
    while (gm_map_next(&e->order_streams, &pos, NULL, &v)) {
        free(((stream_order_t *)v)->after);
        free(v);
    }
    pos = 0;
    while (gm_map_next(&e->order_events, &pos, NULL, &v)) {
        free(((event_order_t *)v)->marks);
        free(v);
    }
    gm_map_fini(&e->order_streams);
    gm_map_fini(&e->order_events);
}

void gm_order_fini(gm_engine_t *e) {
    forget_all(e);
    pthread_mutex_destroy(&e->order_lock);
}

void gm_engine_order_reset(gm_engine_t *e) {
    pthread_mutex_lock(&e->order_lock);
    forget_all(e);
    pthread_mutex_unlock(&e->order_lock);
}

bool gm_engine_order_active(gm_engine_t *e) {
    return atomic_load_explicit(&e->order_active, memory_order_relaxed);
}

/* The stream's entry, made when `make` (NULL: none, or no host memory). Under the order lock. */
static stream_order_t *stream_entry(gm_engine_t *e, uint64_t stream, bool make) {
    stream_order_t *s = gm_map_get(&e->order_streams, stream);
    if (s || !make)
        return s;
    if (!(s = calloc(1, sizeof *s)) || gm_map_put(&e->order_streams, stream, s) != GM_OK) {
        free(s);
        return NULL;
    }
    s->id = ++e->order_next_id;
    return s;
}

/* Streams the program created and any thread may name (the backend's fence_may_defer): the shim
 * gives default streams no marks, and a per-thread default stream's key would be left behind by
 * every thread that launched on one. */
static bool tracked(const gm_engine_t *e, uint64_t stream) {
    return e->backend.fence_may_defer && e->backend.fence_may_defer(e->backend.ctx, stream);
}

gm_order_mark_t gm_order_served(gm_engine_t *e, uint64_t stream) {
    /* Written once: every served launch passes here, and the hooks read it on every event call. */
    if (!atomic_load_explicit(&e->order_active, memory_order_relaxed))
        atomic_store_explicit(&e->order_active, true, memory_order_relaxed);
    if (!tracked(e, stream))
        return GM_NO_MARK;
    pthread_mutex_lock(&e->order_lock);
    stream_order_t *s = stream_entry(e, stream, true);
    gm_order_mark_t mark = GM_NO_MARK;
    if (s) {
        s->served++;
        mark = (gm_order_mark_t){s->id, s->served};
    }
    pthread_mutex_unlock(&e->order_lock);
    return mark;
}

bool gm_order_after(gm_engine_t *e, uint64_t stream, gm_order_mark_t mark) {
    if (mark.stream_id == 0)
        return false;
    pthread_mutex_lock(&e->order_lock);
    const stream_order_t *s = stream_entry(e, stream, false);
    bool after = s && s->id == mark.stream_id; /* the stream's own order */
    for (uint32_t i = 0; s && !after && i < s->after_count; i++)
        after = s->after[i].stream_id == mark.stream_id && s->after[i].served >= mark.served;
    pthread_mutex_unlock(&e->order_lock);
    return after;
}

void gm_order_stream_gone(gm_engine_t *e, uint64_t stream) {
    pthread_mutex_lock(&e->order_lock);
    stream_order_t *s = gm_map_remove(&e->order_streams, stream);
    pthread_mutex_unlock(&e->order_lock);
    if (s)
        free(s->after);
    free(s);
}

/* The event stands for nothing (a record graphmem cannot place, or a destroy). Under the order
 * lock. */
static void forget_event(gm_engine_t *e, uint64_t event) {
    event_order_t *ev = gm_map_remove(&e->order_events, event);
    if (ev)
        free(ev->marks);
    free(ev);
}

/* The event stands for stream s's position now: its mark and what it is after. Without host memory
 * it is forgotten (a hint lost). Under the order lock. */
static void set_event(gm_engine_t *e, uint64_t event, const stream_order_t *s) {
    event_order_t *ev = gm_map_get(&e->order_events, event);
    if (!ev && (ev = calloc(1, sizeof *ev)) != NULL &&
        gm_map_put(&e->order_events, event, ev) != GM_OK) {
        free(ev);
        ev = NULL;
    }
    uint32_t carried =
        s->after_count < GM_ORDER_EVENT_CARRY ? s->after_count : GM_ORDER_EVENT_CARRY;
    if (!ev || gm_grow((void **)&ev->marks, &ev->cap, carried + 1, sizeof *ev->marks) != GM_OK) {
        forget_event(e, event);
        return;
    }
    /* Oldest first and the recording stream's own mark last: the waiting stream takes them in
     * that order, so when its list is full the mark it waited for directly is the last to go. */
    for (uint32_t i = 0; i < carried; i++)
        ev->marks[i] = s->after[s->after_count - carried + i];
    ev->marks[carried] = (gm_order_mark_t){s->id, s->served};
    ev->count = carried + 1;
}

void gm_engine_event_record(gm_engine_t *e, uint64_t event, uint64_t stream) {
    if (!atomic_load_explicit(&e->order_active, memory_order_relaxed))
        return; /* nothing served yet: no mark could matter */
    pthread_mutex_lock(&e->order_lock);
    const stream_order_t *s = stream == GM_NO_STREAM ? NULL : stream_entry(e, stream, false);
    if (s)
        set_event(e, event, s);
    else
        forget_event(e, event);
    pthread_mutex_unlock(&e->order_lock);
}

/* Stream s is after `mark` too. s->after is kept oldest first: a mark taken or raised moves to
 * the end (one already among the last few stays where it is: a wait names at most that many, so
 * the marks a program keeps waiting for cost a short search from the end and no move), and when
 * full the first (least recently waited for) goes. Under the order lock. */
static void stream_after(stream_order_t *s, gm_order_mark_t mark) {
    if (s->id == mark.stream_id || mark.served == 0) /* its own order; a mark ordering nothing */
        return;
    uint32_t i = s->after_count;
    while (i > 0 && s->after[i - 1].stream_id != mark.stream_id)
        i--;
    if (i > 0) {
        gm_order_mark_t *m = &s->after[--i];
        if (m->served < mark.served)
            m->served = mark.served;
        if (i + GM_ORDER_EVENT_CARRY + 1 >= s->after_count)
            return;
        mark = *m;
    } else if (s->after_count < GM_ORDER_AFTER_MAX &&
               gm_grow((void **)&s->after, &s->after_cap, s->after_count + 1, sizeof *s->after) ==
                   GM_OK) {
        s->after[s->after_count++] = mark;
        return;
    } else if (s->after_count) {
        i = 0; /* full: the least recent goes */
    } else {
        return;
    }
    memmove(&s->after[i], &s->after[i + 1], (s->after_count - i - 1) * sizeof *s->after);
    s->after[s->after_count - 1] = mark;
}

void gm_engine_stream_wait(gm_engine_t *e, uint64_t stream, uint64_t event) {
    if (!atomic_load_explicit(&e->order_active, memory_order_relaxed))
        return;
    pthread_mutex_lock(&e->order_lock);
    const event_order_t *ev = gm_map_get(&e->order_events, event);
    stream_order_t *s = ev ? stream_entry(e, stream, true) : NULL;
    for (uint32_t i = 0; s && i < ev->count; i++)
        stream_after(s, ev->marks[i]);
    pthread_mutex_unlock(&e->order_lock);
}

void gm_engine_event_destroyed(gm_engine_t *e, uint64_t event) {
    if (!atomic_load_explicit(&e->order_active, memory_order_relaxed))
        return;
    pthread_mutex_lock(&e->order_lock);
    forget_event(e, event);
    pthread_mutex_unlock(&e->order_lock);
}
