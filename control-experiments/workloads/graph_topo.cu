// graph_topo.cu: CUDA graphs whose topology the causal graph must recover (issue 23). Three graphs,
// each instantiated once and launched LAUNCHES times on one stream:
//   1. built by hand: tA -> {tB, tC} -> tD -> child graph (tE1 -> tE2) -> tF; tC spins ~200 us, so tD
//      waits for tC;
//   2. nested child graphs: tG -> child (tI -> grandchild (tK -> tL) -> tM) -> tN;
//   3. captured across two streams: tP, then tQ on a forked stream and tR on the first, joined before
//      tS.
// Prints one `edge FROM TO` line per dependency the graphs define between kernels (each launch has
// them all), then `launches N`.
//     nvcc -O2 -arch=sm_90 -cudart=shared graph_topo.cu -o graph_topo && ./graph_topo [LAUNCHES]
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CK(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(r_)); exit(1); } } while (0)

__device__ void spin(long long ns) {
  long long t0 = clock64();
  while (clock64() - t0 < ns * 2) {}  // ~2 cycles per ns on an H200 (1.98 GHz)
}
__global__ void tA(int *p) { p[0]++; }
__global__ void tB(int *p) { p[1]++; }
__global__ void tC(int *p) { spin(200000); p[2]++; }
__global__ void tD(int *p) { p[3]++; }
__global__ void tE1(int *p) { p[4]++; }
__global__ void tE2(int *p) { p[5]++; }
__global__ void tF(int *p) { p[6]++; }
__global__ void tG(int *p) { p[7]++; }
__global__ void tI(int *p) { p[8]++; }
__global__ void tK(int *p) { p[9]++; }
__global__ void tL(int *p) { p[10]++; }
__global__ void tM(int *p) { p[11]++; }
__global__ void tN(int *p) { p[12]++; }
__global__ void tP(int *p) { p[13]++; }
__global__ void tQ(int *p) { spin(50000); p[14]++; }
__global__ void tR(int *p) { p[15]++; }
__global__ void tS(int *p) { p[16]++; }

static int *g_p;

static cudaGraphNode_t kernel(cudaGraph_t g, void (*fn)(int *), const cudaGraphNode_t *deps, size_t n) {
  cudaKernelNodeParams kp = {};
  void *args[] = {&g_p};
  kp.func = (void *)fn;
  kp.gridDim = dim3(1);
  kp.blockDim = dim3(1);
  kp.kernelParams = args;
  cudaGraphNode_t node;
  CK(cudaGraphAddKernelNode(&node, g, deps, n, &kp));
  return node;
}

static cudaGraphNode_t child(cudaGraph_t g, cudaGraph_t c, const cudaGraphNode_t *deps, size_t n) {
  cudaGraphNode_t node;
  CK(cudaGraphAddChildGraphNode(&node, g, deps, n, c));
  return node;
}

int main(int argc, char **argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 3;
  CK(cudaMalloc(&g_p, 64 * sizeof(int)));
  CK(cudaMemset(g_p, 0, 64 * sizeof(int)));

  // 1. A diamond, then a child graph, then a tail.
  cudaGraph_t g1, c1;
  CK(cudaGraphCreate(&c1, 0));
  cudaGraphNode_t e1 = kernel(c1, tE1, nullptr, 0);
  kernel(c1, tE2, &e1, 1);
  CK(cudaGraphCreate(&g1, 0));
  cudaGraphNode_t a = kernel(g1, tA, nullptr, 0);
  cudaGraphNode_t b = kernel(g1, tB, &a, 1);
  cudaGraphNode_t c = kernel(g1, tC, &a, 1);
  cudaGraphNode_t bc[2] = {b, c};
  cudaGraphNode_t d = kernel(g1, tD, bc, 2);
  cudaGraphNode_t e = child(g1, c1, &d, 1);
  kernel(g1, tF, &e, 1);

  // 2. Child graphs two deep.
  cudaGraph_t g2, c2, gc2;
  CK(cudaGraphCreate(&gc2, 0));
  cudaGraphNode_t k = kernel(gc2, tK, nullptr, 0);
  kernel(gc2, tL, &k, 1);
  CK(cudaGraphCreate(&c2, 0));
  cudaGraphNode_t i = kernel(c2, tI, nullptr, 0);
  cudaGraphNode_t j = child(c2, gc2, &i, 1);
  kernel(c2, tM, &j, 1);
  CK(cudaGraphCreate(&g2, 0));
  cudaGraphNode_t gg = kernel(g2, tG, nullptr, 0);
  cudaGraphNode_t h = child(g2, c2, &gg, 1);
  kernel(g2, tN, &h, 1);

  // 3. Captured: a fork and a join across two streams.
  cudaStream_t s, s2;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  cudaGraph_t g3;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  tP<<<1, 1, 0, s>>>(g_p);
  CK(cudaEventRecord(fork, s));
  CK(cudaStreamWaitEvent(s2, fork, 0));
  tQ<<<1, 1, 0, s2>>>(g_p);
  CK(cudaEventRecord(join, s2));
  tR<<<1, 1, 0, s>>>(g_p);
  CK(cudaStreamWaitEvent(s, join, 0));
  tS<<<1, 1, 0, s>>>(g_p);
  CK(cudaStreamEndCapture(s, &g3));

  cudaGraphExec_t x1, x2, x3;
  CK(cudaGraphInstantiate(&x1, g1, 0));
  CK(cudaGraphInstantiate(&x2, g2, 0));
  CK(cudaGraphInstantiate(&x3, g3, 0));
  for (int n = 0; n < launches; n++) {
    CK(cudaGraphLaunch(x1, s));
    CK(cudaGraphLaunch(x2, s));
    CK(cudaGraphLaunch(x3, s));
  }
  CK(cudaStreamSynchronize(s));
  const char *edges[][2] = {
      {"tA", "tB"}, {"tA", "tC"}, {"tB", "tD"}, {"tC", "tD"}, {"tD", "tE1"}, {"tE1", "tE2"}, {"tE2", "tF"},
      {"tG", "tI"}, {"tI", "tK"}, {"tK", "tL"}, {"tL", "tM"}, {"tM", "tN"},
      {"tP", "tQ"}, {"tP", "tR"}, {"tQ", "tS"}, {"tR", "tS"},
  };
  for (auto &ed : edges) printf("edge %s %s\n", ed[0], ed[1]);
  printf("launches %d\n", launches);
  return 0;
}
