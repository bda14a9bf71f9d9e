/*
 * hang
 *
 * Creates a stream, launches the kernel "hang" (never completes) on it,
 * prints "syncing" (flushed) and calls cudaStreamSynchronize on it, which
 * never returns.  For timeout / signal tests.
 */
#include "cw_prog.h"
#include "cw_kernels.h"

int main(void)
{
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cw_launch(CW_KERNEL(hang), s));
    printf("syncing\n");
    fflush(stdout);
    CHECK(cudaStreamSynchronize(s));
    printf("unreachable\n");
    return 1;
}
