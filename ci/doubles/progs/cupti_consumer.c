/*
 * cupti_consumer N
 *
 * A CUPTI Activity API client, the way a tracer uses it, run against the
 * CUPTI double (it dlopens "libcupti.so.13") and the runtime double (linked).
 *
 * It subscribes (a second cuptiSubscribe must fail with 39), registers a
 * CLOCK_MONOTONIC timestamp callback and 4 KiB buffers, and enables
 * CONCURRENT_KERNEL, MEMCPY, MEMSET, EXTERNAL_CORRELATION, RUNTIME and DRIVER
 * (measured on an H200: external correlation records come only with the API
 * record of the call, so the API kinds are needed; RUNTIME for runtime calls,
 * DRIVER for direct driver calls).  On one stream it then
 *   - captures a graph of sleep_10us + sleep_1us (pushing external id 900
 *     around the first captured launch, which makes an external correlation
 *     record that no device record will ever match) and instantiates it;
 *   - launches sleep_100us N times, pushing external id 1000+i around each;
 *   - 1 MiB cudaMemcpyAsync host->device (id 2000), 64 KiB cudaMemsetAsync
 *     (id 2001), one cudaGraphLaunch (id 3000) and one direct driver
 *     cuLaunchKernel of sleep_10us (id 4000);
 * synchronizes, calls cuptiActivityFlushAll(FORCED), and prints one line per
 * record (sorted by correlation id), then its checks:
 *   - every kernel lasted at least its sleep_<N>us;
 *   - launch i has exactly one kernel record, mapped to external id 1000+i;
 *   - the graph's two kernels share the graph launch's correlation id (the
 *     one external id 3000 maps to) and carry a graph id and distinct node ids;
 *   - copy, memset and the driver launch map to 2000, 2001 and 4000;
 *   - every timestamp is on the callback's clock (within the run);
 *   - bufferCompleted never runs on the main thread.
 *   - records delivered + records dropped = 3N+16, the records this work makes.
 * With records dropped (CWC_DROP_EVERY) an expected record may be missing,
 * but no mapping may be wrong.  Prints result=PASS or FAIL.
 * With CWC_BUSY=1, cuptiSubscribe fails with 39: it prints cupti=busy, runs
 * the work without CUPTI (as a tracer falls back) and passes.
 *
 * cupti_consumer callbacks N: the callback API, runtime domain, with the
 * runtime called as a statically linked one (cwr_static_* entry points, see
 * static_launch.c).  Checks cuptiEnableCallback/Domain's errors, enables the
 * runtime domain and CONCURRENT_KERNEL, MEMCPY, RUNTIME and
 * EXTERNAL_CORRELATION, makes N launches of sleep_10us and one async copy;
 * its callback pushes external id 5000+correlationId at API_ENTER (and pops
 * it at API_EXIT), and stores a value in *correlationData at ENTER that it
 * must find at EXIT.  Prints one line per ENTER/EXIT pair and checks each
 * pair: functionName, cbid, one correlation id for ENTER, EXIT, the RUNTIME
 * record and the kernel/copy record, the id pushed in ENTER mapped to it,
 * functionReturnValue NULL at ENTER and cudaSuccess at EXIT, a context.
 * After cuptiEnableDomain(0) a launch makes no callback.
 */
#include "cw_prog.h"
#include "cw_kernels.h"
#include "cw_cupti.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CUPTI_FUNCS(X)                                                         \
    X(cuptiGetVersion) X(cuptiGetResultString) X(cuptiSubscribe)               \
    X(cuptiUnsubscribe) X(cuptiActivityRegisterCallbacks)                      \
    X(cuptiActivityRegisterTimestampCallback) X(cuptiActivityEnable)           \
    X(cuptiActivityDisable) X(cuptiActivityFlushAll)                           \
    X(cuptiActivityGetNextRecord) X(cuptiActivityGetNumDroppedRecords)         \
    X(cuptiActivityPushExternalCorrelationId)                                  \
    X(cuptiActivityPopExternalCorrelationId)                                   \
    X(cuptiEnableCallback) X(cuptiEnableDomain)

static struct {
#define X(n) __typeof__(n) *n;
    CUPTI_FUNCS(X)
#undef X
} C;

