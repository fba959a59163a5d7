#include "pool.h"

#include <stdlib.h>

#include "util.h"

struct gm_handle {
    uint64_t backend_handle;
    uint64_t bytes;
    uint32_t maps;
    gm_arena_t *arena; /* owner slot, emptied when the pool releases the handle by itself */
    uint32_t index;
    gm_handle_t *prev, *next; /* every handle of the pool */
};

struct gm_pool {
    const gm_backend_t *backend;
    int device;
    uint64_t max_reserved, release_threshold;
    gm_handle_t *handles;
    uint64_t idle; /* bytes of held handles mapped nowhere */
    gm_pool_stats_t stats;
};

gm_status_t gm_arena_append(gm_arena_t *arena, uint64_t pages) {
    void **const arrays[] = {(void **)&arena->pages, (void **)&arena->start,
                             (void **)&arena->handles};
    const size_t elems[] = {sizeof *arena->pages, sizeof *arena->start, sizeof *arena->handles};
    if (gm_grow_parallel(arrays, elems, 3, &arena->cap, arena->count + 1) != GM_OK)
        return GM_ERR_OUT_OF_MEMORY;
    arena->pages[arena->count] = pages;
    arena->start[arena->count] = arena->total_pages;
    arena->handles[arena->count] = NULL;
    arena->count++;
    arena->total_pages += pages;
    return GM_OK;
}

void gm_arena_fini(gm_arena_t *arena) {
    free(arena->pages);
    free(arena->start);
    free(arena->handles);
    *arena = (gm_arena_t){0};
}

