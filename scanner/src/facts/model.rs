//! The timeline model the views share (exports, steps, gaps): per process, every call, NVTX range and
//! device interval with host CLOCK_MONOTONIC nanosecond times, names resolved, device intervals tied to
//! their calls and converted to host time with their bound. Built once per ring, rings in parallel.
//!
//! What cannot be placed on the host clock is kept out of the time lines and counted
//! (`ProcessTimeline::unplaced_device`): a view never guesses a time.

use crate::facts::anchors::Anchors;
use crate::facts::handle::Handle;
use crate::facts::streams::{stream_key, takes_stream, PER_THREAD_STREAM};
use crate::read::capture::Ring;
use crate::read::decode::{Decoded, Entries};
use crate::read::names::Names;
use crate::read::names::{intern, layer_name, Name};
use causeway_ring::layout::{entry_flags, Class, DeviceKind, Layer, NO_CALL};
use causeway_ring::{Entry, Header, Kind};
use rayon::prelude::*;
use serde::Serialize;

/// One process's timeline.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessTimeline {
    /// The ring's key: its file name without `.cwring` (`<host>-<pid>-<start ns>-<n>`), unique where
    /// a pid is not (a process that execs keeps its pid and writes a second ring).
    pub ring: String,
    pub pid: u32,
    pub ppid: u32,
    pub exe: String,
    pub host: String,
    /// Thread ids that made calls or NVTX entries, sorted.
    pub threads: Vec<u32>,
    pub calls: Vec<Call>,
    pub ranges: Vec<Range>,
    pub marks: Vec<Mark>,
    pub device: Vec<DeviceSpan>,
    /// Device intervals without a host time (unconverted clock, untimed, or a lost anchor).
    pub unplaced_device: u64,
    /// Device-timing backend (`none`, `cupti`, `events`).
    pub backend: String,
    /// What the ring lost; not serialised.
    #[serde(skip)]
    pub loss: Loss,
    /// The events Level Zero and Unified Runtime calls signalled or waited for (`Kind::EventLink`),
    /// by the call's sequence number: for the causal graph.
    #[serde(skip)]
    pub event_links: Vec<EventLink>,
    /// Each graph instantiation's nodes and dependencies (`Kind::GraphNode`, `Kind::GraphEdge`), in
    /// ring order: for the causal graph.
    #[serde(skip)]
    pub graph_topologies: Vec<GraphTopology>,
    /// Sequence numbers of the torn slots between live entries, ascending (torn slots before the
    /// first or after the last live entry are only counted): where a lost record can lie.
    #[serde(skip)]
    pub torn_seqs: Vec<u64>,
    /// Streams the program named through NVTX (`nvtxNameCuStream*`, `nvtxNameCudaStream*`, or a
    /// stream resource), by handle; a stream named twice has its later name.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub stream_names: std::collections::BTreeMap<u64, Name>,
    /// Kernel names that are demangled symbols → the symbols (names shown as they are, absent).
    #[serde(skip)]
    pub symbols: std::collections::HashMap<String, String>,
}

impl ProcessTimeline {
    /// A stream's track label: `StreamId::label`, after the name the program gave the stream through
    /// NVTX, if any.
    pub fn stream_label(&self, s: &StreamId) -> String {
        match s {
            StreamId::Handle(h) => match self.stream_names.get(h) {
                Some(name) => format!("{name} ({})", s.label()),
                None => s.label(),
            },
            _ => s.label(),
        }
    }

    /// The raw symbol of a kernel name as shown (itself when it was not mangled).
    pub fn symbol_of<'a>(&'a self, name: &'a str) -> &'a str {
        self.symbols.get(name).map_or(name, String::as_str)
    }
}

/// A ring's key from its path (the file name without `.cwring`).
pub fn ring_key(path: &std::path::Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(causeway_ring::RING_SUFFIX)
        .map(str::to_string)
        .unwrap_or(name)
}

impl ProcessTimeline {
    /// The first and last host time of anything in the process (calls, ranges, marks, device spans);
    /// (0, 0) when it has nothing.
    pub fn extent(&self) -> (u64, u64) {
        // Each table's (first, last) on every thread: a pass over every call and span.
        fn of<T: Sync>(xs: &[T], times: impl Fn(&T) -> (u64, Option<u64>) + Sync) -> (u64, u64) {
            xs.par_iter()
                .with_min_len(1 << 14)
                .map(|x| {
                    let (b, e) = times(x);
                    let e = e.unwrap_or(b);
                    (b.min(e), b.max(e))
                })
                .reduce(|| (u64::MAX, 0), |x, y| (x.0.min(y.0), x.1.max(y.1)))
        }
        let parts = [
            of(&self.calls, |c| (c.begin_ns, c.end_ns.get())),
            of(&self.ranges, |r| (r.begin_ns, r.end_ns)),
            of(&self.marks, |m| (m.ns, None)),
            of(&self.device, |d| (d.begin_ns, Some(d.end_ns))),
        ];
        let first = parts.iter().map(|p| p.0).min().unwrap_or(u64::MAX);
        let last = parts.iter().map(|p| p.1).max().unwrap_or(0);
        if first == u64::MAX {
            (0, 0)
        } else {
            (first, last)
        }
    }
}

