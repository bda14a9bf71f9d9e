/*
 * libze_double.c - test double of a Level Zero (oneAPI L0) GPU driver, built
 * as libze_double.so and loaded by the REAL Level Zero loader
 * (libze_loader.so.1) instead of Intel's libze_intel_gpu.so.1, so that L0
 * programs run through the real loader on machines without an Intel GPU.
 *
 * How the loader finds it (loader 1.8.12, spec 1.4 headers; see
 * ci/README-doubles.md): ZE_ENABLE_ALT_DRIVERS=/path/libze_double.so replaces
 * the loader's list of known driver names with that path, and the loader
 * dlopen()s it.  The loader then calls, before anything else, every
 * ze/zet/zes Get...ProcAddrTable function it requires (46 of them in 1.8.12;
 * a driver missing any one makes zeInit fail with ZE_RESULT_ERROR_UNINITIALIZED
 * and our zeInit is never called), then the driver's zeInit (twice for the
 * application's first zeInit).  With a single driver and no
 * ZE_ENABLE_LOADER_INTERCEPT the loader hands the application our tables
 * directly, so the application's handles are this file's objects.
 *
 * Like a real driver, the library exports only the DDI-table getters (plus
 * the cwz_* counter helpers): the L0 entry points are hidden functions that
 * the getters put in the tables.  The types are those of the installed
 * libze-dev headers (<level_zero/ze_api.h>, ze_ddi.h, zet_ddi.h, zes_ddi.h):
 * assigning each function to its table slot type-checks its signature.
 *
 * Simulation model (the CUDA double's, in L0 terms):
 *   - one driver, one GPU device (no sub-devices), any number of contexts;
 *   - every command queue and every immediate command list is a simulated
 *     engine: a real worker thread running a FIFO of operations in order;
 *   - a regular command list records operations; zeCommandQueueExecuteCommandLists
 *     copies them onto the queue's engine (so the list may be reset or
 *     re-executed at once); an immediate list's appends go straight to its
 *     engine (ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS: the append waits for them);
 *   - a kernel is a timed sleep: a name containing "sleep_<N>us" takes N us,
 *     "hang" never finishes, any other name 2 us; copies and fills really move
 *     or write the bytes and take bytes / (10 GB/s);
 *   - an operation first waits for its wait-list events, and when it finishes
 *     signals its signal event; events of a ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP
 *     pool also get the operation's start and end on the simulated device
 *     clock (ticks of DEV_TICK_NS; CWZ_DEVICE_CLOCK_OFFSET_NS,
 *     CWZ_DEVICE_CLOCK_DRIFT_PPM), kernel timestamps keeping
 *     KERNEL_TS_VALID_BITS bits and global timestamps TS_VALID_BITS;
 *   - fences are signalled by the queue's engine after the command lists
 *     executed with them;
 *   - CWZ_TRUTH=<path> logs every executed kernel, copy and fill with its true
 *     host start and end, in the CUDA double's CWD_TRUTH format.
 *
 * Bad input gets real error codes: a NULL handle argument, or one that is
 * destroyed or of another type, gives ZE_RESULT_ERROR_INVALID_NULL_HANDLE
 * (the spec's "handle argument is not valid"); see ci/README-doubles.md for
 * the full list.  Destroyed objects are poisoned and never freed, so stale
 * handles are detected rather than used after free.
 */
#define _GNU_SOURCE
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include "cw_counters.h"

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

/* The simulated device: its timer ticks every DEV_TICK_NS device nanoseconds
 * (12.5 MHz: timerResolution is 80 in ns and 12500000 in cycles/s, both
 * exact); zeDeviceGetGlobalTimestamps and zeCommandListAppendWriteGlobalTimestamp
 * give TS_VALID_BITS bits of it, kernel timestamps KERNEL_TS_VALID_BITS bits
 * (the low bits of the same counter, as on Intel GPUs: they wrap every
 * 2^32 * 80 ns = 343.6 s). */
#define DEV_TICK_NS 80
#define TS_VALID_BITS 36
#define KERNEL_TS_VALID_BITS 32
#define TS_MASK ((UINT64_C(1) << TS_VALID_BITS) - 1)
#define KERNEL_TS_MASK ((UINT64_C(1) << KERNEL_TS_VALID_BITS) - 1)

#define MAX_ALLOC_SIZE (UINT64_C(4) << 30)
#define DEVICE_MEMORY (UINT64_C(16) << 30)
#define MAX_GROUP_SIZE 1024
#define N_QUEUE_GROUPS 2   /* ordinal 0: compute (+copy), ordinal 1: copy only */
#define FOREVER UINT64_MAX

/* ------------------------------------------------------------------------ */
/* Entry points and their counters                                          */
/* ------------------------------------------------------------------------ */

/* The L0 entry points the double implements (table slots left NULL make the
 * loader answer ZE_RESULT_ERROR_UNSUPPORTED_FEATURE without calling us). */
#define CWZ_ENTRY_POINTS(X)                                                     \
    X(zeInit)                                                                   \
    X(zeDriverGet) X(zeDriverGetApiVersion) X(zeDriverGetProperties)            \
    X(zeDriverGetIpcProperties) X(zeDriverGetExtensionProperties)               \
    X(zeDriverGetExtensionFunctionAddress)                                      \
    X(zeDeviceGet) X(zeDeviceGetSubDevices) X(zeDeviceGetProperties)            \
    X(zeDeviceGetComputeProperties) X(zeDeviceGetModuleProperties)              \
    X(zeDeviceGetCommandQueueGroupProperties) X(zeDeviceGetMemoryProperties)    \
    X(zeDeviceCanAccessPeer) X(zeDeviceGetStatus) X(zeDeviceGetGlobalTimestamps)\
    X(zeContextCreate) X(zeContextCreateEx) X(zeContextDestroy)                 \
    X(zeContextGetStatus)                                                       \
    X(zeCommandQueueCreate) X(zeCommandQueueDestroy)                            \
    X(zeCommandQueueExecuteCommandLists) X(zeCommandQueueSynchronize)           \
    X(zeCommandListCreate) X(zeCommandListCreateImmediate)                      \
    X(zeCommandListDestroy) X(zeCommandListClose) X(zeCommandListReset)         \
    X(zeCommandListAppendWriteGlobalTimestamp) X(zeCommandListAppendBarrier)    \
    X(zeCommandListAppendMemoryRangesBarrier) X(zeCommandListAppendMemoryCopy)  \
    X(zeCommandListAppendMemoryFill) X(zeCommandListAppendMemoryPrefetch)       \
    X(zeCommandListAppendMemAdvise) X(zeCommandListAppendSignalEvent)           \
    X(zeCommandListAppendWaitOnEvents) X(zeCommandListAppendEventReset)         \
    X(zeCommandListAppendQueryKernelTimestamps)                                 \
    X(zeCommandListAppendLaunchKernel) X(zeCommandListAppendLaunchCooperativeKernel) \
    X(zeFenceCreate) X(zeFenceDestroy) X(zeFenceHostSynchronize)                \
    X(zeFenceQueryStatus) X(zeFenceReset)                                       \
    X(zeEventPoolCreate) X(zeEventPoolDestroy)                                  \
    X(zeEventCreate) X(zeEventDestroy) X(zeEventHostSignal)                     \
    X(zeEventHostSynchronize) X(zeEventQueryStatus) X(zeEventHostReset)         \
    X(zeEventQueryKernelTimestamp)                                              \
    X(zeModuleCreate) X(zeModuleDestroy) X(zeModuleGetKernelNames)              \
    X(zeModuleGetProperties) X(zeModuleBuildLogDestroy)                         \
    X(zeModuleBuildLogGetString)                                                \
    X(zeKernelCreate) X(zeKernelDestroy) X(zeKernelSetCacheConfig)              \
    X(zeKernelSetGroupSize) X(zeKernelSuggestGroupSize)                         \
    X(zeKernelSetArgumentValue) X(zeKernelSetIndirectAccess)                    \
    X(zeKernelGetIndirectAccess) X(zeKernelGetProperties) X(zeKernelGetName)    \
    X(zeMemAllocShared) X(zeMemAllocDevice) X(zeMemAllocHost) X(zeMemFree)      \
    X(zeMemGetAllocProperties) X(zeMemGetAddressRange)

/* DDI-table getters that fill tables with the entry points above. */
#define CWZ_FILLED_GETTERS(X)                                                   \
    X(zeGetGlobalProcAddrTable, ze_global_dditable_t)                           \
    X(zeGetDriverProcAddrTable, ze_driver_dditable_t)                           \
    X(zeGetDeviceProcAddrTable, ze_device_dditable_t)                           \
    X(zeGetContextProcAddrTable, ze_context_dditable_t)                         \
    X(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)              \
    X(zeGetCommandListProcAddrTable, ze_command_list_dditable_t)                \
    X(zeGetFenceProcAddrTable, ze_fence_dditable_t)                             \
    X(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t)                    \
    X(zeGetEventProcAddrTable, ze_event_dditable_t)                             \
    X(zeGetModuleProcAddrTable, ze_module_dditable_t)                           \
    X(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)         \
    X(zeGetKernelProcAddrTable, ze_kernel_dditable_t)                           \
    X(zeGetMemProcAddrTable, ze_mem_dditable_t)

/* Getters the 1.8.12 loader requires although the double implements nothing
 * in their tables: it refuses a driver that lacks any of them.  Each returns
 * an all-NULL table.  (The optional *Exp* getters are not exported.) */
