/*
 * cw_cupti.h - minimal, self-written subset of the CUPTI 13.0 Activity API
 * ABI, used by the CUPTI double (ci/doubles/libcupti_double.c) and its test
 * program (ci/doubles/progs/cupti_consumer.c).
 *
 * This is NOT NVIDIA's cupti.h: CI builds without any CUDA package, so every
 * type, constant and record struct the double uses is copied here by hand,
 * field for field, from cupti_result.h, cupti_callbacks.h, cupti_activity.h,
 * cupti_common.h and cupti_version.h of CUPTI 13.0 (CUPTI_API_VERSION
 * 130001), LP64 (CUPTILP64 set: the `pad` members are present).
 * `make -C ci cupti-abi-check` compiles ci/doubles/abi/cupti_abi_check.c,
 * which includes the real headers and this one and checks with
 * _Static_assert the size, alignment and every field offset of each struct,
 * every constant's value, and (by redeclaring them under the real names) that
 * every callback type and function prototype below is compatible with the
 * real declaration.
 *
 * Naming: every name is written CWC(name).  Normally CWC(name) is `name`;
 * the ABI check defines CWC(name) as cw_##name first so that this header and
 * the real one can be compiled in one translation unit.  The section after
 * CW_CUPTI_DECLS (callback types and prototypes) can be included a second
 * time on its own, with CW_CUPTI_DECLS_ONLY defined.
 *
 * Record layout: like the real header, records are packed and 8-byte aligned
 * (cupti_common.h: PACKED_ALIGNMENT = __packed__, aligned(8)).  Members whose
 * real type is a pointer to a struct this subset does not need
 * (CUaccessPolicyWindow *) are declared `void *`.
 */
#ifndef CWC
#define CWC(name) name
#endif

#if !defined(CW_CUPTI_DECLS_ONLY) && !defined(CW_CUPTI_TYPES_DONE)
#define CW_CUPTI_TYPES_DONE

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CW_CUPTI_RECORD __attribute__((__packed__)) __attribute__((aligned(8)))

/* cupti_version.h */
#define CW_CUPTI_API_VERSION 130001

/* CUDA driver handles used in CUPTI prototypes (same tags as cuda.h). */
typedef struct CUctx_st *CWC(CUcontext);
typedef int CWC(CUdevice);

/* ---- cupti_result.h ------------------------------------------------------ */
typedef enum {
    CWC(CUPTI_SUCCESS) = 0,
    CWC(CUPTI_ERROR_INVALID_PARAMETER) = 1,
    CWC(CUPTI_ERROR_INVALID_DEVICE) = 2,
    CWC(CUPTI_ERROR_INVALID_CONTEXT) = 3,
    CWC(CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID) = 4,
    CWC(CUPTI_ERROR_INVALID_EVENT_ID) = 5,
    CWC(CUPTI_ERROR_INVALID_EVENT_NAME) = 6,
    CWC(CUPTI_ERROR_INVALID_OPERATION) = 7,
    CWC(CUPTI_ERROR_OUT_OF_MEMORY) = 8,
    CWC(CUPTI_ERROR_HARDWARE) = 9,
    CWC(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT) = 10,
    CWC(CUPTI_ERROR_API_NOT_IMPLEMENTED) = 11,
    CWC(CUPTI_ERROR_MAX_LIMIT_REACHED) = 12,
    CWC(CUPTI_ERROR_NOT_READY) = 13,
    CWC(CUPTI_ERROR_NOT_COMPATIBLE) = 14,
    CWC(CUPTI_ERROR_NOT_INITIALIZED) = 15,
    CWC(CUPTI_ERROR_INVALID_METRIC_ID) = 16,
    CWC(CUPTI_ERROR_INVALID_METRIC_NAME) = 17,
    CWC(CUPTI_ERROR_QUEUE_EMPTY) = 18,
    CWC(CUPTI_ERROR_INVALID_HANDLE) = 19,
    CWC(CUPTI_ERROR_INVALID_STREAM) = 20,
    CWC(CUPTI_ERROR_INVALID_KIND) = 21,
    CWC(CUPTI_ERROR_INVALID_EVENT_VALUE) = 22,
    CWC(CUPTI_ERROR_DISABLED) = 23,
    CWC(CUPTI_ERROR_INVALID_MODULE) = 24,
    CWC(CUPTI_ERROR_INVALID_METRIC_VALUE) = 25,
    CWC(CUPTI_ERROR_HARDWARE_BUSY) = 26,
    CWC(CUPTI_ERROR_NOT_SUPPORTED) = 27,
    CWC(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED) = 28,
    CWC(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE) = 29,
    CWC(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES) = 30,
    CWC(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS) = 31,
    CWC(CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED) = 32,
    CWC(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED) = 33,
    CWC(CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE) = 34,
    CWC(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) = 35,
    CWC(CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED) = 36,
    CWC(CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE) = 37,
    CWC(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED) = 38,
    CWC(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) = 39,
    CWC(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) = 40,
    CWC(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED) = 41,
    CWC(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED) = 42,
    CWC(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED) = 43,
    CWC(CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED) = 44,
    CWC(CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED) = 45,
    CWC(CUPTI_ERROR_INVALID_CHIP_NAME) = 46,
    CWC(CUPTI_ERROR_UNKNOWN) = 999,
    CWC(CUPTI_ERROR_FORCE_INT) = 0x7fffffff
} CWC(CUptiResult);

