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
//! Arguments are debug annotations: calls `seq`, `result`, `layer`, `kernel`, `stream` (a pointer);
//! ranges `domain`, `level`; spans `bound_ns`, `bytes` (copies, memsets), `call_seq`, `stream`; and
//! `open` on a call or range drawn to the process's end because it never ended.

use super::{edges, Edge, Item, Layout, ProcLayout, What};
use prost::Message;
use std::io::{self, Write};

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
        #[prost(oneof = "Data", tags = "6, 11, 60")]
        pub data: Option<Data>,
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
    }

    /// BuiltinClock values.
    pub const BUILTIN_CLOCK_MONOTONIC: u32 = 3;
    pub const BUILTIN_CLOCK_BOOTTIME: u32 = 6;

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
        #[prost(string, repeated, tag = "22")]
        pub categories: Vec<String>,
        #[prost(string, optional, tag = "23")]
        pub name: Option<String>,
        #[prost(fixed64, repeated, packed = "false", tag = "47")]
        pub flow_ids: Vec<u64>,
        #[prost(fixed64, repeated, packed = "false", tag = "48")]
        pub terminating_flow_ids: Vec<u64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DebugAnnotation {
        #[prost(string, optional, tag = "10")]
        pub name: Option<String>,
        #[prost(oneof = "Value", tags = "2, 3, 4, 6, 7")]
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

/// The packet sequence every packet is on.
pub const SEQUENCE_ID: u32 = 1;

/// Name of the per-process instant that carries the capture's metadata.
pub const CAPTURE_EVENT: &str = "causeway capture";

/// One event to write: what, where and when.
#[derive(Clone, Copy)]
struct Ev {
    ts: u64,
    track: u64,
    proc: u32,
    kind: EvKind,
}

#[derive(Clone, Copy)]
enum EvKind {
    Begin(Item),
    End,
    Mark(usize),
    Capture,
}

pub(crate) fn write(layout: &Layout, capture: &str, w: &mut impl Write) -> io::Result<()> {
    let mut out = Packets {
        w,
        buf: Vec::with_capacity(256),
    };
    let first_ns = layout.drawn().map(|p| p.first_ns).min().unwrap_or(0);
    out.put(TracePacket {
        trusted_packet_sequence_id: Some(SEQUENCE_ID),
        sequence_flags: Some(proto::SEQ_INCREMENTAL_STATE_CLEARED),
        data: Some(Data::ClockSnapshot(ClockSnapshot {
            clocks: vec![Clock {
                clock_id: Some(proto::BUILTIN_CLOCK_MONOTONIC),
                timestamp: Some(first_ns),
            }],
            primary_trace_clock: Some(proto::BUILTIN_CLOCK_MONOTONIC as i32),
        })),
        ..Default::default()
    })?;

    let mut next_uuid = 1u64;
    let mut uuid = || {
        let u = next_uuid;
        next_uuid += 1;
        u
    };
    let mut events: Vec<Ev> = Vec::new();
    for (pi, pl) in layout.procs.iter().enumerate() {
        if pl.is_empty() {
            continue;
        }
        let proc = pi as u32;
        let pid = pl.p.pid as i32;
        let process_track = uuid();
        out.descriptor(TrackDescriptor {
            uuid: Some(process_track),
            process: Some(ProcessDescriptor {
                pid: Some(pid),
                process_name: Some(pl.exe_name().to_string()),
            }),
            ..Default::default()
        })?;
        events.push(Ev {
            ts: pl.first_ns,
            track: process_track,
            proc,
            kind: EvKind::Capture,
        });
        for t in &pl.threads {
            for (li, lane) in t.lanes.iter().enumerate() {
                let track = uuid();
                let name = pl.thread_name(t.tid, li);
                out.descriptor(if li == 0 {
                    TrackDescriptor {
                        uuid: Some(track),
                        thread: Some(ThreadDescriptor {
                            pid: Some(pid),
                            tid: Some(t.tid as i32),
                            thread_name: Some(name),
                        }),
                        ..Default::default()
                    }
                } else {
                    TrackDescriptor {
                        uuid: Some(track),
                        parent_uuid: Some(process_track),
                        name: Some(name),
                        ..Default::default()
                    }
                })?;
                lane_events(&mut events, lane, track, proc);
                if li == 0 {
                    events.extend(t.marks.iter().map(|&m| Ev {
                        ts: pl.p.marks[m].ns,
                        track,
                        proc,
                        kind: EvKind::Mark(m),
                    }));
                }
            }
        }
        for s in &pl.streams {
            for (li, lane) in s.lanes.iter().enumerate() {
                let track = uuid();
                out.descriptor(TrackDescriptor {
                    uuid: Some(track),
                    parent_uuid: Some(process_track),
                    name: Some(ProcLayout::stream_name(&s.stream, li)),
                    ..Default::default()
                })?;
                lane_events(&mut events, lane, track, proc);
            }
        }
    }

    // Each track's events are already in order; a stable sort by time interleaves the tracks and keeps
    // that order.
    events.sort_by_key(|e| e.ts);
    for e in &events {
        let pl = &layout.procs[e.proc as usize];
        let ev = match e.kind {
            EvKind::Begin(it) => begin(pl, &it, e.track),
            EvKind::End => TrackEvent {
                r#type: Some(Type::SliceEnd as i32),
                track_uuid: Some(e.track),
                ..Default::default()
            },
            EvKind::Mark(m) => {
                let m = &pl.p.marks[m];
                let mut a = Vec::new();
                if let Some(d) = &m.domain {
                    a.push(ann("domain", Value::String(d.clone())));
                }
                TrackEvent {
                    r#type: Some(Type::Instant as i32),
                    track_uuid: Some(e.track),
                    name: Some(m.name.clone()),
                    categories: vec!["nvtx".into()],
                    debug_annotations: a,
                    ..Default::default()
                }
            }
            EvKind::Capture => TrackEvent {
                r#type: Some(Type::Instant as i32),
                track_uuid: Some(e.track),
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
                    ann(
                        "processes_in_capture",
                        Value::Uint(layout.procs.len() as u64),
                    ),
                ],
                ..Default::default()
            },
        };
        out.put(TracePacket {
            timestamp: Some(e.ts),
            timestamp_clock_id: Some(proto::BUILTIN_CLOCK_MONOTONIC),
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            data: Some(Data::TrackEvent(ev)),
            ..Default::default()
        })?;
    }
    Ok(())
}

