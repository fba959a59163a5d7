#include "pools.h"

#include <pthread.h>
#include <string.h>

#include "driver.h"
#include "engine.h"

typedef struct known_pool {
    CUmemoryPool pool;
    int device;
    bool servable;
    uint64_t access; /* devices with read-write access, resident included */
} known_pool_t;

#define GM_KNOWN_POOLS 512
static known_pool_t pools[GM_KNOWN_POOLS];
static int pool_count;
static CUmemoryPool current[GM_MAX_DEVICES]; /* NULL: the device's default pool */
static CUmemoryPool defaults[GM_MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static known_pool_t *find_locked(CUmemoryPool pool) {
    for (int i = 0; i < pool_count; i++)
        if (pools[i].pool == pool)
            return &pools[i];
    return NULL;
}

static void add_locked(CUmemoryPool pool, int device, bool servable) {
    known_pool_t *known = find_locked(pool);
    if (known == NULL && pool_count < GM_KNOWN_POOLS)
        known = &pools[pool_count++];
    if (known != NULL)
        *known = (known_pool_t){pool, device, servable, device >= 0 ? 1ull << device : 0};
}

void gm_pools_learn_defaults(int device_count) {
    for (int d = 0; d < device_count && d < GM_MAX_DEVICES; d++) {
        CUmemoryPool pool = NULL;
        if (gm_drv.cuDeviceGetDefaultMemPool(&pool, d) != CUDA_SUCCESS)
            continue;
        pthread_mutex_lock(&lock);
        defaults[d] = pool;
        if (find_locked(pool) == NULL)
            add_locked(pool, d, true);
        pthread_mutex_unlock(&lock);
    }
}

void gm_pool_created(CUmemoryPool pool, const CUmemPoolProps *props) {
    static const unsigned char zero[sizeof props->reserved];
    bool device_memory = props->allocType == CU_MEM_ALLOCATION_TYPE_PINNED &&
                         props->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
                         props->location.id >= 0 && props->location.id < GM_MAX_DEVICES;
    bool servable = device_memory && props->handleTypes == CU_MEM_HANDLE_TYPE_NONE &&
                    props->usage == 0 && memcmp(props->reserved, zero, sizeof zero) == 0;
    pthread_mutex_lock(&lock);
    add_locked(pool, device_memory ? props->location.id : -1, servable);
    pthread_mutex_unlock(&lock);
}

void gm_pool_destroyed(CUmemoryPool pool) {
    pthread_mutex_lock(&lock);
    known_pool_t *known = find_locked(pool);
    if (known != NULL)
        *known = pools[--pool_count];
    for (int d = 0; d < GM_MAX_DEVICES; d++)
        if (current[d] == pool)
            current[d] = NULL;
    pthread_mutex_unlock(&lock);
}

void gm_pool_access_set(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count) {
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
    pthread_mutex_unlock(&lock);
}

void gm_pool_current_set(CUdevice device, CUmemoryPool pool) {
    if (device < 0 || device >= GM_MAX_DEVICES)
        return;
    pthread_mutex_lock(&lock);
    current[device] = pool == defaults[device] ? NULL : pool;
    pthread_mutex_unlock(&lock);
}

CUmemoryPool gm_pool_current(int device) {
    if (device < 0 || device >= GM_MAX_DEVICES)
        return NULL;
    pthread_mutex_lock(&lock);
    CUmemoryPool pool = current[device] ? current[device] : defaults[device];
    pthread_mutex_unlock(&lock);
    return pool;
}

bool gm_pool_servable(CUmemoryPool pool, int *device_out, uint64_t *access_out) {
    pthread_mutex_lock(&lock);
    const known_pool_t *known = pool ? find_locked(pool) : NULL;
    bool servable = known != NULL && known->servable && known->device >= 0;
    if (servable) {
        *device_out = known->device;
        *access_out = known->access;
    }
    pthread_mutex_unlock(&lock);
    return servable;
}
