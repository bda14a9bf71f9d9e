//! Perfetto's protobuf trace (`.pftrace`), for ui.perfetto.dev and trace_processor.
//!
//! Layout of the file (a `perfetto.protos.Trace`: one `TracePacket` after another, all on packet
//! sequence 1):
//!
//! 1. a `ClockSnapshot` whose `primary_trace_clock` is BUILTIN_CLOCK_MONOTONIC (3), with one reading of
//!    that clock (the capture's first timestamp); every later timestamped packet says
//!    `timestamp_clock_id = 3`. trace_processor then takes CLOCK_MONOTONIC as the trace's clock and keeps
//!    the capture's nanoseconds unchanged (a packet's clock defaults to BOOTTIME, which the capture did
//!    not read; without the snapshot a MONOTONIC packet could not be converted and would be dropped).
//!    The first packet also sets SEQ_INCREMENTAL_STATE_CLEARED; nothing is interned.
//! 2. `TrackDescriptor`s: per process a process track (`ProcessDescriptor`: pid, exe basename); per host
//!    thread a thread track (`ThreadDescriptor`: pid, tid, name); per device stream a track named by
//!    `StreamId::label()` whose parent is the process track; and, parented the same way, the overlap
//!    tracks for slices that do not nest on their thread's or stream's track (see the module above).
//!    Track uuids are 1, 2, 3, … in that order.
//! 3. `TrackEvent`s in timestamp order (each track's events in nesting order): calls, NVTX ranges and
//!    device spans as TYPE_SLICE_BEGIN / TYPE_SLICE_END pairs, marks as TYPE_INSTANT on their thread, and
//!    one TYPE_INSTANT `causeway capture` on each process track at its first timestamp whose debug
//!    annotations carry the capture path, the clock, the backend, the largest clock-conversion bound and
//!    the count of device intervals left out, and how many processes the capture holds (processes with
//!    nothing to draw get no track). A call's BEGIN lists in `flow_ids` one flow per device span
//!    tied to it; that span's BEGIN lists the same id, so each id appears exactly twice and the viewer
//!    draws an arrow from the earlier slice to the later.
//!
//! The causal graph's cross-track dependencies (`super::Dep`) are flows too: listed in `flow_ids` on
//! the slice depended on and in `terminating_flow_ids` on the dependent slice, which carries a
//! `depends_on` annotation per dependency ("event_wait (explicit)", "legacy_stream (inferred)", …).
//!
//! Arguments are debug annotations: calls `seq`, `result`, `kernel`, `stream` (a pointer); ranges
//! `domain`, `level`; spans `bound_ns`, `bytes` (copies, memsets), `call_seq`; and `open` on a call or
//! range drawn to the process's end because it never ended. What the file says otherwise is left
//! out, so that an entry costs under 40 bytes (the Chrome export writes it all; the export tests
//! restore it from the Perfetto file and compare, `cli/tests/export_check`):
//!
//! * a call's layer is in its category: `launch,runtime` (one interned string, which trace_processor
//!   shows as it shows two categories);
//! * `result` only where it is not 0 (success), `bound_ns` only where it is not 0 (exact);
//! * a span's stream is its track (no `stream`); a span drawn with a flow from its call has no
//!   `call_seq` (the call at the flow's other end has it as `seq`);
//! * a call whose device work shows its kernel and stream (`super::ProcLayout::call_shown`: a span
//!   tied to it, on the track of the stream it passed, named by the kernel it launched) has no
//!   `kernel` nor `stream`; nor has a call nested in a call of its class that shows the same ones (a
//!   runtime launch's driver launch): read them from that call.

use super::{Edge, Edges, Item, Layout, ProcLayout, Spans, What};
use crate::facts::model::Call;
use crate::util::fastmap::HashMap;
use causeway_ring::layout::DeviceKind;
use causeway_ring::{Class, Layer};
use prost::Message;
use rayon::prelude::*;
use std::io;
use std::sync::OnceLock;

