// cupti_toggle.cu: can CUPTI be switched on for one window of launches in K and off between them,
// and what does it cost per launch when it is? (issue 26, item 3: a cheaper level-3 mode.)
//
//     cupti_toggle MODE [N=20000] [REPS=7] [EVERY=16] [WINDOW=64]
//
// The loop of launch_loop.cu (an empty kernel <<<1, 32>>>, a cudaStreamSynchronize every 64
// launches), with CUPTI linked in and set up by MODE:
//   bare      no CUPTI call at all;
//   sub       subscribed, buffers registered, nothing enabled;
//   cb        + the driver domain's callbacks and cudaLaunchKernel's runtime callback (what callback
//             correlation enables), no activity kind;
//   act       + CONCURRENT_KERNEL activity, no callbacks;
//   full      callbacks and CONCURRENT_KERNEL, always on (level 3's default set-up);
//   tog_act   CONCURRENT_KERNEL on for WINDOW launches in every EVERY * WINDOW, callbacks off;
//   tog_full  callbacks and CONCURRENT_KERNEL on for those windows only;
//   tog_cbon  CONCURRENT_KERNEL toggled, callbacks on throughout (they return at once off-window);
//   tog_live  as tog_full, but switched off right after the window's last launch, before the sync
//             that waits for it (is work still in flight when CUPTI is switched off recorded?).
// A window opens after a sync (nothing in flight). Prints "rep <i>: <x> us/op", a summary line
// "cupti_toggle: mode=<m> ... median=<x> us/op toggle_us=<mean cost of one switch>" and
// "records: kernels=<n> expected=<launches made while on> callbacks=<n> lost=<dropped records>".
// Exit status 3 when the kernel records differ from the launches made while on.
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>
#include <atomic>
#include <vector>

#include "launch_common.h"

static std::atomic<unsigned long long> kernels{0}, callbacks{0};
static CUpti_SubscriberHandle sub;

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max) {
  *size = 8u << 20;
  *buf = (uint8_t *)aligned_alloc(8, *size);
  *max = 0;
}

static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t *buf, size_t, size_t valid) {
  CUpti_Activity *r = nullptr;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) kernels++;
  free(buf);
}

static void CUPTIAPI on_api(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *d) {
  const CUpti_CallbackData *cb = (const CUpti_CallbackData *)d;
  if (cb->callbackSite == CUPTI_API_ENTER) callbacks++;
}

#define OK(x)                                                        \
  do {                                                               \
    CUptiResult r_ = (x);                                            \
    if (r_ != CUPTI_SUCCESS) {                                       \
      const char *s_ = "?";                                          \
      cuptiGetResultString(r_, &s_);                                 \
      fprintf(stderr, "cupti_toggle: %s: %s\n", #x, s_);             \
      exit(1);                                                       \
    }                                                                \
  } while (0)

static void callbacks_on(int on) {
  OK(cuptiEnableDomain(on, sub, CUPTI_CB_DOMAIN_DRIVER_API));
  OK(cuptiEnableCallback(on, sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                         CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
}

static void activity_on(int on) {
  if (on)
    OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  else
    OK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "bare";
  long n = argc > 2 ? atol(argv[2]) : 20000;
  int reps = argc > 3 ? atoi(argv[3]) : 7;
  long every = argc > 4 ? atol(argv[4]) : 16;
  long window = argc > 5 ? atol(argv[5]) : 64;
  bool m_bare = !strcmp(mode, "bare"), tog = !strncmp(mode, "tog_", 4);
  bool tog_cb = !strcmp(mode, "tog_full") || !strcmp(mode, "tog_live");
  bool live = !strcmp(mode, "tog_live");
  unsigned long long *d = nullptr;
  if (cudaMalloc(&d, sizeof *d) != cudaSuccess || cudaMemset(d, 0, sizeof *d) != cudaSuccess) {
    fprintf(stderr, "cupti_toggle: no device\n");
    return 1;
  }
  if (!m_bare) {
    OK(cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_api, nullptr));
    OK(cuptiActivityRegisterCallbacks(requested, completed));
    if (!strcmp(mode, "cb") || !strcmp(mode, "full") || !strcmp(mode, "tog_cbon")) callbacks_on(1);
    if (!strcmp(mode, "act") || !strcmp(mode, "full")) activity_on(1);
  }
  bool always = !strcmp(mode, "act") || !strcmp(mode, "full");
  std::vector<double> us;
  long expected = 0, launched = 0, toggles = 0;
  double toggle_us = 0;
  auto set = [&](int on) {
    double t = now_us();
    activity_on(on);
    if (tog_cb) callbacks_on(on);
    toggle_us += now_us() - t;
    toggles++;
  };
  for (int r = 0; r <= reps; r++) {
    cudaDeviceSynchronize();
    double t0 = now_us();
    bool on = false;
    for (long i = 0; i < n; i++) {
      if (tog && i % (every * window) == 0) {
        set(1);
        on = true;
      }
      tick<<<1, 32>>>(d);
      if (always || on) expected++;
      if (tog && on && i % (every * window) == window - 1 && live) {
        set(0);
        on = false;
      }
      if (i % 64 == 63) {
        cudaStreamSynchronize(0);
        if (tog && on && i % (every * window) >= window - 1) {
          set(0);
          on = false;
        }
      }
    }
    cudaStreamSynchronize(0);
    if (tog && on) {
      set(0);
      on = false;
    }
    double per = (now_us() - t0) / n;
    launched += n;
    if (r > 0) {
      us.push_back(per);
      printf("rep %d: %.3f us/op\n", r, per);
    }
  }
  size_t lost = 0;
  if (!m_bare) {
    cuptiActivityFlushAll(1);
    cuptiActivityGetNumDroppedRecords(nullptr, 0, &lost);
  }
  unsigned long long h = 0;
  cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
  std::sort(us.begin(), us.end());
  printf("cupti_toggle: mode=%s n=%ld reps=%d every=%ld window=%ld min=%.3f median=%.3f max=%.3f us/op "
         "toggle_us=%.2f\n",
         mode, n, reps, every, window, us.front(), us[(us.size() - 1) / 2], us.back(),
         toggles ? toggle_us / toggles : 0.0);
  printf("records: kernels=%llu expected=%ld callbacks=%llu lost=%zu launches=%llu/%ld\n",
         kernels.load(), m_bare || !strcmp(mode, "sub") || !strcmp(mode, "cb") ? 0 : expected,
         callbacks.load(), lost, h, launched);
  long want = m_bare || !strcmp(mode, "sub") || !strcmp(mode, "cb") ? 0 : expected;
  return (long)kernels.load() == want ? 0 : 3;
}
