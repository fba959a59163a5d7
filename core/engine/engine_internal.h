/* The engine's objects. Private to core/engine/; the functions its files share are declared in
 * the header of the file that defines them (engine_record.h, engine_part.h, ...), so the includes
 * show which file uses which, and they form no circle (tests/house/check_layers.py).
 *
 * Ownership:
 * - record: one graph allocation. Kept while its node lives (owner graph), while an exec plans
 *   it (exec_refs), or while it is live (made by a launch, not freed). Holds its VA window: its
 *   own (large) or a reference on a shared chunk window (small).
 * - marker: an alloc marker is embedded in its record; free markers belong to their graph. All
 *   are made, attached and ended by engine_graph.c.
 * - part: what one exec needs on one device: plan, items (VA windows to map), escape arena,
 *   current mappings. Outlives its exec while its memory is mapped or its allocations are live.
 * - group: the sharing unit of a device: one arena of handles mapped by all member parts.
 * - fence: a backend fence with a count of holders (a part's last run, a group's last user, a
 *   pending free); released with its last holder.
 *
 * Every field below is guarded by the engine lock. core/README.md has the launch protocol. */
#ifndef GRAPHMEM_ENGINE_INTERNAL_H
#define GRAPHMEM_ENGINE_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "engine.h"
#include "keymap.h"
#include "keyset.h"
#include "lock.h"
#include "pack.h"
#include "plan.h"
#include "pool.h"
#include "shape.h"
#include "util.h"
#include "vaspace.h"

#define GM_PACK_ALIGN 256u /* cudaMallocAsync's alignment guarantee */

typedef struct gm_graph gm_graph_t;
typedef struct gm_record gm_record_t;
typedef struct gm_part gm_part_t;
typedef struct gm_group gm_group_t;
typedef struct gm_exec gm_exec_t;

typedef struct gm_va_range {
    uint64_t va, bytes;
} gm_va_range_t;

/* What the graph proves comes before a marker, found online from its ancestors (core/README.md,
 * "The model"): a vector clock over the graph's chains. The marker of each packed allocation and
 * of each free of one in its own graph (the only markers ever asked about) takes the next position
 * on a chain of its graph: a chain is a sequence of markers each proven to come before the next,
 * so a marker at position p of chain c comes before every marker whose clock holds p or more for
 * c. A clock lists only the chains among the marker's ancestors, sorted: about as many as the
 * capture ran streams side by side, where a set of record ids grew with the whole capture and was
 * copied wherever branches joined (quadratic in a long capture of forks). */
typedef struct gm_clock_entry {
    uint32_t chain, position;
} gm_clock_entry_t;

/* A chain of a graph: its last position taken, and when (the graph's placement count then). */
typedef struct gm_chain {
    uint32_t tip;
    uint64_t placed;
} gm_chain_t;

/* A clock's entries, by chain: one is kept in place of the pointer (a marker along one stream's
 * chain, most of them, then costs no allocation of its own), more in an owned array. */
typedef struct gm_clock {
    union {
        gm_clock_entry_t *many; /* count > 1; owned */
        gm_clock_entry_t one;   /* count == 1 */
    } at;
    uint32_t count;
} gm_clock_t;

static inline const gm_clock_entry_t *gm_clock_entries(const gm_clock_t *clock) {
    return clock->count > 1 ? clock->at.many : &clock->at.one;
}

typedef struct gm_marker {
    gm_marker_kind_t kind;
    gm_record_t *record;
    gm_graph_t *graph;
    uint64_t node; /* 0 until attached */
    gm_clock_t before;
    uint32_t chain, position; /* its place on a chain of its graph; position 0: none */
    /* Its node's index in the topology an instantiation reads (gm_exec_build), valid while `seen`
     * is that instantiation's token: one lookup of each node, no map from nodes to indices. */
    uint64_t seen;
    uint32_t seen_index;
    /* Its node is in the engine's `nodes`; false while it waits in the pending list. */
    bool indexed;
    bool captured; /* gm_node_call_t.captured */
} gm_marker_t;

