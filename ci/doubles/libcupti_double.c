/*
 * libcupti_double.c - test double of CUPTI's Activity API (built as
 * libcupti.so.13, symbol version "libcupti.so.13" like the real one).
 *
 * It exports the CUPTI 13.0 functions a tracer needs to collect kernel, copy
 * and memset records with external correlation (list: CWP_SYMBOLS), with the
 * real ABIs (ci/doubles/include/cw_cupti.h, checked against NVIDIA's headers
 * by `make -C ci cupti-abi-check`).  It sees the program's CUDA work through
 * the driver double's activity hooks (ci/doubles/cw_activity.h): it installs
 * them when a kind is enabled, and removes them when no kind is left.
 *
 * Model (see ci/README-doubles.md for what was measured on a real GPU):
 *   - every reported driver or runtime call (launch, copy, memset, graph
 *     launch) gets the next correlation id of a process-wide counter;
 *   - at the call's entry, if EXTERNAL_CORRELATION and the call's API kind
 *     (DRIVER for driver calls, RUNTIME for runtime calls) are enabled, one
 *     EXTERNAL_CORRELATION record per external kind whose per-thread stack
 *     is non-empty (its top id); at its exit, a DRIVER or RUNTIME record if
 *     that kind is enabled.  Driver calls made inside a runtime call are not
 *     reported, and their work carries the runtime call's id;
 *   - when the worker finishes a kernel, copy or memset, a CONCURRENT_KERNEL
 *     (or KERNEL), MEMCPY or MEMSET record stamped with the timestamps taken
 *     at its start and end;
 *   - records are appended back to back (8-byte aligned) to the current
 *     buffer, obtained from the client's bufferRequested callback; a full
 *     buffer is handed to bufferCompleted by a delivery thread of the double
 *     ("cwc-deliver"), and cuptiActivityFlushAll hands over the current one
 *     and waits until every buffer handed over so far has been delivered.
 *   - callback API, runtime and driver domains: the subscriber's callback is
 *     called at API_ENTER and API_EXIT of each enabled runtime call the
 *     doubles report (the CWD_CBID_RUNTIME entry points), and of every driver
 *     call they report when the driver domain is enabled (as a whole: one id
 *     enables them all), on the calling thread, with the call's correlation id.
 *     ENTER comes after the call's correlation id is taken and before the
 *     external correlation records are decided (an id pushed in the ENTER
 *     callback applies to the call); EXIT after the call returned, before
 *     its RUNTIME record.
 *
 * Test switches (environment, read once at load):
 *   CWC_BUSY=1              every cuptiSubscribe fails with
 *                           CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, as
 *                           when another tool (Nsight, torch.profiler) holds CUPTI
 *   CWC_NO_API_KINDS=1      EXTERNAL_CORRELATION, RUNTIME and DRIVER cannot be
 *                           enabled (NOT_SUPPORTED): proves a client ties
 *                           records through callbacks alone
 *   CWC_DROP_EVERY=N        every Nth record produced is dropped and counted
 *                           (cuptiActivityGetNumDroppedRecords)
 *   CWC_LATE_CORRELATION=1  EXTERNAL_CORRELATION records are held back and
 *                           written to a buffer after the one holding the
 *                           device record of their correlation id (at the
 *                           latest, at the next flush)
 */
#define _GNU_SOURCE
#include "cw_cupti.h"
#include "cw_activity.h"
#include "cw_counters.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CW_PUBLIC __attribute__((visibility("default")))

/* ------------------------------------------------------------------------ */
/* Exported symbols and their counters                                      */
/* ------------------------------------------------------------------------ */

#define CWP_SYMBOLS(X)                                                        \
    X(cuptiGetVersion) X(cuptiGetResultString)                               \
    X(cuptiSubscribe) X(cuptiUnsubscribe) X(cuptiGetTimestamp)               \
    X(cuptiEnableCallback) X(cuptiEnableDomain)                              \
    X(cuptiActivityEnable) X(cuptiActivityDisable)                           \
    X(cuptiActivityGetNumDroppedRecords) X(cuptiActivityGetNextRecord)       \
    X(cuptiActivityRegisterCallbacks) X(cuptiActivityFlushAll)               \
    X(cuptiActivityPushExternalCorrelationId)                                \
    X(cuptiActivityPopExternalCorrelationId)                                 \
    X(cuptiActivityRegisterTimestampCallback)                                \
    X(cuptiActivityEnableLatencyTimestamps)

enum {
#define X(n) CWP_IDX_##n,
    CWP_SYMBOLS(X)
#undef X
    CWP_NSYMS
};
static const char *const cwp_names[CWP_NSYMS] = {
#define X(n) #n,
    CWP_SYMBOLS(X)
#undef X
};
static atomic_long cwp_counts[CWP_NSYMS];

