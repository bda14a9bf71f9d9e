/*
 * libcuda_double.c - test double of the CUDA driver (built as libcuda.so.1).
 *
 * Exports real driver symbol names with the real ABIs.  Every exported variant
 * (cuLaunchKernel, cuLaunchKernel_ptsz, cuMemcpyHtoD_v2, ...) is a distinct
 * function with its own call counter, and cuGetProcAddress/_v2 hand out the
 * exact address of the exported variant the real driver would pick for a
 * (base name, cudaVersion, flags) request.
 *
 * Simulation model (see ci/README-doubles.md):
 *   - one device, one trivial primary context;
 *   - every stream (the legacy default stream, one per-thread default stream
 *     per calling thread, and each user stream) is a real worker thread that
 *     executes a FIFO of work items;
 *   - a kernel is a timed sleep on its stream's worker ("sleep_<N>us" sleeps
 *     N microseconds, "hang" never finishes, anything else takes 2 us);
 *     copies and memsets sleep bytes / (10 GB/s) and move no data;
 *   - events complete when the worker passes their record position and are
 *     timestamped on a simulated device clock (CWD_DEVICE_CLOCK_OFFSET_NS,
 *     CWD_DEVICE_CLOCK_DRIFT_PPM) that differs from the host clock;
 *   - CWD_TRUTH=<path> logs every executed kernel, copy and memset with its
 *     true host start and end (ground truth for tracer tests);
 *   - CWD_TIMING_EVENTS_SERIALIZE=1 makes a timing-enabled event recorded on
 *     a copy stream wait for every kernel outstanding on other streams (the
 *     Intel behaviour the control harness must catch);
 *   - the legacy default stream implicitly synchronises with blocking streams;
 *   - stream capture diverts work into a graph instead of running it;
 *   - with activity hooks installed (cwd_set_activity_hooks, used by the CUPTI
 *     double; see cw_activity.h), launches, copies, memsets and graph
 *     launches are reported with a correlation id, and their device work is
 *     reported with start and end timestamps when the worker runs it.
 *
 * Internals never call an exported symbol (that would go through the PLT and
 * could land in an LD_PRELOADed interposer); exported names are aliases of
 * hidden cwi_* functions and the proc-address table stores those.
 */
#define _GNU_SOURCE
#include "cw_cuda.h"
#include "cw_counters.h"
#include "cw_activity.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define CW_PUBLIC __attribute__((visibility("default")))
#define DRIVER_VERSION 13000

/* ------------------------------------------------------------------------ */
/* Exported symbols and their counters                                      */
/* ------------------------------------------------------------------------ */

#define CWD_SYMBOLS(X)                                                        \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount)        \
    X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxGetCurrent)        \
    X(cuCtxGetDevice) X(cuCtxGetDevice_v2)                                   \
    X(cuCtxSynchronize) X(cuCtxSynchronize_v2)                               \
    X(cuModuleLoadData) X(cuModuleGetFunction) X(cuModuleUnload)             \
    X(cuLibraryLoadData) X(cuLibraryGetKernel) X(cuLibraryUnload)            \
    X(cuKernelGetFunction) X(cuFuncGetName) X(cuKernelGetName)               \
    X(cuLaunchKernel) X(cuLaunchKernel_ptsz)                                 \
    X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)                             \
    X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz)           \
    X(cuLaunchHostFunc) X(cuLaunchHostFunc_ptsz)                             \
    X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocHost_v2) X(cuMemFreeHost)   \
    X(cuMemAllocManaged) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz)          \
    X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)                                 \
    X(cuMemcpy) X(cuMemcpy_ptds) X(cuMemcpyAsync) X(cuMemcpyAsync_ptsz)      \
    X(cuMemcpyHtoD_v2) X(cuMemcpyHtoD_v2_ptds)                               \
    X(cuMemcpyDtoH_v2) X(cuMemcpyDtoH_v2_ptds)                               \
    X(cuMemcpyHtoDAsync_v2) X(cuMemcpyHtoDAsync_v2_ptsz)                     \
    X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoHAsync_v2_ptsz)                     \
    X(cuMemcpy2D_v2) X(cuMemcpy2D_v2_ptds)                                   \
    X(cuMemcpy2DAsync_v2) X(cuMemcpy2DAsync_v2_ptsz)                         \
    X(cuMemcpyPeer) X(cuMemcpyPeer_ptds)                                     \
    X(cuMemcpyPeerAsync) X(cuMemcpyPeerAsync_ptsz)                           \
    X(cuMemsetD8_v2) X(cuMemsetD8_v2_ptds)                                   \
    X(cuMemsetD8Async) X(cuMemsetD8Async_ptsz)                               \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamDestroy_v2)               \
    X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz)                       \
    X(cuStreamQuery) X(cuStreamQuery_ptsz)                                   \
    X(cuStreamWaitEvent) X(cuStreamWaitEvent_ptsz)                           \
    X(cuStreamIsCapturing) X(cuStreamIsCapturing_ptsz)                       \
    X(cuThreadExchangeStreamCaptureMode)                                     \
    X(cuEventCreate) X(cuEventRecord) X(cuEventRecord_ptsz)                  \
    X(cuEventSynchronize) X(cuEventQuery)                                    \
    X(cuEventDestroy) X(cuEventDestroy_v2)                                   \
    X(cuEventElapsedTime) X(cuEventElapsedTime_v2)                           \
    X(cuStreamBeginCapture_v2) X(cuStreamBeginCapture_v2_ptsz)               \
    X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz)                         \
    X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)    \
    X(cuGraphInstantiateWithParams) X(cuGraphInstantiateWithParams_ptsz)     \
    X(cuGraphDestroy) X(cuGraphExecDestroy)                                  \
    X(cuGraphCreate) X(cuGraphAddKernelNode) X(cuGraphAddKernelNode_v2)      \
    X(cuGraphAddChildGraphNode) X(cuGraphGetNodes) X(cuGraphNodeGetType)     \
    X(cuGraphKernelNodeGetParams) X(cuGraphKernelNodeGetParams_v2)           \
    X(cuGraphChildGraphNodeGetGraph)                                         \
    X(cuGraphGetEdges) X(cuGraphGetEdges_v2)                                 \
    X(cuGetErrorString) X(cuGetErrorName)                                    \
    X(cuGetProcAddress) X(cuGetProcAddress_v2)

enum {
#define X(n) CWD_IDX_##n,
    CWD_SYMBOLS(X)
#undef X
    CWD_NSYMS
};
static const char *const cwd_names[CWD_NSYMS] = {
#define X(n) #n,
    CWD_SYMBOLS(X)
#undef X
};
static atomic_long cwd_counts[CWD_NSYMS];

