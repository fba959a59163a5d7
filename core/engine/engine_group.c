/* Sharing groups: the sharing unit of a device, one per stream a part first launched on (a
 * private one per part under no_alias). A group's arena is mapped by every member part
 * (engine_part.c maps it); the group keeps who used it last, on which stream, until which fence,
 * so that the next member waits for it (engine_launch.c). */
#include "engine_group.h"

#include <stdlib.h>

#include "engine_fence.h"

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

gm_status_t gm_group_join_private(gm_engine_t *e, gm_part_t *p, uint64_t stream) {
    gm_group_t *g = group_new(p->device, stream);
    return g ? gm_group_join(e, p, stream, g) : GM_ERR_OUT_OF_MEMORY;
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

gm_status_t gm_group_join(gm_engine_t *e, gm_part_t *p, uint64_t stream, gm_group_t *into) {
    gm_group_t *g = into ? into : group_for(e, p->device, stream);
    if (!g)
        return GM_ERR_OUT_OF_MEMORY;
    p->group = g;
    p->group_next = g->members;
    g->members = p;
    g->member_count++;
    return GM_OK;
}

uint64_t gm_group_held_pages(const gm_group_t *g) {
    uint64_t held = 0;
    for (uint32_t i = 0; i < g->arena.count; i++)
        held += g->arena.handles[i] ? g->arena.pages[i] : 0;
    return held;
}

/* Cuts the new tail where the plan cuts its handles. */
gm_status_t gm_group_grow_arena(gm_group_t *g, const gm_plan_arena_t *plan) {
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
