/*
 * cw_kernels.h - what nvcc would generate for a .cu file, written by hand.
 *
 * Including this file in a program or library gives it:
 *   - a fat binary: a valid 16-byte fatbin header with no entries in section
 *     .nv_fatbin, and the __fatBinC_Wrapper_t pointing to it in section
 *     .nvFatBinSegment (where nvcc puts them);
 *   - host stub functions, one per kernel; CW_KERNEL(id) is the pointer that
 *     nvcc-generated code passes to cudaLaunchKernel;
 *   - a constructor that registers the fat binary and every stub with
 *     __cudaRegisterFatBinary / __cudaRegisterFunction /
 *     __cudaRegisterFatBinaryEnd, and an atexit hook that unregisters it.
 * The driver double derives each kernel's duration from its device name.
 */
#ifndef CW_KERNELS_H
#define CW_KERNELS_H

#include <stdlib.h>
#include "cw_cudart.h"

/* id, device name (the name the driver sees; the last one is C++-mangled).
 * A program with kernels of its own defines CW_KERNEL_LIST before including
 * this file (then only its kernels are registered, and the shared programs'
 * registrations and counters do not change). */
#ifndef CW_KERNEL_LIST
#define CW_KERNEL_LIST(K)                                                      \
    K(sleep_0us, "sleep_0us")                                                  \
    K(sleep_1us, "sleep_1us")                                                  \
    K(sleep_10us, "sleep_10us")                                                \
    K(sleep_100us, "sleep_100us")                                              \
    K(generic, "generic_kernel")                                               \
    K(hang, "hang")                                                            \
    K(mangled_sleep_5us, "_Z9sleep_5usPf")
#endif

/* Distinct bodies so the compiler cannot fold stubs into one address. */
static volatile int cw_stub_sink;
#define CW_STUB(id, name)                                                      \
    static __attribute__((noinline, used)) void cw_stub_##id(void)             \
    {                                                                          \
        cw_stub_sink = __LINE__ + (int)sizeof(name);                           \
    }
CW_KERNEL_LIST(CW_STUB)
#undef CW_STUB

#define CW_KERNEL(id) ((const void *)cw_stub_##id)

/* fatbin header: magic 0xBA55ED50, version 1, header size 16, fat size 0 */
static const unsigned long long cw_fatbin_data[2]
    __attribute__((section(".nv_fatbin"), aligned(8), used)) = {
        0x00100001ba55ed50ULL, 0
    };
static const cw_fatBinC_Wrapper_t cw_fatbin_wrapper
    __attribute__((section(".nvFatBinSegment"), aligned(8), used)) = {
        CW_FATBINC_MAGIC, 1, cw_fatbin_data, NULL
    };

static void **cw_fatbin_handle;

static void cw_unregister_fatbin(void)
{
    __cudaUnregisterFatBinary(cw_fatbin_handle);
}

__attribute__((constructor)) static void cw_register_fatbin(void)
{
    cw_fatbin_handle = __cudaRegisterFatBinary((void *)&cw_fatbin_wrapper);
#define CW_REG(id, name)                                                       \
    __cudaRegisterFunction(cw_fatbin_handle, (const char *)cw_stub_##id,       \
                           (char *)name, name, -1, NULL, NULL, NULL, NULL, NULL);
    CW_KERNEL_LIST(CW_REG)
#undef CW_REG
    __cudaRegisterFatBinaryEnd(cw_fatbin_handle);
    atexit(cw_unregister_fatbin);
}

/* Abort the program with a message if a runtime call fails. */
#define CHECK(call)                                                            \
    do {                                                                       \
        cudaError_t cw_e_ = (call);                                            \
        if (cw_e_ != cudaSuccess) {                                            \
            fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__, __LINE__, \
                    #call, cw_e_, cudaGetErrorString(cw_e_));                  \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* Launch kernel `k` with a 1x1x1 grid of 32 threads and one argument. */
static inline cudaError_t cw_launch(const void *k, cudaStream_t s)
{
    static int dummy;
    void *args[] = { &dummy };
    dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
    return cudaLaunchKernel(k, grid, block, args, 0, s);
}

#endif /* CW_KERNELS_H */
