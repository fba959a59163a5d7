/* Statistics: counters from core/common/stats.def, per-hook call counts registered by the shim, and
 * per-exec reports pulled from the engine; printed as a table and written as versioned JSON. */
#ifndef GRAPHMEM_STATS_H
#define GRAPHMEM_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tally.h"

#define GM_STATS_VERSION 1

typedef enum gm_stat_id {
#define GM_PROCESS_STAT(name, doc) GM_STAT_##name,
#include "stats.def"
#undef GM_PROCESS_STAT
    GM_STAT_COUNT
} gm_stat_id_t;

/* One instantiated graph, as the engine reports it. */
typedef struct gm_exec_report {
#define GM_EXEC_STAT(name, doc) uint64_t name;
#include "stats.def"
#undef GM_EXEC_STAT
} gm_exec_report_t;

/* Counted per thread (tally.h): the statistics in the first slots, then the calls of each hook
 * of the list the shim registers. */
static inline void gm_stat_add(gm_stat_id_t id, uint64_t n) {
    gm_tally_add((size_t)id, n);
}

static inline void gm_stat_call(size_t hook) {
    gm_tally_add(GM_STAT_COUNT + hook, 1);
}

typedef void (*gm_exec_report_fn)(const gm_exec_report_t *report, void *arg);
typedef void (*gm_exec_report_source)(gm_exec_report_fn fn, void *arg);

/* The shim registers its hook names (counted by gm_stat_call), and where exec reports come from.
 */
void gm_stats_register_calls(const char *const *names, size_t count);
void gm_stats_register_execs(gm_exec_report_source source);

/* Zeroes every counter (after fork, in the child). */
void gm_stats_reset(void);
/* At unload: threads that end afterwards leave the counters alone. */
void gm_stats_fini(void);

/* Table on stderr (prefix "graphmem:"), and JSON to `path` (%p replaced by the pid). */
void gm_stats_print_table(void);
int gm_stats_write_json(const char *path);

#endif
