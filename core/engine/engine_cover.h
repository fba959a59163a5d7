/* Covers (engine.h, "Covers"): what the launch protocol and trim need to know of them. */
#ifndef GRAPHMEM_ENGINE_COVER_H
#define GRAPHMEM_ENGINE_COVER_H

#include "engine_internal.h"

/* Waits, the engine lock held and released meanwhile, until no cover is held; no new cover starts
 * while anyone waits here. */
void gm_cover_wait(gm_engine_t *e);
/* Unmaps again the scratch mappings whose unmap failed, before anything else maps. */
void gm_cover_retry_orphans(gm_engine_t *e);
/* At engine teardown: the scratch pages' mappings and handles go back. */
void gm_covers_destroy(gm_engine_t *e);

#endif
