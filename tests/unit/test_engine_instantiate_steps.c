/* Instantiation in two steps (engine.h, gm_engine_instantiate_plan / _commit / _abandon): the shim
 * plans while the driver instantiates, then commits under the handle the driver gave, or abandons
 * when the driver refused. Each step leaves the engine as one gm_engine_instantiate would. The
 * threaded worlds of test_engine_threads.c plan, yield and commit (or abandon) while other threads
 * launch, trim and capture. */
#include "check.h"
#include "engine_sim.h"

#define S1 0x51

/* Planned, then committed: the exec launches and its data is whole, as one instantiated at once. */
static void test_plan_then_commit(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 3 * sim_page(), false);
    gm_topology_t t = sim_topology(&g);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK && x);
    /* Nothing knows it yet: not served, the graph has no exec. */
    CHECK(!gm_engine_serves(s.engine, 0xE1));
    CHECK(!gm_engine_graph_instantiated(s.engine, g.key));
    REQUIRE(gm_engine_instantiate_commit(s.engine, x, 0xE1) == GM_OK);
    CHECK(gm_engine_serves(s.engine, 0xE1));
    CHECK(gm_engine_graph_instantiated(s.engine, g.key));
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK_EQ_U64(sim_report(&s).exec, 0xE1);
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* The driver refused: the abandoned plan leaves nothing (the backend is clean at the end), and the
 * graph instantiates again. */
static void test_abandon_leaves_nothing(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, sim_page(), true);
    gm_topology_t t = sim_topology(&g);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK);
    gm_engine_instantiate_abandon(s.engine, x);
    gm_engine_instantiate_abandon(s.engine, NULL); /* nothing planned: nothing to do */
    CHECK(!gm_engine_graph_instantiated(s.engine, g.key));
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_free_outside(&s, g.va[0], S1));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* Two plans of one graph (two threads instantiating it at once): the first commit wins, the
 * second is refused as the driver's second instantiation is (§A3.7) and leaves nothing. */
static void test_second_commit_refused(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, sim_page(), false);
    gm_topology_t t = sim_topology(&g);
    gm_planned_exec_t *a = NULL, *b = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &a) == GM_OK);
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &b) == GM_OK);
    REQUIRE(gm_engine_instantiate_commit(s.engine, a, 0xE1) == GM_OK);
    CHECK_EQ_INT(gm_engine_instantiate_commit(s.engine, b, 0xE2), GM_ERR_NOT_SUPPORTED);
    CHECK(!gm_engine_serves(s.engine, 0xE2));
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* The driver gave the handle of an exec graphmem still knows (its context went without a destroy
 * graphmem saw) for a new exec of the same graph: the commit forgets the old exec before it
 * checks for one exec per graph, so the new one is accepted. */
static void test_commit_forgets_the_exec_gone(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, sim_page(), false);
    REQUIRE(sim_instantiate(&s, &g, 0xE1, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    host_backend_complete_all(s.hb);
    gm_topology_t t = sim_topology(&g);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK);
    REQUIRE(gm_engine_instantiate_commit(s.engine, x, 0xE1) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE1, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, &g.key, 1));
}

/* The graph was destroyed between the plan and the commit (the caller's race): the commit is
 * refused and nothing is left. */
static void test_graph_gone_before_commit(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, sim_page(), false);
    gm_topology_t t = sim_topology(&g);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK);
    sim_graph_destroy(s.engine, g.key);
    CHECK_EQ_INT(gm_engine_instantiate_commit(s.engine, x, 0xE1), GM_ERR_NOT_SUPPORTED);
    CHECK(!gm_engine_serves(s.engine, 0xE1));
    CHECK(sim_fini(&s));
}

/* GRAPHMEM_LIFT_RESTRICTIONS. C is a clone of G (same windows, same family). While G is planned
 * on the shim's thread, another thread moves C into P (gm_engine_graph_moved: G's family is
 * renamed to P's, gm_family_merge). The exec committed for G must be in P's family as one
 * instantiated in one step is: its launches and P's exec's take turns on the shared windows, and
 * a pinned exec of the family refuses it. `two_step` false: the one-step control. */
