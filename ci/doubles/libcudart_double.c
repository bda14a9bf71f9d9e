/*
 * libcudart_double.c - test double of the CUDA runtime (built as
 * libcudart.so.13, symbol version "libcudart.so.13" like the real one).
 *
 * It reaches the driver exactly the way the real cudart does:
 *   1. dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)   (never linked: no -lcuda)
 *   2. dlsym(h, "cuGetProcAddress_v2")
 *   3. through that, request "cuGetProcAddress" itself (cudaVersion 12000,
 *      flags 0) and use the returned pointer for every later lookup;
 *   4. resolve every driver entry point it needs at the version of its ABI
 *      (the PFN_<name>_v<version> version, as real cudart 13 does), with
 *      flags 0 for the legacy-stream variant and
 *      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM (2) for the variant
 *      used by the runtime's own _ptsz/_ptds entry points.
 * Every runtime call that does GPU work is implemented as a nested call
 * through one of those driver pointers (cudaLaunchKernel -> cuLaunchKernel,
 * cudaLaunchKernel_ptsz -> cuLaunchKernel_ptsz, cudaMemcpyAsync ->
 * cuMemcpyHtoDAsync_v2, ...).  Kernels are host stub pointers registered by
 * nvcc-style __cudaRegisterFunction calls and mapped lazily to driver
 * functions with cuModuleLoadData + cuModuleGetFunction.
 *
 * No exported function calls another exported function (that would go
 * through the PLT and could be intercepted twice); they share static helpers.
 *
 * Launches, copies, memsets and graph launches are bracketed by the driver
 * double's cwd_runtime_api_enter/exit (looked up with dlsym; absent in a
 * real driver), so the CUPTI double can report them as runtime API calls
 * and treat the driver calls they make as internal (see cw_activity.h).
 */
#define _GNU_SOURCE
#include "cw_cuda.h"   /* driver prototypes: used only for __typeof__ */
#include "cw_cudart.h"
#include "cw_counters.h"
#include "cw_activity.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CW_PUBLIC __attribute__((visibility("default")))
#define CUDART_VERSION 13000

/* ------------------------------------------------------------------------ */
/* Exported symbols and their counters                                      */
/* ------------------------------------------------------------------------ */

#define CWR_SYMBOLS(X)                                                        \
    X(cudaGetDeviceCount) X(cudaSetDevice) X(cudaGetLastError)               \
    X(cudaGetErrorString)                                                    \
    X(cudaMalloc) X(cudaFree) X(cudaMallocHost) X(cudaFreeHost)              \
    X(cudaMallocManaged) X(cudaMallocAsync) X(cudaMallocAsync_ptsz)          \
    X(cudaFreeAsync) X(cudaFreeAsync_ptsz)                                   \
    X(cudaMemcpy) X(cudaMemcpy_ptds) X(cudaMemcpyAsync)                      \
    X(cudaMemcpyAsync_ptsz) X(cudaMemcpy2D) X(cudaMemcpy2D_ptds)             \
    X(cudaMemcpy2DAsync) X(cudaMemcpy2DAsync_ptsz) X(cudaMemcpyPeer)         \
    X(cudaMemcpyPeerAsync) X(cudaMemset) X(cudaMemset_ptds)                  \
    X(cudaMemsetAsync) X(cudaMemsetAsync_ptsz)                               \
    X(cudaLaunchKernel) X(cudaLaunchKernel_ptsz)                             \
    X(cudaLaunchKernelExC) X(cudaLaunchKernelExC_ptsz)                       \
    X(cudaLaunchCooperativeKernel) X(cudaLaunchCooperativeKernel_ptsz)       \
    X(cudaLaunchHostFunc) X(cudaLaunchHostFunc_ptsz) X(cudaFuncGetName)      \
    X(cudaStreamCreate) X(cudaStreamCreateWithFlags) X(cudaStreamDestroy)    \
    X(cudaStreamSynchronize) X(cudaStreamSynchronize_ptsz)                   \
    X(cudaStreamQuery) X(cudaStreamQuery_ptsz)                               \
    X(cudaStreamWaitEvent) X(cudaStreamWaitEvent_ptsz)                       \
    X(cudaStreamBeginCapture) X(cudaStreamBeginCapture_ptsz)                 \
    X(cudaStreamEndCapture) X(cudaStreamEndCapture_ptsz)                     \
    X(cudaEventCreate) X(cudaEventCreateWithFlags)                           \
    X(cudaEventRecord) X(cudaEventRecord_ptsz) X(cudaEventSynchronize)       \
    X(cudaEventQuery) X(cudaEventDestroy) X(cudaEventElapsedTime)            \
    X(cudaDeviceSynchronize)                                                 \
    X(cudaGraphInstantiate) X(cudaGraphInstantiateWithFlags)                 \
    X(cudaGraphLaunch) X(cudaGraphLaunch_ptsz)                               \
    X(cudaGraphDestroy) X(cudaGraphExecDestroy)                              \
    X(__cudaRegisterFatBinary) X(__cudaRegisterFatBinaryEnd)                 \
    X(__cudaRegisterFunction) X(__cudaUnregisterFatBinary)                   \
    X(__cudaPushCallConfiguration) X(__cudaPopCallConfiguration)             \
    X(__cudaGetKernel) X(__cudaLaunchKernel) X(__cudaLaunchKernel_ptsz)

enum {
#define X(n) CWR_IDX_##n,
    CWR_SYMBOLS(X)
#undef X
    CWR_NSYMS
};
static const char *const cwr_names[CWR_NSYMS] = {
#define X(n) #n,
    CWR_SYMBOLS(X)
#undef X
};
static atomic_long cwr_counts[CWR_NSYMS];

