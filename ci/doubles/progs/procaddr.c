/*
 * procaddr N
 *
 * Resolves driver entry points the way CUDA 12+ runtimes and libraries do:
 * dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), use it to obtain
 * "cuGetProcAddress" itself (cudaVersion 12000 -> the 5-argument
 * cuGetProcAddress_v2), and through THAT pointer get
 *   "cuLaunchKernel"       version 12000, flags 2 (per-thread default stream)
 *   "cuStreamSynchronize"  version 12000, flags 0
 *   "cuMemcpyHtoD"         version 13000, flags 2
 * plus the helpers needed to use them.  Launches N kernels with the
 * per-thread pointer and does one copy.  Also asks for an unknown symbol and
 * for a known one at too old a version, and fetches the legacy 4-argument
 * cuGetProcAddress (version 11030) and uses it once.
 *
 * Each lookup prints "<name>(<version>,<flags>)=<result> status=<status>"
 * and "pfn_is_<exported name>=<0|1>" (whether the pointer equals
 * dlsym(handle, exported name)).  The program fails unless the driver's
 * counters show cuLaunchKernel_ptsz == N and cuLaunchKernel == 0.
 */
#include "cw_prog.h"
#include "cw_cuda.h"

static void *g_h;
static PFN_cuGetProcAddress_v12000 g_gpa;

/* Look `name` up through g_gpa and report; returns the pointer. */
static void *lookup(const char *name, int version, unsigned flags, const char *expect)
{
    void *pfn = (void *)0x1;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
    CUresult r = g_gpa(name, &pfn, version, flags, &st);
    printf("%s(%d,%u)=%d status=%d\n", name, version, flags, r, (int)st);
    if (expect)
        printf("pfn_is_%s=%d\n", expect, pfn != NULL && pfn == dlsym(g_h, expect));
    else
        printf("pfn_null=%d\n", pfn == NULL);
    return pfn;
}

#define MUST(call)                                                             \
    do {                                                                       \
        CUresult r_ = (call);                                                  \
        if (r_ != CUDA_SUCCESS)                                                \
            CW_DIE("%s failed: %d", #call, r_);                                \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 2)
        CW_DIE("usage: procaddr N");
    long n = cw_arg(argc, argv, 1, 0);
    g_h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g_h)
        CW_DIE("dlopen(libcuda.so.1) failed: %s", dlerror());
    PFN_cuGetProcAddress_v12000 boot =
        (PFN_cuGetProcAddress_v12000)dlsym(g_h, "cuGetProcAddress_v2");
    if (!boot)
        CW_DIE("dlsym(cuGetProcAddress_v2) failed: %s", dlerror());

    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    CUresult r = boot("cuGetProcAddress", &p, 12000, 0, &st);
    printf("cuGetProcAddress_v2(cuGetProcAddress,12000,0)=%d status=%d\n", r, (int)st);
    printf("pfn_is_cuGetProcAddress_v2=%d\n", p != NULL && p == dlsym(g_h, "cuGetProcAddress_v2"));
    if (r || !p)
        CW_DIE("bootstrap lookup failed");
    g_gpa = (PFN_cuGetProcAddress_v12000)p;

    __typeof__(cuInit) *init = lookup("cuInit", 12000, 0, "cuInit");
    __typeof__(cuModuleLoadData) *load = lookup("cuModuleLoadData", 12000, 0, "cuModuleLoadData");
    __typeof__(cuModuleGetFunction) *getfn = lookup("cuModuleGetFunction", 12000, 0, "cuModuleGetFunction");
    __typeof__(cuMemAlloc_v2) *alloc = lookup("cuMemAlloc", 12000, 0, "cuMemAlloc_v2");
    __typeof__(cuLaunchKernel_ptsz) *launch = lookup("cuLaunchKernel", 12000, 2, "cuLaunchKernel_ptsz");
    __typeof__(cuStreamSynchronize) *sync = lookup("cuStreamSynchronize", 12000, 0, "cuStreamSynchronize");
    __typeof__(cuMemcpyHtoD_v2_ptds) *htod = lookup("cuMemcpyHtoD", 13000, 2, "cuMemcpyHtoD_v2_ptds");
    __typeof__(cuStreamSynchronize_ptsz) *sync_pt = lookup("cuStreamSynchronize", 12000, 2, "cuStreamSynchronize_ptsz");
    lookup("cuNoSuchThing", 12000, 0, NULL);
    lookup("cuMemcpyHtoD", 3000, 0, NULL);
    PFN_cuGetProcAddress_v11030 gpa_old = lookup("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    if (!init || !load || !getfn || !alloc || !launch || !sync || !htod || !sync_pt || !gpa_old)
        CW_DIE("a lookup failed");

    /* The legacy 4-argument entry point works too. */
    void *init2 = NULL;
    r = gpa_old("cuInit", &init2, 12000, 0);
    printf("cuGetProcAddress(cuInit,12000,0)=%d\n", r);
    printf("pfn_is_cuInit=%d\n", init2 != NULL && init2 == dlsym(g_h, "cuInit"));

    static const unsigned long long image[2] = { 0x00100001ba55ed50ULL, 0 };
    static char host[256];
    CUmodule mod;
    CUfunction f;
    CUdeviceptr dev;
    MUST(init(0));
    MUST(load(&mod, image));
    MUST(getfn(&f, mod, "sleep_0us"));
    MUST(alloc(&dev, sizeof host));
    for (long i = 0; i < n; i++)
        MUST(launch(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL));
    MUST(htod(dev, host, sizeof host));
    MUST(sync_pt(NULL));
    MUST(sync(NULL));
    printf("launches=%ld\n", n);

    long (*count)(const char *) = (long (*)(const char *))dlsym(g_h, "cwd_count");
    if (!count)
        CW_DIE("libcuda.so.1 is not the causeway double (no cwd_count)");
    long pt = count("cuLaunchKernel_ptsz"), legacy = count("cuLaunchKernel");
    printf("check cuLaunchKernel_ptsz=%ld cuLaunchKernel=%ld\n", pt, legacy);
    if (pt != n || legacy != 0)
        CW_DIE("expected cuLaunchKernel_ptsz=%ld and cuLaunchKernel=0", n);
    cw_dump_counters();
    return 0;
}
