/* Virtual address windows carved from large backend reservations.
 *
 * Reserving address space costs a backend call (cuMemAddressReserve: tens of µs), so windows come
 * from slabs reserved `slab_bytes` at a time; a window larger than a slab gets a reservation of
 * its own, released as soon as the window is freed. Freed windows are reused address-ordered
 * first fit, coalescing neighbours of the same slab (a mapping never crosses reservations). Slabs
 * are kept until the vaspace is destroyed. Not thread safe: the engine's lock covers it. */
#ifndef GRAPHMEM_VASPACE_H
#define GRAPHMEM_VASPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "status.h"

typedef struct gm_vaspace gm_vaspace_t;

/* slab_bytes is rounded up to the backend granularity. NULL on host OOM. */
gm_vaspace_t *gm_vaspace_create(const gm_backend_t *backend, uint64_t slab_bytes);
/* Releases every reservation; windows still handed out become invalid. */
void gm_vaspace_destroy(gm_vaspace_t *vs);

/* A window of `size` bytes (a positive multiple of the granularity) that no other live window
 * overlaps. Errors: what va_reserve returned, or GM_ERR_OUT_OF_MEMORY on host OOM. */
/* Reserves the first slab now, so that the first allocations (often made during a stream capture,
 * where a reservation is one more driver call on the capturing thread) find room already. */
gm_status_t gm_vaspace_prime(gm_vaspace_t *vs);
gm_status_t gm_vaspace_alloc(gm_vaspace_t *vs, uint64_t size, uint64_t *va_out);
/* Grows the window [va, va + size) by `more` bytes at its end when those addresses are free in
 * the same reservation (the window is then freed with its new size). GM_ERR_OUT_OF_MEMORY when
 * they are not: nothing changes. */
gm_status_t gm_vaspace_extend(gm_vaspace_t *vs, uint64_t va, uint64_t size, uint64_t more);
/* Gives back exactly a window returned by gm_vaspace_alloc (and grown by gm_vaspace_extend). */
void gm_vaspace_free(gm_vaspace_t *vs, uint64_t va, uint64_t size);

/* Bytes reserved from the backend and bytes handed out in live windows. */
bool gm_vaspace_contains(const gm_vaspace_t *vs, uint64_t va);
uint64_t gm_vaspace_reserved_bytes(const gm_vaspace_t *vs);
uint64_t gm_vaspace_live_bytes(const gm_vaspace_t *vs);

#endif