#define CW_COUNT(name) \
    atomic_fetch_add_explicit(&cwr_counts[CWR_IDX_##name], 1, memory_order_relaxed)

CW_PUBLIC long cwr_count(const char *symbol)
{
    return cwc_count(cwr_names, cwr_counts, CWR_NSYMS, symbol);
}
CW_PUBLIC void cwr_reset(void) { cwc_reset(cwr_counts, CWR_NSYMS); }
CW_PUBLIC void cwr_dump(FILE *out) { cwc_dump(cwr_names, cwr_counts, CWR_NSYMS, out); }

/* ------------------------------------------------------------------------ */
/* Driver entry points                                                      */
/* ------------------------------------------------------------------------ */

/*
 * X(field, request name, ABI prototype, version, per-thread version or 0).
 * `field` of struct drv gets the legacy variant (flags 0); when the last
 * column is nonzero, the same field of g_drv_pt gets the per-thread variant
 * (flags 2, requested at that version).  Otherwise g_drv_pt shares the legacy
 * pointer.  The prototype names the exact ABI the driver returns for that
 * version (e.g. "cuMemcpyHtoD" at 3020 is cuMemcpyHtoD_v2).
 */
#define DRV_FUNCS(X)                                                               \
    X(Init, "cuInit", cuInit, 2000, 0)                                             \
    X(DriverGetVersion, "cuDriverGetVersion", cuDriverGetVersion, 2020, 0)         \
    X(DeviceGet, "cuDeviceGet", cuDeviceGet, 2000, 0)                              \
    X(DeviceGetCount, "cuDeviceGetCount", cuDeviceGetCount, 2000, 0)               \
    X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000, 0) \
    X(CtxSetCurrent, "cuCtxSetCurrent", cuCtxSetCurrent, 4000, 0)                  \
    X(CtxSynchronize, "cuCtxSynchronize", cuCtxSynchronize, 2000, 0)               \
    X(ModuleLoadData, "cuModuleLoadData", cuModuleLoadData, 2000, 0)               \
    X(ModuleGetFunction, "cuModuleGetFunction", cuModuleGetFunction, 2000, 0)      \
    X(ModuleUnload, "cuModuleUnload", cuModuleUnload, 2000, 0)                     \
    X(FuncGetName, "cuFuncGetName", cuFuncGetName, 12030, 0)                       \
    X(LibraryLoadData, "cuLibraryLoadData", cuLibraryLoadData, 12000, 0)           \
    X(LibraryGetKernel, "cuLibraryGetKernel", cuLibraryGetKernel, 12000, 0)        \
    X(LibraryUnload, "cuLibraryUnload", cuLibraryUnload, 12000, 0)                 \
    X(LaunchKernel, "cuLaunchKernel", cuLaunchKernel, 4000, 7000)                  \
    X(LaunchKernelEx, "cuLaunchKernelEx", cuLaunchKernelEx, 11060, 11060)          \
    X(LaunchCoop, "cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, 9000, 9000) \
    X(LaunchHostFunc, "cuLaunchHostFunc", cuLaunchHostFunc, 10000, 10000)          \
    X(MemAlloc, "cuMemAlloc", cuMemAlloc_v2, 3020, 0)                              \
    X(MemFree, "cuMemFree", cuMemFree_v2, 3020, 0)                                 \
    X(MemAllocHost, "cuMemAllocHost", cuMemAllocHost_v2, 3020, 0)                  \
    X(MemFreeHost, "cuMemFreeHost", cuMemFreeHost, 2000, 0)                        \
    X(MemAllocManaged, "cuMemAllocManaged", cuMemAllocManaged, 6000, 0)            \
    X(MemAllocAsync, "cuMemAllocAsync", cuMemAllocAsync, 11020, 11020)             \
    X(MemFreeAsync, "cuMemFreeAsync", cuMemFreeAsync, 11020, 11020)                \
    X(Memcpy, "cuMemcpy", cuMemcpy, 4000, 7000)                                    \
    X(MemcpyAsync, "cuMemcpyAsync", cuMemcpyAsync, 4000, 7000)                     \
    X(MemcpyHtoD, "cuMemcpyHtoD", cuMemcpyHtoD_v2, 3020, 7000)                     \
    X(MemcpyDtoH, "cuMemcpyDtoH", cuMemcpyDtoH_v2, 3020, 7000)                     \
    X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2, 3020, 7000)      \
    X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2, 3020, 7000)      \
    X(Memcpy2D, "cuMemcpy2D", cuMemcpy2D_v2, 3020, 7000)                           \
    X(Memcpy2DAsync, "cuMemcpy2DAsync", cuMemcpy2DAsync_v2, 3020, 7000)            \
    X(MemcpyPeer, "cuMemcpyPeer", cuMemcpyPeer, 4000, 7000)                        \
    X(MemcpyPeerAsync, "cuMemcpyPeerAsync", cuMemcpyPeerAsync, 4000, 7000)         \
    X(MemsetD8, "cuMemsetD8", cuMemsetD8_v2, 3020, 7000)                           \
    X(MemsetD8Async, "cuMemsetD8Async", cuMemsetD8Async, 3020, 7000)               \
    X(StreamCreate, "cuStreamCreate", cuStreamCreate, 2000, 0)                     \
    X(StreamDestroy, "cuStreamDestroy", cuStreamDestroy_v2, 4000, 0)               \
    X(StreamSynchronize, "cuStreamSynchronize", cuStreamSynchronize, 2000, 7000)   \
    X(StreamQuery, "cuStreamQuery", cuStreamQuery, 2000, 7000)                     \
    X(StreamWaitEvent, "cuStreamWaitEvent", cuStreamWaitEvent, 3020, 7000)         \
    X(EventCreate, "cuEventCreate", cuEventCreate, 2000, 0)                        \
    X(EventRecord, "cuEventRecord", cuEventRecord, 2000, 7000)                     \
    X(EventSynchronize, "cuEventSynchronize", cuEventSynchronize, 2000, 0)         \
    X(EventQuery, "cuEventQuery", cuEventQuery, 2000, 0)                           \
    X(EventDestroy, "cuEventDestroy", cuEventDestroy_v2, 4000, 0)                  \
    X(EventElapsedTime, "cuEventElapsedTime", cuEventElapsedTime_v2, 12080, 0)     \
    X(BeginCapture, "cuStreamBeginCapture", cuStreamBeginCapture_v2, 10010, 10010) \
    X(EndCapture, "cuStreamEndCapture", cuStreamEndCapture, 10000, 10000)          \
    X(GraphInstantiate, "cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags, 11040, 0) \
    X(GraphLaunch, "cuGraphLaunch", cuGraphLaunch, 10000, 10000)                   \
    X(GraphDestroy, "cuGraphDestroy", cuGraphDestroy, 10000, 0)                    \
    X(GraphExecDestroy, "cuGraphExecDestroy", cuGraphExecDestroy, 10000, 0)

struct drv {
#define X(field, name, proto, ver, ptver) __typeof__(proto) *field;
    DRV_FUNCS(X)
#undef X
};

static struct drv g_drv;    /* legacy default stream variants */
static struct drv g_drv_pt; /* per-thread default stream variants */
static PFN_cuGetProcAddress_v12000 g_getproc;
/* cwd_runtime_api_enter/exit of the driver double (NULL for other drivers). */
static __typeof__(cwd_runtime_api_enter) *g_act_enter;
static __typeof__(cwd_runtime_api_exit) *g_act_exit;

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static cudaError_t g_init_err = cudaErrorInitializationError;
static CUcontext g_ctx;
static __thread int t_ctx_bound;   /* primary context made current here */
static __thread cudaError_t t_last_error;

/* Driver and runtime error numbers coincide for every code the driver
 * double returns (1, 2, 3, 100, 101, 201, 400, 401, 500, 600, 801, 9xx);
 * anything unexpected becomes cudaErrorUnknown. */
static cudaError_t map_err(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS: case CUDA_ERROR_INVALID_VALUE: case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_NOT_INITIALIZED: case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_NO_DEVICE: case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_IMAGE: case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_INVALID_HANDLE: case CUDA_ERROR_ILLEGAL_STATE:
    case CUDA_ERROR_NOT_FOUND: case CUDA_ERROR_NOT_READY:
    case CUDA_ERROR_NOT_SUPPORTED: case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
        return r;
    default:
        return cudaErrorUnknown;
    }
}

