#pragma once
int gm_scope_lib_probe(void);
typedef void (*scope_report_fn)(const char *from, const char *handle, const char *name,
                                void *found);
void gm_scope_lookups_from_lib(scope_report_fn report);
