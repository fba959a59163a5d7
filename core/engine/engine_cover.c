/* Covers (engine.h, "Covers"): scratch mappings for the driver's pointer checks, made and removed
 * through the backend under the engine lock, and a count that keeps every mapping of the
 * reservation as it is while any cover is held.
 *
 * Why everything is held still, and not only the covered pages: a page the cover found mapped by
 * a part must stay mapped until the driver's check is over (a trim would unmap it), and a page the
 * cover mapped the scratch page at must not be mapped by a first launch meanwhile (the backend
 * refuses a map over a mapping). Which pages a cover will touch is known only as the shim hands
 * ranges in; covers are short (one driver call that does not wait for the GPU), so the launches
 * that must map and the trims wait for them, and every other launch goes on. */
#include "engine_cover.h"

#include <stdlib.h>

static bool mapped_by_part(const gm_engine_t *e, uint64_t page) {
    for (const gm_part_t *p = e->parts; p; p = p->all_next)
        for (int k = 0; k < 2; k++) {
            const gm_maplist_t *ml = k ? &p->escape_maps : &p->shared_maps;
            for (uint32_t i = 0; i < ml->count; i++) {
                uint64_t va = ml->maps[i].va, end = va + gm_handle_bytes(ml->maps[i].handle);
                if (va < page + e->page && page < end)
                    return true;
            }
        }
    return false;
}

/* A scratch mapping: which device's scratch page, and how many covers hold it. One that no cover
 * holds is idle: it stays mapped for the next cover of its page (a capture covers the same few
 * pages memset after memset, and instantiation covers them again; a map and its access cost tens
 * of microseconds), or it stays because its unmap failed. Idle mappings are unmapped before
 * anything else maps (gm_cover_drop_idle: every launch off the fast path, trims) and before their
 * addresses go back (gm_cover_release_va). Under GRAPHMEM_UAF_CHECK none is kept: a stale pointer
 * must fault, not land on a scratch page. */
#define SCRATCH_IDLE_MAX 4096u
typedef struct scratch_entry {
    int device;
    uint32_t holders;
} scratch_entry_t;

static bool scratch_get(const gm_engine_t *e, uint64_t page, scratch_entry_t *out) {
    uintptr_t v = (uintptr_t)gm_map_get(&e->scratch_maps, page);
    *out = (scratch_entry_t){(int)(v >> 32) - 1, (uint32_t)v};
    return v != 0;
}

/* Room for the key is reserved by the caller, or the key is present: cannot fail. */
static void scratch_put(gm_engine_t *e, uint64_t page, scratch_entry_t entry) {
    uintptr_t v = (uintptr_t)(entry.device + 1) << 32 | entry.holders;
    gm_map_put(&e->scratch_maps, page, (void *)v);
}

/* Unmaps a scratch mapping that was held and is held no more; one the backend refuses to unmap
 * stays idle. */
static void scratch_drop(gm_engine_t *e, uint64_t page, int device) {
    if (e->backend.unmap(e->backend.ctx, page, e->page) == GM_OK) {
        gm_map_remove(&e->scratch_maps, page);
        return;
    }
    scratch_put(e, page, (scratch_entry_t){device, 0});
    e->scratch_idle++;
}

/* Unmaps the idle mapping at `page` (entry read by the caller); false when it stays. */
static bool idle_drop(gm_engine_t *e, uint64_t page) {
    if (e->backend.unmap(e->backend.ctx, page, e->page) != GM_OK)
        return false;
    gm_map_remove(&e->scratch_maps, page);
    e->scratch_idle--;
    return true;
}

bool gm_cover_clear(gm_engine_t *e, uint64_t va, uint64_t bytes) {
    if (e->scratch_maps.count == 0)
        return true;
    uint64_t first = va - va % e->page, pages = (va + bytes - first + e->page - 1) / e->page;
    scratch_entry_t entry;
    bool clear = true;
    if (pages <= 64) { /* a window, chunk or handle of a few pages: look each one up */
        for (uint64_t i = 0; i < pages; i++)
            if (scratch_get(e, first + i * e->page, &entry))
                clear &= entry.holders == 0 && idle_drop(e, first + i * e->page);
        return clear;
    }
    uint32_t pos = 0;
    uint64_t page;
    void *v;
    while (gm_map_next(&e->scratch_maps, &pos, &page, &v))
        if (page >= first && page - first < pages * e->page && scratch_get(e, page, &entry))
            clear &= entry.holders == 0 && idle_drop(e, page);
    return clear;
}

/* Address ranges that go back once no scratch mapping is left in them: what a cover holds stays
 * mapped until it ends, and the address space may hand the range back to the driver (a dedicated
 * slab), which must not happen under a mapping. */
