/*
 * cw_activity.h - how the CUPTI double (libcupti.so.13) sees the driver
 * double's API calls and device work.  Shared by libcuda_double.c,
 * libcudart_double.c and libcupti_double.c; not part of any CUDA API.
 *
 * The driver double exports (not through cuGetProcAddress):
 *
 *   void cwd_set_activity_hooks(const struct cwd_activity_hooks *h);
 *       Installs h (NULL removes it).  h must stay valid while installed.
 *       With no hooks installed the driver double behaves exactly as before:
 *       the calls below cost a thread-local read and an atomic load.
 *
 *   uint32_t cwd_runtime_api_enter(int cbid);
 *   void cwd_runtime_api_exit(int cbid, uint32_t correlation, int result);
 *       Called by the runtime double around each runtime launch, copy,
 *       memset and graph launch (cbid: CUPTI's runtime callback id).  While a
 *       thread is inside such a call, the driver calls the runtime makes are
 *       internal: they are not reported as driver API calls and the work they
 *       submit carries the runtime call's correlation id.  This is what the
 *       real stack does: measured on an H200 (CUDA 13.0 driver, CUPTI 13.0),
 *       cudaLaunchKernel, cudaMemcpyAsync and cudaGraphLaunch produce no
 *       DRIVER records for the launch/copy they make, and the device records
 *       carry the RUNTIME record's correlation id.
 *
 *   CUcontext cwd_current_context(void);
 *       The calling thread's current context (NULL if none), without
 *       counting a cuCtxGetCurrent call: the CUPTI double's callback data.
 *
 * The hooks, called by the driver double:
 *   api_enter(domain, cbid) on the calling thread at the start of every
 *       launch, copy, memset and graph-launch entry point (domain
 *       CWD_API_DRIVER, cbid: CUPTI's driver callback id of that exported
 *       variant), and of the runtime ones above (CWD_API_RUNTIME); returns
 *       the call's correlation id (nonzero).  Capture-time calls are
 *       reported too (they get an id; their work becomes graph nodes).
 *   api_exit(domain, cbid, correlation, result) on the same thread when that
 *       call returns.
 *   work_done(w) on the stream's worker thread when a kernel, copy or memset
 *       submitted by a reported call has finished, before the stream counts
 *       it as complete (so a synchronize that returns has seen its records).
 *       Work run by a graph launch carries the graph launch's correlation id.
 *   now() gives the timestamps: w->start and w->end are now() called on the
 *       worker when it starts and finishes the work.
 */
#ifndef CW_ACTIVITY_H
#define CW_ACTIVITY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { CWD_API_DRIVER = 1, CWD_API_RUNTIME = 2 };

/* Numbering of the format's device intervals: 1 kernel, 2 memcpy, 3 memset. */
enum { CWD_WORK_KERNEL = 1, CWD_WORK_MEMCPY = 2, CWD_WORK_MEMSET = 3 };

struct cwd_work {
    int kind;               /* CWD_WORK_* */
    uint32_t correlation;   /* api_enter's id of the call that submitted it */
    uint64_t start, end;    /* now() at the worker's start and end of the work */
    uint32_t stream_id;     /* unique per stream, never reused */
    uint32_t device;        /* always 0 */
    uint32_t context_id;    /* always 1 (the primary context) */
    /* kernels */
    const char *name;       /* the kernel's name, owned by the driver double */
    uint32_t grid[3], block[3];
    uint32_t shared_mem;    /* dynamic shared memory bytes */
    int cooperative;        /* 1 for cuLaunchCooperativeKernel* */
    /* copies and memsets */
    uint64_t bytes;
    uint8_t copy_kind;      /* CUpti_ActivityMemcpyKind numbering (HTOD = 1, ...) */
    uint8_t src_kind, dst_kind; /* CUpti_ActivityMemoryKind numbering; memset: dst_kind */
    uint8_t async;          /* an asynchronous copy/memset call (not graph work) */
    uint32_t value;         /* memset byte */
    /* graph work (0 otherwise) */
    uint32_t graph_id;      /* id of the executable graph (child graphs' work too) */
    uint64_t graph_node_id; /* (graph_id << 32) | the node's number in the exec */
    /* now() when the work was pushed to its stream (CUPTI's "queued") and when the stream's
     * worker took it up, its predecessors done (CUPTI's "submitted"); 0 when not reported */
    uint64_t queued, submitted;
};

