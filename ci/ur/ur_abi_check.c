/*
 * ur_abi_check.c - compares ci/ur/ur_min.h with a real ur_api.h (UR 0.12).
 * Run by `make -C ci ur-abi-check UR_INC=DIR` (DIR holds ur_api.h; not in the
 * repository: the UR wheels ship no header, see ci/ur/README.md).
 *
 * Built twice:
 *   -DUR_ABI_REAL: the real header first, then ur_min.h, which then only
 *       redeclares its prototypes: any prototype that differs from the real
 *       one is a compile error (conflicting types);
 *   without it: ur_min.h alone.
 * Both builds print every constant, size, alignment and offset that
 * ur_prog.c relies on; the Makefile diffs the two outputs.
 */
#include <stdbool.h> /* the real header uses bool without including it */
#include <stddef.h>
#include <stdio.h>

#ifdef UR_ABI_REAL
#include <ur_api.h>
#endif
#include "ur_min.h"

#define C(x) printf("%s=%lld\n", #x, (long long)(x));
#define S(t) printf("sizeof(%s)=%zu align=%zu\n", #t, sizeof(t), _Alignof(t));
#define O(t, m) printf("offsetof(%s,%s)=%zu\n", #t, #m, offsetof(t, m));

int main(void) {
    /* ur_result_t */
    C(UR_RESULT_SUCCESS) C(UR_RESULT_ERROR_INVALID_OPERATION) C(UR_RESULT_ERROR_INVALID_QUEUE)
    C(UR_RESULT_ERROR_INVALID_VALUE) C(UR_RESULT_ERROR_INVALID_CONTEXT)
    C(UR_RESULT_ERROR_INVALID_PLATFORM) C(UR_RESULT_ERROR_INVALID_BINARY)
    C(UR_RESULT_ERROR_INVALID_PROGRAM) C(UR_RESULT_ERROR_INVALID_MEM_OBJECT)
    C(UR_RESULT_ERROR_INVALID_EVENT) C(UR_RESULT_ERROR_INVALID_WORK_GROUP_SIZE)
    C(UR_RESULT_ERROR_COMPILER_NOT_AVAILABLE) C(UR_RESULT_ERROR_DEVICE_NOT_FOUND)
    C(UR_RESULT_ERROR_INVALID_DEVICE) C(UR_RESULT_ERROR_DEVICE_LOST)
    C(UR_RESULT_ERROR_INVALID_WORK_DIMENSION) C(UR_RESULT_ERROR_INVALID_KERNEL)
    C(UR_RESULT_ERROR_INVALID_KERNEL_NAME) C(UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
    C(UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
    C(UR_RESULT_ERROR_MEM_OBJECT_ALLOCATION_FAILURE)
    C(UR_RESULT_ERROR_INVALID_PROGRAM_EXECUTABLE) C(UR_RESULT_ERROR_UNINITIALIZED)
    C(UR_RESULT_ERROR_OUT_OF_HOST_MEMORY) C(UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
    C(UR_RESULT_ERROR_OUT_OF_RESOURCES) C(UR_RESULT_ERROR_PROGRAM_BUILD_FAILURE)
    C(UR_RESULT_ERROR_UNSUPPORTED_VERSION) C(UR_RESULT_ERROR_UNSUPPORTED_FEATURE)
    C(UR_RESULT_ERROR_INVALID_ARGUMENT) C(UR_RESULT_ERROR_INVALID_NULL_HANDLE)
    C(UR_RESULT_ERROR_INVALID_NULL_POINTER) C(UR_RESULT_ERROR_INVALID_SIZE)
    C(UR_RESULT_ERROR_INVALID_ENUMERATION) C(UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
    C(UR_RESULT_ERROR_INVALID_NATIVE_BINARY) C(UR_RESULT_ERROR_ADAPTER_SPECIFIC)
    C(UR_RESULT_ERROR_LAYER_NOT_PRESENT) C(UR_RESULT_ERROR_IN_EVENT_LIST_EXEC_STATUS)
    C(UR_RESULT_ERROR_DEVICE_NOT_AVAILABLE) C(UR_RESULT_ERROR_UNKNOWN) C(UR_RESULT_FORCE_UINT32)

    /* other enums and flags */
    C(UR_BACKEND_UNKNOWN) C(UR_BACKEND_LEVEL_ZERO) C(UR_BACKEND_OPENCL) C(UR_BACKEND_CUDA)
    C(UR_BACKEND_HIP) C(UR_BACKEND_NATIVE_CPU) C(UR_BACKEND_OFFLOAD)
    C(UR_ADAPTER_INFO_BACKEND) C(UR_PLATFORM_INFO_NAME) C(UR_DEVICE_TYPE_ALL)
    C(UR_DEVICE_TYPE_CPU) C(UR_DEVICE_INFO_NAME) C(UR_MEM_FLAG_READ_WRITE)
    C(UR_PROGRAM_BUILD_INFO_LOG) C(UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES)
    C(UR_EXP_KERNEL_ARG_TYPE_VALUE) C(UR_EXP_KERNEL_ARG_TYPE_POINTER)
    C(UR_EXP_KERNEL_ARG_TYPE_MEM_OBJ) C(UR_EXP_KERNEL_ARG_TYPE_LOCAL)
    C(UR_EXP_KERNEL_ARG_TYPE_SAMPLER)

    /* types */
    S(ur_result_t) S(ur_backend_t) S(ur_adapter_info_t) S(ur_platform_info_t)
    S(ur_device_type_t) S(ur_device_info_t) S(ur_program_build_info_t) S(ur_structure_type_t)
    S(ur_exp_kernel_arg_type_t) S(ur_device_init_flags_t) S(ur_mem_flags_t)
    S(ur_native_handle_t) S(ur_loader_config_handle_t) S(ur_adapter_handle_t)
    S(ur_platform_handle_t) S(ur_device_handle_t) S(ur_context_handle_t) S(ur_event_handle_t)
    S(ur_program_handle_t) S(ur_kernel_handle_t) S(ur_queue_handle_t) S(ur_sampler_handle_t)
    S(ur_mem_handle_t)

    /* the struct passed to urEnqueueKernelLaunchWithArgsExp */
    S(ur_exp_kernel_arg_mem_obj_tuple_t)
    O(ur_exp_kernel_arg_mem_obj_tuple_t, hMem) O(ur_exp_kernel_arg_mem_obj_tuple_t, flags)
    S(ur_exp_kernel_arg_value_t)
    O(ur_exp_kernel_arg_value_t, value) O(ur_exp_kernel_arg_value_t, pointer)
    O(ur_exp_kernel_arg_value_t, memObjTuple) O(ur_exp_kernel_arg_value_t, sampler)
    S(ur_exp_kernel_arg_properties_t)
    O(ur_exp_kernel_arg_properties_t, stype) O(ur_exp_kernel_arg_properties_t, pNext)
    O(ur_exp_kernel_arg_properties_t, type) O(ur_exp_kernel_arg_properties_t, index)
    O(ur_exp_kernel_arg_properties_t, size) O(ur_exp_kernel_arg_properties_t, value)
    return 0;
}
