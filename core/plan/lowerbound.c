#include "lowerbound.h"

#include <stdlib.h>

#include "bitset.h"
#include "util.h"

/* The bound as a flow. Write i < j when allocation i ends before j starts (bit i of row j of
 * `before`). Every allocation j offers size[j] bytes at its start, every proper i takes up to
 * size[i] bytes at its end, and j may hand bytes to any i < j over an uncapacitated arc (j reuses
 * i's memory). A maximum-weight closure of that network (Picard) is a set A of starts that pays
 * for every end i < some j in A: for the starts inside a down-closed node set I the paid ends are
 * exactly the ends inside I, so closures reach the bound, and no closure exceeds the live bytes
 * of the node set its starts generate. Its weight is sum(size) - max flow (min cut).
 *
 * The network has 2n nodes and its middle arcs are the bits of `before`, so no arc is built. A
 * greedy pass places almost all bytes: starts in topological order, each taking from the ends it
 * may reuse, from the highest index down (with allocations numbered in creation order, recent ends
 * tend to be open to fewer later starts; on 10,000-allocation graphs this left 27 augmentations
 * against 847 for the lowest index first with the planner's numbering, 35 against 45 with a random
 * one). Breadth-first augmenting paths then make the flow maximum. A search that fails proves every
 * node it visited unable to reach the sink, and that stays true after any later augmentation
 * (Ford-Fulkerson: an augmenting path only adds arcs between nodes that do reach the sink), so
 * those nodes stay closed: all failed searches together visit each node once, and the proof of
 * optimality costs about one pass over `before`. On 10,000-allocation graphs (streams with
 * joins, random DAGs) the push-relabel on the node-level DAG it replaces took 86-1100 ms (5 ms on
 * a single chain), this 4-11 ms. */

typedef struct transfer {
    uint32_t start; /* allocation whose start takes the bytes */
    uint32_t next;  /* next transfer into the same end, UINT32_MAX at the last */
    int64_t bytes;  /* flow on the arc start -> end; may drop to 0 and stay listed */
} transfer_t;

typedef struct solver {
    uint32_t n;
    size_t words;
    const uint64_t *before;
    int64_t *offer;        /* bytes start j has not placed yet (residual of source -> j) */
    int64_t *room;         /* bytes end i can still take (residual of i -> sink) */
    uint64_t *has_room;    /* bit row: room[i] > 0 */
    uint64_t *closed_end;  /* bit row: ends visited by the current search or proven dead */
    uint8_t *closed_start; /* same for starts */
    uint32_t *first;       /* per end: its first transfer, UINT32_MAX when none */
    transfer_t *transfers;
    uint32_t transfer_count, transfer_cap;
    uint32_t *queue;        /* starts of the current search, in visiting order */
    uint32_t *ends_seen;    /* ends of the current search */
    uint32_t *reached_from; /* per end: the start that reached it */
    uint32_t *via_end;      /* per start (not the first): the end it was reached through */
    uint32_t *via_transfer; /* ... over the reverse of this transfer */
} solver_t;

static gm_status_t add_transfer(solver_t *s, uint32_t start, uint32_t end, int64_t bytes) {
    if (s->transfer_count == s->transfer_cap &&
        gm_grow((void **)&s->transfers, &s->transfer_cap, s->transfer_count + 1,
                sizeof *s->transfers))
        return GM_ERR_OUT_OF_MEMORY;
    s->transfers[s->transfer_count] = (transfer_t){start, s->first[end], bytes};
    s->first[end] = s->transfer_count++;
    return GM_OK;
}

static gm_status_t move_bytes(solver_t *s, uint32_t start, uint32_t end, int64_t bytes) {
    for (uint32_t t = s->first[end]; t != UINT32_MAX; t = s->transfers[t].next)
        if (s->transfers[t].start == start) {
            s->transfers[t].bytes += bytes;
            return GM_OK;
        }
    return add_transfer(s, start, end, bytes);
}

static void take_room(solver_t *s, uint32_t end, int64_t bytes) {
    s->room[end] -= bytes;
    if (s->room[end] == 0)
        gm_bits_clear(s->has_room, end);
}

