#include "maxflow.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct gm_flow {
    uint32_t node_count;
    uint32_t edge_count, edge_cap; /* directed arcs: arc e and its reverse e ^ 1 */
    uint32_t *to;
    int64_t *cap;
};

gm_flow_t *gm_flow_create(uint32_t node_count, uint32_t edge_hint) {
    gm_flow_t *flow = calloc(1, sizeof *flow);
    if (!flow)
        return NULL;
    flow->node_count = node_count;
    flow->edge_cap = 2 * (edge_hint ? edge_hint : 8);
    flow->to = malloc(flow->edge_cap * sizeof *flow->to);
    flow->cap = malloc(flow->edge_cap * sizeof *flow->cap);
    if (!flow->to || !flow->cap) {
        gm_flow_destroy(flow);
        return NULL;
    }
    return flow;
}

void gm_flow_destroy(gm_flow_t *flow) {
    if (!flow)
        return;
    free(flow->to);
    free(flow->cap);
    free(flow);
}

gm_status_t gm_flow_add_edge(gm_flow_t *flow, uint32_t from, uint32_t to, int64_t capacity) {
    if (from >= flow->node_count || to >= flow->node_count || capacity < 0)
        return GM_ERR_INVALID_VALUE;
    if (flow->edge_count + 2 > flow->edge_cap) {
        if (flow->edge_cap > UINT32_MAX / 2)
            return GM_ERR_OUT_OF_MEMORY;
        uint32_t cap2 = flow->edge_cap * 2;
        uint32_t *t = realloc(flow->to, cap2 * sizeof *t);
        if (!t)
            return GM_ERR_OUT_OF_MEMORY;
        flow->to = t;
        int64_t *c = realloc(flow->cap, cap2 * sizeof *c);
        if (!c)
            return GM_ERR_OUT_OF_MEMORY;
        flow->cap = c;
        flow->edge_cap = cap2;
    }
    uint32_t e = flow->edge_count;
    flow->to[e] = to;
    flow->cap[e] = capacity;
    flow->to[e + 1] = from;
    flow->cap[e + 1] = 0;
    flow->edge_count += 2;
    return GM_OK;
}

typedef struct solver {
    uint32_t *start, *arcs; /* arcs leaving each node, compressed rows */
    uint32_t *level, *queue, *next, *path;
} solver_t;

static bool levels(const gm_flow_t *flow, solver_t *s, uint32_t source, uint32_t sink) {
    for (uint32_t v = 0; v < flow->node_count; v++)
        s->level[v] = UINT32_MAX;
    uint32_t head = 0, tail = 0;
    s->level[source] = 0;
    s->queue[tail++] = source;
    while (head < tail) {
        uint32_t v = s->queue[head++];
        for (uint32_t k = s->start[v]; k < s->start[v + 1]; k++) {
            uint32_t e = s->arcs[k], w = flow->to[e];
            if (flow->cap[e] > 0 && s->level[w] == UINT32_MAX) {
                s->level[w] = s->level[v] + 1;
                s->queue[tail++] = w;
            }
        }
    }
    return s->level[sink] != UINT32_MAX;
}

/* One blocking flow on the level graph: walk forward along admissible arcs, push the bottleneck at
 * the sink, retreat to the first saturated arc; a dead end advances its parent's current arc. */
static int64_t blocking_flow(gm_flow_t *flow, solver_t *s, uint32_t source, uint32_t sink) {
    int64_t total = 0;
    uint32_t depth = 0, v = source;
    memcpy(s->next, s->start, flow->node_count * sizeof *s->next);
    for (;;) {
        if (v == sink) {
            int64_t push = GM_FLOW_INF;
            for (uint32_t k = 0; k < depth; k++)
                if (flow->cap[s->path[k]] < push)
                    push = flow->cap[s->path[k]];
            uint32_t first_full = depth;
            for (uint32_t k = 0; k < depth; k++) {
                flow->cap[s->path[k]] -= push;
                flow->cap[s->path[k] ^ 1] += push;
                if (flow->cap[s->path[k]] == 0 && first_full == depth)
                    first_full = k;
            }
            total += push;
            depth = first_full;
            v = depth == 0 ? source : flow->to[s->path[depth - 1]];
            continue;
        }
        uint32_t found = UINT32_MAX;
        for (; s->next[v] < s->start[v + 1]; s->next[v]++) {
            uint32_t e = s->arcs[s->next[v]];
            if (flow->cap[e] > 0 && s->level[flow->to[e]] == s->level[v] + 1) {
                found = e;
                break;
            }
        }
        if (found != UINT32_MAX) {
            s->path[depth++] = found;
            v = flow->to[found];
            continue;
        }
        s->level[v] = UINT32_MAX; /* dead end for the rest of this phase */
        if (depth == 0)
            return total;
        uint32_t e = s->path[--depth];
        v = flow->to[e ^ 1];
        s->next[v]++;
    }
}

gm_status_t gm_flow_max(gm_flow_t *flow, uint32_t source, uint32_t sink, int64_t *value_out) {
    uint32_t n = flow->node_count;
    if (source >= n || sink >= n || source == sink)
        return GM_ERR_INVALID_VALUE;
    solver_t s = {0};
    s.start = calloc((size_t)n + 1, sizeof *s.start);
    s.arcs = malloc(((size_t)flow->edge_count + 1) * sizeof *s.arcs);
    s.level = malloc((size_t)n * sizeof *s.level);
    s.queue = malloc((size_t)n * sizeof *s.queue);
    s.next = malloc(((size_t)n + 1) * sizeof *s.next);
    s.path = malloc((size_t)n * sizeof *s.path);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!s.start || !s.arcs || !s.level || !s.queue || !s.next || !s.path)
        goto out;
    for (uint32_t e = 0; e < flow->edge_count; e++)
        s.start[flow->to[e ^ 1] + 1]++;
    for (uint32_t v = 0; v < n; v++)
        s.start[v + 1] += s.start[v];
    memcpy(s.next, s.start, (size_t)n * sizeof *s.next);
    for (uint32_t e = 0; e < flow->edge_count; e++)
        s.arcs[s.next[flow->to[e ^ 1]]++] = e;
    int64_t total = 0;
    while (levels(flow, &s, source, sink))
        total += blocking_flow(flow, &s, source, sink);
    *value_out = total;
    st = GM_OK;
out:
    free(s.start);
    free(s.arcs);
    free(s.level);
    free(s.queue);
    free(s.next);
    free(s.path);
    return st;
}
