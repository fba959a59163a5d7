/* cuGetExportTable: cudart's private door into the driver.
 *
 * Found by logging on cudart 13.0 (static and shared): it asks for three tables. The first
 * (f8cff951-...) is optional: CUDA_ERROR_NOT_FOUND is accepted. The other two are required and
 * only a few slots are used with this program's calls; their meaning follows the layout that
 * ZLUDA documented by reverse engineering (the "CUDART_INTERFACE" and
 * "TOOLS_RUNTIME_CALLBACK_HOOKS" tables). Slot 0 is the table's size in bytes. Slots cudart did
 * not use here log themselves and fail, so a new cudart needing more shows up in the log as
 * "export_slot TABLE N" instead of as silent misbehaviour. */
#include "mock.h"

#include <string.h>

#define GM_MOCK_TABLE_SLOTS 10

/* Fails loudly: an unknown slot is a gap in the mock, not a feature of the program. */
#define UNKNOWN_SLOT(table, i)                                                                     \
    static CUresult table##_slot##i(void) {                                                        \
        gm_mock_logf("export_slot %s %d unimplemented", #table, i);                                \
        return CUDA_ERROR_NOT_SUPPORTED;                                                           \
    }

/* CUDART_INTERFACE slot 2: retain the primary context of a device (cudaSetDevice's path). */
static CUresult cudart_primary_ctx(CUcontext *pctx, CUdevice dev) {
    gm_mock_logf("export_slot cudart 2");
    return cuDevicePrimaryCtxRetain(pctx, dev);
}

/* CUDART_INTERFACE slot 7: called with one word; ZLUDA treats it as a no-op. */
static CUresult cudart_slot7(size_t arg) {
    gm_mock_logf("export_slot cudart 7");
    (void)arg;
    return CUDA_SUCCESS;
}

UNKNOWN_SLOT(cudart, 1)
UNKNOWN_SLOT(cudart, 3)
UNKNOWN_SLOT(cudart, 4)
UNKNOWN_SLOT(cudart, 5)
UNKNOWN_SLOT(cudart, 6)
UNKNOWN_SLOT(cudart, 8)
UNKNOWN_SLOT(cudart, 9)

static const void *const cudart_table[GM_MOCK_TABLE_SLOTS] = {
    (const void *)sizeof(cudart_table), (const void *)cudart_slot1,
    (const void *)cudart_primary_ctx,   (const void *)cudart_slot3,
    (const void *)cudart_slot4,         (const void *)cudart_slot5,
    (const void *)cudart_slot6,         (const void *)cudart_slot7,
    (const void *)cudart_slot8,         (const void *)cudart_slot9,
};

/* TOOLS_RUNTIME_CALLBACK_HOOKS slots 2 and 6 hand cudart a buffer for tool callbacks; with no
 * tool attached it stays zeroed. */
static size_t hooks_space2[1024];
static unsigned char hooks_space6[14];

static CUresult hooks_slot2(void **ptr, size_t *size) {
    gm_mock_logf("export_slot hooks 2");
    *ptr = hooks_space2;
    *size = sizeof(hooks_space2) / sizeof(hooks_space2[0]);
    return CUDA_SUCCESS;
}

static CUresult hooks_slot6(void **ptr, size_t *size) {
    gm_mock_logf("export_slot hooks 6");
    *ptr = hooks_space6;
    *size = sizeof(hooks_space6);
    return CUDA_SUCCESS;
}

UNKNOWN_SLOT(hooks, 1)
UNKNOWN_SLOT(hooks, 3)
UNKNOWN_SLOT(hooks, 4)
UNKNOWN_SLOT(hooks, 5)

static const void *const hooks_table[7] = {
    (const void *)sizeof(hooks_table), (const void *)hooks_slot1, (const void *)hooks_slot2,
    (const void *)hooks_slot3,         (const void *)hooks_slot4, (const void *)hooks_slot5,
    (const void *)hooks_slot6,
};

/* TOOLS_TLS: cudart only reads the size. */
UNKNOWN_SLOT(tls, 1)
UNKNOWN_SLOT(tls, 2)
UNKNOWN_SLOT(tls, 3)

static const void *const tls_table[4] = {
    (const void *)sizeof(tls_table),
    (const void *)tls_slot1,
    (const void *)tls_slot2,
    (const void *)tls_slot3,
};

/* CONTEXT_LOCAL_STORAGE: cudart keeps its per-context state in the driver, keyed by (context,
 * key). This table has no size slot. A missing entry is CUDA_ERROR_INVALID_HANDLE, which cudart
 * takes as "not created yet". */
