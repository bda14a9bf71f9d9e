//! The Chrome Trace Event Format (JSON): `{"traceEvents": [...], "displayTimeUnit": "ns", "metadata": {...}}`.
//!
//! * one pid per process (`process_name` metadata: exe basename and pid); one tid per host thread
//!   (`thread_name`), its calls and NVTX ranges as complete events (`"ph":"X"`), its marks as
//!   thread-scoped instants (`"ph":"i"`);
//! * one synthetic tid per device stream (from `SYNTHETIC_TID_BASE` up, beyond any Linux tid, unique in
//!   the file), sorted after the host threads (`thread_sort_index`), its spans as complete events;
//!   extra synthetic tids for slices that do not nest on their track (see the module above);
//! * one flow per device span tied to a call, bound to the two slices themselves (the format's flow
//!   events v2): the call's event has `"bind_id":B,"flow_out":true` and each span it issued
//!   `"bind_id":B,"flow_in":true`, `B` one number per call, unique in the file and at least 2^32
//!   (`super::BIND_BASE`). No events of their own: a `s`/`f` pair was 200 bytes, 40 % of the file's
//!   events, and bound to whichever slice enclosed its time;
//! * one flow per dependency of the causal graph across tracks (`super::Dep`): `"ph":"s"` on the
//!   slice depended on and `"ph":"f"`, `"bp":"e"` on the dependent one, each at its slice's begin, with
//!   the flow's id (unique in the file), named by its edge type, category `dependency,<evidence>` (a
//!   slice may have several, which one binding per event cannot say);
//! * `ts` and `dur` in microseconds, written with exactly three decimals so they keep the capture's
//!   nanoseconds (a JSON number, printed from integers, never rounded through a float);
//! * strings are JSON-escaped, and `<`, `>`, `&`, U+2028 and U+2029 as `\u` escapes too, so a kernel name
//!   stays inert even where the JSON is embedded in an HTML page (trace2html).
//!
//! The top-level `metadata` object says which capture this is, that times are CLOCK_MONOTONIC, and per
//! process the device-timing backend, the largest clock-conversion bound of its spans and how many
//! device intervals were left out for want of a host time.

use super::{Item, Layout, ProcLayout, What};
use crate::facts::model::StreamId;
use causeway_ring::layout::DeviceKind;
use causeway_ring::Class;
use serde_json::json;
use std::fmt::Write as _;
use std::io;

/// First synthetic tid (device streams and overlap tracks): above Linux's largest pid_max (2^22).
pub const SYNTHETIC_TID_BASE: u32 = 1 << 30;

/// Slices per unit of parallel work: each unit is formatted into its own buffer, and the units are
/// written in order. A window of units at a time bounds the memory to a few buffers per thread:
/// four per thread of ~0.8 MB (4 Ki slices of ~200 bytes), 51 MB on 16 threads. (At 16 Ki slices
/// the windows held 205 MB, more than the report's whole peak on a 1 M-entry capture.)
const UNIT: usize = 4 << 10;

/// Slices per unit for a capture whose longest text is `longest` bytes: `UNIT`, or, where a slice
/// could hold texts of hundreds of KiB (a hostile ring's names, repeated in every slice that shows
/// them), as many as keep a unit near 4 MiB, so that the units in flight stay a few hundred MB.
fn unit_slices(longest: usize) -> usize {
    if longest <= crate::read::LONG_TEXT {
        return UNIT;
    }
    ((4 << 20) / (2 * longest)).clamp(1, UNIT)
}

/// One unit of output, in file order: metadata events already formatted, or slices and marks of one
/// track, formatted in parallel with the units around them.
enum Unit<'l, 't> {
    Text(Vec<u8>),
    Slices {
        pl: &'l ProcLayout<'t>,
        tid: u32,
        items: &'l [Item],
    },
    Marks {
        pl: &'l ProcLayout<'t>,
        tid: u32,
        marks: &'l [usize],
    },
}

