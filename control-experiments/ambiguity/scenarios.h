/*
 * scenarios.h: the ambiguity benchmark's workload (issue 24), written once for both targets:
 * amb_doubles.c (the CI doubles) and amb_cuda.cu (real CUDA) include it after defining
 *     AMB_KERNELS(K)                 the kernels, K(id, "device name with _sleep_<N>us")
 *     void amb_launch(int k, cudaStream_t s)   launch kernel k (an index into AMB_KERNELS)
 * Kernel ids: lh_a lh_b lf_a lf_b ld_long ld_a ld_b dp_p dp_c ov_p ov_c sc_c bc_c ms_p ms_c ne_p ne_c rp_k
 * st_long st_c st_d bz_hog bz_victim ly_long ly_c.
 * Each scenario is a pair member: the same symptom, a different true cause (see README.md). Every
 * call the benchmark scores runs inside an NVTX range "amb/<scenario>/<rep>/<item>", which labels
 * the call and the device work it issues. The program writes the ground truth, as it did it, to
 * the file named by AMB_TRUTH (JSON lines):
 *     {"edge": [child, parent], "kind": K, "lost": bool}   a true parent edge; nodes are "C:<label>"
 *                                                          (a call) or "W:<label>" (its device work)
 *     {"node": N}                                          a node whose parents are scored
 *     {"target": N, "cause": C, "complete": bool, "path": [N, ...]}   a late item's true cause and
 *                                                          critical path (N first)
 *     {"tear": "<label>"}                                  calls of this range are to be torn from
 *                                                          the capture (deliberate record loss)
 *     {"note": "..."}
 * Modes: `amb all` (every scenario, AMB_REPS repetitions, default 4) and `amb lossy` (the ring's
 * own overflow: run with a small overwrite ring).
 */
#ifndef AMB_SCENARIOS_H
#define AMB_SCENARIOS_H

#include <nvtx3/nvToolsExt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define AMB_CK(call)                                                                   \
    do {                                                                               \
        cudaError_t e_ = (call);                                                       \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s: error %d\n", __FILE__, __LINE__, #call, (int)e_); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define AMB_ID(id, name) AMB_K_##id,
enum { AMB_KERNELS(AMB_ID) AMB_NK };
#undef AMB_ID

#define AMB_LABEL 96
#define AMB_MAXW 4

static FILE *amb_truth;
static const char *amb_scn;
static int amb_rep;

/* A stream as the benchmark tracks it: its last work item and the event waits pending for its
 * next one. */
typedef struct {
    cudaStream_t s;
    char last[AMB_LABEL];
    char wait[AMB_MAXW][AMB_LABEL];
    int lost[AMB_MAXW];
    int nwait;
} amb_stream;

/* An event: the work item its latest record captured (empty: none), and whether that record is
 * to be lost. */
typedef struct {
    cudaEvent_t e;
    char captured[AMB_LABEL];
    int lost;
} amb_event;

static void amb_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(amb_truth, fmt, ap);
    va_end(ap);
    fputc('\n', amb_truth);
}

static void amb_label(char *out, const char *item)
{
    snprintf(out, AMB_LABEL, "amb/%s/%d/%s", amb_scn, amb_rep, item);
}

static void amb_edge(const char *child, const char *parent, const char *kind, int lost)
{
    amb_say("{\"edge\": [\"%s\", \"%s\"], \"kind\": \"%s\", \"lost\": %s}", child, parent, kind,
            lost ? "true" : "false");
}

static void amb_push(const char *label) { nvtxRangePushA(label); }
static void amb_pop(void) { nvtxRangePop(); }

static void amb_sleep_us(long us)
{
    struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&t, &t) != 0) {
    }
}

static void amb_stream_new(amb_stream *s)
{
    memset(s, 0, sizeof *s);
    AMB_CK(cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking));
}

static void amb_event_new(amb_event *e)
{
    memset(e, 0, sizeof *e);
    AMB_CK(cudaEventCreateWithFlags(&e->e, cudaEventDisableTiming));
}

/* The truth of one work item just issued on `s` under `label`: issued by its call, after the
 * stream's last item, after what the stream's pending waits captured. */
