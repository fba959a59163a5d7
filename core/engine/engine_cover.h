/* Covers (engine.h, "Covers"): what the launch protocol and trim need to know of them. */
#ifndef GRAPHMEM_ENGINE_COVER_H
#define GRAPHMEM_ENGINE_COVER_H

#include "engine_internal.h"

/* Waits, the engine lock held and released meanwhile, until no cover is held; no new cover starts
 * while anyone waits here. */
void gm_cover_wait(gm_engine_t *e);
/* Unmaps the idle scratch mappings (engine_cover.c), before anything else maps. */
void gm_cover_drop_idle(gm_engine_t *e);
/* Unmaps the idle scratch mappings in [va, va + bytes), before those addresses go back. */
void gm_cover_forget(gm_engine_t *e, uint64_t va, uint64_t bytes);
/* At engine teardown: the scratch pages' mappings and handles go back. */
void gm_covers_destroy(gm_engine_t *e);

#endif
