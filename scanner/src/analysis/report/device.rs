//! The report's device section (level 3): per kernel and per copy kind, how long the work ran on the
//! device and how long after its call it started; how the device clock was put on the host's and
//! how far off that can be; which intervals could not be tied to a call, and why.
//!
//! The causality check is the measured lower bound on clock-conversion error: a device interval cannot
//! start before the call that issued it began, so a negative launch→start latency means the conversion
//! is off by at least that much.

use crate::facts::anchors::{anchored, Anchors};
use crate::facts::device::{
    completed_interval, copy_kind_name, issuer, Issuer, GRAPH_ROW, MEMSET_ROW, UNKNOWN_KERNEL_ROW,
};
use crate::facts::placement::{timing, Timing};
use crate::read::decode::Entries;
use crate::util::fastmap::{HashMap, Rows};
use crate::util::rank::{append, percentiles, Samples};
use causeway_ring::clock::Converter;
use causeway_ring::layout::{entry_flags, DeviceKind};
use causeway_ring::{Class, Entry, Header};
use rayon::prelude::*;
use serde::Serialize;

/// `conversion` when every interval was on the ring's clock: CUPTI's timestamps put on our clock by
/// the timestamp callback the shim registers (`cuptiActivityRegisterTimestampCallback`).
pub const CONVERSION_CALLBACK: &str = "cupti-timestamp-callback";
/// `conversion` when every interval was converted through the events backend's anchors (see
/// `anchors.rs`), each with a bound.
pub const CONVERSION_ANCHORS: &str = "event-anchors";
/// `conversion` when no interval was on the ring's clock: durations only.
pub const CONVERSION_NONE: &str = "unconverted";
/// `conversion` when the intervals were converted in more than one way (or some not at all).
pub const CONVERSION_MIXED: &str = "mixed";

/// Device intervals that could not be tied to the call that issued them, by reason.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Unassociated {
    /// `no_call + call_not_in_capture + wrong_class`.
    pub total: u64,
    /// The backend tied the work to no call (`a0` = `NO_CALL`): work the program issued outside a
    /// traced call, or the backend lost the correlation.
    pub no_call: u64,
    /// `a0` names a sequence number whose entry is not in the capture: overwritten, dropped, torn.
    pub call_not_in_capture: u64,
    /// `a0` names an entry that is not a launch, copy, memset or graph-launch call.
    pub wrong_class: u64,
}

impl Unassociated {
    fn absorb(&mut self, o: &Unassociated) {
        self.total += o.total;
        self.no_call += o.no_call;
        self.call_not_in_capture += o.call_not_in_capture;
        self.wrong_class += o.wrong_class;
    }
}