/// A host call: a hooked CUDA runtime or driver entry point. Serialised as [`CallJson`]: the
/// stream and handle are read from the entry's arguments, kept as the ring wrote them, by the class.
#[derive(Debug, Clone)]
pub struct Call {
    /// The entry's sequence number in its ring (device intervals name it).
    pub seq: u64,
    pub tid: u32,
    pub api: Name,
    /// The API's layer (serialised as its name: `runtime`, `driver`, `nvtx`, `loader`, …;
    /// `unknown` (`None`) for an API the ring does not describe). One byte, not a name: a large
    /// capture's timeline holds millions of calls.
    pub layer: Option<Layer>,
    /// The API class (serialised as its name: `launch`, `copy`, `sync`, …), `None` for an API the
    /// ring does not describe.
    pub class: Option<Class>,
    pub begin_ns: u64,
    /// None while the call had not returned (hung, or the process died in it).
    pub end_ns: Opt64,
    /// Hooked calls already open on the thread when this one began (0 = outermost).
    pub depth: u16,
    pub result: i32,
    /// A launch's kernel name, when known.
    pub kernel: Option<Name>,
    /// The entry's `a0` as written, where the class reads it: the stream of a stream-ordered call
    /// ([`Call::stream`]), the stream a stream-class call names; `Handle::ZERO` for other classes.
    /// Kept whole rather than as an `Option` (whose absence the class already says), as a number
    /// into the table of handles (`Handle`: 4 bytes, not 8).
    pub a0: Handle,
    /// The entry's `a1` as written, where the class reads it: the handle the call names besides its
    /// stream ([`Call::handle`]); `Handle::ZERO` for other classes.
    pub a1: Handle,
    /// A stream-class call's flags (entry `a2`: a stream create's, bit 0 = non-blocking); 0 for
    /// other classes. For the causal graph; not serialised.
    pub flags: u32,
}

impl Call {
    /// The stream handle for stream-ordered classes (launch, copy, memset, sync, event record/wait,
    /// graph launch, capture), else `None`.
    #[inline]
    pub fn stream(&self) -> Option<u64> {
        takes_stream(self.class).then(|| self.a0.get())
    }

    /// The handle the call names besides its stream: the event of event-record, -wait, -sync and
    /// event-class calls (context events too; the created event of an event create), the graph
    /// exec of a graph launch, the graph of a graph-class call, the stream a stream-class call
    /// names (`a0`: destroy, attributes) or created (handed back in `a1`); `None` for other classes.
    /// For the causal graph; not serialised.
    #[inline]
    pub fn handle(&self) -> Option<u64> {
        match self.class? {
            Class::Stream => Some(if self.a1 != Handle::ZERO {
                self.a1.get()
            } else {
                self.a0.get()
            }),
            _ if Call::names_handle(self.class) => Some(self.a1.get()),
            _ => None,
        }
    }

    /// Whether a call of `class` names a handle in `a1` (`Call::handle`).
    #[inline]
    pub fn names_handle(class: Option<Class>) -> bool {
        matches!(
            class,
            Some(
                Class::EventRecord
                    | Class::EventSync
                    | Class::StreamWait
                    | Class::Event
                    | Class::CtxEventRecord
                    | Class::CtxEventWait
                    | Class::GraphLaunch
                    | Class::Graph
                    | Class::Stream
            )
        )
    }
}

/// A call as JSON shows it (the fields in this order; its stream read by the class).
#[derive(Serialize)]
struct CallJson<'a> {
    seq: u64,
    tid: u32,
    api: &'a str,
    layer: &'static str,
    class: Option<&'static str>,
    begin_ns: u64,
    end_ns: Opt64,
    depth: u16,
    result: i32,
    stream: Option<u64>,
    kernel: Option<&'a str>,
}

impl Serialize for Call {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        CallJson {
            seq: self.seq,
            tid: self.tid,
            api: &self.api,
            layer: layer_or_unknown(self.layer),
            class: self.class.map(Class::name),
            begin_ns: self.begin_ns,
            end_ns: self.end_ns,
            depth: self.depth,
            result: self.result,
            stream: self.stream(),
            kernel: self.kernel.as_deref(),
        }
        .serialize(s)
    }
}

/// An optional time or sequence number in 8 bytes (an `Option<u64>` takes 16): `u64::MAX` stands
/// for none, a value neither a nanosecond time nor a sequence number reaches (`From` keeps a
/// damaged ring's `u64::MAX` as `u64::MAX - 1`). Reads (`get`) and
/// serialises as the `Option<u64>` it stands for.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Opt64(u64);

impl Opt64 {
    pub const NONE: Opt64 = Opt64(u64::MAX);

    #[inline]
    pub fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }

    #[inline]
    pub fn is_some(self) -> bool {
        self.0 != u64::MAX
    }

    #[inline]
    pub fn is_none(self) -> bool {
        self.0 == u64::MAX
    }
}

impl From<Option<u64>> for Opt64 {
    /// `Some(u64::MAX)` (only a damaged ring's times convert to it) is kept as `u64::MAX - 1`: a
    /// value that was there stays there.
    #[inline]
    fn from(v: Option<u64>) -> Opt64 {
        Opt64(v.map_or(u64::MAX, |x| x.min(u64::MAX - 1)))
    }
}

impl From<u64> for Opt64 {
    #[inline]
    fn from(v: u64) -> Opt64 {
        Some(v).into()
    }
}

/// Whether an optional field is left out of JSON (serde's `skip_serializing_if`).
fn absent(v: &Opt64) -> bool {
    v.is_none()
}

impl std::fmt::Debug for Opt64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.get(), f)
    }
}

impl Serialize for Opt64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

/// Calls are most of a large timeline's memory (millions of them): keep one at 64 bytes.
const _: () = assert!(std::mem::size_of::<Call>() <= 56);

/// What a ring lost (the causal graph states a chain through a lost record as incomplete).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loss {
    /// Entries the writer dropped because the ring was full.
    pub dropped: u64,
    /// Entries lost to the overwrite policy (the window starts after them).
    pub overwritten: u64,
    /// Slots reserved but never committed.
    pub torn: u64,
}

impl Loss {
    pub fn any(&self) -> bool {
        self.dropped + self.overwritten + self.torn > 0
    }
}

/// An NVTX range on one thread (push/pop) or across threads (start/end).
#[derive(Debug, Clone, Serialize)]
pub struct Range {
    pub tid: u32,
    pub name: Name,
    pub domain: Option<Name>,
    pub begin_ns: u64,
    /// `None` for a range never closed.
    pub end_ns: Option<u64>,
    /// Push/pop ranges: how many ranges of the same thread and domain enclose it (0 = outermost);
    /// start/end ranges: 0.
    pub level: u32,
    /// Category, colour and payload of the range's attribute structure, when set.
    #[serde(flatten)]
    pub attrs: Attrs,
}

#[derive(Debug, Clone, Serialize)]
pub struct Mark {
    pub tid: u32,
    pub name: Name,
    pub domain: Option<Name>,
    pub ns: u64,
    #[serde(flatten)]
    pub attrs: Attrs,
}

