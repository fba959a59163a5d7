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

#include "util.h"

/* A stream remembers this many recording streams it waited for; past it the oldest goes (a hint
 * lost). */
#define GM_ORDER_AFTER_MAX 64

typedef struct stream_order {
    uint64_t id;     /* unique to this stream's life: a handle given out again gets a new one */
    uint64_t served; /* served launches and uploads committed on it */
    gm_order_mark_t *after;
    uint32_t after_count, after_cap, after_next;
} stream_order_t;

/* What a recorded event stands for: its recording stream's mark, then the marks that stream was
 * after at the record. */
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
    if (!ev ||
        gm_grow((void **)&ev->marks, &ev->cap, s->after_count + 1, sizeof *ev->marks) != GM_OK) {
        forget_event(e, event);
        return;
    }
    ev->marks[0] = (gm_order_mark_t){s->id, s->served};
    for (uint32_t i = 0; i < s->after_count; i++)
        ev->marks[i + 1] = s->after[i];
    ev->count = s->after_count + 1;
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

/* Stream s is after `mark` too. Under the order lock. */
static void stream_after(stream_order_t *s, gm_order_mark_t mark) {
    uint32_t i = 0;
    while (s->id != mark.stream_id && i < s->after_count && s->after[i].stream_id != mark.stream_id)
        i++;
    if (s->id == mark.stream_id) {
        /* its own order */
    } else if (i < s->after_count) {
        if (s->after[i].served < mark.served)
            s->after[i].served = mark.served;
    } else if (s->after_count < GM_ORDER_AFTER_MAX &&
               gm_grow((void **)&s->after, &s->after_cap, s->after_count + 1, sizeof *s->after) ==
                   GM_OK) {
        s->after[s->after_count++] = mark;
    } else if (s->after_count) { /* full: the oldest goes */
        s->after[s->after_next] = mark;
        s->after_next = (s->after_next + 1) % s->after_count;
    }
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