/* A padded window shared by several allocations: small ones of one packer, or a run. */
typedef struct gm_chunk {
    uint64_t base, bytes, va; /* va = base + pad: where the packer's offsets start */
    uint32_t refs;            /* records in it, +1 while its packer lives */
} gm_chunk_t;

/* The graph's open run (engine_record.c, "runs"): allocations of one size (in pages), device
 * and access with adjacent addresses in one chunk, none of them freed in the graph yet. The next
 * such allocation takes the addresses right after it, so that a first launch maps the run's
 * allocations together. */
typedef struct gm_run {
    gm_record_t *last;     /* NULL: no open run */
    gm_chunk_t *chunk;     /* NULL while `last` is alone in its window */
    uint64_t used;         /* bytes taken from the run's first address */
    uint64_t member_bytes; /* each allocation's, in whole pages */
} gm_run_t;

typedef struct gm_packer {
    gm_pack_t *pack;
    int device;
    uint64_t access_mask;
    gm_chunk_t **chunks;
    uint32_t chunk_count, chunk_cap;
    gm_record_t **ids; /* pack id -> record (NULL once forgotten) */
    uint32_t id_count, id_cap;
    struct gm_packer *next;
} gm_packer_t;

struct gm_record {
    uint64_t id, va;
    gm_alloc_params_t params;
    gm_graph_t *owner; /* NULL once its graph is gone */
    gm_marker_t alloc;
    gm_chunk_t *chunk; /* packed or in a run: its chunk; NULL: own window [win_base, +win_bytes) */
    uint64_t win_base, win_bytes;
    uint64_t chunk_offset;
    gm_packer_t *packer;
    uint32_t pack_id;
    gm_marker_t *free_marker;  /* free node in the owner graph */
    gm_marker_t *foreign_free; /* free node in another graph */
    bool freed_in_owner;       /* stays set after the owner graph is gone */
    uint32_t exec_refs;
    bool live;
    gm_part_t *live_part; /* whose escape arena backs it */
    /* Records sharing this address (reuse inside one graph, clones), newest first from the
     * engine's `addresses`; doubly linked so that a record leaves in constant time (a chain of
     * thousands of reuses is common, and a graph's destruction removes every one). */
    gm_record_t *va_next, *va_prev;
};

/* A marker's one dependency when it is no marker (its lead), with that node's own dependencies as
 * the driver told them when the marker was made (engine.h, gm_search_t); `known` when they were
 * all told and fit. */
typedef struct gm_lead {
    uint64_t node;
    uint64_t deps[GM_KNOWN_DEPS];
    uint8_t count;
    bool known;
} gm_lead_t;

typedef struct gm_node_fact {
    uint64_t node;
    gm_node_facts_t facts;
} gm_node_fact_t;

struct gm_graph {
    uint64_t key;
    uint64_t serial; /* unique in the engine's life: execs of one graph share its windows */
    gm_record_t **records;
    uint32_t record_count, record_cap;
    gm_marker_t **frees;
    uint32_t free_count, free_cap;
    gm_packer_t *packers;
    gm_run_t run;
    gm_chain_t *chains; /* gm_marker_place */
    uint32_t chain_count, chain_cap;
    uint64_t placements; /* markers placed on chains so far */
    /* Its marker nodes in the order they were made, which is the order the driver made them in
     * (each is added inside the engine's critical section that makes the marker), with the
     * dependencies they were made with (gm_node_call_t.deps): the read-back walks them beside the
     * driver's list of the graph's nodes, which comes in that order too (gm_engine_node_facts).
     * Not kept under GRAPHMEM_LIFT_RESTRICTIONS (markers may go), nor for markers moved in from
     * a child graph or copied into a clone (their nodes are asked about instead). */
    gm_node_fact_t *facts;
    uint32_t fact_count, fact_cap;
    /* The leads of the facts of the same index, below lead_count (unknown past it, and where
     * `known` is false): an array only graphs whose markers follow kernels need. */
    gm_lead_t *leads;
    uint32_t lead_count, lead_cap;
    /* The application added edges to the graph: the dependencies above may no longer be all of
     * a marker's. */
    bool edges_edited;
    /* Its execs not destroyed, linked by graph_next: one at most, as for the driver (§A3.7),
     * unless GRAPHMEM_LIFT_RESTRICTIONS lets it be instantiated again (they share its windows). */
    gm_exec_t *execs;
};

