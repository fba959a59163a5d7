/* A child graph moved into a parent (gm_engine_graph_moved, the driver's add of a child-graph node
 * with ownership MOVE) when the host is out of memory: room is made before the driver's call, so a
 * failed reallocation refuses the move with GM_ERR_OUT_OF_MEMORY before the driver moves anything,
 * and nothing changes. It used to run after the driver's call, and on a failure there the child
 * kept its markers while the driver had moved its nodes into the parent: the parent's plan left
 * the child's allocations out. A driver refusal changes nothing either; a move that succeeds makes
 * the child's markers the parent's, and the parent's exec plans and runs the allocation. Realloc
 * fails on demand (-Wl,--wrap=realloc, tests/unit/CMakeLists.txt). */
#include <stdlib.h>

#include "check.h"
#include "engine_sim.h"

#define S1 0x51u

void *__real_realloc(void *p, size_t bytes);
void *__wrap_realloc(void *p, size_t bytes);

static bool fail_reallocs;

void *__wrap_realloc(void *p, size_t bytes) {
    return fail_reallocs ? NULL : __real_realloc(p, bytes);
}

static int driver_calls;
static bool driver_answer;

static bool driver_move(void *arg) {
    (void)arg;
    driver_calls++;
    return driver_answer;
}

static void test_moved_child_out_of_memory(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t child, parent;
    sim_graph_init(&s, &child);
    sim_graph_init(&s, &parent);
    uint32_t a = sim_alloc(&s, &child, 1 << 20, NULL, 0);
    REQUIRE(a != UINT32_MAX);
    gm_status_t st;
    uint32_t f = sim_free(&s, &child, child.va[a], &a, 1, &st);
    REQUIRE(f != UINT32_MAX);
    gm_driver_call_t call = {driver_move, NULL};

    fail_reallocs = true;
    driver_answer = true;
    CHECK_EQ_INT(gm_engine_graph_moved(s.engine, child.key, parent.key, call),
                 GM_ERR_OUT_OF_MEMORY);
    fail_reallocs = false;
    CHECK_EQ_INT(driver_calls, 0); /* the driver moved nothing */
    CHECK(gm_engine_graph_has_markers(s.engine, child.key));
    CHECK(!gm_engine_graph_known(s.engine, parent.key)); /* made for the move, gone with it */

    driver_answer = false;
    CHECK_EQ_INT(gm_engine_graph_moved(s.engine, child.key, parent.key, call), GM_ERR_DRIVER);
    CHECK_EQ_INT(driver_calls, 1);
    CHECK(gm_engine_graph_has_markers(s.engine, child.key));
    CHECK(!gm_engine_graph_known(s.engine, parent.key));

    driver_answer = true;
    CHECK_EQ_INT(gm_engine_graph_moved(s.engine, child.key, parent.key, call), GM_OK);
    CHECK_EQ_INT(driver_calls, 2);
    CHECK(gm_engine_graph_has_markers(s.engine, parent.key));
    /* The parent's topology holds the child's nodes; its exec maps and runs the allocation. */
    parent.nodes[0] = child.nodes[a];
    parent.kind[0] = SIM_ALLOC;
    parent.va[0] = child.va[a];
    parent.size[0] = 1 << 20;
    parent.nodes[1] = child.nodes[f];
    parent.kind[1] = SIM_FREE;
    parent.va[1] = child.va[a];
    parent.freed[0] = true;
    parent.node_count = 2;
    parent.edge_from[0] = 0;
    parent.edge_to[0] = 1;
    parent.edge_count = 1;
    REQUIRE(sim_instantiate(&s, &parent, 0xE1, GM_EXEC_AUTO_FREE) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &parent, NULL));
    uint64_t both[2] = {parent.key, child.key};
    REQUIRE(gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL) == GM_OK);
    REQUIRE(gm_engine_graphs_destroy(s.engine, both, 2, GM_NO_CALL) == GM_OK);
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_moved_child_out_of_memory);
    return gm_check_summary();
}