/* Each start in topological order takes what it can from ends with room, highest index first. */
static gm_status_t greedy(solver_t *s, const uint32_t *order) {
    for (uint32_t k = 0; k < s->n; k++) {
        uint32_t j = order[k];
        const uint64_t *row = s->before + (size_t)j * s->words;
        for (size_t w = s->words; w-- > 0 && s->offer[j] > 0;) {
            for (uint64_t bits = row[w] & s->has_room[w]; bits && s->offer[j] > 0;) {
                unsigned top = 63u - (unsigned)__builtin_clzll(bits);
                bits &= ~(1ull << top);
                uint32_t i = (uint32_t)(w * 64 + top);
                int64_t bytes = s->offer[j] < s->room[i] ? s->offer[j] : s->room[i];
                gm_status_t st = add_transfer(s, j, i, bytes);
                if (st != GM_OK)
                    return st;
                s->offer[j] -= bytes;
                take_room(s, i, bytes);
            }
        }
    }
    return GM_OK;
}

/* Visits start j: returns an end with room it may reuse, or UINT32_MAX after queueing the starts
 * that hand bytes to its newly reached ends (they could hand those ends over and reuse others). */
static uint32_t visit(solver_t *s, uint32_t j, uint32_t *queue_tail, uint32_t *ends_tail) {
    const uint64_t *row = s->before + (size_t)j * s->words;
    for (size_t w = 0; w < s->words; w++) {
        uint64_t open = row[w] & s->has_room[w];
        if (open) {
            uint32_t i = (uint32_t)(w * 64 + gm_bits_ctz(open));
            s->reached_from[i] = j;
            return i;
        }
        uint64_t fresh = row[w] & ~s->closed_end[w];
        s->closed_end[w] |= fresh;
        for (; fresh; fresh &= fresh - 1) {
            uint32_t i = (uint32_t)(w * 64 + gm_bits_ctz(fresh));
            s->reached_from[i] = j;
            s->ends_seen[(*ends_tail)++] = i;
            for (uint32_t t = s->first[i]; t != UINT32_MAX; t = s->transfers[t].next) {
                uint32_t next = s->transfers[t].start;
                if (s->transfers[t].bytes > 0 && !s->closed_start[next]) {
                    s->closed_start[next] = 1;
                    s->via_end[next] = i;
                    s->via_transfer[next] = t;
                    s->queue[(*queue_tail)++] = next;
                }
            }
        }
    }
    return UINT32_MAX;
}

/* One breadth-first search for an augmenting path from start j0 (which has bytes on offer) and,
 * when found, the flow moved along it. When none exists j0 and all it reached stay closed. */
static gm_status_t augment(solver_t *s, uint32_t j0) {
    uint32_t head = 0, tail = 0, ends = 0, found = UINT32_MAX;
    s->closed_start[j0] = 1;
    s->queue[tail++] = j0;
    while (head < tail && found == UINT32_MAX)
        found = visit(s, s->queue[head++], &tail, &ends);
    if (found == UINT32_MAX)
        return GM_OK;
    /* Path: j0 -> end -> (back over a transfer) start -> end ... -> found. */
    int64_t bytes = s->offer[j0] < s->room[found] ? s->offer[j0] : s->room[found];
    for (uint32_t j = s->reached_from[found]; j != j0; j = s->reached_from[s->via_end[j]])
        if (s->transfers[s->via_transfer[j]].bytes < bytes)
            bytes = s->transfers[s->via_transfer[j]].bytes;
    gm_status_t st = GM_OK;
    for (uint32_t i = found, j = s->reached_from[i]; st == GM_OK; j = s->reached_from[i]) {
        st = move_bytes(s, j, i, bytes);
        if (j == j0)
            break;
        s->transfers[s->via_transfer[j]].bytes -= bytes;
        i = s->via_end[j];
    }
    s->offer[j0] -= bytes;
    take_room(s, found, bytes);
    /* Not proven dead: reopen what this search visited. */
    for (uint32_t k = 0; k < tail; k++)
        s->closed_start[s->queue[k]] = 0;
    for (uint32_t k = 0; k < ends; k++)
        gm_bits_clear(s->closed_end, s->ends_seen[k]);
    return st;
}

