/*
 * dlsym_driver N
 *
 * Uses the driver API the way a program that loads it by hand does:
 * dlopen("libcuda.so.1") and dlsym of the exported (versioned) names
 * cuInit, cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel,
 * cuStreamSynchronize, cuMemcpyHtoD_v2 (plus cuMemAlloc_v2/cuMemFree_v2 for
 * the copy's destination).  Launches N kernels ("sleep_1us") on the legacy
 * default stream, copies 1 KiB host->device, synchronizes.
 */
#include "cw_prog.h"
#include "cw_cuda.h"

#define SYM(h, name) ((__typeof__(name) *)sym(h, #name))

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p)
        CW_DIE("dlsym(%s) failed: %s", name, dlerror());
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        CW_DIE("usage: dlsym_driver N");
    long n = cw_arg(argc, argv, 1, 0);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        CW_DIE("dlopen(libcuda.so.1) failed: %s", dlerror());
    __typeof__(cuInit) *init = SYM(h, cuInit);
    __typeof__(cuModuleLoadData) *load = SYM(h, cuModuleLoadData);
    __typeof__(cuModuleGetFunction) *getfn = SYM(h, cuModuleGetFunction);
    __typeof__(cuLaunchKernel) *launch = SYM(h, cuLaunchKernel);
    __typeof__(cuStreamSynchronize) *sync = SYM(h, cuStreamSynchronize);
    __typeof__(cuMemcpyHtoD_v2) *htod = SYM(h, cuMemcpyHtoD_v2);
    __typeof__(cuMemAlloc_v2) *alloc = SYM(h, cuMemAlloc_v2);
    __typeof__(cuMemFree_v2) *release = SYM(h, cuMemFree_v2);

    static const unsigned long long image[2] = { 0x00100001ba55ed50ULL, 0 };
    static char host[1024];
    CUmodule mod;
    CUfunction f;
    CUdeviceptr dev;
    CUresult r;
    printf("cuInit=%d\n", r = init(0));
    if (r) CW_DIE("cuInit failed");
    printf("cuModuleLoadData=%d\n", r = load(&mod, image));
    if (r) CW_DIE("cuModuleLoadData failed");
    printf("cuModuleGetFunction=%d\n", r = getfn(&f, mod, "sleep_1us"));
    if (r) CW_DIE("cuModuleGetFunction failed");
    printf("cuMemAlloc_v2=%d\n", r = alloc(&dev, sizeof host));
    if (r) CW_DIE("cuMemAlloc_v2 failed");
    long ok = 0;
    for (long i = 0; i < n; i++) {
        int arg = (int)i;
        void *params[] = { &arg };
        if ((r = launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL)) != CUDA_SUCCESS)
            CW_DIE("cuLaunchKernel #%ld failed: %d", i, r);
        ok++;
    }
    printf("launches=%ld\n", ok);
    printf("cuMemcpyHtoD_v2=%d\n", r = htod(dev, host, sizeof host));
    if (r) CW_DIE("cuMemcpyHtoD_v2 failed");
    printf("cuStreamSynchronize=%d\n", r = sync(NULL));
    if (r) CW_DIE("cuStreamSynchronize failed");
    printf("cuMemFree_v2=%d\n", r = release(dev));
    if (r) CW_DIE("cuMemFree_v2 failed");
    cw_dump_counters();
    return 0;
}
