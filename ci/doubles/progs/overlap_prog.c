/*
 * overlap_prog MODE [--steps N] [--warmup W] [--copy-mib M | --copy-kib K] [--kernel-us US]
 *                   [--part both|x|y|none] [--timing-events]
 *
 * The CPU stand-in for control-experiments/workloads/overlap.cu (same
 * arguments, same summary line): ground-truth workloads for `causeway
 * control`, with NVTX steps.  Two operations per step, x and y:
 *
 *   a  x = H2D copy of M MiB from pinned memory on stream S0, y = a kernel of
 *      US us on stream S1 (both non-blocking); issued y then x (the copy of
 *      the next batch while this one computes), then both streams synced:
 *      overlapped by construction.
 *   b  the same on one stream S0: serialised by stream order.
 *   p  x = cudaMemcpy (synchronous) from pageable (malloc) memory on the
 *      legacy default stream, y = the kernel on a blocking stream S1 issued
 *      first: serialised by the legacy stream's implicit synchronisation.
 *   c  x = a kernel on S0, then cudaEventRecord(E, S0), cudaStreamWaitEvent(
 *      S1, E), y = a kernel on S1: y depends on x, serialised.
 *   i  the same calls, but E is recorded before x: the streams are
 *      independent and the kernels run concurrently.
 *
 * --part x|y|none leaves out the other operation(s) (the event calls of c
 * and i stay): the isolated variants whose step times, against the step time
 * of both, establish the true overlap without any tracer.  E is created with
 * cudaEventDisableTiming.  --timing-events records timing-enabled events
 * right before and after each operation on its stream, as a tracer's events
 * backend does (CWD_TIMING_EVENTS_SERIALIZE=1 makes the driver double's
 * copy engine wait on them).
 *
 * NVTX: W "warmup" steps (default 2; they also make S0 a copy stream before
 * the first step), then N "step" ranges (default 10).  Each step's host time
 * (CLOCK_MONOTONIC, inside the range) is measured; the program prints
 *
 *   overlap mode=a part=both steps=N warmup=W copy_bytes=B kernel_us=US
 *     x=copy y=kernel timing_events=0 step_us_min=.. step_us_median=..
 *     step_us_max=..                                           (one line)
 *
 * then the doubles' counters.  The driver double takes a kernel's duration
 * from its name, so US must be one of 200, 500, 1000, 2000, 5000, 20000; copies take
 * bytes / 10 GB/s (1 MiB: 105 us).
 */
#include "cw_prog.h"

#include <string.h>
#include <time.h>
#include <nvtx3/nvToolsExt.h>

#define CW_KERNEL_LIST(K)                                                      \
    K(sleep_200us, "sleep_200us")                                              \
    K(sleep_500us, "sleep_500us")                                              \
    K(sleep_1000us, "sleep_1000us")                                            \
    K(sleep_2000us, "sleep_2000us")                                            \
    K(sleep_5000us, "sleep_5000us")                                            \
    K(sleep_20000us, "sleep_20000us")
#include "cw_kernels.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    CW_DIE("usage: overlap_prog a|b|p|c|i [--steps N] [--warmup W] [--copy-mib M | --copy-kib K] "
           "[--kernel-us 200|500|1000|2000|5000|20000] [--part both|x|y|none] [--timing-events]");
}

static long num(const char *v)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 0)
        usage();
    return n;
}

struct ctx {
    char mode;
    int do_x, do_y, timing;
    cudaStream_t s0, s1;
    cudaEvent_t e, ev[4];
    void *pinned, *pageable, *dev;
    size_t bytes;
    const void *kernel;
};

/* A timing-enabled event before (i = 0 for x, 2 for y) or after (i + 1). */
static void mark(struct ctx *c, int i, cudaStream_t s)
{
    if (c->timing)
        CHECK(cudaEventRecord(c->ev[i], s));
}

static void op_kernel(struct ctx *c, int i, cudaStream_t s)
{
    mark(c, i, s);
    CHECK(cw_launch(c->kernel, s));
    mark(c, i + 1, s);
}