static void amb_work(amb_stream *s, const char *label, const char *issue_kind)
{
    char w[AMB_LABEL + 2], c[AMB_LABEL + 2], p[AMB_LABEL + 2];
    snprintf(w, sizeof w, "W:%s", label);
    snprintf(c, sizeof c, "C:%s", label);
    amb_say("{\"node\": \"%s\"}", w);
    amb_edge(w, c, issue_kind, 0);
    if (s->last[0]) {
        snprintf(p, sizeof p, "W:%s", s->last);
        amb_edge(w, p, "stream", 0);
    }
    for (int i = 0; i < s->nwait; i++) {
        snprintf(p, sizeof p, "W:%s", s->wait[i]);
        amb_edge(w, p, "event", s->lost[i]);
    }
    s->nwait = 0;
    snprintf(s->last, AMB_LABEL, "%s", label);
}

static void amb_kernel(amb_stream *s, int k, const char *item)
{
    char l[AMB_LABEL];
    amb_label(l, item);
    amb_push(l);
    amb_launch(k, s->s);
    amb_pop();
    amb_work(s, l, "issue");
}

static void amb_copy(amb_stream *s, void *dst, const void *src, size_t bytes, const char *item)
{
    char l[AMB_LABEL];
    amb_label(l, item);
    amb_push(l);
    AMB_CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s->s));
    amb_pop();
    amb_work(s, l, "issue");
}

static void amb_record(amb_event *e, amb_stream *s, const char *item, int lost)
{
    char l[AMB_LABEL];
    amb_label(l, item);
    amb_push(l);
    AMB_CK(cudaEventRecord(e->e, s->s));
    amb_pop();
    snprintf(e->captured, AMB_LABEL, "%s", s->last);
    e->lost = lost;
    if (lost)
        amb_say("{\"tear\": \"%s\"}", l);
}

static void amb_wait(amb_stream *s, amb_event *e, const char *item)
{
    char l[AMB_LABEL];
    amb_label(l, item);
    amb_push(l);
    AMB_CK(cudaStreamWaitEvent(s->s, e->e, 0));
    amb_pop();
    if (e->captured[0] && s->nwait < AMB_MAXW) {
        snprintf(s->wait[s->nwait], AMB_LABEL, "%s", e->captured);
        s->lost[s->nwait++] = e->lost;
    }
}

static void amb_sync(amb_stream *s, const char *item)
{
    char l[AMB_LABEL], c[AMB_LABEL + 2], p[AMB_LABEL + 2];
    amb_label(l, item);
    amb_push(l);
    AMB_CK(cudaStreamSynchronize(s->s));
    amb_pop();
    if (s->last[0]) {
        snprintf(c, sizeof c, "C:%s", l);
        snprintf(p, sizeof p, "W:%s", s->last);
        amb_say("{\"node\": \"%s\"}", c);
        amb_edge(c, p, "host_wait", 0);
    }
}

/* A late item's truth: cause, whether its chain is complete, and its critical path (labels of
 * work items, the target first). */
static void amb_target(const char *item, const char *cause, int complete, const char *path1)
{
    char l[AMB_LABEL], p[AMB_LABEL];
    amb_label(l, item);
    if (path1) {
        amb_label(p, path1);
        amb_say("{\"target\": \"W:%s\", \"cause\": \"%s\", \"complete\": %s, \"path\": [\"W:%s\", "
                "\"W:%s\"]}",
                l, cause, complete ? "true" : "false", l, p);
    } else {
        amb_say("{\"target\": \"W:%s\", \"cause\": \"%s\", \"complete\": %s, \"path\": [\"W:%s\"]}",
                l, cause, complete ? "true" : "false", l);
    }
}

static void amb_end(amb_stream *s, int n)
{
    for (int i = 0; i < n; i++) {
        char item[16];
        snprintf(item, sizeof item, "sync%d", i);
        amb_sync(&s[i], item);
    }
    for (int i = 0; i < n; i++)
        AMB_CK(cudaStreamDestroy(s[i].s));
}

/* ---- the pairs -------------------------------------------------------------------------------- */