/* Allocations by the topological rank of their alloc node (counting sort). */
static gm_status_t start_order(const gm_dag_t *dag, uint32_t n, const uint32_t *alloc_node,
                               uint32_t *order) {
    uint32_t *count = calloc((size_t)dag->node_count + 1, sizeof *count);
    if (!count)
        return GM_ERR_OUT_OF_MEMORY;
    for (uint32_t j = 0; j < n; j++)
        count[dag->rank[alloc_node[j]] + 1]++;
    for (uint32_t r = 0; r < dag->node_count; r++)
        count[r + 1] += count[r];
    for (uint32_t j = 0; j < n; j++)
        order[count[dag->rank[alloc_node[j]]]++] = j;
    free(count);
    return GM_OK;
}

static void solver_free(solver_t *s) {
    free(s->offer);
    free(s->room);
    free(s->has_room);
    free(s->closed_end);
    free(s->closed_start);
    free(s->first);
    free(s->transfers);
    free(s->queue);
    free(s->ends_seen);
    free(s->reached_from);
    free(s->via_end);
    free(s->via_transfer);
}

gm_status_t gm_lower_bound(const gm_dag_t *dag, uint32_t n, const uint64_t *size,
                           const uint32_t *alloc_node, const bool *proper, const uint64_t *before,
                           uint64_t *bound_out) {
    int64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* The sum must fit in int64_t. */
        if (alloc_node[i] >= dag->node_count || size[i] > (uint64_t)INT64_MAX / 4 / (n + 1u))
            return GM_ERR_INVALID_VALUE;
        total += (int64_t)size[i];
    }
    size_t n1 = (size_t)n + 1, words = gm_bits_words(n) + 1;
    solver_t s = {.n = n, .words = gm_bits_words(n), .before = before};
    s.offer = malloc(n1 * sizeof *s.offer);
    s.room = malloc(n1 * sizeof *s.room);
    s.has_room = calloc(words, sizeof *s.has_room);
    s.closed_end = calloc(words, sizeof *s.closed_end);
    s.closed_start = calloc(n1, sizeof *s.closed_start);
    s.first = malloc(n1 * sizeof *s.first);
    s.transfer_cap = 2 * n + 16;
    s.transfers = malloc((size_t)s.transfer_cap * sizeof *s.transfers);
    s.queue = malloc(n1 * sizeof *s.queue);
    s.ends_seen = malloc(n1 * sizeof *s.ends_seen);
    s.reached_from = malloc(n1 * sizeof *s.reached_from);
    s.via_end = malloc(n1 * sizeof *s.via_end);
    s.via_transfer = malloc(n1 * sizeof *s.via_transfer);
    uint32_t *order = malloc(n1 * sizeof *order);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!s.offer || !s.room || !s.has_room || !s.closed_end || !s.closed_start || !s.first ||
        !s.transfers || !s.queue || !s.ends_seen || !s.reached_from || !s.via_end ||
        !s.via_transfer || !order)
        goto out;
    for (uint32_t i = 0; i < n; i++) {
        s.offer[i] = (int64_t)size[i];
        s.room[i] = proper[i] ? (int64_t)size[i] : 0;
        if (s.room[i] > 0)
            gm_bits_set(s.has_room, i);
        s.first[i] = UINT32_MAX;
    }
    if ((st = start_order(dag, n, alloc_node, order)) != GM_OK || (st = greedy(&s, order)) != GM_OK)
        goto out;
    for (uint32_t k = 0; k < n && st == GM_OK; k++) {
        uint32_t j = order[k];
        while (st == GM_OK && s.offer[j] > 0 && !s.closed_start[j])
            st = augment(&s, j);
    }
    if (st != GM_OK)
        goto out;
    int64_t flow = 0;
    for (uint32_t j = 0; j < n; j++)
        flow += (int64_t)size[j] - s.offer[j];
    *bound_out = (uint64_t)(total - flow);
out:
    solver_free(&s);
    free(order);
    return st;
}
