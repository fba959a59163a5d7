#include "host_backend_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *const op_names[HOST_OP_COUNT] = {
    "va_reserve",      "va_release",  "handle_create", "handle_release", "map",
    "unmap",           "set_access",  "fence_record",  "fence_query",    "fence_wait_stream",
    "fence_wait_host", "stream_sync", "stream_idle",
};

const char *host_op_name(host_op_t op) {
    return op < HOST_OP_COUNT ? op_names[op] : "?";
}

void *hb_grow(void *array, size_t *cap, size_t count, size_t elem) {
    if (count < *cap)
        return array;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *p = realloc(array, ncap * elem);
    if (!p)
        abort();
    *cap = ncap;
    return p;
}

bool hb_inject(host_backend_t *hb, host_op_t op, gm_status_t *status) {
    hb->calls[op]++;
    hb_fault_t *f = &hb->faults[op];
    if (f->countdown && --f->countdown == 0) {
        *status = f->status;
        return true;
    }
    return false;
}

gm_status_t hb_misuse(host_backend_t *hb, const char *what) {
    hb->misuses++;
    fprintf(stderr, "host_backend: misuse: %s\n", what);
    return GM_ERR_INVALID_VALUE;
}

static hb_handle_t *handle_get(host_backend_t *hb, uint64_t id) {
    if (id == 0 || id > hb->handle_count || hb->handles[id - 1].fd < 0)
        return NULL;
    return &hb->handles[id - 1];
}

static hb_reservation_t *reservation_containing(host_backend_t *hb, uint64_t va, uint64_t size) {
    for (size_t i = 0; i < hb->res_count; i++) {
        hb_reservation_t *r = &hb->res[i];
        if (va >= r->va && va + size <= r->va + r->size && va + size >= va)
            return r;
    }
    return NULL;
}

static bool overlaps_mapping(const host_backend_t *hb, uint64_t va, uint64_t size) {
    for (size_t i = 0; i < hb->map_count; i++) {
        const hb_mapping_t *m = &hb->maps[i];
        if (va < m->va + m->size && m->va < va + size)
            return true;
    }
    return false;
}

static hb_mapping_t *mapping_at(const host_backend_t *hb, uint64_t va) {
    for (size_t i = 0; i < hb->map_count; i++) {
        hb_mapping_t *m = &hb->maps[i];
        if (va >= m->va && va < m->va + m->size)
            return m;
    }
    return NULL;
}

static gm_status_t hb_va_reserve(void *ctx, uint64_t size, uint64_t *va_out) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_VA_RESERVE, &st))
        goto out;
    if (size == 0 || size % hb->ops.granularity) {
        st = hb_misuse(hb, "va_reserve of a size that is not a positive multiple of granularity");
        goto out;
    }
    /* Over-reserve, then cut to an aligned range so the reservation honours the granularity. */
    uint64_t g = hb->ops.granularity;
    void *p = mmap(NULL, size + g, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        st = GM_ERR_OUT_OF_MEMORY;
        goto out;
    }
    uint64_t base = (uint64_t)(uintptr_t)p, va = (base + g - 1) / g * g;
    if (va > base)
        munmap(p, va - base);
    if (base + size + g > va + size)
        munmap((void *)(uintptr_t)(va + size), base + size + g - (va + size));
    hb->res = hb_grow(hb->res, &hb->res_cap, hb->res_count, sizeof *hb->res);
    hb->res[hb->res_count++] = (hb_reservation_t){va, size};
    *va_out = va;
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

static gm_status_t hb_va_release(void *ctx, uint64_t va, uint64_t size) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_VA_RELEASE, &st))
        goto out;
    size_t i = 0;
    while (i < hb->res_count && !(hb->res[i].va == va && hb->res[i].size == size))
        i++;
    if (i == hb->res_count) {
        st = hb_misuse(hb, "va_release of a range that is not a reservation");
        goto out;
    }
    if (overlaps_mapping(hb, va, size)) {
        st = hb_misuse(hb, "va_release of a reservation that still has mappings");
        goto out;
    }
    munmap((void *)(uintptr_t)va, size);
    hb->res[i] = hb->res[--hb->res_count];
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