enum { BUF_SIZE = 4096, EXT = CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN };

/* One stored record (copied out of the buffers in bufferCompleted). */
typedef struct {
    uint32_t kind, corr, cbid, copy_kind, flags;
    const char *name;
    uint64_t start, end, bytes, ext_id, node;
    uint32_t ext_kind, graph, stream;
    int buffer; /* delivery order of its buffer */
} rec;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static rec *g_recs;
static size_t g_nrecs, g_cap;
static int g_nbuf_req, g_nbuf_done, g_done_on_main;
static size_t g_dropped;
static pid_t g_main_tid;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t ts_callback(void) { return mono_ns(); }

static void buf_requested(uint8_t **buffer, size_t *size, size_t *max)
{
    *buffer = aligned_alloc(8, BUF_SIZE);
    *size = *buffer ? BUF_SIZE : 0;
    *max = 0;
    __atomic_add_fetch(&g_nbuf_req, 1, __ATOMIC_RELAXED);
}

static void add(const rec *r)
{
    if (g_nrecs == g_cap) {
        g_cap = g_cap ? 2 * g_cap : 256;
        g_recs = realloc(g_recs, g_cap * sizeof *g_recs);
        if (!g_recs)
            CW_DIE("out of memory");
    }
    g_recs[g_nrecs++] = *r;
}

static void buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                          size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    pthread_mutex_lock(&g_mu);
    int bufno = ++g_nbuf_done;
    if ((pid_t)syscall(SYS_gettid) == g_main_tid)
        g_done_on_main++;
    CUpti_Activity *a = NULL;
    CUptiResult st;
    while ((st = C.cuptiActivityGetNextRecord(buffer, valid, &a)) == CUPTI_SUCCESS) {
        rec r;
        memset(&r, 0, sizeof r);
        r.kind = a->kind;
        r.buffer = bufno;
        switch (a->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            const CUpti_ActivityKernel10 *k = (const void *)a;
            r.corr = k->correlationId;
            r.name = k->name;
            r.start = k->start;
            r.end = k->end;
            r.graph = k->graphId;
            r.node = k->graphNodeId;
            r.stream = k->streamId;
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy6 *m = (const void *)a;
            r.corr = m->correlationId;
            r.start = m->start;
            r.end = m->end;
            r.bytes = m->bytes;
            r.copy_kind = m->copyKind;
            r.flags = m->flags;
            r.stream = m->streamId;
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const CUpti_ActivityMemset4 *m = (const void *)a;
            r.corr = m->correlationId;
            r.start = m->start;
            r.end = m->end;
            r.bytes = m->bytes;
            r.flags = m->flags;
            r.stream = m->streamId;
            break;
        }
        case CUPTI_ACTIVITY_KIND_DRIVER:
        case CUPTI_ACTIVITY_KIND_RUNTIME: {
            const CUpti_ActivityAPI *p = (const void *)a;
            r.corr = p->correlationId;
            r.cbid = p->cbid;
            r.start = p->start;
            r.end = p->end;
            break;
        }
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
            const CUpti_ActivityExternalCorrelation *e = (const void *)a;
            r.corr = e->correlationId;
            r.ext_kind = e->externalKind;
            r.ext_id = e->externalId;
            break;
        }
        default:
            break;
        }
        add(&r);
    }
    if (st != CUPTI_ERROR_MAX_LIMIT_REACHED)
        fprintf(stderr, "cuptiActivityGetNextRecord ended with %d\n", (int)st);
    size_t d = 0;
    C.cuptiActivityGetNumDroppedRecords(NULL, 0, &d);
    g_dropped += d;
    pthread_mutex_unlock(&g_mu);
    free(buffer);
}

static void cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
    (void)u;
    (void)d;
    (void)id;
    (void)data;
}

/* ---- the work ------------------------------------------------------------ */

typedef int (*drv_launch_t)(void *f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, void *stream, void **params, void **extra);

static void push(int on, uint64_t id)
{
    if (on && C.cuptiActivityPushExternalCorrelationId(EXT, id) != CUPTI_SUCCESS)
        CW_DIE("push %llu failed", (unsigned long long)id);
}

