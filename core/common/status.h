/* Status codes of the engine. The shim maps each to the CUresult the driver would return; core/
 * never sees a CUDA type. GM_ERR_BACKEND means a backend call failed for a reason the driver
 * would not have produced (the backend keeps the raw code for the message). */
#ifndef GRAPHMEM_STATUS_H
#define GRAPHMEM_STATUS_H

typedef enum gm_status {
    GM_OK = 0,
    GM_ERR_INVALID_VALUE,  /* CUDA_ERROR_INVALID_VALUE */
    GM_ERR_OUT_OF_MEMORY,  /* CUDA_ERROR_OUT_OF_MEMORY */
    GM_ERR_NOT_SUPPORTED,  /* CUDA_ERROR_NOT_SUPPORTED */
    GM_ERR_INVALID_DEVICE, /* CUDA_ERROR_INVALID_DEVICE */
    GM_ERR_NOT_READY,      /* CUDA_ERROR_NOT_READY: a fence that has not completed yet */
    GM_ERR_BACKEND,        /* any other backend failure: internal, leads to pass-through */
    GM_ERR_DRIVER,         /* the driver call the engine made for the shim failed (its code) */
    GM_ERR_UPDATE_FAILURE, /* CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE */
} gm_status_t;

const char *gm_status_name(gm_status_t status);

#endif
