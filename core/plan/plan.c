/* gm_plan_build: lifetimes from reachability, the exact lower bound, placement, handle cuts. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "bitset.h"
#include "conflict.h"
#include "cut.h"
#include "dag.h"
#include "lowerbound.h"
#include "plan_work.h"
#include "util.h"

static void work_free(work_t *w) {
    gm_dag_free(&w->dag);
    free(w->alloc_of);
    free(w->alloc_node);
    free(w->free_node);
    free(w->size);
    free(w->proper);
    free(w->group_item);
    free(w->first);
    free(w->unit_first);
    free(w->range_first);
    free(w->extra_first);
    free(w->extra);
    free(w->unit_at);
    free(w->unit_pages);
    free(w->before);
    free(w->unit_conflict);
}

static gm_status_t validate(const gm_plan_input_t *in) {
    if (in->page == 0 || in->max_handle < in->page || in->max_handle % in->page)
        return GM_ERR_INVALID_VALUE;
    if ((in->edge_count && (!in->edge_from || !in->edge_to)) || (in->alloc_count && !in->allocs))
        return GM_ERR_INVALID_VALUE;
    for (uint32_t i = 0; i < in->alloc_count; i++) {
        const gm_plan_alloc_t *a = &in->allocs[i];
        if (a->alloc_node >= in->node_count || a->item >= in->item_count ||
            (a->free_node != GM_NO_NODE && a->free_node >= in->node_count) ||
            a->size > UINT64_MAX - a->item_offset || a->size > (1ull << 50))
            return GM_ERR_INVALID_VALUE;
    }
    return GM_OK;
}

/* Groups and the internal numbering (see work_t). */
static gm_status_t number(work_t *w) {
    const gm_plan_input_t *in = w->in;
    uint32_t items = in->item_count;
    uint32_t *count = calloc((size_t)items + 1, sizeof *count);
    uint32_t *group_of = malloc(((size_t)items + 1) * sizeof *group_of);
    uint32_t *cursor = malloc(((size_t)items + 2) * sizeof *cursor);
    gm_status_t st = GM_ERR_OUT_OF_MEMORY;
    if (!count || !group_of || !cursor)
        goto out;
    for (uint32_t i = 0; i < in->alloc_count; i++)
        if (in->allocs[i].size > 0) {
            count[in->allocs[i].item]++;
            w->n++;
        }
    for (uint32_t it = 0; it < items; it++)
        w->m += count[it] > 0;
    size_t n1 = (size_t)w->n + 1, m1 = (size_t)w->m + 1;
    w->alloc_of = malloc(n1 * sizeof *w->alloc_of);
    w->alloc_node = malloc(n1 * sizeof *w->alloc_node);
    w->free_node = malloc(n1 * sizeof *w->free_node);
    w->size = malloc(n1 * sizeof *w->size);
    w->proper = malloc(n1 * sizeof *w->proper);
    w->group_item = malloc(m1 * sizeof *w->group_item);
    w->first = malloc((m1 + 1) * sizeof *w->first);
    if (!w->alloc_of || !w->alloc_node || !w->free_node || !w->size || !w->proper ||
        !w->group_item || !w->first)
        goto out;
    uint32_t g = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t it = 0; it < items; it++)
            if (pass == 0 ? count[it] == 1 : count[it] > 1)
                w->group_item[g++] = it;
    w->first[0] = 0;
    for (g = 0; g < w->m; g++) {
        group_of[w->group_item[g]] = g;
        cursor[g] = w->first[g];
        w->first[g + 1] = w->first[g] + count[w->group_item[g]];
    }
    for (uint32_t i = 0; i < in->alloc_count; i++) {
        const gm_plan_alloc_t *a = &in->allocs[i];
        if (a->size == 0)
            continue;
        uint32_t k = cursor[group_of[a->item]]++;
        w->alloc_of[k] = i;
        w->alloc_node[k] = a->alloc_node;
        w->free_node[k] = a->free_node;
        w->size[k] = a->size;
    }
    st = GM_OK;
out:
    free(count);
    free(group_of);
    free(cursor);
    return st;
}

static gm_status_t conflicts(work_t *w) {
    size_t words = gm_bits_words(w->n), unit_words = gm_bits_words(w->units);
    w->before = malloc(((size_t)w->n * words + 1) * sizeof *w->before);
    w->unit_conflict = malloc(((size_t)w->units * unit_words + 1) * sizeof *w->unit_conflict);
    if (!w->before || !w->unit_conflict)
        return GM_ERR_OUT_OF_MEMORY;
    gm_status_t st =
        gm_dag_free_before_alloc(&w->dag, w->n, w->alloc_node, w->free_node, w->proper, w->before);
    if (st == GM_OK)
        st = gm_conflict_groups(&w->dag, w->n, w->alloc_node, w->free_node, w->proper, w->before,
                                w->units, w->range_first, w->extra_first, w->extra,
                                w->unit_conflict);
    return st;
}

