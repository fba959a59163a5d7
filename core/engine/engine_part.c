/* A part's life, in one place: built at instantiation (what one exec needs on one device), mapped
 * into its group's arena and its escape arena at a launch, unmapped when idle, trimmed, reclaimed
 * once its exec is destroyed and nothing of it is mapped, held or live.
 *
 * Mapping: a group's arena is mapped by every member part through persistent alias mappings:
 * members never run at the same time (one stream, or stream waits inserted between them), so the
 * bytes a plan frees inside its graph are free for the next member. Each item maps whole the arena
 * handles overlapping its pages; its VA window is padded by max_handle - page on both sides so the
 * overhang of any handle fits.
 *
 * Trim: what may be unmapped and given back is decided with fences already recorded: memory is
 * kept while it is mapped for a scheduled or running launch or holds an unfreed allocation
 * (semantics §A11.1). Nothing here records a fence or waits: a part whose fence has not completed
 * is simply kept, so trim, release and trim-for-room can never unmap memory a launch still uses. */
#include "engine_part.h"

#include <stdlib.h>

#include "engine_cover.h"
#include "engine_fence.h"
#include "engine_order.h"
#include "engine_group.h"
#include "engine_record.h"
#include "log.h"

/* ---- build and end ------------------------------------------------------------------------- */

static void part_free(gm_engine_t *e, gm_part_t *p) {
    if (p->pin_stamp) /* still counted as waiting (gm_engine_device_idle) */
        atomic_fetch_sub_explicit(&e->pinned_waiting, 1, memory_order_relaxed);
    for (uint32_t i = 0; i < p->record_count; i++) {
        gm_record_t *r = p->records[i];
        if (r->live_part == p)
            r->live_part = NULL;
        r->exec_refs--;
        gm_record_unref_check(e, r);
    }
    for (uint32_t i = 0; i < p->point_count; i++)
        gm_fence_unref(e, p->points[i].fence);
    gm_fence_unref(e, p->run_fence);
    gm_arena_fini(&p->escape);
    gm_plan_free(&p->plan);
    free(p->plan_allocs);
    free(p->items);
    free(p->records);
    free(p->escaping);
    free(p->points);
    free(p->shared_maps.maps);
    free(p->escape_maps.maps);
    free(p);
}

/* At trace level, each item of a new plan: where its pages went, and why (what escapes). */
static void trace_plan(const gm_part_t *p, const gm_plan_alloc_t *allocs) {
    for (uint32_t k = 0; k < p->item_count; k++) {
        uint32_t held = 0, escaping = 0;
        for (uint32_t i = 0; i < p->record_count; i++)
            if (allocs[i].item == k) {
                held++;
                escaping += allocs[i].free_node == GM_NO_NODE;
            }
        const gm_item_t *it = &p->items[k];
        gm_log(GM_LOG_TRACE,
               "plan: item %u at %#llx: %llu pages, %u allocations (%u escaping), %s arena page "
               "%llu, %llu pages on into the shared arena",
               k, (unsigned long long)it->va, (unsigned long long)it->pages, held, escaping,
               it->escaping ? "escape" : "shared", (unsigned long long)it->arena_page,
               (unsigned long long)it->spill_pages);
    }
    gm_log(GM_LOG_TRACE, "plan: %u items, escape arena %llu pages, shared %llu, lower bound %llu B",
           p->item_count, (unsigned long long)p->plan.escape.pages,
           (unsigned long long)p->plan.shared.pages, (unsigned long long)p->plan.lower_bound);
}

/* Items in the order records come, one per large record and one per chunk used. */
static gm_record_t *record_at(const gm_record_set_t *set, uint32_t i) {
    return i < set->own_count ? set->own[i] : set->inner[i - set->own_count];
}

