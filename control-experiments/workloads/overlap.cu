// overlap.cu: ground-truth workloads for `causeway control` (issue 5), with NVTX steps.
//
//   overlap MODE [--steps N] [--warmup W] [--copy-mib M | --copy-kib K] [--kernel-us US]
//                [--part both|x|y|none] [--timing-events]
//
// Two operations per step, x and y, then the step's syncs:
//   a  x = H2D cudaMemcpyAsync of M MiB from pinned memory on non-blocking stream S0, y = a spin kernel
//      of US us on non-blocking stream S1; issued y then x (the next batch's copy while this one
//      computes): overlapped by construction (copy engine and SMs are separate).
//   b  the same on one stream S0: serialised by stream order.
//   p  y = the kernel on a BLOCKING stream S1, then x = a synchronous cudaMemcpy from pageable (malloc)
//      memory on the legacy default stream: serialised by the legacy stream's implicit
//      synchronisation with blocking streams (the copy cannot start before the kernel ended).
//   c  x = a kernel on S0, cudaEventRecord(E, S0), cudaStreamWaitEvent(S1, E), y = a kernel on S1:
//      y depends on x, serialised.
//   i  the same calls, but E is recorded before x: the streams are independent, the kernels concurrent
//      (same host calls, same timestamps, a different dependency).
// E is created with cudaEventDisableTiming. --part x|y|none leaves out the other operation(s) (the
// event calls of c and i stay): the isolated variants whose step times, against the step time of both,
// establish the true overlap without any tracer. --timing-events records timing-enabled events right
// before and after each operation on its stream, as a tracer's events backend does, and reads their
// elapsed times after each step (does the device change its schedule for them?).
//
// NVTX: W "warmup" steps (3), then N "step" ranges (30). Each step's host time (steady_clock, inside
// the range) is measured; the program prints one line
//   overlap mode=a part=both steps=N warmup=W copy_bytes=B kernel_us=US x=copy y=kernel
//     timing_events=0 step_us_min=.. step_us_median=.. step_us_max=..
// (the same line as its CPU stand-in ci/doubles/progs/overlap_prog.c). Medians are lower medians.
//
// The kernel spins one block of 32 threads on %globaltimer (ns of wall-clock time; its update
// granularity can be ~1 us) for US us.
//
// Build (control.sh does): nvcc -O2 -arch=sm_90 -cudart=static -o overlap overlap.cu
// Exit: 0, or 1 on a CUDA error or bad arguments (printed).
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(call)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (call);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      fprintf(stderr, "overlap: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,              \
              cudaGetErrorString(e_));                                                    \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(uint64_t ns, unsigned *sink) {
  uint64_t t0 = global_ns();
  while (global_ns() - t0 < ns) {
  }
  if (threadIdx.x == 0) atomicAdd(sink, 1u);
}

static void usage() {
  fprintf(stderr,
          "usage: overlap a|b|p|c|i [--steps N] [--warmup W] [--copy-mib M | --copy-kib K]\n"
          "               [--kernel-us US]\n"
          "               [--part both|x|y|none] [--timing-events]\n");
  exit(1);
}

struct Ctx {
  char mode;
  bool do_x = true, do_y = true, timing = false;
  cudaStream_t s0 = nullptr, s1 = nullptr;
  cudaEvent_t e = nullptr, ev[4] = {};
  void *pinned = nullptr, *pageable = nullptr, *dev = nullptr;
  unsigned *sink = nullptr;
  size_t bytes = 0;
  uint64_t kernel_ns = 0;
  std::vector<float> ev_ms[2]; // elapsed per step of x and y (--timing-events)
};

// A timing-enabled event before (i = 0 for x, 2 for y) or after (i + 1) an operation.
static void mark(Ctx &c, int i, cudaStream_t s) {
  if (c.timing) CK(cudaEventRecord(c.ev[i], s));
}

static void op_kernel(Ctx &c, int i, cudaStream_t s) {
  mark(c, i, s);
  spin_kernel<<<1, 32, 0, s>>>(c.kernel_ns, c.sink);
  CK(cudaGetLastError());
  mark(c, i + 1, s);
}

static void op_copy(Ctx &c, cudaStream_t s) {
  mark(c, 0, s);
  if (c.mode == 'p')
    CK(cudaMemcpy(c.dev, c.pageable, c.bytes, cudaMemcpyHostToDevice));
  else
    CK(cudaMemcpyAsync(c.dev, c.pinned, c.bytes, cudaMemcpyHostToDevice, s));
  mark(c, 1, s);
}

static void one_step(Ctx &c) {
  switch (c.mode) {
  case 'a':
  case 'b':
    if (c.do_y) op_kernel(c, 2, c.mode == 'a' ? c.s1 : c.s0);
    if (c.do_x) op_copy(c, c.s0);
    CK(cudaStreamSynchronize(c.s0));
    if (c.mode == 'a') CK(cudaStreamSynchronize(c.s1));
    break;
  case 'p':
    if (c.do_y) op_kernel(c, 2, c.s1);
    if (c.do_x) op_copy(c, 0); // the legacy default stream
    CK(cudaStreamSynchronize(c.s1));
    break;
  case 'c':
  case 'i':
    if (c.mode == 'i') CK(cudaEventRecord(c.e, c.s0));
    if (c.do_x) op_kernel(c, 0, c.s0);
    if (c.mode == 'c') CK(cudaEventRecord(c.e, c.s0));
    CK(cudaStreamWaitEvent(c.s1, c.e, 0));
    if (c.do_y) op_kernel(c, 2, c.s1);
    CK(cudaStreamSynchronize(c.s0));
    CK(cudaStreamSynchronize(c.s1));
    break;
  }
}