/* Cuts one arena and points each of its items (len > 0) at the handles its pages touch; an
 * escaping item's spill into the shared arena (from its page 0) counts its handles as mappings. */
static gm_status_t cut(const gm_plan_input_t *in, gm_plan_t *plan, gm_plan_arena_t *arena,
                       const uint64_t *len) {
    uint64_t *start = malloc(((size_t)plan->item_count + 1) * sizeof *start);
    if (!start)
        return GM_ERR_OUT_OF_MEMORY;
    bool shared = arena == &plan->shared;
    for (uint32_t it = 0; it < plan->item_count; it++)
        start[it] = shared && plan->items[it].escaping ? 0 : plan->items[it].arena_page;
    gm_cut_cost_t cost = {GM_CUT_MAP_COST_BYTES / in->page, GM_CUT_HANDLE_COST_BYTES / in->page};
    gm_status_t st = gm_cut_arena(arena->pages, in->max_handle / in->page, cost, plan->item_count,
                                  start, len, &arena->handle_pages, &arena->handle_count);
    uint64_t *bound =
        st == GM_OK ? malloc(((size_t)arena->handle_count + 1) * sizeof *bound) : NULL;
    if (!bound) {
        free(start);
        return st != GM_OK ? st : GM_ERR_OUT_OF_MEMORY;
    }
    bound[0] = 0;
    for (uint32_t h = 0; h < arena->handle_count; h++)
        bound[h + 1] = bound[h] + arena->handle_pages[h];
    for (uint32_t it = 0; it < plan->item_count; it++) {
        if (len[it] == 0)
            continue;
        gm_plan_item_t *item = &plan->items[it];
        /* The handle holding page p is the last h with bound[h] <= p. */
        uint64_t targets[2] = {start[it], start[it] + len[it] - 1};
        uint32_t found[2];
        for (int t = 0; t < 2; t++) {
            uint32_t lo = 0, hi = arena->handle_count;
            while (hi - lo > 1) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (bound[mid] <= targets[t])
                    lo = mid;
                else
                    hi = mid;
            }
            found[t] = lo;
        }
        plan->mappings += found[1] - found[0] + 1;
        if (shared && item->escaping)
            continue; /* a spill: the item's own handles are the escape arena's */
        item->first_handle = found[0];
        item->handle_count = found[1] - found[0] + 1;
    }
    free(bound);
    free(start);
    return GM_OK;
}

gm_status_t gm_plan_build(const gm_plan_input_t *in, gm_plan_t *plan) {
    memset(plan, 0, sizeof *plan);
    gm_status_t st = validate(in);
    if (st != GM_OK)
        return st;
    work_t w = {.in = in};
    uint64_t *shared_len = NULL, *escape_len = NULL;
    st = gm_dag_build(&w.dag, in->node_count, in->edge_count, in->edge_from, in->edge_to);
    if (st != GM_OK)
        goto out;
    if ((st = number(&w)) != GM_OK || (st = gm_plan_split_units(&w)) != GM_OK ||
        (st = conflicts(&w)) != GM_OK)
        goto out;
    st = gm_lower_bound(&w.dag, w.n, w.size, w.alloc_node, w.proper, w.before, &plan->lower_bound);
    if (st != GM_OK)
        goto out;
    st = GM_ERR_OUT_OF_MEMORY;
    plan->item_count = in->item_count;
    plan->items = calloc((size_t)in->item_count + 1, sizeof *plan->items);
    shared_len = calloc((size_t)in->item_count + 1, sizeof *shared_len);
    escape_len = calloc((size_t)in->item_count + 1, sizeof *escape_len);
    if (!plan->items || !shared_len || !escape_len)
        goto out;
    if ((st = gm_plan_place_items(&w, plan, shared_len, escape_len)) != GM_OK)
        goto out;
    if ((st = cut(in, plan, &plan->shared, shared_len)) != GM_OK)
        goto out;
    st = cut(in, plan, &plan->escape, escape_len);
out:
    work_free(&w);
    free(shared_len);
    free(escape_len);
    if (st != GM_OK)
        gm_plan_free(plan);
    return st;
}

void gm_plan_free(gm_plan_t *plan) {
    free(plan->items);
    free(plan->shared.handle_pages);
    free(plan->escape.handle_pages);
    memset(plan, 0, sizeof *plan);
}
