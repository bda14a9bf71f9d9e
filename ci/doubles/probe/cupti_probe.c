/*
 * cupti_probe MODE - run on a REAL GPU with NVIDIA's libcupti.so.13 to check
 * the assumptions the CUPTI double (ci/doubles/libcupti_double.c) is built
 * on.  Not built in CI: `make -C ci cupti-probe` needs NVIDIA's cuda.h
 * (CUDA_INC) and CUPTI headers and library (CUPTI_INC, CUPTI_LIB).
 *
 * Kernels: a PTX kernel that spins on %globaltimer for the number of
 * nanoseconds it is given (JIT-compiled by the driver).  The rt_* modes use
 * the real runtime, the others the driver API only.  Output of a run on an
 * H200: ci/doubles/probe/h200-2026-11-29.log.
 *
 * MODE:
 *   main     subscribe twice, error codes, timestamp callback first, enable
 *            CONCURRENT_KERNEL, MEMCPY, MEMSET, EXTERNAL_CORRELATION only;
 *            launches/copies/memsets/graph launch with external ids; print
 *            every record with its offset in the buffer and the threads
 *            that ran the callbacks
 *   api      as main, with CUPTI_ACTIVITY_KIND_DRIVER enabled too
 *   late_ts  enable a kind, then register the timestamp callback
 *   no_ts    no timestamp callback: which clock are records on?
 *            (main, api and late_ts also register it again after enabling:
 *            the real one accepts that)
 *   small    1 KiB buffers, 40 launches, no flush for 2 s: who delivers?
 *   rt_driver / rt_runtime / rt_both
 *            runtime API launches (cudaLaunchKernel of a cudaKernel_t),
 *            cudaMemcpyAsync, a direct cuLaunchKernel and a runtime graph
 *            launch, each inside an external id, with the DRIVER kind, the
 *            RUNTIME kind or both enabled: which API records and external
 *            correlation records appear for runtime calls?
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pid_t tid(void) { return (pid_t)syscall(SYS_gettid); }
static pid_t g_main_tid;

#define CK(x)                                                                  \
    do {                                                                       \
        CUresult r_ = (x);                                                     \
        if (r_ != CUDA_SUCCESS) {                                              \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, r_);   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)
#define RC(label, x) printf("rc %s = %d\n", label, (int)(x))

static uint64_t clk(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long g_ts_main, g_ts_other;
static uint64_t ts_cb(void)
{
    if (tid() == g_main_tid)
        __atomic_add_fetch(&g_ts_main, 1, __ATOMIC_RELAXED);
    else
        __atomic_add_fetch(&g_ts_other, 1, __ATOMIC_RELAXED);
    return clk(CLOCK_MONOTONIC);
}

static size_t g_bufsize = 1 << 20;
static int g_nreq;
static void buf_req(uint8_t **buf, size_t *size, size_t *max)
{
    g_nreq++;
    printf("bufferRequested #%d on %s thread\n", g_nreq, tid() == g_main_tid ? "main" : "other");
    *buf = aligned_alloc(8, g_bufsize);
    *size = g_bufsize;
    *max = 0;
}

static void print_record(const CUpti_Activity *r, size_t off)
{
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const void *)r;
        printf("  @%zu KERNEL kind=%d name=%s corr=%u stream=%u dev=%u ctx=%u grid=%d,%d,%d "
               "block=%d,%d,%d graphId=%u graphNodeId=%llu dur_ns=%llu start=%llu completed=%llu "
               "gridId=%lld launchType=%d queued=%llu submitted=%llu channelType=%d\n",
               off, r->kind, k->name, k->correlationId, k->streamId, k->deviceId, k->contextId,
               k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ, k->graphId,
               (unsigned long long)k->graphNodeId, (unsigned long long)(k->end - k->start),
               (unsigned long long)k->start, (unsigned long long)k->completed,
               (long long)k->gridId, k->launchType, (unsigned long long)k->queued,
               (unsigned long long)k->submitted, (int)k->channelType);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const void *)r;
        printf("  @%zu MEMCPY copyKind=%d src=%d dst=%d flags=%d bytes=%llu corr=%u rtcorr=%u "
               "stream=%u dev=%u ctx=%u graphId=%u node=%llu copyCount=%llu dur_ns=%llu start=%llu\n",
               off, m->copyKind, m->srcKind, m->dstKind, m->flags, (unsigned long long)m->bytes,
               m->correlationId, m->runtimeCorrelationId, m->streamId, m->deviceId, m->contextId,
               m->graphId, (unsigned long long)m->graphNodeId, (unsigned long long)m->copyCount,
               (unsigned long long)(m->end - m->start), (unsigned long long)m->start);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const void *)r;
        printf("  @%zu MEMSET value=%u bytes=%llu corr=%u stream=%u dev=%u ctx=%u flags=%d "
               "memoryKind=%d graphId=%u dur_ns=%llu\n",
               off, m->value, (unsigned long long)m->bytes, m->correlationId, m->streamId,
               m->deviceId, m->contextId, m->flags, m->memoryKind, m->graphId,
               (unsigned long long)(m->end - m->start));
        break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *e = (const void *)r;
        printf("  @%zu EXTCORR externalKind=%d externalId=%llu corr=%u\n", off, e->externalKind,
               (unsigned long long)e->externalId, e->correlationId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const CUpti_ActivityAPI *a = (const void *)r;
        printf("  @%zu %s cbid=%u corr=%u ret=%u tid_is_main=%d\n", off,
               r->kind == CUPTI_ACTIVITY_KIND_DRIVER ? "DRIVER" : "RUNTIME", a->cbid,
               a->correlationId, a->returnValue, a->threadId == (uint32_t)g_main_tid);
        break;
    }
    default:
        printf("  @%zu kind=%d\n", off, r->kind);
    }
}

static int g_ncomp;
static void buf_done(CUcontext ctx, uint32_t sid, uint8_t *buf, size_t size, size_t valid)
{
    g_ncomp++;
    printf("bufferCompleted #%d on %s thread ctx=%p stream=%u size=%zu valid=%zu\n", g_ncomp,
           tid() == g_main_tid ? "main" : "other", (void *)ctx, sid, size, valid);
    CUpti_Activity *r = NULL;
    CUptiResult st;
    int n = 0;
    while ((st = cuptiActivityGetNextRecord(buf, valid, &r)) == CUPTI_SUCCESS) {
        print_record(r, (size_t)((uint8_t *)r - buf));
        n++;
    }
    printf("  records=%d end_rc=%d\n", n, (int)st);
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(ctx, sid, &dropped);
    printf("  dropped=%zu\n", dropped);
    fflush(stdout);
    free(buf);
}

static void cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
    (void)u; (void)d; (void)id; (void)data;
}

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry spin(.param .u64 ns)\n{\n"
    " .reg .u64 %rd<5>;\n .reg .pred %p;\n"
    " ld.param.u64 %rd1, [ns];\n mov.u64 %rd2, %globaltimer;\n"
    " add.u64 %rd3, %rd2, %rd1;\n"
    "LOOP:\n mov.u64 %rd4, %globaltimer;\n setp.lt.u64 %p, %rd4, %rd3;\n"
    " @%p bra LOOP;\n ret;\n}\n";

static dim3 dim3_(unsigned x)
{
    dim3 d = { x, 1, 1 };
    return d;
}

static CUfunction g_fn;
static void launch(CUstream s, uint64_t ns, unsigned gx, unsigned bx)
{
    void *args[] = { &ns };
    CK(cuLaunchKernel(g_fn, gx, 1, 1, bx, 1, 1, 0, s, args, NULL));
}

static void cuda_setup(CUstream *s)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoadData(&mod, ptx));
    CK(cuModuleGetFunction(&g_fn, mod, "spin"));
    CK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING));
}

#define RT(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, e_);   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static int runtime_modes(const char *mode)
{
    RC("registerCallbacks", cuptiActivityRegisterCallbacks(buf_req, buf_done));
    RC("registerTimestamp", cuptiActivityRegisterTimestampCallback(ts_cb));
    RC("enable CONCURRENT_KERNEL", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    RC("enable MEMCPY", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    RC("enable EXTERNAL_CORRELATION", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    if (strcmp(mode, "rt_runtime") != 0)
        RC("enable DRIVER", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
    if (strcmp(mode, "rt_driver") != 0)
        RC("enable RUNTIME", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
    const CUpti_ExternalCorrelationKind K = CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN;
    uint64_t id;
    cudaStream_t s;
    RT(cudaStreamCreate(&s));
    cudaLibrary_t lib;
    cudaKernel_t k;
    RT(cudaLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
    RT(cudaLibraryGetKernel(&k, lib, "spin"));
    uint64_t ns = 20000;
    void *args[] = { &ns };
    printf("--- runtime launches 1000, 1001\n");
    for (int i = 0; i < 2; i++) {
        cuptiActivityPushExternalCorrelationId(K, 1000 + i);
        RT(cudaLaunchKernel((const void *)k, dim3_(1), dim3_(32), args, 0, s));
        cuptiActivityPopExternalCorrelationId(K, &id);
    }
    void *d, *h = calloc(1, 65536);
    RT(cudaMalloc(&d, 65536));
    printf("--- cudaMemcpyAsync 2000\n");
    cuptiActivityPushExternalCorrelationId(K, 2000);
    RT(cudaMemcpyAsync(d, h, 65536, cudaMemcpyHostToDevice, s));
    cuptiActivityPopExternalCorrelationId(K, &id);
    printf("--- direct cuLaunchKernel 3000\n");
    CUfunction f;
    CK(cuKernelGetFunction(&f, (CUkernel)k));
    cuptiActivityPushExternalCorrelationId(K, 3000);
    CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, (CUstream)s, args, NULL));
    cuptiActivityPopExternalCorrelationId(K, &id);
    cudaGraph_t g;
    cudaGraphExec_t x;
    RT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    RT(cudaLaunchKernel((const void *)k, dim3_(1), dim3_(32), args, 0, s));
    RT(cudaLaunchKernel((const void *)k, dim3_(2), dim3_(32), args, 0, s));
    RT(cudaStreamEndCapture(s, &g));
    RT(cudaGraphInstantiate(&x, g, 0));
    printf("--- cudaGraphLaunch 4000\n");
    cuptiActivityPushExternalCorrelationId(K, 4000);
    RT(cudaGraphLaunch(x, s));
    cuptiActivityPopExternalCorrelationId(K, &id);
    RT(cudaStreamSynchronize(s));
    RC("flushAll(FORCED)", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "main";
    g_main_tid = tid();
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint32_t ver = 0;
    RC("cuptiGetVersion", cuptiGetVersion(&ver));
    printf("version=%u sizeof Kernel10=%zu Memcpy6=%zu Memset4=%zu ExtCorr=%zu API=%zu\n", ver,
           sizeof(CUpti_ActivityKernel10), sizeof(CUpti_ActivityMemcpy6),
           sizeof(CUpti_ActivityMemset4), sizeof(CUpti_ActivityExternalCorrelation),
           sizeof(CUpti_ActivityAPI));

    CUpti_SubscriberHandle s1 = NULL, s2 = NULL;
    RC("subscribe#1", cuptiSubscribe(&s1, cb, NULL));
    RC("subscribe#2", cuptiSubscribe(&s2, cb, NULL));
    RC("unsubscribe#1", cuptiUnsubscribe(s1));
    RC("subscribe#3", cuptiSubscribe(&s1, cb, NULL));
    RC("unsubscribe(NULL)", cuptiUnsubscribe(NULL));
    RC("flushAll before RegisterCallbacks", cuptiActivityFlushAll(0));
    uint64_t id = 0;
    RC("pop empty", cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, &id));
    RC("push kind INVALID", cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, 1));
    RC("push kind SIZE", cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_SIZE, 1));
    RC("enable kind 9999", cuptiActivityEnable((CUpti_ActivityKind)9999));
    RC("registerTimestamp(NULL)", cuptiActivityRegisterTimestampCallback(NULL));
    RC("registerCallbacks(NULL,NULL)", cuptiActivityRegisterCallbacks(NULL, NULL));
    CUpti_Activity *rec = NULL;
    uint8_t dummy[64] = { 0 };
    RC("getNextRecord(NULL buffer)", cuptiActivityGetNextRecord(NULL, 0, &rec));
    RC("getNextRecord(valid=0)", cuptiActivityGetNextRecord(dummy, 0, &rec));
    size_t dr = 0;
    RC("getNumDropped(NULL ptr)", cuptiActivityGetNumDroppedRecords(NULL, 0, NULL));
    RC("getNumDropped", cuptiActivityGetNumDroppedRecords(NULL, 0, &dr));
    const char *str = NULL;
    RC("getResultString(39)", cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &str));
    printf("str39=%s\n", str ? str : "(null)");
    RC("getResultString(12345)", cuptiGetResultString((CUptiResult)12345, &str));

    if (!strncmp(mode, "rt_", 3))
        return runtime_modes(mode);
    if (!strcmp(mode, "small"))
        g_bufsize = 1024;
    RC("registerCallbacks", cuptiActivityRegisterCallbacks(buf_req, buf_done));
    if (!strcmp(mode, "late_ts")) {
        RC("enable CONCURRENT_KERNEL", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        RC("registerTimestamp after enable", cuptiActivityRegisterTimestampCallback(ts_cb));
    } else if (strcmp(mode, "no_ts") != 0) {
        RC("registerTimestamp", cuptiActivityRegisterTimestampCallback(ts_cb));
    }
    uint64_t t = 0;
    RC("getTimestamp", cuptiGetTimestamp(&t));
    printf("getTimestamp-mono_ns=%lld getTimestamp-real_ns=%lld\n",
           (long long)(t - clk(CLOCK_MONOTONIC)), (long long)(t - clk(CLOCK_REALTIME)));
    RC("enable CONCURRENT_KERNEL", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    RC("enable MEMCPY", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
    RC("enable MEMSET", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
    RC("enable EXTERNAL_CORRELATION", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    if (!strcmp(mode, "api"))
        RC("enable DRIVER", cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
    if (strcmp(mode, "no_ts") != 0)
        RC("registerTimestamp again after enable", cuptiActivityRegisterTimestampCallback(ts_cb));

    CUstream s;
    cuda_setup(&s);
    const CUpti_ExternalCorrelationKind K = CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN;

    if (!strcmp(mode, "small")) {
        for (int i = 0; i < 40; i++) {
            cuptiActivityPushExternalCorrelationId(K, 1000 + i);
            launch(s, 1000, 1, 32);
            cuptiActivityPopExternalCorrelationId(K, &id);
        }
        CK(cuStreamSynchronize(s));
        printf("sleeping 2s without flush (completed so far: %d)\n", g_ncomp);
        sleep(2);
        printf("after sleep completed=%d; FlushAll(0)\n", g_ncomp);
        RC("flushAll(0)", cuptiActivityFlushAll(0));
        printf("after flushAll(0) completed=%d\n", g_ncomp);
        RC("flushAll(FORCED)", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
        printf("after forced completed=%d\n", g_ncomp);
        return 0;
    }

    uint64_t before_mono = clk(CLOCK_MONOTONIC), before_real = clk(CLOCK_REALTIME);
    printf("host mono=%llu real=%llu\n", (unsigned long long)before_mono, (unsigned long long)before_real);
    for (int i = 0; i < 3; i++) {
        RC("push", cuptiActivityPushExternalCorrelationId(K, 1000 + i));
        launch(s, 100000, 2, 64);
        RC("pop", cuptiActivityPopExternalCorrelationId(K, &id));
        printf("popped=%llu\n", (unsigned long long)id);
    }
    launch(s, 10000, 1, 32); /* no external id */
    /* two kinds pushed at once */
    cuptiActivityPushExternalCorrelationId(K, 1100);
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 7100);
    launch(s, 10000, 1, 32);
    cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, &id);
    cuptiActivityPopExternalCorrelationId(K, &id);
    /* nested same kind: top wins? */
    cuptiActivityPushExternalCorrelationId(K, 5000);
    cuptiActivityPushExternalCorrelationId(K, 5001);
    launch(s, 10000, 1, 32);
    cuptiActivityPopExternalCorrelationId(K, &id);
    printf("popped nested=%llu\n", (unsigned long long)id);
    cuptiActivityPopExternalCorrelationId(K, &id);
    printf("popped outer=%llu\n", (unsigned long long)id);

    CUdeviceptr d;
    size_t bytes = 1 << 20;
    CK(cuMemAlloc(&d, bytes));
    void *h = malloc(bytes);
    memset(h, 1, bytes);
    cuptiActivityPushExternalCorrelationId(K, 2000);
    CK(cuMemcpyHtoDAsync(d, h, bytes, s));
    cuptiActivityPopExternalCorrelationId(K, &id);
    cuptiActivityPushExternalCorrelationId(K, 2001);
    CK(cuMemsetD8Async(d, 7, bytes, s));
    cuptiActivityPopExternalCorrelationId(K, &id);
    CK(cuStreamSynchronize(s));
    cuptiActivityPushExternalCorrelationId(K, 2002);
    CK(cuMemcpyHtoD(d, h, 4096)); /* synchronous, legacy stream */
    cuptiActivityPopExternalCorrelationId(K, &id);

    /* a captured 2-kernel graph + a memset node */
    CUgraph g;
    CUgraphExec x;
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    cuptiActivityPushExternalCorrelationId(K, 3000);
    launch(s, 50000, 1, 32);
    cuptiActivityPopExternalCorrelationId(K, &id);
    launch(s, 20000, 3, 32);
    CK(cuMemsetD8Async(d, 0, 4096, s));
    CK(cuStreamEndCapture(s, &g));
    CK(cuGraphInstantiate(&x, g, 0));
    for (int i = 0; i < 2; i++) {
        cuptiActivityPushExternalCorrelationId(K, 4000 + i);
        CK(cuGraphLaunch(x, s));
        cuptiActivityPopExternalCorrelationId(K, &id);
    }
    CK(cuStreamSynchronize(s));
    printf("host after mono=%llu\n", (unsigned long long)clk(CLOCK_MONOTONIC));
    printf("before flush: requested=%d completed=%d ts_main=%ld ts_other=%ld\n", g_nreq, g_ncomp,
           g_ts_main, g_ts_other);
    RC("flushAll(FORCED)", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    printf("after flush: requested=%d completed=%d ts_main=%ld ts_other=%ld\n", g_nreq, g_ncomp,
           g_ts_main, g_ts_other);
    RC("flushAll(FORCED) again", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    printf("after 2nd flush completed=%d\n", g_ncomp);
    RC("disable CONCURRENT_KERNEL", cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    RC("disable CONCURRENT_KERNEL again", cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    launch(s, 1000, 1, 32);
    CK(cuStreamSynchronize(s));
    RC("flushAll(FORCED) after disable", cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    RC("disable EXTERNAL_CORRELATION", cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    RC("unsubscribe", cuptiUnsubscribe(s1));
    printf("done completed=%d\n", g_ncomp);
    return 0;
}
