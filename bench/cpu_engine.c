/* The engine's own share of capture and instantiation (prints, never fails), over the host backend
 * of the unit tests: no driver, so what issue 16's capture and instantiate rows leave to graphmem
 * can be measured and profiled on a machine without a GPU. A chain of N allocation + free pairs is
 * built marker by marker (each proven after the previous free, as the shim's ancestor search
 * finds it), then instantiated and destroyed repeatedly.
 *
 * Metrics (best of the repetitions, µs): engine_capture_pair_1MiB_us and
 * engine_capture_pair_64MiB_us (the two markers of a pair, without the driver's node, graphs
 * captured and destroyed in turn: packed allocations, and allocations of an item each),
 * engine_instantiate_1000x1MiB_us (1,000 packed pairs), engine_instantiate_1000x64MiB_us (1,000
 * pairs of an item each), engine_destroy_1000x1MiB_us (the engine's part of destroying a graph of
 * 1,000 packed pairs, which all share one address), engine_launch_ns (a relaunch of an exec of one
 * 1 MiB pair on its stream, as the launch hook makes it: the served check, then the engine's launch
 * around a driver call that does nothing), engine_capture_fork_round_20000_us (one round of a
 * capture of 20,000 rounds whose markers fork and join, capture_forks),
 * engine_launch_{1,2,4,8}threads_per_s and engine_launch_{1,2,4,8}threads_worst_us (several
 * threads launching at once through the whole protocol: launches a second, and the longest,
 * launch_contended), engine_capture_beside_launch_{p50,p999,max}_us and
 * engine_launches_beside_capture_per_s (the engine's share of capturing one pair, cycle after
 * cycle, while another thread launches: how long a capture waits for the locks,
 * capture_beside_launch). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "engine.h"
#include "host_backend.h"

#define MIB (1ull << 20)
#define PAIRS 1000u
#define REPS 30

static uint64_t next_node = 0x100000;

/* The driver's node: a fresh handle, nothing else. */
static bool add_node(void *arg, uint64_t *node_out) {
    (void)arg;
    *node_out = next_node += 16;
    return true;
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

typedef struct chain {
    uint64_t nodes[2 * PAIRS];
    uint32_t from[2 * PAIRS], to[2 * PAIRS], edges;
} chain_t;

/* The driver's answer for a node's dependencies: the chain's searches start at markers, so it is
 * never asked. */
static size_t no_parents(void *arg, uint64_t node, uint64_t *parents, size_t cap) {
    (void)arg, (void)node, (void)parents, (void)cap;
    return 0;
}

/* Builds the chain in `graph`, each marker's ancestors searched for inside its critical section
 * as the shim asks for them; the time per pair, or a negative value when the engine refused. */
static double capture_chain(gm_engine_t *e, uint64_t graph, uint64_t size, chain_t *c) {
    c->edges = 0;
    double t0 = now_us();
    for (uint32_t i = 0; i < PAIRS; i++) {
        gm_alloc_params_t params = {.device = 0, .size = size};
        uint64_t previous_free = i ? c->nodes[2 * i - 1] : 0, va = 0, node = 0, free_node = 0;
        gm_ancestors_t before = {.search = {&previous_free, i ? 1 : 0, no_parents, NULL}};
        if (gm_engine_alloc_marker(e, graph, &params, &before,
                                   (gm_node_call_t){.fn = add_node, .arg = NULL}, &va,
                                   &node) != GM_OK)
            return -1;
        gm_ancestors_t after_alloc = {.search = {&node, 1, no_parents, NULL}};
        if (gm_engine_free_marker(e, graph, va, &after_alloc,
                                  (gm_node_call_t){.fn = add_node, .arg = NULL},
                                  &free_node) != GM_OK)
            return -1;
        c->nodes[2 * i] = node;
        c->nodes[2 * i + 1] = free_node;
        if (i) {
            c->from[c->edges] = 2 * i - 1;
            c->to[c->edges++] = 2 * i;
        }
        c->from[c->edges] = 2 * i;
        c->to[c->edges++] = 2 * i + 1;
    }
    return (now_us() - t0) / PAIRS;
}

/* Best µs a pair of 40 chains of `size`, captured into five graphs from `graph` on in turn, each
 * destroyed before it is captured again (as a program captures anew): the engine holds the five
 * graphs at the end, the last chain in `c`. */
static double capture_pair_best(gm_engine_t *e, uint64_t graph, uint64_t size, chain_t *c) {
    double pair = 1e30;
    for (uint64_t round = 0; round < 40; round++) {
        uint64_t g = graph + round % 5;
        if (round >= 5)
            gm_engine_graphs_destroy(e, &g, 1, GM_NO_CALL);
        double t = capture_chain(e, g, size, c);
        pair = t >= 0 && t < pair ? t : pair;
    }
    return pair;
}

/* A long capture whose markers fork and join: each round allocates a after the last round's two
 * branches; one branch frees a, allocates c and frees it, the other allocates b (right after a's
 * alloc) and frees it. What is proven before each marker covers the whole capture, so a proof
 * copied where branches join made the capture quadratic. µs per round, or negative. */
static double capture_forks(gm_engine_t *e, uint64_t graph, uint32_t rounds) {
    uint64_t joins[2] = {0, 0};
    double t0 = now_us();
    for (uint32_t i = 0; i < rounds; i++) {
        gm_alloc_params_t params = {.device = 0, .size = 4096};
        uint64_t va_a = 0, va_b = 0, va_c = 0, a = 0, b = 0, c = 0, free_a = 0;
        gm_ancestors_t after_joins = {.markers = joins, .count = i ? 2 : 0},
                       after_a = {.markers = &a, .count = 1}, after_b = {.markers = &b, .count = 1},
                       after_c = {.markers = &c, .count = 1},
                       after_free_a = {.markers = &free_a, .count = 1};
        gm_node_call_t add = {.fn = add_node, .arg = NULL};
        if (gm_engine_alloc_marker(e, graph, &params, &after_joins, add, &va_a, &a) != GM_OK ||
            gm_engine_free_marker(e, graph, va_a, &after_a, add, &free_a) != GM_OK ||
            gm_engine_alloc_marker(e, graph, &params, &after_free_a, add, &va_c, &c) != GM_OK ||
            gm_engine_free_marker(e, graph, va_c, &after_c, add, &joins[0]) != GM_OK ||
            gm_engine_alloc_marker(e, graph, &params, &after_a, add, &va_b, &b) != GM_OK ||
            gm_engine_free_marker(e, graph, va_b, &after_b, add, &joins[1]) != GM_OK)
            return -1;
    }
    double t = (now_us() - t0) / rounds;
    gm_engine_graphs_destroy(e, &graph, 1, GM_NO_CALL);
    return t;
}

/* Best time of REPS instantiations of `graph` (each exec destroyed after), or negative. */
static double instantiate_best(gm_engine_t *e, uint64_t graph, const chain_t *c) {
    gm_topology_t topo = {2 * PAIRS, c->nodes, c->edges, c->from, c->to};
    double best = -1;
    for (uint64_t r = 0; r < REPS; r++) {
        uint64_t exec = 0x5000 + r;
        double t0 = now_us();
        if (gm_engine_instantiate(e, graph, &topo, exec, 0) != GM_OK)
            return -1;
        double t = now_us() - t0;
        gm_engine_exec_destroy(e, exec, GM_NO_CALL);
        best = best < 0 || t < best ? t : best;
    }
    return best;
}

/* Best time of destroying a freshly captured chain of packed pairs, or negative. */
static double destroy_best(gm_engine_t *e, chain_t *c) {
    double best = -1;
    for (uint64_t r = 0; r < 5; r++) {
        uint64_t graph = 0x90 + r;
        if (capture_chain(e, graph, MIB, c) < 0)
            return -1;
        double t0 = now_us();
        gm_engine_graphs_destroy(e, &graph, 1, GM_NO_CALL);
        double t = now_us() - t0;
        best = best < 0 || t < best ? t : best;
    }
    return best;
}

static bool launched(void *arg) {
    (void)arg;
    return true;
}

/* Best ns per launch over batches of relaunches of one exec on one stream, or negative. */
static double launch_best(gm_engine_t *e, uint64_t graph, chain_t *c) {
    if (capture_chain(e, graph, MIB, c) < 0)
        return -1;
    gm_topology_t topo = {2, c->nodes, 1, c->from, c->to}; /* the first pair */
    const uint64_t exec = 0x6000, stream = 0x51;
    if (gm_engine_instantiate(e, graph, &topo, exec, 0) != GM_OK)
        return -1;
    double best = -1;
    for (int batch = 0; batch < 20; batch++) {
        double t0 = now_us();
        for (int i = 0; i < 10000; i++)
            if (!gm_engine_serves(e, exec) ||
                gm_engine_launch(e, exec, stream, false, (gm_driver_call_t){launched, NULL}) !=
                    GM_OK)
                return -1;
        double t = (now_us() - t0) * 1e3 / 10000;
        best = best < 0 || t < best ? t : best;
    }
    gm_engine_exec_destroy(e, exec, GM_NO_CALL);
    return best;
}

/* ---- several threads launching at once -------------------------------------------------------
 * Each thread relaunches two execs of its own by turns on a stream of its own, so every launch
 * takes the whole protocol and the engine's locks, held across the driver's call, here a 2 us
 * spin. Launches a second over all threads, and the longest launch: how the engine lock shares
 * itself out (a lock taken strictly in turn cut the first to a sixth at 4 threads, a mutex lets
 * the second grow with the threads; core/README.md, "Patient, then first in line"). */

#define CONTENDED_MS 300
#define DRIVER_CALL_NS 2000

static atomic_bool launchers_stop;

typedef struct launcher {
    gm_engine_t *e;
    uint64_t exec[2], stream;
    unsigned long launches;
    double worst_us;
    bool failed;
} launcher_t;

static bool slow_call(void *arg) {
    (void)arg;
    double t0 = now_us();
    while ((now_us() - t0) * 1e3 < DRIVER_CALL_NS)
        ;
    return true;
}

/* An exec of a graph of one 1 MiB allocation and its free. */
static bool one_pair_exec(gm_engine_t *e, uint64_t graph, uint64_t exec) {
    gm_alloc_params_t params = {.device = 0, .size = MIB};
    uint64_t va = 0, nodes[2] = {0, 0};
    uint32_t from = 0, to = 1;
    gm_ancestors_t none = {0}, after_alloc = {.markers = &nodes[0], .count = 1};
    gm_node_call_t add = {.fn = add_node, .arg = NULL};
    gm_topology_t topo = {2, nodes, 1, &from, &to};
    return gm_engine_alloc_marker(e, graph, &params, &none, add, &va, &nodes[0]) == GM_OK &&
           gm_engine_free_marker(e, graph, va, &after_alloc, add, &nodes[1]) == GM_OK &&
           gm_engine_instantiate(e, graph, &topo, exec, 0) == GM_OK;
}

/* A launcher with two execs of its own (graphs `key` and `key` + 1) on a stream of its own. */
static bool launcher_init(gm_engine_t *e, launcher_t *l, uint64_t key) {
    *l = (launcher_t){.e = e, .exec = {0x7000 + key, 0x7001 + key}, .stream = 0x200 + key};
    return one_pair_exec(e, key, l->exec[0]) && one_pair_exec(e, key + 1, l->exec[1]);
}

static void launcher_fini(gm_engine_t *e, const launcher_t *l, uint64_t key) {
    uint64_t graphs[2] = {key, key + 1};
    gm_engine_exec_destroy(e, l->exec[0], GM_NO_CALL);
    gm_engine_exec_destroy(e, l->exec[1], GM_NO_CALL);
    gm_engine_graphs_destroy(e, graphs, 2, GM_NO_CALL);
}

static void *launch_loop(void *arg) {
    launcher_t *l = arg;
    for (unsigned long i = 0; !atomic_load(&launchers_stop); i++) {
        double t0 = now_us();
        if (gm_engine_launch(l->e, l->exec[i & 1], l->stream, false,
                             (gm_driver_call_t){slow_call, NULL}) != GM_OK) {
            l->failed = true;
            break;
        }
        double t = now_us() - t0;
        l->worst_us = t > l->worst_us ? t : l->worst_us;
        l->launches++;
    }
    return NULL;
}

/* Prints the two rows for `threads` launching threads; false when the engine refused. */
static bool launch_contended(gm_engine_t *e, int threads, uint64_t first_key) {
    launcher_t l[8] = {{0}};
    pthread_t t[8];
    int started = 0;
    bool ok = threads <= 8;
    for (int i = 0; ok && i < threads; i++)
        ok = launcher_init(e, &l[i], first_key + 4 * (uint64_t)i);
    atomic_store(&launchers_stop, false);
    for (; ok && started < threads; started++)
        ok = pthread_create(&t[started], NULL, launch_loop, &l[started]) == 0;
    struct timespec run = {0, CONTENDED_MS * 1000000L};
    if (ok)
        nanosleep(&run, NULL);
    atomic_store(&launchers_stop, true);
    unsigned long launches = 0;
    double worst = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        launches += l[i].launches;
        worst = l[i].worst_us > worst ? l[i].worst_us : worst;
        ok = ok && !l[i].failed;
    }
    for (int i = 0; i < threads && i < 8; i++)
        launcher_fini(e, &l[i], first_key + 4 * (uint64_t)i);
    if (ok) {
        printf("engine_launch_%dthreads_per_s %.0f\n", threads, launches * 1e3 / CONTENDED_MS);
        printf("engine_launch_%dthreads_worst_us %.1f\n", threads, worst);
    }
    return ok;
}

