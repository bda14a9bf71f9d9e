//! The dependency graph of one process: a partial order over its host calls and device work, each
//! edge typed (what established it) and carrying its evidence class.
//!
//! Built in one walk over the outermost calls in sequence order (the order calls began), with the
//! runtime's rules, never timestamp proximity:
//! * **program order**: consecutive outermost calls of a thread;
//! * **issue**: a call → the device work it issued (the device interval names the call's sequence
//!   number: CUPTI's correlation id, or the events backend's bracket); a graph launch → each node
//!   execution (`graph_node`);
//! * **graph edges**: within one graph launch, a node's execution after the executions of the nodes
//!   it depends on, by the topology the shim recorded at instantiation (`GraphTopology`) and the
//!   node index CUPTI gives each execution; through nodes that ran no recorded work (empty, event,
//!   child-graph nodes) to the work before them. A kernel node whose execution the capture lacks is a
//!   `missing` predecessor. A topology that is incomplete, or whose kernel names disagree with the
//!   executions', orders nothing;
//! * **stream order**: each work item on a stream (in the stream's generation) after the one before
//!   it on that stream; on a stream created unordered (a Level Zero command list or queue without
//!   `IN_ORDER`, an out-of-order Unified Runtime queue) each item after the last barrier only, and a
//!   barrier after everything since the one before;
//! * **event links** (Level Zero, Unified Runtime): a call's work after the records of the events in
//!   its wait list, and the record of the event it signals (an enqueue's output event, an append's
//!   signal event) its work; a host wait on events after their records;
//! * **event wait**: an event record of E on stream X captures X's last work item; a stream wait of S
//!   on E makes S's next work item depend on it; a context event record captures every stream's
//!   (a stream's wait on one depends on those issued since the context event of its previous such
//!   wait: older ones precede its work through that wait);
//! * **host wait**: a stream sync waits for its stream's last item, a device sync for every stream's
//!   last item issued since the same thread's previous wait for all work — a device sync, or an event
//!   sync on a context event, as of its record — (older ones are ordered before it through that
//!   wait), an event sync for what the event's latest record captured (of a context event's, as a
//!   device sync does);
//! * **legacy stream** (`inferred`, confidence 0.5): work on the legacy default stream and work on
//!   other blocking streams, each after the other's latest item — CUDA orders them when the other
//!   stream is blocking; a legacy item follows only the streams given work since the legacy stream's
//!   previous item (older items are ordered through it), so the edges grow with the work, not with
//!   work × streams; a stream whose creation the capture has with the non-blocking flag is
//!   exempt, one created before the capture began may be either (hence inferred).
//!
//! * **handoff** (`observed`): a work token handed from one thread and accepted on another
//!   (`facts::tokens`): the last call before the handoff → the first call after the accept.
//!
//! A work item's node is its device interval when one was recorded (the first-starting one as the
//! item's entry, the last-ending as its exit), else its call. Handles carry generations: a stream or
//! event destroyed and created again is a new one, so a record in one lifetime never explains a wait
//! in the next. An edge whose source record is not in the capture — a wait on an event whose record
//! the ring lost, device work whose call was lost — comes from an `Absent` node with `missing`
//! evidence, so a chain through it is never complete. A wait on an event never recorded in its
//! lifetime is a no-op, as in CUDA, and no edge — when no record can have been lost: the ring lost
//! nothing, or the event's creation is in the capture and no slot between it and the wait was torn.

use crate::facts::model::{Call, EventLink, ProcessTimeline, NO_ISSUER};
use crate::facts::streams::PER_THREAD_STREAM;
use crate::facts::tokens::Tokens;
use crate::util::fastmap::{ByThread, HashMap, Rows};
use crate::util::groups::{Groups, Sparse};
use causeway_ring::layout::{stream_flags, DeviceKind};
use causeway_ring::Class;
use rayon::prelude::*;

/// `cudaStreamNonBlocking` and `CU_STREAM_NON_BLOCKING`: a stream that does not synchronize with the
/// legacy default stream.
const STREAM_NON_BLOCKING: u32 = 1;
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;

/// A node: a host call (index into `ProcessTimeline::calls`), a device interval (into
/// `ProcessTimeline::device`), or a record the capture does not have (into `Graph::absent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    Call(u32),
    Work(u32),
    Absent(u32),
}

impl Node {
    /// Call `i`'s node. Indices are `u32` (an edge is 28 bytes, not 48), as the graph's offset
    /// tables already were: a process's calls and intervals each number fewer than 2^32 — the shim
    /// writes at most 2^30 entries per ring (`MAX_RING_MB`), and a timeline of 2^32 calls would
    /// need over 400 GiB before any graph.
    pub fn call(i: usize) -> Node {
        Node::Call(i as u32)
    }

    /// Device interval `j`'s node.
    pub fn work(j: usize) -> Node {
        Node::Work(j as u32)
    }
}

/// What established an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    ProgramOrder,
    Issue,
    GraphNode,
    StreamOrder,
    EventWait,
    ContextEvent,
    HostWait,
    LegacyStream,
    Handoff,
    GraphEdge,
}

impl EdgeKind {
    /// Whether the edge joins two tracks the exports draw apart (threads, streams): every kind but
    /// the tracks' own order (program and stream order) and a call's issue (drawn by the exports'
    /// call → device arrows).
    pub fn crosses_tracks(self) -> bool {
        matches!(
            self,
            EdgeKind::EventWait
                | EdgeKind::ContextEvent
                | EdgeKind::HostWait
                | EdgeKind::Handoff
                | EdgeKind::LegacyStream
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::ProgramOrder => "program_order",
            EdgeKind::Issue => "issue",
            EdgeKind::GraphNode => "graph_node",
            EdgeKind::StreamOrder => "stream_order",
            EdgeKind::EventWait => "event_wait",
            EdgeKind::ContextEvent => "context_event",
            EdgeKind::HostWait => "host_wait",
            EdgeKind::LegacyStream => "legacy_stream",
            EdgeKind::Handoff => "handoff",
            EdgeKind::GraphEdge => "graph_edge",
        }
    }
}

/// How an edge is known.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "class")]
pub enum Evidence {
    /// The runtime's semantics establish it (stream order, events, correlation ids).
    Explicit,
    /// The program declared it, or the capture saw it directly (a work-token handoff).
    Observed,
    /// Consistent with times and state, unproven; never promoted.
    Inferred { confidence: f32 },
    /// A record the edge needs is not in the capture.
    Missing,
}

impl Evidence {
    pub fn name(&self) -> &'static str {
        match self {
            Evidence::Explicit => "explicit",
            Evidence::Observed => "observed",
            Evidence::Inferred { .. } => "inferred",
            Evidence::Missing => "missing",
        }
    }
}

/// Edges are most of a graph's memory (a few per call): keep one at 16 bytes.
const _: () = assert!(std::mem::size_of::<Edge>() <= 16);