/* Record a failure as the calling thread's last error (cudaGetLastError). */
static cudaError_t ret(cudaError_t e)
{
    if (e != cudaSuccess)
        t_last_error = e;
    return e;
}

static void reg_lock(void);
static void reg_unlock(void);
static void reg_reinit(void);

static void init_once(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        g_init_err = cudaErrorInsufficientDriver;
        return;
    }
    g_act_exit = (__typeof__(cwd_runtime_api_exit) *)dlsym(h, "cwd_runtime_api_exit");
    if (g_act_exit)
        g_act_enter = (__typeof__(cwd_runtime_api_enter) *)dlsym(h, "cwd_runtime_api_enter");
    if (!g_act_enter)
        g_act_exit = NULL;
    PFN_cuGetProcAddress_v12000 bootstrap =
        (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
    if (!bootstrap) {
        g_init_err = cudaErrorInsufficientDriver;
        return;
    }
    CUdriverProcAddressQueryResult st;
    void *p = NULL;
    if (bootstrap("cuGetProcAddress", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !p) {
        g_init_err = cudaErrorInsufficientDriver;
        return;
    }
    g_getproc = (PFN_cuGetProcAddress_v12000)p;

    /* Every entry point is required; a driver lacking one is too old. */
    int missing = 0;
#define X(field, name, proto, ver, ptver)                                            \
    p = NULL;                                                                        \
    if (g_getproc(name, &p, ver, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !p) \
        missing = 1;                                                                 \
    g_drv.field = (__typeof__(proto) *)p;                                            \
    g_drv_pt.field = g_drv.field;                                                    \
    if (ptver) {                                                                     \
        p = NULL;                                                                    \
        if (g_getproc(name, &p, ptver, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, \
                      &st) != CUDA_SUCCESS || !p)                                    \
            missing = 1;                                                             \
        g_drv_pt.field = (__typeof__(proto) *)p;                                     \
    }
    DRV_FUNCS(X)
#undef X
    if (missing) {
        g_init_err = cudaErrorCallRequiresNewerDriver;
        return;
    }

    int version = 0;
    if (g_drv.DriverGetVersion(&version) != CUDA_SUCCESS || version < CUDART_VERSION) {
        g_init_err = cudaErrorInsufficientDriver;
        return;
    }
    CUresult r = g_drv.Init(0);
    if (r != CUDA_SUCCESS) {
        g_init_err = r == CUDA_ERROR_NO_DEVICE ? cudaErrorNoDevice : map_err(r);
        return;
    }
    /* Registered after cuInit (which registers the driver's handlers), so
     * at fork() our prepare handler runs first: locks are taken in the
     * same order as in lookup_func (g_reg_mu, then the driver's lock). */
    pthread_atfork(reg_lock, reg_unlock, reg_reinit);
    int count = 0;
    if ((r = g_drv.DeviceGetCount(&count)) != CUDA_SUCCESS) {
        g_init_err = map_err(r);
        return;
    }
    if (count < 1) {
        g_init_err = cudaErrorNoDevice;
        return;
    }
    CUdevice dev;
    if ((r = g_drv.DeviceGet(&dev, 0)) != CUDA_SUCCESS ||
        (r = g_drv.PrimaryCtxRetain(&g_ctx, dev)) != CUDA_SUCCESS) {
        g_init_err = map_err(r);
        return;
    }
    g_init_err = cudaSuccess;
}

/* Lazily initialise the runtime and make the primary context current on the
 * calling thread (once per thread), as the real runtime does. */
static cudaError_t ensure_ready(void)
{
    pthread_once(&g_init_once, init_once);
    if (g_init_err != cudaSuccess)
        return g_init_err;
    if (!t_ctx_bound) {
        CUresult r = g_drv.CtxSetCurrent(g_ctx);
        if (r != CUDA_SUCCESS)
            return map_err(r);
        t_ctx_bound = 1;
    }
    return cudaSuccess;
}

/* Bracket a runtime launch/copy/memset/graph launch for the activity hooks
 * (cbid: CUPTI's runtime callback id, CWD_CBID_<name> in cw_activity.h):
 * RT_ACT(name, expr) returns expr. */
static uint32_t rt_enter(int cbid)
{
    pthread_once(&g_init_once, init_once);
    return g_act_enter ? g_act_enter(cbid) : 0;
}

static void rt_exit(int cbid, uint32_t corr, cudaError_t rc)
{
    if (g_act_exit)
        g_act_exit(cbid, corr, rc);
}

#define RT_ACT(name, expr)                                                     \
    do {                                                                       \
        uint32_t rt_c_ = rt_enter(CWD_CBID_##name);                            \
        cudaError_t rt_r_ = (expr);                                            \
        rt_exit(CWD_CBID_##name, rt_c_, rt_r_);                                \
        return rt_r_;                                                          \
    } while (0)

#define READY()                                                                \
    do {                                                                       \
        cudaError_t ready_err_ = ensure_ready();                               \
        if (ready_err_ != cudaSuccess)                                         \
            return ret(ready_err_);                                            \
    } while (0)

/* Invalid launch geometry (cudaErrorInvalidConfiguration). */
static int bad_dims(dim3 g, dim3 b)
{
    return !g.x || !g.y || !g.z || !b.x || !b.y || !b.z ||
           (unsigned long long)b.x * b.y * b.z > 1024;
}

#define DRV(pt) ((pt) ? &g_drv_pt : &g_drv)
#define CALL(expr) ret(map_err(expr))

/* ------------------------------------------------------------------------ */
/* Kernel registration (nvcc-generated host code calls these)               */
/* ------------------------------------------------------------------------ */

/* Each registered fat binary is loaded lazily, twice over: as a CUmodule for
 * the classic path (cudaLaunchKernel: host stub -> cuModuleGetFunction) and
 * as a CUlibrary for nvcc 13's path (__cudaGetKernel -> cuLibraryGetKernel,
 * a cudaKernel_t being a CUkernel). */
typedef struct fatbin {
    const void *image;  /* what is handed to cuModuleLoadData/cuLibraryLoadData */
    CUmodule module;    /* loaded on first use of one of its kernels */
    CUlibrary library;  /* loaded on first __cudaGetKernel */
    struct fatbin *next;
} fatbin;

typedef struct kreg {
    const void *host;   /* host stub address: the key of cudaLaunchKernel */
    char *name;         /* device (mangled) name */
    fatbin *fb;
    CUfunction func;    /* resolved on first use */
    CUkernel kernel;    /* resolved on first __cudaGetKernel */
    struct kreg *next;
} kreg;

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static fatbin *g_fatbins;
static kreg *g_kernels;

static void reg_lock(void) { pthread_mutex_lock(&g_reg_mu); }
static void reg_unlock(void) { pthread_mutex_unlock(&g_reg_mu); }
static void reg_reinit(void) { pthread_mutex_init(&g_reg_mu, NULL); }

static void **impl___cudaRegisterFatBinary(void *fatCubin)
{
    fatbin *fb = calloc(1, sizeof *fb);
    if (!fb)
        abort(); /* the real runtime cannot report failure here either */
    const cw_fatBinC_Wrapper_t *w = fatCubin;
    fb->image = (w && w->magic == CW_FATBINC_MAGIC && w->data) ? (const void *)w->data
                                                              : fatCubin;
    pthread_mutex_lock(&g_reg_mu);
    fb->next = g_fatbins;
    g_fatbins = fb;
    pthread_mutex_unlock(&g_reg_mu);
    return (void **)fb;
}

static void impl___cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

static void impl___cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
                                      char *deviceFun, const char *deviceName,
                                      int thread_limit, uint3 *tid, uint3 *bid,
                                      dim3 *bDim, dim3 *gDim, int *wSize)
{
    (void)deviceFun; (void)thread_limit; (void)tid; (void)bid;
    (void)bDim; (void)gDim; (void)wSize;
    kreg *k = calloc(1, sizeof *k);
    if (!k || !(k->name = strdup(deviceName ? deviceName : "")))
        abort();
    k->host = hostFun;
    k->fb = (fatbin *)fatCubinHandle;
    pthread_mutex_lock(&g_reg_mu);
    k->next = g_kernels;
    g_kernels = k;
    pthread_mutex_unlock(&g_reg_mu);
}

static void impl___cudaUnregisterFatBinary(void **fatCubinHandle)
{
    fatbin *fb = (fatbin *)fatCubinHandle;
    pthread_mutex_lock(&g_reg_mu);
    for (kreg **pk = &g_kernels; *pk;) {
        if ((*pk)->fb == fb) {
            kreg *dead = *pk;
            *pk = dead->next;
            free(dead->name);
            free(dead);
        } else {
            pk = &(*pk)->next;
        }
    }
    for (fatbin **pf = &g_fatbins; *pf; pf = &(*pf)->next)
        if (*pf == fb) {
            *pf = fb->next;
            break;
        }
    pthread_mutex_unlock(&g_reg_mu);
    if (fb->module && g_init_err == cudaSuccess)
        g_drv.ModuleUnload(fb->module);
    if (fb->library && g_init_err == cudaSuccess)
        g_drv.LibraryUnload(fb->library);
    free(fb);
}

/* Map a host stub to its driver function, loading the module on first use
 * (CUDA's default lazy loading).  Runtime must be ready. */
static cudaError_t lookup_func(const void *host, CUfunction *out)
{
    cudaError_t err = cudaErrorInvalidDeviceFunction;
    pthread_mutex_lock(&g_reg_mu);
    for (kreg *k = g_kernels; k; k = k->next) {
        if (k->host != host)
            continue;
        if (!k->func) {
            CUresult r = CUDA_SUCCESS;
            if (!k->fb->module)
                r = g_drv.ModuleLoadData(&k->fb->module, k->fb->image);
            if (r == CUDA_SUCCESS)
                r = g_drv.ModuleGetFunction(&k->func, k->fb->module, k->name);
            if (r != CUDA_SUCCESS) {
                k->func = NULL;
                err = r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidDeviceFunction
                                                : map_err(r);
                break;
            }
        }
        *out = k->func;
        err = cudaSuccess;
        break;
    }
    pthread_mutex_unlock(&g_reg_mu);
    return err;
}

/* cudaKernel_t for a host stub (nvcc 13 stubs call this once per kernel). */
static cudaError_t lookup_kernel(const void *host, CUkernel *out)
{
    cudaError_t err = cudaErrorInvalidDeviceFunction;
    pthread_mutex_lock(&g_reg_mu);
    for (kreg *k = g_kernels; k; k = k->next) {
        if (k->host != host)
            continue;
        if (!k->kernel) {
            CUresult r = CUDA_SUCCESS;
            if (!k->fb->library)
                r = g_drv.LibraryLoadData(&k->fb->library, k->fb->image, NULL, NULL, 0,
                                          NULL, NULL, 0);
            if (r == CUDA_SUCCESS)
                r = g_drv.LibraryGetKernel(&k->kernel, k->fb->library, k->name);
            if (r != CUDA_SUCCESS) {
                k->kernel = NULL;
                err = r == CUDA_ERROR_NOT_FOUND ? cudaErrorInvalidDeviceFunction
                                                : map_err(r);
                break;
            }
        }
        *out = k->kernel;
        err = cudaSuccess;
        break;
    }
    pthread_mutex_unlock(&g_reg_mu);
    return err;
}

/* ---- nvcc 13 launch lowering -------------------------------------------
 * kernel<<<g, b, smem, s>>>(args) becomes, in the generated host code:
 *   __cudaPushCallConfiguration(g, b, smem, s);      (at the call site)
 *   stub: __cudaGetKernel(&handle, stub) once;
 *         __cudaPopCallConfiguration(&g, &b, &smem, &s);
 *         __cudaLaunchKernel(handle, g, b, args, smem, s);            */

typedef struct { dim3 grid, block; size_t smem; cudaStream_t stream; } call_config;
#define CONFIG_DEPTH 16
static __thread call_config t_config[CONFIG_DEPTH];
static __thread int t_config_depth;

CW_PUBLIC unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
                                               size_t sharedMem, struct CUstream_st *stream)
{
    CW_COUNT(__cudaPushCallConfiguration);
    if (t_config_depth == CONFIG_DEPTH)
        return 1;
    t_config[t_config_depth++] = (call_config){ gridDim, blockDim, sharedMem, stream };
    return 0;
}

CW_PUBLIC cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim,
                                                 size_t *sharedMem, void *stream)
{
    CW_COUNT(__cudaPopCallConfiguration);
    if (t_config_depth == 0)
        return ret(cudaErrorMissingConfiguration);
    call_config c = t_config[--t_config_depth];
    *gridDim = c.grid;
    *blockDim = c.block;
    *sharedMem = c.smem;
    *(cudaStream_t *)stream = c.stream;
    return cudaSuccess;
}

CW_PUBLIC cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    CW_COUNT(__cudaGetKernel);
    if (!kernel)
        return ret(cudaErrorInvalidValue);
    READY();
    CUkernel k = NULL;
    cudaError_t e = lookup_kernel(hostFun, &k);
    if (e != cudaSuccess)
        return ret(e);
    *kernel = k;
    return cudaSuccess;
}

