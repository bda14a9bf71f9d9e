/*
 * nvtx_full_api.c - the NVTX half of nvtx_full: every entry point of the
 * CORE, CORE2, CUDA, CUDART and SYNC modules, through the real NVTX v3
 * headers (which include the real cuda.h and driver_types.h).
 */
#include <stdio.h>
#include <wchar.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <nvtx3/nvToolsExtSync.h>
#include <nvtx3/nvToolsExtPayload.h>

/* Calls per entry point, printed as "<name>=<n>". */
#define CW_NVTX_APIS(X)                                                        \
    X(nvtxMarkEx) X(nvtxMarkA) X(nvtxMarkW)                                    \
    X(nvtxRangeStartEx) X(nvtxRangeStartA) X(nvtxRangeStartW) X(nvtxRangeEnd)  \
    X(nvtxRangePushEx) X(nvtxRangePushA) X(nvtxRangePushW) X(nvtxRangePop)     \
    X(nvtxNameCategoryA) X(nvtxNameCategoryW)                                  \
    X(nvtxNameOsThreadA) X(nvtxNameOsThreadW)                                  \
    X(nvtxDomainMarkEx) X(nvtxDomainRangeStartEx) X(nvtxDomainRangeEnd)        \
    X(nvtxDomainRangePushEx) X(nvtxDomainRangePop)                             \
    X(nvtxDomainResourceCreate) X(nvtxDomainResourceDestroy)                   \
    X(nvtxDomainNameCategoryA) X(nvtxDomainNameCategoryW)                      \
    X(nvtxDomainRegisterStringA) X(nvtxDomainRegisterStringW)                  \
    X(nvtxDomainCreateA) X(nvtxDomainCreateW) X(nvtxDomainDestroy)             \
    X(nvtxInitialize)                                                          \
    X(nvtxNameCuDeviceA) X(nvtxNameCuDeviceW)                                  \
    X(nvtxNameCuContextA) X(nvtxNameCuContextW)                                \
    X(nvtxNameCuStreamA) X(nvtxNameCuStreamW)                                  \
    X(nvtxNameCuEventA) X(nvtxNameCuEventW)                                    \
    X(nvtxNameCudaDeviceA) X(nvtxNameCudaDeviceW)                              \
    X(nvtxNameCudaStreamA) X(nvtxNameCudaStreamW)                              \
    X(nvtxNameCudaEventA) X(nvtxNameCudaEventW)                                \
    X(nvtxDomainSyncUserCreate) X(nvtxDomainSyncUserDestroy)                   \
    X(nvtxDomainSyncUserAcquireStart) X(nvtxDomainSyncUserAcquireFailed)       \
    X(nvtxDomainSyncUserAcquireSuccess) X(nvtxDomainSyncUserReleasing)

#define CW_COUNTER(name) static long n_##name;
CW_NVTX_APIS(CW_COUNTER)
#define CALL(name, ...) (n_##name++, name(__VA_ARGS__))

static nvtxDomainHandle_t dom;

static nvtxEventAttributes_t attrs(const char *msg)
{
    nvtxEventAttributes_t a = { 0 };
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = msg;
    return a;
}

