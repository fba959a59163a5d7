/* The dlsym door. PyTorch, CuPy and cuda-bindings look driver entries up by name, so a lookup of a
 * hooked driver entry must give graphmem's hook. Everything else must give exactly what glibc
 * gives the caller, and glibc's answer depends on who calls (see dlsym_entry.S): on x86-64 every
 * name that is not a driver name never enters this file. A driver name gets what the real dlsym
 * would have returned to the caller, as closely as a caller other than the caller can ask, and
 * only when that is the driver's own definition of a hooked name does the hook take its place.
 * A definition in any other library (a tool's interposer, say) comes back untouched, and so does
 * everything with GRAPHMEM_DISABLE=1. */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#include "doors.h"

/* Called by the entry stub (dlsym_entry.S) for driver names. */
void *gm_dlsym_driver_name(void *handle, const char *name, const void *caller);

/* The object `address` lies in, or NULL. */
static struct link_map *object_of(const void *address) {
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1(address, &info, (void **)&map, RTLD_DL_LINKMAP))
        return NULL;
    return map;
}

/* `name` looked up in `map`'s own search list (the object, then its dependencies). */
static void *lookup_in_search_list(struct link_map *map, const char *name) {
    void *handle = dlopen(map->l_name[0] ? map->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL)
        return NULL;
    void *symbol = gm_real_dlsym(handle, name);
    dlclose(handle);
    return symbol;
}

/* RTLD_NEXT relative to `caller`: the first object after the caller's in load order that defines
 * `name` itself. The real dlsym would search from graphmem's position instead. */
static void *lookup_next(const char *name, const void *caller) {
    struct link_map *caller_map = object_of(caller);
    if (caller_map == NULL)
        return gm_real_dlsym(RTLD_NEXT, name);
    for (struct link_map *map = caller_map->l_next; map != NULL; map = map->l_next) {
        void *symbol = lookup_in_search_list(map, name);
        if (symbol && object_of(symbol) == map)
            return symbol;
    }
    return NULL;
}

/* RTLD_DEFAULT relative to `caller`: the global scope, then the caller's own search list, which
 * for a library opened with RTLD_LOCAL is not part of the global scope. */
static void *lookup_default(const char *name, const void *caller) {
    void *symbol = gm_real_dlsym(RTLD_DEFAULT, name);
    struct link_map *caller_map = symbol ? NULL : object_of(caller);
    return caller_map ? lookup_in_search_list(caller_map, name) : symbol;
}

static void *lookup_as(void *handle, const char *name, const void *caller) {
    if (handle == RTLD_NEXT)
        return lookup_next(name, caller);
    if (handle == RTLD_DEFAULT)
        return lookup_default(name, caller);
    return gm_real_dlsym(handle, name);
}

void *gm_dlsym_driver_name(void *handle, const char *name, const void *caller) {
    if (gm_shim_busy) /* graphmem's own lookups while it starts */
        return lookup_as(handle, name, caller);
    gm_shim_init(); /* a driver name is one of the doors that start graphmem */
    void *found = lookup_as(handle, name, caller);
    int id = found ? gm_hook_find(name) : -1;
    void **real = (void **)&gm_real;
    if (id >= 0 && found == real[id] && gm_shim_mode() == GM_MODE_ACTIVE)
        return gm_hook_function(id);
    return found;
}

#if !defined(__x86_64__)
/* Other architectures have no entry stub yet: every lookup passes through here, so RTLD_DEFAULT
 * and RTLD_NEXT for non-driver names are answered as graphmem's lookups, not the caller's. */
static bool is_driver_name(const char *name) {
    return name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

/* glibc declares the name non-null, but programs do pass NULL and must get glibc's answer, not a
 * crash: keep the check the compiler would otherwise drop. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"
GM_EXPORT void *dlsym(void *handle, const char *name) {
    if (name != NULL && is_driver_name(name))
        return gm_dlsym_driver_name(handle, name, __builtin_return_address(0));
    return gm_real_dlsym(handle, name);
}
#endif