#define CW_COUNT(name) \
    atomic_fetch_add_explicit(&cwd_counts[CWD_IDX_##name], 1, memory_order_relaxed)

/*
 * CW_DEF(name, params) starts the definition of exported entry point `name`.
 * The body is compiled as hidden function cwi_<name>; `name` is a
 * default-visibility alias of it, so &cwi_<name> (what cuGetProcAddress
 * returns) is exactly the address dlsym(handle, "<name>") gives.  The body
 * must begin with CW_COUNT(name).
 */
#define CW_DEF(name, params)                                                   \
    __attribute__((visibility("hidden"))) CUresult cwi_##name params;          \
    extern __typeof__(cwi_##name) name                                         \
        __attribute__((alias("cwi_" #name), visibility("default")));           \
    CUresult cwi_##name params

CW_PUBLIC long cwd_count(const char *symbol)
{
    return cwc_count(cwd_names, cwd_counts, CWD_NSYMS, symbol);
}
CW_PUBLIC void cwd_reset(void) { cwc_reset(cwd_counts, CWD_NSYMS); }
CW_PUBLIC void cwd_dump(FILE *out) { cwc_dump(cwd_names, cwd_counts, CWD_NSYMS, out); }

/* ------------------------------------------------------------------------ */
/* Object model                                                             */
/* ------------------------------------------------------------------------ */

/* Every handle starts with a magic word.  Destroyed objects are poisoned
 * (magic = MAGIC_DEAD) and deliberately never freed, so a stale handle is
 * reported as CUDA_ERROR_INVALID_HANDLE instead of being a use-after-free,
 * and queued work may keep pointing at destroyed events/streams safely. */
enum {
    MAGIC_CTX = 0x43747831,
    MAGIC_STREAM = 0x53747231,
    MAGIC_EVENT = 0x45766e31,
    MAGIC_MODULE = 0x4d6f6431,
    MAGIC_FUNC = 0x46756e31,
    MAGIC_LIBRARY = 0x4c696231,
    MAGIC_KERNEL = 0x4b726e31,
    MAGIC_GRAPH = 0x47726131,
    MAGIC_EXEC = 0x45786531,
    MAGIC_NODE = 0x4e6f6431,
    MAGIC_DEAD = 0xdeadbeef
};

#define FOREVER UINT64_MAX

struct CUctx_st { uint32_t magic; };
static struct CUctx_st g_primary_ctx = { MAGIC_CTX };

enum work_kind {
    W_SLEEP,        /* kernel / copy / memset: sleep `ns` (FOREVER = hang) */
    W_HOSTFN,       /* run fn(arg) on the worker */
    W_FREE,         /* stream-ordered free(arg) (cuMemFreeAsync) */
    W_EVENT_RECORD, /* mark ev's record #gen complete, timestamp it */
    W_WAIT_EVENT,   /* block until ev's record #gen (on stream `other`) completed */
    W_WAIT_STREAM,  /* block until `other` completed `pos` items */
    W_STOP          /* stream destroyed: drain done, worker exits */
};

/* What the activity hooks report about a kernel, copy or memset (W_SLEEP
 * items of node type KERNEL, MEMCPY or MEMSET).  corr is the correlation id
 * of the call that submitted the item (0: not reported). */
struct act_info {
    uint32_t corr;
    const char *name;
    uint32_t grid[3], block[3], smem;
    uint8_t coop, copy_kind, src_kind, dst_kind, async;
    uint32_t value;
    uint64_t bytes;
    uint32_t graph_id;
    uint64_t node_id;
};

typedef struct work {
    struct work *next;
    enum work_kind kind;
    CUgraphNodeType ntype; /* what the operation becomes when captured */
    uint64_t ns;
    CUhostFn fn;
    void *arg;
    struct CUevent_st *ev;
    uint64_t gen;
    struct CUstream_st *other;
    uint64_t pos;
    struct act_info act;
    uint64_t queued; /* act_hooks()->now() when pushed (0: no hooks) */
} work;

enum { STREAM_USER, STREAM_LEGACY, STREAM_PER_THREAD };

struct CUstream_st {
    uint32_t magic;
    unsigned flags;        /* CU_STREAM_NON_BLOCKING or 0 */
    int kind;
    uint32_t id;           /* unique, for activity records */
    work *head, *tail;     /* FIFO; head is the item being executed */
    uint64_t enqueued;     /* items ever pushed */
    uint64_t completed;    /* items finished by the worker */
    pthread_cond_t wake;   /* signalled when work is pushed */
    unsigned worker_gen;   /* == g_fork_gen iff a worker thread is alive */
    struct CUgraph_st *capture; /* non-NULL while capturing */
    struct CUstream_st *reg_next, *reg_prev; /* g_streams registry */
    int registered;
    /* For CWD_TIMING_EVENTS_SERIALIZE: the position (an `enqueued` count)
     * at which the last kernel pushed to this stream completes, and whether a
     * copy was ever pushed to it (a stream of the copy engine). */
    uint64_t last_kernel_pos;
    int copy_stream;
};

struct CUevent_st {
    uint32_t magic;
    unsigned flags;
    uint64_t rec_gen;  /* number of cuEventRecord calls that enqueued work */
    uint64_t done_gen; /* highest record number the workers have passed */
    int64_t t_ns;      /* device-clock time of that completion (dev_time) */
    struct CUstream_st *rec_stream; /* stream of the latest record */
    struct CUevent_st *next_free;   /* CWD_REUSE_EVENTS: the free list */
};

/* CWD_REUSE_EVENTS=1: a destroyed event with no record still pending is kept on a free list and its
 * address handed out again by the next cuEventCreate, as the real driver often does (the handle a
 * tracer must not confuse with the old one). Guarded by g_mu. */
static struct CUevent_st *g_free_events;
static int reuse_events(void)
{
    const char *v = getenv("CWD_REUSE_EVENTS");
    return v && *v == '1';
}

struct CUfunc_st {
    uint32_t magic;
    const char *name; /* owned by the module/kernel; stable until unload */
    uint64_t ns;
    struct CUfunc_st *next;
};
struct CUmod_st {
    uint32_t magic;
    struct CUfunc_st *funcs;
};
struct CUkern_st {
    uint32_t magic;
    const char *name;
    uint64_t ns;
    struct CUfunc_st *func; /* created by cuKernelGetFunction */
    struct CUkern_st *next;
};
struct CUlib_st {
    uint32_t magic;
    struct CUkern_st *kernels;
};

/* A graph is a list of nodes in creation order (for captured graphs, capture
 * order).  Creation order is a topological order (a node's dependencies must
 * exist when it is added), so a launch simply runs the nodes in that order on
 * the launch stream, expanding child graphs in place.  Edges are checked when
 * nodes are added but not otherwise kept: no concurrency inside a graph.
 * Nodes are allocated one by one so their handles stay valid as the graph
 * grows; like every other object they are poisoned, never freed. */
struct CUgraphNode_st {
    uint32_t magic;
    CUgraphNodeType type;
    uint64_t id;                   /* (graph id << 32) | index, for activity records: the
                                      owner's id and index; in an executable graph's clone the
                                      exec's id and the node's number in the exec (instantiate) */
    struct CUgraph_st *owner;
    uint32_t index;                /* position in owner->nodes */
    uint32_t *deps;                /* the nodes it depends on, as positions in owner->nodes */
    size_t ndeps;
    work tmpl;                     /* executable nodes: the work item to run */
    CUDA_KERNEL_NODE_PARAMS_v2 kp; /* kernel nodes (func always set) */
    struct CUgraph_st *child;      /* child graph nodes: the embedded graph */
};
struct CUgraph_st {
    uint32_t magic;
    uint32_t id;                   /* unique, for activity records */
    int invalidated;               /* capture broken by an unsupported call */
    struct CUgraphNode_st *parent; /* embedded in this child graph node */
    size_t n, cap;
    struct CUgraphNode_st **nodes;
};
/* An executable graph owns a private clone of its graph (what a capturing
 * stream embeds when the exec is launched into it) and the flattened list of
 * work items a launch submits. */
struct CUgraphExec_st {
    uint32_t magic;
    struct CUgraph_st *graph;
    size_t n;
    work *items;
};

/* One big lock protects all simulation state; workers only drop it while
 * sleeping or running host functions.  g_progress is broadcast whenever an
 * item completes (only if somebody waits). */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_progress = PTHREAD_COND_INITIALIZER;
static int g_waiters;
static unsigned g_fork_gen = 1; /* bumped in a forked child: workers are gone */
static struct CUstream_st *g_streams;
static struct CUstream_st g_legacy;
static int g_legacy_ready;
static atomic_int g_initialized;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_pt_key;
static __thread struct CUstream_st *t_pt_stream;
static __thread CUcontext t_ctx;

/* Device/host allocations, so frees and copies can be validated. */
enum { A_DEVICE, A_HOST, A_MANAGED };
typedef struct { uintptr_t base; size_t size; int kind; } alloc_rec;
static alloc_rec *g_allocs;
static size_t g_nallocs, g_capallocs;

/* ---- activity hooks (see cw_activity.h) ---------------------------------- */

static _Atomic(const struct cwd_activity_hooks *) g_act;
static atomic_uint g_next_stream_id = 1, g_next_graph_id = 1;
static __thread uint32_t t_act_corr; /* correlation of the reported call in progress */
static __thread int t_act_rt;        /* depth of runtime API calls in progress */

static const struct cwd_activity_hooks *act_hooks(void)
{
    return atomic_load_explicit(&g_act, memory_order_acquire);
}

CW_PUBLIC void cwd_set_activity_hooks(const struct cwd_activity_hooks *h)
{
    atomic_store_explicit(&g_act, h, memory_order_release);
}

/* Start of a reported driver entry point.  Inside a runtime API call the
 * driver call is internal: not reported, and its work carries the runtime
 * call's correlation id (t_act_corr, set by cwd_runtime_api_enter). */
static uint32_t act_enter(int cbid)
{
    if (t_act_rt)
        return 0;
    const struct cwd_activity_hooks *h = act_hooks();
    t_act_corr = h ? h->api_enter(CWD_API_DRIVER, cbid) : 0;
    return t_act_corr;
}

static void act_exit(int cbid, uint32_t corr, CUresult rc)
{
    if (t_act_rt)
        return;
    t_act_corr = 0;
    const struct cwd_activity_hooks *h = act_hooks();
    if (h && corr)
        h->api_exit(CWD_API_DRIVER, cbid, corr, rc);
}

/* Body of a reported entry point: `return expr`, between act_enter/exit. */
#define ACT(name, expr)                                                        \
    do {                                                                       \
        uint32_t act_c_ = act_enter(CWD_CBID_##name);                          \
        CUresult act_r_ = (expr);                                              \
        act_exit(CWD_CBID_##name, act_c_, act_r_);                             \
        return act_r_;                                                         \
    } while (0)

/* The calling thread's current context, for the CUPTI double's callback
 * data (not a CUDA API: not counted; see cw_activity.h). */
CW_PUBLIC CUcontext cwd_current_context(void) { return t_ctx; }

CW_PUBLIC uint32_t cwd_runtime_api_enter(int cbid)
{
    if (t_act_rt++)
        return 0;
    const struct cwd_activity_hooks *h = act_hooks();
    t_act_corr = h ? h->api_enter(CWD_API_RUNTIME, cbid) : 0;
    return t_act_corr;
}

CW_PUBLIC void cwd_runtime_api_exit(int cbid, uint32_t corr, int result)
{
    if (t_act_rt > 0 && --t_act_rt)
        return;
    t_act_corr = 0;
    const struct cwd_activity_hooks *h = act_hooks();
    if (h && corr)
        h->api_exit(CWD_API_RUNTIME, cbid, corr, result);
}

static int act_reported(const work *w)
{
    return w->kind == W_SLEEP && w->act.corr &&
           (w->ntype == CU_GRAPH_NODE_TYPE_KERNEL || w->ntype == CU_GRAPH_NODE_TYPE_MEMCPY ||
            w->ntype == CU_GRAPH_NODE_TYPE_MEMSET);
}

/* Report a finished kernel/copy/memset (worker thread, g_mu not held). */
static void act_work_done(const struct cwd_activity_hooks *h, const struct CUstream_st *s,
                          const work *w, uint64_t ts, uint64_t t0, uint64_t t1)
{
    struct cwd_work cw;
    memset(&cw, 0, sizeof cw);
    cw.kind = w->ntype == CU_GRAPH_NODE_TYPE_KERNEL   ? CWD_WORK_KERNEL
              : w->ntype == CU_GRAPH_NODE_TYPE_MEMCPY ? CWD_WORK_MEMCPY
                                                      : CWD_WORK_MEMSET;
    cw.correlation = w->act.corr;
    cw.start = t0;
    cw.end = t1;
    cw.stream_id = s->id;
    cw.device = 0;
    cw.context_id = 1;
    cw.name = w->act.name;
    memcpy(cw.grid, w->act.grid, sizeof cw.grid);
    memcpy(cw.block, w->act.block, sizeof cw.block);
    cw.shared_mem = w->act.smem;
    cw.cooperative = w->act.coop;
    cw.bytes = w->act.bytes;
    cw.copy_kind = w->act.copy_kind;
    cw.src_kind = w->act.src_kind;
    cw.dst_kind = w->act.dst_kind;
    cw.async = w->act.async;
    cw.value = w->act.value;
    cw.graph_id = w->act.graph_id;
    cw.graph_node_id = w->act.node_id;
    cw.queued = w->queued;
    cw.submitted = ts;
    h->work_done(&cw);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    if (ns == FOREVER) {
        for (;;) {
            struct timespec ts = { 3600, 0 };
            nanosleep(&ts, NULL);
        }
    }
    if (ns == 0)
        return;
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* ---- simulated device clock and ground-truth log ------------------------- */

/* Read once when the library is loaded (cwd_load_init).  The device clock of
 * host CLOCK_MONOTONIC instant h is
 *     dev(h) = h + offset + (h - h0) * drift_ppm * 1e-6
 * with h0 the monotonic time at load: it starts `offset` ns away from the host
 * clock and runs (1 + drift) times as fast.  Event timestamps are device
 * time, so cuEventElapsedTime measures in device-clock units. */
static int64_t g_dev_offset;  /* CWD_DEVICE_CLOCK_OFFSET_NS */
static double g_dev_drift;    /* CWD_DEVICE_CLOCK_DRIFT_PPM * 1e-6 */
static uint64_t g_dev_h0;
static int g_truth_fd = -1;   /* CWD_TRUTH: O_APPEND log of executed work */
static int g_ts_serialize;    /* CWD_TIMING_EVENTS_SERIALIZE=1: see event_record */

static int64_t dev_time(uint64_t h)
{
    int64_t since = (int64_t)(h - g_dev_h0);
    int64_t skew = g_dev_drift != 0.0 ? (int64_t)((double)since * g_dev_drift) : 0;
    return (int64_t)h + g_dev_offset + skew;
}

__attribute__((constructor)) static void cwd_load_init(void)
{
    g_dev_h0 = now_ns();
    const char *v = getenv("CWD_DEVICE_CLOCK_OFFSET_NS");
    if (v && *v) {
        char *end;
        errno = 0;
        long long off = strtoll(v, &end, 10);
        if (*end || errno)
            fprintf(stderr, "cwd: ignoring bad CWD_DEVICE_CLOCK_OFFSET_NS=%s\n", v);
        else
            g_dev_offset = off;
    }
    v = getenv("CWD_DEVICE_CLOCK_DRIFT_PPM");
    if (v && *v) {
        char *end;
        double ppm = strtod(v, &end);
        if (*end || !(ppm > -1e6 && ppm < 1e9))
            fprintf(stderr, "cwd: ignoring bad CWD_DEVICE_CLOCK_DRIFT_PPM=%s\n", v);
        else
            g_dev_drift = ppm * 1e-6;
    }
    v = getenv("CWD_TIMING_EVENTS_SERIALIZE");
    if (v && *v) {
        if (!strcmp(v, "1"))
            g_ts_serialize = 1;
        else if (strcmp(v, "0"))
            fprintf(stderr, "cwd: ignoring bad CWD_TIMING_EVENTS_SERIALIZE=%s (want 0 or 1)\n", v);
    }
    v = getenv("CWD_TRUTH");
    if (v && *v) {
        g_truth_fd = open(v, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (g_truth_fd < 0)
            fprintf(stderr, "cwd: cannot open CWD_TRUTH=%s: %s\n", v, strerror(errno));
    }
}

/* One ground-truth line for an executed kernel/copy/memset, written with a
 * single write(2) on the O_APPEND descriptor so that lines from concurrent
 * workers and processes never interleave:
 *     <kernel|memcpy|memset> <stream id> <start ns> <end ns> <name or ->
 * Control characters in a kernel name are written as '?'. */
static void truth_log(const char *kind, uint32_t stream_id, uint64_t t0, uint64_t t1,
                      const char *name)
{
    if (!name || !*name)
        name = "-";
    char head[96], stack_buf[512];
    int hn = snprintf(head, sizeof head, "%s %u %llu %llu ", kind, stream_id,
                      (unsigned long long)t0, (unsigned long long)t1);
    size_t nn = strlen(name), len = (size_t)hn + nn + 1;
    char *buf = len <= sizeof stack_buf ? stack_buf : malloc(len);
    if (!buf)
        return;
    memcpy(buf, head, (size_t)hn);
    for (size_t i = 0; i < nn; i++)
        buf[hn + i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
    buf[len - 1] = '\n';
    ssize_t w;
    do
        w = write(g_truth_fd, buf, len);
    while (w < 0 && errno == EINTR);
    if (buf != stack_buf)
        free(buf);
}

/* The truth-log kind of a work item: kernels, copies and memsets only. */
static const char *truth_kind(const work *w)
{
    if (w->kind != W_SLEEP)
        return NULL;
    switch (w->ntype) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    default: return NULL;
    }
}

/* 10 GB/s == 10 bytes per nanosecond. */
static uint64_t xfer_ns(size_t bytes) { return (uint64_t)(bytes / 10); }

/* ------------------------------------------------------------------------ */
/* Streams and workers                                                      */
/* ------------------------------------------------------------------------ */

static void registry_add_locked(struct CUstream_st *s)
{
    s->reg_prev = NULL;
    s->reg_next = g_streams;
    if (g_streams)
        g_streams->reg_prev = s;
    g_streams = s;
    s->registered = 1;
}

static void registry_remove_locked(struct CUstream_st *s)
{
    if (!s->registered)
        return;
    if (s->reg_prev)
        s->reg_prev->reg_next = s->reg_next;
    else
        g_streams = s->reg_next;
    if (s->reg_next)
        s->reg_next->reg_prev = s->reg_prev;
    s->registered = 0;
}

static void progress_locked(void)
{
    if (g_waiters)
        pthread_cond_broadcast(&g_progress);
}

/* Wait on g_progress (g_mu held). */
static void wait_progress_locked(void)
{
    g_waiters++;
    pthread_cond_wait(&g_progress, &g_mu);
    g_waiters--;
}

static int ensure_worker_locked(struct CUstream_st *s);

static void *worker_main(void *arg)
{
    struct CUstream_st *s = arg;
    prctl(PR_SET_TIMERSLACK, 1UL); /* make microsecond sleeps honest */
    pthread_mutex_lock(&g_mu);
    for (;;) {
        while (!s->head)
            pthread_cond_wait(&s->wake, &g_mu);
        /* The head stays queued while it executes: if the process forks
         * meanwhile, the child's fresh worker re-runs it instead of losing it. */
        work *w = s->head;
        switch (w->kind) {
        case W_SLEEP:
        case W_HOSTFN:
        case W_FREE:
            pthread_mutex_unlock(&g_mu);
            if (w->kind == W_SLEEP) {
                /* The truth times bracket the sleep tightly, on the clock
                 * (CLOCK_MONOTONIC) that event markers are stamped with:
                 * a marker before the item is passed before tt0, one after
                 * it after tt1.  Logged before the item counts as complete,
                 * so a synchronize that returns has been logged. */
                const struct cwd_activity_hooks *h = act_reported(w) ? act_hooks() : NULL;
                const char *tk = g_truth_fd >= 0 ? truth_kind(w) : NULL;
                uint64_t ts = h ? h->now() : 0; /* taken up: "submitted" */
                uint64_t t0 = h ? h->now() : 0;
                uint64_t tt0 = tk ? now_ns() : 0;
                sleep_ns(w->ns);
                uint64_t tt1 = tk ? now_ns() : 0;
                uint64_t t1 = h ? h->now() : 0;
                if (tk)
                    truth_log(tk, s->id, tt0, tt1,
                              w->ntype == CU_GRAPH_NODE_TYPE_KERNEL ? w->act.name : "-");
                if (h)
                    act_work_done(h, s, w, ts, t0, t1);
            } else if (w->kind == W_HOSTFN)
                w->fn(w->arg);
            else
                free(w->arg);
            pthread_mutex_lock(&g_mu);
            break;
        case W_EVENT_RECORD:
            if (w->ev->done_gen < w->gen) {
                w->ev->done_gen = w->gen;
                w->ev->t_ns = dev_time(now_ns()); /* as the worker passes it */
            }
            break;
        case W_WAIT_EVENT:
            while (w->ev->done_gen < w->gen) {
                ensure_worker_locked(w->other); /* the recording stream */
                wait_progress_locked();
            }
            break;
        case W_WAIT_STREAM:
            while (w->other->completed < w->pos) {
                ensure_worker_locked(w->other);
                wait_progress_locked();
            }
            break;
        case W_STOP:
            break;
        }
        s->head = w->next;
        if (!s->head)
            s->tail = NULL;
        s->completed++;
        int stop = w->kind == W_STOP;
        free(w);
        if (stop) {
            registry_remove_locked(s);
            s->worker_gen = 0;
            progress_locked();
            pthread_mutex_unlock(&g_mu);
            return NULL;
        }
        progress_locked();
    }
}

/* Start s's worker thread if this process has none (first use, or the
 * parent's worker was lost in fork()).  Workers block all signals so that
 * signals are delivered to application threads, and are detached. */
static int ensure_worker_locked(struct CUstream_st *s)
{
    if (s->worker_gen == g_fork_gen)
        return 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    int rc = pthread_create(&th, &attr, worker_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return -1;
    /* Visible in /proc/<pid>/task/<tid>/comm, handy when debugging. */
    pthread_setname_np(th, s->kind == STREAM_LEGACY       ? "cwd-legacy"
                           : s->kind == STREAM_PER_THREAD ? "cwd-per-thread"
                                                          : "cwd-stream");
    s->worker_gen = g_fork_gen;
    return 0;
}

static void stream_init(struct CUstream_st *s, int kind, unsigned flags)
{
    memset(s, 0, sizeof *s);
    s->magic = MAGIC_STREAM;
    s->id = atomic_fetch_add_explicit(&g_next_stream_id, 1, memory_order_relaxed);
    s->kind = kind;
    s->flags = flags;
    pthread_cond_init(&s->wake, NULL);
}

static struct CUstream_st *legacy_locked(void)
{
    if (!g_legacy_ready) {
        stream_init(&g_legacy, STREAM_LEGACY, 0);
        registry_add_locked(&g_legacy);
        g_legacy_ready = 1;
    }
    return &g_legacy;
}

static int push_locked(struct CUstream_st *s, work *w)
{
    if (ensure_worker_locked(s) != 0) {
        free(w);
        return -1;
    }
    w->next = NULL;
    if (w->kind == W_SLEEP) {
        const struct cwd_activity_hooks *h = act_hooks();
        w->queued = h ? h->now() : 0;
    }
    if (s->tail)
        s->tail->next = w;
    else
        s->head = w;
    s->tail = w;
    s->enqueued++;
    if (w->kind == W_SLEEP && w->ntype == CU_GRAPH_NODE_TYPE_KERNEL)
        s->last_kernel_pos = s->enqueued;
    else if (w->kind == W_SLEEP && w->ntype == CU_GRAPH_NODE_TYPE_MEMCPY)
        s->copy_stream = 1;
    pthread_cond_signal(&s->wake);
    return 0;
}

static work *new_work(enum work_kind kind)
{
    work *w = calloc(1, sizeof *w);
    if (w)
        w->kind = kind;
    return w;
}

/* Make s wait until `other` has completed `pos` items. */
static int push_wait_pos_locked(struct CUstream_st *s, struct CUstream_st *other, uint64_t pos)
{
    work *w = new_work(W_WAIT_STREAM);
    if (!w)
        return -1;
    w->other = other;
    w->pos = pos;
    return push_locked(s, w);
}

static int push_wait_stream_locked(struct CUstream_st *s, struct CUstream_st *other)
{
    return push_wait_pos_locked(s, other, other->enqueued);
}

/* Legacy default stream semantics: work on the legacy stream waits for all
 * prior work on blocking streams, and work on a blocking stream (including a
 * per-thread default stream) waits for prior legacy-stream work.  Modelled by
 * inserting W_WAIT_STREAM items that snapshot the other stream's position;
 * positions are snapshots of strictly earlier work, so no cycles arise. */
static int implicit_deps_locked(struct CUstream_st *s)
{
    if (s->flags & CU_STREAM_NON_BLOCKING)
        return 0;
    if (s->kind == STREAM_LEGACY) {
        for (struct CUstream_st *t = g_streams; t; t = t->reg_next)
            if (t != s && !(t->flags & CU_STREAM_NON_BLOCKING) && !t->capture &&
                t->completed < t->enqueued)
                if (push_wait_stream_locked(s, t) != 0)
                    return -1;
    } else if (g_legacy_ready && g_legacy.completed < g_legacy.enqueued) {
        return push_wait_stream_locked(s, &g_legacy);
    }
    return 0;
}

static void pt_stream_destructor(void *p)
{
    struct CUstream_st *s = p;
    pthread_mutex_lock(&g_mu);
    s->magic = MAGIC_DEAD;
    if (s->head || s->worker_gen == g_fork_gen) {
        work *w = new_work(W_STOP);
        if (w)
            push_locked(s, w);
    } else {
        registry_remove_locked(s);
    }
    pthread_mutex_unlock(&g_mu);
}

/* The calling thread's per-thread default stream, created on first use and
 * retired (drained, worker exits) when the thread exits. */
static struct CUstream_st *per_thread_stream(void)
{
    if (t_pt_stream)
        return t_pt_stream;
    struct CUstream_st *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    stream_init(s, STREAM_PER_THREAD, 0);
    pthread_mutex_lock(&g_mu);
    registry_add_locked(s);
    pthread_mutex_unlock(&g_mu);
    pthread_setspecific(g_pt_key, s);
    t_pt_stream = s;
    return s;
}

/* Map a stream handle to a stream.  NULL is the legacy stream for legacy
 * entry points and the per-thread stream for _ptsz/_ptds entry points;
 * CU_STREAM_LEGACY / CU_STREAM_PER_THREAD select explicitly. */
static struct CUstream_st *resolve_stream(CUstream h, int ptds, CUresult *err)
{
    struct CUstream_st *s;
    if (h == NULL)
        h = ptds ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (h == CU_STREAM_LEGACY) {
        pthread_mutex_lock(&g_mu);
        s = legacy_locked();
        pthread_mutex_unlock(&g_mu);
        return s;
    }
    if (h == CU_STREAM_PER_THREAD) {
        s = per_thread_stream();
        if (!s)
            *err = CUDA_ERROR_OUT_OF_MEMORY;
        return s;
    }
    if (h->magic != MAGIC_STREAM) {
        *err = CUDA_ERROR_INVALID_HANDLE;
        return NULL;
    }
    return h;
}

#define RESOLVE(var, h, ptds)                                                  \
    CUresult var##_err = CUDA_SUCCESS;                                         \
    struct CUstream_st *var = resolve_stream((h), (ptds), &var##_err);         \
    if (!var)                                                                  \
        return var##_err

/* ---- graph objects (g_mu held) ------------------------------------------ */

static struct CUgraph_st *graph_new(void)
{
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (g) {
        g->magic = MAGIC_GRAPH;
        g->id = atomic_fetch_add_explicit(&g_next_graph_id, 1, memory_order_relaxed);
    }
    return g;
}

/* Append a new node of the given type to g; NULL when out of memory. */
static struct CUgraphNode_st *graph_add_node_locked(struct CUgraph_st *g, CUgraphNodeType type)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        struct CUgraphNode_st **nodes = realloc(g->nodes, cap * sizeof *nodes);
        if (!nodes)
            return NULL;
        g->nodes = nodes;
        g->cap = cap;
    }
    struct CUgraphNode_st *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->magic = MAGIC_NODE;
    n->type = type;
    n->owner = g;
    n->id = ((uint64_t)g->id << 32) | g->n;
    n->index = (uint32_t)g->n;
    g->nodes[g->n++] = n;
    return n;
}

/* n depends on deps (nodes of n's graph, checked); 0, or -1 when out of memory. */
static int node_deps_locked(struct CUgraphNode_st *n, const CUgraphNode *deps, size_t ndeps)
{
    if (!ndeps)
        return 0;
    if (!(n->deps = malloc(ndeps * sizeof *n->deps)))
        return -1;
    for (size_t i = 0; i < ndeps; i++)
        n->deps[i] = deps[i]->index;
    n->ndeps = ndeps;
    return 0;
}

/* A node captured into g depends on the node captured before it (captures here are of one
 * stream: each operation after the one before). */
static int capture_dep_locked(struct CUgraph_st *g, struct CUgraphNode_st *n)
{
    if (n->index == 0)
        return 0;
    CUgraphNode prev = g->nodes[n->index - 1];
    return node_deps_locked(n, &prev, 1);
}

/* Deep copy of g (child graphs included), embedded in `parent` if non-NULL. */
static struct CUgraph_st *graph_clone_locked(const struct CUgraph_st *g,
                                             struct CUgraphNode_st *parent)
{
    struct CUgraph_st *c = graph_new();
    if (!c)
        return NULL;
    c->parent = parent;
    for (size_t i = 0; i < g->n; i++) {
        const struct CUgraphNode_st *src = g->nodes[i];
        struct CUgraphNode_st *dst = graph_add_node_locked(c, src->type);
        if (!dst)
            return NULL; /* the partial clone is leaked, like dead objects */
        dst->tmpl = src->tmpl;
        dst->kp = src->kp;
        if (src->ndeps) {
            if (!(dst->deps = malloc(src->ndeps * sizeof *dst->deps)))
                return NULL;
            memcpy(dst->deps, src->deps, src->ndeps * sizeof *dst->deps);
            dst->ndeps = src->ndeps;
        }
        if (src->child && !(dst->child = graph_clone_locked(src->child, dst)))
            return NULL;
    }
    return c;
}

/* Poison g, its nodes and their child graphs. */
static void graph_kill_locked(struct CUgraph_st *g)
{
    g->magic = MAGIC_DEAD;
    for (size_t i = 0; i < g->n; i++) {
        g->nodes[i]->magic = MAGIC_DEAD;
        if (g->nodes[i]->child)
            graph_kill_locked(g->nodes[i]->child);
    }
}

/* The work items a launch of g submits, in order, child graphs expanded. */
typedef struct { work *v; size_t n, cap; } work_vec;

static int graph_flatten_locked(const struct CUgraph_st *g, uint32_t exec_id, work_vec *out)
{
    for (size_t i = 0; i < g->n; i++) {
        const struct CUgraphNode_st *nd = g->nodes[i];
        if (nd->type == CU_GRAPH_NODE_TYPE_GRAPH) {
            if (graph_flatten_locked(nd->child, exec_id, out) != 0)
                return -1;
            continue;
        }
        if (nd->type == CU_GRAPH_NODE_TYPE_EMPTY)
            continue;
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 16;
            work *v = realloc(out->v, cap * sizeof *v);
            if (!v)
                return -1;
            out->v = v;
            out->cap = cap;
        }
        out->v[out->n] = nd->tmpl;
        out->v[out->n].next = NULL;
        /* graph work: reported as the graph's node, never as async */
        out->v[out->n].act.graph_id = exec_id;
        out->v[out->n].act.node_id = nd->id;
        out->v[out->n].act.async = 0;
        out->n++;
    }
    return 0;
}

/* The CUfunction of a CUkernel in the (only) context: what cuKernelGetFunction
 * returns, created on first use.  NULL when out of memory. */
static struct CUfunc_st *kernel_func_locked(struct CUkern_st *k)
{
    if (!k->func) {
        struct CUfunc_st *f = calloc(1, sizeof *f);
        if (!f)
            return NULL;
        f->magic = MAGIC_FUNC;
        f->name = k->name;
        f->ns = k->ns;
        k->func = f;
    }
    return k->func;
}

/* Kernel node parameters as stored in a node: func is the CUfunction the
 * launch runs.  A CUkernel given as func (or as kern with func NULL) is
 * recorded as kern, with func = its CUfunction in the context (the function
 * the launch ends up using, as cuKernelGetFunction returns it).  ctx is the
 * primary context.  Kernel arguments are not simulated: kernelParams and
 * extra read back as NULL. */
static int kernel_params_locked(CUDA_KERNEL_NODE_PARAMS_v2 *kp)
{
    void *h = kp->func ? (void *)kp->func : (void *)kp->kern;
    kp->kern = NULL;
    if (h && *(uint32_t *)h == MAGIC_KERNEL) {
        kp->kern = h;
        if (!(kp->func = kernel_func_locked(h)))
            return -1;
    }
    kp->ctx = &g_primary_ctx;
    kp->kernelParams = NULL;
    kp->extra = NULL;
    return 0;
}

/* Record an operation into a capture.  kp: the launch's parameters for a
 * kernel node (func may be a CUkernel), NULL for other nodes. */
static int graph_append_locked(struct CUgraph_st *g, const work *tmpl,
                               const CUDA_KERNEL_NODE_PARAMS_v2 *kp)
{
    struct CUgraphNode_st *n = graph_add_node_locked(g, tmpl->ntype);
    if (!n || capture_dep_locked(g, n) != 0)
        return -1;
    n->tmpl = *tmpl;
    n->tmpl.next = NULL;
    if (kp) {
        n->kp = *kp;
        if (kernel_params_locked(&n->kp) != 0)
            return -1;
    }
    return 0;
}

/* Submit a W_SLEEP / W_HOSTFN operation to s (g_mu held).  While s is being
 * captured the operation becomes a graph node (of type tmpl->ntype; kp: the
 * parameters of a kernel launch, else NULL) and is not executed.  *pos gets
 * the stream position at which the operation completes (0 if captured). */
static CUresult submit_locked(struct CUstream_st *s, const work *tmpl, uint64_t *pos,
                              const CUDA_KERNEL_NODE_PARAMS_v2 *kp)
{
    if (pos)
        *pos = 0;
    if (s->capture)
        return graph_append_locked(s->capture, tmpl, kp) ? CUDA_ERROR_OUT_OF_MEMORY
                                                         : CUDA_SUCCESS;
    if (implicit_deps_locked(s) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    work *w = new_work(tmpl->kind);
    if (!w)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *w = *tmpl;
    w->act.corr = t_act_corr; /* the reported call submitting it, if any */
    if (push_locked(s, w) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (pos)
        *pos = s->enqueued;
    return CUDA_SUCCESS;
}

static CUresult submit(struct CUstream_st *s, const work *tmpl,
                       const CUDA_KERNEL_NODE_PARAMS_v2 *kp)
{
    pthread_mutex_lock(&g_mu);
    CUresult rc = submit_locked(s, tmpl, NULL, kp);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

static void wait_pos_locked(struct CUstream_st *s, uint64_t pos)
{
    while (s->completed < pos) {
        ensure_worker_locked(s);
        wait_progress_locked();
    }
}

/* A capturing stream met an operation that is illegal during capture:
 * the capture is invalidated (EndCapture will fail) and the call fails. */
static CUresult capture_violation_locked(struct CUstream_st *s)
{
    s->capture->invalidated = 1;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* Blocking operations (synchronous copies/memsets): run on the default
 * stream of the entry point's flavour and wait for completion. */
static CUresult run_sync(CUstream h, int ptds, const work *tmpl)
{
    RESOLVE(s, h, ptds);
    pthread_mutex_lock(&g_mu);
    CUresult rc;
    uint64_t pos;
    if (s->capture)
        rc = capture_violation_locked(s);
    else if ((rc = submit_locked(s, tmpl, &pos, NULL)) == CUDA_SUCCESS)
        wait_pos_locked(s, pos);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

static CUresult run_async(CUstream h, int ptds, const work *tmpl,
                          const CUDA_KERNEL_NODE_PARAMS_v2 *kp)
{
    RESOLVE(s, h, ptds);
    return submit(s, tmpl, kp);
}

/* ------------------------------------------------------------------------ */
/* Initialisation and fork handling                                         */
/* ------------------------------------------------------------------------ */

static void atfork_prepare(void) { pthread_mutex_lock(&g_mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&g_mu); }

/* In the child only the forking thread exists.  Re-create the lock and
 * condition variables and bump g_fork_gen so that every stream lazily gets a
 * fresh worker; queued items (including the one a parent worker was running)
 * are executed again by the child's workers. */
static void atfork_child(void)
{
    pthread_mutex_init(&g_mu, NULL);
    pthread_cond_init(&g_progress, NULL);
    g_waiters = 0;
    g_fork_gen++;
    for (struct CUstream_st *s = g_streams; s; s = s->reg_next)
        pthread_cond_init(&s->wake, NULL);
}

static void once_init(void)
{
    pthread_key_create(&g_pt_key, pt_stream_destructor);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

#define CHECK_INIT()                                                           \
    do {                                                                       \
        if (!atomic_load_explicit(&g_initialized, memory_order_acquire))       \
            return CUDA_ERROR_NOT_INITIALIZED;                                 \
    } while (0)

CW_DEF(cuInit, (unsigned int Flags))
{
    CW_COUNT(cuInit);
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* CWD_INIT_RESULT=<n> makes cuInit fail with n (e.g. 100 = no device). */
    const char *forced = getenv("CWD_INIT_RESULT");
    if (forced && atoi(forced) != 0)
        return atoi(forced);
    pthread_once(&g_once, once_init);
    atomic_store_explicit(&g_initialized, 1, memory_order_release);
    return CUDA_SUCCESS;
}

CW_DEF(cuDriverGetVersion, (int *driverVersion))
{
    CW_COUNT(cuDriverGetVersion);
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = DRIVER_VERSION;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Device and context (trivial: one device, one primary context)            */
/* ------------------------------------------------------------------------ */

CW_DEF(cuDeviceGetCount, (int *count))
{
    CW_COUNT(cuDeviceGetCount);
    CHECK_INIT();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

CW_DEF(cuDeviceGet, (CUdevice *device, int ordinal))
{
    CW_COUNT(cuDeviceGet);
    CHECK_INIT();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

CW_DEF(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev))
{
    CW_COUNT(cuDevicePrimaryCtxRetain);
    CHECK_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *pctx = &g_primary_ctx;
    return CUDA_SUCCESS;
}

CW_DEF(cuCtxSetCurrent, (CUcontext ctx))
{
    CW_COUNT(cuCtxSetCurrent);
    CHECK_INIT();
    if (ctx && ctx->magic != MAGIC_CTX)
        return CUDA_ERROR_INVALID_CONTEXT;
    t_ctx = ctx;
    return CUDA_SUCCESS;
}

CW_DEF(cuCtxGetCurrent, (CUcontext *pctx))
{
    CW_COUNT(cuCtxGetCurrent);
    CHECK_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = t_ctx;
    return CUDA_SUCCESS;
}

/* The one device; no current context is needed (as everywhere here). */
CW_DEF(cuCtxGetDevice, (CUdevice *device))
{
    CW_COUNT(cuCtxGetDevice);
    CHECK_INIT();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
}

/* CUDA 13's variant naming the context explicitly (NULL = current). */
CW_DEF(cuCtxGetDevice_v2, (CUdevice *device, CUcontext ctx))
{
    CW_COUNT(cuCtxGetDevice_v2);
    CHECK_INIT();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx && ctx->magic != MAGIC_CTX)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = 0;
    return CUDA_SUCCESS;
}

/* Wait for everything submitted to any stream before the call. */
static CUresult ctx_sync(void)
{
    pthread_mutex_lock(&g_mu);
    size_t n = 0;
    for (struct CUstream_st *s = g_streams; s; s = s->reg_next)
        n++;
    struct { struct CUstream_st *s; uint64_t pos; } *snap = malloc((n ? n : 1) * sizeof *snap);
    if (!snap) {
        pthread_mutex_unlock(&g_mu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    n = 0;
    for (struct CUstream_st *s = g_streams; s; s = s->reg_next) {
        snap[n].s = s;
        snap[n].pos = s->enqueued;
        n++;
    }
    /* Streams are never freed, so the snapshot stays valid while waiting. */
    for (size_t i = 0; i < n; i++)
        wait_pos_locked(snap[i].s, snap[i].pos);
    pthread_mutex_unlock(&g_mu);
    free(snap);
    return CUDA_SUCCESS;
}

CW_DEF(cuCtxSynchronize, (void))
{
    CW_COUNT(cuCtxSynchronize);
    CHECK_INIT();
    return ctx_sync();
}

/* CUDA 13's variant naming the context explicitly (NULL = current). */
CW_DEF(cuCtxSynchronize_v2, (CUcontext ctx))
{
    CW_COUNT(cuCtxSynchronize_v2);
    CHECK_INIT();
    if (ctx && ctx->magic != MAGIC_CTX)
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx_sync();
}

/* ------------------------------------------------------------------------ */
/* Modules, libraries, functions, kernels                                   */
/* ------------------------------------------------------------------------ */

/* Duration of a kernel from its (possibly mangled) name: "hang" never ends,
 * a name containing "sleep_<N>us" takes N microseconds, others 2 us. */
static uint64_t kernel_ns(const char *name)
{
    if (strcmp(name, "hang") == 0)
        return FOREVER;
    for (const char *p = strstr(name, "sleep_"); p; p = strstr(p + 1, "sleep_")) {
        const char *q = p + 6;
        uint64_t us = 0;
        int digits = 0;
        while (*q >= '0' && *q <= '9' && digits < 12) {
            us = us * 10 + (uint64_t)(*q - '0');
            q++;
            digits++;
        }
        if (digits && q[0] == 'u' && q[1] == 's')
            return us * 1000;
    }
    return 2000;
}

CW_DEF(cuModuleLoadData, (CUmodule *module, const void *image))
{
    CW_COUNT(cuModuleLoadData);
    CHECK_INIT();
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->magic = MAGIC_MODULE;
    *module = m;
    return CUDA_SUCCESS;
}

/* Any name exists in any module (the image is not parsed).  The same name
 * yields the same CUfunction, as with a real module. */
CW_DEF(cuModuleGetFunction, (CUfunction *hfunc, CUmodule hmod, const char *name))
{
    CW_COUNT(cuModuleGetFunction);
    CHECK_INIT();
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!hmod || hmod->magic != MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    struct CUfunc_st *f;
    for (f = hmod->funcs; f; f = f->next)
        if (strcmp(f->name, name) == 0)
            break;
    if (!f) {
        f = calloc(1, sizeof *f);
        char *copy = strdup(name);
        if (!f || !copy) {
            free(f);
            free(copy);
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            goto out;
        }
        f->magic = MAGIC_FUNC;
        f->name = copy;
        f->ns = kernel_ns(name);
        f->next = hmod->funcs;
        hmod->funcs = f;
    }
    *hfunc = f;
out:
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuModuleUnload, (CUmodule hmod))
{
    CW_COUNT(cuModuleUnload);
    CHECK_INIT();
    if (!hmod || hmod->magic != MAGIC_MODULE)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_mu);
    hmod->magic = MAGIC_DEAD;
    for (struct CUfunc_st *f = hmod->funcs; f; f = f->next)
        f->magic = MAGIC_DEAD;
    pthread_mutex_unlock(&g_mu);
    return CUDA_SUCCESS;
}

CW_DEF(cuLibraryLoadData,
       (CUlibrary *library, const void *code, CUjit_option *jitOptions,
        void **jitOptionsValues, unsigned int numJitOptions,
        CUlibraryOption *libraryOptions, void **libraryOptionValues,
        unsigned int numLibraryOptions))
{
    CW_COUNT(cuLibraryLoadData);
    CHECK_INIT();
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    if (numJitOptions && (!jitOptions || !jitOptionsValues))
        return CUDA_ERROR_INVALID_VALUE;
    if (numLibraryOptions && (!libraryOptions || !libraryOptionValues))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUlib_st *l = calloc(1, sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->magic = MAGIC_LIBRARY;
    *library = l;
    return CUDA_SUCCESS;
}

CW_DEF(cuLibraryGetKernel, (CUkernel *pKernel, CUlibrary library, const char *name))
{
    CW_COUNT(cuLibraryGetKernel);
    CHECK_INIT();
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!library || library->magic != MAGIC_LIBRARY)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    struct CUkern_st *k;
    for (k = library->kernels; k; k = k->next)
        if (strcmp(k->name, name) == 0)
            break;
    if (!k) {
        k = calloc(1, sizeof *k);
        char *copy = strdup(name);
        if (!k || !copy) {
            free(k);
            free(copy);
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            goto out;
        }
        k->magic = MAGIC_KERNEL;
        k->name = copy;
        k->ns = kernel_ns(name);
        k->next = library->kernels;
        library->kernels = k;
    }
    *pKernel = k;
out:
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuLibraryUnload, (CUlibrary library))
{
    CW_COUNT(cuLibraryUnload);
    CHECK_INIT();
    if (!library || library->magic != MAGIC_LIBRARY)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_mu);
    library->magic = MAGIC_DEAD;
    for (struct CUkern_st *k = library->kernels; k; k = k->next) {
        k->magic = MAGIC_DEAD;
        if (k->func)
            k->func->magic = MAGIC_DEAD;
    }
    pthread_mutex_unlock(&g_mu);
    return CUDA_SUCCESS;
}

CW_DEF(cuKernelGetFunction, (CUfunction *pFunc, CUkernel kernel))
{
    CW_COUNT(cuKernelGetFunction);
    CHECK_INIT();
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    if (!kernel || kernel->magic != MAGIC_KERNEL)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_mu);
    struct CUfunc_st *f = kernel_func_locked(kernel);
    pthread_mutex_unlock(&g_mu);
    if (!f)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pFunc = f;
    return CUDA_SUCCESS;
}

/* As in CUDA 12+, a CUkernel may be used where a CUfunction is expected. */
static int func_info(const void *h, const char **name, uint64_t *ns)
{
    if (!h)
        return -1;
    uint32_t magic = *(const uint32_t *)h;
    if (magic == MAGIC_FUNC) {
        const struct CUfunc_st *f = h;
        *name = f->name;
        *ns = f->ns;
        return 0;
    }
    if (magic == MAGIC_KERNEL) {
        const struct CUkern_st *k = h;
        *name = k->name;
        *ns = k->ns;
        return 0;
    }
    return -1;
}

CW_DEF(cuFuncGetName, (const char **name, CUfunction hfunc))
{
    CW_COUNT(cuFuncGetName);
    CHECK_INIT();
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t ns;
    if (func_info(hfunc, name, &ns) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

CW_DEF(cuKernelGetName, (const char **name, CUkernel hfunc))
{
    CW_COUNT(cuKernelGetName);
    CHECK_INIT();
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t ns;
    if (func_info(hfunc, name, &ns) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Launches                                                                 */
/* ------------------------------------------------------------------------ */

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz, unsigned smem,
                       CUstream h, void **params, void **extra, int ptds, int coop)
{
    CHECK_INIT();
    (void)smem;
    const char *name;
    uint64_t ns;
    if (func_info(f, &name, &ns) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz)
        return CUDA_ERROR_INVALID_VALUE;
    if (gx > 0x7fffffffu || gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 ||
        bz > 64 || (uint64_t)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    work w = { .kind = W_SLEEP, .ntype = CU_GRAPH_NODE_TYPE_KERNEL, .ns = ns,
               .act = { .name = name, .grid = { gx, gy, gz }, .block = { bx, by, bz },
                        .smem = smem, .coop = (uint8_t)coop } };
    CUDA_KERNEL_NODE_PARAMS_v2 kp = {
        .func = f, .gridDimX = gx, .gridDimY = gy, .gridDimZ = gz,
        .blockDimX = bx, .blockDimY = by, .blockDimZ = bz, .sharedMemBytes = smem,
    };
    return run_async(h, ptds, &w, &kp);
}

#define LAUNCH_ARGS f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream

CW_DEF(cuLaunchKernel, (CW_LAUNCH_PARAMS, void **kernelParams, void **extra))
{
    CW_COUNT(cuLaunchKernel);
    ACT(cuLaunchKernel, launch(LAUNCH_ARGS, kernelParams, extra, 0, 0));
}

CW_DEF(cuLaunchKernel_ptsz, (CW_LAUNCH_PARAMS, void **kernelParams, void **extra))
{
    CW_COUNT(cuLaunchKernel_ptsz);
    ACT(cuLaunchKernel_ptsz, launch(LAUNCH_ARGS, kernelParams, extra, 1, 0));
}

CW_DEF(cuLaunchCooperativeKernel, (CW_LAUNCH_PARAMS, void **kernelParams))
{
    CW_COUNT(cuLaunchCooperativeKernel);
    ACT(cuLaunchCooperativeKernel, launch(LAUNCH_ARGS, kernelParams, NULL, 0, 1));
}

CW_DEF(cuLaunchCooperativeKernel_ptsz, (CW_LAUNCH_PARAMS, void **kernelParams))
{
    CW_COUNT(cuLaunchCooperativeKernel_ptsz);
    ACT(cuLaunchCooperativeKernel_ptsz, launch(LAUNCH_ARGS, kernelParams, NULL, 1, 1));
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params,
                          void **extra, int ptds)
{
    CHECK_INIT();
    if (!c || (c->numAttrs && !c->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                  c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream,
                  params, extra, ptds, 0);
}

CW_DEF(cuLaunchKernelEx, (const CUlaunchConfig *config, CUfunction f,
                          void **kernelParams, void **extra))
{
    CW_COUNT(cuLaunchKernelEx);
    ACT(cuLaunchKernelEx, launch_ex(config, f, kernelParams, extra, 0));
}

CW_DEF(cuLaunchKernelEx_ptsz, (const CUlaunchConfig *config, CUfunction f,
                               void **kernelParams, void **extra))
{
    CW_COUNT(cuLaunchKernelEx_ptsz);
    ACT(cuLaunchKernelEx_ptsz, launch_ex(config, f, kernelParams, extra, 1));
}

static CUresult host_func(CUstream h, CUhostFn fn, void *data, int ptds)
{
    CHECK_INIT();
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    work w = { .kind = W_HOSTFN, .ntype = CU_GRAPH_NODE_TYPE_HOST, .fn = fn, .arg = data };
    return run_async(h, ptds, &w, NULL);
}

CW_DEF(cuLaunchHostFunc, (CUstream hStream, CUhostFn fn, void *userData))
{
    CW_COUNT(cuLaunchHostFunc);
    return host_func(hStream, fn, userData, 0);
}

CW_DEF(cuLaunchHostFunc_ptsz, (CUstream hStream, CUhostFn fn, void *userData))
{
    CW_COUNT(cuLaunchHostFunc_ptsz);
    return host_func(hStream, fn, userData, 1);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
/* ------------------------------------------------------------------------ */

/* Allocations are real host memory (so managed/pinned memory is usable from
 * the host), 256-byte aligned like cudaMalloc. */
static CUresult mem_alloc(void **out, size_t bytes, int kind)
{
    if (!out || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (bytes > ((size_t)1 << 40))
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t rounded = (bytes + 255) & ~(size_t)255;
    void *p = aligned_alloc(256, rounded);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&g_mu);
    if (g_nallocs == g_capallocs) {
        size_t cap = g_capallocs ? g_capallocs * 2 : 64;
        alloc_rec *a = realloc(g_allocs, cap * sizeof *a);
        if (!a) {
            pthread_mutex_unlock(&g_mu);
            free(p);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        g_allocs = a;
        g_capallocs = cap;
    }
    g_allocs[g_nallocs++] = (alloc_rec){ (uintptr_t)p, bytes, kind };
    pthread_mutex_unlock(&g_mu);
    *out = p;
    return CUDA_SUCCESS;
}

/* Remove the allocation starting exactly at p if its kind is allowed. */
static int alloc_take_locked(uintptr_t p, int kind_a, int kind_b)
{
    for (size_t i = 0; i < g_nallocs; i++)
        if (g_allocs[i].base == p &&
            (g_allocs[i].kind == kind_a || g_allocs[i].kind == kind_b)) {
            g_allocs[i] = g_allocs[--g_nallocs];
            return 0;
        }
    return -1;
}

/* Is [p, p+n) inside one device (or managed) allocation? */
static int dev_range_ok(CUdeviceptr p, size_t n)
{
    if (!p)
        return 0;
    int ok = 0;
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_nallocs && !ok; i++)
        if (g_allocs[i].kind != A_HOST && p >= g_allocs[i].base &&
            p - g_allocs[i].base <= g_allocs[i].size &&
            n <= g_allocs[i].size - (p - g_allocs[i].base))
            ok = 1;
    pthread_mutex_unlock(&g_mu);
    return ok;
}

CW_DEF(cuMemAlloc_v2, (CUdeviceptr *dptr, size_t bytesize))
{
    CW_COUNT(cuMemAlloc_v2);
    CHECK_INIT();
    return mem_alloc((void **)dptr, bytesize, A_DEVICE);
}

CW_DEF(cuMemAllocManaged, (CUdeviceptr *dptr, size_t bytesize, unsigned int flags))
{
    CW_COUNT(cuMemAllocManaged);
    CHECK_INIT();
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return mem_alloc((void **)dptr, bytesize, A_MANAGED);
}

CW_DEF(cuMemAllocHost_v2, (void **pp, size_t bytesize))
{
    CW_COUNT(cuMemAllocHost_v2);
    CHECK_INIT();
    return mem_alloc(pp, bytesize, A_HOST);
}

/* Like the real cuMemFree/cuMemFreeHost, a free first waits for all work
 * submitted to the device (it is implicitly synchronizing). */
static CUresult mem_free(uintptr_t p, int kind_a, int kind_b)
{
    CUresult rc = ctx_sync();
    if (rc != CUDA_SUCCESS)
        return rc;
    pthread_mutex_lock(&g_mu);
    int missing = alloc_take_locked(p, kind_a, kind_b);
    pthread_mutex_unlock(&g_mu);
    if (missing)
        return CUDA_ERROR_INVALID_VALUE;
    free((void *)p);
    return CUDA_SUCCESS;
}

CW_DEF(cuMemFree_v2, (CUdeviceptr dptr))
{
    CW_COUNT(cuMemFree_v2);
    CHECK_INIT();
    return mem_free(dptr, A_DEVICE, A_MANAGED);
}

CW_DEF(cuMemFreeHost, (void *p))
{
    CW_COUNT(cuMemFreeHost);
    CHECK_INIT();
    return mem_free((uintptr_t)p, A_HOST, A_HOST);
}

/* Stream-ordered allocation: memory is handed out immediately (no pool). */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream h, int ptds)
{
    CHECK_INIT();
    RESOLVE(s, h, ptds);
    (void)s;
    return mem_alloc((void **)dptr, bytes, A_DEVICE);
}

CW_DEF(cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream))
{
    CW_COUNT(cuMemAllocAsync);
    return alloc_async(dptr, bytesize, hStream, 0);
}

CW_DEF(cuMemAllocAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream))
{
    CW_COUNT(cuMemAllocAsync_ptsz);
    return alloc_async(dptr, bytesize, hStream, 1);
}

/* Stream-ordered free: the pointer is invalid at once, the memory is
 * released when the stream reaches the free.  (While capturing, the free
 * node is recorded as a no-op and the memory is leaked.) */
static CUresult free_async(CUdeviceptr dptr, CUstream h, int ptds)
{
    CHECK_INIT();
    RESOLVE(s, h, ptds);
    pthread_mutex_lock(&g_mu);
    CUresult rc = CUDA_SUCCESS;
    if (alloc_take_locked(dptr, A_DEVICE, A_MANAGED) != 0) {
        rc = CUDA_ERROR_INVALID_VALUE;
    } else if (s->capture) {
        work w = { .kind = W_SLEEP, .ntype = CU_GRAPH_NODE_TYPE_MEM_FREE, .ns = 0 };
        rc = submit_locked(s, &w, NULL, NULL);
    } else {
        work w = { .kind = W_FREE, .arg = (void *)(uintptr_t)dptr };
        rc = submit_locked(s, &w, NULL, NULL);
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream))
{
    CW_COUNT(cuMemFreeAsync);
    return free_async(dptr, hStream, 0);
}

CW_DEF(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream))
{
    CW_COUNT(cuMemFreeAsync_ptsz);
    return free_async(dptr, hStream, 1);
}

/* ---- copies and memsets (timed, no data is moved) ------------------------ */

/* CUPTI's CUpti_ActivityMemoryKind of an address, from the allocation table:
 * 3 device, 5 managed, 2 pinned (cuMemAllocHost), 1 pageable (anything else). */
static uint8_t mem_kind(uintptr_t p)
{
    uint8_t k = 1;
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < g_nallocs; i++)
        if (p >= g_allocs[i].base && p - g_allocs[i].base < g_allocs[i].size) {
            k = g_allocs[i].kind == A_DEVICE ? 3 : g_allocs[i].kind == A_MANAGED ? 5 : 2;
            break;
        }
    pthread_mutex_unlock(&g_mu);
    return k;
}

static int on_device(uint8_t kind) { return kind == 3 || kind == 5; }

/* Activity data of a copy of n bytes from src to dst: CUpti_ActivityMemcpyKind
 * HTOD 1, DTOH 2, DTOD 8, HTOH 9 (managed memory counts as device memory).
 * The table lookups are skipped when nothing is reported. */
static struct act_info copy_act(uintptr_t dst, uintptr_t src, size_t n, int sync)
{
    struct act_info a = { .bytes = n, .async = (uint8_t)!sync };
    if (!act_hooks())
        return a;
    a.src_kind = mem_kind(src);
    a.dst_kind = mem_kind(dst);
    int sd = on_device(a.src_kind), dd = on_device(a.dst_kind);
    a.copy_kind = sd ? (dd ? 8 : 2) : (dd ? 1 : 9);
    return a;
}

enum { CHK_NONE = 0, CHK_DST_DEV = 1, CHK_SRC_DEV = 2 };

/* Validate a copy of n bytes and run it (sync) or enqueue it (async). */
static CUresult copy_op(uintptr_t dst, uintptr_t src, size_t n, int checks,
                        CUstream h, int ptds, int sync)
{
    CHECK_INIT();
    if (n) {
        if (!dst || !src)
            return CUDA_ERROR_INVALID_VALUE;
        if ((checks & CHK_DST_DEV) && !dev_range_ok(dst, n))
            return CUDA_ERROR_INVALID_VALUE;
        if ((checks & CHK_SRC_DEV) && !dev_range_ok(src, n))
            return CUDA_ERROR_INVALID_VALUE;
    }
    work w = { .kind = W_SLEEP, .ntype = CU_GRAPH_NODE_TYPE_MEMCPY, .ns = xfer_ns(n),
               .act = copy_act(dst, src, n, sync) };
    return sync ? run_sync(h, ptds, &w) : run_async(h, ptds, &w, NULL);
}

#define U(p) ((uintptr_t)(p))

CW_DEF(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount))
{
    CW_COUNT(cuMemcpy);
    ACT(cuMemcpy, copy_op(dst, src, ByteCount, CHK_NONE, NULL, 0, 1));
}
CW_DEF(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount))
{
    CW_COUNT(cuMemcpy_ptds);
    ACT(cuMemcpy_ptds, copy_op(dst, src, ByteCount, CHK_NONE, NULL, 1, 1));
}
CW_DEF(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream))
{
    CW_COUNT(cuMemcpyAsync);
    ACT(cuMemcpyAsync, copy_op(dst, src, ByteCount, CHK_NONE, hStream, 0, 0));
}
CW_DEF(cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream))
{
    CW_COUNT(cuMemcpyAsync_ptsz);
    ACT(cuMemcpyAsync_ptsz, copy_op(dst, src, ByteCount, CHK_NONE, hStream, 1, 0));
}
CW_DEF(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))
{
    CW_COUNT(cuMemcpyHtoD_v2);
    ACT(cuMemcpyHtoD_v2, copy_op(dstDevice, U(srcHost), ByteCount, CHK_DST_DEV, NULL, 0, 1));
}
CW_DEF(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount))
{
    CW_COUNT(cuMemcpyHtoD_v2_ptds);
    ACT(cuMemcpyHtoD_v2_ptds, copy_op(dstDevice, U(srcHost), ByteCount, CHK_DST_DEV, NULL, 1, 1));
}
CW_DEF(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))
{
    CW_COUNT(cuMemcpyDtoH_v2);
    ACT(cuMemcpyDtoH_v2, copy_op(U(dstHost), srcDevice, ByteCount, CHK_SRC_DEV, NULL, 0, 1));
}
CW_DEF(cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount))
{
    CW_COUNT(cuMemcpyDtoH_v2_ptds);
    ACT(cuMemcpyDtoH_v2_ptds, copy_op(U(dstHost), srcDevice, ByteCount, CHK_SRC_DEV, NULL, 1, 1));
}
CW_DEF(cuMemcpyHtoDAsync_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream))
{
    CW_COUNT(cuMemcpyHtoDAsync_v2);
    ACT(cuMemcpyHtoDAsync_v2, copy_op(dstDevice, U(srcHost), ByteCount, CHK_DST_DEV, hStream, 0, 0));
}
CW_DEF(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream))
{
    CW_COUNT(cuMemcpyHtoDAsync_v2_ptsz);
    ACT(cuMemcpyHtoDAsync_v2_ptsz, copy_op(dstDevice, U(srcHost), ByteCount, CHK_DST_DEV, hStream, 1, 0));
}
CW_DEF(cuMemcpyDtoHAsync_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))
{
    CW_COUNT(cuMemcpyDtoHAsync_v2);
    ACT(cuMemcpyDtoHAsync_v2, copy_op(U(dstHost), srcDevice, ByteCount, CHK_SRC_DEV, hStream, 0, 0));
}
CW_DEF(cuMemcpyDtoHAsync_v2_ptsz, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream))
{
    CW_COUNT(cuMemcpyDtoHAsync_v2_ptsz);
    ACT(cuMemcpyDtoHAsync_v2_ptsz, copy_op(U(dstHost), srcDevice, ByteCount, CHK_SRC_DEV, hStream, 1, 0));
}

/* 2D copies: host/device/unified memory types only (no CUDA arrays). */
static CUresult copy_2d(const CUDA_MEMCPY2D *c, CUstream h, int ptds, int sync)
{
    CHECK_INIT();
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (c->srcMemoryType < CU_MEMORYTYPE_HOST || c->srcMemoryType > CU_MEMORYTYPE_UNIFIED ||
        c->dstMemoryType < CU_MEMORYTYPE_HOST || c->dstMemoryType > CU_MEMORYTYPE_UNIFIED)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->Height > 1 && (c->WidthInBytes + c->srcXInBytes > c->srcPitch ||
                          c->WidthInBytes + c->dstXInBytes > c->dstPitch))
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? U(c->srcHost) : c->srcDevice;
    uintptr_t dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? U(c->dstHost) : c->dstDevice;
    size_t n = c->WidthInBytes * c->Height;
    if (n && (!src || !dst))
        return CUDA_ERROR_INVALID_VALUE;
    work w = { .kind = W_SLEEP, .ntype = CU_GRAPH_NODE_TYPE_MEMCPY, .ns = xfer_ns(n),
               .act = copy_act(dst, src, n, sync) };
    return sync ? run_sync(h, ptds, &w) : run_async(h, ptds, &w, NULL);
}

CW_DEF(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy))
{
    CW_COUNT(cuMemcpy2D_v2);
    ACT(cuMemcpy2D_v2, copy_2d(pCopy, NULL, 0, 1));
}
CW_DEF(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy))
{
    CW_COUNT(cuMemcpy2D_v2_ptds);
    ACT(cuMemcpy2D_v2_ptds, copy_2d(pCopy, NULL, 1, 1));
}
CW_DEF(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream))
{
    CW_COUNT(cuMemcpy2DAsync_v2);
    ACT(cuMemcpy2DAsync_v2, copy_2d(pCopy, hStream, 0, 0));
}
CW_DEF(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream))
{
    CW_COUNT(cuMemcpy2DAsync_v2_ptsz);
    ACT(cuMemcpy2DAsync_v2_ptsz, copy_2d(pCopy, hStream, 1, 0));
}

