/*
 * graph_tree N
 *
 * An explicitly built CUDA graph with a child graph, through the driver
 * double (linked with -lcuda, no runtime).  The child graph C holds
 *   c0: kernel sleep_0us   (cuGraphAddKernelNode_v2, func = a CUfunction)
 *   c1: kernel sleep_10us  (cuGraphAddKernelNode_v2, func = NULL, kern = a
 *                           CUkernel from cuLibraryGetKernel), after c0;
 * the graph G holds
 *   n0: kernel sleep_1us   (cuGraphAddKernelNode, the v1 ABI)
 *   n1: child graph C      (cuGraphAddChildGraphNode), after n0
 *   n2: kernel sleep_1us   (cuGraphAddKernelNode_v2), after n1.
 * G is instantiated with cuGraphInstantiateWithParams (flag UPLOAD, upload
 * stream s), launched N times on s with cuGraphLaunch, and s is synchronized.
 *
 * Prints graph_launches=N, graph_nodes=3, child_graph_nodes=2 and the
 * expected executions per kernel name (sleep_1us=2N, sleep_0us=N,
 * sleep_10us=N), then the counters.  It makes no graph inspection calls.
 */
#include "cw_prog.h"
#include "cw_cuda.h"

#define DRV(call)                                                              \
    do {                                                                       \
        CUresult cw_r_ = (call);                                               \
        if (cw_r_ != CUDA_SUCCESS)                                             \
            CW_DIE("%s:%d: %s failed: %d", __FILE__, __LINE__, #call, cw_r_);  \
    } while (0)

static CUDA_KERNEL_NODE_PARAMS_v2 kparams(CUfunction f, CUkernel k)
{
    CUDA_KERNEL_NODE_PARAMS_v2 p = {
        .func = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
        .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1, .kern = k,
    };
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        CW_DIE("usage: graph_tree N");
    long n = cw_arg(argc, argv, 1, 0);
    static const unsigned long long image[2] = { 0x00100001ba55ed50ULL, 0 };

    DRV(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    DRV(cuDeviceGet(&dev, 0));
    DRV(cuDevicePrimaryCtxRetain(&ctx, dev));
    DRV(cuCtxSetCurrent(ctx));
    CUmodule mod;
    CUfunction f0, f1;
    DRV(cuModuleLoadData(&mod, image));
    DRV(cuModuleGetFunction(&f0, mod, "sleep_0us"));
    DRV(cuModuleGetFunction(&f1, mod, "sleep_1us"));
    CUlibrary lib;
    CUkernel k10;
    DRV(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    DRV(cuLibraryGetKernel(&k10, lib, "sleep_10us"));
    CUstream s;
    DRV(cuStreamCreate(&s, CU_STREAM_DEFAULT));

    CUgraph child, g;
    CUgraphNode c0, c1, n0, n1, n2;
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    DRV(cuGraphCreate(&child, 0));
    p = kparams(f0, NULL);
    DRV(cuGraphAddKernelNode_v2(&c0, child, NULL, 0, &p));
    p = kparams(NULL, k10);
    DRV(cuGraphAddKernelNode_v2(&c1, child, &c0, 1, &p));

    DRV(cuGraphCreate(&g, 0));
    CUDA_KERNEL_NODE_PARAMS_v1 p1 = {
        .func = f1, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
        .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1,
    };
    DRV(cuGraphAddKernelNode(&n0, g, NULL, 0, &p1));
    DRV(cuGraphAddChildGraphNode(&n1, g, &n0, 1, child));
    p = kparams(f1, NULL);
    DRV(cuGraphAddKernelNode_v2(&n2, g, &n1, 1, &p));

    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {
        .flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, .hUploadStream = s,
    };
    CUgraphExec x;
    DRV(cuGraphInstantiateWithParams(&x, g, &ip));
    if (ip.result_out != CUDA_GRAPH_INSTANTIATE_SUCCESS)
        CW_DIE("instantiate result_out=%d", (int)ip.result_out);
    for (long i = 0; i < n; i++)
        DRV(cuGraphLaunch(x, s));
    DRV(cuStreamSynchronize(s));

    DRV(cuGraphExecDestroy(x));
    DRV(cuGraphDestroy(g));
    DRV(cuGraphDestroy(child));
    DRV(cuStreamDestroy_v2(s));

    printf("graph_launches=%ld\n", n);
    printf("graph_nodes=3\n");
    printf("child_graph_nodes=2\n");
    printf("expect sleep_1us=%ld\n", 2 * n);
    printf("expect sleep_0us=%ld\n", n);
    printf("expect sleep_10us=%ld\n", n);
    cw_dump_counters();
    return 0;
}
