/* Covers (engine.h, "Covers"): what the launch protocol and trim need to know of them. */
#ifndef GRAPHMEM_ENGINE_COVER_H
#define GRAPHMEM_ENGINE_COVER_H

#include "engine_internal.h"

/* Waits, the engine lock held and released meanwhile, until no cover is held; no new cover starts
 * while anyone waits here. */
void gm_cover_wait(gm_engine_t *e);
/* Unmaps the idle scratch mappings (engine_cover.c), before anything else maps. */
void gm_cover_drop_idle(gm_engine_t *e);
/* Unmaps the idle scratch mappings in [va, va + bytes) before something is mapped there; false
 * when one is left (its unmap failed, or a cover holds it): then nothing may be mapped there. */
bool gm_cover_clear(gm_engine_t *e, uint64_t va, uint64_t bytes);
/* [va, va + bytes) goes back to the address space once no scratch mapping is left in it: at once,
 * or when the covers holding one ended (a dedicated slab goes back to the driver with it). */
void gm_cover_release_va(gm_engine_t *e, uint64_t va, uint64_t bytes);
/* At engine teardown: the scratch pages' mappings and handles go back. */
void gm_covers_destroy(gm_engine_t *e);

#endif