pub(crate) fn write(
    layout: &Layout,
    capture: &str,
    w: &mut (impl crate::util::output::Direct + Send),
) -> io::Result<()> {
    w.write_all(b"{\"traceEvents\":[\n")?;
    let mut next_synthetic = SYNTHETIC_TID_BASE;
    let mut synthetic = || {
        let t = next_synthetic;
        next_synthetic += 1;
        t
    };
    // The first event of the file has no separating comma; metadata events always come first.
    let mut first = true;
    let mut meta = |units: &mut Vec<Unit>, f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = Vec::with_capacity(128);
        if !first {
            b.extend_from_slice(b",\n");
        }
        first = false;
        f(&mut b);
        units.push(Unit::Text(b));
    };
    let mut units: Vec<Unit> = Vec::new();
    let unit = unit_slices(crate::read::longest_text());
    let mut device_tids: Vec<Vec<serde_json::Value>> = Vec::new();
    for (pi, pl) in layout.drawn().enumerate() {
        let pid = pl.pid;
        let pname = match pid == pl.p.pid {
            true => format!("{} (pid {pid})", pl.exe_name()),
            false => pl.process_label(),
        };
        meta(&mut units, &|b| {
            meta_str(b, pid, 0, "process_name", "name", &pname)
        });
        meta(&mut units, &|b| {
            meta_num(b, pid, 0, "process_sort_index", pi as u64)
        });
        let mut sort = 0u64;
        for t in &pl.threads {
            for (li, lane) in t.lanes.iter().enumerate() {
                let tid = if li == 0 { t.tid } else { synthetic() };
                let tname = pl.thread_name(t.tid, li);
                meta(&mut units, &|b| {
                    meta_str(b, pid, tid, "thread_name", "name", &tname)
                });
                meta(&mut units, &|b| {
                    meta_num(b, pid, tid, "thread_sort_index", sort)
                });
                sort += 1;
                units.extend(
                    lane.chunks(unit)
                        .map(|items| Unit::Slices { pl, tid, items }),
                );
                if li == 0 && !t.marks.is_empty() {
                    units.extend(
                        t.marks
                            .chunks(unit)
                            .map(|marks| Unit::Marks { pl, tid, marks }),
                    );
                }
            }
        }
        let mut tracks = Vec::new();
        for st in &pl.streams {
            for (li, lane) in st.lanes.iter().enumerate() {
                let tid = synthetic();
                let name = pl.stream_name(&st.stream, li);
                meta(&mut units, &|b| {
                    meta_str(b, pid, tid, "thread_name", "name", &name)
                });
                meta(&mut units, &|b| {
                    meta_num(b, pid, tid, "thread_sort_index", sort)
                });
                sort += 1;
                units.extend(
                    lane.chunks(unit)
                        .map(|items| Unit::Slices { pl, tid, items }),
                );
                tracks.push(json!({"tid": tid, "name": name}));
            }
        }
        device_tids.push(tracks);
    }
    // Formatted on every thread, a window of units at a time, written in order.
    crate::util::output::write_in_order(&units, w, |u, b| match u {
        Unit::Text(t) => b.extend_from_slice(t),
        Unit::Slices { pl, tid, items } => {
            b.reserve(items.len() * 200);
            let mut texts = Texts::default();
            for &it in *items {
                slice(b, pl, *tid, it, &mut texts);
            }
        }
        Unit::Marks { pl, tid, marks } => {
            b.reserve(marks.len() * 120);
            let mut texts = Texts::default();
            for &m in *marks {
                mark(b, pl, *tid, m, &mut texts);
            }
        }
    })?;
    w.write_all(b"\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":")?;
    let processes: Vec<serde_json::Value> = layout
        .drawn()
        .zip(device_tids)
        .map(|(pl, tracks)| {
            let mut v = json!({
                "pid": pl.p.pid,
                "ppid": pl.p.ppid,
                "exe": pl.p.exe,
                "host": pl.p.host,
                "backend": pl.p.backend,
                "clock_bound_max_ns": pl.bound_max_ns,
                "device_spans": pl.p.device.len(),
                "unplaced_device_intervals": pl.p.unplaced_device,
                "device_tracks": tracks,
            });
            if pl.pid != pl.p.pid {
                // Another host's process has its pid: its events are under this one.
                v["shown_pid"] = json!(pl.pid);
            }
            v
        })
        .collect();
    let meta = json!({
        "generator": "causeway export",
        "capture": capture,
        "clock": "CLOCK_MONOTONIC",
        "time_unit": "ts and dur are microseconds with three decimals: the capture's nanoseconds",
        "processes": processes,
        "processes_without_events": layout
            .procs
            .iter()
            .filter(|p| p.is_empty())
            .map(|p| json!({"pid": p.p.pid, "ppid": p.p.ppid, "exe": p.p.exe}))
            .collect::<Vec<_>>(),
    });
    // '<', '>', '&', U+2028 and U+2029 occur in JSON text only inside strings, so escaping them over the
    // whole serialized text changes no value.
    let text = harden(&serde_json::to_string(&meta).map_err(io::Error::other)?);
    w.write_all(text.as_bytes())?;
    w.write_all(b"}\n")
}

