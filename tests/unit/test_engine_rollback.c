/* A launch or upload that fails leaves everything as it was (core/README.md, "Launch protocol"):
 * its stream is not taken for the exec's, pending frees are not consumed, what it mapped is
 * unmapped. Failures of the driver's own call and of graphmem's mapping under the cap. */
#include "check.h"
#include "engine_sim.h"

#define MiB (1ull << 20)
#define S1 0x51
#define S2 0x52
#define S3 0x53
#define S4 0x54

/* X and Y share memory (launched one after the other on S1); Y is still running on S1 when X's
 * launch on S3 fails. X's next launch, on S4, must wait for Y: a failed launch that recorded X as
 * the group's latest user on S3 would let it skip the wait and overwrite Y's bytes. */
static void failed_launch_keeps_order(bool by_driver) {
    gm_engine_config_t c = sim_default_config();
    sim_t s;
    REQUIRE(sim_init(&s, &c));
    sim_graph_t x, y;
    sim_one_alloc_graph(&s, &x, 2 * MiB, false);
    sim_one_alloc_graph(&s, &y, 1 * MiB, false);
    REQUIRE(sim_instantiate(&s, &x, 0xA, 0) == GM_OK);
    REQUIRE(sim_instantiate(&s, &y, 0xB, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xB, S1) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    host_backend_complete_all(s.hb);
    REQUIRE(gm_engine_trim(s.engine, 0) == GM_OK); /* X must map again: the cap can bite */
    REQUIRE(sim_launch(&s, 0xB, S1) == GM_OK);     /* running from here on */
    uint64_t used = sim_attr(&s, GM_ATTR_USED_CURRENT);
    uint64_t reserved = sim_attr(&s, GM_ATTR_RESERVED_CURRENT);
    uint64_t waits = host_backend_stream_waits(s.hb);
    if (by_driver) {
        s.fail_submits = 1;
        CHECK_EQ_INT(sim_launch(&s, 0xA, S3), GM_ERR_DRIVER);
    } else {
        host_backend_set_capacity(s.hb, 0, reserved); /* no room for X's second handle */
        CHECK_EQ_INT(sim_launch(&s, 0xA, S3), GM_ERR_OUT_OF_MEMORY);
        host_backend_set_capacity(s.hb, 0, 0);
    }
    /* Nothing it mapped or made stays. */
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), used);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), reserved);
    REQUIRE(sim_launch(&s, 0xA, S4) == GM_OK);
    CHECK(host_backend_stream_waits(s.hb) > waits);
    /* X's run on S4 cannot complete before Y's on S1. */
    CHECK_EQ_U64(host_backend_complete(s.hb, S4, 100), host_backend_completed(s.hb, S4));
    CHECK(host_backend_completed(s.hb, S4) < 2);
    host_backend_complete(s.hb, S1, 100);
    CHECK_EQ_U64(host_backend_complete(s.hb, S4, 100), 2);
    CHECK(sim_run_data(&s, &y, NULL));
    CHECK(sim_run_data(&s, &x, NULL));
    CHECK(sim_fini(&s));
}

static void test_failed_driver_launch_keeps_order(void) {
    failed_launch_keeps_order(true);
}

static void test_failed_mapping_keeps_order(void) {
    failed_launch_keeps_order(false);
}

/* An escaped allocation is freed outside on S2 (not done yet); the relaunch that would reuse its
 * bytes fails on S3. The pending free must survive: the next launch, on S4, waits for it. */
static void test_failed_launch_keeps_pending_free(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g;
    sim_one_alloc_graph(&s, &g, 1 * MiB, true);
    REQUIRE(sim_instantiate(&s, &g, 0xA, 0) == GM_OK);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    host_backend_complete_all(s.hb);
    CHECK(sim_forget_live(&s, g.va[0]));
    host_backend_submit(s.hb, S2); /* a kernel still reading it, then cudaFreeAsync on S2 */
    REQUIRE(gm_engine_free_outside(s.engine, g.va[0], S2) == GM_OK);
    s.fail_submits = 1;
    CHECK_EQ_INT(sim_launch(&s, 0xA, S3), GM_ERR_DRIVER);
    uint64_t waits = host_backend_stream_waits(s.hb);
    REQUIRE(sim_launch(&s, 0xA, S4) == GM_OK);
    CHECK_EQ_U64(host_backend_stream_waits(s.hb), waits + 1);
    CHECK_EQ_U64(host_backend_complete(s.hb, S4, 100), 0); /* behind the kernel on S2 */
    host_backend_complete_all(s.hb);
    CHECK(sim_run_data(&s, &g, NULL));
    CHECK(sim_forget_live(&s, g.va[0]));
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[0], GM_NO_STREAM), GM_OK);
    CHECK(sim_fini(&s));
}

/* A failed first upload maps nothing, holds nothing and ties the exec to no stream; a failed
 * AutoFreeOnLaunch relaunch does not free the live allocation. */
static void test_failed_upload_and_relaunch(void) {
    sim_t s;
    REQUIRE(sim_init(&s, NULL));
    sim_graph_t g, h;
    sim_one_alloc_graph(&s, &g, 1 * MiB, true);
    sim_one_alloc_graph(&s, &h, 1 * MiB, false);
    REQUIRE(sim_instantiate(&s, &g, 0xA, GM_EXEC_AUTO_FREE) == GM_OK);
    REQUIRE(sim_instantiate(&s, &h, 0xB, 0) == GM_OK);
    s.fail_submits = 1;
    CHECK_EQ_INT(sim_upload(&s, 0xA, S1), GM_ERR_DRIVER);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_USED_CURRENT), 0);
    CHECK_EQ_U64(sim_attr(&s, GM_ATTR_RESERVED_CURRENT), 0);
    CHECK_EQ_U64(host_backend_counts(s.hb).handles, 0);
    REQUIRE(sim_launch(&s, 0xA, S1) == GM_OK);
    CHECK(sim_run_data(&s, &g, NULL));
    /* The relaunch fails: the escaped allocation stays live and its bytes stay its own. */
    s.fail_submits = 1;
    CHECK_EQ_INT(sim_launch(&s, 0xA, S1), GM_ERR_DRIVER);
    CHECK(gm_engine_owns(s.engine, g.va[0]));
    REQUIRE(sim_launch(&s, 0xB, S1) == GM_OK);
    CHECK(sim_run_data(&s, &h, NULL));
    host_backend_complete_all(s.hb);
    CHECK(sim_forget_live(&s, g.va[0])); /* h's run did not touch it */
    CHECK_EQ_INT(gm_engine_free_outside(s.engine, g.va[0], GM_NO_STREAM), GM_OK);
    CHECK(sim_fini(&s));
}

int main(void) {
    RUN_TEST(test_failed_driver_launch_keeps_order);
    RUN_TEST(test_failed_mapping_keeps_order);
    RUN_TEST(test_failed_launch_keeps_pending_free);
    RUN_TEST(test_failed_upload_and_relaunch);
    return gm_check_summary();
}
