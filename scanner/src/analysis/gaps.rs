//! Launch gaps: `causeway report --gaps`. How long the device sat idle between one piece of work and the
//! next, per stream and for the whole process, and what the host was doing during the longest waits. It
//! reads only the timeline model (`crate::model`); `--gaps` may be given with or without `--steps`, and
//! always looks at the whole capture (not only inside steps).
//!
//! **Tracks.** One per stream (the span's `stream`), and `all streams`: every device span of the process
//! together. The capture does not say which device a span ran on, so the process-wide track stands for
//! "the device" (on a multi-GPU process it is all of its devices together).
//!
//! **Gaps.** On a track, spans are taken in order of begin (then end). For each span after the first,
//! `reach` is the latest end of all earlier spans of the track; if the span begins at or after `reach`,
//! `begin − reach` is a gap (0 for back-to-back work), else the span overlaps earlier work: it is counted in
//! `overlaps`, and `overlap_ns` adds min(reach, end) − begin. On one stream overlaps come only from
//! measurement (the events backend's spans include waiting; clock conversion error); on `all streams`
//! they are concurrency, and a gap there is time when no stream of the process had work running.
//! Percentiles are nearest rank (p99.9: rank ⌈0.999·n⌉).
//!
//! **Uncertainty.** A gap is the difference of two span edges, each off by at most its span's bound:
//! each gap's own `bound_ns` is the sum of its two spans' bounds; a track's `bound_ns` is its largest span
//! bound (every gap on it is within 2× that).
//!
//! **Largest gaps.** The `LARGEST` longest gaps (> 0) of `all streams`, longest first (ties: earlier
//! first), each with the span before and after it, and the host activity in it: the outermost (depth 0)
//! calls of any thread overlapping the gap (`calls_total`; the `CALLS_SHOWN` with the most time inside
//! the gap are listed, with API, thread and duration), `host_in_calls_ns` (the length of the union of
//! those calls' parts inside the gap: time at least one thread was inside a CUDA call), and the NVTX
//! ranges overlapping the gap (`RANGES_SHOWN` listed, most time inside the gap first, innermost first on
//! ties).

use crate::facts::model::{DeviceSpan, ProcessTimeline, StreamId};
use crate::util::intervals::{measure, union};
use serde::Serialize;
use std::collections::BTreeMap;

/// How many of the largest gaps are described.
pub const LARGEST: usize = 5;
/// Calls listed per large gap.
pub const CALLS_SHOWN: usize = 8;
/// NVTX ranges listed per large gap.
pub const RANGES_SHOWN: usize = 5;

