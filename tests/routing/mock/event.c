/* Events and cross-stream waits. Nothing runs asynchronously in the mock, so every recorded
 * event is complete at once; what is checked is handle validity and capture legality. */
#include "mock.h"

#include <stdlib.h>

#define GM_MOCK_MAGIC_EVENT 0x45564e54u

typedef struct {
    unsigned magic;
    unsigned flags;
} gm_mock_event_t;

static gm_mock_event_t *event_check(CUevent h) {
    gm_mock_event_t *e = (gm_mock_event_t *)h;
    return e && e->magic == GM_MOCK_MAGIC_EVENT ? e : NULL;
}

GM_MOCK_API CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    GM_MOCK_CALL("cuEventCreate");
    if (!phEvent)
        return CUDA_ERROR_INVALID_VALUE;
    gm_mock_event_t *e = calloc(1, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = GM_MOCK_MAGIC_EVENT;
    e->flags = Flags;
    *phEvent = (CUevent)e;
    return CUDA_SUCCESS;
}

GM_MOCK_API CUresult cuEventDestroy_v2(CUevent hEvent) {
    GM_MOCK_CALL("cuEventDestroy_v2");
    gm_mock_event_t *e = event_check(hEvent);
    if (!e)
        return CUDA_ERROR_INVALID_HANDLE;
    e->magic = 0;
    free(e);
    return CUDA_SUCCESS;
}

static CUresult cuEventRecord_impl(CUevent hEvent, CUstream hStream) {
    (void)hStream;
    return event_check(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
GM_MOCK_PAIR(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream))

GM_MOCK_API CUresult cuEventQuery(CUevent hEvent) {
    GM_MOCK_CALL("cuEventQuery");
    return event_check(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GM_MOCK_API CUresult cuEventSynchronize(CUevent hEvent) {
    GM_MOCK_CALL("cuEventSynchronize");
    return event_check(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult cuStreamWaitEvent_impl(CUstream hStream, CUevent hEvent, unsigned int flags) {
    (void)hStream, (void)flags;
    return event_check(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
GM_MOCK_PAIR(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int flags),
             (hStream, hEvent, flags))
