/* dlsym's answers depend on who asks: RTLD_DEFAULT searches the caller's scope and RTLD_NEXT what
 * follows the caller. This program asks from itself and from a library it opened with RTLD_LOCAL,
 * and prints, for each lookup, the object the answer lies in. check_scope.sh runs it natively and
 * with libgraphmem.so preloaded (disabled and active) and wants the same lines. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "scope.h"

static void report(const char *from, const char *handle, const char *name, void *found) {
    Dl_info info;
    const char *object = "NULL";
    if (found != NULL)
        object = dladdr(found, &info) && info.dli_fname ? info.dli_fname : "?";
    const char *slash = strrchr(object, '/');
    printf("%s %s %s -> %s\n", from, handle, name, slash ? slash + 1 : object);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH/libgm_scope_lib.so\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    void (*from_lib)(scope_report_fn) =
        (void (*)(scope_report_fn))dlsym(lib, "gm_scope_lookups_from_lib");
    if (from_lib == NULL) {
        fprintf(stderr, "gm_scope_lookups_from_lib not found\n");
        return 2;
    }
    from_lib(report);
    report("main", "RTLD_DEFAULT", "gm_scope_lib_probe", dlsym(RTLD_DEFAULT, "gm_scope_lib_probe"));
    report("main", "RTLD_NEXT", "gm_scope_lib_probe", dlsym(RTLD_NEXT, "gm_scope_lib_probe"));
    report("main", "RTLD_DEFAULT", "gm_scope_dep_value", dlsym(RTLD_DEFAULT, "gm_scope_dep_value"));
    report("main", "RTLD_NEXT", "malloc", dlsym(RTLD_NEXT, "malloc"));
    report("main", "handle", "gm_scope_dep_value", dlsym(lib, "gm_scope_dep_value"));
    dlclose(lib);
    return 0;
}
