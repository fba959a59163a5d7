/* Graphs as the driver's destroy leaves them, for tests that check nothing reads a graph after its
 * destroy (gm_engine_marked_graphs_any beside destroys): a graph is a heap word, LIVE until the
 * fake destroy wipes and frees it, so a late read sees a wrong word (a use after free under
 * AddressSanitizer). */
#ifndef GRAPHMEM_TEST_FAKE_GRAPHS_H
#define GRAPHMEM_TEST_FAKE_GRAPHS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define FAKE_GRAPH_LIVE 0x11FE11FE11FE11FEull

typedef struct fake_graph {
    uint64_t word; /* FAKE_GRAPH_LIVE until fake_graph_wipe */
} fake_graph_t;

/* A live graph; NULL without host memory. */
fake_graph_t *fake_graph_new(void);
/* The driver's destroy: the word wiped, the graph freed. */
void fake_graph_wipe(fake_graph_t *g);
static inline uint64_t fake_graph_key(const fake_graph_t *g) {
    return (uint64_t)(uintptr_t)g;
}

/* The reads of gm_engine_marked_graphs_any's questions: fake_graph_read as its match (`arg` a
 * fake_graph_reads_t), which never matches, so every marked graph is read. */
typedef struct fake_graph_reads {
    atomic_long wrong_words, questions;
} fake_graph_reads_t;
bool fake_graph_read(void *reads, uint64_t graph);

/* A gm_node_call_t fn handing out node handles from the counter at `arg` (an atomic_ullong). */
bool fake_node_add(void *arg, uint64_t *node_out);

#endif
