/* The mirror of CUDA memory pools (gm_mempool_*; core/mem/pool.h is the engine's pool of physical
 * handles, a different thing): what graphmem knows of memory pools, kept from the calls that change
 * them, so that the capture path asks the driver nothing: pool and device queries on a capturing
 * thread can invalidate a GLOBAL capture. */
#ifndef GRAPHMEM_MEMPOOLS_H
#define GRAPHMEM_MEMPOOLS_H

#include "interpose/shim.h"

/* Queries each device's default pool and who may access it now; call outside any capture, in
 * RELAXED mode (engine start-up): a pool query can invalidate a GLOBAL capture. */
void gm_mempools_learn_defaults(int device_count);
void gm_mempool_created(CUmemoryPool pool, const CUmemPoolProps *props);
void gm_mempool_destroyed(CUmemoryPool pool);
void gm_mempool_access_set(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count);
void gm_mempool_current_set(CUdevice device, CUmemoryPool pool);

/* For a pool graphmem can serve (plain device memory, no IPC handle types): its device and the
 * devices with read-write access now (bit d; the resident device included). False otherwise.
 * A NULL pool is the one cuMemAllocAsync uses on `device` now (its current pool). */
bool gm_mempool_servable(CUmemoryPool pool, int device, int *device_out, uint64_t *access_out);

#endif