// ---- events, written straight into a byte buffer ----------------------------------------------------

/// `{"ph":PH,"pid":PID,"tid":TID`: a metadata event's start (`Texts::start` starts the others).
fn start(b: &mut Vec<u8>, ph: &str, pid: u32, tid: u32) {
    b.extend_from_slice(b"{\"ph\":\"");
    b.extend_from_slice(ph.as_bytes());
    ids(b, pid, tid);
}

/// `","pid":PID,"tid":TID`, which closes an event's `ph` and names its track.
fn ids(b: &mut Vec<u8>, pid: u32, tid: u32) {
    b.extend_from_slice(b"\",\"pid\":");
    int(b, pid);
    b.extend_from_slice(b",\"tid\":");
    int(b, tid);
}

fn int(b: &mut Vec<u8>, v: impl itoa::Integer) {
    b.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// `,"K":` for a key this file spells (a plain identifier: nothing to escape).
#[inline]
fn key(b: &mut Vec<u8>, k: &'static str) {
    debug_assert!(is_plain(k), "{k}");
    b.extend_from_slice(b",\"");
    b.extend_from_slice(k.as_bytes());
    b.extend_from_slice(b"\":");
}

/// `,"K":` then a JSON string.
fn key_str(b: &mut Vec<u8>, k: &'static str, v: &str) {
    key(b, k);
    escape_into(v, b);
}

/// `,"K":` then a `'static` text as a JSON string, escaped once a unit (`Texts::put`).
#[inline]
fn key_text(b: &mut Vec<u8>, k: &'static str, v: &'static str, texts: &mut Texts) {
    key(b, k);
    texts.put(b, v);
}

/// `,"K":` then microseconds with three decimals.
fn key_us(b: &mut Vec<u8>, k: &'static str, ns: u64) {
    key(b, k);
    int(b, ns / 1000);
    let r = ns % 1000;
    let digit = |d: u64| b'0' + d as u8;
    b.extend_from_slice(&[b'.', digit(r / 100), digit(r / 10 % 10), digit(r % 10)]);
}

fn meta_str(b: &mut Vec<u8>, pid: u32, tid: u32, name: &str, key: &str, value: &str) {
    start(b, "M", pid, tid);
    key_str(b, "name", name);
    b.extend_from_slice(b",\"args\":{\"");
    b.extend_from_slice(key.as_bytes());
    b.extend_from_slice(b"\":");
    escape_into(value, b);
    b.extend_from_slice(b"}}");
}

fn meta_num(b: &mut Vec<u8>, pid: u32, tid: u32, name: &str, v: u64) {
    start(b, "M", pid, tid);
    key_str(b, "name", name);
    b.extend_from_slice(b",\"args\":{\"sort_index\":");
    int(b, v);
    b.extend_from_slice(b"}}");
}

/// The `args` object, built in place: `,"args":{` … `}`.
struct Args<'b> {
    b: &'b mut Vec<u8>,
    any: bool,
}