#[derive(Debug, Clone, Serialize)]
pub struct ProcessGaps {
    pub pid: u32,
    pub exe: String,
    pub backend: String,
    /// Whether the process has device spans on the host clock (else there is nothing to measure).
    pub device_timed: bool,
    /// Begin of the process's first device span (0 without spans): the origin the text form uses.
    pub first_span_ns: u64,
    /// `all streams` first, then one per stream in stream order.
    pub tracks: Vec<Track>,
    /// The largest gaps of `all streams`, longest first.
    pub largest: Vec<Gap>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Track {
    /// `all streams`, or the stream's label.
    pub track: String,
    /// `None` for `all streams`.
    pub stream: Option<StreamId>,
    pub spans: u64,
    pub gaps: GapStats,
    /// Spans that began before earlier work of the track had ended.
    pub overlaps: u64,
    pub overlap_ns: u64,
    /// The largest span bound on the track.
    pub bound_ns: u64,
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct GapStats {
    /// Gaps (≥ 0) measured: spans − 1 − overlaps.
    pub count: u64,
    pub total_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SpanRef {
    pub kind: &'static str,
    pub name: String,
    pub stream: String,
    pub begin_ns: u64,
    pub end_ns: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Gap {
    pub begin_ns: u64,
    pub end_ns: u64,
    pub gap_ns: u64,
    /// The two spans' bounds added: how far `gap_ns` may be off.
    pub bound_ns: u64,
    /// The span that ended last before the gap.
    pub before: SpanRef,
    /// The span that began at its end.
    pub after: SpanRef,
    /// Time in the gap with at least one thread inside an outermost CUDA call.
    pub host_in_calls_ns: u64,
    /// Outermost calls of any thread overlapping the gap.
    pub calls_total: u64,
    pub calls: Vec<HostCall>,
    pub ranges_total: u64,
    pub ranges: Vec<HostRange>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HostCall {
    pub api: String,
    pub class: Option<&'static str>,
    pub tid: u32,
    pub begin_ns: u64,
    /// `None`: the call never returned.
    pub end_ns: Option<u64>,
    pub duration_ns: Option<u64>,
    /// The part of the call inside the gap.
    pub in_gap_ns: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct HostRange {
    pub name: String,
    pub domain: Option<String>,
    pub tid: u32,
    pub level: u32,
    pub begin_ns: u64,
    pub end_ns: Option<u64>,
    pub in_gap_ns: u64,
}

/// Nearest-rank percentile in per mille (500 = median, 999 = p99.9) of sorted `v`; 0 when empty.
pub fn permille(sorted: &[u64], p: u64) -> u64 {
    let n = sorted.len() as u64;
    if n == 0 {
        return 0;
    }
    let rank = (p * n).div_ceil(1000).clamp(1, n);
    sorted[(rank - 1) as usize]
}

/// One gap as found on a track: (begin = reach, end = next begin, index of the span that set reach,
/// index of the next span), indices into the track's spans.
type RawGap = (u64, u64, usize, usize);

/// Gaps and overlaps of spans sorted by (begin, end).
fn walk(spans: &[&DeviceSpan]) -> (Vec<RawGap>, u64, u64) {
    let mut gaps = Vec::new();
    let (mut overlaps, mut overlap_ns) = (0u64, 0u64);
    let Some(first) = spans.first() else {
        return (gaps, 0, 0);
    };
    let (mut reach, mut at) = (first.end_ns, 0usize);
    for (i, s) in spans.iter().enumerate().skip(1) {
        if s.begin_ns >= reach {
            gaps.push((reach, s.begin_ns, at, i));
        } else {
            overlaps += 1;
            overlap_ns += reach.min(s.end_ns) - s.begin_ns;
        }
        if s.end_ns > reach {
            reach = s.end_ns;
            at = i;
        }
    }
    (gaps, overlaps, overlap_ns)
}

fn track(label: String, stream: Option<StreamId>, spans: &[&DeviceSpan]) -> (Track, Vec<RawGap>) {
    let (gaps, overlaps, overlap_ns) = walk(spans);
    let mut len: Vec<u64> = gaps.iter().map(|g| g.1 - g.0).collect();
    len.sort_unstable();
    let t = Track {
        track: label,
        stream,
        spans: spans.len() as u64,
        gaps: GapStats {
            count: len.len() as u64,
            total_ns: len.iter().sum(),
            p50_ns: permille(&len, 500),
            p99_ns: permille(&len, 990),
            p999_ns: permille(&len, 999),
            max_ns: len.last().copied().unwrap_or(0),
        },
        overlaps,
        overlap_ns,
        bound_ns: spans.iter().map(|s| s.bound_ns).max().unwrap_or(0),
    };
    (t, gaps)
}

fn span_ref(p: &ProcessTimeline, s: &DeviceSpan) -> SpanRef {
    SpanRef {
        kind: s.kind.name(),
        name: s.name.to_string(),
        stream: p.stream_label(&s.stream.get()),
        begin_ns: s.begin_ns,
        end_ns: s.end_ns,
    }
}

/// What the host did in [lo, hi).
fn host_activity(p: &ProcessTimeline, lo: u64, hi: u64) -> (u64, u64, Vec<HostCall>) {
    let mut calls: Vec<HostCall> = p
        .calls
        .iter()
        .filter(|c| c.depth == 0)
        .filter_map(|c| {
            let end = c.end_ns.get().unwrap_or(u64::MAX);
            let (b, e) = (c.begin_ns.max(lo), end.min(hi));
            (c.begin_ns < hi && end > lo && e > b).then(|| HostCall {
                api: c.api.to_string(),
                class: c.class.map(causeway_ring::Class::name),
                tid: c.tid,
                begin_ns: c.begin_ns,
                end_ns: c.end_ns.get(),
                duration_ns: c.end_ns.get().map(|e| e.saturating_sub(c.begin_ns)),
                in_gap_ns: e - b,
            })
        })
        .collect();
    let busy = measure(&union(
        calls
            .iter()
            .map(|c| (c.begin_ns.max(lo), c.end_ns.unwrap_or(u64::MAX).min(hi)))
            .collect(),
    ));
    let total = calls.len() as u64;
    calls.sort_by(|a, b| {
        b.in_gap_ns
            .cmp(&a.in_gap_ns)
            .then(a.begin_ns.cmp(&b.begin_ns))
            .then(a.tid.cmp(&b.tid))
    });
    calls.truncate(CALLS_SHOWN);
    (busy, total, calls)
}

fn ranges_in(p: &ProcessTimeline, lo: u64, hi: u64) -> (u64, Vec<HostRange>) {
    let mut v: Vec<HostRange> = p
        .ranges
        .iter()
        .filter_map(|r| {
            let end = r.end_ns.unwrap_or(u64::MAX);
            let (b, e) = (r.begin_ns.max(lo), end.min(hi));
            (r.begin_ns < hi && end > lo && e > b).then(|| HostRange {
                name: r.name.to_string(),
                domain: r.domain.map(|d| d.to_string()),
                tid: r.tid,
                level: r.level,
                begin_ns: r.begin_ns,
                end_ns: r.end_ns,
                in_gap_ns: e - b,
            })
        })
        .collect();
    let total = v.len() as u64;
    v.sort_by(|a, b| {
        b.in_gap_ns
            .cmp(&a.in_gap_ns)
            .then(b.level.cmp(&a.level))
            .then(a.begin_ns.cmp(&b.begin_ns))
    });
    v.truncate(RANGES_SHOWN);
    (total, v)
}

/// The gaps view of one process.
pub fn process_gaps(p: &ProcessTimeline) -> ProcessGaps {
    let device_timed = !p.device.is_empty();
    let mut notes = Vec::new();
    if !device_timed {
        notes.push("no device intervals on the host clock: gaps need a level-3 capture".into());
    }
    if p.unplaced_device > 0 {
        notes.push(format!(
            "{} device interval{} without a host time left out: some gaps may be work that was not placed",
            p.unplaced_device,
            if p.unplaced_device == 1 { "" } else { "s" }
        ));
    }
    if device_timed && p.backend == "events" {
        notes.push(
            "events backend: a span starts when its stream reached the start event, so a gap on a \
             stream can hide inside the next span (gaps are lower bounds)"
                .into(),
        );
    }
    let all: Vec<&DeviceSpan> = p.device.iter().collect();
    let (all_track, raw) = track("all streams".into(), None, &all);
    let mut tracks = vec![all_track];
    let mut by_stream: BTreeMap<StreamId, Vec<&DeviceSpan>> = BTreeMap::new();
    for s in &p.device {
        by_stream.entry(s.stream.get()).or_default().push(s);
    }
    for (id, spans) in &by_stream {
        tracks.push(track(p.stream_label(id), Some(*id), spans).0);
    }
    let mut big: Vec<&RawGap> = raw.iter().filter(|g| g.1 > g.0).collect();
    big.sort_by(|a, b| (b.1 - b.0).cmp(&(a.1 - a.0)).then(a.0.cmp(&b.0)));
    big.truncate(LARGEST);
    let largest = big
        .into_iter()
        .map(|&(lo, hi, before, after)| {
            let (host_in_calls_ns, calls_total, calls) = host_activity(p, lo, hi);
            let (ranges_total, ranges) = ranges_in(p, lo, hi);
            Gap {
                begin_ns: lo,
                end_ns: hi,
                gap_ns: hi - lo,
                bound_ns: all[before].bound_ns + all[after].bound_ns,
                before: span_ref(p, all[before]),
                after: span_ref(p, all[after]),
                host_in_calls_ns,
                calls_total,
                calls,
                ranges_total,
                ranges,
            }
        })
        .collect();
    ProcessGaps {
        pid: p.pid,
        exe: p.exe.clone(),
        backend: p.backend.clone(),
        device_timed,
        first_span_ns: p.device.first().map_or(0, |s| s.begin_ns),
        tracks,
        largest,
        notes,
    }
}
