/*
 * ur_min.h - minimal, self-written subset of the oneAPI Unified Runtime (UR)
 * C API used by ci/ur/ur_prog.c.
 *
 * This is NOT Intel's ur_api.h.  The UR wheels on PyPI ship no headers, so
 * every type, constant and prototype that the test program uses is declared
 * here by hand, each one checked against ur_api.h of UR 0.12.0 (the version of
 * libur_loader.so.0 in intel-cmplr-lib-ur 2026.2.0; symbol version
 * LIBUR_LOADER_0.12):
 *   - ur_result_t and every enum are plain C enums (int sized, values as in
 *     ur_api.h; only the constants the program uses are listed),
 *   - flag types (ur_device_init_flags_t, ur_mem_flags_t) are uint32_t,
 *   - handles are pointers to incomplete structs with the real tag names,
 *     ur_native_handle_t is uintptr_t,
 *   - the one struct passed by value to the runtime
 *     (ur_exp_kernel_arg_properties_t and its union) has the real member
 *     order and padding; the property structs the program always passes as
 *     NULL are left incomplete.
 * `make -C ci ur-abi-check UR_INC=DIR` compares it with a real ur_api.h
 * (ci/ur/ur_abi_check.c): every prototype is redeclared after the real header
 * (a mismatch is a compile error) and every constant, size and offset is
 * printed from both headers and diffed.
 *
 * UR 0.12 has no urKernelSetArg* and no urEnqueueKernelLaunch: arguments are
 * passed at launch time with urEnqueueKernelLaunchWithArgsExp.
 */
#ifndef UR_MIN_H
#define UR_MIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* With the real ur_api.h already included (the ABI check), only the
 * prototypes below are redeclared, against the real types. */
#ifndef UR_API_H_INCLUDED

#define UR_APICALL
#define UR_APIEXPORT __attribute__((visibility("default")))

typedef struct ur_loader_config_handle_t_ *ur_loader_config_handle_t;
typedef struct ur_adapter_handle_t_ *ur_adapter_handle_t;
typedef struct ur_platform_handle_t_ *ur_platform_handle_t;
typedef struct ur_device_handle_t_ *ur_device_handle_t;
typedef struct ur_context_handle_t_ *ur_context_handle_t;
typedef struct ur_event_handle_t_ *ur_event_handle_t;
typedef struct ur_program_handle_t_ *ur_program_handle_t;
typedef struct ur_kernel_handle_t_ *ur_kernel_handle_t;
typedef struct ur_queue_handle_t_ *ur_queue_handle_t;
typedef struct ur_sampler_handle_t_ *ur_sampler_handle_t;
typedef struct ur_mem_handle_t_ *ur_mem_handle_t;
typedef uintptr_t ur_native_handle_t;

/* Always passed as NULL by the program: incomplete here. */
typedef struct ur_context_properties_t ur_context_properties_t;
typedef struct ur_queue_properties_t ur_queue_properties_t;
typedef struct ur_buffer_properties_t ur_buffer_properties_t;
typedef struct ur_program_properties_t ur_program_properties_t;
typedef struct ur_kernel_launch_ext_properties_t ur_kernel_launch_ext_properties_t;