static CUresult copy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                          CUcontext sctx, size_t n, CUstream h, int ptds, int sync)
{
    CHECK_INIT();
    if (!dctx || dctx->magic != MAGIC_CTX || !sctx || sctx->magic != MAGIC_CTX)
        return CUDA_ERROR_INVALID_CONTEXT;
    return copy_op(dst, src, n, CHK_DST_DEV | CHK_SRC_DEV, h, ptds, sync);
}

CW_DEF(cuMemcpyPeer, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount))
{
    CW_COUNT(cuMemcpyPeer);
    ACT(cuMemcpyPeer, copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, 0, 1));
}
CW_DEF(cuMemcpyPeer_ptds, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount))
{
    CW_COUNT(cuMemcpyPeer_ptds);
    ACT(cuMemcpyPeer_ptds, copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, 1, 1));
}
CW_DEF(cuMemcpyPeerAsync, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream))
{
    CW_COUNT(cuMemcpyPeerAsync);
    ACT(cuMemcpyPeerAsync, copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, 0, 0));
}
CW_DEF(cuMemcpyPeerAsync_ptsz, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream))
{
    CW_COUNT(cuMemcpyPeerAsync_ptsz);
    ACT(cuMemcpyPeerAsync_ptsz, copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, 1, 0));
}

