// query_bench.cu: hot-path micro-benchmark for causeway's shim overhead.
//
// Times a tight loop of cudaStreamQuery(stream) on an idle stream: the
// cheapest CUDA call there is, so what a tracer adds per intercepted call
// shows up undiluted. The loop (CALLS calls, default 1e6) is timed with
// clock_gettime(CLOCK_MONOTONIC) and repeated REPEATS times (default 7).
// spine.sh runs it bare and under LD_PRELOAD=libcauseway.so (CAUSEWAY_LEVEL=4)
// and subtracts.
//
// Build:  nvcc -O2 -arch=sm_90 -cudart=static query_bench.cu -o query_bench
// Run:    query_bench [CALLS [REPEATS]]
// Prints: "repeat <i>: <ns> ns/call" per repeat, then
//         "query_bench: min=<ns> median=<ns> max=<ns> ns/call".
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#define CK(call)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "query_bench: %s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, \
              #call, cudaGetErrorString(e_), (int)e_);                               \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

static double now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__global__ void touch(int *p) { *p = 1; }

int main(int argc, char **argv) {
  long calls = argc > 1 ? atol(argv[1]) : 1000000L;
  int repeats = argc > 2 ? atoi(argv[2]) : 7;
  if (calls <= 0 || repeats <= 0) {
    fprintf(stderr, "usage: %s [CALLS [REPEATS]]\n", argv[0]);
    return 2;
  }

  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // One real launch so the stream has been used, then let it go idle.
  int *d;
  CK(cudaMalloc(&d, sizeof(int)));
  touch<<<1, 1, 0, s>>>(d);
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(s));

  // Warm-up: page in the call path (and the tracer's, if any).
  for (long i = 0; i < 10000; i++) CK(cudaStreamQuery(s));

  std::vector<double> per_call;
  for (int r = 0; r < repeats; r++) {
    long not_ready = 0;
    double t0 = now_ns();
    for (long i = 0; i < calls; i++) {
      cudaError_t e = cudaStreamQuery(s);
      if (e != cudaSuccess) {
        if (e != cudaErrorNotReady) CK(e);
        not_ready++;
      }
    }
    double t1 = now_ns();
    double ns = (t1 - t0) / (double)calls;
    per_call.push_back(ns);
    printf("repeat %d: %.2f ns/call%s\n", r, ns, not_ready ? " (stream was not idle!)" : "");
  }

  std::vector<double> sorted = per_call;
  std::sort(sorted.begin(), sorted.end());
  printf("query_bench: min=%.2f median=%.2f max=%.2f ns/call (calls=%ld repeats=%d)\n",
         sorted.front(), sorted[sorted.size() / 2], sorted.back(), calls, repeats);

  CK(cudaFree(d));
  CK(cudaStreamDestroy(s));
  return 0;
}