uint32_t gm_arena_slot_at(const gm_arena_t *arena, uint64_t page) {
    uint32_t lo = 0, hi = arena->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (arena->start[mid] + arena->pages[mid] <= page)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool gm_arena_same_slots(const gm_arena_t *a, const gm_arena_t *b) {
    if (a->count != b->count)
        return false;
    for (uint32_t i = 0; i < a->count; i++)
        if (a->pages[i] != b->pages[i])
            return false;
    return true;
}

/* A handle names its slot (release() empties it), so the slots' new owners are written back. */
static void arena_own_handles(gm_arena_t *arena) {
    for (uint32_t i = 0; i < arena->count; i++)
        if (arena->handles[i])
            arena->handles[i]->arena = arena;
}

void gm_arena_swap(gm_arena_t *a, gm_arena_t *b) {
    gm_arena_t t = *a;
    *a = *b;
    *b = t;
    arena_own_handles(a);
    arena_own_handles(b);
}

gm_pool_t *gm_pool_create(const gm_backend_t *backend, int device, uint64_t max_reserved,
                          uint64_t release_threshold) {
    gm_pool_t *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pool->backend = backend;
    pool->device = device;
    pool->max_reserved = max_reserved;
    pool->release_threshold = release_threshold;
    return pool;
}

static gm_status_t release(gm_pool_t *pool, gm_handle_t *h) {
    gm_status_t st = pool->backend->handle_release(pool->backend->ctx, h->backend_handle);
    if (st != GM_OK)
        return st;
    h->arena->handles[h->index] = NULL;
    pool->stats.reserved -= h->bytes;
    pool->idle -= h->bytes;
    GM_LIST_UNLINK(pool->handles, h, prev, next);
    free(h);
    return GM_OK;
}

void gm_pool_destroy(gm_pool_t *pool) {
    if (!pool)
        return;
    /* Arenas may be gone by now: release without touching their slots. A handle still mapped
     * or refused stays with the backend. */
    while (pool->handles) {
        gm_handle_t *h = pool->handles;
        if (!h->maps)
            pool->backend->handle_release(pool->backend->ctx, h->backend_handle);
        GM_LIST_UNLINK(pool->handles, h, prev, next);
        free(h);
    }
    free(pool);
}

bool gm_pool_fits(const gm_pool_t *pool, uint64_t bytes) {
    return !pool->max_reserved || pool->stats.reserved + bytes <= pool->max_reserved;
}

gm_status_t gm_pool_fill(gm_pool_t *pool, gm_arena_t *arena, uint32_t index) {
    uint64_t bytes = arena->pages[index] * pool->backend->granularity;
    if (!gm_pool_fits(pool, bytes))
        return GM_ERR_OUT_OF_MEMORY;
    gm_handle_t *h = calloc(1, sizeof *h);
    if (!h)
        return GM_ERR_OUT_OF_MEMORY;
    gm_status_t st =
        pool->backend->handle_create(pool->backend->ctx, pool->device, bytes, &h->backend_handle);
    if (st != GM_OK) {
        free(h);
        return st;
    }
    h->bytes = bytes;
    h->arena = arena;
    h->index = index;
    GM_LIST_PUSH(pool->handles, h, prev, next);
    arena->handles[index] = h;
    pool->idle += bytes;
    pool->stats.reserved += bytes;
    if (pool->stats.reserved > pool->stats.reserved_high)
        pool->stats.reserved_high = pool->stats.reserved;
    return GM_OK;
}

gm_status_t gm_pool_empty(gm_pool_t *pool, gm_arena_t *arena, uint32_t index) {
    gm_handle_t *h = arena->handles[index];
    if (!h)
        return GM_OK;
    if (h->maps)
        return GM_ERR_INVALID_VALUE;
    return release(pool, h);
}

gm_status_t gm_pool_map(gm_pool_t *pool, gm_handle_t *h, uint64_t va, const int *devices,
                        int device_count) {
    const gm_backend_t *b = pool->backend;
    gm_status_t st = b->map(b->ctx, va, h->bytes, h->backend_handle);
    if (st != GM_OK)
        return st;
    gm_status_t access = b->set_access(b->ctx, va, h->bytes, devices, device_count);
    /* Taken back; a mapping whose unmap failed too stays counted, so that its caller keeps it
     * for a later unmap and the handle is never released while mapped. */
    if (access != GM_OK && b->unmap(b->ctx, va, h->bytes) == GM_OK)
        return access;
    if (h->maps++ == 0) {
        pool->idle -= h->bytes;
        pool->stats.used += h->bytes;
        if (pool->stats.used > pool->stats.used_high)
            pool->stats.used_high = pool->stats.used;
    }
    return access;
}

gm_status_t gm_pool_unmap(gm_pool_t *pool, gm_handle_t *h, uint64_t va) {
    gm_status_t st = pool->backend->unmap(pool->backend->ctx, va, h->bytes);
    if (st != GM_OK)
        return st;
    if (--h->maps == 0) {
        pool->idle += h->bytes;
        pool->stats.used -= h->bytes;
    }
    return GM_OK;
}

uint64_t gm_handle_bytes(const gm_handle_t *h) {
    return h->bytes;
}

uint32_t gm_handle_map_count(const gm_handle_t *h) {
    return h->maps;
}

uint64_t gm_pool_release_idle(gm_pool_t *pool, uint64_t keep_bytes) {
    uint64_t released = 0;
    gm_handle_t *h = pool->handles;
    while (h && pool->idle > keep_bytes) {
        gm_handle_t *next = h->next;
        uint64_t bytes = h->bytes;
        if (!h->maps && release(pool, h) == GM_OK)
            released += bytes;
        h = next;
    }
    return released;
}

uint64_t gm_pool_idle_bytes(const gm_pool_t *pool) {
    return pool->idle;
}

void gm_pool_settle(gm_pool_t *pool) {
    gm_pool_release_idle(pool, pool->release_threshold);
}

gm_pool_stats_t gm_pool_stats(const gm_pool_t *pool) {
    return pool->stats;
}

void gm_pool_reset_used_high(gm_pool_t *pool) {
    pool->stats.used_high = pool->stats.used;
}

void gm_pool_reset_reserved_high(gm_pool_t *pool) {
    pool->stats.reserved_high = pool->stats.reserved;
}