/* ---- cupti_callbacks.h --------------------------------------------------- */
typedef enum {
    CWC(CUPTI_CB_DOMAIN_INVALID) = 0,
    CWC(CUPTI_CB_DOMAIN_DRIVER_API) = 1,
    CWC(CUPTI_CB_DOMAIN_RUNTIME_API) = 2,
    CWC(CUPTI_CB_DOMAIN_RESOURCE) = 3,
    CWC(CUPTI_CB_DOMAIN_SYNCHRONIZE) = 4,
    CWC(CUPTI_CB_DOMAIN_NVTX) = 5,
    CWC(CUPTI_CB_DOMAIN_STATE) = 6,
    CWC(CUPTI_CB_DOMAIN_SIZE),
    CWC(CUPTI_CB_DOMAIN_FORCE_INT) = 0x7fffffff
} CWC(CUpti_CallbackDomain);

typedef uint32_t CWC(CUpti_CallbackId);
typedef struct CUpti_Subscriber_st *CWC(CUpti_SubscriberHandle);

typedef enum {
    CWC(CUPTI_API_ENTER) = 0,
    CWC(CUPTI_API_EXIT) = 1,
    CWC(CUPTI_API_CBSITE_FORCE_INT) = 0x7fffffff
} CWC(CUpti_ApiCallbackSite);

/* cbdata of CUPTI_CB_DOMAIN_DRIVER_API / RUNTIME_API callbacks: 72 bytes (LP64). */
typedef struct {
    CWC(CUpti_ApiCallbackSite) callbackSite;
    const char *functionName;
    const void *functionParams;
    void *functionReturnValue;
    const char *symbolName;
    CWC(CUcontext) context;
    uint32_t contextUid;
    uint64_t *correlationData;
    uint32_t correlationId;
} CWC(CUpti_CallbackData);

/* ---- cupti_runtime_cbid.h (the ids this subset names; the full list of the
 * ids the doubles report is CWD_CBID_RUNTIME in cw_activity.h) ------------- */
typedef enum {
    CWC(CUPTI_RUNTIME_TRACE_CBID_INVALID) = 0,
    CWC(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020) = 41,
    CWC(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) = 211,
    CWC(CUPTI_RUNTIME_TRACE_CBID_SIZE) = 523,
    CWC(CUPTI_RUNTIME_TRACE_CBID_FORCE_INT) = 0x7fffffff
} CWC(CUpti_runtime_api_trace_cbid);

/* ---- cupti_activity.h: enums --------------------------------------------- */
/* Only the kinds the double knows by name; every value 0..COUNT-1 is a
 * valid kind of the real API. */