typedef struct gm_item {
    uint64_t va; /* where arena page `arena_page` is mapped */
    uint64_t pages, arena_page;
    bool escaping;
    /* Of an escaping item, its last pages past the escape arena's end, mapped from page 0 of the
     * group's arena (gm_plan_item_t.spill_pages); 0 for most. */
    uint64_t spill_pages;
    uint64_t access_mask;
} gm_item_t;

typedef struct gm_mapping {
    gm_handle_t *handle;
    uint64_t va;
} gm_mapping_t;

typedef struct gm_maplist {
    gm_mapping_t *maps;
    uint32_t count, cap;
    bool mapped; /* every mapping the items need is in place */
} gm_maplist_t;

/* GPU order as the engine sees it: a backend fence recorded, at the call that enqueued the work,
 * on the stream the caller handed over, or deferred: no handle yet, it stands for everything
 * enqueued on `stream` until it is realized (engine_fence.c; listed in the engine's `deferred`
 * while so). `done` caches a completed query. */
typedef struct gm_fence {
    uint64_t handle;
    uint64_t stream;
    uint32_t refs;
    bool done;
    /* Cleared, with release, under defer_lock by whichever thread realizes it (a join holds no
     * engine lock): handle and done are read only after it was seen false with acquire. */
    atomic_bool deferred;
    struct gm_fence *deferred_next;
} gm_fence_t;

/* A free of one of the part's allocations enqueued on `stream` (GM_NO_STREAM once that stream is
 * destroyed); `fence` follows it. */
typedef struct gm_free_point {
    uint64_t stream;
    gm_fence_t *fence;
} gm_free_point_t;

struct gm_part {
    gm_exec_t *exec;
    int device;
    gm_plan_t plan;
    gm_item_t *items;
    uint32_t item_count;
    gm_record_t **records; /* its allocations */
    uint32_t record_count;
    gm_record_t **escaping; /* those not freed in the graph: live after each launch */
    uint32_t escaping_count;
    uint64_t plan_ns;
    gm_plan_alloc_t *plan_allocs; /* from gm_part_prepare to gm_part_plan */
    gm_group_t *group;
    gm_part_t *group_next;
    gm_arena_t escape;
    gm_maplist_t shared_maps, escape_maps;
    uint32_t unfreed;
    gm_free_point_t *points;
    uint32_t point_count, point_cap;
    /* Its latest launch or upload: on run_stream, finished once run_fence is (NULL: none that is
     * not proven finished). The driver orders an exec's launches, so it covers the earlier ones. */
    uint64_t run_stream;
    gm_fence_t *run_fence;
    uint64_t graph_serial; /* of its graph: another exec of that graph maps the same windows */
    /* Joined another stream's finished group at its first launch, on this stream (GM_NO_STREAM:
     * none): launched there again, it leaves for that stream's own group rather than wait when
     * the group is busy elsewhere (engine_part.c, gm_part_enter). */
    uint64_t adopted_stream;
    gm_order_mark_t run_mark; /* its latest launch's place in its stream (engine_order.c) */
    bool mapped_once;
    /* GM_EXEC_PINNED: never unmapped, in a group of its own, until the exec is destroyed and
     * gm_engine_device_idle cleared it. pin_stamp: when its exec was destroyed (e->pin_clock; 0
     * while alive or once cleared). */
    bool pinned;
    uint64_t pin_stamp;
    bool busy; /* being mapped: a trim for room must leave it alone */
    gm_part_t *all_next, *all_prev;
};

