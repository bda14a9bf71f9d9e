//! The Chrome Trace Event Format (JSON): `{"traceEvents": [...], "displayTimeUnit": "ns", "metadata": {...}}`.
//!
//! * one pid per process (`process_name` metadata: exe basename and pid); one tid per host thread
//!   (`thread_name`), its calls and NVTX ranges as complete events (`"ph":"X"`), its marks as
//!   thread-scoped instants (`"ph":"i"`);
//! * one synthetic tid per device stream (from `SYNTHETIC_TID_BASE` up, beyond any Linux tid, unique in
//!   the file), sorted after the host threads (`thread_sort_index`), its spans as complete events;
//!   extra synthetic tids for slices that do not nest on their track (see the module above);
//! * one flow per device span tied to a call: `"ph":"s"` on the call's thread at the call's begin, and
//!   `"ph":"f"`, `"bp":"e"` on the span at its begin, both with the flow's id (unique in the file), name
//!   `device work` and category `flow`;
//! * `ts` and `dur` in microseconds, written with exactly three decimals so they keep the capture's
//!   nanoseconds (a JSON number, printed from integers, never rounded through a float);
//! * strings are JSON-escaped, and `<`, `>`, `&`, U+2028 and U+2029 as `\u` escapes too, so a kernel name
//!   stays inert even where the JSON is embedded in an HTML page (trace2html).
//!
//! The top-level `metadata` object says which capture this is, that times are CLOCK_MONOTONIC, and per
//! process the device-timing backend, the largest clock-conversion bound of its spans and how many
//! device intervals were left out for want of a host time.

use super::{Item, Layout, ProcLayout, What};
use serde_json::json;
use std::fmt::Write as _;
use std::io::{self, Write};

/// First synthetic tid (device streams and overlap tracks): above Linux's largest pid_max (2^22).
pub const SYNTHETIC_TID_BASE: u32 = 1 << 30;

/// Name and category of the flow events.
pub const FLOW_NAME: &str = "device work";
pub const FLOW_CAT: &str = "flow";

