/* Event order between streams, a hint for choosing sharing groups (engine_order.c). */
#ifndef GRAPHMEM_ENGINE_ORDER_H
#define GRAPHMEM_ENGINE_ORDER_H

#include "engine_internal.h"

void gm_order_init(gm_engine_t *e);
void gm_order_fini(gm_engine_t *e);
/* A served launch or upload on `stream` was committed: its mark (GM_NO_MARK without host memory:
 * nothing is ever ordered after it). Under the engine lock. */
gm_order_mark_t gm_order_served(gm_engine_t *e, uint64_t stream);
/* Whether work enqueued on `stream` from now on is known to follow `mark` (the stream's own
 * order, or a wait for an event recorded at or after it). A hint: see engine_order.c. */
bool gm_order_after(gm_engine_t *e, uint64_t stream, gm_order_mark_t mark);
/* The stream went away (its handle may name a new stream, which follows nothing). */
void gm_order_stream_gone(gm_engine_t *e, uint64_t stream);

#endif
