/* The dlsym door. PyTorch, CuPy and cuda-bindings look driver entries up by name. Every lookup
 * first gets exactly what the real dlsym would have returned to the caller (RTLD_NEXT searched
 * from the caller's object, not from graphmem's); only when that is the driver's own definition
 * of a hooked name does graphmem's hook take its place. A definition in any other library (a
 * tool's interposer, say) comes back untouched, and so does everything with GRAPHMEM_DISABLE=1:
 * compute-sanitizer's target never attached while graphmem handed out its hook for lookups
 * that were not the driver's. */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>

#include "shim.h"

typedef void *(*dlsym_fn)(void *, const char *);

static _Atomic(dlsym_fn) real_dlsym_fn;

/* dlvsym is not overridden, so it reaches glibc's dlsym without recursion. GLIBC_2.34 is the
 * current version; 2.2.5 (x86-64) and 2.17 (aarch64) are the older ones. */
static dlsym_fn bootstrap_real_dlsym(void) {
    dlsym_fn fn = atomic_load_explicit(&real_dlsym_fn, memory_order_acquire);
    if (fn)
        return fn;
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0] && !fn; i++)
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    atomic_store_explicit(&real_dlsym_fn, fn, memory_order_release);
    return fn;
}

void *gm_real_dlsym(void *handle, const char *name) {
    dlsym_fn fn = bootstrap_real_dlsym();
    return fn ? fn(handle, name) : NULL;
}

/* RTLD_NEXT relative to `caller`: the first object after the caller's in load order that defines
 * `name` itself. The real dlsym would search from graphmem's position instead. */
static void *lookup_next(const char *name, const void *caller) {
    Dl_info info;
    struct link_map *caller_map = NULL;
    if (!dladdr1(caller, &info, (void **)&caller_map, RTLD_DL_LINKMAP) || caller_map == NULL)
        return gm_real_dlsym(RTLD_NEXT, name);
    for (struct link_map *map = caller_map->l_next; map != NULL; map = map->l_next) {
        void *handle = dlopen(map->l_name[0] ? map->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
        if (handle == NULL)
            continue;
        void *symbol = gm_real_dlsym(handle, name);
        dlclose(handle);
        struct link_map *owner = NULL;
        if (symbol && dladdr1(symbol, &info, (void **)&owner, RTLD_DL_LINKMAP) && owner == map)
            return symbol;
    }
    return NULL;
}

static bool is_driver_name(const char *name) {
    return name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

/* glibc declares the name non-null, but programs do pass NULL and must get glibc's answer, not a
 * crash: keep the check the compiler would otherwise drop. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"
GM_EXPORT void *dlsym(void *handle, const char *name) {
    const void *caller = __builtin_return_address(0);
    if (name != NULL && is_driver_name(name) && !gm_shim_busy)
        gm_shim_init(); /* a driver name is one of the doors that start graphmem */
    void *found = handle == RTLD_NEXT ? lookup_next(name, caller) : gm_real_dlsym(handle, name);
    if (found != NULL && name != NULL && is_driver_name(name) && !gm_shim_busy) {
        int id = gm_hook_find(name);
        void **real = (void **)&gm_real;
        if (id >= 0 && found == real[id] && gm_shim_mode() == GM_MODE_ACTIVE)
            return gm_hook_function(id);
    }
    return found;
}
