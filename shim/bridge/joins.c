/* Unjoined forks. The driver ends a capture with CUDA_ERROR_STREAM_CAPTURE_UNJOINED when a forked
 * stream's work never rejoined the origin stream, but it does not count graphmem's markers as
 * work captured on the forked stream (they are added through the graph API). So graphmem notes
 * each stream that received a marker, and when the capture ends checks that the markers among the
 * stream's last nodes are ancestors of the origin stream's frontier, as the driver would have for
 * the memory nodes they stand for. A noted stream destroyed before the capture ends (NVIDIA's
 * graph-memory sample does it after joining) is asked for its last nodes while it is handed over
 * for destruction, never afterwards.
 *
 * A note names its stream by its identity (gm_stream_key), not by its handle: NULL through a _ptsz
 * entry and CU_STREAM_PER_THREAD name the calling thread's own per-thread default stream (in the
 * current context), so two threads' per-thread streams are two streams, which may take part in
 * two captures at once, or both in one. Another thread's per-thread stream cannot be named from
 * the thread that ends the capture: the driver would answer for the ending thread's own. Such a
 * note is judged by the last marker its own thread put on it instead (below, `marker`). */
#include "joins.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "interpose/driver.h"
#include "streams.h"
#include "util.h"

struct noted_stream {
    cuuint64_t capture;
    uint64_t key;    /* gm_stream_key: a per-thread default stream's tells its thread and context */
    CUstream stream; /* the handle and ABI it was named with, by its own thread (key's) */
    bool ptsz;
    bool origin;        /* the capture began on it (gm_joins_note_begin) */
    CUgraph graph;      /* NULL once its handle was given out again (gm_joins_forget_graph) */
    bool destroyed;     /* the stream is gone: `tails` is what it had captured last */
    CUgraphNode *tails; /* owned */
    size_t tail_count;
    /* A default stream's last marker (gm_joins_note), what an end on another thread (or in
     * another context), which cannot ask the stream, judges it by: whatever the stream captured
     * after it depends on it (the marker was the stream's only dependency), so work after it
     * that never rejoined is the driver's to refuse, and the marker itself is graphmem's. */
    CUgraphNode marker;
};
typedef struct noted_stream noted_stream_t;

static noted_stream_t *noted;
static uint32_t noted_count, noted_cap;
static pthread_mutex_t noted_lock = PTHREAD_MUTEX_INITIALIZER;
/* Raised whenever a note is marked destroyed or removed: a thread's memory of the note it made
 * last (gm_joins_note) holds only while this is unchanged. */
static atomic_uint_fast64_t noted_generation;
/* Ends in flight (gm_joins_finish to gm_joins_ended), holding their captures' notes: a graph
 * handle given out again meanwhile is marked in them too (noted_lock). */
static gm_joins_ending_t *endings;

void gm_joins_note(cuuint64_t capture, CUstream stream, bool ptsz, CUgraph graph,
                   CUgraphNode marker) {
    /* A capture puts its markers on a few streams, one after another: the note this thread made
     * last is usually the one asked for again, and then the list needs no lock or scan. Not for
     * a default stream, whose note keeps its last marker. */
    static _Thread_local struct {
        cuuint64_t capture;
        uint64_t key;
        bool known;
        uint_fast64_t generation;
    } last;
    uint64_t key = gm_stream_key(stream, ptsz);
    bool keeps_marker = gm_stream_is_default(stream);
    uint_fast64_t generation = atomic_load_explicit(&noted_generation, memory_order_acquire);
    if (last.known && last.capture == capture && last.key == key && last.generation == generation &&
        !keeps_marker)
        return;
    pthread_mutex_lock(&noted_lock);
    noted_stream_t *seen = NULL;
    for (uint32_t i = 0; i < noted_count && seen == NULL; i++)
        if (noted[i].capture == capture && noted[i].key == key && !noted[i].destroyed)
            seen = &noted[i];
    /* Without host memory for the note the check is skipped for this stream: never a refusal. */
    if (seen == NULL &&
        gm_grow((void **)&noted, &noted_cap, noted_count + 1, sizeof *noted) == GM_OK) {
        seen = &noted[noted_count++];
        *seen = (noted_stream_t){capture, key, stream, ptsz, false, graph, false, NULL, 0, NULL};
    }
    if (seen != NULL && keeps_marker)
        seen->marker = marker;
    if (seen != NULL) {
        last.capture = capture, last.key = key, last.known = true;
        last.generation = atomic_load_explicit(&noted_generation, memory_order_relaxed);
    }
    pthread_mutex_unlock(&noted_lock);
}