static void family_merge_between(bool two_step, bool pinned_p) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t g, c, p;
    sim_one_alloc_graph(&s, &g, 4 * sim_page(), false);
    sim_clone_view(&s, &g, &c);
    REQUIRE(gm_engine_graph_clone(s.engine, g.key, c.key, sim_clone_map(true)) == GM_OK);
    sim_graph_init(&s, &p);
    uint64_t pkey = p.key;
    p = c; /* P holds C's nodes once C is moved into it */
    p.key = pkey;
    gm_topology_t t = sim_topology(&g);
    gm_planned_exec_t *x = NULL;
    gm_status_t commit = GM_OK;
    if (two_step)
        REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK);
    gm_engine_graph_moved(s.engine, c.key, p.key, GM_NO_CALL); /* another thread, meanwhile */
    if (pinned_p)
        REQUIRE(sim_instantiate(&s, &p, 0xD2, GM_EXEC_PINNED) == GM_OK);
    if (two_step)
        commit = gm_engine_instantiate_commit(s.engine, x, 0xE1);
    else
        commit = sim_instantiate(&s, &g, 0xE1, 0);
    if (pinned_p) {
        /* A pinned exec of its family is alive: refused, as gm_engine_instantiate refuses it. */
        CHECK_EQ_INT(commit, GM_ERR_NOT_SUPPORTED);
        if (commit == GM_OK)
            gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
        host_backend_complete_all(s.hb);
        gm_engine_exec_destroy(s.engine, 0xD2, GM_NO_CALL);
        gm_engine_device_idle(s.engine, 0, gm_engine_sync_mark(s.engine));
        sim_graph_destroy(s.engine, g.key);
        sim_graph_destroy(s.engine, p.key);
        CHECK(sim_fini(&s));
        return;
    }
    REQUIRE(commit == GM_OK);
    REQUIRE(sim_instantiate(&s, &p, 0xE2, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    /* P's exec maps the window G's exec has mapped: G's must give it up first. */
    CHECK_EQ_INT(sim_launch(&s, 0xE2, S1), GM_OK);
    CHECK(sim_run_data(&s, &p, NULL));
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1, 0xE2}, 2, (uint64_t[]){g.key, p.key}, 2));
}

static void test_family_merge_one_step(void) {
    family_merge_between(false, false);
}
static void test_family_merge_between_plan_and_commit(void) {
    family_merge_between(true, false);
}
static void test_pinned_family_one_step(void) {
    family_merge_between(false, true);
}
static void test_pinned_family_between_plan_and_commit(void) {
    family_merge_between(true, true);
}

/* A plan abandoned (the driver refused) or refused at its commit leaves the graph's run open: the
 * next allocation of the same size still goes right after the last (one window, one mapping), as
 * when no plan was made. `how`: 0 no plan, 1 abandoned, 2 refused at the commit (pinned with an
 * escaping allocation, GRAPHMEM_LIFT_RESTRICTIONS). */
static void run_after_plan(int how) {
    sim_t s;
    REQUIRE(how == 2 ? sim_init_lifted(&s) : sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, sim_page(), true); /* escaping: the run stays open */
    gm_topology_t t = sim_topology(&g);
    gm_planned_exec_t *x = NULL;
    if (how == 1) {
        REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, 0, &x) == GM_OK);
        gm_engine_instantiate_abandon(s.engine, x);
    } else if (how == 2) {
        REQUIRE(gm_engine_instantiate_plan(s.engine, g.key, &t, GM_EXEC_PINNED, &x) == GM_OK);
        CHECK_EQ_INT(gm_engine_instantiate_commit(s.engine, x, 0xE1), GM_ERR_INVALID_VALUE);
    }
    uint32_t b = sim_alloc(&s, &g, sim_page(), NULL, 0);
    REQUIRE(b != UINT32_MAX);
    CHECK_EQ_U64(g.va[b], g.va[0] + sim_page());
    REQUIRE(sim_instantiate(&s, &g, 0xE5, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xE5, S1) == GM_OK);
    CHECK_EQ_U64(sim_report(&s).mappings, 1);
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE5, GM_NO_CALL);
    CHECK(sim_forget_live(&s, g.va[0]));
    CHECK(sim_forget_live(&s, g.va[b]));
    sim_graph_destroy(s.engine, g.key);
    CHECK(sim_fini(&s));
}

static void test_run_open_without_plan(void) {
    run_after_plan(0);
}
static void test_run_open_after_abandon(void) {
    run_after_plan(1);
}
static void test_run_open_after_refused_commit(void) {
    run_after_plan(2);
}

