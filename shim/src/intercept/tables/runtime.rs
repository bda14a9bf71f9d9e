//! The CUDA runtime (cudart) hook table. Each line: exported name, capture level, class, the C
//! signature (from cuda_runtime_api.h), and which arguments go into the entry's a0/a1/a2 — see
//! `causeway_ring::layout::Class` for what each class stores where.

use crate::intercept::graph;
use crate::intercept::hooks::{cfg_grid, cfg_stream, grid, hook_table, Dim3, P};
use causeway_ring::layout::capture_phase;

hook_table! {
    TABLE, Runtime, first_id = 1, missing = 3;
    // Launches. nvcc 13's <<<>>> stubs call __cudaLaunchKernel with a cudaKernel_t.
    cudaLaunchKernel: 2 Launch (func: P, g: Dim3, b: Dim3, args: P, shmem: usize, s: P) => [s, func, grid(g)];
    cudaLaunchKernel_ptsz: 2 Launch (func: P, g: Dim3, b: Dim3, args: P, shmem: usize, s: P) => [s, func, grid(g)];
    __cudaLaunchKernel: 2 Launch (k: P, g: Dim3, b: Dim3, args: P, shmem: usize, s: P) => [s, k, grid(g)];
    __cudaLaunchKernel_ptsz: 2 Launch (k: P, g: Dim3, b: Dim3, args: P, shmem: usize, s: P) => [s, k, grid(g)];
    cudaLaunchKernelExC: 2 Launch (cfg: P, func: P, args: P) => [cfg_stream(cfg), func, cfg_grid(cfg)];
    cudaLaunchKernelExC_ptsz: 2 Launch (cfg: P, func: P, args: P) => [cfg_stream(cfg), func, cfg_grid(cfg)];
    cudaLaunchCooperativeKernel: 2 Launch (func: P, g: Dim3, b: Dim3, args: P, shmem: usize, s: P) => [s, func, grid(g)];
    cudaLaunchCooperativeKernel_ptsz: 2 Launch (func: P, g: Dim3, b: Dim3, args: P, shmem: usize, s: P) => [s, func, grid(g)];
    cudaLaunchHostFunc: 2 HostFunc (s: P, f: P, data: P) => [s, f, 0];
    cudaLaunchHostFunc_ptsz: 2 HostFunc (s: P, f: P, data: P) => [s, f, 0];
    // Copies: a2 is the cudaMemcpyKind.
    cudaMemcpy: 2 Copy (dst: P, src: P, n: usize, kind: i32) => [0, n, kind];
    cudaMemcpy_ptds: 2 Copy (dst: P, src: P, n: usize, kind: i32) => [0, n, kind];
    cudaMemcpyAsync: 2 Copy (dst: P, src: P, n: usize, kind: i32, s: P) => [s, n, kind];
    cudaMemcpyAsync_ptsz: 2 Copy (dst: P, src: P, n: usize, kind: i32, s: P) => [s, n, kind];
    cudaMemcpy2D: 2 Copy (dst: P, dp: usize, src: P, sp: usize, w: usize, h: usize, kind: i32) => [0, w * h, kind];
    cudaMemcpy2D_ptds: 2 Copy (dst: P, dp: usize, src: P, sp: usize, w: usize, h: usize, kind: i32) => [0, w * h, kind];
    cudaMemcpy2DAsync: 2 Copy (dst: P, dp: usize, src: P, sp: usize, w: usize, h: usize, kind: i32, s: P) => [s, w * h, kind];
    cudaMemcpy2DAsync_ptsz: 2 Copy (dst: P, dp: usize, src: P, sp: usize, w: usize, h: usize, kind: i32, s: P) => [s, w * h, kind];
    cudaMemcpy3D: 2 Copy (p: P) => [0, 0, 0];
    cudaMemcpy3D_ptds: 2 Copy (p: P) => [0, 0, 0];
    cudaMemcpy3DAsync: 2 Copy (p: P, s: P) => [s, 0, 0];
    cudaMemcpy3DAsync_ptsz: 2 Copy (p: P, s: P) => [s, 0, 0];
    cudaMemcpyPeer: 2 Copy (dst: P, dd: i32, src: P, sd: i32, n: usize) => [0, n, 3];
    cudaMemcpyPeerAsync: 2 Copy (dst: P, dd: i32, src: P, sd: i32, n: usize, s: P) => [s, n, 3];
    cudaMemcpyToSymbol: 2 Copy (sym: P, src: P, n: usize, off: usize, kind: i32) => [0, n, kind];
    cudaMemcpyToSymbol_ptds: 2 Copy (sym: P, src: P, n: usize, off: usize, kind: i32) => [0, n, kind];
    cudaMemcpyFromSymbol: 2 Copy (dst: P, sym: P, n: usize, off: usize, kind: i32) => [0, n, kind];
    cudaMemcpyFromSymbol_ptds: 2 Copy (dst: P, sym: P, n: usize, off: usize, kind: i32) => [0, n, kind];
    cudaMemcpyToSymbolAsync: 2 Copy (sym: P, src: P, n: usize, off: usize, kind: i32, s: P) => [s, n, kind];
    cudaMemcpyToSymbolAsync_ptsz: 2 Copy (sym: P, src: P, n: usize, off: usize, kind: i32, s: P) => [s, n, kind];
    cudaMemcpyFromSymbolAsync: 2 Copy (dst: P, sym: P, n: usize, off: usize, kind: i32, s: P) => [s, n, kind];
    cudaMemcpyFromSymbolAsync_ptsz: 2 Copy (dst: P, sym: P, n: usize, off: usize, kind: i32, s: P) => [s, n, kind];
    // Memsets.
    cudaMemset: 2 Memset (d: P, v: i32, n: usize) => [0, n, 0];
    cudaMemset_ptds: 2 Memset (d: P, v: i32, n: usize) => [0, n, 0];
    cudaMemsetAsync: 2 Memset (d: P, v: i32, n: usize, s: P) => [s, n, 0];
    cudaMemsetAsync_ptsz: 2 Memset (d: P, v: i32, n: usize, s: P) => [s, n, 0];
    cudaMemset2D: 2 Memset (d: P, pitch: usize, v: i32, w: usize, h: usize) => [0, w * h, 0];
    cudaMemset2D_ptds: 2 Memset (d: P, pitch: usize, v: i32, w: usize, h: usize) => [0, w * h, 0];
    cudaMemset2DAsync: 2 Memset (d: P, pitch: usize, v: i32, w: usize, h: usize, s: P) => [s, w * h, 0];
    cudaMemset2DAsync_ptsz: 2 Memset (d: P, pitch: usize, v: i32, w: usize, h: usize, s: P) => [s, w * h, 0];
    // Waits and the events they wait on.
    cudaDeviceSynchronize: 2 Sync () => [0, 0, 0];
    cudaStreamSynchronize: 2 Sync (s: P) => [s, 0, 0];
    cudaStreamSynchronize_ptsz: 2 Sync (s: P) => [s, 0, 0];
    cudaEventSynchronize: 2 EventSync (e: P) => [0, e, 0];
    cudaStreamWaitEvent: 2 StreamWait (s: P, e: P, flags: u32) => [s, e, flags];
    cudaStreamWaitEvent_ptsz: 2 StreamWait (s: P, e: P, flags: u32) => [s, e, flags];
    cudaEventRecord: 2 EventRecord (e: P, s: P) => [s, e, 0];
    cudaEventRecord_ptsz: 2 EventRecord (e: P, s: P) => [s, e, 0];
    cudaEventRecordWithFlags: 2 EventRecord (e: P, s: P, flags: u32) => [s, e, flags];
    cudaEventRecordWithFlags_ptsz: 2 EventRecord (e: P, s: P, flags: u32) => [s, e, flags];
    // Graphs and stream capture.
    cudaGraphLaunch: 2 GraphLaunch (exec: P, s: P) => [s, exec, 0];
    cudaGraphLaunch_ptsz: 2 GraphLaunch (exec: P, s: P) => [s, exec, 0];
    cudaStreamBeginCapture: 2 Capture (s: P, mode: i32) => [s, mode, capture_phase::BEGIN];
    cudaStreamBeginCapture_ptsz: 2 Capture (s: P, mode: i32) => [s, mode, capture_phase::BEGIN];
    cudaStreamEndCapture: 2 Capture (s: P, graph: P) => [s, 0, capture_phase::END];
    cudaStreamEndCapture_ptsz: 2 Capture (s: P, graph: P) => [s, 0, capture_phase::END];
    // Instantiation records the graph's kernel nodes (GraphNode entries) so the scanner can fan each
    // graph launch out to the kernels it runs.
    cudaGraphInstantiate: 2 Graph (out: P, g: P, flags: u64) => [0, g, flags], after graph::nodes(out, g);
    cudaGraphInstantiateWithFlags: 2 Graph (out: P, g: P, flags: u64) => [0, g, flags], after graph::nodes(out, g);
    cudaGraphInstantiateWithParams: 2 Graph (out: P, g: P, params: P) => [0, g, 0], after graph::nodes(out, g);
    cudaGraphInstantiateWithParams_ptsz: 2 Graph (out: P, g: P, params: P) => [0, g, 0], after graph::nodes(out, g);
    cudaGraphExecDestroy: 4 Graph (exec: P) => [0, exec, 0];
    cudaGraphDestroy: 4 Graph (g: P) => [0, g, 0];
    // Queries, handles, memory (level 4: every intercepted call).
    cudaStreamQuery: 4 Query (s: P) => [s, 0, 0];
    cudaStreamQuery_ptsz: 4 Query (s: P) => [s, 0, 0];
    cudaEventQuery: 4 Query (e: P) => [0, e, 0];
    cudaStreamCreate: 4 Stream (out: P) => [0, 0, 0];
    cudaStreamCreateWithFlags: 4 Stream (out: P, flags: u32) => [0, 0, flags];
    cudaStreamCreateWithPriority: 4 Stream (out: P, flags: u32, prio: i32) => [0, 0, flags];
    cudaStreamDestroy: 4 Stream (s: P) => [s, 0, 0];
    cudaEventCreate: 4 Event (out: P) => [0, 0, 0];
    cudaEventCreateWithFlags: 4 Event (out: P, flags: u32) => [0, 0, flags];
    cudaEventDestroy: 4 Event (e: P) => [0, e, 0];
    cudaEventElapsedTime: 4 Event (ms: P, a: P, b: P) => [0, a, b];
    cudaMalloc: 4 Alloc (out: P, n: usize) => [0, n, 0];
    cudaMallocHost: 4 Alloc (out: P, n: usize) => [0, n, 0];
    cudaHostAlloc: 4 Alloc (out: P, n: usize, flags: u32) => [0, n, flags];
    cudaMallocManaged: 4 Alloc (out: P, n: usize, flags: u32) => [0, n, flags];
    cudaMallocPitch: 4 Alloc (out: P, pitch: P, w: usize, h: usize) => [0, w * h, 0];
    cudaMallocAsync: 4 Alloc (out: P, n: usize, s: P) => [s, n, 0];
    cudaMallocAsync_ptsz: 4 Alloc (out: P, n: usize, s: P) => [s, n, 0];
    cudaFree: 4 Free (p: P) => [0, p, 0];
    cudaFreeHost: 4 Free (p: P) => [0, p, 0];
    cudaFreeAsync: 4 Free (p: P, s: P) => [s, p, 0];
    cudaFreeAsync_ptsz: 4 Free (p: P, s: P) => [s, p, 0];
    cudaGetDriverEntryPoint: 4 Lookup (sym: P, out: P, flags: u64, status: P) => [0, 0, flags];
    cudaGetDriverEntryPointByVersion: 4 Lookup (sym: P, out: P, ver: u32, flags: u64, status: P) => [0, ver, flags];
}