struct gm_group {
    int device;
    uint64_t stream;           /* key in the device's group map; GM_NO_STREAM when private */
    uint64_t last_stream;      /* where its latest user ran (GM_NO_STREAM once destroyed) */
    gm_fence_t *last_fence;    /* after that user's launch; NULL: no user to wait for */
    gm_order_mark_t last_mark; /* that launch's place in last_stream (engine_order.c) */
    gm_part_t *last_part;
    bool last_launch; /* that user's work was a launch, which the driver orders before the exec's
                       * later launches and uploads (an upload is ordered before neither) */
    bool in_map;      /* false: a private group (no_alias) */
    gm_arena_t arena;
    gm_part_t *members;
    uint32_t member_count;
};

struct gm_exec {
    uint64_t key;
    gm_graph_t *graph;
    gm_exec_t *graph_next; /* the next exec of `graph` */
    unsigned flags;
    gm_part_t **parts;
    uint32_t part_count;
    gm_record_t **foreign; /* allocations of other graphs its launches free */
    uint32_t foreign_count;
    bool destroyed;
    bool owns_graph;  /* planned for a graph graphmem did not know: `graph` is its own until the
                         commit */
    uint64_t context; /* GM_EXEC_PINNED: where its device launches run */
    gm_shape_t shape; /* what cuGraphExecUpdate pairs (shape.h) */
    gm_exec_report_t report; /* counters; bytes are filled when reported */
};

typedef struct gm_node_entry {
    uint64_t node;
    gm_marker_t *marker;
} gm_node_entry_t;

