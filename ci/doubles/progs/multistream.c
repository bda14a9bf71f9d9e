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
 * The kernels are registered here, the nvcc way, like cw_kernels.h does for
 * the shared kernels (which this program does not include, so that adding
 * kernels here changes no other program's registrations or counters).
 */
#include "cw_prog.h"
#include "cw_cudart.h"

#define MS_KERNEL_LIST(K)                                                      \
    K(sleep_200us, "sleep_200us")                                              \
    K(sleep_300us, "sleep_300us")                                              \
    K(sleep_50us, "sleep_50us")                                                \
    K(sleep_20us, "sleep_20us")                                                \
    K(sleep_40us, "sleep_40us")

/* Host stubs with distinct bodies, so none are folded into one address. */
static volatile int ms_stub_sink;
#define MS_STUB(id, name)                                                      \
    static __attribute__((noinline, used)) void ms_stub_##id(void)             \
    {                                                                          \
        ms_stub_sink = __LINE__ + (int)sizeof(name);                           \
    }
MS_KERNEL_LIST(MS_STUB)
#undef MS_STUB

#define MS_KERNEL(id) ((const void *)ms_stub_##id)

/* fatbin header: magic 0xBA55ED50, version 1, header size 16, fat size 0 */
static const unsigned long long ms_fatbin_data[2]
    __attribute__((section(".nv_fatbin"), aligned(8), used)) = {
        0x00100001ba55ed50ULL, 0
    };
static const cw_fatBinC_Wrapper_t ms_fatbin_wrapper
    __attribute__((section(".nvFatBinSegment"), aligned(8), used)) = {
        CW_FATBINC_MAGIC, 1, ms_fatbin_data, NULL
    };

static void **ms_fatbin_handle;

static void ms_unregister_fatbin(void)
{
    __cudaUnregisterFatBinary(ms_fatbin_handle);
}

__attribute__((constructor)) static void ms_register_fatbin(void)
{
    ms_fatbin_handle = __cudaRegisterFatBinary((void *)&ms_fatbin_wrapper);
#define MS_REG(id, name)                                                       \
    __cudaRegisterFunction(ms_fatbin_handle, (const char *)ms_stub_##id,       \
                           (char *)name, name, -1, NULL, NULL, NULL, NULL, NULL);
    MS_KERNEL_LIST(MS_REG)
#undef MS_REG
    __cudaRegisterFatBinaryEnd(ms_fatbin_handle);
    atexit(ms_unregister_fatbin);
}

#define CHECK(call)                                                            \
    do {                                                                       \
        cudaError_t ms_e_ = (call);                                            \
        if (ms_e_ != cudaSuccess)                                              \
            CW_DIE("%s:%d: %s failed: %d (%s)", __FILE__, __LINE__, #call,     \
                   ms_e_, cudaGetErrorString(ms_e_));                          \
    } while (0)

/* Launch kernel k with a 1x1x1 grid of 32 threads and one argument. */
static cudaError_t launch(const void *k, cudaStream_t s)
{
    static int dummy;
    void *args[] = { &dummy };
    dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
    return cudaLaunchKernel(k, grid, block, args, 0, s);
}

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
        CHECK(launch(MS_KERNEL(sleep_200us), a));
        CHECK(cudaEventRecord(e, a));
        CHECK(launch(MS_KERNEL(sleep_300us), b));
        CHECK(cudaStreamWaitEvent(b, e, 0));
        CHECK(launch(MS_KERNEL(sleep_50us), b));
        CHECK(cudaStreamSynchronize(b));
        CHECK(cudaStreamSynchronize(a));
    }

    CHECK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    CHECK(launch(MS_KERNEL(sleep_20us), a));
    CHECK(launch(MS_KERNEL(sleep_40us), a));
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
