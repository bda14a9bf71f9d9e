//! Graph contents. A graph launch runs every node of its instantiated graph, but the launch call names
//! only the exec handle. So after each successful instantiation the shim walks the graph's nodes and
//! edges (into child graphs too) with the driver's own API and writes one `GraphNode` entry per kernel
//! node and one `GraphEdge` entry per dependency; the scanner fans each graph launch out to those
//! kernels and orders the work it ran by those edges. Nodes are numbered as the driver numbers them in
//! the executable graph (CUPTI's `graphNodeId` low half, checked on an H200): a graph's own nodes in
//! `cuGraphGetNodes` order, then each child graph's, in turn. Instantiation is rare, so this runs off the
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

/// Edges written per instantiation at most; past it one `GraphEdge` with both ends `u64::MAX` says
/// the list is incomplete (a child graph's edges multiply: every exit node of one times every entry
/// node of the next).
const MAX_EDGES: usize = 1 << 20;

type GetNodes = unsafe extern "C" fn(P, *mut P, *mut usize) -> i32;
type GetType = unsafe extern "C" fn(P, *mut i32) -> i32;
type GetParams = unsafe extern "C" fn(P, *mut u64) -> i32;
type GetChild = unsafe extern "C" fn(P, *mut P) -> i32;
type GetEdgesV2 = unsafe extern "C" fn(P, *mut P, *mut P, *mut u8, *mut usize) -> i32;
type GetEdgesV1 = unsafe extern "C" fn(P, *mut P, *mut P, *mut usize) -> i32;

/// The driver functions a walk calls.
struct Api {
    get_nodes: GetNodes,
    get_type: GetType,
    params: GetParams,
    child: GetChild,
    /// `cuGraphGetEdges_v2` (with edge data) or, on drivers before 12.3, `cuGraphGetEdges`.
    edges: Option<Edges>,
}

#[derive(Clone, Copy)]
enum Edges {
    V2(GetEdgesV2),
    V1(GetEdgesV1),
}

static GET_EDGES_V2: AtomicUsize = AtomicUsize::new(0);
static GET_EDGES: AtomicUsize = AtomicUsize::new(0);

impl Api {
    fn load() -> Option<Api> {
        // SAFETY: (each transmute) the driver's functions of these names have these signatures
        // (cuda.h).
        unsafe {
            Some(Api {
                get_nodes: std::mem::transmute::<usize, GetNodes>(real(
                    &GET_NODES,
                    c"cuGraphGetNodes",
                )?),
                get_type: std::mem::transmute::<usize, GetType>(real(
                    &GET_TYPE,
                    c"cuGraphNodeGetType",
                )?),
                params: std::mem::transmute::<usize, GetParams>(real(
                    &KERNEL_PARAMS,
                    c"cuGraphKernelNodeGetParams_v2",
                )?),
                child: std::mem::transmute::<usize, GetChild>(real(
                    &CHILD_GRAPH,
                    c"cuGraphChildGraphNodeGetGraph",
                )?),
                edges: match real(&GET_EDGES_V2, c"cuGraphGetEdges_v2") {
                    Some(f) => Some(Edges::V2(std::mem::transmute::<usize, GetEdgesV2>(f))),
                    None => real(&GET_EDGES, c"cuGraphGetEdges")
                        .map(|f| Edges::V1(std::mem::transmute::<usize, GetEdgesV1>(f))),
                },
            })
        }
    }

    fn nodes(&self, graph: P) -> Option<Vec<P>> {
        let mut n = 0usize;
        // SAFETY: NULL nodes asks for the count only.
        if unsafe { (self.get_nodes)(graph, std::ptr::null_mut(), &mut n) } != 0 {
            return None;
        }
        let mut nodes: Vec<P> = vec![std::ptr::null_mut(); n];
        // SAFETY: `nodes` has room for `n` handles.
        if unsafe { (self.get_nodes)(graph, nodes.as_mut_ptr(), &mut n) } != 0 {
            return None;
        }
        nodes.truncate(n);
        Some(nodes)
    }

