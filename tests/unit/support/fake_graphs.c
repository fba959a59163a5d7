#include "fake_graphs.h"

#include <stdlib.h>

fake_graph_t *fake_graph_new(void) {
    fake_graph_t *g = malloc(sizeof *g);
    if (g != NULL)
        g->word = FAKE_GRAPH_LIVE;
    return g;
}

void fake_graph_wipe(fake_graph_t *g) {
    g->word = 0;
    free(g);
}

bool fake_graph_read(void *reads, uint64_t graph) {
    fake_graph_reads_t *r = reads;
    const fake_graph_t *g = (const fake_graph_t *)(uintptr_t)graph;
    if (g->word != FAKE_GRAPH_LIVE)
        atomic_fetch_add(&r->wrong_words, 1);
    atomic_fetch_add(&r->questions, 1);
    return false;
}

bool fake_node_add(void *arg, uint64_t *node_out) {
    *node_out = atomic_fetch_add((atomic_ullong *)arg, 1);
    return true;
}
