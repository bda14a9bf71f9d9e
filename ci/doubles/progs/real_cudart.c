/*
 * real_cudart LIBPATH
 *
 * dlopen()s the given libcudart.so.13 (meant for NVIDIA's real one from the
 * nvidia-cuda-runtime wheel) with RTLD_NOW | RTLD_GLOBAL and calls, through
 * dlsym: cudaGetDeviceCount, cudaMalloc (16 bytes), cudaMemcpy (16 bytes
 * host->device), cudaStreamCreate, cudaStreamSynchronize(0),
 * cudaEventCreate, cudaDeviceSynchronize, cudaGetLastError.  Prints one line
 * "<name>=<return code>" per call, whatever they return (without a working
 * driver they fail, e.g. 35 = insufficient driver, 36 = driver too old for
 * the call, 100 = no device).  Exits non-zero only if LIBPATH cannot be
 * loaded or lacks a symbol.
 */
#include "cw_prog.h"
#include "cw_cudart.h"

static void *g_h;

static void *sym(const char *name)
{
    void *p = dlsym(g_h, name);
    if (!p)
        CW_DIE("dlsym(%s) failed: %s", name, dlerror());
    return p;
}

#define SYM(name) ((__typeof__(name) *)sym(#name))

int main(int argc, char **argv)
{
    if (argc != 2)
        CW_DIE("usage: real_cudart LIBPATH");
    g_h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!g_h)
        CW_DIE("dlopen(%s) failed: %s", argv[1], dlerror());
    printf("dlopen=ok\n");
    __typeof__(cudaGetDeviceCount) *get_count = SYM(cudaGetDeviceCount);
    __typeof__(cudaMalloc) *malloc_ = SYM(cudaMalloc);
    __typeof__(cudaMemcpy) *memcpy_ = SYM(cudaMemcpy);
    __typeof__(cudaStreamCreate) *stream_create = SYM(cudaStreamCreate);
    __typeof__(cudaStreamSynchronize) *stream_sync = SYM(cudaStreamSynchronize);
    __typeof__(cudaEventCreate) *event_create = SYM(cudaEventCreate);
    __typeof__(cudaDeviceSynchronize) *dev_sync = SYM(cudaDeviceSynchronize);
    __typeof__(cudaGetLastError) *last_error = SYM(cudaGetLastError);

    int count = -1;
    void *dev = NULL;
    static const char host[16] = "causeway";
    cudaStream_t s = NULL;
    cudaEvent_t e = NULL;
    printf("cudaGetDeviceCount=%d\n", get_count(&count));
    printf("cudaMalloc=%d\n", malloc_(&dev, 16));
    printf("cudaMemcpy=%d\n", memcpy_(dev, host, 16, cudaMemcpyHostToDevice));
    printf("cudaStreamCreate=%d\n", stream_create(&s));
    printf("cudaStreamSynchronize=%d\n", stream_sync(NULL));
    printf("cudaEventCreate=%d\n", event_create(&e));
    printf("cudaDeviceSynchronize=%d\n", dev_sync());
    printf("cudaGetLastError=%d\n", last_error());
    cw_dump_counters();
    return 0;
}