gm_status_t gm_part_prepare(gm_engine_t *e, gm_graph_t *g, const gm_record_set_t *records,
                            int device, uint64_t token, gm_part_t **out) {
    gm_part_t *p = calloc(1, sizeof *p);
    gm_plan_alloc_t *allocs = NULL;
    gm_map_t item_of_chunk = {0}; /* chunk -> its item + 1: records of one chunk share an item */
    uint32_t n = 0, total = records->own_count + records->inner_count;
    for (uint32_t i = 0; i < total; i++)
        n += record_at(records, i)->params.device == device;
    if (p)
        p->adopted_stream = GM_NO_STREAM;
    if (!p || !(p->records = calloc(n, sizeof *p->records)) ||
        !(p->items = calloc(n, sizeof *p->items)) ||
        !(p->escaping = calloc(n, sizeof *p->escaping)) || !(allocs = calloc(n, sizeof *allocs)) ||
        gm_map_reserve(&item_of_chunk, n) != GM_OK) {
        free(allocs);
        gm_map_fini(&item_of_chunk);
        if (p)
            part_free(e, p); /* no references taken yet */
        return GM_ERR_OUT_OF_MEMORY;
    }
    p->device = device;
    for (uint32_t i = 0; i < total; i++) {
        gm_record_t *r = record_at(records, i);
        uint32_t node = gm_marker_index(&r->alloc, token);
        if (r->params.device != device || node == GM_NO_NODE)
            continue;
        uint32_t item = p->item_count;
        uintptr_t known = r->chunk ? (uintptr_t)gm_map_get(&item_of_chunk, (uintptr_t)r->chunk) : 0;
        if (known)
            item = (uint32_t)(known - 1);
        if (item == p->item_count) {
            if (r->chunk) /* reserved above: cannot fail */
                gm_map_put(&item_of_chunk, (uintptr_t)r->chunk, (void *)(uintptr_t)(item + 1));
            p->items[item].va = r->chunk ? r->chunk->va : r->va;
            p->item_count++;
        }
        p->items[item].access_mask |= r->params.access_mask;
        gm_marker_t *fm = r->free_marker;
        uint32_t free_node = fm && fm->node ? gm_marker_index(fm, token) : GM_NO_NODE;
        allocs[p->record_count] = (gm_plan_alloc_t){
            .size = r->params.size,
            .alloc_node = node,
            .free_node = free_node,
            .item = item,
            .item_offset = r->chunk ? r->chunk_offset : 0,
        };
        if (free_node == GM_NO_NODE)
            p->escaping[p->escaping_count++] = r;
        p->records[p->record_count++] = r;
        r->exec_refs++; /* kept while the part lives: the plan runs without the lock */
    }
    gm_map_fini(&item_of_chunk);
    p->plan_allocs = allocs;
    p->graph_serial = g->serial;
    *out = p;
    return GM_OK;
}

gm_status_t gm_part_plan(const gm_engine_t *e, gm_part_t *p, const gm_topology_t *topo) {
    gm_plan_input_t in = {
        .node_count = topo->node_count,
        .edge_count = topo->edge_count,
        .edge_from = topo->edge_from,
        .edge_to = topo->edge_to,
        .alloc_count = p->record_count,
        .allocs = p->plan_allocs,
        .item_count = p->item_count,
        .page = e->page,
        .max_handle = e->config.max_handle,
        .no_alias = e->config.no_alias,
    };
    uint64_t t0 = gm_now_ns();
    gm_status_t st = gm_plan_build(&in, &p->plan);
    if (st != GM_OK)
        return st;
    p->plan_ns = gm_now_ns() - t0;
    for (uint32_t k = 0; k < p->item_count; k++) {
        const gm_plan_item_t *pi = &p->plan.items[k];
        p->items[k].pages = pi->pages;
        p->items[k].arena_page = pi->arena_page;
        p->items[k].escaping = pi->escaping;
        p->items[k].spill_pages = pi->spill_pages;
    }
    if (GM_LOG_ENABLED(GM_LOG_TRACE))
        trace_plan(p, p->plan_allocs);
    for (uint32_t k = 0; k < p->plan.escape.handle_count; k++)
        if ((st = gm_arena_append(&p->escape, p->plan.escape.handle_pages[k])) != GM_OK)
            return st;
    free(p->plan_allocs);
    p->plan_allocs = NULL;
    return GM_OK;
}

void gm_part_discard(gm_engine_t *e, gm_part_t *p) {
    part_free(e, p);
}

void gm_part_link(gm_engine_t *e, gm_part_t *p) {
    GM_LIST_PUSH(e->parts, p, all_prev, all_next);
}

