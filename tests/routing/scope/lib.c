/* Opened with RTLD_LOCAL by scope_main: its own symbols and its dependencies' are in its search
 * list but not in the global scope, so glibc's RTLD_DEFAULT and RTLD_NEXT answers depend on the
 * caller being this library. */
#include <dlfcn.h>

#include "scope.h"

extern int gm_scope_dep_value;

int gm_scope_lib_probe(void) {
    return gm_scope_dep_value; /* keeps the DT_NEEDED on the dependency */
}

void gm_scope_lookups_from_lib(scope_report_fn report) {
    report("lib", "RTLD_DEFAULT", "gm_scope_lib_probe", dlsym(RTLD_DEFAULT, "gm_scope_lib_probe"));
    report("lib", "RTLD_DEFAULT", "gm_scope_dep_value", dlsym(RTLD_DEFAULT, "gm_scope_dep_value"));
    report("lib", "RTLD_NEXT", "gm_scope_dep_value", dlsym(RTLD_NEXT, "gm_scope_dep_value"));
    report("lib", "RTLD_NEXT", "gm_scope_lib_probe", dlsym(RTLD_NEXT, "gm_scope_lib_probe"));
    report("lib", "RTLD_NEXT", "malloc", dlsym(RTLD_NEXT, "malloc"));
    /* The driver (the routing mock) is this library's dependency, not the program's. */
    report("lib", "RTLD_DEFAULT", "cuDriverGetVersion", dlsym(RTLD_DEFAULT, "cuDriverGetVersion"));
    report("lib", "RTLD_NEXT", "cuDriverGetVersion", dlsym(RTLD_NEXT, "cuDriverGetVersion"));
    report("lib", "RTLD_DEFAULT", "cuNoSuchEntry", dlsym(RTLD_DEFAULT, "cuNoSuchEntry"));
}
