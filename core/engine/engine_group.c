/* Sharing groups and mappings. A group's arena is mapped by every member part through
 * persistent alias mappings: members never run at the same time (one stream, or stream waits
 * inserted between them), so the bytes a plan frees inside its graph are free for the next
 * member. Each item maps whole the arena handles overlapping its pages; its VA window is padded
 * by max_handle - page on both sides so the overhang of any handle fits. */
#include <stdlib.h>

#include "engine_internal.h"

static gm_group_t *group_new(int device, uint64_t stream) {
    gm_group_t *g = calloc(1, sizeof *g);
    if (g) {
        g->device = device;
        g->stream = g->last_stream = stream;
    }
    return g;
}

static void group_free(gm_engine_t *e, gm_group_t *g) {
    gm_fence_unref(e, g->last_fence);
    gm_arena_fini(&g->arena);
    free(g);
}

static gm_group_t *group_for(gm_engine_t *e, int device, uint64_t stream) {
    if (e->config.no_alias)
        return group_new(device, stream);
    gm_group_t *g = gm_map_get(&e->groups[device], stream);
    if (g)
        return g;
    g = group_new(device, stream);
    if (g && gm_map_put(&e->groups[device], stream, g) != GM_OK) {
        free(g);
        return NULL;
    }
    if (g)
        g->in_map = true;
    return g;
}

void gm_group_leave(gm_engine_t *e, gm_part_t *p) {
    gm_group_t *g = p->group;
    for (gm_part_t **pp = &g->members; *pp; pp = &(*pp)->group_next) {
        if (*pp == p) {
            *pp = p->group_next;
            break;
        }
    }
    g->member_count--;
    if (g->last_part == p)
        g->last_part = NULL;
    p->group = NULL;
    p->group_next = NULL;
    if (g->member_count)
        return;
    /* Empty: its handles are mapped nowhere. Free it unless the backend keeps one. */
    for (uint32_t i = 0; i < g->arena.count; i++)
        if (g->arena.handles[i] && gm_pool_empty(e->pools[g->device], &g->arena, i) != GM_OK)
            return;
    if (g->in_map)
        gm_map_remove(&e->groups[g->device], g->stream);
    group_free(e, g);
}

void gm_groups_destroy_all(gm_engine_t *e) {
    for (int d = 0; d < e->config.device_count; d++) {
        uint32_t pos = 0;
        void *v;
        while (gm_map_next(&e->groups[d], &pos, NULL, &v)) {
            gm_group_t *g = v;
            for (uint32_t i = 0; i < g->arena.count; i++)
                if (g->arena.handles[i])
                    gm_pool_empty(e->pools[d], &g->arena, i);
            group_free(e, g);
        }
        gm_map_fini(&e->groups[d]);
    }
}

gm_status_t gm_part_enter(gm_engine_t *e, gm_part_t *p, uint64_t stream, gm_fence_t **wait) {
    gm_group_t *g = p->group;
    if (g && g->stream != stream && e->config.cross_stream == GM_CROSS_STREAM_REMAP) {
        /* Leave only once the previous run is over: unmapping does not wait for the GPU. The
         * caller waits for the fence on the host, without the lock, and tries again. */
        if (!gm_part_idle(e, p)) {
            *wait = p->run_fence;
            return GM_ERR_NOT_READY;
        }
        gm_part_unmap_shared(e, p);
        if (p->shared_maps.count)
            return GM_ERR_BACKEND;
        gm_group_leave(e, p);
        g = NULL;
    }
    if (!g) {
        g = group_for(e, p->device, stream);
        if (!g)
            return GM_ERR_OUT_OF_MEMORY;
        p->group = g;
        p->group_next = g->members;
        g->members = p;
        g->member_count++;
    }
    return GM_OK;
}

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

static gm_status_t map_item(gm_engine_t *e, gm_part_t *p, const gm_item_t *it, gm_arena_t *arena,
                            gm_maplist_t *ml, gm_map_undo_t *log, int which) {
    int devs[GM_MAX_DEVICES], n = 0;
    devs[n++] = p->device;
    for (int d = 0; d < e->config.device_count; d++)
        if (d != p->device && (it->access_mask >> d & 1))
            devs[n++] = d;
    uint64_t end = it->arena_page + it->pages;
    for (uint32_t k = gm_arena_slot_at(arena, it->arena_page);
         k < arena->count && arena->start[k] < end; k++) {
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
        uint64_t va = it->va + arena->start[k] * e->page - it->arena_page * e->page;
        if ((st = gm_pool_map(e->pools[p->device], arena->handles[k], va, devs, n)) != GM_OK)
            return st;
        ml->maps[ml->count++] = (gm_mapping_t){arena->handles[k], va};
    }
    return GM_OK;
}

/* Makes the group arena as long as the plan's shared arena, cutting the new tail where the plan
 * cuts its handles. */
static gm_status_t grow_group_arena(gm_group_t *g, const gm_plan_arena_t *plan) {
    uint64_t at = 0;
    for (uint32_t i = 0; i < plan->handle_count; i++) {
        uint64_t end = at + plan->handle_pages[i];
        if (end > g->arena.total_pages) {
            uint64_t from = at > g->arena.total_pages ? at : g->arena.total_pages;
            gm_status_t st = gm_arena_append(&g->arena, end - from);
            if (st != GM_OK)
                return st;
        }
        at = end;
    }
    return GM_OK;
}

static gm_status_t map_all(gm_engine_t *e, gm_part_t *p, gm_map_undo_t *log) {
    gm_status_t st = GM_OK;
    if (!p->shared_maps.mapped) {
        maplist_unmap(e, p, &p->shared_maps, 0); /* leftovers of a refused unmap */
        if (p->shared_maps.count)
            return GM_ERR_BACKEND;
        st = grow_group_arena(p->group, &p->plan.shared);
        log->arena[0] = &p->group->arena;
        for (uint32_t i = 0; st == GM_OK && i < p->item_count; i++)
            if (!p->items[i].escaping)
                st = map_item(e, p, &p->items[i], &p->group->arena, &p->shared_maps, log, 0);
    }
    if (st == GM_OK && !p->escape_maps.mapped) {
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

gm_status_t gm_part_map(gm_engine_t *e, gm_part_t *p, gm_map_undo_t *undo) {
    *undo = (gm_map_undo_t){.shared_before = p->shared_maps.mapped,
                            .escape_before = p->escape_maps.mapped};
    if (undo->shared_before && undo->escape_before)
        return GM_OK;
    uint64_t t0 = gm_now_ns();
    p->busy = true;
    gm_status_t st = map_all(e, p, undo);
    p->busy = false;
    if (st != GM_OK) {
        gm_part_map_undo(e, p, undo);
        return st;
    }
    p->shared_maps.mapped = p->escape_maps.mapped = true;
    p->exec->report.map_ns += gm_now_ns() - t0;
    return GM_OK;
}