static CUresult memset_op(CUdeviceptr dst, unsigned char uc, size_t n, CUstream h, int ptds,
                          int sync)
{
    CHECK_INIT();
    if (n && !dev_range_ok(dst, n))
        return CUDA_ERROR_INVALID_VALUE;
    work w = { .kind = W_SLEEP, .ntype = CU_GRAPH_NODE_TYPE_MEMSET, .ns = xfer_ns(n),
               .act = { .bytes = n, .value = uc, .async = (uint8_t)!sync,
                        .dst_kind = act_hooks() ? mem_kind(dst) : 0 } };
    return sync ? run_sync(h, ptds, &w) : run_async(h, ptds, &w, NULL);
}

CW_DEF(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N))
{
    CW_COUNT(cuMemsetD8_v2);
    ACT(cuMemsetD8_v2, memset_op(dstDevice, uc, N, NULL, 0, 1));
}
CW_DEF(cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N))
{
    CW_COUNT(cuMemsetD8_v2_ptds);
    ACT(cuMemsetD8_v2_ptds, memset_op(dstDevice, uc, N, NULL, 1, 1));
}
CW_DEF(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream))
{
    CW_COUNT(cuMemsetD8Async);
    ACT(cuMemsetD8Async, memset_op(dstDevice, uc, N, hStream, 0, 0));
}
CW_DEF(cuMemsetD8Async_ptsz, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream))
{
    CW_COUNT(cuMemsetD8Async_ptsz);
    ACT(cuMemsetD8Async_ptsz, memset_op(dstDevice, uc, N, hStream, 1, 0));
}

