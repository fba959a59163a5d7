/* The registry of nested graphs (shim/bridge/nested.c) linked alone with the real engine over the
 * host backend: what a destroyed graph or node takes with it, here and in the engine, and what it
 * leaves. Graph and node handles are plain numbers: the registry never calls the driver itself. */
#include "check.h"
#include "engine_sim.h"
#include "nested.h"

#define KiB (1ull << 10)

static CUgraph graph_of(uint64_t key) {
    return (CUgraph)(uintptr_t)key;
}

static CUgraphNode node_of(uint64_t key) {
    return (CUgraphNode)(uintptr_t)key;
}

/* The driver's destroy as the shim hands it over: counted, succeeding unless told to fail. */
typedef struct driver_call {
    unsigned calls;
    bool fail;
} driver_call_t;

static bool driver_destroy(void *arg) {
    driver_call_t *d = arg;
    d->calls++;
    return !d->fail;
}

static gm_driver_call_t call_of(driver_call_t *d) {
    return (gm_driver_call_t){driver_destroy, d};
}

/* A graph the engine knows, with one allocation freed in it (so it holds markers). */
static uint64_t graph_with_markers(sim_t *s, sim_graph_t *g) {
    sim_one_alloc_graph(s, g, 64 * KiB, false);
    CHECK(gm_engine_graph_has_markers(s->engine, g->key));
    return g->key;
}

/* A TOUCH note names no graph. Destroying one touching graph (or a node whose child touches)
 * must leave every other graph's note: a lost note means no scratch cover at instantiation,
 * where the driver succeeds (§A1.16). */
static void test_touch_notes_survive_other_destroys(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    const uint64_t other = 0x1000, parent = 0x2000, child = 0x3000, node = 0x4000;
    gm_touch_note(graph_of(other));
    gm_touch_note(graph_of(parent));
    gm_nested_record(graph_of(parent), node_of(node), &(CUgraph){graph_of(child)}, 1,
                     GM_NESTED_CHILD);
    gm_touch_note(graph_of(child));
    CHECK(gm_touches(graph_of(other)) && gm_touches(graph_of(child)));

    driver_call_t d = {0, false};
    CHECK_EQ_INT(gm_node_destroy_nested(s.engine, node_of(node), call_of(&d)), GM_OK);
    CHECK_EQ_INT(d.calls, 1);
    CHECK(!gm_nested_is_child(graph_of(child)));
    CHECK(gm_touches(graph_of(other)));
    CHECK(gm_touches(graph_of(parent))); /* its own note: the node was not its only toucher */

    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(parent), call_of(&d)), GM_OK);
    CHECK_EQ_INT(d.calls, 2);
    CHECK(!gm_touches(graph_of(parent)));
    CHECK(gm_touches(graph_of(other)));

    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(other), call_of(&d)), GM_OK);
    CHECK(!gm_touches(graph_of(other)));
    CHECK(sim_fini(&s));
}

/* A graph's children, their conditional bodies and the children of those die with it, in the
 * registry and in the engine (their markers are gone); an unrelated graph's child stays. */
static void test_descendants_die_with_their_graph(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t body_graph, other_graph;
    const uint64_t top = 0x10000, child = 0x11000, deeper = 0x12000;
    const uint64_t body = graph_with_markers(&s, &body_graph);
    const uint64_t other = 0x20000, other_child = graph_with_markers(&s, &other_graph);
    gm_nested_record(graph_of(top), node_of(0x1), &(CUgraph){graph_of(child)}, 1, GM_NESTED_CHILD);
    gm_nested_record(graph_of(child), node_of(0x2), &(CUgraph){graph_of(body)}, 1, GM_NESTED_BODY);
    gm_nested_record(graph_of(body), node_of(0x3), &(CUgraph){graph_of(deeper)}, 1,
                     GM_NESTED_CHILD);
    gm_nested_record(graph_of(other), node_of(0x4), &(CUgraph){graph_of(other_child)}, 1,
                     GM_NESTED_CHILD);
    CHECK(gm_conditional_bodies_have_markers(s.engine, graph_of(top)));

    /* A failed destroy forgets nothing. */
    driver_call_t d = {0, true};
    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(top), call_of(&d)), GM_ERR_DRIVER);
    CHECK(gm_nested_is_child(graph_of(deeper)));
    CHECK(gm_engine_graph_has_markers(s.engine, body));

    d.fail = false;
    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(top), call_of(&d)), GM_OK);
    CHECK_EQ_INT(d.calls, 2);
    CHECK(!gm_nested_is_child(graph_of(child)));
    CHECK(!gm_nested_is_child(graph_of(deeper)));
    CHECK_EQ_U64(gm_nested_bodies(graph_of(child), NULL, 0), 0);
    CHECK(!gm_engine_graph_has_markers(s.engine, body));
    CHECK(gm_nested_is_child(graph_of(other_child)));
    CHECK(gm_engine_graph_has_markers(s.engine, other_child));

    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(other), call_of(&d)), GM_OK);
    CHECK(!gm_nested_is_child(graph_of(other_child)));
    CHECK(!gm_engine_graph_has_markers(s.engine, other_child));
    CHECK(sim_fini(&s));
}