/* `body`'s nodes appended to `parent`'s, as the shim reads a conditional body into its parent's
 * topology (GRAPHMEM_LIFT_RESTRICTIONS). */
static void read_body_into(sim_graph_t *parent, const sim_graph_t *body) {
    uint32_t first = parent->node_count;
    for (uint32_t i = 0; i < body->node_count; i++) {
        parent->nodes[first + i] = body->nodes[i];
        parent->kind[first + i] = body->kind[i];
        parent->va[first + i] = body->va[i];
        parent->size[first + i] = body->size[i];
        parent->freed[first + i] = body->freed[i];
    }
    for (uint32_t e = 0; e < body->edge_count; e++) {
        parent->edge_from[parent->edge_count] = body->edge_from[e] + first;
        parent->edge_to[parent->edge_count++] = body->edge_to[e] + first;
    }
    parent->node_count += body->node_count;
}

/* GRAPHMEM_LIFT_RESTRICTIONS: `q`, a graph graphmem does not know, read with its conditional body
 * `b` (one allocation) in its topology. */
static void unknown_graph_with_body(sim_t *s, sim_graph_t *b, sim_graph_t *q) {
    sim_one_alloc_graph(s, b, sim_page(), false);
    sim_graph_init(s, q);
    read_body_into(q, b);
}

/* GRAPHMEM_LIFT_RESTRICTIONS. A plan of P with its body B read in joins B's window family to P's
 * only when committed: abandoned, it leaves B's family alone, so that a pinned exec of B is
 * accepted beside an exec of P alone, as when no plan was made. */
static void body_family_after_abandon(bool abandon) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t b, p, with_body;
    sim_one_alloc_graph(&s, &b, sim_page(), false);
    sim_one_alloc_graph(&s, &p, sim_page(), false);
    with_body = p;
    read_body_into(&with_body, &b);
    if (abandon) {
        gm_topology_t t = sim_topology(&with_body);
        gm_planned_exec_t *x = NULL;
        REQUIRE(gm_engine_instantiate_plan(s.engine, p.key, &t, 0, &x) == GM_OK);
        gm_engine_instantiate_abandon(s.engine, x);
    }
    REQUIRE(sim_instantiate(&s, &p, 0xE1, 0) == GM_OK); /* P without the body */
    gm_status_t pinned = sim_instantiate(&s, &b, 0xE2, GM_EXEC_PINNED);
    CHECK_EQ_INT(pinned, GM_OK);
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    if (pinned == GM_OK)
        gm_engine_exec_destroy(s.engine, 0xE2, GM_NO_CALL);
    gm_engine_device_idle(s.engine, 0, gm_engine_sync_mark(s.engine));
    sim_graph_destroy(s.engine, p.key);
    sim_graph_destroy(s.engine, b.key);
    CHECK(sim_fini(&s));
}

static void test_body_family_without_plan(void) {
    body_family_after_abandon(false);
}
static void test_body_family_after_abandon(void) {
    body_family_after_abandon(true);
}

/* GRAPHMEM_LIFT_RESTRICTIONS. A graph graphmem does not know (its body holds the markers) becomes
 * known at the commit only: an abandoned plan leaves it unknown, a committed one known. */
static void test_unknown_graph_known_at_commit(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t b, q;
    unknown_graph_with_body(&s, &b, &q);
    gm_topology_t t = sim_topology(&q);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, q.key, &t, 0, &x) == GM_OK);
    gm_engine_instantiate_abandon(s.engine, x);
    CHECK(!gm_engine_graph_known(s.engine, q.key));
    REQUIRE(gm_engine_instantiate_plan(s.engine, q.key, &t, 0, &x) == GM_OK);
    CHECK(!gm_engine_graph_known(s.engine, q.key));
    REQUIRE(gm_engine_instantiate_commit(s.engine, x, 0xE1) == GM_OK);
    CHECK(gm_engine_graph_known(s.engine, q.key));
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK(sim_run_data(&s, &b, NULL));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, (uint64_t[]){q.key, b.key}, 2));
}

/* GRAPHMEM_LIFT_RESTRICTIONS. A parent planned with more than eight bodies' families (ten here,
 * one body with two allocations) is checked against exactly those: a pinned exec of a body of
 * another parent does not refuse it (the check once read past the families it had counted). */
