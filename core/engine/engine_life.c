/* Engine lifetime, attributes and reports. The other concerns live in engine_record.c (records and
 * their addresses), engine_graph.c (graphs and markers), engine_exec.c (instantiation),
 * engine_part.c (a part's life: plan, mapping, trim, reclaim), engine_group.c (sharing),
 * engine_launch.c (the launch protocol and outside frees), engine_update.c (cuGraphExecUpdate),
 * engine_fence.c (GPU order), engine_trim.c (trim outside a launch) and engine_cover.c (scratch
 * mappings for the driver's pointer checks). */
#include <stdlib.h>

#include "engine_cover.h"
#include "engine_order.h"
#include "engine_exec.h"
#include "engine_graph.h"
#include "engine_group.h"
#include "engine_trim.h"

/* Address space is reserved this many pages at a time: 64 GiB at 2 MiB pages, so one
 * reservation serves most processes, and small test granularities stay small; and at least
 * GM_SLAB_WINDOWS windows padded for the largest handle, so a capture of many allocations does
 * not reserve again every few of them. */
#define GM_SLAB_PAGES 32768u
#define GM_SLAB_WINDOWS 64u

gm_engine_t *gm_engine_create(const gm_backend_t *backend, const gm_engine_config_t *config) {
    if (!backend || !config || !backend->granularity || config->device_count <= 0 ||
        config->device_count > GM_MAX_DEVICES)
        return NULL;
    gm_engine_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    gm_lock_init(&e->lock);
    gm_lock_init(&e->defer_lock);
    gm_cond_init(&e->uncovered);
    gm_order_init(e);
    e->backend = *backend;
    e->config = *config;
    /* Enough for the records and frees of a few captures of thousands of pairs. */
    e->spare_records.max = e->spare_markers.max = 4096;
    e->page = backend->granularity;
    uint64_t mh = config->max_handle < e->page ? e->page : config->max_handle;
    e->config.max_handle = (mh + e->page - 1) / e->page * e->page;
    e->pad = e->config.max_handle - e->page;
    /* A chunk is one page while only allocations below a page are packed: a chunk holding an
     * allocation that outlives its graph goes whole into the exec's private escape arena
     * (plan/arenas.c), so a small chunk keeps the graph's other allocations shareable (PyTorch
     * keeps each step's output beside its temporaries: the decode loop of bench/gpu_decode.py
     * held 118 MiB of graph memory with 32 MiB chunks, 82 with one page). A larger small limit
     * packs to save mappings (a chunk is one mapping), so there a chunk holds sixteen of the
     * largest packed allocations (a larger chunk makes each packing search more of it). */
    e->packed_below = config->small_limit;
    if (config->lift_restrictions && e->packed_below > e->page)
        e->packed_below = e->page;
    uint64_t chunk = e->packed_below <= e->page
                         ? e->page
                         : (16 * e->packed_below + e->page - 1) / e->page * e->page;
    if (chunk < e->page) /* 16 x a limit near 2^64 wraps (the options cap it at 1 GiB) */
        chunk = e->page;
    e->chunk_bytes = chunk;
    uint64_t slab = GM_SLAB_PAGES * e->page;
    if (slab < GM_SLAB_WINDOWS * 2 * e->config.max_handle)
        slab = GM_SLAB_WINDOWS * 2 * e->config.max_handle;
    e->vas = gm_vaspace_create(&e->backend, slab);
    bool ok = e->vas != NULL;
    if (ok)
        (void)gm_vaspace_prime(e->vas); /* a failure here is retried at the first allocation */
    for (int d = 0; ok && d < config->device_count; d++) {
        e->pools[d] =
            gm_pool_create(&e->backend, d, config->max_reserved, config->release_threshold);
        ok = e->pools[d] != NULL;
    }
    if (!ok) {
        gm_engine_destroy(e);
        return NULL;
    }
    return e;
}

void gm_engine_destroy(gm_engine_t *e) {
    if (!e)
        return;
    gm_execs_destroy_all(e);
    gm_graphs_destroy_all(e);
    gm_groups_destroy_all(e);
    gm_covers_destroy(e);
    for (int d = 0; d < e->config.device_count; d++)
        gm_pool_destroy(e->pools[d]);
    gm_vaspace_destroy(e->vas);
    gm_map_fini(&e->nodes);
    free(e->nodes_pending);
    gm_map_fini(&e->addresses);
    gm_keyset_fini(&e->served);
    gm_keyset_fini(&e->address_keys);
    gm_spare_fini(&e->spare_records);
    gm_spare_fini(&e->spare_markers);
    free(e->dead_reports);
    gm_order_fini(e);
    gm_lock_destroy(&e->defer_lock);
    gm_lock_destroy(&e->lock);
    free(e);
}

gm_status_t gm_engine_attr_get(gm_engine_t *e, int device, int attr, uint64_t *value) {
    if (device < 0 || device >= e->config.device_count)
        return GM_ERR_INVALID_DEVICE;
    if (!value || attr < GM_ATTR_USED_CURRENT || attr > GM_ATTR_RESERVED_HIGH)
        return GM_ERR_INVALID_VALUE;
    gm_engine_lock(e);
    gm_pool_stats_t s;
    if (e->config.uaf_check) { /* the poll may unmap */
        gm_uaf_poll(e);
        s = gm_pool_stats(e->pools[device]);
        gm_engine_unlock(e);
    } else {
        s = gm_pool_stats(e->pools[device]);
        gm_engine_unlock_unchanged(e);
    }
    const uint64_t values[] = {s.used, s.used_high, s.reserved, s.reserved_high};
    *value = values[attr];
    return GM_OK;
}

gm_status_t gm_engine_attr_set(gm_engine_t *e, int device, int attr, uint64_t value) {
    if (device < 0 || device >= e->config.device_count)
        return GM_ERR_INVALID_DEVICE;
    if (value != 0 || (attr != GM_ATTR_USED_HIGH && attr != GM_ATTR_RESERVED_HIGH))
        return GM_ERR_INVALID_VALUE; /* "High watermark can only be reset to zero" (§A10.3) */
    gm_engine_lock(e);
    if (attr == GM_ATTR_USED_HIGH)
        gm_pool_reset_used_high(e->pools[device]);
    else
        gm_pool_reset_reserved_high(e->pools[device]);
    gm_engine_unlock(e);
    return GM_OK;
}

static uint64_t mapped_bytes(const gm_exec_t *x) {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < x->part_count; i++) {
        const gm_part_t *p = x->parts[i];
        for (uint32_t k = 0; k < p->shared_maps.count; k++)
            sum += gm_handle_bytes(p->shared_maps.maps[k].handle);
        for (uint32_t k = 0; k < p->escape_maps.count; k++)
            sum += gm_handle_bytes(p->escape_maps.maps[k].handle);
    }
    return sum;
}

void gm_engine_report(gm_engine_t *e, void (*fn)(const gm_exec_report_t *, void *), void *arg) {
    gm_engine_lock(e);
    uint32_t pos = 0;
    void *v;
    while (gm_map_next(&e->execs, &pos, NULL, &v)) {
        gm_exec_t *x = v;
        gm_exec_report_t r = x->report;
        r.mapped_bytes = mapped_bytes(x);
        fn(&r, arg);
    }
    for (uint32_t i = 0; i < e->dead_count; i++)
        fn(&e->dead_reports[i], arg);
    gm_engine_unlock_unchanged(e);
}

bool gm_engine_call_locked(gm_engine_t *e, gm_driver_call_t call) {
    gm_engine_lock(e);
    bool done = call.fn(call.arg);
    gm_engine_unlock(e);
    return done;
}