/* Launches the CUkernel through cuLaunchKernel (the driver accepts a
 * CUkernel where a CUfunction is expected). */
static cudaError_t launch_kernel_handle(cudaKernel_t k, dim3 g, dim3 b, void **args,
                                        size_t smem, cudaStream_t s, int pt)
{
    READY();
    if (!k)
        return ret(cudaErrorInvalidDeviceFunction);
    if (bad_dims(g, b))
        return ret(cudaErrorInvalidConfiguration);
    return CALL(DRV(pt)->LaunchKernel((CUfunction)k, g.x, g.y, g.z, b.x, b.y, b.z,
                                      (unsigned)smem, s, args, NULL));
}

CW_PUBLIC cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                         void **args, size_t sharedMem, cudaStream_t stream)
{
    CW_COUNT(__cudaLaunchKernel);
    RT_ACT(__cudaLaunchKernel_v13000, launch_kernel_handle(kernel, gridDim, blockDim, args, sharedMem, stream, 0));
}

CW_PUBLIC cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                              void **args, size_t sharedMem, cudaStream_t stream)
{
    CW_COUNT(__cudaLaunchKernel_ptsz);
    RT_ACT(__cudaLaunchKernel_ptsz_v13000, launch_kernel_handle(kernel, gridDim, blockDim, args, sharedMem, stream, 1));
}

