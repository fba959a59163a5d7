#include "nested.h"

#include <pthread.h>
#include <stdatomic.h>

#include "log.h"
#include "util.h"

typedef struct nested {
    CUgraph parent, graph;
    CUgraphNode node; /* the node of `parent` owning `graph` (NULL: not known, or TOUCH) */
    gm_nested_kind_t kind;
    bool doomed, expanded; /* marks of a destroy in progress (under the lock) */
} nested_t;

static nested_t *nested;
static uint32_t nested_count, nested_cap;
static pthread_mutex_t nested_lock = PTHREAD_MUTEX_INITIALIZER;
/* Child entries in `nested`, changed under the lock: every captured allocation and free asks
 * gm_nested_is_child, and most programs have no child graph at all. A graph becomes a child
 * before anyone can capture into it (its handle comes from the child node), so a capture that
 * reads 0 here has no child graph to miss. */
static atomic_uint child_count;
/* Body entries, the same way: every update, and every instantiation of a graph that is named or
 * touches, looks for conditional bodies, and most programs have none. A body is recorded in the
 * call that makes its conditional node, before its graph can be instantiated or updated from. */
static atomic_uint body_count;

static void count_kind(const nested_t *entry, int delta) {
    if (entry->kind == GM_NESTED_CHILD)
        atomic_fetch_add_explicit(&child_count, (unsigned)delta, memory_order_release);
    else if (entry->kind == GM_NESTED_BODY)
        atomic_fetch_add_explicit(&body_count, (unsigned)delta, memory_order_release);
}

bool gm_nested_any_bodies(void) {
    return atomic_load_explicit(&body_count, memory_order_acquire) != 0;
}

/* Set for good once an entry could not be recorded (no host memory for it): a child graph (whose
 * markers the read-back must find) or a touching graph may be missing here, so from then on every
 * graph counts as named and as touching (gm_nested_names, gm_touches): the read-back asks every
 * node's type and the instantiation covers every memset and copy, as before the registry decided.
 * Not covered by this: a lost conditional body (the driver has no query for a node's bodies, so
 * markers added to it are not refused at instantiation as the driver refuses memory nodes there)
 * and a lost child entry (memory nodes added to that child graph are served, where the driver
 * refuses them). Recording before the driver's call, to refuse it without host memory, would
 * close both (README, "Known limitations"). */
static atomic_bool incomplete;

static void mark_incomplete(void) {
    if (!atomic_exchange(&incomplete, true))
        gm_log(GM_LOG_WARN, "no host memory for the nested-graph registry: every graph is now read "
                            "back in full at instantiation");
}

void gm_nested_record(CUgraph parent, CUgraphNode node, const CUgraph *graphs, unsigned count,
                      gm_nested_kind_t kind) {
    pthread_mutex_lock(&nested_lock);
    /* A node handle given out again (its node destroyed alone): its old bodies are gone. */
    for (uint32_t i = 0; node != NULL && kind == GM_NESTED_BODY && i < nested_count;) {
        if (nested[i].node == node && nested[i].kind == GM_NESTED_BODY) {
            count_kind(&nested[i], -1);
            nested[i] = nested[--nested_count];
        } else
            i++;
    }
    for (unsigned i = 0; i < count; i++) {
        if (gm_grow((void **)&nested, &nested_cap, nested_count + 1, sizeof *nested) != GM_OK) {
            mark_incomplete();
            break;
        }
        nested[nested_count++] = (nested_t){parent, graphs[i], node, kind, false, false};
        count_kind(&nested[nested_count - 1], 1);
    }
    pthread_mutex_unlock(&nested_lock);
}

/* Conditional bodies are looked for in `graph`, its bodies and its child graphs, at any depth: a
 * child graph's conditional node runs as part of the parent too. */
static bool nests(const nested_t *entry, CUgraph graph) {
    return entry->parent == graph &&
           (entry->kind == GM_NESTED_BODY || entry->kind == GM_NESTED_CHILD);
}

/* A graph's own note, not one of a graph nested in it: that one goes with its node, while the
 * graph's own memset or copy stays. */
static bool touch_noted(CUgraph graph) {
    pthread_mutex_lock(&nested_lock);
    bool found = false;
    for (size_t i = 0; i < nested_count && !found; i++)
        found = nested[i].parent == graph && nested[i].kind == GM_NESTED_TOUCH;
    pthread_mutex_unlock(&nested_lock);
    return found;
}

void gm_touch_note(CUgraph graph) {
    if (graph != NULL && !touch_noted(graph))
        gm_nested_record(graph, NULL, &(CUgraph){NULL}, 1, GM_NESTED_TOUCH);
}

/* Set once, never cleared: the node may stay in its graph, and be copied into others, for good. */
static atomic_bool touch_unknown;

void gm_touch_note_unknown(void) {
    atomic_store(&touch_unknown, true);
}

