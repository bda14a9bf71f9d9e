/*
 * nvtx_full
 *
 * Calls every NVTX entry point of the CORE, CORE2, CUDA, CUDART and SYNC
 * modules (each a callback slot an injection fills) at least once, through
 * the real header-only NVTX v3 (nvtx_full_api.c: those headers need the real
 * cuda.h, which the doubles' headers cannot sit beside).  Two streams are
 * named through NVTX: A ends up "cw_named_stream" (named first through the
 * driver's W form, then the runtime's A form: the later name counts) and B
 * "cw_wide_stream"; a kernel runs on each inside a push range that carries
 * category 3 ("cw_category"), a colour and the u64 payload 42.  Prints how
 * many times it called each entry point ("<name>=<n>"), then the counters.
 */
#include "cw_prog.h"
#include "cw_kernels.h"

/* nvtx_full_api.c */
void cw_nvtx_begin(void *a, void *b, void *event);
void cw_nvtx_end(void);
void cw_nvtx_print(void);

int main(void)
{
    cudaStream_t a, b;
    cudaEvent_t e;
    CHECK(cudaStreamCreate(&a));
    CHECK(cudaStreamCreate(&b));
    CHECK(cudaEventCreate(&e));
    cw_nvtx_begin(a, b, e);
    CHECK(cw_launch(CW_KERNEL(sleep_1us), a));
    CHECK(cw_launch(CW_KERNEL(sleep_1us), b));
    cw_nvtx_end();
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventDestroy(e));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaStreamDestroy(a));
    printf("kernel_launches=2\n");
    cw_nvtx_print();
    cw_dump_counters();
    return 0;
}