/// An edge: `from` → `to`, its kind and evidence. Its ends are kept as [`Packed`] nodes and its
/// evidence as a class byte beside the confidence (16 bytes, where the enums took 28); read them
/// with [`Edge::from`], [`Edge::to`] and [`Edge::evidence`].
#[derive(Clone, Copy, PartialEq)]
pub struct Edge {
    from: Packed,
    to: Packed,
    /// An inferred edge's confidence (0 for the other classes).
    confidence: f32,
    pub kind: EdgeKind,
    /// The evidence class: 0 explicit, 1 observed, 2 inferred, 3 missing.
    class: u8,
}

impl Edge {
    pub fn new(from: Node, to: Node, kind: EdgeKind, evidence: Evidence) -> Edge {
        let (class, confidence) = match evidence {
            Evidence::Explicit => (0, 0.0),
            Evidence::Observed => (1, 0.0),
            Evidence::Inferred { confidence } => (2, confidence),
            Evidence::Missing => (3, 0.0),
        };
        Edge {
            from: Packed::new(from),
            to: Packed::new(to),
            confidence,
            kind,
            class,
        }
    }

    #[inline]
    pub fn from(&self) -> Node {
        self.from.get()
    }

    #[inline]
    pub fn to(&self) -> Node {
        self.to.get()
    }

    #[inline]
    pub fn evidence(&self) -> Evidence {
        match self.class {
            0 => Evidence::Explicit,
            1 => Evidence::Observed,
            2 => Evidence::Inferred {
                confidence: self.confidence,
            },
            _ => Evidence::Missing,
        }
    }

    fn view(&self) -> EdgeView {
        EdgeView {
            from: self.from(),
            to: self.to(),
            kind: self.kind,
            evidence: self.evidence(),
        }
    }
}

/// An edge as JSON and `Debug` show it.
#[derive(Debug, Serialize)]
struct EdgeView {
    from: Node,
    to: Node,
    kind: EdgeKind,
    evidence: Evidence,
}

impl Serialize for Edge {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.view().serialize(s)
    }
}

impl std::fmt::Debug for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.view().fmt(f)
    }
}

/// A node in 4 bytes: its kind in the top two bits, its index in the other 30. A process's calls
/// and intervals number fewer than 2^30: the shim writes at most 2^30 entries per ring
/// (`MAX_RING_MB`), and a timeline of 2^30 calls would need over 70 GiB before any graph.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Packed(u32);

impl Packed {
    const INDEX: u32 = (1 << 30) - 1;

    #[inline]
    fn new(n: Node) -> Packed {
        let (tag, i) = match n {
            Node::Call(i) => (0, i),
            Node::Work(i) => (1, i),
            Node::Absent(i) => (2, i),
        };
        debug_assert!(i <= Self::INDEX, "node index {i} needs more than 30 bits");
        Packed(tag << 30 | (i & Self::INDEX))
    }

    #[inline]
    fn get(self) -> Node {
        let i = self.0 & Self::INDEX;
        match self.0 >> 30 {
            0 => Node::Call(i),
            1 => Node::Work(i),
            _ => Node::Absent(i),
        }
    }
}

/// One process's graph: its edges, grouped by the node they lead to.
pub struct Graph<'t> {
    pub p: &'t ProcessTimeline,
    pub edges: Vec<Edge>,
    /// What each `Node::Absent` stands for.
    pub absent: Vec<String>,
    /// `edges` indices by target node (`slot`), each node's in edge order.
    by_target: Groups,
    /// Each call's device intervals (indices into `device`), by call index, in start order.
    spans_of: Sparse,
}

/// A stream as the graph keys it: the handle (per-thread default stream: with its thread) and its
/// generation.
type StreamGen = ((u64, u32), u64);

/// Each stream's (in its generation) last work item (call index): looked up two or three times per
/// launch, so behind `Rows`' table of recent rows, which answers without hashing the 24-byte key.
/// The streams are also listed in the order of their last items (a list through the rows), so the
/// items issued after a given call are found without visiting every stream ever seen.
struct LastItems {
    rows: Rows<StreamGen, Last>,
    /// The row with the latest last item (`NIL`: none yet).
    newest: u32,
    /// Kept from a process's first context event record on (`as_of`).
    history: Option<History>,
}

/// Every work item in walk order with its stream's row, and each row's items in order.
#[derive(Default)]
struct History {
    log: Vec<(usize, u32)>,
    by_row: Vec<Vec<usize>>,
}

impl History {
    /// Work item `i`, on the stream of row `r`, is the walk's latest.
    fn push(&mut self, i: usize, r: u32) {
        self.log.push((i, r));
        if self.by_row.len() <= r as usize {
            self.by_row.resize_with(r as usize + 1, Vec::new);
        }
        self.by_row[r as usize].push(i);
    }
}

/// A stream's last item and its neighbours in last-item order (row indices; `NIL` at the ends).
#[derive(Clone, Copy)]
struct Last {
    item: Option<usize>,
    older: u32,
    newer: u32,
}

const NIL: u32 = u32::MAX;

impl Default for Last {
    fn default() -> Self {
        Last {
            item: None,
            older: NIL,
            newer: NIL,
        }
    }
}

impl Default for LastItems {
    fn default() -> Self {
        LastItems {
            rows: Rows::default(),
            newest: NIL,
            history: None,
        }
    }
}

impl LastItems {
    /// A stream only synced or waited on gets no row.
    #[inline]
    fn get(&mut self, s: StreamGen) -> Option<usize> {
        self.rows.get(s).and_then(|l| l.item)
    }

    /// `i` is the walk's latest item: `s`'s row moves to the newest end of the list.
    #[inline]
    fn set(&mut self, s: StreamGen, i: usize) {
        let r = self.rows.index_of(s) as u32;
        if let Some(h) = &mut self.history {
            h.push(i, r);
        }
        let Last { item, older, newer } = *self.rows.at_mut(r as usize);
        if item.is_some() && newer == NIL {
            self.rows.at_mut(r as usize).item = Some(i);
            return;
        }
        if item.is_some() {
            // Unlink (it is not the newest, so it has a newer neighbour).
            self.rows.at_mut(newer as usize).older = older;
            if older != NIL {
                self.rows.at_mut(older as usize).newer = newer;
            }
        }
        if self.newest != NIL {
            self.rows.at_mut(self.newest as usize).newer = r;
        }
        *self.rows.at_mut(r as usize) = Last {
            item: Some(i),
            older: self.newest,
            newer: NIL,
        };
        self.newest = r;
    }

    /// Starts the history (`as_of`) if it has not begun, with each stream's last item so far:
    /// what the history of every record from here on needs of the work before it (a stream's last
    /// item as of a later call is that one or a later one).
    fn keep_history(&mut self) {
        if self.history.is_some() {
            return;
        }
        // The list runs newest to oldest; the history is kept oldest first.
        let mut newest_first = Vec::new();
        let mut r = self.newest;
        while r != NIL {
            let l = &self.rows.at(r as usize).1;
            newest_first.push((l.item.expect("listed rows have an item"), r));
            r = l.older;
        }
        let mut h = History::default();
        for &(i, r) in newest_first.iter().rev() {
            h.push(i, r);
        }
        self.history = Some(h);
    }

