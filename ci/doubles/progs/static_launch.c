/*
 * static_launch N
 *
 * A program as if built with a statically linked CUDA runtime (nvcc's
 * default -cudart static): every runtime call it makes goes through the
 * runtime double's cwr_static_<name> entry points (same implementation,
 * activity reporting and CUPTI callbacks as <name>, but names no tracer
 * hooks), so an LD_PRELOAD tracer sees no runtime API call at all, only
 * the driver calls the runtime makes and what CUPTI reports.  Kernel
 * registration (cw_kernels.h's constructor) uses the static entry points
 * too.
 *
 * Allocates 1 MiB of device memory, launches sleep_10us N times and makes one
 * 1 MiB host->device cudaMemcpyAsync on the legacy stream, synchronizes it,
 * and prints launches=N, memcpy_async=1 and the counters (the runtime
 * double's exported-API counters stay 0 for these calls: static entry points
 * are not counted).
 */
#define __cudaRegisterFatBinary cwr_static___cudaRegisterFatBinary
#define __cudaRegisterFatBinaryEnd cwr_static___cudaRegisterFatBinaryEnd
#define __cudaRegisterFunction cwr_static___cudaRegisterFunction
#define __cudaUnregisterFatBinary cwr_static___cudaUnregisterFatBinary
#define cudaMalloc cwr_static_cudaMalloc
#define cudaFree cwr_static_cudaFree
#define cudaMemcpyAsync cwr_static_cudaMemcpyAsync
#define cudaLaunchKernel cwr_static_cudaLaunchKernel
#define cudaStreamSynchronize cwr_static_cudaStreamSynchronize
#include "cw_prog.h"
#include "cw_kernels.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        CW_DIE("usage: static_launch N");
    long n = cw_arg(argc, argv, 1, 0);
    enum { COPY = 1 << 20 };
    void *dbuf = NULL;
    CHECK(cudaMalloc(&dbuf, COPY));
    void *hbuf = calloc(1, COPY);
    if (!hbuf)
        CW_DIE("out of memory");
    for (long i = 0; i < n; i++)
        CHECK(cw_launch(CW_KERNEL(sleep_10us), NULL));
    CHECK(cudaMemcpyAsync(dbuf, hbuf, COPY, cudaMemcpyHostToDevice, NULL));
    CHECK(cudaStreamSynchronize(NULL));
    CHECK(cudaFree(dbuf));
    free(hbuf);
    printf("launches=%ld\n", n);
    printf("memcpy_async=1\n");
    cw_dump_counters();
    return 0;
}