/// How device times were put on the host clock, and how far that can be trusted.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct DeviceClock {
    /// `cupti-timestamp-callback` (all intervals on the ring's clock), `event-anchors` (all converted
    /// through the events backend's anchors), `unconverted` (none: durations only), `mixed`, or
    /// `none` (no device intervals).
    pub conversion: String,
    /// Intervals on the ring's clock (entry flag `HOST_CLOCK`) or converted through anchors.
    pub converted: u64,
    /// Of `converted`, those converted through anchors (entry flag `ANCHORED`).
    pub anchored: u64,
    /// Anchors read (events backend).
    pub anchors: u64,
    /// The conversion bound of anchored intervals (ns, either way; the larger of start's and end's):
    /// nearest-rank p50 and max. Null without anchored intervals. A converted time printed as
    /// "t ± bound" contains the true host time of the device event, by construction of the bound.
    pub bound_ns_p50: Option<u64>,
    pub bound_ns_max: Option<u64>,
    /// Narrowest and widest anchor bracket half-width (ns): the floor of every bound.
    pub anchor_half_width_ns_min: Option<u64>,
    pub anchor_half_width_ns_max: Option<u64>,
    /// Device clock rate against the host's, from consecutive anchors: median of (rate − 1) in parts
    /// per billion (positive: the device clock runs slow). Null when no pair of anchors measured it.
    pub drift_ppb_median: Option<i64>,
    /// Anchored intervals whose anchor had no neighbour to measure the rate: converted at rate 1 with
    /// the assumed drift (`anchors::ASSUMED_DRIFT`) in their bound.
    pub drift_assumed: u64,
    /// Intervals in the backend's own clock: their durations are reported, never their times.
    pub unconverted: u64,
    /// Associated intervals on the ring's clock: the sample the causality check ran on.
    pub checked: u64,
    /// Of `checked`, intervals that start before their issuing call began (negative launch→start
    /// latency; for intervals from a runtime's own profiling, by more than their conversion bound):
    /// impossible unless the clock conversion is off by at least that much.
    pub before_call: u64,
    /// The smallest launch→start latency over `checked` (device start − issuing call's begin), in ns;
    /// negative when `before_call > 0`. Null when nothing was checked.
    pub min_launch_to_start_ns: Option<i64>,
    /// Anchored intervals (events backend) tied to a completed call: the sample of the end check. The
    /// backend records its start event *before* the call's begin is read, so a start check would prove
    /// nothing; it records the end event *after* the call's end is read, so the converted device end
    /// can only precede the call's end if the conversion is off by at least the difference.
    pub end_checked: u64,
    /// Of `end_checked`, intervals whose converted end precedes their call's end.
    pub end_before_call_end: u64,
    /// The smallest (device end − call's end) over `end_checked`, in ns; negative when
    /// `end_before_call_end > 0`. Null when nothing was checked.
    pub min_call_end_to_device_end_ns: Option<i64>,
}

/// Device time of one kernel (by the name in its device intervals), over all processes.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DeviceKernelStats {
    /// Demangled when it is a mangled C++ symbol.
    pub name: String,
    /// The symbol as the program named it (the same as `name` when it is not mangled).
    pub symbol: String,
    /// Intervals (executions observed on the device). Device times are over the timed ones.
    pub count: u64,
    pub total_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// Intervals with a launch→start latency: associated with their call and on the ring's clock.
    pub latency_count: u64,
    /// Launch→start latency (device start − issuing call's begin; for graph-launched kernels, the
    /// graph launch call's begin), nearest-rank percentiles in ns. Null when `latency_count` is 0.
    pub latency_p50_ns: Option<i64>,
    pub latency_p99_ns: Option<i64>,
}

/// Device time of one copy kind (`HtoD`, `DtoH`, …) or of memsets (`memset`), over all processes.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DeviceCopyStats {
    pub kind: String,
    pub count: u64,
    /// Bytes copied or set.
    pub bytes: u64,
    pub total_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// The `device` section of a report.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct DeviceReport {
    /// Device intervals read (kernels, copies, memsets, and any of a kind this scanner does not know).
    pub intervals: u64,
    /// Intervals tied to the live launch, copy, memset or graph-launch call that issued them.
    pub associated: u64,
    pub unassociated: Unassociated,
    /// Intervals in the backend's own clock (also `clock.unconverted`).
    pub unconverted: u64,
    /// Intervals the backend could not time (a time of 0, or an end before the start): counted in
    /// `count` and `bytes`, left out of device times and latencies.
    pub untimed: u64,
    /// Device records the backend itself dropped (the header counter `device_dropped`, summed).
    pub dropped: u64,
    /// The events backend timed one in this many steps or device-work calls (the largest over the
    /// processes; 1 = every call): counts of device intervals are then of the timed calls only.
    pub sample_every: u32,
    /// Whether a process sampled steps (every call of one in `sample_every` outermost NVTX ranges)
    /// rather than calls.
    pub step_sampled: bool,
    /// Device work the backend could not time and wrote no interval for (the header counter
    /// `device_untimed`, summed; events backend: no free event pair, no current context, an event
    /// call failed, or still running at exit).
    pub not_timed: u64,
    /// Intervals whose device kind (`api`) this scanner does not know: counted, not tabulated.
    pub unknown_kind: u64,
    pub clock: DeviceClock,
    /// Sorted by total device time, largest first.
    pub kernels: Vec<DeviceKernelStats>,
    /// Per copy kind, and one row `memset`; sorted by total device time, largest first.
    pub copies: Vec<DeviceCopyStats>,
}

