// events_probe.cu: where does a timing event's cost go? (issue 19)
//
//   events_probe [--kernel-us US] [--copy-kib K] [--steps N] [--warmup W]
//                [--events none|fixed|pool] [--pool P] [--notiming] [--checks] [--reaper]
//                [--reaper-us R] [--only start|end] [--part both|x|y]
//
// The step of overlap.cu's mode a, without NVTX: y = a spin kernel of US us on non-blocking stream S1,
// then x = an H2D cudaMemcpyAsync of K KiB from pinned memory on non-blocking stream S0, then
// cudaStreamSynchronize(S0), (S1). Around each operation, as causeway's events backend does:
//   --events none   no events (the bare step)
//   --events fixed  the same two driver events per operation every step (cuEventRecord before and after)
//   --events pool   a fresh pair per operation from a pool of P pairs used round-robin (the backend: 8192)
//   --notiming      events created with CU_EVENT_DISABLE_TIMING (what does the timestamp itself cost?)
//   --only start|end  record only the event before (start) or after (end) each operation
//   --checks        before each bracket, cuCtxGetCurrent and cuStreamIsCapturing (the backend's checks)
//   --reaper        a thread that, every R us (100), makes the context current, queries every pending
//                   pair's end event, reads the elapsed times of completed ones and frees them (the
//                   backend's reaper, without its ring)
//   --grow          the pool starts with 256 pairs and the reaper creates 512 more per pass up to P while
//                   the steps run (what the backend did before issue 19)
//   --micro         before the steps, host ns per call (median of 2000) of cuCtxGetCurrent,
//                   cuStreamIsCapturing, cuEventRecord (timing and not, idle stream), cuEventQuery,
//                   cuEventElapsedTime and cuEventCreate, printed as micro_*_ns fields
// Prints one line:
//   events_probe events=.. timing=.. checks=.. reaper=.. kernel_us=.. copy_kib=.. part=.. steps=N
//     step_us_min=.. step_us_median=.. step_us_max=.. rec_ns_median=.. rec_ns_p90=.. launch_ns_median=..
//     copy_ns_median=.. ev_x_us_median=.. ev_y_us_median=..
// rec_ns: host time of one cuEventRecord call (steady_clock around it); launch_ns / copy_ns: host time of
// the launch and of cudaMemcpyAsync; ev_*_us: the events' elapsed time per operation (device view).
// Build: nvcc -O2 -arch=sm_90 -o events_probe events_probe.cu -lcuda
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "events_probe: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,                  \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)
#define CU(call)                                                                                   \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      fprintf(stderr, "events_probe: %s:%d: %s: CUresult %d\n", __FILE__, __LINE__, #call,         \
              (int)r_);                                                                            \
      exit(1);                                                                                     \
    }                                                                                              \
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