static void pop(int on, uint64_t want)
{
    uint64_t got = 0;
    if (!on)
        return;
    CUptiResult r = C.cuptiActivityPopExternalCorrelationId(EXT, &got);
    if (r != CUPTI_SUCCESS || got != want)
        CW_DIE("pop: rc=%d id=%llu, want %llu", (int)r, (unsigned long long)got,
               (unsigned long long)want);
}

static void work(long n, int on)
{
    enum { COPY = 1 << 20, SET = 65536 };
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    void *dbuf = NULL;
    CHECK(cudaMalloc(&dbuf, COPY));
    void *hbuf = calloc(1, COPY);

    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    push(on, 900);
    CHECK(cw_launch(CW_KERNEL(sleep_10us), s));
    pop(on, 900);
    CHECK(cw_launch(CW_KERNEL(sleep_1us), s));
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&x, g, 0));

    for (long i = 0; i < n; i++) {
        push(on, 1000 + (uint64_t)i);
        CHECK(cw_launch(CW_KERNEL(sleep_100us), s));
        pop(on, 1000 + (uint64_t)i);
    }
    push(on, 2000);
    CHECK(cudaMemcpyAsync(dbuf, hbuf, COPY, cudaMemcpyHostToDevice, s));
    pop(on, 2000);
    push(on, 2001);
    CHECK(cudaMemsetAsync(dbuf, 7, SET, s));
    pop(on, 2001);
    push(on, 3000);
    CHECK(cudaGraphLaunch(x, s));
    pop(on, 3000);

    /* a direct driver launch, as Triton makes them */
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv)
        CW_DIE("dlopen libcuda.so.1: %s", dlerror());
    int (*load)(void **, const void *) = (int (*)(void **, const void *))dlsym(drv, "cuModuleLoadData");
    int (*getf)(void **, void *, const char *) =
        (int (*)(void **, void *, const char *))dlsym(drv, "cuModuleGetFunction");
    drv_launch_t launch = (drv_launch_t)dlsym(drv, "cuLaunchKernel");
    void *mod = NULL, *f = NULL;
    static const char image[] = "image";
    if (!load || !getf || !launch || load(&mod, image) != 0 || getf(&f, mod, "sleep_10us") != 0)
        CW_DIE("driver module/function lookup failed");
    push(on, 4000);
    if (launch(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL) != 0)
        CW_DIE("cuLaunchKernel failed");
    pop(on, 4000);

    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaGraphExecDestroy(x));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(dbuf));
    CHECK(cudaStreamDestroy(s));
    free(hbuf);
    printf("launches=%ld\n", n);
}

/* ---- callbacks mode ------------------------------------------------------ */

cudaError_t cwr_static_cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                        void **args, size_t sharedMem, cudaStream_t stream);
cudaError_t cwr_static_cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                       enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cwr_static_cudaStreamSynchronize(cudaStream_t stream);

enum { MAX_CB = 4096, CB_EXT_BASE = 5000 };
typedef struct {
    int site;
    uint32_t cbid, corr, ret, has_ret, ctx, slot_ok, tid_ok;
    char name[48];
} cbrec;
static cbrec g_cb[MAX_CB];
static int g_ncb;

static void cb_record(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
    (void)u;
    const CUpti_CallbackData *cd = data;
    if (d != CUPTI_CB_DOMAIN_RUNTIME_API || g_ncb >= MAX_CB)
        return;
    cbrec *r = &g_cb[g_ncb++];
    r->site = cd->callbackSite;
    r->cbid = id;
    r->corr = cd->correlationId;
    snprintf(r->name, sizeof r->name, "%s", cd->functionName ? cd->functionName : "(null)");
    r->has_ret = cd->functionReturnValue != NULL;
    r->ret = r->has_ret ? (uint32_t) * (const cudaError_t *)cd->functionReturnValue : 0;
    r->ctx = cd->context != NULL && cd->contextUid != 0;
    r->tid_ok = (pid_t)syscall(SYS_gettid) == g_main_tid;
    uint64_t mark = 0xC0DE000000000000ull | cd->correlationId;
    if (cd->callbackSite == CUPTI_API_ENTER) {
        r->slot_ok = cd->correlationData != NULL;
        if (cd->correlationData)
            *cd->correlationData = mark;
        C.cuptiActivityPushExternalCorrelationId(EXT, CB_EXT_BASE + (uint64_t)cd->correlationId);
    } else {
        r->slot_ok = cd->correlationData && *cd->correlationData == mark;
        uint64_t got = 0;
        C.cuptiActivityPopExternalCorrelationId(EXT, &got);
        r->slot_ok &= got == CB_EXT_BASE + (uint64_t)cd->correlationId;
    }
}