    /// Every stream's last item as of call `at`, of those issued after call `after` (all for
    /// `None`), in issue order: what a context event recorded at `at` captured, less what a waiter
    /// already waited for. Costs the fewer of the items in (`after`, `at`] (each stream's latest
    /// of them) and the streams (each one's latest item up to `at`, by binary search).
    fn as_of(&self, at: usize, after: Option<usize>) -> Vec<usize> {
        let Some(h) = &self.history else {
            return Vec::new();
        };
        let end = h.log.partition_point(|&(it, _)| it <= at);
        let start = after.map_or(0, |a| h.log.partition_point(|&(it, _)| it <= a));
        if start >= end {
            // Nothing issued after `after` up to `at` (the waiter waited for all of it since).
            return Vec::new();
        }
        let mut v: Vec<usize> = if end - start <= h.by_row.len() {
            let mut seen: HashMap<u32, ()> = HashMap::default();
            (h.log[start..end].iter().rev())
                .filter(|&&(_, r)| seen.insert(r, ()).is_none())
                .map(|&(it, _)| it)
                .collect()
        } else {
            (h.by_row.iter())
                .filter_map(|items| {
                    let k = items.partition_point(|&it| it <= at);
                    k.checked_sub(1).map(|k| items[k])
                })
                .filter(|&it| after.is_none_or(|a| it > a))
                .collect()
        };
        v.sort_unstable();
        v
    }

    /// Every stream's last item issued after call `after` (all of them for `None`), in issue order.
    fn since(&self, after: Option<usize>) -> Vec<usize> {
        let mut v = Vec::new();
        let mut r = self.newest;
        while r != NIL {
            let l = &self.rows.at(r as usize).1;
            let it = l.item.expect("listed rows have an item");
            if after.is_some_and(|a| it <= a) {
                break;
            }
            v.push(it);
            r = l.older;
        }
        v.reverse();
        v
    }
}

/// An unordered stream's items since its last barrier, and that barrier (call indices). The items
/// are shared with the event records that captured them (`Items::Backlog`): a new barrier or sync
/// starts a new list rather than emptying this one.
#[derive(Default)]
struct Unordered {
    since: Rc<RefCell<Vec<usize>>>,
    barrier: Option<usize>,
}

impl Unordered {
    /// What a wait for the whole stream waits for: everything since the last barrier, else it.
    fn outstanding(&self) -> Items {
        match self.since.borrow().len() {
            0 => Items::Own(self.barrier.into_iter().collect()),
            n => Items::Backlog(Rc::clone(&self.since), n),
        }
    }
}

/// The work items an event record captured (call indices, ascending): its own list, or the first
/// `n` items of an unordered stream's backlog. A signal on an out-of-order queue captures the whole
/// backlog: a copy per signal grew as signals × backlog.
#[derive(Clone)]
enum Items {
    Own(Vec<usize>),
    Backlog(Rc<RefCell<Vec<usize>>>, usize),
    /// A context event recorded at this call: every stream's last item then (`LastItems::as_of`),
    /// found when waited for. A copy per record was a list of every stream ever seen, and with a
    /// stream per launch the records and their waits grew as records × streams.
    Context(usize),
}

impl Items {
    /// `f` of the items; for a context event's, those issued after call `after` (what the waiter
    /// has not waited for already: older ones are ordered before it through that wait).
    fn with<R>(&self, last: &LastItems, after: Option<usize>, f: impl FnOnce(&[usize]) -> R) -> R {
        match self {
            Items::Own(v) => f(v),
            Items::Backlog(b, n) => f(&b.borrow()[..*n]),
            Items::Context(at) => f(&last.as_of(*at, after)),
        }
    }
}

/// Whether a stream operation orders all work before it and after it on its stream.
fn is_barrier(c: &Call) -> bool {
    c.class == Some(Class::StreamOp) && c.api.contains("Barrier")
}

/// The events of one process as the walk has seen them, each handle by lifetime (generation): its
/// latest record, and where the lifetime's create call is (a lost record can only lie after it).
#[derive(Default)]
struct Events {
    generation: HashMap<u64, u64>,
    records: HashMap<(u64, u64), Record>,
    born: HashMap<(u64, u64), u64>,
}

impl Events {
    fn key(&self, e: u64) -> (u64, u64) {
        (e, self.generation.get(&e).copied().unwrap_or(0))
    }

    /// The handle's lifetime ends (destroyed, or a UR event's release). Its record and creation can
    /// never be looked up again (the next lifetime has keys of its own), so they are dropped: a
    /// program that creates and destroys an event per step keeps the walk's memory to its live
    /// events.
    fn end(&mut self, e: u64) {
        let k = self.key(e);
        self.records.remove(&k);
        self.born.remove(&k);
        *self.generation.entry(e).or_default() += 1;
    }

    fn created(&mut self, e: u64, seq: u64) {
        let k = self.key(e);
        self.born.insert(k, seq);
    }

    fn record(&mut self, e: u64, items: Items, kind: EdgeKind) {
        let k = self.key(e);
        self.records.insert(k, Record { items, kind });
    }

    fn record_of(&self, e: u64) -> Option<&Record> {
        self.records.get(&self.key(e))
    }

    fn born_of(&self, e: u64) -> Option<u64> {
        self.born.get(&self.key(e)).copied()
    }
}

/// The events a wait-class call waits for: the Level Zero / UR events it listed (`links`), else the
/// one (CUDA) event it names.
fn waited<'a>(c: &Call, links: &'a [EventLink]) -> impl Iterator<Item = u64> + 'a {
    let named = c.handle().filter(|&e| e != 0 && links.is_empty());
    let listed = links.iter().filter(|l| !l.signals).map(|l| l.event);
    named.into_iter().chain(listed)
}

/// What an event record captured: the work items (call indices) its wait depends on.
struct Record {
    items: Items,
    kind: EdgeKind,
}