static void test_many_body_families(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    static sim_graph_t other[10], bodies[9], other_parent, parent;
    for (int i = 0; i < 10; i++)
        sim_one_alloc_graph(&s, &other[i], sim_page(), false);
    for (int i = 0; i < 9; i++)
        sim_one_alloc_graph(&s, &bodies[i], sim_page(), false);
    uint32_t a = sim_alloc(&s, &bodies[8], sim_page(), NULL, 0);
    uint32_t k = sim_plain(&s, &bodies[8], &a, 1);
    REQUIRE(sim_free(&s, &bodies[8], bodies[8].va[a], &k, 1, NULL) != UINT32_MAX);
    REQUIRE(sim_instantiate(&s, &other[9], 0xD1, GM_EXEC_PINNED) == GM_OK);
    sim_graph_init(&s, &other_parent);
    for (int i = 0; i < 10; i++)
        read_body_into(&other_parent, &other[i]);
    sim_graph_init(&s, &parent);
    for (int i = 0; i < 9; i++)
        read_body_into(&parent, &bodies[i]);
    gm_topology_t t = sim_topology(&parent);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, parent.key, &t, 0, &x) == GM_OK);
    /* Refused, rightly: the pinned exec is in one of its bodies' families. */
    CHECK_EQ_INT(sim_instantiate(&s, &other_parent, 0xE1, 0), GM_ERR_NOT_SUPPORTED);
    gm_status_t committed = gm_engine_instantiate_commit(s.engine, x, 0xE2);
    CHECK_EQ_INT(committed, GM_OK);
    host_backend_complete_all(s.hb);
    if (committed == GM_OK)
        gm_engine_exec_destroy(s.engine, 0xE2, GM_NO_CALL);
    gm_engine_exec_destroy(s.engine, 0xD1, GM_NO_CALL);
    gm_engine_device_idle(s.engine, 0, gm_engine_sync_mark(s.engine));
    sim_graph_destroy(s.engine, other_parent.key);
    sim_graph_destroy(s.engine, parent.key);
    for (int i = 0; i < 10; i++)
        sim_graph_destroy(s.engine, other[i].key);
    for (int i = 0; i < 9; i++)
        sim_graph_destroy(s.engine, bodies[i].key);
    CHECK(sim_fini(&s));
}

/* GRAPHMEM_LIFT_RESTRICTIONS. Two plans of one graph graphmem does not know (two threads
 * instantiating it at once): the second commit takes the graph the first listed, as it would a
 * known graph's (lifted, a graph may have several execs). */
static void test_two_plans_of_an_unknown_graph(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t b, q;
    unknown_graph_with_body(&s, &b, &q);
    gm_topology_t t = sim_topology(&q);
    gm_planned_exec_t *x = NULL, *y = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, q.key, &t, 0, &x) == GM_OK);
    REQUIRE(gm_engine_instantiate_plan(s.engine, q.key, &t, 0, &y) == GM_OK);
    REQUIRE(gm_engine_instantiate_commit(s.engine, x, 0xE1) == GM_OK);
    gm_status_t second = gm_engine_instantiate_commit(s.engine, y, 0xE2);
    CHECK_EQ_INT(second, GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK(sim_run_data(&s, &b, NULL));
    if (second == GM_OK) {
        CHECK_EQ_INT(sim_launch(&s, 0xE2, S1), GM_OK);
        CHECK(sim_run_data(&s, &b, NULL));
    }
    host_backend_complete_all(s.hb);
    gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    if (second == GM_OK)
        gm_engine_exec_destroy(s.engine, 0xE2, GM_NO_CALL);
    sim_graph_destroy(s.engine, q.key);
    sim_graph_destroy(s.engine, b.key);
    CHECK(sim_fini(&s));
}

/* GRAPHMEM_LIFT_RESTRICTIONS. A body's allocation marker destroyed between its parent's plan and
 * commit (the caller's race) while an exec of the body maps its window: the commit is refused, so
 * no exec maps that window outside the body's family (the two execs mapped it at once before). */
