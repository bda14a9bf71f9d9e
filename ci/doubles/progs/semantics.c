/*
 * semantics
 *
 * Self-test of the doubles' simulation (not a shim scenario): error codes,
 * initialisation rules, stream/event/capture semantics, the proc-address
 * table, and the runtime's error handling.  Prints "ok <check>" per passing
 * check and exits non-zero at the first failure.  Timing checks only assert
 * lower bounds (or generous orderings) so that a loaded machine cannot make
 * them fail.
 */
#include "cw_prog.h"
#include "cw_cuda.h"
#include "cw_kernels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static void *g_drv;

static void *dsym(const char *name)
{
    void *p = dlsym(g_drv, name);
    if (!p)
        CW_DIE("dlsym(%s): %s", name, dlerror());
    return p;
}
/* Driver entry point by exported name, typed from cw_cuda.h. */
#define D(name) ((__typeof__(name) *)dsym(#name))

static int g_fail;
#define EXPECT(cond, what)                                                     \
    do {                                                                       \
        if (cond)                                                              \
            printf("ok %s\n", what);                                           \
        else {                                                                 \
            printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__);             \
            g_fail = 1;                                                        \
        }                                                                      \
    } while (0)
#define EXPECT_RC(call, want, what)                                            \
    do {                                                                       \
        int rc_ = (int)(call);                                                 \
        if (rc_ == (want))                                                     \
            printf("ok %s\n", what);                                           \
        else {                                                                 \
            printf("FAIL %s: got %d want %d (%s:%d)\n", what, rc_, (int)(want), \
                   __FILE__, __LINE__);                                        \
            g_fail = 1;                                                        \
        }                                                                      \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static CUfunction func(CUmodule m, const char *name)
{
    CUfunction f;
    if (D(cuModuleGetFunction)(&f, m, name))
        CW_DIE("cuModuleGetFunction(%s)", name);
    return f;
}

static CUresult launch(CUfunction f, CUstream s)
{
    return D(cuLaunchKernel)(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
}

static atomic_int g_host_calls;
static pthread_t g_main_thread;
static atomic_int g_host_on_main;
static void host_fn(void *arg)
{
    (void)arg;
    if (pthread_equal(pthread_self(), g_main_thread))
        g_host_on_main = 1;
    g_host_calls++;
}

/* A host function that blocks its stream until the test opens the gate:
 * makes "still busy" checks independent of machine load. */
static atomic_int g_gate;
static void gate_fn(void *arg)
{
    (void)arg;
    while (!g_gate) {
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
}

/* Per-thread default streams are independent: a long kernel on thread A's
 * per-thread stream does not make thread B's per-thread stream busy. */
static void *pt_thread(void *arg)
{
    int *result = arg;
    result[0] = D(cuStreamQuery_ptsz)(NULL);
    return NULL;
}

int main(void)
{
    g_main_thread = pthread_self();
    g_drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g_drv)
        CW_DIE("dlopen(libcuda.so.1): %s", dlerror());
    long (*count)(const char *) = (long (*)(const char *))dsym("cwd_count");

    /* ---- before cuInit ---- */
    int v = 0, n = 0;
    EXPECT_RC(D(cuDriverGetVersion)(&v), 0, "cuDriverGetVersion before cuInit");
    EXPECT(v == 13000, "driver version 13000");
    EXPECT_RC(D(cuDeviceGetCount)(&n), CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGetCount before cuInit");
    void *pfn = NULL;
    EXPECT_RC(D(cuGetProcAddress_v2)("cuInit", &pfn, 12000, 0, NULL), 0, "cuGetProcAddress before cuInit");
    EXPECT_RC(D(cuInit)(1), CUDA_ERROR_INVALID_VALUE, "cuInit(1)");
    EXPECT_RC(D(cuInit)(0), 0, "cuInit(0)");
    EXPECT_RC(D(cuDriverGetVersion)(NULL), CUDA_ERROR_INVALID_VALUE, "cuDriverGetVersion(NULL)");

    /* ---- bad input ---- */
    CUstream s, s2, snb;
    CUevent e1, e2, e3;
    EXPECT_RC(D(cuStreamCreate)(NULL, 0), CUDA_ERROR_INVALID_VALUE, "cuStreamCreate(NULL)");
    EXPECT_RC(D(cuEventCreate)(NULL, 0), CUDA_ERROR_INVALID_VALUE, "cuEventCreate(NULL)");
    EXPECT_RC(D(cuLaunchKernel)(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel(NULL func)");
    EXPECT_RC(D(cuEventRecord)(NULL, NULL), CUDA_ERROR_INVALID_HANDLE, "cuEventRecord(NULL event)");
    EXPECT_RC(D(cuEventQuery)(NULL), CUDA_ERROR_INVALID_HANDLE, "cuEventQuery(NULL)");
    EXPECT_RC(D(cuStreamDestroy_v2)(NULL), CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy(NULL)");
    EXPECT_RC(D(cuModuleGetFunction)(NULL, NULL, "x"), CUDA_ERROR_INVALID_VALUE, "cuModuleGetFunction(NULL out)");
    CUfunction fnull;
    EXPECT_RC(D(cuModuleGetFunction)(&fnull, NULL, "x"), CUDA_ERROR_INVALID_HANDLE, "cuModuleGetFunction(NULL module)");
    const char *str = NULL;
    EXPECT_RC(D(cuGetErrorString)(600, &str), 0, "cuGetErrorString(600)");
    EXPECT(str && strcmp(str, "device not ready") == 0, "error string of 600");
    EXPECT_RC(D(cuGetErrorName)(12345, &str), CUDA_ERROR_INVALID_VALUE, "cuGetErrorName(unknown)");
    CUdeviceptr bogus = 0x1234;
    EXPECT_RC(D(cuMemFree_v2)(bogus), CUDA_ERROR_INVALID_VALUE, "cuMemFree(unknown pointer)");
    CUdeviceptr dptr;
    EXPECT_RC(D(cuMemAlloc_v2)(&dptr, 0), CUDA_ERROR_INVALID_VALUE, "cuMemAlloc(0 bytes)");
    EXPECT_RC(D(cuMemAlloc_v2)(&dptr, 4096), 0, "cuMemAlloc(4096)");
    char host[4096];
    EXPECT_RC(D(cuMemcpyHtoD_v2)(dptr + 1, host, 4096), CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoD past the allocation");
    EXPECT_RC(D(cuMemcpyHtoD_v2)(dptr, host, 4096), 0, "cuMemcpyHtoD");
    EXPECT_RC(D(cuMemsetD8_v2)(dptr, 0, 4096), 0, "cuMemsetD8");
    EXPECT_RC(D(cuMemFree_v2)(dptr), 0, "cuMemFree");
    EXPECT_RC(D(cuMemFree_v2)(dptr), CUDA_ERROR_INVALID_VALUE, "cuMemFree twice");

    /* ---- modules and functions ---- */
    static const unsigned long long image[2] = { 0x00100001ba55ed50ULL, 0 };
    CUmodule mod;
    EXPECT_RC(D(cuModuleLoadData)(&mod, image), 0, "cuModuleLoadData");
    CUfunction f0 = func(mod, "sleep_0us"), f20ms = func(mod, "sleep_20000us");
    CUfunction f50ms = func(mod, "_Z14sleep_50000usPf");
    EXPECT(func(mod, "sleep_0us") == f0, "same name gives same CUfunction");
    const char *fname = NULL;
    EXPECT_RC(D(cuFuncGetName)(&fname, f50ms), 0, "cuFuncGetName");
    EXPECT(fname && strcmp(fname, "_Z14sleep_50000usPf") == 0, "cuFuncGetName returns the name");
    EXPECT_RC(launch(f0, NULL), 0, "launch on legacy stream");
    EXPECT_RC(D(cuLaunchKernel)(f0, 0, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE, "launch with zero grid");
    EXPECT_RC(D(cuLaunchKernel)(f0, 1, 1, 1, 1025, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE, "launch with 1025 threads");

    CUlibrary lib;
    CUkernel k;
    CUfunction kf;
    EXPECT_RC(D(cuLibraryLoadData)(&lib, image, NULL, NULL, 0, NULL, NULL, 0), 0, "cuLibraryLoadData");
    EXPECT_RC(D(cuLibraryGetKernel)(&k, lib, "sleep_0us"), 0, "cuLibraryGetKernel");
    EXPECT_RC(D(cuKernelGetFunction)(&kf, k), 0, "cuKernelGetFunction");
    EXPECT_RC(D(cuKernelGetName)(&fname, k), 0, "cuKernelGetName");
    EXPECT(strcmp(fname, "sleep_0us") == 0, "kernel name");
    EXPECT_RC(launch((CUfunction)k, NULL), 0, "launch a CUkernel as CUfunction");
    EXPECT_RC(launch(kf, NULL), 0, "launch cuKernelGetFunction's function");

    /* ---- streams, events, timing ---- */
    EXPECT_RC(D(cuStreamCreate)(&s, 0), 0, "cuStreamCreate");
    EXPECT_RC(D(cuStreamCreate)(&s2, 0), 0, "cuStreamCreate 2");
    EXPECT_RC(D(cuStreamCreate)(&snb, CU_STREAM_NON_BLOCKING), 0, "cuStreamCreate non-blocking");
    EXPECT_RC(D(cuStreamCreate)(&snb, 8), CUDA_ERROR_INVALID_VALUE, "cuStreamCreate bad flags");
    EXPECT_RC(D(cuEventCreate)(&e1, 0), 0, "cuEventCreate");
    EXPECT_RC(D(cuEventCreate)(&e2, 0), 0, "cuEventCreate 2");
    EXPECT_RC(D(cuEventCreate)(&e3, CU_EVENT_DISABLE_TIMING), 0, "cuEventCreate disable timing");
    EXPECT_RC(D(cuEventQuery)(e1), 0, "never-recorded event is complete");
    float ms = -1;
    EXPECT_RC(D(cuEventElapsedTime)(&ms, e1, e2), CUDA_ERROR_INVALID_HANDLE, "elapsed time of unrecorded events");

    g_gate = 0;
    EXPECT_RC(D(cuLaunchHostFunc)(s, gate_fn, NULL), 0, "gate on s");
    EXPECT_RC(D(cuEventRecord)(e1, s), 0, "cuEventRecord");
    EXPECT_RC(launch(f20ms, s), 0, "launch sleep_20000us");
    EXPECT_RC(D(cuEventRecord)(e2, s), 0, "cuEventRecord 2");
    EXPECT_RC(D(cuStreamQuery)(s), CUDA_ERROR_NOT_READY, "cuStreamQuery while busy");
    EXPECT_RC(D(cuEventQuery)(e2), CUDA_ERROR_NOT_READY, "cuEventQuery while pending");
    EXPECT_RC(D(cuEventElapsedTime)(&ms, e1, e2), CUDA_ERROR_NOT_READY, "elapsed time while pending");
    double t0 = now_ms();
    g_gate = 1;
    EXPECT_RC(D(cuEventSynchronize)(e2), 0, "cuEventSynchronize");
    EXPECT(now_ms() - t0 >= 19.5, "cuEventSynchronize waited for the 20 ms kernel");
    EXPECT_RC(D(cuEventElapsedTime)(&ms, e1, e2), 0, "cuEventElapsedTime");
    EXPECT(ms >= 19.5f, "elapsed time covers the 20 ms kernel");
    EXPECT_RC(D(cuEventElapsedTime_v2)(&ms, e1, e3), CUDA_ERROR_INVALID_HANDLE, "elapsed time with a timing-disabled event");
    EXPECT_RC(D(cuStreamQuery)(s), 0, "cuStreamQuery when idle");

    /* cuStreamWaitEvent: s2 waits for s's 50 ms kernel. */
    g_gate = 0;
    EXPECT_RC(D(cuLaunchHostFunc)(s, gate_fn, NULL), 0, "gate on s");
    EXPECT_RC(launch(f50ms, s), 0, "launch 50 ms kernel (mangled name)");
    EXPECT_RC(D(cuEventRecord)(e1, s), 0, "record after it");
    EXPECT_RC(D(cuStreamWaitEvent)(s2, e1, 0), 0, "cuStreamWaitEvent");
    EXPECT_RC(launch(f0, s2), 0, "launch on waiting stream");
    EXPECT_RC(D(cuEventRecord)(e2, s2), 0, "record on waiting stream");
    EXPECT_RC(D(cuStreamQuery)(s2), CUDA_ERROR_NOT_READY, "waiting stream is busy");
    t0 = now_ms();
    g_gate = 1;
    EXPECT_RC(D(cuStreamSynchronize)(s2), 0, "cuStreamSynchronize waiting stream");
    EXPECT(now_ms() - t0 >= 49.5, "waiting stream finished after the event");
    EXPECT_RC(D(cuEventElapsedTime)(&ms, e1, e2), 0, "elapsed e1->e2");
    EXPECT(ms >= 0, "e2 completed after e1");

    /* Legacy default stream waits for blocking streams; non-blocking
     * streams do not wait for the legacy stream. */
    g_gate = 0;
    EXPECT_RC(D(cuLaunchHostFunc)(s, gate_fn, NULL), 0, "gate on s");
    EXPECT_RC(launch(f50ms, s), 0, "50 ms kernel on blocking stream");
    EXPECT_RC(D(cuEventRecord)(e1, NULL), 0, "record on legacy stream");
    EXPECT_RC(D(cuEventRecord)(e2, snb), 0, "record on non-blocking stream");
    EXPECT_RC(D(cuEventSynchronize)(e2), 0, "sync non-blocking record");
    EXPECT_RC(D(cuEventQuery)(e1), CUDA_ERROR_NOT_READY, "legacy record waits for blocking stream");
    t0 = now_ms();
    g_gate = 1;
    EXPECT_RC(D(cuEventSynchronize)(e1), 0, "sync legacy record");
    EXPECT(now_ms() - t0 >= 49.5, "legacy stream waited for the blocking stream");
    EXPECT_RC(D(cuCtxSynchronize)(), 0, "cuCtxSynchronize");

    /* Host functions run on the stream's worker, in order. */
    g_host_calls = 0;
    EXPECT_RC(D(cuLaunchHostFunc)(s, host_fn, NULL), 0, "cuLaunchHostFunc");
    EXPECT_RC(D(cuStreamSynchronize)(s), 0, "sync after host func");
    EXPECT(g_host_calls == 1 && !g_host_on_main, "host func ran once, not on the caller");
    g_gate = 0;
    EXPECT_RC(D(cuLaunchHostFunc)(s, NULL, NULL), CUDA_ERROR_INVALID_VALUE, "cuLaunchHostFunc(NULL fn)");

    /* Per-thread default streams are per thread. */
    EXPECT_RC(D(cuLaunchHostFunc_ptsz)(NULL, gate_fn, NULL), 0, "gate on my per-thread stream");
    EXPECT_RC(D(cuStreamQuery_ptsz)(NULL), CUDA_ERROR_NOT_READY, "my per-thread stream is busy");
    EXPECT_RC(D(cuStreamQuery)(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY, "CU_STREAM_PER_THREAD is the same stream");
    pthread_t th;
    int other[1] = { -1 };
    pthread_create(&th, NULL, pt_thread, other);
    pthread_join(th, NULL);
    EXPECT(other[0] == 0, "another thread's per-thread stream is idle");
    g_gate = 1;
    EXPECT_RC(D(cuStreamSynchronize_ptsz)(NULL), 0, "cuStreamSynchronize_ptsz");

    /* ---- capture and graphs ---- */
    CUgraph g;
    CUgraphExec x;
    g_host_calls = 0;
    long launches_before = count("cuLaunchKernel");
    EXPECT_RC(D(cuStreamBeginCapture_v2)(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "capture the legacy stream");
    EXPECT_RC(D(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL), 0, "cuStreamBeginCapture_v2");
    EXPECT_RC(D(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE, "capture twice");
    EXPECT_RC(launch(f50ms, s), 0, "captured launch 1");
    EXPECT_RC(launch(f0, s), 0, "captured launch 2");
    EXPECT_RC(D(cuLaunchHostFunc)(s, host_fn, NULL), 0, "captured host func");
    EXPECT(g_host_calls == 0, "captured work is not executed");
    EXPECT_RC(D(cuStreamEndCapture)(s, &g), 0, "cuStreamEndCapture");
    EXPECT_RC(D(cuStreamEndCapture)(s, &g), CUDA_ERROR_ILLEGAL_STATE, "end capture twice");
    EXPECT_RC(D(cuGraphInstantiateWithFlags)(&x, g, 0), 0, "cuGraphInstantiateWithFlags");
    t0 = now_ms();
    EXPECT_RC(D(cuGraphLaunch)(x, s), 0, "cuGraphLaunch 1");
    EXPECT_RC(D(cuGraphLaunch)(x, s), 0, "cuGraphLaunch 2");
    EXPECT_RC(D(cuStreamSynchronize)(s), 0, "sync graph launches");
    EXPECT(now_ms() - t0 >= 99 && g_host_calls == 2, "graph nodes executed on each launch");
    EXPECT(count("cuLaunchKernel") == launches_before + 2, "graph launches are not kernel launches");
    EXPECT_RC(D(cuGraphExecDestroy)(x), 0, "cuGraphExecDestroy");
    EXPECT_RC(D(cuGraphLaunch)(x, s), CUDA_ERROR_INVALID_HANDLE, "launch destroyed exec");
    EXPECT_RC(D(cuGraphDestroy)(g), 0, "cuGraphDestroy");
    EXPECT_RC(D(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_RELAXED), 0, "capture again");
    EXPECT_RC(D(cuStreamSynchronize)(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "sync while capturing");
    EXPECT_RC(D(cuStreamEndCapture)(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "capture was invalidated");
    EXPECT(g == NULL, "invalidated capture yields no graph");

    /* ---- graph nodes: inspection and explicit construction ---- */
    {
        CUfunction f1 = func(mod, "sleep_1us"), k10f;
        CUkernel k10;
        const char *nm = NULL;
        EXPECT_RC(D(cuLibraryGetKernel)(&k10, lib, "sleep_10us"), 0, "cuLibraryGetKernel sleep_10us");
        EXPECT_RC(D(cuKernelGetFunction)(&k10f, k10), 0, "its CUfunction");
        CUdeviceptr mp;
        EXPECT_RC(D(cuMemAlloc_v2)(&mp, 4096), 0, "cuMemAlloc for a memset node");
        EXPECT_RC(D(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL), 0, "capture for inspection");
        EXPECT_RC(launch(f1, s), 0, "captured CUfunction launch");
        EXPECT_RC(D(cuLaunchKernel)((CUfunction)k10, 2, 1, 1, 64, 1, 1, 128, s, NULL, NULL), 0, "captured CUkernel launch");
        EXPECT_RC(D(cuMemsetD8Async)(mp, 0, 4096, s), 0, "captured memset");
        EXPECT_RC(D(cuLaunchHostFunc)(s, host_fn, NULL), 0, "captured host func (2)");
        EXPECT_RC(D(cuStreamEndCapture)(s, &g), 0, "end capture for inspection");
        size_t nn = 0;
        EXPECT_RC(D(cuGraphGetNodes)(g, NULL, &nn), 0, "cuGraphGetNodes(count)");
        EXPECT(nn == 4, "4 captured nodes");
        CUgraphNode nodes[6];
        memset(nodes, 0x55, sizeof nodes);
        nn = 6;
        EXPECT_RC(D(cuGraphGetNodes)(g, nodes, &nn), 0, "cuGraphGetNodes(6)");
        EXPECT(nn == 4 && nodes[3] && !nodes[4] && !nodes[5], "extra entries NULL, count returned");
        CUgraphNode two[2];
        nn = 2;
        EXPECT_RC(D(cuGraphGetNodes)(g, two, &nn), 0, "cuGraphGetNodes(2)");
        EXPECT(nn == 2 && two[0] == nodes[0] && two[1] == nodes[1], "first 2 nodes, in capture order");
        CUgraphNodeType t[4] = { -1, -1, -1, -1 };
        for (int i = 0; i < 4; i++)
            D(cuGraphNodeGetType)(nodes[i], &t[i]);
        EXPECT(t[0] == CU_GRAPH_NODE_TYPE_KERNEL && t[1] == CU_GRAPH_NODE_TYPE_KERNEL &&
               t[2] == CU_GRAPH_NODE_TYPE_MEMSET && t[3] == CU_GRAPH_NODE_TYPE_HOST,
               "node types kernel, kernel, memset, host");
        CUDA_KERNEL_NODE_PARAMS_v2 kp;
        memset(&kp, 0x55, sizeof kp);
        EXPECT_RC(D(cuGraphKernelNodeGetParams_v2)(nodes[0], &kp), 0, "cuGraphKernelNodeGetParams_v2");
        EXPECT(kp.func == f1 && kp.kern == NULL && kp.gridDimX == 1 && kp.blockDimX == 32 &&
               kp.ctx != NULL && kp.kernelParams == NULL && kp.extra == NULL,
               "kernel node of a CUfunction launch: func is that CUfunction");
        EXPECT_RC(D(cuGraphKernelNodeGetParams_v2)(nodes[1], &kp), 0, "params of the CUkernel node");
        EXPECT(kp.func == k10f && kp.kern == k10 && kp.gridDimX == 2 && kp.blockDimX == 64 &&
               kp.sharedMemBytes == 128, "kernel node of a CUkernel launch: func is its CUfunction, kern the CUkernel");
        EXPECT_RC(D(cuFuncGetName)(&nm, kp.func), 0, "cuFuncGetName(node func)");
        EXPECT(nm && strcmp(nm, "sleep_10us") == 0, "node func name");
        CUDA_KERNEL_NODE_PARAMS_v1 kp1;
        EXPECT_RC(D(cuGraphKernelNodeGetParams)(nodes[0], &kp1), 0, "cuGraphKernelNodeGetParams (v1)");
        EXPECT(kp1.func == f1 && kp1.blockDimX == 32, "v1 params");
        EXPECT_RC(D(cuGraphKernelNodeGetParams_v2)(nodes[2], &kp), CUDA_ERROR_INVALID_VALUE, "kernel params of a memset node");
        EXPECT_RC(D(cuGraphKernelNodeGetParams_v2)(NULL, &kp), CUDA_ERROR_INVALID_HANDLE, "kernel params of NULL node");
        EXPECT_RC(D(cuGraphKernelNodeGetParams_v2)(nodes[0], NULL), CUDA_ERROR_INVALID_VALUE, "kernel params to NULL");
        EXPECT_RC(D(cuGraphGetNodes)(NULL, NULL, &nn), CUDA_ERROR_INVALID_HANDLE, "cuGraphGetNodes(NULL graph)");
        EXPECT_RC(D(cuGraphGetNodes)(g, NULL, NULL), CUDA_ERROR_INVALID_VALUE, "cuGraphGetNodes(NULL count)");
        EXPECT_RC(D(cuGraphNodeGetType)(nodes[0], NULL), CUDA_ERROR_INVALID_VALUE, "cuGraphNodeGetType(NULL out)");
        EXPECT_RC(D(cuGraphNodeGetType)(NULL, t), CUDA_ERROR_INVALID_HANDLE, "cuGraphNodeGetType(NULL node)");
        CUgraph cg = NULL;
        EXPECT_RC(D(cuGraphChildGraphNodeGetGraph)(nodes[0], &cg), CUDA_ERROR_INVALID_VALUE, "child graph of a kernel node");

        /* A graph launch into a capturing stream becomes a child graph node. */
        EXPECT_RC(D(cuGraphInstantiateWithFlags)(&x, g, 0), 0, "instantiate the inspected graph");
        CUgraph g2;
        EXPECT_RC(D(cuStreamBeginCapture_v2)(s, CU_STREAM_CAPTURE_MODE_GLOBAL), 0, "capture a graph launch");
        EXPECT_RC(launch(f0, s), 0, "captured launch before it");
        EXPECT_RC(D(cuGraphLaunch)(x, s), 0, "captured cuGraphLaunch");
        EXPECT_RC(D(cuStreamEndCapture)(s, &g2), 0, "end that capture");
        CUgraphNode n2[2];
        nn = 2;
        EXPECT_RC(D(cuGraphGetNodes)(g2, n2, &nn), 0, "nodes of the outer graph");
        EXPECT(D(cuGraphNodeGetType)(n2[1], t) == 0 && t[0] == CU_GRAPH_NODE_TYPE_GRAPH, "captured graph launch is a child graph node");
        EXPECT_RC(D(cuGraphChildGraphNodeGetGraph)(n2[1], &cg), 0, "cuGraphChildGraphNodeGetGraph");
        EXPECT(cg && cg != g && D(cuGraphGetNodes)(cg, NULL, &nn) == 0 && nn == 4, "the child graph is a copy with the 4 nodes");
        EXPECT_RC(D(cuGraphDestroy)(cg), CUDA_ERROR_INVALID_VALUE, "an embedded graph cannot be destroyed");

        /* Explicit construction: eg = [kernel(kern) -> kernel(v1) -> child(g2)]. */
        CUgraph eg, other;
        CUgraphNode e0, e1, e2, o0;
        EXPECT_RC(D(cuGraphCreate)(&eg, 1), CUDA_ERROR_INVALID_VALUE, "cuGraphCreate(flags 1)");
        EXPECT_RC(D(cuGraphCreate)(&eg, 0), 0, "cuGraphCreate");
        EXPECT_RC(D(cuGraphCreate)(&other, 0), 0, "cuGraphCreate 2");
        CUDA_KERNEL_NODE_PARAMS_v2 ap = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                          .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1,
                                          .kern = k10 };
        EXPECT_RC(D(cuGraphAddKernelNode_v2)(&e0, eg, NULL, 0, &ap), 0, "cuGraphAddKernelNode_v2(kern)");
        EXPECT(D(cuGraphKernelNodeGetParams_v2)(e0, &kp) == 0 && kp.func == k10f && kp.kern == k10,
               "an added CUkernel node reads back with its CUfunction");
        ap.blockDimX = 2048;
        EXPECT_RC(D(cuGraphAddKernelNode_v2)(&o0, eg, NULL, 0, &ap), CUDA_ERROR_INVALID_VALUE, "add kernel node with 2048 threads");
        ap.blockDimX = 32;
        ap.kern = NULL;
        EXPECT_RC(D(cuGraphAddKernelNode_v2)(&o0, eg, NULL, 0, &ap), CUDA_ERROR_INVALID_HANDLE, "add kernel node without a kernel");
        EXPECT_RC(D(cuGraphAddKernelNode_v2)(&o0, eg, NULL, 0, NULL), CUDA_ERROR_INVALID_VALUE, "add kernel node with NULL params");
        ap.func = f0;
        EXPECT_RC(D(cuGraphAddKernelNode_v2)(&o0, other, NULL, 0, &ap), 0, "a node of another graph");
        CUDA_KERNEL_NODE_PARAMS_v1 ap1 = { .func = f1, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                           .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1 };
        EXPECT_RC(D(cuGraphAddKernelNode)(&e1, eg, &o0, 1, &ap1), CUDA_ERROR_INVALID_VALUE, "dependency from another graph");
        EXPECT_RC(D(cuGraphAddKernelNode)(&e1, eg, NULL, 1, &ap1), CUDA_ERROR_INVALID_VALUE, "NULL dependency array");
        EXPECT_RC(D(cuGraphAddKernelNode)(&e1, eg, &e0, 1, &ap1), 0, "cuGraphAddKernelNode (v1)");
        EXPECT_RC(D(cuGraphAddChildGraphNode)(&e2, eg, &e1, 1, NULL), CUDA_ERROR_INVALID_HANDLE, "child graph NULL");
        EXPECT_RC(D(cuGraphAddChildGraphNode)(&e2, eg, &e1, 1, g2), 0, "cuGraphAddChildGraphNode");
        EXPECT(D(cuGraphGetNodes)(eg, NULL, &nn) == 0 && nn == 3, "3 nodes in the explicit graph");

        CUgraphExec xe;
        CUDA_GRAPH_INSTANTIATE_PARAMS ip = { .flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, .hUploadStream = s,
                                             .result_out = CUDA_GRAPH_INSTANTIATE_ERROR };
        EXPECT_RC(D(cuGraphInstantiateWithParams)(&xe, eg, NULL), CUDA_ERROR_INVALID_VALUE, "instantiate with NULL params");
        ip.flags = 1 << 8;
        EXPECT_RC(D(cuGraphInstantiateWithParams)(&xe, eg, &ip), CUDA_ERROR_INVALID_VALUE, "instantiate with unknown flags");
        EXPECT(ip.result_out == CUDA_GRAPH_INSTANTIATE_ERROR, "result_out reports the failure");
        ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
        ip.hUploadStream = s2; /* destroyed below; still valid here */
        EXPECT_RC(D(cuGraphInstantiateWithParams)(&xe, eg, &ip), 0, "cuGraphInstantiateWithParams");
        EXPECT(ip.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS && ip.hErrNode_out == NULL, "result_out success");
        /* Later changes to eg do not affect xe. */
        EXPECT_RC(D(cuGraphAddChildGraphNode)(&e2, eg, NULL, 0, g2), 0, "add another child after instantiation");
        int host_before = g_host_calls;
        long kl_before = count("cuLaunchKernel");
        t0 = now_ms();
        EXPECT_RC(D(cuGraphLaunch)(xe, s), 0, "launch the explicit graph 1");
        EXPECT_RC(D(cuGraphLaunch)(xe, s), 0, "launch the explicit graph 2");
        EXPECT_RC(D(cuStreamSynchronize)(s), 0, "sync explicit graph launches");
        EXPECT(g_host_calls == host_before + 2, "nested child graphs executed once per launch, snapshot at instantiation");
        EXPECT(now_ms() - t0 >= 0.04, "the two sleep_10us nodes ran (twice)");
        EXPECT(count("cuLaunchKernel") == kl_before, "graph nodes are not cuLaunchKernel calls");
        EXPECT_RC(D(cuGraphDestroy)(g), 0, "destroy the inspected graph");
        EXPECT_RC(D(cuGraphKernelNodeGetParams_v2)(nodes[0], &kp), CUDA_ERROR_INVALID_HANDLE, "node of a destroyed graph");
        EXPECT_RC(D(cuGraphGetNodes)(g, NULL, &nn), CUDA_ERROR_INVALID_HANDLE, "cuGraphGetNodes(destroyed graph)");
        EXPECT_RC(D(cuGraphLaunch)(x, s), 0, "an exec outlives its graph");
        EXPECT_RC(D(cuStreamSynchronize)(s), 0, "sync it");
        EXPECT_RC(D(cuGraphExecDestroy)(x), 0, "destroy exec");
        EXPECT_RC(D(cuGraphExecDestroy)(xe), 0, "destroy explicit exec");
        EXPECT_RC(D(cuGraphDestroy)(g2), 0, "destroy g2");
        EXPECT_RC(D(cuGraphDestroy)(eg), 0, "destroy eg");
        EXPECT_RC(D(cuGraphDestroy)(other), 0, "destroy other");
        EXPECT_RC(D(cuMemFree_v2)(mp), 0, "free memset buffer");
    }

    EXPECT_RC(D(cuStreamDestroy_v2)(s2), 0, "cuStreamDestroy_v2");
    EXPECT_RC(D(cuStreamQuery)(s2), CUDA_ERROR_INVALID_HANDLE, "destroyed stream is invalid");
    EXPECT_RC(D(cuEventDestroy_v2)(e3), 0, "cuEventDestroy_v2");
    EXPECT_RC(D(cuEventQuery)(e3), CUDA_ERROR_INVALID_HANDLE, "destroyed event is invalid");
    EXPECT_RC(D(cuModuleUnload)(mod), 0, "cuModuleUnload");
    EXPECT_RC(launch(f0, NULL), CUDA_ERROR_INVALID_HANDLE, "launch a function of an unloaded module");

    /* ---- proc-address table ---- */
    struct { const char *sym; int ver; unsigned flags; const char *want; int status; } pa[] = {
        { "cuMemcpyHtoD", 3020, 0, "cuMemcpyHtoD_v2", 0 },
        { "cuMemcpyHtoD", 13000, 2, "cuMemcpyHtoD_v2_ptds", 0 },
        { "cuMemcpyHtoD", 6050, 2, "cuMemcpyHtoD_v2", 0 },
        { "cuMemcpyHtoD", 2000, 0, NULL, 2 },
        { "cuMemcpyHtoD_v2", 13000, 0, NULL, 1 },
        { "cuLaunchKernel", 12000, 1, "cuLaunchKernel", 0 },
        { "cuLaunchKernel", 12000, 2, "cuLaunchKernel_ptsz", 0 },
        { "cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2", 0 },
        { "cuStreamBeginCapture", 12000, 2, "cuStreamBeginCapture_v2_ptsz", 0 },
        { "cuStreamBeginCapture", 10000, 0, NULL, 2 },
        { "cuGetProcAddress", 11030, 0, "cuGetProcAddress", 0 },
        { "cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2", 0 },
        { "cuGetProcAddress", 11020, 0, NULL, 2 },
        { "cuStreamDestroy", 2000, 0, "cuStreamDestroy", 0 },
        { "cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2", 0 },
        { "cuEventElapsedTime", 12000, 0, "cuEventElapsedTime", 0 },
        { "cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2", 0 },
        { "cuCtxSynchronize", 12000, 0, "cuCtxSynchronize", 0 },
        { "cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2", 0 },
        { "cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags", 0 },
        { "cuGraphInstantiateWithParams", 12000, 0, "cuGraphInstantiateWithParams", 0 },
        { "cuGraphInstantiateWithParams", 12000, 2, "cuGraphInstantiateWithParams_ptsz", 0 },
        { "cuGraphInstantiateWithParams", 11080, 0, NULL, 2 },
        { "cuGraphKernelNodeGetParams", 10000, 0, "cuGraphKernelNodeGetParams", 0 },
        { "cuGraphKernelNodeGetParams", 12000, 0, "cuGraphKernelNodeGetParams_v2", 0 },
        { "cuGraphKernelNodeGetParams", 13000, 2, "cuGraphKernelNodeGetParams_v2", 0 },
        { "cuGraphAddKernelNode", 11000, 0, "cuGraphAddKernelNode", 0 },
        { "cuGraphAddKernelNode", 12000, 0, "cuGraphAddKernelNode_v2", 0 },
        { "cuGraphGetNodes", 13000, 0, "cuGraphGetNodes", 0 },
        { "cuGraphNodeGetType", 13000, 0, "cuGraphNodeGetType", 0 },
        { "cuGraphChildGraphNodeGetGraph", 13000, 0, "cuGraphChildGraphNodeGetGraph", 0 },
        { "cuGraphCreate", 13000, 0, "cuGraphCreate", 0 },
        { "cuGraphAddChildGraphNode", 13000, 0, "cuGraphAddChildGraphNode", 0 },
        { "cuInit", 13000, 2, "cuInit", 0 },
        { "", 13000, 0, NULL, 1 },
    };
    for (size_t i = 0; i < sizeof pa / sizeof pa[0]; i++) {
        CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
        void *p = (void *)1;
        CUresult r = D(cuGetProcAddress_v2)(pa[i].sym, &p, pa[i].ver, pa[i].flags, &st);
        char what[160];
        snprintf(what, sizeof what, "cuGetProcAddress(\"%s\", %d, %u) -> %s", pa[i].sym,
                 pa[i].ver, pa[i].flags, pa[i].want ? pa[i].want : "none");
        if (pa[i].want)
            EXPECT(r == 0 && st == 0 && p == dsym(pa[i].want), what);
        else
            EXPECT(r == CUDA_ERROR_NOT_FOUND && p == NULL && (int)st == pa[i].status, what);
    }
    EXPECT_RC(D(cuGetProcAddress_v2)(NULL, &pfn, 12000, 0, NULL), CUDA_ERROR_INVALID_VALUE, "cuGetProcAddress(NULL symbol)");

    /* ---- runtime double ---- */
    dim3 g1 = { 1, 1, 1 }, b32 = { 32, 1, 1 }, b0 = { 0, 1, 1 };
    EXPECT_RC(cudaLaunchKernel((const void *)main, g1, b32, NULL, 0, NULL), cudaErrorInvalidDeviceFunction, "cudaLaunchKernel unregistered stub");
    EXPECT_RC(cudaGetLastError(), cudaErrorInvalidDeviceFunction, "cudaGetLastError returns it");
    EXPECT_RC(cudaGetLastError(), cudaSuccess, "and resets");
    EXPECT_RC(cudaLaunchKernel(CW_KERNEL(sleep_0us), g1, b0, NULL, 0, NULL), cudaErrorInvalidConfiguration, "cudaLaunchKernel zero block");
    cudaGetLastError();
    long pt_before = count("cuLaunchKernel_ptsz");
    EXPECT_RC(cudaLaunchKernel_ptsz(CW_KERNEL(sleep_0us), g1, b32, NULL, 0, NULL), 0, "cudaLaunchKernel_ptsz");
    EXPECT(count("cuLaunchKernel_ptsz") == pt_before + 1, "cudaLaunchKernel_ptsz -> cuLaunchKernel_ptsz");
    const char *rname = NULL;
    EXPECT_RC(cudaFuncGetName(&rname, CW_KERNEL(mangled_sleep_5us)), 0, "cudaFuncGetName");
    EXPECT(rname && strcmp(rname, "_Z9sleep_5usPf") == 0, "cudaFuncGetName returns the device name");
    cudaKernel_t kh = NULL;
    EXPECT_RC(__cudaGetKernel(&kh, CW_KERNEL(mangled_sleep_5us)), 0, "__cudaGetKernel");
    EXPECT_RC(D(cuKernelGetName)(&rname, (CUkernel)kh), 0, "cuKernelGetName(cudaKernel_t)");
    EXPECT(rname && strcmp(rname, "_Z9sleep_5usPf") == 0, "cudaKernel_t is the CUkernel of the device name");
    EXPECT_RC(D(cuFuncGetName)(&rname, (CUfunction)kh), 0, "cuFuncGetName(cudaKernel_t)");
    long legacy_before = count("cuLaunchKernel");
    EXPECT_RC(__cudaLaunchKernel(kh, g1, b32, NULL, 0, NULL), 0, "__cudaLaunchKernel");
    EXPECT(count("cuLaunchKernel") == legacy_before + 1, "__cudaLaunchKernel -> cuLaunchKernel");
    EXPECT_RC(__cudaGetKernel(&kh, (const void *)main), cudaErrorInvalidDeviceFunction, "__cudaGetKernel(unregistered)");
    dim3 pg, pb;
    size_t psm;
    cudaStream_t pst;
    EXPECT_RC(__cudaPopCallConfiguration(&pg, &pb, &psm, &pst), cudaErrorMissingConfiguration, "pop without push");
    EXPECT_RC(__cudaPushCallConfiguration(g1, b32, 8, (cudaStream_t)0x2), 0, "push configuration");
    EXPECT_RC(__cudaPopCallConfiguration(&pg, &pb, &psm, &pst), 0, "pop configuration");
    EXPECT(pb.x == 32 && psm == 8 && pst == (cudaStream_t)0x2, "popped what was pushed");
    cudaGetLastError();
    void *dp = NULL;
    EXPECT_RC(cudaMalloc(&dp, 0), 0, "cudaMalloc(0)");
    EXPECT(dp == NULL, "cudaMalloc(0) gives NULL");
    EXPECT_RC(cudaFree(NULL), 0, "cudaFree(NULL)");
    EXPECT_RC(cudaMemcpy(NULL, NULL, 0, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection, "cudaMemcpy bad kind");
    EXPECT_RC(cudaMalloc(&dp, 1 << 20), 0, "cudaMalloc(1 MiB)");
    static char big[1 << 20];
    EXPECT_RC(cudaMemcpy(dp, big, sizeof big, cudaMemcpyHostToDevice), 0, "cudaMemcpy H2D");
    EXPECT_RC(cudaMemcpy2D(dp, 1024, big, 1024, 1024, 1024, cudaMemcpyHostToDevice), 0, "cudaMemcpy2D");
    EXPECT_RC(cudaMemcpy2D(dp, 512, big, 1024, 1024, 1, cudaMemcpyHostToDevice), cudaErrorInvalidPitchValue, "cudaMemcpy2D bad pitch");
    EXPECT_RC(cudaMemcpyPeer(dp, 0, dp, 0, 4096), 0, "cudaMemcpyPeer");
    EXPECT_RC(cudaMemcpyPeer(dp, 1, dp, 0, 4096), cudaErrorInvalidDevice, "cudaMemcpyPeer to device 1");
    EXPECT_RC(cudaMemset(dp, 0, 1 << 20), 0, "cudaMemset");
    EXPECT_RC(cudaFree(dp), 0, "cudaFree");
    EXPECT_RC(cudaFree(dp), cudaErrorInvalidValue, "cudaFree twice");
    cudaStream_t rs;
    EXPECT_RC(cudaStreamCreate(&rs), 0, "cudaStreamCreate");
    EXPECT_RC(cudaStreamDestroy(rs), 0, "cudaStreamDestroy");
    EXPECT_RC(cudaStreamSynchronize(rs), cudaErrorInvalidResourceHandle, "cudaStreamSynchronize(destroyed)");
    cudaGetLastError();
    int devs = 0;
    EXPECT_RC(cudaGetDeviceCount(&devs), 0, "cudaGetDeviceCount");
    EXPECT(devs == 1, "one device");
    EXPECT_RC(cudaSetDevice(1), cudaErrorInvalidDevice, "cudaSetDevice(1)");
    EXPECT_RC(cudaDeviceSynchronize(), 0, "cudaDeviceSynchronize");

    printf("result=%s\n", g_fail ? "FAIL" : "PASS");
    return g_fail;
}
