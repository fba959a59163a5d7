/* Events and cross-stream waits. Nothing runs asynchronously in the mock, so every recorded
 * event is complete at once; what is checked is handle validity and capture legality. */
#include "mock.h"

#include <stdatomic.h>
#include <stdbool.h>
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

/* Records and waits on the legacy default stream (CU_STREAM_LEGACY, or NULL through an entry
 * without _ptsz), for tests of a call that must use only the stream it was handed
 * (gm_mock_legacy_stream_uses). */
static atomic_long legacy_uses;

GM_MOCK_API long gm_mock_legacy_stream_uses(void) {
    return atomic_load(&legacy_uses);
}

static void count_legacy(CUstream hStream, bool ptsz) {
    if (hStream == CU_STREAM_LEGACY || (hStream == NULL && !ptsz))
        atomic_fetch_add(&legacy_uses, 1);
}

static CUresult event_record(CUevent hEvent, CUstream hStream, bool ptsz) {
    count_legacy(hStream, ptsz);
    return event_check(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GM_MOCK_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
    GM_MOCK_CALL("cuEventRecord");
    return event_record(hEvent, hStream, false);
}

GM_MOCK_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
    GM_MOCK_CALL("cuEventRecord_ptsz");
    return event_record(hEvent, hStream, true);
}

GM_MOCK_API CUresult cuEventQuery(CUevent hEvent) {
    GM_MOCK_CALL("cuEventQuery");
    return event_check(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GM_MOCK_API CUresult cuEventSynchronize(CUevent hEvent) {
    GM_MOCK_CALL("cuEventSynchronize");
    return event_check(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult stream_wait_event(CUstream hStream, CUevent hEvent, bool ptsz) {
    count_legacy(hStream, ptsz);
    return event_check(hEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

GM_MOCK_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags) {
    GM_MOCK_CALL("cuStreamWaitEvent");
    (void)flags;
    return stream_wait_event(hStream, hEvent, false);
}

GM_MOCK_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int flags) {
    GM_MOCK_CALL("cuStreamWaitEvent_ptsz");
    (void)flags;
    return stream_wait_event(hStream, hEvent, true);
}