static void test_body_marker_gone_before_commit(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t b, p;
    sim_one_alloc_graph(&s, &b, 4 * sim_page(), false);
    sim_one_alloc_graph(&s, &p, sim_page(), false);
    read_body_into(&p, &b);
    REQUIRE(sim_instantiate(&s, &b, 0xD1, 0) == GM_OK);
    CHECK_EQ_INT(sim_launch(&s, 0xD1, S1), GM_OK);
    gm_topology_t t = sim_topology(&p);
    gm_planned_exec_t *x = NULL;
    REQUIRE(gm_engine_instantiate_plan(s.engine, p.key, &t, 0, &x) == GM_OK);
    for (uint32_t i = 0; i < b.node_count; i++)
        if (b.kind[i] == SIM_ALLOC)
            CHECK_EQ_INT(gm_engine_marker_destroy(s.engine, b.nodes[i], GM_NO_CALL), GM_OK);
    gm_status_t committed = gm_engine_instantiate_commit(s.engine, x, 0xE1);
    CHECK_EQ_INT(committed, GM_ERR_NOT_SUPPORTED);
    uint64_t misuses = host_backend_counts(s.hb).misuses;
    if (committed == GM_OK)
        (void)sim_launch(&s, 0xE1, S1);
    CHECK_EQ_INT(sim_launch(&s, 0xD1, S1), GM_OK);
    CHECK_EQ_U64(host_backend_counts(s.hb).misuses - misuses, 0);
    host_backend_complete_all(s.hb);
    if (committed == GM_OK)
        gm_engine_exec_destroy(s.engine, 0xE1, GM_NO_CALL);
    gm_engine_exec_destroy(s.engine, 0xD1, GM_NO_CALL);
    sim_graph_destroy(s.engine, p.key);
    sim_graph_destroy(s.engine, b.key);
    CHECK(sim_fini(&s));
}

static bool driver_answers(void *arg) {
    return *(const bool *)arg;
}

/* GRAPHMEM_LIFT_RESTRICTIONS. An exec updated from a graph graphmem did not know (its body holds
 * the markers): an update the driver refuses leaves that graph unknown, one it takes lists it. */
static void test_update_from_unknown_graph(void) {
    sim_t s;
    REQUIRE(sim_init_lifted(&s));
    sim_graph_t b, q, b2, q2;
    unknown_graph_with_body(&s, &b, &q);
    unknown_graph_with_body(&s, &b2, &q2);
    REQUIRE(sim_instantiate(&s, &q, 0xE1, 0) == GM_OK);
    gm_topology_t t = sim_topology(&q2);
    uint64_t node = 0;
    bool taken = false;
    gm_driver_call_t call = {driver_answers, &taken};
    CHECK_EQ_INT(gm_engine_exec_update(s.engine, 0xE1, q2.key, &t, call, &node), GM_ERR_DRIVER);
    CHECK(!gm_engine_graph_known(s.engine, q2.key));
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK); /* still q's exec */
    CHECK(sim_run_data(&s, &b, NULL));
    taken = true;
    CHECK_EQ_INT(gm_engine_exec_update(s.engine, 0xE1, q2.key, &t, call, &node), GM_OK);
    CHECK(gm_engine_graph_known(s.engine, q2.key));
    CHECK_EQ_INT(sim_launch(&s, 0xE1, S1), GM_OK);
    CHECK(sim_run_data(&s, &b2, NULL));
    CHECK(sim_teardown(&s, (uint64_t[]){0xE1}, 1, (uint64_t[]){q.key, b.key, q2.key, b2.key}, 4));
}

int main(void) {
    RUN_TEST(test_plan_then_commit);
    RUN_TEST(test_abandon_leaves_nothing);
    RUN_TEST(test_second_commit_refused);
    RUN_TEST(test_commit_forgets_the_exec_gone);
    RUN_TEST(test_graph_gone_before_commit);
    RUN_TEST(test_family_merge_one_step);
    RUN_TEST(test_family_merge_between_plan_and_commit);
    RUN_TEST(test_pinned_family_one_step);
    RUN_TEST(test_pinned_family_between_plan_and_commit);
    RUN_TEST(test_run_open_without_plan);
    RUN_TEST(test_run_open_after_abandon);
    RUN_TEST(test_run_open_after_refused_commit);
    RUN_TEST(test_body_family_without_plan);
    RUN_TEST(test_body_family_after_abandon);
    RUN_TEST(test_unknown_graph_known_at_commit);
    RUN_TEST(test_many_body_families);
    RUN_TEST(test_two_plans_of_an_unknown_graph);
    RUN_TEST(test_body_marker_gone_before_commit);
    RUN_TEST(test_update_from_unknown_graph);
    return gm_check_summary();
}