/* A destroyed exec lives on in its parts (their reports, its flag): the last part reclaimed takes
 * it along, which is why the exec's end is here and not with the exec. */
void gm_exec_free(gm_engine_t *e, gm_exec_t *x) {
    for (uint32_t i = 0; i < x->foreign_count; i++) {
        x->foreign[i]->exec_refs--;
        gm_record_unref_check(e, x->foreign[i]);
    }
    free(x->foreign);
    if (x->owns_graph)
        free(x->graph); /* empty, never listed */
    free(x->parts);
    gm_shape_free(&x->shape);
    free(x);
}

/* Frees a part of a destroyed exec once nothing of it is mapped, held or live. */
void gm_part_try_reclaim(gm_engine_t *e, gm_part_t *p) {
    if (!p->exec->destroyed || p->shared_maps.count || p->escape_maps.count || p->unfreed ||
        p->busy)
        return;
    for (uint32_t i = 0; i < p->escape.count; i++)
        if (p->escape.handles[i] && gm_pool_empty(e->pools[p->device], &p->escape, i) != GM_OK)
            return;
    gm_exec_t *x = p->exec;
    if (p->group)
        gm_group_leave(e, p);
    GM_LIST_UNLINK(e->parts, p, all_prev, all_next);
    for (uint32_t i = 0; i < x->part_count; i++)
        if (x->parts[i] == p)
            x->parts[i] = x->parts[--x->part_count];
    part_free(e, p);
    if (x->part_count == 0)
        gm_exec_free(e, x);
}

void gm_record_freed(gm_record_t *r) {
    gm_part_t *p = r->live_part;
    r->live = false;
    r->live_part = NULL;
    if (p)
        p->unfreed--;
}

void gm_part_free_live(gm_engine_t *e, gm_part_t *p) {
    if (!p->unfreed)
        return;
    /* The free point keeps the memory until that run is over; without host memory for it the
     * allocations stay live, as without the option. */
    gm_fence_t *f = gm_fence_done(e, p->run_fence) ? NULL : p->run_fence;
    if (f &&
        gm_grow((void **)&p->points, &p->point_cap, p->point_count + 1, sizeof *p->points) != GM_OK)
        return;
    if (f) {
        f->refs++;
        p->points[p->point_count++] = (gm_free_point_t){p->run_stream, f};
    }
    for (uint32_t k = 0; k < p->escaping_count; k++)
        if (p->escaping[k]->live && p->escaping[k]->live_part == p)
            gm_record_freed(p->escaping[k]);
}

/* ---- its group ----------------------------------------------------------------------------- */

/* Whether nothing that maps the group's memory may still be running ahead of a launch on
 * `stream`: its latest user and every member finished (queries only, gm_fence_finished), or the
 * program ordered `stream` after them with events (gm_order_after, asked first: it touches no
 * stream). The launch still waits for the latest user through graphmem's own fence (order() in
 * engine_launch.c), so event order only chooses the group; it never replaces the fence. */
static bool group_behind(gm_engine_t *e, gm_group_t *g, uint64_t stream) {
    if (!gm_order_after(e, stream, g->last_mark) && !gm_fence_finished(e, g->last_fence))
        return false;
    for (gm_part_t *m = g->members; m; m = m->group_next)
        if (!gm_order_after(e, stream, m->run_mark) && !gm_fence_finished(e, m->run_fence))
            return false;
    return true;
}

/* A part's first group. Its stream's group, unless that holds less of the memory the part needs
 * than a group of another stream whose users have all finished, or that the program ordered this
 * stream after with events: then it joins that one, and reuses its memory, where a group of its
 * own would grow the footprint by the other's bytes (eight 64 MiB graphs on eight streams, the
 * first finished before the eighth is launched: the driver reuses the first's memory; graphs
 * taking turns on two streams through events). Not under `remap`, whose members leave for their
 * stream's group at a stream change, nor under no_alias. */