static bool touches_locked(CUgraph graph, int depth) {
    for (size_t i = 0; i < nested_count && depth <= GM_NESTING_MAX; i++)
        if (nested[i].parent == graph &&
            (nested[i].kind == GM_NESTED_TOUCH || touches_locked(nested[i].graph, depth + 1)))
            return true;
    return false;
}

size_t gm_node_bodies(CUgraphNode node, CUgraph *out, size_t cap) {
    if (!gm_nested_any_bodies())
        return 0;
    pthread_mutex_lock(&nested_lock);
    size_t n = 0;
    for (size_t i = 0; node != NULL && i < nested_count; i++)
        if (nested[i].node == node && nested[i].kind == GM_NESTED_BODY) {
            if (n < cap)
                out[n] = nested[i].graph;
            n++;
        }
    pthread_mutex_unlock(&nested_lock);
    return n;
}

/* The graphs of `kind` whose parent is `graph` (up to `cap` into `out`); returns how many. */
static size_t nested_of(CUgraph graph, gm_nested_kind_t kind, CUgraph *out, size_t cap) {
    pthread_mutex_lock(&nested_lock);
    size_t n = 0;
    for (size_t i = 0; i < nested_count; i++)
        if (nested[i].parent == graph && nested[i].kind == kind) {
            if (n < cap)
                out[n] = nested[i].graph;
            n++;
        }
    pthread_mutex_unlock(&nested_lock);
    return n;
}

size_t gm_nested_bodies(CUgraph graph, CUgraph *out, size_t cap) {
    return gm_nested_any_bodies() ? nested_of(graph, GM_NESTED_BODY, out, cap) : 0;
}

size_t gm_nested_children(CUgraph graph, CUgraph *out, size_t cap) {
    return nested_of(graph, GM_NESTED_CHILD, out, cap);
}

bool gm_touches(CUgraph graph) {
    if (atomic_load(&touch_unknown) || atomic_load(&incomplete))
        return true;
    pthread_mutex_lock(&nested_lock);
    bool found = touches_locked(graph, 0);
    pthread_mutex_unlock(&nested_lock);
    return found;
}

/* The first conditional body of `graph`, at any depth, that holds markers, and when `escaping`
 * one that is not self-contained (gm_engine_graph_self_contained) too; NULL when there is none. */
static CUgraph body_with_markers_locked(gm_engine_t *engine, CUgraph graph, bool escaping,
                                        int depth) {
    for (size_t i = 0; i < nested_count && depth <= GM_NESTING_MAX; i++) {
        if (!nests(&nested[i], graph))
            continue;
        uint64_t key = (uint64_t)(uintptr_t)nested[i].graph;
        if (nested[i].kind == GM_NESTED_BODY && gm_engine_graph_has_markers(engine, key) &&
            (!escaping || !gm_engine_graph_self_contained(engine, key)))
            return nested[i].graph;
        CUgraph deeper = body_with_markers_locked(engine, nested[i].graph, escaping, depth + 1);
        if (deeper)
            return deeper;
    }
    return NULL;
}

static CUgraph body_with_markers(gm_engine_t *engine, CUgraph graph, bool escaping) {
    if (!gm_nested_any_bodies())
        return NULL;
    pthread_mutex_lock(&nested_lock);
    CUgraph found = body_with_markers_locked(engine, graph, escaping, 0);
    pthread_mutex_unlock(&nested_lock);
    return found;
}

CUgraph gm_conditional_body_not_contained(gm_engine_t *engine, CUgraph graph) {
    return body_with_markers(engine, graph, true);
}

CUgraph gm_conditional_body_with_markers(gm_engine_t *engine, CUgraph graph) {
    return body_with_markers(engine, graph, false);
}

bool gm_conditional_bodies_have_markers(gm_engine_t *engine, CUgraph graph) {
    return body_with_markers(engine, graph, false) != NULL;
}

CUgraph gm_nested_child_parent(CUgraphNode node) {
    pthread_mutex_lock(&nested_lock);
    CUgraph parent = NULL;
    for (size_t i = 0; node != NULL && i < nested_count && parent == NULL; i++)
        if (nested[i].node == node && nested[i].kind == GM_NESTED_CHILD)
            parent = nested[i].parent;
    pthread_mutex_unlock(&nested_lock);
    return parent;
}

bool gm_nested_is_child(CUgraph graph) {
    if (atomic_load_explicit(&child_count, memory_order_acquire) == 0)
        return false;
    pthread_mutex_lock(&nested_lock);
    bool found = false;
    for (size_t i = 0; i < nested_count && !found; i++)
        found = nested[i].graph == graph && nested[i].kind == GM_NESTED_CHILD;
    pthread_mutex_unlock(&nested_lock);
    return found;
}

/* ---- destroying graphs and nodes ----------------------------------------------------------- */

