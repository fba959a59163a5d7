/* The lock-free key set (core/common/keyset.h) read by several threads while one writer at a time
 * inserts and removes keys and rebuilds the table as it grows and shrinks: how every launch asks
 * whether graphmem serves an exec, and every captured small allocation asks whether a node is a
 * marker, without the engine lock. Readers check keys that are in the set for the whole run (always
 * found), keys never inserted (never found) and keys the writer churns (either answer, but no
 * crash and no data race: this test also runs under ThreadSanitizer). */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "keyset.h"

#define READERS 3
#define STABLE 64
#define CHURN 4096
#define ROUNDS 40

typedef struct shared {
    gm_keyset_t set;
    pthread_mutex_t writers; /* the caller serializes writers, as the engine lock does */
    atomic_bool done;
    atomic_ulong wrong;
    atomic_ulong reads;
} shared_t;

static uint64_t stable_key(uint32_t i) {
    return 0x10000 + 16ull * i;
}

static uint64_t churn_key(uint32_t i) {
    return 0x900000 + 16ull * i;
}

static uint64_t absent_key(uint32_t i) {
    return 0x10008 + 16ull * i; /* between the stable keys: never inserted */
}

static void *reader(void *arg) {
    shared_t *s = arg;
    unsigned long wrong = 0, reads = 0;
    uint32_t i = 0;
    while (!atomic_load(&s->done) || reads < 100000) {
        wrong += !gm_keyset_contains(&s->set, stable_key(i % STABLE));
        wrong += gm_keyset_contains(&s->set, absent_key(i % STABLE));
        (void)gm_keyset_contains(&s->set, churn_key(i % CHURN));
        reads += 3;
        i++;
    }
    atomic_fetch_add(&s->wrong, wrong);
    atomic_fetch_add(&s->reads, reads);
    return NULL;
}

static void test_readers_during_rebuilds(void) {
    shared_t s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.writers, NULL);
    for (uint32_t i = 0; i < STABLE; i++)
        REQUIRE(gm_keyset_insert(&s.set, stable_key(i)) == GM_OK);
    pthread_t ids[READERS];
    for (int r = 0; r < READERS; r++)
        pthread_create(&ids[r], NULL, reader, &s);
    /* Each round fills the set far past its size (rebuilds on growth) and empties it again (the
     * removed slots force rebuilds too). */
    for (int round = 0; round < ROUNDS; round++) {
        for (uint32_t i = 0; i < CHURN; i++) {
            pthread_mutex_lock(&s.writers);
            CHECK_EQ_INT(gm_keyset_insert(&s.set, churn_key(i)), GM_OK);
            pthread_mutex_unlock(&s.writers);
        }
        for (uint32_t i = 0; i < CHURN; i++) {
            pthread_mutex_lock(&s.writers);
            gm_keyset_remove(&s.set, churn_key(i));
            pthread_mutex_unlock(&s.writers);
        }
    }
    atomic_store(&s.done, true);
    for (int r = 0; r < READERS; r++)
        pthread_join(ids[r], NULL);
    CHECK_EQ_U64(atomic_load(&s.wrong), 0);
    CHECK(atomic_load(&s.reads) >= READERS * 100000ul);
    for (uint32_t i = 0; i < STABLE; i++)
        CHECK(gm_keyset_contains(&s.set, stable_key(i)));
    for (uint32_t i = 0; i < CHURN; i++)
        CHECK(!gm_keyset_contains(&s.set, churn_key(i)));
    gm_keyset_fini(&s.set);
    pthread_mutex_destroy(&s.writers);
}

/* A reader's memo (gm_keyset_contains_memo) against a writer that takes turns with it: the writer
 * inserts or removes a key (rebuilding the table now and then, with the churn keys), then says so;
 * every answer the reader gives afterwards, through its memo, must be the set's new state, while a
 * key that never changes keeps its answer. */
typedef struct turns {
    gm_keyset_t set;
    atomic_uint said, heard; /* the writer's last change, the reader's last check of one */
    atomic_ulong wrong;
} turns_t;

#define TURNS 20000
#define TOGGLED 0x777770ull

