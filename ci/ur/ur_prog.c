/*
 * ur_prog - real Unified Runtime work on a CPU, through the real UR loader
 * (libur_loader.so.0 of the PyPI wheel intel-cmplr-lib-ur) and its built-in
 * OpenCL adapter, on the first CPU device of an OpenCL platform (PoCL in CI).
 * See ci/ur/README.md.
 *
 *   usage: ur_prog [N [STEPS]]   N kernel launches, default 10 (1..1000000);
 *                                STEPS (default 0) more NVTX-ranged steps (below)
 *
 * Linked against libur_loader.so.0 (not dlopened), so that a preloaded tracer
 * interposes on its ur* symbols.  What it does, in order (every ur* call goes
 * through UR(), which counts it and stops the program on any error):
 *   loader config create, loader init, config release; adapters (get, backend
 *   of each); platforms and the first CPU device of the OpenCL adapter; its
 *   name; context; in-order queue; one buffer of ELEMS ints;
 *   program: the OpenCL C source below is compiled by the OpenCL ICD loader
 *   in the UR context's native cl_context (UR has no create-from-source, PoCL
 *   takes no SPIR-V), its binary is read back and handed to
 *   urProgramCreateWithBinary + urProgramBuild;
 *   kernel create; 1 fill (whole buffer := FILL), 2 writes (the first half,
 *   a quarter each, := index), N launches of add_inc(buf, 1) with the
 *   arguments given at launch (UR 0.12 has no urKernelSetArg* and no
 *   urEnqueueKernelLaunch: urEnqueueKernelLaunchWithArgsExp), the last one
 *   with an event, 1 urEventWait on it; with STEPS, a second in-order queue
 *   and buffer, then STEPS steps, each an NVTX range "step" holding one
 *   non-blocking write of the whole second buffer on the second queue (with
 *   an event) beside N launches on the first, 1 urEventWait on the write's
 *   event, its urEventRelease and 1 urQueueFinish of the first queue (so that
 *   `causeway control` has steps, copies and kernels to compare); 3 blocking
 *   reads (halves: E/2, E/4,
 *   E/4), 1 urQueueFinish; check every element; release everything, adapters
 *   included, and urLoaderTearDown.
 * Prints one key=value line per fact, then call.<entry point>=<count> for
 * every UR entry point it called (its own count), then result=ok last.
 * Exit status: 0 ok, 1 a UR or OpenCL error (printed on stderr), 2 wrong
 * results, 3 no CPU device through the OpenCL adapter, 64 bad arguments.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ur_min.h"
#include <nvtx3/nvToolsExt.h>

#define ELEMS 4096
#define FILL 100
#define MAX_ADAPTERS 16
#define MAX_PLATFORMS 16

static const char kernel_src[] =
    "__kernel void add_inc(__global int *a, int inc) {\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] += inc;\n"
    "}\n";

/* Every UR entry point the program may call, in the order it first calls them. */
#define UR_CALLS(X)                                                                               \
    X(urLoaderConfigCreate) X(urLoaderInit) X(urLoaderConfigRelease) X(urAdapterGet)              \
    X(urAdapterGetInfo) X(urPlatformGet) X(urDeviceGet) X(urPlatformGetInfo) X(urDeviceGetInfo)   \
    X(urContextCreate) X(urQueueCreate) X(urMemBufferCreate) X(urContextGetNativeHandle)          \
    X(urDeviceGetNativeHandle) X(urProgramCreateWithBinary) X(urProgramBuild)                     \
    X(urProgramGetBuildInfo) X(urKernelCreate) X(urEnqueueMemBufferFill)                          \
    X(urEnqueueMemBufferWrite) X(urEnqueueKernelLaunchWithArgsExp) X(urEventWait)                 \
    X(urEnqueueMemBufferRead) X(urQueueFinish) X(urEventRelease) X(urKernelRelease)               \
    X(urProgramRelease) X(urMemRelease) X(urQueueRelease) X(urContextRelease) X(urAdapterRelease) \
    X(urLoaderTearDown)

#define ENUM_CALL(f) C_##f,
#define NAME_CALL(f) #f,
enum { UR_CALLS(ENUM_CALL) C_COUNT };
static const char *const call_names[C_COUNT] = {UR_CALLS(NAME_CALL)};
static unsigned long calls[C_COUNT];

static ur_adapter_handle_t adapters[MAX_ADAPTERS];
static uint32_t n_adapters;
static ur_adapter_handle_t cur_adapter; /* for urAdapterGetLastError */

