#include "pack.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Chunks searched per packing, newest first. Older chunks are left to the planner: once their
 * residents end, their pages serve other items anyway, and filling them would stretch their
 * lifetime and the conflicts of the whole chunk. */
#define GM_PACK_SCAN_CHUNKS 8

typedef struct frag {
    uint64_t offset, size;
    uint32_t id;
} frag_t;

typedef struct chunk {
    frag_t *frags; /* disjoint, sorted by offset */
    uint32_t count, cap;
    uint64_t extent;
    uint64_t unfreed; /* bytes of fragments whose owner is not freed: never reusable */
} chunk_t;

typedef struct record {
    uint32_t chunk;
    uint64_t offset, size; /* size rounded to the alignment */
    uint64_t owned;        /* bytes of fragments it still owns */
    bool freed, forgotten;
    uint32_t undo_start, undo_count; /* fragments of others it superseded */
    uint32_t asked;                  /* packing stamp of the cached answer */
    bool answer;
} record_t;

struct gm_pack {
    uint64_t chunk_bytes, align;
    chunk_t *chunks;
    uint32_t chunk_count, chunk_cap;
    record_t *records;
    uint32_t record_count, record_cap;
    frag_t *undo;
    uint32_t undo_count, undo_cap;
    uint32_t stamp;
};

gm_pack_t *gm_pack_create(uint64_t chunk_bytes, uint64_t align) {
    if (align == 0 || (align & (align - 1)) || chunk_bytes < align)
        return NULL;
    gm_pack_t *pack = calloc(1, sizeof *pack);
    if (!pack)
        return NULL;
    pack->chunk_bytes = chunk_bytes;
    pack->align = align;
    return pack;
}

void gm_pack_destroy(gm_pack_t *pack) {
    if (!pack)
        return;
    for (uint32_t c = 0; c < pack->chunk_count; c++)
        free(pack->chunks[c].frags);
    free(pack->chunks);
    free(pack->records);
    free(pack->undo);
    free(pack);
}

static bool blocks(gm_pack_t *pack, uint32_t id, bool (*reusable)(uint32_t, void *), void *arg) {
    record_t *r = &pack->records[id];
    if (!r->freed || r->forgotten)
        return true;
    if (r->asked != pack->stamp) {
        r->asked = pack->stamp;
        r->answer = reusable(id, arg);
    }
    return !r->answer;
}

typedef struct fit {
    uint32_t chunk;
    uint64_t offset, gap;
} fit_t;

static void consider(fit_t *best, uint32_t chunk, uint64_t lo, uint64_t hi, uint64_t size,
                     uint64_t align) {
    lo = (lo + align - 1) & ~(align - 1);
    if (lo >= hi || hi - lo < size)
        return;
    if (best->chunk == UINT32_MAX || hi - lo < best->gap)
        *best = (fit_t){chunk, lo, hi - lo};
}

/* Inserts `f` at `at`, in room occupy made first. */
static void insert_frag(chunk_t *c, uint32_t at, frag_t f) {
    if (at < c->count)
        memmove(c->frags + at + 1, c->frags + at, (c->count - at) * sizeof *c->frags);
    c->frags[at] = f;
    c->count++;
}

/* Puts allocation `id` on [lo, hi) of chunk `c`: every fragment there is reusable by it; the parts
 * it covers move to the undo log (for gm_pack_forget) and are cut from their owners. */