struct gm_engine {
    gm_lock_t lock;
    gm_backend_t backend;
    gm_engine_config_t config;
    uint64_t page, pad, chunk_bytes;
    /* Allocations below this many bytes are packed into chunks: the small limit, a page at most
     * under GRAPHMEM_LIFT_RESTRICTIONS (engine_record.c, assign_address). */
    uint64_t packed_below;
    gm_vaspace_t *vas;
    gm_pool_t *pools[GM_MAX_DEVICES];
    gm_map_t graphs, nodes, execs, addresses; /* addresses: va -> first record of its chain */
    /* Marker nodes made since `nodes` was last read: a put into `nodes` lands on a slot no other
     * step of a capture touches, a cache miss between two driver calls, so the capture path
     * appends here instead (room in `nodes` reserved for each) and every reader of `nodes` moves
     * them in first (engine_graph.c, node index). */
    gm_node_entry_t *nodes_pending;
    uint32_t pending_count, pending_cap;
    /* The graph gm_graph_get found last (a capture asks for one graph marker after marker); every
     * removal from `graphs` goes through graph_unlist, which forgets it. */
    gm_graph_t *graph_memo;
    gm_spare_t spare_records, spare_markers; /* freed records and free markers, for reuse */
    gm_map_t moved;     /* children moved into a parent with markers: still graphs holding some */
    gm_keyset_t served; /* the keys of `execs`, read without the lock */
    gm_keyset_t address_keys;         /* the keys of `addresses`, read without the lock */
    atomic_bool address_keys_partial; /* an insert failed: the set may miss addresses */
    uint64_t next_graph_serial;
    gm_map_t groups[GM_MAX_DEVICES]; /* stream -> group */
    gm_part_t *parts;                /* every part, alive exec or not */
    uint64_t next_record_id;
    gm_exec_report_t *dead_reports;
    uint32_t dead_count, dead_cap;
    /* Covers (engine_cover.c): how many are held, how many launches and trims wait for them to
     * end (meanwhile no new cover starts); signalled when either count falls to zero. */
    uint32_t covers, cover_waiters;
    gm_cond_t uncovered;
    gm_map_t scratch_maps;  /* page -> its scratch mapping's device and holders (engine_cover.c) */
    uint32_t scratch_idle;  /* scratch mappings no cover holds, unmapped before any map */
    gm_va_range_t *held_va; /* address ranges to release once no scratch mapping is left there */
    uint32_t held_va_count, held_va_cap;
    uint64_t scratch_handle[GM_MAX_DEVICES]; /* backend handles of one page; 0: none made yet */
    /* Deferred fences (engine_fence.c), at most one per stream. defer_lock (taken after `lock`
     * when both are) guards the list and is held across the driver's call of a launch that
     * defers and of a call by which a stream joins a capture. defer_active counts the listed
     * fences and the launches deferring now; joins_unlocked the joins running without the lock. */
    gm_lock_t defer_lock;
    gm_fence_t *deferred;
    atomic_uint defer_active, joins_unlocked;
    /* Event order (engine_order.c), under order_lock (taken after `lock` when both are): stream
     * -> its served count and what it waited for; event -> the mark of its last record.
     * order_active: a served launch was committed (before it, no mark can matter). */
    pthread_mutex_t order_lock;
    gm_map_t order_streams, order_events;
    uint64_t order_next_id;
    atomic_bool order_active;
    /* Parts of destroyed GM_EXEC_PINNED execs still pinned (gm_engine_device_idle), and the clock
     * that stamps each exec's destruction. */
    atomic_uint pinned_waiting;
    atomic_uint_fast64_t pin_clock;
    /* Raised by every release of `lock` after a change (gm_engine_unlock; lookups release it with
     * gm_engine_unlock_unchanged): while it is still the epoch the fast path's exec was armed
     * under (fast.epoch), nothing changed since that exec's last launch. */
    uint64_t epoch;
    /* The launch fast path takes no mutex, and runs only while fast_open (core/README.md, "Launch
     * protocol"). fast_open is written with both locks held and is true only while no
     * section of `lock` is in progress: each closes it first (gm_engine_lock), so no fast relaunch
     * runs between a section's decisions and its actions. A section reopens it on its release
     * when it armed an exec (fast_armed, by arm_fast), or when it found it open and changed nothing
     * (fast_reopen). */
    bool fast_open, fast_armed, fast_reopen;
    /* In place of a mutex the fast path holds fast_gate (one relaunch at a time) and goes only
     * while fast_blocked is down; every holder of defer_lock raises fast_blocked, then waits for
     * the gate to be let go (gm_defer_lock: Dekker, sequentially consistent), so the fast path is
     * excluded wherever defer_lock is held, as if it took that lock, but lets its gate go with a
     * plain store: no locked instruction after the driver's call. */
    atomic_bool fast_gate, fast_blocked;
    /* The exec the fast path may relaunch (engine_launch.c, arm_fast): its key (0: none), the
     * stream of its last launch, which left nothing for a relaunch there to do but the driver's
     * call, the epoch that launch's section produced, and the stream's deferred fence that
     * followed it, as long as that fence is not realized. One exec at a time: every section that
     * changes anything raises the epoch, so one exec's steady state ends as soon as another
     * launch takes the whole protocol. Written in sections of `lock`, read by the fast path while
     * fast_open (fast_gate held); kept beside the flags and the epoch, so that a relaunch reads
     * the engine's own few cache lines, not the exec map and the exec. `exec` is also read before
     * the gate is taken (gm_engine_relaunch), so that a launch of any other exec never touches
     * the gate, let alone waits for it: atomic, relaxed (the gate and fast_open order the rest). */
    struct {
        _Atomic uint64_t exec;
        uint64_t stream, epoch;
        gm_fence_t *fence;
        gm_exec_t *x;
    } fast;
    uint64_t last_launch_exec, last_launch_stream; /* the latest launch's (arm_fast) */
    uint64_t build_token; /* the latest instantiation's (gm_marker_t.seen) */
};

/* One more round of waiting for a fast relaunch's driver call, which is short but may block (a
 * full launch queue): first yields, then sleeps of up to 128 us, so a waiter neither burns its
 * core nor, under a real-time policy, keeps the relaunching thread off it for good. */
