/* The cuGetProcAddress and dlsym doors, checked the way cuda-bindings and PyTorch use them:
 * dlopen("libcuda.so.1") + dlsym(h, "cuGetProcAddress_v2"), then lookups by base name, ABI
 * version and flags. Runs preloaded with libgraphmem.so against the mock driver.
 *
 * The mock's own resolver is the reference: for every (name, version, flags) query graphmem's
 * answer must equal the mock's, except that a pointer to a hooked exact ABI name is replaced by
 * graphmem's export of that same name. The mock's pointers come from gm_mock_lookup, which
 * graphmem's dlsym passes through (not a cu* name). */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*gm_resolve_v2_t)(const char *, void **, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult *);
typedef CUresult (*gm_resolve_v1_t)(const char *, void **, int, cuuint64_t);
typedef void *(*gm_mock_lookup_t)(const char *);

static const char *const hooked[] = {
#define GM_FORWARD(name, params, args) #name,
#define GM_HOOK(name, params, args, idle) #name,
#define GM_HOOK_ON(name, params, args, idle, stream, hold) #name,
#define GM_ENQUEUE(name, params, args, stream) #name,
#include "hooks.def"
#undef GM_FORWARD
#undef GM_HOOK
#undef GM_HOOK_ON
#undef GM_ENQUEUE
};
#define GM_NHOOKED (sizeof(hooked) / sizeof(hooked[0]))

static const struct {
    const char *base;
    int version;
} procs[] = {
#define GM_MOCK_PROC(base, version, legacy, per_thread) {#base, version},
#include "mock_procs.def"
#undef GM_MOCK_PROC
};

static int failures, checks;
static gm_mock_lookup_t mock_lookup;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            if (failures++ < 40) {                                                                 \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
                printf(__VA_ARGS__);                                                               \
                printf("\n");                                                                      \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static int is_hooked(const char *name) {
    for (size_t i = 0; i < GM_NHOOKED; i++)
        if (strcmp(hooked[i], name) == 0)
            return 1;
    return 0;
}

/* The hooked exact name the mock's pointer stands for, or NULL. */
static const char *hooked_name_of(void *mock_fn) {
    for (size_t i = 0; i < GM_NHOOKED; i++)
        if (mock_fn && mock_lookup(hooked[i]) == mock_fn)
            return hooked[i];
    return NULL;
}

/* True when fn is graphmem's export named `name`. */
static int is_graphmem_export(void *fn, const char *name) {
    Dl_info info;
    if (!fn || !dladdr(fn, &info) || !info.dli_fname || !info.dli_sname)
        return 0;
    return strstr(info.dli_fname, "libgraphmem.so") && strcmp(info.dli_sname, name) == 0;
}

static const char *symbol_of(void *fn) {
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_sname ? info.dli_sname : "-";
}

/* One query through both resolvers; graphmem's answer must be the mock's, hooked. */
static void compare_query(gm_resolve_v2_t gm, gm_resolve_v2_t mock, const char *name, int version,
                          cuuint64_t flags) {
    void *gp = (void *)1, *mp = (void *)1;
    CUdriverProcAddressQueryResult gs = 77, ms = 77;
    CUresult grc = gm(name, &gp, version, flags, &gs);
    CUresult mrc = mock(name, &mp, version, flags, &ms);
    CHECK(grc == mrc, "%s@%d f%llu: rc %d, driver says %d", name, version,
          (unsigned long long)flags, grc, mrc);
    CHECK(gs == ms, "%s@%d f%llu: status %d, driver says %d", name, version,
          (unsigned long long)flags, gs, ms);
    const char *exact = hooked_name_of(mp);
    if (exact)
        CHECK(is_graphmem_export(gp, exact) && gp == dlsym(RTLD_DEFAULT, exact),
              "%s@%d f%llu: got %s, want graphmem's %s", name, version, (unsigned long long)flags,
              symbol_of(gp), exact);
    else
        CHECK(gp == mp, "%s@%d f%llu: got %s, driver gave %s", name, version,
              (unsigned long long)flags, symbol_of(gp), symbol_of(mp));

    /* Without a status pointer, as cudart calls it. */
    gp = (void *)1;
    mp = (void *)1;
    grc = gm(name, &gp, version, flags, NULL);
    mrc = mock(name, &mp, version, flags, NULL);
    CHECK(grc == mrc && (exact ? is_graphmem_export(gp, exact) : gp == mp),
          "%s@%d f%llu without status: rc %d/%d, %s vs %s", name, version,
          (unsigned long long)flags, grc, mrc, symbol_of(gp), symbol_of(mp));
}

/* A specific expectation, independent of the mock's table. */
static void expect(gm_resolve_v2_t gm, const char *name, int version, cuuint64_t flags,
                   const char *want_export) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = 77;
    CUresult rc = gm(name, &fn, version, flags, &st);
    CHECK(rc == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS &&
              is_graphmem_export(fn, want_export),
          "%s@%d f%llu: rc %d status %d %s, want graphmem's %s", name, version,
          (unsigned long long)flags, rc, st, symbol_of(fn), want_export);
}

