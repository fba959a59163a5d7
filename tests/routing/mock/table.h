/* The mock's export table and resolver rows (see table.c). No CUDA types here. */
#ifndef GM_MOCK_TABLE_H
#define GM_MOCK_TABLE_H

#include <stddef.h>

typedef struct {
    const char *base;
    int version; /* first CUDA version whose queries resolve to this ABI */
    const char *legacy;
    const char *per_thread; /* == legacy when the ABI has no per-thread twin */
} gm_mock_proc_t;

/* Rows sorted by base name, then version. */
extern const gm_mock_proc_t gm_mock_procs[];
extern const size_t gm_mock_nprocs;

/* The mock's own entry for an exact exported name, or NULL. Exported for the tests, which need
 * the mock's pointer while graphmem's dlsym answers hooked names with hooks. */
void *gm_mock_lookup(const char *name);

#endif