static gm_group_t *first_group(gm_engine_t *e, gm_part_t *p, uint64_t stream) {
    uint64_t need = p->plan.shared.pages;
    if (need == 0 || e->config.no_alias || e->config.cross_stream != GM_CROSS_STREAM_SERIALIZE)
        return NULL;
    gm_group_t *home = gm_map_get(&e->groups[p->device], stream), *best = NULL;
    uint64_t held = home ? gm_group_held_pages(home) : 0;
    if (held >= need)
        return NULL;
    uint32_t pos = 0;
    void *v;
    while (gm_map_next(&e->groups[p->device], &pos, NULL, &v)) {
        gm_group_t *g = v;
        uint64_t h = gm_group_held_pages(g);
        if (g != home && h > held && group_behind(e, g, stream)) {
            best = g;
            held = h;
            if (held >= need)
                break;
        }
    }
    return best;
}

/* An adopted part launched again on its stream while its group's latest user, on another stream,
 * still runs: where any member would wait for that user, it leaves instead for its own stream's
 * group, once its own last run finished (unmapping does not wait for the GPU), so that graphs
 * warmed up one after another and then run at the same time on their streams get their
 * concurrency back after one remap each. Still running itself: it waits like any member. Nor does
 * it leave when the program ordered its stream after that user with events: the wait costs it no
 * concurrency the program wanted. */
static bool leaves_adopted(gm_engine_t *e, gm_part_t *p, uint64_t stream) {
    const gm_group_t *g = p->group;
    if (p->adopted_stream != stream || g->last_stream == stream ||
        (g->last_part == p && g->last_launch) || gm_order_after(e, stream, g->last_mark))
        return false;
    return !gm_fence_finished(e, g->last_fence) && gm_fence_finished(e, p->run_fence);
}

/* Unmaps p's mappings of its group's arena and leaves the group; p is idle. */
static gm_status_t leave_group(gm_engine_t *e, gm_part_t *p) {
    gm_part_unmap_shared(e, p);
    if (p->shared_maps.count)
        return GM_ERR_BACKEND;
    gm_group_leave(e, p);
    p->adopted_stream = GM_NO_STREAM;
    return GM_OK;
}

gm_status_t gm_part_enter(gm_engine_t *e, gm_part_t *p, uint64_t stream, gm_fence_t **wait) {
    gm_group_t *g = p->group;
    if (p->pinned) /* a group of its own, for good */
        return g ? GM_OK : gm_group_join_private(e, p, stream);
    if (g && g->stream != stream && e->config.cross_stream == GM_CROSS_STREAM_REMAP) {
        /* Leave only once the previous run is over: unmapping does not wait for the GPU. The
         * caller waits for the fence on the host, without the lock, and tries again. */
        if (!gm_part_idle(e, p)) {
            *wait = p->run_fence;
            return GM_ERR_NOT_READY;
        }
        gm_status_t st = leave_group(e, p);
        if (st != GM_OK)
            return st;
        return gm_group_join(e, p, stream, NULL);
    }
    if (g && leaves_adopted(e, p, stream)) {
        gm_status_t st = leave_group(e, p);
        return st != GM_OK ? st : gm_group_join(e, p, stream, NULL);
    }
    if (g)
        return GM_OK;
    g = first_group(e, p, stream);
    if (g) {
        p->adopted_stream = stream;
        p->exec->report.adopted++;
    }
    return gm_group_join(e, p, stream, g);
}

/* ---- mapping ------------------------------------------------------------------------------- */

static void maplist_unmap(gm_engine_t *e, gm_part_t *p, gm_maplist_t *ml, uint32_t down_to) {
    gm_pool_t *pool = e->pools[p->device];
    while (ml->count > down_to) {
        gm_mapping_t *m = &ml->maps[ml->count - 1];
        if (gm_pool_unmap(pool, m->handle, m->va) != GM_OK)
            break;
        ml->count--;
    }
    ml->mapped = false;
}

void gm_part_unmap_shared(gm_engine_t *e, gm_part_t *p) {
    maplist_unmap(e, p, &p->shared_maps, 0);
}

void gm_part_unmap_escape(gm_engine_t *e, gm_part_t *p) {
    maplist_unmap(e, p, &p->escape_maps, 0);
}

/* Fills a slot, making room under the cap by trimming idle memory first when needed. */
static gm_status_t fill(gm_engine_t *e, gm_part_t *p, gm_arena_t *arena, uint32_t k) {
    gm_status_t st = gm_pool_fill(e->pools[p->device], arena, k);
    if (st == GM_ERR_OUT_OF_MEMORY) {
        gm_trim_device(e, p->device);
        st = gm_pool_fill(e->pools[p->device], arena, k);
    }
    return st;
}

