/* The driver entries graphmem calls for its own work (shim/driver.def). */
#ifndef GRAPHMEM_DRIVER_H
#define GRAPHMEM_DRIVER_H

#include "shim.h"

typedef struct gm_driver_table {
#define GM_DRIVER(name, params) CUresult(CUDAAPI *name) params;
#define GM_DRIVER_OPTIONAL GM_DRIVER
#include "driver.def"
#undef GM_DRIVER_OPTIONAL
#undef GM_DRIVER
} gm_driver_table_t;

extern gm_driver_table_t gm_drv;

/* As GM_REAL_PT (shim.h), for the twins of driver.def. */
#define GM_DRV_PT(name, ptsz) ((ptsz) ? gm_drv.name##_ptsz : gm_drv.name)

/* Resolves gm_drv; returns the name of the first missing entry that is not optional, or NULL. */
const char *gm_driver_resolve(void *driver);

#endif