#define CW_COUNT(name) \
    atomic_fetch_add_explicit(&cwp_counts[CWP_IDX_##name], 1, memory_order_relaxed)

CW_PUBLIC long cwp_count(const char *symbol)
{
    return cwc_count(cwp_names, cwp_counts, CWP_NSYMS, symbol);
}
CW_PUBLIC void cwp_reset(void) { cwc_reset(cwp_counts, CWP_NSYMS); }
CW_PUBLIC void cwp_dump(FILE *out) { cwc_dump(cwp_names, cwp_counts, CWP_NSYMS, out); }

/* ------------------------------------------------------------------------ */
/* State                                                                    */
/* ------------------------------------------------------------------------ */

#define ALIGN 8 /* ACTIVITY_RECORD_ALIGNMENT */
#define KBIT(k) ((uint64_t)1 << (k))
#define SIMULATED_KINDS                                                        \
    (KBIT(CUPTI_ACTIVITY_KIND_MEMCPY) | KBIT(CUPTI_ACTIVITY_KIND_MEMSET) |     \
     KBIT(CUPTI_ACTIVITY_KIND_KERNEL) | KBIT(CUPTI_ACTIVITY_KIND_DRIVER) |     \
     KBIT(CUPTI_ACTIVITY_KIND_RUNTIME) |                                      \
     KBIT(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) |                            \
     KBIT(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION))

/* g_mu protects everything below that is not atomic.  The client's
 * bufferRequested callback is called with g_mu held (from whichever thread
 * produces the record: the API caller or a stream worker), so it must not
 * call cuptiActivityEnable/Disable/FlushAll/RegisterCallbacks or
 * cuptiSubscribe; bufferCompleted is called by the delivery thread without
 * it and may call anything. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_deliver_cv = PTHREAD_COND_INITIALIZER; /* queue not empty */
static pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER;    /* a buffer was delivered */

/* switches */
static int g_busy;
static int g_api_kinds_off;
static uint64_t g_drop_every;
static int g_late;

/* subscriber (at most one) */
struct CUpti_Subscriber_st { int unused; };
static struct CUpti_Subscriber_st g_sub_obj;
static int g_subscribed;

/* callback API (runtime domain): the subscriber's callback, and one bit per
 * runtime callback id enabled (written under g_mu, read lock-free) */
#define RT_CBID_N CUPTI_RUNTIME_TRACE_CBID_SIZE
static _Atomic(CUpti_CallbackFunc) g_cb_func;
static void *_Atomic g_cb_user;
static atomic_uint_fast64_t g_cb_bits[(RT_CBID_N + 63) / 64];
static atomic_int g_cb_count; /* number of bits set */
/* Driver domain: all of its callbacks on or off (cuptiEnableDomain / cuptiEnableCallback). */
static atomic_int g_drv_cb;
static CUcontext (*g_cur_ctx)(void); /* driver double's cwd_current_context */
/* per thread: the reported runtime call in progress got an ENTER callback,
 * and its correlationData slot (runtime calls are reported unnested) */
static __thread int t_cb_entered;
static __thread uint64_t t_cb_slot;
/* functionName of each reported runtime callback id (the CWD_CBID_RUNTIME
 * name without its _vNNNN suffix), filled at load */
static struct { int cbid; char name[48]; } g_rt_names[] = {
#define X(n, id) { id, #n },
    CWD_CBID_RUNTIME(X)
#undef X
};

/* activity */
static CUpti_BuffersCallbackRequestFunc g_req;
static CUpti_BuffersCallbackCompleteFunc g_done;
static _Atomic(CUpti_TimestampCallbackFunc) g_ts;
static atomic_uint_fast64_t g_enabled; /* bit k: kind k enabled */
/* Kernels' queued and submitted times (the driver double's push and take-up times), in records
 * made while enabled (cuptiActivityEnableLatencyTimestamps). */
static _Atomic int g_latency;
static atomic_uint g_next_corr = 1;
static int64_t g_next_grid_id = 1;
static void (*g_set_hooks)(const struct cwd_activity_hooks *); /* non-NULL: hooks installed */

/* the buffer being filled */
static uint8_t *g_buf;
static size_t g_buf_size, g_buf_used, g_buf_max, g_buf_nrec;
static uint64_t g_buf_seq;    /* number of buffers obtained so far (g_buf is #g_buf_seq) */
static uint64_t g_closed_seq; /* the last buffer handed over for delivery */

/* buffers handed over, delivered in order by the delivery thread */
typedef struct done_buf {
    struct done_buf *next;
    uint8_t *buf;
    size_t size, valid;
} done_buf;
static done_buf *g_q_head, *g_q_tail;
static uint64_t g_q_enq, g_q_deliv;
static int g_thread_running;
static __thread int t_delivery_thread;

/* records produced, and records dropped since the last
 * GetNumDroppedRecords (atomic: that call takes no lock, so a client may
 * call it from bufferCompleted while holding a lock its bufferRequested
 * takes) */
static uint64_t g_produced;
static _Atomic size_t g_dropped;

/* CWC_LATE_CORRELATION: external correlation records held back.  ready is
 * the buffer that received the device record of their correlation id (0:
 * none yet); they are written once that buffer has been handed over. */
typedef struct held {
    struct held *next;
    CUpti_ActivityExternalCorrelation rec;
    uint64_t ready;
} held;
static held *g_held, **g_held_tail = &g_held;

/* kernel names: interned, never freed, one pointer per distinct name */
typedef struct name_ent { struct name_ent *next; char name[]; } name_ent;
static name_ent *g_names;

/* per-thread external correlation stacks, one per CUpti_ExternalCorrelationKind */
typedef struct { uint64_t *v; size_t n, cap; } id_stack;
static __thread id_stack t_ext[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];
static __thread int t_ext_registered;
static pthread_key_t g_ext_key;
static pthread_once_t g_ext_once = PTHREAD_ONCE_INIT;

/* start time of the reported API call in progress, per domain */
static __thread uint64_t t_api_start[3];

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A CUPTI timestamp: the registered callback, or CLOCK_REALTIME ns (what
 * CUPTI uses on Linux by default).  Called where the event happens. */
static uint64_t now_ts(void)
{
    CUpti_TimestampCallbackFunc f = atomic_load_explicit(&g_ts, memory_order_acquire);
    return f ? f() : clock_ns(CLOCK_REALTIME);
}

static int enabled(uint64_t mask, int kind) { return (mask & KBIT(kind)) != 0; }

static size_t record_size(uint32_t kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        return sizeof(CUpti_ActivityExternalCorrelation);
    default: return 0;
    }
}

/* Offset of the first record: buffers need not be 8-byte aligned. */
static size_t first_offset(const uint8_t *buf)
{
    return (size_t)((ALIGN - (uintptr_t)buf % ALIGN) % ALIGN);
}

static const char *intern_locked(const char *name)
{
    if (!name)
        return NULL;
    for (name_ent *e = g_names; e; e = e->next)
        if (strcmp(e->name, name) == 0)
            return e->name;
    size_t n = strlen(name) + 1;
    name_ent *e = malloc(sizeof *e + n);
    if (!e)
        return NULL;
    memcpy(e->name, name, n);
    e->next = g_names;
    g_names = e;
    return e->name;
}

/* ---- delivery ------------------------------------------------------------ */

static void *deliver_main(void *arg)
{
    (void)arg;
    t_delivery_thread = 1;
    pthread_mutex_lock(&g_mu);
    for (;;) {
        while (!g_q_head)
            pthread_cond_wait(&g_deliver_cv, &g_mu);
        done_buf *d = g_q_head;
        g_q_head = d->next;
        if (!g_q_head)
            g_q_tail = NULL;
        CUpti_BuffersCallbackCompleteFunc done = g_done;
        pthread_mutex_unlock(&g_mu);
        /* context NULL and stream 0: "deprecated as of CUDA 6.0" (the real
         * one passes NULL and an arbitrary stream value) */
        if (done)
            done(NULL, 0, d->buf, d->size, d->valid);
        free(d);
        pthread_mutex_lock(&g_mu);
        g_q_deliv++;
        pthread_cond_broadcast(&g_done_cv);
    }
    return NULL;
}

static void ensure_thread_locked(void)
{
    if (g_thread_running)
        return;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    if (pthread_create(&th, &attr, deliver_main, NULL) == 0) {
        pthread_setname_np(th, "cwc-deliver");
        g_thread_running = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}

/* Hand the current buffer over for delivery (if it holds any record). */
static void close_locked(void)
{
    if (!g_buf || g_buf_nrec == 0)
        return;
    done_buf *d = malloc(sizeof *d);
    if (!d) {
        atomic_fetch_add(&g_dropped, g_buf_nrec); /* the buffer is lost to the client */
    } else {
        d->next = NULL;
        d->buf = g_buf;
        d->size = g_buf_size;
        d->valid = g_buf_used;
        if (g_q_tail)
            g_q_tail->next = d;
        else
            g_q_head = d;
        g_q_tail = d;
        g_q_enq++;
        ensure_thread_locked();
        pthread_cond_signal(&g_deliver_cv);
    }
    g_buf = NULL;
    g_closed_seq = g_buf_seq;
}

/* Ask the client for a buffer.  0 on success. */
static int open_locked(void)
{
    if (!g_req)
        return -1;
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    g_req(&buf, &size, &max);
    if (!buf || size <= first_offset(buf))
        return -1;
    g_buf = buf;
    g_buf_size = size;
    g_buf_max = max;
    g_buf_used = first_offset(buf);
    g_buf_nrec = 0;
    g_buf_seq++;
    return 0;
}

/* Write a record to the current buffer, closing full buffers and opening new
 * ones.  dev_corr: the correlation id of a device record (0 otherwise), for
 * CWC_LATE_CORRELATION. */
static void put_locked(const void *rec, size_t size, uint32_t dev_corr)
{
    for (;;) {
        if (g_buf && g_buf_used + size <= g_buf_size &&
            (g_buf_max == 0 || g_buf_nrec < g_buf_max))
            break;
        if (g_buf && g_buf_nrec == 0) { /* too small even when empty */
            atomic_fetch_add(&g_dropped, 1);
            return;
        }
        close_locked();
        if (open_locked() != 0) { /* no buffer: the record is dropped */
            atomic_fetch_add(&g_dropped, 1);
            return;
        }
    }
    memcpy(g_buf + g_buf_used, rec, size);
    g_buf_used += size;
    g_buf_nrec++;
    if (g_late && dev_corr)
        for (held *h = g_held; h; h = h->next)
            if (!h->ready && h->rec.correlationId == dev_corr)
                h->ready = g_buf_seq;
}

/* CWC_LATE_CORRELATION: write the held records whose device record's buffer
 * has been handed over (all of them if `all`). */
static void release_held_locked(int all)
{
    for (;;) {
        held **pp = &g_held, *h;
        while ((h = *pp) && !(all || (h->ready && h->ready <= g_closed_seq)))
            pp = &h->next;
        if (!h)
            return;
        *pp = h->next;
        if (g_held_tail == &h->next)
            g_held_tail = pp;
        put_locked(&h->rec, sizeof h->rec, 0);
        free(h);
    }
}

/* A record is produced: drop it (CWC_DROP_EVERY), hold it
 * (CWC_LATE_CORRELATION) or write it. */
static void emit_locked(const void *rec, size_t size, uint32_t dev_corr)
{
    g_produced++;
    if (g_drop_every && g_produced % g_drop_every == 0) {
        atomic_fetch_add(&g_dropped, 1);
        return;
    }
    if (!g_req) { /* nowhere to put it */
        atomic_fetch_add(&g_dropped, 1);
        return;
    }
    const CUpti_Activity *a = rec;
    if (g_late && a->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        held *h = calloc(1, sizeof *h);
        if (!h) {
            atomic_fetch_add(&g_dropped, 1);
            return;
        }
        memcpy(&h->rec, rec, sizeof h->rec);
        *g_held_tail = h;
        g_held_tail = &h->next;
        return;
    }
    put_locked(rec, size, dev_corr);
    if (g_late)
        release_held_locked(0);
}

/* ------------------------------------------------------------------------ */
/* Hooks called by the driver double                                        */
/* ------------------------------------------------------------------------ */

static int cb_enabled(int domain, int cbid)
{
    if (domain != CWD_API_RUNTIME || cbid <= 0 || cbid >= RT_CBID_N ||
        !atomic_load_explicit(&g_cb_count, memory_order_acquire))
        return 0;
    return (atomic_load_explicit(&g_cb_bits[cbid / 64], memory_order_acquire) >>
            (cbid % 64)) & 1;
}

static const char *rt_name(int cbid)
{
    for (size_t i = 0; i < sizeof g_rt_names / sizeof g_rt_names[0]; i++)
        if (g_rt_names[i].cbid == cbid)
            return g_rt_names[i].name;
    return NULL;
}

/* One runtime or driver API callback (site ENTER or EXIT) on the calling thread. */
static void cb_call_in(CUpti_CallbackDomain domain, CUpti_ApiCallbackSite site, int cbid,
                       uint32_t corr, int *result)
{
    CUpti_CallbackFunc f = atomic_load_explicit(&g_cb_func, memory_order_acquire);
    if (!f)
        return;
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = site;
    d.functionName = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? rt_name(cbid) : NULL;
    d.functionParams = NULL; /* not simulated */
    d.functionReturnValue = site == CUPTI_API_EXIT ? result : NULL;
    d.symbolName = NULL;     /* not simulated */
    d.context = g_cur_ctx ? g_cur_ctx() : NULL;
    d.contextUid = d.context ? 1 : 0; /* the activity records' contextId */
    d.correlationData = &t_cb_slot;
    d.correlationId = corr;
    f(atomic_load_explicit(&g_cb_user, memory_order_acquire), domain, (CUpti_CallbackId)cbid, &d);
}

static void cb_call(CUpti_ApiCallbackSite site, int cbid, uint32_t corr, int *result)
{
    cb_call_in(CUPTI_CB_DOMAIN_RUNTIME_API, site, cbid, corr, result);
}

/* The kinds enabled when each call began, by correlation id (modulo the table): CUPTI decides at
 * submission whether a kernel, copy or memset gets a record — work still in flight when its kind is
 * disabled is recorded (measured on the H200: control-experiments/device/cupti_toggle.sh, mode
 * tog_live) — so the double does too, while its hooks stay installed: disabling the last kind
 * with no callback on removes them (maybe_remove_hooks_locked), and work still in flight then gets
 * no record. More than ENABLED_AT calls in flight at once would mix. */
#define ENABLED_AT (1u << 16)
static atomic_uint_fast64_t g_enabled_at[ENABLED_AT];

static uint32_t hook_api_enter(int domain, int cbid)
{
    uint32_t corr = atomic_fetch_add_explicit(&g_next_corr, 1, memory_order_relaxed);
    if (corr == 0) /* wrapped: 0 means "no correlation" */
        corr = atomic_fetch_add_explicit(&g_next_corr, 1, memory_order_relaxed);
    if (domain == CWD_API_RUNTIME) {
        t_cb_entered = cb_enabled(domain, cbid);
        if (t_cb_entered) { /* before the external correlation decision */
            t_cb_slot = 0;
            cb_call(CUPTI_API_ENTER, cbid, corr, NULL);
        }
    } else if (atomic_load_explicit(&g_drv_cb, memory_order_acquire)) {
        /* driver calls the doubles report (not those inside a runtime call) */
        cb_call_in(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_API_ENTER, cbid, corr, NULL);
    }
    /* After the callbacks: a kind a subscriber enables at API_ENTER covers this call's work. */
    uint64_t en = atomic_load_explicit(&g_enabled, memory_order_acquire);
    atomic_store_explicit(&g_enabled_at[corr % ENABLED_AT], en, memory_order_relaxed);
    int api = domain == CWD_API_RUNTIME ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    if (!enabled(en, api))
        return corr;
    if (enabled(en, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) {
        int locked = 0;
        for (int k = 1; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++) {
            if (!t_ext[k].n)
                continue;
            if (!locked) {
                pthread_mutex_lock(&g_mu);
                locked = 1;
            }
            CUpti_ActivityExternalCorrelation r;
            memset(&r, 0, sizeof r);
            r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
            r.externalKind = (CUpti_ExternalCorrelationKind)k;
            r.externalId = t_ext[k].v[t_ext[k].n - 1];
            r.correlationId = corr;
            emit_locked(&r, sizeof r, 0);
        }
        if (locked)
            pthread_mutex_unlock(&g_mu);
    }
    if (domain >= 1 && domain <= 2)
        t_api_start[domain] = now_ts();
    return corr;
}

static void hook_api_exit(int domain, int cbid, uint32_t corr, int result)
{
    if (domain == CWD_API_RUNTIME && t_cb_entered) {
        t_cb_entered = 0;
        int rv = result; /* cudaError_t */
        cb_call(CUPTI_API_EXIT, cbid, corr, &rv);
    } else if (domain != CWD_API_RUNTIME && atomic_load_explicit(&g_drv_cb, memory_order_acquire)) {
        int rv = result; /* CUresult */
        cb_call_in(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_API_EXIT, cbid, corr, &rv);
    }
    uint64_t en = atomic_load_explicit(&g_enabled, memory_order_acquire);
    int api = domain == CWD_API_RUNTIME ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
    if (!enabled(en, api) || domain < 1 || domain > 2)
        return;
    CUpti_ActivityAPI r;
    memset(&r, 0, sizeof r);
    r.kind = (CUpti_ActivityKind)api;
    r.cbid = (CUpti_CallbackId)cbid;
    r.start = t_api_start[domain];
    r.end = now_ts();
    r.processId = (uint32_t)getpid();
    r.threadId = (uint32_t)pthread_self(); /* CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT */
    r.correlationId = corr;
    r.returnValue = (uint32_t)result;
    pthread_mutex_lock(&g_mu);
    emit_locked(&r, sizeof r, 0);
    pthread_mutex_unlock(&g_mu);
}

static void hook_work_done(const struct cwd_work *w)
{
    /* As CUPTI: recorded if its kind was on when the call that submitted it began. */
    uint64_t en = w->correlation
                      ? atomic_load_explicit(&g_enabled_at[w->correlation % ENABLED_AT],
                                             memory_order_relaxed)
                      : atomic_load_explicit(&g_enabled, memory_order_acquire);
    union {
        CUpti_ActivityKernel10 k;
        CUpti_ActivityMemcpy6 c;
        CUpti_ActivityMemset4 s;
    } r;
    memset(&r, 0, sizeof r);
    size_t size;
    pthread_mutex_lock(&g_mu);
    switch (w->kind) {
    case CWD_WORK_KERNEL:
        if (!enabled(en, CUPTI_ACTIVITY_KIND_KERNEL) &&
            !enabled(en, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
            goto out;
        r.k.kind = enabled(en, CUPTI_ACTIVITY_KIND_KERNEL) ? CUPTI_ACTIVITY_KIND_KERNEL
                                                            : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        r.k.start = w->start;
        r.k.end = w->end;
        r.k.completed = w->end;
        r.k.deviceId = w->device;
        r.k.contextId = w->context_id;
        r.k.streamId = w->stream_id;
        r.k.gridX = (int32_t)w->grid[0];
        r.k.gridY = (int32_t)w->grid[1];
        r.k.gridZ = (int32_t)w->grid[2];
        r.k.blockX = (int32_t)w->block[0];
        r.k.blockY = (int32_t)w->block[1];
        r.k.blockZ = (int32_t)w->block[2];
        r.k.dynamicSharedMemory = (int32_t)w->shared_mem;
        r.k.correlationId = w->correlation;
        if (atomic_load_explicit(&g_latency, memory_order_relaxed)) {
            r.k.queued = w->queued;
            r.k.submitted = w->submitted;
        }
        r.k.gridId = g_next_grid_id++;
        r.k.name = intern_locked(w->name);
        r.k.launchType = w->cooperative ? CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE
                                        : CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
        r.k.graphNodeId = w->graph_node_id;
        r.k.graphId = w->graph_id;
        r.k.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
        size = sizeof r.k;
        break;
    case CWD_WORK_MEMCPY:
        if (!enabled(en, CUPTI_ACTIVITY_KIND_MEMCPY))
            goto out;
        r.c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        r.c.copyKind = w->copy_kind;
        r.c.srcKind = w->src_kind;
        r.c.dstKind = w->dst_kind;
        r.c.flags = w->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
        r.c.bytes = w->bytes;
        r.c.start = w->start;
        r.c.end = w->end;
        r.c.deviceId = w->device;
        r.c.contextId = w->context_id;
        r.c.streamId = w->stream_id;
        r.c.correlationId = w->correlation;
        r.c.graphNodeId = w->graph_node_id;
        r.c.graphId = w->graph_id;
        r.c.copyCount = 1;
        size = sizeof r.c;
        break;
    case CWD_WORK_MEMSET:
        if (!enabled(en, CUPTI_ACTIVITY_KIND_MEMSET))
            goto out;
        r.s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        r.s.value = w->value;
        r.s.bytes = w->bytes;
        r.s.start = w->start;
        r.s.end = w->end;
        r.s.deviceId = w->device;
        r.s.contextId = w->context_id;
        r.s.streamId = w->stream_id;
        r.s.correlationId = w->correlation;
        r.s.flags = w->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
        r.s.memoryKind = w->dst_kind;
        r.s.graphNodeId = w->graph_node_id;
        r.s.graphId = w->graph_id;
        size = sizeof r.s;
        break;
    default:
        goto out;
    }
    emit_locked(&r, size, w->correlation);
out:
    pthread_mutex_unlock(&g_mu);
}

static const struct cwd_activity_hooks g_hooks = {
    .api_enter = hook_api_enter,
    .api_exit = hook_api_exit,
    .work_done = hook_work_done,
    .now = now_ts,
};

/* Install the hooks in the driver double (loading libcuda.so.1 if the
 * program has not yet: the real CUPTI loads the driver itself). */
static int install_hooks_locked(void)
{
    if (g_set_hooks)
        return 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    void (*set)(const struct cwd_activity_hooks *) =
        (void (*)(const struct cwd_activity_hooks *))dlsym(h, "cwd_set_activity_hooks");
    if (!set) {
        dlclose(h);
        return -1;
    }
    set(&g_hooks); /* h stays open while hooks are installed */
    g_set_hooks = set;
    g_cur_ctx = (CUcontext(*)(void))dlsym(h, "cwd_current_context");
    return 0;
}

/* Remove the hooks when neither an activity kind nor a callback is left. */
static void maybe_remove_hooks_locked(void)
{
    if (g_set_hooks && !atomic_load(&g_enabled) && !atomic_load(&g_cb_count) &&
        !atomic_load(&g_drv_cb)) {
        g_set_hooks(NULL);
        g_set_hooks = NULL;
    }
}

/* Set or clear runtime callback id cbid (1..RT_CBID_N-1). */
static void cb_set_locked(int cbid, int on)
{
    uint64_t bit = (uint64_t)1 << (cbid % 64);
    uint64_t old = on ? atomic_fetch_or(&g_cb_bits[cbid / 64], bit)
                      : atomic_fetch_and(&g_cb_bits[cbid / 64], ~bit);
    if (on && !(old & bit))
        atomic_fetch_add(&g_cb_count, 1);
    else if (!on && (old & bit))
        atomic_fetch_sub(&g_cb_count, 1);
}

/* ------------------------------------------------------------------------ */
/* Initialisation and fork                                                  */
/* ------------------------------------------------------------------------ */

static void atfork_prepare(void) { pthread_mutex_lock(&g_mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&g_mu); }

/* The child has no delivery thread: a new one starts when needed.  Buffers
 * queued at fork time are delivered in both processes. */
static void atfork_child(void)
{
    pthread_mutex_init(&g_mu, NULL);
    pthread_cond_init(&g_deliver_cv, NULL);
    pthread_cond_init(&g_done_cv, NULL);
    g_thread_running = 0;
    if (g_q_head)
        ensure_thread_locked();
}

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

__attribute__((constructor)) static void cwp_init(void)
{
    g_busy = env_flag("CWC_BUSY");
    g_api_kinds_off = env_flag("CWC_NO_API_KINDS");
    g_late = env_flag("CWC_LATE_CORRELATION");
    const char *d = getenv("CWC_DROP_EVERY");
    if (d && *d)
        g_drop_every = strtoull(d, NULL, 10);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    for (size_t i = 0; i < sizeof g_rt_names / sizeof g_rt_names[0]; i++) {
        char *v = strrchr(g_rt_names[i].name, '_'); /* drop "_v7000" */
        if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9')
            *v = 0;
    }
}

static void ext_free(void *p)
{
    (void)p;
    for (int k = 0; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++) {
        free(t_ext[k].v);
        t_ext[k] = (id_stack){ 0 };
    }
}

static void ext_key_init(void) { pthread_key_create(&g_ext_key, ext_free); }

/* ------------------------------------------------------------------------ */
/* Exported API                                                             */
/* ------------------------------------------------------------------------ */

CW_PUBLIC CUptiResult cuptiGetVersion(uint32_t *version)
{
    CW_COUNT(cuptiGetVersion);
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = CW_CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

/* The real one returns the enumerator's name. */
static const char *const g_result_names[] = {
    "CUPTI_SUCCESS", "CUPTI_ERROR_INVALID_PARAMETER", "CUPTI_ERROR_INVALID_DEVICE",
    "CUPTI_ERROR_INVALID_CONTEXT", "CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID",
    "CUPTI_ERROR_INVALID_EVENT_ID", "CUPTI_ERROR_INVALID_EVENT_NAME",
    "CUPTI_ERROR_INVALID_OPERATION", "CUPTI_ERROR_OUT_OF_MEMORY", "CUPTI_ERROR_HARDWARE",
    "CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT", "CUPTI_ERROR_API_NOT_IMPLEMENTED",
    "CUPTI_ERROR_MAX_LIMIT_REACHED", "CUPTI_ERROR_NOT_READY", "CUPTI_ERROR_NOT_COMPATIBLE",
    "CUPTI_ERROR_NOT_INITIALIZED", "CUPTI_ERROR_INVALID_METRIC_ID",
    "CUPTI_ERROR_INVALID_METRIC_NAME", "CUPTI_ERROR_QUEUE_EMPTY", "CUPTI_ERROR_INVALID_HANDLE",
    "CUPTI_ERROR_INVALID_STREAM", "CUPTI_ERROR_INVALID_KIND", "CUPTI_ERROR_INVALID_EVENT_VALUE",
    "CUPTI_ERROR_DISABLED", "CUPTI_ERROR_INVALID_MODULE", "CUPTI_ERROR_INVALID_METRIC_VALUE",
    "CUPTI_ERROR_HARDWARE_BUSY", "CUPTI_ERROR_NOT_SUPPORTED",
    "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED", "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE",
    "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES",
    "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS", "CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED",
    "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED", "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE",
    "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES", "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED",
    "CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE", "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED",
    "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
    "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES",
    "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED", "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED",
    "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED", "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED",
    "CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED", "CUPTI_ERROR_INVALID_CHIP_NAME",
};

CW_PUBLIC CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    CW_COUNT(cuptiGetResultString);
    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if ((unsigned)result < sizeof g_result_names / sizeof g_result_names[0]) {
        *str = g_result_names[result];
        return CUPTI_SUCCESS;
    }
    if (result == CUPTI_ERROR_UNKNOWN) {
        *str = "CUPTI_ERROR_UNKNOWN";
        return CUPTI_SUCCESS;
    }
    return CUPTI_ERROR_INVALID_PARAMETER;
}

/* One subscriber at a time; its callback is called for the runtime
 * callback ids enabled with cuptiEnableCallback/cuptiEnableDomain. */
CW_PUBLIC CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                     CUpti_CallbackFunc callback, void *userdata)
{
    CW_COUNT(cuptiSubscribe);
    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (g_busy)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    CUptiResult rc = CUPTI_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (g_subscribed) {
        rc = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    } else {
        g_subscribed = 1;
        atomic_store(&g_cb_user, userdata);
        atomic_store(&g_cb_func, callback);
        *subscriber = &g_sub_obj;
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_PUBLIC CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    CW_COUNT(cuptiUnsubscribe);
    CUptiResult rc = CUPTI_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (!subscriber || subscriber != &g_sub_obj || !g_subscribed)
        rc = CUPTI_ERROR_INVALID_PARAMETER;
    else {
        g_subscribed = 0; /* its callbacks are disabled */
        for (int id = 1; id < RT_CBID_N; id++)
            cb_set_locked(id, 0);
        atomic_store(&g_drv_cb, 0);
        atomic_store(&g_cb_func, NULL);
        maybe_remove_hooks_locked();
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

/* Enable (cbid >= 1) or disable one runtime callback id, or all of them
 * (cbid -1), for the subscriber. */
static CUptiResult enable_cb(uint32_t enable, CUpti_SubscriberHandle subscriber,
                             CUpti_CallbackDomain domain, long cbid)
{
    if (!subscriber || subscriber != &g_sub_obj)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if ((int)domain <= CUPTI_CB_DOMAIN_INVALID || (int)domain >= CUPTI_CB_DOMAIN_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid != -1 && (cbid <= 0 || cbid >= RT_CBID_N))
        return CUPTI_ERROR_INVALID_PARAMETER;
    CUptiResult rc = CUPTI_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (!g_subscribed) {
        rc = CUPTI_ERROR_INVALID_PARAMETER;
    } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        /* the whole driver domain at once (a single id turns them all on too) */
        if (enable && install_hooks_locked() != 0) {
            rc = CUPTI_ERROR_NOT_INITIALIZED;
        } else {
            atomic_store(&g_drv_cb, enable != 0);
            maybe_remove_hooks_locked();
        }
    } else if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) {
        /* other domains are not simulated: the real one would succeed */
        rc = enable ? CUPTI_ERROR_NOT_SUPPORTED : CUPTI_SUCCESS;
    } else if (enable && install_hooks_locked() != 0) {
        rc = CUPTI_ERROR_NOT_INITIALIZED;
    } else {
        for (long id = cbid == -1 ? 1 : cbid; id < (cbid == -1 ? RT_CBID_N : cbid + 1); id++)
            cb_set_locked((int)id, enable != 0);
        maybe_remove_hooks_locked();
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_PUBLIC CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                          CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    CW_COUNT(cuptiEnableCallback);
    return enable_cb(enable, subscriber, domain, (long)cbid);
}

CW_PUBLIC CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                        CUpti_CallbackDomain domain)
{
    CW_COUNT(cuptiEnableDomain);
    return enable_cb(enable, subscriber, domain, -1);
}

CW_PUBLIC CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
    CW_COUNT(cuptiGetTimestamp);
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *timestamp = now_ts();
    return CUPTI_SUCCESS;
}

/* Kinds 0..COUNT-1 exist.  The simulated ones are enabled; the others
 * give CUPTI_ERROR_NOT_SUPPORTED (the real one would succeed and produce
 * records the double cannot make).  Beyond COUNT the real one answers
 * CUPTI_ERROR_NOT_COMPATIBLE (measured). */
CW_PUBLIC CUptiResult cuptiActivityEnableLatencyTimestamps(uint8_t enable)
{
    CW_COUNT(cuptiActivityEnableLatencyTimestamps);
    atomic_store_explicit(&g_latency, enable != 0, memory_order_relaxed);
    return CUPTI_SUCCESS;
}

CW_PUBLIC CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    CW_COUNT(cuptiActivityEnable);
    if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT || kind == CUPTI_ACTIVITY_KIND_INVALID)
        return CUPTI_ERROR_NOT_COMPATIBLE;
    if (!(SIMULATED_KINDS & KBIT(kind)))
        return CUPTI_ERROR_NOT_SUPPORTED;
    if (g_api_kinds_off && (kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION ||
                            kind == CUPTI_ACTIVITY_KIND_RUNTIME || kind == CUPTI_ACTIVITY_KIND_DRIVER))
        return CUPTI_ERROR_NOT_SUPPORTED;
    CUptiResult rc = CUPTI_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (install_hooks_locked() != 0)
        rc = CUPTI_ERROR_NOT_INITIALIZED;
    else
        atomic_fetch_or_explicit(&g_enabled, KBIT(kind), memory_order_acq_rel);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_PUBLIC CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    CW_COUNT(cuptiActivityDisable);
    if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT || kind == CUPTI_ACTIVITY_KIND_INVALID)
        return CUPTI_ERROR_INVALID_KIND;
    pthread_mutex_lock(&g_mu);
    atomic_fetch_and_explicit(&g_enabled, ~KBIT(kind), memory_order_acq_rel);
    maybe_remove_hooks_locked();
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}

/* Records dropped since the last call (the count is reset), whatever the
 * context and stream. */
CW_PUBLIC CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId,
                                                        size_t *dropped)
{
    CW_COUNT(cuptiActivityGetNumDroppedRecords);
    (void)context;
    (void)streamId;
    if (!dropped)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *dropped = atomic_exchange(&g_dropped, 0);
    return CUPTI_SUCCESS;
}