/// The subset of Perfetto's trace protos this exporter writes, as hand-written prost messages.
///
/// Every field number and type was checked against Perfetto's own `.proto` files in google/perfetto:
///
/// * `protos/perfetto/trace/trace.proto` (commit 016d1f43ed5a02888c850752fb9693c88a8aa711):
///   `Trace.packet = 1` (repeated TracePacket);
/// * `protos/perfetto/trace/trace_packet.proto` (02603952ce0ca9a1f4728ec3153663e8b4b05e06):
///   `timestamp = 8` (uint64), `timestamp_clock_id = 58` (uint32), `trusted_packet_sequence_id = 10`
///   (uint32, alone in a oneof), `sequence_flags = 13` (uint32; SEQ_INCREMENTAL_STATE_CLEARED = 1), and in
///   the `data` oneof `clock_snapshot = 6`, `track_event = 11`, `track_descriptor = 60`;
/// * `protos/perfetto/trace/clock_snapshot.proto` (246b14de886b982a465bd80a832f7d21d2b63866):
///   `ClockSnapshot.clocks = 1`, `primary_trace_clock = 2` (enum BuiltinClock), `Clock.clock_id = 1`
///   (uint32), `Clock.timestamp = 2` (uint64); `protos/perfetto/common/builtin_clock.proto`
///   (4dba8e1f40f1c1ec5dfa0c0dae8c84866ed9e1a9): BUILTIN_CLOCK_MONOTONIC = 3, BOOTTIME = 6;
/// * `protos/perfetto/trace/track_event/track_descriptor.proto` (077b18e7a0361d15ba8a15cb5febd4a71339ad8c,
///   2b40f5e5d5ed74c76977c20393a3132e8ac978f4): `uuid = 1` (uint64), `parent_uuid = 5` (uint64),
///   `name = 2` (string; in a oneof with `static_name = 10` in the later one), `process = 3`, `thread = 4`;
/// * `protos/perfetto/trace/track_event/process_descriptor.proto` (35ecffbaee5d3429eddc0706caf6c7576b2975ee):
///   `pid = 1` (int32), `process_name = 6` (string);
/// * `protos/perfetto/trace/track_event/thread_descriptor.proto` (1e2582a8627e96241c2e2ad1a8dd0b1fdd853898):
///   `pid = 1` (int32), `tid = 2` (int32 there, int64 in perfetto 0.59.1's descriptors: the same varint
///   for any non-negative tid), `thread_name = 5` (string);
/// * `protos/perfetto/trace/track_event/track_event.proto` (005055c991ae2d5717df2d086495181ef7fe5a32):
///   `type = 9` (enum Type: TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3), `track_uuid = 11`
///   (uint64), `name = 23` (string, in a oneof with `name_iid = 10`), `categories = 22` (repeated
///   string), `debug_annotations = 4`, `flow_ids = 47` and `terminating_flow_ids = 48` (repeated
///   **fixed64**, proto2 so not packed);
/// * `protos/perfetto/trace/track_event/debug_annotation.proto` (0c460ef3dace1f5a80e933819149742cafc17370):
///   `name = 10` (string, in a oneof with `name_iid = 1`), value oneof `bool_value = 2`, `uint_value = 3`,
///   `int_value = 4` (int64), `string_value = 6`, `pointer_value = 7` (uint64).
///
/// The same numbers and types were also read back from the compiled descriptors that Perfetto ships in
/// its Python package (`perfetto` 0.59.1 on PyPI, `perfetto/protos/perfetto/trace/perfetto_trace_pb2.py`).
/// Fields are `optional` (presence kept) as in the proto2 originals; unknown fields are skipped on
/// decoding, so these structs also read real Perfetto traces' packets of these kinds.
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Trace {
        #[prost(message, repeated, tag = "1")]
        pub packet: Vec<TracePacket>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TracePacket {
        #[prost(uint64, optional, tag = "8")]
        pub timestamp: Option<u64>,
        #[prost(uint32, optional, tag = "58")]
        pub timestamp_clock_id: Option<u32>,
        #[prost(uint32, optional, tag = "10")]
        pub trusted_packet_sequence_id: Option<u32>,
        #[prost(uint32, optional, tag = "13")]
        pub sequence_flags: Option<u32>,
        #[prost(message, optional, tag = "12")]
        pub interned_data: Option<InternedData>,
        #[prost(message, optional, tag = "59")]
        pub trace_packet_defaults: Option<TracePacketDefaults>,
        #[prost(oneof = "Data", tags = "6, 11, 60")]
        pub data: Option<Data>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TracePacketDefaults {
        #[prost(uint32, optional, tag = "58")]
        pub timestamp_clock_id: Option<u32>,
        #[prost(message, optional, tag = "11")]
        pub track_event_defaults: Option<TrackEventDefaults>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrackEventDefaults {
        #[prost(uint64, optional, tag = "11")]
        pub track_uuid: Option<u64>,
    }

    /// Interned strings of one packet sequence; every entry is `{iid = 1, name/str = 2}`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InternedData {
        #[prost(message, repeated, tag = "1")]
        pub event_categories: Vec<Interned>,
        #[prost(message, repeated, tag = "2")]
        pub event_names: Vec<Interned>,
        #[prost(message, repeated, tag = "3")]
        pub debug_annotation_names: Vec<Interned>,
        /// `InternedString { iid = 1; bytes str = 2; }`.
        #[prost(message, repeated, tag = "29")]
        pub debug_annotation_string_values: Vec<Interned>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Interned {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Data {
        #[prost(message, tag = "6")]
        ClockSnapshot(ClockSnapshot),
        #[prost(message, tag = "11")]
        TrackEvent(TrackEvent),
        #[prost(message, tag = "60")]
        TrackDescriptor(TrackDescriptor),
    }

    /// `TracePacket.sequence_flags` bit: the writer starts a fresh incremental state.
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ClockSnapshot {
        #[prost(message, repeated, tag = "1")]
        pub clocks: Vec<Clock>,
        /// enum BuiltinClock (a varint on the wire).
        #[prost(int32, optional, tag = "2")]
        pub primary_trace_clock: Option<i32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Clock {
        #[prost(uint32, optional, tag = "1")]
        pub clock_id: Option<u32>,
        #[prost(uint64, optional, tag = "2")]
        pub timestamp: Option<u64>,
        /// Each later packet's timestamp on this clock is a delta from the sequence's previous one.
        #[prost(bool, optional, tag = "3")]
        pub is_incremental: Option<bool>,
        #[prost(uint64, optional, tag = "4")]
        pub unit_multiplier_ns: Option<u64>,
    }

    /// BuiltinClock values.
    pub const BUILTIN_CLOCK_MONOTONIC: u32 = 3;
    pub const BUILTIN_CLOCK_BOOTTIME: u32 = 6;
    /// The first sequence-scoped clock id (64–127: valid only on the sequence that defined it).
    pub const SEQUENCE_CLOCK: u32 = 64;

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrackDescriptor {
        #[prost(uint64, optional, tag = "1")]
        pub uuid: Option<u64>,
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
        #[prost(message, optional, tag = "3")]
        pub process: Option<ProcessDescriptor>,
        #[prost(message, optional, tag = "4")]
        pub thread: Option<ThreadDescriptor>,
        #[prost(uint64, optional, tag = "5")]
        pub parent_uuid: Option<u64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ProcessDescriptor {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(string, optional, tag = "6")]
        pub process_name: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ThreadDescriptor {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(int32, optional, tag = "2")]
        pub tid: Option<i32>,
        #[prost(string, optional, tag = "5")]
        pub thread_name: Option<String>,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum Type {
        Unspecified = 0,
        SliceBegin = 1,
        SliceEnd = 2,
        Instant = 3,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrackEvent {
        #[prost(message, repeated, tag = "4")]
        pub debug_annotations: Vec<DebugAnnotation>,
        #[prost(enumeration = "Type", optional, tag = "9")]
        pub r#type: Option<i32>,
        #[prost(uint64, optional, tag = "11")]
        pub track_uuid: Option<u64>,
        #[prost(uint64, repeated, packed = "false", tag = "3")]
        pub category_iids: Vec<u64>,
        #[prost(string, repeated, tag = "22")]
        pub categories: Vec<String>,
        #[prost(uint64, optional, tag = "10")]
        pub name_iid: Option<u64>,
        #[prost(string, optional, tag = "23")]
        pub name: Option<String>,
        #[prost(fixed64, repeated, packed = "false", tag = "47")]
        pub flow_ids: Vec<u64>,
        #[prost(fixed64, repeated, packed = "false", tag = "48")]
        pub terminating_flow_ids: Vec<u64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DebugAnnotation {
        #[prost(uint64, optional, tag = "1")]
        pub name_iid: Option<u64>,
        #[prost(string, optional, tag = "10")]
        pub name: Option<String>,
        #[prost(oneof = "Value", tags = "2, 3, 4, 6, 7, 17")]
        pub value: Option<Value>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(bool, tag = "2")]
        Bool(bool),
        #[prost(uint64, tag = "3")]
        Uint(u64),
        #[prost(int64, tag = "4")]
        Int(i64),
        #[prost(string, tag = "6")]
        String(String),
        #[prost(uint64, tag = "7")]
        Pointer(u64),
        /// An interned string (`InternedData.debug_annotation_string_values`).
        #[prost(uint64, tag = "17")]
        StringIid(u64),
    }
}

use proto::{
    Clock, ClockSnapshot, Data, DebugAnnotation, ProcessDescriptor, ThreadDescriptor, Trace,
    TracePacket, TrackDescriptor, TrackEvent, Type, Value,
};

/// Decodes a trace this module wrote (or any Perfetto trace, keeping only the fields above).
pub fn decode(bytes: &[u8]) -> Result<Trace, prost::DecodeError> {
    Trace::decode(bytes)
}

/// A decoded trace as a viewer reads it, every packet stand-alone: timestamps absolute on the clock
/// they were read in (the sequences' incremental clocks resolved), each event's track and clock
/// from its sequence's defaults, interned names, categories, annotation names and string values
/// written out. The packets that only set a sequence up (its clock, defaults and interned strings)
/// are left out; the others keep their order, events after the rest, stably by time.
pub fn resolve(trace: Trace) -> Result<Vec<TracePacket>, String> {
    #[derive(Default)]
    struct Seq {
        names: HashMap<u64, String>,
        categories: HashMap<u64, String>,
        annotations: HashMap<u64, String>,
        values: HashMap<u64, String>,
        defaults: Option<proto::TracePacketDefaults>,
        /// Incremental clocks: id → (last timestamp on it, the clock its snapshot read beside it,
        /// that clock's reading minus its own).
        incremental: HashMap<u32, (u64, u32, i128)>,
    }
    let look = |t: &HashMap<u64, String>, iid: u64, what: &str| {
        t.get(&iid)
            .cloned()
            .ok_or_else(|| format!("{what} iid {iid} was never interned"))
    };
    let mut seqs: HashMap<u32, Seq> = HashMap::default();
    let (mut rest, mut events) = (Vec::new(), Vec::new());
    for mut p in trace.packet {
        let id = p.trusted_packet_sequence_id.unwrap_or(0);
        if p.sequence_flags.unwrap_or(0) & proto::SEQ_INCREMENTAL_STATE_CLEARED != 0 {
            seqs.insert(id, Seq::default());
        }
        let seq = seqs.entry(id).or_default();
        let setup = p.trace_packet_defaults.is_some() || p.interned_data.is_some();
        if let Some(d) = p.trace_packet_defaults.take() {
            seq.defaults = Some(d);
        }
        if let Some(i) = p.interned_data.take() {
            let fill = |t: &mut HashMap<u64, String>, v: Vec<proto::Interned>| {
                for e in v {
                    t.insert(e.iid.unwrap_or(0), e.name.unwrap_or_default());
                }
            };
            fill(&mut seq.categories, i.event_categories);
            fill(&mut seq.names, i.event_names);
            fill(&mut seq.annotations, i.debug_annotation_names);
            fill(&mut seq.values, i.debug_annotation_string_values);
        }
        if let Some(Data::ClockSnapshot(c)) = &p.data {
            let base = c.clocks.iter().find(|c| c.is_incremental != Some(true));
            for clock in &c.clocks {
                if clock.is_incremental == Some(true) {
                    let id = clock.clock_id.unwrap_or(0);
                    if clock.unit_multiplier_ns.unwrap_or(1) != 1 {
                        return Err(format!("clock {id}: a unit other than ns"));
                    }
                    let Some(base) = base else {
                        return Err(format!("clock {id}: incremental, with no clock beside it"));
                    };
                    let at = clock.timestamp.unwrap_or(0);
                    let offset = i128::from(base.timestamp.unwrap_or(0)) - i128::from(at);
                    seq.incremental
                        .insert(id, (at, base.clock_id.unwrap_or(0), offset));
                }
            }
            if setup {
                continue;
            }
        }
        // The packet's clock: its own, else the sequence's default; an incremental clock's
        // timestamp is a delta, and the clock it was defined against is the real one.
        let clock = p
            .timestamp_clock_id
            .or_else(|| seq.defaults.as_ref().and_then(|d| d.timestamp_clock_id));
        if let (Some(ts), Some(c)) = (p.timestamp, clock) {
            if let Some((last, base, offset)) = seq.incremental.get_mut(&c) {
                *last += ts;
                p.timestamp = Some((i128::from(*last) + *offset) as u64);
                p.timestamp_clock_id = Some(*base);
            } else {
                p.timestamp_clock_id = Some(c);
            }
        }
        if let Some(Data::TrackEvent(e)) = &mut p.data {
            if e.track_uuid.is_none() {
                e.track_uuid = seq
                    .defaults
                    .as_ref()
                    .and_then(|d| d.track_event_defaults.as_ref())
                    .and_then(|d| d.track_uuid);
            }
            if let Some(iid) = e.name_iid.take() {
                e.name = Some(look(&seq.names, iid, "event name")?);
            }
            for iid in std::mem::take(&mut e.category_iids) {
                e.categories.push(look(&seq.categories, iid, "category")?);
            }
            for a in &mut e.debug_annotations {
                if let Some(iid) = a.name_iid.take() {
                    a.name = Some(look(&seq.annotations, iid, "annotation name")?);
                }
                if let Some(Value::StringIid(iid)) = a.value {
                    a.value = Some(Value::String(look(&seq.values, iid, "string value")?));
                }
            }
            events.push(p);
        } else {
            rest.push(p);
        }
    }
    events.sort_by_key(|p| p.timestamp.unwrap_or(0));
    rest.extend(events);
    Ok(rest)
}

/// The packet sequence of the clock snapshot and the track descriptors.
pub const SEQUENCE_ID: u32 = 1;

/// Name of the per-process instant that carries the capture's metadata.
pub const CAPTURE_EVENT: &str = "causeway capture";

/// The first packet sequence of the tracks' events: track k's events are on sequence
/// `FIRST_TRACK_SEQUENCE + k`, so each carries its own defaults (its track, the incremental clock).
pub const FIRST_TRACK_SEQUENCE: u32 = 2;

/// Annotation names, interned once: iid = position + 1.
const ANNOTATIONS: [&str; 11] = [
    "seq",
    "result",
    "kernel",
    "stream",
    "domain",
    "level",
    "bound_ns",
    "bytes",
    "call_seq",
    "open",
    "depends_on",
];

/// An annotation name's iid (its position in `ANNOTATIONS` + 1).
const fn ann_iid(name: &str) -> u64 {
    let mut i = 0;
    while i < ANNOTATIONS.len() {
        if eq(ANNOTATIONS[i].as_bytes(), name.as_bytes()) {
            return i as u64 + 1;
        }
        i += 1;
    }
    panic!("not an annotation name")
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const A_SEQ: u64 = ann_iid("seq");
const A_RESULT: u64 = ann_iid("result");
const A_KERNEL: u64 = ann_iid("kernel");
const A_STREAM: u64 = ann_iid("stream");
const A_DOMAIN: u64 = ann_iid("domain");
const A_LEVEL: u64 = ann_iid("level");
const A_BOUND: u64 = ann_iid("bound_ns");
const A_BYTES: u64 = ann_iid("bytes");
const A_CALL_SEQ: u64 = ann_iid("call_seq");
const A_OPEN: u64 = ann_iid("open");
const A_DEPENDS_ON: u64 = ann_iid("depends_on");

/// One interning table (event names, categories or annotation string values): an iid means one
/// string in the whole file. Strings are looked up by address first (the timeline shares each name
/// among all its uses), then by text.
#[derive(Default)]
struct Table {
    by_ptr: HashMap<(usize, usize), u64>,
    by_text: HashMap<Box<str>, u64>,
    texts: Vec<Box<str>>,
}

impl Table {
    /// `s` must live as long as the table (its address is a key).
    fn iid(&mut self, s: &str) -> u64 {
        let key = (s.as_ptr() as usize, s.len());
        if let Some(&i) = self.by_ptr.get(&key) {
            return i;
        }
        let i = match self.by_text.get(s) {
            Some(&i) => i,
            None => {
                self.texts.push(s.into());
                let i = self.texts.len() as u64;
                self.by_text.insert(s.into(), i);
                i
            }
        };
        self.by_ptr.insert(key, i);
        i
    }

    /// The iid of a string `iid` has seen (`for_strings` lists what an event's encoding looks up).
    fn get(&self, s: &str) -> u64 {
        let i = self
            .by_ptr
            .get(&(s.as_ptr() as usize, s.len()))
            .or_else(|| self.by_text.get(s))
            .copied()
            .unwrap_or(0);
        debug_assert!(
            i != 0,
            "{s:?} was not interned: for_strings misses a string"
        );
        i
    }

    fn entries(&self, iids: &[u64]) -> Vec<proto::Interned> {
        iids.iter()
            .map(|&i| proto::Interned {
                iid: Some(i),
                name: Some(self.texts[i as usize - 1].to_string()),
            })
            .collect()
    }
}

/// The interning tables of the file, by number (as `for_strings` names them): event names,
/// categories, annotation string values.
#[derive(Default)]
struct Strings {
    tables: [Table; 3],
}

const NAMES: usize = 0;
const CATEGORIES: usize = 1;
const VALUES: usize = 2;

/// One event of a track, in the order its packets are written: a slice's begin (its index in the
/// track's lane) or end, a mark (its index in the process's marks), the capture instant.
#[derive(Clone, Copy)]
enum Ev {
    Begin(u32),
    End,
    Mark(u32),
    Capture,
}

/// A track with events: its uuid, sequence, process and what its events are made from.
struct Track<'l, 't> {
    uuid: u64,
    sequence: u32,
    pl: &'l ProcLayout<'t>,
    /// The lane whose slices `Ev::Begin` indexes (empty for the process track).
    lane: &'l [Item],
    /// The marks drawn on it (indices into the process's marks, in time order).
    marks: &'l [usize],
    /// The process track: its one event is the capture instant.
    capture: bool,
    /// Where its listing stands where each unit starts (`find_starts`; the first unit: at the
    /// start). A unit's events run from there to the next unit's start (the last: to the end).
    /// The events are listed as they are encoded, never held (two per slice were 16 bytes a
    /// slice, 160 MB at 10 M entries).
    starts: Vec<Cursor>,
}

impl<'l, 't> Track<'l, 't> {
    /// `capture`: the process track (`lane` and `marks` empty).
    fn new(
        uuid: u64,
        sequence: u32,
        pl: &'l ProcLayout<'t>,
        (lane, marks): (&'l [Item], &'l [usize]),
        capture: bool,
    ) -> Self {
        Track {
            uuid,
            sequence,
            pl,
            lane,
            marks,
            capture,
            starts: Vec::new(),
        }
    }

    /// Where each unit starts, without listing the events before it. Units are cut every `UNIT`
    /// slices, and a unit with more than `UNIT` marks is cut every `UNIT` marks too (a thread of
    /// marks and few slices). Before an event at time `t` (slice `a`'s begin, or a mark at `t`),
    /// the slices begun are those before it, the slices open are those of them that end after `t`
    /// (in a nested lane, the ones that enclose it), the marks listed are the earlier ones, and the
    /// last event is the latest of the slices begun, the slices ended and the marks listed. So
    /// each unit's slices are read once, all units side by side, for what stays open past the next
    /// unit's start and the latest end before it; those are then carried from unit to unit.
    fn find_starts(&mut self) {
        let (lane, t) = (self.lane, self.pl.times);
        let units = lane.len().div_ceil(UNIT).max(1);
        let begin = |a: usize| t.of(lane[a]).0;
        let mark_ns = |m: usize| self.mark_ns(m);
        // Slices `from..to` that end after `next` ((end, index), in lane order), and the latest end
        // of the others.
        let scan = |from: usize, to: usize, next: u64| {
            let (mut open, mut closed) = (Vec::new(), 0);
            for (j, &x) in lane.iter().enumerate().take(to).skip(from) {
                if let Some(&y) = lane.get(j + super::AHEAD) {
                    t.prefetch(y);
                }
                let (_, end) = t.of(x);
                if end > next {
                    open.push((end, j));
                } else {
                    closed = closed.max(end);
                }
            }
            (open, closed)
        };
        // Each unit's, against the next unit's start.
        let scans: Vec<(Vec<(u64, usize)>, u64)> = (1..units)
            .into_par_iter()
            .map(|k| scan((k - 1) * UNIT, k * UNIT, begin(k * UNIT)))
            .collect();
        // The walk as it stands just before an event at `next` with `a` slices begun and `mark`
        // marks listed, the slices open at the unit's start (`open`, at or before `next`) and the
        // unit's own slices' ends beyond `next` and latest end up to it given.
        let at = |a: usize,
                  mark: usize,
                  next: u64,
                  open: &[(u64, usize)],
                  own: (&[(u64, usize)], u64)| {
            // The enclosing slices carried from before that end by now: the outer ones end last.
            let kept = open.partition_point(|&(end, _)| end > next);
            let ended = open[kept..].iter().map(|&(end, _)| end).max().unwrap_or(0);
            let mut now = open[..kept].to_vec();
            now.extend_from_slice(own.0);
            let last_begin = a.checked_sub(1).map_or(0, begin);
            let last_mark = mark.checked_sub(1).map_or(0, mark_ns);
            Cursor {
                edges: Edges::resume(lane, t, a, now),
                mark,
                capture: false,
                prev: last_begin.max(ended).max(own.1).max(last_mark),
            }
        };
        let mut starts = vec![Cursor::new(self)];
        let mut open: Vec<(u64, usize)> = Vec::new();
        let mut scans = scans.into_iter();
        for k in 0..units {
            let (from, to) = (k * UNIT, ((k + 1) * UNIT).min(lane.len()));
            let last = k + 1 == units;
            let marks_end = if last {
                self.marks.len()
            } else {
                let next = begin(to);
                self.marks
                    .partition_point(|&m| self.pl.p.marks[m].ns < next)
            };
            // Marks beyond a unit's worth: a start before every `UNIT`th (rare; read here).
            let mut m = starts.last().expect("a first start").mark;
            while marks_end - m > UNIT {
                m += UNIT;
                let ns = mark_ns(m);
                let a = from + lane[from..to].partition_point(|&x| t.of(x).0 <= ns);
                let (own, closed) = scan(from, a, ns);
                starts.push(at(a, m, ns, &open, (&own, closed)));
            }
            if !last {
                let (own, closed) = scans.next().expect("a scan per unit after the first");
                let c = at(to, marks_end, begin(to), &open, (&own, closed));
                open = c.edges.open().to_vec();
                starts.push(c);
            }
        }
        self.starts = starts;
    }

    /// Unit `k`'s events with their times, and the time of the event before (the first's own for
    /// the first event).
    fn events(&self, k: usize) -> (u64, impl Iterator<Item = (u64, Ev)> + '_) {
        let mut c = self.starts[k].clone();
        let until = (self.starts.get(k + 1)).map_or(END, |n| (n.edges.begun(), n.mark));
        (c.prev, std::iter::from_fn(move || c.next(self, until)))
    }

    /// The time of its `m`th mark.
    fn mark_ns(&self, m: usize) -> u64 {
        self.pl.p.marks[self.marks[m]].ns
    }

    /// Unit `k`'s slices (those that begin in it) and marks, by their places in the lane and in
    /// the track's marks.
    fn unit_bounds(&self, k: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let (from, to) = (&self.starts[k], self.starts.get(k + 1));
        let slices = from.edges.begun()..to.map_or(self.lane.len(), |c| c.edges.begun());
        let marks = from.mark..to.map_or(self.marks.len(), |c| c.mark);
        (slices, marks)
    }

    /// The events of unit `k` that name strings (its slices' begins and its marks) in file order,
    /// found without walking the slices' ends: a mark comes before a slice's begin exactly when it
    /// is earlier.
    fn begins(&self, k: usize) -> impl Iterator<Item = Ev> + '_ {
        let (mut slices, mut marks) = self.unit_bounds(k);
        std::iter::from_fn(move || {
            let mark_ns = (!marks.is_empty()).then(|| self.mark_ns(marks.start));
            if let Some(i) = slices.clone().next() {
                let (begin, _) = self.pl.times.of(self.lane[i]);
                if mark_ns.is_none_or(|ns| ns >= begin) {
                    slices.start += 1;
                    return Some(Ev::Begin(i as u32));
                }
            }
            mark_ns?;
            marks.start += 1;
            Some(Ev::Mark(self.marks[marks.start - 1] as u32))
        })
    }

    /// About how many events unit `k` has: its slices' two and its marks.
    fn unit_len(&self, k: usize) -> usize {
        let (slices, marks) = self.unit_bounds(k);
        2 * slices.len() + marks.len() + 1
    }

    /// The time of its first event (0 when it has none): where the first unit's listing starts.
    fn first_ts(&self) -> u64 {
        self.starts[0].prev
    }
}

/// Where a track's listing stands: its lane's slice edges in nesting order (`super::Edges`) merged
/// with its marks by time (edges first on a tie); for the process track, the capture instant.
#[derive(Clone)]
struct Cursor {
    edges: Edges,
    /// The next mark, by its place in the track's marks.
    mark: usize,
    /// The capture instant is still to come.
    capture: bool,
    /// The last event's time (the first event's before any).
    prev: u64,
}

impl Cursor {
    fn new(t: &Track) -> Cursor {
        let mut c = Cursor {
            edges: Edges::new(t.lane, t.pl.times),
            mark: 0,
            capture: t.capture,
            prev: 0,
        };
        c.prev = c.clone().next(t, END).map_or(0, |(ts, _)| ts);
        c
    }

    /// The next event, unless it is where the next unit starts: the event after `until.0` slices
    /// have begun and `until.1` marks have been listed (`END`: none).
    fn next(&mut self, t: &Track, until: (usize, usize)) -> Option<(u64, Ev)> {
        let ev = self.step(t, until)?;
        self.prev = ev.0;
        Some(ev)
    }

    fn step(&mut self, t: &Track, until: (usize, usize)) -> Option<(u64, Ev)> {
        if self.capture {
            self.capture = false;
            return Some((t.pl.first_ns, Ev::Capture));
        }
        let edge = self.edges.peek();
        if let Some(&m) = t.marks.get(self.mark) {
            let ns = t.mark_ns(self.mark);
            if edge.is_none_or(|(ts, _)| ns < ts) {
                if (self.edges.begun(), self.mark) == until {
                    return None;
                }
                self.mark += 1;
                return Some((ns, Ev::Mark(m as u32)));
            }
        }
        let (ts, e) = edge?;
        if e == Edge::Begin(until.0) && self.mark == until.1 {
            return None;
        }
        self.edges.pass(e, t.lane, t.pl.times);
        Some((
            ts,
            match e {
                Edge::Begin(i) => Ev::Begin(i as u32),
                Edge::End(_) => Ev::End,
            },
        ))
    }
}

/// Slices per unit of parallel encoding (two events each, and the marks among them, `UNIT` at
/// most).
const UNIT: usize = 16 << 10;

/// No unit after: a walk to the track's end.
const END: (usize, usize) = (usize::MAX, usize::MAX);

pub(crate) fn write<'l>(
    layout: &'l Layout,
    capture: &str,
    w: &mut (impl crate::util::output::Direct + Send),
) -> io::Result<()> {
    let first_ns = layout.drawn().map(|p| p.first_ns).min().unwrap_or(0);
    let mut head = Vec::new();
    put(
        &mut head,
        &TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            sequence_flags: Some(proto::SEQ_INCREMENTAL_STATE_CLEARED),
            data: Some(Data::ClockSnapshot(ClockSnapshot {
                clocks: vec![clock(proto::BUILTIN_CLOCK_MONOTONIC, first_ns)],
                primary_trace_clock: Some(proto::BUILTIN_CLOCK_MONOTONIC as i32),
            })),
            ..Default::default()
        },
    );

    // Descriptors (on sequence 1, uuids 1, 2, 3, … in layout order) and each track's events.
    let mut next_uuid = 1u64;
    let mut tracks: Vec<Track> = Vec::new();
    for pl in layout.drawn() {
        let pid = pl.pid as i32;
        let process_track = next_uuid;
        next_uuid += 1;
        descriptor(
            &mut head,
            TrackDescriptor {
                uuid: Some(process_track),
                process: Some(ProcessDescriptor {
                    pid: Some(pid),
                    process_name: Some(pl.process_label()),
                }),
                ..Default::default()
            },
        );
        // Adds a track; returns its index.
        let mut track = |uuid: u64, lane: &'l [Item], marks: &'l [usize], capture: bool| {
            let sequence = FIRST_TRACK_SEQUENCE + tracks.len() as u32;
            tracks.push(Track::new(uuid, sequence, pl, (lane, marks), capture));
            tracks.len() - 1
        };
        track(process_track, &[], &[], true);
        for t in &pl.threads {
            for (li, lane) in t.lanes.iter().enumerate() {
                let uuid = next_uuid;
                next_uuid += 1;
                let name = pl.thread_name(t.tid, li);
                descriptor(
                    &mut head,
                    if li == 0 {
                        TrackDescriptor {
                            uuid: Some(uuid),
                            thread: Some(ThreadDescriptor {
                                pid: Some(pid),
                                tid: Some(t.tid as i32),
                                thread_name: Some(name),
                            }),
                            ..Default::default()
                        }
                    } else {
                        TrackDescriptor {
                            uuid: Some(uuid),
                            parent_uuid: Some(process_track),
                            name: Some(name),
                            ..Default::default()
                        }
                    },
                );
                let marks: &[usize] = if li == 0 { &t.marks } else { &[] };
                track(uuid, lane, marks, false);
            }
        }
        for st in &pl.streams {
            for (li, lane) in st.lanes.iter().enumerate() {
                let uuid = next_uuid;
                next_uuid += 1;
                descriptor(
                    &mut head,
                    TrackDescriptor {
                        uuid: Some(uuid),
                        parent_uuid: Some(process_track),
                        name: Some(pl.stream_name(&st.stream, li)),
                        ..Default::default()
                    },
                );
                track(uuid, lane, &[], false);
            }
        }
    }
    // Each track's units' starts found, side by side.
    tracks.par_iter_mut().for_each(Track::find_starts);
    w.write_all(&head)?;

    // Units in file order: each track's first packet (its clock, defaults and interned strings;
    // `None`), then its events in units (`Some`).
    let mut units: Vec<(usize, Option<usize>)> = Vec::new();
    for (k, t) in tracks.iter().enumerate() {
        units.push((k, None));
        units.extend((0..t.starts.len()).map(|u| (k, Some(u))));
    }

    // The interning tables, filled in file order (so the file is the same on any number of threads),
    // and what each track uses: each unit lists the strings it uses, in order of first use, on every
    // thread; the lists are then merged in file order.
    let used_by_unit: Vec<[Vec<&str>; 3]> = units
        .par_iter()
        .map(|&(k, unit)| {
            let t = &tracks[k];
            let mut seen = Seen::default();
            let mut lists: [Vec<&str>; 3] = Default::default();
            let Some(unit) = unit else {
                // A first packet uses what its track's events use.
                return lists;
            };
            for ev in t.begins(unit) {
                for_strings(t.pl, t.lane, &ev, |table, s| {
                    if seen.first(table, s) {
                        lists[table].push(s);
                    }
                });
            }
            lists
        })
        .collect();
    let mut strings = Strings::default();
    let mut last_user: [Vec<u32>; 3] = Default::default();
    let mut used: Vec<[Vec<u64>; 3]> = vec![Default::default(); tracks.len()];
    for ((k, _), lists) in units.iter().zip(&used_by_unit) {
        for (table, list) in lists.iter().enumerate() {
            for s in list {
                let iid = strings.tables[table].iid(s);
                let users = &mut last_user[table];
                if users.len() <= iid as usize {
                    users.resize(iid as usize + 1, u32::MAX);
                }
                if users[iid as usize] != *k as u32 {
                    users[iid as usize] = *k as u32;
                    used[*k][table].push(iid);
                }
            }
        }
    }
    drop(used_by_unit);

    // Encoded on every thread, a window of units at a time, written in order.
    crate::util::output::write_in_order(&units, w, |&(k, unit), buf| {
        let t = &tracks[k];
        match unit {
            None => first_packet(t, &used[k], &strings, buf),
            Some(u) => events(t, u, &strings, capture, layout.procs.len(), buf),
        }
    })
}

/// Strings a unit of encoding has met, by address (the timeline shares each name among its uses): a
/// direct-mapped cache of recent addresses before a map, since a track cycles among few names.
#[derive(Default)]
struct Seen {
    recent: RecentStrings<()>,
    map: HashMap<(usize, usize, usize), ()>,
}

impl Seen {
    /// Whether this is the first time `s` of `table` is met.
    fn first(&mut self, table: usize, s: &str) -> bool {
        if self.recent.get(table, s).is_some() {
            return false;
        }
        self.recent.put(table, s, ());
        self.map
            .insert((table, s.as_ptr() as usize, s.len()), ())
            .is_none()
    }
}

/// Slots of `RecentStrings`: a power of two.
const RECENT: usize = 64;

/// A direct-mapped cache keyed by a string's table and address: (table, address, length) per slot.
struct RecentStrings<V: Copy> {
    slots: [(usize, usize, usize, Option<V>); RECENT],
}

impl<V: Copy> Default for RecentStrings<V> {
    fn default() -> Self {
        RecentStrings {
            slots: [(0, 0, 0, None); RECENT],
        }
    }
}

impl<V: Copy> RecentStrings<V> {
    #[inline]
    fn slot(table: usize, s: &str) -> usize {
        ((s.as_ptr() as usize >> 3) ^ table ^ s.len()) & (RECENT - 1)
    }

    #[inline]
    fn get(&self, table: usize, s: &str) -> Option<V> {
        let (t, p, l, v) = self.slots[Self::slot(table, s)];
        (t == table && p == s.as_ptr() as usize && l == s.len())
            .then_some(v)
            .flatten()
    }

    #[inline]
    fn put(&mut self, table: usize, s: &str, v: V) {
        self.slots[Self::slot(table, s)] = (table, s.as_ptr() as usize, s.len(), Some(v));
    }
}

/// A unit's view of the interning tables: recent lookups answered without hashing.
struct Iids<'s> {
    strings: &'s Strings,
    recent: RecentStrings<u64>,
}

impl<'s> Iids<'s> {
    fn new(strings: &'s Strings) -> Self {
        Iids {
            strings,
            recent: RecentStrings::default(),
        }
    }

    #[inline]
    fn get(&mut self, table: usize, s: &str) -> u64 {
        if let Some(i) = self.recent.get(table, s) {
            return i;
        }
        let i = self.strings.tables[table].get(s);
        self.recent.put(table, s, i);
        i
    }
}

/// A call's category: its class and its layer as one interned string (`launch,runtime`), which
/// trace_processor shows as it shows two categories; one iid in place of a `layer` annotation. A
/// call of no known class is `call`; of no known layer, `unknown`.
fn call_category(c: &Call) -> &'static str {
    // Every (class, layer) pair, made once: index 0 of each is "none".
    const LAYERS: [Option<Layer>; 7] = [
        None,
        Some(Layer::Runtime),
        Some(Layer::Driver),
        Some(Layer::Nvtx),
        Some(Layer::Loader),
        Some(Layer::LevelZero),
        Some(Layer::UnifiedRuntime),
    ];
    static TABLE: OnceLock<Vec<[String; 7]>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let classes = std::iter::once(None).chain(
            (0..=u8::MAX)
                .map(Class::from_u8)
                .enumerate()
                .take_while(|&(v, c)| c as usize == v)
                .map(|(_, c)| Some(c)),
        );
        classes
            .map(|c| {
                LAYERS.map(|l| {
                    let layer = l.map_or("unknown", crate::read::names::layer_name);
                    format!("{},{layer}", c.map_or("call", Class::name))
                })
            })
            .collect()
    });
    let class = c.class.map_or(0, |c| c as usize + 1);
    let layer = LAYERS.iter().position(|&l| l == c.layer).unwrap_or(0);
    &table[class][layer]
}