#define CWZ_EMPTY_GETTERS(X)                                                    \
    X(zeGetImageProcAddrTable, ze_image_dditable_t)                             \
    X(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)                         \
    X(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)                \
    X(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)                  \
    X(zetGetDeviceProcAddrTable, zet_device_dditable_t)                         \
    X(zetGetContextProcAddrTable, zet_context_dditable_t)                       \
    X(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)              \
    X(zetGetModuleProcAddrTable, zet_module_dditable_t)                         \
    X(zetGetKernelProcAddrTable, zet_kernel_dditable_t)                         \
    X(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)              \
    X(zetGetMetricProcAddrTable, zet_metric_dditable_t)                         \
    X(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)        \
    X(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)     \
    X(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)              \
    X(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)                  \
    X(zetGetDebugProcAddrTable, zet_debug_dditable_t)                           \
    X(zesGetDriverProcAddrTable, zes_driver_dditable_t)                         \
    X(zesGetDeviceProcAddrTable, zes_device_dditable_t)                         \
    X(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)                   \
    X(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)  \
    X(zesGetPowerProcAddrTable, zes_power_dditable_t)                           \
    X(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)                   \
    X(zesGetEngineProcAddrTable, zes_engine_dditable_t)                         \
    X(zesGetStandbyProcAddrTable, zes_standby_dditable_t)                       \
    X(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)                     \
    X(zesGetMemoryProcAddrTable, zes_memory_dditable_t)                         \
    X(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)                \
    X(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)               \
    X(zesGetPsuProcAddrTable, zes_psu_dditable_t)                               \
    X(zesGetFanProcAddrTable, zes_fan_dditable_t)                               \
    X(zesGetLedProcAddrTable, zes_led_dditable_t)                               \
    X(zesGetRasProcAddrTable, zes_ras_dditable_t)                               \
    X(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

enum {
#define X(n) CWZ_IDX_##n,
#define XT(n, t) CWZ_IDX_##n,
    CWZ_ENTRY_POINTS(X) CWZ_FILLED_GETTERS(XT) CWZ_EMPTY_GETTERS(XT)
#undef X
#undef XT
    CWZ_NSYMS
};
static const char *const cwz_names[CWZ_NSYMS] = {
#define X(n) #n,
#define XT(n, t) #n,
    CWZ_ENTRY_POINTS(X) CWZ_FILLED_GETTERS(XT) CWZ_EMPTY_GETTERS(XT)
#undef X
#undef XT
};
static atomic_long cwz_counts[CWZ_NSYMS];

#define CW_COUNT(name) \
    atomic_fetch_add_explicit(&cwz_counts[CWZ_IDX_##name], 1, memory_order_relaxed)

/* ZE_DEF(name, params): definition of the hidden entry point zd_<name>, which
 * the getters store in the tables.  The body must begin with CW_COUNT(name). */
#define ZE_DEF(name, params) static ze_result_t ZE_APICALL zd_##name params

CW_PUBLIC long cwz_count(const char *symbol)
{
    return cwc_count(cwz_names, cwz_counts, CWZ_NSYMS, symbol);
}
CW_PUBLIC void cwz_reset(void) { cwc_reset(cwz_counts, CWZ_NSYMS); }
CW_PUBLIC void cwz_dump(FILE *out) { cwc_dump(cwz_names, cwz_counts, CWZ_NSYMS, out); }

/* ------------------------------------------------------------------------ */
/* Object model                                                             */
/* ------------------------------------------------------------------------ */

/* Every handle starts with a magic word.  Destroyed objects are poisoned
 * (magic = MAGIC_DEAD) and never freed, so a stale handle is reported instead
 * of being a use after free, and queued operations may keep pointing at
 * destroyed events and fences. */
enum {
    MAGIC_DRIVER = 0x5a447276,
    MAGIC_DEVICE = 0x5a446576,
    MAGIC_CTX = 0x5a437478,
    MAGIC_QUEUE = 0x5a517565,
    MAGIC_LIST = 0x5a4c7374,
    MAGIC_FENCE = 0x5a466e63,
    MAGIC_POOL = 0x5a506f6c,
    MAGIC_EVENT = 0x5a45766e,
    MAGIC_MODULE = 0x5a4d6f64,
    MAGIC_LOG = 0x5a4c6f67,
    MAGIC_KERNEL = 0x5a4b726e,
    MAGIC_DEAD = 0xdeadbeef
};

struct _ze_driver_handle_t { uint32_t magic; };
struct _ze_device_handle_t { uint32_t magic; };
static struct _ze_driver_handle_t g_driver = { MAGIC_DRIVER };
static struct _ze_device_handle_t g_device = { MAGIC_DEVICE };

struct _ze_context_handle_t { uint32_t magic; };

enum op_kind {
    OP_KERNEL,     /* timed sleep `ns` (FOREVER: hang) */
    OP_COPY,       /* memmove, then sleep until bytes / 10 GB/s have passed */
    OP_FILL,       /* pattern fill, likewise */
    OP_BARRIER,    /* nothing: the engine is in order (also ranges barriers) */
    OP_WAIT,       /* zeCommandListAppendWaitOnEvents: only the wait list */
    OP_SIGNAL,     /* zeCommandListAppendSignalEvent (the event is `signal`) */
    OP_RESET,      /* zeCommandListAppendEventReset of `ev` */
    OP_GLOBAL_TS,  /* *(uint64_t *)dst = device timestamp */
    OP_QUERY_TS,   /* write kernel timestamps of qevents[] to dst + offsets[] */
    OP_NOP,        /* prefetch, mem advise */
    OP_FENCE,      /* signal `fence` (end of an execute) */
    OP_STOP        /* queue / immediate list destroyed: worker exits */
};

struct _ze_event_handle_t;

typedef struct op {
    struct op *next;
    enum op_kind kind;
    uint64_t ns;
    const char *name;                   /* kernels: the kernel's name (never freed) */
    void *dst;
    const void *src;
    size_t size;
    unsigned char *pattern;             /* owned */
    size_t pattern_size;
    struct _ze_event_handle_t *signal;  /* signalled when the op finishes */
    struct _ze_event_handle_t *ev;      /* OP_RESET */
    uint32_t nwait;
    struct _ze_event_handle_t **waits;  /* owned */
    uint32_t nq;
    struct _ze_event_handle_t **qevents; /* owned (OP_QUERY_TS) */
    size_t *offsets;                    /* owned, may be NULL */
    struct _ze_fence_handle_t *fence;
} op;

/* A simulated engine: what a command queue or an immediate list runs on. */
struct engine {
    uint32_t id;             /* unique; the truth log's stream id */
    const char *thread_name;
    op *head, *tail;         /* FIFO; head is the op being executed */
    uint64_t enqueued;       /* ops ever pushed */
    uint64_t completed;      /* ops finished by the worker */
    pthread_cond_t wake;     /* signalled when an op is pushed */
    unsigned worker_gen;     /* == g_fork_gen iff a worker thread is alive */
    int stopped;             /* OP_STOP pushed */
    struct engine *reg_next; /* g_engines registry (never removed) */
};

struct _ze_command_queue_handle_t {
    uint32_t magic;
    uint32_t ordinal, index;
    ze_command_queue_mode_t mode;
    struct engine eng;
};

struct _ze_command_list_handle_t {
    uint32_t magic;
    uint32_t ordinal;
    int immediate;
    int closed;                 /* regular lists */
    ze_command_queue_mode_t mode; /* immediate lists */
    struct engine *eng;         /* immediate lists */
    op *head, *tail;            /* regular lists: the recorded ops */
};

struct _ze_fence_handle_t {
    uint32_t magic;
    struct _ze_command_queue_handle_t *queue;
    int signaled;
};

struct _ze_event_pool_handle_t {
    uint32_t magic;
    ze_event_pool_flags_t flags;
    uint32_t count;
};

struct _ze_event_handle_t {
    uint32_t magic;
    struct _ze_event_pool_handle_t *pool;
    uint32_t index;
    int signaled;
    int timestamped;            /* the pool has ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP */
    uint64_t t_start, t_end;    /* host CLOCK_MONOTONIC ns of the signalling op */
};

struct _ze_kernel_handle_t;
struct _ze_module_handle_t {
    uint32_t magic;
    size_t nkernels, capkernels;
    const char **kernel_names;  /* names of the kernels created, in order */
};
struct _ze_module_build_log_handle_t { uint32_t magic; };

struct _ze_kernel_handle_t {
    uint32_t magic;
    struct _ze_module_handle_t *module;
    char *name;                 /* never freed */
    uint64_t ns;
    uint32_t group[3];
    ze_kernel_indirect_access_flags_t indirect;
};

/* One big lock protects all simulation state; workers drop it only while
 * sleeping, copying or filling.  g_progress (CLOCK_MONOTONIC, for timed host
 * waits) is broadcast when an op completes or an event changes, if somebody
 * waits. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_progress;
static int g_waiters;
static unsigned g_fork_gen = 1; /* bumped in a forked child: workers are gone */
static struct engine *g_engines;
static atomic_int g_initialized;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static uint32_t g_next_engine_id = 1;

/* USM allocations, so frees and address queries can be validated. */
typedef struct {
    uintptr_t base;
    size_t size;
    ze_memory_type_t type;
    uint64_t id;
} alloc_rec;
static alloc_rec *g_allocs;
static size_t g_nallocs, g_capallocs;
static uint64_t g_next_alloc_id = 1;

#define LOCK() pthread_mutex_lock(&g_mu)
#define UNLOCK() pthread_mutex_unlock(&g_mu)
/* Return from an entry point that holds g_mu. */
#define RET(x)                                                                 \
    do {                                                                       \
        ze_result_t ret_ = (x);                                                \
        UNLOCK();                                                              \
        return ret_;                                                           \
    } while (0)

/* Handle checks (g_mu held): NULL, destroyed and wrong-type handles are all
 * "not valid". */
#define VALID(h, M) ((h) != NULL && (h)->magic == (M))

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Sleep until CLOCK_MONOTONIC reaches start + ns (FOREVER: never returns). */
static void sleep_until(uint64_t start, uint64_t ns)
{
    if (ns == FOREVER) {
        for (;;) {
            struct timespec ts = { 3600, 0 };
            nanosleep(&ts, NULL);
        }
    }
    uint64_t end = start + ns;
    struct timespec ts = { (time_t)(end / 1000000000u), (long)(end % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* 10 GB/s == 10 bytes per nanosecond. */
static uint64_t xfer_ns(size_t bytes) { return (uint64_t)(bytes / 10); }

/* ---- simulated device clock and ground-truth log ------------------------- */

/* Read once at load (cwz_load_init).  As in the CUDA double, the device time
 * (ns) of host CLOCK_MONOTONIC instant h is
 *     dev(h) = h + offset + (h - h0) * drift_ppm * 1e-6,
 * h0 the monotonic time at load; the device timer reads floor(dev(h) / 80). */
static int64_t g_dev_offset;  /* CWZ_DEVICE_CLOCK_OFFSET_NS */
static double g_dev_drift;    /* CWZ_DEVICE_CLOCK_DRIFT_PPM * 1e-6 */
static uint64_t g_dev_h0;
static int g_truth_fd = -1;   /* CWZ_TRUTH: O_APPEND log of executed work */

static int64_t dev_time(uint64_t h)
{
    int64_t since = (int64_t)(h - g_dev_h0);
    int64_t skew = g_dev_drift != 0.0 ? (int64_t)((double)since * g_dev_drift) : 0;
    return (int64_t)h + g_dev_offset + skew;
}

/* Device timer ticks at host instant h, all 64 bits (callers mask). */
static uint64_t dev_ticks(uint64_t h)
{
    int64_t d = dev_time(h);
    int64_t q = d / DEV_TICK_NS;
    if (d % DEV_TICK_NS < 0)
        q--; /* floor, for a negative offset */
    return (uint64_t)q;
}

__attribute__((constructor)) static void cwz_load_init(void)
{
    g_dev_h0 = now_ns();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_progress, &ca);
    pthread_condattr_destroy(&ca);
    const char *v = getenv("CWZ_DEVICE_CLOCK_OFFSET_NS");
    if (v && *v) {
        char *end;
        errno = 0;
        long long off = strtoll(v, &end, 10);
        if (*end || errno)
            fprintf(stderr, "cwz: ignoring bad CWZ_DEVICE_CLOCK_OFFSET_NS=%s\n", v);
        else
            g_dev_offset = off;
    }
    v = getenv("CWZ_DEVICE_CLOCK_DRIFT_PPM");
    if (v && *v) {
        char *end;
        double ppm = strtod(v, &end);
        if (*end || !(ppm > -1e6 && ppm < 1e9))
            fprintf(stderr, "cwz: ignoring bad CWZ_DEVICE_CLOCK_DRIFT_PPM=%s\n", v);
        else
            g_dev_drift = ppm * 1e-6;
    }
    v = getenv("CWZ_TRUTH");
    if (v && *v) {
        g_truth_fd = open(v, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (g_truth_fd < 0)
            fprintf(stderr, "cwz: cannot open CWZ_TRUTH=%s: %s\n", v, strerror(errno));
    }
}

/* One ground-truth line, written with a single write(2) on the O_APPEND
 * descriptor (CWD_TRUTH's format):
 *     <kernel|memcpy|memset> <engine id> <start ns> <end ns> <name or ->
 * Control characters in a kernel name are written as '?'. */
static void truth_log(const char *kind, uint32_t engine_id, uint64_t t0, uint64_t t1,
                      const char *name)
{
    if (!name || !*name)
        name = "-";
    char head[96], stack_buf[512];
    int hn = snprintf(head, sizeof head, "%s %u %llu %llu ", kind, engine_id,
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

/* ------------------------------------------------------------------------ */
/* Events (g_mu held)                                                       */
/* ------------------------------------------------------------------------ */

static void progress_locked(void)
{
    if (g_waiters)
        pthread_cond_broadcast(&g_progress);
}

static void wait_progress_locked(void)
{
    g_waiters++;
    pthread_cond_wait(&g_progress, &g_mu);
    g_waiters--;
}

static void event_signal_locked(struct _ze_event_handle_t *e, uint64_t t0, uint64_t t1)
{
    e->signaled = 1;
    e->t_start = t0;
    e->t_end = t1;
    progress_locked();
}

static void event_reset_locked(struct _ze_event_handle_t *e)
{
    e->signaled = 0;
    e->t_start = e->t_end = 0;
}

static void event_timestamps(const struct _ze_event_handle_t *e, ze_kernel_timestamp_result_t *r)
{
    uint64_t s = e->signaled ? dev_ticks(e->t_start) & KERNEL_TS_MASK : 0;
    uint64_t t = e->signaled ? dev_ticks(e->t_end) & KERNEL_TS_MASK : 0;
    /* One context, always resident: context time is global time. */
    r->global.kernelStart = r->context.kernelStart = s;
    r->global.kernelEnd = r->context.kernelEnd = t;
}

/* ------------------------------------------------------------------------ */
/* Engines and workers                                                      */
/* ------------------------------------------------------------------------ */

static void op_free(op *o)
{
    free(o->pattern);
    free(o->waits);
    free(o->qevents);
    free(o->offsets);
    free(o);
}

static op *op_new(enum op_kind kind)
{
    op *o = calloc(1, sizeof *o);
    if (o)
        o->kind = kind;
    return o;
}

static void *dup_mem(const void *p, size_t n)
{
    if (!p || !n)
        return NULL;
    void *q = malloc(n);
    if (q)
        memcpy(q, p, n);
    return q;
}

/* Deep copy of a recorded op, for an execution of its command list. */
static op *op_clone(const op *src)
{
    op *o = malloc(sizeof *o);
    if (!o)
        return NULL;
    *o = *src;
    o->next = NULL;
    o->pattern = dup_mem(src->pattern, src->pattern_size);
    o->waits = dup_mem(src->waits, src->nwait * sizeof *src->waits);
    o->qevents = dup_mem(src->qevents, src->nq * sizeof *src->qevents);
    o->offsets = dup_mem(src->offsets, src->offsets ? src->nq * sizeof *src->offsets : 0);
    if ((src->pattern && !o->pattern) || (src->waits && !o->waits) ||
        (src->qevents && !o->qevents) || (src->offsets && !o->offsets)) {
        op_free(o);
        return NULL;
    }
    return o;
}

static int waits_done_locked(const op *o)
{
    for (uint32_t i = 0; i < o->nwait; i++)
        if (!o->waits[i]->signaled)
            return 0;
    return 1;
}

static void fill_bytes(unsigned char *dst, const unsigned char *pat, size_t psz, size_t size)
{
    if (psz == 1) {
        memset(dst, pat[0], size);
        return;
    }
    for (size_t i = 0; i < size; i += psz)
        memcpy(dst + i, pat, size - i < psz ? size - i : psz);
}

static void ensure_workers_locked(void);

static void *worker_main(void *arg)
{
    struct engine *e = arg;
    prctl(PR_SET_TIMERSLACK, 1UL); /* make microsecond sleeps honest */
    pthread_mutex_lock(&g_mu);
    for (;;) {
        while (!e->head)
            pthread_cond_wait(&e->wake, &g_mu);
        /* The head stays queued while it executes: if the process forks
         * meanwhile, the child's fresh worker runs it again. */
        op *o = e->head;
        while (!waits_done_locked(o)) {
            ensure_workers_locked(); /* after fork(): the signallers' workers */
            wait_progress_locked();
        }
        uint64_t t0, t1;
        switch (o->kind) {
        case OP_KERNEL:
        case OP_COPY:
        case OP_FILL:
            pthread_mutex_unlock(&g_mu);
            t0 = now_ns();
            if (o->kind == OP_COPY)
                memmove(o->dst, o->src, o->size);
            else if (o->kind == OP_FILL)
                fill_bytes(o->dst, o->pattern, o->pattern_size, o->size);
            sleep_until(t0, o->ns);
            t1 = now_ns();
            /* Logged before the op counts as complete, so a host sync that
             * covers it returns after the line is written. */
            if (g_truth_fd >= 0)
                truth_log(o->kind == OP_KERNEL ? "kernel" : o->kind == OP_COPY ? "memcpy" : "memset",
                          e->id, t0, t1, o->kind == OP_KERNEL ? o->name : "-");
            pthread_mutex_lock(&g_mu);
            break;
        case OP_RESET:
            t0 = t1 = now_ns();
            event_reset_locked(o->ev);
            break;
        case OP_GLOBAL_TS:
            t0 = t1 = now_ns();
            *(uint64_t *)o->dst = dev_ticks(t0) & TS_MASK;
            break;
        case OP_QUERY_TS:
            t0 = t1 = now_ns();
            for (uint32_t i = 0; i < o->nq; i++) {
                size_t off = o->offsets ? o->offsets[i] : i * sizeof(ze_kernel_timestamp_result_t);
                ze_kernel_timestamp_result_t r;
                event_timestamps(o->qevents[i], &r);
                memcpy((char *)o->dst + off, &r, sizeof r);
            }
            break;
        case OP_FENCE:
            t0 = t1 = now_ns();
            o->fence->signaled = 1;
            break;
        default: /* OP_BARRIER, OP_WAIT, OP_SIGNAL, OP_NOP, OP_STOP */
            t0 = t1 = now_ns();
            break;
        }
        if (o->signal)
            event_signal_locked(o->signal, t0, t1);
        e->head = o->next;
        if (!e->head)
            e->tail = NULL;
        e->completed++;
        int stop = o->kind == OP_STOP;
        op_free(o);
        progress_locked();
        if (stop) {
            e->worker_gen = 0;
            pthread_mutex_unlock(&g_mu);
            return NULL;
        }
    }
}

/* Start e's worker thread if this process has none (first use, or the
 * parent's worker was lost in fork()).  Workers block all signals and are
 * detached. */
static int ensure_worker_locked(struct engine *e)
{
    if (e->worker_gen == g_fork_gen)
        return 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t th;
    int rc = pthread_create(&th, &attr, worker_main, e);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return -1;
    pthread_setname_np(th, e->thread_name); /* /proc/<pid>/task/<tid>/comm */
    e->worker_gen = g_fork_gen;
    return 0;
}

/* Engines with queued ops but no live worker (only after fork()). */
static void ensure_workers_locked(void)
{
    for (struct engine *e = g_engines; e; e = e->reg_next)
        if (e->head && e->worker_gen != g_fork_gen)
            ensure_worker_locked(e);
}

static void engine_init_locked(struct engine *e, const char *thread_name)
{
    memset(e, 0, sizeof *e);
    e->id = g_next_engine_id++;
    e->thread_name = thread_name;
    pthread_cond_init(&e->wake, NULL);
    e->reg_next = g_engines;
    g_engines = e;
}

static ze_result_t push_locked(struct engine *e, op *o)
{
    if (ensure_worker_locked(e) != 0) {
        op_free(o);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    o->next = NULL;
    if (e->tail)
        e->tail->next = o;
    else
        e->head = o;
    e->tail = o;
    e->enqueued++;
    pthread_cond_signal(&e->wake);
    return ZE_RESULT_SUCCESS;
}

/* Host wait (g_mu held) until done(arg), with L0 timeout semantics: 0 polls
 * once, UINT64_MAX waits forever, anything else waits that many ns at most.
 * ZE_RESULT_NOT_READY when it timed out. */
static ze_result_t host_wait_locked(int (*done)(const void *), const void *arg, uint64_t timeout)
{
    if (done(arg))
        return ZE_RESULT_SUCCESS;
    if (timeout == 0)
        return ZE_RESULT_NOT_READY;
    uint64_t deadline = timeout >= (UINT64_C(1) << 62) ? FOREVER : now_ns() + timeout;
    while (!done(arg)) {
        ensure_workers_locked();
        if (deadline == FOREVER) {
            wait_progress_locked();
            continue;
        }
        if (now_ns() >= deadline)
            return ZE_RESULT_NOT_READY;
        struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
        g_waiters++;
        pthread_cond_timedwait(&g_progress, &g_mu, &ts);
        g_waiters--;
    }
    return ZE_RESULT_SUCCESS;
}

/* An engine position: done when the engine completed `pos` ops. */
struct engine_pos { const struct engine *e; uint64_t pos; };
static int engine_pos_done(const void *arg)
{
    const struct engine_pos *p = arg;
    return p->e->completed >= p->pos;
}

/* Block until every op pushed so far to any engine has completed (zeMemFree,
 * like the real driver's blocking free).  Positions are snapshots. */
static void drain_all_locked(void)
{
    for (struct engine *e = g_engines; e; e = e->reg_next) {
        struct engine_pos p = { e, e->enqueued };
        host_wait_locked(engine_pos_done, &p, FOREVER);
    }
}

/* ------------------------------------------------------------------------ */
/* Initialisation and fork handling                                         */
/* ------------------------------------------------------------------------ */

static void atfork_prepare(void) { pthread_mutex_lock(&g_mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&g_mu); }

/* In the child only the forking thread exists: re-create the lock and the
 * condition variables and bump g_fork_gen so that every engine lazily gets a
 * fresh worker; queued ops (the one a parent worker was running included)
 * are executed again by the child's workers. */
static void atfork_child(void)
{
    pthread_mutex_init(&g_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_progress, &ca);
    pthread_condattr_destroy(&ca);
    g_waiters = 0;
    g_fork_gen++;
    for (struct engine *e = g_engines; e; e = e->reg_next)
        pthread_cond_init(&e->wake, NULL);
}

static void once_init(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

#define CHECK_INIT()                                                           \
    do {                                                                       \
        if (!atomic_load_explicit(&g_initialized, memory_order_acquire))       \
            return ZE_RESULT_ERROR_UNINITIALIZED;                              \
    } while (0)

/* The loader calls zeInit once to vet the driver and once more for the
 * application's first zeInit (then once per further zeInit). */
ZE_DEF(zeInit, (ze_init_flags_t flags))
{
    CW_COUNT(zeInit);
    if (flags > (ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY))
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (flags == ZE_INIT_FLAG_VPU_ONLY)
        return ZE_RESULT_ERROR_UNINITIALIZED; /* a GPU driver: nothing to offer */
    /* CWZ_INIT_RESULT=<n> makes zeInit fail with n (e.g. 0x78000001). */
    const char *forced = getenv("CWZ_INIT_RESULT");
    if (forced && *forced) {
        unsigned long v = strtoul(forced, NULL, 0);
        if (v)
            return (ze_result_t)v;
    }
    pthread_once(&g_once, once_init);
    atomic_store_explicit(&g_initialized, 1, memory_order_release);
    return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Driver and device                                                        */
/* ------------------------------------------------------------------------ */

#define CHECK_DRIVER(h)                                                        \
    do {                                                                       \
        if ((h) != &g_driver)                                                  \
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;                        \
    } while (0)
#define CHECK_DEVICE(h)                                                        \
    do {                                                                       \
        if ((h) != &g_device)                                                  \
            return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;                        \
    } while (0)

/* The count-then-fill protocol of zeDriverGet, zeDeviceGet, ...: one object. */
static ze_result_t get_one(uint32_t *pCount, void **out, void *obj)
{
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount && out)
        out[0] = obj;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDriverGet, (uint32_t *pCount, ze_driver_handle_t *phDrivers))
{
    CW_COUNT(zeDriverGet);
    CHECK_INIT();
    return get_one(pCount, (void **)phDrivers, &g_driver);
}

ZE_DEF(zeDriverGetApiVersion, (ze_driver_handle_t hDriver, ze_api_version_t *version))
{
    CW_COUNT(zeDriverGetApiVersion);
    CHECK_INIT();
    CHECK_DRIVER(hDriver);
    if (!version)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *version = ZE_API_VERSION_CURRENT;
    return ZE_RESULT_SUCCESS;
}

static void fill_uuid(uint8_t *id, const char *tag)
{
    memset(id, 0, 16);
    memcpy(id, tag, strlen(tag) < 16 ? strlen(tag) : 16);
}

ZE_DEF(zeDriverGetProperties, (ze_driver_handle_t hDriver, ze_driver_properties_t *p))
{
    CW_COUNT(zeDriverGetProperties);
    CHECK_INIT();
    CHECK_DRIVER(hDriver);
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    fill_uuid(p->uuid.id, "causeway-zedrv");
    p->driverVersion = 1;
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDriverGetIpcProperties, (ze_driver_handle_t hDriver, ze_driver_ipc_properties_t *p))
{
    CW_COUNT(zeDriverGetIpcProperties);
    CHECK_INIT();
    CHECK_DRIVER(hDriver);
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->flags = 0; /* no IPC */
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDriverGetExtensionProperties,
       (ze_driver_handle_t hDriver, uint32_t *pCount, ze_driver_extension_properties_t *p))
{
    CW_COUNT(zeDriverGetExtensionProperties);
    (void)p;
    CHECK_INIT();
    CHECK_DRIVER(hDriver);
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *pCount = 0; /* no extensions */
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDriverGetExtensionFunctionAddress,
       (ze_driver_handle_t hDriver, const char *name, void **ppFunctionAddress))
{
    CW_COUNT(zeDriverGetExtensionFunctionAddress);
    CHECK_INIT();
    CHECK_DRIVER(hDriver);
    if (!name || !ppFunctionAddress)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *ppFunctionAddress = NULL;
    return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* no extension functions */
}

ZE_DEF(zeDeviceGet, (ze_driver_handle_t hDriver, uint32_t *pCount, ze_device_handle_t *phDevices))
{
    CW_COUNT(zeDeviceGet);
    CHECK_INIT();
    CHECK_DRIVER(hDriver);
    return get_one(pCount, (void **)phDevices, &g_device);
}

ZE_DEF(zeDeviceGetSubDevices,
       (ze_device_handle_t hDevice, uint32_t *pCount, ze_device_handle_t *phSubdevices))
{
    CW_COUNT(zeDeviceGetSubDevices);
    (void)phSubdevices;
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDeviceGetProperties, (ze_device_handle_t hDevice, ze_device_properties_t *p))
{
    CW_COUNT(zeDeviceGetProperties);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->type = ZE_DEVICE_TYPE_GPU;
    p->vendorId = 0x8086;
    p->deviceId = 0x0cd0; /* made up */
    p->flags = 0;         /* discrete, no sub-devices */
    p->subdeviceId = 0;
    p->coreClockRate = 1600;
    p->maxMemAllocSize = MAX_ALLOC_SIZE;
    p->maxHardwareContexts = 64;
    p->maxCommandQueuePriority = ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH;
    p->numThreadsPerEU = 8;
    p->physicalEUSimdWidth = 8;
    p->numEUsPerSubslice = 8;
    p->numSubslicesPerSlice = 8;
    p->numSlices = 1;
    /* ns per tick for the 1.0 stype, ticks per second for the 1.2 one. */
    p->timerResolution = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2
                             ? 1000000000u / DEV_TICK_NS
                             : DEV_TICK_NS;
    p->timestampValidBits = TS_VALID_BITS;
    p->kernelTimestampValidBits = KERNEL_TS_VALID_BITS;
    fill_uuid(p->uuid.id, "causeway-zedev0");
    snprintf(p->name, sizeof p->name, "causeway Level Zero double");
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDeviceGetComputeProperties, (ze_device_handle_t hDevice, ze_device_compute_properties_t *p))
{
    CW_COUNT(zeDeviceGetComputeProperties);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->maxTotalGroupSize = MAX_GROUP_SIZE;
    p->maxGroupSizeX = p->maxGroupSizeY = p->maxGroupSizeZ = MAX_GROUP_SIZE;
    p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = UINT32_MAX;
    p->maxSharedLocalMemory = 64 * 1024;
    p->numSubGroupSizes = 3;
    memset(p->subGroupSizes, 0, sizeof p->subGroupSizes);
    p->subGroupSizes[0] = 8;
    p->subGroupSizes[1] = 16;
    p->subGroupSizes[2] = 32;
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDeviceGetModuleProperties, (ze_device_handle_t hDevice, ze_device_module_properties_t *p))
{
    CW_COUNT(zeDeviceGetModuleProperties);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
    p->flags = ZE_DEVICE_MODULE_FLAG_FP16 | ZE_DEVICE_MODULE_FLAG_FP64;
    p->fp16flags = p->fp32flags = p->fp64flags = 0;
    p->maxArgumentsSize = 2048;
    p->printfBufferSize = 4 * 1024 * 1024;
    memset(&p->nativeKernelSupported, 0, sizeof p->nativeKernelSupported);
    return ZE_RESULT_SUCCESS;
}

/* Ordinal 0: compute (also copies), ordinal 1: copy only. */
static const struct { ze_command_queue_group_property_flags_t flags; size_t fill; uint32_t n; }
    g_groups[N_QUEUE_GROUPS] = {
        { ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY |
              ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS,
          128, 4 },
        { ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY, 4, 1 },
};

ZE_DEF(zeDeviceGetCommandQueueGroupProperties,
       (ze_device_handle_t hDevice, uint32_t *pCount, ze_command_queue_group_properties_t *p))
{
    CW_COUNT(zeDeviceGetCommandQueueGroupProperties);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !p) {
        *pCount = N_QUEUE_GROUPS;
        return ZE_RESULT_SUCCESS;
    }
    if (*pCount > N_QUEUE_GROUPS)
        *pCount = N_QUEUE_GROUPS;
    for (uint32_t i = 0; i < *pCount; i++) {
        p[i].flags = g_groups[i].flags;
        p[i].maxMemoryFillPatternSize = g_groups[i].fill;
        p[i].numQueues = g_groups[i].n;
    }
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDeviceGetMemoryProperties,
       (ze_device_handle_t hDevice, uint32_t *pCount, ze_device_memory_properties_t *p))
{
    CW_COUNT(zeDeviceGetMemoryProperties);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount && p) {
        p->flags = 0;
        p->maxClockRate = 1600;
        p->maxBusWidth = 4096;
        p->totalSize = DEVICE_MEMORY;
        snprintf(p->name, sizeof p->name, "HBM");
    }
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDeviceCanAccessPeer, (ze_device_handle_t hDevice, ze_device_handle_t hPeer, ze_bool_t *value))
{
    CW_COUNT(zeDeviceCanAccessPeer);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    CHECK_DEVICE(hPeer);
    if (!value)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *value = 1;
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeDeviceGetStatus, (ze_device_handle_t hDevice))
{
    CW_COUNT(zeDeviceGetStatus);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    return ZE_RESULT_SUCCESS;
}

/* The host timestamp is CLOCK_MONOTONIC ns (the truth log's clock), the
 * device timestamp the device timer at that same instant. */
ZE_DEF(zeDeviceGetGlobalTimestamps,
       (ze_device_handle_t hDevice, uint64_t *hostTimestamp, uint64_t *deviceTimestamp))
{
    CW_COUNT(zeDeviceGetGlobalTimestamps);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!hostTimestamp || !deviceTimestamp)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    uint64_t h = now_ns();
    *hostTimestamp = h;
    *deviceTimestamp = dev_ticks(h) & TS_MASK;
    return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                 */
/* ------------------------------------------------------------------------ */

static ze_result_t context_new(ze_context_handle_t *phContext)
{
    struct _ze_context_handle_t *c = malloc(sizeof *c);
    if (!c)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    c->magic = MAGIC_CTX;
    *phContext = c;
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeContextCreate,
       (ze_driver_handle_t hDriver, const ze_context_desc_t *desc, ze_context_handle_t *phContext))
{
    CW_COUNT(zeContextCreate);
    CHECK_INIT();
    CHECK_DRIVER(hDriver);
    if (!desc || !phContext)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->flags > 0x1)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    return context_new(phContext);
}

ZE_DEF(zeContextCreateEx, (ze_driver_handle_t hDriver, const ze_context_desc_t *desc,
                           uint32_t numDevices, ze_device_handle_t *phDevices,
                           ze_context_handle_t *phContext))
{
    CW_COUNT(zeContextCreateEx);
    CHECK_INIT();
    CHECK_DRIVER(hDriver);
    if (!desc || !phContext)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->flags > 0x1)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (numDevices && !phDevices)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    for (uint32_t i = 0; i < numDevices; i++)
        CHECK_DEVICE(phDevices[i]);
    return context_new(phContext);
}

ZE_DEF(zeContextDestroy, (ze_context_handle_t hContext))
{
    CW_COUNT(zeContextDestroy);
    CHECK_INIT();
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hContext->magic = MAGIC_DEAD;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeContextGetStatus, (ze_context_handle_t hContext))
{
    CW_COUNT(zeContextGetStatus);
    CHECK_INIT();
    LOCK();
    RET(VALID(hContext, MAGIC_CTX) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
}

/* ------------------------------------------------------------------------ */
/* Command queues and fences                                                */
/* ------------------------------------------------------------------------ */

/* Checks shared by zeCommandQueueCreate and zeCommandListCreateImmediate. */
static ze_result_t check_queue_desc(const ze_command_queue_desc_t *d)
{
    if (d->flags > 0x1 || d->mode > ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS ||
        d->priority > ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (d->ordinal >= N_QUEUE_GROUPS || d->index >= g_groups[d->ordinal].n)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    return ZE_RESULT_SUCCESS;
}

ZE_DEF(zeCommandQueueCreate, (ze_context_handle_t hContext, ze_device_handle_t hDevice,
                              const ze_command_queue_desc_t *desc,
                              ze_command_queue_handle_t *phCommandQueue))
{
    CW_COUNT(zeCommandQueueCreate);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!desc || !phCommandQueue)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ze_result_t r = check_queue_desc(desc);
    if (r)
        return r;
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    struct _ze_command_queue_handle_t *q = malloc(sizeof *q);
    if (!q)
        RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    q->magic = MAGIC_QUEUE;
    q->ordinal = desc->ordinal;
    q->index = desc->index;
    q->mode = desc->mode;
    engine_init_locked(&q->eng, "cwz-queue");
    *phCommandQueue = q;
    RET(ZE_RESULT_SUCCESS);
}

/* The queue's engine drains what was submitted, then its worker exits. */
ZE_DEF(zeCommandQueueDestroy, (ze_command_queue_handle_t hCommandQueue))
{
    CW_COUNT(zeCommandQueueDestroy);
    CHECK_INIT();
    LOCK();
    if (!VALID(hCommandQueue, MAGIC_QUEUE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hCommandQueue->magic = MAGIC_DEAD;
    if (hCommandQueue->eng.head || hCommandQueue->eng.worker_gen == g_fork_gen) {
        op *o = op_new(OP_STOP);
        if (o)
            push_locked(&hCommandQueue->eng, o);
    }
    hCommandQueue->eng.stopped = 1;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeCommandQueueExecuteCommandLists,
       (ze_command_queue_handle_t hCommandQueue, uint32_t numCommandLists,
        ze_command_list_handle_t *phCommandLists, ze_fence_handle_t hFence))
{
    CW_COUNT(zeCommandQueueExecuteCommandLists);
    CHECK_INIT();
    LOCK();
    if (!VALID(hCommandQueue, MAGIC_QUEUE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (!phCommandLists)
        RET(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    if (numCommandLists == 0)
        RET(ZE_RESULT_ERROR_INVALID_SIZE);
    /* Everything is checked before anything is submitted. */
    for (uint32_t i = 0; i < numCommandLists; i++) {
        struct _ze_command_list_handle_t *l = phCommandLists[i];
        if (!VALID(l, MAGIC_LIST))
            RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        if (l->immediate || !l->closed)
            RET(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        if (l->ordinal != hCommandQueue->ordinal)
            RET(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);
    }
    if (hFence && (!VALID(hFence, MAGIC_FENCE) || hFence->queue != hCommandQueue))
        RET(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT);
    /* Copies of the recorded ops, so the lists may be reset or executed again
     * while these run. */
    op *first = NULL, **link = &first;
    for (uint32_t i = 0; i < numCommandLists; i++)
        for (const op *s = phCommandLists[i]->head; s; s = s->next) {
            op *o = op_clone(s);
            if (!o)
                goto oom;
            *link = o;
            link = &o->next;
        }
    if (hFence) {
        op *o = op_new(OP_FENCE);
        if (!o)
            goto oom;
        o->fence = hFence;
        *link = o;
    }
    struct engine *e = &hCommandQueue->eng;
    for (op *o = first, *next; o; o = next) {
        next = o->next;
        ze_result_t r = push_locked(e, o);
        if (r) {
            for (o = next; o; o = next) {
                next = o->next;
                op_free(o);
            }
            RET(r);
        }
    }
    if (hCommandQueue->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS) {
        struct engine_pos p = { e, e->enqueued };
        host_wait_locked(engine_pos_done, &p, FOREVER);
    }
    RET(ZE_RESULT_SUCCESS);
oom:
    for (op *o = first, *next; o; o = next) {
        next = o->next;
        op_free(o);
    }
    RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
}

ZE_DEF(zeCommandQueueSynchronize, (ze_command_queue_handle_t hCommandQueue, uint64_t timeout))
{
    CW_COUNT(zeCommandQueueSynchronize);
    CHECK_INIT();
    LOCK();
    if (!VALID(hCommandQueue, MAGIC_QUEUE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    struct engine_pos p = { &hCommandQueue->eng, hCommandQueue->eng.enqueued };
    RET(host_wait_locked(engine_pos_done, &p, timeout));
}

ZE_DEF(zeFenceCreate, (ze_command_queue_handle_t hCommandQueue, const ze_fence_desc_t *desc,
                       ze_fence_handle_t *phFence))
{
    CW_COUNT(zeFenceCreate);
    CHECK_INIT();
    if (!desc || !phFence)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->flags > ZE_FENCE_FLAG_SIGNALED)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    LOCK();
    if (!VALID(hCommandQueue, MAGIC_QUEUE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    struct _ze_fence_handle_t *f = malloc(sizeof *f);
    if (!f)
        RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    f->magic = MAGIC_FENCE;
    f->queue = hCommandQueue;
    f->signaled = (desc->flags & ZE_FENCE_FLAG_SIGNALED) != 0;
    *phFence = f;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeFenceDestroy, (ze_fence_handle_t hFence))
{
    CW_COUNT(zeFenceDestroy);
    CHECK_INIT();
    LOCK();
    if (!VALID(hFence, MAGIC_FENCE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hFence->magic = MAGIC_DEAD;
    RET(ZE_RESULT_SUCCESS);
}

static int fence_done(const void *arg) { return ((const struct _ze_fence_handle_t *)arg)->signaled; }

ZE_DEF(zeFenceHostSynchronize, (ze_fence_handle_t hFence, uint64_t timeout))
{
    CW_COUNT(zeFenceHostSynchronize);
    CHECK_INIT();
    LOCK();
    if (!VALID(hFence, MAGIC_FENCE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    RET(host_wait_locked(fence_done, hFence, timeout));
}

ZE_DEF(zeFenceQueryStatus, (ze_fence_handle_t hFence))
{
    CW_COUNT(zeFenceQueryStatus);
    CHECK_INIT();
    LOCK();
    if (!VALID(hFence, MAGIC_FENCE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    RET(hFence->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY);
}

ZE_DEF(zeFenceReset, (ze_fence_handle_t hFence))
{
    CW_COUNT(zeFenceReset);
    CHECK_INIT();
    LOCK();
    if (!VALID(hFence, MAGIC_FENCE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hFence->signaled = 0;
    RET(ZE_RESULT_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Command lists                                                            */
/* ------------------------------------------------------------------------ */

ZE_DEF(zeCommandListCreate, (ze_context_handle_t hContext, ze_device_handle_t hDevice,
                             const ze_command_list_desc_t *desc,
                             ze_command_list_handle_t *phCommandList))
{
    CW_COUNT(zeCommandListCreate);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!desc || !phCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->flags > 0x7)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (desc->commandQueueGroupOrdinal >= N_QUEUE_GROUPS)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    struct _ze_command_list_handle_t *l = calloc(1, sizeof *l);
    if (!l)
        RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    l->magic = MAGIC_LIST;
    l->ordinal = desc->commandQueueGroupOrdinal;
    *phCommandList = l;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeCommandListCreateImmediate, (ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                      const ze_command_queue_desc_t *altdesc,
                                      ze_command_list_handle_t *phCommandList))
{
    CW_COUNT(zeCommandListCreateImmediate);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!altdesc || !phCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    ze_result_t r = check_queue_desc(altdesc);
    if (r)
        return r;
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    struct _ze_command_list_handle_t *l = calloc(1, sizeof *l);
    struct engine *e = malloc(sizeof *e);
    if (!l || !e) {
        free(l);
        free(e);
        RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    }
    l->magic = MAGIC_LIST;
    l->ordinal = altdesc->ordinal;
    l->immediate = 1;
    l->mode = altdesc->mode;
    engine_init_locked(e, "cwz-immediate");
    l->eng = e;
    *phCommandList = l;
    RET(ZE_RESULT_SUCCESS);
}

static void list_clear_locked(struct _ze_command_list_handle_t *l)
{
    for (op *o = l->head, *next; o; o = next) {
        next = o->next;
        op_free(o);
    }
    l->head = l->tail = NULL;
}

ZE_DEF(zeCommandListDestroy, (ze_command_list_handle_t hCommandList))
{
    CW_COUNT(zeCommandListDestroy);
    CHECK_INIT();
    LOCK();
    if (!VALID(hCommandList, MAGIC_LIST))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hCommandList->magic = MAGIC_DEAD;
    if (hCommandList->immediate) {
        struct engine *e = hCommandList->eng;
        if (e->head || e->worker_gen == g_fork_gen) {
            op *o = op_new(OP_STOP);
            if (o)
                push_locked(e, o);
        }
        e->stopped = 1;
    } else {
        list_clear_locked(hCommandList); /* executions run copies */
    }
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeCommandListClose, (ze_command_list_handle_t hCommandList))
{
    CW_COUNT(zeCommandListClose);
    CHECK_INIT();
    LOCK();
    if (!VALID(hCommandList, MAGIC_LIST))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (hCommandList->immediate)
        RET(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    hCommandList->closed = 1;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeCommandListReset, (ze_command_list_handle_t hCommandList))
{
    CW_COUNT(zeCommandListReset);
    CHECK_INIT();
    LOCK();
    if (!VALID(hCommandList, MAGIC_LIST))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (hCommandList->immediate)
        RET(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    list_clear_locked(hCommandList);
    hCommandList->closed = 0;
    RET(ZE_RESULT_SUCCESS);
}

/* Validate (g_mu held) an append's list, signal event and wait list, and
 * attach a copy of the wait list to o. */
static ze_result_t prep_append_locked(struct _ze_command_list_handle_t *l, op *o,
                                      ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                      ze_event_handle_t *phWaitEvents)
{
    if (!VALID(l, MAGIC_LIST))
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!l->immediate && l->closed)
        return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* reset it first */
    if (numWaitEvents && !phWaitEvents)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    if (hSignalEvent && !VALID(hSignalEvent, MAGIC_EVENT))
        return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
    for (uint32_t i = 0; i < numWaitEvents; i++)
        if (!VALID(phWaitEvents[i], MAGIC_EVENT))
            return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
    o->signal = hSignalEvent;
    if (numWaitEvents) {
        o->waits = dup_mem(phWaitEvents, numWaitEvents * sizeof *phWaitEvents);
        if (!o->waits)
            return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        o->nwait = numWaitEvents;
    }
    return ZE_RESULT_SUCCESS;
}

/* Record o in a regular list, or run it on an immediate list's engine (in
 * synchronous mode: and wait for it).  Takes o in every case. */
static ze_result_t commit_locked(struct _ze_command_list_handle_t *l, op *o)
{
    if (!l->immediate) {
        o->next = NULL;
        if (l->tail)
            l->tail->next = o;
        else
            l->head = o;
        l->tail = o;
        return ZE_RESULT_SUCCESS;
    }
    ze_result_t r = push_locked(l->eng, o);
    if (r == ZE_RESULT_SUCCESS && l->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS) {
        struct engine_pos p = { l->eng, l->eng->enqueued };
        host_wait_locked(engine_pos_done, &p, FOREVER);
    }
    return r;
}

/* The common tail of every append: validate, then commit, under g_mu. */
static ze_result_t append(struct _ze_command_list_handle_t *l, op *o, ze_event_handle_t sig,
                          uint32_t nwait, ze_event_handle_t *waits)
{
    if (!o)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    LOCK();
    ze_result_t r = prep_append_locked(l, o, sig, nwait, waits);
    if (r == ZE_RESULT_SUCCESS && o->kind == OP_KERNEL &&
        !(g_groups[l->ordinal].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE))
        r = ZE_RESULT_ERROR_INVALID_ARGUMENT; /* a kernel on a copy-only list */
    if (r == ZE_RESULT_SUCCESS && o->kind == OP_FILL && o->pattern_size > g_groups[l->ordinal].fill)
        r = ZE_RESULT_ERROR_INVALID_SIZE;
    if (r) {
        op_free(o);
        RET(r);
    }
    RET(commit_locked(l, o));
}

/* Duration of a kernel from its name: "hang" never ends, a name containing
 * "sleep_<N>us" takes N microseconds, others 2 us (the CUDA double's rule). */
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

static ze_result_t launch(ze_command_list_handle_t l, ze_kernel_handle_t k, const ze_group_count_t *gc,
                          ze_event_handle_t sig, uint32_t nwait, ze_event_handle_t *waits)
{
    if (!gc)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    op *o = op_new(OP_KERNEL);
    if (!o)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    LOCK();
    int ok = VALID(k, MAGIC_KERNEL);
    if (ok) {
        o->name = k->name;
        o->ns = k->ns;
    }
    UNLOCK();
    if (!ok) {
        op_free(o);
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    }
    return append(l, o, sig, nwait, waits);
}

ZE_DEF(zeCommandListAppendLaunchKernel,
       (ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
        const ze_group_count_t *pLaunchFuncArgs, ze_event_handle_t hSignalEvent,
        uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents))
{
    CW_COUNT(zeCommandListAppendLaunchKernel);
    CHECK_INIT();
    return launch(hCommandList, hKernel, pLaunchFuncArgs, hSignalEvent, numWaitEvents, phWaitEvents);
}

ZE_DEF(zeCommandListAppendLaunchCooperativeKernel,
       (ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
        const ze_group_count_t *pLaunchFuncArgs, ze_event_handle_t hSignalEvent,
        uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents))
{
    CW_COUNT(zeCommandListAppendLaunchCooperativeKernel);
    CHECK_INIT();
    return launch(hCommandList, hKernel, pLaunchFuncArgs, hSignalEvent, numWaitEvents, phWaitEvents);
}

ZE_DEF(zeCommandListAppendMemoryCopy,
       (ze_command_list_handle_t hCommandList, void *dstptr, const void *srcptr, size_t size,
        ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents))
{
    CW_COUNT(zeCommandListAppendMemoryCopy);
    CHECK_INIT();
    if (!hCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!dstptr || !srcptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    op *o = op_new(OP_COPY);
    if (o) {
        o->dst = dstptr;
        o->src = srcptr;
        o->size = size;
        o->ns = xfer_ns(size);
    }
    return append(hCommandList, o, hSignalEvent, numWaitEvents, phWaitEvents);
}

ZE_DEF(zeCommandListAppendMemoryFill,
       (ze_command_list_handle_t hCommandList, void *ptr, const void *pattern, size_t pattern_size,
        size_t size, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
        ze_event_handle_t *phWaitEvents))
{
    CW_COUNT(zeCommandListAppendMemoryFill);
    CHECK_INIT();
    if (!hCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ptr || !pattern)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    /* A power of two, at most the group's maxMemoryFillPatternSize (append). */
    if (pattern_size == 0 || (pattern_size & (pattern_size - 1)))
        return ZE_RESULT_ERROR_INVALID_SIZE;
    op *o = op_new(OP_FILL);
    if (o) {
        o->dst = ptr;
        o->size = size;
        o->ns = xfer_ns(size);
        o->pattern_size = pattern_size;
        o->pattern = dup_mem(pattern, pattern_size); /* copied at append */
        if (!o->pattern) {
            op_free(o);
            o = NULL;
        }
    }
    return append(hCommandList, o, hSignalEvent, numWaitEvents, phWaitEvents);
}

ZE_DEF(zeCommandListAppendBarrier,
       (ze_command_list_handle_t hCommandList, ze_event_handle_t hSignalEvent,
        uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents))
{
    CW_COUNT(zeCommandListAppendBarrier);
    CHECK_INIT();
    return append(hCommandList, op_new(OP_BARRIER), hSignalEvent, numWaitEvents, phWaitEvents);
}

ZE_DEF(zeCommandListAppendMemoryRangesBarrier,
       (ze_command_list_handle_t hCommandList, uint32_t numRanges, const size_t *pRangeSizes,
        const void **pRanges, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
        ze_event_handle_t *phWaitEvents))
{
    CW_COUNT(zeCommandListAppendMemoryRangesBarrier);
    CHECK_INIT();
    if (!hCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!pRangeSizes || !pRanges)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    (void)numRanges;
    return append(hCommandList, op_new(OP_BARRIER), hSignalEvent, numWaitEvents, phWaitEvents);
}

ZE_DEF(zeCommandListAppendWriteGlobalTimestamp,
       (ze_command_list_handle_t hCommandList, uint64_t *dstptr, ze_event_handle_t hSignalEvent,
        uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents))
{
    CW_COUNT(zeCommandListAppendWriteGlobalTimestamp);
    CHECK_INIT();
    if (!hCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!dstptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    op *o = op_new(OP_GLOBAL_TS);
    if (o)
        o->dst = dstptr;
    return append(hCommandList, o, hSignalEvent, numWaitEvents, phWaitEvents);
}

ZE_DEF(zeCommandListAppendMemoryPrefetch,
       (ze_command_list_handle_t hCommandList, const void *ptr, size_t size))
{
    CW_COUNT(zeCommandListAppendMemoryPrefetch);
    CHECK_INIT();
    if (!hCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!ptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    (void)size;
    return append(hCommandList, op_new(OP_NOP), NULL, 0, NULL);
}

ZE_DEF(zeCommandListAppendMemAdvise,
       (ze_command_list_handle_t hCommandList, ze_device_handle_t hDevice, const void *ptr,
        size_t size, ze_memory_advice_t advice))
{
    CW_COUNT(zeCommandListAppendMemAdvise);
    CHECK_INIT();
    if (!hCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    CHECK_DEVICE(hDevice);
    if (!ptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (advice > ZE_MEMORY_ADVICE_CLEAR_NON_ATOMIC_MOSTLY)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    (void)size;
    return append(hCommandList, op_new(OP_NOP), NULL, 0, NULL);
}

ZE_DEF(zeCommandListAppendSignalEvent, (ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent))
{
    CW_COUNT(zeCommandListAppendSignalEvent);
    CHECK_INIT();
    if (!hCommandList || !hEvent)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    return append(hCommandList, op_new(OP_SIGNAL), hEvent, 0, NULL);
}

ZE_DEF(zeCommandListAppendWaitOnEvents,
       (ze_command_list_handle_t hCommandList, uint32_t numEvents, ze_event_handle_t *phEvents))
{
    CW_COUNT(zeCommandListAppendWaitOnEvents);
    CHECK_INIT();
    if (!hCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!phEvents)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    return append(hCommandList, op_new(OP_WAIT), NULL, numEvents, phEvents);
}

ZE_DEF(zeCommandListAppendEventReset, (ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent))
{
    CW_COUNT(zeCommandListAppendEventReset);
    CHECK_INIT();
    if (!hCommandList || !hEvent)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    op *o = op_new(OP_RESET);
    if (!o)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    o->ev = hEvent;
    /* The event is checked as a "wait" of nothing: validate it here. */
    LOCK();
    int ok = VALID(hEvent, MAGIC_EVENT);
    UNLOCK();
    if (!ok) {
        op_free(o);
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    }
    return append(hCommandList, o, NULL, 0, NULL);
}

ZE_DEF(zeCommandListAppendQueryKernelTimestamps,
       (ze_command_list_handle_t hCommandList, uint32_t numEvents, ze_event_handle_t *phEvents,
        void *dstptr, const size_t *pOffsets, ze_event_handle_t hSignalEvent,
        uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents))
{
    CW_COUNT(zeCommandListAppendQueryKernelTimestamps);
    CHECK_INIT();
    if (!hCommandList)
        return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!phEvents || !dstptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    for (uint32_t i = 0; i < numEvents; i++)
        if (!VALID(phEvents[i], MAGIC_EVENT) || !phEvents[i]->timestamped)
            RET(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT);
    UNLOCK();
    op *o = op_new(OP_QUERY_TS);
    if (!o)
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    o->dst = dstptr;
    o->nq = numEvents;
    o->qevents = dup_mem(phEvents, numEvents * sizeof *phEvents);
    o->offsets = pOffsets ? dup_mem(pOffsets, numEvents * sizeof *pOffsets) : NULL;
    if ((numEvents && !o->qevents) || (numEvents && pOffsets && !o->offsets)) {
        op_free(o);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    return append(hCommandList, o, hSignalEvent, numWaitEvents, phWaitEvents);
}

/* ------------------------------------------------------------------------ */
/* Event pools and events                                                   */
/* ------------------------------------------------------------------------ */

ZE_DEF(zeEventPoolCreate, (ze_context_handle_t hContext, const ze_event_pool_desc_t *desc,
                           uint32_t numDevices, ze_device_handle_t *phDevices,
                           ze_event_pool_handle_t *phEventPool))
{
    CW_COUNT(zeEventPoolCreate);
    CHECK_INIT();
    if (!desc || !phEventPool)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->flags > 0x7)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (desc->count == 0 || (numDevices && !phDevices))
        return ZE_RESULT_ERROR_INVALID_SIZE;
    for (uint32_t i = 0; i < numDevices; i++)
        CHECK_DEVICE(phDevices[i]);
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    struct _ze_event_pool_handle_t *p = malloc(sizeof *p);
    if (!p)
        RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    p->magic = MAGIC_POOL;
    p->flags = desc->flags;
    p->count = desc->count;
    *phEventPool = p;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeEventPoolDestroy, (ze_event_pool_handle_t hEventPool))
{
    CW_COUNT(zeEventPoolDestroy);
    CHECK_INIT();
    LOCK();
    if (!VALID(hEventPool, MAGIC_POOL))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hEventPool->magic = MAGIC_DEAD;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeEventCreate, (ze_event_pool_handle_t hEventPool, const ze_event_desc_t *desc,
                       ze_event_handle_t *phEvent))
{
    CW_COUNT(zeEventCreate);
    CHECK_INIT();
    if (!desc || !phEvent)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->signal > 0x7 || desc->wait > 0x7)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    LOCK();
    if (!VALID(hEventPool, MAGIC_POOL))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (desc->index >= hEventPool->count)
        RET(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    struct _ze_event_handle_t *e = calloc(1, sizeof *e);
    if (!e)
        RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    e->magic = MAGIC_EVENT;
    e->pool = hEventPool;
    e->index = desc->index;
    e->timestamped = (hEventPool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0;
    *phEvent = e;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeEventDestroy, (ze_event_handle_t hEvent))
{
    CW_COUNT(zeEventDestroy);
    CHECK_INIT();
    LOCK();
    if (!VALID(hEvent, MAGIC_EVENT))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hEvent->magic = MAGIC_DEAD;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeEventHostSignal, (ze_event_handle_t hEvent))
{
    CW_COUNT(zeEventHostSignal);
    CHECK_INIT();
    LOCK();
    if (!VALID(hEvent, MAGIC_EVENT))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    uint64_t t = now_ns();
    event_signal_locked(hEvent, t, t);
    RET(ZE_RESULT_SUCCESS);
}

static int event_done(const void *arg) { return ((const struct _ze_event_handle_t *)arg)->signaled; }

ZE_DEF(zeEventHostSynchronize, (ze_event_handle_t hEvent, uint64_t timeout))
{
    CW_COUNT(zeEventHostSynchronize);
    CHECK_INIT();
    LOCK();
    if (!VALID(hEvent, MAGIC_EVENT))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    RET(host_wait_locked(event_done, hEvent, timeout));
}

ZE_DEF(zeEventQueryStatus, (ze_event_handle_t hEvent))
{
    CW_COUNT(zeEventQueryStatus);
    CHECK_INIT();
    LOCK();
    if (!VALID(hEvent, MAGIC_EVENT))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    RET(hEvent->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY);
}

ZE_DEF(zeEventHostReset, (ze_event_handle_t hEvent))
{
    CW_COUNT(zeEventHostReset);
    CHECK_INIT();
    LOCK();
    if (!VALID(hEvent, MAGIC_EVENT))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    event_reset_locked(hEvent);
    RET(ZE_RESULT_SUCCESS);
}

/* Start and end of the operation that signalled the event, on the device
 * timer, KERNEL_TS_VALID_BITS bits (context times equal global ones). */
ZE_DEF(zeEventQueryKernelTimestamp, (ze_event_handle_t hEvent, ze_kernel_timestamp_result_t *dstptr))
{
    CW_COUNT(zeEventQueryKernelTimestamp);
    CHECK_INIT();
    if (!dstptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hEvent, MAGIC_EVENT))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (!hEvent->timestamped)
        RET(ZE_RESULT_ERROR_INVALID_ARGUMENT); /* not from a KERNEL_TIMESTAMP pool */
    if (!hEvent->signaled)
        RET(ZE_RESULT_NOT_READY);
    event_timestamps(hEvent, dstptr);
    RET(ZE_RESULT_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Modules and kernels                                                      */
/* ------------------------------------------------------------------------ */

/* Any non-empty binary builds; the build log is empty. */
ZE_DEF(zeModuleCreate, (ze_context_handle_t hContext, ze_device_handle_t hDevice,
                        const ze_module_desc_t *desc, ze_module_handle_t *phModule,
                        ze_module_build_log_handle_t *phBuildLog))
{
    CW_COUNT(zeModuleCreate);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!desc || !desc->pInputModule || !phModule)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->format > ZE_MODULE_FORMAT_NATIVE)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (desc->inputSize == 0)
        return ZE_RESULT_ERROR_INVALID_SIZE;
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    struct _ze_module_handle_t *m = calloc(1, sizeof *m);
    struct _ze_module_build_log_handle_t *log = phBuildLog ? malloc(sizeof *log) : NULL;
    if (!m || (phBuildLog && !log)) {
        free(m);
        free(log);
        RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    }
    m->magic = MAGIC_MODULE;
    *phModule = m;
    if (phBuildLog) {
        log->magic = MAGIC_LOG;
        *phBuildLog = log;
    }
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeModuleDestroy, (ze_module_handle_t hModule))
{
    CW_COUNT(zeModuleDestroy);
    CHECK_INIT();
    LOCK();
    if (!VALID(hModule, MAGIC_MODULE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hModule->magic = MAGIC_DEAD;
    RET(ZE_RESULT_SUCCESS);
}

/* The module holds every name: it lists those of the kernels created so far. */
ZE_DEF(zeModuleGetKernelNames, (ze_module_handle_t hModule, uint32_t *pCount, const char **pNames))
{
    CW_COUNT(zeModuleGetKernelNames);
    CHECK_INIT();
    if (!pCount)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hModule, MAGIC_MODULE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (*pCount == 0 || !pNames) {
        *pCount = (uint32_t)hModule->nkernels;
        RET(ZE_RESULT_SUCCESS);
    }
    if (*pCount > hModule->nkernels)
        *pCount = (uint32_t)hModule->nkernels;
    for (uint32_t i = 0; i < *pCount; i++)
        pNames[i] = hModule->kernel_names[i];
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeModuleGetProperties, (ze_module_handle_t hModule, ze_module_properties_t *p))
{
    CW_COUNT(zeModuleGetProperties);
    CHECK_INIT();
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hModule, MAGIC_MODULE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    p->flags = 0; /* no imports */
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeModuleBuildLogDestroy, (ze_module_build_log_handle_t hModuleBuildLog))
{
    CW_COUNT(zeModuleBuildLogDestroy);
    CHECK_INIT();
    LOCK();
    if (!VALID(hModuleBuildLog, MAGIC_LOG))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hModuleBuildLog->magic = MAGIC_DEAD;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeModuleBuildLogGetString,
       (ze_module_build_log_handle_t hModuleBuildLog, size_t *pSize, char *pBuildLog))
{
    CW_COUNT(zeModuleBuildLogGetString);
    CHECK_INIT();
    if (!pSize)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hModuleBuildLog, MAGIC_LOG))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (pBuildLog && *pSize)
        pBuildLog[0] = '\0';
    *pSize = 1;
    RET(ZE_RESULT_SUCCESS);
}

/* Every name exists; each call makes a new kernel object (kernels carry
 * argument and group-size state), its duration taken from the name. */
ZE_DEF(zeKernelCreate, (ze_module_handle_t hModule, const ze_kernel_desc_t *desc,
                        ze_kernel_handle_t *phKernel))
{
    CW_COUNT(zeKernelCreate);
    CHECK_INIT();
    if (!desc || !desc->pKernelName || !phKernel)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->flags > 0x3)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (!*desc->pKernelName)
        return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    LOCK();
    if (!VALID(hModule, MAGIC_MODULE))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    struct _ze_kernel_handle_t *k = calloc(1, sizeof *k);
    char *name = strdup(desc->pKernelName);
    if (!k || !name) {
        free(k);
        free(name);
        RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    }
    int known = 0;
    for (size_t i = 0; i < hModule->nkernels; i++)
        if (!strcmp(hModule->kernel_names[i], name))
            known = 1;
    if (!known) {
        if (hModule->nkernels == hModule->capkernels) {
            size_t cap = hModule->capkernels ? hModule->capkernels * 2 : 8;
            const char **names = realloc(hModule->kernel_names, cap * sizeof *names);
            if (!names) {
                free(k);
                free(name);
                RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
            }
            hModule->kernel_names = names;
            hModule->capkernels = cap;
        }
        hModule->kernel_names[hModule->nkernels++] = name;
    }
    k->magic = MAGIC_KERNEL;
    k->module = hModule;
    k->name = name;
    k->ns = kernel_ns(name);
    k->group[0] = k->group[1] = k->group[2] = 1;
    *phKernel = k;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeKernelDestroy, (ze_kernel_handle_t hKernel))
{
    CW_COUNT(zeKernelDestroy);
    CHECK_INIT();
    LOCK();
    if (!VALID(hKernel, MAGIC_KERNEL))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hKernel->magic = MAGIC_DEAD; /* its name stays: recorded launches use it */
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeKernelSetCacheConfig, (ze_kernel_handle_t hKernel, ze_cache_config_flags_t flags))
{
    CW_COUNT(zeKernelSetCacheConfig);
    CHECK_INIT();
    if (flags > 0x3)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    LOCK();
    RET(VALID(hKernel, MAGIC_KERNEL) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
}

ZE_DEF(zeKernelSetGroupSize, (ze_kernel_handle_t hKernel, uint32_t x, uint32_t y, uint32_t z))
{
    CW_COUNT(zeKernelSetGroupSize);
    CHECK_INIT();
    LOCK();
    if (!VALID(hKernel, MAGIC_KERNEL))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (!x || !y || !z || x > MAX_GROUP_SIZE || y > MAX_GROUP_SIZE || z > MAX_GROUP_SIZE ||
        (uint64_t)x * y * z > MAX_GROUP_SIZE)
        RET(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
    hKernel->group[0] = x;
    hKernel->group[1] = y;
    hKernel->group[2] = z;
    RET(ZE_RESULT_SUCCESS);
}

/* Largest divisor of g that is at most limit. */
static uint32_t divisor_upto(uint32_t g, uint32_t limit)
{
    for (uint32_t d = g < limit ? g : limit; d > 1; d--)
        if (g % d == 0)
            return d;
    return 1;
}

ZE_DEF(zeKernelSuggestGroupSize,
       (ze_kernel_handle_t hKernel, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t *x,
        uint32_t *y, uint32_t *z))
{
    CW_COUNT(zeKernelSuggestGroupSize);
    CHECK_INIT();
    if (!x || !y || !z)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hKernel, MAGIC_KERNEL))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (!gx || !gy || !gz)
        RET(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION);
    uint32_t budget = MAX_GROUP_SIZE;
    *x = divisor_upto(gx, budget);
    budget /= *x;
    *y = divisor_upto(gy, budget);
    budget /= *y;
    *z = divisor_upto(gz, budget);
    RET(ZE_RESULT_SUCCESS);
}

/* Arguments are not simulated: any index and size is accepted. */
ZE_DEF(zeKernelSetArgumentValue,
       (ze_kernel_handle_t hKernel, uint32_t argIndex, size_t argSize, const void *pArgValue))
{
    CW_COUNT(zeKernelSetArgumentValue);
    (void)argIndex, (void)argSize, (void)pArgValue;
    CHECK_INIT();
    LOCK();
    RET(VALID(hKernel, MAGIC_KERNEL) ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
}

ZE_DEF(zeKernelSetIndirectAccess, (ze_kernel_handle_t hKernel, ze_kernel_indirect_access_flags_t flags))
{
    CW_COUNT(zeKernelSetIndirectAccess);
    CHECK_INIT();
    if (flags > 0x7)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    LOCK();
    if (!VALID(hKernel, MAGIC_KERNEL))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    hKernel->indirect = flags;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeKernelGetIndirectAccess, (ze_kernel_handle_t hKernel, ze_kernel_indirect_access_flags_t *pFlags))
{
    CW_COUNT(zeKernelGetIndirectAccess);
    CHECK_INIT();
    if (!pFlags)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hKernel, MAGIC_KERNEL))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    *pFlags = hKernel->indirect;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeKernelGetProperties, (ze_kernel_handle_t hKernel, ze_kernel_properties_t *p))
{
    CW_COUNT(zeKernelGetProperties);
    CHECK_INIT();
    if (!p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hKernel, MAGIC_KERNEL))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    p->numKernelArgs = 0; /* arguments are not simulated */
    p->requiredGroupSizeX = p->requiredGroupSizeY = p->requiredGroupSizeZ = 0;
    p->requiredNumSubGroups = p->requiredSubgroupSize = 0;
    p->maxSubgroupSize = 32;
    p->maxNumSubgroups = MAX_GROUP_SIZE / 8;
    p->localMemSize = p->privateMemSize = p->spillMemSize = 0;
    memset(&p->uuid, 0, sizeof p->uuid);
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeKernelGetName, (ze_kernel_handle_t hKernel, size_t *pSize, char *pName))
{
    CW_COUNT(zeKernelGetName);
    CHECK_INIT();
    if (!pSize)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hKernel, MAGIC_KERNEL))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    size_t need = strlen(hKernel->name) + 1;
    if (pName && *pSize) {
        size_t n = *pSize < need ? *pSize : need;
        memcpy(pName, hKernel->name, n - 1);
        pName[n - 1] = '\0';
    }
    *pSize = need;
    RET(ZE_RESULT_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                   */
/* ------------------------------------------------------------------------ */

/* Every allocation is host memory (so device pointers are usable from the
 * host too), aligned to max(alignment, 64). */
static ze_result_t mem_alloc(ze_context_handle_t hContext, size_t size, size_t alignment,
                             ze_memory_type_t type, void **pptr)
{
    if (!pptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (size == 0 || size > MAX_ALLOC_SIZE)
        return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    if (alignment & (alignment - 1))
        return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (g_nallocs == g_capallocs) {
        size_t cap = g_capallocs ? g_capallocs * 2 : 64;
        alloc_rec *a = realloc(g_allocs, cap * sizeof *a);
        if (!a)
            RET(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
        g_allocs = a;
        g_capallocs = cap;
    }
    void *p = NULL;
    if (posix_memalign(&p, alignment > 64 ? alignment : 64, size) != 0)
        RET(type == ZE_MEMORY_TYPE_HOST ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                                        : ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    g_allocs[g_nallocs++] = (alloc_rec){ (uintptr_t)p, size, type, g_next_alloc_id++ };
    *pptr = p;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeMemAllocDevice, (ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t *device_desc,
                          size_t size, size_t alignment, ze_device_handle_t hDevice, void **pptr))
{
    CW_COUNT(zeMemAllocDevice);
    CHECK_INIT();
    CHECK_DEVICE(hDevice);
    if (!device_desc)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (device_desc->flags > 0x7)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    return mem_alloc(hContext, size, alignment, ZE_MEMORY_TYPE_DEVICE, pptr);
}

ZE_DEF(zeMemAllocHost, (ze_context_handle_t hContext, const ze_host_mem_alloc_desc_t *host_desc,
                        size_t size, size_t alignment, void **pptr))
{
    CW_COUNT(zeMemAllocHost);
    CHECK_INIT();
    if (!host_desc)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (host_desc->flags > 0xf)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    return mem_alloc(hContext, size, alignment, ZE_MEMORY_TYPE_HOST, pptr);
}

ZE_DEF(zeMemAllocShared, (ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t *device_desc,
                          const ze_host_mem_alloc_desc_t *host_desc, size_t size, size_t alignment,
                          ze_device_handle_t hDevice, void **pptr))
{
    CW_COUNT(zeMemAllocShared);
    CHECK_INIT();
    if (hDevice) /* optional for shared allocations */
        CHECK_DEVICE(hDevice);
    if (!device_desc || !host_desc)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (device_desc->flags > 0x7 || host_desc->flags > 0xf)
        return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    return mem_alloc(hContext, size, alignment, ZE_MEMORY_TYPE_SHARED, pptr);
}

/* Index of the allocation containing p (exact base if `base`), or -1. */
static ssize_t alloc_find_locked(const void *p, int base)
{
    uintptr_t a = (uintptr_t)p;
    for (size_t i = 0; i < g_nallocs; i++)
        if (base ? g_allocs[i].base == a
                 : a >= g_allocs[i].base && a < g_allocs[i].base + g_allocs[i].size)
            return (ssize_t)i;
    return -1;
}

/* Blocks until the device is idle, as the real driver's blocking free waits
 * for work that may use the allocation. */
ZE_DEF(zeMemFree, (ze_context_handle_t hContext, void *ptr))
{
    CW_COUNT(zeMemFree);
    CHECK_INIT();
    if (!ptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (alloc_find_locked(ptr, 1) < 0)
        RET(ZE_RESULT_ERROR_INVALID_ARGUMENT); /* unknown or already freed */
    drain_all_locked();
    ssize_t i = alloc_find_locked(ptr, 1); /* the table may have moved meanwhile */
    if (i < 0)
        RET(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    g_allocs[i] = g_allocs[--g_nallocs];
    free(ptr);
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeMemGetAllocProperties, (ze_context_handle_t hContext, const void *ptr,
                                 ze_memory_allocation_properties_t *p, ze_device_handle_t *phDevice))
{
    CW_COUNT(zeMemGetAllocProperties);
    CHECK_INIT();
    if (!ptr || !p)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    ssize_t i = alloc_find_locked(ptr, 0);
    p->type = i < 0 ? ZE_MEMORY_TYPE_UNKNOWN : g_allocs[i].type;
    p->id = i < 0 ? 0 : g_allocs[i].id;
    p->pageSize = i < 0 ? 0 : 4096;
    if (phDevice)
        *phDevice = i < 0 || g_allocs[i].type == ZE_MEMORY_TYPE_HOST ? NULL : &g_device;
    RET(ZE_RESULT_SUCCESS);
}

ZE_DEF(zeMemGetAddressRange, (ze_context_handle_t hContext, const void *ptr, void **pBase, size_t *pSize))
{
    CW_COUNT(zeMemGetAddressRange);
    CHECK_INIT();
    if (!ptr)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    LOCK();
    if (!VALID(hContext, MAGIC_CTX))
        RET(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    ssize_t i = alloc_find_locked(ptr, 0);
    if (i < 0)
        RET(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    if (pBase)
        *pBase = (void *)g_allocs[i].base;
    if (pSize)
        *pSize = g_allocs[i].size;
    RET(ZE_RESULT_SUCCESS);
}

/* ------------------------------------------------------------------------ */
/* DDI-table getters: the only L0 symbols the library exports               */
/* ------------------------------------------------------------------------ */

/* The loader passes its API version (1.4 = 0x10004 for loader 1.8.12).  As
 * real drivers do, refuse another major version or an older minor one than
 * ours; the table is cleared, then filled.  Newer loaders' tables only add
 * members at the end, so clearing sizeof our (1.4) table is safe. */
static ze_result_t table_prologue(ze_api_version_t version, void *table, size_t size)
{
    if (!table)
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (ZE_MAJOR_VERSION(version) != ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT) ||
        ZE_MINOR_VERSION(version) < ZE_MINOR_VERSION(ZE_API_VERSION_CURRENT))
        return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
    memset(table, 0, size);
    return ZE_RESULT_SUCCESS;
}

#define GETTER_BEGIN(name, type)                                               \
    ze_result_t ZE_APICALL name(ze_api_version_t version, type *t)             \
    {                                                                          \
        CW_COUNT(name);                                                        \
        ze_result_t r_ = table_prologue(version, t, sizeof *t);                \
        if (r_)                                                                \
            return r_;
#define GETTER_END                                                             \
    return ZE_RESULT_SUCCESS;                                                  \
    }
#define S(slot, fn) t->pfn##slot = zd_##fn;

GETTER_BEGIN(zeGetGlobalProcAddrTable, ze_global_dditable_t)
    S(Init, zeInit)
GETTER_END

GETTER_BEGIN(zeGetDriverProcAddrTable, ze_driver_dditable_t)
    S(Get, zeDriverGet) S(GetApiVersion, zeDriverGetApiVersion)
    S(GetProperties, zeDriverGetProperties) S(GetIpcProperties, zeDriverGetIpcProperties)
    S(GetExtensionProperties, zeDriverGetExtensionProperties)
    S(GetExtensionFunctionAddress, zeDriverGetExtensionFunctionAddress)
GETTER_END

GETTER_BEGIN(zeGetDeviceProcAddrTable, ze_device_dditable_t)
    S(Get, zeDeviceGet) S(GetSubDevices, zeDeviceGetSubDevices)
    S(GetProperties, zeDeviceGetProperties) S(GetComputeProperties, zeDeviceGetComputeProperties)
    S(GetModuleProperties, zeDeviceGetModuleProperties)
    S(GetCommandQueueGroupProperties, zeDeviceGetCommandQueueGroupProperties)
    S(GetMemoryProperties, zeDeviceGetMemoryProperties) S(CanAccessPeer, zeDeviceCanAccessPeer)
    S(GetStatus, zeDeviceGetStatus) S(GetGlobalTimestamps, zeDeviceGetGlobalTimestamps)
GETTER_END

GETTER_BEGIN(zeGetContextProcAddrTable, ze_context_dditable_t)
    S(Create, zeContextCreate) S(CreateEx, zeContextCreateEx) S(Destroy, zeContextDestroy)
    S(GetStatus, zeContextGetStatus)
GETTER_END

GETTER_BEGIN(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
    S(Create, zeCommandQueueCreate) S(Destroy, zeCommandQueueDestroy)
    S(ExecuteCommandLists, zeCommandQueueExecuteCommandLists)
    S(Synchronize, zeCommandQueueSynchronize)
GETTER_END

GETTER_BEGIN(zeGetCommandListProcAddrTable, ze_command_list_dditable_t)
    S(Create, zeCommandListCreate) S(CreateImmediate, zeCommandListCreateImmediate)
    S(Destroy, zeCommandListDestroy) S(Close, zeCommandListClose) S(Reset, zeCommandListReset)
    S(AppendWriteGlobalTimestamp, zeCommandListAppendWriteGlobalTimestamp)
    S(AppendBarrier, zeCommandListAppendBarrier)
    S(AppendMemoryRangesBarrier, zeCommandListAppendMemoryRangesBarrier)
    S(AppendMemoryCopy, zeCommandListAppendMemoryCopy)
    S(AppendMemoryFill, zeCommandListAppendMemoryFill)
    S(AppendMemoryPrefetch, zeCommandListAppendMemoryPrefetch)
    S(AppendMemAdvise, zeCommandListAppendMemAdvise)
    S(AppendSignalEvent, zeCommandListAppendSignalEvent)
    S(AppendWaitOnEvents, zeCommandListAppendWaitOnEvents)
    S(AppendEventReset, zeCommandListAppendEventReset)
    S(AppendQueryKernelTimestamps, zeCommandListAppendQueryKernelTimestamps)
    S(AppendLaunchKernel, zeCommandListAppendLaunchKernel)
    S(AppendLaunchCooperativeKernel, zeCommandListAppendLaunchCooperativeKernel)
GETTER_END

GETTER_BEGIN(zeGetFenceProcAddrTable, ze_fence_dditable_t)
    S(Create, zeFenceCreate) S(Destroy, zeFenceDestroy)
    S(HostSynchronize, zeFenceHostSynchronize) S(QueryStatus, zeFenceQueryStatus)
    S(Reset, zeFenceReset)
GETTER_END

GETTER_BEGIN(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t)
    S(Create, zeEventPoolCreate) S(Destroy, zeEventPoolDestroy)
GETTER_END

GETTER_BEGIN(zeGetEventProcAddrTable, ze_event_dditable_t)
    S(Create, zeEventCreate) S(Destroy, zeEventDestroy) S(HostSignal, zeEventHostSignal)
    S(HostSynchronize, zeEventHostSynchronize) S(QueryStatus, zeEventQueryStatus)
    S(HostReset, zeEventHostReset) S(QueryKernelTimestamp, zeEventQueryKernelTimestamp)
GETTER_END

GETTER_BEGIN(zeGetModuleProcAddrTable, ze_module_dditable_t)
    S(Create, zeModuleCreate) S(Destroy, zeModuleDestroy)
    S(GetKernelNames, zeModuleGetKernelNames) S(GetProperties, zeModuleGetProperties)
GETTER_END

GETTER_BEGIN(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
    S(Destroy, zeModuleBuildLogDestroy) S(GetString, zeModuleBuildLogGetString)
GETTER_END

GETTER_BEGIN(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
    S(Create, zeKernelCreate) S(Destroy, zeKernelDestroy) S(SetCacheConfig, zeKernelSetCacheConfig)
    S(SetGroupSize, zeKernelSetGroupSize) S(SuggestGroupSize, zeKernelSuggestGroupSize)
    S(SetArgumentValue, zeKernelSetArgumentValue) S(SetIndirectAccess, zeKernelSetIndirectAccess)
    S(GetIndirectAccess, zeKernelGetIndirectAccess) S(GetProperties, zeKernelGetProperties)
    S(GetName, zeKernelGetName)
GETTER_END

GETTER_BEGIN(zeGetMemProcAddrTable, ze_mem_dditable_t)
    S(AllocShared, zeMemAllocShared) S(AllocDevice, zeMemAllocDevice)
    S(AllocHost, zeMemAllocHost) S(Free, zeMemFree)
    S(GetAllocProperties, zeMemGetAllocProperties) S(GetAddressRange, zeMemGetAddressRange)
GETTER_END

#define X(name, type) GETTER_BEGIN(name, type) GETTER_END
CWZ_EMPTY_GETTERS(X)
#undef X