struct cwd_activity_hooks {
    uint32_t (*api_enter)(int domain, int cbid);
    void (*api_exit)(int domain, int cbid, uint32_t correlation, int result);
    void (*work_done)(const struct cwd_work *w);
    uint64_t (*now)(void);
};

void cwd_set_activity_hooks(const struct cwd_activity_hooks *h);
uint32_t cwd_runtime_api_enter(int cbid);
/* cwd_current_context: looked up with dlsym (its type is the driver's
 * CUcontext, which this header does not define). */
void cwd_runtime_api_exit(int cbid, uint32_t correlation, int result);

/* CUPTI callback ids of the reported entry points (cupti_driver_cbid.h,
 * cupti_runtime_cbid.h of CUPTI 13.0; checked by `make -C ci cupti-abi-check`). */
#define CWD_CBID_DRIVER(X)                                                     \
    X(cuLaunchKernel, 307) X(cuLaunchKernel_ptsz, 442)                         \
    X(cuLaunchKernelEx, 652) X(cuLaunchKernelEx_ptsz, 653)                     \
    X(cuLaunchCooperativeKernel, 477) X(cuLaunchCooperativeKernel_ptsz, 478)   \
    X(cuMemcpy, 305) X(cuMemcpy_ptds, 408)                                     \
    X(cuMemcpyAsync, 306) X(cuMemcpyAsync_ptsz, 418)                           \
    X(cuMemcpyHtoD_v2, 276) X(cuMemcpyHtoD_v2_ptds, 397)                       \
    X(cuMemcpyDtoH_v2, 278) X(cuMemcpyDtoH_v2_ptds, 398)                       \
    X(cuMemcpyHtoDAsync_v2, 277) X(cuMemcpyHtoDAsync_v2_ptsz, 421)             \
    X(cuMemcpyDtoHAsync_v2, 279) X(cuMemcpyDtoHAsync_v2_ptsz, 422)             \
    X(cuMemcpy2D_v2, 287) X(cuMemcpy2D_v2_ptds, 405)                           \
    X(cuMemcpy2DAsync_v2, 289) X(cuMemcpy2DAsync_v2_ptsz, 424)                 \
    X(cuMemcpyPeer, 318) X(cuMemcpyPeer_ptds, 409)                             \
    X(cuMemcpyPeerAsync, 319) X(cuMemcpyPeerAsync_ptsz, 426)                   \
    X(cuMemsetD8_v2, 249) X(cuMemsetD8_v2_ptds, 411)                           \
    X(cuMemsetD8Async, 216) X(cuMemsetD8Async_ptsz, 428)                       \
    X(cuGraphLaunch, 514) X(cuGraphLaunch_ptsz, 515)

#define CWD_CBID_RUNTIME(X)                                                    \
    X(cudaMemcpy_v3020, 31) X(cudaMemcpy_ptds_v7000, 215)                      \
    X(cudaMemcpyAsync_v3020, 41) X(cudaMemcpyAsync_ptsz_v7000, 225)            \
    X(cudaMemcpy2D_v3020, 32) X(cudaMemcpy2D_ptds_v7000, 216)                  \
    X(cudaMemcpy2DAsync_v3020, 44) X(cudaMemcpy2DAsync_ptsz_v7000, 228)        \
    X(cudaMemcpyPeer_v4000, 160) X(cudaMemcpyPeerAsync_v4000, 161)             \
    X(cudaMemset_v3020, 49) X(cudaMemset_ptds_v7000, 233)                      \
    X(cudaMemsetAsync_v3020, 51) X(cudaMemsetAsync_ptsz_v7000, 235)            \
    X(cudaLaunchKernel_v7000, 211) X(cudaLaunchKernel_ptsz_v7000, 214)         \
    X(cudaLaunchKernelExC_v11060, 430) X(cudaLaunchKernelExC_ptsz_v11060, 431) \
    X(cudaLaunchCooperativeKernel_v9000, 269)                                  \
    X(cudaLaunchCooperativeKernel_ptsz_v9000, 270)                             \
    X(cudaGraphLaunch_v10000, 311) X(cudaGraphLaunch_ptsz_v10000, 312)         \
    X(__cudaLaunchKernel_v13000, 505) X(__cudaLaunchKernel_ptsz_v13000, 506)

#define CWD_X_ENUM(name, id) CWD_CBID_##name = id,
enum { CWD_CBID_DRIVER(CWD_X_ENUM) CWD_CBID_RUNTIME(CWD_X_ENUM) CWD_CBID_END_ };
#undef CWD_X_ENUM

#ifdef __cplusplus
}
#endif
#endif /* CW_ACTIVITY_H */