/* Late launch (host stalled 5 ms before launching b) vs device queueing (b waits on the GPU, through
 * an event, for a 5 ms kernel on another stream). Same symptom: b starts ~5 ms after a ended. */
static void scn_late_host(void)
{
    amb_stream s[1];
    amb_stream_new(&s[0]);
    amb_kernel(&s[0], AMB_K_lh_a, "a");
    amb_sleep_us(5000);
    amb_kernel(&s[0], AMB_K_lh_b, "b");
    amb_target("b", "host", 1, NULL);
    amb_end(s, 1);
}

/* The same symptom from host page faults: before launching b the thread touches 64 MiB of fresh
 * memory, a page fault per page. */
static void scn_late_fault(void)
{
    amb_stream s[1];
    amb_stream_new(&s[0]);
    amb_kernel(&s[0], AMB_K_lf_a, "a");
    size_t n = (size_t)64 << 20;
    char *m = (char *)mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
        for (size_t i = 0; i < n; i += 4096)
            m[i] = 1;
        munmap(m, n);
    }
    amb_kernel(&s[0], AMB_K_lf_b, "b");
    amb_target("b", "host", 1, NULL);
    amb_end(s, 1);
}

static void scn_late_device(void)
{
    amb_stream s[2];
    amb_event e;
    amb_stream_new(&s[0]);
    amb_stream_new(&s[1]);
    amb_event_new(&e);
    amb_kernel(&s[1], AMB_K_ld_long, "long");
    amb_record(&e, &s[1], "record", 0);
    amb_kernel(&s[0], AMB_K_ld_a, "a");
    amb_wait(&s[0], &e, "wait");
    amb_kernel(&s[0], AMB_K_ld_b, "b");
    amb_target("b", "dependency", 1, "long");
    amb_end(s, 2);
    AMB_CK(cudaEventDestroy(e.e));
}

/* Dependency (c waits, through an event, for p on another stream) vs overlap (c is launched when p
 * happens to end, with no edge). Same symptom: c starts right after p ends. */
static void scn_dependency(void)
{
    amb_stream s[2];
    amb_event e;
    amb_stream_new(&s[0]);
    amb_stream_new(&s[1]);
    amb_event_new(&e);
    amb_kernel(&s[1], AMB_K_dp_p, "p");
    amb_record(&e, &s[1], "record", 0);
    amb_wait(&s[0], &e, "wait");
    amb_kernel(&s[0], AMB_K_dp_c, "c");
    amb_target("c", "dependency", 1, "p");
    amb_end(s, 2);
    AMB_CK(cudaEventDestroy(e.e));
}

static void scn_overlap(void)
{
    amb_stream s[2];
    amb_stream_new(&s[0]);
    amb_stream_new(&s[1]);
    amb_kernel(&s[1], AMB_K_ov_p, "p");
    amb_sleep_us(2000);
    amb_kernel(&s[0], AMB_K_ov_c, "c");
    amb_target("c", "host", 1, NULL);
    amb_end(s, 2);
}

/* Slow copy (c's own input copy is large) vs blocked consumer (c's input copy is small; an unrelated
 * large copy runs on another stream at the same time). Same symptom: c starts late. */
static void *amb_host, *amb_dev, *amb_dev2;
static size_t amb_big;

static void scn_slow_copy(void)
{
    amb_stream s[1];
    amb_stream_new(&s[0]);
    amb_copy(&s[0], amb_dev, amb_host, amb_big, "copy");
    amb_kernel(&s[0], AMB_K_sc_c, "c");
    amb_target("c", "dependency", 1, "copy");
    amb_end(s, 1);
}

static void scn_blocked(void)
{
    amb_stream s[2];
    amb_stream_new(&s[0]);
    amb_stream_new(&s[1]);
    amb_copy(&s[1], amb_dev2, amb_host, amb_big, "other");
    amb_copy(&s[0], amb_dev, amb_host, 1 << 20, "copy");
    amb_kernel(&s[0], AMB_K_bc_c, "c");
    amb_target("c", "dependency", 1, "copy");
    amb_end(s, 2);
}

