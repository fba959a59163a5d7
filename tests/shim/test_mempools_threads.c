/* The memory-pool hooks (shim/hooks/mempool_hooks.c) and their mirror (shim/bridge/mempools.c)
 * under threads, over a driver of plain structs. Each driver call and its mirror must be one step:
 * a thread whose driver call returned first must not update the mirror after another thread's
 * later call did. The fake driver makes that interleaving happen at will: a "slow" call applies
 * its change in the driver, then waits (bounded) until another thread's hook has returned, as a
 * thread preempted between the driver's answer and the mirror would. With the hook and its
 * mirror one step, the other thread's hook cannot return meanwhile and the wait times out.
 * - two threads selecting pools at once (cuDeviceSetMemPool): the mirror's current pool is the
 *   one the driver kept, which a captured cuMemAllocAsync takes its device and access from;
 * - a pool destroyed while another thread makes one that gets its handle: the new pool stays
 *   known;
 * - two threads setting a pool's access at once: the mirror keeps the driver's last answer.
 * Each fails without the hooks' lock (144b854).
 * - a thread asking about its device's pool while another selects pools and sets access: each
 *   answer after a change is the changed one (the asking thread's memo of its last answer goes
 *   with any change).
 * Also run under ThreadSanitizer. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "check.h"
#include "interpose/driver.h"
#include "mempools.h"

gm_driver_table_t gm_drv;
gm_real_table_t gm_real;

#define POOLS 8
#define DEVICE 0

/* ---- the fake driver ------------------------------------------------------------------------ */

/* Pool handles are slot + 1; a destroyed slot's handle is the first one a new pool gets. */
static pthread_mutex_t driver_lock = PTHREAD_MUTEX_INITIALIZER;
static bool pool_live[POOLS];
static CUmemoryPool driver_current;            /* the device's current pool (NULL: its default) */
static CUmemAccess_flags driver_access[POOLS]; /* device 1's access to each pool */

/* The slow call: set, it waits in the driver after applying its change. */
static _Atomic(CUmemoryPool) slow_pool;
static atomic_bool slow_applied;   /* the slow call's change is in the driver */
static atomic_bool other_returned; /* the other thread's hook returned */
static atomic_bool slow_timed_out; /* the slow call waited in vain (the hooks held it off) */

static CUmemoryPool handle_of(int slot) {
    return (CUmemoryPool)(uintptr_t)(slot + 1);
}

static int slot_of(CUmemoryPool pool) {
    return (int)(uintptr_t)pool - 1;
}

static void sleep_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

/* Called by a driver entry after it applied its change for `pool`, outside driver_lock. */
static void maybe_slow(CUmemoryPool pool) {
    if (pool == NULL || atomic_load(&slow_pool) != pool)
        return;
    atomic_store(&slow_pool, NULL);
    atomic_store(&slow_applied, true);
    /* 50 ms for the other hook: microseconds when nothing holds it off. */
    for (int i = 0; i < 500 && !atomic_load(&other_returned); i++)
        sleep_us(100);
    atomic_store(&slow_timed_out, !atomic_load(&other_returned));
}