void cw_nvtx_begin(void *a, void *b, void *event)
{
    CALL(nvtxInitialize, NULL);
    dom = CALL(nvtxDomainCreateA, "cw_full");
    nvtxDomainHandle_t wdom = CALL(nvtxDomainCreateW, L"cw_full_wide");

    /* Resource names: stream a is named twice (the later name counts). */
    CALL(nvtxNameCuStreamW, (CUstream)a, L"cw_first_name");
    CALL(nvtxNameCudaStreamA, (cudaStream_t)a, "cw_named_stream");
    CALL(nvtxNameCuStreamA, (CUstream)b, "cw_cu_stream");
    CALL(nvtxNameCudaStreamW, (cudaStream_t)b, L"cw_wide_stream");
    CALL(nvtxNameCuEventA, (CUevent)event, "cw_cu_event");
    CALL(nvtxNameCuEventW, (CUevent)event, L"cw_cu_event_w");
    CALL(nvtxNameCudaEventA, (cudaEvent_t)event, "cw_event");
    CALL(nvtxNameCudaEventW, (cudaEvent_t)event, L"cw_event_w");
    CALL(nvtxNameCuDeviceA, 0, "cw_device");
    CALL(nvtxNameCuDeviceW, 1, L"cw_device_1");
    CALL(nvtxNameCudaDeviceA, 0, "cw_cuda_device");
    CALL(nvtxNameCudaDeviceW, 1, L"cw_cuda_device_1");
    CALL(nvtxNameCuContextA, (CUcontext)0x1000, "cw_context");
    CALL(nvtxNameCuContextW, (CUcontext)0x2000, L"cw_context_w");
    CALL(nvtxNameOsThreadA, 1, "cw_thread");
    CALL(nvtxNameOsThreadW, 2, L"cw_thread_w");
    CALL(nvtxNameCategoryA, 3, "cw_category");
    CALL(nvtxNameCategoryW, 4, L"cw_category_w");
    CALL(nvtxDomainNameCategoryA, dom, 3, "cw_domain_category");
    CALL(nvtxDomainNameCategoryW, wdom, 5, L"cw_domain_category_w");

    nvtxStringHandle_t reg = CALL(nvtxDomainRegisterStringA, dom, "cw_registered");
    CALL(nvtxDomainRegisterStringW, dom, L"cw_registered_w");

    nvtxResourceAttributes_t ra = { 0 };
    ra.version = NVTX_VERSION;
    ra.size = NVTX_RESOURCE_ATTRIB_STRUCT_SIZE;
    ra.identifierType = NVTX_RESOURCE_TYPE_GENERIC_POINTER;
    ra.identifier.pValue = &ra;
    ra.messageType = NVTX_MESSAGE_TYPE_ASCII;
    ra.message.ascii = "cw_resource";
    nvtxResourceHandle_t res = CALL(nvtxDomainResourceCreate, dom, &ra);
    CALL(nvtxDomainResourceDestroy, res);

    nvtxSyncUserAttributes_t sa = { 0 };
    sa.version = NVTX_VERSION;
    sa.size = NVTX_SYNCUSER_ATTRIB_STRUCT_SIZE;
    sa.messageType = NVTX_MESSAGE_TYPE_ASCII;
    sa.message.ascii = "cw_lock";
    nvtxSyncUser_t lock = CALL(nvtxDomainSyncUserCreate, dom, &sa);
    CALL(nvtxDomainSyncUserAcquireStart, lock);
    CALL(nvtxDomainSyncUserAcquireFailed, lock);
    CALL(nvtxDomainSyncUserAcquireStart, lock);
    CALL(nvtxDomainSyncUserAcquireSuccess, lock);
    CALL(nvtxDomainSyncUserReleasing, lock);
    CALL(nvtxDomainSyncUserDestroy, lock);

    /* Marks and ranges, with categories, colours and payloads. */
    nvtxEventAttributes_t m = attrs("cw_mark_double");
    m.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    m.payload.dValue = 2.5;
    CALL(nvtxMarkEx, &m);
    CALL(nvtxMarkA, "cw_mark_a");
    CALL(nvtxMarkW, L"cw_mark_w");
    nvtxEventAttributes_t dm = attrs("cw_domain_mark");
    dm.category = 3;
    dm.payloadType = NVTX_PAYLOAD_TYPE_INT32;
    dm.payload.iValue = -7;
    CALL(nvtxDomainMarkEx, dom, &dm);

    nvtxEventAttributes_t s = attrs("cw_start_ex");
    s.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    s.payload.llValue = -5;
    CALL(nvtxRangeEnd, CALL(nvtxRangeStartEx, &s));
    CALL(nvtxRangeEnd, CALL(nvtxRangeStartA, "cw_start_a"));
    CALL(nvtxRangeEnd, CALL(nvtxRangeStartW, L"cw_start_w"));
    nvtxEventAttributes_t ds = attrs("cw_domain_start");
    ds.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    ds.message.registered = reg;
    uint64_t blob[2] = { 1, 2 };
    nvtxPayloadData_t pd[1] = { { 0x1234, sizeof blob, blob } };
    ds.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    ds.reserved0 = 1;
    ds.payload.ullValue = (uint64_t)(uintptr_t)pd;
    CALL(nvtxDomainRangeEnd, dom, CALL(nvtxDomainRangeStartEx, dom, &ds));

    CALL(nvtxRangePushA, "cw_push_a");
    CALL(nvtxRangePop);
    CALL(nvtxRangePushW, L"cw_push_w");
    CALL(nvtxRangePop);
    nvtxEventAttributes_t dp = attrs("cw_domain_push");
    dp.payloadType = NVTX_PAYLOAD_TYPE_FLOAT;
    dp.payload.fValue = 0.5f;
    CALL(nvtxDomainRangePushEx, dom, &dp);
    CALL(nvtxDomainRangePop, dom);

    /* Left open around the launches (cw_nvtx_end pops it). */
    nvtxEventAttributes_t p = attrs("cw_payload_range");
    p.category = 3;
    p.colorType = NVTX_COLOR_ARGB;
    p.color = 0xff00aa00u;
    p.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    p.payload.ullValue = 42;
    CALL(nvtxRangePushEx, &p);
}

void cw_nvtx_end(void)
{
    CALL(nvtxRangePop);
    CALL(nvtxDomainDestroy, dom);
}

void cw_nvtx_print(void)
{
#define CW_PRINT(name) printf(#name "=%ld\n", n_##name);
    CW_NVTX_APIS(CW_PRINT)
}