void gm_cover_release_va(gm_engine_t *e, uint64_t va, uint64_t bytes) {
    if (gm_cover_clear(e, va, bytes)) {
        gm_vaspace_free(e->vas, va, bytes);
        return;
    }
    /* Without host memory for the note the range is never reused: lost, never handed twice. */
    if (gm_grow((void **)&e->held_va, &e->held_va_cap, e->held_va_count + 1, sizeof *e->held_va) ==
        GM_OK)
        e->held_va[e->held_va_count++] = (gm_va_range_t){va, bytes};
}

/* The ranges of gm_cover_release_va that are clear now go back. */
static void release_held_va(gm_engine_t *e) {
    for (uint32_t i = 0; i < e->held_va_count;) {
        gm_va_range_t r = e->held_va[i];
        if (!gm_cover_clear(e, r.va, r.bytes)) {
            i++;
            continue;
        }
        gm_vaspace_free(e->vas, r.va, r.bytes);
        e->held_va[i] = e->held_va[--e->held_va_count];
    }
}

void gm_cover_drop_idle(gm_engine_t *e) {
    uint32_t pos = 0;
    uint64_t page;
    void *v;
    while (e->scratch_idle && gm_map_next(&e->scratch_maps, &pos, &page, &v)) {
        scratch_entry_t entry;
        if (scratch_get(e, page, &entry) && entry.holders == 0)
            (void)idle_drop(e, page);
    }
    release_held_va(e);
}

/* Maps the device's scratch page at `page` (made on first use), with access for the device and
 * the devices of `access` (bit d: device d); false when the backend refuses. */
static bool map_scratch(gm_engine_t *e, int device, uint64_t access, uint64_t page) {
    const gm_backend_t *b = &e->backend;
    if (!e->scratch_handle[device] &&
        b->handle_create(b->ctx, device, e->page, &e->scratch_handle[device]) != GM_OK) {
        e->scratch_handle[device] = 0;
        return false;
    }
    if (gm_map_reserve(&e->scratch_maps, 1) != GM_OK ||
        b->map(b->ctx, page, e->page, e->scratch_handle[device]) != GM_OK)
        return false;
    int devs[GM_MAX_DEVICES], n = gm_access_devices(e, device, access, devs);
    if (b->set_access(b->ctx, page, e->page, devs, n) != GM_OK) {
        scratch_drop(e, page, device); /* room reserved above */
        return false;
    }
    scratch_put(e, page, (scratch_entry_t){device, 1});
    return true;
}

void gm_engine_cover_begin(gm_engine_t *engine, gm_cover_t *cover, int device) {
    /* A device not known (no current context in the shim) still gets the freed check: only the
     * pages of allocations, whose device is their own, are mapped then. */
    cover->engine = engine;
    cover->device = engine && device >= 0 && device < engine->config.device_count ? device : -1;
    cover->held = false;
    cover->check_freed = false;
    cover->freed = false;
    cover->count = cover->cap = 0;
    cover->pages = NULL;
}

static bool holds(const gm_cover_t *c, uint64_t page) {
    for (uint32_t i = 0; i < c->count; i++)
        if (c->pages[i] == page)
            return true;
    return false;
}

/* Whether the records of `chain` that contain `va` are all freed by a free node and not live
 * (*seen: one contains it). */
static bool chain_freed(const gm_record_t *chain, uint64_t va, bool *seen) {
    for (const gm_record_t *q = chain; q; q = q->va_next) {
        uint64_t size = q->params.size ? q->params.size : 1;
        if (va < q->va || va - q->va >= size)
            continue;
        if ((!q->free_marker && !q->foreign_free) || q->live)
            return false;
        *seen = true;
    }
    return true;
}

/* `va` lies in an allocation that a free node frees, and in no allocation that is not freed or is
 * live (a later one packed into the same bytes makes them valid again). The address of an
 * allocation not freed is answered by one lookup; anything else takes a scan of every record
 * (only node adds ask, never the captured path). */
static bool freed_address(const gm_engine_t *e, uint64_t va) {
    bool seen = false;
    const gm_record_t *at = gm_map_get(&e->addresses, va);
    if (at && !chain_freed(at, va, &seen))
        return false;
    seen = false;
    uint32_t pos = 0;
    void *chain;
    while (gm_map_next(&e->addresses, &pos, NULL, &chain))
        if (!chain_freed(chain, va, &seen))
            return false;
    return seen;
}

/* Holds the page for cover `c`: a scratch mapping of the same device there (another cover's, or
 * an idle one) is shared; a page no part maps gets the device's scratch page; anything else is
 * left (a part's mapping stays as it is while covers are held; another device's scratch page held
 * by a cover gives this device no access, so the driver answers). */
static void hold_page(gm_engine_t *e, gm_cover_t *c, uint64_t page, int device, uint64_t access) {
    if (holds(c, page) ||
        gm_grow((void **)&c->pages, &c->cap, c->count + 1, sizeof *c->pages) != GM_OK)
        return;
    scratch_entry_t entry;
    bool mapped = scratch_get(e, page, &entry);
    /* Another device's idle mapping goes (held by a cover, it stays: the driver answers). */
    if (mapped && entry.device != device && (entry.holders || !idle_drop(e, page)))
        return;
    if (mapped && entry.device == device) {
        e->scratch_idle -= entry.holders == 0;
        entry.holders++;
        scratch_put(e, page, entry);
    } else if (mapped_by_part(e, page) || !map_scratch(e, device, access, page)) {
        return;
    }
    c->pages[c->count++] = page;
}