static gm_status_t occupy(gm_pack_t *pack, chunk_t *c, uint32_t id, uint64_t lo, uint64_t hi) {
    /* Room for the worst case first (one split and one insert: the fragments it replaces go
     * before the up to three it inserts) so nothing fails half-way. */
    if (gm_grow((void **)&c->frags, &c->cap, c->count + 2, sizeof *c->frags))
        return GM_ERR_OUT_OF_MEMORY;
    uint32_t first = 0, removed = 0;
    while (first < c->count && c->frags[first].offset + c->frags[first].size <= lo)
        first++;
    while (first + removed < c->count && c->frags[first + removed].offset < hi)
        removed++;
    if (gm_grow((void **)&pack->undo, &pack->undo_cap, pack->undo_count + removed,
                sizeof *pack->undo))
        return GM_ERR_OUT_OF_MEMORY;
    record_t *me = &pack->records[id];
    me->undo_start = pack->undo_count;
    for (uint32_t k = first; k < first + removed; k++) {
        frag_t *f = &c->frags[k];
        uint64_t a = f->offset > lo ? f->offset : lo;
        uint64_t b = f->offset + f->size < hi ? f->offset + f->size : hi;
        pack->undo[pack->undo_count++] = (frag_t){a, b - a, f->id};
        pack->records[f->id].owned -= b - a;
        if (!pack->records[f->id].freed)
            c->unfreed -= b - a;
    }
    me->undo_count = pack->undo_count - me->undo_start;
    /* Fragments [first, first + removed) overlap: keep their outside parts, then the new one. */
    frag_t left = {0}, right = {0};
    bool has_left = false, has_right = false;
    if (removed > 0) {
        frag_t f0 = c->frags[first], f1 = c->frags[first + removed - 1];
        if (f0.offset < lo) {
            left = (frag_t){f0.offset, lo - f0.offset, f0.id};
            has_left = true;
        }
        if (f1.offset + f1.size > hi) {
            right = (frag_t){hi, f1.offset + f1.size - hi, f1.id};
            has_right = true;
        }
        if (first + removed < c->count)
            memmove(c->frags + first, c->frags + first + removed,
                    (c->count - first - removed) * sizeof *c->frags);
        c->count -= removed;
    }
    /* The trimmed owners keep their outside parts (their bytes were subtracted in full above). */
    uint32_t at = first;
    if (has_left) {
        pack->records[left.id].owned += left.size;
        if (!pack->records[left.id].freed)
            c->unfreed += left.size;
        insert_frag(c, at++, left);
    }
    insert_frag(c, at++, (frag_t){lo, hi - lo, id});
    if (has_right) {
        pack->records[right.id].owned += right.size;
        if (!pack->records[right.id].freed)
            c->unfreed += right.size;
        insert_frag(c, at, right);
    }
    me->owned = hi - lo;
    c->unfreed += hi - lo;
    if (hi > c->extent)
        c->extent = hi;
    return GM_OK;
}

gm_status_t gm_pack_alloc(gm_pack_t *pack, uint64_t size, bool (*reusable)(uint32_t id, void *arg),
                          void *arg, uint32_t *id_out, uint32_t *chunk_out, uint64_t *offset_out) {
    uint64_t need = size ? size : 1;
    if (need > pack->chunk_bytes)
        return GM_ERR_INVALID_VALUE;
    need = (need + pack->align - 1) & ~(pack->align - 1);
    if (need > pack->chunk_bytes || pack->record_count == UINT32_MAX)
        return GM_ERR_INVALID_VALUE;
    if (gm_grow((void **)&pack->records, &pack->record_cap, pack->record_count + 1,
                sizeof *pack->records))
        return GM_ERR_OUT_OF_MEMORY;
    if (++pack->stamp == 0) { /* wrapped: forget every cached answer */
        for (uint32_t r = 0; r < pack->record_count; r++)
            pack->records[r].asked = 0;
        pack->stamp = 1;
    }

    fit_t best = {UINT32_MAX, 0, 0};
    uint32_t walked = 0;
    for (uint32_t ci = pack->chunk_count; ci-- > 0 && walked < GM_PACK_SCAN_CHUNKS;) {
        chunk_t *c = &pack->chunks[ci];
        if (pack->chunk_bytes - c->unfreed < need)
            continue; /* even if every freed byte were reusable, nothing would fit */
        walked++;
        uint64_t cursor = 0;
        for (uint32_t k = 0; k < c->count; k++) {
            frag_t *f = &c->frags[k];
            if (!blocks(pack, f->id, reusable, arg))
                continue;
            consider(&best, ci, cursor, f->offset, need, pack->align);
            cursor = f->offset + f->size;
        }
        consider(&best, ci, cursor, pack->chunk_bytes, need, pack->align);
    }
    if (best.chunk == UINT32_MAX) {
        if (pack->chunk_count == UINT32_MAX || gm_grow((void **)&pack->chunks, &pack->chunk_cap,
                                                       pack->chunk_count + 1, sizeof *pack->chunks))
            return GM_ERR_OUT_OF_MEMORY;
        pack->chunks[pack->chunk_count] = (chunk_t){0};
        best = (fit_t){pack->chunk_count++, 0, pack->chunk_bytes};
    }
    uint32_t id = pack->record_count;
    pack->records[id] = (record_t){.chunk = best.chunk, .offset = best.offset, .size = need};
    gm_status_t st = occupy(pack, &pack->chunks[best.chunk], id, best.offset, best.offset + need);
    if (st != GM_OK)
        return st;
    pack->record_count++;
    *id_out = id;
    *chunk_out = best.chunk;
    *offset_out = best.offset;
    return GM_OK;
}