/// What an NVTX mark's or range's attribute structure carried besides its message (the ring's
/// `NvtxAttributes` entry). All `None` for marks and ranges without one.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Attrs {
    /// The category: its NVTX name (`nvtxNameCategory`, `nvtxDomainNameCategory` in the mark's
    /// domain), else its number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<Name>,
    /// ARGB colour.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Payload>,
    /// The category as recorded: (domain text id, category number), before it is named.
    #[serde(skip)]
    pub category_key: Option<(u64, u32)>,
}

impl Attrs {
    /// `#aarrggbb`, as exports show a colour.
    pub fn color_hex(&self) -> Option<String> {
        self.color.map(|c| format!("#{c:08x}"))
    }
}

/// An NVTX payload, by its type.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    U64(u64),
    I64(i64),
    U32(u32),
    I32(i32),
    Double(f64),
    Float(f32),
    /// An extended payload (`nvToolsExtPayload.h`): the first payload's schema id and how many
    /// payloads there were (their bytes are not kept).
    Ext {
        schema: u64,
        count: u16,
    },
}

impl Payload {
    /// The payload of an `NvtxAttributes` entry; `None` when it has none or one of a type this
    /// scanner does not know.
    pub fn of(e: &Entry) -> Option<Payload> {
        use causeway_ring::layout::nvtx_payload as t;
        let v = e.a1;
        Some(match e.result {
            t::U64 => Payload::U64(v),
            t::I64 => Payload::I64(v as i64),
            t::DOUBLE => Payload::Double(f64::from_bits(v)),
            t::U32 => Payload::U32(v as u32),
            t::I32 => Payload::I32(v as u32 as i32),
            t::FLOAT => Payload::Float(f32::from_bits(v as u32)),
            t::EXT => Payload::Ext {
                schema: v,
                count: e.depth,
            },
            _ => return None,
        })
    }

    /// The payload's type name and its value as text (exports' arguments).
    pub fn parts(&self) -> (&'static str, String) {
        match *self {
            Payload::U64(v) => ("u64", v.to_string()),
            Payload::I64(v) => ("i64", v.to_string()),
            Payload::U32(v) => ("u32", v.to_string()),
            Payload::I32(v) => ("i32", v.to_string()),
            Payload::Double(v) => ("double", v.to_string()),
            Payload::Float(v) => ("float", v.to_string()),
            Payload::Ext { schema, count } => ("ext", format!("schema {schema} ×{count}")),
        }
    }
}

/// When device work ran, on the host clock.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct DeviceSpan {
    /// Kernel, copy, memset or whole graph launch (serialised by name: `kernel`, `memcpy`, `memset`,
    /// `graph`). One byte, not a name: a large capture's timeline holds millions of spans.
    #[serde(serialize_with = "device_kind_text")]
    pub kind: DeviceKind,
    /// Kernel name; a copy's direction (`HtoD`, …); `memset`; `[graph launch]`.
    pub name: Name,
    pub begin_ns: u64,
    pub end_ns: u64,
    /// How far the converted times may be off (ns, either way): 0 when the backend's timestamps were
    /// already on the host clock (CUPTI's timestamp callback).
    pub bound_ns: u64,
    /// A track for the stream the work ran on: the issuing call's stream handle when the interval is
    /// tied to a call, else the backend's own stream id (`stream.get()`).
    pub stream: PackedStream,
    /// Sequence number of the issuing call (`None`: not tied to one).
    pub call: Opt64,
    /// Bytes copied or set (copies, memsets).
    pub bytes: u64,
    /// Kernels, where CUPTI collected them: when the kernel was queued into a command buffer and
    /// when that buffer was submitted to the device (host ns).
    #[serde(skip_serializing_if = "absent")]
    pub queued_ns: Opt64,
    #[serde(skip_serializing_if = "absent")]
    pub submitted_ns: Opt64,
    /// Work a graph launch ran (CUPTI): the node's index in its executable graph, as
    /// `GraphTopology` numbers nodes.
    #[serde(skip_serializing_if = "GraphNode::is_none")]
    pub graph_node: GraphNode,
}

/// Spans are a large timeline's second table (millions of them): keep one at 72 bytes.
const _: () = assert!(std::mem::size_of::<DeviceSpan>() <= 72);

/// A node's index in its executable graph, or none, in 2 bytes (`Option<u16>` takes 4): as the
/// ring writes it, the index plus one, 0 for none. Reads (`get`) and serialises as the `Option`.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct GraphNode(u16);

impl GraphNode {
    pub const NONE: GraphNode = GraphNode(0);

    /// From an entry's node field (the index plus one; 0: none).
    pub fn from_entry(field: u16) -> GraphNode {
        GraphNode(field)
    }

    /// Node `k`; `k` is below `u16::MAX`, as every node an entry can name.
    pub fn index(k: u16) -> GraphNode {
        GraphNode(k.checked_add(1).expect("a node an entry can name"))
    }

    #[inline]
    pub fn get(self) -> Option<u16> {
        self.0.checked_sub(1)
    }

    pub fn is_none(&self) -> bool {
        self.0 == 0
    }
}

impl std::fmt::Debug for GraphNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for GraphNode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

/// A [`StreamId`] in 9 bytes on any byte (the enum takes 16 with its padding), so that a span's
/// stream shares its last word with its kind and graph node. Reads (`get`), compares, prints and
/// serialises as the `StreamId`.
#[derive(Clone, Copy)]
#[repr(C, packed)]
pub struct PackedStream {
    tag: u8,
    value: u64,
}

impl PackedStream {
    #[inline]
    pub fn get(self) -> StreamId {
        let v = self.value;
        match self.tag {
            0 => StreamId::Handle(v),
            1 => StreamId::PerThread(v as u32),
            _ => StreamId::Backend(v as u32),
        }
    }
}

impl From<StreamId> for PackedStream {
    #[inline]
    fn from(s: StreamId) -> PackedStream {
        let (tag, value) = match s {
            StreamId::Handle(h) => (0, h),
            StreamId::PerThread(t) => (1, u64::from(t)),
            StreamId::Backend(id) => (2, u64::from(id)),
        };
        PackedStream { tag, value }
    }
}