static void check_resolver(gm_resolve_v2_t gm, gm_resolve_v2_t mock) {
    static const int extra_versions[] = {0, 2000, 11040, 12000, 12030, 13000, 13010, 99999};
    for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
        for (cuuint64_t flags = 0; flags <= 2; flags++) {
            compare_query(gm, mock, procs[i].base, procs[i].version, flags);
            compare_query(gm, mock, procs[i].base, procs[i].version - 1, flags);
            for (size_t v = 0; v < sizeof(extra_versions) / sizeof(extra_versions[0]); v++)
                compare_query(gm, mock, procs[i].base, extra_versions[v], flags);
        }
    }
    /* Pass-through of what the driver refuses or does not know. */
    compare_query(gm, mock, "", 0, 0);
    compare_query(gm, mock, "cuDoesNotExist", 12000, 0);
    compare_query(gm, mock, "cudaMallocAsync", 12000, 0);
    compare_query(gm, mock, "cuMemAllocAsync", 11020, 4);
    compare_query(gm, mock, "cuMemAllocAsync_ptsz", 11020, 0);

    expect(gm, "cuMemAllocAsync", 11020, 0, "cuMemAllocAsync");
    expect(gm, "cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemAllocAsync");
    expect(gm, "cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
           "cuMemAllocAsync_ptsz");
    expect(gm, "cuStreamBeginCapture", 10000, 2, "cuStreamBeginCapture_ptsz");
    expect(gm, "cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2");
    expect(gm, "cuStreamBeginCapture", 12000, 2, "cuStreamBeginCapture_v2_ptsz");
    expect(gm, "cuGraphInstantiate", 10000, 0, "cuGraphInstantiate");
    expect(gm, "cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2");
    expect(gm, "cuGraphInstantiate", 11040, 0, "cuGraphInstantiateWithFlags");
    expect(gm, "cuGraphInstantiate", 12000, 2, "cuGraphInstantiateWithFlags");
    expect(gm, "cuGraphInstantiateWithParams", 12000, 2, "cuGraphInstantiateWithParams_ptsz");
    expect(gm, "cuStreamGetCaptureInfo", 10010, 0, "cuStreamGetCaptureInfo");
    expect(gm, "cuStreamGetCaptureInfo", 11030, 0, "cuStreamGetCaptureInfo_v2");
    expect(gm, "cuStreamGetCaptureInfo", 12030, 2, "cuStreamGetCaptureInfo_v3_ptsz");
    expect(gm, "cuGraphAddNode", 12020, 0, "cuGraphAddNode");
    expect(gm, "cuGraphAddNode", 12030, 0, "cuGraphAddNode_v2");
    expect(gm, "cuMemFree", 3020, 0, "cuMemFree_v2");
    expect(gm, "cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    expect(gm, "cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
}

