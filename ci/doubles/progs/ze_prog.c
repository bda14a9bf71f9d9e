/*
 * ze_prog.c - a Level Zero program run through the real loader
 * (libze_loader.so.1) on the Level Zero driver double (libze_double.so):
 *
 *     ZE_ENABLE_ALT_DRIVERS=$PWD/ci/build/libze_double.so ci/build/ze_prog [N [BAD [STEPS]]]
 *
 * zeInit, driver and device discovery, a context, a module with the kernels
 * sleep_100us, sleep_200us and sleep_50us, host/device/shared allocations,
 * then:
 *   - a regular command list (launch sleep_100us signalling timestamp event
 *     E0, 1 MB H2D copy, barrier, 1 MB fill of the device buffer, launch
 *     sleep_200us waiting on E0 and signalling E1, 1 MB D2H copy, a global
 *     timestamp write), executed N times (default 4) on a queue with a fence;
 *     each time the host buffer must come back holding the fill pattern and
 *     E0/E1's kernel timestamps must be ordered, long enough and inside the
 *     zeDeviceGetGlobalTimestamps window taken around the execution;
 *   - the list reset, re-recorded (one launch) and executed once more, then
 *     zeCommandQueueSynchronize;
 *   - two immediate command lists: on I sleep_200us signals E2 (then a copy
 *     and a fill); on J sleep_50us waits on E2 and on the host-signalled gate
 *     G and signals E3; E3 must be NOT_READY (query, 0 and 2 ms timeouts)
 *     until the host signals G, and must start after E2 ended;
 *   - with STEPS (default 0), STEPS NVTX ranges "step", each a launch of
 *     sleep_200us on I beside a 1 MB H2D copy on J (both signalling nothing),
 *     then a barrier on each signalling an event (reset before) the host
 *     waits for (steps, kernels and copies for `causeway control`);
 *   - with BAD=1 (default) bad handles and arguments, each of which must
 *     return the expected error code (BAD=0 skips them: needed under
 *     ZE_ENABLE_LOADER_INTERCEPT=1, where the loader itself dereferences
 *     the handles).
 * Prints key=value facts, then the double's call counters (cwz_dump, found
 * with dlopen(RTLD_NOLOAD)); exits non-zero on the first error.
 */
#include "cw_prog.h"

#include <level_zero/ze_api.h>
#include <nvtx3/nvToolsExt.h>

#include <stdint.h>
#include <string.h>
#include <time.h>

#define MB (1u << 20)