/* ur_result_t: the values the program names (ur_prog.c prints others as numbers). */
typedef enum ur_result_t {
    UR_RESULT_SUCCESS = 0,
    UR_RESULT_ERROR_INVALID_OPERATION = 1,
    UR_RESULT_ERROR_INVALID_QUEUE = 3,
    UR_RESULT_ERROR_INVALID_VALUE = 4,
    UR_RESULT_ERROR_INVALID_CONTEXT = 5,
    UR_RESULT_ERROR_INVALID_PLATFORM = 6,
    UR_RESULT_ERROR_INVALID_BINARY = 7,
    UR_RESULT_ERROR_INVALID_PROGRAM = 8,
    UR_RESULT_ERROR_INVALID_MEM_OBJECT = 11,
    UR_RESULT_ERROR_INVALID_EVENT = 12,
    UR_RESULT_ERROR_INVALID_WORK_GROUP_SIZE = 15,
    UR_RESULT_ERROR_COMPILER_NOT_AVAILABLE = 16,
    UR_RESULT_ERROR_DEVICE_NOT_FOUND = 18,
    UR_RESULT_ERROR_INVALID_DEVICE = 19,
    UR_RESULT_ERROR_DEVICE_LOST = 20,
    UR_RESULT_ERROR_INVALID_WORK_DIMENSION = 26,
    UR_RESULT_ERROR_INVALID_KERNEL = 28,
    UR_RESULT_ERROR_INVALID_KERNEL_NAME = 29,
    UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX = 30,
    UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE = 31,
    UR_RESULT_ERROR_MEM_OBJECT_ALLOCATION_FAILURE = 35,
    UR_RESULT_ERROR_INVALID_PROGRAM_EXECUTABLE = 36,
    UR_RESULT_ERROR_UNINITIALIZED = 37,
    UR_RESULT_ERROR_OUT_OF_HOST_MEMORY = 38,
    UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY = 39,
    UR_RESULT_ERROR_OUT_OF_RESOURCES = 40,
    UR_RESULT_ERROR_PROGRAM_BUILD_FAILURE = 41,
    UR_RESULT_ERROR_UNSUPPORTED_VERSION = 43,
    UR_RESULT_ERROR_UNSUPPORTED_FEATURE = 44,
    UR_RESULT_ERROR_INVALID_ARGUMENT = 45,
    UR_RESULT_ERROR_INVALID_NULL_HANDLE = 46,
    UR_RESULT_ERROR_INVALID_NULL_POINTER = 48,
    UR_RESULT_ERROR_INVALID_SIZE = 49,
    UR_RESULT_ERROR_INVALID_ENUMERATION = 53,
    UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION = 54,
    UR_RESULT_ERROR_INVALID_NATIVE_BINARY = 56,
    UR_RESULT_ERROR_ADAPTER_SPECIFIC = 66,
    UR_RESULT_ERROR_LAYER_NOT_PRESENT = 67,
    UR_RESULT_ERROR_IN_EVENT_LIST_EXEC_STATUS = 68,
    UR_RESULT_ERROR_DEVICE_NOT_AVAILABLE = 69,
    UR_RESULT_ERROR_UNKNOWN = 0x7ffffffe,
    UR_RESULT_FORCE_UINT32 = 0x7fffffff
} ur_result_t;

typedef uint32_t ur_device_init_flags_t; /* 0: all device types */

typedef enum ur_backend_t {
    UR_BACKEND_UNKNOWN = 0,
    UR_BACKEND_LEVEL_ZERO = 1,
    UR_BACKEND_OPENCL = 2,
    UR_BACKEND_CUDA = 3,
    UR_BACKEND_HIP = 4,
    UR_BACKEND_NATIVE_CPU = 5,
    UR_BACKEND_OFFLOAD = 0x100,
    UR_BACKEND_FORCE_UINT32 = 0x7fffffff
} ur_backend_t;

typedef enum ur_adapter_info_t {
    UR_ADAPTER_INFO_BACKEND = 0, /* ur_backend_t */
    UR_ADAPTER_INFO_FORCE_UINT32 = 0x7fffffff
} ur_adapter_info_t;

typedef enum ur_platform_info_t {
    UR_PLATFORM_INFO_NAME = 1, /* char[] */
    UR_PLATFORM_INFO_FORCE_UINT32 = 0x7fffffff
} ur_platform_info_t;

typedef enum ur_device_type_t {
    UR_DEVICE_TYPE_ALL = 2,
    UR_DEVICE_TYPE_CPU = 4,
    UR_DEVICE_TYPE_FORCE_UINT32 = 0x7fffffff
} ur_device_type_t;

typedef enum ur_device_info_t {
    UR_DEVICE_INFO_NAME = 66, /* char[] */
    UR_DEVICE_INFO_FORCE_UINT32 = 0x7fffffff
} ur_device_info_t;

typedef uint32_t ur_mem_flags_t;
#define UR_MEM_FLAG_READ_WRITE ((ur_mem_flags_t)1u << 0)

typedef enum ur_program_build_info_t {
    UR_PROGRAM_BUILD_INFO_LOG = 2, /* char[] */
    UR_PROGRAM_BUILD_INFO_FORCE_UINT32 = 0x7fffffff
} ur_program_build_info_t;

typedef enum ur_structure_type_t {
    UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES = 0x5000,
    UR_STRUCTURE_TYPE_FORCE_UINT32 = 0x7fffffff
} ur_structure_type_t;

typedef enum ur_exp_kernel_arg_type_t {
    UR_EXP_KERNEL_ARG_TYPE_VALUE = 0,
    UR_EXP_KERNEL_ARG_TYPE_POINTER = 1,
    UR_EXP_KERNEL_ARG_TYPE_MEM_OBJ = 2,
    UR_EXP_KERNEL_ARG_TYPE_LOCAL = 3,
    UR_EXP_KERNEL_ARG_TYPE_SAMPLER = 4,
    UR_EXP_KERNEL_ARG_TYPE_FORCE_UINT32 = 0x7fffffff
} ur_exp_kernel_arg_type_t;

