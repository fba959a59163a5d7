/* Default body of every symbol the 13.0 driver exports.
 *
 * Each is weak, so the hand-written entries in the other files replace it at link time; the rest
 * log their call and answer CUDA_ERROR_NOT_SUPPORTED (801), a code every caller must already
 * handle. This file cannot include cuda.h: the defaults take no arguments, whatever the real
 * prototype, which the x86-64 and aarch64 calling conventions make harmless. */
#include <stddef.h>

void gm_mock_log_unimplemented(const char *name, const void *caller);

#define GM_MOCK_NOT_SUPPORTED 801

#define GM_MOCK_SYM(name)                                                                          \
    __attribute__((weak, visibility("default"))) int name(void);                                   \
    int name(void) {                                                                               \
        gm_mock_log_unimplemented(#name, __builtin_return_address(0));                             \
        return GM_MOCK_NOT_SUPPORTED;                                                              \
    }
#include "mock_symbols.def"
#undef GM_MOCK_SYM