/// The strings an event refers to, by table (0 event names, 1 categories, 2 annotation values).
fn for_strings<'a>(pl: &'a ProcLayout, lane: &[Item], ev: &Ev, mut f: impl FnMut(usize, &'a str)) {
    if let Ev::Begin(i) = *ev {
        let w = lane[i as usize].what();
        if pl.has_deps(w) {
            for d in pl.deps_into(w) {
                f(VALUES, d.label);
            }
        }
    }
    match *ev {
        Ev::Begin(i) => match lane[i as usize].what() {
            What::Call(i) => {
                let c = &pl.p.calls[i];
                f(0, c.api.as_str());
                f(1, call_category(c));
                if !pl.call_shown(i) {
                    if let Some(k) = &c.kernel {
                        f(2, k);
                    }
                }
            }
            What::Range(i) => {
                let r = &pl.p.ranges[i];
                f(0, r.name.as_str());
                f(1, "nvtx");
                if let Some(d) = &r.domain {
                    f(2, d);
                }
            }
            What::Span(i) => {
                let d = &pl.p.device[i];
                f(0, d.name.as_str());
                f(1, d.kind.name());
            }
        },
        Ev::Mark(m) => {
            let m = &pl.p.marks[m as usize];
            f(0, m.name.as_str());
            f(1, "nvtx");
            if let Some(d) = &m.domain {
                f(2, d);
            }
        }
        Ev::End | Ev::Capture => {}
    }
}