/* Pages [first, first + pages) of `arena`, at `va` onward, for item `it`: every handle of the arena
 * they touch, mapped whole. */
typedef struct map_range {
    uint64_t first, pages, va;
} map_range_t;

/* Where an item's pages are in `arena` (the escape arena when `escape`, else its group's). An
 * escaping item with spill pages has two ranges: its first pages end the escape arena, the rest
 * begin the group's; both arenas start and end at a handle's edge, so the handles of one range
 * never reach into the other's addresses. */
static map_range_t item_range(const gm_engine_t *e, const gm_item_t *it, bool escape) {
    uint64_t own = it->pages - it->spill_pages;
    if (escape)
        return (map_range_t){it->arena_page, own, it->va};
    if (it->escaping)
        return (map_range_t){0, it->spill_pages, it->va + own * e->page};
    return (map_range_t){it->arena_page, it->pages, it->va};
}

static gm_status_t map_item(gm_engine_t *e, gm_part_t *p, const gm_item_t *it, gm_arena_t *arena,
                            gm_maplist_t *ml, gm_map_undo_t *log, int which) {
    int devs[GM_MAX_DEVICES], n = gm_access_devices(e, p->device, it->access_mask, devs);
    map_range_t range = item_range(e, it, which == 1);
    uint64_t end = range.first + range.pages;
    for (uint32_t k = gm_arena_slot_at(arena, range.first);
         range.pages && k < arena->count && arena->start[k] < end; k++) {
        gm_status_t st;
        if ((st = gm_grow((void **)&ml->maps, &ml->cap, ml->count + 1, sizeof *ml->maps)) ||
            (st = gm_grow((void **)&log->slots[which], &log->cap[which], log->count[which] + 1,
                          sizeof *log->slots[which])))
            return st;
        if (!arena->handles[k]) {
            if ((st = fill(e, p, arena, k)) != GM_OK)
                return st;
            log->slots[which][log->count[which]++] = k;
        }
        uint64_t va = range.va + arena->start[k] * e->page - range.first * e->page;
        /* A scratch page left there (its unmap failed) would make this a map over a mapping. */
        if (e->scratch_idle && !gm_cover_clear(e, va, gm_handle_bytes(arena->handles[k])))
            return GM_ERR_BACKEND;
        uint32_t maps_before = gm_handle_map_count(arena->handles[k]);
        st = gm_pool_map(e->pools[p->device], arena->handles[k], va, devs, n);
        if (st == GM_OK || gm_handle_map_count(arena->handles[k]) > maps_before)
            ml->maps[ml->count++] = (gm_mapping_t){arena->handles[k], va}; /* kept to unmap */
        if (st != GM_OK)
            return st;
    }
    return GM_OK;
}

static gm_status_t map_all(gm_engine_t *e, gm_part_t *p, bool escape_taken, gm_map_undo_t *log) {
    gm_status_t st = GM_OK;
    if (!p->shared_maps.mapped) {
        maplist_unmap(e, p, &p->shared_maps, 0); /* leftovers of a refused unmap */
        if (p->shared_maps.count)
            return GM_ERR_BACKEND;
        st = gm_group_grow_arena(p->group, &p->plan.shared);
        log->arena[0] = &p->group->arena;
        for (uint32_t i = 0; st == GM_OK && i < p->item_count; i++)
            if (!p->items[i].escaping || p->items[i].spill_pages)
                st = map_item(e, p, &p->items[i], &p->group->arena, &p->shared_maps, log, 0);
    }
    if (st == GM_OK && !p->escape_maps.mapped && !escape_taken) {
        maplist_unmap(e, p, &p->escape_maps, 0);
        if (p->escape_maps.count)
            return GM_ERR_BACKEND;
        log->arena[1] = &p->escape;
        for (uint32_t i = 0; st == GM_OK && i < p->item_count; i++)
            if (p->items[i].escaping)
                st = map_item(e, p, &p->items[i], &p->escape, &p->escape_maps, log, 1);
    }
    return st;
}

