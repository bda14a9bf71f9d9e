//! Checks every exported trace must pass, whatever the capture: shared by `cli/tests/export.rs`
//! (synthetic rings) and `itests/tests/export.rs` (captures of real programs under the shim). Each check
//! panics with what is wrong; the returned stats let a test compare counts with the capture.
#![allow(dead_code)]

use causeway_scanner::export::perfetto::proto::{self, Data, Type, Value};
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap, HashSet};

/// One slice rebuilt from a BEGIN/END pair.
#[derive(Debug, Clone)]
pub struct PSlice {
    pub track: u64,
    pub track_name: String,
    pub name: String,
    pub categories: Vec<String>,
    pub begin: u64,
    pub end: u64,
    pub flows: Vec<u64>,
    /// The dependency flows ending here (`terminating_flow_ids`).
    pub ends: Vec<u64>,
    /// The debug annotations, with those the encoding leaves out restored (`restore_left_out`).
    pub args: BTreeMap<String, Value>,
}

#[derive(Debug, Default)]
pub struct PerfettoStats {
    /// Slices on host-thread tracks (a thread's own track or its overlap tracks).
    pub host: Vec<PSlice>,
    /// Slices on device-stream tracks (a stream's own track or its overlap tracks).
    pub device: Vec<PSlice>,
    /// (track name, event name, ts, args) of every instant.
    pub instants: Vec<(String, String, u64, BTreeMap<String, Value>)>,
    /// Names of device tracks, in file order.
    pub device_tracks: Vec<String>,
    /// (pid, tid, name) of every thread track.
    pub thread_tracks: Vec<(i32, i32, String)>,
    /// (pid, name) of every process track.
    pub process_tracks: Vec<(i32, String)>,
    /// Flow ids, each seen exactly twice: (call slice on a host track, span slice on a device track).
    pub flows: Vec<(PSlice, PSlice)>,
    /// The causal graph's dependency flows: (slice depended on, dependent slice, its `depends_on`).
    pub deps: Vec<(PSlice, PSlice, String)>,
}

fn is_host_track_name(n: &str) -> bool {
    n.starts_with("thread ") || n.starts_with("main thread ")
}