static void *memo_reader(void *arg) {
    turns_t *t = arg;
    gm_keyset_memo_t memo = {0};
    unsigned long wrong = 0;
    for (unsigned turn = 1; turn <= TURNS; turn++) {
        while (atomic_load(&t->said) != turn)
            ;
        bool in = turn % 2;                 /* odd turns insert, even ones remove */
        for (int ask = 0; ask < 3; ask++) { /* the second and third are the memo's */
            wrong += gm_keyset_contains_memo(&t->set, TOGGLED, &memo) != in;
            wrong += !gm_keyset_contains_memo(&t->set, stable_key(turn % STABLE), &memo);
        }
        atomic_store(&t->heard, turn);
    }
    atomic_store(&t->wrong, wrong);
    return NULL;
}

static void test_memo_sees_every_change(void) {
    turns_t t;
    memset(&t, 0, sizeof t);
    for (uint32_t i = 0; i < STABLE; i++)
        REQUIRE(gm_keyset_insert(&t.set, stable_key(i)) == GM_OK);
    pthread_t id;
    pthread_create(&id, NULL, memo_reader, &t);
    for (unsigned turn = 1; turn <= TURNS; turn++) {
        if (turn % 2) {
            CHECK_EQ_INT(gm_keyset_insert(&t.set, TOGGLED), GM_OK);
        } else {
            gm_keyset_remove(&t.set, TOGGLED);
            if (turn % 64 == 0) /* a rebuild between two questions */
                for (uint32_t i = 0; i < CHURN / 8; i++)
                    CHECK_EQ_INT(gm_keyset_insert(&t.set, churn_key(i)), GM_OK);
            if (turn % 64 == 32)
                for (uint32_t i = 0; i < CHURN / 8; i++)
                    gm_keyset_remove(&t.set, churn_key(i));
        }
        atomic_store(&t.said, turn);
        while (atomic_load(&t.heard) != turn)
            ;
    }
    pthread_join(id, NULL);
    CHECK_EQ_U64(atomic_load(&t.wrong), 0);
    gm_keyset_fini(&t.set);
}

/* A memo's question to a set that never changed (stamp 0) while a key goes in: the thread read the
 * stamp before the insert and found the key after it (what gm_keyset_contains_memo does, in two
 * steps here). Another set that never changed, asked next with the same memo, must not take that
 * answer for its own. */
static void test_memo_of_unchanged_sets(void) {
    gm_keyset_t a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    gm_keyset_memo_t memo = {0};
    const uint64_t key = 0x4440;
    const unsigned way = gm_keyset_memo_way(key);
    uint64_t stamp_read = atomic_load(&a.stamp);
    CHECK_EQ_U64(stamp_read, 0);
    REQUIRE(gm_keyset_insert(&a, key) == GM_OK);
    CHECK(gm_keyset_contains_remember(&a, key, &memo, way, stamp_read));
    CHECK(!gm_keyset_contains_memo(&b, key, &memo));
    CHECK(gm_keyset_contains_memo(&a, key, &memo));
    CHECK(!gm_keyset_contains_memo(&b, key, &memo));
    gm_keyset_fini(&a);
    gm_keyset_fini(&b);
}

/* A set that never changed is empty, and a memo's question to it is answered by loading its stamp
 * alone: the set lies in a read-only page here, where gm_keyset_contains's reader counting (two
 * atomic increments, what every plain launch paid before any exec was served) would fault. */
static void test_memo_of_unchanged_set_only_reads(void) {
    long page = sysconf(_SC_PAGESIZE);
    void *mem =
        mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mem != MAP_FAILED && sizeof(gm_keyset_t) <= (size_t)page);
    gm_keyset_t *set = mem; /* zeroed, as a set that was never changed */
    REQUIRE(mprotect(mem, (size_t)page, PROT_READ) == 0);
    gm_keyset_memo_t memo = {0};
    for (uint64_t key = 0x1000; key < 0x1100; key += 0x10)
        CHECK(!gm_keyset_contains_memo(set, key, &memo));
    munmap(mem, (size_t)page);
}

int main(void) {
    RUN_TEST(test_readers_during_rebuilds);
    RUN_TEST(test_memo_sees_every_change);
    RUN_TEST(test_memo_of_unchanged_sets);
    RUN_TEST(test_memo_of_unchanged_set_only_reads);
    return gm_check_summary();
}
