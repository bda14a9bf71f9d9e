/*
 * rtld_local [N]
 *
 * dlopen("libapp_cuda.so", RTLD_NOW | RTLD_LOCAL) - a library that links the
 * runtime, like a Python extension module - and call its app_run(N) (default
 * 100), which launches N kernels through cudaLaunchKernel and synchronizes.
 * The program itself links no CUDA library.
 */
#include "cw_prog.h"

int main(int argc, char **argv)
{
    long n = cw_arg(argc, argv, 1, 100);
    void *h = dlopen("libapp_cuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        CW_DIE("dlopen(libapp_cuda.so) failed: %s", dlerror());
    int (*app_run)(int) = (int (*)(int))dlsym(h, "app_run");
    if (!app_run)
        CW_DIE("dlsym(app_run) failed: %s", dlerror());
    int r = app_run((int)n);
    printf("app_run=%d\n", r);
    if (r != n)
        CW_DIE("app_run(%ld) returned %d", n, r);
    cw_dump_counters();
    return 0;
}