impl<'t> Graph<'t> {
    pub fn build(p: &'t ProcessTimeline) -> Graph<'t> {
        Graph::build_with(p, None)
    }

    /// The graph with the handoffs of `tokens` (the process's work tokens) as observed edges.
    pub fn build_with(p: &'t ProcessTimeline, tokens: Option<&Tokens>) -> Graph<'t> {
        let Builder {
            edges,
            absent,
            spans_of,
            ..
        } = Builder::run(p, tokens, true, &p.issuers(), None, None);
        let mut g = Graph {
            p,
            edges,
            absent,
            by_target: Groups::by_key(0, &[]),
            spans_of,
        };
        g.index();
        g
    }

    /// Every edge of `build_with`'s graph, in its order, and its absent nodes' descriptions, without
    /// the index by target a walk of the graph needs: what a table of the edges needs.
    pub fn edges_with(p: &ProcessTimeline, tokens: Option<&Tokens>) -> (Vec<Edge>, Vec<String>) {
        let b = Builder::run(p, tokens, true, &p.issuers(), None, None);
        (b.edges, b.absent)
    }

    /// `edges_with`'s edges handed to `take` as the walk makes them, in runs of `chunk` (at least
    /// one; the last run shorter, none when there are no edges), each with the absent nodes made
    /// since the run before, so that the graph's edges are never all held at once: the runs in
    /// order are `edges_with`'s edges, the absent lists in order its absent nodes.
    pub fn edges_streamed(
        p: &ProcessTimeline,
        tokens: Option<&Tokens>,
        chunk: usize,
        take: &mut (dyn FnMut(Vec<Edge>, Vec<String>) + Send),
    ) {
        let sink = Sink {
            chunk: chunk.max(1),
            absent_sent: 0,
            take,
        };
        Builder::run(p, tokens, true, &p.issuers(), None, Some(sink));
    }

    /// Only the edges between tracks (`EdgeKind::crosses_tracks`), in the order `build_with` lists
    /// them: what the trace exports draw as dependency flows (an absent node's index is not the full
    /// graph's; they draw none). The walk is the same; program order, stream order and issue edges
    /// (nearly all of a graph) are not kept, nor indexed.
    /// `issuers` is `p.issuers()` and `spans_of` the spans each call issued,
    /// `Sparse::by_key(p.calls.len(), issuers)`, given back (a caller that needs them too makes
    /// them once).
    pub fn cross_track_edges(
        p: &ProcessTimeline,
        tokens: Option<&Tokens>,
        issuers: &[u32],
        spans_of: Sparse,
    ) -> (Vec<Edge>, Sparse) {
        let b = Builder::run(p, tokens, false, issuers, Some(spans_of), None);
        (b.edges, b.spans_of)
    }

    fn slot(&self, n: Node) -> usize {
        match n {
            Node::Call(i) => i as usize,
            Node::Work(j) => self.p.calls.len() + j as usize,
            Node::Absent(k) => self.p.calls.len() + self.p.device.len() + k as usize,
        }
    }

    fn index(&mut self) {
        let slots = self.p.calls.len() + self.p.device.len() + self.absent.len();
        // Each edge's target slot, found on every thread: the sort's two passes then read 4 bytes
        // an edge instead of its 28.
        let to: Vec<u32> = (self.edges.par_iter())
            .map(|e| self.slot(e.to()) as u32)
            .collect();
        self.by_target = Groups::by_key(slots, &to);
    }

    /// The edges into `n`.
    pub fn preds(&self, n: Node) -> impl Iterator<Item = &Edge> + '_ {
        (self.by_target.of(self.slot(n)).iter()).map(move |&i| &self.edges[i as usize])
    }

    /// The device intervals call `i` issued.
    pub fn spans_of(&self, i: usize) -> &[u32] {
        self.spans_of.of(i)
    }

    /// The call with sequence number `seq`.
    pub fn call_of_seq(&self, seq: u64) -> Option<usize> {
        self.p.calls.binary_search_by_key(&seq, |c| c.seq).ok()
    }

    /// When a node's time begins and ends (host nanoseconds); an absent node has none.
    pub fn times(&self, n: Node) -> Option<(u64, u64)> {
        match n {
            Node::Call(i) => {
                let c = &self.p.calls[i as usize];
                Some((c.begin_ns, c.end_ns.get().unwrap_or(c.begin_ns)))
            }
            Node::Work(j) => {
                let d = &self.p.device[j as usize];
                Some((d.begin_ns, d.end_ns.max(d.begin_ns)))
            }
            Node::Absent(_) => None,
        }
    }

    /// A short description of a node for the user.
    pub fn describe(&self, n: Node) -> String {
        match n {
            Node::Call(i) => {
                let c = &self.p.calls[i as usize];
                format!("call {} (seq {}, thread {})", c.api, c.seq, c.tid)
            }
            Node::Work(j) => {
                let d = &self.p.device[j as usize];
                let call = d
                    .call
                    .get()
                    .map_or(String::new(), |s| format!(", issued by seq {s}"));
                format!(
                    "{} {} on {}{call}",
                    d.kind.name(),
                    d.name,
                    self.p.stream_label(&d.stream.get())
                )
            }
            Node::Absent(k) => self.absent[k as usize].clone(),
        }
    }
}

struct Builder<'t> {
    p: &'t ProcessTimeline,
    /// Whether edges along a track (program order, stream order, issue) are kept too.
    all: bool,
    edges: Vec<Edge>,
    absent: Vec<String>,
    spans_of: Sparse,
    /// Graph launches ordered by their topology (call index): the executions of the graph's root
    /// nodes, which wait for what the launch waits for.
    graph_roots: HashMap<usize, Vec<u32>>,
    /// Each topology's lookups, made once for all the launches that ran it (by index in
    /// `ProcessTimeline::graph_topologies`).
    topologies: HashMap<usize, Topology<'t>>,
    /// Where the edges go as they are made (`Graph::edges_streamed`), when not kept.
    sink: Option<Sink<'t>>,
}

/// Takes a walk's edges in runs of `chunk` (the last one shorter), in edge order, with the absent
/// nodes made since the run before (an edge's absent end was always made before it).
struct Sink<'s> {
    chunk: usize,
    absent_sent: usize,
    take: &'s mut (dyn FnMut(Vec<Edge>, Vec<String>) + Send),
}

/// A graph topology's kernel nodes (their names) and each node's predecessors.
struct Topology<'t> {
    kernel: HashMap<u32, Option<&'t str>>,
    preds: HashMap<u32, Vec<u32>>,
}

impl<'t> Topology<'t> {
    fn of(t: &'t crate::facts::model::GraphTopology) -> Topology<'t> {
        let mut preds: HashMap<u32, Vec<u32>> = HashMap::default();
        for &(a, b) in &t.edges {
            preds.entry(b).or_default().push(a);
        }
        Topology {
            kernel: t.kernels.iter().map(|(k, n)| (*k, n.as_deref())).collect(),
            preds,
        }
    }
}

fn per_thread_name(api: &str) -> bool {
    api.ends_with("_ptsz") || api.ends_with("_ptds")
}

/// The stream key of a stream-ordered call, by the waits' rule (`facts::streams::key_of`; a call
/// keeps its per-thread flag in its name).
fn key_of(c: &Call) -> (u64, u32) {
    crate::facts::streams::key_of(c.stream().unwrap_or(0), c.tid, per_thread_name(&c.api))
}

impl<'t> Builder<'t> {
    /// `issuer`: `p.issuers()`.
    fn run(
        p: &'t ProcessTimeline,
        tokens: Option<&Tokens>,
        all: bool,
        issuer: &[u32],
        spans_of: Option<Sparse>,
        sink: Option<Sink<'t>>,
    ) -> Builder<'t> {
        let mut b = Builder {
            p,
            all,
            // Enough for an issue edge per interval and a program-order and stream-order edge per
            // call, so the list is not copied as it grows: what is reserved and not used is never
            // touched, so costs no memory. A sink takes them a run at a time.
            edges: Vec::with_capacity(match &sink {
                Some(s) => s.chunk,
                None if all => p.device.len() + 2 * p.calls.len(),
                None => 0,
            }),
            absent: Vec::new(),
            spans_of: Sparse::by_key(0, &[]),
            graph_roots: HashMap::default(),
            topologies: HashMap::default(),
            sink,
        };
        b.issue_edges(issuer, spans_of);
        b.spill(false);
        b.walk();
        if let Some(t) = tokens {
            b.handoffs(t);
        }
        b.spill(true);
        b
    }