static uint64_t device_bytes_locked(const host_backend_t *hb, int device) {
    uint64_t sum = 0;
    for (size_t i = 0; i < hb->handle_count; i++)
        if (hb->handles[i].fd >= 0 && hb->handles[i].device == device)
            sum += hb->handles[i].size;
    return sum;
}

static gm_status_t hb_handle_create(void *ctx, int device, uint64_t size, uint64_t *handle_out) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_HANDLE_CREATE, &st))
        goto out;
    if (device < 0 || device >= hb->device_count) {
        st = hb_misuse(hb, "handle_create on a device that does not exist");
        goto out;
    }
    if (size == 0 || size % hb->ops.granularity) {
        st =
            hb_misuse(hb, "handle_create of a size that is not a positive multiple of granularity");
        goto out;
    }
    if (hb->capacity[device] && device_bytes_locked(hb, device) + size > hb->capacity[device]) {
        st = GM_ERR_OUT_OF_MEMORY;
        goto out;
    }
    int fd = memfd_create("graphmem-host-handle", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        if (fd >= 0)
            close(fd);
        st = GM_ERR_OUT_OF_MEMORY;
        goto out;
    }
    hb->handles = hb_grow(hb->handles, &hb->handle_cap, hb->handle_count, sizeof *hb->handles);
    hb->handles[hb->handle_count++] = (hb_handle_t){fd, device, size, 0};
    *handle_out = hb->handle_count;
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

static gm_status_t hb_handle_release(void *ctx, uint64_t handle) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_HANDLE_RELEASE, &st))
        goto out;
    hb_handle_t *h = handle_get(hb, handle);
    if (!h) {
        st = hb_misuse(hb, "handle_release of an unknown handle");
        goto out;
    }
    /* CUDA would defer the release until the last unmap; a correct engine never relies on it. */
    if (h->map_count) {
        st = hb_misuse(hb, "handle_release of a handle that is still mapped");
        goto out;
    }
    close(h->fd);
    h->fd = -1;
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

static gm_status_t hb_map(void *ctx, uint64_t va, uint64_t size, uint64_t handle) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_MAP, &st))
        goto out;
    hb_handle_t *h = handle_get(hb, handle);
    if (!h || h->size != size) {
        st = hb_misuse(hb, "map of an unknown handle or not of its whole size");
        goto out;
    }
    if (va % hb->ops.granularity || !reservation_containing(hb, va, size)) {
        st = hb_misuse(hb, "map outside a reservation or unaligned");
        goto out;
    }
    if (overlaps_mapping(hb, va, size)) {
        st = hb_misuse(hb, "map over an existing mapping");
        goto out;
    }
    void *p = mmap((void *)(uintptr_t)va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, 0);
    if (p == MAP_FAILED) {
        st = GM_ERR_BACKEND;
        goto out;
    }
    hb->maps = hb_grow(hb->maps, &hb->map_cap, hb->map_count, sizeof *hb->maps);
    hb->maps[hb->map_count++] = (hb_mapping_t){va, size, handle, 0};
    h->map_count++;
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

