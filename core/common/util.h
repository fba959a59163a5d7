/* Small pieces core/ and shim/ share: growable arrays, intrusive lists, a monotonic clock and a
 * sleep. */
#ifndef GRAPHMEM_UTIL_H
#define GRAPHMEM_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* gm_grow's slow path, for `need` > `*cap` only. */
gm_status_t gm_grow_to(void **array, uint32_t *cap, uint32_t need, size_t elem);

/* Makes room for `need` elements of `elem` bytes in `*array` (capacity `*cap`, doubling, so n
 * appends cost O(n) in all). On failure nothing the caller can see changes. Inline: almost every
 * call finds the room there already (a capture asks a few times a marker). */
static inline gm_status_t gm_grow(void **array, uint32_t *cap, uint32_t need, size_t elem) {
    return need <= *cap ? GM_OK : gm_grow_to(array, cap, need, elem);
}

/* The same for `count` arrays indexed alike that share one capacity: each grows to the same new
 * capacity, and `*cap` moves only when all did (an array that grew before a failure is merely
 * larger than `*cap` says). */
gm_status_t gm_grow_parallel(void **const arrays[], const size_t elems[], unsigned count,
                             uint32_t *cap, uint32_t need);

/* Intrusive doubly linked lists: `head` is the list's first element (NULL when empty), `prev`
 * and `next` name the links inside an element. `head` and `elem` are evaluated more than once.
 * PUSH puts `elem` first; its `prev` must be NULL already (a fresh element). */
#define GM_LIST_PUSH(head, elem, prev, next)                                                       \
    do {                                                                                           \
        (elem)->next = (head);                                                                     \
        if (head)                                                                                  \
            (head)->prev = (elem);                                                                 \
        (head) = (elem);                                                                           \
    } while (0)
/* Takes `elem` out; its own links are left as they were. */
#define GM_LIST_UNLINK(head, elem, prev, next)                                                     \
    do {                                                                                           \
        if ((elem)->prev)                                                                          \
            (elem)->prev->next = (elem)->next;                                                     \
        else                                                                                       \
            (head) = (elem)->next;                                                                 \
        if ((elem)->next)                                                                          \
            (elem)->next->prev = (elem)->prev;                                                     \
    } while (0)

/* free() of each of `count` pointers: the owned arrays of a struct, listed once where it is freed.
 */
void gm_free_each(void *const pointers[], size_t count);

/* Objects of one kind freed and kept for reuse, linked through their first bytes (so at least a
 * pointer large): a capture makes records and markers by the thousand and a graph's end frees them
 * all at once, more than glibc's per-thread cache holds, so each went back to its bins and came
 * out of them again. Keeps at most `max` (none under AddressSanitizer, whose use-after-free check
 * needs every free to be one). The caller serializes uses of one list. */
typedef struct gm_spare {
    void *head;
    uint32_t count, max;
} gm_spare_t;

/* A zeroed object of `size` bytes: a kept one, else a new one (NULL without host memory). */
void *gm_spare_take(gm_spare_t *spare, size_t size);
/* Keeps `object` (NULL: nothing) for reuse, or frees it when the list is full. */
void gm_spare_give(gm_spare_t *spare, void *object);
void gm_spare_fini(gm_spare_t *spare);

uint64_t gm_now_ns(void);

/* Sleeps `ns` nanoseconds without being a cancellation point: graphmem sleeps while it waits
 * holding its own locks or a fence (a relaunch in flight, a GPU run), and a thread cancelled in the
 * sleep would end holding them, blocking every other thread for good. */
void gm_nap(long ns);

#endif