impl PartialEq for PackedStream {
    fn eq(&self, other: &PackedStream) -> bool {
        self.get() == other.get()
    }
}

impl Eq for PackedStream {}

impl PartialEq<StreamId> for PackedStream {
    fn eq(&self, other: &StreamId) -> bool {
        self.get() == *other
    }
}

impl std::fmt::Debug for PackedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl Serialize for PackedStream {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

/// Which stream a device span ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum StreamId {
    /// A stream handle as the program passed it (0: the legacy default stream; 2: per-thread).
    Handle(u64),
    /// The per-thread default stream of one thread.
    PerThread(u32),
    /// The backend's own id (CUPTI's stream id) for work no call was tied to.
    Backend(u32),
}

impl StreamId {
    pub fn label(&self) -> String {
        match *self {
            StreamId::Handle(0) => "stream 0 (legacy default)".into(),
            StreamId::Handle(h) => format!("stream {h:#x}"),
            StreamId::PerThread(t) => format!("per-thread default stream of {t}"),
            StreamId::Backend(id) => format!("device stream {id}"),
        }
    }
}

/// Every process of a capture.
#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub processes: Vec<ProcessTimeline>,
}

impl Timeline {
    pub fn build(rings: &[Ring]) -> Timeline {
        let progress = crate::util::progress::Progress::rings(
            "causeway: building the timeline",
            rings.len(),
            crate::read::capture::bytes_of(rings),
        );
        Timeline {
            processes: rings
                .par_iter()
                .map(|r| {
                    let p = process(r);
                    progress.ring_done();
                    p
                })
                .collect(),
        }
    }
}

#[cfg(test)]
impl Call {
    /// A call of no known layer or class, for tests: sequence number `seq` on thread `tid`, named
    /// `api`, from `begin_ns` to `end_ns` (`None`: it never returned), `depth` calls deep.
    pub(crate) fn bare(
        seq: u64,
        tid: u32,
        api: Name,
        (begin_ns, end_ns): (u64, Option<u64>),
        depth: u16,
    ) -> Call {
        Call {
            seq,
            tid,
            api,
            layer: None,
            class: None,
            begin_ns,
            end_ns: end_ns.into(),
            depth,
            result: 0,
            kernel: None,
            a0: Handle::ZERO,
            a1: Handle::ZERO,
            flags: 0,
        }
    }
}

impl Call {
    /// The layer's name, `unknown` for an API the ring does not describe.
    pub fn layer_name(&self) -> &'static str {
        layer_or_unknown(self.layer)
    }
}

fn layer_or_unknown(l: Option<Layer>) -> &'static str {
    l.map_or("unknown", layer_name)
}

/// A device span's kind as JSON shows it: its name.
fn device_kind_text<S: serde::Serializer>(k: &DeviceKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(k.name())
}

/// The stream of a stream-ordered call, by the report's rule (`report::stream_key`).
fn stream_of(e: &Entry) -> StreamId {
    match stream_key(e) {
        (PER_THREAD_STREAM, tid) => StreamId::PerThread(tid),
        (h, _) => StreamId::Handle(h),
    }
}

/// One ring's timeline. The ring's pages are given back as its passes read them (the check, the
/// calls, the device intervals): the timeline and the mapped ring are not held whole at once.
fn process(ring: &Ring) -> ProcessTimeline {
    let names = Names::of(ring);
    ring.analysed_releasing(|d| process_decoded(ring, d, &names))
}

/// One ring's timeline from its decoded entries (an analysis that decodes the ring anyway builds
/// it on the same decode: `Report::build_with_timeline`).
pub(crate) fn process_decoded(ring: &Ring, d: &Decoded, names: &Names) -> ProcessTimeline {
    let h: &Header = &ring.view.header;
    let entries = d.entries();
    // The calls (most of the entries), in chunks on every thread; beside them the NVTX entries
    // (paired in order, on one) and the device intervals.
    let (
        (calls, call_threads, named),
        ((mut ranges, mut marks, nvtx_threads), (device, unplaced_device)),
    ) = rayon::join(
        || calls_of(h, d, names),
        || rayon::join(|| nvtx_of(h, d, names), || device_spans(h, d, names)),
    );
    let resources = Resources::of(&named, names);
    resources.name_categories(&mut ranges, &mut marks);
    let mut threads = call_threads;
    threads.extend(nvtx_threads);
    threads.sort_unstable();
    threads.dedup();
    ProcessTimeline {
        ring: ring_key(ring.path),
        symbols: names
            .symbols()
            .map(|(a, b)| (a.clone(), b.clone()))
            .collect(),
        pid: h.pid,
        ppid: h.ppid,
        exe: h.exe.clone(),
        host: h.host.clone(),
        threads,
        calls,
        ranges,
        marks,
        device,
        unplaced_device,
        backend: crate::facts::device::backend_name(h.backend),
        stream_names: resources.streams,
        loss: Loss {
            dropped: d.dropped,
            overwritten: d.overwritten,
            torn: d.torn,
        },
        torn_seqs: torn_seqs(entries, d.torn),
        event_links: event_links(d),
        graph_topologies: graph_topologies(d, names),
    }
}

/// One instantiation of a graph as the shim walked it: its kernel nodes and the dependencies
/// between its nodes, nodes numbered by their index in the executable graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphTopology {
    /// Sequence number of its first entry: graph launches after it run it (until the exec handle
    /// is instantiated again).
    pub seq: u64,
    /// The graph exec handle (a graph launch's `Call::handle`).
    pub exec: u64,
    /// Kernel nodes: (index, kernel name when the ring names the function).
    pub kernels: Vec<(u32, Option<Name>)>,
    /// (node depended on, dependent node).
    pub edges: Vec<(u32, u32)>,
    /// The shim could not read every edge: the list is partial and no ordering is drawn from it.
    pub incomplete: bool,
}

/// `ProcessTimeline::issuers`' mark of a span whose call the capture lacks.
pub const NO_ISSUER: u32 = crate::util::groups::NONE;