typedef struct ur_exp_kernel_arg_mem_obj_tuple_t {
    ur_mem_handle_t hMem;
    ur_mem_flags_t flags;
} ur_exp_kernel_arg_mem_obj_tuple_t;

typedef union ur_exp_kernel_arg_value_t {
    const void *value;   /* UR_EXP_KERNEL_ARG_TYPE_VALUE: copied at launch */
    const void *pointer; /* UR_EXP_KERNEL_ARG_TYPE_POINTER (USM) */
    ur_exp_kernel_arg_mem_obj_tuple_t memObjTuple; /* UR_EXP_KERNEL_ARG_TYPE_MEM_OBJ */
    ur_sampler_handle_t sampler;
} ur_exp_kernel_arg_value_t;

typedef struct ur_exp_kernel_arg_properties_t {
    ur_structure_type_t stype; /* UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES */
    void *pNext;
    ur_exp_kernel_arg_type_t type;
    uint32_t index;
    size_t size; /* MEM_OBJ: sizeof(ur_mem_handle_t) */
    ur_exp_kernel_arg_value_t value;
} ur_exp_kernel_arg_properties_t;

#endif /* !UR_API_H_INCLUDED */

/* ---- loader ---------------------------------------------------------------- */
UR_APIEXPORT ur_result_t UR_APICALL urLoaderConfigCreate(ur_loader_config_handle_t *phLoaderConfig);
UR_APIEXPORT ur_result_t UR_APICALL urLoaderConfigRelease(ur_loader_config_handle_t hLoaderConfig);
UR_APIEXPORT ur_result_t UR_APICALL urLoaderInit(ur_device_init_flags_t device_flags,
                                                 ur_loader_config_handle_t hLoaderConfig);
UR_APIEXPORT ur_result_t UR_APICALL urLoaderTearDown(void);

/* ---- adapter, platform, device --------------------------------------------- */
UR_APIEXPORT ur_result_t UR_APICALL urAdapterGet(uint32_t NumEntries, ur_adapter_handle_t *phAdapters,
                                                 uint32_t *pNumAdapters);
UR_APIEXPORT ur_result_t UR_APICALL urAdapterRelease(ur_adapter_handle_t hAdapter);
UR_APIEXPORT ur_result_t UR_APICALL urAdapterGetLastError(ur_adapter_handle_t hAdapter,
                                                          const char **ppMessage, int32_t *pError);
UR_APIEXPORT ur_result_t UR_APICALL urAdapterGetInfo(ur_adapter_handle_t hAdapter,
                                                     ur_adapter_info_t propName, size_t propSize,
                                                     void *pPropValue, size_t *pPropSizeRet);
UR_APIEXPORT ur_result_t UR_APICALL urPlatformGet(ur_adapter_handle_t hAdapter, uint32_t NumEntries,
                                                  ur_platform_handle_t *phPlatforms,
                                                  uint32_t *pNumPlatforms);
UR_APIEXPORT ur_result_t UR_APICALL urPlatformGetInfo(ur_platform_handle_t hPlatform,
                                                      ur_platform_info_t propName, size_t propSize,
                                                      void *pPropValue, size_t *pPropSizeRet);
UR_APIEXPORT ur_result_t UR_APICALL urDeviceGet(ur_platform_handle_t hPlatform,
                                                ur_device_type_t DeviceType, uint32_t NumEntries,
                                                ur_device_handle_t *phDevices, uint32_t *pNumDevices);
UR_APIEXPORT ur_result_t UR_APICALL urDeviceGetInfo(ur_device_handle_t hDevice,
                                                    ur_device_info_t propName, size_t propSize,
                                                    void *pPropValue, size_t *pPropSizeRet);
UR_APIEXPORT ur_result_t UR_APICALL urDeviceGetNativeHandle(ur_device_handle_t hDevice,
                                                            ur_native_handle_t *phNativeDevice);

/* ---- context, queue, memory ------------------------------------------------ */
UR_APIEXPORT ur_result_t UR_APICALL urContextCreate(uint32_t DeviceCount,
                                                    const ur_device_handle_t *phDevices,
                                                    const ur_context_properties_t *pProperties,
                                                    ur_context_handle_t *phContext);
UR_APIEXPORT ur_result_t UR_APICALL urContextGetNativeHandle(ur_context_handle_t hContext,
                                                             ur_native_handle_t *phNativeContext);