static void check(int ok, const char *what);
static uint64_t ext_of(uint32_t corr);
static int g_fail;

static int cb_main(long n)
{
    CUpti_SubscriberHandle sub = NULL;
    if (C.cuptiSubscribe(&sub, cb_record, NULL) != CUPTI_SUCCESS)
        CW_DIE("cuptiSubscribe failed");
    /* errors, as the real one: bad subscriber, domain or callback id */
    printf("enable_errors=%d,%d,%d,%d,%d,%d\n",
           (int)C.cuptiEnableCallback(1, NULL, CUPTI_CB_DOMAIN_RUNTIME_API, 211),
           (int)C.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_INVALID, 211),
           (int)C.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, 0),
           (int)C.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                                      CUPTI_RUNTIME_TRACE_CBID_SIZE),
           (int)C.cuptiEnableDomain(1, NULL, CUPTI_CB_DOMAIN_RUNTIME_API),
           (int)C.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_SIZE));
    int fail = 0;
    fail |= C.cuptiActivityRegisterTimestampCallback(ts_callback) != CUPTI_SUCCESS;
    fail |= C.cuptiActivityRegisterCallbacks(buf_requested, buf_completed) != CUPTI_SUCCESS;
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        fail |= C.cuptiActivityEnable(kinds[i]) != CUPTI_SUCCESS;
    int en = (int)C.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    printf("enable_domain=%d\n", en);
    if (fail || en != CUPTI_SUCCESS)
        CW_DIE("enabling failed");

    enum { COPY = 1 << 16 };
    void *dbuf = NULL;
    CHECK(cudaMalloc(&dbuf, COPY));
    void *hbuf = calloc(1, COPY);
    static int dummy;
    void *args[] = { &dummy };
    dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
    for (long i = 0; i < n; i++)
        CHECK(cwr_static_cudaLaunchKernel(CW_KERNEL(sleep_10us), grid, block, args, 0, NULL));
    CHECK(cwr_static_cudaMemcpyAsync(dbuf, hbuf, COPY, cudaMemcpyHostToDevice, NULL));
    CHECK(cwr_static_cudaStreamSynchronize(NULL));
    int ncb = g_ncb;
    printf("disable_domain=%d\n", (int)C.cuptiEnableDomain(0, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
    CHECK(cwr_static_cudaLaunchKernel(CW_KERNEL(sleep_1us), grid, block, args, 0, NULL));
    CHECK(cwr_static_cudaStreamSynchronize(NULL));
    C.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);

    pthread_mutex_lock(&g_mu);
    printf("callbacks=%d after_disable=%d\n", ncb, g_ncb - ncb);
    int pairs = 0, bad = 0, launches = 0, copies = 0;
    for (int i = 0; i + 1 < ncb; i += 2) {
        const cbrec *a = &g_cb[i], *b = &g_cb[i + 1];
        const char *dev = "-";
        size_t ndev = 0, nrt = 0;
        for (size_t j = 0; j < g_nrecs; j++) {
            if (g_recs[j].corr != a->corr)
                continue;
            if (g_recs[j].kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
                ndev++;
                dev = g_recs[j].name;
            } else if (g_recs[j].kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
                ndev++;
                dev = "memcpy";
            } else if (g_recs[j].kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
                nrt += g_recs[j].cbid == a->cbid;
            }
        }
        uint64_t e = ext_of(a->corr);
        printf("callback %s cbid=%u corr=%u enter=%d exit=%d ret=%u device=%s ext=%llu\n",
               a->name, a->cbid, a->corr, a->site == CUPTI_API_ENTER, b->site == CUPTI_API_EXIT,
               b->ret, dev, (unsigned long long)e);
        int is_launch = a->cbid == 211 && !strcmp(a->name, "cudaLaunchKernel") &&
                        dev && !strcmp(dev, "sleep_10us");
        int is_copy = a->cbid == 41 && !strcmp(a->name, "cudaMemcpyAsync") &&
                      !strcmp(dev, "memcpy");
        launches += is_launch;
        copies += is_copy;
        int ok = a->site == CUPTI_API_ENTER && b->site == CUPTI_API_EXIT && a->cbid == b->cbid &&
                 !strcmp(a->name, b->name) && a->corr == b->corr && a->corr != 0 &&
                 !a->has_ret && b->has_ret && b->ret == cudaSuccess && a->slot_ok &&
                 b->slot_ok && b->ctx && a->tid_ok && b->tid_ok && ndev == 1 && nrt == 1 &&
                 e == CB_EXT_BASE + (uint64_t)a->corr && (is_launch || is_copy);
        bad += !ok;
        pairs++;
    }
    pthread_mutex_unlock(&g_mu);
    char line[128];
    snprintf(line, sizeof line, "ENTER/EXIT pairs = N+1 = %ld", n + 1);
    check(ncb == 2 * (n + 1) && pairs == n + 1, line);
    check(launches == n && copies == 1, "pairs: N cudaLaunchKernel (211) and 1 cudaMemcpyAsync (41)");
    check(bad == 0, "every pair: one correlation id for ENTER, EXIT, RUNTIME and device record; "
                    "id pushed in ENTER mapped; correlationData kept; return value at EXIT");
    check(g_ncb == ncb, "no callback after cuptiEnableDomain(0)");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        C.cuptiActivityDisable(kinds[i]);
    printf("unsubscribe=%d\n", (int)C.cuptiUnsubscribe(sub));
    printf("enable_after_unsubscribe=%d\n",
           (int)C.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
    CHECK(cudaFree(dbuf));
    free(hbuf);
    printf("result=%s\n", g_fail ? "FAIL" : "PASS");
    return g_fail ? 1 : 0;
}

/* ---- checks -------------------------------------------------------------- */

static int g_missing;
static size_t g_ext_late;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok" : "FAILED", what);
    if (!ok)
        g_fail++;
}