static void read_events(Ctx &c) {
  if (!c.timing) return;
  bool did[2] = {c.do_x, c.do_y};
  for (int k = 0; k < 2; k++) {
    if (!did[k]) continue;
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, c.ev[2 * k], c.ev[2 * k + 1]));
    c.ev_ms[k].push_back(ms);
  }
}

static long num(const char *v) {
  char *end;
  long n = strtol(v, &end, 10);
  if (!*v || *end || n < 0) usage();
  return n;
}

int main(int argc, char **argv) {
  if (argc < 2 || strlen(argv[1]) != 1 || !strchr("abpci", argv[1][0])) usage();
  Ctx c;
  c.mode = argv[1][0];
  long steps = 30, warmup = 3, mib = 100, kib = 0, kus = 2000;
  const char *part = "both";
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--timing-events")) {
      c.timing = true;
      continue;
    }
    if (i + 1 >= argc) usage();
    const char *v = argv[++i];
    if (!strcmp(a, "--steps")) steps = num(v);
    else if (!strcmp(a, "--warmup")) warmup = num(v);
    else if (!strcmp(a, "--copy-mib")) mib = num(v);
    else if (!strcmp(a, "--copy-kib")) kib = num(v);
    else if (!strcmp(a, "--kernel-us")) kus = num(v);
    else if (!strcmp(a, "--part")) part = v;
    else usage();
  }
  if (!strcmp(part, "x")) c.do_y = false;
  else if (!strcmp(part, "y")) c.do_x = false;
  else if (!strcmp(part, "none")) c.do_x = c.do_y = false;
  else if (strcmp(part, "both")) usage();
  if (steps < 1 || mib < 1 || kus < 1) usage();
  c.bytes = kib > 0 ? (size_t)kib << 10 : (size_t)mib << 20;
  c.kernel_ns = (uint64_t)kus * 1000;

  if (c.mode == 'p') {
    CK(cudaStreamCreate(&c.s1)); // blocking: the legacy stream waits for it
    c.pageable = malloc(c.bytes);
    if (!c.pageable) {
      fprintf(stderr, "overlap: out of memory\n");
      return 1;
    }
    memset(c.pageable, 1, c.bytes);
  } else {
    CK(cudaStreamCreateWithFlags(&c.s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&c.s1, cudaStreamNonBlocking));
    CK(cudaMallocHost(&c.pinned, c.bytes));
    memset(c.pinned, 1, c.bytes);
  }
  CK(cudaMalloc(&c.dev, c.bytes));
  CK(cudaMalloc((void **)&c.sink, sizeof(unsigned)));
  CK(cudaMemset(c.sink, 0, sizeof(unsigned)));
  CK(cudaEventCreateWithFlags(&c.e, cudaEventDisableTiming));
  for (auto &e : c.ev) CK(cudaEventCreate(&e));
  CK(cudaDeviceSynchronize());

  for (long w = 0; w < warmup; w++) {
    nvtxRangePushA("warmup");
    bool dx = c.do_x, dy = c.do_y;
    c.do_x = c.do_y = true; // every operation once, whatever --part says
    one_step(c);
    c.do_x = dx;
    c.do_y = dy;
    nvtxRangePop();
  }
  std::vector<uint64_t> us(steps);
  for (long s = 0; s < steps; s++) {
    nvtxRangePushA("step");
    auto t0 = std::chrono::steady_clock::now();
    one_step(c);
    auto t1 = std::chrono::steady_clock::now();
    nvtxRangePop();
    us[s] = (uint64_t)std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
    read_events(c);
  }
  CK(cudaDeviceSynchronize());
  std::vector<uint64_t> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  bool cp = c.mode == 'a' || c.mode == 'b' || c.mode == 'p';
  printf("overlap mode=%c part=%s steps=%ld warmup=%ld copy_bytes=%zu kernel_us=%ld x=%s y=kernel "
         "timing_events=%d step_us_min=%llu step_us_median=%llu step_us_max=%llu",
         c.mode, part, steps, warmup, cp ? c.bytes : (size_t)0, kus, cp ? "copy" : "kernel",
         c.timing ? 1 : 0, (unsigned long long)sorted[0],
         (unsigned long long)sorted[(steps - 1) / 2], (unsigned long long)sorted[steps - 1]);
  for (int k = 0; k < 2; k++) {
    auto &v = c.ev_ms[k];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    printf(" event_%s_us_median=%.1f", k ? "y" : "x", 1000.0 * v[(v.size() - 1) / 2]);
  }
  printf("\n");
  for (auto &e : c.ev) CK(cudaEventDestroy(e));
  CK(cudaEventDestroy(c.e));
  CK(cudaFree(c.sink));
  CK(cudaFree(c.dev));
  if (c.pinned) CK(cudaFreeHost(c.pinned));
  free(c.pageable);
  if (c.s0) CK(cudaStreamDestroy(c.s0));
  CK(cudaStreamDestroy(c.s1));
  return 0;
}
