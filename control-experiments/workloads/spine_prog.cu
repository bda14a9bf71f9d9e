// spine_prog.cu: an nvcc-built control workload for causeway's GPU proof.
//
// It exercises the CUDA runtime paths a tracer must see, with launch counts
// fixed at compile time: two streams ordered by events (kernel A on s1, event
// record, cudaStreamWaitEvent on s2, kernel B on s2), a CUDA graph (stream
// capture of 3 kernels, instantiated once, launched GRAPH_LAUNCHES times),
// pinned async copies (H2D, D2D, D2H), memsets, launches through <<<>>>,
// cudaLaunchKernel and cudaLaunchKernelEx, extern "C", plain C++, namespaced
// and template kernels (so both mangled and unmangled names appear), and work
// on the default stream (legacy, or per-thread when built with
// --default-stream per-thread).
//
// Build:  nvcc -O2 -arch=sm_90 -cudart=static spine_prog.cu -o spine_prog
//         (and again with --default-stream per-thread)
// Run:    spine_prog [--exit-code N]
// Prints: one "expected_counts_json: {...}" line with the launch count of
//         every kernel (names are the mangled device symbols the driver and
//         CUPTI report, cross-checked against cudaFuncGetName; "graph" holds
//         the part of each count that runs as a graph node; "api_calls" counts
//         launch calls instead, each launch made during stream capture once
//         and graph replays not at all), then one "checksum: ..." line that
//         is identical on every correct run. Every CUDA call is checked; any
//         failure prints it and exits 1. --exit-code N makes a successful run
//         exit with N (to check that a tracer passes exit codes through).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#define CK(call)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "spine_prog: %s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__,    \
              #call, cudaGetErrorString(e_), (int)e_);                                  \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)
#define CK_LAUNCH() CK(cudaGetLastError())

static const int N = 1 << 20;
static const int THREADS = 256;
static const int BLOCKS = 1024;        // grid-stride loops cover N
static const int PAIRS = 10;           // producer (s1) -> consumer (s2) pairs
static const int EX_LAUNCHES = 4;      // cudaLaunchKernelEx launches
static const int DIRECT_SCALE = 2;     // cudaLaunchKernel launches of scale_kernel
static const int GRAPH_LAUNCHES = 5;   // cudaGraphLaunch calls

// ---- kernels ---------------------------------------------------------------
// All arithmetic is on unsigned ints, so the checksum does not depend on
// execution order anywhere.

extern "C" __global__ void spine_fill(unsigned *p, unsigned v, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = v + (unsigned)(i % 7);
}

__global__ void producer_kernel(unsigned *a, unsigned it, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    a[i] = a[i] * 3u + it;
}

__global__ void consumer_kernel(const unsigned *a, unsigned *b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    b[i] += a[i] & 0xffu;
}

__global__ void scale_kernel(unsigned *p, unsigned k, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = p[i] * k + 1u;
}

template <typename T>
__global__ void axpy_kernel(T *y, const T *x, T a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

extern "C" __global__ void graph_stage1(unsigned *p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] += 3u;
}

namespace spine {
__global__ void graph_stage3(unsigned *p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] ^= 0x55u;
}
}  // namespace spine

__global__ void reduce_kernel(const unsigned *p, unsigned long long *out, int n) {
  __shared__ unsigned long long part[THREADS];
  unsigned long long s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    s += p[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, part[0]);
}

// ---- expected counts -------------------------------------------------------

struct Expect {
  const void *func;
  const char *mangled;  // the symbol in the cubin (checked with readelf -s)
  int direct;           // launches outside the graph
  int graph;            // executions as a graph node (GRAPH_LAUNCHES per node)
  int captured;         // launch calls made during stream capture (not executed)
};

static std::string json_escape(const char *s) {
  std::string o;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      o += '\\';
      o += (char)c;
    } else if (c < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += (char)c;
    }
  }
  return o;
}