fn clock(id: u32, ts: u64) -> Clock {
    Clock {
        clock_id: Some(id),
        timestamp: Some(ts),
        is_incremental: None,
        unit_multiplier_ns: None,
    }
}

/// A track's first packet: at its first event's time on CLOCK_MONOTONIC, it clears the sequence's
/// state, defines the sequence's incremental clock from that time (every later packet's timestamp is
/// the nanoseconds since the previous one), makes the track and that clock the sequence's defaults,
/// and interns the strings the track's events use.
fn first_packet(t: &Track, used: &[Vec<u64>; 3], strings: &Strings, out: &mut Vec<u8>) {
    let t0 = t.first_ts();
    put(
        out,
        &TracePacket {
            timestamp: Some(t0),
            timestamp_clock_id: Some(proto::BUILTIN_CLOCK_MONOTONIC),
            trusted_packet_sequence_id: Some(t.sequence),
            sequence_flags: Some(proto::SEQ_INCREMENTAL_STATE_CLEARED),
            interned_data: Some(proto::InternedData {
                event_categories: strings.tables[CATEGORIES].entries(&used[CATEGORIES]),
                event_names: strings.tables[NAMES].entries(&used[NAMES]),
                debug_annotation_names: ANNOTATIONS
                    .iter()
                    .enumerate()
                    .map(|(i, a)| proto::Interned {
                        iid: Some(i as u64 + 1),
                        name: Some(a.to_string()),
                    })
                    .collect(),
                debug_annotation_string_values: strings.tables[VALUES].entries(&used[VALUES]),
            }),
            trace_packet_defaults: Some(proto::TracePacketDefaults {
                timestamp_clock_id: Some(proto::SEQUENCE_CLOCK),
                track_event_defaults: Some(proto::TrackEventDefaults {
                    track_uuid: Some(t.uuid),
                }),
            }),
            data: Some(Data::ClockSnapshot(ClockSnapshot {
                clocks: vec![
                    clock(proto::BUILTIN_CLOCK_MONOTONIC, t0),
                    Clock {
                        is_incremental: Some(true),
                        unit_multiplier_ns: Some(1),
                        ..clock(proto::SEQUENCE_CLOCK, t0)
                    },
                ],
                primary_trace_clock: None,
            })),
        },
    );
}