/* A conditional node's bodies go with the node; a node that owns nothing is the driver's call
 * alone, and another node's bodies stay. */
static void test_node_takes_its_bodies(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t a, b;
    const uint64_t parent = 0x30000, cond = 0x31, kept = 0x32, plain = 0x33;
    const uint64_t body = graph_with_markers(&s, &a), kept_body = graph_with_markers(&s, &b);
    gm_nested_record(graph_of(parent), node_of(cond), &(CUgraph){graph_of(body)}, 1,
                     GM_NESTED_BODY);
    gm_nested_record(graph_of(parent), node_of(kept), &(CUgraph){graph_of(kept_body)}, 1,
                     GM_NESTED_BODY);
    driver_call_t d = {0, false};
    CHECK_EQ_INT(gm_node_destroy_nested(s.engine, node_of(plain), call_of(&d)), GM_OK);
    CHECK_EQ_INT(d.calls, 1);
    CHECK_EQ_U64(gm_nested_bodies(graph_of(parent), NULL, 0), 2);

    CHECK_EQ_INT(gm_node_destroy_nested(s.engine, node_of(cond), call_of(&d)), GM_OK);
    CHECK_EQ_INT(d.calls, 2);
    CHECK_EQ_U64(gm_node_bodies(node_of(cond), NULL, 0), 0);
    CHECK_EQ_U64(gm_node_bodies(node_of(kept), NULL, 0), 1);
    CHECK(!gm_engine_graph_has_markers(s.engine, body));
    CHECK(gm_engine_graph_has_markers(s.engine, kept_body));

    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(parent), call_of(&d)), GM_OK);
    CHECK(!gm_engine_graph_has_markers(s.engine, kept_body));
    CHECK(sim_fini(&s));
}

/* More nested graphs than the destroy lists on its stack, in a chain and side by side. */
static void test_many_descendants(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    enum { WIDE = 40, DEEP = 40 };
    const uint64_t root = 0x50000;
    for (uint64_t i = 0; i < WIDE; i++)
        gm_nested_record(graph_of(root), node_of(0x500 + i), &(CUgraph){graph_of(root + 1 + i)}, 1,
                         GM_NESTED_CHILD);
    uint64_t up = root + 1;
    for (uint64_t i = 0; i < DEEP; i++, up += 0x100)
        gm_nested_record(graph_of(up), node_of(0x900 + i), &(CUgraph){graph_of(up + 0x100)}, 1,
                         GM_NESTED_CHILD);
    CHECK(gm_nested_is_child(graph_of(up)));
    driver_call_t d = {0, false};
    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(root), call_of(&d)), GM_OK);
    for (uint64_t i = 0; i < WIDE; i++)
        CHECK(!gm_nested_is_child(graph_of(root + 1 + i)));
    CHECK(!gm_nested_is_child(graph_of(up)));
    CHECK(sim_fini(&s));
}

/* A graph's own note outlives a child's: destroying the child node leaves the parent's memset
 * noted, whichever was noted first. */
static void test_own_note_after_touching_child(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    const uint64_t parent = 0x7000, child = 0x7100, node = 0x7200;
    gm_nested_record(graph_of(parent), node_of(node), &(CUgraph){graph_of(child)}, 1,
                     GM_NESTED_CHILD);
    gm_touch_note(graph_of(child));  /* the child's copy touches */
    gm_touch_note(graph_of(parent)); /* then a memset of the parent itself */
    driver_call_t d = {0, false};
    CHECK_EQ_INT(gm_node_destroy_nested(s.engine, node_of(node), call_of(&d)), GM_OK);
    CHECK(gm_touches(graph_of(parent)));
    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(parent), call_of(&d)), GM_OK);
    CHECK(!gm_touches(graph_of(parent)));
    CHECK(sim_fini(&s));
}

/* A NULL graph owns nothing: its destroy takes no note with it. */
static void test_null_root_keeps_notes(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    gm_touch_note(graph_of(0x8000));
    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, NULL, GM_NO_CALL), GM_OK);
    CHECK(gm_touches(graph_of(0x8000)));
    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(0x8000), GM_NO_CALL), GM_OK);
    CHECK(sim_fini(&s));
}

/* A child node's graph replaced through the node (cuGraphNodeSetParams, node_hooks.c): the node
 * tells its parent; the old graph goes with what it held, and the copy, recorded anew under the
 * same parent, is a child graph whose note the parent sees. */