/* cuda-bindings' door, plus the older 4-argument resolver on a few queries. */
static void check_v1_resolver(gm_resolve_v1_t gm1, gm_resolve_v1_t mock1) {
    static const struct {
        const char *name;
        int version;
        cuuint64_t flags;
    } q[] = {{"cuMemAllocAsync", 11020, 2},
             {"cuGraphInstantiate", 11040, 0},
             {"cuInit", 2000, 0},
             {"cuDoesNotExist", 11030, 0},
             {"cuGetProcAddress", 11030, 0},
             {"cuMemAllocAsync", 13010, 0}};
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
        void *gp = (void *)1, *mp = (void *)1;
        CUresult grc = gm1(q[i].name, &gp, q[i].version, q[i].flags);
        CUresult mrc = mock1(q[i].name, &mp, q[i].version, q[i].flags);
        const char *exact = hooked_name_of(mp);
        CHECK(grc == mrc && (exact ? is_graphmem_export(gp, exact) : gp == mp),
              "4-arg %s@%d: rc %d/%d, %s vs %s", q[i].name, q[i].version, grc, mrc, symbol_of(gp),
              symbol_of(mp));
    }
}

static void check_dlsym(void *libcuda) {
    void *self = dlopen(NULL, RTLD_NOW);
    void *handles[] = {libcuda, RTLD_DEFAULT, RTLD_NEXT, self};
    const char *handle_names[] = {"libcuda", "RTLD_DEFAULT", "RTLD_NEXT", "dlopen(NULL)"};
    for (size_t h = 0; h < 4; h++)
        for (size_t i = 0; i < GM_NHOOKED; i++) {
            void *fn = dlsym(handles[h], hooked[i]);
            CHECK(is_graphmem_export(fn, hooked[i]), "dlsym(%s, %s) = %s, want graphmem's",
                  handle_names[h], hooked[i], symbol_of(fn));
        }
    /* Unhooked driver names and other names pass through. */
    static const char *const unhooked[] = {"cuInit", "cuDriverGetVersion", "cuMemcpyHtoD_v2",
                                           "cuStreamQuery_ptsz", "cuGetExportTable"};
    for (size_t i = 0; i < sizeof(unhooked) / sizeof(unhooked[0]); i++) {
        CHECK(!is_hooked(unhooked[i]), "%s is hooked now: pick another name", unhooked[i]);
        void *fn = dlsym(libcuda, unhooked[i]);
        CHECK(fn && fn == mock_lookup(unhooked[i]), "dlsym(libcuda, %s) = %s, want the driver's",
              unhooked[i], symbol_of(fn));
    }
    CHECK(dlsym(libcuda, "cuDoesNotExist") == NULL, "unknown driver name resolved");
    CHECK(dlsym(RTLD_DEFAULT, "malloc") == (void *)malloc, "dlsym(RTLD_DEFAULT, malloc) changed");
    CHECK(dlsym(RTLD_NEXT, "malloc") == (void *)malloc, "dlsym(RTLD_NEXT, malloc) changed");
    CHECK(dlsym(self, "gm_no_such_symbol") == NULL, "unknown name resolved");
    dlclose(self);
}

int main(void) {
    void *libcuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!libcuda) {
        printf("FAIL: dlopen(libcuda.so.1): %s\n", dlerror());
        return 1;
    }
    mock_lookup = (gm_mock_lookup_t)dlsym(libcuda, "gm_mock_lookup");
    if (!mock_lookup) {
        printf("FAIL: libcuda.so.1 is not the mock driver (no gm_mock_lookup)\n");
        return 1;
    }
    gm_resolve_v2_t gm = (gm_resolve_v2_t)dlsym(libcuda, "cuGetProcAddress_v2");
    if (!is_graphmem_export((void *)gm, "cuGetProcAddress_v2")) {
        printf("FAIL: dlsym(libcuda, cuGetProcAddress_v2) is %s, not graphmem's: not preloaded?\n",
               symbol_of((void *)gm));
        return 1;
    }
    gm_resolve_v2_t mock = (gm_resolve_v2_t)mock_lookup("cuGetProcAddress_v2");
    check_resolver(gm, mock);
    check_v1_resolver((gm_resolve_v1_t)dlsym(libcuda, "cuGetProcAddress"),
                      (gm_resolve_v1_t)mock_lookup("cuGetProcAddress"));
    check_dlsym(libcuda);
    printf("%d checks, %d failures, %zu hooked names\n", checks, failures, GM_NHOOKED);
    return failures ? 1 : 0;
}