    fn edge(&mut self, from: Node, to: Node, kind: EdgeKind, evidence: Evidence) {
        if from != to && (self.all || kind.crosses_tracks()) {
            self.edges.push(Edge::new(from, to, kind, evidence));
            if self
                .sink
                .as_ref()
                .is_some_and(|s| self.edges.len() >= s.chunk)
            {
                self.spill(false);
            }
        }
    }

    /// Hands the sink (if any) every full run of edges made so far, and with `last` the rest.
    fn spill(&mut self, last: bool) {
        let Some(s) = self.sink.as_mut() else {
            return;
        };
        let n = self.edges.len();
        let full = if last { n } else { n - n % s.chunk };
        for run in self.edges[..full].chunks(s.chunk) {
            let absent = self.absent[s.absent_sent..].to_vec();
            s.absent_sent = self.absent.len();
            (s.take)(run.to_vec(), absent);
        }
        // What is left is shorter than a run: moved to the front (and room past two runs given
        // back).
        let chunk = s.chunk;
        self.edges.drain(..full);
        if self.edges.capacity() > 2 * chunk {
            self.edges.shrink_to(chunk);
        }
    }

    fn absent(&mut self, what: String) -> Node {
        self.absent.push(what);
        Node::Absent((self.absent.len() - 1) as u32)
    }

    /// Call → device work, by the interval's issuing sequence number; work whose call the capture
    /// lost comes from an absent node. `spans_of`, when given, is the spans each call issued
    /// (`Sparse::by_key(p.calls.len(), issuer)`).
    fn issue_edges(&mut self, issuer: &[u32], spans_of: Option<Sparse>) {
        let p = self.p;
        let spans_of = spans_of.unwrap_or_else(|| Sparse::by_key(p.calls.len(), issuer));
        debug_assert!((0..p.calls.len()).all(|k| {
            spans_of.of(k).windows(2).all(|w| {
                let (a, b) = (&p.device[w[0] as usize], &p.device[w[1] as usize]);
                (a.begin_ns, w[0]) <= (b.begin_ns, w[1])
            })
        }));
        self.spans_of = spans_of;
        // Found on every thread: the test reads a line of every call, the launches are few.
        let spans_of = &self.spans_of;
        let launches: Vec<usize> = (p.calls.par_iter().enumerate())
            .filter(|(i, c)| c.class == Some(Class::GraphLaunch) && !spans_of.of(*i).is_empty())
            .map(|(i, _)| i)
            .collect();
        for i in launches {
            self.graph_edges(i);
        }
        if !self.all {
            return;
        }
        // One edge per interval, in interval order, made on every thread: from its call, else from
        // an absent node of its own (numbered in interval order, made first).
        let untied: Vec<usize> = (issuer.iter().enumerate())
            .filter(|&(_, &i)| i == NO_ISSUER)
            .map(|(j, _)| j)
            .collect();
        let first_absent = self.absent.len();
        for &j in &untied {
            let what = match p.device[j].call.get() {
                Some(s) => format!("the call (seq {s}) that issued it: not in the capture"),
                None => "the call that issued it: not tied to any (no correlation)".into(),
            };
            self.absent(what);
        }
        let edge = |j: usize, i: u32| {
            if i == NO_ISSUER {
                let k = first_absent + untied.partition_point(|&u| u < j);
                return Edge::new(
                    Node::Absent(k as u32),
                    Node::work(j),
                    EdgeKind::Issue,
                    Evidence::Missing,
                );
            }
            let kind = if p.calls[i as usize].class == Some(Class::GraphLaunch) {
                EdgeKind::GraphNode
            } else {
                EdgeKind::Issue
            };
            Edge::new(
                Node::call(i as usize),
                Node::work(j),
                kind,
                Evidence::Explicit,
            )
        };
        let Some(run) = self.sink.as_ref().map(|s| s.chunk) else {
            let made = issuer.par_iter().enumerate().map(|(j, &i)| edge(j, i));
            return self.edges.par_extend(made);
        };
        // A sink takes them a run at a time as they are made (all at once they were 16 bytes an
        // interval, held until the walk's first edges), made on the walk's own thread: a run is a
        // few loads an edge, while rayon's workers are busy encoding what the sink was given.
        for from in (0..issuer.len()).step_by(run) {
            let to = (from + run).min(issuer.len());
            self.edges.extend((from..to).map(|j| edge(j, issuer[j])));
            self.spill(false);
        }
    }

    /// The dependencies between the node executions of graph launch `i`, from the topology its exec
    /// was instantiated with.
    fn graph_edges(&mut self, i: usize) {
        let p = self.p;
        let c = &p.calls[i];
        let Some(ti) = c.handle().and_then(|x| p.topology_of(x, c.seq)) else {
            return;
        };
        let t = &p.graph_topologies[ti];
        if t.incomplete || t.edges.is_empty() {
            return;
        }
        // Each node's execution in this launch; a node that ran twice, or a kernel node whose
        // execution has another kernel's name, means the numbering is not the one recorded.
        let mut ran: HashMap<u32, usize> = HashMap::default();
        for &j in self.spans_of.of(i) {
            let Some(k) = p.device[j as usize].graph_node.get().map(u32::from) else {
                continue;
            };
            if ran.insert(k, j as usize).is_some() {
                return;
            }
        }
        // Taken out while this launch's edges are added (they borrow the builder), put back after.
        let topo = match self.topologies.remove(&ti) {
            Some(topo) => topo,
            None => Topology::of(t),
        };
        self.topology_edges(i, &ran, &topo);
        self.topologies.insert(ti, topo);
    }

