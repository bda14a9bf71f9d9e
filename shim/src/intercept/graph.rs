//! Graph contents. A graph launch runs every kernel node of its instantiated graph, but the launch call
//! names only the exec handle. So after each successful instantiation the shim walks the graph's nodes
//! (into child graphs too) with the driver's own API and writes one `GraphNode` entry per kernel node;
//! the scanner fans each graph launch out to those kernels. Instantiation is rare, so this runs off the
//! hot path and may allocate.

use super::hooks::P;
use crate::hot::{guard, record, state};
use crate::resolve;
use crate::strings::names::{self, How};
use causeway_ring::layout::{Kind, Layer};
use std::ffi::CStr;
use std::sync::atomic::AtomicUsize;

const NODE_TYPE_KERNEL: i32 = 0;
const NODE_TYPE_GRAPH: i32 = 4;
/// Child graphs nest; real ones are shallow. The bound keeps a corrupt graph from recursing forever.
const MAX_DEPTH: usize = 8;

static GET_NODES: AtomicUsize = AtomicUsize::new(0);
static GET_TYPE: AtomicUsize = AtomicUsize::new(0);
static KERNEL_PARAMS: AtomicUsize = AtomicUsize::new(0);
static CHILD_GRAPH: AtomicUsize = AtomicUsize::new(0);

fn real(slot: &AtomicUsize, name: &CStr) -> Option<usize> {
    match resolve::real(slot, name, Layer::Driver) {
        0 => None,
        f => Some(f),
    }
}

/// The kernel functions (or CUkernels) of `graph`'s kernel nodes, child graphs included, in node order.
fn kernels(graph: P, depth: usize, out: &mut Vec<(How, u64)>) -> Option<()> {
    type GetNodes = unsafe extern "C" fn(P, *mut P, *mut usize) -> i32;
    type GetType = unsafe extern "C" fn(P, *mut i32) -> i32;
    type GetParams = unsafe extern "C" fn(P, *mut u64) -> i32;
    type GetChild = unsafe extern "C" fn(P, *mut P) -> i32;
    // SAFETY: (all four) the driver's functions of these names have these signatures (cuda.h).
    let get_nodes =
        unsafe { std::mem::transmute::<usize, GetNodes>(real(&GET_NODES, c"cuGraphGetNodes")?) };
    // SAFETY: as above.
    let get_type =
        unsafe { std::mem::transmute::<usize, GetType>(real(&GET_TYPE, c"cuGraphNodeGetType")?) };
    // SAFETY: as above.
    let params = unsafe {
        std::mem::transmute::<usize, GetParams>(real(
            &KERNEL_PARAMS,
            c"cuGraphKernelNodeGetParams_v2",
        )?)
    };
    // SAFETY: as above.
    let child = unsafe {
        std::mem::transmute::<usize, GetChild>(real(
            &CHILD_GRAPH,
            c"cuGraphChildGraphNodeGetGraph",
        )?)
    };
    let mut n = 0usize;
    // SAFETY: NULL nodes asks for the count only.
    if unsafe { get_nodes(graph, std::ptr::null_mut(), &mut n) } != 0 {
        return None;
    }
    let mut nodes: Vec<P> = vec![std::ptr::null_mut(); n];
    // SAFETY: `nodes` has room for `n` handles.
    if unsafe { get_nodes(graph, nodes.as_mut_ptr(), &mut n) } != 0 {
        return None;
    }
    for &node in nodes.iter().take(n) {
        let mut ty = -1;
        // SAFETY: a node handle the driver just gave us and a valid out-pointer.
        if unsafe { get_type(node, &mut ty) } != 0 {
            continue;
        }
        if ty == NODE_TYPE_KERNEL {
            // CUDA_KERNEL_NODE_PARAMS_v2 is 72 bytes: func at 0, kern (a CUkernel) at 56.
            let mut p = [0u64; 16];
            // SAFETY: `p` is larger than the struct the driver fills.
            if unsafe { params(node, p.as_mut_ptr()) } == 0 {
                match (p[0], p[7]) {
                    (0, 0) => {}
                    (0, kern) => out.push((How::Kernel, kern)),
                    (func, _) => out.push((How::Function, func)),
                }
            }
        } else if ty == NODE_TYPE_GRAPH && depth < MAX_DEPTH {
            let mut g: P = std::ptr::null_mut();
            // SAFETY: as above.
            if unsafe { child(node, &mut g) } == 0 && !g.is_null() {
                kernels(g, depth + 1, out);
            }
        }
    }
    Some(())
}

/// After a successful instantiation of `graph` into `*exec_out`: one `GraphNode` entry per kernel node.
pub fn nodes(exec_out: P, graph: P) {
    if exec_out.is_null() || graph.is_null() || state::writer().is_none() {
        return;
    }
    // SAFETY: the instantiation succeeded, so the driver wrote the exec handle here.
    let exec = unsafe { *(exec_out as *const u64) };
    let mut found = Vec::new();
    guard::internal(|| kernels(graph, 0, &mut found));
    let count = found.len() as u64;
    for (i, (how, handle)) in found.into_iter().enumerate() {
        names::note(how, handle);
        record::instant(Kind::GraphNode, 0, exec, handle, i as u64 | count << 32);
    }
}
