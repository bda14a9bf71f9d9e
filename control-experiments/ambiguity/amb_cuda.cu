// amb_cuda.cu: the ambiguity benchmark's workload (scenarios.h) on real CUDA. Each kernel spins on
// the GPU's global timer for the duration its name states (kernels.h: `_sleep_<N>us`); the device
// hog reserves the most dynamic shared memory a block can have on every SM, so the victim cannot
// start beside it. Built by run.sh --cuda with nvcc -cudart=shared.
#include <cuda_runtime.h>
#include <cstdlib>
#include <cstring>

#include "kernels.h"

__device__ void amb_spin_ns(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

__device__ int amb_sink;

#define AMB_KERNEL(id, name)                                                                       \
    __global__ void id(unsigned long long ns)                                                      \
    {                                                                                              \
        amb_spin_ns(ns);                                                                           \
        if (threadIdx.x == 0)                                                                      \
            atomicAdd(&amb_sink, 1);                                                               \
    }
AMB_KERNELS(AMB_KERNEL)
#undef AMB_KERNEL

static void amb_launch(int k, cudaStream_t s);
#define AMB_DEVICE_CONTENTION 1
#include "scenarios.h"

typedef void (*amb_fn)(unsigned long long);
#define AMB_ENTRY(id, name) { id, name },
static const struct {
    amb_fn fn;
    const char *name;
} amb_table[] = { AMB_KERNELS(AMB_ENTRY) };
#undef AMB_ENTRY

static int amb_sms, amb_smem;

/* The duration a kernel's name states (`_sleep_<N>us`), in ns. */
static unsigned long long amb_ns(const char *name)
{
    const char *p = strstr(name, "_sleep_");
    return p ? strtoull(p + 7, NULL, 10) * 1000ull : 0;
}

static void amb_launch(int k, cudaStream_t s)
{
    unsigned long long ns = amb_ns(amb_table[k].name);
    if (k == AMB_K_bz_hog) {
        // One block per SM, each holding the most shared memory a block may: nothing else fits.
        amb_table[k].fn<<<amb_sms, 32, amb_smem, s>>>(ns);
    } else {
        amb_table[k].fn<<<1, 32, 0, s>>>(ns);
    }
    AMB_CK(cudaGetLastError());
}

int main(int argc, char **argv)
{
    cudaDeviceProp prop;
    AMB_CK(cudaGetDeviceProperties(&prop, 0));
    amb_sms = prop.multiProcessorCount;
    amb_smem = (int)prop.sharedMemPerBlockOptin;
    AMB_CK(cudaFuncSetAttribute(bz_hog, cudaFuncAttributeMaxDynamicSharedMemorySize, amb_smem));
    // Warm up: load the module and make every kernel resident before anything is measured.
    for (int k = 0; k < AMB_NK; k++)
        amb_table[k].fn<<<1, 32>>>(0);
    AMB_CK(cudaDeviceSynchronize());
    return amb_main(argc, argv);
}
