#include "options.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "log.h"

const gm_option_desc_t gm_option_table[GM_OPT_COUNT] = {
#define GM_OPTION(id, type, def, min, max, doc)                                                    \
    [GM_OPT_##id] = {"GRAPHMEM_" #id, GM_OPTTYPE_##type, def, min, max, doc},
#include "options.def"
#undef GM_OPTION
};

/* Names the library knows without reading them (tool_options.def). */
static const char *const tool_names[] = {
#define GM_TOOL_OPTION(id, doc) "GRAPHMEM_" #id,
#include "tool_options.def"
#undef GM_TOOL_OPTION
};

#define GM_OPTION_TEXT_MAX 512

typedef struct gm_option_value {
    uint64_t number;
    char text[GM_OPTION_TEXT_MAX];
    bool from_env;
} gm_option_value_t;

static gm_option_value_t option_values[GM_OPT_COUNT];

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};
static const char *const policy_names[] = {
#define GM_CROSS_STREAM(id, name, doc) name,
#include "cross_stream.def"
#undef GM_CROSS_STREAM
};

static bool parse_name(const char *text, const char *const *names, size_t count, uint64_t *out) {
    for (size_t i = 0; i < count; i++) {
        if (strcasecmp(text, names[i]) == 0) {
            *out = i;
            return true;
        }
    }
    return false;
}

bool gm_parse_bool(const char *text, uint64_t *out) {
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    uint64_t ignored;
    if (parse_name(text, yes, 4, &ignored)) {
        *out = 1;
        return true;
    }
    if (parse_name(text, no, 4, &ignored)) {
        *out = 0;
        return true;
    }
    return false;
}

bool gm_parse_size(const char *text, uint64_t *out) {
    if (strcasecmp(text, "max") == 0) {
        *out = UINT64_MAX;
        return true;
    }
    if (*text < '0' || *text > '9')
        return false;
    uint64_t value = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t digit = (uint64_t)(*p - '0');
        if (value > (UINT64_MAX - digit) / 10)
            return false;
        value = value * 10 + digit;
    }
    unsigned shift = 0;
    switch (*p) {
    case 'k':
    case 'K':
        shift = 10;
        p++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        p++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        p++;
        break;
    case 't':
    case 'T':
        shift = 40;
        p++;
        break;
    default:
        break;
    }
    if (shift && (*p == 'i' || *p == 'I'))
        p++; /* accept "MiB"-style suffixes as well as "M" */
    if (shift && (*p == 'b' || *p == 'B'))
        p++;
    if (*p != '\0')
        return false; /* trailing garbage is an error, never ignored */
    if (shift && value > (UINT64_MAX >> shift))
        return false;
    *out = value << shift;
    return true;
}

static bool parse_value(const gm_option_desc_t *desc, const char *text, uint64_t *out) {
    switch (desc->type) {
    case GM_OPTTYPE_BOOL:
        return gm_parse_bool(text, out);
    case GM_OPTTYPE_SIZE:
        return gm_parse_size(text, out) && *out >= desc->min && *out <= desc->max;
    case GM_OPTTYPE_LEVEL:
        return parse_name(text, level_names, 5, out);
    case GM_OPTTYPE_POLICY:
        return parse_name(text, policy_names, sizeof policy_names / sizeof policy_names[0], out);
    case GM_OPTTYPE_PATH:
        *out = 0;
        return strlen(text) < GM_OPTION_TEXT_MAX;
    }
    return false;
}

static void set_value(gm_option_id_t id, const char *text, uint64_t number, bool from_env) {
    gm_option_value_t *value = &option_values[id];
    value->number = number;
    snprintf(value->text, sizeof value->text, "%s", text);
    value->from_env = from_env;
}

static const char *env_lookup(char *const *env, const char *name, bool *found) {
    size_t len = strlen(name);
    for (; env && *env; env++) {
        if (strncmp(*env, name, len) == 0 && (*env)[len] == '=') {
            *found = true;
            return *env + len + 1;
        }
    }
    *found = false;
    return NULL;
}

static bool is_name_of(const char *entry, const char *name) {
    size_t len = strlen(name);
    return strncmp(entry, name, len) == 0 && entry[len] == '=';
}

static bool is_known_name(const char *entry) {
    for (int i = 0; i < GM_OPT_COUNT; i++)
        if (is_name_of(entry, gm_option_table[i].name))
            return true;
    for (size_t i = 0; i < sizeof tool_names / sizeof tool_names[0]; i++)
        if (is_name_of(entry, tool_names[i]))
            return true;
    return false;
}

int gm_options_load(char *const *env) {
    int errors = 0;
    for (int i = 0; i < GM_OPT_COUNT; i++) {
        const gm_option_desc_t *desc = &gm_option_table[i];
        uint64_t number = 0;
        bool default_ok = parse_value(desc, desc->default_text, &number);
        (void)default_ok; /* defaults are checked by test_options, once, not at every start */
        set_value((gm_option_id_t)i, desc->default_text, number, false);
        bool found;
        const char *text = env_lookup(env, desc->name, &found);
        if (!found)
            continue;
        if (parse_value(desc, text, &number)) {
            set_value((gm_option_id_t)i, text, number, true);
        } else {
            errors++;
            gm_log(GM_LOG_WARN, "%s=\"%s\" is not valid (%s); keeping the default \"%s\"",
                   desc->name, text, desc->doc, desc->default_text);
        }
        if (i == GM_OPT_LOG_LEVEL)
            gm_log_set_level((int)option_values[GM_OPT_LOG_LEVEL].number);
    }
    gm_log_set_level((int)option_values[GM_OPT_LOG_LEVEL].number);
    for (char *const *e = env; e && *e; e++) {
        if (strncmp(*e, "GRAPHMEM_", 9) == 0 && !is_known_name(*e)) {
            const char *eq = strchr(*e, '=');
            int len = eq ? (int)(eq - *e) : (int)strlen(*e);
            gm_log(GM_LOG_WARN,
                   "unknown option %.*s is ignored (GRAPHMEM_PRINT_CONFIG=1 lists the options)",
                   len, *e);
        }
    }
    return errors;
}

uint64_t gm_option_u64(gm_option_id_t id) {
    return option_values[id].number;
}

const char *gm_option_text(gm_option_id_t id) {
    return option_values[id].text;
}

bool gm_option_from_env(gm_option_id_t id) {
    return option_values[id].from_env;
}

void gm_options_print(void) {
    gm_log_plain("graphmem: configuration:\n");
    for (int i = 0; i < GM_OPT_COUNT; i++) {
        const gm_option_desc_t *desc = &gm_option_table[i];
        gm_log_plain("graphmem:   %-28s = %-10s (%s)\n", desc->name, option_values[i].text,
                     option_values[i].from_env ? "environment" : "default");
    }
}