impl ProcessTimeline {
    /// A process with nothing in it, for timelines built in code (tests, tools): the ring `h-PID-1-0`
    /// of host `h`, parent 1, executable `/usr/bin/app`, backend `none`, no threads, no loss.
    /// Fill what a case needs with struct update syntax.
    pub fn empty(pid: u32) -> ProcessTimeline {
        ProcessTimeline {
            ring: format!("h-{pid}-1-0"),
            symbols: Default::default(),
            pid,
            ppid: 1,
            exe: "/usr/bin/app".into(),
            host: "h".into(),
            threads: Vec::new(),
            calls: Vec::new(),
            ranges: Vec::new(),
            marks: Vec::new(),
            device: Vec::new(),
            unplaced_device: 0,
            backend: "none".into(),
            stream_names: Default::default(),
            loss: Loss::default(),
            torn_seqs: Vec::new(),
            event_links: Vec::new(),
            graph_topologies: Vec::new(),
        }
    }

    /// Each device span's issuing call (index into `calls`), `NO_ISSUER` where the capture lacks it:
    /// found in chunks on every thread, each searching near its last find (spans lie near their
    /// issue order). 4 bytes a span; grouped by call (`util::groups::Sparse::by_key`), each call's
    /// spans in span order, which `device`'s sort by (start, end) makes (start, index) order.
    pub fn issuers(&self) -> Vec<u32> {
        const CHUNK: usize = 1 << 16;
        let mut issuer = vec![NO_ISSUER; self.device.len()];
        issuer
            .par_chunks_mut(CHUNK)
            .zip(self.device.par_chunks(CHUNK))
            .for_each(|(out, ds)| {
                let mut near = 0;
                for (o, d) in out.iter_mut().zip(ds) {
                    if let Some(i) = d.call.get().and_then(|s| self.call_index_near(s, near)) {
                        near = i;
                        *o = i as u32;
                    }
                }
            });
        issuer
    }

    /// The index of the call with sequence number `seq`, searched outward from index `hint` (a pass
    /// over items in issue order finds each call near the last one: a few probes instead of a
    /// binary search over all the calls).
    pub fn call_index_near(&self, seq: u64, hint: usize) -> Option<usize> {
        let calls = &self.calls;
        let key = |i: usize| calls[i].seq;
        let n = calls.len();
        if n == 0 {
            return None;
        }
        let h = hint.min(n - 1);
        // A range [lo, hi) with key(lo) <= seq (or lo = 0) and key(hi) > seq (or hi = n).
        let (mut lo, mut hi, mut step) = (h, h + 1, 1);
        if key(h) <= seq {
            while hi < n && key(hi) <= seq {
                lo = hi;
                hi = (hi + step).min(n);
                step *= 2;
            }
        } else {
            hi = h;
            lo = h.saturating_sub(1);
            while lo > 0 && key(lo) > seq {
                hi = lo;
                lo = lo.saturating_sub(step);
                step *= 2;
            }
        }
        calls[lo..hi]
            .binary_search_by_key(&seq, |c| c.seq)
            .ok()
            .map(|i| lo + i)
    }

    /// The topology a graph launch (a call with sequence number `seq` on exec handle `exec`) ran,
    /// by its index in `graph_topologies`: the exec's latest instantiation before it.
    pub fn topology_of(&self, exec: u64, seq: u64) -> Option<usize> {
        let before = self.graph_topologies.partition_point(|t| t.seq < seq);
        self.graph_topologies[..before]
            .iter()
            .rposition(|t| t.exec == exec)
    }
}

/// The ring's graph node and edge entries as topologies: a `GraphNode` of ordinal 0 starts an
/// instantiation's list (its edges follow it).
fn graph_topologies(d: &Decoded, names: &Names) -> Vec<GraphTopology> {
    let mut out: Vec<GraphTopology> = Vec::new();
    let mut open: crate::util::fastmap::HashMap<u64, usize> = Default::default();
    for (_, e) in d.rest_behind() {
        if !e.done {
            continue;
        }
        match e.kind {
            Some(Kind::GraphNode) => {
                let (ordinal, count) = (e.a2 as u32, (e.a2 >> 32) as u32);
                let k = match open.get(&e.a0) {
                    Some(&k) if ordinal != 0 => k,
                    _ => {
                        out.push(GraphTopology {
                            seq: e.seq,
                            exec: e.a0,
                            ..Default::default()
                        });
                        open.insert(e.a0, out.len() - 1);
                        out.len() - 1
                    }
                };
                if count > 0 {
                    out[k]
                        .kernels
                        .push((e.result as u32, names.kernel_name(e.a1)));
                }
            }
            Some(Kind::GraphEdge) => {
                let Some(&k) = open.get(&e.a0) else { continue };
                match (u32::try_from(e.a1), u32::try_from(e.a2)) {
                    (Ok(a), Ok(b)) => out[k].edges.push((a, b)),
                    _ => out[k].incomplete = true,
                }
            }
            _ => {}
        }
    }
    out
}

/// An event a call signalled (`signals`) or waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventLink {
    /// The call's sequence number.
    pub call: u64,
    pub event: u64,
    pub signals: bool,
}

impl ProcessTimeline {
    /// The events the call with sequence number `seq` signalled or waited for.
    pub fn links_of(&self, seq: u64) -> &[EventLink] {
        let lo = self.event_links.partition_point(|l| l.call < seq);
        let hi = lo + self.event_links[lo..].partition_point(|l| l.call == seq);
        &self.event_links[lo..hi]
    }
}

/// The ring's `EventLink` entries, sorted by call (then as written).
fn event_links(d: &Decoded) -> Vec<EventLink> {
    use causeway_ring::layout::event_link;
    let mut v: Vec<EventLink> = d
        .rest_behind()
        .map(|(_, e)| e)
        .filter(|e| e.kind == Some(Kind::EventLink) && e.done)
        .filter(|e| matches!(e.a2, event_link::SIGNALS | event_link::WAITS))
        .map(|e| EventLink {
            call: e.a0,
            event: e.a1,
            signals: e.a2 == event_link::SIGNALS,
        })
        .collect();
    v.sort_by_key(|l| l.call);
    v
}

