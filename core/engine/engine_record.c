/* Allocation records: their fixed addresses (a padded window of their own, a place in a run, or
 * bytes of a packer chunk) and the online proof of order that lets small allocations reuse
 * bytes. */
#include "engine_record.h"

#include <stdlib.h>
#include <string.h>

#include "engine_cover.h"

/* ---- proofs: vector clocks over a graph's chains (engine_internal.h) ----------------------- */

void gm_clock_release(gm_clock_t *clock) {
    if (clock->count > 1)
        free(clock->at.many);
    *clock = (gm_clock_t){0};
}

/* The position of chain `c` that `clock` proves, 0 for none. */
static uint32_t clock_at(const gm_clock_t *clock, uint32_t c) {
    const gm_clock_entry_t *at = gm_clock_entries(clock);
    uint32_t lo = 0, hi = clock->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (at[mid].chain < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < clock->count && at[lo].chain == c ? at[lo].position : 0;
}

static bool clock_covers(const gm_clock_t *clock, const gm_marker_t *m) {
    return m && m->position && clock_at(clock, m->chain) >= m->position;
}

/* A clock of the `n` entries of `at` (which it takes when it is `heap`, else copies). */
static gm_status_t clock_of(gm_clock_entry_t *at, uint32_t n, bool heap, gm_clock_t *out) {
    *out = (gm_clock_t){.count = n};
    if (n <= 1) {
        if (n)
            out->at.one = at[0];
        if (heap)
            free(at);
        return GM_OK;
    }
    if (!heap) {
        gm_clock_entry_t *copy = malloc(n * sizeof *copy);
        if (!copy)
            return GM_ERR_OUT_OF_MEMORY;
        memcpy(copy, at, n * sizeof *copy);
        at = copy;
    }
    out->at.many = at;
    return GM_OK;
}

/* Merges of a few chains, the usual ones, are made on the stack. */
#define CLOCK_MERGE_LOCAL 8u

/* out = the entrywise maximum of `acc` and `add` plus `own` (position 0: none), both sorted. */
static gm_status_t clock_merge(const gm_clock_t *acc, const gm_clock_t *add, gm_clock_entry_t own,
                               gm_clock_t *out) {
    uint32_t room = acc->count + add->count + 1;
    gm_clock_entry_t local[CLOCK_MERGE_LOCAL];
    bool heap = room > CLOCK_MERGE_LOCAL;
    gm_clock_entry_t *at = heap ? malloc(room * sizeof *at) : local;
    if (!at)
        return GM_ERR_OUT_OF_MEMORY;
    const gm_clock_entry_t *a = gm_clock_entries(acc), *b = gm_clock_entries(add);
    uint32_t i = 0, j = 0, n = 0;
    bool own_done = own.position == 0;
    while (i < acc->count || j < add->count || !own_done) {
        uint32_t c = UINT32_MAX;
        if (i < acc->count && a[i].chain < c)
            c = a[i].chain;
        if (j < add->count && b[j].chain < c)
            c = b[j].chain;
        if (!own_done && own.chain < c)
            c = own.chain;
        uint32_t p = 0;
        if (i < acc->count && a[i].chain == c)
            p = a[i++].position;
        if (j < add->count && b[j].chain == c && b[j].position > p)
            p = b[j].position;
        if (j < add->count && b[j].chain == c)
            j++;
        if (!own_done && own.chain == c) {
            p = own.position > p ? own.position : p;
            own_done = true;
        }
        at[n++] = (gm_clock_entry_t){c, p};
    }
    return clock_of(at, n, heap, out);
}

/* A clock lists at most this many chains: a capture that keeps starting chains (markers whose
 * search found nothing) and joining them into one stream would otherwise carry every one of them
 * in every later clock, quadratic in the capture's length. */
#define CLOCK_MAX 64u

typedef struct ranked_entry {
    gm_clock_entry_t entry;
    uint64_t placed;
} ranked_entry_t;

static int by_placed_desc(const void *a, const void *b) {
    uint64_t x = ((const ranked_entry_t *)a)->placed, y = ((const ranked_entry_t *)b)->placed;
    return x > y ? -1 : x < y;
}

static int by_chain(const void *a, const void *b) {
    uint32_t x = ((const gm_clock_entry_t *)a)->chain, y = ((const gm_clock_entry_t *)b)->chain;
    return x < y ? -1 : x > y;
}

/* Keeps the CLOCK_MAX chains of `clock` last placed on (a stream's chain stays; chains joined in
 * long ago go): dropping an entry only proves less. */
static gm_status_t clock_trim(const gm_graph_t *g, gm_clock_t *clock) {
    ranked_entry_t *ranked = malloc(clock->count * sizeof *ranked);
    if (!ranked)
        return GM_ERR_OUT_OF_MEMORY;
    gm_clock_entry_t *at = clock->at.many; /* more than CLOCK_MAX entries: an array */
    for (uint32_t k = 0; k < clock->count; k++) {
        uint32_t c = at[k].chain;
        ranked[k] = (ranked_entry_t){at[k], c < g->chain_count ? g->chains[c].placed : 0};
    }
    qsort(ranked, clock->count, sizeof *ranked, by_placed_desc);
    for (uint32_t k = 0; k < CLOCK_MAX; k++)
        at[k] = ranked[k].entry;
    clock->count = CLOCK_MAX;
    qsort(at, clock->count, sizeof *at, by_chain);
    free(ranked);
    return GM_OK;
}

gm_status_t gm_proven_before(gm_engine_t *e, gm_graph_t *g, const gm_marker_t *const *markers,
                             size_t count, gm_clock_t *out) {
    *out = (gm_clock_t){0};
    if (e->config.lift_restrictions)
        return GM_OK; /* an edge or node on the path may be removed later: nothing is proven */
    /* The usual case, one ancestor (the previous marker on a stream) proven to follow at most
     * one chain, its own: the merge below in place, without its loop. */
    const gm_marker_t *only = count == 1 ? markers[0] : NULL;
    if (only && only->graph == g && only->before.count <= 1 &&
        (only->before.count == 0 || !only->position || only->before.at.one.chain == only->chain)) {
        *out = only->before;
        if (only->position && (!out->count || out->at.one.position < only->position))
            *out = (gm_clock_t){.at.one = {only->chain, only->position}, .count = 1};
        return GM_OK;
    }
    /* Each ancestor marker of `g`: what it was proven to follow, and itself. */
    for (size_t i = 0; i < count; i++) {
        const gm_marker_t *m = markers[i];
        if (m->graph != g)
            continue;
        gm_clock_t merged;
        gm_status_t st =
            clock_merge(out, &m->before, (gm_clock_entry_t){m->chain, m->position}, &merged);
        gm_clock_release(out);
        if (st != GM_OK)
            return st;
        *out = merged;
    }
    if (out->count > CLOCK_MAX && clock_trim(g, out) != GM_OK) {
        gm_clock_release(out);
        return GM_ERR_OUT_OF_MEMORY;
    }
    return GM_OK;
}

/* A chain whose last marker the clock proves comes next, or a new chain. Along a capture's stream
 * the previous marker is that last one, so a graph has about as many chains as streams. A free of
 * another graph's allocation is never asked about (reusable and gm_proven_made read its own
 * graph's free), and gets no place. */
void gm_marker_place(gm_engine_t *e, gm_graph_t *g, gm_marker_t *m) {
    if (e->config.lift_restrictions || !m->record->packer || m->record->owner != g)
        return;
    uint32_t c = g->chain_count;
    for (uint32_t k = 0; k < m->before.count && c == g->chain_count; k++) {
        const gm_clock_entry_t *entry = &gm_clock_entries(&m->before)[k];
        if (entry->chain < g->chain_count && g->chains[entry->chain].tip == entry->position)
            c = entry->chain;
    }
    if (c == g->chain_count) {
        if (c == UINT32_MAX ||
            gm_grow((void **)&g->chains, &g->chain_cap, c + 1, sizeof *g->chains))
            return; /* no host memory: nothing is proven to follow this marker */
        g->chains[g->chain_count++] = (gm_chain_t){0, 0};
    }
    m->chain = c;
    m->position = ++g->chains[c].tip;
    g->chains[c].placed = ++g->placements;
}

bool gm_proven_made(const gm_clock_t *before, const gm_record_t *r) {
    return clock_covers(before, &r->alloc);
}

static void chunk_unref(gm_engine_t *e, gm_chunk_t *c) {
    if (--c->refs == 0) {
        gm_cover_release_va(e, c->base, c->bytes);
        free(c);
    }
}

void gm_packer_destroy(gm_engine_t *e, gm_packer_t *pk) {
    for (uint32_t i = 0; i < pk->id_count; i++)
        if (pk->ids[i])
            pk->ids[i]->packer = NULL;
    for (uint32_t i = 0; i < pk->chunk_count; i++)
        chunk_unref(e, pk->chunks[i]);
    gm_pack_destroy(pk->pack);
    free(pk->chunks);
    free(pk->ids);
    free(pk);
}

static gm_packer_t *packer_get(gm_engine_t *e, gm_graph_t *g, int device, uint64_t access) {
    for (gm_packer_t *pk = g->packers; pk; pk = pk->next)
        if (pk->device == device && pk->access_mask == access)
            return pk;
    gm_packer_t *pk = calloc(1, sizeof *pk);
    if (!pk)
        return NULL;
    pk->pack = gm_pack_create(e->chunk_bytes, GM_PACK_ALIGN);
    if (!pk->pack) {
        free(pk);
        return NULL;
    }
    pk->device = device;
    pk->access_mask = access;
    pk->next = g->packers;
    g->packers = pk;
    return pk;
}

/* ---- records ------------------------------------------------------------------------------- */

static void chain_remove(gm_engine_t *e, gm_record_t *r) {
    if (r->va_next)
        r->va_next->va_prev = r->va_prev;
    if (r->va_prev) {
        r->va_prev->va_next = r->va_next;
        return;
    }
    /* The chain's head. */
    if (r->va_next) {
        gm_map_put(&e->addresses, r->va, r->va_next); /* replaces: cannot fail */
    } else {
        gm_map_remove(&e->addresses, r->va);
        gm_keyset_remove(&e->address_keys, r->va);
    }
}

static void record_destroy(gm_engine_t *e, gm_record_t *r) {
    chain_remove(e, r);
    if (r->chunk) {
        if (r->packer && r->pack_id < r->packer->id_count)
            r->packer->ids[r->pack_id] = NULL;
        chunk_unref(e, r->chunk);
    } else {
        gm_cover_release_va(e, r->win_base, r->win_bytes);
    }
    gm_clock_release(&r->alloc.before);
    gm_spare_give(&e->spare_records, r);
}

void gm_record_unref_check(gm_engine_t *e, gm_record_t *r) {
    if (!r->owner && !r->exec_refs && !r->live && !r->foreign_free)
        record_destroy(e, r);
}

typedef struct reuse_query {
    gm_packer_t *packer;
    const gm_clock_t *before;
} reuse_query_t;

/* Whether the free of packed allocation `id` (in its own graph) is proven to come before. */
static bool reusable(uint32_t id, void *arg) {
    reuse_query_t *q = arg;
    gm_record_t *r = id < q->packer->id_count ? q->packer->ids[id] : NULL;
    return r && clock_covers(q->before, r->free_marker);
}

/* ---- runs (engine_internal.h, gm_run_t) ---------------------------------------------------- */

/* A run's bytes, in largest handles: its allocations are mapped together, a handle at a time. */
#define GM_RUN_HANDLES 16u

void gm_run_forget(gm_graph_t *g, const gm_record_t *r) {
    gm_run_t *run = &g->run;
    if (run->last && (r == run->last || (run->chunk && r->chunk == run->chunk)))
        *run = (gm_run_t){0};
}

/* Appends `r` (`bytes`, whole pages) to the open run of `g` when it may. A run holds
 * allocations of one size none of which is freed in the graph yet: each of them may be live with
 * `r` wherever the graph runs (a free captured later never precedes an alloc captured earlier),
 * buffers of one kind made together (a model's layers, a batch's blocks). Side by side, they cost
 * the planner little of the freedom it has with windows of their own: blocks of one size born
 * while all are live fit where any of them would, and another item may take the pages of one of
 * them where it ends (the planner cuts a chunk into units). Runs of mixed sizes did cost it:
 * bench/RESULTS.md, "Runs". False when it may not: another size, device or access, the addresses
 * after the run taken, or the run full. */
static bool run_append(gm_engine_t *e, gm_graph_t *g, gm_record_t *r, uint64_t bytes) {
    gm_run_t *run = &g->run;
    gm_record_t *last = run->last;
    const uint64_t full = GM_RUN_HANDLES * e->config.max_handle;
    /* Compared without a sum: sizes near 2^64 (refused later, §A1.6) must not wrap it. */
    if (!last || bytes != run->member_bytes || last->params.device != r->params.device ||
        last->params.access_mask != r->params.access_mask || bytes > full ||
        run->used > full - bytes || (!run->chunk && last->chunk))
        return false; /* the last test: a run starts at a window of its own (a guard: a clone,
                       * whose records share chunks, closes its run) */
    gm_chunk_t *c = run->chunk;
    if (!c && !(c = calloc(1, sizeof *c)))
        return false;
    uint64_t base = run->chunk ? c->base : last->win_base;
    uint64_t size = run->chunk ? c->bytes : last->win_bytes;
    if (gm_vaspace_extend(e->vas, base, size, bytes) != GM_OK) {
        if (!run->chunk)
            free(c);
        return false;
    }
    if (!run->chunk) { /* the run's first allocation moves into the chunk, at offset 0 */
        *c = (gm_chunk_t){.base = base, .bytes = size, .va = last->va, .refs = 1};
        last->chunk = c;
        last->chunk_offset = 0;
        run->chunk = c;
    }
    c->bytes += bytes;
    c->refs++;
    r->chunk = c;
    r->chunk_offset = run->used;
    r->va = c->va + run->used;
    run->used += bytes;
    run->last = r;
    return true;
}

/* Gives `r` its address: a byte range of a packer chunk or a padded window of its own. Under
 * GRAPHMEM_LIFT_RESTRICTIONS no order is proven (gm_proven_before), so nothing packed reuses bytes
 * inside its chunk: only allocations below a page are packed then (a chain of larger ones would
 * each take new bytes of the chunk, where windows of their own share pages). */
static gm_status_t assign_address(gm_engine_t *e, gm_graph_t *g, gm_record_t *r) {
    uint64_t size = r->params.size;
    if (size >= e->packed_below || e->config.no_alias) {
        uint64_t pages = size / e->page + (size % e->page != 0);
        if (pages > (UINT64_MAX - 2 * e->pad) / e->page - 1)
            return GM_ERR_OUT_OF_MEMORY; /* no address range that large (§A1.6) */
        uint64_t bytes = (pages ? pages : 1) * e->page;
        bool runs = !e->config.no_alias && !e->config.no_runs;
        if (runs && run_append(e, g, r, bytes))
            return GM_OK;
        r->win_bytes = 2 * e->pad + bytes;
        gm_status_t st = gm_vaspace_alloc(e->vas, r->win_bytes, &r->win_base);
        r->va = r->win_base + e->pad;
        if (st == GM_OK && runs)
            g->run = (gm_run_t){.last = r, .used = bytes, .member_bytes = bytes};
        return st;
    }
    gm_packer_t *pk = packer_get(e, g, r->params.device, r->params.access_mask);
    if (!pk || gm_grow((void **)&pk->ids, &pk->id_cap, pk->id_count + 1, sizeof *pk->ids))
        return GM_ERR_OUT_OF_MEMORY;
    reuse_query_t q = {pk, &r->alloc.before};
    uint32_t id, chunk;
    uint64_t offset;
    gm_status_t st = gm_pack_alloc(pk->pack, size, reusable, &q, &id, &chunk, &offset);
    if (st != GM_OK)
        return st;
    if (chunk >= pk->chunk_count) {
        gm_chunk_t *c = calloc(1, sizeof *c);
        if (!c || gm_grow((void **)&pk->chunks, &pk->chunk_cap, pk->chunk_count + 1,
                          sizeof *pk->chunks)) {
            free(c);
            gm_pack_forget(pk->pack, id);
            return GM_ERR_OUT_OF_MEMORY;
        }
        c->bytes = 2 * e->pad + e->chunk_bytes;
        st = gm_vaspace_alloc(e->vas, c->bytes, &c->base);
        if (st != GM_OK) {
            free(c);
            gm_pack_forget(pk->pack, id);
            return st;
        }
        c->va = c->base + e->pad;
        c->refs = 1;
        pk->chunks[pk->chunk_count++] = c;
    }
    while (pk->id_count <= id)
        pk->ids[pk->id_count++] = NULL;
    pk->ids[id] = r;
    r->packer = pk;
    r->pack_id = id;
    r->chunk = pk->chunks[chunk];
    r->chunk->refs++;
    r->chunk_offset = offset;
    r->va = r->chunk->va + offset;
    return GM_OK;
}

gm_status_t gm_record_create(gm_engine_t *e, gm_graph_t *g, const gm_alloc_params_t *params,
                             gm_clock_t before, gm_record_t **out) {
    gm_record_t *r = gm_spare_take(&e->spare_records, sizeof *r);
    if (!r) {
        gm_clock_release(&before);
        return GM_ERR_OUT_OF_MEMORY;
    }
    r->id = ++e->next_record_id;
    r->params = *params;
    r->params.access_mask &= ~(1ull << params->device);
    r->owner = g;
    r->alloc = (gm_marker_t){.kind = GM_MARKER_ALLOC, .record = r, .graph = g, .before = before};
    gm_status_t st = assign_address(e, g, r);
    if (st != GM_OK) {
        gm_clock_release(&r->alloc.before);
        gm_spare_give(&e->spare_records, r);
        return st;
    }
    r->va_next = gm_map_get(&e->addresses, r->va);
    if (r->va_next)
        r->va_next->va_prev = r;
    gm_map_put(&e->addresses, r->va, r); /* reserved by the caller */
    if (!r->va_next && gm_keyset_insert(&e->address_keys, r->va) != GM_OK)
        atomic_store(&e->address_keys_partial, true); /* gm_engine_owns takes the lock then */
    *out = r;
    return GM_OK;
}

void gm_record_clone(gm_engine_t *e, gm_graph_t *g, gm_record_t *r, uint64_t node,
                     gm_chunk_t *chunk, gm_record_t *copy) {
    if (!r->chunk) {
        *chunk = (gm_chunk_t){.base = r->win_base, .bytes = r->win_bytes, .va = r->va, .refs = 1};
        r->chunk = chunk;
        r->chunk_offset = 0;
    } else {
        free(chunk);
    }
    copy->id = ++e->next_record_id;
    copy->va = r->va;
    copy->params = r->params;
    copy->owner = g;
    copy->alloc = (gm_marker_t){.kind = GM_MARKER_ALLOC, .record = copy, .graph = g, .node = node};
    copy->chunk = r->chunk;
    copy->chunk->refs++;
    copy->chunk_offset = r->chunk_offset;
    copy->va_next = r->va_next;
    copy->va_prev = r;
    if (r->va_next)
        r->va_next->va_prev = copy;
    r->va_next = copy;
}

void gm_record_abort(gm_engine_t *e, gm_record_t *r) {
    gm_run_forget(r->owner, r);
    if (r->packer)
        gm_pack_forget(r->packer->pack, r->pack_id);
    r->owner = NULL;
    gm_record_unref_check(e, r);
}

bool gm_engine_may_own(gm_engine_t *e, uint64_t va) {
    /* A miss in the set of graph addresses, read without the lock, answers without waiting on the
     * engine (which may be mapping a first launch). A record made or forgotten meanwhile may be
     * seen either way, as under the lock. */
    return atomic_load_explicit(&e->address_keys_partial, memory_order_acquire) ||
           gm_keyset_contains(&e->address_keys, va);
}

bool gm_engine_owns(gm_engine_t *e, uint64_t va) {
    if (!gm_engine_may_own(e, va))
        return false;
    gm_engine_lock(e);
    bool owns = false;
    for (gm_record_t *r = gm_map_get(&e->addresses, va); r && !owns; r = r->va_next)
        owns = r->owner || r->live || r->exec_refs; /* an exec still makes it at its launches */
    gm_engine_unlock_unchanged(e);
    return owns;
}