static const char *ur_result_name(ur_result_t r) {
    switch (r) {
#define R(x) \
    case x:  \
        return #x;
        R(UR_RESULT_SUCCESS)
        R(UR_RESULT_ERROR_INVALID_OPERATION)
        R(UR_RESULT_ERROR_INVALID_QUEUE)
        R(UR_RESULT_ERROR_INVALID_VALUE)
        R(UR_RESULT_ERROR_INVALID_CONTEXT)
        R(UR_RESULT_ERROR_INVALID_PLATFORM)
        R(UR_RESULT_ERROR_INVALID_BINARY)
        R(UR_RESULT_ERROR_INVALID_PROGRAM)
        R(UR_RESULT_ERROR_INVALID_MEM_OBJECT)
        R(UR_RESULT_ERROR_INVALID_EVENT)
        R(UR_RESULT_ERROR_INVALID_WORK_GROUP_SIZE)
        R(UR_RESULT_ERROR_COMPILER_NOT_AVAILABLE)
        R(UR_RESULT_ERROR_DEVICE_NOT_FOUND)
        R(UR_RESULT_ERROR_INVALID_DEVICE)
        R(UR_RESULT_ERROR_DEVICE_LOST)
        R(UR_RESULT_ERROR_INVALID_WORK_DIMENSION)
        R(UR_RESULT_ERROR_INVALID_KERNEL)
        R(UR_RESULT_ERROR_INVALID_KERNEL_NAME)
        R(UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
        R(UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
        R(UR_RESULT_ERROR_MEM_OBJECT_ALLOCATION_FAILURE)
        R(UR_RESULT_ERROR_INVALID_PROGRAM_EXECUTABLE)
        R(UR_RESULT_ERROR_UNINITIALIZED)
        R(UR_RESULT_ERROR_OUT_OF_HOST_MEMORY)
        R(UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
        R(UR_RESULT_ERROR_OUT_OF_RESOURCES)
        R(UR_RESULT_ERROR_PROGRAM_BUILD_FAILURE)
        R(UR_RESULT_ERROR_UNSUPPORTED_VERSION)
        R(UR_RESULT_ERROR_UNSUPPORTED_FEATURE)
        R(UR_RESULT_ERROR_INVALID_ARGUMENT)
        R(UR_RESULT_ERROR_INVALID_NULL_HANDLE)
        R(UR_RESULT_ERROR_INVALID_NULL_POINTER)
        R(UR_RESULT_ERROR_INVALID_SIZE)
        R(UR_RESULT_ERROR_INVALID_ENUMERATION)
        R(UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
        R(UR_RESULT_ERROR_INVALID_NATIVE_BINARY)
        R(UR_RESULT_ERROR_ADAPTER_SPECIFIC)
        R(UR_RESULT_ERROR_LAYER_NOT_PRESENT)
        R(UR_RESULT_ERROR_IN_EVENT_LIST_EXEC_STATUS)
        R(UR_RESULT_ERROR_DEVICE_NOT_AVAILABLE)
        R(UR_RESULT_ERROR_UNKNOWN)
#undef R
    default:
        return NULL;
    }
}

static void ur_fail(const char *what, ur_result_t r) {
    const char *name = ur_result_name(r);
    if (name)
        fprintf(stderr, "ur_prog: %s failed: %s (%d)\n", what, name, (int)r);
    else
        fprintf(stderr, "ur_prog: %s failed: ur_result_t %d\n", what, (int)r);
    if (r == UR_RESULT_ERROR_ADAPTER_SPECIFIC && cur_adapter) {
        const char *msg = NULL;
        int32_t err = 0;
        if (urAdapterGetLastError(cur_adapter, &msg, &err) == UR_RESULT_SUCCESS && msg)
            fprintf(stderr, "ur_prog: adapter error %d: %s\n", (int)err, msg);
    }
    fflush(stdout);
    exit(1);
}

static void ur_check(const char *what, ur_result_t r) {
    if (r != UR_RESULT_SUCCESS)
        ur_fail(what, r);
}

/* Calls fn(...), counts it, exits on any result but UR_RESULT_SUCCESS. */
#define UR(fn, ...) (calls[C_##fn]++, ur_check(#fn, fn(__VA_ARGS__)))

static void cl_check(const char *what, cl_int err) {
    if (err != CL_SUCCESS) {
        fprintf(stderr, "ur_prog: OpenCL %s failed: %d\n", what, (int)err);
        exit(1);
    }
}

static const char *backend_name(ur_backend_t b) {
    switch (b) {
    case UR_BACKEND_LEVEL_ZERO: return "level_zero";
    case UR_BACKEND_OPENCL: return "opencl";
    case UR_BACKEND_CUDA: return "cuda";
    case UR_BACKEND_HIP: return "hip";
    case UR_BACKEND_NATIVE_CPU: return "native_cpu";
    case UR_BACKEND_OFFLOAD: return "offload";
    default: return "unknown";
    }
}

/* One-line value: no newline or control character reaches the key=value output. */
static void print_kv_str(const char *key, const char *val) {
    printf("%s=", key);
    for (const char *p = val; *p; p++)
        putchar((unsigned char)*p < 0x20 ? ' ' : *p);
    putchar('\n');
}

/* Compiles kernel_src for dev in ctx's native cl_context with the OpenCL ICD loader and
 * returns the device binary (malloc'ed). */
static unsigned char *compile_to_binary(ur_context_handle_t ctx, ur_device_handle_t dev,
                                        size_t *size) {
    ur_native_handle_t nctx = 0, ndev = 0;
    UR(urContextGetNativeHandle, ctx, &nctx);
    UR(urDeviceGetNativeHandle, dev, &ndev);
    cl_context clctx = (cl_context)nctx;
    cl_device_id cldev = (cl_device_id)ndev;

    const char *src = kernel_src;
    cl_int err = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(clctx, 1, &src, NULL, &err);
    cl_check("clCreateProgramWithSource", err);
    err = clBuildProgram(p, 1, &cldev, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(p, cldev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        fprintf(stderr, "ur_prog: build log:\n%s\n", log);
        cl_check("clBuildProgram", err);
    }
    cl_uint ndevs = 0;
    cl_check("clGetProgramInfo(NUM_DEVICES)",
             clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, sizeof ndevs, &ndevs, NULL));
    if (ndevs != 1)
        cl_check("program device count != 1", CL_INVALID_VALUE);
    cl_check("clGetProgramInfo(BINARY_SIZES)",
             clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof *size, size, NULL));
    if (*size == 0)
        cl_check("empty program binary", CL_INVALID_BINARY);
    unsigned char *bin = malloc(*size);
    if (!bin) {
        perror("ur_prog: malloc");
        exit(1);
    }
    cl_check("clGetProgramInfo(BINARIES)",
             clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL));
    cl_check("clReleaseProgram", clReleaseProgram(p));
    return bin;
}

int main(int argc, char **argv) {
    long n = 10;
    setvbuf(stdout, NULL, _IOLBF, 0); /* what was printed survives a crash in a driver */
    long steps = 0;
    if (argc > 3) {
        fprintf(stderr, "usage: %s [N [STEPS]]\n", argv[0]);
        return 64;
    }
    if (argc == 3) {
        char *end = NULL;
        errno = 0;
        steps = strtol(argv[2], &end, 10);
        if (errno || end == argv[2] || *end || steps < 0 || steps > 100000) {
            fprintf(stderr, "ur_prog: STEPS must be an integer in 0..100000, not '%s'\n", argv[2]);
            return 64;
        }
    }
    if (argc >= 2) {
        char *end = NULL;
        errno = 0;
        n = strtol(argv[1], &end, 10);
        if (errno || end == argv[1] || *end || n < 1 || n > 1000000) {
            fprintf(stderr, "ur_prog: N must be an integer in 1..1000000, not '%s'\n", argv[1]);
            return 64;
        }
    }

    /* ---- loader ------------------------------------------------------------ */
    ur_loader_config_handle_t cfg = NULL;
    UR(urLoaderConfigCreate, &cfg);
    UR(urLoaderInit, 0, cfg);
    UR(urLoaderConfigRelease, cfg);

    /* ---- adapters: the OpenCL one ------------------------------------------ */
    UR(urAdapterGet, 0, NULL, &n_adapters);
    if (n_adapters == 0) {
        fprintf(stderr, "ur_prog: no UR adapter has a platform (no OpenCL ICD loader "
                        "libOpenCL.so.1, or no OpenCL driver such as pocl-opencl-icd)\n");
        return 3;
    }
    if (n_adapters > MAX_ADAPTERS)
        n_adapters = MAX_ADAPTERS;
    UR(urAdapterGet, n_adapters, adapters, NULL);
    printf("adapters=%u\n", n_adapters);

    /* ---- first CPU device of an OpenCL platform ----------------------------- */
    ur_platform_handle_t platform = NULL;
    ur_device_handle_t dev = NULL;
    for (uint32_t a = 0; a < n_adapters && !dev; a++) {
        ur_backend_t backend = UR_BACKEND_UNKNOWN;
        cur_adapter = adapters[a];
        UR(urAdapterGetInfo, adapters[a], UR_ADAPTER_INFO_BACKEND, sizeof backend, &backend, NULL);
        if (backend != UR_BACKEND_OPENCL)
            continue;
        uint32_t np = 0;
        ur_platform_handle_t plats[MAX_PLATFORMS];
        UR(urPlatformGet, adapters[a], 0, NULL, &np);
        if (np > MAX_PLATFORMS)
            np = MAX_PLATFORMS;
        if (np == 0)
            continue;
        UR(urPlatformGet, adapters[a], np, plats, NULL);
        for (uint32_t p = 0; p < np && !dev; p++) {
            uint32_t nd = 0;
            UR(urDeviceGet, plats[p], UR_DEVICE_TYPE_CPU, 0, NULL, &nd);
            if (nd == 0)
                continue;
            UR(urDeviceGet, plats[p], UR_DEVICE_TYPE_CPU, 1, &dev, NULL);
            platform = plats[p];
            printf("backend=%s\n", backend_name(backend));
        }
    }
    if (!dev) {
        fprintf(stderr, "ur_prog: no CPU device through the UR OpenCL adapter "
                        "(is an OpenCL CPU driver, e.g. pocl-opencl-icd, installed?)\n");
        return 3;
    }

    char name[512];
    size_t len = 0;
    UR(urPlatformGetInfo, platform, UR_PLATFORM_INFO_NAME, 0, NULL, &len);
    if (len == 0 || len > sizeof name)
        ur_fail("urPlatformGetInfo(NAME) size", UR_RESULT_ERROR_INVALID_SIZE);
    UR(urPlatformGetInfo, platform, UR_PLATFORM_INFO_NAME, len, name, NULL);
    name[len - 1] = 0;
    print_kv_str("platform", name);
    UR(urDeviceGetInfo, dev, UR_DEVICE_INFO_NAME, 0, NULL, &len);
    if (len == 0 || len > sizeof name)
        ur_fail("urDeviceGetInfo(NAME) size", UR_RESULT_ERROR_INVALID_SIZE);
    UR(urDeviceGetInfo, dev, UR_DEVICE_INFO_NAME, len, name, NULL);
    name[len - 1] = 0;
    print_kv_str("device", name);

    /* ---- context, queue, buffer --------------------------------------------- */
    ur_context_handle_t ctx = NULL;
    ur_queue_handle_t q = NULL;
    ur_mem_handle_t buf = NULL;
    UR(urContextCreate, 1, &dev, NULL, &ctx);
    UR(urQueueCreate, ctx, dev, NULL, &q); /* in order */
    UR(urMemBufferCreate, ctx, UR_MEM_FLAG_READ_WRITE, ELEMS * sizeof(int32_t), NULL, &buf);

    /* ---- program, kernel ---------------------------------------------------- */
    size_t bin_size = 0;
    unsigned char *bin = compile_to_binary(ctx, dev, &bin_size);
    const uint8_t *bins[1] = {bin};
    ur_program_handle_t prog = NULL;
    UR(urProgramCreateWithBinary, ctx, 1, &dev, &bin_size, bins, NULL, &prog);
    free(bin);
    calls[C_urProgramBuild]++;
    ur_result_t br = urProgramBuild(ctx, prog, NULL);
    if (br != UR_RESULT_SUCCESS) {
        char log[4096] = "";
        calls[C_urProgramGetBuildInfo]++;
        urProgramGetBuildInfo(prog, dev, UR_PROGRAM_BUILD_INFO_LOG, sizeof log, log, NULL);
        log[sizeof log - 1] = 0;
        fprintf(stderr, "ur_prog: build log:\n%s\n", log);
        ur_fail("urProgramBuild", br);
    }
    printf("program=binary\n"); /* its size varies: PoCL binaries carry cache state */
    ur_kernel_handle_t k = NULL;
    UR(urKernelCreate, prog, "add_inc", &k);

    /* ---- work --------------------------------------------------------------- */
    static int32_t host[ELEMS], back[ELEMS];
    const size_t bytes = sizeof host, half = bytes / 2, quarter = bytes / 4;
    long fills = 0, writes = 0, launches = 0, waits = 0, reads = 0, finishes = 0;

    const int32_t pattern = FILL;
    UR(urEnqueueMemBufferFill, q, buf, &pattern, sizeof pattern, 0, bytes, 0, NULL, NULL);
    fills++;
    for (int i = 0; i < ELEMS; i++)
        host[i] = i;
    UR(urEnqueueMemBufferWrite, q, buf, true, 0, quarter, host, 0, NULL, NULL);
    writes++;
    UR(urEnqueueMemBufferWrite, q, buf, true, quarter, quarter, (char *)host + quarter, 0, NULL,
       NULL);
    writes++;

    const int32_t inc = 1;
    const size_t gsize = ELEMS;
    ur_exp_kernel_arg_properties_t args[2];
    memset(args, 0, sizeof args);
    args[0].stype = UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES;
    args[0].type = UR_EXP_KERNEL_ARG_TYPE_MEM_OBJ;
    args[0].index = 0;
    args[0].size = sizeof(ur_mem_handle_t);
    args[0].value.memObjTuple.hMem = buf;
    args[0].value.memObjTuple.flags = UR_MEM_FLAG_READ_WRITE;
    args[1].stype = UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES;
    args[1].type = UR_EXP_KERNEL_ARG_TYPE_VALUE;
    args[1].index = 1;
    args[1].size = sizeof inc;
    args[1].value.value = &inc;
    ur_event_handle_t last = NULL;
    for (long i = 0; i < n; i++) {
        UR(urEnqueueKernelLaunchWithArgsExp, q, k, 1, NULL, &gsize, NULL, 2, args, NULL, 0, NULL,
           i == n - 1 ? &last : NULL);
        launches++;
    }
    UR(urEventWait, 1, &last);
    waits++;

    if (steps > 0) {
        ur_queue_handle_t q2 = NULL;
        ur_mem_handle_t buf2 = NULL;
        UR(urQueueCreate, ctx, dev, NULL, &q2);
        UR(urMemBufferCreate, ctx, UR_MEM_FLAG_READ_WRITE, bytes, NULL, &buf2);
        for (long s = 0; s < steps; s++) {
            nvtxRangePushA("step");
            ur_event_handle_t copied = NULL;
            UR(urEnqueueMemBufferWrite, q2, buf2, false, 0, bytes, host, 0, NULL, &copied);
            writes++;
            for (long i = 0; i < n; i++) {
                UR(urEnqueueKernelLaunchWithArgsExp, q, k, 1, NULL, &gsize, NULL, 2, args, NULL, 0,
                   NULL, NULL);
                launches++;
            }
            UR(urEventWait, 1, &copied);
            waits++;
            UR(urEventRelease, copied);
            UR(urQueueFinish, q);
            finishes++;
            nvtxRangePop();
        }
        UR(urQueueFinish, q2);
        finishes++;
        UR(urMemRelease, buf2);
        UR(urQueueRelease, q2);
    }

    memset(back, 0xff, sizeof back);
    UR(urEnqueueMemBufferRead, q, buf, true, 0, half, back, 0, NULL, NULL);
    reads++;
    UR(urEnqueueMemBufferRead, q, buf, true, half, quarter, (char *)back + half, 0, NULL, NULL);
    reads++;
    UR(urEnqueueMemBufferRead, q, buf, true, half + quarter, quarter,
       (char *)back + half + quarter, 0, NULL, NULL);
    reads++;
    UR(urQueueFinish, q);
    finishes++;

    long bad = 0;
    for (int i = 0; i < ELEMS; i++) {
        int32_t want = (int32_t)((i < ELEMS / 2 ? i : FILL) + launches);
        if (back[i] != want) {
            if (bad < 5)
                fprintf(stderr, "ur_prog: element %d is %d, want %d\n", i, (int)back[i],
                        (int)want);
            bad++;
        }
    }

    /* ---- release ------------------------------------------------------------ */
    UR(urEventRelease, last);
    UR(urKernelRelease, k);
    UR(urProgramRelease, prog);
    UR(urMemRelease, buf);
    UR(urQueueRelease, q);
    UR(urContextRelease, ctx);
    cur_adapter = NULL;
    for (uint32_t a = 0; a < n_adapters; a++)
        UR(urAdapterRelease, adapters[a]);
    UR(urLoaderTearDown);

    printf("n=%ld\nelements=%d\n", n, ELEMS);
    printf("launches=%ld\nwrites=%ld\nreads=%ld\nfills=%ld\nwaits=%ld\nfinishes=%ld\n", launches,
           writes, reads, fills, waits, finishes);
    for (int c = 0; c < C_COUNT; c++)
        if (calls[c])
            printf("call.%s=%lu\n", call_names[c], calls[c]);
    if (bad) {
        printf("bad=%ld\nresult=wrong\n", bad);
        return 2;
    }
    printf("result=ok\n");
    return 0;
}
