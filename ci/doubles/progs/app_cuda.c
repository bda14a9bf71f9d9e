/*
 * libapp_cuda.so - stands in for a Python extension module: a shared
 * library linked against libcudart.so.13 that a host program dlopen()s with
 * RTLD_LOCAL, so neither it nor the runtime is in the global symbol scope.
 *
 * int app_run(int n): launches n kernels ("sleep_1us") on the legacy default
 * stream with cudaLaunchKernel, then cudaDeviceSynchronize.  Returns n, or
 * -1 on error (message on stderr).
 */
#include "cw_prog.h"
#include "cw_kernels.h"

__attribute__((visibility("default"))) int app_run(int n)
{
    for (int i = 0; i < n; i++) {
        cudaError_t e = cw_launch(CW_KERNEL(sleep_1us), NULL);
        if (e != cudaSuccess) {
            fprintf(stderr, "app_run: launch %d failed: %d\n", i, e);
            return -1;
        }
    }
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "app_run: cudaDeviceSynchronize failed: %d\n", e);
        return -1;
    }
    return n;
}