CUresult gm_joins_dependencies_set(CUstream stream, bool ptsz, const CUgraphNode *deps,
                                   size_t count, CUresult (*set)(void *arg), void *arg) {
    uint64_t key = gm_stream_key(stream, ptsz);
    pthread_mutex_lock(&noted_lock);
    CUresult result = set(arg);
    for (uint32_t i = 0; result == CUDA_SUCCESS && i < noted_count; i++) {
        noted_stream_t *n = &noted[i];
        if (n->key != key || n->destroyed || n->marker == NULL)
            continue;
        bool kept = false;
        for (size_t k = 0; k < count && deps != NULL && !kept; k++)
            kept = deps[k] == n->marker;
        if (!kept)
            n->marker = NULL;
    }
    pthread_mutex_unlock(&noted_lock);
    return result;
}

/* Takes note i out of the list and returns it, its `tails` now the caller's (noted_lock held). */
static noted_stream_t take_note(uint32_t i) {
    noted_stream_t note = noted[i];
    noted[i] = noted[--noted_count];
    atomic_fetch_add_explicit(&noted_generation, 1, memory_order_release);
    return note;
}

/* Removes note i (noted_lock held). */
static void drop_note(uint32_t i) {
    free(take_note(i).tails);
}

void gm_joins_note_begin(cuuint64_t capture, CUstream stream, bool ptsz, CUgraph graph) {
    uint64_t key = gm_stream_key(stream, ptsz);
    pthread_mutex_lock(&noted_lock);
    /* A stream takes part in one capture at a time: notes of it from another capture are left
     * from one that ended without its notes found (and name a graph that may be gone). Of it
     * only: another thread's per-thread stream may be in a capture of its own. */
    for (uint32_t i = 0; i < noted_count;) {
        if (noted[i].key == key && noted[i].capture != capture && !noted[i].destroyed)
            drop_note(i);
        else
            i++;
    }
    if (gm_grow((void **)&noted, &noted_cap, noted_count + 1, sizeof *noted) == GM_OK)
        noted[noted_count++] =
            (noted_stream_t){capture, key, stream, ptsz, true, graph, false, NULL, 0, NULL};
    pthread_mutex_unlock(&noted_lock);
}

void gm_joins_forget_graph(CUgraph graph) {
    pthread_mutex_lock(&noted_lock);
    for (uint32_t i = 0; i < noted_count; i++)
        if (noted[i].graph == graph)
            noted[i].graph = NULL;
    for (gm_joins_ending_t *e = endings; e != NULL; e = e->next)
        e->given_out |= e->graph == graph && graph != NULL;
    pthread_mutex_unlock(&noted_lock);
}

/* What `stream`, about to be destroyed, captured last in capture `capture`: into *tails_out
 * (owned; NULL and 0 when it no longer takes part, or without host memory). */
static void last_nodes(CUstream stream, cuuint64_t capture, CUgraphNode **tails_out,
                       size_t *count_out) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t now = 0;
    const CUgraphNode *tails = NULL;
    const CUgraphEdgeData *edges = NULL; /* asked for: without, edges with data make it fail */
    size_t count = 0;
    *tails_out = NULL;
    *count_out = 0;
    if (gm_real.cuStreamGetCaptureInfo_v3(stream, &status, &now, NULL, &tails, &edges, &count) !=
            CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_ACTIVE || now != capture || count == 0)
        return; /* not in the capture any more: nothing to check */
    if ((*tails_out = malloc(count * sizeof *tails)) != NULL) {
        memcpy(*tails_out, tails, count * sizeof *tails);
        *count_out = count;
    }
}

void gm_joins_stream_destroyed(CUstream stream) {
    uint64_t key = gm_stream_key(stream, false);
    pthread_mutex_lock(&noted_lock);
    for (uint32_t i = 0; i < noted_count; i++) {
        noted_stream_t *n = &noted[i];
        if (n->key != key || n->destroyed)
            continue;
        n->destroyed = true;
        atomic_fetch_add_explicit(&noted_generation, 1, memory_order_release);
        last_nodes(stream, n->capture, &n->tails, &n->tail_count);
    }
    /* A note an end in flight holds is that end's to read without the lock: the stream's fate
     * waits beside it (`gone`) for the end to put the note back. */
    for (gm_joins_ending_t *e = endings; e != NULL; e = e->next)
        for (uint32_t i = 0; i < e->count; i++) {
            const noted_stream_t *n = &e->notes[i];
            if (n->key != key || n->destroyed ||
                gm_grow((void **)&e->gone, &e->gone_cap, e->gone_count + 1, sizeof *e->gone))
                continue;
            noted_stream_t *g = &e->gone[e->gone_count++];
            *g = *n;
            g->destroyed = true;
            last_nodes(stream, n->capture, &g->tails, &g->tail_count);
        }
    pthread_mutex_unlock(&noted_lock);
}