impl<'b> Args<'b> {
    fn open(b: &'b mut Vec<u8>) -> Args<'b> {
        b.extend_from_slice(b",\"args\":");
        Args { b, any: false }
    }
    /// `{"K":` or `,"K":` for a key this file spells (nothing to escape).
    #[inline]
    fn key(&mut self, k: &'static str) {
        debug_assert!(is_plain(k), "{k}");
        self.b
            .extend_from_slice(if self.any { b",\"" } else { b"{\"" });
        self.any = true;
        self.b.extend_from_slice(k.as_bytes());
        self.b.extend_from_slice(b"\":");
    }
    fn str(&mut self, k: &'static str, v: &str) {
        self.key(k);
        escape_into(v, self.b);
    }
    /// A `'static` text (a name of the model), escaped once a unit (`Texts::put`).
    fn text(&mut self, k: &'static str, v: &'static str, texts: &mut Texts) {
        self.key(k);
        texts.put(self.b, v);
    }
    fn num(&mut self, k: &'static str, v: impl itoa::Integer) {
        self.key(k);
        int(self.b, v);
    }
    /// `v` as a JSON string of its hex digits (`"0x…"`, lower case, as `{:#x}` prints it: nothing
    /// to escape).
    fn hex(&mut self, k: &'static str, v: u64) {
        self.key(k);
        let digits = (64 - v.leading_zeros()).div_ceil(4).max(1) as usize;
        let mut out = [0u8; 20];
        out[..3].copy_from_slice(b"\"0x");
        for (i, o) in out[3..3 + digits].iter_mut().enumerate() {
            *o = b"0123456789abcdef"[((v >> (4 * (digits - 1 - i))) & 15) as usize];
        }
        out[3 + digits] = b'"';
        self.b.extend_from_slice(&out[..4 + digits]);
    }
    /// Bytes already a JSON value.
    fn bytes(&mut self, k: &'static str, v: &[u8]) {
        self.key(k);
        self.b.extend_from_slice(v);
    }
    fn raw(&mut self, k: &'static str, v: &str) {
        self.key(k);
        self.b.extend_from_slice(v.as_bytes());
    }
    /// An NVTX mark's or range's category, colour (`#aarrggbb`) and payload (`payload` = its value,
    /// a JSON number except for extended payloads; `payload_type`).
    fn attrs(&mut self, x: &crate::facts::model::Attrs, texts: &mut Texts) {
        if let Some(c) = x.category {
            self.text("category", c.as_str(), texts);
        }
        if let Some(c) = x.color_hex() {
            self.str("color", &c);
        }
        if let Some(p) = &x.payload {
            let (ty, v) = p.parts();
            match p {
                crate::facts::model::Payload::Ext { .. } => self.str("payload", &v),
                // Non-finite floats are not JSON numbers.
                crate::facts::model::Payload::Double(f) if !f.is_finite() => {
                    self.str("payload", &v)
                }
                crate::facts::model::Payload::Float(f) if !f.is_finite() => self.str("payload", &v),
                _ => self.raw("payload", &v),
            }
            self.str("payload_type", ty);
        }
    }
    fn close(self) {
        if !self.any {
            self.b.push(b'{');
        }
        self.b.push(b'}');
    }
}

/// The texts a unit writes, each escaped once a unit rather than once an event: the last stream
/// label (a stream's track shows one stream), and the model's `'static` names (APIs, kernels,
/// classes, NVTX names), most of every event's bytes.
#[derive(Default)]
struct Texts {
    stream: Option<StreamId>,
    label: Vec<u8>,
    /// Direct-mapped by the text's address: (address, length, where its JSON lies in `json`). A
    /// `'static` text is never freed nor changed, so its address and length name its contents.
    slots: Vec<(usize, usize, u32, u32)>,
    json: Vec<u8>,
    /// `","pid":P,"tid":T` for the unit's track (every event of a unit is on one), made once.
    track: Option<(u32, u32)>,
    ids: Vec<u8>,
    /// The call of the last span drawn with a flow (`ProcLayout::span_bind`'s hint).
    near: usize,
}

/// `Texts`' slots (a power of two): more than the names a unit of 4 Ki events shows, as a rule.
const TEXT_SLOTS: usize = 256;

/// `Texts::json` is cleared past this size (every slot forgotten): its memory stays bounded when
/// texts that share a slot keep displacing each other.
const TEXT_BYTES: usize = 1 << 16;

impl Texts {
    /// `,\n` then `start`'s bytes, the ids formatted once a track.
    #[inline]
    fn start(&mut self, b: &mut Vec<u8>, ph: &str, pid: u32, tid: u32) {
        if self.track != Some((pid, tid)) {
            self.ids.clear();
            ids(&mut self.ids, pid, tid);
            self.track = Some((pid, tid));
        }
        b.extend_from_slice(b",\n{\"ph\":\"");
        b.extend_from_slice(ph.as_bytes());
        b.extend_from_slice(&self.ids);
    }

