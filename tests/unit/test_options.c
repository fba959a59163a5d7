/* The options table and its parser. */
#include <string.h>

#include "check.h"
#include "engine.h"
#include "options.h"

static void test_every_default_parses(void) {
    /* A default that its own parser rejects would silently become 0: check each once here. */
    char *empty[] = {NULL};
    CHECK_EQ_INT(gm_options_load(empty), 0);
    for (int i = 0; i < GM_OPT_COUNT; i++)
        CHECK(strcmp(gm_option_text((gm_option_id_t)i), gm_option_table[i].default_text) == 0);
    CHECK_EQ_U64(gm_option_u64(GM_OPT_MAX_HANDLE), 64ull << 20);
    CHECK_EQ_U64(gm_option_u64(GM_OPT_RELEASE_THRESHOLD), UINT64_MAX);
    CHECK(!gm_option_bool(GM_OPT_DISABLE));
}

static void test_sizes(void) {
    uint64_t v = 0;
    CHECK(gm_parse_size("0", &v) && v == 0);
    CHECK(gm_parse_size("4096", &v) && v == 4096);
    CHECK(gm_parse_size("2M", &v) && v == 2ull << 20);
    CHECK(gm_parse_size("2MiB", &v) && v == 2ull << 20);
    CHECK(gm_parse_size("3g", &v) && v == 3ull << 30);
    CHECK(gm_parse_size("max", &v) && v == UINT64_MAX);
    CHECK(!gm_parse_size("", &v));
    CHECK(!gm_parse_size("12x", &v));
    CHECK(!gm_parse_size("-1", &v));
    CHECK(!gm_parse_size("99999999999999999999", &v));
    CHECK(!gm_parse_size("17179869184T", &v)); /* overflows once shifted */
}

static void test_bad_value_keeps_default(void) {
    char *env[] = {"GRAPHMEM_MAX_HANDLE=lots", "GRAPHMEM_NO_ALIAS=yes",
                   "GRAPHMEM_CROSS_STREAM=remap", NULL};
    CHECK_EQ_INT(gm_options_load(env), 1);
    CHECK_EQ_U64(gm_option_u64(GM_OPT_MAX_HANDLE), 64ull << 20);
    CHECK(!gm_option_from_env(GM_OPT_MAX_HANDLE));
    CHECK(gm_option_bool(GM_OPT_NO_ALIAS));
    CHECK_EQ_U64(gm_option_u64(GM_OPT_CROSS_STREAM), GM_CROSS_STREAM_REMAP);
}

static void test_bounds_are_errors_not_clamps(void) {
    char *env[] = {"GRAPHMEM_MAX_HANDLE=1M", "GRAPHMEM_SMALL_LIMIT=4G", NULL};
    CHECK_EQ_INT(gm_options_load(env), 2);
    CHECK_EQ_U64(gm_option_u64(GM_OPT_MAX_HANDLE), 64ull << 20);
    CHECK_EQ_U64(gm_option_u64(GM_OPT_SMALL_LIMIT), 2ull << 20);
}

static void test_unknown_names_are_not_errors(void) {
    char *env[] = {"GRAPHMEM_NOT_AN_OPTION=1", "GRAPHMEM_TEST_SEED=5", NULL};
    CHECK_EQ_INT(gm_options_load(env), 0);
}

int main(void) {
    RUN_TEST(test_every_default_parses);
    RUN_TEST(test_sizes);
    RUN_TEST(test_bad_value_keeps_default);
    RUN_TEST(test_bounds_are_errors_not_clamps);
    RUN_TEST(test_unknown_names_are_not_errors);
    return gm_check_summary();
}
