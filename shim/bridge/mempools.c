#include "mempools.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "interpose/driver.h"
#include "engine.h"
#include "util.h"

typedef struct known_pool {
    CUmemoryPool pool;
    int device;
    bool servable;
    uint64_t access; /* devices with read-write access, resident included */
} known_pool_t;

static known_pool_t *pools;
static uint32_t pool_count, pool_cap;
static CUmemoryPool current[GM_MAX_DEVICES]; /* NULL: the device's default pool */
static CUmemoryPool defaults[GM_MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Raised under the lock after every change above: a thread's memo of its last answer
 * (gm_mempool_servable) holds while this is what it was when the answer was made. */
static atomic_uint_fast64_t generation = 1;

static void unlock_changed(void) {
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
    pthread_mutex_unlock(&lock);
}

static known_pool_t *find_locked(CUmemoryPool pool) {
    for (uint32_t i = 0; i < pool_count; i++)
        if (pools[i].pool == pool)
            return &pools[i];
    return NULL;
}

/* A pool graphmem cannot remember (no host memory) stays unknown: its allocations go to the
 * driver, never wrong. */
static known_pool_t *add_locked(CUmemoryPool pool, int device, bool servable) {
    known_pool_t *known = find_locked(pool);
    if (known == NULL &&
        gm_grow((void **)&pools, &pool_cap, pool_count + 1, sizeof *pools) == GM_OK)
        known = &pools[pool_count++];
    if (known != NULL)
        *known = (known_pool_t){pool, device, servable, device >= 0 ? 1ull << device : 0};
    return known;
}

/* The devices with read-write access to `pool` now, asked of the driver: access set before
 * graphmem started (on a default pool, which no creation call announced) is known too. */
static uint64_t access_now(CUmemoryPool pool, int resident, int device_count) {
    uint64_t access = 1ull << resident;
    for (int d = 0; d < device_count && d < GM_MAX_DEVICES; d++) {
        CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        CUmemLocation where = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = d};
        if (d != resident && gm_drv.cuMemPoolGetAccess(&flags, pool, &where) == CUDA_SUCCESS &&
            flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            access |= 1ull << d;
    }
    return access;
}

void gm_mempools_learn_defaults(int device_count) {
    for (int d = 0; d < device_count && d < GM_MAX_DEVICES; d++) {
        CUmemoryPool pool = NULL;
        if (gm_drv.cuDeviceGetDefaultMemPool(&pool, d) != CUDA_SUCCESS)
            continue;
        uint64_t access = access_now(pool, d, device_count);
        pthread_mutex_lock(&lock);
        defaults[d] = pool;
        known_pool_t *known = find_locked(pool);
        if (known == NULL)
            known = add_locked(pool, d, true);
        if (known != NULL)
            known->access |= access;
        unlock_changed();
    }
}

void gm_mempool_created(CUmemoryPool pool, const CUmemPoolProps *props) {
    static const unsigned char zero[sizeof props->reserved];
    bool device_memory = props->allocType == CU_MEM_ALLOCATION_TYPE_PINNED &&
                         props->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
                         props->location.id >= 0 && props->location.id < GM_MAX_DEVICES;
    bool servable = device_memory && props->handleTypes == CU_MEM_HANDLE_TYPE_NONE &&
                    props->usage == 0 && memcmp(props->reserved, zero, sizeof zero) == 0;
    pthread_mutex_lock(&lock);
    add_locked(pool, device_memory ? props->location.id : -1, servable);
    unlock_changed();
}

void gm_mempool_destroyed(CUmemoryPool pool) {
    pthread_mutex_lock(&lock);
    known_pool_t *known = find_locked(pool);
    if (known != NULL)
        *known = pools[--pool_count];
    for (int d = 0; d < GM_MAX_DEVICES; d++)
        if (current[d] == pool)
            current[d] = NULL;
    unlock_changed();
}

void gm_mempool_access_set(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
    pthread_mutex_lock(&lock);
    known_pool_t *known = find_locked(pool);
    for (size_t i = 0; known != NULL && map != NULL && i < count; i++) {
        int d = map[i].location.id;
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || d < 0 || d >= GM_MAX_DEVICES ||
            d == known->device)
            continue;
        if (map[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            known->access |= 1ull << d;
        else
            known->access &= ~(1ull << d);
    }
    unlock_changed();
}

void gm_mempool_current_set(CUdevice device, CUmemoryPool pool) {
    if (device < 0 || device >= GM_MAX_DEVICES)
        return;
    pthread_mutex_lock(&lock);
    current[device] = pool == defaults[device] ? NULL : pool;
    unlock_changed();
}

bool gm_mempool_servable(CUmemoryPool pool, int device, int *device_out, uint64_t *access_out) {
    if (pool == NULL && (device < 0 || device >= GM_MAX_DEVICES))
        return false;
    /* A capture asks about one pool allocation after allocation: the answer this thread had last
     * stands while nothing changed since (read before the lock: an answer from just before a
     * change another thread is making is one the lock could have given too). */
    static _Thread_local struct {
        uint_fast64_t generation; /* 0: none */
        CUmemoryPool pool;
        int device, device_out;
        bool servable;
        uint64_t access;
    } last;
    if (last.generation == atomic_load_explicit(&generation, memory_order_acquire) &&
        last.pool == pool && (pool != NULL || last.device == device)) {
        if (last.servable) {
            *device_out = last.device_out;
            *access_out = last.access;
        }
        return last.servable;
    }
    pthread_mutex_lock(&lock);
    uint_fast64_t now = atomic_load_explicit(&generation, memory_order_relaxed);
    CUmemoryPool asked = pool;
    if (pool == NULL)
        pool = current[device] ? current[device] : defaults[device];
    const known_pool_t *known = pool ? find_locked(pool) : NULL;
    bool servable = known != NULL && known->servable && known->device >= 0;
    if (servable) {
        *device_out = known->device;
        *access_out = known->access;
    }
    pthread_mutex_unlock(&lock);
    last.generation = now;
    last.pool = asked;
    last.device = device;
    last.servable = servable;
    last.device_out = servable ? *device_out : 0;
    last.access = servable ? *access_out : 0;
    return servable;
}