typedef enum {
    CWC(CUPTI_ACTIVITY_KIND_INVALID) = 0,
    CWC(CUPTI_ACTIVITY_KIND_MEMCPY) = 1,
    CWC(CUPTI_ACTIVITY_KIND_MEMSET) = 2,
    CWC(CUPTI_ACTIVITY_KIND_KERNEL) = 3,
    CWC(CUPTI_ACTIVITY_KIND_DRIVER) = 4,
    CWC(CUPTI_ACTIVITY_KIND_RUNTIME) = 5,
    CWC(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) = 10,
    CWC(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) = 39,
    CWC(CUPTI_ACTIVITY_KIND_COUNT) = 56, /* after CONFIDENTIAL_COMPUTE_ROTATION (55) */
    CWC(CUPTI_ACTIVITY_KIND_FORCE_INT) = 0x7fffffff
} CWC(CUpti_ActivityKind);

/* CUpti_ActivityFlag: the real enum reuses bit values per record kind. */
typedef enum {
    CWC(CUPTI_ACTIVITY_FLAG_NONE) = 0,
    CWC(CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) = 1 << 0,
    CWC(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) = 1 << 0,
    CWC(CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) = 1 << 0,
    CWC(CUPTI_ACTIVITY_FLAG_FORCE_INT) = 0x7fffffff
} CWC(CUpti_ActivityFlag);

typedef enum {
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN) = 0,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD) = 1,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH) = 2,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_HTOA) = 3,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_ATOH) = 4,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_ATOA) = 5,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD) = 6,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_DTOA) = 7,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD) = 8,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH) = 9,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP) = 10,
    CWC(CUPTI_ACTIVITY_MEMCPY_KIND_FORCE_INT) = 0x7fffffff
} CWC(CUpti_ActivityMemcpyKind);

typedef enum {
    CWC(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN) = 0,
    CWC(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) = 1,
    CWC(CUPTI_ACTIVITY_MEMORY_KIND_PINNED) = 2,
    CWC(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) = 3,
    CWC(CUPTI_ACTIVITY_MEMORY_KIND_ARRAY) = 4,
    CWC(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED) = 5,
    CWC(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC) = 6,
    CWC(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC) = 7,
    CWC(CUPTI_ACTIVITY_MEMORY_KIND_FORCE_INT) = 0x7fffffff
} CWC(CUpti_ActivityMemoryKind);

typedef enum {
    CWC(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_UNKNOWN) = 0,
    CWC(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_NOT_SUPPORTED) = 1,
    CWC(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_OFF) = 2,
    CWC(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_ON) = 3,
    CWC(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_FORCE_INT) = 0x7fffffff
} CWC(CUpti_ActivityPartitionedGlobalCacheConfig);

typedef enum {
    CWC(CUPTI_CHANNEL_TYPE_INVALID) = 0,
    CWC(CUPTI_CHANNEL_TYPE_COMPUTE) = 1,
    CWC(CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY) = 2,
    CWC(CUPTI_CHANNEL_TYPE_DECOMP),
    CWC(CUPTI_CHANNEL_TYPE_FORCE_INT) = 0x7fffffff
} CWC(CUpti_ChannelType);

typedef enum {
    CWC(CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR) = 0,
    CWC(CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE) = 1,
    CWC(CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE) = 2,
    CWC(CUPTI_ACTIVITY_LAUNCH_TYPE_CBL_COMMANDLIST) = 3
} CWC(CUpti_ActivityLaunchType);

typedef enum {
    CWC(CUPTI_FUNC_SHMEM_LIMIT_DEFAULT) = 0x00,
    CWC(CUPTI_FUNC_SHMEM_LIMIT_OPTIN) = 0x01,
    CWC(CUPTI_FUNC_SHMEM_LIMIT_FORCE_INT) = 0x7fffffff
} CWC(CUpti_FuncShmemLimitConfig);

typedef enum {
    CWC(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID) = 0,
    CWC(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN) = 1,
    CWC(CUPTI_EXTERNAL_CORRELATION_KIND_OPENACC) = 2,
    CWC(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) = 3,
    CWC(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1) = 4,
    CWC(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) = 5,
    CWC(CUPTI_EXTERNAL_CORRELATION_KIND_SIZE),
    CWC(CUPTI_EXTERNAL_CORRELATION_KIND_FORCE_INT) = 0x7fffffff
} CWC(CUpti_ExternalCorrelationKind);

/* ---- cupti_activity.h: records (packed, 8-byte aligned) ------------------ */