static uint64_t now_ns() {
  return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

enum { FREE = 0, CLAIMED = 1, PENDING = 2 };
struct Pair {
  CUevent a = nullptr, b = nullptr;
  std::atomic<int> state{FREE};
  int op = 0;
};

struct Probe {
  int events = 0; // 0 none, 1 fixed, 2 pool
  bool timing = true, checks = false, reaper = false, do_x = true, do_y = true, grow = false;
  bool micro = false;
  std::atomic<size_t> made{0};
  int only = 0; // 0 both, 1 start, 2 end
  size_t pool = 8192;
  unsigned reaper_us = 100;
  std::vector<Pair> pairs;
  std::atomic<size_t> cursor{0};
  std::vector<uint64_t> rec_ns, launch_ns, copy_ns;
  std::vector<float> ev_ms[2];
  CUcontext ctx = nullptr;
  std::atomic<bool> stop{false};
};

static void record(Probe &p, CUevent e, cudaStream_t s) {
  uint64_t t0 = now_ns();
  CU(cuEventRecord(e, (CUstream)s));
  p.rec_ns.push_back(now_ns() - t0);
}

// Claims a pair and records its start event (unless --only end); returns its index or -1.
static long before(Probe &p, cudaStream_t s, int op) {
  if (p.events == 0) return -1;
  if (p.checks) {
    CUcontext c;
    CU(cuCtxGetCurrent(&c));
    CUstreamCaptureStatus st;
    CU(cuStreamIsCapturing((CUstream)s, &st));
  }
  size_t i = 0;
  if (p.events == 1) {
    i = op;
  } else {
    for (int tries = 0;; tries++) {
      i = p.cursor.fetch_add(1) % p.made.load();
      int f = FREE;
      if (p.pairs[i].state.compare_exchange_strong(f, CLAIMED)) break;
      if (tries > 64) return -1;
    }
  }
  p.pairs[i].op = op;
  if (p.only != 2) record(p, p.pairs[i].a, s);
  return (long)i;
}

static void after(Probe &p, long i, cudaStream_t s) {
  if (i < 0) return;
  if (p.only != 1) record(p, p.pairs[i].b, s);
  if (p.events == 2) p.pairs[i].state.store(p.reaper ? PENDING : FREE);
}

static void make(Probe &p, size_t upto, unsigned flags) {
  for (size_t i = p.made.load(); i < upto; i++) {
    CU(cuEventCreate(&p.pairs[i].a, flags));
    CU(cuEventCreate(&p.pairs[i].b, flags));
    p.made.store(i + 1);
  }
}

static void reaper(Probe *p) {
  CU(cuCtxSetCurrent(p->ctx));
  unsigned flags = p->timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING;
  while (!p->stop.load()) {
    CU(cuCtxSetCurrent(p->ctx));
    if (p->grow && p->made.load() < p->pairs.size())
      make(*p, std::min(p->made.load() + 512, p->pairs.size()), flags);
    for (size_t k = 0; k < p->made.load(); k++) {
      auto &q = p->pairs[k];
      if (q.state.load() != PENDING) continue;
      CUresult r = cuEventQuery(q.b);
      if (r == CUDA_ERROR_NOT_READY) continue;
      if (p->timing && p->only == 0) {
        float ms;
        cuEventElapsedTime(&ms, q.a, q.b);
        cuEventElapsedTime(&ms, q.a, q.b);
      }
      q.state.store(FREE);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(p->reaper_us));
  }
}

static void usage() {
  fprintf(stderr, "usage: events_probe [--kernel-us US] [--copy-kib K] [--steps N] [--warmup W]\n"
                  "  [--events none|fixed|pool] [--pool P] [--notiming] [--checks] [--reaper]\n"
                  "  [--reaper-us R] [--only start|end] [--part both|x|y]\n");
  exit(1);
}

static long num(const char *v) {
  char *end;
  long n = strtol(v, &end, 10);
  if (!*v || *end || n < 0) usage();
  return n;
}

template <class T> static T pct(std::vector<T> v, double q) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  size_t k = (size_t)(q * (v.size() - 1));
  return v[k];
}