CW_PUBLIC CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                                 CUpti_Activity **record)
{
    CW_COUNT(cuptiActivityGetNextRecord);
    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off;
    if (!*record) {
        off = first_offset(buffer);
    } else {
        size_t sz = record_size((*record)->kind);
        if (!sz)
            return CUPTI_ERROR_INVALID_KIND;
        off = (size_t)((uint8_t *)*record - buffer) + sz;
    }
    if (off + sizeof(CUpti_Activity) > validBufferSizeBytes)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    CUpti_Activity *next = (CUpti_Activity *)(buffer + off);
    size_t sz = record_size(next->kind);
    if (!sz || off + sz > validBufferSizeBytes)
        return CUPTI_ERROR_INVALID_KIND;
    *record = next;
    return CUPTI_SUCCESS;
}

CW_PUBLIC CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc funcBufferRequested,
    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    CW_COUNT(cuptiActivityRegisterCallbacks);
    if (!funcBufferRequested || !funcBufferCompleted)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_mu);
    g_req = funcBufferRequested;
    g_done = funcBufferCompleted;
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}

/* Hands the current buffer over (CWC_LATE_CORRELATION: then the held
 * external correlation records, in one more buffer) and waits until every
 * buffer handed over so far has been delivered.  Records are complete when
 * written, so flag 0 and CUPTI_ACTIVITY_FLAG_FLUSH_FORCED behave the same;
 * work still running is not recorded yet and comes in a later buffer.
 * Called from bufferCompleted it does not wait (it would wait for itself).
 * Before cuptiActivityRegisterCallbacks it succeeds (measured). */