#[derive(Default)]
pub(crate) struct KernelAcc {
    count: u64,
    durations: Samples<u64>,
    latencies: Samples<i64>,
}

#[derive(Default)]
pub(crate) struct CopyAcc {
    count: u64,
    bytes: u64,
    durations: Samples<u64>,
}

impl KernelAcc {
    /// Adds another row of the same name (another key, another process).
    fn absorb(&mut self, o: KernelAcc) {
        self.count += o.count;
        self.durations.append(o.durations);
        self.latencies.append(o.latencies);
    }
}

impl CopyAcc {
    /// Adds another row of the same kind (another process).
    fn absorb(&mut self, o: CopyAcc) {
        self.count += o.count;
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.durations.append(o.durations);
    }
}

/// What one ring's device intervals contribute.
#[derive(Default)]
pub(crate) struct DevicePartial {
    pub intervals: u64,
    pub associated: u64,
    pub unassociated: Unassociated,
    pub converted: u64,
    pub anchored: u64,
    pub anchors: u64,
    pub bounds: Vec<u64>,
    pub half_widths: Vec<f64>,
    pub rates: Vec<f64>,
    pub drift_assumed: u64,
    pub unconverted: u64,
    pub untimed: u64,
    pub unknown_kind: u64,
    pub checked: u64,
    pub before_call: u64,
    pub min_latency: Option<i64>,
    pub end_checked: u64,
    pub end_before: u64,
    pub min_end_gap: Option<i64>,
    pub kernels: HashMap<String, KernelAcc>,
    pub copies: HashMap<String, CopyAcc>,
}

/// What names a kernel row: the interval's own name record (CUPTI), the issuing call's function
/// handle (events backend, which sees the launch, not the kernel), or a whole graph launch.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum KernelKey {
    Text(u64),
    Handle(u64),
    Unknown,
    Graph,
}

/// Reads the device intervals of one ring. `entries` are its live entries in sequence order (as
/// `decode` returns them), `intervals` its device intervals (with their indices, as
/// `Decoded::intervals` lists them); `class_of` gives a call entry's API class; `text` names a text id;
/// `kernel` names a launch's function handle. Each completed interval goes to `visit` with the index of
/// the entry its `a0` names, whatever that entry is (`None`: not in the capture), and its own index.
#[allow(clippy::too_many_arguments)]
pub(crate) fn analyze(
    h: &Header,
    entries: Entries,
    intervals: impl Iterator<Item = (usize, Entry)>,
    anchors: &Anchors,
    class_of: impl Fn(&Entry) -> Option<Class>,
    text: impl Fn(u64) -> String,
    kernel: impl Fn(u64) -> Option<String>,
    mut visit: impl FnMut(Option<usize>, usize, &Entry),
) -> DevicePartial {
    let mut walk = Walk::new(h);
    for (i, e) in intervals {
        walk.step(entries, Some(anchors), &class_of, i, &e, &mut visit);
    }
    walk.finish(anchors, text, kernel)
}

/// [`analyze`] one interval at a time, in index order: what its loop does, and what a walk made
/// for another reason (the decoder's, on one thread) can carry along.
pub(crate) struct Walk {
    p: DevicePartial,
    ticks: Converter,
    // Aggregated by name key and copy kind first (no string work per interval), named at the end.
    kernels: Rows<KernelKey, KernelAcc>,
    copies: HashMap<Option<u16>, CopyAcc>,
}