typedef CUresult (*capture_info_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                                    const CUgraphNode **, const CUgraphEdgeData **, size_t *);

/* Whether every node of `targets` that `judged` says is graphmem's to judge (NULL: every one) is
 * one of `roots` or an ancestor of one. Only markers are graphmem's among a side stream's last
 * nodes: the driver judges what the stream captured itself, and no other node, as it documents
 * (cuStreamGetCaptureInfo, cuStreamUpdateCaptureDependencies): a node the program added through
 * the graph API and set as the stream's dependency, left unjoined, does not make a capture
 * unjoined, nor a marker the program took out of the stream's set. */
static bool all_reached(const CUgraphNode *roots, size_t root_count, const CUgraphNode *targets,
                        size_t target_count, gm_joins_is_marker_fn judged) {
    size_t cap = root_count > 256 ? root_count : 256, count = 0, head = 0;
    CUgraphNode *seen = malloc(cap * sizeof *seen);
    if (seen == NULL)
        return true;                        /* cannot tell: never refuse a capture for that */
    for (size_t i = 0; i < root_count; i++) /* every one: the join may come through the last */
        seen[count++] = roots[i];
    size_t found = 0;
    bool *hit = calloc(target_count ? target_count : 1, sizeof *hit);
    for (size_t t = 0; hit && judged && t < target_count; t++)
        if (!judged(targets[t])) { /* not graphmem's: taken as reached */
            hit[t] = true;
            found++;
        }
    while (hit && head < count && found < target_count) {
        CUgraphNode node = seen[head++];
        for (size_t t = 0; t < target_count; t++)
            if (!hit[t] && targets[t] == node) {
                hit[t] = true;
                found++;
            }
        size_t n = 0;
        if (gm_drv.cuGraphNodeGetDependencies_v2(node, NULL, NULL, &n) != CUDA_SUCCESS || n == 0)
            continue;
        if (count + n > cap) {
            size_t grown_cap = (count + n) * 2;
            CUgraphNode *grown = realloc(seen, grown_cap * sizeof *grown);
            if (grown == NULL)
                break;
            seen = grown;
            cap = grown_cap;
        }
        CUgraphEdgeData *data = calloc(n, sizeof *data);
        if (data &&
            gm_drv.cuGraphNodeGetDependencies_v2(node, seen + count, data, &n) == CUDA_SUCCESS) {
            /* Keep only nodes not queued yet (a DAG visits shared ancestors once). */
            size_t kept = count;
            for (size_t i = count; i < count + n; i++) {
                bool dup = false;
                for (size_t j = 0; j < kept && !dup; j++)
                    dup = seen[j] == seen[i];
                if (!dup)
                    seen[kept++] = seen[i];
            }
            count = kept;
        }
        free(data);
    }
    bool all = hit == NULL || found == target_count || head < count;
    free(hit);
    free(seen);
    return all;
}

static bool finish_check(CUstream origin, bool ptsz, uint64_t origin_key, cuuint64_t capture,
                         gm_joins_is_marker_fn is_marker, const struct noted_stream *mine,
                         uint32_t mine_count);

bool gm_joins_finish(CUstream origin, bool ptsz, cuuint64_t capture,
                     gm_joins_is_marker_fn is_marker, gm_joins_ending_t *ending) {
    *ending = (gm_joins_ending_t){0};
    uint64_t origin_key = gm_stream_key(origin, ptsz);
    pthread_mutex_lock(&noted_lock);
    /* By capture id. An invalidated capture may no longer tell its id: then the id its origin
     * was noted under when it began. */
    for (uint32_t i = 0; i < noted_count && capture == 0; i++)
        if (noted[i].origin && noted[i].key == origin_key && !noted[i].destroyed)
            capture = noted[i].capture;
    for (uint32_t i = 0; i < noted_count;) {
        if (capture == 0 || noted[i].capture != capture)
            i++;
        else if (gm_grow((void **)&ending->notes, &ending->cap, ending->count + 1,
                         sizeof *ending->notes) == GM_OK)
            ending->notes[ending->count++] = take_note(i);
        else
            drop_note(i); /* cannot check it: never refuse a capture for that */
    }
    for (uint32_t i = 0; i < ending->count && ending->graph == NULL; i++)
        ending->graph = ending->notes[i].graph;
    ending->capture = capture;
    ending->next = endings;
    endings = ending;
    pthread_mutex_unlock(&noted_lock);
    /* The notes are this end's alone now: the check reads them without the lock. */
    return finish_check(origin, ptsz, origin_key, capture, is_marker, ending->notes, ending->count);
}

bool gm_joins_graph_still_mine(gm_joins_ending_t *ending) {
    pthread_mutex_lock(&noted_lock);
    bool mine = ending->graph != NULL && !ending->given_out;
    pthread_mutex_unlock(&noted_lock);
    return mine;
}

