/* A dependency of scope_lib, reachable only through scope_lib's own search list. */
int gm_scope_dep_value = 42;