pub fn check_perfetto(bytes: &[u8]) -> PerfettoStats {
    let trace = causeway_scanner::export::perfetto::decode(bytes).expect("decodes as a Trace");
    // Every packet as a viewer reads it: interned strings, sequence defaults and incremental
    // timestamps resolved (the encoding itself is checked by the corpus test's own decoder).
    let packets = &causeway_scanner::export::perfetto::resolve(trace).expect("resolves");
    assert!(!packets.is_empty(), "no packets");
    // 1. The clock: a snapshot making CLOCK_MONOTONIC the trace clock, first.
    match &packets[0].data {
        Some(Data::ClockSnapshot(c)) => {
            assert_eq!(
                c.primary_trace_clock,
                Some(proto::BUILTIN_CLOCK_MONOTONIC as i32)
            );
            assert_eq!(c.clocks.len(), 1);
            assert_eq!(c.clocks[0].clock_id, Some(proto::BUILTIN_CLOCK_MONOTONIC));
        }
        other => panic!("first packet is not a clock snapshot: {other:?}"),
    }
    assert_eq!(
        packets[0].sequence_flags,
        Some(proto::SEQ_INCREMENTAL_STATE_CLEARED)
    );

    // 2. Descriptors, all before the first event; unique uuids; parents are process tracks.
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut kind: HashMap<u64, char> = HashMap::new(); // 'p'rocess, 't'hread, 'h'ost overlap, 'd'evice
    let mut pid_of_process_track: HashMap<u64, i32> = HashMap::new();
    let mut stats = PerfettoStats::default();
    let mut seen_event = false;
    for p in packets {
        let seq = p.trusted_packet_sequence_id.expect("a sequence");
        match &p.data {
            Some(Data::TrackEvent(_)) => assert!(
                seq >= causeway_scanner::export::perfetto::FIRST_TRACK_SEQUENCE,
                "events on their track's sequence: {p:?}"
            ),
            _ => assert_eq!(seq, 1, "descriptors and the clock on sequence 1: {p:?}"),
        }
        match &p.data {
            Some(Data::TrackDescriptor(d)) => {
                assert!(!seen_event, "descriptor after an event: {d:?}");
                let uuid = d.uuid.expect("descriptor uuid");
                assert!(uuid != 0, "uuid 0 is the global track");
                let k = if let Some(pr) = &d.process {
                    let pid = pr.pid.expect("process pid");
                    let name = pr.process_name.clone().expect("process name");
                    assert!(!name.is_empty());
                    pid_of_process_track.insert(uuid, pid);
                    stats.process_tracks.push((pid, name.clone()));
                    names.insert(uuid, name);
                    'p'
                } else if let Some(t) = &d.thread {
                    let name = t.thread_name.clone().expect("thread name");
                    stats.thread_tracks.push((
                        t.pid.expect("thread pid"),
                        t.tid.expect("tid"),
                        name.clone(),
                    ));
                    names.insert(uuid, name);
                    't'
                } else {
                    let parent = d.parent_uuid.expect("child track has a parent");
                    assert_eq!(
                        kind.get(&parent),
                        Some(&'p'),
                        "parent {parent} is not a process track"
                    );
                    let name = d.name.clone().expect("child track has a name");
                    names.insert(uuid, name.clone());
                    if is_host_track_name(&name) {
                        'h'
                    } else {
                        stats.device_tracks.push(name);
                        'd'
                    }
                };
                assert!(kind.insert(uuid, k).is_none(), "uuid {uuid} declared twice");
            }
            Some(Data::TrackEvent(_)) => seen_event = true,
            Some(Data::ClockSnapshot(_)) => {}
            None => panic!("empty packet"),
        }
    }

    // 3. Events: timestamps on CLOCK_MONOTONIC, non-decreasing in the file; per track, each END closes
    //    the latest open BEGIN, and nothing stays open.
    let mut last_ts = 0u64;
    let mut open: HashMap<u64, Vec<(u64, &proto::TrackEvent)>> = HashMap::new();
    for p in packets {
        let Some(Data::TrackEvent(e)) = &p.data else {
            continue;
        };
        let ts = p.timestamp.expect("event timestamp");
        assert_eq!(p.timestamp_clock_id, Some(proto::BUILTIN_CLOCK_MONOTONIC));
        assert!(
            ts >= last_ts,
            "events out of time order: {ts} after {last_ts}"
        );
        last_ts = ts;
        let track = e.track_uuid.expect("event track");
        let k = *kind
            .get(&track)
            .unwrap_or_else(|| panic!("event on undeclared track {track}"));
        let ty = e.r#type.and_then(|t| Type::try_from(t).ok());
        if !e.terminating_flow_ids.is_empty() {
            assert_eq!(
                ty,
                Some(Type::SliceBegin),
                "terminating flows on a BEGIN only"
            );
        }
        match ty {
            Some(Type::SliceBegin) => {
                assert!(matches!(k, 't' | 'h' | 'd'), "slice on a process track");
                assert!(e.name.as_deref().is_some_and(|n| !n.is_empty()), "{e:?}");
                assert_eq!(e.categories.len(), 1, "{e:?}");
                open.entry(track).or_default().push((ts, e));
            }
            Some(Type::SliceEnd) => {
                let (begin, b) = open
                    .get_mut(&track)
                    .and_then(Vec::pop)
                    .unwrap_or_else(|| panic!("END without BEGIN on track {track} at {ts}"));
                assert!(e.name.is_none() && e.flow_ids.is_empty());
                let s = PSlice {
                    track,
                    track_name: names[&track].clone(),
                    name: b.name.clone().unwrap(),
                    categories: b.categories.clone(),
                    begin,
                    end: ts,
                    flows: b.flow_ids.clone(),
                    ends: b.terminating_flow_ids.clone(),
                    args: args(&b.debug_annotations),
                };
                if k == 'd' {
                    stats.device.push(s);
                } else {
                    stats.host.push(s);
                }
            }
            Some(Type::Instant) => {
                assert!(e.name.is_some());
                stats.instants.push((
                    names[&track].clone(),
                    e.name.clone().unwrap(),
                    ts,
                    args(&e.debug_annotations),
                ));
            }
            other => panic!("unexpected event type {other:?}"),
        }
    }
    for (track, v) in &open {
        assert!(
            v.is_empty(),
            "{} slices left open on track {track}",
            v.len()
        );
    }
    // Slices of one track nest (no END out of order is possible by construction above, so this checks
    // the times: a child lies within its parent).
    for group in [&stats.host, &stats.device] {
        let mut per: HashMap<u64, Vec<&PSlice>> = HashMap::new();
        for s in group.iter() {
            assert!(s.end >= s.begin);
            per.entry(s.track).or_default().push(s);
        }
        for v in per.values() {
            assert_nested(
                v.iter().map(|s| (s.begin, s.end)).collect(),
                "perfetto track",
            );
        }
    }
    restore_left_out(&mut stats);
    let mut by_flow: HashMap<u64, Vec<(char, PSlice)>> = HashMap::new();
    // Dependency flows: started in `flow_ids`, ended in `terminating_flow_ids`.
    let mut dep_ends: HashMap<u64, PSlice> = HashMap::new();
    for (k, s) in (stats.host.iter().map(|s| ('t', s))).chain(stats.device.iter().map(|s| ('d', s)))
    {
        for &f in &s.flows {
            by_flow.entry(f).or_default().push((k, s.clone()));
        }
        for &f in &s.ends {
            assert!(
                dep_ends.insert(f, s.clone()).is_none(),
                "flow {f} ends twice"
            );
        }
    }
    // 4. Dependency flows: one start (flow_ids) and one end (terminating_flow_ids) each; the
    //    dependent slice names the dependency in `depends_on`.
    let mut dep_ids: Vec<u64> = dep_ends.keys().copied().collect();
    dep_ids.sort();
    for id in dep_ids {
        let to = dep_ends.remove(&id).unwrap();
        let from = by_flow.remove(&id).unwrap_or_default();
        assert_eq!(
            from.len(),
            1,
            "dependency flow {id} starts on {} slices",
            from.len()
        );
        let label = match to.args.get("depends_on") {
            Some(Value::String(l)) => l.clone(),
            other => panic!("dependency flow {id} ends on a slice without depends_on: {other:?}"),
        };
        stats.deps.push((from[0].1.clone(), to, label));
    }
    // 5. Flows: each id on exactly one call slice (host track) and one span slice (device track).
    let mut ids: Vec<u64> = by_flow.keys().copied().collect();
    ids.sort();
    for id in ids {
        let v = by_flow.remove(&id).unwrap();
        assert_eq!(v.len(), 2, "flow {id} on {} slices", v.len());
        let host = v
            .iter()
            .find(|x| x.0 != 'd')
            .expect("flow starts on a host track");
        let dev = v
            .iter()
            .find(|x| x.0 == 'd')
            .expect("flow ends on a device track");
        assert_eq!(
            host.1.args.get("seq").cloned(),
            dev.1.args.get("call_seq").cloned(),
            "flow {id} joins a call to a span of another call"
        );
        stats.flows.push((host.1.clone(), dev.1.clone()));
    }
    stats
}

