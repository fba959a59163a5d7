/* A parent destroyed with many nested graphs (shim/bridge/nested.c, gm_graph_destroy_nested) while
 * other threads ask the engine about every graph holding markers (gm_engine_marked_graphs_any,
 * what the shim's cuGraphDestroyNode does, reading each graph through the driver). The driver's
 * destroy takes the parent and all its nested graphs at once, so the engine must forget them all
 * in the critical section of that call: a graph it still lists after the driver destroyed it is
 * read after its end (a wrong word here, a use after free under AddressSanitizer).
 *
 * The destroying thread has no host memory during the destroy (its malloc fails, --wrap=malloc),
 * and the engine's destroy of a list is slowed (--wrap=gm_engine_graphs_destroy yields first):
 * the shape this replaced listed the dying graphs in host memory and, without it, forgot them in
 * batches of 16 with the engine's lock let go between them; it read destroyed graphs in three runs
 * of three. Also run under ThreadSanitizer. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"
#include "engine_sim.h"
#include "nested.h"

#define READERS 2
#define ROUNDS 400
#define CHILDREN 40
#define LIVE 0x11FE11FE11FE11FEull

void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
gm_status_t __real_gm_engine_graphs_destroy(gm_engine_t *engine, const uint64_t *graphs,
                                            size_t count, gm_driver_call_t call);
gm_status_t __wrap_gm_engine_graphs_destroy(gm_engine_t *engine, const uint64_t *graphs,
                                            size_t count, gm_driver_call_t call);

static _Thread_local bool out_of_host_memory;

void *__wrap_malloc(size_t size) {
    return out_of_host_memory ? NULL : __real_malloc(size);
}

gm_status_t __wrap_gm_engine_graphs_destroy(gm_engine_t *engine, const uint64_t *graphs,
                                            size_t count, gm_driver_call_t call) {
    sched_yield();
    return __real_gm_engine_graphs_destroy(engine, graphs, count, call);
}

typedef struct fake_graph {
    uint64_t word; /* LIVE until the driver's destroy wipes it, then freed */
} fake_graph_t;

typedef struct family {
    fake_graph_t *parent, *children[CHILDREN];
} family_t;

static gm_engine_t *E;
static atomic_int destroying = 1, readers_asking;
static atomic_long wrong_words, questions;

static bool add_node(void *arg, uint64_t *node_out) {
    *node_out = atomic_fetch_add((atomic_ullong *)arg, 1);
    return true;
}

static void wipe(fake_graph_t *g) {
    g->word = 0;
    free(g);
}

/* The driver's cuGraphDestroy of the parent: its nested graphs go with it. */
static bool driver_destroy_family(void *arg) {
    family_t *f = arg;
    for (int i = 0; i < CHILDREN; i++)
        wipe(f->children[i]);
    wipe(f->parent);
    return true;
}

static fake_graph_t *fake_graph(void) {
    fake_graph_t *g = malloc(sizeof *g);
    if (g == NULL)
        abort();
    g->word = LIVE;
    return g;
}

static uint64_t key_of(const fake_graph_t *g) {
    return (uint64_t)(uintptr_t)g;
}

/* A parent owning CHILDREN graphs, each holding an allocation and its free. */
static void make_family(family_t *f, gm_node_call_t add) {
    f->parent = fake_graph();
    CUgraph nested[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        f->children[i] = fake_graph();
        nested[i] = (CUgraph)(uintptr_t)f->children[i];
        gm_alloc_params_t params = {.device = 0, .size = 4096};
        uint64_t va = 0, node = 0;
        REQUIRE(gm_engine_alloc_marker(E, key_of(f->children[i]), &params, NULL, add, &va, &node) ==
                GM_OK);
        REQUIRE(gm_engine_free_marker(E, key_of(f->children[i]), va, NULL, add, &node) == GM_OK);
    }
    uint64_t node = 0;
    add_node(add.arg, &node);
    gm_nested_record((CUgraph)(uintptr_t)f->parent, (CUgraphNode)(uintptr_t)node, nested, CHILDREN,
                     GM_NESTED_CHILD);
}

static void *destroyer(void *arg) {
    (void)arg;
    static atomic_ullong next_node = 0x1000000;
    gm_node_call_t add = {.fn = add_node, .arg = &next_node};
    while (atomic_load(&readers_asking) < READERS)
        sched_yield();
    for (int round = 0; round < ROUNDS; round++) {
        family_t f;
        make_family(&f, add);
        out_of_host_memory = true;
        gm_status_t st = gm_graph_destroy_nested(E, (CUgraph)(uintptr_t)f.parent,
                                                 (gm_driver_call_t){driver_destroy_family, &f});
        out_of_host_memory = false;
        CHECK_EQ_INT(st, GM_OK);
        for (int i = 0; i < CHILDREN; i++)
            CHECK(!gm_nested_is_child((CUgraph)(uintptr_t)f.children[i]));
    }
    atomic_store(&destroying, 0);
    return NULL;
}

/* Never matches: every marked graph is asked. */
static bool read_graph(void *arg, uint64_t graph) {
    (void)arg;
    const fake_graph_t *g = (const fake_graph_t *)(uintptr_t)graph;
    if (g->word != LIVE)
        atomic_fetch_add(&wrong_words, 1);
    atomic_fetch_add(&questions, 1);
    return false;
}

static void *reader(void *arg) {
    (void)arg;
    atomic_fetch_add(&readers_asking, 1);
    while (atomic_load(&destroying))
        (void)gm_engine_marked_graphs_any(E, read_graph, NULL);
    return NULL;
}

static void test_nested_graphs_end_with_the_driver_call(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    E = s.engine;
    pthread_t d, r[READERS];
    for (int i = 0; i < READERS; i++)
        REQUIRE(pthread_create(&r[i], NULL, reader, NULL) == 0);
    REQUIRE(pthread_create(&d, NULL, destroyer, NULL) == 0);
    pthread_join(d, NULL);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    CHECK_EQ_INT(atomic_load(&wrong_words), 0);
    CHECK(atomic_load(&questions) > 0);
    CHECK(!gm_engine_marked_graphs_any(E, read_graph, NULL)); /* every child ended */
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_nested_graphs_end_with_the_driver_call);
    return gm_check_summary();
}