/* Expected count vs. found count: missing records are tolerated when
 * records were dropped (accounted at the end); extra records never are. */
static void expect_count(size_t found, size_t want, const char *what)
{
    char line[256];
    snprintf(line, sizeof line, "%s: %zu of %zu", what, found, want);
    if (found < want) {
        g_missing += (int)(want - found);
        printf("short %s\n", line);
    } else {
        check(found == want, line);
    }
}

/* A record that must be there unless records were dropped. */
static void need(int ok, const char *what)
{
    if (!ok && g_dropped) {
        g_missing++;
        printf("short %s\n", what);
    } else {
        check(ok, what);
    }
}

/* The external id (kind UNKNOWN) mapped to correlation id corr, 0 if none;
 * -1 (as uint64) if several. */
static uint64_t ext_of(uint32_t corr)
{
    uint64_t id = 0;
    for (size_t i = 0; i < g_nrecs; i++)
        if (g_recs[i].kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION && g_recs[i].corr == corr &&
            g_recs[i].ext_kind == EXT)
            id = id ? UINT64_MAX : g_recs[i].ext_id;
    return id;
}

static int ext_buffer(uint32_t corr)
{
    for (size_t i = 0; i < g_nrecs; i++)
        if (g_recs[i].kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION && g_recs[i].corr == corr)
            return g_recs[i].buffer;
    return 0;
}

static int is_device(uint32_t k)
{
    return k == CUPTI_ACTIVITY_KIND_KERNEL || k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
           k == CUPTI_ACTIVITY_KIND_MEMCPY || k == CUPTI_ACTIVITY_KIND_MEMSET;
}

static uint64_t sleep_us(const char *name)
{
    const char *p = name ? strstr(name, "sleep_") : NULL;
    return p ? strtoull(p + 6, NULL, 10) : 0;
}

