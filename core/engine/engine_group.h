/* Sharing groups (engine_group.c). */
#ifndef GRAPHMEM_ENGINE_GROUP_H
#define GRAPHMEM_ENGINE_GROUP_H

#include "engine_internal.h"

/* `p` (in no group) joins `into`, or when NULL the group of `stream` on its device (a private one
 * under no_alias). */
gm_status_t gm_group_join(gm_engine_t *e, gm_part_t *p, uint64_t stream, gm_group_t *into);
/* `p` (in no group) joins a group of its own (GM_EXEC_PINNED). */
gm_status_t gm_group_join_private(gm_engine_t *e, gm_part_t *p, uint64_t stream);
/* Pages of its arena that hold memory now. */
uint64_t gm_group_held_pages(const gm_group_t *g);
/* `p`, mapped nowhere in its group's arena any more, leaves; an empty group goes. */
void gm_group_leave(gm_engine_t *e, gm_part_t *p);
/* Makes the group's arena as long as a plan's shared arena. */
gm_status_t gm_group_grow_arena(gm_group_t *g, const gm_plan_arena_t *plan);
void gm_groups_destroy_all(gm_engine_t *e);

#endif