/* ------------------------------------------------------------------------ */
/* Device management and errors                                             */
/* ------------------------------------------------------------------------ */

CW_PUBLIC cudaError_t cudaGetDeviceCount(int *count)
{
    CW_COUNT(cudaGetDeviceCount);
    if (!count)
        return ret(cudaErrorInvalidValue);
    *count = 0;
    READY();
    return CALL(g_drv.DeviceGetCount(count));
}

CW_PUBLIC cudaError_t cudaSetDevice(int device)
{
    CW_COUNT(cudaSetDevice);
    READY();
    if (device != 0)
        return ret(cudaErrorInvalidDevice);
    return cudaSuccess;
}

CW_PUBLIC cudaError_t cudaGetLastError(void)
{
    CW_COUNT(cudaGetLastError);
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

static const struct { cudaError_t code; const char *text; } g_err_text[] = {
    { cudaSuccess, "no error" },
    { cudaErrorInvalidValue, "invalid argument" },
    { cudaErrorMemoryAllocation, "out of memory" },
    { cudaErrorInitializationError, "initialization error" },
    { cudaErrorCudartUnloading, "driver shutting down" },
    { cudaErrorInvalidConfiguration, "invalid configuration argument" },
    { cudaErrorInvalidPitchValue, "invalid pitch argument" },
    { cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy" },
    { cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version" },
    { cudaErrorCallRequiresNewerDriver, "API call is not supported in the installed CUDA driver" },
    { cudaErrorMissingConfiguration, "__global__ function call is not configured" },
    { cudaErrorInvalidDeviceFunction, "invalid device function" },
    { cudaErrorNoDevice, "no CUDA-capable device is detected" },
    { cudaErrorInvalidDevice, "invalid device ordinal" },
    { cudaErrorInvalidKernelImage, "device kernel image is invalid" },
    { cudaErrorDeviceUninitialized, "invalid device context" },
    { cudaErrorInvalidResourceHandle, "invalid resource handle" },
    { cudaErrorIllegalState, "the operation cannot be performed in the present state" },
    { cudaErrorSymbolNotFound, "named symbol not found" },
    { cudaErrorNotReady, "device not ready" },
    { cudaErrorNotSupported, "operation not supported" },
    { cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing" },
    { cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture" },
    { cudaErrorStreamCaptureWrongThread, "attempt to terminate a thread-local capture sequence from another thread" },
    { cudaErrorUnknown, "unknown error" },
};

CW_PUBLIC const char *cudaGetErrorString(cudaError_t error)
{
    CW_COUNT(cudaGetErrorString);
    for (size_t i = 0; i < sizeof g_err_text / sizeof g_err_text[0]; i++)
        if (g_err_text[i].code == error)
            return g_err_text[i].text;
    return "unrecognized error code";
}

CW_PUBLIC cudaError_t cudaDeviceSynchronize(void)
{
    CW_COUNT(cudaDeviceSynchronize);
    READY();
    return CALL(g_drv.CtxSynchronize());
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
/* ------------------------------------------------------------------------ */

#define DP(p) ((CUdeviceptr)(uintptr_t)(p))

static cudaError_t impl_cudaMalloc(void **devPtr, size_t size)
{
    if (!devPtr)
        return ret(cudaErrorInvalidValue);
    READY();
    if (size == 0) { /* as in CUDA: success, NULL pointer */
        *devPtr = NULL;
        return cudaSuccess;
    }
    CUdeviceptr p = 0;
    cudaError_t e = CALL(g_drv.MemAlloc(&p, size));
    if (e == cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return e;
}

static cudaError_t impl_cudaFree(void *devPtr)
{
    READY();
    if (!devPtr)
        return cudaSuccess;
    return CALL(g_drv.MemFree(DP(devPtr)));
}

CW_PUBLIC cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    CW_COUNT(cudaMallocHost);
    if (!ptr)
        return ret(cudaErrorInvalidValue);
    READY();
    if (size == 0) {
        *ptr = NULL;
        return cudaSuccess;
    }
    return CALL(g_drv.MemAllocHost(ptr, size));
}

CW_PUBLIC cudaError_t cudaFreeHost(void *ptr)
{
    CW_COUNT(cudaFreeHost);
    READY();
    if (!ptr)
        return cudaSuccess;
    return CALL(g_drv.MemFreeHost(ptr));
}

CW_PUBLIC cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    CW_COUNT(cudaMallocManaged);
    if (!devPtr || size == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
        return ret(cudaErrorInvalidValue);
    READY();
    CUdeviceptr p = 0;
    cudaError_t e = CALL(g_drv.MemAllocManaged(&p, size, flags));
    if (e == cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return e;
}

static cudaError_t malloc_async(void **devPtr, size_t size, cudaStream_t s, int pt)
{
    if (!devPtr)
        return ret(cudaErrorInvalidValue);
    READY();
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    CUdeviceptr p = 0;
    cudaError_t e = CALL(DRV(pt)->MemAllocAsync(&p, size, s));
    if (e == cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return e;
}

CW_PUBLIC cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    CW_COUNT(cudaMallocAsync);
    return malloc_async(devPtr, size, hStream, 0);
}

CW_PUBLIC cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    CW_COUNT(cudaMallocAsync_ptsz);
    return malloc_async(devPtr, size, hStream, 1);
}

static cudaError_t free_async(void *devPtr, cudaStream_t s, int pt)
{
    READY();
    if (!devPtr)
        return cudaSuccess;
    return CALL(DRV(pt)->MemFreeAsync(DP(devPtr), s));
}

CW_PUBLIC cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    CW_COUNT(cudaFreeAsync);
    return free_async(devPtr, hStream, 0);
}

CW_PUBLIC cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    CW_COUNT(cudaFreeAsync_ptsz);
    return free_async(devPtr, hStream, 1);
}

/* cudaMemcpy*: host->device and device->host use the dedicated driver
 * copies, everything else the unified-address cuMemcpy/cuMemcpyAsync. */
static cudaError_t memcpy_common(void *dst, const void *src, size_t n,
                                 enum cudaMemcpyKind kind, cudaStream_t s,
                                 int pt, int async)
{
    if ((unsigned)kind > cudaMemcpyDefault)
        return ret(cudaErrorInvalidMemcpyDirection);
    READY();
    const struct drv *d = DRV(pt);
    if (kind == cudaMemcpyHostToDevice)
        return CALL(async ? d->MemcpyHtoDAsync(DP(dst), src, n, s)
                          : d->MemcpyHtoD(DP(dst), src, n));
    if (kind == cudaMemcpyDeviceToHost)
        return CALL(async ? d->MemcpyDtoHAsync(dst, DP(src), n, s)
                          : d->MemcpyDtoH(dst, DP(src), n));
    return CALL(async ? d->MemcpyAsync(DP(dst), DP(src), n, s)
                      : d->Memcpy(DP(dst), DP(src), n));
}

CW_PUBLIC cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    CW_COUNT(cudaMemcpy);
    RT_ACT(cudaMemcpy_v3020, memcpy_common(dst, src, count, kind, NULL, 0, 0));
}

CW_PUBLIC cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    CW_COUNT(cudaMemcpy_ptds);
    RT_ACT(cudaMemcpy_ptds_v7000, memcpy_common(dst, src, count, kind, NULL, 1, 0));
}

static cudaError_t impl_cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                      enum cudaMemcpyKind kind, cudaStream_t stream)
{
    RT_ACT(cudaMemcpyAsync_v3020, memcpy_common(dst, src, count, kind, stream, 0, 1));
}

CW_PUBLIC cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                           enum cudaMemcpyKind kind, cudaStream_t stream)
{
    CW_COUNT(cudaMemcpyAsync_ptsz);
    RT_ACT(cudaMemcpyAsync_ptsz_v7000, memcpy_common(dst, src, count, kind, stream, 1, 1));
}

