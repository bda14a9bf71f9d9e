/*
 * graph_prog N
 *
 * A CUDA graph through the runtime double.  On a created (blocking) stream it
 * captures three kernel launches and a memset:
 *   1. sleep_1us  with cudaLaunchKernel (host stub: the runtime resolves a
 *      CUfunction with cuModuleGetFunction, then calls cuLaunchKernel);
 *   2. sleep_1us  the nvcc 13 way (__cudaPushCallConfiguration,
 *      __cudaGetKernel, __cudaPopCallConfiguration, __cudaLaunchKernel: the
 *      driver gets a CUkernel);
 *   3. sleep_10us with cudaLaunchKernel;
 *   4. cudaMemsetAsync of 4 KiB;
 * ends the capture, instantiates the graph once with cudaGraphInstantiate
 * (-> cuGraphInstantiateWithFlags), launches it N times with cudaGraphLaunch
 * (-> cuGraphLaunch), then launches sleep_10us twice directly with
 * cudaLaunchKernel, and synchronizes.  The captured launches do not execute;
 * each graph launch executes the three kernels once.
 *
 * Prints the captured operations, graph_launches=N, captured_launches=3,
 * direct_launches=2, and one "expect <kernel>=<executions>" line per kernel
 * name (sleep_1us=2N, sleep_10us=N+2), then the counters.  It makes no graph
 * inspection calls (cuGraphGetNodes, ...) itself.
 */
#include "cw_prog.h"
#include "cw_kernels.h"

/* Host stub body nvcc 13 generates for `__global__ void sleep_1us(int)`. */
static cudaError_t nvcc13_stub(const void *stub, int arg)
{
    static cudaKernel_t handle;
    if (!handle)
        CHECK(__cudaGetKernel(&handle, stub));
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    CHECK(__cudaPopCallConfiguration(&grid, &block, &smem, &stream));
    void *args[] = { &arg };
    return __cudaLaunchKernel(handle, grid, block, args, smem, stream);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        CW_DIE("usage: graph_prog N");
    long n = cw_arg(argc, argv, 1, 0);
    enum { MEMSET_BYTES = 4096 };

    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    void *buf = NULL;
    CHECK(cudaMalloc(&buf, MEMSET_BYTES));

    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cw_launch(CW_KERNEL(sleep_1us), s));
    printf("captured kernel=sleep_1us api=cudaLaunchKernel\n");
    dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
    if (__cudaPushCallConfiguration(grid, block, 0, s) != 0)
        CW_DIE("__cudaPushCallConfiguration failed");
    CHECK(nvcc13_stub(CW_KERNEL(sleep_1us), 1));
    printf("captured kernel=sleep_1us api=__cudaLaunchKernel\n");
    CHECK(cw_launch(CW_KERNEL(sleep_10us), s));
    printf("captured kernel=sleep_10us api=cudaLaunchKernel\n");
    CHECK(cudaMemsetAsync(buf, 0, MEMSET_BYTES, s));
    printf("captured memset bytes=%d api=cudaMemsetAsync\n", MEMSET_BYTES);
    cudaGraph_t g = NULL;
    CHECK(cudaStreamEndCapture(s, &g));

    cudaGraphExec_t x = NULL;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    for (long i = 0; i < n; i++)
        CHECK(cudaGraphLaunch(x, s));
    CHECK(cw_launch(CW_KERNEL(sleep_10us), s));
    CHECK(cw_launch(CW_KERNEL(sleep_10us), s));
    CHECK(cudaStreamSynchronize(s));

    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(buf));
    CHECK(cudaStreamDestroy(s));

    printf("graph_launches=%ld\n", n);
    printf("captured_launches=3\n");
    printf("direct_launches=2\n");
    printf("expect sleep_1us=%ld\n", 2 * n);
    printf("expect sleep_10us=%ld\n", n + 2);
    cw_dump_counters();
    return 0;
}