fn lane_events(events: &mut Vec<Ev>, lane: &[Item], track: u64, proc: u32) {
    events.extend(edges(lane).into_iter().map(|(ts, e)| Ev {
        ts,
        track,
        proc,
        kind: match e {
            Edge::Begin(i) => EvKind::Begin(lane[i]),
            Edge::End(_) => EvKind::End,
        },
    }));
}

fn ann(name: &str, value: Value) -> DebugAnnotation {
    DebugAnnotation {
        name: Some(name.into()),
        value: Some(value),
    }
}

fn begin(pl: &ProcLayout, it: &Item, track: u64) -> TrackEvent {
    let mut a = Vec::new();
    let (name, cat, flows) = match it.what {
        What::Call(i) => {
            let c = &pl.p.calls[i];
            a.push(ann("seq", Value::Uint(c.seq)));
            a.push(ann("result", Value::Int(c.result as i64)));
            a.push(ann("layer", Value::String(c.layer.into())));
            if let Some(k) = &c.kernel {
                a.push(ann("kernel", Value::String(k.clone())));
            }
            if let Some(s) = c.stream {
                a.push(ann("stream", Value::Pointer(s)));
            }
            (
                c.api.clone(),
                c.class.unwrap_or("call"),
                pl.call_flows.get(&i).cloned().unwrap_or_default(),
            )
        }
        What::Range(i) => {
            let r = &pl.p.ranges[i];
            if let Some(d) = &r.domain {
                a.push(ann("domain", Value::String(d.clone())));
            }
            a.push(ann("level", Value::Uint(r.level as u64)));
            (r.name.clone(), "nvtx", Vec::new())
        }
        What::Span(i) => {
            let d = &pl.p.device[i];
            a.push(ann("bound_ns", Value::Uint(d.bound_ns)));
            if matches!(d.kind, "memcpy" | "memset") {
                a.push(ann("bytes", Value::Uint(d.bytes)));
            }
            if let Some(seq) = d.call {
                a.push(ann("call_seq", Value::Uint(seq)));
            }
            a.push(ann("stream", Value::String(d.stream.label())));
            (
                d.name.clone(),
                d.kind,
                pl.span_flow[i].into_iter().collect(),
            )
        }
    };
    if it.open {
        a.push(ann("open", Value::Bool(true)));
    }
    TrackEvent {
        r#type: Some(Type::SliceBegin as i32),
        track_uuid: Some(track),
        name: Some(name),
        categories: vec![cat.to_string()],
        flow_ids: flows,
        debug_annotations: a,
        ..Default::default()
    }
}

struct Packets<'w, W: Write> {
    w: &'w mut W,
    buf: Vec<u8>,
}

impl<W: Write> Packets<'_, W> {
    /// Writes one packet as `Trace.packet` (field 1): concatenated, these form one `Trace` message.
    fn put(&mut self, p: TracePacket) -> io::Result<()> {
        self.buf.clear();
        Trace { packet: vec![p] }
            .encode(&mut self.buf)
            .map_err(io::Error::other)?;
        self.w.write_all(&self.buf)
    }

    fn descriptor(&mut self, d: TrackDescriptor) -> io::Result<()> {
        self.put(TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            data: Some(Data::TrackDescriptor(d)),
            ..Default::default()
        })
    }
}
