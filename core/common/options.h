/* Options: parsed once from the environment (GRAPHMEM_*), read-only afterwards. */
#ifndef GRAPHMEM_OPTIONS_H
#define GRAPHMEM_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

typedef enum gm_option_id {
#define GM_OPTION(id, type, def, min, max, doc) GM_OPT_##id,
#include "options.def"
#undef GM_OPTION
    GM_OPT_COUNT
} gm_option_id_t;

typedef enum gm_option_type {
    GM_OPTTYPE_BOOL,
    GM_OPTTYPE_SIZE,
    GM_OPTTYPE_LEVEL,
    GM_OPTTYPE_POLICY,
    GM_OPTTYPE_PATH,
} gm_option_type_t;

typedef struct gm_option_desc {
    const char *name; /* full environment name, GRAPHMEM_... */
    gm_option_type_t type;
    const char *default_text;
    uint64_t min, max;
    const char *doc;
} gm_option_desc_t;

extern const gm_option_desc_t gm_option_table[GM_OPT_COUNT];

/* Parses `env` (a NULL-terminated environ-style array). Reports every bad value by name and keeps
 * the default; warns about unknown GRAPHMEM_* names. Returns the number of errors (bad values);
 * the caller decides whether GRAPHMEM_STRICT makes them fatal. Safe to call again (tests). */
int gm_options_load(char *const *env);

uint64_t gm_option_u64(gm_option_id_t id); /* BOOL, SIZE, LEVEL, POLICY */
static inline bool gm_option_bool(gm_option_id_t id) {
    return gm_option_u64(id) != 0;
}
const char *gm_option_text(gm_option_id_t id); /* PATH: the value; others: the text parsed */
bool gm_option_from_env(gm_option_id_t id);

/* Parsers, exposed for tests. Return false on malformed input. */
bool gm_parse_size(const char *text, uint64_t *out);
bool gm_parse_bool(const char *text, uint64_t *out);

/* Prints the configuration banner (GRAPHMEM_PRINT_CONFIG) through the logger. */
void gm_options_print(void);

#endif
