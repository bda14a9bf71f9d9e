// launch_common.h: what launch_loop.cu and cupti_toggle.cu share: the empty kernel every launch
// runs (a device counter it increments, read back as the checksum) and the loop's clock.
#pragma once
#include <time.h>

__global__ void tick(unsigned long long *n) {
  if (threadIdx.x == 0) atomicAdd(n, 1ULL);
}

static double now_us() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
