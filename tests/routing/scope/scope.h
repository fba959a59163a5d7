#pragma once
typedef void (*scope_report_fn)(const char *from, const char *handle, const char *name,
                                void *found);
