/* What the shim does, played by tests against the engine over the host backend: graphs of
 * plain, alloc and free nodes built through the engine's marker API (ancestors found the way the
 * shim finds them), instantiation from the topology, launches that submit simulated work, and a
 * data check that runs each launched graph on the host through the real mappings. */
#ifndef GRAPHMEM_TEST_ENGINE_SIM_H
#define GRAPHMEM_TEST_ENGINE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "host_backend.h"

#define SIM_MAX_NODES 256

typedef enum sim_kind { SIM_PLAIN, SIM_ALLOC, SIM_FREE } sim_kind_t;

typedef struct sim_graph {
    uint64_t key;
    uint32_t node_count, edge_count;
    uint64_t nodes[SIM_MAX_NODES];
    sim_kind_t kind[SIM_MAX_NODES];
    uint64_t va[SIM_MAX_NODES], size[SIM_MAX_NODES];
    bool freed[SIM_MAX_NODES]; /* alloc nodes: a free node of this graph frees it */
    uint32_t edge_from[4 * SIM_MAX_NODES], edge_to[4 * SIM_MAX_NODES];
} sim_graph_t;

typedef struct sim {
    host_backend_t *hb;
    gm_engine_t *engine;
    gm_engine_config_t config;
    uint64_t next_key;
    uint64_t pattern_seq;
    /* Allocations live outside their graph run (escaped): address, size, pattern. */
    uint64_t live_va[1024], live_size[1024], live_pattern[1024];
    uint32_t live_count;
    uint32_t fail_submits;   /* the next this many driver launches fail (GM_ERR_DRIVER) */
    uint32_t fail_node_adds; /* the next this many marker node adds fail (GM_ERR_DRIVER) */
} sim_t;

/* A config with small numbers: 64 KiB pages, 4-page handles, 16 KiB small limit. */
gm_engine_config_t sim_default_config(void);
uint64_t sim_page(void);
bool sim_init(sim_t *s, const gm_engine_config_t *config);
/* Destroys the engine and checks the backend was left clean; returns that verdict. */
bool sim_fini(sim_t *s);
/* sim_init with the default config under GRAPHMEM_LIFT_RESTRICTIONS. */
bool sim_init_lifted(sim_t *s);
/* The end of a test: the "GPU" finishes, the execs and graphs go, then sim_fini's verdict. */
bool sim_teardown(sim_t *s, const uint64_t *execs, size_t exec_count, const uint64_t *graphs,
                  size_t graph_count);

void sim_graph_init(sim_t *s, sim_graph_t *g);
/* Adds a node depending on deps; returns its index or UINT32_MAX when the engine refused. */
uint32_t sim_plain(sim_t *s, sim_graph_t *g, const uint32_t *deps, uint32_t n);
uint32_t sim_alloc(sim_t *s, sim_graph_t *g, uint64_t size, const uint32_t *deps, uint32_t n);
uint32_t sim_alloc_on(sim_t *s, sim_graph_t *g, const gm_alloc_params_t *params,
                      const uint32_t *deps, uint32_t n);
/* The index of a node of g, UINT32_MAX when g has none with that handle. */
uint32_t sim_node_index(const sim_graph_t *g, uint64_t node);
/* A node's parents in the order their edges were added (the driver's order): the gm_parents_fn
 * of the engine's ancestor search over g (`arg`), as the shim's asks the driver. */
size_t sim_node_parents(void *arg, uint64_t node, uint64_t *parents, size_t cap);
/* A free of `va` in g; returns the engine's verdict through *st. */
uint32_t sim_free(sim_t *s, sim_graph_t *g, uint64_t va, const uint32_t *deps, uint32_t n,
                  gm_status_t *st);
/* A graph of one allocation of `size` bytes and a node using it, freed in the graph unless
 * `escape`. */
void sim_one_alloc_graph(sim_t *s, sim_graph_t *g, uint64_t size, bool escape);
/* g's topology as the shim reads it back for the engine (a view of g's arrays). */
gm_topology_t sim_topology(const sim_graph_t *g);
gm_status_t sim_instantiate(sim_t *s, const sim_graph_t *g, uint64_t exec, unsigned flags);
/* sim_init, then two graphs of one 1 MiB allocation each, instantiated as execs 0xA and 0xB. */
bool sim_init_two_execs(sim_t *s, sim_graph_t *a, sim_graph_t *b);

/* gm_engine_launch with a driver call that submits one item on the stream. */
gm_status_t sim_launch(sim_t *s, uint64_t exec, uint64_t stream);
gm_status_t sim_upload(sim_t *s, uint64_t exec, uint64_t stream);
/* Runs g on the host as its launch would: writes a fresh pattern into each allocation when its
 * alloc node runs, checks it when its free node runs, keeps escaping ones in the live list, and
 * checks every live allocation afterwards. Nodes run in an order that keeps as many allocations
 * live at once as possible (allocs early, frees late), or a random order when rng != NULL.
 * Returns false (and prints) on a clobbered byte. */
bool sim_run_data(sim_t *s, const sim_graph_t *g, uint64_t *rng);
/* Checks and forgets the live pattern of va (freed outside). */
bool sim_forget_live(sim_t *s, uint64_t va);
/* sim_forget_live, then the free outside graphs on `stream` (cuMemFreeAsync): both succeeded. */
bool sim_free_outside(sim_t *s, uint64_t va, uint64_t stream);

uint64_t sim_attr(sim_t *s, int attr);
/* The report of an exec of the engine (the last one gm_engine_report gives when there are several).
 */
gm_exec_report_t sim_report(sim_t *s);
/* The report of `exec` (zeroed but for .exec when there is none). */
gm_exec_report_t sim_report_of(sim_t *s, uint64_t exec);
/* A clone of g as the driver makes it (cuGraphClone): a graph of its own holding the same nodes
 * under handles of its own, the original's plus SIM_CLONE_OFFSET. */
#define SIM_CLONE_OFFSET 0x1000000ull
void sim_clone_view(sim_t *s, const sim_graph_t *g, sim_graph_t *c);
/* cuGraphNodeFindInClone for such a clone, for gm_engine_graph_clone; `found` false: the driver
 * finds no node. */
gm_node_map_t sim_clone_map(bool found);
/* cuGraphDestroy as the shim reports it (the driver's part done). */
void sim_graph_destroy(gm_engine_t *engine, uint64_t graph);

/* Whether the engine lock is free at this moment (false too when this thread holds it). */
bool sim_engine_lock_free(gm_engine_t *e);
/* Whether the defer lock is free and nothing holds the launch fast path off at this moment. */
bool sim_defer_lock_free(gm_engine_t *e);

#endif