/* Common header of every record. */
typedef struct CW_CUPTI_RECORD {
    CWC(CUpti_ActivityKind) kind;
} CWC(CUpti_Activity);

/* CUPTI_ACTIVITY_KIND_MEMCPY: 96 bytes. */
typedef struct CW_CUPTI_RECORD {
    CWC(CUpti_ActivityKind) kind;
    uint8_t copyKind;
    uint8_t srcKind;
    uint8_t dstKind;
    uint8_t flags;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t correlationId;
    uint32_t runtimeCorrelationId;
    uint32_t pad;
    void *reserved0;
    uint64_t graphNodeId;
    uint32_t graphId;
    uint32_t channelID;
    CWC(CUpti_ChannelType) channelType;
    uint8_t isDeviceLaunched;
    uint8_t pad2[3];
    uint64_t copyCount;
} CWC(CUpti_ActivityMemcpy6);

/* CUPTI_ACTIVITY_KIND_MEMSET: 88 bytes. */
typedef struct CW_CUPTI_RECORD {
    CWC(CUpti_ActivityKind) kind;
    uint32_t value;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    uint32_t correlationId;
    uint16_t flags;
    uint16_t memoryKind;
    uint32_t pad;
    void *reserved0;
    uint64_t graphNodeId;
    uint32_t graphId;
    uint32_t channelID;
    CWC(CUpti_ChannelType) channelType;
    uint8_t isDeviceLaunched;
    uint8_t pad2[3];
} CWC(CUpti_ActivityMemset4);

/* CUPTI_ACTIVITY_KIND_KERNEL and CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
 * 216 bytes. */
typedef struct CW_CUPTI_RECORD {
    CWC(CUpti_ActivityKind) kind;
    union {
        uint8_t both;
        struct {
            uint8_t requested : 4;
            uint8_t executed : 4;
        } config;
    } cacheConfig;
    uint8_t sharedMemoryConfig;
    uint16_t registersPerThread;
    CWC(CUpti_ActivityPartitionedGlobalCacheConfig) partitionedGlobalCacheRequested;
    CWC(CUpti_ActivityPartitionedGlobalCacheConfig) partitionedGlobalCacheExecuted;
    uint64_t start;
    uint64_t end;
    uint64_t completed;
    uint32_t deviceId;
    uint32_t contextId;
    uint32_t streamId;
    int32_t gridX;
    int32_t gridY;
    int32_t gridZ;
    int32_t blockX;
    int32_t blockY;
    int32_t blockZ;
    int32_t staticSharedMemory;
    int32_t dynamicSharedMemory;
    uint32_t localMemoryPerThread;
    uint32_t localMemoryTotal;
    uint32_t correlationId;
    int64_t gridId;
    const char *name;
    void *reserved0;
    uint64_t queued;
    uint64_t submitted;
    uint8_t launchType;
    uint8_t isSharedMemoryCarveoutRequested;
    uint8_t sharedMemoryCarveoutRequested;
    uint8_t padding;
    uint32_t sharedMemoryExecuted;
    uint64_t graphNodeId;
    CWC(CUpti_FuncShmemLimitConfig) shmemLimitConfig;
    uint32_t graphId;
    void *pAccessPolicyWindow; /* CUaccessPolicyWindow * */
    uint32_t channelID;
    CWC(CUpti_ChannelType) channelType;
    uint32_t clusterX;
    uint32_t clusterY;
    uint32_t clusterZ;
    uint32_t clusterSchedulingPolicy;
    uint64_t localMemoryTotal_v2;
    uint32_t maxPotentialClusterSize;
    uint32_t maxActiveClusters;
    uint8_t isDeviceLaunched;
    uint8_t padding3[7];
} CWC(CUpti_ActivityKernel10);

/* CUPTI_ACTIVITY_KIND_DRIVER and CUPTI_ACTIVITY_KIND_RUNTIME: 40 bytes. */
typedef struct CW_CUPTI_RECORD {
    CWC(CUpti_ActivityKind) kind;
    CWC(CUpti_CallbackId) cbid;
    uint64_t start;
    uint64_t end;
    uint32_t processId;
    uint32_t threadId;
    uint32_t correlationId;
    uint32_t returnValue;
} CWC(CUpti_ActivityAPI);

/* CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: 24 bytes. */
typedef struct CW_CUPTI_RECORD {
    CWC(CUpti_ActivityKind) kind;
    CWC(CUpti_ExternalCorrelationKind) externalKind;
    uint64_t externalId;
    uint32_t correlationId;
    uint32_t reserved;
} CWC(CUpti_ActivityExternalCorrelation);

#ifdef __cplusplus
}
#endif
#endif /* types */

/* ------------------------------------------------------------------------ */
/* CW_CUPTI_DECLS: callback types and the functions the double exports.      */
/* ------------------------------------------------------------------------ */
#if !defined(CW_CUPTI_DECLS_DONE) || defined(CW_CUPTI_DECLS_ONLY)
#ifndef CW_CUPTI_DECLS_ONLY
#define CW_CUPTI_DECLS_DONE
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*CWC(CUpti_CallbackFunc))(void *userdata, CWC(CUpti_CallbackDomain) domain,
                                         CWC(CUpti_CallbackId) cbid, const void *cbdata);
typedef void (*CWC(CUpti_BuffersCallbackRequestFunc))(uint8_t **buffer, size_t *size,
                                                       size_t *maxNumRecords);
typedef void (*CWC(CUpti_BuffersCallbackCompleteFunc))(CWC(CUcontext) context, uint32_t streamId,
                                                        uint8_t *buffer, size_t size,
                                                        size_t validSize);
typedef uint64_t (*CWC(CUpti_TimestampCallbackFunc))(void);

CWC(CUptiResult) CWC(cuptiGetVersion)(uint32_t *version);
CWC(CUptiResult) CWC(cuptiGetResultString)(CWC(CUptiResult) result, const char **str);
CWC(CUptiResult) CWC(cuptiSubscribe)(CWC(CUpti_SubscriberHandle) *subscriber,
                                     CWC(CUpti_CallbackFunc) callback, void *userdata);
CWC(CUptiResult) CWC(cuptiUnsubscribe)(CWC(CUpti_SubscriberHandle) subscriber);
CWC(CUptiResult) CWC(cuptiEnableCallback)(uint32_t enable, CWC(CUpti_SubscriberHandle) subscriber,
                                          CWC(CUpti_CallbackDomain) domain,
                                          CWC(CUpti_CallbackId) cbid);
CWC(CUptiResult) CWC(cuptiEnableDomain)(uint32_t enable, CWC(CUpti_SubscriberHandle) subscriber,
                                        CWC(CUpti_CallbackDomain) domain);
CWC(CUptiResult) CWC(cuptiGetTimestamp)(uint64_t *timestamp);
CWC(CUptiResult) CWC(cuptiActivityEnable)(CWC(CUpti_ActivityKind) kind);
CWC(CUptiResult) CWC(cuptiActivityDisable)(CWC(CUpti_ActivityKind) kind);
CWC(CUptiResult) CWC(cuptiActivityGetNumDroppedRecords)(CWC(CUcontext) context, uint32_t streamId,
                                                        size_t *dropped);
CWC(CUptiResult) CWC(cuptiActivityGetNextRecord)(uint8_t *buffer, size_t validBufferSizeBytes,
                                                 CWC(CUpti_Activity) **record);
CWC(CUptiResult) CWC(cuptiActivityRegisterCallbacks)(
    CWC(CUpti_BuffersCallbackRequestFunc) funcBufferRequested,
    CWC(CUpti_BuffersCallbackCompleteFunc) funcBufferCompleted);
CWC(CUptiResult) CWC(cuptiActivityFlushAll)(uint32_t flag);
CWC(CUptiResult) CWC(cuptiActivityPushExternalCorrelationId)(
    CWC(CUpti_ExternalCorrelationKind) kind, uint64_t id);
CWC(CUptiResult) CWC(cuptiActivityPopExternalCorrelationId)(
    CWC(CUpti_ExternalCorrelationKind) kind, uint64_t *lastId);
CWC(CUptiResult) CWC(cuptiActivityRegisterTimestampCallback)(
    CWC(CUpti_TimestampCallbackFunc) funcTimestamp);

#ifdef __cplusplus
}
#endif
#endif /* decls */