pub(crate) fn write(layout: &Layout, capture: &str, w: &mut impl Write) -> io::Result<()> {
    let mut out = Events {
        w,
        first: true,
        buf: String::with_capacity(512),
    };
    out.w.write_all(b"{\"traceEvents\":[\n")?;
    let mut next_synthetic = SYNTHETIC_TID_BASE;
    let mut synthetic = || {
        let t = next_synthetic;
        next_synthetic += 1;
        t
    };
    let mut device_tids: Vec<Vec<serde_json::Value>> = Vec::new();
    for (pi, pl) in layout.drawn().enumerate() {
        let pid = pl.p.pid;
        out.meta(
            pid,
            0,
            "process_name",
            "name",
            &format!("{} (pid {pid})", pl.exe_name()),
        )?;
        out.meta_num(pid, 0, "process_sort_index", pi as u64)?;
        let mut sort = 0u64;
        for t in &pl.threads {
            for (li, lane) in t.lanes.iter().enumerate() {
                let tid = if li == 0 { t.tid } else { synthetic() };
                out.meta(pid, tid, "thread_name", "name", &pl.thread_name(t.tid, li))?;
                out.meta_num(pid, tid, "thread_sort_index", sort)?;
                sort += 1;
                out.lane(pl, tid, lane)?;
                if li == 0 {
                    for &m in &t.marks {
                        out.mark(pl, tid, m)?;
                    }
                }
            }
        }
        let mut tracks = Vec::new();
        for s in &pl.streams {
            for (li, lane) in s.lanes.iter().enumerate() {
                let tid = synthetic();
                let name = ProcLayout::stream_name(&s.stream, li);
                out.meta(pid, tid, "thread_name", "name", &name)?;
                out.meta_num(pid, tid, "thread_sort_index", sort)?;
                sort += 1;
                out.lane(pl, tid, lane)?;
                tracks.push(json!({"tid": tid, "name": name}));
            }
        }
        device_tids.push(tracks);
    }
    out.w
        .write_all(b"\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":")?;
    let processes: Vec<serde_json::Value> = layout
        .drawn()
        .zip(device_tids)
        .map(|(pl, tracks)| {
            json!({
                "pid": pl.p.pid,
                "ppid": pl.p.ppid,
                "exe": pl.p.exe,
                "host": pl.p.host,
                "backend": pl.p.backend,
                "clock_bound_max_ns": pl.bound_max_ns,
                "device_spans": pl.p.device.len(),
                "unplaced_device_intervals": pl.p.unplaced_device,
                "device_tracks": tracks,
            })
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
    out.w.write_all(text.as_bytes())?;
    out.w.write_all(b"}\n")
}

struct Events<'w, W: Write> {
    w: &'w mut W,
    first: bool,
    buf: String,
}

impl<W: Write> Events<'_, W> {
    /// Starts an event object in `buf`: `{"ph":..,"pid":..,"tid":..`.
    fn start(&mut self, ph: &str, pid: u32, tid: u32) {
        self.buf.clear();
        if !self.first {
            self.buf.push_str(",\n");
        }
        self.first = false;
        let _ = write!(self.buf, "{{\"ph\":\"{ph}\",\"pid\":{pid},\"tid\":{tid}");
    }

    fn key_str(&mut self, k: &str, v: &str) {
        let _ = write!(self.buf, ",\"{k}\":");
        escape(v, &mut self.buf);
    }

    fn key_raw(&mut self, k: &str, v: impl std::fmt::Display) {
        let _ = write!(self.buf, ",\"{k}\":{v}");
    }

    fn finish(&mut self) -> io::Result<()> {
        self.buf.push('}');
        self.w.write_all(self.buf.as_bytes())
    }

    fn meta(&mut self, pid: u32, tid: u32, name: &str, key: &str, value: &str) -> io::Result<()> {
        self.start("M", pid, tid);
        self.key_str("name", name);
        let _ = write!(self.buf, ",\"args\":{{\"{key}\":");
        escape(value, &mut self.buf);
        self.buf.push('}');
        self.finish()
    }

    fn meta_num(&mut self, pid: u32, tid: u32, name: &str, v: u64) -> io::Result<()> {
        self.start("M", pid, tid);
        self.key_str("name", name);
        let _ = write!(self.buf, ",\"args\":{{\"sort_index\":{v}}}");
        self.finish()
    }

    fn lane(&mut self, pl: &ProcLayout, tid: u32, lane: &[Item]) -> io::Result<()> {
        // Lanes are in begin order, enclosing slice first: the order viewers with a stable sort need.
        for it in lane {
            self.slice(pl, tid, it)?;
        }
        Ok(())
    }

    fn slice(&mut self, pl: &ProcLayout, tid: u32, it: &Item) -> io::Result<()> {
        let pid = pl.p.pid;
        self.start("X", pid, tid);
        self.key_raw("ts", Us(it.begin));
        self.key_raw("dur", Us(it.end - it.begin));
        let mut args = Args::default();
        let flows: &[u64] = match it.what {
            What::Call(i) => {
                let c = &pl.p.calls[i];
                self.key_str("name", &c.api);
                self.key_str("cat", c.class.unwrap_or("call"));
                args.num("seq", c.seq);
                args.num("result", c.result);
                args.str("layer", c.layer);
                if let Some(k) = &c.kernel {
                    args.str("kernel", k);
                }
                if let Some(s) = c.stream {
                    args.str("stream", &format!("{s:#x}"));
                }
                pl.call_flows.get(&i).map(Vec::as_slice).unwrap_or(&[])
            }
            What::Range(i) => {
                let r = &pl.p.ranges[i];
                self.key_str("name", &r.name);
                self.key_str("cat", "nvtx");
                if let Some(d) = &r.domain {
                    args.str("domain", d);
                }
                args.num("level", r.level);
                &[]
            }
            What::Span(i) => {
                let d = &pl.p.device[i];
                self.key_str("name", &d.name);
                self.key_str("cat", d.kind);
                if matches!(d.kind, "memcpy" | "memset") {
                    args.num("bytes", d.bytes);
                }
                args.num("bound_ns", d.bound_ns);
                if let Some(seq) = d.call {
                    args.num("call_seq", seq);
                }
                args.str("stream", &d.stream.label());
                &[]
            }
        };
        if it.open {
            args.raw("open", "true");
        }
        let _ = write!(self.buf, ",\"args\":{}", args.finish());
        self.finish()?;
        for &id in flows {
            self.flow("s", pid, tid, it.begin, id)?;
        }
        if let What::Span(i) = it.what {
            if let Some(id) = pl.span_flow[i] {
                self.flow("f", pid, tid, it.begin, id)?;
            }
        }
        Ok(())
    }

    fn flow(&mut self, ph: &str, pid: u32, tid: u32, ns: u64, id: u64) -> io::Result<()> {
        self.start(ph, pid, tid);
        self.key_raw("ts", Us(ns));
        self.key_raw("id", id);
        self.key_str("name", FLOW_NAME);
        self.key_str("cat", FLOW_CAT);
        if ph == "f" {
            self.key_str("bp", "e");
        }
        self.finish()
    }

    fn mark(&mut self, pl: &ProcLayout, tid: u32, m: usize) -> io::Result<()> {
        let m = &pl.p.marks[m];
        self.start("i", pl.p.pid, tid);
        self.key_str("s", "t");
        self.key_raw("ts", Us(m.ns));
        self.key_str("name", &m.name);
        self.key_str("cat", "nvtx");
        let mut args = Args::default();
        if let Some(d) = &m.domain {
            args.str("domain", d);
        }
        let _ = write!(self.buf, ",\"args\":{}", args.finish());
        self.finish()
    }
}

/// Nanoseconds written as microseconds with three decimals.
struct Us(u64);

impl std::fmt::Display for Us {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

#[derive(Default)]
struct Args(String);

impl Args {
    fn sep(&mut self) {
        self.0.push(if self.0.is_empty() { '{' } else { ',' });
    }
    fn str(&mut self, k: &str, v: &str) {
        self.sep();
        escape(k, &mut self.0);
        self.0.push(':');
        escape(v, &mut self.0);
    }
    fn num(&mut self, k: &str, v: impl std::fmt::Display) {
        self.raw(k, &v.to_string());
    }
    fn raw(&mut self, k: &str, v: &str) {
        self.sep();
        escape(k, &mut self.0);
        self.0.push(':');
        self.0.push_str(v);
    }
    fn finish(mut self) -> String {
        if self.0.is_empty() {
            self.0.push('{');
        }
        self.0.push('}');
        self.0
    }
}

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

    #[test]
    fn microseconds_keep_every_nanosecond() {
        assert_eq!(Us(0).to_string(), "0.000");
        assert_eq!(Us(7).to_string(), "0.007");
        assert_eq!(Us(1_234_567).to_string(), "1234.567");
        assert_eq!(
            Us(u64::MAX).to_string(),
            format!("{}.{:03}", u64::MAX / 1000, u64::MAX % 1000)
        );
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
