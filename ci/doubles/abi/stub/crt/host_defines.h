/*
 * Stand-in for nvcc's crt/host_defines.h, for host-only C builds against the
 * headers of the nvidia-cuda-runtime wheel (which include it but do not ship
 * it): cupti_callbacks.h includes builtin_types.h -> device_types.h -> this.
 * Used by `make -C ci cupti-abi-check` and `make -C ci cupti-probe` only.
 * Every macro is the host-compiler meaning (empty, or a GCC attribute).
 */
#pragma once
#define __host__
#define __device__
#define __global__
#define __shared__
#define __constant__
#define __managed__
#define __device_builtin__
#define __device_builtin_texture_type__
#define __device_builtin_surface_type__
#define __cudart_builtin__
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(n) __align__(n)
#define __CUDA_ALIGN__(n) __align__(n)
#define CUDARTAPI
#define CUDARTAPI_CDECL
#define __location__(a) __attribute__((a))
#define __forceinline__ inline __attribute__((always_inline))
#define __inline__ inline
#define __no_return__ __attribute__((noreturn))
#define __noinline__ __attribute__((noinline))
#define __specialization_static
#define __thread__ __thread
#define __import__
#define __export__
#define __cdecl
#define __annotate__(a) __attribute__((a))