/* ---- a capture beside a launching thread ----------------------------------------------------
 * One thread launches as above; this one captures a graph of one 1 MiB pair (its two markers),
 * destroys it and spends 2 us outside the engine (the driver's begin and end of a capture), cycle
 * after cycle. With a plain mutex, the launching thread took the locks back between its launches
 * before this one woke, and a cycle waited for hundreds of launches. */

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool capture_beside_launch(gm_engine_t *e, uint64_t first_key) {
    enum { MAX_CYCLES = 1 << 18 };
    double *cycle = malloc(MAX_CYCLES * sizeof *cycle);
    launcher_t l;
    bool ok = launcher_init(e, &l, first_key) && cycle;
    pthread_t t;
    atomic_store(&launchers_stop, false);
    bool started = ok && pthread_create(&t, NULL, launch_loop, &l) == 0;
    ok = started;
    size_t n = 0;
    gm_alloc_params_t params = {.device = 0, .size = MIB};
    gm_node_call_t add = {.fn = add_node, .arg = NULL};
    for (double end = now_us() + CONTENDED_MS * 1e3; ok && n < MAX_CYCLES && now_us() < end;) {
        uint64_t graph = first_key + 2, va = 0, nodes[2] = {0, 0};
        gm_ancestors_t none = {0}, after_alloc = {.markers = &nodes[0], .count = 1};
        double t0 = now_us();
        ok = gm_engine_alloc_marker(e, graph, &params, &none, add, &va, &nodes[0]) == GM_OK &&
             gm_engine_free_marker(e, graph, va, &after_alloc, add, &nodes[1]) == GM_OK;
        gm_engine_graphs_destroy(e, &graph, 1, GM_NO_CALL);
        cycle[n++] = now_us() - t0;
        slow_call(NULL);
    }
    atomic_store(&launchers_stop, true);
    if (started)
        pthread_join(t, NULL);
    ok = ok && !l.failed && n > 0;
    if (ok) {
        qsort(cycle, n, sizeof *cycle, compare_doubles);
        printf("engine_capture_beside_launch_p50_us %.2f\n", cycle[n / 2]);
        printf("engine_capture_beside_launch_p999_us %.1f\n", cycle[n * 999 / 1000]);
        printf("engine_capture_beside_launch_max_us %.1f\n", cycle[n - 1]);
        printf("engine_launches_beside_capture_per_s %.0f\n", l.launches * 1e3 / CONTENDED_MS);
    }
    launcher_fini(e, &l, first_key);
    free(cycle);
    return ok;
}