/* The graphs a destroyed graph or node owned die with it: their handles may come back for new
 * graphs, so nothing of them may stay, in this registry or in the engine. The registry's lock is
 * held from before the driver's destroy until both have forgotten them (lock order: registry,
 * then engine), so a graph the driver makes meanwhile with a recycled handle cannot be registered
 * in between.
 *
 * The entries to forget are marked in place (`doomed`), so forgetting them here needs no host
 * memory. A TOUCH entry names no graph (its `graph` is NULL): it dies with its parent and never
 * passes death on. */
static bool owns(const nested_t *entry) {
    return entry->kind != GM_NESTED_TOUCH;
}

/* Marks every entry under a doomed owning entry, at any depth; returns how many graphs die with
 * the roots (doomed entries that own a graph). Each owning entry is expanded once (`expanded`), so
 * this costs the registry's size times the doomed entries plus the depth. */
static uint32_t doom_descendants(void) {
    uint32_t graphs = 0;
    for (bool grew = true; grew;) {
        grew = false;
        for (uint32_t j = 0; j < nested_count; j++) {
            if (!nested[j].doomed || nested[j].expanded || !owns(&nested[j]))
                continue;
            nested[j].expanded = grew = true;
            graphs++;
            for (uint32_t i = 0; i < nested_count; i++)
                if (nested[i].parent == nested[j].graph)
                    nested[i].doomed = true;
        }
    }
    return graphs;
}

/* Forgets the doomed entries (`forget`) or clears their marks (the destroy failed). */
static void settle_doomed(bool forget) {
    for (uint32_t i = 0; i < nested_count;) {
        if (nested[i].doomed && forget) {
            count_kind(&nested[i], -1);
            nested[i] = nested[--nested_count];
            continue;
        }
        nested[i].doomed = nested[i].expanded = false;
        i++;
    }
}

static gm_status_t call_alone(gm_driver_call_t call) {
    return (!call.fn || call.fn(call.arg)) ? GM_OK : GM_ERR_DRIVER;
}

/* The graphs ending with a destroy, for gm_engine_graphs_destroy_each: `root` (0: none) first,
 * then the graph of each doomed owning entry, read from the registry in place (its lock held by
 * the caller), so the walk needs no host memory. */
typedef struct doomed_walk {
    uint64_t root;
    uint32_t next;
    bool root_given;
} doomed_walk_t;

static bool next_doomed(void *arg, uint64_t *graph_out) {
    doomed_walk_t *walk = arg;
    if (walk->root != 0 && !walk->root_given) {
        walk->root_given = true;
        *graph_out = walk->root;
        return true;
    }
    for (; walk->next < nested_count; walk->next++) {
        const nested_t *entry = &nested[walk->next];
        uint64_t graph = (uint64_t)(uintptr_t)entry->graph;
        if (entry->doomed && owns(entry) && graph != walk->root) {
            walk->next++;
            *graph_out = graph;
            return true;
        }
    }
    return false;
}

/* Makes `call` and has the engine forget `root` (0: none) and the graphs of the doomed entries in
 * the same critical section; then forgets those entries here. */
static gm_status_t destroy_doomed_locked(gm_engine_t *engine, uint64_t root,
                                         gm_driver_call_t call) {
    uint32_t dying = doom_descendants() + (root != 0);
    doomed_walk_t walk = {root, 0, false};
    gm_status_t st =
        engine && dying > 0
            ? gm_engine_graphs_destroy_each(engine, (gm_graph_source_t){next_doomed, &walk}, call)
            : call_alone(call); /* nothing of graphmem's ends with it */
    settle_doomed(st == GM_OK);
    return st;
}

gm_status_t gm_graph_destroy_nested(gm_engine_t *engine, CUgraph graph, gm_driver_call_t call) {
    pthread_mutex_lock(&nested_lock);
    /* A NULL graph owns nothing (TOUCH entries name no graph). */
    for (uint32_t i = 0; graph != NULL && i < nested_count; i++)
        nested[i].doomed =
            nested[i].parent == graph || (owns(&nested[i]) && nested[i].graph == graph);
    gm_status_t st = destroy_doomed_locked(engine, (uint64_t)(uintptr_t)graph, call);
    pthread_mutex_unlock(&nested_lock);
    return st;
}

bool gm_nested_names(CUgraph graph) {
    if (graph == NULL)
        return false;
    if (atomic_load(&incomplete))
        return true;
    pthread_mutex_lock(&nested_lock);
    bool named = false;
    for (uint32_t i = 0; i < nested_count && !named; i++)
        named = nested[i].parent == graph || (owns(&nested[i]) && nested[i].graph == graph);
    pthread_mutex_unlock(&nested_lock);
    return named;
}

gm_status_t gm_node_destroy_nested(gm_engine_t *engine, CUgraphNode node, gm_driver_call_t call) {
    pthread_mutex_lock(&nested_lock);
    for (uint32_t i = 0; i < nested_count; i++)
        nested[i].doomed = node != NULL && nested[i].node == node && owns(&nested[i]);
    gm_status_t st = destroy_doomed_locked(engine, 0, call);
    pthread_mutex_unlock(&nested_lock);
    return st;
}