/// The sequence numbers missing between consecutive live entries (at most `torn` of them): a ring
/// with torn slots is decoded as a copy that leaves them out.
fn torn_seqs(entries: Entries, torn: u64) -> Vec<u64> {
    let Entries::Copied(v) = entries else {
        return Vec::new();
    };
    if torn == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for w in v.windows(2) {
        out.extend((w[0].seq + 1..w[1].seq).take((torn as usize).saturating_sub(out.len())));
    }
    out
}

/// One NVTX naming call (class `Name`): (sequence number, a0, a1, a2).
pub(crate) type Naming = (u64, u64, u64, u64);

/// What a process named through NVTX, later namings of the same thing winning.
#[derive(Default)]
pub(crate) struct Resources {
    pub streams: std::collections::BTreeMap<u64, Name>,
    /// (domain text id, category) → name.
    pub categories: std::collections::HashMap<(u64, u32), Name>,
}

impl Resources {
    /// From the naming calls, in sequence order.
    pub(crate) fn of(named: &[Naming], names: &Names) -> Resources {
        use causeway_ring::layout::named as what;
        let mut r = Resources::default();
        for &(_, a0, a1, a2) in named {
            if a1 == 0 {
                continue;
            }
            match a2 & 0xff {
                what::STREAM => {
                    r.streams.insert(a0, names.text_name(a1));
                }
                what::CATEGORY => {
                    r.categories
                        .insert((a2 >> 32, a0 as u32), names.text_name(a1));
                }
                _ => {}
            }
        }
        r
    }

    /// A category's name in a domain (`domain`: its text id, 0 the default domain), else its number.
    fn category(&self, domain: u64, id: u32) -> Name {
        match self.categories.get(&(domain & 0xffff_ffff, id)) {
            Some(&n) => n,
            None => intern(&id.to_string()),
        }
    }

    /// Names the categories of ranges and marks (`nvtx_of` cannot: the naming calls are read beside it).
    fn name_categories(&self, ranges: &mut [Range], marks: &mut [Mark]) {
        let attrs = ranges
            .iter_mut()
            .map(|r| &mut r.attrs)
            .chain(marks.iter_mut().map(|m| &mut m.attrs));
        for a in attrs {
            if let Some((domain, id)) = a.category_key {
                a.category = Some(self.category(domain, id));
            }
        }
    }
}

/// Entries per work item of the calls' parallel pass.
const CALLS_CHUNK: usize = 1 << 16;

/// The calls, in sequence order, the threads that made them (sorted, distinct), and the NVTX
/// naming calls among them. Each chunk of entries writes its calls straight into their place in the
/// one vector (the decode's lists say how many each holds): building them in vectors of their own
/// and copying those over faulted in and wrote every call twice.
fn calls_of(h: &Header, d: &Decoded, names: &Names) -> (Vec<Call>, Vec<u32>, Vec<Naming>) {
    let entries = d.entries();
    let n = entries.len();
    let starts: Vec<usize> = (0..n).step_by(CALLS_CHUNK).collect();
    let counts: Vec<usize> = (starts.iter())
        .map(|&a| d.calls_in(a..(a + CALLS_CHUNK).min(n)))
        .collect();
    let total: usize = counts.iter().sum();
    let mut calls: Vec<Call> = Vec::with_capacity(total);
    // Each chunk's share of the vector's spare room.
    let mut room = &mut calls.spare_capacity_mut()[..total];
    let mut shares = Vec::with_capacity(counts.len());
    for &k in &counts {
        let (share, rest) = room.split_at_mut(k);
        shares.push(share);
        room = rest;
    }
    let parts: Vec<(usize, bool, Vec<u32>, Vec<Naming>)> = (starts.par_iter().zip(shares))
        .map(|(&start, share)| {
            let end = (start + CALLS_CHUNK).min(n);
            let mut written = 0;
            let (done, threads, named) = walk_calls(h, entries, start..end, names, |call| {
                // No room: more calls than the lists said (a ring still written under overwrite).
                let Some(slot) = share.get_mut(written) else {
                    return false;
                };
                slot.write(call);
                written += 1;
                true
            });
            d.release(start..end);
            (written, done && written == share.len(), threads, named)
        })
        .collect();
    if parts.iter().all(|p| p.1) {
        // SAFETY: every chunk wrote exactly its share, and the shares tile the first `total` slots.
        unsafe { calls.set_len(total) };
    } else {
        // The entries changed under the read: drop what was written, and build the calls anew in
        // one walk, into a vector that grows.
        let mut at = 0;
        for (p, &k) in parts.iter().zip(&counts) {
            for slot in &mut calls.spare_capacity_mut()[at..at + p.0] {
                // SAFETY: the chunk wrote these `p.0` slots of its share, each once.
                unsafe { slot.assume_init_drop() };
            }
            at += k;
        }
        let mut calls = Vec::new();
        let (_, threads, named) = walk_calls(h, entries, 0..n, names, |c| {
            calls.push(c);
            true
        });
        return (calls, threads, named);
    }
    let mut threads = Vec::new();
    let mut named = Vec::new();
    for (_, _, t, nm) in parts {
        threads.extend(t);
        named.extend(nm);
    }
    (calls, threads, named)
}

/// The calls among `entries[range]`, handed to `put` in order (`false`: no room, and the walk stops
/// there, incomplete), with whether it finished, the threads that made them (sorted, distinct) and
/// the NVTX naming calls among them.
fn walk_calls(
    h: &Header,
    entries: Entries,
    range: std::ops::Range<usize>,
    names: &Names,
    mut put: impl FnMut(Call) -> bool,
) -> (bool, Vec<u32>, Vec<Naming>) {
    // Per walk: a converter is not shared between threads.
    let ticks = h.converter();
    let (mut threads, mut named) = (Vec::new(), Vec::new());
    for i in range {
        let e = entries.get(i);
        if e.kind != Some(Kind::Call) {
            continue;
        }
        if threads.last() != Some(&e.tid) {
            threads.push(e.tid);
        }
        let call = call_of(&ticks, &e, names);
        if call.class == Some(Class::Name) {
            named.push((e.seq, e.a0, e.a1, e.a2));
        }
        if !put(call) {
            return (false, threads, named);
        }
    }
    threads.sort_unstable();
    threads.dedup();
    (true, threads, named)
}

