/* Node pairing of cuGraphExecUpdate (shape.h). */
#include <stdlib.h>
#include <string.h>

#include "shape.h"
#include "util.h"

#define NONE UINT32_MAX

void gm_shape_free(gm_shape_t *s) {
    gm_free_each((void *[]){s->kind, s->nodes, s->dep_start, s->deps, s->exits}, 5);
    memset(s, 0, sizeof *s);
}

gm_status_t gm_shape_build(gm_shape_t *s, uint32_t n, const uint64_t *nodes, uint32_t edges,
                           const uint32_t *from, const uint32_t *to) {
    memset(s, 0, sizeof *s);
    s->node_count = n;
    uint32_t *outgoing = calloc(n + 1, sizeof *outgoing);
    s->kind = calloc(n + 1, 1);
    s->nodes = malloc((n + 1) * sizeof *s->nodes);
    s->dep_start = calloc(n + 2, sizeof *s->dep_start);
    s->deps = malloc((edges + 1) * sizeof *s->deps);
    s->exits = malloc((n + 1) * sizeof *s->exits);
    if (!outgoing || !s->kind || !s->nodes || !s->dep_start || !s->deps || !s->exits) {
        free(outgoing);
        gm_shape_free(s);
        return GM_ERR_OUT_OF_MEMORY;
    }
    if (n)
        memcpy(s->nodes, nodes, n * sizeof *nodes);
    for (uint32_t i = 0; i < edges; i++) {
        s->dep_start[to[i] + 2]++;
        outgoing[from[i]]++;
    }
    for (uint32_t i = 2; i <= n + 1; i++)
        s->dep_start[i] += s->dep_start[i - 1];
    /* dep_start[i + 1] is node i's fill position while filling, its end afterwards. */
    for (uint32_t i = 0; i < edges; i++)
        s->deps[s->dep_start[to[i] + 1]++] = from[i];
    for (uint32_t i = 0; i < n; i++)
        if (!outgoing[i])
            s->exits[s->exit_count++] = i;
    free(outgoing);
    return GM_OK;
}

static uint32_t dep_count(const gm_shape_t *s, uint32_t i) {
    return s->dep_start[i + 1] - s->dep_start[i];
}

gm_shape_match_t gm_shape_pair(const gm_shape_t *a, const gm_shape_t *b, uint32_t *node_out) {
    if (a->node_count != b->node_count || a->exit_count != b->exit_count)
        return GM_SHAPE_OTHER;
    uint32_t n = a->node_count;
    uint32_t *b_of_a = malloc((n + 1) * sizeof *b_of_a), *a_of_b = malloc((n + 1) * sizeof *a_of_b);
    uint32_t *queue = malloc((n + 1) * sizeof *queue); /* nodes of a, each pushed once */
    gm_shape_match_t result = GM_SHAPE_OTHER;
    if (!b_of_a || !a_of_b || !queue)
        goto out;
    memset(b_of_a, 0xff, n * sizeof *b_of_a);
    memset(a_of_b, 0xff, n * sizeof *a_of_b);
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < a->exit_count; i++) {
        b_of_a[a->exits[i]] = b->exits[i];
        a_of_b[b->exits[i]] = a->exits[i];
        queue[tail++] = a->exits[i];
    }
    while (head < tail) {
        uint32_t ia = queue[head++], ib = b_of_a[ia];
        if (a->kind[ia] != b->kind[ib]) {
            *node_out = ib;
            result = GM_SHAPE_KIND_CHANGED;
            goto out;
        }
        if (dep_count(a, ia) != dep_count(b, ib))
            goto out;
        for (uint32_t k = 0; k < dep_count(a, ia); k++) {
            uint32_t da = a->deps[a->dep_start[ia] + k], db = b->deps[b->dep_start[ib] + k];
            if (b_of_a[da] == NONE && a_of_b[db] == NONE) {
                b_of_a[da] = db;
                a_of_b[db] = da;
                queue[tail++] = da;
            } else if (b_of_a[da] != db) {
                goto out;
            }
        }
    }
    /* Nodes not reached from an exit do not exist in a DAG: all n are paired. */
    result = tail == n ? GM_SHAPE_SAME : GM_SHAPE_OTHER;
out:
    free(b_of_a);
    free(a_of_b);
    free(queue);
    return result;
}

uint32_t gm_shape_first_marker(const gm_shape_t *b) {
    uint32_t n = b->node_count, found = NONE;
    uint32_t *queue = malloc((n + 1) * sizeof *queue);
    uint8_t *seen = calloc(n + 1, 1);
    if (queue && seen) {
        uint32_t head = 0, tail = 0;
        for (uint32_t i = 0; i < b->exit_count; i++) {
            queue[tail++] = b->exits[i];
            seen[b->exits[i]] = 1;
        }
        while (head < tail && found == NONE) {
            uint32_t i = queue[head++];
            if (b->kind[i])
                found = i;
            for (uint32_t k = b->dep_start[i]; k < b->dep_start[i + 1]; k++)
                if (!seen[b->deps[k]]) {
                    seen[b->deps[k]] = 1;
                    queue[tail++] = b->deps[k];
                }
        }
    }
    free(queue);
    free(seen);
    return found;
}