/* Missing record (c waits on an event whose record is torn out of the capture: the parent's record
 * is lost) vs no edge (c is independent of p). Same symptom: no parent for c across streams. */
static void scn_missing(void)
{
    amb_stream s[2];
    amb_event e;
    amb_stream_new(&s[0]);
    amb_stream_new(&s[1]);
    amb_event_new(&e);
    amb_kernel(&s[1], AMB_K_ms_p, "p");
    amb_record(&e, &s[1], "record", 1);
    amb_wait(&s[0], &e, "wait");
    amb_kernel(&s[0], AMB_K_ms_c, "c");
    amb_target("c", "unknown", 0, NULL);
    amb_end(s, 2);
    AMB_CK(cudaEventDestroy(e.e));
}

static void scn_no_edge(void)
{
    amb_stream s[2];
    amb_stream_new(&s[0]);
    amb_stream_new(&s[1]);
    amb_kernel(&s[1], AMB_K_ne_p, "p");
    amb_kernel(&s[0], AMB_K_ne_c, "c");
    amb_target("c", "host", 1, NULL);
    amb_end(s, 2);
}

/* Graph replay (the same kernel name twice: two launches of one instantiated graph) vs direct
 * launch (the same kernel launched twice). */
static void scn_graph(void)
{
    amb_stream s[1];
    cudaGraph_t g;
    cudaGraphExec_t x;
    char l[AMB_LABEL];
    amb_stream_new(&s[0]);
    amb_label(l, "capture");
    amb_push(l);
    AMB_CK(cudaStreamBeginCapture(s[0].s, cudaStreamCaptureModeGlobal));
    amb_launch(AMB_K_rp_k, s[0].s);
    AMB_CK(cudaStreamEndCapture(s[0].s, &g));
    AMB_CK(cudaGraphInstantiate(&x, g, 0));
    amb_pop();
    for (int i = 0; i < 2; i++) {
        char item[16];
        snprintf(item, sizeof item, "launch%d", i);
        amb_label(l, item);
        amb_push(l);
        AMB_CK(cudaGraphLaunch(x, s[0].s));
        amb_pop();
        amb_work(&s[0], l, "graph");
    }
    amb_end(s, 1);
    AMB_CK(cudaGraphExecDestroy(x));
    AMB_CK(cudaGraphDestroy(g));
}

static void scn_direct(void)
{
    amb_stream s[1];
    amb_stream_new(&s[0]);
    amb_kernel(&s[0], AMB_K_rp_k, "launch0");
    amb_kernel(&s[0], AMB_K_rp_k, "launch1");
    amb_end(s, 1);
}

/* Stale handles: an event recorded after a long kernel (which is then waited for) is destroyed and
 * a new one created (the runtime may hand out the same address); a wait on the new, never recorded event is a no-op, so c
 * does not depend on long. Then the long kernel's stream is destroyed and a new one created (maybe
 * with the same handle): d, on it, does not follow long in stream order. */
static void scn_stale(void)
{
    amb_stream s[2], t;
    amb_event e1, e2;
    amb_stream_new(&s[0]);
    amb_stream_new(&s[1]);
    amb_event_new(&e1);
    amb_kernel(&s[1], AMB_K_st_long, "long");
    amb_record(&e1, &s[1], "record", 0);
    amb_sync(&s[1], "drain"); /* an event whose record completed: the doubles reuse its address */
    AMB_CK(cudaEventDestroy(e1.e));
    amb_event_new(&e2);
    amb_say("{\"note\": \"stale %d: event handle reused: %d\"}", amb_rep, e2.e == e1.e);
    amb_wait(&s[0], &e2, "wait");
    amb_kernel(&s[0], AMB_K_st_c, "c");
    amb_target("c", "host", 1, NULL);
    amb_end(s, 2);
    AMB_CK(cudaEventDestroy(e2.e));
    amb_stream_new(&t);
    amb_say("{\"note\": \"stale %d: stream handle reused: %d\"}", amb_rep, t.s == s[1].s);
    amb_kernel(&t, AMB_K_st_d, "d");
    amb_end(&t, 1);
}