static CUresult CUDAAPI fake_pool_create(CUmemoryPool *pool, const CUmemPoolProps *props) {
    (void)props;
    pthread_mutex_lock(&driver_lock);
    int slot = 0;
    while (slot < POOLS && pool_live[slot])
        slot++;
    if (slot < POOLS) {
        pool_live[slot] = true;
        driver_access[slot] = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        *pool = handle_of(slot);
    }
    pthread_mutex_unlock(&driver_lock);
    return slot < POOLS ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult CUDAAPI fake_pool_destroy(CUmemoryPool pool) {
    int slot = slot_of(pool);
    pthread_mutex_lock(&driver_lock);
    bool live = slot >= 0 && slot < POOLS && pool_live[slot];
    if (live)
        pool_live[slot] = false;
    if (live && driver_current == pool)
        driver_current = NULL;
    pthread_mutex_unlock(&driver_lock);
    if (live)
        maybe_slow(pool);
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult CUDAAPI fake_set_access(CUmemoryPool pool, const CUmemAccessDesc *map,
                                        size_t count) {
    int slot = slot_of(pool);
    pthread_mutex_lock(&driver_lock);
    bool live = slot >= 0 && slot < POOLS && pool_live[slot];
    for (size_t i = 0; live && i < count; i++)
        if (map[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE && map[i].location.id == 1)
            driver_access[slot] = map[i].flags;
    pthread_mutex_unlock(&driver_lock);
    if (live)
        maybe_slow(pool);
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult CUDAAPI fake_set_mem_pool(CUdevice device, CUmemoryPool pool) {
    int slot = slot_of(pool);
    pthread_mutex_lock(&driver_lock);
    bool live = device == DEVICE && slot >= 0 && slot < POOLS && pool_live[slot];
    if (live)
        driver_current = pool;
    pthread_mutex_unlock(&driver_lock);
    if (live)
        maybe_slow(pool);
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUmemoryPool driver_current_pool(void) {
    pthread_mutex_lock(&driver_lock);
    CUmemoryPool pool = driver_current;
    pthread_mutex_unlock(&driver_lock);
    return pool;
}

/* ---- helpers -------------------------------------------------------------------------------- */

/* A plain device pool (graphmem serves it) resident on `device`. */
static CUmemoryPool make_pool(int device) {
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .handleTypes = CU_MEM_HANDLE_TYPE_NONE,
                            .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = device}};
    CUmemoryPool pool = NULL;
    CHECK_EQ_INT(gm_hook_cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
    return pool;
}

/* The resident device of the pool the mirror says a cuMemAllocAsync on DEVICE takes now (-1: one
 * it does not serve). */
static int mirror_current_device(void) {
    int device = -1;
    uint64_t access = 0;
    return gm_mempool_servable(NULL, DEVICE, &device, &access) ? device : -1;
}

static void reset_slow(CUmemoryPool pool) {
    atomic_store(&slow_applied, false);
    atomic_store(&other_returned, false);
    atomic_store(&slow_timed_out, false);
    atomic_store(&slow_pool, pool);
}

/* The other thread: waits (bounded) for the slow call's change to be in the driver. */
static bool wait_slow_applied(void) {
    for (int i = 0; i < 20000 && !atomic_load(&slow_applied); i++)
        sleep_us(100);
    return atomic_load(&slow_applied);
}

/* ---- two threads selecting pools ------------------------------------------------------------ */

/* The slow call's thread and the other one, at once; returns once both did. */
static void run_both(void *(*slow)(void *), void *(*other)(void *)) {
    pthread_t a, b;
    REQUIRE(pthread_create(&a, NULL, slow, NULL) == 0);
    REQUIRE(pthread_create(&b, NULL, other, NULL) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
}

static CUmemoryPool first_pool, second_pool;

static void *select_first(void *unused) {
    (void)unused;
    CHECK_EQ_INT(gm_hook_cuDeviceSetMemPool(DEVICE, first_pool), CUDA_SUCCESS);
    return NULL;
}

static void *select_second(void *unused) {
    (void)unused;
    if (wait_slow_applied())
        CHECK_EQ_INT(gm_hook_cuDeviceSetMemPool(DEVICE, second_pool), CUDA_SUCCESS);
    atomic_store(&other_returned, true);
    return NULL;
}

/* The first thread's call returns first from the driver but is slow to its mirror; the second
 * thread's call comes later in the driver, which keeps the second pool. */
static void test_select_at_once(void) {
    first_pool = make_pool(1);
    second_pool = make_pool(2);
    for (int round = 0; round < 3; round++) {
        reset_slow(first_pool);
        run_both(select_first, select_second);
        REQUIRE(driver_current_pool() == second_pool);
        CHECK_EQ_INT(mirror_current_device(), 2);
        /* The hooks held the second call off until the first one's mirror was done. */
        CHECK(atomic_load(&slow_timed_out));
    }
    CHECK_EQ_INT(gm_hook_cuMemPoolDestroy(first_pool), CUDA_SUCCESS);
    CHECK_EQ_INT(gm_hook_cuMemPoolDestroy(second_pool), CUDA_SUCCESS);
}

/* ---- a destroyed pool's handle given to a new pool ------------------------------------------ */

static CUmemoryPool doomed, reborn;

static void *destroy_doomed(void *unused) {
    (void)unused;
    CHECK_EQ_INT(gm_hook_cuMemPoolDestroy(doomed), CUDA_SUCCESS);
    return NULL;
}

static void *create_reborn(void *unused) {
    (void)unused;
    if (wait_slow_applied())
        reborn = make_pool(3);
    atomic_store(&other_returned, true);
    return NULL;
}

static void test_destroy_and_create_at_once(void) {
    for (int round = 0; round < 3; round++) {
        doomed = make_pool(1);
        reborn = NULL;
        reset_slow(doomed);
        run_both(destroy_doomed, create_reborn);
        REQUIRE(reborn == doomed); /* the driver gave the freed handle out again */
        int device = -1;
        uint64_t access = 0;
        CHECK(gm_mempool_servable(reborn, DEVICE, &device, &access));
        CHECK_EQ_INT(device, 3);
        CHECK(atomic_load(&slow_timed_out));
        CHECK_EQ_INT(gm_hook_cuMemPoolDestroy(reborn), CUDA_SUCCESS);
    }
}

/* ---- two threads setting one pool's access -------------------------------------------------- */

static CUmemoryPool shared_pool;

static CUresult set_device1_access(CUmemAccess_flags flags) {
    CUmemAccessDesc desc = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1},
                            .flags = flags};
    return gm_hook_cuMemPoolSetAccess(shared_pool, &desc, 1);
}

static void *grant(void *unused) {
    (void)unused;
    CHECK_EQ_INT(set_device1_access(CU_MEM_ACCESS_FLAGS_PROT_READWRITE), CUDA_SUCCESS);
    return NULL;
}

static void *revoke(void *unused) {
    (void)unused;
    if (wait_slow_applied())
        CHECK_EQ_INT(set_device1_access(CU_MEM_ACCESS_FLAGS_PROT_NONE), CUDA_SUCCESS);
    atomic_store(&other_returned, true);
    return NULL;
}

static void test_access_at_once(void) {
    shared_pool = make_pool(0);
    for (int round = 0; round < 3; round++) {
        reset_slow(shared_pool);
        run_both(grant, revoke);
        REQUIRE(driver_access[slot_of(shared_pool)] == CU_MEM_ACCESS_FLAGS_PROT_NONE);
        int device = -1;
        uint64_t access = 0;
        CHECK(gm_mempool_servable(shared_pool, DEVICE, &device, &access));
        CHECK_EQ_U64(access, 1); /* the resident device only: device 1's access was revoked */
        CHECK(atomic_load(&slow_timed_out));
    }
    CHECK_EQ_INT(gm_hook_cuMemPoolDestroy(shared_pool), CUDA_SUCCESS);
}

/* ---- a thread's memo of its last answer, after changes made by another ---------------------- */

/* The change a round makes (the main thread), and the reader's acknowledgement of each. */
static atomic_int round_done, round_seen;
static CUmemoryPool memo_pools[2];

/* What the mirror must answer after round `r`: odd rounds select the second pool, rounds 2 and 3
 * (mod 4) grant device 1 access to the first. */
static uint64_t expected_access(int r) {
    return r % 2 ? 1 : (r % 4 >= 2 ? 3 : 1);
}

static void *memo_reader(void *unused) {
    (void)unused;
    for (int r = 1; r <= 200; r++) {
        int device = -1;
        uint64_t access = 0;
        /* Ask while the round is made: the memo is used and made again meanwhile. */
        while (atomic_load(&round_done) < r)
            (void)gm_mempool_servable(NULL, DEVICE, &device, &access);
        CHECK(gm_mempool_servable(NULL, DEVICE, &device, &access));
        CHECK_EQ_U64(access, expected_access(r));
        atomic_store(&round_seen, r);
    }
    return NULL;
}

static void test_memo_follows_changes(void) {
    memo_pools[0] = make_pool(0);
    memo_pools[1] = make_pool(0);
    CHECK_EQ_INT(gm_hook_cuDeviceSetMemPool(DEVICE, memo_pools[0]), CUDA_SUCCESS);
    shared_pool = memo_pools[0];
    pthread_t reader;
    pthread_create(&reader, NULL, memo_reader, NULL);
    for (int r = 1; r <= 200; r++) {
        CHECK_EQ_INT(gm_hook_cuDeviceSetMemPool(DEVICE, memo_pools[r % 2]), CUDA_SUCCESS);
        if (r % 2 == 0)
            CHECK_EQ_INT(set_device1_access(r % 4 >= 2 ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                                       : CU_MEM_ACCESS_FLAGS_PROT_NONE),
                         CUDA_SUCCESS);
        atomic_store(&round_done, r);
        while (atomic_load(&round_seen) < r)
            sched_yield();
    }
    pthread_join(reader, NULL);
    CHECK_EQ_INT(gm_hook_cuMemPoolDestroy(memo_pools[0]), CUDA_SUCCESS);
    CHECK_EQ_INT(gm_hook_cuMemPoolDestroy(memo_pools[1]), CUDA_SUCCESS);
}

int main(void) {
    gm_real.cuMemPoolCreate = fake_pool_create;
    gm_real.cuMemPoolDestroy = fake_pool_destroy;
    gm_real.cuMemPoolSetAccess = fake_set_access;
    gm_real.cuDeviceSetMemPool = fake_set_mem_pool;
    RUN_TEST(test_select_at_once);
    RUN_TEST(test_destroy_and_create_at_once);
    RUN_TEST(test_access_at_once);
    RUN_TEST(test_memo_follows_changes);
    return gm_check_summary();
}
