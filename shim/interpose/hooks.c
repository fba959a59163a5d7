/* The tables generated from hooks.def: names, the real-pointer table, the exported
 * functions' addresses, and the two lookups the doors use (by name, by driver pointer). The
 * exported functions themselves are in exports.c. Below everything but the real dlsym: start-up
 * fills these tables, the doors and hooks read them. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "doors.h"

gm_real_table_t gm_real;

const char *const gm_hook_names[GM_HOOK_COUNT] = {
#define GM_FORWARD(name, params, args) [GM_HOOK_ID_##name] = #name,
#define GM_HOOK(name, params, args, idle) [GM_HOOK_ID_##name] = #name,
#define GM_HOOK_ON(name, params, args, idle, stream, hold) [GM_HOOK_ID_##name] = #name,
#define GM_ENQUEUE(name, params, args, stream) [GM_HOOK_ID_##name] = #name,
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
#undef GM_HOOK_ON
#undef GM_ENQUEUE
};

/* The exported functions (exports.c), by id. Taken from their cuda.h prototypes: graphmem only
 * hands these addresses out (dlsym, cuGetProcAddress) and never calls them itself. */
static void *const hook_functions[GM_HOOK_COUNT] = {
#define GM_FORWARD(name, params, args) [GM_HOOK_ID_##name] = (void *)name,
#define GM_HOOK(name, params, args, idle) [GM_HOOK_ID_##name] = (void *)name,
#define GM_HOOK_ON(name, params, args, idle, stream, hold) [GM_HOOK_ID_##name] = (void *)name,
#define GM_ENQUEUE(name, params, args, stream) [GM_HOOK_ID_##name] = (void *)name,
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
#undef GM_HOOK_ON
#undef GM_ENQUEUE
};

void *gm_hook_function(int id) {
    return hook_functions[id];
}

/* Name lookup: hook ids sorted by name, built once in gm_hooks_resolve. */
static int ids_by_name[GM_HOOK_COUNT];

static int compare_ids_by_name(const void *a, const void *b) {
    return strcmp(gm_hook_names[*(const int *)a], gm_hook_names[*(const int *)b]);
}

int gm_hook_find(const char *name) {
    int lo = 0, hi = GM_HOOK_COUNT - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int cmp = strcmp(name, gm_hook_names[ids_by_name[mid]]);
        if (cmp == 0)
            return ids_by_name[mid];
        if (cmp < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return -1;
}

/* Pointer lookup: the driver's entry points sorted by address. Routing by the pointer the
 * resolver returned (never by the base name asked for) picks the right ABI twin by
 * construction: _ptsz vs legacy, _v2/_v3, cuGraphInstantiate@11040 = WithFlags. */
typedef struct driver_route {
    void *driver_fn;
    int id;
} driver_route_t;

static driver_route_t routes[GM_HOOK_COUNT];
static int route_count;

static int compare_routes(const void *a, const void *b) {
    const driver_route_t *x = a, *y = b;
    return x->driver_fn < y->driver_fn ? -1 : x->driver_fn > y->driver_fn ? 1 : 0;
}

void gm_hooks_resolve(void *driver) {
    for (int i = 0; i < GM_HOOK_COUNT; i++)
        ids_by_name[i] = i;
    qsort(ids_by_name, GM_HOOK_COUNT, sizeof ids_by_name[0], compare_ids_by_name);

    void **slots = (void **)&gm_real;
    route_count = 0;
    for (int i = 0; i < GM_HOOK_COUNT; i++) {
        slots[i] = driver ? gm_real_dlsym(driver, gm_hook_names[i]) : NULL;
        if (slots[i] != NULL)
            routes[route_count++] = (driver_route_t){slots[i], i};
    }
    qsort(routes, (size_t)route_count, sizeof routes[0], compare_routes);
}

void *gm_hook_for_driver_pointer(void *driver_fn) {
    int lo = 0, hi = route_count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (routes[mid].driver_fn == driver_fn)
            return hook_functions[routes[mid].id];
        if (routes[mid].driver_fn < driver_fn)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

_Static_assert(sizeof(gm_real_table_t) == GM_HOOK_COUNT * sizeof(void *),
               "gm_real must be one pointer per hook, in hooks.def order");