/* ------------------------------------------------------------------------ */
/* Streams                                                                  */
/* ------------------------------------------------------------------------ */

CW_DEF(cuStreamCreate, (CUstream *phStream, unsigned int Flags))
{
    CW_COUNT(cuStreamCreate);
    CHECK_INIT();
    if (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = malloc(sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stream_init(s, STREAM_USER, Flags);
    pthread_mutex_lock(&g_mu);
    registry_add_locked(s);
    pthread_mutex_unlock(&g_mu);
    *phStream = s;
    return CUDA_SUCCESS;
}

/* Destroying returns at once; pending work still runs, then the worker
 * exits.  The handle is invalid immediately. */
static CUresult stream_destroy(CUstream h)
{
    CHECK_INIT();
    if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD ||
        h->magic != MAGIC_STREAM || h->kind != STREAM_USER)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    h->magic = MAGIC_DEAD;
    if (h->capture) {
        h->capture->invalidated = 1;
        h->capture = NULL;
    }
    if (h->head || h->worker_gen == g_fork_gen) {
        work *w = new_work(W_STOP);
        if (!w || push_locked(h, w) != 0)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        registry_remove_locked(h);
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuStreamDestroy, (CUstream hStream))
{
    CW_COUNT(cuStreamDestroy);
    return stream_destroy(hStream);
}

CW_DEF(cuStreamDestroy_v2, (CUstream hStream))
{
    CW_COUNT(cuStreamDestroy_v2);
    return stream_destroy(hStream);
}

static CUresult stream_sync(CUstream h, int ptds)
{
    CHECK_INIT();
    RESOLVE(s, h, ptds);
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (s->capture)
        rc = capture_violation_locked(s);
    else
        wait_pos_locked(s, s->enqueued);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuStreamSynchronize, (CUstream hStream))
{
    CW_COUNT(cuStreamSynchronize);
    return stream_sync(hStream, 0);
}

CW_DEF(cuStreamSynchronize_ptsz, (CUstream hStream))
{
    CW_COUNT(cuStreamSynchronize_ptsz);
    return stream_sync(hStream, 1);
}

static CUresult stream_query(CUstream h, int ptds)
{
    CHECK_INIT();
    RESOLVE(s, h, ptds);
    CUresult rc;
    pthread_mutex_lock(&g_mu);
    if (s->capture)
        rc = capture_violation_locked(s);
    else
        rc = s->completed == s->enqueued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuStreamQuery, (CUstream hStream))
{
    CW_COUNT(cuStreamQuery);
    return stream_query(hStream, 0);
}

CW_DEF(cuStreamQuery_ptsz, (CUstream hStream))
{
    CW_COUNT(cuStreamQuery_ptsz);
    return stream_query(hStream, 1);
}

/* The waiting stream's worker blocks until the event's most recent record
 * (as of this call) has completed.  Waiting on a never-recorded event is a
 * no-op, as in CUDA.  During capture the wait is not recorded. */
static CUresult stream_wait_event(CUstream h, CUevent ev, unsigned flags, int ptds)
{
    CHECK_INIT();
    if (!ev || ev->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~1u) /* only CU_EVENT_WAIT_DEFAULT / _EXTERNAL */
        return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(s, h, ptds);
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (!s->capture && ev->rec_gen && ev->done_gen < ev->rec_gen) {
        if (implicit_deps_locked(s) != 0) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            work *w = new_work(W_WAIT_EVENT);
            if (!w) {
                rc = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                w->ev = ev;
                w->gen = ev->rec_gen;
                w->other = ev->rec_stream;
                if (push_locked(s, w) != 0)
                    rc = CUDA_ERROR_OUT_OF_MEMORY;
            }
        }
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags))
{
    CW_COUNT(cuStreamWaitEvent);
    return stream_wait_event(hStream, hEvent, Flags, 0);
}

CW_DEF(cuStreamWaitEvent_ptsz, (CUstream hStream, CUevent hEvent, unsigned int Flags))
{
    CW_COUNT(cuStreamWaitEvent_ptsz);
    return stream_wait_event(hStream, hEvent, Flags, 1);
}

/* ------------------------------------------------------------------------ */
/* Events                                                                   */
/* ------------------------------------------------------------------------ */

CW_DEF(cuEventCreate, (CUevent *phEvent, unsigned int Flags))
{
    CW_COUNT(cuEventCreate);
    CHECK_INIT();
    if (!phEvent || (Flags & ~7u))
        return CUDA_ERROR_INVALID_VALUE;
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *e = NULL;
    pthread_mutex_lock(&g_mu);
    if (g_free_events) {
        e = g_free_events;
        g_free_events = e->next_free;
        memset(e, 0, sizeof *e);
    }
    pthread_mutex_unlock(&g_mu);
    if (!e)
        e = calloc(1, sizeof *e);
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = MAGIC_EVENT;
    e->flags = Flags;
    *phEvent = e;
    return CUDA_SUCCESS;
}

/* CWD_TIMING_EVENTS_SERIALIZE=1 (the Intel Unified Runtime behaviour, where
 * timing-enabled events became timestamp commands that made the copy engine
 * wait for compute): a timing-enabled event recorded on a stream of the copy
 * engine (one that a copy was ever pushed to) first waits until every kernel
 * already pushed to any other stream has finished; only then is it stamped,
 * and the work recorded after it on its stream waits with it (g_mu held). */
static int timing_fence_locked(struct CUstream_st *s, const struct CUevent_st *ev)
{
    if (!g_ts_serialize || (ev->flags & CU_EVENT_DISABLE_TIMING) || !s->copy_stream)
        return 0;
    for (struct CUstream_st *t = g_streams; t; t = t->reg_next)
        if (t != s && !t->capture && t->last_kernel_pos > t->completed)
            if (push_wait_pos_locked(s, t, t->last_kernel_pos) != 0)
                return -1;
    return 0;
}

/* Recording enqueues a marker; the event is complete once the stream's
 * worker passes the marker of its most recent record.  Recording into a
 * capturing stream is accepted and not executed. */
static CUresult event_record(CUevent ev, CUstream h, int ptds)
{
    CHECK_INIT();
    if (!ev || ev->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    RESOLVE(s, h, ptds);
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (!s->capture) {
        work *w;
        if (implicit_deps_locked(s) != 0 || timing_fence_locked(s, ev) != 0 ||
            !(w = new_work(W_EVENT_RECORD))) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            w->ev = ev;
            w->gen = ev->rec_gen + 1;
            if (push_locked(s, w) != 0) {
                rc = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                ev->rec_gen++;
                ev->rec_stream = s;
            }
        }
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuEventRecord, (CUevent hEvent, CUstream hStream))
{
    CW_COUNT(cuEventRecord);
    return event_record(hEvent, hStream, 0);
}

CW_DEF(cuEventRecord_ptsz, (CUevent hEvent, CUstream hStream))
{
    CW_COUNT(cuEventRecord_ptsz);
    return event_record(hEvent, hStream, 1);
}

CW_DEF(cuEventSynchronize, (CUevent hEvent))
{
    CW_COUNT(cuEventSynchronize);
    CHECK_INIT();
    if (!hEvent || hEvent->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_mu);
    uint64_t want = hEvent->rec_gen;
    struct CUstream_st *rs = hEvent->rec_stream;
    while (hEvent->done_gen < want) {
        ensure_worker_locked(rs);
        wait_progress_locked();
    }
    pthread_mutex_unlock(&g_mu);
    return CUDA_SUCCESS;
}

CW_DEF(cuEventQuery, (CUevent hEvent))
{
    CW_COUNT(cuEventQuery);
    CHECK_INIT();
    if (!hEvent || hEvent->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_mu);
    CUresult rc = hEvent->done_gen >= hEvent->rec_gen ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&g_mu);
    return rc;
}

static CUresult event_destroy(CUevent ev)
{
    CHECK_INIT();
    if (!ev || ev->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&g_mu);
    ev->magic = MAGIC_DEAD; /* not freed: queued markers may still refer to it */
    if (reuse_events() && ev->done_gen >= ev->rec_gen) {
        ev->next_free = g_free_events;
        g_free_events = ev;
    }
    pthread_mutex_unlock(&g_mu);
    return CUDA_SUCCESS;
}

CW_DEF(cuEventDestroy, (CUevent hEvent))
{
    CW_COUNT(cuEventDestroy);
    return event_destroy(hEvent);
}

CW_DEF(cuEventDestroy_v2, (CUevent hEvent))
{
    CW_COUNT(cuEventDestroy_v2);
    return event_destroy(hEvent);
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
    CHECK_INIT();
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    if (!a || a->magic != MAGIC_EVENT || !b || b->magic != MAGIC_EVENT)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (!a->rec_gen || !b->rec_gen)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (a->done_gen < a->rec_gen || b->done_gen < b->rec_gen)
        rc = CUDA_ERROR_NOT_READY;
    else
        *ms = (float)((double)(b->t_ns - a->t_ns) / 1e6); /* device-clock units */
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd))
{
    CW_COUNT(cuEventElapsedTime);
    return elapsed(pMilliseconds, hStart, hEnd);
}

