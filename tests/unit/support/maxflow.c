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

/* Highest-label push-relabel, computing only the first phase (a maximum preflow): its excess at
 * the sink is the max-flow value, which is all the tests need. Global relabelling (exact distances
 * to the sink by a backward BFS) runs at the start and after every `relabel_budget` units of work.
 */
typedef struct solver {
    gm_flow_t *flow; /* its capacities become the residual ones */
    uint32_t n, source, sink;
    uint32_t *start, *arcs; /* arcs leaving each node, compressed rows */
    uint32_t *label, *current, *queue;
    int64_t *excess;
    uint32_t *bucket_head, *bucket_next; /* active nodes by label, singly linked */
    uint32_t highest;
} solver_t;

static void activate(solver_t *s, uint32_t v) {
    s->bucket_next[v] = s->bucket_head[s->label[v]];
    s->bucket_head[s->label[v]] = v;
    if (s->label[v] > s->highest)
        s->highest = s->label[v];
}

/* Exact distances to the sink in the residual graph; nodes that cannot reach it get label n (their
 * excess stays on the source side). Rebuilds the active buckets. */
static void global_relabel(solver_t *s) {
    const gm_flow_t *flow = s->flow;
    for (uint32_t v = 0; v < s->n; v++) {
        s->label[v] = s->n;
        s->bucket_head[v] = UINT32_MAX;
        s->current[v] = s->start[v];
    }
    uint32_t head = 0, tail = 0;
    s->label[s->sink] = 0;
    s->queue[tail++] = s->sink;
    while (head < tail) {
        uint32_t v = s->queue[head++];
        for (uint32_t k = s->start[v]; k < s->start[v + 1]; k++) {
            uint32_t e = s->arcs[k], w = flow->to[e];
            if (flow->cap[e ^ 1] > 0 && s->label[w] == s->n && w != s->source) {
                s->label[w] = s->label[v] + 1;
                s->queue[tail++] = w;
            }
        }
    }
    s->highest = 0;
    for (uint32_t v = 0; v < s->n; v++)
        if (v != s->sink && v != s->source && s->excess[v] > 0 && s->label[v] < s->n)
            activate(s, v);
}

/* Pushes v's excess along admissible arcs; relabels when none is left. Returns the work done. */
static uint64_t discharge(solver_t *s, uint32_t v) {
    gm_flow_t *flow = s->flow;
    uint64_t work = 0;
    while (s->excess[v] > 0) {
        if (s->current[v] == s->start[v + 1]) {
            uint32_t lowest = s->n;
            for (uint32_t k = s->start[v]; k < s->start[v + 1]; k++) {
                uint32_t e = s->arcs[k];
                if (flow->cap[e] > 0 && s->label[flow->to[e]] + 1 < lowest)
                    lowest = s->label[flow->to[e]] + 1;
            }
            work += 12 + (s->start[v + 1] - s->start[v]);
            s->label[v] = lowest;
            s->current[v] = s->start[v];
            if (lowest >= s->n)
                return work; /* cut off from the sink: source side */
            continue;
        }
        uint32_t e = s->arcs[s->current[v]], w = flow->to[e];
        if (flow->cap[e] > 0 && s->label[v] == s->label[w] + 1) {
            int64_t push = s->excess[v] < flow->cap[e] ? s->excess[v] : flow->cap[e];
            flow->cap[e] -= push;
            flow->cap[e ^ 1] += push;
            s->excess[v] -= push;
            if (s->excess[w] == 0 && w != s->sink && w != s->source)
                activate(s, w);
            s->excess[w] += push;
        } else {
            s->current[v]++;
        }
    }
    return work;
}

gm_status_t gm_flow_max(gm_flow_t *flow, uint32_t source, uint32_t sink, int64_t *value_out) {
    uint32_t n = flow->node_count;
    if (source >= n || sink >= n || source == sink)
        return GM_ERR_INVALID_VALUE;
    solver_t s = {.flow = flow, .n = n, .source = source, .sink = sink};
    s.start = calloc((size_t)n + 1, sizeof *s.start);
    s.arcs = malloc(((size_t)flow->edge_count + 1) * sizeof *s.arcs);
    s.label = malloc((size_t)n * sizeof *s.label);
    s.current = malloc(((size_t)n + 1) * sizeof *s.current);
    s.queue = malloc((size_t)n * sizeof *s.queue);
    s.excess = calloc((size_t)n, sizeof *s.excess);
    s.bucket_head = malloc(((size_t)n + 1) * sizeof *s.bucket_head);
    s.bucket_next = malloc((size_t)n * sizeof *s.bucket_next);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!s.start || !s.arcs || !s.label || !s.current || !s.queue || !s.excess || !s.bucket_head ||
        !s.bucket_next)
        goto out;
    for (uint32_t e = 0; e < flow->edge_count; e++)
        s.start[flow->to[e ^ 1] + 1]++;
    for (uint32_t v = 0; v < n; v++)
        s.start[v + 1] += s.start[v];
    memcpy(s.current, s.start, (size_t)n * sizeof *s.current);
    for (uint32_t e = 0; e < flow->edge_count; e++)
        s.arcs[s.current[flow->to[e ^ 1]]++] = e;
    for (uint32_t k = s.start[source]; k < s.start[source + 1]; k++) {
        uint32_t e = s.arcs[k];
        s.excess[flow->to[e]] += flow->cap[e];
        flow->cap[e ^ 1] += flow->cap[e];
        flow->cap[e] = 0;
    }
    global_relabel(&s);
    uint64_t budget = 6ull * n + flow->edge_count, work = 0;
    for (;;) {
        while (s.highest > 0 && s.bucket_head[s.highest] == UINT32_MAX)
            s.highest--;
        uint32_t v = s.bucket_head[s.highest];
        if (v == UINT32_MAX)
            break;
        s.bucket_head[s.highest] = s.bucket_next[v];
        work += discharge(&s, v);
        if (work > budget) {
            global_relabel(&s);
            work = 0;
        }
    }
    *value_out = s.excess[sink];
    st = GM_OK;
out:
    free(s.start);
    free(s.arcs);
    free(s.label);
    free(s.current);
    free(s.queue);
    free(s.excess);
    free(s.bucket_head);
    free(s.bucket_next);
    return st;
}
