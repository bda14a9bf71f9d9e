// launch_loop.cu: per-launch cost of a tracer, without Python's noise.
//
//     launch_loop [N=20000] [REPS=7]
//
// An empty kernel launched N times through the runtime (<<<1, 32>>>), a cudaStreamSynchronize
// every 64 launches (so the launch queue never fills and the loop stays bound by the host), timed
// with CLOCK_MONOTONIC; REPS repetitions after one of warm-up. Prints per repetition
// "rep <i>: <x> us/op", then "launch_loop: n=<N> reps=<R> min=<x> median=<x> max=<x> us/op" and
// "checksum: launches=<count>" (a device counter every launch increments, read back at the end).
// Built with -cudart=shared so that a preloaded tracer hooks the runtime.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <algorithm>
#include <vector>

#include "launch_common.h"

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000;
  int reps = argc > 2 ? atoi(argv[2]) : 7;
  unsigned long long *d = nullptr;
  if (cudaMalloc(&d, sizeof *d) != cudaSuccess || cudaMemset(d, 0, sizeof *d) != cudaSuccess) {
    fprintf(stderr, "launch_loop: no device\n");
    return 1;
  }
  std::vector<double> us;
  long launched = 0;
  for (int r = 0; r <= reps; r++) {
    cudaDeviceSynchronize();
    double t0 = now_us();
    for (long i = 0; i < n; i++) {
      tick<<<1, 32>>>(d);
      if (i % 64 == 63) cudaStreamSynchronize(0);
    }
    cudaStreamSynchronize(0);
    double per = (now_us() - t0) / n;
    launched += n;
    if (r > 0) {
      us.push_back(per);
      printf("rep %d: %.3f us/op\n", r, per);
    }
  }
  unsigned long long h = 0;
  cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
  std::vector<double> s = us;
  std::sort(s.begin(), s.end());
  printf("launch_loop: n=%ld reps=%d min=%.3f median=%.3f max=%.3f us/op\n", n, reps, s.front(),
         s[(s.size() - 1) / 2], s.back());
  printf("checksum: launches=%llu expected=%ld\n", h, launched);
  return h == (unsigned long long)launched ? 0 : 2;
}
