/* The registry of nested graphs (shim/bridge/nested.c) when an entry cannot be recorded for want
 * of host memory: realloc is wrapped (-Wl,--wrap=realloc, tests/shim/CMakeLists.txt) so that it
 * fails while `fail_reallocs` is set. A child graph or a touching graph missing from the registry
 * would lose its markers or its cover at instantiation (the read-back asks node types only for
 * graphs the registry names or notes, shim/bridge/topology.c), so from then on every graph counts
 * as named and touching. A process of its own: the mark is never cleared. */
#include <stdlib.h>

#include "check.h"
#include "nested.h"

void *__real_realloc(void *p, size_t bytes);
void *__wrap_realloc(void *p, size_t bytes);

static bool fail_reallocs;

void *__wrap_realloc(void *p, size_t bytes) {
    return fail_reallocs ? NULL : __real_realloc(p, bytes);
}

static CUgraph graph_of(uint64_t key) {
    return (CUgraph)(uintptr_t)key;
}

static CUgraphNode node_of(uint64_t key) {
    return (CUgraphNode)(uintptr_t)key;
}

static void test_full_registry_names_and_touches_every_graph(void) {
    CUgraph child = graph_of(0x200);
    gm_nested_record(graph_of(0x100), node_of(0x101), &child, 1, GM_NESTED_CHILD);
    CHECK(gm_nested_names(graph_of(0x100)) && gm_nested_is_child(child));
    CHECK(!gm_nested_names(graph_of(0x900)) && !gm_touches(graph_of(0x900)));
    /* Entries until one needs more room than the registry has. */
    fail_reallocs = true;
    for (uint64_t i = 0; i < 4096; i++) {
        CUgraph g = graph_of(0x10000 + i);
        gm_nested_record(graph_of(0x1000), node_of(0x20000 + i), &g, 1, GM_NESTED_CHILD);
    }
    fail_reallocs = false;
    CHECK(gm_nested_names(graph_of(0x900)) && gm_touches(graph_of(0x900)));
    /* What was recorded stays as it was. */
    CHECK(gm_nested_is_child(child) && !gm_nested_is_child(graph_of(0x900)));
}

int main(void) {
    RUN_TEST(test_full_registry_names_and_touches_every_graph);
    return gm_check_summary();
}