impl Walk {
    pub(crate) fn new(h: &Header) -> Walk {
        Walk {
            p: DevicePartial::default(),
            ticks: h.converter(),
            kernels: Rows::default(),
            copies: HashMap::default(),
        }
    }

    /// Entry `i`, `e` (any entry: only completed intervals count). Without `anchors` the walk
    /// rides along the decoder's (`decode::Along`): the anchors are not read yet, nor the entries
    /// after `i` checked. An interval that needs the anchors, or names a call after it (only a
    /// corrupt capture has one), is then not taken: `false`, and the walk is to be made again
    /// apart.
    #[inline(always)]
    pub(crate) fn step(
        &mut self,
        entries: Entries,
        anchors: Option<&Anchors>,
        class_of: impl Fn(&Entry) -> Option<Class>,
        i: usize,
        e: &Entry,
        mut visit: impl FnMut(Option<usize>, usize, &Entry),
    ) -> bool {
        if !completed_interval(e) {
            return true;
        }
        let along = anchors.is_none();
        if along && anchored(e).is_some() {
            return false;
        }
        let index = entries.index_of_seq(e.a0);
        if along && index.is_some_and(|c| c > i) {
            return false;
        }
        self.p.intervals += 1;
        visit(index, i, e);
        let call = match issuer(entries, e, index, class_of) {
            Issuer::Call(c) => {
                self.p.associated += 1;
                Some(entries.get(c))
            }
            Issuer::NoCall => {
                self.p.unassociated.no_call += 1;
                None
            }
            Issuer::NotInCapture => {
                self.p.unassociated.call_not_in_capture += 1;
                None
            }
            Issuer::WrongClass => {
                self.p.unassociated.wrong_class += 1;
                None
            }
        };
        let (duration, latency) = match timing(e, anchors) {
            Timing::Untimed { convertible } => {
                self.p.untimed += 1;
                if convertible {
                    self.p.converted += 1;
                } else {
                    self.p.unconverted += 1;
                }
                (None, None)
            }
            Timing::Anchored {
                begin: s,
                end: t,
                measured,
            } => {
                self.p.converted += 1;
                self.p.anchored += 1;
                if !measured {
                    self.p.drift_assumed += 1;
                }
                self.p.bounds.push(s.bound_ns.max(t.bound_ns).ceil() as u64);
                let latency = call.map(|c| (s.ns - self.ticks.ns(c.t_begin) as f64).round() as i64);
                if e.flags & entry_flags::PROFILED != 0 {
                    // The runtime took the start after the call began (Unified Runtime, Level Zero
                    // profiling): the start check applies, within the conversion's bound (work
                    // that starts at once may convert up to the bound before its call); the work
                    // may end before a blocking call returns.
                    if let Some(l) = latency {
                        self.p.checked += 1;
                        if l + (s.bound_ns.ceil() as i64) < 0 {
                            self.p.before_call += 1;
                        }
                        self.p.min_latency = Some(self.p.min_latency.map_or(l, |m| m.min(l)));
                    }
                } else if let Some(c) = call.filter(|c| c.done) {
                    let gap = (t.ns - self.ticks.ns(c.t_end) as f64).round() as i64;
                    self.p.end_checked += 1;
                    if gap < 0 {
                        self.p.end_before += 1;
                    }
                    self.p.min_end_gap = Some(self.p.min_end_gap.map_or(gap, |m| m.min(gap)));
                }
                ((Some((t.ns - s.ns).max(0.0).round() as u64)), latency)
            }
            Timing::HostClock { t_begin, t_end } => {
                self.p.converted += 1;
                // Converted once for the latency and the duration (`span_ns` would again).
                let begin = self.ticks.ns(t_begin);
                let latency = call.map(|c| {
                    let d = begin as i128 - self.ticks.ns(c.t_begin) as i128;
                    d.clamp(i64::MIN as i128, i64::MAX as i128) as i64
                });
                if let Some(l) = latency {
                    self.p.checked += 1;
                    if l < 0 {
                        self.p.before_call += 1;
                    }
                    self.p.min_latency = Some(self.p.min_latency.map_or(l, |m| m.min(l)));
                }
                (Some(self.ticks.ns(t_end).saturating_sub(begin)), latency)
            }
            // The backend's own clock: the difference is a duration in its units (CUPTI, events:
            // ns), but the times themselves mean nothing on ours.
            Timing::OwnClock { duration_ns } => {
                self.p.unconverted += 1;
                (Some(duration_ns), None)
            }
        };
        match DeviceKind::from_u16(e.api) {
            Some(kind @ (DeviceKind::Kernel | DeviceKind::Graph)) => {
                let key = if kind == DeviceKind::Graph {
                    KernelKey::Graph
                } else if e.flags & entry_flags::PROFILED != 0 {
                    // The runtime's own profiling names the kernel by its handle.
                    KernelKey::Handle(e.a1)
                } else if e.flags & entry_flags::ANCHORED == 0 {
                    KernelKey::Text(e.a1)
                } else {
                    call.map_or(KernelKey::Unknown, |c| KernelKey::Handle(c.a1))
                };
                let k = self.kernels.row(key);
                k.count += 1;
                // A push, not `extend` of an Option, which goes through `reserve` for every interval.
                if let Some(d) = duration {
                    k.durations.push(d);
                }
                if let Some(l) = latency {
                    k.latencies.push(l);
                }
            }
            Some(kind @ (DeviceKind::Memcpy | DeviceKind::Memset)) => {
                let key = (kind == DeviceKind::Memcpy).then_some(e.depth);
                let c = self.copies.entry(key).or_default();
                c.count += 1;
                c.bytes = c.bytes.saturating_add(e.a1);
                if let Some(d) = duration {
                    c.durations.push(d);
                }
            }
            None => self.p.unknown_kind += 1,
        }
        true
    }