static cudaError_t memcpy2d_common(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind,
                                   cudaStream_t s, int pt, int async)
{
    if ((unsigned)kind > cudaMemcpyDefault)
        return ret(cudaErrorInvalidMemcpyDirection);
    if (width > dpitch || width > spitch)
        return ret(cudaErrorInvalidPitchValue);
    READY();
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    int src_host = kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice;
    int dst_host = kind == cudaMemcpyHostToHost || kind == cudaMemcpyDeviceToHost;
    if (kind == cudaMemcpyDefault) {
        c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        c.srcDevice = DP(src);
        c.dstDevice = DP(dst);
    } else {
        c.srcMemoryType = src_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        c.dstMemoryType = dst_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        if (src_host) c.srcHost = src; else c.srcDevice = DP(src);
        if (dst_host) c.dstHost = dst; else c.dstDevice = DP(dst);
    }
    c.srcPitch = spitch;
    c.dstPitch = dpitch;
    c.WidthInBytes = width;
    c.Height = height;
    const struct drv *d = DRV(pt);
    return CALL(async ? d->Memcpy2DAsync(&c, s) : d->Memcpy2D(&c));
}

CW_PUBLIC cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind kind)
{
    CW_COUNT(cudaMemcpy2D);
    RT_ACT(cudaMemcpy2D_v3020, memcpy2d_common(dst, dpitch, src, spitch, width, height, kind, NULL, 0, 0));
}

CW_PUBLIC cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind)
{
    CW_COUNT(cudaMemcpy2D_ptds);
    RT_ACT(cudaMemcpy2D_ptds_v7000, memcpy2d_common(dst, dpitch, src, spitch, width, height, kind, NULL, 1, 0));
}

CW_PUBLIC cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                        size_t width, size_t height, enum cudaMemcpyKind kind,
                                        cudaStream_t stream)
{
    CW_COUNT(cudaMemcpy2DAsync);
    RT_ACT(cudaMemcpy2DAsync_v3020, memcpy2d_common(dst, dpitch, src, spitch, width, height, kind, stream, 0, 1));
}

CW_PUBLIC cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
                                             size_t width, size_t height, enum cudaMemcpyKind kind,
                                             cudaStream_t stream)
{
    CW_COUNT(cudaMemcpy2DAsync_ptsz);
    RT_ACT(cudaMemcpy2DAsync_ptsz_v7000, memcpy2d_common(dst, dpitch, src, spitch, width, height, kind, stream, 1, 1));
}

CW_PUBLIC cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    CW_COUNT(cudaMemcpyPeer);
    READY();
    if (dstDevice != 0 || srcDevice != 0)
        return ret(cudaErrorInvalidDevice);
    RT_ACT(cudaMemcpyPeer_v4000, CALL(g_drv.MemcpyPeer(DP(dst), g_ctx, DP(src), g_ctx, count)));
}

CW_PUBLIC cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                          size_t count, cudaStream_t stream)
{
    CW_COUNT(cudaMemcpyPeerAsync);
    READY();
    if (dstDevice != 0 || srcDevice != 0)
        return ret(cudaErrorInvalidDevice);
    RT_ACT(cudaMemcpyPeerAsync_v4000, CALL(g_drv.MemcpyPeerAsync(DP(dst), g_ctx, DP(src), g_ctx, count, stream)));
}

CW_PUBLIC cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    CW_COUNT(cudaMemset);
    READY();
    RT_ACT(cudaMemset_v3020, CALL(g_drv.MemsetD8(DP(devPtr), (unsigned char)value, count)));
}

CW_PUBLIC cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    CW_COUNT(cudaMemset_ptds);
    READY();
    RT_ACT(cudaMemset_ptds_v7000, CALL(g_drv_pt.MemsetD8(DP(devPtr), (unsigned char)value, count)));
}

CW_PUBLIC cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    CW_COUNT(cudaMemsetAsync);
    READY();
    RT_ACT(cudaMemsetAsync_v3020, CALL(g_drv.MemsetD8Async(DP(devPtr), (unsigned char)value, count, stream)));
}

CW_PUBLIC cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    CW_COUNT(cudaMemsetAsync_ptsz);
    READY();
    RT_ACT(cudaMemsetAsync_ptsz_v7000, CALL(g_drv_pt.MemsetD8Async(DP(devPtr), (unsigned char)value, count, stream)));
}

/* ------------------------------------------------------------------------ */
/* Launches                                                                 */
/* ------------------------------------------------------------------------ */

enum { L_PLAIN, L_COOP };