int main(void) {
    /* The library's defaults (core/common/options.def): 2 MiB pages and small limit, 64 MiB
     * handles. */
    gm_engine_config_t config = {.device_count = 1,
                                 .small_limit = 2 * MIB,
                                 .max_handle = 64 * MIB,
                                 .release_threshold = UINT64_MAX,
                                 .cross_stream = GM_CROSS_STREAM_SERIALIZE,
                                 .defer_fences = true};
    host_backend_t *hb = host_backend_create(2 * MIB, 1);
    gm_engine_t *e = hb ? gm_engine_create(host_backend_ops(hb), &config) : NULL;
    chain_t *small = calloc(1, sizeof *small), *large = calloc(1, sizeof *large);
    if (!e || !small || !large) {
        fprintf(stderr, "bench_cpu_engine: out of host memory\n");
        return 1;
    }
    printf("engine_capture_pair_64MiB_us %.4f\n", capture_pair_best(e, 0x60, 64 * MIB, large));
    for (uint64_t graph = 0x60; graph < 0x65; graph++) /* the later rows as before this one */
        gm_engine_graphs_destroy(e, &graph, 1, GM_NO_CALL);
    printf("engine_capture_pair_1MiB_us %.4f\n", capture_pair_best(e, 0x70, MIB, small));
    printf("engine_instantiate_1000x1MiB_us %.1f\n", instantiate_best(e, 0x74, small));
    if (capture_chain(e, 0x80, 64 * MIB, large) >= 0)
        printf("engine_instantiate_1000x64MiB_us %.1f\n", instantiate_best(e, 0x80, large));
    printf("engine_destroy_1000x1MiB_us %.1f\n", destroy_best(e, small));
    printf("engine_launch_ns %.1f\n", launch_best(e, 0xA0, small));
    printf("engine_capture_fork_round_20000_us %.4f\n", capture_forks(e, 0xB0, 20000));
    for (int threads = 1; threads <= 8; threads *= 2)
        if (!launch_contended(e, threads, 0x1000 * (uint64_t)threads))
            fprintf(stderr, "bench_cpu_engine: %d launching threads: the engine refused\n",
                    threads);
    if (!capture_beside_launch(e, 0x9000))
        fprintf(stderr,
                "bench_cpu_engine: a capture beside a launching thread: the engine refused\n");
    /* Everything goes, as at a program's exit, so that a leak checker sees none of the engine's. */
    host_backend_complete_all(hb);
    gm_engine_destroy(e);
    host_backend_destroy(hb);
    free(small);
    free(large);
    return 0;
}