    /// Launch `i`'s edges between its node executions `ran` (node → execution), by `topo`; none when
    /// an execution's kernel is not the recorded node's (the numbering is not the one recorded).
    fn topology_edges(&mut self, i: usize, ran: &HashMap<u32, usize>, topo: &Topology<'t>) {
        let p = self.p;
        let c = &p.calls[i];
        let Topology { kernel, preds } = topo;
        for (&k, &j) in ran {
            let d = &p.device[j];
            match kernel.get(&k) {
                Some(Some(name)) if d.kind != DeviceKind::Kernel || *name != d.name => return,
                Some(_) => {}
                None if d.kind == DeviceKind::Kernel => return,
                None => {}
            }
        }
        let mut nodes: Vec<(u32, usize)> = ran.iter().map(|(&k, &j)| (k, j)).collect();
        nodes.sort_unstable();
        let mut roots: Vec<u32> = Vec::new();
        let mut seen: HashMap<u32, ()> = HashMap::default();
        let (mut todo, mut from, mut lost): (Vec<u32>, Vec<usize>, Vec<u32>) = Default::default();
        for (k, j) in nodes {
            // The executions this one waited for: each predecessor's, through nodes that ran none.
            seen.clear();
            from.clear();
            lost.clear();
            todo.extend(preds.get(&k).into_iter().flatten());
            while let Some(a) = todo.pop() {
                if seen.insert(a, ()).is_some() {
                    continue;
                }
                match ran.get(&a) {
                    Some(&ja) => from.push(ja),
                    None if kernel.contains_key(&a) => lost.push(a),
                    None => todo.extend(preds.get(&a).into_iter().flatten()),
                }
            }
            from.sort_unstable();
            if from.is_empty() && lost.is_empty() {
                roots.push(j as u32);
            }
            for &ja in &from {
                self.edge(
                    Node::work(ja),
                    Node::work(j),
                    EdgeKind::GraphEdge,
                    Evidence::Explicit,
                );
            }
            lost.sort_unstable();
            for &a in &lost {
                let what = format!(
                    "graph node {a}'s kernel in the launch of seq {}: not in the capture",
                    c.seq
                );
                let n = self.absent(what);
                self.edge(n, Node::work(j), EdgeKind::GraphEdge, Evidence::Missing);
            }
        }
        if !roots.is_empty() {
            self.graph_roots.insert(i, roots);
        }
    }

    /// Where a work item's dependencies enter, into `out` (cleared first): its first device
    /// interval, else its call; for a graph launch ordered by its topology, each root node's
    /// execution. A buffer the walk reuses: one work item after another.
    fn entries(&self, i: usize, out: &mut Vec<Node>) {
        out.clear();
        match self.graph_roots.get(&i) {
            Some(r) => out.extend(r.iter().map(|&j| Node::Work(j))),
            None => out.push(self.entry(i)),
        }
    }

    /// Where a work item's dependencies enter: its first device interval, else its call.
    fn entry(&self, i: usize) -> Node {
        self.spans_of
            .of(i)
            .first()
            .map_or(Node::call(i), |&j| Node::Work(j))
    }

    /// What a work item's dependents wait for: its last-ending device interval, else its call.
    fn exit(&self, i: usize) -> Node {
        self.spans_of
            .of(i)
            .iter()
            .max_by_key(|&&j| (self.p.device[j as usize].end_ns, j))
            .map_or(Node::call(i), |&j| Node::Work(j))
    }