CW_DEF(cuEventElapsedTime_v2, (float *pMilliseconds, CUevent hStart, CUevent hEnd))
{
    CW_COUNT(cuEventElapsedTime_v2);
    return elapsed(pMilliseconds, hStart, hEnd);
}

/* ------------------------------------------------------------------------ */
/* Stream capture and graphs                                                */
/* ------------------------------------------------------------------------ */

static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, int ptds)
{
    CHECK_INIT();
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(s, h, ptds);
    if (s->kind == STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    struct CUgraph_st *g = graph_new();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (s->capture)
        rc = CUDA_ERROR_ILLEGAL_STATE;
    else
        s->capture = g;
    pthread_mutex_unlock(&g_mu);
    if (rc)
        free(g);
    return rc;
}

CW_DEF(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode))
{
    CW_COUNT(cuStreamBeginCapture_v2);
    return begin_capture(hStream, mode, 0);
}

CW_DEF(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode))
{
    CW_COUNT(cuStreamBeginCapture_v2_ptsz);
    return begin_capture(hStream, mode, 1);
}

static CUresult end_capture(CUstream h, CUgraph *out, int ptds)
{
    CHECK_INIT();
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(s, h, ptds);
    pthread_mutex_lock(&g_mu);
    struct CUgraph_st *g = s->capture;
    s->capture = NULL;
    pthread_mutex_unlock(&g_mu);
    if (!g)
        return CUDA_ERROR_ILLEGAL_STATE;
    if (g->invalidated) {
        g->magic = MAGIC_DEAD;
        *out = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *out = g;
    return CUDA_SUCCESS;
}

CW_DEF(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph))
{
    CW_COUNT(cuStreamEndCapture);
    return end_capture(hStream, phGraph, 0);
}