/* Puts a taken note back (noted_lock held): beside a note of the same stream made meanwhile it
 * only adds what it knew (the origin's mark, the graph). Without host memory it is lost: the
 * check then skips that stream, never a refusal. */
static void put_back(noted_stream_t note) {
    for (uint32_t i = 0; i < noted_count && !note.destroyed; i++) {
        noted_stream_t *n = &noted[i];
        if (n->capture == note.capture && n->key == note.key && !n->destroyed) {
            n->origin |= note.origin;
            if (n->graph == NULL)
                n->graph = note.graph;
            if (n->marker == NULL) /* else made meanwhile: the later marker */
                n->marker = note.marker;
            return;
        }
    }
    if (gm_grow((void **)&noted, &noted_cap, noted_count + 1, sizeof *noted) == GM_OK)
        noted[noted_count++] = note;
    else
        free(note.tails);
}

void gm_joins_ended(gm_joins_ending_t *ending, bool over) {
    pthread_mutex_lock(&noted_lock);
    for (gm_joins_ending_t **link = &endings; *link != NULL; link = &(*link)->next)
        if (*link == ending) {
            *link = ending->next;
            break;
        }
    for (uint32_t i = 0; i < ending->count; i++) {
        noted_stream_t note = ending->notes[i];
        for (uint32_t k = 0; k < ending->gone_count && !over; k++)
            if (ending->gone[k].key == note.key && ending->gone[k].capture == note.capture &&
                !note.destroyed) {
                note = ending->gone[k]; /* destroyed meanwhile: what it captured last */
                ending->gone[k].tails = NULL;
            }
        if (ending->given_out && note.graph == ending->graph)
            note.graph = NULL;
        if (over)
            free(note.tails);
        else
            put_back(note);
    }
    /* Notes made for the capture while it ended (another thread's marker) are of nothing now:
     * capture ids never come back, so nothing would ever take them. */
    for (uint32_t i = 0; over && ending->capture != 0 && i < noted_count;) {
        if (noted[i].capture == ending->capture)
            drop_note(i);
        else
            i++;
    }
    pthread_mutex_unlock(&noted_lock);
    for (uint32_t k = 0; k < ending->gone_count; k++)
        free(ending->gone[k].tails);
    free(ending->gone);
    free(ending->notes);
    *ending = (gm_joins_ending_t){0};
}

/* Whether a noted stream's last nodes are not all ancestors of the origin's frontier. */
static bool finish_check(CUstream origin, bool ptsz, uint64_t origin_key, cuuint64_t capture,
                         gm_joins_is_marker_fn is_marker, const noted_stream_t *mine,
                         uint32_t mine_count) {
    capture_info_fn info = GM_REAL_PT(cuStreamGetCaptureInfo_v3, ptsz);
    CUstreamCaptureStatus status;
    const CUgraphNode *roots = NULL;
    /* The edge data is asked for though never read: without it the driver refuses to list
     * dependencies that carry data (CUDA_ERROR_LOSSY_QUERY), and the check would be skipped. */
    const CUgraphEdgeData *edges = NULL;
    size_t root_count = 0;
    if (mine_count == 0 ||
        info(origin, &status, NULL, NULL, &roots, &edges, &root_count) != CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return false;
    bool unjoined = false;
    for (uint32_t i = 0; i < mine_count && !unjoined; i++) {
        if (mine[i].key == origin_key)
            continue;
        if (mine[i].destroyed) { /* never ask a stream that is gone */
            unjoined =
                !all_reached(roots, root_count, mine[i].tails, mine[i].tail_count, is_marker);
            continue;
        }
        /* Another thread's per-thread stream (or this thread's of another context): its handle
         * names another stream here, so it is judged by its last marker (none: it received
         * none, nothing of graphmem's to check). */
        if (gm_stream_key(mine[i].stream, mine[i].ptsz) != mine[i].key) {
            unjoined =
                mine[i].marker != NULL && !all_reached(roots, root_count, &mine[i].marker, 1, NULL);
            continue;
        }
        capture_info_fn side_info = GM_REAL_PT(cuStreamGetCaptureInfo_v3, mine[i].ptsz);
        cuuint64_t side_capture = 0;
        const CUgraphNode *tails = NULL;
        size_t tail_count = 0;
        if (side_info(mine[i].stream, &status, &side_capture, NULL, &tails, &edges, &tail_count) !=
                CUDA_SUCCESS ||
            status != CU_STREAM_CAPTURE_STATUS_ACTIVE || side_capture != capture)
            continue; /* that stream left the capture some other way */
        unjoined = !all_reached(roots, root_count, tails, tail_count, is_marker);
    }
    return unjoined;
}
