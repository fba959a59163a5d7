/* Name -> address table of the mock's exports, and the cuGetProcAddress version table.
 *
 * Kept apart from the entries because it declares every export as void(void), which would clash
 * with cuda.h's prototypes. The mock is linked with -Bsymbolic-functions so these addresses are
 * the mock's own bodies even when a preloaded library exports the same names, as the real
 * driver's resolver returns its own entries. */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#define GM_MOCK_SYM(name) void name(void);
#include "mock_symbols.def"
#undef GM_MOCK_SYM

typedef struct {
    const char *name;
    void (*fn)(void);
} gm_mock_sym_t;

/* Sorted by strcmp order, as the generator writes it. */
static const gm_mock_sym_t syms[] = {
#define GM_MOCK_SYM(name) {#name, name},
#include "mock_symbols.def"
#undef GM_MOCK_SYM
};

const gm_mock_proc_t gm_mock_procs[] = {
#define GM_MOCK_PROC(base, version, legacy, per_thread) {#base, version, #legacy, #per_thread},
#include "mock_procs.def"
#undef GM_MOCK_PROC
};
const size_t gm_mock_nprocs = sizeof(gm_mock_procs) / sizeof(gm_mock_procs[0]);

static int sym_cmp(const void *key, const void *elem) {
    return strcmp(key, ((const gm_mock_sym_t *)elem)->name);
}

__attribute__((visibility("default"))) void *gm_mock_lookup(const char *name) {
    const gm_mock_sym_t *s =
        bsearch(name, syms, sizeof(syms) / sizeof(syms[0]), sizeof(syms[0]), sym_cmp);
    return s ? (void *)s->fn : NULL;
}
