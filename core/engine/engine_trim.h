/* Trim outside a launch (engine_trim.c). */
#ifndef GRAPHMEM_ENGINE_TRIM_H
#define GRAPHMEM_ENGINE_TRIM_H

#include "engine_internal.h"

/* GRAPHMEM_UAF_CHECK: unmaps whatever no running launch or live allocation needs. */
void gm_uaf_poll(gm_engine_t *e);

#endif