/// Restores the arguments the Perfetto encoding leaves out (see `export::perfetto`'s module docs),
/// as a reader of the trace would, checking each can be: a call's category is its class and layer
/// (`launch,runtime`: restored as the category `launch` and a `layer` argument); `result` absent is
/// 0; a span's `bound_ns` absent is 0; a span drawn with a flow from its call has no `call_seq` (the
/// call's `seq`) and no `stream` (its track's name, as the Chrome export's `stream`); a call whose
/// kernel and stream its device work shows has no `kernel` (a launch's: the span's name) and no
/// `stream` (the span's track's stream as a pointer), nor has a call nested in a call of its class
/// naming the same ones (restored from that call).
fn restore_left_out(st: &mut PerfettoStats) {
    let span_of_flow: HashMap<u64, usize> = (st.device.iter().enumerate())
        .flat_map(|(j, d)| d.flows.iter().map(move |&f| (f, j)))
        .collect();
    for d in &mut st.device {
        assert!(!d.args.contains_key("stream"), "{d:?}");
        d.args.entry("bound_ns".into()).or_insert(Value::Uint(0));
        d.args
            .insert("stream".into(), Value::String(base_name(&d.track_name)));
    }
    // Calls in begin order, enclosing first, per track: the stack of open ones gives the enclosing.
    let mut order: Vec<usize> = (0..st.host.len()).collect();
    order.sort_by_key(|&i| {
        let s = &st.host[i];
        (s.track, s.begin, std::cmp::Reverse(s.end))
    });
    let mut stack: Vec<usize> = Vec::new();
    for i in order {
        while stack.last().is_some_and(|&j| {
            let o = &st.host[j];
            o.track != st.host[i].track || o.end <= st.host[i].begin
        }) {
            stack.pop();
        }
        let h = &mut st.host[i];
        if h.categories[0] == "nvtx" {
            continue;
        }
        let (class, layer) = match h.categories[0].split_once(',') {
            Some((c, l)) => (c.to_string(), l.to_string()),
            None => panic!("a call's category is class,layer: {h:?}"),
        };
        h.categories = vec![class];
        assert!(!h.args.contains_key("layer"), "{h:?}");
        h.args.insert("layer".into(), Value::String(layer));
        assert_ne!(h.args.get("result"), Some(&Value::Int(0)), "{h:?}");
        h.args.entry("result".into()).or_insert(Value::Int(0));
        let spans: Vec<usize> = h
            .flows
            .iter()
            .filter_map(|f| span_of_flow.get(f))
            .copied()
            .collect();
        for &j in &spans {
            let d = &mut st.device[j];
            assert!(!d.args.contains_key("call_seq"), "{d:?}");
            d.args
                .insert("call_seq".into(), st.host[i].args["seq"].clone());
        }
        let h = &st.host[i];
        let has = h.args.contains_key("kernel") || h.args.contains_key("stream");
        if let Some(&j) = spans.first() {
            if !has {
                // Shown by its work: the kernel (if it launched one) is a span's name.
                let d = &st.device[j];
                let restored = [
                    (h.categories[0] == "launch")
                        .then(|| ("kernel", Value::String(d.name.clone()))),
                    stream_pointer(&d.track_name).map(|p| ("stream", p)),
                ];
                let h = &mut st.host[i];
                for (k, v) in restored.into_iter().flatten() {
                    h.args.insert(k.into(), v);
                }
            }
        } else if !has {
            let class = |s: &PSlice| s.categories[0].split(',').next().unwrap().to_string();
            let outer = stack
                .last()
                .filter(|&&o| class(&st.host[o]) == class(&st.host[i]));
            if let Some(&o) = outer {
                let (k, s) = (
                    st.host[o].args.get("kernel").cloned(),
                    st.host[o].args.get("stream").cloned(),
                );
                let h = &mut st.host[i];
                k.map(|v| h.args.insert("kernel".into(), v));
                s.map(|v| h.args.insert("stream".into(), v));
            }
        }
        stack.push(i);
    }
}

