/*
 * cupti_abi_check.c - `make -C ci cupti-abi-check`: checks at compile time
 * that ci/doubles/include/cw_cupti.h (and the CUPTI callback ids in
 * ci/doubles/cw_activity.h) match NVIDIA's CUPTI headers.  Never linked or
 * run: compiled with -fsyntax-only.
 *
 * 1. The real headers are included, then cw_cupti.h with every name prefixed
 *    cw_ (CWC(name) = cw_name): every record struct must have the same size,
 *    alignment, and offset and size of each member; every enum the same
 *    size; every constant the same value.
 * 2. cw_cupti.h's callback typedefs and prototypes are included again under
 *    the real names: the compiler rejects any that is not a compatible
 *    redeclaration of the real one (C11 allows repeating an identical
 *    typedef and a compatible prototype).
 *
 * Written from cw_cupti.h: when a struct, member or constant is added there,
 * add it here (the lists below are every one at the time of writing).
 */
#include <stddef.h>
#include <cupti_result.h>
#include <cupti_version.h>
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#define CWC(name) cw_##name
#include "cw_cupti.h"
#include "cw_activity.h"

#define SAME_TYPE(T)                                                           \
    _Static_assert(sizeof(T) == sizeof(cw_##T) && _Alignof(T) == _Alignof(cw_##T), \
                   "size/alignment of " #T)
#define SAME_FIELD(T, f)                                                       \
    _Static_assert(offsetof(T, f) == offsetof(cw_##T, f) &&                    \
                       sizeof(((T *)0)->f) == sizeof(((cw_##T *)0)->f),        \
                   #T "." #f)
#define SAME_CONST(c) _Static_assert((long long)(c) == (long long)(cw_##c), #c)

/* ---- 1a. types ---- */
SAME_TYPE(CUptiResult);
SAME_TYPE(CUpti_CallbackDomain);
SAME_TYPE(CUpti_ActivityKind);
SAME_TYPE(CUpti_ActivityFlag);
SAME_TYPE(CUpti_ActivityMemcpyKind);
SAME_TYPE(CUpti_ActivityMemoryKind);
SAME_TYPE(CUpti_ActivityPartitionedGlobalCacheConfig);
SAME_TYPE(CUpti_ChannelType);
SAME_TYPE(CUpti_ActivityLaunchType);
SAME_TYPE(CUpti_FuncShmemLimitConfig);
SAME_TYPE(CUpti_ExternalCorrelationKind);
SAME_TYPE(CUpti_Activity);
SAME_TYPE(CUpti_ActivityMemcpy6);
SAME_TYPE(CUpti_ActivityMemset4);
SAME_TYPE(CUpti_ActivityKernel10);
SAME_TYPE(CUpti_ActivityAPI);
SAME_TYPE(CUpti_ActivityExternalCorrelation);
SAME_TYPE(CUpti_CallbackId);
SAME_TYPE(CUpti_SubscriberHandle);
SAME_TYPE(CUcontext);
SAME_TYPE(CUdevice);
SAME_TYPE(CUpti_ApiCallbackSite);
SAME_TYPE(CUpti_runtime_api_trace_cbid);
SAME_TYPE(CUpti_CallbackData);
SAME_FIELD(CUpti_CallbackData, callbackSite);
SAME_FIELD(CUpti_CallbackData, functionName);
SAME_FIELD(CUpti_CallbackData, functionParams);
SAME_FIELD(CUpti_CallbackData, functionReturnValue);
SAME_FIELD(CUpti_CallbackData, symbolName);
SAME_FIELD(CUpti_CallbackData, context);
SAME_FIELD(CUpti_CallbackData, contextUid);
SAME_FIELD(CUpti_CallbackData, correlationData);
SAME_FIELD(CUpti_CallbackData, correlationId);
_Static_assert(sizeof(CUpti_CallbackData) == 72, "CUpti_CallbackData is 72 bytes (LP64)");

/* ---- 1b. records: every member ---- */
SAME_TYPE(CUpti_Activity);
SAME_FIELD(CUpti_Activity, kind);

SAME_TYPE(CUpti_ActivityMemcpy6);
SAME_FIELD(CUpti_ActivityMemcpy6, kind);
SAME_FIELD(CUpti_ActivityMemcpy6, copyKind);
SAME_FIELD(CUpti_ActivityMemcpy6, srcKind);
SAME_FIELD(CUpti_ActivityMemcpy6, dstKind);
SAME_FIELD(CUpti_ActivityMemcpy6, flags);
SAME_FIELD(CUpti_ActivityMemcpy6, bytes);
SAME_FIELD(CUpti_ActivityMemcpy6, start);
SAME_FIELD(CUpti_ActivityMemcpy6, end);
SAME_FIELD(CUpti_ActivityMemcpy6, deviceId);
SAME_FIELD(CUpti_ActivityMemcpy6, contextId);
SAME_FIELD(CUpti_ActivityMemcpy6, streamId);
SAME_FIELD(CUpti_ActivityMemcpy6, correlationId);
SAME_FIELD(CUpti_ActivityMemcpy6, runtimeCorrelationId);
SAME_FIELD(CUpti_ActivityMemcpy6, pad);
SAME_FIELD(CUpti_ActivityMemcpy6, reserved0);
SAME_FIELD(CUpti_ActivityMemcpy6, graphNodeId);
SAME_FIELD(CUpti_ActivityMemcpy6, graphId);
SAME_FIELD(CUpti_ActivityMemcpy6, channelID);
SAME_FIELD(CUpti_ActivityMemcpy6, channelType);
SAME_FIELD(CUpti_ActivityMemcpy6, isDeviceLaunched);
SAME_FIELD(CUpti_ActivityMemcpy6, pad2);
SAME_FIELD(CUpti_ActivityMemcpy6, copyCount);

SAME_TYPE(CUpti_ActivityMemset4);
SAME_FIELD(CUpti_ActivityMemset4, kind);
SAME_FIELD(CUpti_ActivityMemset4, value);
SAME_FIELD(CUpti_ActivityMemset4, bytes);
SAME_FIELD(CUpti_ActivityMemset4, start);
SAME_FIELD(CUpti_ActivityMemset4, end);
SAME_FIELD(CUpti_ActivityMemset4, deviceId);
SAME_FIELD(CUpti_ActivityMemset4, contextId);
SAME_FIELD(CUpti_ActivityMemset4, streamId);
SAME_FIELD(CUpti_ActivityMemset4, correlationId);
SAME_FIELD(CUpti_ActivityMemset4, flags);
SAME_FIELD(CUpti_ActivityMemset4, memoryKind);
SAME_FIELD(CUpti_ActivityMemset4, pad);
SAME_FIELD(CUpti_ActivityMemset4, reserved0);
SAME_FIELD(CUpti_ActivityMemset4, graphNodeId);
SAME_FIELD(CUpti_ActivityMemset4, graphId);
SAME_FIELD(CUpti_ActivityMemset4, channelID);
SAME_FIELD(CUpti_ActivityMemset4, channelType);
SAME_FIELD(CUpti_ActivityMemset4, isDeviceLaunched);
SAME_FIELD(CUpti_ActivityMemset4, pad2);

SAME_TYPE(CUpti_ActivityKernel10);
SAME_FIELD(CUpti_ActivityKernel10, kind);
SAME_FIELD(CUpti_ActivityKernel10, cacheConfig);
SAME_FIELD(CUpti_ActivityKernel10, sharedMemoryConfig);
SAME_FIELD(CUpti_ActivityKernel10, registersPerThread);
SAME_FIELD(CUpti_ActivityKernel10, partitionedGlobalCacheRequested);
SAME_FIELD(CUpti_ActivityKernel10, partitionedGlobalCacheExecuted);
SAME_FIELD(CUpti_ActivityKernel10, start);
SAME_FIELD(CUpti_ActivityKernel10, end);
SAME_FIELD(CUpti_ActivityKernel10, completed);
SAME_FIELD(CUpti_ActivityKernel10, deviceId);
SAME_FIELD(CUpti_ActivityKernel10, contextId);
SAME_FIELD(CUpti_ActivityKernel10, streamId);
SAME_FIELD(CUpti_ActivityKernel10, gridX);
SAME_FIELD(CUpti_ActivityKernel10, gridY);
SAME_FIELD(CUpti_ActivityKernel10, gridZ);
SAME_FIELD(CUpti_ActivityKernel10, blockX);
SAME_FIELD(CUpti_ActivityKernel10, blockY);
SAME_FIELD(CUpti_ActivityKernel10, blockZ);
SAME_FIELD(CUpti_ActivityKernel10, staticSharedMemory);
SAME_FIELD(CUpti_ActivityKernel10, dynamicSharedMemory);
SAME_FIELD(CUpti_ActivityKernel10, localMemoryPerThread);
SAME_FIELD(CUpti_ActivityKernel10, localMemoryTotal);
SAME_FIELD(CUpti_ActivityKernel10, correlationId);
SAME_FIELD(CUpti_ActivityKernel10, gridId);
SAME_FIELD(CUpti_ActivityKernel10, name);
SAME_FIELD(CUpti_ActivityKernel10, reserved0);
SAME_FIELD(CUpti_ActivityKernel10, queued);
SAME_FIELD(CUpti_ActivityKernel10, submitted);
SAME_FIELD(CUpti_ActivityKernel10, launchType);
SAME_FIELD(CUpti_ActivityKernel10, isSharedMemoryCarveoutRequested);
SAME_FIELD(CUpti_ActivityKernel10, sharedMemoryCarveoutRequested);
SAME_FIELD(CUpti_ActivityKernel10, padding);
SAME_FIELD(CUpti_ActivityKernel10, sharedMemoryExecuted);
SAME_FIELD(CUpti_ActivityKernel10, graphNodeId);
SAME_FIELD(CUpti_ActivityKernel10, shmemLimitConfig);
SAME_FIELD(CUpti_ActivityKernel10, graphId);
SAME_FIELD(CUpti_ActivityKernel10, pAccessPolicyWindow);
SAME_FIELD(CUpti_ActivityKernel10, channelID);
SAME_FIELD(CUpti_ActivityKernel10, channelType);
SAME_FIELD(CUpti_ActivityKernel10, clusterX);
SAME_FIELD(CUpti_ActivityKernel10, clusterY);
SAME_FIELD(CUpti_ActivityKernel10, clusterZ);
SAME_FIELD(CUpti_ActivityKernel10, clusterSchedulingPolicy);
SAME_FIELD(CUpti_ActivityKernel10, localMemoryTotal_v2);
SAME_FIELD(CUpti_ActivityKernel10, maxPotentialClusterSize);
SAME_FIELD(CUpti_ActivityKernel10, maxActiveClusters);
SAME_FIELD(CUpti_ActivityKernel10, isDeviceLaunched);
SAME_FIELD(CUpti_ActivityKernel10, padding3);
SAME_FIELD(CUpti_ActivityKernel10, cacheConfig.both); /* bit-fields: same declaration */

SAME_TYPE(CUpti_ActivityAPI);
SAME_FIELD(CUpti_ActivityAPI, kind);
SAME_FIELD(CUpti_ActivityAPI, cbid);
SAME_FIELD(CUpti_ActivityAPI, start);
SAME_FIELD(CUpti_ActivityAPI, end);
SAME_FIELD(CUpti_ActivityAPI, processId);
SAME_FIELD(CUpti_ActivityAPI, threadId);
SAME_FIELD(CUpti_ActivityAPI, correlationId);
SAME_FIELD(CUpti_ActivityAPI, returnValue);

SAME_TYPE(CUpti_ActivityExternalCorrelation);
SAME_FIELD(CUpti_ActivityExternalCorrelation, kind);
SAME_FIELD(CUpti_ActivityExternalCorrelation, externalKind);
SAME_FIELD(CUpti_ActivityExternalCorrelation, externalId);
SAME_FIELD(CUpti_ActivityExternalCorrelation, correlationId);
SAME_FIELD(CUpti_ActivityExternalCorrelation, reserved);

/* ---- 1c. constants ---- */
SAME_CONST(CUPTI_SUCCESS);
SAME_CONST(CUPTI_ERROR_INVALID_PARAMETER);
SAME_CONST(CUPTI_ERROR_INVALID_DEVICE);
SAME_CONST(CUPTI_ERROR_INVALID_CONTEXT);
SAME_CONST(CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID);
SAME_CONST(CUPTI_ERROR_INVALID_EVENT_ID);
SAME_CONST(CUPTI_ERROR_INVALID_EVENT_NAME);
SAME_CONST(CUPTI_ERROR_INVALID_OPERATION);
SAME_CONST(CUPTI_ERROR_OUT_OF_MEMORY);
SAME_CONST(CUPTI_ERROR_HARDWARE);
SAME_CONST(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT);
SAME_CONST(CUPTI_ERROR_API_NOT_IMPLEMENTED);
SAME_CONST(CUPTI_ERROR_MAX_LIMIT_REACHED);
SAME_CONST(CUPTI_ERROR_NOT_READY);
SAME_CONST(CUPTI_ERROR_NOT_COMPATIBLE);
SAME_CONST(CUPTI_ERROR_NOT_INITIALIZED);
SAME_CONST(CUPTI_ERROR_INVALID_METRIC_ID);
SAME_CONST(CUPTI_ERROR_INVALID_METRIC_NAME);
SAME_CONST(CUPTI_ERROR_QUEUE_EMPTY);
SAME_CONST(CUPTI_ERROR_INVALID_HANDLE);
SAME_CONST(CUPTI_ERROR_INVALID_STREAM);
SAME_CONST(CUPTI_ERROR_INVALID_KIND);
SAME_CONST(CUPTI_ERROR_INVALID_EVENT_VALUE);
SAME_CONST(CUPTI_ERROR_DISABLED);
SAME_CONST(CUPTI_ERROR_INVALID_MODULE);
SAME_CONST(CUPTI_ERROR_INVALID_METRIC_VALUE);
SAME_CONST(CUPTI_ERROR_HARDWARE_BUSY);
SAME_CONST(CUPTI_ERROR_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE);
SAME_CONST(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES);
SAME_CONST(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS);
SAME_CONST(CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE);
SAME_CONST(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
SAME_CONST(CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED);
SAME_CONST(CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE);
SAME_CONST(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES);
SAME_CONST(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED);
SAME_CONST(CUPTI_ERROR_INVALID_CHIP_NAME);
SAME_CONST(CUPTI_ERROR_UNKNOWN);
SAME_CONST(CUPTI_ERROR_FORCE_INT);
SAME_CONST(CUPTI_API_ENTER);
SAME_CONST(CUPTI_API_EXIT);
SAME_CONST(CUPTI_API_CBSITE_FORCE_INT);
SAME_CONST(CUPTI_RUNTIME_TRACE_CBID_INVALID);
SAME_CONST(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
SAME_CONST(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
SAME_CONST(CUPTI_RUNTIME_TRACE_CBID_SIZE);
SAME_CONST(CUPTI_RUNTIME_TRACE_CBID_FORCE_INT);
SAME_CONST(CUPTI_CB_DOMAIN_INVALID);
SAME_CONST(CUPTI_CB_DOMAIN_DRIVER_API);
SAME_CONST(CUPTI_CB_DOMAIN_RUNTIME_API);
SAME_CONST(CUPTI_CB_DOMAIN_RESOURCE);
SAME_CONST(CUPTI_CB_DOMAIN_SYNCHRONIZE);
SAME_CONST(CUPTI_CB_DOMAIN_NVTX);
SAME_CONST(CUPTI_CB_DOMAIN_STATE);
SAME_CONST(CUPTI_CB_DOMAIN_SIZE);
SAME_CONST(CUPTI_CB_DOMAIN_FORCE_INT);
SAME_CONST(CUPTI_ACTIVITY_KIND_INVALID);
SAME_CONST(CUPTI_ACTIVITY_KIND_MEMCPY);
SAME_CONST(CUPTI_ACTIVITY_KIND_MEMSET);
SAME_CONST(CUPTI_ACTIVITY_KIND_KERNEL);
SAME_CONST(CUPTI_ACTIVITY_KIND_DRIVER);
SAME_CONST(CUPTI_ACTIVITY_KIND_RUNTIME);
SAME_CONST(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
SAME_CONST(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
SAME_CONST(CUPTI_ACTIVITY_KIND_COUNT);
SAME_CONST(CUPTI_ACTIVITY_KIND_FORCE_INT);
SAME_CONST(CUPTI_ACTIVITY_FLAG_NONE);
SAME_CONST(CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
SAME_CONST(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
SAME_CONST(CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC);
SAME_CONST(CUPTI_ACTIVITY_FLAG_FORCE_INT);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_HTOA);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_ATOH);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_ATOA);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_ATOD);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_DTOA);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
SAME_CONST(CUPTI_ACTIVITY_MEMCPY_KIND_FORCE_INT);
SAME_CONST(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN);
SAME_CONST(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
SAME_CONST(CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
SAME_CONST(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
SAME_CONST(CUPTI_ACTIVITY_MEMORY_KIND_ARRAY);
SAME_CONST(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
SAME_CONST(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC);
SAME_CONST(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC);
SAME_CONST(CUPTI_ACTIVITY_MEMORY_KIND_FORCE_INT);
SAME_CONST(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_UNKNOWN);
SAME_CONST(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_NOT_SUPPORTED);
SAME_CONST(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_OFF);
SAME_CONST(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_ON);
SAME_CONST(CUPTI_ACTIVITY_PARTITIONED_GLOBAL_CACHE_CONFIG_FORCE_INT);
SAME_CONST(CUPTI_CHANNEL_TYPE_INVALID);
SAME_CONST(CUPTI_CHANNEL_TYPE_COMPUTE);
SAME_CONST(CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY);
SAME_CONST(CUPTI_CHANNEL_TYPE_DECOMP);
SAME_CONST(CUPTI_CHANNEL_TYPE_FORCE_INT);
SAME_CONST(CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR);
SAME_CONST(CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE);
SAME_CONST(CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE);
SAME_CONST(CUPTI_ACTIVITY_LAUNCH_TYPE_CBL_COMMANDLIST);
SAME_CONST(CUPTI_FUNC_SHMEM_LIMIT_DEFAULT);
SAME_CONST(CUPTI_FUNC_SHMEM_LIMIT_OPTIN);
SAME_CONST(CUPTI_FUNC_SHMEM_LIMIT_FORCE_INT);
SAME_CONST(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID);
SAME_CONST(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN);
SAME_CONST(CUPTI_EXTERNAL_CORRELATION_KIND_OPENACC);
SAME_CONST(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
SAME_CONST(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1);
SAME_CONST(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2);
SAME_CONST(CUPTI_EXTERNAL_CORRELATION_KIND_SIZE);
SAME_CONST(CUPTI_EXTERNAL_CORRELATION_KIND_FORCE_INT);
_Static_assert(CW_CUPTI_API_VERSION == CUPTI_API_VERSION, "CUPTI_API_VERSION");
_Static_assert(CUPTILP64 == 1, "LP64 layout (the pad members)");

/* ---- 1d. callback ids used by the doubles (cw_activity.h) ---- */
#define SAME_DRV(name, id)                                                     \
    _Static_assert((int)CWD_CBID_##name == (int)CUPTI_DRIVER_TRACE_CBID_##name && id == (int)CWD_CBID_##name, #name);
#define SAME_RT(name, id)                                                      \
    _Static_assert((int)CWD_CBID_##name == (int)CUPTI_RUNTIME_TRACE_CBID_##name && id == (int)CWD_CBID_##name, #name);
CWD_CBID_DRIVER(SAME_DRV)
CWD_CBID_RUNTIME(SAME_RT)

/* ---- 2. callback types and prototypes, under the real names ---- */
#undef CWC
#define CWC(name) name
#define CW_CUPTI_DECLS_ONLY
#include "cw_cupti.h"