static cudaError_t launch_common(const void *func, dim3 g, dim3 b, void **args,
                                 size_t smem, cudaStream_t s, int pt, int kind)
{
    READY();
    CUfunction f = NULL;
    cudaError_t e = lookup_func(func, &f);
    if (e != cudaSuccess)
        return ret(e);
    if (bad_dims(g, b))
        return ret(cudaErrorInvalidConfiguration);
    const struct drv *d = DRV(pt);
    if (kind == L_COOP)
        return CALL(d->LaunchCoop(f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)smem, s, args));
    return CALL(d->LaunchKernel(f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)smem, s, args, NULL));
}

static cudaError_t impl_cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                       void **args, size_t sharedMem, cudaStream_t stream)
{
    RT_ACT(cudaLaunchKernel_v7000, launch_common(func, gridDim, blockDim, args, sharedMem, stream, 0, L_PLAIN));
}

CW_PUBLIC cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
                                            void **args, size_t sharedMem, cudaStream_t stream)
{
    CW_COUNT(cudaLaunchKernel_ptsz);
    RT_ACT(cudaLaunchKernel_ptsz_v7000, launch_common(func, gridDim, blockDim, args, sharedMem, stream, 1, L_PLAIN));
}

CW_PUBLIC cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                                  void **args, size_t sharedMem, cudaStream_t stream)
{
    CW_COUNT(cudaLaunchCooperativeKernel);
    RT_ACT(cudaLaunchCooperativeKernel_v9000, launch_common(func, gridDim, blockDim, args, sharedMem, stream, 0, L_COOP));
}

CW_PUBLIC cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
                                                       void **args, size_t sharedMem, cudaStream_t stream)
{
    CW_COUNT(cudaLaunchCooperativeKernel_ptsz);
    RT_ACT(cudaLaunchCooperativeKernel_ptsz_v9000, launch_common(func, gridDim, blockDim, args, sharedMem, stream, 1, L_COOP));
}

/* cudaLaunchConfig_t -> CUlaunchConfig; the attribute arrays have the same
 * layout (id, pad, 64-byte value union) so they are passed through. */
static cudaError_t launch_ex(const cudaLaunchConfig_t *c, const void *func, void **args, int pt)
{
    if (!c)
        return ret(cudaErrorInvalidValue);
    READY();
    CUfunction f = NULL;
    cudaError_t e = lookup_func(func, &f);
    if (e != cudaSuccess)
        return ret(e);
    if (bad_dims(c->gridDim, c->blockDim))
        return ret(cudaErrorInvalidConfiguration);
    CUlaunchConfig lc = {
        .gridDimX = c->gridDim.x, .gridDimY = c->gridDim.y, .gridDimZ = c->gridDim.z,
        .blockDimX = c->blockDim.x, .blockDimY = c->blockDim.y, .blockDimZ = c->blockDim.z,
        .sharedMemBytes = (unsigned)c->dynamicSmemBytes,
        .hStream = c->stream,
        .attrs = (CUlaunchAttribute *)c->attrs,
        .numAttrs = c->numAttrs,
    };
    return CALL(DRV(pt)->LaunchKernelEx(&lc, f, args, NULL));
}

CW_PUBLIC cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    CW_COUNT(cudaLaunchKernelExC);
    RT_ACT(cudaLaunchKernelExC_v11060, launch_ex(config, func, args, 0));
}

CW_PUBLIC cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    CW_COUNT(cudaLaunchKernelExC_ptsz);
    RT_ACT(cudaLaunchKernelExC_ptsz_v11060, launch_ex(config, func, args, 1));
}

CW_PUBLIC cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    CW_COUNT(cudaLaunchHostFunc);
    READY();
    return CALL(g_drv.LaunchHostFunc(stream, fn, userData));
}

CW_PUBLIC cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    CW_COUNT(cudaLaunchHostFunc_ptsz);
    READY();
    return CALL(g_drv_pt.LaunchHostFunc(stream, fn, userData));
}

CW_PUBLIC cudaError_t cudaFuncGetName(const char **name, const void *func)
{
    CW_COUNT(cudaFuncGetName);
    if (!name)
        return ret(cudaErrorInvalidValue);
    READY();
    CUfunction f = NULL;
    cudaError_t e = lookup_func(func, &f);
    if (e != cudaSuccess)
        return ret(e);
    return CALL(g_drv.FuncGetName(name, f));
}

/* ------------------------------------------------------------------------ */
/* Streams and events                                                       */
/* ------------------------------------------------------------------------ */

CW_PUBLIC cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    CW_COUNT(cudaStreamCreate);
    if (!pStream)
        return ret(cudaErrorInvalidValue);
    READY();
    return CALL(g_drv.StreamCreate(pStream, CU_STREAM_DEFAULT));
}

CW_PUBLIC cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    CW_COUNT(cudaStreamCreateWithFlags);
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return ret(cudaErrorInvalidValue);
    READY();
    return CALL(g_drv.StreamCreate(pStream, flags));
}

CW_PUBLIC cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    CW_COUNT(cudaStreamDestroy);
    READY();
    return CALL(g_drv.StreamDestroy(stream));
}

static cudaError_t impl_cudaStreamSynchronize(cudaStream_t stream)
{
    READY();
    return CALL(g_drv.StreamSynchronize(stream));
}

CW_PUBLIC cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    CW_COUNT(cudaStreamSynchronize_ptsz);
    READY();
    return CALL(g_drv_pt.StreamSynchronize(stream));
}

/* cudaStreamQuery's "not ready" is a status, not an error: it is not
 * recorded as the last error (as in CUDA). */
CW_PUBLIC cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    CW_COUNT(cudaStreamQuery);
    READY();
    CUresult r = g_drv.StreamQuery(stream);
    return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : CALL(r);
}

CW_PUBLIC cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
    CW_COUNT(cudaStreamQuery_ptsz);
    READY();
    CUresult r = g_drv_pt.StreamQuery(stream);
    return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : CALL(r);
}

CW_PUBLIC cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    CW_COUNT(cudaStreamWaitEvent);
    READY();
    return CALL(g_drv.StreamWaitEvent(stream, event, flags));
}

CW_PUBLIC cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    CW_COUNT(cudaStreamWaitEvent_ptsz);
    READY();
    return CALL(g_drv_pt.StreamWaitEvent(stream, event, flags));
}

CW_PUBLIC cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    CW_COUNT(cudaStreamBeginCapture);
    READY();
    return CALL(g_drv.BeginCapture(stream, (CUstreamCaptureMode)mode));
}

CW_PUBLIC cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    CW_COUNT(cudaStreamBeginCapture_ptsz);
    READY();
    return CALL(g_drv_pt.BeginCapture(stream, (CUstreamCaptureMode)mode));
}

CW_PUBLIC cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    CW_COUNT(cudaStreamEndCapture);
    READY();
    return CALL(g_drv.EndCapture(stream, pGraph));
}

CW_PUBLIC cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
    CW_COUNT(cudaStreamEndCapture_ptsz);
    READY();
    return CALL(g_drv_pt.EndCapture(stream, pGraph));
}

