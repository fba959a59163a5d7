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
#include "fake_graphs.h"
#include "nested.h"

#define READERS 2
#define ROUNDS 400
#define CHILDREN 40

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

typedef struct family {
    fake_graph_t *parent, *children[CHILDREN];
} family_t;

static gm_engine_t *E;
static atomic_int destroying = 1, readers_asking;
static fake_graph_reads_t reads;

/* The driver's cuGraphDestroy of the parent: its nested graphs go with it. */
static bool driver_destroy_family(void *arg) {
    family_t *f = arg;
    for (int i = 0; i < CHILDREN; i++)
        fake_graph_wipe(f->children[i]);
    fake_graph_wipe(f->parent);
    return true;
}

static fake_graph_t *fake_graph(void) {
    fake_graph_t *g = fake_graph_new();
    if (g == NULL)
        abort();
    return g;
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
        REQUIRE(gm_engine_alloc_marker(E, fake_graph_key(f->children[i]), &params, NULL, add, &va,
                                       &node) == GM_OK);
        REQUIRE(gm_engine_free_marker(E, fake_graph_key(f->children[i]), va, NULL, add, &node) ==
                GM_OK);
    }
    uint64_t node = 0;
    fake_node_add(add.arg, &node);
    gm_nested_record((CUgraph)(uintptr_t)f->parent, (CUgraphNode)(uintptr_t)node, nested, CHILDREN,
                     GM_NESTED_CHILD);
}

static void *destroyer(void *arg) {
    (void)arg;
    static atomic_ullong next_node = 0x1000000;
    gm_node_call_t add = {.fn = fake_node_add, .arg = &next_node};
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

static void *reader(void *arg) {
    (void)arg;
    atomic_fetch_add(&readers_asking, 1);
    while (atomic_load(&destroying))
        (void)gm_engine_marked_graphs_any(E, fake_graph_read, &reads);
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
    CHECK_EQ_INT(atomic_load(&reads.wrong_words), 0);
    CHECK(atomic_load(&reads.questions) > 0);
    CHECK(!gm_engine_marked_graphs_any(E, fake_graph_read, &reads)); /* every child ended */
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_nested_graphs_end_with_the_driver_call);
    return gm_check_summary();
}