UR_APIEXPORT ur_result_t UR_APICALL urContextRelease(ur_context_handle_t hContext);
UR_APIEXPORT ur_result_t UR_APICALL urQueueCreate(ur_context_handle_t hContext,
                                                  ur_device_handle_t hDevice,
                                                  const ur_queue_properties_t *pProperties,
                                                  ur_queue_handle_t *phQueue);
UR_APIEXPORT ur_result_t UR_APICALL urQueueFinish(ur_queue_handle_t hQueue);
UR_APIEXPORT ur_result_t UR_APICALL urQueueRelease(ur_queue_handle_t hQueue);
UR_APIEXPORT ur_result_t UR_APICALL urMemBufferCreate(ur_context_handle_t hContext,
                                                      ur_mem_flags_t flags, size_t size,
                                                      const ur_buffer_properties_t *pProperties,
                                                      ur_mem_handle_t *phBuffer);
UR_APIEXPORT ur_result_t UR_APICALL urMemRelease(ur_mem_handle_t hMem);

/* ---- program, kernel ------------------------------------------------------- */
UR_APIEXPORT ur_result_t UR_APICALL urProgramCreateWithBinary(
    ur_context_handle_t hContext, uint32_t numDevices, ur_device_handle_t *phDevices,
    size_t *pLengths, const uint8_t **ppBinaries, const ur_program_properties_t *pProperties,
    ur_program_handle_t *phProgram);
UR_APIEXPORT ur_result_t UR_APICALL urProgramBuild(ur_context_handle_t hContext,
                                                   ur_program_handle_t hProgram,
                                                   const char *pOptions);
UR_APIEXPORT ur_result_t UR_APICALL urProgramGetBuildInfo(ur_program_handle_t hProgram,
                                                          ur_device_handle_t hDevice,
                                                          ur_program_build_info_t propName,
                                                          size_t propSize, void *pPropValue,
                                                          size_t *pPropSizeRet);
UR_APIEXPORT ur_result_t UR_APICALL urProgramRelease(ur_program_handle_t hProgram);
UR_APIEXPORT ur_result_t UR_APICALL urKernelCreate(ur_program_handle_t hProgram,
                                                   const char *pKernelName,
                                                   ur_kernel_handle_t *phKernel);
UR_APIEXPORT ur_result_t UR_APICALL urKernelRelease(ur_kernel_handle_t hKernel);

/* ---- enqueue, events ------------------------------------------------------- */
UR_APIEXPORT ur_result_t UR_APICALL urEnqueueMemBufferFill(
    ur_queue_handle_t hQueue, ur_mem_handle_t hBuffer, const void *pPattern, size_t patternSize,
    size_t offset, size_t size, uint32_t numEventsInWaitList,
    const ur_event_handle_t *phEventWaitList, ur_event_handle_t *phEvent);
UR_APIEXPORT ur_result_t UR_APICALL urEnqueueMemBufferWrite(
    ur_queue_handle_t hQueue, ur_mem_handle_t hBuffer, bool blockingWrite, size_t offset,
    size_t size, const void *pSrc, uint32_t numEventsInWaitList,
    const ur_event_handle_t *phEventWaitList, ur_event_handle_t *phEvent);
UR_APIEXPORT ur_result_t UR_APICALL urEnqueueMemBufferRead(
    ur_queue_handle_t hQueue, ur_mem_handle_t hBuffer, bool blockingRead, size_t offset,
    size_t size, void *pDst, uint32_t numEventsInWaitList,
    const ur_event_handle_t *phEventWaitList, ur_event_handle_t *phEvent);
UR_APIEXPORT ur_result_t UR_APICALL urEnqueueKernelLaunchWithArgsExp(
    ur_queue_handle_t hQueue, ur_kernel_handle_t hKernel, uint32_t workDim,
    const size_t *pGlobalWorkOffset, const size_t *pGlobalWorkSize, const size_t *pLocalWorkSize,
    uint32_t numArgs, const ur_exp_kernel_arg_properties_t *pArgs,
    const ur_kernel_launch_ext_properties_t *launchPropList, uint32_t numEventsInWaitList,
    const ur_event_handle_t *phEventWaitList, ur_event_handle_t *phEvent);
UR_APIEXPORT ur_result_t UR_APICALL urEventWait(uint32_t numEvents,
                                                const ur_event_handle_t *phEventWaitList);
UR_APIEXPORT ur_result_t UR_APICALL urEventRelease(ur_event_handle_t hEvent);

#ifdef __cplusplus
}
#endif

#endif /* UR_MIN_H */