CW_DEF(cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph))
{
    CW_COUNT(cuStreamEndCapture_ptsz);
    return end_capture(hStream, phGraph, 1);
}

/* NONE, ACTIVE or INVALIDATED (a capture broken by a synchronize or query,
 * not yet ended).  The legacy stream while a blocking stream (a per-thread
 * default stream included) captures gives CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
 * (906), *status untouched, the capture not invalidated, as documented. */
static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *status, int ptds)
{
    CHECK_INIT();
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    RESOLVE(s, h, ptds);
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (s->kind == STREAM_LEGACY) {
        for (struct CUstream_st *t = g_streams; t; t = t->reg_next)
            if (t != s && t->capture && !(t->flags & CU_STREAM_NON_BLOCKING))
                rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    if (rc == CUDA_SUCCESS)
        *status = !s->capture                ? CU_STREAM_CAPTURE_STATUS_NONE
                  : s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                            : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus))
{
    CW_COUNT(cuStreamIsCapturing);
    return is_capturing(hStream, captureStatus, 0);
}

CW_DEF(cuStreamIsCapturing_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus))
{
    CW_COUNT(cuStreamIsCapturing_ptsz);
    return is_capturing(hStream, captureStatus, 1);
}

/* Swaps *mode with the calling thread's capture mode (initially GLOBAL).
 * The mode is only stored: capture-mode rules are not simulated. */
static __thread CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CW_DEF(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode *mode))
{
    CW_COUNT(cuThreadExchangeStreamCaptureMode);
    CHECK_INIT();
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = t_capture_mode;
    t_capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

static int graph_ok(const struct CUgraph_st *g) { return g && g->magic == MAGIC_GRAPH; }
static int node_ok(const struct CUgraphNode_st *n) { return n && n->magic == MAGIC_NODE; }

/* Numbers an executable graph's nodes as the driver does (what CUPTI's
 * graphNodeId carries, seen on an H200): (exec id << 32) | n, with g's own
 * nodes from *next in node order, then each child graph's nodes in turn. */
static void exec_number_locked(struct CUgraph_st *g, uint32_t exec_id, uint32_t *next)
{
    for (size_t i = 0; i < g->n; i++)
        g->nodes[i]->id = ((uint64_t)exec_id << 32) | (*next)++;
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i]->child)
            exec_number_locked(g->nodes[i]->child, exec_id, next);
}

/* Instantiation snapshots the graph: later changes to it do not affect the
 * executable graph.  Flags are checked but have no effect (an upload is a
 * no-op). */
static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!graph_ok(g))
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned long long)0xf)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    work_vec items = { 0 };
    pthread_mutex_lock(&g_mu);
    x->graph = graph_clone_locked(g, NULL);
    uint32_t next = 0;
    if (x->graph)
        exec_number_locked(x->graph, x->graph->id, &next);
    int bad = !x->graph || graph_flatten_locked(x->graph, x->graph ? x->graph->id : 0, &items) != 0;
    pthread_mutex_unlock(&g_mu);
    if (bad) {
        free(items.v);
        free(x);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    x->n = items.n;
    x->items = items.v;
    x->magic = MAGIC_EXEC;
    *out = x;
    return CUDA_SUCCESS;
}

CW_DEF(cuGraphInstantiateWithFlags, (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags))
{
    CW_COUNT(cuGraphInstantiateWithFlags);
    CHECK_INIT();
    return instantiate(phGraphExec, hGraph, flags);
}

/* The upload stream is only looked at with CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
 * (NULL there is the legacy or the per-thread stream, by variant). */
static CUresult instantiate_params(CUgraphExec *out, CUgraph g,
                                   CUDA_GRAPH_INSTANTIATE_PARAMS *p, int ptds)
{
    CHECK_INIT();
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    p->hErrNode_out = NULL;
    p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
    if (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) {
        RESOLVE(s, p->hUploadStream, ptds);
        (void)s;
    }
    CUresult rc = instantiate(out, g, p->flags);
    if (rc == CUDA_SUCCESS)
        p->result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
    return rc;
}

CW_DEF(cuGraphInstantiateWithParams, (CUgraphExec *phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams))
{
    CW_COUNT(cuGraphInstantiateWithParams);
    return instantiate_params(phGraphExec, hGraph, instantiateParams, 0);
}

CW_DEF(cuGraphInstantiateWithParams_ptsz, (CUgraphExec *phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams))
{
    CW_COUNT(cuGraphInstantiateWithParams_ptsz);
    return instantiate_params(phGraphExec, hGraph, instantiateParams, 1);
}

/* Submits the graph's work items, in node order, to the stream.  Launching
 * into a capturing stream adds a child graph node (a copy of the executable
 * graph's graph) to that capture instead. */
static CUresult graph_launch(CUgraphExec x, CUstream h, int ptds)
{
    CHECK_INIT();
    if (!x || x->magic != MAGIC_EXEC)
        return CUDA_ERROR_INVALID_HANDLE;
    RESOLVE(s, h, ptds);
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (s->capture) {
        struct CUgraphNode_st *n = graph_add_node_locked(s->capture, CU_GRAPH_NODE_TYPE_GRAPH);
        if (!n || capture_dep_locked(s->capture, n) != 0 ||
            !(n->child = graph_clone_locked(x->graph, n)))
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        for (size_t i = 0; i < x->n && rc == CUDA_SUCCESS; i++)
            rc = submit_locked(s, &x->items[i], NULL, NULL);
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream))
{
    CW_COUNT(cuGraphLaunch);
    ACT(cuGraphLaunch, graph_launch(hGraphExec, hStream, 0));
}

CW_DEF(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream))
{
    CW_COUNT(cuGraphLaunch_ptsz);
    ACT(cuGraphLaunch_ptsz, graph_launch(hGraphExec, hStream, 1));
}

/* Destroys the graph and its nodes.  The graph of a child graph node belongs
 * to the node and cannot be destroyed on its own (1). */
CW_DEF(cuGraphDestroy, (CUgraph hGraph))
{
    CW_COUNT(cuGraphDestroy);
    CHECK_INIT();
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (!graph_ok(hGraph))
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (hGraph->parent)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        graph_kill_locked(hGraph);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuGraphExecDestroy, (CUgraphExec hGraphExec))
{
    CW_COUNT(cuGraphExecDestroy);
    CHECK_INIT();
    if (!hGraphExec || hGraphExec->magic != MAGIC_EXEC)
        return CUDA_ERROR_INVALID_HANDLE;
    hGraphExec->magic = MAGIC_DEAD;
    return CUDA_SUCCESS;
}

/* ---- explicit construction -------------------------------------------- */

CW_DEF(cuGraphCreate, (CUgraph *phGraph, unsigned int flags))
{
    CW_COUNT(cuGraphCreate);
    CHECK_INIT();
    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUgraph_st *g = graph_new();
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phGraph = g;
    return CUDA_SUCCESS;
}

/* Common checks of the cuGraphAdd*Node calls (g_mu held): every dependency
 * must be a node of g. */