typedef void (*gm_mock_cls_dtor_t)(CUcontext, void *, void *);

static struct {
    CUcontext ctx;
    void *key;
    void *value;
} cls[16];

static CUcontext cls_ctx(CUcontext ctx) {
    if (!ctx)
        cuCtxGetCurrent(&ctx);
    return ctx;
}

static CUresult cls_put(CUcontext ctx, void *key, void *value, gm_mock_cls_dtor_t dtor) {
    gm_mock_logf("export_slot cls 0");
    (void)dtor; /* contexts are never destroyed in the mock */
    ctx = cls_ctx(ctx);
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    gm_mock_lock();
    for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++) {
        if (!cls[i].key || (cls[i].ctx == ctx && cls[i].key == key)) {
            cls[i].ctx = ctx;
            cls[i].key = key;
            cls[i].value = value;
            rc = CUDA_SUCCESS;
            break;
        }
    }
    gm_mock_unlock();
    return rc;
}

static CUresult cls_remove(void *key, void *arg) {
    gm_mock_logf("export_slot cls 1");
    (void)arg;
    gm_mock_lock();
    for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++) {
        if (cls[i].key == key)
            cls[i].key = NULL;
    }
    gm_mock_unlock();
    return CUDA_SUCCESS;
}

static CUresult cls_get(void **value, CUcontext ctx, void *key) {
    gm_mock_logf("export_slot cls 2");
    ctx = cls_ctx(ctx);
    CUresult rc = CUDA_ERROR_INVALID_HANDLE;
    gm_mock_lock();
    for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++) {
        if (cls[i].key && cls[i].ctx == ctx && cls[i].key == key) {
            *value = cls[i].value;
            rc = CUDA_SUCCESS;
            break;
        }
    }
    gm_mock_unlock();
    return rc;
}

UNKNOWN_SLOT(cls, 3)

static const void *const cls_table[4] = {
    (const void *)cls_put,
    (const void *)cls_remove,
    (const void *)cls_get,
    (const void *)cls_slot3,
};

/* Table 263e8860-...: slot 2 is asked about a context with two int outputs; cudart compares
 * the first with 1 and otherwise looks the context up among its devices' primary contexts. The
 * mock's only context is the primary one: answer 0, device 0. Slot 3 is a query whose failure
 * cudart tolerates. */
static CUresult t263_ctx_info(CUcontext ctx, int *kind, int *device) {
    gm_mock_logf("export_slot t263 2");
    (void)ctx;
    *kind = 0;
    *device = 0;
    return CUDA_SUCCESS;
}

UNKNOWN_SLOT(t263, 1)
/* Slot 3 is a yes/no query: cudart compares the result with 1 and carries on either way. */
static CUresult t263_query(void) {
    gm_mock_logf("export_slot t263 3");
    return CUDA_ERROR_NOT_SUPPORTED;
}
UNKNOWN_SLOT(t263, 4)
UNKNOWN_SLOT(t263, 5)
UNKNOWN_SLOT(t263, 6)
UNKNOWN_SLOT(t263, 7)

static const void *const t263_table[8] = {
    (const void *)sizeof(t263_table), (const void *)t263_slot1, (const void *)t263_ctx_info,
    (const void *)t263_query,         (const void *)t263_slot4, (const void *)t263_slot5,
    (const void *)t263_slot6,         (const void *)t263_slot7,
};

const void *const *gm_mock_cudart_table(void) {
    return cudart_table;
}

static const struct {
    unsigned char id[16];
    const void *const *table;
} tables[] = {
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
      0xf9},
     cudart_table},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a,
      0x66},
     hooks_table},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
      0xdc},
     tls_table},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95,
      0x93},
     cls_table},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
      0x7e},
     t263_table},
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1,
      0xf2},
     NULL},
};

GM_MOCK_API CUresult cuGetExportTable(const void **table, const CUuuid *id) {
    GM_MOCK_CALL("cuGetExportTable");
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    const unsigned char *b = (const unsigned char *)id->bytes;
    gm_mock_logf(
        "export_table id=%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
        b[14], b[15]);
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        if (memcmp(b, tables[i].id, sizeof(tables[i].id)) == 0) {
            *table = tables[i].table ? tables[i].table : gm_mock_handshake_table();
            return CUDA_SUCCESS;
        }
    }
    *table = NULL;
    return CUDA_ERROR_NOT_FOUND;
}