    fn label(&mut self, pl: &ProcLayout, s: &StreamId) -> &[u8] {
        if self.stream.as_ref() != Some(s) {
            self.label.clear();
            escape_into(&pl.p.stream_label(s), &mut self.label);
            self.stream = Some(*s);
        }
        &self.label
    }

    /// Appends `s` as a JSON string literal (`escape_into`'s bytes), escaped the first time it is
    /// seen.
    #[inline]
    fn put(&mut self, b: &mut Vec<u8>, s: &'static str) {
        if self.slots.is_empty() {
            self.slots = vec![(0, 0, 0, 0); TEXT_SLOTS];
        }
        let at = s.as_ptr() as usize;
        let i = ((at >> 3) ^ (at >> 11)) & (TEXT_SLOTS - 1);
        let (a, n, lo, hi) = self.slots[i];
        if a == at && n == s.len() {
            b.extend_from_slice(&self.json[lo as usize..hi as usize]);
            return;
        }
        if self.json.len() > TEXT_BYTES {
            self.json.clear();
            self.slots.fill((0, 0, 0, 0));
        }
        let lo = self.json.len();
        escape_into(s, &mut self.json);
        let hi = self.json.len();
        b.extend_from_slice(&self.json[lo..hi]);
        // A text too long for the slot's offsets (over 4 GB) is written, not kept.
        if let (Ok(lo), Ok(hi)) = (u32::try_from(lo), u32::try_from(hi)) {
            self.slots[i] = (at, s.len(), lo, hi);
        }
    }
}

fn slice(b: &mut Vec<u8>, pl: &ProcLayout, tid: u32, it: Item, texts: &mut Texts) {
    let pid = pl.pid;
    let (begin, end) = pl.times.of(it);
    texts.start(b, "X", pid, tid);
    key_us(b, "ts", begin);
    key_us(b, "dur", end - begin);
    // The call -> device flow's binding, and whether it goes out (a call) or in (a span).
    let mut bind = None;
    let mut a = match it.what() {
        What::Call(i) => {
            let c = &pl.p.calls[i];
            key_text(b, "name", c.api.as_str(), texts);
            key_text(b, "cat", c.class.map_or("call", Class::name), texts);
            let mut a = Args::open(b);
            a.num("seq", c.seq);
            a.num("result", c.result);
            a.text("layer", c.layer_name(), texts);
            if let Some(k) = c.kernel {
                a.text("kernel", k.as_str(), texts);
            }
            if let Some(s) = c.stream() {
                a.hex("stream", s);
            }
            bind = pl.call_bind(i).map(|id| (id, "flow_out"));
            a
        }
        What::Range(i) => {
            let r = &pl.p.ranges[i];
            key_text(b, "name", r.name.as_str(), texts);
            key_text(b, "cat", "nvtx", texts);
            let mut a = Args::open(b);
            if let Some(d) = r.domain {
                a.text("domain", d.as_str(), texts);
            }
            a.num("level", r.level);
            a.attrs(&r.attrs, texts);
            a
        }
        What::Span(i) => {
            let d = &pl.p.device[i];
            key_text(b, "name", d.name.as_str(), texts);
            key_text(b, "cat", d.kind.name(), texts);
            let mut a = Args::open(b);
            if matches!(d.kind, DeviceKind::Memcpy | DeviceKind::Memset) {
                a.num("bytes", d.bytes);
            }
            a.num("bound_ns", d.bound_ns);
            if let Some(seq) = d.call.get() {
                a.num("call_seq", seq);
            }
            a.bytes("stream", texts.label(pl, &d.stream.get()));
            bind = pl.span_bind(i, &mut texts.near).map(|id| (id, "flow_in"));
            a
        }
    };
    if pl.times.open(it) {
        a.raw("open", "true");
    }
    a.close();
    if let Some((id, way)) = bind {
        key(b, "bind_id");
        int(b, id);
        key(b, way);
        b.extend_from_slice(b"true");
    }
    b.push(b'}');
    // The causal graph's dependencies: named by edge type, categorised by evidence class.
    // Most slices have none: one bit spares them the two searches.
    if pl.has_deps(it.what()) {
        for d in pl.deps_from(it.what()) {
            dep_flow(b, "s", pid, tid, begin, d, texts);
        }
        for d in pl.deps_into(it.what()) {
            dep_flow(b, "f", pid, tid, begin, d, texts);
        }
    }
}

/// A dependency's flow event: `s` at the slice depended on, `f` at the dependent one (bound to it).
fn dep_flow(
    b: &mut Vec<u8>,
    ph: &str,
    pid: u32,
    tid: u32,
    ns: u64,
    d: &super::Dep,
    texts: &mut Texts,
) {
    let cat = match d.evidence {
        "inferred" => "dependency,inferred",
        "observed" => "dependency,observed",
        _ => "dependency,explicit",
    };
    texts.start(b, ph, pid, tid);
    key_us(b, "ts", ns);
    b.extend_from_slice(b",\"id\":");
    int(b, d.id);
    key_text(b, "name", d.kind, texts);
    key_text(b, "cat", cat, texts);
    if ph == "f" {
        b.extend_from_slice(b",\"bp\":\"e\"");
    }
    b.push(b'}');
}

fn mark(b: &mut Vec<u8>, pl: &ProcLayout, tid: u32, m: usize, texts: &mut Texts) {
    let m = &pl.p.marks[m];
    texts.start(b, "i", pl.pid, tid);
    key_str(b, "s", "t");
    key_us(b, "ts", m.ns);
    key_text(b, "name", m.name.as_str(), texts);
    key_text(b, "cat", "nvtx", texts);
    let mut a = Args::open(b);
    if let Some(d) = m.domain {
        a.text("domain", d.as_str(), texts);
    }
    a.attrs(&m.attrs, texts);
    a.close();
    b.push(b'}');
}

/// Appends `s` as a JSON string literal (`escape`), straight into bytes: text with nothing to escape
/// (nearly every name) is copied as it is.
fn escape_into(s: &str, b: &mut Vec<u8>) {
    if is_plain(s) {
        b.push(b'"');
        b.extend_from_slice(s.as_bytes());
        b.push(b'"');
    } else {
        let mut out = String::with_capacity(s.len() + 8);
        escape(s, &mut out);
        b.extend_from_slice(out.as_bytes());
    }
}

/// Whether `s` is its own JSON string's contents (no byte `escape` changes).
#[inline]
fn is_plain(s: &str) -> bool {
    !s.bytes().any(|c| SPECIAL[c as usize])
}

/// The bytes `escape` may change: controls, `"`, `\\`, `<`, `>`, `&`, DEL, and 0xE2 (the first byte
/// of U+2028 and U+2029). A table: one load a byte, where the comparisons were a chain.
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    let mut k = 0;
    let more = [b'"', b'\\', b'<', b'>', b'&', 0x7f, 0xe2];
    while k < more.len() {
        t[more[k] as usize] = true;
        k += 1;
    }
    t
};