// ---- events, encoded by hand (a packet each: one allocation-free pass, not a message tree) ----------

#[inline]
fn varint(b: &mut Vec<u8>, mut v: u64) {
    // prost's encode_varint is not inlined into this loop; most values here are one or two bytes.
    while v >= 0x80 {
        b.push((v as u8) | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

#[inline]
fn key(b: &mut Vec<u8>, field: u32, wire: u8) {
    varint(b, (u64::from(field) << 3) | u64::from(wire));
}

#[inline]
fn uint(b: &mut Vec<u8>, field: u32, v: u64) {
    key(b, field, 0);
    varint(b, v);
}

fn bytes(b: &mut Vec<u8>, field: u32, v: &[u8]) {
    key(b, field, 2);
    varint(b, v.len() as u64);
    b.extend_from_slice(v);
}

/// A debug annotation with an interned name and a varint value in field `field` (3 uint, 4 int,
/// 2 bool, 7 pointer, 17 string iid), written in place.
fn annotation(te: &mut Vec<u8>, name_iid: u64, field: u32, v: u64) {
    let key_len = prost::encoding::key_len(field);
    let len = 1
        + prost::encoding::encoded_len_varint(name_iid)
        + key_len
        + prost::encoding::encoded_len_varint(v);
    key(te, 4, 2);
    varint(te, len as u64);
    uint(te, 1, name_iid);
    uint(te, field, v);
}

/// A debug annotation named by its text (not interned) with a string value (not interned): for the
/// rare annotations whose interning would change every track's first packet.
fn annotation_text(te: &mut Vec<u8>, scratch: &mut Vec<u8>, name: &str, value: &str) {
    scratch.clear();
    bytes(scratch, 10, name.as_bytes());
    bytes(scratch, 6, value.as_bytes());
    bytes(te, 4, scratch);
}

/// An NVTX mark's or range's category, colour (`#aarrggbb`) and payload (`payload`: its type and
/// value), as the Chrome export's arguments.
fn attr_annotations(te: &mut Vec<u8>, scratch: &mut Vec<u8>, x: &crate::facts::model::Attrs) {
    if let Some(c) = &x.category {
        annotation_text(te, scratch, "category", c);
    }
    if let Some(c) = x.color_hex() {
        annotation_text(te, scratch, "color", &c);
    }
    if let Some(p) = &x.payload {
        let (ty, v) = p.parts();
        annotation_text(te, scratch, "payload", &v);
        annotation_text(te, scratch, "payload_type", ty);
    }
}

/// Unit `unit` of track `t`'s events, each a `Trace.packet`. `capture` and `processes` fill the
/// `causeway capture` instant.
fn events(
    t: &Track,
    unit: usize,
    strings: &Strings,
    capture: &str,
    processes: usize,
    out: &mut Vec<u8>,
) {
    let pl = t.pl;
    let mut iids = Iids::new(strings);
    out.reserve(t.unit_len(unit) * 40);
    let mut te = Vec::with_capacity(256);
    let mut scratch = Vec::with_capacity(64);
    let (mut prev, listed) = t.events(unit);
    for (ts, ev) in listed {
        te.clear();
        match ev {
            Ev::Begin(i) => {
                let it = t.lane[i as usize];
                uint(&mut te, 9, Type::SliceBegin as u64);
                let deps = pl.has_deps(it.what());
                match it.what() {
                    What::Call(i) => {
                        let c = &pl.p.calls[i];
                        uint(&mut te, 10, iids.get(NAMES, c.api.as_str()));
                        uint(&mut te, 3, iids.get(CATEGORIES, call_category(c)));
                        annotation(&mut te, A_SEQ, 3, c.seq);
                        if c.result != 0 {
                            annotation(&mut te, A_RESULT, 4, c.result as i64 as u64);
                        }
                        if !pl.call_shown(i) {
                            if let Some(k) = &c.kernel {
                                annotation(&mut te, A_KERNEL, 17, iids.get(VALUES, k));
                            }
                            if let Some(s) = c.stream() {
                                annotation(&mut te, A_STREAM, 7, s);
                            }
                        }
                    }
                    What::Range(i) => {
                        let r = &pl.p.ranges[i];
                        uint(&mut te, 10, iids.get(NAMES, r.name.as_str()));
                        uint(&mut te, 3, iids.get(CATEGORIES, "nvtx"));
                        if let Some(d) = &r.domain {
                            annotation(&mut te, A_DOMAIN, 17, iids.get(VALUES, d));
                        }
                        annotation(&mut te, A_LEVEL, 3, u64::from(r.level));
                        attr_annotations(&mut te, &mut scratch, &r.attrs);
                    }
                    What::Span(i) => {
                        let d = &pl.p.device[i];
                        uint(&mut te, 10, iids.get(NAMES, d.name.as_str()));
                        uint(&mut te, 3, iids.get(CATEGORIES, d.kind.name()));
                        if d.bound_ns != 0 {
                            annotation(&mut te, A_BOUND, 3, d.bound_ns);
                        }
                        if matches!(d.kind, DeviceKind::Memcpy | DeviceKind::Memset) {
                            annotation(&mut te, A_BYTES, 3, d.bytes);
                        }
                        if let (Some(seq), None) = (d.call.get(), pl.span_flow(i)) {
                            annotation(&mut te, A_CALL_SEQ, 3, seq);
                        }
                    }
                }
                if pl.times.open(it) {
                    annotation(&mut te, A_OPEN, 2, 1);
                }
                // The causal graph's dependencies: a flow from the slice depended on, ending here.
                if deps {
                    for d in pl.deps_into(it.what()) {
                        annotation(&mut te, A_DEPENDS_ON, 17, iids.get(VALUES, d.label));
                    }
                }
                let flow = |te: &mut Vec<u8>, id: u64| {
                    key(te, 47, 1);
                    te.extend_from_slice(&id.to_le_bytes());
                };
                match it.what() {
                    What::Call(i) => pl.flows_of(i).for_each(|f| flow(&mut te, f)),
                    What::Span(i) => pl.span_flow(i).into_iter().for_each(|f| flow(&mut te, f)),
                    What::Range(_) => {}
                }
                if deps {
                    for d in pl.deps_from(it.what()) {
                        flow(&mut te, d.id);
                    }
                    for d in pl.deps_into(it.what()) {
                        key(&mut te, 48, 1);
                        te.extend_from_slice(&d.id.to_le_bytes());
                    }
                }
            }
            Ev::End => uint(&mut te, 9, Type::SliceEnd as u64),
            Ev::Mark(m) => {
                let m = &pl.p.marks[m as usize];
                uint(&mut te, 9, Type::Instant as u64);
                uint(&mut te, 10, iids.get(NAMES, m.name.as_str()));
                uint(&mut te, 3, iids.get(CATEGORIES, "nvtx"));
                if let Some(d) = &m.domain {
                    annotation(&mut te, A_DOMAIN, 17, iids.get(VALUES, d));
                }
                attr_annotations(&mut te, &mut scratch, &m.attrs);
            }
            Ev::Capture => {
                // Once per process: its annotations are written out, not interned.
                let e = TrackEvent {
                    r#type: Some(Type::Instant as i32),
                    name: Some(CAPTURE_EVENT.into()),
                    categories: vec!["causeway".into()],
                    debug_annotations: vec![
                        ann("capture", Value::String(capture.into())),
                        ann("clock", Value::String("CLOCK_MONOTONIC".into())),
                        ann("exe", Value::String(pl.p.exe.clone())),
                        ann("host", Value::String(pl.p.host.clone())),
                        ann("ppid", Value::Uint(pl.p.ppid as u64)),
                        ann("backend", Value::String(pl.p.backend.clone())),
                        ann("clock_bound_max_ns", Value::Uint(pl.bound_max_ns)),
                        ann("device_spans", Value::Uint(pl.p.device.len() as u64)),
                        ann(
                            "unplaced_device_intervals",
                            Value::Uint(pl.p.unplaced_device),
                        ),
                        ann("processes_in_capture", Value::Uint(processes as u64)),
                    ],
                    ..Default::default()
                };
                e.encode(&mut te).expect("a Vec grows");
            }
        }
        // The packet (timestamp delta, sequence, the event), framed in place.
        let dt = ts - prev;
        prev = ts;
        let seq = u64::from(t.sequence);
        let packet_len = 1
            + prost::encoding::encoded_len_varint(dt)
            + 1
            + prost::encoding::encoded_len_varint(seq)
            + 1
            + prost::encoding::encoded_len_varint(te.len() as u64)
            + te.len();
        key(out, 1, 2);
        varint(out, packet_len as u64);
        uint(out, 8, dt);
        uint(out, 10, seq);
        bytes(out, 11, &te);
    }
}

fn ann(name: &str, value: Value) -> DebugAnnotation {
    DebugAnnotation {
        name_iid: None,
        name: Some(name.into()),
        value: Some(value),
    }
}

/// Appends one packet as `Trace.packet` (field 1): concatenated, these form one `Trace` message.
fn put(out: &mut Vec<u8>, p: &TracePacket) {
    key(out, 1, 2);
    varint(out, p.encoded_len() as u64);
    p.encode(out).expect("a Vec grows");
}

fn descriptor(out: &mut Vec<u8>, d: TrackDescriptor) {
    put(
        out,
        &TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            data: Some(Data::TrackDescriptor(d)),
            ..Default::default()
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::BIND_BASE;
    use crate::facts::model::{Call, Mark, ProcessTimeline, Range};

    /// A thread of nested calls over several units of encoding, some enclosing the units'
    /// boundaries (one the whole thread), with a range that crosses them and marks at the same times
    /// as slices begin and end: each unit resumes the full walk where the one before stopped (its
    /// open slices, its marks, the time of its last event), and its strings are read from its
    /// begins and marks alone, in the walk's order.
    #[test]
    fn units_resume_the_walk_and_find_its_begins_and_marks() {
        let name = crate::read::intern("f");
        let call = |begin, end, depth| Call::bare(0, 7, name, (begin, Some(end)), depth);
        // Pairs of an outer call [10i, 10i+10) (ending as the next begins) and an inner one
        // [10i+2, 10i+8), in blocks each enclosed by a call, all enclosed by one. A block is
        // 2 * UNIT - 2 slices: the first is open when the second unit starts and ends as the third
        // starts, where the second block begins, after all its pairs.
        let n = 3 * UNIT as u64 / 2;
        let mut calls = vec![call(0, 10 * n + 5, 0)];
        for i in 0..n {
            let block = UNIT as u64 - 1;
            if i % block == 0 {
                calls.push(call(10 * i, (10 * (i + block)).min(10 * n + 1), 1));
            }
            // A block's last pair ends before the block does.
            let last = (i + 1) % block == 0;
            calls.push(call(10 * i, 10 * i + if last { 8 } else { 10 }, 2));
            calls.push(call(10 * i + 2, 10 * i + 8, 3));
        }
        for (k, c) in calls.iter_mut().enumerate() {
            c.seq = k as u64;
        }
        // At every slice's begin, and at some ends and between slices.
        let marks = (0..n)
            .flat_map(|i| {
                [
                    10 * i,
                    10 * i + 1,
                    10 * i + 2,
                    10 * i + [8, 9, 10][i as usize % 3],
                ]
            })
            .map(|ns| Mark {
                tid: 7,
                name,
                domain: None,
                ns,
                attrs: Default::default(),
            })
            .collect();
        let ranges = vec![Range {
            tid: 7,
            name,
            domain: None,
            begin_ns: 5,
            end_ns: Some(10 * n + 7),
            level: 0,
            attrs: Default::default(),
        }];
        let p = ProcessTimeline {
            threads: vec![7],
            calls,
            marks,
            ranges,
            ..ProcessTimeline::empty(1)
        };
        let pl = ProcLayout::of(&p, None, &mut 1, BIND_BASE);
        let t = &pl.threads[0];
        assert_eq!(
            t.lanes.len(),
            2,
            "the range crosses calls: a lane of its own"
        );
        let mut track = Track::new(2, 3, &pl, (&t.lanes[0], &t.marks), false);
        track.find_starts();
        // More marks than slices: units cut by marks too.
        assert!(track.starts.len() > t.lanes[0].len().div_ceil(UNIT));
        assert!(track.starts.len() >= 3);
        assert_eq!(
            t.lanes[0][2 * UNIT].what(),
            What::Call(2 * UNIT),
            "a block begins"
        );
        assert!(
            track.starts[1..].iter().all(|c| !c.edges.open().is_empty()),
            "slices enclose the units' starts"
        );
        units_are_the_walk(&track, 2 * t.lanes[0].len() + p.marks.len());
    }

    /// Each unit of `track` (of `events` events) resumes the full walk where the one before
    /// stopped (its open slices, its marks, the time of its last event); its strings are read from
    /// its begins and marks alone, in the walk's order; every event is in one unit.
    fn units_are_the_walk(track: &Track, events: usize) {
        let mut c = Cursor::new(track);
        let all: Vec<(u64, Ev)> = std::iter::from_fn(|| c.next(track, END)).collect();
        assert_eq!(all.len(), events);
        assert!(all.windows(2).all(|w| w[0].0 <= w[1].0));
        let key = |e: &Ev| match *e {
            Ev::Begin(i) => (0, i),
            Ev::End => (1, 0),
            Ev::Mark(m) => (2, m),
            Ev::Capture => (3, 0),
        };
        let listed = |v: &[(u64, Ev)]| v.iter().map(|(ts, e)| (*ts, key(e))).collect::<Vec<_>>();
        let mut at = 0;
        for k in 0..track.starts.len() {
            let (prev, events) = track.events(k);
            let events: Vec<_> = events.collect();
            assert!(
                events.len() <= 3 * UNIT,
                "unit {k}: {} events",
                events.len()
            );
            let want = &all[at..at + events.len()];
            assert_eq!(prev, all[at.saturating_sub(1)].0, "unit {k}");
            assert_eq!(listed(&events), listed(want), "unit {k}");
            let begins: Vec<_> = track.begins(k).map(|e| key(&e)).collect();
            let want: Vec<_> = (want.iter())
                .filter(|(_, e)| matches!(e, Ev::Begin(_) | Ev::Mark(_)))
                .map(|(_, e)| key(e))
                .collect();
            assert_eq!(begins, want, "unit {k}");
            at += events.len();
        }
        assert_eq!(at, all.len());
    }

    /// Marks cut units too: a thread of marks alone, and one of long slices few and far between
    /// with marks dense among them (slices ending between marks, marks at the same times as
    /// begins and ends), are units of `UNIT` marks at most, each resuming the walk.
    #[test]
    fn marks_cut_units_on_a_thread_of_marks() {
        let name = crate::read::intern("m");
        let mark = |ns| Mark {
            tid: 7,
            name,
            domain: None,
            ns,
            attrs: Default::default(),
        };
        let n = 3 * UNIT as u64 + 5;
        let only = ProcessTimeline {
            threads: vec![7],
            marks: (0..n).map(|i| mark(i / 2)).collect(),
            ..ProcessTimeline::empty(1)
        };
        let call = |k, begin, end| Call::bare(k, 7, name, (begin, Some(end)), 0);
        // A call every 64 ns lasting 40, one inside each; a mark every ns (so the units' marks,
        // every `UNIT`th, are at the same time as a call's begin).
        let sparse = ProcessTimeline {
            threads: vec![7],
            calls: (0..n / 64)
                .flat_map(|i| {
                    [
                        call(2 * i, 64 * i, 64 * i + 40),
                        call(2 * i + 1, 64 * i + 10, 64 * i + 30),
                    ]
                })
                .collect(),
            marks: (0..n).map(mark).collect(),
            ..ProcessTimeline::empty(1)
        };
        for p in [only, sparse] {
            let pl = ProcLayout::of(&p, None, &mut 1, BIND_BASE);
            let t = &pl.threads[0];
            let mut track = Track::new(2, 3, &pl, (&t.lanes[0], &t.marks), false);
            track.find_starts();
            assert!(track.starts.len() >= 4, "{} units", track.starts.len());
            units_are_the_walk(&track, 2 * t.lanes[0].len() + p.marks.len());
        }
    }
}
