// multistream.cu: a two-stream CUDA workload with known kernel durations, for comparing causeway's
// level-3 device-timing backends (cupti, events) against a CUPTI reference.
//
// Two non-blocking streams A and B. Per iteration i (--iters N):
//   A: cudaMemcpyAsync H2D of --copy-mib MiB (8) from pinned memory; compute_a (folds a strided
//      sample of the copied buffer into outA[i] and spins until --a-us, 50 us, have passed since it
//      started: the sampling, ~20 us on an H200, counts towards them); cudaEventRecord(ev, A);
//      --tiny K (2) tiny_inc kernels (no spin: about 1 us on the device);
//   B: long_b (spins --b-us, 80 us; writes outB[i]); cudaStreamWaitEvent(B, ev); short_b (spins
//      --short-us, 10 us; outC[i] = outA[i] * 3 + outB[i]: reads A's result, so it needs the wait);
//      cudaMemsetAsync of 1 MiB on B; one tiny_mix kernel (folds a byte of the memset into outC[i]);
//   then cudaStreamSynchronize(A) and cudaStreamSynchronize(B).
// One NVTX range "iter" per iteration (when the nvtx3 header is there and NO_NVTX is not defined).
// At the end outC and the tiny_inc counter are copied back (cudaMemcpy D2H) and the program prints
//     checksum: fnv=<16 hex> iters=<N> tiny=<K> counter=<N*K>
// which depends only on the arguments (never on timing), so it must be identical with and without
// a tracer. Kernels per run: N each of compute_a, long_b, short_b, tiny_mix; N*K tiny_inc; copies: N
// H2D + 2 D2H; memsets: N + 3 (the three output buffers are cleared once at the start).
//
// Spinning: --timer globaltimer (default; %globaltimer, ns of wall-clock time; its update
// granularity can be ~1 us on some GPUs) or --timer clock64 (SM cycles: duration x --clock-ghz).
// A spin kernel runs one block of 64 threads; its device time is the spin plus about 1 us (H200, CUPTI:
// long_b 80.7 us, short_b 11.0 us, tiny kernels 0.8-0.9 us).
//
// Build (backends.sh does this): nvcc -O2 -arch=sm_90 -cudart=static -lineinfo -o multistream multistream.cu
// Exit: 0, or 1 on a CUDA error or bad arguments (the error is printed).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if !defined(NO_NVTX) && defined(__has_include)
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define HAVE_NVTX 1
#endif
#endif
#ifndef HAVE_NVTX
#define HAVE_NVTX 0
#endif

#define CK(call)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "multistream: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,         \
              cudaGetErrorString(e_));                                                   \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static constexpr size_t MEMSET_BYTES = 1u << 20;
static constexpr int SPIN_THREADS = 64;
static constexpr int SAMPLES_PER_THREAD = 64;

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The time spin_until() counts from: %globaltimer ns (use_clock == 0) or SM cycles (clock64).
__device__ __forceinline__ uint64_t spin_now(int use_clock) {
  return use_clock ? (uint64_t)clock64() : global_ns();
}

// Spins this thread until `amount` has passed since t0 (a spin_now() value).
__device__ __forceinline__ void spin_until(uint64_t t0, uint64_t amount, int use_clock) {
  while (spin_now(use_clock) - t0 < amount) {
  }
}

__device__ __forceinline__ void spin(uint64_t amount, int use_clock) {
  spin_until(spin_now(use_clock), amount, use_clock);
}

__device__ __forceinline__ uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// Folds a fixed sample of the copied buffer into outA[iter] (atomicAdd: order-independent, exact).
__global__ void compute_a(const uint32_t *in, size_t n, uint32_t iter, uint64_t amount,
                          int use_clock, uint32_t *outA) {
  uint64_t t0 = spin_now(use_clock); // the sampling below counts towards the spin
  uint32_t acc = 0;
  size_t stride = n / ((size_t)blockDim.x * SAMPLES_PER_THREAD);
  if (stride == 0) stride = 1;
  for (int s = 0; s < SAMPLES_PER_THREAD; s++) {
    size_t i = ((size_t)s * blockDim.x + threadIdx.x) * stride;
    if (i < n) acc += mix32(in[i] ^ iter);
  }
  spin_until(t0, amount, use_clock);
  atomicAdd(&outA[iter], acc);
}

__global__ void long_b(uint32_t iter, uint64_t amount, int use_clock, uint32_t *outB) {
  spin(amount, use_clock);
  if (threadIdx.x == 0) outB[iter] = mix32(iter * 2654435761u + 12345u);
}

__global__ void short_b(const uint32_t *outA, const uint32_t *outB, uint32_t iter, uint64_t amount,
                        int use_clock, uint32_t *outC) {
  spin(amount, use_clock);
  if (threadIdx.x == 0) outC[iter] = outA[iter] * 3u + outB[iter];
}

__global__ void tiny_inc(uint32_t *counter) {
  if (threadIdx.x == 0) counter[0] += 1u;
}

__global__ void tiny_mix(const uint8_t *m, uint32_t iter, uint32_t *outC) {
  if (threadIdx.x == 0) outC[iter] ^= (uint32_t)m[(iter * 4099u) % MEMSET_BYTES] << 24;
}

static void usage(void) {
  fprintf(stderr,
          "usage: multistream [--iters N] [--tiny K] [--copy-mib M] [--a-us US] [--b-us US]\n"
          "                   [--short-us US] [--timer globaltimer|clock64] [--clock-ghz G]\n");
  exit(1);
}

