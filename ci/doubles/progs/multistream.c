/*
 * multistream [N]   (N = 20)
 *
 * Two non-blocking streams with a cross-stream dependency, through the
 * runtime double: the workload for testing device timing of several streams
 * at once (run it with CWD_TRUTH=<path> for the driver double's ground truth).
 * Each of N iterations does
 *   on A: cudaMemcpyAsync H2D of 1,000,000 bytes from pinned memory (100 us)
 *         sleep_200us
 *         cudaEventRecord(E, A)
 *   on B: sleep_300us
 *         cudaStreamWaitEvent(B, E)
 *         sleep_50us              (starts after A's sleep_200us has ended)
 *   cudaStreamSynchronize(B), cudaStreamSynchronize(A).
 * Then it captures sleep_20us and sleep_40us on A into a graph, instantiates
 * it, launches it twice on A and synchronizes A.
 *
 * Executed in all: N copies, N each of sleep_200us, sleep_300us and
 * sleep_50us, 2 each of sleep_20us and sleep_40us (3N+4 kernels).  Prints one
 * summary line, then the counters.  Every runtime call is checked; any
 * failure exits 1 with a message on stderr.
 *
 * Its kernels are its own: it defines CW_KERNEL_LIST before including
 * cw_kernels.h, so adding them changes no other program's registrations.
 */
#include "cw_prog.h"

#define CW_KERNEL_LIST(K)                                                      \
    K(sleep_200us, "sleep_200us")                                              \
    K(sleep_300us, "sleep_300us")                                              \
    K(sleep_50us, "sleep_50us")                                                \
    K(sleep_20us, "sleep_20us")                                                \
    K(sleep_40us, "sleep_40us")
#include "cw_kernels.h"

int main(int argc, char **argv)
{
    if (argc > 2)
        CW_DIE("usage: multistream [N]");
    long n = cw_arg(argc, argv, 1, 20);
    enum { COPY_BYTES = 1000000 };

    cudaStream_t a, b;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    cudaEvent_t e;
    CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    void *host = NULL, *dev = NULL;
    CHECK(cudaMallocHost(&host, COPY_BYTES));
    CHECK(cudaMalloc(&dev, COPY_BYTES));

    for (long i = 0; i < n; i++) {
        CHECK(cudaMemcpyAsync(dev, host, COPY_BYTES, cudaMemcpyHostToDevice, a));
        CHECK(cw_launch(CW_KERNEL(sleep_200us), a));
        CHECK(cudaEventRecord(e, a));
        CHECK(cw_launch(CW_KERNEL(sleep_300us), b));
        CHECK(cudaStreamWaitEvent(b, e, 0));
        CHECK(cw_launch(CW_KERNEL(sleep_50us), b));
        CHECK(cudaStreamSynchronize(b));
        CHECK(cudaStreamSynchronize(a));
    }

    CHECK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    CHECK(cw_launch(CW_KERNEL(sleep_20us), a));
    CHECK(cw_launch(CW_KERNEL(sleep_40us), a));
    cudaGraph_t g = NULL;
    CHECK(cudaStreamEndCapture(a, &g));
    cudaGraphExec_t x = NULL;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    CHECK(cudaGraphLaunch(x, a));
    CHECK(cudaGraphLaunch(x, a));
    CHECK(cudaStreamSynchronize(a));

    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(dev));
    CHECK(cudaFreeHost(host));
    CHECK(cudaEventDestroy(e));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaStreamDestroy(a));

    printf("multistream iterations=%ld memcpy_h2d=%ld sleep_200us=%ld sleep_300us=%ld "
           "sleep_50us=%ld graph_launches=2 sleep_20us=2 sleep_40us=2 kernels=%ld\n",
           n, n, n, n, n, 3 * n + 4);
    cw_dump_counters();
    return 0;
}
