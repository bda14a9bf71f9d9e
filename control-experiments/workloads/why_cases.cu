// why_cases.cu: programs that each inject exactly one cause of lateness at a known place, for
// control-experiments/device/why.sh (issue 23). Kernel names name the case; `causeway why --kernel`
// on each *_late / *_consumer / *_victim kernel must name the cause injected:
//   host      h_late starts late because the host thread slept 5 ms before launching it;
//   dep       d_consumer (stream B) waits on an event recorded after d_long (5 ms, stream A);
//   device    v_victim (stream B) is ready but cannot start: v_hog fills every SM (shared memory)
//             for 5 ms on stream A, unrelated;
//   reuse     an event recorded after r_long is destroyed; a new event gets the same handle (printed:
//             handle_reused=1) and a wait on it, never recorded, is a no-op: r_consumer does not
//             wait for r_long (no event-wait edge);
//   lossy     (`why_cases lossy`, run with a small overwrite ring) the record of the event
//             m_consumer waits on is overwritten by 40 000 later launches: the chain is incomplete.
// Prints what it did and "checksum=..."; exits non-zero on a CUDA error.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#define CK(call) do { cudaError_t e_ = (call); if (e_) { fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); exit(1); } } while (0)

__device__ void spin_ns(unsigned long long ns) {
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    unsigned long long t = t0;
    while (t - t0 < ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
}

// Dynamic shared memory is only reserved (the device case's occupancy), never touched.
#define SPIN_KERNEL(name) \
    __global__ void name(unsigned long long ns, int *out) { \
        spin_ns(ns); \
        if (threadIdx.x == 0) atomicAdd(out, 1); \
    }

SPIN_KERNEL(h_first)
SPIN_KERNEL(h_late)
SPIN_KERNEL(d_long)
SPIN_KERNEL(d_consumer)
SPIN_KERNEL(v_hog)
SPIN_KERNEL(v_victim)
SPIN_KERNEL(r_long)
SPIN_KERNEL(r_consumer)
SPIN_KERNEL(m_long)
SPIN_KERNEL(m_filler)
SPIN_KERNEL(m_consumer)

int main(int argc, char **argv) {
    bool lossy = argc > 1 && !strcmp(argv[1], "lossy");
    int *out;
    CK(cudaMalloc(&out, sizeof(int)));
    CK(cudaMemset(out, 0, sizeof(int)));
    cudaStream_t a, b;
    CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    const unsigned long long ms5 = 5000000ull, us20 = 20000ull;
    int launched = 0;
    if (lossy) {
        cudaEvent_t e;
        CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        m_long<<<1, 32, 0, a>>>(ms5, out); launched++;
        CK(cudaEventRecord(e, a));
        for (int i = 0; i < 40000; i++) { m_filler<<<1, 32, 0, b>>>(0, out); launched++; }
        CK(cudaStreamSynchronize(b));
        CK(cudaStreamWaitEvent(b, e, 0));
        m_consumer<<<1, 32, 0, b>>>(us20, out); launched++;
        CK(cudaDeviceSynchronize());
    } else {
        // host: a 5 ms sleep on the host between two launches on one stream.
        h_first<<<1, 32, 0, a>>>(us20, out); launched++;
        CK(cudaStreamSynchronize(a));
        usleep(5000);
        h_late<<<1, 32, 0, a>>>(us20, out); launched++;
        CK(cudaDeviceSynchronize());

        // dep: B waits on an event recorded after a 5 ms kernel on A.
        cudaEvent_t e;
        CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        d_long<<<1, 32, 0, a>>>(ms5, out); launched++;
        CK(cudaEventRecord(e, a));
        CK(cudaStreamWaitEvent(b, e, 0));
        d_consumer<<<1, 32, 0, b>>>(us20, out); launched++;
        CK(cudaDeviceSynchronize());

        // device: v_hog holds every SM's shared memory for 5 ms; v_victim (unrelated) cannot fit.
        int dev = 0, sms = 0, smem_optin = 0;
        CK(cudaGetDevice(&dev));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
        int hog_smem = smem_optin;               // one block per SM
        int victim_smem = smem_optin / 2;        // cannot sit beside a hog block
        CK(cudaFuncSetAttribute(v_hog, cudaFuncAttributeMaxDynamicSharedMemorySize, hog_smem));
        CK(cudaFuncSetAttribute(v_victim, cudaFuncAttributeMaxDynamicSharedMemorySize, victim_smem));
        v_hog<<<sms, 32, hog_smem, a>>>(ms5, out); launched += sms;
        v_victim<<<1, 32, victim_smem, b>>>(us20, out); launched++;
        CK(cudaDeviceSynchronize());

        // reuse: an event handle destroyed and created again, the new one never recorded.
        cudaEvent_t old_e, new_e;
        CK(cudaEventCreateWithFlags(&old_e, cudaEventDisableTiming));
        r_long<<<1, 32, 0, a>>>(ms5, out); launched++;
        CK(cudaEventRecord(old_e, a));
        void *old_handle = (void *)old_e;
        CK(cudaEventDestroy(old_e));
        CK(cudaEventCreateWithFlags(&new_e, cudaEventDisableTiming));
        printf("handle_reused=%d\n", (void *)new_e == old_handle ? 1 : 0);
        CK(cudaStreamWaitEvent(b, new_e, 0));
        r_consumer<<<1, 32, 0, b>>>(us20, out); launched++;
        CK(cudaDeviceSynchronize());
        CK(cudaEventDestroy(new_e));
        CK(cudaEventDestroy(e));
    }
    int got = 0;
    CK(cudaMemcpy(&got, out, sizeof(int), cudaMemcpyDeviceToHost));
    printf("checksum=%d expected=%d\n", got, launched);
    return got == launched ? 0 : 1;
}
