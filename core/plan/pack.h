/* Online byte packing of small allocations into chunks (one packer per graph and device). The
 * address must be known when the allocation is created, so packing is online: best fit among
 * the gaps left by earlier allocations whose bytes the new one may not reuse.
 *
 * Reuse is a property of a pair (earlier allocation, new allocation), proven by the caller from
 * the graph (the earlier free reaches the new alloc). A range is therefore never dropped because
 * one packing could reuse it; it is only superseded by a later allocation packed on top of it,
 * which needed the same proof and implies it for everything after (free(k) -> alloc(j) ->
 * free(j) -> alloc(p)). So each chunk is a list of disjoint fragments, each owned by the latest
 * allocation packed there, and its length is bounded by the chunk's bytes, not by history. */
#ifndef GRAPHMEM_PACK_H
#define GRAPHMEM_PACK_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

typedef struct gm_pack gm_pack_t;

/* NULL when out of memory or when align is not a power of two or chunk_bytes < align. */
gm_pack_t *gm_pack_create(uint64_t chunk_bytes, uint64_t align);
void gm_pack_destroy(gm_pack_t *pack);

/* Packs `size` bytes (0 takes one alignment unit so every address stays unique). Only
 * allocations marked freed are asked `reusable(id, arg)`, at most once per packing. Opens a
 * new chunk when no gap fits in the chunks searched (the most recent ones). Best fit; offsets are
 * multiples of `align`. GM_ERR_INVALID_VALUE when size exceeds chunk_bytes. */
gm_status_t gm_pack_alloc(gm_pack_t *pack, uint64_t size, bool (*reusable)(uint32_t id, void *arg),
                          void *arg, uint32_t *id_out, uint32_t *chunk_out, uint64_t *offset_out);
/* Its graph has a free node for it now, ordered after its alloc (the alloc is among the free's
 * ancestors): later packings may ask to reuse its bytes. A free not proven to follow its alloc
 * must not be reported: the allocation is then live to the end (as the planner treats it), and
 * the reasoning above (free(k) -> alloc(j) -> free(j)) needs alloc(j) -> free(j). */
void gm_pack_mark_freed(gm_pack_t *pack, uint32_t id);
/* Its creation was aborted: its bytes are as they were before it was packed. */
void gm_pack_forget(gm_pack_t *pack, uint32_t id);

uint32_t gm_pack_chunk_count(const gm_pack_t *pack);
/* High-water mark of the chunk: the end of its furthest packing, in bytes (alignment
 * included). */
uint64_t gm_pack_chunk_extent(const gm_pack_t *pack, uint32_t chunk);

#endif
