/* Lazy start-up: no constructor (a preloaded library runs in every process, including the driver's
 * own helper processes), no DT_NEEDED on libcuda. The first door used (an exported hook, dlsym of a
 * driver name, or the resolver) starts graphmem under pthread_once. */
#include <dlfcn.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "doors.h"
#include "driver.h"
#include "log.h"
#include "options.h"
#include "stats.h"

extern char **environ;

_Thread_local int gm_shim_busy;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
gm_shim_hot_t gm_shim_hot = {.mode = GM_MODE_ACTIVE};
static void *driver;
static cpu_set_t start_cpus;
static bool start_cpus_known;

void *gm_driver_handle(void) {
    return driver;
}

const cpu_set_t *gm_start_cpus(void) {
    return start_cpus_known ? &start_cpus : NULL;
}

void gm_shim_fall_back(const char *reason) {
    atomic_store(&gm_shim_hot.mode, GM_MODE_PASSTHROUGH);
    gm_stat_add(GM_STAT_fallbacks, 1);
    gm_log_fallback("%s", reason);
}

/* Set in a forked child: a statistics file without %p is the parent's, not the child's. */
static bool forked_child;

/* At unload, after the atexit handlers: the runtime's teardown (a primary context released at
 * exit) is counted too. Statistics only: the driver may already be tearing down, so no CUDA call
 * here. */
__attribute__((destructor)) static void at_unload(void) {
    if (!atomic_load_explicit(&gm_shim_hot.init_done, memory_order_acquire))
        return;
    if (gm_option_bool(GM_OPT_SHOW_STATS))
        gm_stats_print_table();
    const char *path = gm_option_text(GM_OPT_STATS_FILE);
    if (path[0] != '\0' && (!forked_child || strstr(path, "%p") != NULL))
        gm_stats_write_json(path);
    gm_stats_fini();
}

/* After fork the child counts only its own calls. (The engine, whose device memory and events
 * belong to the parent's CUDA context, is dropped by a handler of its own: bridge/engine_glue.c.)
 */
static void at_fork_child(void) {
    forked_child = true;
    gm_stats_reset();
}

static void *open_driver(void) {
    void *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL)
        handle = dlopen("libcuda.so.1", RTLD_NOW);
    return handle;
}

static void init_once_body(void) {
    gm_shim_busy++;
    start_cpus_known = sched_getaffinity(0, sizeof start_cpus, &start_cpus) == 0;
    int errors = gm_options_load(environ);
    if (errors > 0 && gm_option_bool(GM_OPT_STRICT)) {
        gm_log(GM_LOG_ERROR, "%d invalid option value(s) and GRAPHMEM_STRICT=1: exiting", errors);
        _exit(1);
    }
    if (gm_option_bool(GM_OPT_PRINT_CONFIG))
        gm_options_print();

    driver = open_driver();
    gm_hooks_resolve(driver);
    /* Resolved now, before any hook can need them (the engine checks later that none is missing).
     */
    gm_driver_resolve(driver);
    gm_stats_register_calls(gm_hook_names, GM_HOOK_COUNT);
    /* The calls are counted only for a table or file that will show them: a count is two more
     * cache lines a forwarded call touches (gm_shim_hot). */
    atomic_store(&gm_shim_hot.count_calls,
                 gm_option_bool(GM_OPT_SHOW_STATS) || gm_option_text(GM_OPT_STATS_FILE)[0] != '\0');

    if (gm_option_bool(GM_OPT_DISABLE)) {
        atomic_store(&gm_shim_hot.mode, GM_MODE_PASSTHROUGH);
        gm_log(GM_LOG_INFO, "GRAPHMEM_DISABLE=1: every call goes straight to the driver");
    } else if (driver == NULL) {
        gm_shim_fall_back("libcuda.so.1 could not be loaded");
    }
    pthread_atfork(NULL, NULL, at_fork_child);
    gm_log(GM_LOG_INFO, "interposition live: exported hooks, dlsym and cuGetProcAddress (%d hooks)",
           (int)GM_HOOK_COUNT);
    gm_shim_busy--;
    atomic_store_explicit(&gm_shim_hot.init_done, 1, memory_order_release);
}

__attribute__((noinline)) void gm_shim_init_slow(void) {
    if (atomic_load_explicit(&gm_shim_hot.init_done, memory_order_acquire))
        return;
    /* The driver's own start-up can reach a door again while we load it (dlsym from its
     * constructors): the outer call is still inside pthread_once, so do not wait on it. */
    if (gm_shim_busy)
        return;
    pthread_once(&init_once, init_once_body);
}