static void test_child_replaced_through_node(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    const uint64_t parent = 0xa000, node = 0xa100, old = 0xa200, grandchild = 0xa300, copy = 0xa400,
                   body_node = 0xa500, body = 0xa600;
    gm_nested_record(graph_of(parent), node_of(node), &(CUgraph){graph_of(old)}, 1,
                     GM_NESTED_CHILD);
    gm_nested_record(graph_of(old), node_of(0xa250), &(CUgraph){graph_of(grandchild)}, 1,
                     GM_NESTED_CHILD);
    gm_nested_record(graph_of(parent), node_of(body_node), &(CUgraph){graph_of(body)}, 1,
                     GM_NESTED_BODY);
    CHECK(gm_nested_child_parent(node_of(node)) == graph_of(parent));
    CHECK(gm_nested_child_parent(node_of(body_node)) == NULL); /* a body, not a child */
    CHECK(gm_nested_child_parent(node_of(0xa999)) == NULL);
    CHECK(gm_nested_child_parent(NULL) == NULL);

    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(old), GM_NO_CALL), GM_OK);
    CHECK(gm_nested_child_parent(node_of(node)) == NULL);
    CHECK(!gm_nested_is_child(graph_of(grandchild)));
    CHECK(!gm_touches(graph_of(parent)));
    gm_nested_record(graph_of(parent), node_of(node), &(CUgraph){graph_of(copy)}, 1,
                     GM_NESTED_CHILD);
    gm_touch_note(graph_of(copy));
    CHECK(gm_nested_child_parent(node_of(node)) == graph_of(parent));
    CHECK(gm_nested_is_child(graph_of(copy)));
    CHECK(gm_touches(graph_of(parent)));
    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(parent), GM_NO_CALL), GM_OK);
    CHECK(!gm_nested_is_child(graph_of(copy)) && gm_nested_child_parent(node_of(node)) == NULL);
    CHECK(sim_fini(&s));
}

/* The count of body entries that lets lookups return at once (gm_nested_any_bodies) follows the
 * entries: a node handle given out again replaces its bodies (one down, one up), and a destroy
 * takes them; a count left above 0 costs only time, one at 0 with a body recorded would hide it.
 * Run first: no other test has recorded a body yet. */
static void test_body_count_follows_entries(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    REQUIRE(!gm_nested_any_bodies());
    const uint64_t graph = 0xb000, node = 0xb100, body = 0xb200, again = 0xb300, child = 0xb400;
    gm_nested_record(graph_of(graph), node_of(0xb050), &(CUgraph){graph_of(child)}, 1,
                     GM_NESTED_CHILD);
    CHECK(!gm_nested_any_bodies()); /* a child is no body */
    gm_nested_record(graph_of(graph), node_of(node), &(CUgraph){graph_of(body)}, 1, GM_NESTED_BODY);
    CHECK(gm_nested_any_bodies());
    CUgraph out[2] = {NULL, NULL};
    CHECK_EQ_INT(gm_nested_bodies(graph_of(graph), out, 2), 1);
    /* The node's handle given out again: its old body goes, the new one counts. */
    gm_nested_record(graph_of(graph), node_of(node), &(CUgraph){graph_of(again)}, 1,
                     GM_NESTED_BODY);
    CHECK_EQ_INT(gm_nested_bodies(graph_of(graph), out, 2), 1);
    CHECK(out[0] == graph_of(again));
    CHECK_EQ_INT(gm_node_bodies(node_of(node), out, 2), 1);
    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(graph), GM_NO_CALL), GM_OK);
    CHECK(!gm_nested_any_bodies());
    CHECK_EQ_INT(gm_nested_bodies(graph_of(graph), out, 2), 0);
    CHECK(sim_fini(&s));
}

/* A memset or copy set onto graph memory through its node alone names no graph: from then on every
 * graph may hold it, destroyed graphs' notes or not. Last: the mark is never cleared. */
static void test_unknown_touch_covers_every_graph(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    CHECK(!gm_touches(graph_of(0x9000)) && !gm_touches(graph_of(0x9100)));
    gm_touch_note_unknown();
    CHECK(gm_touches(graph_of(0x9000)) && gm_touches(graph_of(0x9100)));
    CHECK_EQ_INT(gm_graph_destroy_nested(s.engine, graph_of(0x9000), GM_NO_CALL), GM_OK);
    CHECK(gm_touches(graph_of(0x9000)) && gm_touches(graph_of(0x9100)));
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_body_count_follows_entries);
    RUN_TEST(test_touch_notes_survive_other_destroys);
    RUN_TEST(test_descendants_die_with_their_graph);
    RUN_TEST(test_node_takes_its_bodies);
    RUN_TEST(test_many_descendants);
    RUN_TEST(test_own_note_after_touching_child);
    RUN_TEST(test_null_root_keeps_notes);
    RUN_TEST(test_child_replaced_through_node);
    RUN_TEST(test_unknown_touch_covers_every_graph);
    return gm_check_summary();
}