    /// The partial, rows named.
    pub(crate) fn finish(
        self,
        anchors: &Anchors,
        text: impl Fn(u64) -> String,
        kernel: impl Fn(u64) -> Option<String>,
    ) -> DevicePartial {
        let Walk {
            mut p,
            kernels,
            copies,
            ..
        } = self;
        p.anchors = anchors.half_widths.len() as u64;
        p.half_widths = anchors.half_widths.clone();
        p.rates = anchors.rates.clone();
        // Two ids with one name (a repeated record) still make one row.
        for (key, k) in kernels {
            let name = match key {
                KernelKey::Text(id) => text(id),
                KernelKey::Handle(h) => kernel(h).unwrap_or_else(|| format!("<function {h:#x}>")),
                KernelKey::Unknown => UNKNOWN_KERNEL_ROW.to_string(),
                KernelKey::Graph => GRAPH_ROW.to_string(),
            };
            p.kernels.entry(name).or_default().absorb(k);
        }
        for (kind, c) in copies {
            let name = kind.map_or_else(|| MEMSET_ROW.to_string(), copy_kind_name);
            p.copies.entry(name).or_default().absorb(c);
        }
        p.unassociated.total = p.unassociated.no_call
            + p.unassociated.call_not_in_capture
            + p.unassociated.wrong_class;
        p
    }
}