int main(int argc, char **argv) {
  int iters = 200, tiny = 2, copy_mib = 8;
  double a_us = 50, b_us = 80, short_us = 10, clock_ghz = 1.98;
  int use_clock = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) usage();
    if (!strcmp(a, "--iters")) iters = atoi(v);
    else if (!strcmp(a, "--tiny")) tiny = atoi(v);
    else if (!strcmp(a, "--copy-mib")) copy_mib = atoi(v);
    else if (!strcmp(a, "--a-us")) a_us = atof(v);
    else if (!strcmp(a, "--b-us")) b_us = atof(v);
    else if (!strcmp(a, "--short-us")) short_us = atof(v);
    else if (!strcmp(a, "--clock-ghz")) clock_ghz = atof(v);
    else if (!strcmp(a, "--timer")) {
      if (!strcmp(v, "clock64")) use_clock = 1;
      else if (!strcmp(v, "globaltimer")) use_clock = 0;
      else usage();
    } else usage();
    i++;
  }
  if (iters <= 0 || tiny < 0 || copy_mib <= 0 || a_us < 0 || b_us < 0 || short_us < 0 ||
      clock_ghz <= 0)
    usage();
  // Spin amounts in the unit spin() counts: ns (globaltimer) or cycles (clock64).
  double unit = use_clock ? clock_ghz * 1000.0 : 1000.0; // per us
  uint64_t amt_a = (uint64_t)(a_us * unit), amt_b = (uint64_t)(b_us * unit),
           amt_s = (uint64_t)(short_us * unit);

  size_t copy_bytes = (size_t)copy_mib << 20;
  size_t words = copy_bytes / sizeof(uint32_t);
  uint32_t *host = NULL;
  CK(cudaMallocHost((void **)&host, copy_bytes));
  for (size_t i = 0; i < words; i++) host[i] = (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 7);

  uint32_t *dIn, *outA, *outB, *outC, *counter;
  uint8_t *dM;
  CK(cudaMalloc((void **)&dIn, copy_bytes));
  CK(cudaMalloc((void **)&outA, iters * sizeof(uint32_t)));
  CK(cudaMalloc((void **)&outB, iters * sizeof(uint32_t)));
  CK(cudaMalloc((void **)&outC, (iters + 1) * sizeof(uint32_t)));
  CK(cudaMalloc((void **)&dM, MEMSET_BYTES));
  counter = outC + iters; // the last word of outC
  CK(cudaMemset(outA, 0, iters * sizeof(uint32_t)));
  CK(cudaMemset(outB, 0, iters * sizeof(uint32_t)));
  CK(cudaMemset(outC, 0, (iters + 1) * sizeof(uint32_t)));

  cudaStream_t A, B;
  cudaEvent_t ev;
  CK(cudaStreamCreateWithFlags(&A, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&B, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  CK(cudaDeviceSynchronize());

  printf("multistream: iters=%d tiny=%d copy_mib=%d a_us=%g b_us=%g short_us=%g timer=%s nvtx=%s\n",
         iters, tiny, copy_mib, a_us, b_us, short_us, use_clock ? "clock64" : "globaltimer",
         HAVE_NVTX ? "on" : "off");
  for (int it = 0; it < iters; it++) {
#if HAVE_NVTX
    nvtxRangePushA("iter");
#endif
    uint32_t u = (uint32_t)it;
    CK(cudaMemcpyAsync(dIn, host, copy_bytes, cudaMemcpyHostToDevice, A));
    compute_a<<<1, SPIN_THREADS, 0, A>>>(dIn, words, u, amt_a, use_clock, outA);
    CK(cudaGetLastError());
    CK(cudaEventRecord(ev, A));
    for (int k = 0; k < tiny; k++) tiny_inc<<<1, 32, 0, A>>>(counter);
    CK(cudaGetLastError());

    long_b<<<1, SPIN_THREADS, 0, B>>>(u, amt_b, use_clock, outB);
    CK(cudaGetLastError());
    CK(cudaStreamWaitEvent(B, ev, 0));
    short_b<<<1, SPIN_THREADS, 0, B>>>(outA, outB, u, amt_s, use_clock, outC);
    CK(cudaGetLastError());
    CK(cudaMemsetAsync(dM, (int)((u & 0x7f) + 1), MEMSET_BYTES, B));
    tiny_mix<<<1, 32, 0, B>>>(dM, u, outC);
    CK(cudaGetLastError());

    CK(cudaStreamSynchronize(A));
    CK(cudaStreamSynchronize(B));
#if HAVE_NVTX
    nvtxRangePop();
#endif
  }

  std::vector<uint32_t> c(iters + 1);
  CK(cudaMemcpy(c.data(), outC, iters * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(&c[iters], counter, sizeof(uint32_t), cudaMemcpyDeviceToHost));
  uint64_t h = 1469598103934665603ull; // FNV-1a over the bytes of outC and the counter
  for (size_t i = 0; i < c.size(); i++)
    for (int b = 0; b < 4; b++) h = (h ^ ((c[i] >> (8 * b)) & 0xffu)) * 1099511628211ull;
  printf("checksum: fnv=%016llx iters=%d tiny=%d counter=%u\n", (unsigned long long)h, iters, tiny,
         c[iters]);
  fflush(stdout);

  CK(cudaEventDestroy(ev));
  CK(cudaStreamDestroy(A));
  CK(cudaStreamDestroy(B));
  CK(cudaFree(dIn));
  CK(cudaFree(outA));
  CK(cudaFree(outB));
  CK(cudaFree(outC));
  CK(cudaFree(dM));
  CK(cudaFreeHost(host));
  return 0;
}
