// graph_ids.cu: which ids CUPTI gives a graph's nodes (issue 23, graph topology). Builds a diamond
// A -> {B, C} -> D plus a child-graph node E (E1 -> E2) after D, instantiates it twice, launches each
// exec twice, and prints (1) cuptiGetGraphNodeId of every node of the source graph and its edges, (2)
// every kernel record's graphNodeId, graphId and correlation id (CUPTI activity only, no callbacks). The question: does a kernel record name the source graph's node or the
// executable graph's clone of it, and is that the same across two execs of one graph?
//     nvcc -O2 -arch=sm_90 -cudart=shared -I$CUDA/extras/CUPTI/include graph_ids.cu -lcupti -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CK(x) do { auto r_ = (x); if (r_ != 0) { printf("FAIL %s = %d\n", #x, (int)r_); exit(1); } } while (0)

__global__ void kA(int *p) { p[0] += 1; }
__global__ void kB(int *p) { p[1] += 1; }
__global__ void kC(int *p) { p[2] += 1; }
__global__ void kD(int *p) { p[3] += 1; }
__global__ void kE1(int *p) { p[4] += 1; }
__global__ void kE2(int *p) { p[5] += 1; }

static uint64_t nid(CUgraphNode n) { uint64_t id = 0; if (n) cuptiGetGraphNodeId(n, &id); return id; }
static uint32_t gid(CUgraph g) { uint32_t id = 0; if (g) cuptiGetGraphId(g, &id); return id; }

static void CUPTIAPI buf_req(uint8_t **b, size_t *sz, size_t *max) {
  *sz = 1 << 20; *b = (uint8_t *)aligned_alloc(8, *sz); *max = 0;
}
static void CUPTIAPI buf_done(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid) {
  CUpti_Activity *rec = nullptr;
  while (cuptiActivityGetNextRecord(b, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto *k = (CUpti_ActivityKernel9 *)rec;
      printf("kernel %-4s corr=%u graphNodeId=%llu graphId=%u stream=%u start=%llu end=%llu\n", k->name, k->correlationId,
             (unsigned long long)k->graphNodeId, k->graphId, k->streamId, (unsigned long long)k->start,
             (unsigned long long)k->end);
    }
  }
  free(b);
}

static CUgraphNode add_kernel(cudaGraph_t g, void (*fn)(int *), int *p, CUgraphNode *deps, size_t nd) {
  cudaKernelNodeParams kp = {};
  void *args[] = {&p};
  kp.func = (void *)fn; kp.gridDim = dim3(1); kp.blockDim = dim3(1); kp.kernelParams = args;
  cudaGraphNode_t n;
  CK(cudaGraphAddKernelNode(&n, g, (cudaGraphNode_t *)deps, nd, &kp));
  return (CUgraphNode)n;
}

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  CK(cuptiActivityRegisterCallbacks(buf_req, buf_done));
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  int *p; CK(cudaMalloc(&p, 64)); CK(cudaMemset(p, 0, 64));
  cudaGraph_t g, child;
  CK(cudaGraphCreate(&g, 0));
  CK(cudaGraphCreate(&child, 0));
  CUgraphNode e1 = add_kernel(child, kE1, p, nullptr, 0);
  add_kernel(child, kE2, p, &e1, 1);
  CUgraphNode a = add_kernel(g, kA, p, nullptr, 0);
  CUgraphNode b = add_kernel(g, kB, p, &a, 1);
  CUgraphNode c = add_kernel(g, kC, p, &a, 1);
  CUgraphNode bc[2] = {b, c};
  CUgraphNode d = add_kernel(g, kD, p, bc, 2);
  cudaGraphNode_t e;
  CK(cudaGraphAddChildGraphNode(&e, g, (cudaGraphNode_t *)&d, 1, child));
  printf("source graph %u: A=%llu B=%llu C=%llu D=%llu E(child node)=%llu\n", gid((CUgraph)g), (unsigned long long)nid(a),
         (unsigned long long)nid(b), (unsigned long long)nid(c), (unsigned long long)nid(d), (unsigned long long)nid((CUgraphNode)e));
  size_t n = 0;
  CK(cuGraphGetEdges((CUgraph)g, nullptr, nullptr, nullptr, &n));
  CUgraphNode from[16], to[16];
  CK(cuGraphGetEdges((CUgraph)g, from, to, nullptr, &n));
  for (size_t i = 0; i < n; i++) printf("edge %llu -> %llu\n", (unsigned long long)nid(from[i]), (unsigned long long)nid(to[i]));
  CUgraph cg; CK(cuGraphChildGraphNodeGetGraph((CUgraphNode)e, &cg));
  size_t cn = 0; CK(cuGraphGetNodes(cg, nullptr, &cn));
  CUgraphNode cnodes[8]; CK(cuGraphGetNodes(cg, cnodes, &cn));
  for (size_t i = 0; i < cn; i++) printf("child node (via child graph node's graph %u) %llu\n", gid(cg), (unsigned long long)nid(cnodes[i]));
  cudaGraphExec_t x1, x2;
  printf("-- instantiate x1\n");
  CK(cudaGraphInstantiate(&x1, g, 0));
  printf("-- instantiate x2\n");
  CK(cudaGraphInstantiate(&x2, g, 0));
  cudaStream_t s; CK(cudaStreamCreate(&s));
  for (int i = 0; i < 2; i++) { CK(cudaGraphLaunch(x1, s)); CK(cudaGraphLaunch(x2, s)); }
  // A captured graph too.
  cudaGraph_t cap; cudaGraphExec_t x3;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  kA<<<1, 1, 0, s>>>(p); kB<<<1, 1, 0, s>>>(p);
  CK(cudaStreamEndCapture(s, &cap));
  printf("-- instantiate x3 (captured graph %u)\n", gid((CUgraph)cap));
  CK(cudaGraphInstantiate(&x3, cap, 0));
  CK(cudaGraphLaunch(x3, s));
  CK(cudaStreamSynchronize(s));
  CK(cuptiActivityFlushAll(1));
  printf("done\n");
  return 0;
}