CW_PUBLIC cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    CW_COUNT(cudaEventCreate);
    if (!event)
        return ret(cudaErrorInvalidValue);
    READY();
    return CALL(g_drv.EventCreate(event, CU_EVENT_DEFAULT));
}

CW_PUBLIC cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    CW_COUNT(cudaEventCreateWithFlags);
    if (!event || (flags & ~7u))
        return ret(cudaErrorInvalidValue);
    READY();
    return CALL(g_drv.EventCreate(event, flags));
}

CW_PUBLIC cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    CW_COUNT(cudaEventRecord);
    READY();
    return CALL(g_drv.EventRecord(event, stream));
}

CW_PUBLIC cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    CW_COUNT(cudaEventRecord_ptsz);
    READY();
    return CALL(g_drv_pt.EventRecord(event, stream));
}

CW_PUBLIC cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    CW_COUNT(cudaEventSynchronize);
    READY();
    return CALL(g_drv.EventSynchronize(event));
}

CW_PUBLIC cudaError_t cudaEventQuery(cudaEvent_t event)
{
    CW_COUNT(cudaEventQuery);
    READY();
    CUresult r = g_drv.EventQuery(event);
    return r == CUDA_ERROR_NOT_READY ? cudaErrorNotReady : CALL(r);
}

CW_PUBLIC cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    CW_COUNT(cudaEventDestroy);
    READY();
    return CALL(g_drv.EventDestroy(event));
}

CW_PUBLIC cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    CW_COUNT(cudaEventElapsedTime);
    READY();
    return CALL(g_drv.EventElapsedTime(ms, start, end));
}

/* ------------------------------------------------------------------------ */
/* Graphs                                                                   */
/* ------------------------------------------------------------------------ */

/* Both instantiate calls (the same ABI since CUDA 12) go through the
 * driver's cuGraphInstantiateWithFlags, and launches through cuGraphLaunch,
 * as in the real runtime. */
CW_PUBLIC cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                           unsigned long long flags)
{
    CW_COUNT(cudaGraphInstantiate);
    READY();
    return CALL(g_drv.GraphInstantiate(pGraphExec, graph, flags));
}

CW_PUBLIC cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                    unsigned long long flags)
{
    CW_COUNT(cudaGraphInstantiateWithFlags);
    READY();
    return CALL(g_drv.GraphInstantiate(pGraphExec, graph, flags));
}

CW_PUBLIC cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    CW_COUNT(cudaGraphLaunch);
    READY();
    RT_ACT(cudaGraphLaunch_v10000, CALL(g_drv.GraphLaunch(graphExec, stream)));
}

CW_PUBLIC cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    CW_COUNT(cudaGraphLaunch_ptsz);
    READY();
    RT_ACT(cudaGraphLaunch_ptsz_v10000, CALL(g_drv_pt.GraphLaunch(graphExec, stream)));
}

CW_PUBLIC cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    CW_COUNT(cudaGraphDestroy);
    READY();
    return CALL(g_drv.GraphDestroy(graph));
}

CW_PUBLIC cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    CW_COUNT(cudaGraphExecDestroy);
    READY();
    return CALL(g_drv.GraphExecDestroy(graphExec));
}

/* ------------------------------------------------------------------------ */
/* Static-cudart entry points                                               */
/* ------------------------------------------------------------------------ */
/* cwr_static_<name>: the same implementation as <name> (same activity
 * reporting, CUPTI callbacks and records, under the real API's callback id
 * and name) under a name no tracer knows, as the runtime statically linked
 * into a program (nvcc's default -cudart static) is invisible to LD_PRELOAD.
 * Not counted: a static runtime has no counters either.  Used by
 * progs/static_launch.c. */

CW_PUBLIC void **__cudaRegisterFatBinary(void *fatCubin)
{
    CW_COUNT(__cudaRegisterFatBinary);
    return impl___cudaRegisterFatBinary(fatCubin);
}

CW_PUBLIC void **cwr_static___cudaRegisterFatBinary(void *fatCubin)
{
    return impl___cudaRegisterFatBinary(fatCubin);
}

CW_PUBLIC void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    CW_COUNT(__cudaRegisterFatBinaryEnd);
    impl___cudaRegisterFatBinaryEnd(fatCubinHandle);
}

CW_PUBLIC void cwr_static___cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    impl___cudaRegisterFatBinaryEnd(fatCubinHandle);
}

CW_PUBLIC void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
    char *deviceFun, const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
    dim3 *bDim, dim3 *gDim, int *wSize)
{
    CW_COUNT(__cudaRegisterFunction);
    impl___cudaRegisterFunction(fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize);
}

CW_PUBLIC void cwr_static___cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
    char *deviceFun, const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
    dim3 *bDim, dim3 *gDim, int *wSize)
{
    impl___cudaRegisterFunction(fatCubinHandle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize);
}

CW_PUBLIC void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    CW_COUNT(__cudaUnregisterFatBinary);
    impl___cudaUnregisterFatBinary(fatCubinHandle);
}

CW_PUBLIC void cwr_static___cudaUnregisterFatBinary(void **fatCubinHandle)
{
    impl___cudaUnregisterFatBinary(fatCubinHandle);
}

CW_PUBLIC cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    CW_COUNT(cudaMalloc);
    return impl_cudaMalloc(devPtr, size);
}

CW_PUBLIC cudaError_t cwr_static_cudaMalloc(void **devPtr, size_t size)
{
    return impl_cudaMalloc(devPtr, size);
}

CW_PUBLIC cudaError_t cudaFree(void *devPtr)
{
    CW_COUNT(cudaFree);
    return impl_cudaFree(devPtr);
}

CW_PUBLIC cudaError_t cwr_static_cudaFree(void *devPtr)
{
    return impl_cudaFree(devPtr);
}

CW_PUBLIC cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
    enum cudaMemcpyKind kind, cudaStream_t stream)
{
    CW_COUNT(cudaMemcpyAsync);
    return impl_cudaMemcpyAsync(dst, src, count, kind, stream);
}

CW_PUBLIC cudaError_t cwr_static_cudaMemcpyAsync(void *dst, const void *src, size_t count,
    enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return impl_cudaMemcpyAsync(dst, src, count, kind, stream);
}

CW_PUBLIC cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
    void **args, size_t sharedMem, cudaStream_t stream)
{
    CW_COUNT(cudaLaunchKernel);
    return impl_cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem, stream);
}

CW_PUBLIC cudaError_t cwr_static_cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
    void **args, size_t sharedMem, cudaStream_t stream)
{
    return impl_cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem, stream);
}

CW_PUBLIC cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    CW_COUNT(cudaStreamSynchronize);
    return impl_cudaStreamSynchronize(stream);
}

CW_PUBLIC cudaError_t cwr_static_cudaStreamSynchronize(cudaStream_t stream)
{
    return impl_cudaStreamSynchronize(stream);
}