static inline void gm_fast_backoff(unsigned *round) {
    if (*round < 16) {
        sched_yield();
    } else {
        unsigned shift = *round - 16 < 7 ? *round - 16 : 7;
        gm_nap(1000L << shift); /* 1 us, doubling to 128 us; the defer lock may be held */
    }
    (*round)++;
}

/* Takes defer_lock; from its return until gm_defer_unlock no launch fast path runs (a relaunch in
 * flight has made its driver call, none begins). */
static inline void gm_defer_lock(gm_engine_t *e) {
    gm_lock(&e->defer_lock);
    atomic_store(&e->fast_blocked, true);
    for (unsigned round = 0; atomic_load(&e->fast_gate);)
        gm_fast_backoff(&round);
}

static inline void gm_defer_unlock(gm_engine_t *e) {
    atomic_store_explicit(&e->fast_blocked, false, memory_order_release);
    gm_unlock(&e->defer_lock);
}

/* Opens or closes the launch fast path: under the defer lock, so a close waits for the relaunch in
 * flight. `lock` held. */
static inline void gm_engine_set_fast(gm_engine_t *e, bool open) {
    gm_defer_lock(e);
    e->fast_open = open;
    gm_defer_unlock(e);
}

/* Closes the fast path for the section that holds `lock` from here on; remembers whether it was
 * open, for gm_engine_unlock_unchanged. */
static inline void gm_engine_close_fast(gm_engine_t *e) {
    e->fast_reopen = e->fast_open;
    if (e->fast_open)
        gm_engine_set_fast(e, false);
}

/* Forgets the exec armed for the fast path when it is `exec` (0: whichever it is). In a section
 * (the fast path closed): the exec's end, so that its handle, which the driver may give to an exec
 * graphmem does not serve, no longer leads a launch to the gate. */
static inline void gm_engine_disarm(gm_engine_t *e, uint64_t exec) {
    if (!exec || atomic_load_explicit(&e->fast.exec, memory_order_relaxed) == exec)
        atomic_store_explicit(&e->fast.exec, 0, memory_order_relaxed);
}

/* Begins a section: every entry of engine.h that reads or writes the engine's state. */
static inline void gm_engine_lock(gm_engine_t *e) {
    gm_lock(&e->lock);
    gm_engine_close_fast(e);
}

/* A condition wait on `lock` inside a section: other sections run meanwhile, and may reopen the
 * fast path; it is closed again before the section goes on. Not a cancellation point (a thread
 * cancelled in the wait would end holding the engine lock): common/lock.c waits on futexes. */
static inline void gm_engine_wait(gm_engine_t *e, gm_cond_t *cond) {
    bool reopen = e->fast_reopen;
    gm_cond_wait(cond, &e->lock);
    gm_engine_close_fast(e);
    e->fast_reopen |= reopen;
}

/* Releases the engine lock after anything that may have changed the engine's state: no exec
 * armed before stays armed; one armed in this section is from now on. */
static inline void gm_engine_unlock(gm_engine_t *e) {
    e->epoch++;
    e->fast_reopen = false;
    if (e->fast_armed) {
        e->fast_armed = false;
        gm_engine_set_fast(e, true);
    }
    gm_unlock(&e->lock);
}

/* Releases it after a section that changed nothing (a lookup, a read of counters): every exec
 * armed before stays armed, and the fast path is open again if it was. */
static inline void gm_engine_unlock_unchanged(gm_engine_t *e) {
    if (e->fast_reopen) {
        e->fast_reopen = false;
        gm_engine_set_fast(e, true);
    }
    gm_unlock(&e->lock);
}

/* The devices a mapping of `device`'s memory gives access to: `device` first, then those of
 * `access` (bit d: device d). Returns how many are in `devs`. */
static inline int gm_access_devices(const gm_engine_t *e, int device, uint64_t access,
                                    int devs[GM_MAX_DEVICES]) {
    int n = 0;
    devs[n++] = device;
    for (int d = 0; d < e->config.device_count; d++)
        if (d != device && (access >> d & 1))
            devs[n++] = d;
    return n;
}

#endif
