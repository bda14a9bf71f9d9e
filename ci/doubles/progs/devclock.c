/*
 * devclock
 *
 * Self test, through the driver double (linked with -lcuda), of what a
 * device-timing tracer relies on:
 *   - the simulated device clock: on a non-blocking stream it records event
 *     e0, launches sleep_2000us, records e1, and checks that
 *     cuEventElapsedTime(e0, e1) lies between 2000 us * (1 + drift) and the
 *     host time around the whole sequence * (1 + drift), with drift read
 *     from CWD_DEVICE_CLOCK_DRIFT_PPM like the double does (so with drift
 *     1000000, the elapsed time is at least 4 ms);
 *   - with CWD_TRUTH set: the ground-truth log.  It also runs a synchronous
 *     1000-byte H2D copy, an async 4 KiB memset, a host function and a
 *     stream-ordered free (the last two must not be logged), then reads the
 *     log back: exactly one line for sleep_2000us, whose true duration * (1 +
 *     drift) is at most the elapsed time of the events around it; lines per
 *     kind kernel=1 memcpy=1 memset=1;
 *   - cuCtxGetDevice / cuCtxGetDevice_v2, cuThreadExchangeStreamCaptureMode,
 *     cuStreamIsCapturing[_ptsz] (NONE, ACTIVE, INVALIDATED, and 906 on the
 *     legacy stream while a blocking stream captures), and their
 *     cuGetProcAddress rows.
 * Prints `ok <check>` lines, the elapsed time (`elapsed_us=`, varies), then
 * `result=PASS`, then the counters; exits 1 at the first failed check.
 */
#include "cw_prog.h"
#include "cw_cuda.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#define DRV(call)                                                              \
    do {                                                                       \
        CUresult cw_r_ = (call);                                               \
        if (cw_r_ != CUDA_SUCCESS)                                             \
            CW_DIE("%s:%d: %s failed: %d", __FILE__, __LINE__, #call, cw_r_);  \
    } while (0)

#define EXPECT_RC(call, want, what)                                            \
    do {                                                                       \
        CUresult cw_r_ = (call);                                               \
        if (cw_r_ != (CUresult)(want))                                         \
            CW_DIE("FAIL %s: %s returned %d, want %d", what, #call, cw_r_,     \
                   (int)(want));                                               \
        printf("ok %s\n", what);                                               \
    } while (0)

#define EXPECT(cond, ...)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL ");                                          \
            CW_DIE(__VA_ARGS__);                                               \
        }                                                                      \
    } while (0)

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void host_fn(void *arg) { (void)arg; }

static void *thread_mode(void *arg)
{
    CUstreamCaptureMode *m = arg;
    *m = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (cuThreadExchangeStreamCaptureMode(m) != CUDA_SUCCESS)
        *m = (CUstreamCaptureMode)-1;
    return NULL;
}

static void *sym(const char *name)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void *p = h ? dlsym(h, name) : NULL;
    if (!p)
        CW_DIE("dlsym(%s) failed", name);
    return p;
}