int main(int argc, char **argv) {
  int exit_code = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--exit-code") && i + 1 < argc) {
      exit_code = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: %s [--exit-code N]\n", argv[0]);
      return 2;
    }
  }

  const size_t bytes = (size_t)N * sizeof(unsigned);
  CK(cudaSetDevice(0));

  cudaStream_t s1, s2, s3;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking));
  cudaEvent_t a_ready, b_done;
  CK(cudaEventCreateWithFlags(&a_ready, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&b_done, cudaEventDisableTiming));

  unsigned *a, *b, *c, *d, *host;
  unsigned long long *sum_dev;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMalloc(&c, bytes));
  CK(cudaMalloc(&d, bytes));
  CK(cudaMalloc(&sum_dev, sizeof *sum_dev));
  CK(cudaMallocHost(&host, bytes));
  for (int i = 0; i < N; i++) host[i] = (unsigned)(i % 13);

  // Pinned async H2D on s1, memset on s2, a fill kernel on the default stream.
  CK(cudaMemcpyAsync(a, host, bytes, cudaMemcpyHostToDevice, s1));
  CK(cudaMemsetAsync(b, 0, bytes, s2));
  spine_fill<<<BLOCKS, THREADS>>>(c, 1u, N);
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());

  // Producer on s1 -> event -> consumer on s2, and back so that the next
  // producer does not overwrite `a` while the consumer still reads it.
  for (int it = 0; it < PAIRS; it++) {
    if (it > 0) CK(cudaStreamWaitEvent(s1, b_done, 0));
    producer_kernel<<<BLOCKS, THREADS, 0, s1>>>(a, (unsigned)it, N);
    CK_LAUNCH();
    CK(cudaEventRecord(a_ready, s1));
    CK(cudaStreamWaitEvent(s2, a_ready, 0));
    consumer_kernel<<<BLOCKS, THREADS, 0, s2>>>(a, b, N);
    CK_LAUNCH();
    CK(cudaEventRecord(b_done, s2));
  }

  // cudaLaunchKernelEx (C++ template form) on s2: c = 3*b + c.
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(BLOCKS);
  cfg.blockDim = dim3(THREADS);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = s2;
  cfg.attrs = nullptr;
  cfg.numAttrs = 0;
  for (int i = 0; i < EX_LAUNCHES; i++)
    CK(cudaLaunchKernelEx(&cfg, axpy_kernel<unsigned>, c, (const unsigned *)b, 3u, N));

  // Plain cudaLaunchKernel on s2.
  for (int i = 0; i < DIRECT_SCALE; i++) {
    unsigned k = 5u + (unsigned)i;
    int n = N;
    void *args[] = {&c, &k, &n};
    CK(cudaLaunchKernel((const void *)scale_kernel, dim3(BLOCKS), dim3(THREADS), args, 0, s2));
  }

  // Async D2D copy, then a CUDA graph of 3 kernels over d, launched 5 times.
  CK(cudaMemcpyAsync(d, c, bytes, cudaMemcpyDeviceToDevice, s2));
  CK(cudaStreamSynchronize(s2));
  CK(cudaStreamSynchronize(s1));

  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(s3, cudaStreamCaptureModeGlobal));
  graph_stage1<<<BLOCKS, THREADS, 0, s3>>>(d, N);
  CK_LAUNCH();
  scale_kernel<<<BLOCKS, THREADS, 0, s3>>>(d, 7u, N);
  CK_LAUNCH();
  spine::graph_stage3<<<BLOCKS, THREADS, 0, s3>>>(d, N);
  CK_LAUNCH();
  CK(cudaStreamEndCapture(s3, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < GRAPH_LAUNCHES; i++) CK(cudaGraphLaunch(exec, s3));
  CK(cudaStreamSynchronize(s3));

  // Reduction on the default stream, synchronous and async D2H copies back.
  CK(cudaMemsetAsync(sum_dev, 0, sizeof *sum_dev, 0));
  reduce_kernel<<<BLOCKS, THREADS>>>(d, sum_dev, N);
  CK_LAUNCH();
  unsigned long long dev_sum = 0;
  CK(cudaMemcpy(&dev_sum, sum_dev, sizeof dev_sum, cudaMemcpyDeviceToHost));
  CK(cudaMemcpyAsync(host, b, bytes, cudaMemcpyDeviceToHost, s1));
  CK(cudaStreamSynchronize(s1));
  unsigned long long b_hash = 1469598103934665603ull;  // FNV-1a over b
  for (int i = 0; i < N; i++) b_hash = (b_hash ^ host[i]) * 1099511628211ull;
  CK(cudaMemcpyAsync(host, d, bytes, cudaMemcpyDeviceToHost, s1));
  CK(cudaStreamSynchronize(s1));
  unsigned long long host_sum = 0;
  for (int i = 0; i < N; i++) host_sum += host[i];
  CK(cudaDeviceSynchronize());

  if (host_sum != dev_sum) {
    fprintf(stderr, "spine_prog: device sum %llu != host sum %llu\n", dev_sum, host_sum);
    return 1;
  }

  // Expected launch counts per kernel name. The names are the device symbols
  // as the cubin holds them (what cuFuncGetName and CUPTI report); each one is
  // cross-checked against cudaFuncGetName and a difference is printed.
  const Expect expect[] = {
      {(const void *)spine_fill, "spine_fill", 1, 0, 0},
      {(const void *)producer_kernel, "_Z15producer_kernelPjji", PAIRS, 0, 0},
      {(const void *)consumer_kernel, "_Z15consumer_kernelPKjPji", PAIRS, 0, 0},
      {(const void *)axpy_kernel<unsigned>, "_Z11axpy_kernelIjEvPT_PKS0_S0_i", EX_LAUNCHES, 0, 0},
      {(const void *)scale_kernel, "_Z12scale_kernelPjji", DIRECT_SCALE, GRAPH_LAUNCHES, 1},
      {(const void *)graph_stage1, "graph_stage1", 0, GRAPH_LAUNCHES, 1},
      {(const void *)spine::graph_stage3, "_ZN5spine12graph_stage3EPji", 0, GRAPH_LAUNCHES, 1},
      {(const void *)reduce_kernel, "_Z13reduce_kernelPKjPyi", 1, 0, 0},
  };
  std::string kernels, graph_part, api_calls;
  int total = 0, total_calls = 0, name_differs = 0;
  for (const Expect &e : expect) {
    const char *rt_name = nullptr;
    cudaError_t ne = cudaFuncGetName(&rt_name, e.func);
    if (ne != cudaSuccess || !rt_name) {
      printf("funcname: %s: cudaFuncGetName failed: %s\n", e.mangled, cudaGetErrorString(ne));
      (void)cudaGetLastError();
      name_differs++;
    } else if (strcmp(rt_name, e.mangled) != 0) {
      printf("funcname: %s: cudaFuncGetName says %s\n", e.mangled, rt_name);
      name_differs++;
    }
    std::string q = "\"" + json_escape(e.mangled) + "\"";
    if (!kernels.empty()) kernels += ", ";
    kernels += q + ": " + std::to_string(e.direct + e.graph);
    if (e.graph) {
      if (!graph_part.empty()) graph_part += ", ";
      graph_part += q + ": " + std::to_string(e.graph);
    }
    if (!api_calls.empty()) api_calls += ", ";
    api_calls += q + ": " + std::to_string(e.direct + e.captured);
    total += e.direct + e.graph;
    total_calls += e.direct + e.captured;
    printf("expected: %-34s direct=%-3d graph=%-3d captured=%d\n", e.mangled, e.direct, e.graph,
           e.captured);
  }
  printf("funcname: %s\n", name_differs ? "cudaFuncGetName differs (see above)"
                                         : "cudaFuncGetName agrees on every kernel");
  printf("expected_counts_json: {\"kernels\": {%s}, \"graph\": {%s}, \"total\": %d, "
         "\"api_calls\": {%s}, \"api_calls_total\": %d}\n",
         kernels.c_str(), graph_part.c_str(), total, api_calls.c_str(), total_calls);

  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  CK(cudaEventDestroy(a_ready));
  CK(cudaEventDestroy(b_done));
  CK(cudaStreamDestroy(s1));
  CK(cudaStreamDestroy(s2));
  CK(cudaStreamDestroy(s3));
  CK(cudaFreeHost(host));
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(c));
  CK(cudaFree(d));
  CK(cudaFree(sum_dev));

#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
  const char *mode = "per-thread";
#else
  const char *mode = "legacy";
#endif
  printf("checksum: sum=%llu b_fnv=%016llx default_stream=%s\n", dev_sum, b_hash, mode);
  fflush(stdout);
  return exit_code;
}