    /// The graph's edges as (from, to) node handles; `None` when the driver cannot say.
    fn edges(&self, graph: P) -> Option<Vec<(P, P)>> {
        let call = |from: *mut P, to: *mut P, n: &mut usize| match self.edges? {
            // SAFETY: NULL arrays ask for the count; else each has room for `*n` entries (edge
            // data not asked for).
            Edges::V2(f) => Some(unsafe { f(graph, from, to, std::ptr::null_mut(), n) }),
            // SAFETY: as above.
            Edges::V1(f) => Some(unsafe { f(graph, from, to, n) }),
        };
        let none: *mut P = std::ptr::null_mut();
        let mut n = 0usize;
        if call(none, none, &mut n)? != 0 {
            return None;
        }
        let null: P = std::ptr::null_mut();
        let (mut from, mut to) = (vec![null; n], vec![null; n]);
        if call(from.as_mut_ptr(), to.as_mut_ptr(), &mut n)? != 0 {
            return None;
        }
        Some(from.into_iter().zip(to).take(n).collect())
    }
}

/// What one instantiation's walk found.
#[derive(Default)]
struct Walk {
    /// Kernel nodes in node order (child graphs inline): how to name the function, its handle, and
    /// the node's index in the executable graph.
    kernels: Vec<(How, u64, u32)>,
    /// Dependencies between executable-graph node indices.
    edges: Vec<(u32, u32)>,
    /// Indices handed out so far.
    next: u32,
    /// An edge list could not be read or grew past `MAX_EDGES`.
    incomplete: bool,
}

/// A graph's nodes, numbered from `walk.next`: for each node, the indices its dependencies enter and
/// leave by (the node itself, or a child graph's entry and exit nodes).
struct Numbered {
    entries: Vec<Vec<u32>>,
    exits: Vec<Vec<u32>>,
}