/* An allocation `va` lies in, NULL for none. Records that share pages share their device and
 * access (packers are kept per device and access), so any one tells. A memset or copy usually
 * starts at an allocation's address: one lookup; else a scan of every record. */
static const gm_record_t *record_covering(const gm_engine_t *e, uint64_t va) {
    const gm_record_t *r = gm_map_get(&e->addresses, va);
    uint32_t pos = 0;
    void *chain;
    while (!r && gm_map_next(&e->addresses, &pos, NULL, &chain))
        for (const gm_record_t *q = chain; q && !r; q = q->va_next)
            if (va >= q->va && va - q->va < (q->params.size ? q->params.size : 1))
                r = q;
    return r;
}

void gm_engine_cover_range(gm_cover_t *c, uint64_t va, uint64_t bytes) {
    gm_engine_t *e = c->engine;
    if (!e || bytes == 0 || va + bytes < va)
        return;
    gm_engine_lock(e);
    /* The scratch page stands for the allocation's own memory: of its device, with its access,
     * so that the driver's check answers as it will for that memory, whatever device the call
     * names or is current (a memset of device 1's allocation added for device 0 is refused, one
     * added with device 1's context taken). Ranges in no allocation take the cover's device. */
    const gm_record_t *r = e->config.device_count > 1 && gm_vaspace_contains(e->vas, va)
                               ? record_covering(e, va)
                               : NULL; /* one device: nothing to choose */
    int device = r ? r->params.device : c->device;
    if (device < 0 && e->config.device_count == 1)
        device = 0;
    uint64_t access = r ? r->params.access_mask : 0;
    if (c->check_freed && !c->freed && gm_vaspace_contains(e->vas, va))
        c->freed = freed_address(e, va);
    /* No device to map for: the driver answers for the range as it is. */
    for (uint64_t page = va - va % e->page; device >= 0 && page < va + bytes; page += e->page) {
        if (!gm_vaspace_contains(e->vas, page))
            continue;
        if (!c->held) {
            /* A launch or trim waiting for covers goes first: covers back to back (one thread
             * setting memset parameters in a loop) would otherwise hold it off for good. A
             * cover already held takes more ranges without waiting: it ends on its own. */
            while (e->cover_waiters)
                gm_engine_wait(e, &e->uncovered);
            c->held = true;
            e->covers++;
            if (!gm_vaspace_contains(e->vas, page)) /* released while this thread waited */
                continue;
        }
        hold_page(e, c, page, device, access);
    }
    gm_engine_unlock(e);
}

void gm_engine_cover_end(gm_cover_t *c) {
    gm_engine_t *e = c->engine;
    if (!e || !c->held)
        return;
    gm_engine_lock(e);
    for (uint32_t i = 0; i < c->count; i++) {
        scratch_entry_t entry;
        if (!scratch_get(e, c->pages[i], &entry) || entry.holders == 0)
            continue;
        entry.holders--;
        if (entry.holders) {
            scratch_put(e, c->pages[i], entry);
        } else if (!e->config.uaf_check && e->scratch_idle < SCRATCH_IDLE_MAX) {
            scratch_put(e, c->pages[i], entry); /* idle, for the next cover of the page */
            e->scratch_idle++;
        } else {
            scratch_drop(e, c->pages[i], entry.device);
        }
    }
    free(c->pages);
    c->pages = NULL;
    c->count = c->cap = 0;
    c->held = false;
    if (--e->covers == 0) {
        release_held_va(e);
        gm_cond_broadcast(&e->uncovered);
    }
    gm_engine_unlock(e);
}

void gm_cover_wait(gm_engine_t *e) {
    e->cover_waiters++;
    while (e->covers)
        gm_engine_wait(e, &e->uncovered);
    gm_cover_drop_idle(e);
    /* The caller maps or trims before it lets the lock go: new covers start after that. */
    if (--e->cover_waiters == 0)
        gm_cond_broadcast(&e->uncovered);
}

void gm_covers_destroy(gm_engine_t *e) {
    uint32_t pos = 0;
    uint64_t page;
    void *holders;
    while (gm_map_next(&e->scratch_maps, &pos, &page, &holders))
        e->backend.unmap(e->backend.ctx, page, e->page);
    gm_map_fini(&e->scratch_maps);
    free(e->held_va); /* their ranges go back with the address space */
    for (int d = 0; d < GM_MAX_DEVICES; d++)
        if (e->scratch_handle[d])
            e->backend.handle_release(e->backend.ctx, e->scratch_handle[d]);
}