static gm_status_t hb_unmap(void *ctx, uint64_t va, uint64_t size) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_UNMAP, &st))
        goto out;
    size_t i = 0;
    while (i < hb->map_count && !(hb->maps[i].va == va && hb->maps[i].size == size))
        i++;
    if (i == hb->map_count) {
        st = hb_misuse(hb, "unmap of a range that is not exactly one mapping");
        goto out;
    }
    /* Back to a reserved, inaccessible range, as after cuMemUnmap. */
    void *p = mmap((void *)(uintptr_t)va, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (p == MAP_FAILED) {
        st = GM_ERR_BACKEND;
        goto out;
    }
    handle_get(hb, hb->maps[i].handle)->map_count--;
    hb->maps[i] = hb->maps[--hb->map_count];
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

static gm_status_t hb_set_access(void *ctx, uint64_t va, uint64_t size, const int *devices,
                                 int device_count) {
    host_backend_t *hb = ctx;
    gm_status_t st = GM_OK;
    pthread_mutex_lock(&hb->lock);
    if (hb_inject(hb, HOST_OP_SET_ACCESS, &st))
        goto out;
    uint64_t mask = 0;
    for (int i = 0; i < device_count; i++) {
        if (devices[i] < 0 || devices[i] >= hb->device_count) {
            st = hb_misuse(hb, "set_access for a device that does not exist");
            goto out;
        }
        mask |= 1ull << devices[i];
    }
    if (device_count <= 0 || size == 0) {
        st = hb_misuse(hb, "set_access with no device or no bytes");
        goto out;
    }
    /* The range may span several adjacent mappings, but every byte must be mapped. */
    for (uint64_t cur = va; cur < va + size;) {
        hb_mapping_t *m = mapping_at(hb, cur);
        if (!m) {
            st = hb_misuse(hb, "set_access over a range that is not fully mapped");
            goto out;
        }
        cur = m->va + m->size;
    }
    if (mprotect((void *)(uintptr_t)va, size, PROT_READ | PROT_WRITE) != 0) {
        st = GM_ERR_BACKEND;
        goto out;
    }
    for (uint64_t cur = va; cur < va + size;) {
        hb_mapping_t *m = mapping_at(hb, cur);
        m->access |= mask;
        cur = m->va + m->size;
    }
out:
    pthread_mutex_unlock(&hb->lock);
    return st;
}

host_backend_t *host_backend_create(uint64_t granularity, int device_count) {
    long sys_page = sysconf(_SC_PAGESIZE);
    if (granularity == 0 || granularity % (uint64_t)sys_page || device_count <= 0 ||
        device_count > 64)
        return NULL;
    host_backend_t *hb = calloc(1, sizeof *hb);
    if (!hb)
        return NULL;
    pthread_mutex_init(&hb->lock, NULL);
    pthread_cond_init(&hb->progress, NULL);
    hb->device_count = device_count;
    hb->ops = (gm_backend_t){
        .ctx = hb,
        .granularity = granularity,
        .va_reserve = hb_va_reserve,
        .va_release = hb_va_release,
        .handle_create = hb_handle_create,
        .handle_release = hb_handle_release,
        .map = hb_map,
        .unmap = hb_unmap,
        .set_access = hb_set_access,
        .fence_record = hb_fence_record,
        .fence_query = hb_fence_query,
        .fence_wait_stream = hb_fence_wait_stream,
        .fence_wait_host = hb_fence_wait_host,
        .fence_destroy = hb_fence_destroy,
        .stream_sync = hb_stream_sync,
        .fence_may_defer = hb_fence_may_defer,
        .stream_idle = hb_stream_idle,
    };
    hb->defer = true;
    return hb;
}

void host_backend_destroy(host_backend_t *hb) {
    if (!hb)
        return;
    for (size_t i = 0; i < hb->map_count; i++)
        mmap((void *)(uintptr_t)hb->maps[i].va, hb->maps[i].size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    for (size_t i = 0; i < hb->res_count; i++)
        munmap((void *)(uintptr_t)hb->res[i].va, hb->res[i].size);
    for (size_t i = 0; i < hb->handle_count; i++)
        if (hb->handles[i].fd >= 0)
            close(hb->handles[i].fd);
    for (size_t i = 0; i < hb->stream_count; i++) {
        free(hb->streams[i].waits);
        free(hb->streams[i].items);
    }
    free(hb->res);
    free(hb->handles);
    free(hb->maps);
    free(hb->streams);
    free(hb->fences);
    pthread_cond_destroy(&hb->progress);
    pthread_mutex_destroy(&hb->lock);
    free(hb);
}

const gm_backend_t *host_backend_ops(host_backend_t *hb) {
    return &hb->ops;
}

void host_backend_set_capacity(host_backend_t *hb, int device, uint64_t bytes) {
    pthread_mutex_lock(&hb->lock);
    if (device >= 0 && device < hb->device_count)
        hb->capacity[device] = bytes;
    pthread_mutex_unlock(&hb->lock);
}

void host_backend_fail_nth(host_backend_t *hb, host_op_t op, uint64_t nth, gm_status_t status) {
    pthread_mutex_lock(&hb->lock);
    hb->faults[op] = (hb_fault_t){nth, status};
    pthread_mutex_unlock(&hb->lock);
}

uint64_t host_backend_calls(const host_backend_t *hb, host_op_t op) {
    return hb->calls[op];
}

uint64_t host_backend_total_calls(const host_backend_t *hb) {
    uint64_t total = 0;
    for (int op = 0; op < HOST_OP_COUNT; op++)
        total += hb->calls[op];
    return total;
}

void host_backend_reset_calls(host_backend_t *hb) {
    pthread_mutex_lock(&hb->lock);
    memset(hb->calls, 0, sizeof hb->calls);
    pthread_mutex_unlock(&hb->lock);
}

host_backend_counts_t host_backend_counts(const host_backend_t *hb) {
    host_backend_counts_t c = {0};
    c.reservations = hb->res_count;
    for (size_t i = 0; i < hb->res_count; i++)
        c.reserved_bytes += hb->res[i].size;
    for (size_t i = 0; i < hb->handle_count; i++) {
        if (hb->handles[i].fd >= 0) {
            c.handles++;
            c.handle_bytes += hb->handles[i].size;
        }
    }
    c.mappings = hb->map_count;
    for (size_t i = 0; i < hb->map_count; i++)
        c.mapped_bytes += hb->maps[i].size;
    for (size_t i = 0; i < hb->fence_count; i++)
        c.fences += hb->fences[i].alive;
    c.misuses = hb->misuses;
    return c;
}

uint64_t host_backend_device_bytes(const host_backend_t *hb, int device) {
    return device_bytes_locked(hb, device);
}

/* The two questions about one mapping take the lock: a test may ask them while other threads map
 * and unmap (tests/unit/test_engine_cover_threads.c). */
uint64_t host_backend_access(host_backend_t *hb, uint64_t va) {
    pthread_mutex_lock(&hb->lock);
    const hb_mapping_t *m = mapping_at(hb, va);
    uint64_t access = m ? m->access : 0;
    pthread_mutex_unlock(&hb->lock);
    return access;
}

uint64_t host_backend_handle_at(host_backend_t *hb, uint64_t va, uint64_t *size_out) {
    pthread_mutex_lock(&hb->lock);
    const hb_mapping_t *m = mapping_at(hb, va);
    if (size_out)
        *size_out = m ? hb->handles[m->handle - 1].size : 0;
    uint64_t handle = m ? m->handle : 0;
    pthread_mutex_unlock(&hb->lock);
    return handle;
}

bool host_backend_check_clean(const host_backend_t *hb) {
    host_backend_counts_t c = host_backend_counts(hb);
    bool clean = !c.reservations && !c.handles && !c.mappings && !c.fences && !c.misuses;
    if (!clean)
        fprintf(stderr,
                "host_backend: left: %llu reservations, %llu handles, %llu mappings, %llu "
                "fences, %llu misuses\n",
                (unsigned long long)c.reservations, (unsigned long long)c.handles,
                (unsigned long long)c.mappings, (unsigned long long)c.fences,
                (unsigned long long)c.misuses);
    return clean;
}