static int kind_order(uint32_t k)
{
    return k == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION ? 0
           : k == CUPTI_ACTIVITY_KIND_RUNTIME            ? 1
           : k == CUPTI_ACTIVITY_KIND_DRIVER             ? 2
                                                         : 3;
}

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    if (kind_order(x->kind) != kind_order(y->kind))
        return kind_order(x->kind) - kind_order(y->kind);
    return x->start < y->start ? -1 : x->start > y->start;
}

static void print_records(void)
{
    qsort(g_recs, g_nrecs, sizeof *g_recs, cmp_rec);
    for (size_t i = 0; i < g_nrecs; i++) {
        const rec *r = &g_recs[i];
        uint64_t e = is_device(r->kind) || r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ||
                             r->kind == CUPTI_ACTIVITY_KIND_DRIVER
                         ? ext_of(r->corr)
                         : r->ext_id;
        char ext[32];
        if (e == 0)
            snprintf(ext, sizeof ext, "-");
        else
            snprintf(ext, sizeof ext, "%llu", (unsigned long long)e);
        double us = (double)(r->end - r->start) / 1e3;
        switch (r->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            printf("record kernel name=%s corr=%u ext=%s graph=%u node=%llx dur_us=%.1f\n", r->name,
                   r->corr, ext, r->graph, (unsigned long long)r->node, us);
            break;
        case CUPTI_ACTIVITY_KIND_MEMCPY:
            printf("record memcpy bytes=%llu copyKind=%u corr=%u ext=%s dur_us=%.1f\n",
                   (unsigned long long)r->bytes, r->copy_kind, r->corr, ext, us);
            break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
            printf("record memset bytes=%llu corr=%u ext=%s dur_us=%.1f\n",
                   (unsigned long long)r->bytes, r->corr, ext, us);
            break;
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER:
            printf("record %s cbid=%u corr=%u ext=%s dur_us=%.1f\n",
                   r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? "runtime" : "driver", r->cbid, r->corr,
                   ext, us);
            break;
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
            printf("record extcorr externalKind=%u externalId=%s corr=%u\n", r->ext_kind, ext,
                   r->corr);
            break;
        default:
            printf("record kind=%u\n", r->kind);
        }
    }
}