/// A track's name without its ` (overlap N)`.
fn base_name(track: &str) -> String {
    track.split(" (overlap").next().unwrap_or(track).to_string()
}

/// The stream pointer a device track's name shows (`stream 0x5000`, `stream 0 (legacy default)`,
/// after the name the program gave it: `copies (stream 0x5000)`).
fn stream_pointer(track: &str) -> Option<Value> {
    let t = base_name(track);
    if t.ends_with("stream 0 (legacy default)") || t.ends_with("stream 0 (legacy default))") {
        return Some(Value::Pointer(0));
    }
    let at = t.rfind("stream 0x")? + "stream 0x".len();
    let hex: String = t[at..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    u64::from_str_radix(&hex, 16).ok().map(Value::Pointer)
}

fn args(a: &[proto::DebugAnnotation]) -> BTreeMap<String, Value> {
    a.iter()
        .map(|d| {
            (
                d.name.clone().expect("annotation name"),
                d.value.clone().expect("annotation value"),
            )
        })
        .collect()
}

/// Intervals (in any order) nest: any two are disjoint or one contains the other.
pub fn assert_nested(mut v: Vec<(u64, u64)>, what: &str) {
    v.sort_by_key(|&(b, e)| (b, std::cmp::Reverse(e)));
    let mut stack: Vec<u64> = Vec::new();
    for (b, e) in v {
        while stack.last().is_some_and(|&end| end <= b) {
            stack.pop();
        }
        if let Some(&end) = stack.last() {
            assert!(
                e <= end,
                "{what}: [{b}, {e}] crosses a slice ending at {end}"
            );
        }
        stack.push(e);
    }
}

#[derive(Debug, Clone)]
pub struct CEvent {
    pub pid: u64,
    pub tid: u64,
    pub thread: String,
    /// Nanoseconds, from the microsecond text with three decimals.
    pub ts: u64,
    pub dur: u64,
    pub name: String,
    pub cat: String,
    pub args: Json,
}

#[derive(Debug, Default)]
pub struct ChromeStats {
    pub host: Vec<CEvent>,
    pub device: Vec<CEvent>,
    pub instants: Vec<CEvent>,
    /// (call X event, span X event) per call -> device flow, by binding, then in file order.
    pub flows: Vec<(CEvent, CEvent)>,
    /// The causal graph's dependency flows: (slice depended on, dependent slice, name, category).
    pub deps: Vec<(CEvent, CEvent, String, String)>,
    /// thread name per (pid, tid), and the sort index.
    pub threads: BTreeMap<(u64, u64), (String, u64)>,
    pub processes: BTreeMap<u64, String>,
}

/// Microseconds (a JSON number printed with three decimals) to nanoseconds, exactly.
fn ns(v: &Json) -> u64 {
    let f = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!(f >= 0.0, "negative time {f}");
    (f * 1000.0).round() as u64
}

pub fn check_chrome(text: &str) -> (Json, ChromeStats) {
    let root: Json = serde_json::from_str(text).expect("valid JSON");
    let events = root["traceEvents"].as_array().expect("traceEvents");
    assert_eq!(root["displayTimeUnit"], "ns");
    assert!(root["metadata"].is_object(), "metadata object");
    let mut st = ChromeStats::default();
    for e in events {
        if e["ph"] == "M" {
            let pid = e["pid"].as_u64().unwrap();
            let tid = e["tid"].as_u64().unwrap();
            match e["name"].as_str().unwrap() {
                "process_name" => {
                    st.processes
                        .insert(pid, e["args"]["name"].as_str().unwrap().into());
                }
                "thread_name" => {
                    st.threads.entry((pid, tid)).or_default().0 =
                        e["args"]["name"].as_str().unwrap().into();
                }
                "thread_sort_index" => {
                    st.threads.entry((pid, tid)).or_default().1 =
                        e["args"]["sort_index"].as_u64().unwrap();
                }
                "process_sort_index" => {}
                other => panic!("unexpected metadata event {other}"),
            }
        }
    }
    // Call -> device flows (flow events v2): one call per binding, any number of spans.
    let mut starts: HashMap<u64, CEvent> = HashMap::new();
    let mut finishes: Vec<(u64, CEvent)> = Vec::new();
    let mut dep_starts: HashMap<u64, (CEvent, String, String)> = HashMap::new();
    let mut dep_finishes: HashMap<u64, CEvent> = HashMap::new();
    let mut last_x: HashMap<(u64, u64), CEvent> = HashMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        if ph == "M" {
            continue;
        }
        let pid = e["pid"].as_u64().expect("pid");
        let tid = e["tid"].as_u64().expect("tid");
        let thread = st
            .threads
            .get(&(pid, tid))
            .unwrap_or_else(|| panic!("event on unnamed thread {pid}/{tid}: {e}"))
            .0
            .clone();
        assert!(st.processes.contains_key(&pid), "unnamed process {pid}");
        let ev = CEvent {
            pid,
            tid,
            thread: thread.clone(),
            ts: ns(&e["ts"]),
            dur: if ph == "X" { ns(&e["dur"]) } else { 0 },
            name: e["name"].as_str().expect("name").into(),
            cat: e["cat"].as_str().expect("cat").into(),
            args: e["args"].clone(),
        };
        let host = is_host_track_name(&thread);
        match ph {
            "X" => {
                assert!(e["dur"].as_f64().unwrap() >= 0.0, "dur < 0: {e}");
                assert!(!ev.name.is_empty());
                if let Some(bind) = e.get("bind_id") {
                    let bind = bind.as_u64().expect("bind_id a number");
                    // Past any id a viewer gives the file's `s`/`f` flows.
                    assert!(bind >= 1 << 32, "bind_id {bind} below 2^32");
                    let (out, inn) = (e.get("flow_out"), e.get("flow_in"));
                    if host {
                        assert!(out == Some(&Json::Bool(true)) && inn.is_none(), "{e}");
                        assert!(
                            starts.insert(bind, ev.clone()).is_none(),
                            "two starts of {bind}"
                        );
                    } else {
                        assert!(inn == Some(&Json::Bool(true)) && out.is_none(), "{e}");
                        finishes.push((bind, ev.clone()));
                    }
                } else {
                    assert!(
                        e.get("flow_in").is_none() && e.get("flow_out").is_none(),
                        "{e}"
                    );
                }
                last_x.insert((pid, tid), ev.clone());
                if host {
                    st.host.push(ev);
                } else {
                    st.device.push(ev);
                }
            }
            "i" => {
                assert_eq!(e["s"], "t");
                assert!(host, "instant on a device track");
                st.instants.push(ev);
            }
            "s" | "f" => {
                let id = e["id"].as_u64().expect("flow id");
                // Written right after the slice it binds to, at that slice's begin.
                let x = last_x
                    .get(&(pid, tid))
                    .unwrap_or_else(|| panic!("flow {id} before any slice on its thread"));
                assert_eq!(x.ts, ev.ts, "flow {id} not at its slice's begin");
                // Only the causal graph's dependencies: named by their edge type.
                let cat = e["cat"].as_str().unwrap().to_string();
                assert!(cat.starts_with("dependency,"), "{e}");
                let name = e["name"].as_str().unwrap().to_string();
                if ph == "s" {
                    assert!(dep_starts.insert(id, (x.clone(), name, cat)).is_none());
                } else {
                    assert_eq!(e["bp"], "e");
                    assert!(dep_finishes.insert(id, x.clone()).is_none());
                }
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    let mut dep_ids: Vec<u64> = dep_starts.keys().copied().collect();
    dep_ids.sort();
    assert_eq!(
        dep_starts.len(),
        dep_finishes.len(),
        "unpaired dependency flows"
    );
    for id in dep_ids {
        let (s, name, cat) = dep_starts.remove(&id).unwrap();
        let f = dep_finishes
            .remove(&id)
            .unwrap_or_else(|| panic!("dependency flow {id} never ends"));
        st.deps.push((s, f, name, cat));
    }
    // A span whose call is in the file ends a flow from it (its `call_seq` is that call's `seq`).
    let calls: HashSet<(u64, u64)> = (st.host.iter())
        .filter_map(|x| Some((x.pid, x.args.get("seq")?.as_u64()?)))
        .collect();
    let flowing: HashSet<(u64, u64, u64)> = (finishes.iter())
        .map(|(_, f)| (f.pid, f.tid, f.ts))
        .collect();
    for d in &st.device {
        if let Some(seq) = d.args.get("call_seq").and_then(Json::as_u64) {
            if calls.contains(&(d.pid, seq)) {
                let key = (d.pid, d.tid, d.ts);
                assert!(flowing.contains(&key), "no flow into span {d:?}");
            }
        }
    }
    finishes.sort_by_key(|f| f.0);
    let mut ended: HashSet<u64> = HashSet::new();
    for (bind, f) in finishes {
        let s = (starts.get(&bind)).unwrap_or_else(|| panic!("flow {bind} ends but never starts"));
        assert_eq!(s.pid, f.pid, "flow {bind} across processes");
        assert_eq!(s.args["seq"], f.args["call_seq"], "flow {bind}");
        ended.insert(bind);
        st.flows.push((s.clone(), f));
    }
    assert_eq!(ended.len(), starts.len(), "a call's flow ends nowhere");
    // Device tracks sort after the host threads of their process; every track nests.
    let mut per: HashMap<(u64, u64), Vec<(u64, u64)>> = HashMap::new();
    for x in st.host.iter().chain(&st.device) {
        per.entry((x.pid, x.tid))
            .or_default()
            .push((x.ts, x.ts + x.dur));
    }
    for v in per.into_values() {
        assert_nested(v, "chrome thread");
    }
    for (&(pid, _), (name, sort)) in &st.threads {
        if !is_host_track_name(name) {
            for (&(p2, _), (n2, s2)) in &st.threads {
                if p2 == pid && is_host_track_name(n2) {
                    assert!(s2 < sort, "{n2} sorts after device track {name}");
                }
            }
        }
    }
    (root, st)
}

/// A Perfetto argument as the Chrome export writes it (a pointer as `0x…` text).
fn as_json(v: &Value) -> Json {
    match v {
        Value::Uint(x) => Json::from(*x),
        Value::Int(x) => Json::from(*x),
        Value::Bool(x) => Json::from(*x),
        Value::String(s) => Json::from(s.clone()),
        Value::Pointer(p) => Json::from(format!("{p:#x}")),
        other => panic!("unexpected annotation value {other:?}"),
    }
}

/// Nothing the Perfetto encoding leaves out is lost: restored (`restore_left_out`), every call's and
/// every device span's arguments are the Chrome export's of the same slice.
pub fn assert_same_args(pf: &PerfettoStats, ch: &ChromeStats) {
    let tid_of = |track: &str| -> u64 {
        let n = track.rsplit(' ').next().unwrap();
        n.parse()
            .unwrap_or_else(|_| panic!("a thread track: {track}"))
    };
    let mut calls: HashMap<(u64, u64, u64), &Json> = HashMap::new();
    for x in ch.host.iter().filter(|x| x.cat != "nvtx") {
        calls.insert((x.tid, x.ts, x.args["seq"].as_u64().unwrap()), &x.args);
    }
    for s in pf.host.iter().filter(|s| s.categories[0] != "nvtx") {
        let seq = match s.args["seq"] {
            Value::Uint(v) => v,
            ref v => panic!("seq {v:?}"),
        };
        let c = calls
            .get(&(tid_of(&s.track_name), s.begin, seq))
            .unwrap_or_else(|| panic!("no Chrome call for {s:?}"));
        // (Chrome names a dependency in its flow, Perfetto on the dependent slice too.)
        let p: serde_json::Map<String, Json> = (s.args.iter())
            .filter(|(k, _)| *k != "depends_on")
            .map(|(k, v)| (k.clone(), as_json(v)))
            .collect();
        assert_eq!(&Json::Object(p), *c, "call {s:?}");
    }
    let mut spans: HashMap<(String, u64, u64), Vec<&Json>> = HashMap::new();
    for x in &ch.device {
        spans
            .entry((x.name.clone(), x.ts, x.ts + x.dur))
            .or_default()
            .push(&x.args);
    }
    for s in &pf.device {
        let p = Json::Object(
            (s.args.iter())
                .filter(|(k, _)| *k != "depends_on")
                .map(|(k, v)| (k.clone(), as_json(v)))
                .collect(),
        );
        let same = spans
            .get(&(s.name.clone(), s.begin, s.end))
            .is_some_and(|v| v.contains(&&p));
        assert!(same, "no Chrome span with the arguments of {s:?}");
    }
}