/// Merges the rings' device intervals into the report's `device` section. `dropped` is the sum of the
/// header counters.
pub(crate) fn merge(partials: Vec<DevicePartial>, dropped: u64, not_timed: u64) -> DeviceReport {
    let mut d = DeviceReport {
        dropped,
        not_timed,
        ..DeviceReport::default()
    };
    let mut bounds: Vec<u64> = Vec::new();
    let mut half_widths: Vec<f64> = Vec::new();
    let mut rates: Vec<f64> = Vec::new();
    let mut kernels: HashMap<String, KernelAcc> = HashMap::default();
    let mut copies: HashMap<String, CopyAcc> = HashMap::default();
    let clock = &mut d.clock;
    for p in partials {
        d.intervals += p.intervals;
        d.associated += p.associated;
        d.unassociated.absorb(&p.unassociated);
        d.unconverted += p.unconverted;
        d.untimed += p.untimed;
        d.unknown_kind += p.unknown_kind;
        clock.converted += p.converted;
        clock.anchored += p.anchored;
        clock.anchors += p.anchors;
        clock.drift_assumed += p.drift_assumed;
        append(&mut bounds, p.bounds);
        half_widths.extend(p.half_widths);
        rates.extend(p.rates);
        clock.unconverted += p.unconverted;
        clock.checked += p.checked;
        clock.before_call += p.before_call;
        clock.end_checked += p.end_checked;
        clock.end_before_call_end += p.end_before;
        if let Some(g) = p.min_end_gap {
            clock.min_call_end_to_device_end_ns =
                Some(clock.min_call_end_to_device_end_ns.map_or(g, |m| m.min(g)));
        }
        if let Some(l) = p.min_latency {
            clock.min_launch_to_start_ns =
                Some(clock.min_launch_to_start_ns.map_or(l, |m| m.min(l)));
        }
        for (name, k) in p.kernels {
            kernels.entry(name).or_default().absorb(k);
        }
        for (kind, c) in p.copies {
            copies.entry(kind).or_default().absorb(c);
        }
    }
    let by_callback = clock.converted - clock.anchored;
    clock.conversion = match (by_callback, clock.anchored, clock.unconverted) {
        (0, 0, 0) => "none",
        (_, 0, 0) => CONVERSION_CALLBACK,
        (0, _, 0) => CONVERSION_ANCHORS,
        (0, 0, _) => CONVERSION_NONE,
        _ => CONVERSION_MIXED,
    }
    .into();
    [clock.bound_ns_p50, clock.bound_ns_max] = percentiles(&mut bounds, [50, 100]);
    half_widths.sort_by(f64::total_cmp);
    clock.anchor_half_width_ns_min = half_widths.first().map(|w| w.round() as u64);
    clock.anchor_half_width_ns_max = half_widths.last().map(|w| w.round() as u64);
    rates.sort_by(f64::total_cmp);
    if !rates.is_empty() {
        let mid = rates[(rates.len() - 1) / 2];
        clock.drift_ppb_median = Some(((mid - 1.0) * 1e9).round() as i64);
    }
    // Rows side by side: their percentiles are most of this merge's work.
    d.kernels = kernels
        .into_iter()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(name, mut k)| {
            let [p50, p99, max] = k.durations.percentiles([50, 99, 100]);
            let [l50, l99] = k.latencies.percentiles([50, 99]);
            DeviceKernelStats {
                symbol: name.clone(),
                name,
                count: k.count,
                total_ns: k.durations.total(),
                p50_ns: p50.unwrap_or(0),
                p99_ns: p99.unwrap_or(0),
                max_ns: max.unwrap_or(0),
                latency_count: k.latencies.len() as u64,
                latency_p50_ns: l50,
                latency_p99_ns: l99,
            }
        })
        .collect();
    d.kernels.sort_by(|a, b| {
        (b.total_ns, b.count)
            .cmp(&(a.total_ns, a.count))
            .then(a.name.cmp(&b.name))
    });
    d.copies = copies
        .into_iter()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|(kind, mut c)| {
            let [p50, p99, max] = c.durations.percentiles([50, 99, 100]);
            DeviceCopyStats {
                kind,
                count: c.count,
                bytes: c.bytes,
                total_ns: c.durations.total(),
                p50_ns: p50.unwrap_or(0),
                p99_ns: p99.unwrap_or(0),
                max_ns: max.unwrap_or(0),
            }
        })
        .collect();
    d.copies.sort_by(|a, b| {
        (b.total_ns, b.count)
            .cmp(&(a.total_ns, a.count))
            .then(a.kind.cmp(&b.kind))
    });
    d
}