static void expect_proc(const char *name, int ver, int flags, const char *export)
{
    void *pfn = NULL;
    CUdriverProcAddressQueryResult st;
    CUresult rc = cuGetProcAddress_v2(name, &pfn, ver, (cuuint64_t)flags, &st);
    if (!export) {
        EXPECT(rc == CUDA_ERROR_NOT_FOUND && !pfn && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
               "cuGetProcAddress(%s, %d, %d): rc=%d status=%d, want 500/2", name, ver, flags, rc, st);
        printf("ok cuGetProcAddress(%s,%d,%d)=NULL status=2\n", name, ver, flags);
        return;
    }
    EXPECT(rc == CUDA_SUCCESS && pfn == sym(export),
           "cuGetProcAddress(%s, %d, %d): rc=%d, not %s", name, ver, flags, rc, export);
    printf("ok cuGetProcAddress(%s,%d,%d)=%s\n", name, ver, flags, export);
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc != 1)
        CW_DIE("usage: devclock");
    static const unsigned long long image[2] = { 0x00100001ba55ed50ULL, 0 };
    const char *ppm_s = getenv("CWD_DEVICE_CLOCK_DRIFT_PPM");
    double drift = ppm_s && *ppm_s ? strtod(ppm_s, NULL) * 1e-6 : 0.0;
    const char *truth = getenv("CWD_TRUTH");

    CUdevice dev = -1;
    EXPECT_RC(cuCtxGetDevice(&dev), CUDA_ERROR_NOT_INITIALIZED, "cuCtxGetDevice before cuInit");
    DRV(cuInit(0));
    EXPECT_RC(cuCtxGetDevice(&dev), 0, "cuCtxGetDevice");
    EXPECT(dev == 0, "cuCtxGetDevice gave %d", dev);
    EXPECT_RC(cuCtxGetDevice(NULL), CUDA_ERROR_INVALID_VALUE, "cuCtxGetDevice(NULL)");
    dev = -1;
    EXPECT_RC(cuCtxGetDevice_v2(&dev, NULL), 0, "cuCtxGetDevice_v2(NULL context)");
    EXPECT(dev == 0, "cuCtxGetDevice_v2 gave %d", dev);
    CUcontext ctx;
    DRV(cuDevicePrimaryCtxRetain(&ctx, 0));
    DRV(cuCtxSetCurrent(ctx));
    EXPECT_RC(cuCtxGetDevice_v2(&dev, ctx), 0, "cuCtxGetDevice_v2(primary context)");
    EXPECT_RC(cuCtxGetDevice_v2(&dev, (CUcontext)image), CUDA_ERROR_INVALID_CONTEXT,
              "cuCtxGetDevice_v2(bad context)");

    /* capture mode: per thread, initially GLOBAL */
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    EXPECT_RC(cuThreadExchangeStreamCaptureMode(&m), 0, "cuThreadExchangeStreamCaptureMode");
    EXPECT(m == CU_STREAM_CAPTURE_MODE_GLOBAL, "initial capture mode %d", m);
    pthread_t th;
    CUstreamCaptureMode other;
    if (pthread_create(&th, NULL, thread_mode, &other) != 0 || pthread_join(th, NULL) != 0)
        CW_DIE("pthread");
    EXPECT(other == CU_STREAM_CAPTURE_MODE_GLOBAL, "other thread's initial mode %d", other);
    m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    EXPECT_RC(cuThreadExchangeStreamCaptureMode(&m), 0, "cuThreadExchangeStreamCaptureMode back");
    EXPECT(m == CU_STREAM_CAPTURE_MODE_RELAXED, "swapped-out mode %d", m);
    m = (CUstreamCaptureMode)3;
    EXPECT_RC(cuThreadExchangeStreamCaptureMode(&m), CUDA_ERROR_INVALID_VALUE,
              "cuThreadExchangeStreamCaptureMode(3)");
    EXPECT_RC(cuThreadExchangeStreamCaptureMode(NULL), CUDA_ERROR_INVALID_VALUE,
              "cuThreadExchangeStreamCaptureMode(NULL)");
    m = CU_STREAM_CAPTURE_MODE_GLOBAL;
    DRV(cuThreadExchangeStreamCaptureMode(&m));
    EXPECT(m == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, "mode after a failed exchange %d", m);

    /* capture status */
    CUstream blk, nb;
    DRV(cuStreamCreate(&blk, CU_STREAM_DEFAULT));
    DRV(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CUstreamCaptureStatus cs = (CUstreamCaptureStatus)7;
    EXPECT_RC(cuStreamIsCapturing(blk, &cs), 0, "cuStreamIsCapturing(idle)");
    EXPECT(cs == CU_STREAM_CAPTURE_STATUS_NONE, "idle status %d", cs);
    EXPECT_RC(cuStreamIsCapturing(blk, NULL), CUDA_ERROR_INVALID_VALUE, "cuStreamIsCapturing(NULL status)");
    EXPECT_RC(cuStreamIsCapturing((CUstream)image, &cs), CUDA_ERROR_INVALID_HANDLE,
              "cuStreamIsCapturing(bad handle)");
    DRV(cuStreamBeginCapture_v2(nb, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_RC(cuStreamIsCapturing(nb, &cs), 0, "cuStreamIsCapturing(capturing)");
    EXPECT(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE, "capturing status %d", cs);
    cs = (CUstreamCaptureStatus)7;
    EXPECT_RC(cuStreamIsCapturing(NULL, &cs), 0, "cuStreamIsCapturing(legacy, non-blocking stream capturing)");
    EXPECT(cs == CU_STREAM_CAPTURE_STATUS_NONE, "legacy status %d", cs);
    DRV(cuStreamBeginCapture_v2(blk, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT_RC(cuStreamIsCapturing(NULL, &cs), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
              "cuStreamIsCapturing(legacy, blocking stream capturing)");
    EXPECT_RC(cuStreamIsCapturing(CU_STREAM_LEGACY, &cs), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
              "cuStreamIsCapturing(CU_STREAM_LEGACY, blocking stream capturing)");
    cs = (CUstreamCaptureStatus)7;
    EXPECT_RC(cuStreamIsCapturing_ptsz(NULL, &cs), 0, "cuStreamIsCapturing_ptsz(per-thread stream)");
    EXPECT(cs == CU_STREAM_CAPTURE_STATUS_NONE, "per-thread status %d", cs);
    EXPECT_RC(cuStreamSynchronize(blk), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "sync while capturing");
    EXPECT_RC(cuStreamIsCapturing_ptsz(blk, &cs), 0, "cuStreamIsCapturing_ptsz(invalidated)");
    EXPECT(cs == CU_STREAM_CAPTURE_STATUS_INVALIDATED, "invalidated status %d", cs);
    CUgraph g;
    EXPECT_RC(cuStreamEndCapture(blk, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "end invalidated capture");
    DRV(cuStreamEndCapture(nb, &g));
    DRV(cuGraphDestroy(g));
    EXPECT_RC(cuStreamIsCapturing(blk, &cs), 0, "cuStreamIsCapturing(after end)");
    EXPECT(cs == CU_STREAM_CAPTURE_STATUS_NONE, "status after end %d", cs);
    EXPECT_RC(cuStreamIsCapturing(NULL, &cs), 0, "cuStreamIsCapturing(legacy, no capture)");
    EXPECT(cs == CU_STREAM_CAPTURE_STATUS_NONE, "legacy status %d", cs);

    /* cuGetProcAddress rows */
    expect_proc("cuStreamIsCapturing", 12000, 0, "cuStreamIsCapturing");
    expect_proc("cuStreamIsCapturing", 10000, 2, "cuStreamIsCapturing_ptsz");
    expect_proc("cuStreamIsCapturing", 9020, 0, NULL);
    expect_proc("cuThreadExchangeStreamCaptureMode", 10010, 2, "cuThreadExchangeStreamCaptureMode");
    expect_proc("cuThreadExchangeStreamCaptureMode", 10000, 0, NULL);
    expect_proc("cuCtxGetDevice", 12080, 2, "cuCtxGetDevice");
    expect_proc("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2");

    /* device clock: events around a 2 ms kernel on a non-blocking stream */
    CUmodule mod;
    CUfunction f;
    DRV(cuModuleLoadData(&mod, image));
    DRV(cuModuleGetFunction(&f, mod, "sleep_2000us"));
    CUevent e0, e1;
    DRV(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    DRV(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    uint64_t h_before = mono_ns();
    DRV(cuEventRecord(e0, nb));
    DRV(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nb, NULL, NULL));
    DRV(cuEventRecord(e1, nb));
    DRV(cuStreamSynchronize(nb));
    uint64_t h_after = mono_ns();
    float ms = -1;
    DRV(cuEventElapsedTime_v2(&ms, e0, e1));
    double el_ns = (double)ms * 1e6;
    double lo = 2000000.0 * (1 + drift), hi = (double)(h_after - h_before) * (1 + drift);
    double tol = 1e-6 * el_ns + 10;
    EXPECT(el_ns + tol >= lo && el_ns <= hi + tol,
           "elapsed %.0f ns outside [%.0f, %.0f] (drift %g)", el_ns, lo, hi, drift);
    printf("ok elapsed time is in device-clock units (drift %g)\n", drift);
    printf("elapsed_us=%.1f\n", el_ns / 1e3);

    if (truth && *truth) {
        /* work that is logged (a copy, a memset) and not (a host function,
         * a stream-ordered free) */
        CUdeviceptr d1, d2;
        char hbuf[1000];
        memset(hbuf, 0, sizeof hbuf);
        DRV(cuMemAlloc_v2(&d1, 4096));
        DRV(cuMemAlloc_v2(&d2, 256));
        DRV(cuMemcpyHtoD_v2(d1, hbuf, sizeof hbuf));
        DRV(cuMemsetD8Async(d1, 0, 4096, nb));
        DRV(cuLaunchHostFunc(nb, host_fn, NULL));
        DRV(cuMemFreeAsync(d2, nb));
        DRV(cuStreamSynchronize(nb));
        DRV(cuMemFree_v2(d1));

        FILE *fp = fopen(truth, "r");
        if (!fp)
            CW_DIE("cannot read CWD_TRUTH=%s", truth);
        char line[512];
        int nk = 0, nc = 0, ns = 0, found = 0;
        while (fgets(line, sizeof line, fp)) {
            char kind[16], name[256];
            unsigned sid;
            unsigned long long t0, t1;
            if (sscanf(line, "%15s %u %llu %llu %255s", kind, &sid, &t0, &t1, name) != 5 || t1 < t0)
                CW_DIE("FAIL bad truth line: %s", line);
            if (strcmp(kind, "kernel") == 0)
                nk++;
            else if (strcmp(kind, "memcpy") == 0 && strcmp(name, "-") == 0)
                nc++;
            else if (strcmp(kind, "memset") == 0 && strcmp(name, "-") == 0)
                ns++;
            else
                CW_DIE("FAIL bad truth line: %s", line);
            if (strcmp(name, "sleep_2000us") == 0) {
                found++;
                double dev_dur = (double)(t1 - t0) * (1 + drift);
                EXPECT(t1 - t0 >= 2000000, "true duration %llu < 2 ms", t1 - t0);
                EXPECT(t0 >= h_before && t1 <= h_after, "truth times outside the host bracket");
                EXPECT(el_ns + tol >= dev_dur,
                       "events around the kernel (%.0f ns) closer than its true duration * (1 + drift) "
                       "(%.0f ns)", el_ns, dev_dur);
            }
        }
        fclose(fp);
        EXPECT(found == 1, "%d truth lines for sleep_2000us", found);
        printf("ok events bracket the kernel's true start and end\n");
        EXPECT(nk == 1 && nc == 1 && ns == 1, "truth lines kernel=%d memcpy=%d memset=%d", nk, nc, ns);
        printf("ok truth kernel=%d memcpy=%d memset=%d\n", nk, nc, ns);
    }

    DRV(cuEventDestroy_v2(e0));
    DRV(cuEventDestroy_v2(e1));
    DRV(cuStreamDestroy_v2(blk));
    DRV(cuStreamDestroy_v2(nb));
    printf("result=PASS\n");
    cw_dump_counters();
    return 0;
}