/// Numbers `graph`'s nodes, records its kernel nodes and edges (child graphs after their parent's
/// nodes), and returns each node's entry and exit indices.
fn walk(api: &Api, graph: P, depth: usize, w: &mut Walk) -> Option<Numbered> {
    let nodes = api.nodes(graph)?;
    let base = w.next;
    w.next = w.next.checked_add(u32::try_from(nodes.len()).ok()?)?;
    let mut types = Vec::with_capacity(nodes.len());
    let mut kernels = Vec::new();
    for (k, &node) in nodes.iter().enumerate() {
        let mut ty = -1;
        // SAFETY: a node handle the driver just gave us and a valid out-pointer.
        if unsafe { (api.get_type)(node, &mut ty) } != 0 {
            ty = -1;
        }
        types.push(ty);
        if ty == NODE_TYPE_KERNEL {
            // CUDA_KERNEL_NODE_PARAMS_v2 is 72 bytes: func at 0, kern (a CUkernel) at 56.
            let mut p = [0u64; 16];
            // SAFETY: `p` is larger than the struct the driver fills.
            if unsafe { (api.params)(node, p.as_mut_ptr()) } == 0 {
                match (p[0], p[7]) {
                    (0, 0) => {}
                    (0, kern) => kernels.push((k, How::Kernel, kern)),
                    (func, _) => kernels.push((k, How::Function, func)),
                }
            }
        }
    }
    let mut own = Numbered {
        entries: (0..nodes.len()).map(|k| vec![base + k as u32]).collect(),
        exits: (0..nodes.len()).map(|k| vec![base + k as u32]).collect(),
    };
    // Kernel nodes in node order, a child graph's in place of its node (the order `GraphNode`
    // entries have always had).
    let mut kernels = kernels.into_iter().peekable();
    for (k, &node) in nodes.iter().enumerate() {
        while let Some((_, how, f)) = kernels.next_if(|x| x.0 == k) {
            w.kernels.push((how, f, base + k as u32));
        }
        if types[k] != NODE_TYPE_GRAPH || depth >= MAX_DEPTH {
            continue;
        }
        let mut g: P = std::ptr::null_mut();
        // SAFETY: as above.
        if unsafe { (api.child)(node, &mut g) } != 0 || g.is_null() {
            continue;
        }
        let Some(inner) = walk(api, g, depth + 1, w) else {
            w.incomplete = true;
            continue;
        };
        // The child graph's entry nodes stand for its node as a dependent, its exit nodes as a
        // dependency (an empty child graph: the node itself, which no work stands for).
        let (entries, exits) = inner.ends();
        if !entries.is_empty() {
            own.entries[k] = entries;
            own.exits[k] = exits;
        }
    }
    let mut sorted: Vec<(P, usize)> = nodes.iter().copied().zip(0..).collect();
    sorted.sort_unstable();
    let find = |h: P| {
        sorted
            .binary_search_by_key(&h, |x| x.0)
            .ok()
            .map(|i| sorted[i].1)
    };
    // Nodes with a dependency inside this graph (not its entries) and with a dependent inside it
    // (not its exits).
    let mut has_pred = vec![false; nodes.len()];
    let mut has_succ = vec![false; nodes.len()];
    match api.edges(graph) {
        None => w.incomplete = true,
        Some(edges) => {
            for (from, to) in edges {
                let (Some(a), Some(b)) = (find(from), find(to)) else {
                    w.incomplete = true;
                    continue;
                };
                has_succ[a] = true;
                has_pred[b] = true;
                for &x in &own.exits[a] {
                    for &y in &own.entries[b] {
                        if w.edges.len() >= MAX_EDGES {
                            w.incomplete = true;
                            return Some(own);
                        }
                        w.edges.push((x, y));
                    }
                }
            }
        }
    }
    // What a parent's edges connect to: the roots' entries and the leaves' exits.
    for k in 0..nodes.len() {
        if has_pred[k] {
            own.entries[k].clear();
        }
        if has_succ[k] {
            own.exits[k].clear();
        }
    }
    Some(own)
}

impl Numbered {
    /// This graph's entry and exit indices (its roots' entries, its leaves' exits: `walk` keeps
    /// only those).
    fn ends(self) -> (Vec<u32>, Vec<u32>) {
        let mut entries: Vec<u32> = self.entries.into_iter().flatten().collect();
        let mut exits: Vec<u32> = self.exits.into_iter().flatten().collect();
        entries.sort_unstable();
        entries.dedup();
        exits.sort_unstable();
        exits.dedup();
        (entries, exits)
    }
}

/// After a successful instantiation of `graph` into `*exec_out`: one `GraphNode` entry per kernel
/// node, then one `GraphEdge` entry per dependency.
pub fn nodes(exec_out: P, graph: P) {
    if exec_out.is_null() || graph.is_null() || state::writer().is_none() {
        return;
    }
    // SAFETY: the instantiation succeeded, so the driver wrote the exec handle here.
    let exec = unsafe { *(exec_out as *const u64) };
    let mut w = Walk::default();
    guard::internal(|| {
        let api = Api::load()?;
        if walk(&api, graph, 0, &mut w).is_none() {
            w.incomplete = true;
        }
        Some(())
    });
    let count = w.kernels.len() as u64;
    for (i, (how, handle, index)) in w.kernels.into_iter().enumerate() {
        names::note(how, handle);
        record::instant_result(
            Kind::GraphNode,
            0,
            [exec, handle, i as u64 | count << 32],
            index as i32,
        );
    }
    if count == 0 {
        // An explicitly empty list: it also starts this instantiation's edges.
        record::instant(Kind::GraphNode, 0, exec, 0, 0);
    }
    for (a, b) in w.edges {
        record::instant(Kind::GraphEdge, 0, exec, u64::from(a), u64::from(b));
    }
    if w.incomplete {
        record::instant(Kind::GraphEdge, 0, exec, u64::MAX, u64::MAX);
    }
}