    fn walk(&mut self) {
        let p = self.p;
        let all = self.all;
        // Each thread's last outermost call, by a dense thread number (`threads`): the walk looks
        // both tables up once per call, so neither hashes on the common path.
        let mut threads: ByThread<u32> = ByThread::default();
        let mut last_on_thread: Vec<usize> = Vec::new();
        let mut stream_gen: HashMap<(u64, u32), u64> = HashMap::default();
        let mut events = Events::default();
        let mut last_item = LastItems::default();
        // Streams created non-blocking (in their generation): exempt from the legacy stream's order.
        let mut non_blocking: HashMap<StreamGen, ()> = HashMap::default();
        // Streams whose work may run in any order between barriers (Level Zero lists and queues not
        // created in order, out-of-order Unified Runtime queues): their items since the last
        // barrier, and that barrier.
        let mut unordered: HashMap<StreamGen, Unordered> = HashMap::default();
        // Dependencies a stream's next work item takes on (from stream waits).
        let mut waits_for: HashMap<StreamGen, Vec<(Node, EdgeKind, Evidence)>> = HashMap::default();
        let mut capturing: HashMap<(u64, u32), ()> = HashMap::default();
        let legacy: (u64, u32) = (0, 0);
        // Blocking streams given work since the legacy stream's last item, each once: the next
        // legacy item follows their last items. Older items are ordered before it through the
        // legacy stream's previous item, so an edge per stream ever seen on every legacy launch
        // (edges growing as launches × streams) would add nothing.
        let mut since_legacy: Vec<StreamGen> = Vec::new();
        // Each thread's (by `threads`' number) last wait for all work issued before a call: a
        // device-wide wait, or a host wait on a context event (recorded at that call).
        let mut device_waits: Vec<Option<usize>> = Vec::new();
        // Each stream's latest wait on a context event: the call that recorded it.
        let mut context_waits: HashMap<StreamGen, usize> = HashMap::default();
        let mut tos: Vec<Node> = Vec::new();
        for (i, c) in p.calls.iter().enumerate() {
            if c.depth != 0 {
                continue;
            }
            let t = threads.get_or_insert_with(c.tid, || last_on_thread.len() as u32) as usize;
            if t == last_on_thread.len() {
                last_on_thread.push(i);
                device_waits.push(None);
            } else {
                let prev = std::mem::replace(&mut last_on_thread[t], i);
                self.edge(
                    Node::call(prev),
                    Node::call(i),
                    EdgeKind::ProgramOrder,
                    Evidence::Explicit,
                );
            }
            let ok = c.end_ns.is_some() && c.result == 0;
            let Some(class) = c.class else { continue };
            if !ok {
                continue;
            }
            let key = key_of(c);
            let sg = |stream_gen: &HashMap<(u64, u32), u64>, key| {
                (key, stream_gen.get(&key).copied().unwrap_or(0))
            };
            match class {
                Class::Capture => {
                    if c.api.contains("Begin") {
                        capturing.insert(key, ());
                    } else if c.api.contains("End") {
                        capturing.remove(&key);
                    }
                }
                k if k.issues_work() => {
                    // (A lookup in an empty map hashes nothing: most programs have no capture, no
                    // unordered stream, no stream created non-blocking or destroyed.)
                    if capturing.contains_key(&key) {
                        continue;
                    }
                    let s = sg(&stream_gen, key);
                    let prev_s = last_item.get(s);
                    self.entries(i, &mut tos);
                    if let Some(u) = unordered.get_mut(&s) {
                        // A barrier follows everything since the one before; anything else only
                        // the last barrier.
                        let waits_listed = p.links_of(c.seq).iter().any(|l| !l.signals);
                        let before: Vec<usize> = if is_barrier(c) && waits_listed {
                            // A barrier with a wait list waits for those events only (their
                            // edges come with the links below); later work still follows it.
                            u.barrier = Some(i);
                            Vec::new()
                        } else if is_barrier(c) {
                            let v = std::mem::take(&mut u.since).borrow().clone();
                            let v = if v.is_empty() {
                                u.barrier.into_iter().collect()
                            } else {
                                v
                            };
                            u.barrier = Some(i);
                            v
                        } else {
                            u.since.borrow_mut().push(i);
                            u.barrier.into_iter().collect()
                        };
                        // (Stream order is along a track: the cross-track walk keeps none, so it
                        // looks for no item's last interval.)
                        for it in before.into_iter().filter(|_| all) {
                            let from = self.exit(it);
                            for &to in &tos {
                                self.edge(from, to, EdgeKind::StreamOrder, Evidence::Explicit);
                            }
                        }
                    } else if let Some(prev) = prev_s.filter(|_| all) {
                        let from = self.exit(prev);
                        for &to in &tos {
                            self.edge(from, to, EdgeKind::StreamOrder, Evidence::Explicit);
                        }
                    }
                    // (A removal hashes even in an empty map.)
                    if let Some(deps) = (!waits_for.is_empty())
                        .then(|| waits_for.remove(&s))
                        .flatten()
                    {
                        for (from, kind, ev) in deps {
                            for &to in &tos {
                                self.edge(from, to, kind, ev);
                            }
                        }
                    }
                    // Level Zero and Unified Runtime: the events this call's work waits for.
                    for l in p.links_of(c.seq).iter().filter(|l| !l.signals) {
                        let (deps, _) =
                            self.waits_on(&events, &last_item, None, l.event, c.seq, "wait list");
                        for (from, kind, ev) in deps {
                            for &to in &tos {
                                self.edge(from, to, kind, ev);
                            }
                        }
                    }
                    // The legacy default stream and blocking streams order each other; whether a
                    // stream is blocking is not in the capture.
                    let inferred = Evidence::Inferred { confidence: 0.5 };
                    if key == legacy {
                        // In issue order.
                        // (A create seen after the stream's work, its destroy lost, can mark
                        // it non-blocking once listed.)
                        let mut others: Vec<usize> = (since_legacy.drain(..))
                            .filter(|s| !non_blocking.contains_key(s))
                            .filter_map(|s| last_item.get(s))
                            .collect();
                        others.sort_unstable();
                        for it in others {
                            let from = self.exit(it);
                            for &to in &tos {
                                self.edge(from, to, EdgeKind::LegacyStream, inferred);
                            }
                        }
                    } else if key.0 != PER_THREAD_STREAM && !non_blocking.contains_key(&s) {
                        let l = sg(&stream_gen, legacy);
                        let last_legacy = last_item.get(l);
                        // Listed already when its last item is newer than the legacy stream's.
                        let listed =
                            prev_s.is_some() && last_legacy.is_none_or(|l| prev_s > Some(l));
                        if !listed {
                            since_legacy.push(s);
                        }
                        if let Some(it) = last_legacy {
                            if prev_s.is_none_or(|prev| prev < it) {
                                let from = self.exit(it);
                                for &to in &tos {
                                    self.edge(from, to, EdgeKind::LegacyStream, inferred);
                                }
                            }
                        }
                    }
                    last_item.set(s, i);
                    // ... and the events its work completes.
                    for l in p.links_of(c.seq).iter().filter(|l| l.signals) {
                        events.record(l.event, Items::Own(vec![i]), EdgeKind::EventWait);
                    }
                }
                // A Unified Runtime queue's release ends it as a destroy does (as for events: a
                // release that leaves it alive loses an edge, never invents one).
                Class::Stream if c.api.contains("Destroy") || c.api.contains("Release") => {
                    // The stream the call names (its a0), not `key`: stream-class calls carry no
                    // stream of their own to order.
                    if let Some(h) = c.handle() {
                        let k = crate::facts::streams::key_of(h, c.tid, false);
                        *stream_gen.entry(k).or_default() += 1;
                    }
                }
                Class::Stream if c.api.contains("Create") => {
                    // The created handle (recorded when the call returned) and its flags.
                    if let Some(h) = c.handle().filter(|&h| h != 0) {
                        let k = (h, 0);
                        let s = sg(&stream_gen, k);
                        if c.flags & STREAM_NON_BLOCKING != 0 {
                            non_blocking.insert(s, ());
                        } else {
                            non_blocking.remove(&s);
                        }
                        if u64::from(c.flags) & stream_flags::UNORDERED != 0 {
                            unordered.insert(s, Unordered::default());
                        } else {
                            unordered.remove(&s);
                        }
                    }
                }
                // A Unified Runtime event's last release ends it as a destroy does (a release that
                // leaves it alive loses an edge, never invents one).
                Class::Event if c.api.contains("Destroy") || c.api.contains("Release") => {
                    if let Some(e) = c.handle() {
                        events.end(e);
                    }
                }
                Class::Event if c.api.contains("Create") => {
                    if let Some(e) = c.handle() {
                        events.created(e, c.seq);
                    }
                }
                Class::EventRecord if !capturing.contains_key(&key) => {
                    let Some(e) = c.handle() else { continue };
                    let s = sg(&stream_gen, key);
                    let items = match unordered.get(&s) {
                        Some(u) => u.outstanding(),
                        None => Items::Own(last_item.get(s).into_iter().collect()),
                    };
                    events.record(e, items, EdgeKind::EventWait);
                }
                Class::CtxEventRecord => {
                    let Some(e) = c.handle() else { continue };
                    last_item.keep_history();
                    events.record(e, Items::Context(i), EdgeKind::ContextEvent);
                }
                Class::StreamWait if !capturing.contains_key(&key) => {
                    let s = sg(&stream_gen, key);
                    let links = p.links_of(c.seq);
                    // What the event a Level Zero / UR wait signals (urEnqueueEventsWait's output)
                    // completes with: the queue's earlier work and what it waited for.
                    let signals = links.iter().any(|l| l.signals);
                    let own: Items = match (signals, unordered.get(&s)) {
                        (false, _) => Items::Own(Vec::new()),
                        (true, Some(u)) => u.outstanding(),
                        (true, None) => Items::Own(last_item.get(s).into_iter().collect()),
                    };
                    let mut waited_for: Vec<usize> = Vec::new();
                    for e in waited(c, links) {
                        if signals {
                            if let Some(r) = events.record_of(e) {
                                r.items
                                    .with(&last_item, None, |v| waited_for.extend_from_slice(v));
                            }
                        }
                        // A context event's streams: those given work since the last one this
                        // stream waited for (the older ones precede its work through that wait).
                        let after = context_waits.get(&s).copied();
                        let (deps, at) =
                            self.waits_on(&events, &last_item, after, e, c.seq, "stream wait");
                        waits_for.entry(s).or_default().extend(deps);
                        if let Some(at) = at {
                            let w = context_waits.entry(s).or_insert(at);
                            *w = (*w).max(at);
                        }
                    }
                    // The queue's own items are ascending and distinct already.
                    let covered = if waited_for.is_empty() {
                        own
                    } else {
                        let mut v = own.with(&last_item, None, <[usize]>::to_vec);
                        v.extend(waited_for);
                        v.sort_unstable();
                        v.dedup();
                        Items::Own(v)
                    };
                    for l in links.iter().filter(|l| l.signals) {
                        events.record(l.event, covered.clone(), EdgeKind::EventWait);
                    }
                }
                // A host wait on an event, or on a list of them (urEventWait): each one's record.
                Class::EventSync => {
                    for e in waited(c, p.links_of(c.seq)) {
                        // A context event's streams: those given work since this thread last
                        // waited for all work (a device-wide wait, a context event), as below.
                        let after = device_waits[t];
                        let (deps, at) =
                            self.waits_on(&events, &last_item, after, e, c.seq, "host wait");
                        for (from, _, ev) in deps {
                            self.edge(from, Node::call(i), EdgeKind::HostWait, ev);
                        }
                        if let Some(at) = at {
                            device_waits[t] = Some(device_waits[t].map_or(at, |w| w.max(at)));
                        }
                    }
                }
                Class::Sync => {
                    let device_wide = c.stream().unwrap_or(0) == 0
                        && !per_thread_name(&c.api)
                        && !c.api.contains("Stream");
                    let items: Vec<usize> = if device_wide {
                        // Items issued before this thread's last device-wide wait are ordered
                        // before this one through it (and its program order): with a stream made
                        // per step, waiting again for every stream ever seen grew the edges as
                        // steps × streams.
                        last_item.since(device_waits[t].replace(i))
                    } else {
                        let s = sg(&stream_gen, key);
                        match unordered.get_mut(&s) {
                            // Everything outstanding is done when the sync returns: later work
                            // does not wait for it, nor does a later sync (the edge list stays
                            // linear in the calls).
                            Some(u) => {
                                let v = u.outstanding().with(&last_item, None, <[usize]>::to_vec);
                                *u = Unordered::default();
                                v
                            }
                            None => last_item.get(s).into_iter().collect(),
                        }
                    };
                    for it in items {
                        let from = self.exit(it);
                        self.edge(from, Node::call(i), EdgeKind::HostWait, Evidence::Explicit);
                    }
                }
                _ => {}
            }
        }
    }