static CUresult add_checks_locked(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                  size_t ndeps)
{
    if (!out || (ndeps && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    if (!graph_ok(g))
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < ndeps; i++)
        if (!node_ok(deps[i]) || deps[i]->owner != g)
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* func (a CUfunction or CUkernel) is launched; with func NULL, kern is, in
 * ctx (NULL: the current context).  The node records what kernel_params_locked
 * describes. */
static CUresult add_kernel_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps,
                                size_t ndeps, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    CHECK_INIT();
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS_v2 kp = *p;
    const char *name;
    uint64_t ns;
    if (!kp.func) {
        if (!kp.kern || kp.kern->magic != MAGIC_KERNEL)
            return CUDA_ERROR_INVALID_HANDLE;
        if (kp.ctx && kp.ctx->magic != MAGIC_CTX)
            return CUDA_ERROR_INVALID_CONTEXT;
        kp.func = (CUfunction)kp.kern;
    }
    if (func_info(kp.func, &name, &ns) != 0)
        return CUDA_ERROR_INVALID_HANDLE;
    unsigned gx = kp.gridDimX, gy = kp.gridDimY, gz = kp.gridDimZ;
    unsigned bx = kp.blockDimX, by = kp.blockDimY, bz = kp.blockDimZ;
    if (!gx || !gy || !gz || !bx || !by || !bz || gx > 0x7fffffffu || gy > 65535 ||
        gz > 65535 || bx > 1024 || by > 1024 || bz > 64 || (uint64_t)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (kp.kernelParams && kp.extra)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mu);
    CUresult rc = add_checks_locked(out, g, deps, ndeps);
    struct CUgraphNode_st *n = NULL;
    if (rc == CUDA_SUCCESS && (kernel_params_locked(&kp) != 0 ||
                               !(n = graph_add_node_locked(g, CU_GRAPH_NODE_TYPE_KERNEL))))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (n && node_deps_locked(n, deps, ndeps) != 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (n) {
        n->tmpl = (work){ .kind = W_SLEEP, .ntype = CU_GRAPH_NODE_TYPE_KERNEL, .ns = ns,
                          .act = { .name = name, .grid = { gx, gy, gz },
                                   .block = { bx, by, bz }, .smem = kp.sharedMemBytes } };
        n->kp = kp;
        *out = n;
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuGraphAddKernelNode, (CUgraphNode *phGraphNode, CUgraph hGraph,
                              const CUgraphNode *dependencies, size_t numDependencies,
                              const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams))
{
    CW_COUNT(cuGraphAddKernelNode);
    CHECK_INIT();
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    memset(&p, 0, sizeof p);
    memcpy(&p, nodeParams, sizeof *nodeParams); /* v2 extends v1 */
    if (!p.func)
        return CUDA_ERROR_INVALID_HANDLE;
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, &p);
}

CW_DEF(cuGraphAddKernelNode_v2, (CUgraphNode *phGraphNode, CUgraph hGraph,
                                 const CUgraphNode *dependencies, size_t numDependencies,
                                 const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams))
{
    CW_COUNT(cuGraphAddKernelNode_v2);
    return add_kernel_node(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
}

/* The child graph is cloned into the node (later changes to childGraph do
 * not affect it); cuGraphChildGraphNodeGetGraph returns the clone. */
CW_DEF(cuGraphAddChildGraphNode, (CUgraphNode *phGraphNode, CUgraph hGraph,
                                  const CUgraphNode *dependencies, size_t numDependencies,
                                  CUgraph childGraph))
{
    CW_COUNT(cuGraphAddChildGraphNode);
    CHECK_INIT();
    pthread_mutex_lock(&g_mu);
    CUresult rc = add_checks_locked(phGraphNode, hGraph, dependencies, numDependencies);
    if (rc == CUDA_SUCCESS && !graph_ok(childGraph))
        rc = CUDA_ERROR_INVALID_HANDLE;
    if (rc == CUDA_SUCCESS) {
        /* Clone first: childGraph may be hGraph itself. */
        struct CUgraph_st *c = graph_clone_locked(childGraph, NULL);
        struct CUgraphNode_st *n = c ? graph_add_node_locked(hGraph, CU_GRAPH_NODE_TYPE_GRAPH) : NULL;
        if (!n || node_deps_locked(n, dependencies, numDependencies) != 0) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            c->parent = n;
            n->child = c;
            *phGraphNode = n;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

/* ---- inspection ---------------------------------------------------------- */

/* nodes NULL: *numNodes = the node count.  Otherwise the first *numNodes
 * nodes (creation order) are stored; if *numNodes exceeds the count, the
 * rest of the array is set to NULL and *numNodes to the count. */
CW_DEF(cuGraphGetNodes, (CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes))
{
    CW_COUNT(cuGraphGetNodes);
    CHECK_INIT();
    if (!numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (!graph_ok(hGraph)) {
        rc = CUDA_ERROR_INVALID_HANDLE;
    } else if (!nodes) {
        *numNodes = hGraph->n;
    } else {
        size_t want = *numNodes;
        for (size_t i = 0; i < want; i++)
            nodes[i] = i < hGraph->n ? hGraph->nodes[i] : NULL;
        if (want > hGraph->n)
            *numNodes = hGraph->n;
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

/* The graph's dependencies, by dependent node in node order, each node's in
 * the order given at creation.  from and to NULL: *numEdges = the count;
 * otherwise the first *numEdges are stored (the rest NULL, *numEdges set to
 * the count when it is smaller).  The _v2 variant's edge data, when asked
 * for, is all zero (default edges). */
static CUresult graph_edges(CUgraph g, CUgraphNode *from, CUgraphNode *to, void *data,
                            size_t *num)
{
    CHECK_INIT();
    if (!num || (!from) != (!to))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&g_mu);
    if (!graph_ok(g)) {
        rc = CUDA_ERROR_INVALID_HANDLE;
    } else {
        size_t total = 0, want = *num;
        for (size_t i = 0; i < g->n; i++) {
            for (size_t k = 0; k < g->nodes[i]->ndeps; k++, total++) {
                if (from && total < want) {
                    from[total] = g->nodes[g->nodes[i]->deps[k]];
                    to[total] = g->nodes[i];
                }
            }
        }
        if (!from) {
            *num = total;
        } else {
            for (size_t e = total; e < want; e++)
                from[e] = to[e] = NULL;
            if (data && want)
                memset(data, 0, want * 8); /* sizeof(CUgraphEdgeData) */
            if (want > total)
                *num = total;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return rc;
}

CW_DEF(cuGraphGetEdges, (CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges))
{
    CW_COUNT(cuGraphGetEdges);
    return graph_edges(hGraph, from, to, NULL, numEdges);
}

CW_DEF(cuGraphGetEdges_v2, (CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, void *edgeData,
                            size_t *numEdges))
{
    CW_COUNT(cuGraphGetEdges_v2);
    return graph_edges(hGraph, from, to, edgeData, numEdges);
}

CW_DEF(cuGraphNodeGetType, (CUgraphNode hNode, CUgraphNodeType *type))
{
    CW_COUNT(cuGraphNodeGetType);
    CHECK_INIT();
    if (!type)
        return CUDA_ERROR_INVALID_VALUE;
    if (!node_ok(hNode))
        return CUDA_ERROR_INVALID_HANDLE;
    *type = hNode->type;
    return CUDA_SUCCESS;
}

/* Parameters of a kernel node (see kernel_params_locked): a node that is not
 * a kernel node gives 1. */
static CUresult kernel_node_params(CUgraphNode n, CUDA_KERNEL_NODE_PARAMS_v2 *out)
{
    if (!node_ok(n))
        return CUDA_ERROR_INVALID_HANDLE;
    if (n->type != CU_GRAPH_NODE_TYPE_KERNEL)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mu);
    *out = n->kp;
    pthread_mutex_unlock(&g_mu);
    return CUDA_SUCCESS;
}

CW_DEF(cuGraphKernelNodeGetParams, (CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams))
{
    CW_COUNT(cuGraphKernelNodeGetParams);
    CHECK_INIT();
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS_v2 p;
    CUresult rc = kernel_node_params(hNode, &p);
    if (rc == CUDA_SUCCESS)
        memcpy(nodeParams, &p, sizeof *nodeParams); /* the v1 prefix of v2 */
    return rc;
}

CW_DEF(cuGraphKernelNodeGetParams_v2, (CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams))
{
    CW_COUNT(cuGraphKernelNodeGetParams_v2);
    CHECK_INIT();
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    return kernel_node_params(hNode, nodeParams);
}

/* The embedded graph itself (not a copy): nodes added to it are part of the
 * child graph node.  A node that is not a child graph node gives 1. */
CW_DEF(cuGraphChildGraphNodeGetGraph, (CUgraphNode hNode, CUgraph *phGraph))
{
    CW_COUNT(cuGraphChildGraphNodeGetGraph);
    CHECK_INIT();
    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    if (!node_ok(hNode))
        return CUDA_ERROR_INVALID_HANDLE;
    if (hNode->type != CU_GRAPH_NODE_TYPE_GRAPH)
        return CUDA_ERROR_INVALID_VALUE;
    *phGraph = hNode->child;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

static const struct { CUresult code; const char *name, *text; } g_errors[] = {
    { 0, "CUDA_SUCCESS", "no error" },
    { 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
    { 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
    { 3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
    { 4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down" },
    { 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
    { 101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
    { 200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
    { 201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
    { 400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
    { 401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state" },
    { 500, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
    { 600, "CUDA_ERROR_NOT_READY", "device not ready" },
    { 801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
    { 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing" },
    { 901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture" },
    { 906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "operation would make the legacy stream depend on a capturing blocking stream" },
    { 908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "attempted to end capture from a different thread" },
    { 999, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static CUresult error_lookup(CUresult e, const char **out, int want_name)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == e) {
            *out = want_name ? g_errors[i].name : g_errors[i].text;
            return CUDA_SUCCESS;
        }
    *out = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CW_DEF(cuGetErrorString, (CUresult error, const char **pStr))
{
    CW_COUNT(cuGetErrorString);
    return error_lookup(error, pStr, 0);
}

CW_DEF(cuGetErrorName, (CUresult error, const char **pStr))
{
    CW_COUNT(cuGetErrorName);
    return error_lookup(error, pStr, 1);
}

/* ------------------------------------------------------------------------ */
/* cuGetProcAddress                                                         */
/* ------------------------------------------------------------------------ */

/*
 * (base name, first CUDA version, per-thread?, exported variant).  For a
 * request the driver picks, among the rows of that base name, the one with
 * the highest version <= cudaVersion; with CU_GET_PROC_ADDRESS_PER_THREAD_
 * DEFAULT_STREAM it prefers the per-thread rows and falls back to the legacy
 * rows when there is no eligible per-thread one.  Versions come from the
 * PFN_<base>_v<version> typedefs of CUDA 13's cudaTypedefs.h.  Legacy 32-bit
 * ABIs (e.g. cuMemcpyHtoD_v2000) are not exported by the double, so asking for
 * a version older than the first row yields VERSION_NOT_SUFFICIENT.
 */
typedef struct { const char *base; int version; int ptds; void *fn; } proc_row;

/* The two cuGetProcAddress variants are defined below the table. */
__attribute__((visibility("hidden"))) CUresult cwi_cuGetProcAddress(
    const char *, void **, int, cuuint64_t);
__attribute__((visibility("hidden"))) CUresult cwi_cuGetProcAddress_v2(
    const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

#define R(base, ver, sym) { base, ver, 0, (void *)cwi_##sym }
#define RP(base, ver, sym) { base, ver, 1, (void *)cwi_##sym }

static const proc_row g_procs[] = {
    R("cuInit", 2000, cuInit),
    R("cuDriverGetVersion", 2020, cuDriverGetVersion),
    R("cuDeviceGet", 2000, cuDeviceGet),
    R("cuDeviceGetCount", 2000, cuDeviceGetCount),
    R("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    R("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    R("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    R("cuCtxGetDevice", 2000, cuCtxGetDevice),
    R("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    R("cuCtxSynchronize", 2000, cuCtxSynchronize),
    R("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    R("cuModuleLoadData", 2000, cuModuleLoadData),
    R("cuModuleGetFunction", 2000, cuModuleGetFunction),
    R("cuModuleUnload", 2000, cuModuleUnload),
    R("cuLibraryLoadData", 12000, cuLibraryLoadData),
    R("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
    R("cuLibraryUnload", 12000, cuLibraryUnload),
    R("cuKernelGetFunction", 12000, cuKernelGetFunction),
    R("cuFuncGetName", 12030, cuFuncGetName),
    R("cuKernelGetName", 12030, cuKernelGetName),
    R("cuLaunchKernel", 4000, cuLaunchKernel),
    RP("cuLaunchKernel", 7000, cuLaunchKernel_ptsz),
    R("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
    RP("cuLaunchKernelEx", 11060, cuLaunchKernelEx_ptsz),
    R("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel),
    RP("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel_ptsz),
    R("cuLaunchHostFunc", 10000, cuLaunchHostFunc),
    RP("cuLaunchHostFunc", 10000, cuLaunchHostFunc_ptsz),
    R("cuMemAlloc", 3020, cuMemAlloc_v2),
    R("cuMemFree", 3020, cuMemFree_v2),
    R("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    R("cuMemFreeHost", 2000, cuMemFreeHost),
    R("cuMemAllocManaged", 6000, cuMemAllocManaged),
    R("cuMemAllocAsync", 11020, cuMemAllocAsync),
    RP("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
    R("cuMemFreeAsync", 11020, cuMemFreeAsync),
    RP("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
    R("cuMemcpy", 4000, cuMemcpy),
    RP("cuMemcpy", 7000, cuMemcpy_ptds),
    R("cuMemcpyAsync", 4000, cuMemcpyAsync),
    RP("cuMemcpyAsync", 7000, cuMemcpyAsync_ptsz),
    R("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    RP("cuMemcpyHtoD", 7000, cuMemcpyHtoD_v2_ptds),
    R("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    RP("cuMemcpyDtoH", 7000, cuMemcpyDtoH_v2_ptds),
    R("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
    RP("cuMemcpyHtoDAsync", 7000, cuMemcpyHtoDAsync_v2_ptsz),
    R("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
    RP("cuMemcpyDtoHAsync", 7000, cuMemcpyDtoHAsync_v2_ptsz),
    R("cuMemcpy2D", 3020, cuMemcpy2D_v2),
    RP("cuMemcpy2D", 7000, cuMemcpy2D_v2_ptds),
    R("cuMemcpy2DAsync", 3020, cuMemcpy2DAsync_v2),
    RP("cuMemcpy2DAsync", 7000, cuMemcpy2DAsync_v2_ptsz),
    R("cuMemcpyPeer", 4000, cuMemcpyPeer),
    RP("cuMemcpyPeer", 7000, cuMemcpyPeer_ptds),
    R("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync),
    RP("cuMemcpyPeerAsync", 7000, cuMemcpyPeerAsync_ptsz),
    R("cuMemsetD8", 3020, cuMemsetD8_v2),
    RP("cuMemsetD8", 7000, cuMemsetD8_v2_ptds),
    R("cuMemsetD8Async", 3020, cuMemsetD8Async),
    RP("cuMemsetD8Async", 7000, cuMemsetD8Async_ptsz),
    R("cuStreamCreate", 2000, cuStreamCreate),
    R("cuStreamDestroy", 2000, cuStreamDestroy),
    R("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    R("cuStreamSynchronize", 2000, cuStreamSynchronize),
    RP("cuStreamSynchronize", 7000, cuStreamSynchronize_ptsz),
    R("cuStreamQuery", 2000, cuStreamQuery),
    RP("cuStreamQuery", 7000, cuStreamQuery_ptsz),
    R("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    RP("cuStreamWaitEvent", 7000, cuStreamWaitEvent_ptsz),
    R("cuEventCreate", 2000, cuEventCreate),
    R("cuEventRecord", 2000, cuEventRecord),
    RP("cuEventRecord", 7000, cuEventRecord_ptsz),
    R("cuEventSynchronize", 2000, cuEventSynchronize),
    R("cuEventQuery", 2000, cuEventQuery),
    R("cuEventDestroy", 2000, cuEventDestroy),
    R("cuEventDestroy", 4000, cuEventDestroy_v2),
    R("cuEventElapsedTime", 2000, cuEventElapsedTime),
    R("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    R("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
    RP("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2_ptsz),
    R("cuStreamEndCapture", 10000, cuStreamEndCapture),
    RP("cuStreamEndCapture", 10000, cuStreamEndCapture_ptsz),
    R("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
    RP("cuStreamIsCapturing", 10000, cuStreamIsCapturing_ptsz),
    R("cuThreadExchangeStreamCaptureMode", 10010, cuThreadExchangeStreamCaptureMode),
    R("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
    R("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    R("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams),
    RP("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams_ptsz),
    R("cuGraphLaunch", 10000, cuGraphLaunch),
    RP("cuGraphLaunch", 10000, cuGraphLaunch_ptsz),
    R("cuGraphDestroy", 10000, cuGraphDestroy),
    R("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    R("cuGraphCreate", 10000, cuGraphCreate),
    R("cuGraphAddKernelNode", 10000, cuGraphAddKernelNode),
    R("cuGraphAddKernelNode", 12000, cuGraphAddKernelNode_v2),
    R("cuGraphAddChildGraphNode", 10000, cuGraphAddChildGraphNode),
    R("cuGraphGetNodes", 10000, cuGraphGetNodes),
    R("cuGraphNodeGetType", 10000, cuGraphNodeGetType),
    R("cuGraphKernelNodeGetParams", 10000, cuGraphKernelNodeGetParams),
    R("cuGraphKernelNodeGetParams", 12000, cuGraphKernelNodeGetParams_v2),
    R("cuGraphChildGraphNodeGetGraph", 10000, cuGraphChildGraphNodeGetGraph),
    R("cuGetErrorString", 6000, cuGetErrorString),
    R("cuGetErrorName", 6000, cuGetErrorName),
    R("cuGetProcAddress", 11030, cuGetProcAddress),
    R("cuGetProcAddress", 12000, cuGetProcAddress_v2),
};

/* Name of the exported symbol at address fn (for CWD_TRACE output). */
static const char *export_name(void *fn)
{
#define X(n) if (fn == (void *)cwi_##n) return #n;
    CWD_SYMBOLS(X)
#undef X
    return "?";
}

static CUresult get_proc(const char *symbol, void **pfn, int cudaVersion,
                         cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    int want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const proc_row *best_pt = NULL, *best = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof g_procs / sizeof g_procs[0]; i++) {
        const proc_row *r = &g_procs[i];
        if (strcmp(r->base, symbol) != 0)
            continue;
        known = 1;
        if (r->version > cudaVersion)
            continue;
        const proc_row **slot = r->ptds ? &best_pt : &best;
        if (!*slot || r->version > (*slot)->version)
            *slot = r;
    }
    const proc_row *pick = (want_pt && best_pt) ? best_pt : best;
    CUdriverProcAddressQueryResult st;
    CUresult rc;
    if (pick) {
        *pfn = pick->fn;
        st = CU_GET_PROC_ADDRESS_SUCCESS;
        rc = CUDA_SUCCESS;
    } else {
        *pfn = NULL;
        st = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                   : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        rc = CUDA_ERROR_NOT_FOUND;
    }
    if (status)
        *status = st;
    /* CWD_TRACE=1: log every lookup on stderr (handy to see what a real
     * libcudart or the shim asks for). */
    const char *trace = getenv("CWD_TRACE");
    if (trace && *trace && *trace != '0')
        fprintf(stderr, "cwd: cuGetProcAddress(\"%s\", %d, %llu) -> %s status=%d\n",
                symbol, cudaVersion, (unsigned long long)flags,
                pick ? export_name(pick->fn) : "NULL", (int)st);
    return rc;
}

CW_DEF(cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags))
{
    CW_COUNT(cuGetProcAddress);
    return get_proc(symbol, pfn, cudaVersion, flags, NULL);
}

CW_DEF(cuGetProcAddress_v2, (const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus))
{
    CW_COUNT(cuGetProcAddress_v2);
    return get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}