void gm_pack_mark_freed(gm_pack_t *pack, uint32_t id) {
    if (id >= pack->record_count)
        return;
    record_t *r = &pack->records[id];
    if (r->freed || r->forgotten)
        return;
    r->freed = true;
    pack->chunks[r->chunk].unfreed -= r->owned;
}

static int by_offset(const void *a, const void *b) {
    const frag_t *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The part of undo `piece` inside fragment `f`, or an empty fragment. */
static frag_t clip(frag_t piece, frag_t f) {
    uint64_t a = piece.offset > f.offset ? piece.offset : f.offset;
    uint64_t b = piece.offset + piece.size < f.offset + f.size ? piece.offset + piece.size
                                                               : f.offset + f.size;
    return a < b ? (frag_t){a, b - a, piece.id} : (frag_t){0, 0, piece.id};
}

void gm_pack_forget(gm_pack_t *pack, uint32_t id) {
    if (id >= pack->record_count || pack->records[id].forgotten)
        return;
    record_t *me = &pack->records[id];
    chunk_t *c = &pack->chunks[me->chunk];
    me->forgotten = true;
    /* Every byte it still owns goes back to the allocation it superseded there (never to "free":
     * that would need a proof nobody made). */
    uint32_t undo_end = me->undo_start + me->undo_count, pieces = 0, count = c->count;
    for (uint32_t k = 0; k < count; k++)
        for (uint32_t u = me->undo_start; u < undo_end && c->frags[k].id == id; u++)
            pieces += clip(pack->undo[u], c->frags[k]).size != 0;
    if (gm_grow((void **)&c->frags, &c->cap, count + pieces, sizeof *c->frags))
        return; /* out of memory: its fragments stay, blocking forever (forgotten ids block) */
    for (uint32_t k = 0; k < count; k++) {
        for (uint32_t u = me->undo_start; u < undo_end && c->frags[k].id == id; u++) {
            frag_t piece = clip(pack->undo[u], c->frags[k]);
            if (piece.size == 0)
                continue;
            c->frags[c->count++] = piece;
            pack->records[piece.id].owned += piece.size;
            if (!pack->records[piece.id].freed)
                c->unfreed += piece.size;
        }
    }
    uint32_t out = 0;
    for (uint32_t k = 0; k < c->count; k++)
        if (c->frags[k].id != id)
            c->frags[out++] = c->frags[k];
    c->count = out;
    if (!me->freed)
        c->unfreed -= me->owned;
    me->owned = 0;
    qsort(c->frags, c->count, sizeof *c->frags, by_offset);
}

uint32_t gm_pack_chunk_count(const gm_pack_t *pack) {
    return pack->chunk_count;
}

uint64_t gm_pack_chunk_extent(const gm_pack_t *pack, uint32_t chunk) {
    return chunk < pack->chunk_count ? pack->chunks[chunk].extent : 0;
}
