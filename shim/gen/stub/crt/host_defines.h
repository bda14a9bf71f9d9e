/* hookgen's stand-in for nvcc's crt/host_defines.h (which the runtime wheel does not ship): the
 * attribute macros the API headers use, defined away so the declarations preprocess as plain C. */
#ifndef CW_HOOKGEN_HOST_DEFINES
#define CW_HOOKGEN_HOST_DEFINES
#define __host__
#define __device__
#define __global__
#define __shared__
#define __constant__
#define __managed__
#define __cudart_builtin__
#define __device_builtin__
#define __device_builtin_texture_type__
#define __device_builtin_surface_type__
#define __builtin_align__(a)
#define __align__(a)
#define __launch_bounds__(...)
#define __inline__ inline
#define __forceinline__ inline
#define __noinline__
#define __thread__
#define __CUDA_ALIGN__(a)
#define CUDARTAPI
#define CUDARTAPI_CDECL
#define CUDART_CB
#define __location__(a)
#define __specialization_static
#define __annotate__(a)
#define __no_return__
#define __cudart_builtin__
#endif