static void run_checks(long n, uint64_t t0, uint64_t t1)
{
    size_t kernels = 0, in_window = 0, device = 0, too_short = 0, unmapped = 0;
    size_t ext_late = 0, wrong_ext = 0, orphans = 0;
    const char *name100 = NULL;
    int same_name_ptr = 1;
    for (size_t i = 0; i < g_nrecs; i++) {
        const rec *r = &g_recs[i];
        if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            int matched = 0;
            for (size_t j = 0; j < g_nrecs; j++)
                matched |= is_device(g_recs[j].kind) && g_recs[j].corr == r->corr;
            orphans += !matched;
            continue;
        }
        if (!is_device(r->kind))
            continue;
        device++;
        in_window += r->start >= t0 && r->end <= t1 && r->start <= r->end;
        uint64_t e = ext_of(r->corr);
        unmapped += e == 0;
        wrong_ext += e == UINT64_MAX;
        int eb = ext_buffer(r->corr);
        ext_late += eb > r->buffer;
        if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY || r->kind == CUPTI_ACTIVITY_KIND_MEMSET)
            continue;
        kernels++;
        too_short += r->end - r->start < sleep_us(r->name) * 1000;
        if (r->name && !strcmp(r->name, "sleep_100us")) {
            if (name100 && name100 != r->name)
                same_name_ptr = 0;
            name100 = r->name;
        }
    }
    printf("device_records=%zu kernels=%zu unmapped=%zu orphan_ext=%zu ext_after_device=%zu\n",
           device, kernels, unmapped, orphans, ext_late);
    g_ext_late = ext_late;
    check(too_short == 0, "every kernel lasted at least its sleep_<N>us");
    check(in_window == device, "every device timestamp is CLOCK_MONOTONIC within the run");
    check(wrong_ext == 0, "no correlation id maps to two external ids");
    check(same_name_ptr, "a kernel name is one stable pointer");
    /* per launch: external correlation + RUNTIME + kernel; capture: external
     * correlation + 2 RUNTIME; copy, memset: 3 each; graph launch: external
     * correlation + RUNTIME + 2 kernels; driver launch: 3 */
    char line[128];
    snprintf(line, sizeof line, "records delivered + dropped = 3N+16 = %ld", 3 * n + 16);
    check(g_nrecs + g_dropped == (size_t)(3 * n + 16), line);

    for (long i = 0; i < n; i++) {
        size_t found = 0;
        for (size_t j = 0; j < g_nrecs; j++)
            if (is_device(g_recs[j].kind) && ext_of(g_recs[j].corr) == 1000 + (uint64_t)i) {
                found++;
                if (!g_recs[j].name || strcmp(g_recs[j].name, "sleep_100us") != 0) {
                    check(0, "launch maps to a sleep_100us kernel");
                }
            }
        if (found != 1) {
            char what[64];
            snprintf(what, sizeof what, "launch %ld (external id %ld)", i, 1000 + i);
            expect_count(found, 1, what);
        }
    }
    printf("checked %ld launches\n", n);

    /* graph launch: both kernels, one correlation id */
    size_t gk = 0;
    uint32_t gcorr = 0;
    int same = 1, graph_ids = 1;
    uint64_t nodes[2] = { 0, 0 };
    for (size_t j = 0; j < g_nrecs; j++)
        if (is_device(g_recs[j].kind) && ext_of(g_recs[j].corr) == 3000) {
            if (gk && g_recs[j].corr != gcorr)
                same = 0;
            gcorr = g_recs[j].corr;
            graph_ids &= g_recs[j].graph != 0;
            if (gk < 2)
                nodes[gk] = g_recs[j].node;
            gk++;
        }
    expect_count(gk, 2, "graph launch kernels (external id 3000)");
    check(same, "the graph's kernels share the graph launch's correlation id");
    check(graph_ids && (gk < 2 || nodes[0] != nodes[1]), "graph kernels carry a graph id and distinct node ids");
    int rt311 = 0;
    for (size_t j = 0; j < g_nrecs; j++)
        rt311 |= g_recs[j].kind == CUPTI_ACTIVITY_KIND_RUNTIME && g_recs[j].cbid == 311 &&
                 g_recs[j].corr == gcorr;
    if (gk)
        need(rt311, "that correlation id is the cudaGraphLaunch RUNTIME record's");

    size_t cp = 0, ms = 0, dl = 0;
    int cp_ok = 1, ms_ok = 1, dl_ok = 1;
    uint32_t dcorr = 0;
    for (size_t j = 0; j < g_nrecs; j++) {
        const rec *r = &g_recs[j];
        if (!is_device(r->kind))
            continue;
        uint64_t e = ext_of(r->corr);
        if (e == 2000) {
            cp++;
            cp_ok &= r->kind == CUPTI_ACTIVITY_KIND_MEMCPY && r->bytes == (1 << 20) &&
                     r->copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD &&
                     r->flags == CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
        } else if (e == 2001) {
            ms++;
            ms_ok &= r->kind == CUPTI_ACTIVITY_KIND_MEMSET && r->bytes == 65536;
        } else if (e == 4000) {
            dl++;
            dcorr = r->corr;
            dl_ok &= r->name && !strcmp(r->name, "sleep_10us");
        }
    }
    expect_count(cp, 1, "memcpy (external id 2000)");
    check(cp_ok, "memcpy: 1048576 bytes, HTOD, async");
    expect_count(ms, 1, "memset (external id 2001)");
    check(ms_ok, "memset: 65536 bytes");
    expect_count(dl, 1, "direct driver launch (external id 4000)");
    check(dl_ok, "direct driver launch: sleep_10us");
    int drv307 = 0;
    for (size_t j = 0; j < g_nrecs; j++)
        drv307 |= g_recs[j].kind == CUPTI_ACTIVITY_KIND_DRIVER && g_recs[j].cbid == 307 &&
                  g_recs[j].corr == dcorr;
    if (dl)
        need(drv307, "its correlation id is the cuLaunchKernel DRIVER record's");
    check(kernels <= (size_t)n + 3, "no extra kernel records");
}

