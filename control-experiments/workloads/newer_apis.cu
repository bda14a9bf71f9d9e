// newer_apis.cu: the CUDA 12/13 entry points the generated hook tables added, each issuing real work on
// the H200, for control-experiments/device/coverage.sh: device queries, a batch copy
// (cudaMemcpyBatchAsync), stream memory operations (cuStreamWriteValue32 / cuStreamWaitValue32), a context
// event (cuCtxRecordEvent + cuEventSynchronize, cuCtxWaitEvent), a managed-memory prefetch
// (cudaMemPrefetchAsync), a 3D memset (cudaMemset3DAsync), a graph upload (cudaGraphUpload), a host
// function (cudaLaunchHostFunc). Prints one "name=result" line per call and a checksum; exits non-zero
// when a result or the checksum is wrong.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

static int bad = 0;
#define RT(call) do { cudaError_t e_ = (call); printf("%s=%d\n", #call, (int)e_); if (e_) bad = 1; } while (0)
#define DR(call) do { CUresult e_ = (call); printf("%s=%d\n", #call, (int)e_); if (e_) bad = 1; } while (0)

__global__ void scale(float *x, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * a + 1.0f;
}

static void CUDART_CB on_host(void *p) { *(int *)p += 1; }

int main() {
    const int n = 1 << 20;
    const size_t bytes = n * sizeof(float);
    int devices = 0;
    RT(cudaGetDeviceCount(&devices));
    RT(cudaSetDevice(0));
    cudaStream_t s1, s2;
    RT(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    RT(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    float *h, *d[4], *m;
    RT(cudaMallocHost(&h, 4 * bytes));
    for (int i = 0; i < 4 * n; i++) h[i] = (float)(i % 7);
    for (int k = 0; k < 4; k++) RT(cudaMalloc(&d[k], bytes));
    RT(cudaMallocManaged(&m, bytes));
    for (int i = 0; i < n; i++) m[i] = 2.0f;

    // A batch of four host-to-device copies.
    void *dsts[4];
    const void *srcs[4];
    size_t sizes[4];
    for (int k = 0; k < 4; k++) { dsts[k] = d[k]; srcs[k] = h + (size_t)k * n; sizes[k] = bytes; }
    cudaMemcpyAttributes attr = {};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t idx = 0;
    RT(cudaMemcpyBatchAsync(dsts, srcs, sizes, 4, &attr, &idx, 1, s1));
    scale<<<(n + 255) / 256, 256, 0, s1>>>(d[0], n, 2.0f);

    // Stream memory operations: s2 waits on a flag s1 writes after its kernel.
    unsigned int *flag;
    RT(cudaMalloc(&flag, sizeof(unsigned int)));
    RT(cudaMemsetAsync(flag, 0, sizeof(unsigned int), s1));
    DR(cuStreamWriteValue32((CUstream)s1, (CUdeviceptr)flag, 1, 0));
    DR(cuStreamWaitValue32((CUstream)s2, (CUdeviceptr)flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
    scale<<<(n + 255) / 256, 256, 0, s2>>>(d[1], n, 3.0f);

    // A context event over everything issued so far, then a wait on it.
    CUcontext ctx;
    DR(cuCtxGetCurrent(&ctx));
    cudaEvent_t ev;
    RT(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    DR(cuCtxRecordEvent(ctx, (CUevent)ev));
    DR(cuCtxWaitEvent(ctx, (CUevent)ev));
    RT(cudaEventSynchronize(ev));

    // Prefetch managed memory to the device and use it.
    cudaMemLocation loc = {};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = 0;
    RT(cudaMemPrefetchAsync(m, bytes, loc, 0, s1));
    scale<<<(n + 255) / 256, 256, 0, s1>>>(m, n, 0.5f);

    // A 3D memset.
    cudaPitchedPtr p3;
    cudaExtent ext = make_cudaExtent(256 * sizeof(float), 64, 4);
    RT(cudaMalloc3D(&p3, ext));
    RT(cudaMemset3DAsync(p3, 0, ext, s2));

    // A captured graph, uploaded, then launched twice.
    cudaGraph_t g;
    cudaGraphExec_t ge;
    RT(cudaStreamBeginCapture(s2, cudaStreamCaptureModeGlobal));
    scale<<<(n + 255) / 256, 256, 0, s2>>>(d[2], n, 1.5f);
    RT(cudaStreamEndCapture(s2, &g));
    RT(cudaGraphInstantiate(&ge, g, 0));
    RT(cudaGraphUpload(ge, s2));
    RT(cudaGraphLaunch(ge, s2));
    RT(cudaGraphLaunch(ge, s2));

    // A host function.
    int hits = 0;
    RT(cudaLaunchHostFunc(s1, on_host, &hits));
    RT(cudaStreamSynchronize(s1));
    RT(cudaStreamSynchronize(s2));
    RT(cudaDeviceSynchronize());

    // Checksum: d[k] came from h + k*n; d[0] = x*2+1, d[1] = x*3+1, d[2] = (x*1.5+1)*1.5+1 (two graph
    // launches), m = 2*0.5+1.
    float *back;
    RT(cudaMallocHost(&back, bytes));
    double sum = 0;
    for (int k = 0; k < 3; k++) {
        RT(cudaMemcpy(back, d[k], bytes, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i += 997) sum += back[i];
    }
    for (int i = 0; i < n; i += 997) sum += m[i];
    double want = 0;
    for (int i = 0; i < n; i += 997) {
        double x0 = (double)(i % 7), x1 = (double)(((size_t)n + i) % 7), x2 = (double)((2 * (size_t)n + i) % 7);
        want += x0 * 2 + 1 + x1 * 3 + 1 + ((x2 * 1.5 + 1) * 1.5 + 1) + 2.0;
    }
    printf("host_function_ran=%d\nchecksum=%.1f\nexpected=%.1f\n", hits, sum, want);
    if (hits != 1 || sum != want) bad = 1;
    return bad;
}