/* Back to where `undo` was taken: the mappings made since go, the handles made since go. */
void gm_part_map_undo(gm_engine_t *e, gm_part_t *p, gm_map_undo_t *undo) {
    if (!undo->shared_before)
        maplist_unmap(e, p, &p->shared_maps, 0);
    if (!undo->escape_before)
        maplist_unmap(e, p, &p->escape_maps, 0);
    for (int w = 0; w < 2; w++)
        for (uint32_t i = 0; i < undo->count[w]; i++) {
            gm_arena_t *arena = undo->arena[w];
            gm_handle_t *h = arena->handles[undo->slots[w][i]];
            if (h && !gm_handle_map_count(h))
                gm_pool_empty(e->pools[p->device], arena, undo->slots[w][i]);
        }
    gm_map_undo_fini(undo);
}

void gm_map_undo_fini(gm_map_undo_t *undo) {
    free(undo->slots[0]);
    free(undo->slots[1]);
    *undo = (gm_map_undo_t){.shared_before = true, .escape_before = true};
}

gm_status_t gm_part_map(gm_engine_t *e, gm_part_t *p, bool escape_taken, gm_map_undo_t *undo) {
    *undo = (gm_map_undo_t){.shared_before = p->shared_maps.mapped,
                            .escape_before = p->escape_maps.mapped || escape_taken};
    if (undo->shared_before && undo->escape_before)
        return GM_OK;
    uint64_t t0 = gm_now_ns();
    p->busy = true;
    gm_status_t st = map_all(e, p, escape_taken, undo);
    p->busy = false;
    if (st != GM_OK) {
        gm_part_map_undo(e, p, undo);
        return st;
    }
    p->shared_maps.mapped = true;
    p->escape_maps.mapped |= !escape_taken;
    p->exec->report.map_ns += gm_now_ns() - t0;
    return GM_OK;
}

void gm_part_take_escape(gm_engine_t *e, gm_part_t *p, gm_part_t *q) {
    for (uint32_t k = 0; k < q->escaping_count; k++)
        if (q->escaping[k]->live && q->escaping[k]->live_part == q)
            gm_record_freed(q->escaping[k]);
    for (uint32_t i = 0; i < q->point_count; i++)
        gm_fence_unref(e, q->points[i].fence);
    q->point_count = 0;
    gm_arena_swap(&p->escape, &q->escape);
    gm_maplist_t own = p->escape_maps;
    p->escape_maps = q->escape_maps;
    q->escape_maps = own;
}

/* ---- idle and trim ------------------------------------------------------------------------- */

bool gm_part_idle(gm_engine_t *e, gm_part_t *p) {
    if (!gm_fence_done(e, p->run_fence))
        return false;
    gm_fence_set(e, &p->run_fence, NULL);
    return true;
}

/* Drops the free points whose fence completed; true when none is left. */
static bool points_done(gm_engine_t *e, gm_part_t *p) {
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->point_count; i++) {
        if (gm_fence_done(e, p->points[i].fence))
            gm_fence_unref(e, p->points[i].fence);
        else
            p->points[kept++] = p->points[i];
    }
    p->point_count = kept;
    return kept == 0;
}

gm_fence_t *gm_part_trim(gm_engine_t *e, gm_part_t *p, bool release) {
    /* Covers hold every mapping still (engine_cover.c); a pinned part's device launches are
     * invisible to graphmem (GM_EXEC_PINNED). */
    if (p->busy || e->covers || p->pinned)
        return NULL;
    if (!gm_part_idle(e, p))
        return p->run_fence;
    gm_part_unmap_shared(e, p);
    if (p->unfreed)
        return NULL;
    if (!points_done(e, p))
        return p->points[0].fence;
    gm_part_unmap_escape(e, p);
    for (uint32_t i = 0; release && !p->escape_maps.count && i < p->escape.count; i++)
        if (p->escape.handles[i])
            gm_pool_empty(e->pools[p->device], &p->escape, i);
    return NULL;
}

void gm_trim_device(gm_engine_t *e, int device) {
    for (gm_part_t *p = e->parts, *next; p; p = next) {
        next = p->all_next;
        if (p->device != device)
            continue;
        gm_part_trim(e, p, true);
        gm_part_try_reclaim(e, p);
    }
    gm_pool_release_idle(e->pools[device], 0);
}