CW_PUBLIC CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    CW_COUNT(cuptiActivityFlushAll);
    (void)flag;
    pthread_mutex_lock(&g_mu);
    if (g_req) {
        close_locked();
        if (g_late && g_held) {
            release_held_locked(1);
            close_locked();
        }
        uint64_t ticket = g_q_enq;
        while (!t_delivery_thread && g_q_deliv < ticket) {
            ensure_thread_locked();
            pthread_cond_wait(&g_done_cv, &g_mu);
        }
    }
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}

CW_PUBLIC CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                             uint64_t id)
{
    CW_COUNT(cuptiActivityPushExternalCorrelationId);
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    id_stack *st = &t_ext[kind];
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        uint64_t *v = realloc(st->v, cap * sizeof *v);
        if (!v)
            return CUPTI_ERROR_OUT_OF_MEMORY;
        st->v = v;
        st->cap = cap;
        if (!t_ext_registered) {
            pthread_once(&g_ext_once, ext_key_init);
            pthread_setspecific(g_ext_key, (void *)1); /* frees the stacks at thread exit */
            t_ext_registered = 1;
        }
    }
    st->v[st->n++] = id;
    return CUPTI_SUCCESS;
}

CW_PUBLIC CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                            uint64_t *lastId)
{
    CW_COUNT(cuptiActivityPopExternalCorrelationId);
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    id_stack *st = &t_ext[kind];
    if (!st->n)
        return CUPTI_ERROR_QUEUE_EMPTY;
    uint64_t id = st->v[--st->n];
    if (lastId)
        *lastId = id;
    return CUPTI_SUCCESS;
}

/* Accepted at any time, as the real one does (measured: it succeeds after
 * kinds are enabled too).  Timestamps already taken keep their clock. */
CW_PUBLIC CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
    CW_COUNT(cuptiActivityRegisterTimestampCallback);
    if (!funcTimestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    atomic_store_explicit(&g_ts, funcTimestamp, memory_order_release);
    return CUPTI_SUCCESS;
}
