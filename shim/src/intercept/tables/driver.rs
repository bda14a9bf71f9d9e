//! The CUDA driver hook table: every exported variant with its own ABI (`_v2`, `_ptsz`, `_ptds`), so
//! that whichever one `cuGetProcAddress` or `dlsym` hands out, a hook with exactly that signature
//! stands in for it. Legacy v1 ABIs (32-bit device pointers) are not hooked: they pass through.

use crate::intercept::graph;
use crate::intercept::hooks::{cfg_grid, cfg_stream, hook_table, P};
use causeway_ring::layout::capture_phase;

hook_table! {
    TABLE, Driver, first_id = 300, missing = 3;
    // Launches: a1 is the CUfunction (or CUkernel), a2 the grid's x | y << 32.
    cuLaunchKernel: 2 Launch (f: P, gx: u32, gy: u32, gz: u32, bx: u32, by: u32, bz: u32, shmem: u32, s: P, params: P, extra: P) => [s, f, gx as u64 | (gy as u64) << 32];
    cuLaunchKernel_ptsz: 2 Launch (f: P, gx: u32, gy: u32, gz: u32, bx: u32, by: u32, bz: u32, shmem: u32, s: P, params: P, extra: P) => [s, f, gx as u64 | (gy as u64) << 32];
    cuLaunchKernelEx: 2 Launch (cfg: P, f: P, params: P, extra: P) => [cfg_stream(cfg), f, cfg_grid(cfg)];
    cuLaunchKernelEx_ptsz: 2 Launch (cfg: P, f: P, params: P, extra: P) => [cfg_stream(cfg), f, cfg_grid(cfg)];
    cuLaunchCooperativeKernel: 2 Launch (f: P, gx: u32, gy: u32, gz: u32, bx: u32, by: u32, bz: u32, shmem: u32, s: P, params: P) => [s, f, gx as u64 | (gy as u64) << 32];
    cuLaunchCooperativeKernel_ptsz: 2 Launch (f: P, gx: u32, gy: u32, gz: u32, bx: u32, by: u32, bz: u32, shmem: u32, s: P, params: P) => [s, f, gx as u64 | (gy as u64) << 32];
    cuLaunchHostFunc: 2 HostFunc (s: P, f: P, data: P) => [s, f, 0];
    cuLaunchHostFunc_ptsz: 2 HostFunc (s: P, f: P, data: P) => [s, f, 0];
    cuLaunchHostFunc_v2: 2 HostFunc (s: P, f: P, data: P, mode: u32) => [s, f, mode];
    cuLaunchHostFunc_v2_ptsz: 2 HostFunc (s: P, f: P, data: P, mode: u32) => [s, f, mode];
    // Copies: a1 bytes, a2 direction as cudaMemcpyKind (1 H2D, 2 D2H, 3 D2D, 4 default/unified).
    cuMemcpy: 2 Copy (dst: u64, src: u64, n: usize) => [0, n, 4];
    cuMemcpy_ptds: 2 Copy (dst: u64, src: u64, n: usize) => [0, n, 4];
    cuMemcpyAsync: 2 Copy (dst: u64, src: u64, n: usize, s: P) => [s, n, 4];
    cuMemcpyAsync_ptsz: 2 Copy (dst: u64, src: u64, n: usize, s: P) => [s, n, 4];
    cuMemcpyHtoD_v2: 2 Copy (dst: u64, src: P, n: usize) => [0, n, 1];
    cuMemcpyHtoD_v2_ptds: 2 Copy (dst: u64, src: P, n: usize) => [0, n, 1];
    cuMemcpyDtoH_v2: 2 Copy (dst: P, src: u64, n: usize) => [0, n, 2];
    cuMemcpyDtoH_v2_ptds: 2 Copy (dst: P, src: u64, n: usize) => [0, n, 2];
    cuMemcpyDtoD_v2: 2 Copy (dst: u64, src: u64, n: usize) => [0, n, 3];
    cuMemcpyDtoD_v2_ptds: 2 Copy (dst: u64, src: u64, n: usize) => [0, n, 3];
    cuMemcpyHtoDAsync_v2: 2 Copy (dst: u64, src: P, n: usize, s: P) => [s, n, 1];
    cuMemcpyHtoDAsync_v2_ptsz: 2 Copy (dst: u64, src: P, n: usize, s: P) => [s, n, 1];
    cuMemcpyDtoHAsync_v2: 2 Copy (dst: P, src: u64, n: usize, s: P) => [s, n, 2];
    cuMemcpyDtoHAsync_v2_ptsz: 2 Copy (dst: P, src: u64, n: usize, s: P) => [s, n, 2];
    cuMemcpyDtoDAsync_v2: 2 Copy (dst: u64, src: u64, n: usize, s: P) => [s, n, 3];
    cuMemcpyDtoDAsync_v2_ptsz: 2 Copy (dst: u64, src: u64, n: usize, s: P) => [s, n, 3];
    cuMemcpy2D_v2: 2 Copy (p: P) => [0, 0, 0];
    cuMemcpy2D_v2_ptds: 2 Copy (p: P) => [0, 0, 0];
    cuMemcpy2DUnaligned_v2: 2 Copy (p: P) => [0, 0, 0];
    cuMemcpy2DUnaligned_v2_ptds: 2 Copy (p: P) => [0, 0, 0];
    cuMemcpy2DAsync_v2: 2 Copy (p: P, s: P) => [s, 0, 0];
    cuMemcpy2DAsync_v2_ptsz: 2 Copy (p: P, s: P) => [s, 0, 0];
    cuMemcpy3D_v2: 2 Copy (p: P) => [0, 0, 0];
    cuMemcpy3D_v2_ptds: 2 Copy (p: P) => [0, 0, 0];
    cuMemcpy3DAsync_v2: 2 Copy (p: P, s: P) => [s, 0, 0];
    cuMemcpy3DAsync_v2_ptsz: 2 Copy (p: P, s: P) => [s, 0, 0];
    cuMemcpyPeer: 2 Copy (dst: u64, dctx: P, src: u64, sctx: P, n: usize) => [0, n, 3];
    cuMemcpyPeer_ptds: 2 Copy (dst: u64, dctx: P, src: u64, sctx: P, n: usize) => [0, n, 3];
    cuMemcpyPeerAsync: 2 Copy (dst: u64, dctx: P, src: u64, sctx: P, n: usize, s: P) => [s, n, 3];
    cuMemcpyPeerAsync_ptsz: 2 Copy (dst: u64, dctx: P, src: u64, sctx: P, n: usize, s: P) => [s, n, 3];
    // Memsets: a1 is the element count times the element size.
    cuMemsetD8_v2: 2 Memset (d: u64, v: u8, n: usize) => [0, n, 0];
    cuMemsetD8_v2_ptds: 2 Memset (d: u64, v: u8, n: usize) => [0, n, 0];
    cuMemsetD16_v2: 2 Memset (d: u64, v: u16, n: usize) => [0, n * 2, 0];
    cuMemsetD16_v2_ptds: 2 Memset (d: u64, v: u16, n: usize) => [0, n * 2, 0];
    cuMemsetD32_v2: 2 Memset (d: u64, v: u32, n: usize) => [0, n * 4, 0];
    cuMemsetD32_v2_ptds: 2 Memset (d: u64, v: u32, n: usize) => [0, n * 4, 0];
    cuMemsetD8Async: 2 Memset (d: u64, v: u8, n: usize, s: P) => [s, n, 0];
    cuMemsetD8Async_ptsz: 2 Memset (d: u64, v: u8, n: usize, s: P) => [s, n, 0];
    cuMemsetD16Async: 2 Memset (d: u64, v: u16, n: usize, s: P) => [s, n * 2, 0];
    cuMemsetD16Async_ptsz: 2 Memset (d: u64, v: u16, n: usize, s: P) => [s, n * 2, 0];
    cuMemsetD32Async: 2 Memset (d: u64, v: u32, n: usize, s: P) => [s, n * 4, 0];
    cuMemsetD32Async_ptsz: 2 Memset (d: u64, v: u32, n: usize, s: P) => [s, n * 4, 0];
    cuMemsetD2D8_v2: 2 Memset (d: u64, pitch: usize, v: u8, w: usize, h: usize) => [0, w * h, 0];
    cuMemsetD2D8_v2_ptds: 2 Memset (d: u64, pitch: usize, v: u8, w: usize, h: usize) => [0, w * h, 0];
    cuMemsetD2D32_v2: 2 Memset (d: u64, pitch: usize, v: u32, w: usize, h: usize) => [0, w * h * 4, 0];
    cuMemsetD2D32_v2_ptds: 2 Memset (d: u64, pitch: usize, v: u32, w: usize, h: usize) => [0, w * h * 4, 0];
    cuMemsetD2D8Async: 2 Memset (d: u64, pitch: usize, v: u8, w: usize, h: usize, s: P) => [s, w * h, 0];
    cuMemsetD2D8Async_ptsz: 2 Memset (d: u64, pitch: usize, v: u8, w: usize, h: usize, s: P) => [s, w * h, 0];
    cuMemsetD2D32Async: 2 Memset (d: u64, pitch: usize, v: u32, w: usize, h: usize, s: P) => [s, w * h * 4, 0];
    cuMemsetD2D32Async_ptsz: 2 Memset (d: u64, pitch: usize, v: u32, w: usize, h: usize, s: P) => [s, w * h * 4, 0];
    // Waits and events.
    cuCtxSynchronize: 2 Sync () => [0, 0, 0];
    cuCtxSynchronize_v2: 2 Sync (ctx: P) => [0, ctx, 0];
    cuStreamSynchronize: 2 Sync (s: P) => [s, 0, 0];
    cuStreamSynchronize_ptsz: 2 Sync (s: P) => [s, 0, 0];
    cuEventSynchronize: 2 EventSync (e: P) => [0, e, 0];
    cuStreamWaitEvent: 2 StreamWait (s: P, e: P, flags: u32) => [s, e, flags];
    cuStreamWaitEvent_ptsz: 2 StreamWait (s: P, e: P, flags: u32) => [s, e, flags];
    cuEventRecord: 2 EventRecord (e: P, s: P) => [s, e, 0];
    cuEventRecord_ptsz: 2 EventRecord (e: P, s: P) => [s, e, 0];
    cuEventRecordWithFlags: 2 EventRecord (e: P, s: P, flags: u32) => [s, e, flags];
    cuEventRecordWithFlags_ptsz: 2 EventRecord (e: P, s: P, flags: u32) => [s, e, flags];
    // Graphs and capture.
    cuGraphLaunch: 2 GraphLaunch (exec: P, s: P) => [s, exec, 0];
    cuGraphLaunch_ptsz: 2 GraphLaunch (exec: P, s: P) => [s, exec, 0];
    // The CUDA 10.0 form (no mode argument): cudart still asks for it at version 10000.
    cuStreamBeginCapture: 2 Capture (s: P) => [s, 0, capture_phase::BEGIN];
    cuStreamBeginCapture_ptsz: 2 Capture (s: P) => [s, 0, capture_phase::BEGIN];
    cuStreamBeginCapture_v2: 2 Capture (s: P, mode: i32) => [s, mode, capture_phase::BEGIN];
    cuStreamBeginCapture_v2_ptsz: 2 Capture (s: P, mode: i32) => [s, mode, capture_phase::BEGIN];
    cuStreamEndCapture: 2 Capture (s: P, graph: P) => [s, 0, capture_phase::END];
    cuStreamEndCapture_ptsz: 2 Capture (s: P, graph: P) => [s, 0, capture_phase::END];
    cuGraphInstantiateWithFlags: 2 Graph (out: P, g: P, flags: u64) => [0, g, flags], after graph::nodes(out, g);
    cuGraphInstantiateWithParams: 2 Graph (out: P, g: P, params: P) => [0, g, 0], after graph::nodes(out, g);
    cuGraphInstantiateWithParams_ptsz: 2 Graph (out: P, g: P, params: P) => [0, g, 0], after graph::nodes(out, g);
    cuGraphExecDestroy: 4 Graph (exec: P) => [0, exec, 0];
    cuGraphDestroy: 4 Graph (g: P) => [0, g, 0];
    // Queries and handles.
    cuStreamQuery: 4 Query (s: P) => [s, 0, 0];
    cuStreamQuery_ptsz: 4 Query (s: P) => [s, 0, 0];
    cuEventQuery: 4 Query (e: P) => [0, e, 0];
    cuStreamCreate: 4 Stream (out: P, flags: u32) => [0, 0, flags];
    cuStreamCreateWithPriority: 4 Stream (out: P, flags: u32, prio: i32) => [0, 0, flags];
    cuStreamDestroy_v2: 4 Stream (s: P) => [s, 0, 0];
    cuEventCreate: 4 Event (out: P, flags: u32) => [0, 0, flags];
    cuEventDestroy_v2: 4 Event (e: P) => [0, e, 0];
    // Memory.
    cuMemAlloc_v2: 4 Alloc (out: P, n: usize) => [0, n, 0];
    cuMemAllocHost_v2: 4 Alloc (out: P, n: usize) => [0, n, 0];
    cuMemHostAlloc: 4 Alloc (out: P, n: usize, flags: u32) => [0, n, flags];
    cuMemAllocManaged: 4 Alloc (out: P, n: usize, flags: u32) => [0, n, flags];
    cuMemAllocPitch_v2: 4 Alloc (out: P, pitch: P, w: usize, h: usize, elem: u32) => [0, w * h, 0];
    cuMemAllocAsync: 4 Alloc (out: P, n: usize, s: P) => [s, n, 0];
    cuMemAllocAsync_ptsz: 4 Alloc (out: P, n: usize, s: P) => [s, n, 0];
    cuMemFree_v2: 4 Free (d: u64) => [0, d, 0];
    cuMemFreeHost: 4 Free (p: P) => [0, p, 0];
    cuMemFreeAsync: 4 Free (d: u64, s: P) => [s, d, 0];
    cuMemFreeAsync_ptsz: 4 Free (d: u64, s: P) => [s, d, 0];
    // Modules, libraries and function lookup.
    cuInit: 4 Other (flags: u32) => [0, 0, flags];
    cuModuleLoad: 4 Module (out: P, path: P) => [0, 0, 0];
    cuModuleLoadData: 4 Module (out: P, image: P) => [0, 0, 0];
    cuModuleLoadDataEx: 4 Module (out: P, image: P, n: u32, opts: P, vals: P) => [0, 0, 0];
    cuModuleLoadFatBinary: 4 Module (out: P, fat: P) => [0, 0, 0];
    cuModuleUnload: 4 Module (m: P) => [0, m, 0];
    cuModuleGetFunction: 4 Module (out: P, m: P, name: P) => [0, m, 0];
    cuLibraryLoadData: 4 Module (out: P, code: P, jo: P, jv: P, nj: u32, lo: P, lv: P, nl: u32) => [0, 0, 0];
    cuLibraryLoadFromFile: 4 Module (out: P, path: P, jo: P, jv: P, nj: u32, lo: P, lv: P, nl: u32) => [0, 0, 0];
    cuLibraryUnload: 4 Module (lib: P) => [0, lib, 0];
    cuLibraryGetKernel: 4 Module (out: P, lib: P, name: P) => [0, lib, 0];
    cuKernelGetFunction: 4 Module (out: P, k: P) => [0, k, 0];
}