    /// A token handed off and accepted: the handing thread's last call before the handoff → the
    /// accepting thread's first call after the accept.
    fn handoffs(&mut self, t: &Tokens) {
        let p = self.p;
        if t.handoffs.is_empty() {
            return;
        }
        // Each thread's outermost calls (indices, in sequence order, as the calls are), listed once:
        // searched per handoff, where walking every call per handoff grew as handoffs × calls.
        let mut outermost: HashMap<u32, Vec<usize>> = HashMap::default();
        for (i, c) in p.calls.iter().enumerate().filter(|(_, c)| c.depth == 0) {
            outermost.entry(c.tid).or_default().push(i);
        }
        let none = Vec::new();
        let of = |tid: u32| outermost.get(&tid).unwrap_or(&none);
        for h in &t.handoffs {
            let Some(a) = h.accepted else { continue };
            let f = of(h.from_tid);
            let from = (f.partition_point(|&i| p.calls[i].seq < h.seq))
                .checked_sub(1)
                .map(|k| f[k]);
            let t = of(a.tid);
            let to = t
                .get(t.partition_point(|&i| p.calls[i].seq <= a.seq))
                .copied();
            if let (Some(f), Some(to)) = (from, to) {
                self.edge(
                    Node::call(f),
                    Node::call(to),
                    EdgeKind::Handoff,
                    Evidence::Observed,
                );
            }
        }
    }

    /// Whether the ring may have lost an entry between an event's creation (sequence number `born`,
    /// `None`: not in the capture) and a wait on it (`wait`): with the creation seen, only a torn
    /// slot between the two can have held a record (overwritten entries precede the window, and a
    /// full ring drops only entries after every one it kept).
    fn could_lose(&self, born: Option<u64>, wait: u64) -> bool {
        let p = self.p;
        match born {
            None => p.loss.any(),
            Some(b) => {
                let k = p.torn_seqs.partition_point(|&s| s <= b);
                p.torn_seqs.get(k).is_some_and(|&s| s < wait)
            }
        }
    }

    /// What a wait on event `e` by the call with sequence number `seq` depends on: the latest record
    /// of the event's current lifetime (a context event's items issued after call `after` only, see
    /// `Items::with`); a record the ring may have lost (`could_lose`), as an absent node; nothing
    /// for an event never recorded in its lifetime when no record of it can have been lost. With
    /// them, the call that recorded a context event's record (the waiter's new `after`).
    fn waits_on(
        &mut self,
        events: &Events,
        last: &LastItems,
        after: Option<usize>,
        e: u64,
        seq: u64,
        what: &str,
    ) -> (Vec<(Node, EdgeKind, Evidence)>, Option<usize>) {
        match events.record_of(e) {
            Some(r) => {
                let deps = r.items.with(last, after, |items| {
                    (items.iter())
                        .map(|&it| (self.exit(it), r.kind, Evidence::Explicit))
                        .collect()
                });
                let at = match r.items {
                    Items::Context(at) => Some(at),
                    _ => None,
                };
                (deps, at)
            }
            None if self.could_lose(events.born_of(e), seq) => {
                let l = self.p.loss;
                let a = self.absent(format!(
                    "the record of event {e:#x} this {what} waits on: not in the capture (the ring \
                     dropped {}, overwrote {} and lost {} torn entries)",
                    l.dropped, l.overwritten, l.torn
                ));
                (vec![(a, EdgeKind::EventWait, Evidence::Missing)], None)
            }
            None => (Vec::new(), None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edge_gives_back_its_ends_kind_and_evidence() {
        let last = (1u32 << 30) - 1;
        let nodes = [
            Node::Call(0),
            Node::Call(last),
            Node::Work(1),
            Node::Work(last),
            Node::Absent(0),
            Node::Absent(12345),
        ];
        let evidence = [
            Evidence::Explicit,
            Evidence::Observed,
            Evidence::Inferred { confidence: 0.25 },
            Evidence::Missing,
        ];
        for (k, &from) in nodes.iter().enumerate() {
            let to = nodes[(k + 1) % nodes.len()];
            for ev in evidence {
                let e = Edge::new(from, to, EdgeKind::HostWait, ev);
                assert_eq!(
                    (e.from(), e.to(), e.kind, e.evidence()),
                    (from, to, EdgeKind::HostWait, ev)
                );
                // JSON shows the enums, as before they were packed.
                let json = serde_json::to_value(e).unwrap();
                let want = serde_json::json!({
                    "from": serde_json::to_value(from).unwrap(),
                    "to": serde_json::to_value(to).unwrap(),
                    "kind": "host_wait",
                    "evidence": serde_json::to_value(ev).unwrap(),
                });
                assert_eq!(json, want);
            }
        }
    }
}