/* Device busy: the victim is ready at once but an unrelated kernel on another stream fills the
 * device (on real CUDA the hog reserves every SM's shared memory; the doubles' streams never
 * contend, so there the victim is not delayed and its true cause is its issue). */
#ifndef AMB_DEVICE_CONTENTION
#define AMB_DEVICE_CONTENTION 0
#endif
static void scn_busy(void)
{
    amb_stream s[2];
    amb_stream_new(&s[0]);
    amb_stream_new(&s[1]);
    amb_kernel(&s[1], AMB_K_bz_hog, "hog");
    amb_sleep_us(200);
    amb_kernel(&s[0], AMB_K_bz_victim, "victim");
    amb_target("victim", AMB_DEVICE_CONTENTION ? "device" : "host", 1, NULL);
    amb_end(s, 2);
}

/* The ring's own overflow: long's event record is followed by enough NVTX marks (recorded at every
 * level, no device work) to overwrite it in a small overwrite ring; c waits on the event. Marks, not
 * launches: at level 3 the launches' device records arrive when CUPTI flushes, after c, and would
 * overwrite c instead. */
static void scn_lossy(void)
{
    amb_stream s[2];
    amb_event e;
    amb_stream_new(&s[0]);
    amb_stream_new(&s[1]);
    amb_event_new(&e);
    amb_kernel(&s[1], AMB_K_ly_long, "long");
    amb_record(&e, &s[1], "record", 1);
    for (int i = 0; i < 40000; i++)
        nvtxMarkA("amb filler");
    amb_wait(&s[0], &e, "wait");
    amb_kernel(&s[0], AMB_K_ly_c, "c");
    amb_target("c", "unknown", 0, NULL);
    amb_end(s, 2);
    AMB_CK(cudaEventDestroy(e.e));
}

static const struct {
    const char *name;
    void (*run)(void);
} amb_scenarios[] = {
    { "late_host", scn_late_host }, { "late_fault", scn_late_fault },
    { "late_device", scn_late_device },
    { "dependency", scn_dependency }, { "overlap", scn_overlap },
    { "slow_copy", scn_slow_copy }, { "blocked", scn_blocked },
    { "missing", scn_missing }, { "no_edge", scn_no_edge },
    { "graph", scn_graph }, { "direct", scn_direct },
    { "stale", scn_stale }, { "busy", scn_busy },
};

static int amb_main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    const char *path = getenv("AMB_TRUTH");
    int reps = getenv("AMB_REPS") ? atoi(getenv("AMB_REPS")) : 4;
    amb_big = getenv("AMB_COPY_MB") ? (size_t)atol(getenv("AMB_COPY_MB")) << 20 : (size_t)64 << 20;
    amb_truth = path ? fopen(path, "w") : NULL;
    if (!amb_truth) {
        fprintf(stderr, "amb: set AMB_TRUTH to the truth file to write\n");
        return 2;
    }
    AMB_CK(cudaMallocHost(&amb_host, amb_big));
    memset(amb_host, 1, amb_big);
    AMB_CK(cudaMalloc(&amb_dev, amb_big));
    AMB_CK(cudaMalloc(&amb_dev2, amb_big));
    /* Work on the legacy default stream first: the scenarios' streams are non-blocking, so none of
     * their work is ordered after it (a graph that ignores the flag invents edges from it). */
    amb_launch(AMB_K_rp_k, 0);
    AMB_CK(cudaDeviceSynchronize());
    if (!strcmp(mode, "lossy")) {
        amb_scn = "lossy";
        amb_rep = 0;
        scn_lossy();
    } else {
        for (amb_rep = 0; amb_rep < reps; amb_rep++)
            for (size_t i = 0; i < sizeof amb_scenarios / sizeof amb_scenarios[0]; i++) {
                amb_scn = amb_scenarios[i].name;
                amb_scenarios[i].run();
            }
    }
    AMB_CK(cudaFree(amb_dev));
    AMB_CK(cudaFree(amb_dev2));
    AMB_CK(cudaFreeHost(amb_host));
    fclose(amb_truth);
    printf("amb %s: %d reps done\n", mode, reps);
    return 0;
}

#endif
