/* A part's life: build, group, mapping, idleness, trim, reclaim (engine_part.c). */
#ifndef GRAPHMEM_ENGINE_PART_H
#define GRAPHMEM_ENGINE_PART_H

#include "engine_internal.h"

/* The index of m's node in the topology of the instantiation with `token` (GM_NO_NODE when the
 * topology does not hold it, or m is NULL). */
static inline uint32_t gm_marker_index(const gm_marker_t *m, uint64_t token) {
    return m && m->seen == token ? m->seen_index : GM_NO_NODE;
}

/* The records a part plans: its graph's own, then those of the conditional bodies in its
 * topology (GRAPHMEM_LIFT_RESTRICTIONS). */
typedef struct gm_record_set {
    gm_record_t **own;
    uint32_t own_count;
    gm_record_t **inner;
    uint32_t inner_count;
} gm_record_set_t;

/* The part of `g` on `device` for `records` (those whose alloc markers the instantiation with
 * `token` found), not yet planned: its records (referenced for the part's life), its items and
 * what its plan takes. Its exec is set by the caller. Under the lock. */
gm_status_t gm_part_prepare(gm_engine_t *e, gm_graph_t *g, const gm_record_set_t *records,
                            int device, uint64_t token, gm_part_t **out);
/* Plans a prepared part from `topo`. Reads and writes only the part (and the engine's constant
 * page and configuration): made without the lock while no other thread can see the part yet. A
 * failure leaves it to be discarded (under the lock). */
gm_status_t gm_part_plan(const gm_engine_t *e, gm_part_t *p, const gm_topology_t *topo);
void gm_part_discard(gm_engine_t *e, gm_part_t *p); /* built, never linked */
void gm_part_link(gm_engine_t *e, gm_part_t *p);    /* into e->parts */
/* Frees a part of a destroyed exec once nothing of it is mapped, held or live; the exec goes
 * with its last part. */
void gm_part_try_reclaim(gm_engine_t *e, gm_part_t *p);
/* The allocation is freed: its part may reuse or give back its memory once the free is done. */
void gm_record_freed(gm_record_t *r);
/* GRAPHMEM_FREE_ON_DESTROY: the part's exec is destroyed; its allocations still live are freed
 * once its last run finished, as by a free outside the graph enqueued behind that run. */
void gm_part_free_live(gm_engine_t *e, gm_part_t *p);
void gm_exec_free(gm_engine_t *e, gm_exec_t *x); /* its parts are gone */

/* The group a launch of `p` on `stream` runs in: joins the stream's group (first launch, or the
 * remap policy once p is idle); GM_ERR_NOT_READY with *wait set when p must first finish. */
gm_status_t gm_part_enter(gm_engine_t *e, gm_part_t *p, uint64_t stream, gm_fence_t **wait);

/* What a gm_part_map call created, so that a launch that fails afterwards can take it back. */
typedef struct gm_map_undo {
    bool shared_before, escape_before;
    gm_arena_t *arena[2];
    uint32_t *slots[2];
    uint32_t count[2], cap[2];
} gm_map_undo_t;
/* Maps what p's next launch needs; with `escape_taken`, not its escape windows, which that
 * launch takes over mapped (gm_part_take_escape). */
gm_status_t gm_part_map(gm_engine_t *e, gm_part_t *p, bool escape_taken, gm_map_undo_t *undo);
void gm_part_map_undo(gm_engine_t *e, gm_part_t *p, gm_map_undo_t *undo);
void gm_map_undo_fini(gm_map_undo_t *undo);
void gm_part_unmap_shared(gm_engine_t *e, gm_part_t *p);
void gm_part_unmap_escape(gm_engine_t *e, gm_part_t *p);
/* A launch of p's exec with AutoFreeOnLaunch was accepted where q (an exec of its window family,
 * same device, same escape plan) held allocations at its addresses: they are freed, and p takes
 * q's escape memory as it is mapped (arena and mappings), giving q its own unmapped one. q's
 * pending frees must be behind the launch. Nothing is unmapped or mapped. */
void gm_part_take_escape(gm_engine_t *e, gm_part_t *p, gm_part_t *q);

/* Whether its latest run finished (then its fence is dropped). Never blocks. */
bool gm_part_idle(gm_engine_t *e, gm_part_t *p);
/* Unmaps what of `p` no launch or allocation needs; with `release`, gives its escape arena back
 * too. Returns the fence whose completion would let it go further (its run, or a pending free of
 * its allocations), NULL when nothing recorded holds it (done, busy, or unfreed allocations). */
gm_fence_t *gm_part_trim(gm_engine_t *e, gm_part_t *p, bool release);
/* Trims and reclaims every part of the device, then releases its idle handles: also how a
 * mapping makes room under the cap. */
void gm_trim_device(gm_engine_t *e, int device);

#endif
