/* cuGraphDebugDotPrint: the driver prints markers as EMPTY nodes; graphmem prints them as the
 * driver prints memory nodes (format read off driver 580: a rectangle "K\nMEM_ALLOC" label, or a
 * record with the node's parameters when VERBOSE or the MEM_*_NODE_PARAMS flags ask for them).
 * The driver writes with node handles forced on, so each EMPTY node can be matched to a marker;
 * handles are then dropped again unless the caller asked for them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bridge/engine_glue.h"

#define DOT_VERBOSE 0x1u
#define DOT_HANDLES 0x400u
#define DOT_ALLOC_PARAMS 0x800u
#define DOT_FREE_PARAMS 0x1000u

static char *read_file(const char *path, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 1 << 16, size = 0;
    char *text = malloc(cap + 1);
    size_t n;
    while (text && (n = fread(text + size, 1, cap - size, f)) > 0) {
        size += n;
        if (size == cap) {
            char *grown = realloc(text, cap * 2 + 1);
            if (grown == NULL) {
                free(text);
                text = NULL;
            }
            text = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (text) {
        text[size] = '\0';
        *size_out = size;
    }
    return text;
}

static const char *const dot_handle_tag = "node handle: 0x";

/* One node block: from its '"graph_' line to the line '"];'. Writes it to `out`, rewritten. */
static void write_block(FILE *out, const char *block, size_t len, unsigned flags,
                        gm_engine_t *engine) {
    bool handles = flags & (DOT_VERBOSE | DOT_HANDLES);
    char *copy = strndup(block, len);
    if (copy == NULL)
        return;
    const char *tag = strstr(copy, dot_handle_tag);
    uint64_t handle = tag ? strtoull(tag + strlen(dot_handle_tag), NULL, 16) : 0;
    gm_marker_info_t info;
    gm_marker_kind_t kind = (tag && strstr(copy, "\nEMPTY\n"))
                                ? gm_engine_marker(engine, handle, &info)
                                : GM_MARKER_NONE;
    const char *label = strstr(copy, "label=\"");
    if (kind != GM_MARKER_NONE && label != NULL) {
        const char *id_start = label + strlen("label=\"");
        const char *id_end = strchr(id_start, '\n');
        int id_len = id_end ? (int)(id_end - id_start) : 0;
        const char *name = kind == GM_MARKER_ALLOC ? "MEM_ALLOC" : "MEM_FREE";
        bool params = (flags & DOT_VERBOSE) ||
                      (flags & (kind == GM_MARKER_ALLOC ? DOT_ALLOC_PARAMS : DOT_FREE_PARAMS));
        fprintf(out, "%.*s", (int)(strstr(copy, "[") - copy), copy);
        if (!params) {
            fprintf(out, "[style=\"solid\" shape=\"rectangle\" label=\"%.*s\n%s\n", id_len,
                    id_start, name);
            if (handles)
                fprintf(out, "node handle: 0x%016llX\n", (unsigned long long)handle);
            fputs("\"];\n", out);
        } else {
            fprintf(out, "[style=\"solid\" shape=\"record\" label=\"{\n%s\n", name);
            if (handles)
                fprintf(out, "| {{ID | node handle} | {%.*s | 0x%016llX}}\n", id_len, id_start,
                        (unsigned long long)handle);
            else
                fprintf(out, "| {{ID} | {%.*s}}\n", id_len, id_start);
            if (kind == GM_MARKER_ALLOC)
                fprintf(out,
                        "| {{{poolProps | {allocType | handleTypes | {location | {type | id}}} | "
                        "{PINNED | NONE | DEVICE | %d}}}}\n| {{bytesize | dptr} | {%llu | "
                        "0x%016llX}}\n",
                        info.params.device, (unsigned long long)info.params.size,
                        (unsigned long long)info.va);
            else
                fprintf(out, "| {{dptr} | {0x%016llX}}\n", (unsigned long long)info.va);
            fputs("}\"];\n", out);
        }
    } else if (!handles && tag != NULL) {
        /* Not a marker: print it as the driver would have without handles. */
        const char *line_end = strchr(tag, '\n');
        fprintf(out, "%.*s%s", (int)(tag - copy), copy, line_end ? line_end + 1 : "");
    } else {
        fputs(copy, out);
    }
    free(copy);
}

static bool rewrite(const char *from, const char *to, unsigned flags, gm_engine_t *engine) {
    size_t size = 0;
    char *text = read_file(from, &size);
    FILE *out = text ? fopen(to, "w") : NULL;
    if (out == NULL) {
        free(text);
        return false;
    }
    const char *p = text;
    while (*p) {
        const char *line_end = strchr(p, '\n');
        const char *next = line_end ? line_end + 1 : p + strlen(p);
        if (strncmp(p, "\"graph_", 7) == 0 && strstr(p, "label=\"") &&
            (!line_end || strstr(p, "label=\"") < line_end)) {
            const char *end = strstr(p, "\"];\n");
            next = end ? end + 4 : p + strlen(p);
            write_block(out, p, (size_t)(next - p), flags, engine);
        } else {
            fwrite(p, 1, (size_t)(next - p), out);
        }
        p = next;
    }
    free(text);
    return fclose(out) == 0;
}

CUresult gm_hook_cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags) {
    gm_engine_t *engine = gm_glue_engine_if_started();
    if (engine == NULL || path == NULL || hGraph == NULL)
        return gm_real.cuGraphDebugDotPrint(hGraph, path, flags);
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.graphmem-%d", path, (int)getpid()) >= (int)sizeof tmp)
        return gm_real.cuGraphDebugDotPrint(hGraph, path, flags);
    CUresult result = gm_real.cuGraphDebugDotPrint(hGraph, tmp, flags | DOT_HANDLES);
    if (result != CUDA_SUCCESS) /* the driver's own error, on the caller's path */
        return gm_real.cuGraphDebugDotPrint(hGraph, path, flags);
    bool ok = rewrite(tmp, path, flags, engine);
    remove(tmp);
    return ok ? CUDA_SUCCESS : gm_real.cuGraphDebugDotPrint(hGraph, path, flags);
}