#[inline]
fn call_of(ticks: &causeway_ring::clock::Converter, e: &Entry, names: &Names) -> Call {
    let (api, layer) = match names.api(e.api) {
        Some((n, info)) => (*n, Some(info.layer)),
        None => (crate::read::names::unknown_api(e.api), None),
    };
    let class = names.class(e);
    Call {
        seq: e.seq,
        tid: e.tid,
        api,
        layer,
        class,
        begin_ns: ticks.ns(e.t_begin),
        end_ns: e.done.then(|| ticks.ns(e.t_end)).into(),
        depth: e.depth,
        result: e.result,
        kernel: (class == Some(Class::Launch))
            .then(|| names.kernel_name(e.a1))
            .flatten(),
        a0: if takes_stream(class) || class == Some(Class::Stream) {
            Handle::of(e.a0)
        } else {
            Handle::ZERO
        },
        a1: if Call::names_handle(class) {
            Handle::of(e.a1)
        } else {
            Handle::ZERO
        },
        flags: if class == Some(Class::Stream) {
            e.a2 as u32
        } else {
            0
        },
    }
}

/// The NVTX ranges (sorted by begin, thread, level) and marks, and the threads that pushed ranges.
fn nvtx_of(h: &Header, d: &Decoded, names: &Names) -> (Vec<Range>, Vec<Mark>, Vec<u32>) {
    let ns = |t: u64| h.ticks_to_ns(t);
    let mut ranges = Vec::new();
    let mut marks = Vec::new();
    let mut threads: Vec<u32> = Vec::new();
    let mut pairer = crate::facts::ranges::Pairer::default();
    let extras = crate::facts::ranges::attributes(d);
    let attrs = |e: &Entry| match extras.get(&e.seq) {
        Some(x) => attrs_of(e, x),
        None => Attrs::default(),
    };
    let range = |open: &Entry, end: Option<u64>, level: u32| Range {
        tid: open.tid,
        name: names.text_name(open.a0),
        domain: names.domain_name(open.a1),
        begin_ns: ns(open.t_begin),
        end_ns: end.map(ns),
        level,
        attrs: attrs(open),
    };
    for (_, e) in d.rest_behind() {
        let e = &e;
        match e.kind {
            Some(Kind::RangePush | Kind::RangePop | Kind::RangeStart | Kind::RangeEnd) => {
                if e.kind == Some(Kind::RangePush) {
                    threads.push(e.tid);
                }
                if let Some(r) = pairer.step(e) {
                    ranges.push(range(&r.open, Some(r.t_end), r.level));
                }
            }
            Some(Kind::Mark) => marks.push(Mark {
                tid: e.tid,
                name: names.text_name(e.a0),
                domain: names.domain_name(e.a1),
                ns: ns(e.t_begin),
                attrs: attrs(e),
            }),
            _ => {}
        }
    }
    for (open, level) in pairer.still_open() {
        ranges.push(range(open, None, level));
    }
    ranges.sort_by_key(|r| (r.begin_ns, r.tid, r.level));
    (ranges, marks, threads)
}

/// A mark's or range's attributes from its `NvtxAttributes` entry `x` (its category still a number).
fn attrs_of(owner: &Entry, x: &Entry) -> Attrs {
    let category = (x.a2 as u32 != 0).then_some((owner.a1, x.a2 as u32));
    Attrs {
        category: category.map(|(_, c)| intern(&c.to_string())),
        color: (x.flags & entry_flags::NVTX_COLOR != 0).then_some((x.a2 >> 32) as u32),
        payload: Payload::of(x),
        category_key: category,
    }
}

fn device_spans(h: &Header, d: &Decoded, names: &Names) -> (Vec<DeviceSpan>, u64) {
    let entries = d.entries();
    // Anchors are among the entries that are neither calls nor intervals: read only those.
    let anchors = Anchors::of(h, d.rest_behind().map(|(_, e)| e));
    let by_key = |s: &DeviceSpan| (s.begin_ns, s.end_ns);
    let Some(parts) = d.interval_parts(1 << 16) else {
        let mut out = Vec::new();
        let unplaced = spans_of_part(h, d.intervals(), entries, &anchors, names, |s| out.push(s));
        out.sort_by_key(by_key);
        return (out, unplaced);
    };
    // The parts on every thread, each writing its spans in interval order into its share of one
    // vector (as long as the part: an interval makes at most one span); the shares then closed up.
    let bound: usize = parts.iter().map(|p| p.1).sum();
    let mut out: Vec<DeviceSpan> = Vec::with_capacity(bound);
    let mut shares = Vec::with_capacity(parts.len());
    let mut rest = &mut out.spare_capacity_mut()[..bound];
    for &(_, n, _) in &parts {
        let (share, after) = rest.split_at_mut(n);
        shares.push(share);
        rest = after;
    }
    let filled: Vec<(usize, usize, u64)> = (parts.into_par_iter().zip(shares))
        .map(|((part, n, among), share)| {
            let mut k = 0;
            let unplaced = spans_of_part(h, part, entries, &anchors, names, |s| {
                share[k].write(s);
                k += 1;
            });
            d.release(among);
            (n, k, unplaced)
        })
        .collect();
    let base = out.as_mut_ptr();
    let (mut to, mut from) = (0, 0);
    for &(n, k, _) in &filled {
        if from != to {
            // SAFETY: slots from..from + k were written above; to <= from, and both ranges lie in
            // the capacity; `copy` allows them to overlap.
            unsafe { std::ptr::copy(base.add(from), base.add(to), k) };
        }
        to += k;
        from += n;
    }
    // SAFETY: the first `to` slots hold the parts' spans, closed up above.
    unsafe { out.set_len(to) };
    // Stable: equal spans keep interval order (adaptive: intervals come nearly sorted).
    out.sort_by_key(by_key);
    (out, filled.iter().map(|f| f.2).sum())
}