int main(int argc, char **argv) {
  Probe p;
  long steps = 300, warmup = 20, kib = 4096, kus = 80;
  const char *part = "both", *ev = "none";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--notiming")) { p.timing = false; continue; }
    if (!strcmp(a, "--checks")) { p.checks = true; continue; }
    if (!strcmp(a, "--reaper")) { p.reaper = true; continue; }
    if (!strcmp(a, "--grow")) { p.grow = p.reaper = true; continue; }
    if (!strcmp(a, "--micro")) { p.micro = true; continue; }
    if (i + 1 >= argc) usage();
    const char *v = argv[++i];
    if (!strcmp(a, "--steps")) steps = num(v);
    else if (!strcmp(a, "--warmup")) warmup = num(v);
    else if (!strcmp(a, "--copy-kib")) kib = num(v);
    else if (!strcmp(a, "--kernel-us")) kus = num(v);
    else if (!strcmp(a, "--pool")) p.pool = (size_t)num(v);
    else if (!strcmp(a, "--reaper-us")) p.reaper_us = (unsigned)num(v);
    else if (!strcmp(a, "--part")) part = v;
    else if (!strcmp(a, "--events")) ev = v;
    else if (!strcmp(a, "--only")) p.only = !strcmp(v, "start") ? 1 : !strcmp(v, "end") ? 2 : (usage(), 0);
    else usage();
  }
  p.events = !strcmp(ev, "none") ? 0 : !strcmp(ev, "fixed") ? 1 : !strcmp(ev, "pool") ? 2 : (usage(), 0);
  if (!strcmp(part, "x")) p.do_y = false;
  else if (!strcmp(part, "y")) p.do_x = false;
  else if (strcmp(part, "both")) usage();
  if (steps < 1 || kib < 1 || kus < 1 || p.pool < 2) usage();
  size_t bytes = (size_t)kib << 10;

  cudaStream_t s0, s1;
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  CU(cuCtxGetCurrent(&p.ctx));
  CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  void *pinned, *dev;
  unsigned *sink;
  CK(cudaMallocHost(&pinned, bytes));
  memset(pinned, 1, bytes);
  CK(cudaMalloc(&dev, bytes));
  CK(cudaMalloc((void **)&sink, sizeof(unsigned)));
  CK(cudaMemset(sink, 0, sizeof(unsigned)));
  unsigned flags = p.timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING;
  size_t npairs = p.events == 2 ? p.pool : 2;
  p.pairs = std::vector<Pair>(npairs);
  make(p, p.grow ? std::min<size_t>(256, npairs) : npairs, flags);
  CK(cudaDeviceSynchronize());
  // Host cost of each driver call the backend makes, one at a time (median of 2000 calls).
  std::vector<std::pair<const char *, uint64_t>> micro;
  if (p.micro) {
    auto time_it = [&](const char *name, auto fn) {
      std::vector<uint64_t> v;
      for (int k = 0; k < 2000; k++) {
        uint64_t t0 = now_ns();
        fn();
        v.push_back(now_ns() - t0);
      }
      micro.push_back({name, pct(v, 0.5)});
    };
    CUevent et, en;
    CU(cuEventCreate(&et, CU_EVENT_DEFAULT));
    CU(cuEventCreate(&en, CU_EVENT_DISABLE_TIMING));
    time_it("ctxget", [&] { CUcontext c; cuCtxGetCurrent(&c); });
    time_it("iscapturing", [&] { CUstreamCaptureStatus st; cuStreamIsCapturing((CUstream)s0, &st); });
    time_it("record_timing", [&] { cuEventRecord(et, (CUstream)s0); });
    time_it("record_notiming", [&] { cuEventRecord(en, (CUstream)s0); });
    CK(cudaDeviceSynchronize());
    time_it("query", [&] { cuEventQuery(et); });
    CUevent e2;
    CU(cuEventCreate(&e2, CU_EVENT_DEFAULT));
    CU(cuEventRecord(e2, (CUstream)s0));
    CK(cudaDeviceSynchronize());
    time_it("elapsed", [&] { float ms; cuEventElapsedTime(&ms, et, e2); });
    std::vector<CUevent> made_here(2000);
    size_t k = 0;
    time_it("create", [&] { cuEventCreate(&made_here[k++], CU_EVENT_DEFAULT); });
    for (auto e : made_here) cuEventDestroy(e);
  }
  std::thread th;
  if (p.reaper && p.events == 2) th = std::thread(reaper, &p);

  uint64_t kns = (uint64_t)kus * 1000;
  std::vector<uint64_t> us;
  for (long s = 0; s < warmup + steps; s++) {
    bool keep = s >= warmup;
    if (!keep) { p.rec_ns.clear(); p.launch_ns.clear(); p.copy_ns.clear(); }
    uint64_t t0 = now_ns();
    long iy = -1, ix = -1;
    if (p.do_y) {
      iy = before(p, s1, 1);
      uint64_t a = now_ns();
      spin_kernel<<<1, 32, 0, s1>>>(kns, sink);
      p.launch_ns.push_back(now_ns() - a);
      after(p, iy, s1);
    }
    if (p.do_x) {
      ix = before(p, s0, 0);
      uint64_t a = now_ns();
      CK(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s0));
      p.copy_ns.push_back(now_ns() - a);
      after(p, ix, s0);
    }
    CK(cudaStreamSynchronize(s0));
    CK(cudaStreamSynchronize(s1));
    uint64_t t1 = now_ns();
    if (keep) us.push_back((t1 - t0) / 1000);
    // Elapsed times of the fixed pair (device view), outside the step's time.
    if (keep && p.events == 1 && p.timing && p.only == 0) {
      long idx[2] = {ix, iy};
      for (int k = 0; k < 2; k++) {
        if (idx[k] < 0) continue;
        float ms;
        CU(cuEventElapsedTime(&ms, p.pairs[idx[k]].a, p.pairs[idx[k]].b));
        p.ev_ms[k].push_back(ms);
      }
    }
  }
  p.stop = true;
  if (th.joinable()) th.join();
  CK(cudaDeviceSynchronize());
  printf("events_probe events=%s timing=%d checks=%d reaper=%d only=%s kernel_us=%ld copy_kib=%ld "
         "part=%s steps=%ld step_us_min=%llu step_us_median=%llu step_us_max=%llu "
         "rec_ns_median=%llu rec_ns_p90=%llu launch_ns_median=%llu copy_ns_median=%llu",
         ev, p.timing, p.checks, p.reaper, p.only == 1 ? "start" : p.only == 2 ? "end" : "both", kus,
         kib, part, steps, (unsigned long long)pct(us, 0.0), (unsigned long long)pct(us, 0.5),
         (unsigned long long)pct(us, 1.0), (unsigned long long)pct(p.rec_ns, 0.5),
         (unsigned long long)pct(p.rec_ns, 0.9), (unsigned long long)pct(p.launch_ns, 0.5),
         (unsigned long long)pct(p.copy_ns, 0.5));
  for (int k = 0; k < 2; k++)
    if (!p.ev_ms[k].empty())
      printf(" ev_%s_us_median=%.1f", k ? "y" : "x", 1000.0 * pct(p.ev_ms[k], 0.5));
  for (auto &m : micro) printf(" micro_%s_ns=%llu", m.first, (unsigned long long)m.second);
  printf("\n");
  return 0;
}
