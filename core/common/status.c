#include "status.h"

const char *gm_status_name(gm_status_t status) {
    switch (status) {
    case GM_OK:
        return "ok";
    case GM_ERR_INVALID_VALUE:
        return "invalid value";
    case GM_ERR_OUT_OF_MEMORY:
        return "out of memory";
    case GM_ERR_NOT_SUPPORTED:
        return "not supported";
    case GM_ERR_INVALID_DEVICE:
        return "invalid device";
    case GM_ERR_NOT_READY:
        return "not ready";
    case GM_ERR_BACKEND:
        return "backend failure";
    case GM_ERR_DRIVER:
        return "the driver call failed";
    case GM_ERR_UPDATE_FAILURE:
        return "exec update refused";
    }
    return "unknown status";
}