/// Appends `s` as a JSON string literal, with HTML-significant characters escaped as well.
pub(crate) fn escape(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' | '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Escapes `<`, `>`, `&`, U+2028 and U+2029 in serialized JSON text (where they can only be inside
/// strings).
fn harden(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(ns: u64) -> String {
        let mut b = Vec::new();
        key_us(&mut b, "t", ns);
        String::from_utf8(b).unwrap()[",\"t\":".len()..].to_string()
    }

    /// A unit keeps `UNIT` slices for the names a shim writes, and fewer for a hostile ring's, each
    /// unit's texts then near 4 MiB at most (two texts of the longest a slice), never no slice.
    #[test]
    fn units_are_cut_by_the_longest_text() {
        assert_eq!(unit_slices(0), UNIT);
        assert_eq!(unit_slices(4 << 10), UNIT);
        for longest in [(4 << 10) + 1, 300_000, 16 << 20, u32::MAX as usize] {
            let n = unit_slices(longest);
            assert!((1..UNIT).contains(&n), "{longest}: {n}");
            assert!(n == 1 || n * 2 * longest <= 4 << 20, "{longest}: {n}");
        }
    }

    #[test]
    fn microseconds_keep_every_nanosecond() {
        assert_eq!(us(0), "0.000");
        assert_eq!(us(7), "0.007");
        assert_eq!(us(1_234_567), "1234.567");
        assert_eq!(us(999), "0.999");
        assert_eq!(
            us(u64::MAX),
            format!("{}.{:03}", u64::MAX / 1000, u64::MAX % 1000)
        );
    }

    #[test]
    fn the_fast_path_escapes_like_the_slow_one() {
        for s in [
            "plain",
            "a\"b",
            "<x>",
            "tab\t",
            "caf\u{e9}",
            "\u{2028}",
            "\u{2026}",
            "\u{7f}",
            "a\\b",
            "x&y>z",
            "\u{1f}\u{0}",
            "\u{2029}",
            "\u{80}\u{ff}",
        ] {
            let mut fast = Vec::new();
            escape_into(s, &mut fast);
            let mut slow = String::new();
            escape(s, &mut slow);
            assert_eq!(String::from_utf8(fast).unwrap(), slow, "{s:?}");
        }
    }

    /// A unit's cached texts write what `escape_into` writes, for texts that need escaping, texts
    /// at one address with different lengths, more texts than slots (so slots are displaced and
    /// the cache is cleared past its size), and texts seen again after that.
    #[test]
    fn cached_texts_are_the_escaped_texts() {
        let leak = |t: String| -> &'static str { Box::leak(t.into_boxed_str()) };
        let long: &'static str = leak("k".repeat(5000));
        let mut texts: Vec<&'static str> = vec!["cudaLaunchKernel", "a\"b<c>", &long[..1], long];
        texts.extend((0..3000).map(|i| leak(format!("kernel_{i}\u{2028}{}", "x".repeat(i % 40)))));
        let mut cache = Texts::default();
        for round in 0..3 {
            for (k, &t) in texts
                .iter()
                .enumerate()
                .filter(|(k, _)| k % (round + 1) == 0)
            {
                let (mut cached, mut plain) = (b"[".to_vec(), b"[".to_vec());
                cache.put(&mut cached, t);
                escape_into(t, &mut plain);
                assert_eq!(cached, plain, "text {k}, round {round}");
            }
            assert!(cache.json.len() <= TEXT_BYTES + 2 * 5000 + 64);
        }
    }

    #[test]
    fn stream_handles_are_lower_case_hex_as_format_prints_them() {
        for v in [0, 1, 9, 10, 0x5000, 0xdead_beef, 1 << 63, u64::MAX] {
            let mut b = Vec::new();
            let mut a = Args::open(&mut b);
            a.hex("s", v);
            a.close();
            assert_eq!(
                String::from_utf8(b).unwrap(),
                format!(",\"args\":{{\"s\":\"{v:#x}\"}}")
            );
        }
    }

    #[test]
    fn escaped_strings_parse_back_to_the_same_text_and_hide_markup() {
        for s in [
            "<img src=x onerror=alert(1)>",
            "a\"b\\c\n\t\u{1}\u{7f}",
            "x\u{2028}y\u{2029}&amp;</script>",
            "ünïcödé ✓",
        ] {
            let mut out = String::new();
            escape(s, &mut out);
            assert!(!out.contains('<') && !out.contains('>') && !out.contains('&'));
            let back: String = serde_json::from_str(&out).unwrap();
            assert_eq!(back, s);
            let h = harden(&serde_json::to_string(s).unwrap());
            assert_eq!(serde_json::from_str::<String>(&h).unwrap(), s);
            assert!(!h.contains('<'));
        }
    }
}