/// One part of the ring's device intervals as spans, each given to `emit` in interval order;
/// returns how many could not be placed on the host clock.
fn spans_of_part(
    h: &Header,
    part: crate::read::decode::Subset,
    entries: crate::read::decode::Entries,
    anchors: &Anchors,
    names: &Names,
    mut emit: impl FnMut(DeviceSpan),
) -> u64 {
    // (A converter of its own: it keeps the last conversion's figures.)
    let ticks = &h.converter();
    let mut unplaced = 0u64;
    // Copy and memset rows' names, made once and shared (not a new string per interval).
    let mut copy_names: std::collections::BTreeMap<u16, Name> = Default::default();
    for (_, e) in part.filter(|(_, e)| e.done) {
        let e = &e;
        let index = (e.a0 != NO_CALL)
            .then(|| entries.index_of_seq(e.a0))
            .flatten();
        let call = match crate::facts::device::issuer(entries, e, index, |c| names.class(c)) {
            crate::facts::device::Issuer::Call(i) => Some(entries.get(i)),
            _ => None,
        };
        let times = crate::facts::placement::place(e, anchors, ticks)
            .map(|p| (p.begin_ns, p.end_ns, p.bound_ns));
        let Some((begin_ns, end_ns, bound_ns)) = times else {
            unplaced += 1;
            continue;
        };
        let Some(kind) = DeviceKind::from_u16(e.api) else {
            unplaced += 1;
            continue;
        };
        let anchored_kernel = e.flags & entry_flags::ANCHORED != 0;
        let (name, bytes) = match kind {
            // The runtime's own profiling (Unified Runtime, Level Zero) names the kernel by its
            // handle: the issuing call may be an execute of many.
            DeviceKind::Kernel if e.flags & entry_flags::PROFILED != 0 => {
                (names.kernel_name(e.a1).unwrap_or(Name::UNKNOWN_KERNEL), 0)
            }
            DeviceKind::Kernel if anchored_kernel => (
                call.and_then(|c| names.kernel_name(c.a1))
                    .unwrap_or(Name::UNKNOWN_KERNEL),
                0,
            ),
            DeviceKind::Kernel => (names.kernel_text_name(e.a1), 0),
            DeviceKind::Memcpy => (
                *copy_names
                    .entry(e.depth)
                    .or_insert_with(|| intern(&crate::facts::device::copy_kind_name(e.depth))),
                e.a1,
            ),
            DeviceKind::Memset => (Name::MEMSET, e.a1),
            DeviceKind::Graph => (Name::GRAPH_LAUNCH, 0),
        };
        // A call recorded through CUPTI's callback carries no arguments: use the backend's stream.
        let stream = match call {
            Some(c) if c.flags & entry_flags::VIA_CUPTI_CALLBACK == 0 => stream_of(&c),
            _ => StreamId::Backend(e.a2 as u32),
        };
        // CUPTI's latency timestamps (kernels), on the ring's clock like the interval.
        let latency = (e.flags & entry_flags::LATENCY != 0
            && e.flags & entry_flags::HOST_CLOCK != 0)
            .then(|| {
                let submitted = e.t_begin.checked_sub(u64::from(e.tid))?;
                let queued = submitted.checked_sub(u64::from(e.result as u32))?;
                Some((h.ticks_to_ns(queued), h.ticks_to_ns(submitted)))
            })
            .flatten();
        emit(DeviceSpan {
            kind,
            name,
            begin_ns,
            end_ns,
            bound_ns,
            stream: stream.into(),
            call: call.map(|c| c.seq).into(),
            bytes,
            queued_ns: latency.map(|l| l.0).into(),
            submitted_ns: latency.map(|l| l.1).into(),
            graph_node: GraphNode::from_entry(e.node),
        });
    }
    unplaced
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `Opt64` is the `Option<u64>` it stands for, in 8 bytes: read back, compared and written
    /// as JSON alike (so the model's JSON is the same), and a span left without a latency or a
    /// call says so.
    #[test]
    fn a_packed_stream_reads_compares_and_serialises_as_its_stream_id() {
        let ids = [
            StreamId::Handle(0),
            StreamId::Handle(u64::MAX),
            StreamId::Handle(0x7f00_dead_beef),
            StreamId::PerThread(0),
            StreamId::PerThread(u32::MAX),
            StreamId::Backend(7),
            StreamId::Backend(u32::MAX),
        ];
        for a in ids {
            let p = PackedStream::from(a);
            assert_eq!(p.get(), a);
            assert_eq!(format!("{p:?}"), format!("{a:?}"));
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                serde_json::to_string(&a).unwrap()
            );
            for b in ids {
                assert_eq!(p == PackedStream::from(b), a == b, "{a:?} {b:?}");
                assert_eq!(p == b, a == b);
            }
        }
    }

    #[test]
    fn an_opt64_reads_and_serialises_as_its_option() {
        assert_eq!(Opt64::from(Some(u64::MAX)).get(), Some(u64::MAX - 1));
        for v in [None, Some(0), Some(7), Some(u64::MAX - 1)] {
            let o = Opt64::from(v);
            assert_eq!(o.get(), v);
            assert_eq!(o.is_some(), v.is_some());
            assert_eq!(o.is_none(), v.is_none());
            assert_eq!(
                serde_json::to_string(&o).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
            assert_eq!(format!("{o:?}"), format!("{v:?}"));
        }
        assert_eq!(Opt64::from(5u64), Opt64::from(Some(5)));
        assert_eq!(Opt64::NONE.get(), None);
        assert_eq!(std::mem::size_of::<Opt64>(), 8);
        let span = DeviceSpan {
            kind: DeviceKind::Kernel,
            name: intern("k"),
            begin_ns: 1,
            end_ns: 2,
            bound_ns: 0,
            stream: StreamId::Handle(0).into(),
            call: Opt64::NONE,
            bytes: 0,
            queued_ns: Opt64::NONE,
            submitted_ns: Some(9).into(),
            graph_node: GraphNode::NONE,
        };
        let j = serde_json::to_value(span).unwrap();
        assert_eq!(j["call"], serde_json::Value::Null);
        assert_eq!(j["submitted_ns"], 9);
        assert!(j.get("queued_ns").is_none(), "{j}");
    }
}