static void one_step(struct ctx *c)
{
    switch (c->mode) {
    case 'a':
    case 'b': {
        cudaStream_t sx = c->s0, sy = c->mode == 'a' ? c->s1 : c->s0;
        if (c->do_y)
            op_kernel(c, 2, sy);
        if (c->do_x) {
            mark(c, 0, sx);
            CHECK(cudaMemcpyAsync(c->dev, c->pinned, c->bytes, cudaMemcpyHostToDevice, sx));
            mark(c, 1, sx);
        }
        CHECK(cudaStreamSynchronize(c->s0));
        if (c->mode == 'a')
            CHECK(cudaStreamSynchronize(c->s1));
        break;
    }
    case 'p':
        if (c->do_y)
            op_kernel(c, 2, c->s1);
        if (c->do_x) {
            mark(c, 0, 0);
            CHECK(cudaMemcpy(c->dev, c->pageable, c->bytes, cudaMemcpyHostToDevice));
            mark(c, 1, 0);
        }
        CHECK(cudaStreamSynchronize(c->s1));
        break;
    case 'c':
    case 'i':
        if (c->mode == 'i')
            CHECK(cudaEventRecord(c->e, c->s0));
        if (c->do_x)
            op_kernel(c, 0, c->s0);
        if (c->mode == 'c')
            CHECK(cudaEventRecord(c->e, c->s0));
        CHECK(cudaStreamWaitEvent(c->s1, c->e, 0));
        if (c->do_y)
            op_kernel(c, 2, c->s1);
        CHECK(cudaStreamSynchronize(c->s0));
        CHECK(cudaStreamSynchronize(c->s1));
        break;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || strlen(argv[1]) != 1 || !strchr("abpci", argv[1][0]))
        usage();
    struct ctx c = { .mode = argv[1][0], .do_x = 1, .do_y = 1 };
    long steps = 10, warmup = 2, mib = 20, kib = 0, kus = 2000;
    const char *part = "both";
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--timing-events")) {
            c.timing = 1;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        const char *v = argv[++i];
        if (!strcmp(a, "--steps"))
            steps = num(v);
        else if (!strcmp(a, "--warmup"))
            warmup = num(v);
        else if (!strcmp(a, "--copy-mib"))
            mib = num(v);
        else if (!strcmp(a, "--copy-kib"))
            kib = num(v);
        else if (!strcmp(a, "--kernel-us"))
            kus = num(v);
        else if (!strcmp(a, "--part"))
            part = v;
        else
            usage();
    }
    if (!strcmp(part, "x"))
        c.do_y = 0;
    else if (!strcmp(part, "y"))
        c.do_x = 0;
    else if (!strcmp(part, "none"))
        c.do_x = c.do_y = 0;
    else if (strcmp(part, "both"))
        usage();
    switch (kus) {
    case 200: c.kernel = CW_KERNEL(sleep_200us); break;
    case 500: c.kernel = CW_KERNEL(sleep_500us); break;
    case 1000: c.kernel = CW_KERNEL(sleep_1000us); break;
    case 2000: c.kernel = CW_KERNEL(sleep_2000us); break;
    case 5000: c.kernel = CW_KERNEL(sleep_5000us); break;
    case 20000: c.kernel = CW_KERNEL(sleep_20000us); break;
    default: usage();
    }
    if (steps < 1 || mib < 1)
        usage();
    c.bytes = kib > 0 ? (size_t)kib << 10 : (size_t)mib << 20;

    if (c.mode == 'p') {
        CHECK(cudaStreamCreate(&c.s1)); /* blocking: the legacy stream waits for it */
        c.pageable = malloc(c.bytes);
        if (!c.pageable)
            CW_DIE("out of memory");
        memset(c.pageable, 1, c.bytes);
    } else {
        CHECK(cudaStreamCreateWithFlags(&c.s0, cudaStreamNonBlocking));
        CHECK(cudaStreamCreateWithFlags(&c.s1, cudaStreamNonBlocking));
        CHECK(cudaMallocHost(&c.pinned, c.bytes));
    }
    CHECK(cudaMalloc(&c.dev, c.bytes));
    CHECK(cudaEventCreateWithFlags(&c.e, cudaEventDisableTiming));
    for (int i = 0; i < 4; i++)
        CHECK(cudaEventCreate(&c.ev[i]));

    uint64_t *us = calloc((size_t)steps, sizeof *us);
    if (!us)
        CW_DIE("out of memory");
    for (long w = 0; w < warmup; w++) {
        nvtxRangePushA("warmup");
        int dx = c.do_x, dy = c.do_y;
        c.do_x = c.do_y = 1; /* every operation once, whatever --part says */
        one_step(&c);
        c.do_x = dx;
        c.do_y = dy;
        nvtxRangePop();
    }
    for (long s = 0; s < steps; s++) {
        nvtxRangePushA("step");
        uint64_t t0 = now_ns();
        one_step(&c);
        us[s] = (now_ns() - t0) / 1000;
        nvtxRangePop();
    }
    CHECK(cudaDeviceSynchronize());

    uint64_t *sorted = malloc((size_t)steps * sizeof *sorted);
    if (!sorted)
        CW_DIE("out of memory");
    memcpy(sorted, us, (size_t)steps * sizeof *sorted);
    qsort(sorted, (size_t)steps, sizeof *sorted, cmp_u64);
    int cp = c.mode == 'a' || c.mode == 'b' || c.mode == 'p';
    printf("overlap mode=%c part=%s steps=%ld warmup=%ld copy_bytes=%zu kernel_us=%ld x=%s y=kernel "
           "timing_events=%d step_us_min=%llu step_us_median=%llu step_us_max=%llu\n",
           c.mode, part, steps, warmup, cp ? c.bytes : (size_t)0, kus, cp ? "copy" : "kernel",
           c.timing, (unsigned long long)sorted[0],
           (unsigned long long)sorted[(steps - 1) / 2], (unsigned long long)sorted[steps - 1]);
    free(sorted);
    free(us);
    for (int i = 0; i < 4; i++)
        CHECK(cudaEventDestroy(c.ev[i]));
    CHECK(cudaEventDestroy(c.e));
    CHECK(cudaFree(c.dev));
    if (c.pinned)
        CHECK(cudaFreeHost(c.pinned));
    free(c.pageable);
    if (c.s0)
        CHECK(cudaStreamDestroy(c.s0));
    CHECK(cudaStreamDestroy(c.s1));
    cw_dump_counters();
    return 0;
}
