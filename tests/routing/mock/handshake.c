/* cudart's driver handshake (export table d4082055-...), needed before cudart accepts a driver.
 *
 * cudart calls slot 1 as (version, time, out[16]) for versions 13000..13002 and compares the
 * 13002 answer with its own HMAC-MD2 over a record it can also compute: the driver version, the
 * requested version, pid, pthread_self, the addresses of the CUDART_INTERFACE table, of this
 * table and of this slot, the time, then per device its UUID and PCI location. Learned by
 * tracing the bytes cudart 13.0 feeds its hash; ZLUDA documents the same scheme. The key is the
 * one cudart derives at run time; the mock must know it to be accepted, as the driver does. */
#include "mock.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static const unsigned char md2_s[256] = {
    41,  46,  67,  201, 162, 216, 124, 1,   61,  54,  84,  161, 236, 240, 6,   19,  98,  167, 5,
    243, 192, 199, 115, 140, 152, 147, 43,  217, 188, 76,  130, 202, 30,  155, 87,  60,  253, 212,
    224, 22,  103, 66,  111, 24,  138, 23,  229, 18,  190, 78,  196, 214, 218, 158, 222, 73,  160,
    251, 245, 142, 187, 47,  238, 122, 169, 104, 121, 145, 21,  178, 7,   63,  148, 194, 16,  137,
    11,  34,  95,  33,  128, 127, 93,  154, 90,  144, 50,  39,  53,  62,  204, 231, 191, 247, 151,
    3,   255, 25,  48,  179, 72,  165, 181, 209, 215, 94,  146, 42,  172, 86,  170, 198, 79,  184,
    56,  210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4,   241, 69,  157, 112, 89,  100,
    113, 135, 32,  134, 91,  207, 101, 230, 45,  168, 2,   27,  96,  37,  173, 174, 176, 185, 246,
    28,  70,  97,  105, 52,  64,  126, 15,  85,  71,  163, 35,  221, 81,  175, 58,  195, 92,  249,
    206, 186, 197, 234, 38,  44,  83,  13,  110, 133, 40,  132, 9,   211, 223, 205, 244, 65,  129,
    77,  82,  106, 220, 55,  200, 108, 193, 171, 250, 36,  225, 123, 8,   12,  189, 177, 74,  120,
    136, 149, 139, 227, 99,  232, 109, 233, 203, 213, 254, 59,  0,   29,  57,  242, 239, 183, 14,
    102, 88,  208, 228, 166, 119, 114, 248, 235, 117, 75,  10,  49,  68,  80,  180, 143, 237, 31,
    26,  219, 153, 141, 51,  159, 17,  131, 20,
};

static const unsigned char handshake_key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                                0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

/* MD2 (RFC 1319), streaming one byte at a time like cudart's own implementation. */
typedef struct {
    unsigned char x[48], checksum[16], n, last;
} gm_md2_t;

static void md2_block(gm_md2_t *c) {
    unsigned t = 0;
    for (int round = 0; round < 18; round++) {
        for (int k = 0; k < 48; k++)
            t = c->x[k] ^= md2_s[t];
        t = (t + (unsigned)round) & 0xff;
    }
}

static void md2_byte(gm_md2_t *c, unsigned char b) {
    c->x[16 + c->n] = b;
    c->x[32 + c->n] = c->x[c->n] ^ b;
    c->last = c->checksum[c->n] ^= md2_s[b ^ c->last];
    if (++c->n == 16) {
        c->n = 0;
        md2_block(c);
    }
}

static void md2_update(gm_md2_t *c, const void *data, size_t len) {
    for (size_t i = 0; i < len; i++)
        md2_byte(c, ((const unsigned char *)data)[i]);
}

static void md2_final(gm_md2_t *c, unsigned char out[16]) {
    unsigned char pad = (unsigned char)(16 - c->n);
    for (unsigned i = 0; i < pad; i++)
        md2_byte(c, pad);
    unsigned char checksum[16];
    memcpy(checksum, c->checksum, sizeof(checksum));
    md2_update(c, checksum, sizeof(checksum));
    memcpy(out, c->x, 16);
}

static void hmac_start(gm_md2_t *c, unsigned char pad) {
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < sizeof(handshake_key); i++)
        md2_byte(c, handshake_key[i] ^ pad);
}

static CUresult handshake_slot1(unsigned version, uint64_t when, unsigned char out[16]);

static const void *const handshake_table[3] = {
    (const void *)sizeof(handshake_table),
    (const void *)handshake_slot1,
    NULL,
};

const void *const *gm_mock_handshake_table(void) {
    return handshake_table;
}

static CUresult handshake_slot1(unsigned version, uint64_t when, unsigned char out[16]) {
    gm_mock_logf("export_slot handshake 1 version=%u", version);
    int driver = 0;
    cuDriverGetVersion(&driver);
    struct {
        uint32_t driver, version, pid, thread;
        uint64_t cudart_table, table, slot, when;
    } rec = {(uint32_t)driver,
             version,
             (uint32_t)getpid(),
             (uint32_t)(uintptr_t)pthread_self(),
             (uint64_t)(uintptr_t)gm_mock_cudart_table(),
             (uint64_t)(uintptr_t)handshake_table,
             (uint64_t)(uintptr_t)handshake_slot1,
             when};
    _Static_assert(sizeof(rec) == 48, "cudart hashes a packed 48-byte record");

    gm_md2_t c;
    hmac_start(&c, 0x36);
    md2_update(&c, &rec, sizeof(rec));
    int count = 0;
    cuDeviceGetCount(&count);
    for (CUdevice dev = 0; dev < count; dev++) {
        /* UUID, then PCI domain, bus, device: the mock reports 0 for domain and device, so the
         * order of those two is not pinned down by the trace. */
        CUuuid uuid;
        uint32_t pci[3] = {0, 0, 0};
        int bus = 0;
        cuDeviceGetUuid_v2(&uuid, dev);
        cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
        pci[1] = (uint32_t)bus;
        md2_update(&c, uuid.bytes, sizeof(uuid.bytes));
        md2_update(&c, pci, sizeof(pci));
    }
    unsigned char inner[16];
    md2_final(&c, inner);
    hmac_start(&c, 0x5c);
    md2_update(&c, inner, sizeof(inner));
    md2_final(&c, out);
    return CUDA_SUCCESS;
}
