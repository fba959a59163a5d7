#include "stats.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static const char *const stat_names[GM_STAT_COUNT] = {
#define GM_PROCESS_STAT(name, doc) #name,
#include "stats.def"
#undef GM_PROCESS_STAT
};

static const char *const *call_names;
static size_t call_count;
static gm_exec_report_source exec_source;

void gm_stats_register_calls(const char *const *names, size_t count) {
    call_names = names;
    call_count = count <= GM_TALLY_SLOTS - GM_STAT_COUNT ? count : GM_TALLY_SLOTS - GM_STAT_COUNT;
}

void gm_stats_register_execs(gm_exec_report_source source) {
    exec_source = source;
}

void gm_stats_reset(void) {
    gm_tally_reset_after_fork();
}

void gm_stats_fini(void) {
    gm_tally_fini();
}

static uint64_t stat_value(int i) {
    return gm_tally_sum((size_t)i);
}

static uint64_t call_value(size_t i) {
    return gm_tally_sum(GM_STAT_COUNT + i);
}

static void print_exec_row(const gm_exec_report_t *r, void *arg) {
    (void)arg;
    gm_log_plain("graphmem: exec %#llx dev %llu: %llu allocations, lower bound %llu B, "
                 "planned %llu B (escape %llu B), mapped %llu B, %llu mappings, "
                 "%llu launches, %llu uploads, %llu remaps, %llu waits\n",
                 (unsigned long long)r->exec, (unsigned long long)r->device,
                 (unsigned long long)r->allocations, (unsigned long long)r->lower_bound,
                 (unsigned long long)r->planned_bytes, (unsigned long long)r->escape_bytes,
                 (unsigned long long)r->mapped_bytes, (unsigned long long)r->mappings,
                 (unsigned long long)r->launches, (unsigned long long)r->uploads,
                 (unsigned long long)r->remaps, (unsigned long long)r->waits);
}

void gm_stats_print_table(void) {
    gm_log_plain("graphmem: statistics of process %d\n", (int)getpid());
    for (int i = 0; i < GM_STAT_COUNT; i++)
        gm_log_plain("graphmem:   %-28s %llu\n", stat_names[i], (unsigned long long)stat_value(i));
    gm_log_plain("graphmem: driver calls seen (non-zero):\n");
    for (size_t i = 0; i < call_count; i++) {
        uint64_t n = call_value(i);
        if (n)
            gm_log_plain("graphmem:   %-40s %llu\n", call_names[i], (unsigned long long)n);
    }
    if (exec_source)
        exec_source(print_exec_row, NULL);
}

/* Writing JSON with stdio is fine here: it runs at exit or on request, never inside a hook. */
typedef struct json_list {
    FILE *out;
    int rows;
} json_list_t;

static void json_exec(const gm_exec_report_t *r, void *arg) {
    json_list_t *list = arg;
    static const char *const names[] = {
#define GM_EXEC_STAT(name, doc) #name,
#include "stats.def"
#undef GM_EXEC_STAT
    };
    const uint64_t *values = (const uint64_t *)r;
    fputs(list->rows++ ? ",\n    {" : "\n    {", list->out);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        fprintf(list->out, "%s\"%s\": %llu", i ? ", " : "", names[i],
                (unsigned long long)values[i]);
    fputs("}", list->out);
}

static void expand_path(const char *path, char *out, size_t size) {
    size_t used = 0;
    for (const char *p = path; *p && used + 1 < size; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            int n = snprintf(out + used, size - used, "%d", (int)getpid());
            used += n > 0 ? (size_t)n : 0;
            p++;
        } else {
            out[used++] = *p;
        }
    }
    out[used < size ? used : size - 1] = '\0';
}

int gm_stats_write_json(const char *path) {
    char expanded[1024];
    expand_path(path, expanded, sizeof expanded);
    FILE *out = fopen(expanded, "w");
    if (!out) {
        gm_log(GM_LOG_WARN, "cannot write statistics to %s", expanded);
        return -1;
    }
    fprintf(out, "{\n  \"graphmem_stats_version\": %d,\n  \"pid\": %d,\n  \"process\": {",
            GM_STATS_VERSION, (int)getpid());
    for (int i = 0; i < GM_STAT_COUNT; i++)
        fprintf(out, "%s\"%s\": %llu", i ? ", " : "", stat_names[i],
                (unsigned long long)stat_value(i));
    fputs("},\n  \"calls\": {", out);
    for (size_t i = 0; i < call_count; i++)
        fprintf(out, "%s\"%s\": %llu", i ? ", " : "", call_names[i],
                (unsigned long long)call_value(i));
    fputs("},\n  \"execs\": [", out);
    json_list_t list = {out, 0};
    if (exec_source)
        exec_source(json_exec, &list);
    fputs("\n  ]\n}\n", out);
    return fclose(out) == 0 ? 0 : -1;
}