#define CHECK(call)                                                            \
    do {                                                                       \
        ze_result_t r_ = (call);                                               \
        if (r_ != ZE_RESULT_SUCCESS)                                           \
            CW_DIE("ze_prog:%d: %s = 0x%x", __LINE__, #call, (unsigned)r_);    \
    } while (0)

#define EXPECT(call, want)                                                     \
    do {                                                                       \
        ze_result_t r_ = (call);                                               \
        if (r_ != (want))                                                      \
            CW_DIE("ze_prog:%d: %s = 0x%x, want 0x%x", __LINE__, #call,        \
                   (unsigned)r_, (unsigned)(want));                            \
    } while (0)

static int bad_ok;
/* A bad call: print its result and require the expected one. */
#define BAD_CASE(key, call, want)                                              \
    do {                                                                       \
        ze_result_t r_ = (call);                                               \
        printf("bad_%s=0x%x\n", key, (unsigned)r_);                            \
        if (r_ != (want))                                                      \
            CW_DIE("ze_prog:%d: %s = 0x%x, want 0x%x", __LINE__, #call,        \
                   (unsigned)r_, (unsigned)(want));                            \
        bad_ok++;                                                              \
    } while (0)

static uint64_t g_kmask, g_gmask, g_res_ns;
static double g_drift; /* CWZ_DEVICE_CLOCK_DRIFT_PPM * 1e-6, as the double reads it */

static int checks_failed;
static void check(int ok, const char *what, long i)
{
    if (!ok) {
        fprintf(stderr, "ze_prog: check failed: %s (iteration %ld)\n", what, i);
        checks_failed++;
    }
}

/* b - a on the kernel timestamp counter (it wraps at kernelTimestampValidBits). */
static uint64_t kd(uint64_t a, uint64_t b) { return (b - a) & g_kmask; }

/* Minimum ticks of an operation of `us` microseconds (one tick of rounding). */
static uint64_t min_ticks(uint64_t us)
{
    double t = (double)us * 1000.0 * (1.0 + g_drift) / (double)g_res_ns;
    return t > 1.0 ? (uint64_t)t - 1 : 0;
}

/* The kernel timestamps of e lie inside the device window [g0, g1] (global
 * timestamps), and last at least `us`. */
static void check_ts(const ze_kernel_timestamp_result_t *t, uint64_t g0, uint64_t g1, uint64_t us,
                     const char *what, long i)
{
    uint64_t w = (g1 - g0) & g_gmask, b = g0 & g_kmask;
    uint64_t s = kd(b, t->global.kernelStart), e = kd(b, t->global.kernelEnd);
    check(s <= w && e <= w && s <= e, what, i);
    check(kd(t->global.kernelStart, t->global.kernelEnd) >= min_ticks(us), what, i);
    check(t->context.kernelStart == t->global.kernelStart &&
              t->context.kernelEnd == t->global.kernelEnd, what, i);
}

int main(int argc, char **argv)
{
    long n = cw_arg(argc, argv, 1, 4);
    long bad = cw_arg(argc, argv, 2, 1);
    long steps = cw_arg(argc, argv, 3, 0);
    const char *dv = getenv("CWZ_DEVICE_CLOCK_DRIFT_PPM");
    if (dv && *dv) {
        char *end;
        double ppm = strtod(dv, &end);
        if (!*end && ppm > -1e6 && ppm < 1e9)
            g_drift = ppm * 1e-6;
    }

    /* ---- discovery ------------------------------------------------------- */
    CHECK(zeInit(0));
    uint32_t count = 0;
    CHECK(zeDriverGet(&count, NULL));
    if (count != 1)
        CW_DIE("zeDriverGet: %u drivers, want 1", count);
    ze_driver_handle_t drv;
    CHECK(zeDriverGet(&count, &drv));
    ze_api_version_t api;
    CHECK(zeDriverGetApiVersion(drv, &api));
    count = 0;
    CHECK(zeDeviceGet(drv, &count, NULL));
    if (count != 1)
        CW_DIE("zeDeviceGet: %u devices, want 1", count);
    ze_device_handle_t dev;
    CHECK(zeDeviceGet(drv, &count, &dev));

    ze_device_properties_t props = { .stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES };
    CHECK(zeDeviceGetProperties(dev, &props));
    ze_device_properties_t props12 = { .stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 };
    CHECK(zeDeviceGetProperties(dev, &props12));
    if (props.type != ZE_DEVICE_TYPE_GPU)
        CW_DIE("device type %d, want GPU", props.type);
    g_res_ns = props.timerResolution;
    if (g_res_ns == 0 || props12.timerResolution * g_res_ns != 1000000000u)
        CW_DIE("timerResolution %lu ns vs %lu Hz", (unsigned long)g_res_ns,
               (unsigned long)props12.timerResolution);
    g_kmask = props.kernelTimestampValidBits >= 64 ? UINT64_MAX
                                                   : (UINT64_C(1) << props.kernelTimestampValidBits) - 1;
    g_gmask = props.timestampValidBits >= 64 ? UINT64_MAX
                                             : (UINT64_C(1) << props.timestampValidBits) - 1;

    uint32_t ngroups = 0;
    CHECK(zeDeviceGetCommandQueueGroupProperties(dev, &ngroups, NULL));
    ze_command_queue_group_properties_t groups[8];
    if (ngroups > 8)
        ngroups = 8;
    for (uint32_t i = 0; i < ngroups; i++)
        groups[i] = (ze_command_queue_group_properties_t){
            .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES };
    CHECK(zeDeviceGetCommandQueueGroupProperties(dev, &ngroups, groups));
    uint32_t compute = UINT32_MAX;
    for (uint32_t i = 0; i < ngroups && compute == UINT32_MAX; i++)
        if ((groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) && groups[i].numQueues >= 3)
            compute = i;
    if (compute == UINT32_MAX)
        CW_DIE("no compute queue group with 3 queues");

    ze_context_handle_t ctx;
    ze_context_desc_t cdesc = { .stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC };
    CHECK(zeContextCreate(drv, &cdesc, &ctx));

    /* ---- module and kernels ---------------------------------------------- */
    static const uint8_t spirv[] = { 0x03, 0x02, 0x23, 0x07, 0, 0, 1, 0 }; /* any bytes */
    ze_module_desc_t mdesc = { .stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
                               .format = ZE_MODULE_FORMAT_IL_SPIRV,
                               .inputSize = sizeof spirv,
                               .pInputModule = spirv };
    ze_module_handle_t mod;
    ze_module_build_log_handle_t log;
    CHECK(zeModuleCreate(ctx, dev, &mdesc, &mod, &log));
    size_t logsz = 0;
    CHECK(zeModuleBuildLogGetString(log, &logsz, NULL));
    char logbuf[256];
    if (logsz > sizeof logbuf)
        logsz = sizeof logbuf;
    CHECK(zeModuleBuildLogGetString(log, &logsz, logbuf));
    CHECK(zeModuleBuildLogDestroy(log));

    const char *knames[3] = { "sleep_100us", "sleep_200us", "sleep_50us" };
    ze_kernel_handle_t k[3];
    for (int i = 0; i < 3; i++) {
        ze_kernel_desc_t kdesc = { .stype = ZE_STRUCTURE_TYPE_KERNEL_DESC, .pKernelName = knames[i] };
        CHECK(zeKernelCreate(mod, &kdesc, &k[i]));
    }
    uint32_t gx, gy, gz;
    CHECK(zeKernelSuggestGroupSize(k[0], 4096, 1, 1, &gx, &gy, &gz));
    for (int i = 0; i < 3; i++)
        CHECK(zeKernelSetGroupSize(k[i], gx, gy, gz));
    size_t namesz = 0;
    CHECK(zeKernelGetName(k[1], &namesz, NULL));
    char namebuf[64];
    if (namesz > sizeof namebuf)
        CW_DIE("kernel name size %zu", namesz);
    CHECK(zeKernelGetName(k[1], &namesz, namebuf));
    if (strcmp(namebuf, knames[1]))
        CW_DIE("zeKernelGetName gave '%s'", namebuf);
    ze_group_count_t gc = { 4096 / gx, 1, 1 };

    /* ---- memory ---------------------------------------------------------- */
    ze_host_mem_alloc_desc_t hdesc = { .stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC };
    ze_device_mem_alloc_desc_t ddesc = { .stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC };
    unsigned char *hbuf, *dbuf;
    uint64_t *sbuf;
    CHECK(zeMemAllocHost(ctx, &hdesc, MB, 64, (void **)&hbuf));
    CHECK(zeMemAllocDevice(ctx, &ddesc, MB, 64, dev, (void **)&dbuf));
    CHECK(zeMemAllocShared(ctx, &ddesc, &hdesc, 4096, 64, dev, (void **)&sbuf));
    for (int i = 0; i < 3; i++)
        CHECK(zeKernelSetArgumentValue(k[i], 0, sizeof dbuf, &dbuf));
    ze_memory_allocation_properties_t ap = { .stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES };
    ze_device_handle_t apdev = NULL;
    CHECK(zeMemGetAllocProperties(ctx, dbuf, &ap, &apdev));
    if (ap.type != ZE_MEMORY_TYPE_DEVICE || apdev != dev)
        CW_DIE("zeMemGetAllocProperties: type %d", ap.type);

    /* ---- events ---------------------------------------------------------- */
    ze_event_pool_desc_t tsp = { .stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                                 .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
                                          ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP,
                                 .count = 8 };
    ze_event_pool_desc_t plp = { .stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                                 .flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                                 .count = 2 };
    ze_event_pool_handle_t tspool, pool;
    CHECK(zeEventPoolCreate(ctx, &tsp, 1, &dev, &tspool));
    CHECK(zeEventPoolCreate(ctx, &plp, 0, NULL, &pool));
    ze_event_handle_t ev[5], gate;
    for (uint32_t i = 0; i < 5; i++) {
        ze_event_desc_t ed = { .stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = i,
                               .signal = ZE_EVENT_SCOPE_FLAG_HOST, .wait = ZE_EVENT_SCOPE_FLAG_HOST };
        CHECK(zeEventCreate(tspool, &ed, &ev[i]));
    }
    ze_event_desc_t gd = { .stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = 0 };
    CHECK(zeEventCreate(pool, &gd, &gate));

    /* ---- queue, fence, regular command list ------------------------------ */
    ze_command_queue_desc_t qd = { .stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                   .ordinal = compute, .index = 0,
                                   .mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS };
    ze_command_queue_handle_t q;
    CHECK(zeCommandQueueCreate(ctx, dev, &qd, &q));
    ze_fence_desc_t fd = { .stype = ZE_STRUCTURE_TYPE_FENCE_DESC };
    ze_fence_handle_t fence;
    CHECK(zeFenceCreate(q, &fd, &fence));

    ze_command_list_desc_t ld = { .stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
                                  .commandQueueGroupOrdinal = compute };
    ze_command_list_handle_t list;
    CHECK(zeCommandListCreate(ctx, dev, &ld, &list));
    const uint32_t pattern = 0xc0ffee01u;
    CHECK(zeCommandListAppendLaunchKernel(list, k[0], &gc, ev[0], 0, NULL));
    CHECK(zeCommandListAppendMemoryCopy(list, dbuf, hbuf, MB, NULL, 0, NULL));
    CHECK(zeCommandListAppendBarrier(list, NULL, 0, NULL));
    CHECK(zeCommandListAppendMemoryFill(list, dbuf, &pattern, sizeof pattern, MB, NULL, 0, NULL));
    CHECK(zeCommandListAppendLaunchKernel(list, k[1], &gc, ev[1], 1, &ev[0]));
    CHECK(zeCommandListAppendMemoryCopy(list, hbuf, dbuf, MB, NULL, 0, NULL));
    CHECK(zeCommandListAppendWriteGlobalTimestamp(list, &sbuf[0], NULL, 0, NULL));
    CHECK(zeCommandListClose(list));

    long host_syncs = 0, executes = 0, data_bad = 0;
    for (long i = 0; i < n; i++) {
        memset(hbuf, (int)i, MB);
        sbuf[0] = 0;
        CHECK(zeEventHostReset(ev[0]));
        CHECK(zeEventHostReset(ev[1]));
        uint64_t h0, g0, h1, g1;
        CHECK(zeDeviceGetGlobalTimestamps(dev, &h0, &g0));
        CHECK(zeCommandQueueExecuteCommandLists(q, 1, &list, fence));
        executes++;
        CHECK(zeFenceHostSynchronize(fence, UINT64_MAX));
        host_syncs++;
        CHECK(zeDeviceGetGlobalTimestamps(dev, &h1, &g1));
        CHECK(zeFenceQueryStatus(fence));
        CHECK(zeFenceReset(fence));
        CHECK(zeEventQueryStatus(ev[0]));
        CHECK(zeEventQueryStatus(ev[1]));
        ze_kernel_timestamp_result_t t0, t1;
        CHECK(zeEventQueryKernelTimestamp(ev[0], &t0));
        CHECK(zeEventQueryKernelTimestamp(ev[1], &t1));
        /* E0 (100 us) then, after a 100 us copy and a 100 us fill, E1 (200 us). */
        check_ts(&t0, g0, g1, 100, "sleep_100us timestamps", i);
        check_ts(&t1, g0, g1, 200, "sleep_200us timestamps", i);
        check(kd(t0.global.kernelEnd, t1.global.kernelStart) >= min_ticks(200) &&
                  kd(t0.global.kernelEnd, t1.global.kernelStart) <= ((g1 - g0) & g_gmask),
              "E1 starts >= 200 us after E0 ends", i);
        /* The global timestamp written after the D2H copy. */
        uint64_t gts = sbuf[0];
        check(((gts - g0) & g_gmask) <= ((g1 - g0) & g_gmask) &&
                  kd(t1.global.kernelEnd, gts & g_kmask) >= min_ticks(100),
              "global timestamp after the D2H copy", i);
        /* Host and device clocks agree (within rounding) across the window. */
        double host_dev = (double)(h1 - h0) * (1.0 + g_drift);
        double dev_ns = (double)((g1 - g0) & g_gmask) * (double)g_res_ns;
        check(dev_ns - host_dev < 2.0 * g_res_ns + 1e-6 * host_dev &&
                  host_dev - dev_ns < 2.0 * g_res_ns + 1e-6 * host_dev,
              "zeDeviceGetGlobalTimestamps host/device rates", i);
        for (size_t b = 0; b < MB; b += 4)
            if (memcmp(hbuf + b, &pattern, 4)) {
                data_bad++;
                break;
            }
    }

    /* Reset, re-record and execute once more (no fence), then sync the queue. */
    CHECK(zeCommandListReset(list));
    CHECK(zeEventHostReset(ev[0]));
    CHECK(zeCommandListAppendLaunchKernel(list, k[2], &gc, ev[0], 0, NULL));
    CHECK(zeCommandListClose(list));
    CHECK(zeCommandQueueExecuteCommandLists(q, 1, &list, NULL));
    executes++;
    CHECK(zeCommandQueueSynchronize(q, UINT64_MAX));
    host_syncs++;
    ze_kernel_timestamp_result_t t50;
    CHECK(zeEventQueryKernelTimestamp(ev[0], &t50));
    check(kd(t50.global.kernelStart, t50.global.kernelEnd) >= min_ticks(50), "re-recorded sleep_50us", 0);

    /* ---- immediate command lists ----------------------------------------- */
    ze_command_queue_desc_t id1 = qd, id2 = qd;
    id1.index = 1;
    id2.index = 2;
    ze_command_list_handle_t imm, imm2;
    CHECK(zeCommandListCreateImmediate(ctx, dev, &id1, &imm));
    CHECK(zeCommandListCreateImmediate(ctx, dev, &id2, &imm2));
    CHECK(zeEventHostReset(ev[2]));
    CHECK(zeEventHostReset(ev[3]));
    CHECK(zeEventHostReset(ev[4]));
    CHECK(zeEventHostReset(gate));
    uint64_t ih0, ig0, ih1, ig1;
    CHECK(zeDeviceGetGlobalTimestamps(dev, &ih0, &ig0));
    CHECK(zeCommandListAppendLaunchKernel(imm, k[1], &gc, ev[2], 0, NULL));
    CHECK(zeCommandListAppendMemoryCopy(imm, hbuf, dbuf, MB, NULL, 0, NULL));
    CHECK(zeCommandListAppendMemoryFill(imm, &sbuf[8], &pattern, sizeof pattern, 64, NULL, 0, NULL));
    ze_event_handle_t waits[2] = { ev[2], gate };
    CHECK(zeCommandListAppendLaunchKernel(imm2, k[2], &gc, ev[3], 2, waits));
    /* Not before the host opens the gate, whatever the timing. */
    EXPECT(zeEventQueryStatus(ev[3]), ZE_RESULT_NOT_READY);
    EXPECT(zeEventHostSynchronize(ev[3], 0), ZE_RESULT_NOT_READY);
    EXPECT(zeEventHostSynchronize(ev[3], 2000000), ZE_RESULT_NOT_READY);
    CHECK(zeEventHostSignal(gate));
    CHECK(zeEventHostSynchronize(ev[3], UINT64_MAX));
    host_syncs++;
    CHECK(zeCommandListAppendBarrier(imm, ev[4], 0, NULL));
    CHECK(zeEventHostSynchronize(ev[4], UINT64_MAX));
    host_syncs++;
    CHECK(zeDeviceGetGlobalTimestamps(dev, &ih1, &ig1));
    CHECK(zeEventQueryStatus(ev[2]));
    ze_kernel_timestamp_result_t t2, t3;
    CHECK(zeEventQueryKernelTimestamp(ev[2], &t2));
    CHECK(zeEventQueryKernelTimestamp(ev[3], &t3));
    check_ts(&t2, ig0, ig1, 200, "immediate sleep_200us timestamps", 0);
    check_ts(&t3, ig0, ig1, 50, "immediate sleep_50us timestamps", 0);
    check(kd(ig0 & g_kmask, t3.global.kernelStart) >= kd(ig0 & g_kmask, t2.global.kernelEnd),
          "sleep_50us on J starts after sleep_200us on I ends (event E2)", 0);
    for (size_t b = 0; b < 64; b += 4)
        if (memcmp((unsigned char *)&sbuf[8] + b, &pattern, 4))
            data_bad++;

    /* ---- NVTX steps on the immediate lists --------------------------------- */
    for (long s = 0; s < steps; s++) {
        CHECK(zeEventHostReset(ev[2]));
        CHECK(zeEventHostReset(ev[3]));
        nvtxRangePushA("step");
        CHECK(zeCommandListAppendLaunchKernel(imm, k[1], &gc, NULL, 0, NULL));
        CHECK(zeCommandListAppendMemoryCopy(imm2, dbuf, hbuf, MB, NULL, 0, NULL));
        CHECK(zeCommandListAppendBarrier(imm, ev[2], 0, NULL));
        CHECK(zeCommandListAppendBarrier(imm2, ev[3], 0, NULL));
        CHECK(zeEventHostSynchronize(ev[2], UINT64_MAX));
        CHECK(zeEventHostSynchronize(ev[3], UINT64_MAX));
        nvtxRangePop();
    }
    if (steps)
        printf("steps=%ld\n", steps);

    /* ---- bad handles and arguments --------------------------------------- */
    if (bad) {
        ze_context_handle_t c2;
        BAD_CASE("context_create_null_driver", zeContextCreate(NULL, &cdesc, &c2),
                 ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        BAD_CASE("launch_null_list", zeCommandListAppendLaunchKernel(NULL, k[0], &gc, NULL, 0, NULL),
                 ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        BAD_CASE("launch_null_kernel", zeCommandListAppendLaunchKernel(imm, NULL, &gc, NULL, 0, NULL),
                 ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        BAD_CASE("event_sync_null", zeEventHostSynchronize(NULL, 0),
                 ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        ze_event_handle_t stale;
        ze_event_desc_t sd = { .stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = 1 };
        CHECK(zeEventCreate(pool, &sd, &stale));
        CHECK(zeEventDestroy(stale));
        BAD_CASE("event_query_destroyed", zeEventQueryStatus(stale),
                 ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        ze_event_desc_t bd = { .stype = ZE_STRUCTURE_TYPE_EVENT_DESC, .index = 8 };
        ze_event_handle_t e8;
        BAD_CASE("event_index_out_of_pool", zeEventCreate(tspool, &bd, &e8),
                 ZE_RESULT_ERROR_INVALID_ARGUMENT);
        int local;
        BAD_CASE("mem_free_unknown", zeMemFree(ctx, &local), ZE_RESULT_ERROR_INVALID_ARGUMENT);
        BAD_CASE("copy_null_dst", zeCommandListAppendMemoryCopy(imm, NULL, hbuf, 16, NULL, 0, NULL),
                 ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        BAD_CASE("launch_wait_list_null", zeCommandListAppendLaunchKernel(imm, k[0], &gc, NULL, 1, NULL),
                 ZE_RESULT_ERROR_INVALID_SIZE);
        BAD_CASE("execute_zero_lists", zeCommandQueueExecuteCommandLists(q, 0, &list, NULL),
                 ZE_RESULT_ERROR_INVALID_SIZE);
        ze_command_list_handle_t open;
        CHECK(zeCommandListCreate(ctx, dev, &ld, &open));
        BAD_CASE("execute_open_list", zeCommandQueueExecuteCommandLists(q, 1, &open, NULL),
                 ZE_RESULT_ERROR_INVALID_ARGUMENT);
        CHECK(zeCommandListDestroy(open));
        ze_kernel_timestamp_result_t tg;
        BAD_CASE("timestamp_of_plain_event", zeEventQueryKernelTimestamp(gate, &tg),
                 ZE_RESULT_ERROR_INVALID_ARGUMENT);
        BAD_CASE("device_properties_null", zeDeviceGetProperties(dev, NULL),
                 ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    }

    /* ---- teardown -------------------------------------------------------- */
    CHECK(zeCommandListDestroy(imm));
    CHECK(zeCommandListDestroy(imm2));
    CHECK(zeCommandListDestroy(list));
    CHECK(zeFenceDestroy(fence));
    CHECK(zeCommandQueueDestroy(q));
    for (int i = 0; i < 5; i++)
        CHECK(zeEventDestroy(ev[i]));
    CHECK(zeEventDestroy(gate));
    CHECK(zeEventPoolDestroy(tspool));
    CHECK(zeEventPoolDestroy(pool));
    for (int i = 0; i < 3; i++)
        CHECK(zeKernelDestroy(k[i]));
    CHECK(zeModuleDestroy(mod));
    CHECK(zeMemFree(ctx, hbuf));
    CHECK(zeMemFree(ctx, dbuf));
    CHECK(zeMemFree(ctx, sbuf));
    CHECK(zeContextDestroy(ctx));

    printf("ze_prog iterations=%ld\n", n);
    printf("api_version=%u.%u\n", ZE_MAJOR_VERSION(api), ZE_MINOR_VERSION(api));
    printf("device=%s\n", props.name);
    printf("timer_resolution_ns=%lu\n", (unsigned long)props.timerResolution);
    printf("timer_hz=%lu\n", (unsigned long)props12.timerResolution);
    printf("timestamp_bits=%u\n", props.timestampValidBits);
    printf("kernel_timestamp_bits=%u\n", props.kernelTimestampValidBits);
    printf("queue_groups=%u\n", ngroups);
    /* Operations executed on the device: N runs of the regular list, the
     * re-recorded list once, the immediate lists' appends. */
    printf("launches=%ld\n", 2 * n + 1 + 2);
    printf("copies=%ld\n", 2 * n + 1);
    printf("fills=%ld\n", n + 1);
    printf("barriers=%ld\n", n + 1);
    printf("global_timestamps=%ld\n", n);
    printf("executes=%ld\n", executes);
    printf("host_syncs=%ld\n", host_syncs);
    printf("not_ready=3\n");
    printf("timestamps_ok=%d\n", checks_failed == 0);
    printf("data_ok=%d\n", data_bad == 0);
    if (bad)
        printf("bad_handles_ok=%d\n", bad_ok);
    else
        printf("bad_handles=skipped\n");
    fflush(stdout);
    cw_dump_one("level zero driver", "libze_double.so", "cwz_dump");
    printf("--- end counters ---\n");
    fflush(stdout);
    return checks_failed || data_bad ? 1 : 0;
}
