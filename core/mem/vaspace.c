#include "vaspace.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct gm_slab {
    uint64_t va, size;
    bool dedicated; /* reserved for one oversized window; released when that window is freed */
} gm_slab_t;

typedef struct gm_free_range {
    uint64_t va, size;
    uint32_t slab;
} gm_free_range_t;

struct gm_vaspace {
    const gm_backend_t *backend;
    uint64_t slab_bytes;
    gm_slab_t *slabs;
    uint32_t slab_count, slab_cap;
    gm_free_range_t *free; /* sorted by address, never two adjacent ranges of one slab */
    uint32_t free_count, free_cap;
    uint64_t reserved, live;
};

gm_vaspace_t *gm_vaspace_create(const gm_backend_t *backend, uint64_t slab_bytes) {
    gm_vaspace_t *vs = calloc(1, sizeof *vs);
    if (!vs)
        return NULL;
    uint64_t g = backend->granularity;
    vs->backend = backend;
    vs->slab_bytes = slab_bytes < g ? g : (slab_bytes + g - 1) / g * g;
    return vs;
}

void gm_vaspace_destroy(gm_vaspace_t *vs) {
    if (!vs)
        return;
    for (uint32_t i = 0; i < vs->slab_count; i++)
        if (vs->slabs[i].size)
            vs->backend->va_release(vs->backend->ctx, vs->slabs[i].va, vs->slabs[i].size);
    free(vs->slabs);
    free(vs->free);
    free(vs);
}

static void free_remove(gm_vaspace_t *vs, uint32_t i) {
    memmove(&vs->free[i], &vs->free[i + 1], (size_t)(vs->free_count - i - 1) * sizeof *vs->free);
    vs->free_count--;
}

/* Inserts a range in address order, merging with same-slab neighbours. The caller made room
 * for one more entry. */
static void free_insert(gm_vaspace_t *vs, uint64_t va, uint64_t size, uint32_t slab) {
    uint32_t i = 0;
    while (i < vs->free_count && vs->free[i].va < va)
        i++;
    gm_free_range_t *prev = i ? &vs->free[i - 1] : NULL;
    gm_free_range_t *next = i < vs->free_count ? &vs->free[i] : NULL;
    bool join_prev = prev && prev->slab == slab && prev->va + prev->size == va;
    bool join_next = next && next->slab == slab && va + size == next->va;
    if (join_prev && join_next) {
        prev->size += size + next->size;
        free_remove(vs, i);
    } else if (join_prev) {
        prev->size += size;
    } else if (join_next) {
        next->va = va;
        next->size += size;
    } else {
        memmove(&vs->free[i + 1], &vs->free[i], (size_t)(vs->free_count - i) * sizeof *vs->free);
        vs->free[i] = (gm_free_range_t){va, size, slab};
        vs->free_count++;
    }
}

/* Reserves a slab able to hold `size` and adds it to the free list. */
static gm_status_t grow_slab(gm_vaspace_t *vs, uint64_t size) {
    if (gm_grow((void **)&vs->slabs, &vs->slab_cap, vs->slab_count + 1, sizeof *vs->slabs) ||
        gm_grow((void **)&vs->free, &vs->free_cap, vs->free_count + 1, sizeof *vs->free))
        return GM_ERR_OUT_OF_MEMORY;
    bool dedicated = size > vs->slab_bytes;
    uint64_t bytes = dedicated ? size : vs->slab_bytes, va = 0;
    gm_status_t st = vs->backend->va_reserve(vs->backend->ctx, bytes, &va);
    if (st != GM_OK)
        return st;
    vs->slabs[vs->slab_count] = (gm_slab_t){va, bytes, dedicated};
    free_insert(vs, va, bytes, vs->slab_count);
    vs->slab_count++;
    vs->reserved += bytes;
    return GM_OK;
}

gm_status_t gm_vaspace_prime(gm_vaspace_t *vs) {
    return vs->slab_count > 0 ? GM_OK : grow_slab(vs, vs->slab_bytes);
}

/* Takes `size` bytes off the front of free range i (which holds at least that many): what an
 * allocation and an extension in place both do. */
static void take_front(gm_vaspace_t *vs, uint32_t i, uint64_t size) {
    gm_free_range_t *r = &vs->free[i];
    r->va += size;
    r->size -= size;
    if (r->size == 0)
        free_remove(vs, i);
    vs->live += size;
}

gm_status_t gm_vaspace_alloc(gm_vaspace_t *vs, uint64_t size, uint64_t *va_out) {
    uint64_t g = vs->backend->granularity;
    if (size == 0 || size % g)
        return GM_ERR_INVALID_VALUE;
    for (int attempt = 0; attempt < 2; attempt++) {
        for (uint32_t i = 0; i < vs->free_count; i++) {
            gm_free_range_t *r = &vs->free[i];
            if (r->size < size)
                continue;
            *va_out = r->va;
            take_front(vs, i, size);
            return GM_OK;
        }
        if (attempt == 0) {
            gm_status_t st = grow_slab(vs, size);
            if (st != GM_OK)
                return st;
        }
    }
    return GM_ERR_OUT_OF_MEMORY; /* unreachable: a fresh slab always fits */
}

static uint32_t slab_of(const gm_vaspace_t *vs, uint64_t va) {
    for (uint32_t i = 0; i < vs->slab_count; i++)
        if (va >= vs->slabs[i].va && va < vs->slabs[i].va + vs->slabs[i].size)
            return i;
    return UINT32_MAX;
}

gm_status_t gm_vaspace_extend(gm_vaspace_t *vs, uint64_t va, uint64_t size, uint64_t more) {
    uint64_t g = vs->backend->granularity;
    if (more == 0 || more % g)
        return GM_ERR_INVALID_VALUE;
    uint32_t s = slab_of(vs, va);
    for (uint32_t i = 0; s != UINT32_MAX && i < vs->free_count; i++) {
        gm_free_range_t *r = &vs->free[i];
        if (r->va < va + size)
            continue;
        /* Free ranges are address ordered: this is the first one past the window. */
        if (r->va != va + size || r->slab != s || r->size < more)
            break;
        take_front(vs, i, more);
        return GM_OK;
    }
    return GM_ERR_OUT_OF_MEMORY;
}

void gm_vaspace_free(gm_vaspace_t *vs, uint64_t va, uint64_t size) {
    uint32_t s = slab_of(vs, va);
    if (s == UINT32_MAX)
        return;
    vs->live -= size;
    gm_slab_t *slab = &vs->slabs[s];
    if (slab->dedicated && slab->va == va && slab->size == size &&
        vs->backend->va_release(vs->backend->ctx, va, size) == GM_OK) {
        vs->reserved -= size;
        slab->size = 0; /* slot stays so slab indices in the free list keep their meaning */
        return;
    }
    /* Room for the insertion: if realloc fails, the range is lost to reuse, never handed twice. */
    if (gm_grow((void **)&vs->free, &vs->free_cap, vs->free_count + 1, sizeof *vs->free) == GM_OK)
        free_insert(vs, va, size, s);
}

bool gm_vaspace_contains(const gm_vaspace_t *vs, uint64_t va) {
    return slab_of(vs, va) != UINT32_MAX;
}

uint64_t gm_vaspace_reserved_bytes(const gm_vaspace_t *vs) {
    return vs->reserved;
}

uint64_t gm_vaspace_live_bytes(const gm_vaspace_t *vs) {
    return vs->live;
}