int main(int argc, char **argv)
{
    int cb_mode = argc == 3 && !strcmp(argv[1], "callbacks");
    if (argc != 2 && !cb_mode)
        CW_DIE("usage: cupti_consumer N | cupti_consumer callbacks N");
    long n = cw_arg(argc, argv, cb_mode ? 2 : 1, 0);
    g_main_tid = (pid_t)syscall(SYS_gettid);

    void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        CW_DIE("dlopen libcupti.so.13: %s", dlerror());
#define X(f)                                                                   \
    if (!(C.f = (__typeof__(f) *)dlsym(h, #f)))                                \
        CW_DIE("dlsym %s failed", #f);
    CUPTI_FUNCS(X)
#undef X
    uint32_t version = 0;
    C.cuptiGetVersion(&version);
    printf("cupti_version=%u\n", version);
    if (cb_mode)
        return cb_main(n);

    CUpti_SubscriberHandle sub = NULL, sub2 = NULL;
    CUptiResult r = C.cuptiSubscribe(&sub, cb, NULL);
    const char *str = "?";
    C.cuptiGetResultString(r, &str);
    printf("subscribe=%d (%s)\n", (int)r, str);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        /* another tool holds CUPTI: fall back to tracing without it */
        printf("cupti=busy\n");
        work(n, 0);
        printf("result=PASS\n");
        cw_dump_counters();
        return 0;
    }
    if (r != CUPTI_SUCCESS)
        CW_DIE("cuptiSubscribe failed: %d", (int)r);
    printf("subscribe#2=%d\n", (int)C.cuptiSubscribe(&sub2, cb, NULL));
    uint64_t id = 0;
    printf("pop_empty=%d\n", (int)C.cuptiActivityPopExternalCorrelationId(EXT, &id));

    int fail = 0;
    fail |= C.cuptiActivityRegisterTimestampCallback(ts_callback) != CUPTI_SUCCESS;
    fail |= C.cuptiActivityRegisterCallbacks(buf_requested, buf_completed) != CUPTI_SUCCESS;
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
        CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        CUptiResult e = C.cuptiActivityEnable(kinds[i]);
        if (e != CUPTI_SUCCESS)
            CW_DIE("cuptiActivityEnable(%d) = %d", (int)kinds[i], (int)e);
    }
    if (fail)
        CW_DIE("registering callbacks failed");

    uint64_t t0 = mono_ns();
    work(n, 1);
    uint64_t t1 = mono_ns();
    r = C.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    printf("flush=%d\n", (int)r);

    pthread_mutex_lock(&g_mu); /* every buffer was delivered before FlushAll returned */
    size_t d = 0;
    C.cuptiActivityGetNumDroppedRecords(NULL, 0, &d);
    g_dropped += d;
    print_records();
    printf("records=%zu buffers_requested=%d buffers_completed=%d completed_on_main_thread=%d "
           "dropped=%zu\n",
           g_nrecs, g_nbuf_req, g_nbuf_done, g_done_on_main, g_dropped);
    run_checks(n, t0, t1);
    check(g_done_on_main == 0, "bufferCompleted ran on CUPTI's thread, not the caller's");
    printf("missing=%d\n", g_missing);
    check(g_missing == 0 || g_dropped > 0, "a record is missing only if records were dropped");
    /* Normally an external correlation record is written when the call
     * starts, so never after its device record's buffer; CWC_LATE_CORRELATION
     * delays them all (the consumer must match them when they come). */
    const char *late = getenv("CWC_LATE_CORRELATION");
    if (late && *late && strcmp(late, "0"))
        check(g_ext_late > 0, "external correlation records came in later buffers (CWC_LATE_CORRELATION)");
    else
        check(g_ext_late == 0, "external correlation records came no later than their device records");
    pthread_mutex_unlock(&g_mu);

    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        C.cuptiActivityDisable(kinds[i]);
    C.cuptiUnsubscribe(sub);
    printf("result=%s\n", g_fail ? "FAIL" : "PASS");
    cw_dump_counters();
    void (*dump)(FILE *) = (void (*)(FILE *))dlsym(h, "cwp_dump");
    printf("--- cupti counters (libcupti.so.13) ---\n");
    if (dump)
        dump(stdout);
    else
        printf("(no cwp_dump: not a causeway double)\n");
    printf("--- end cupti counters ---\n");
    return g_fail ? 1 : 0;
}
