/*
 * steps_prog [N [SLOW]]   (N = 8 steps; SLOW = N / 2, the index of the slow step)
 *
 * A training-loop shape with NVTX steps, for `causeway report --steps` and
 * `--gaps`.  Two non-blocking streams A and B, 1,000,000 pinned bytes (a
 * 100 us copy at the driver double's 10 GB/s).
 *
 *   "warmup" (level 0, once): sleep_100us on A, cudaStreamSynchronize(A)
 *   N times:
 *     "step" (level 0)
 *       "h2d":     cudaMemcpyAsync H2D of the 1,000,000 bytes on A
 *       "compute": sleep_200us on B, sleep_100us on A (after the copy);
 *                  in step SLOW also sleep_10000us on B (after sleep_200us):
 *                  10 ms, so that it stays the slowest on a loaded machine
 *       "wait":    cudaStreamSynchronize(A), cudaStreamSynchronize(B)
 *     "dataload" (level 0, between steps, N - 1 times): 20 ms of host sleep,
 *                no CUDA call (longer than the stalls a busy machine gives
 *                the doubles' stream threads)
 *
 * So per step: the copy overlaps B's sleep_200us, the device idles while
 * the host syncs and returns, and between steps every stream idles for at
 * least the 20 ms of "dataload".  Prints one summary line, then the counters;
 * any failing runtime call exits 1 with a message on stderr.
 *
 * Its kernels are its own: it defines CW_KERNEL_LIST before including
 * cw_kernels.h (as multistream does), so adding them changes no other
 * program's registrations.
 */
#include "cw_prog.h"

#include <time.h>
#include <nvtx3/nvToolsExt.h>

#define CW_KERNEL_LIST(K)                                                      \
    K(sleep_100us, "sleep_100us")                                              \
    K(sleep_200us, "sleep_200us")                                              \
    K(sleep_10000us, "sleep_10000us")
#include "cw_kernels.h"

static void host_sleep_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    if (argc > 3)
        CW_DIE("usage: steps_prog [N [SLOW]]");
    long n = cw_arg(argc, argv, 1, 8);
    long slow = cw_arg(argc, argv, 2, n / 2);
    enum { COPY_BYTES = 1000000 };

    cudaStream_t a, b;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    void *host = NULL, *dev = NULL;
    CHECK(cudaMallocHost(&host, COPY_BYTES));
    CHECK(cudaMalloc(&dev, COPY_BYTES));

    nvtxRangePushA("warmup");
    CHECK(cw_launch(CW_KERNEL(sleep_100us), a));
    CHECK(cudaStreamSynchronize(a));
    nvtxRangePop();

    for (long i = 0; i < n; i++) {
        nvtxRangePushA("step");

        nvtxRangePushA("h2d");
        CHECK(cudaMemcpyAsync(dev, host, COPY_BYTES, cudaMemcpyHostToDevice, a));
        nvtxRangePop();

        nvtxRangePushA("compute");
        CHECK(cw_launch(CW_KERNEL(sleep_200us), b));
        CHECK(cw_launch(CW_KERNEL(sleep_100us), a));
        if (i == slow)
            CHECK(cw_launch(CW_KERNEL(sleep_10000us), b));
        nvtxRangePop();

        nvtxRangePushA("wait");
        CHECK(cudaStreamSynchronize(a));
        CHECK(cudaStreamSynchronize(b));
        nvtxRangePop();

        nvtxRangePop();

        if (i + 1 < n) {
            nvtxRangePushA("dataload");
            host_sleep_us(20000);
            nvtxRangePop();
        }
    }

    CHECK(cudaFree(dev));
    CHECK(cudaFreeHost(host));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaStreamDestroy(a));

    printf("steps_prog steps=%ld slow=%ld memcpy_h2d=%ld sleep_100us=%ld sleep_200us=%ld "
           "sleep_10000us=%ld\n",
           n, slow, n, n + 1, n, slow < n ? 1L : 0L);
    cw_dump_counters();
    return 0;
}
