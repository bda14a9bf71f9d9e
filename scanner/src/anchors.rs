//! The events backend's clock model: device intervals carry raw device-clock offsets from an anchor
//! (entry flag `ANCHORED`); anchors carry a host bracket. This turns an offset into host
//! CLOCK_MONOTONIC nanoseconds and states how far off that can be.
//!
//! An anchor is a timing event the shim recorded on its own idle stream between two host clock
//! readings t0 and t1, so its device instant lies in [t0, t1]: we take the midpoint, off by at most
//! the half-width w. Consecutive anchors k, k+1 of one device give the device clock's rate against
//! the host's: r = (mid(k+1) − mid(k)) / E, with E the device nanoseconds between them, known to
//! ±(w(k) + w(k+1)) / E. An offset o from anchor k converts to mid(k) + o·r, with the bound
//!
//! ```text
//! bound = w(k) + |o| · δr + EVENT_RESOLUTION_NS
//! ```
//!
//! where δr is the rate's uncertainty (`ASSUMED_DRIFT` when no neighbouring anchor measured it) and
//! `EVENT_RESOLUTION_NS` is the resolution CUDA documents for `cuEventElapsedTime` (about 0.5 µs).

use causeway_ring::layout::{entry_flags, NO_ELAPSED};
use causeway_ring::{Entry, Header, Kind};
use std::collections::HashMap;

/// CUDA documents event elapsed times as having "a resolution of around 0.5 microseconds".
pub const EVENT_RESOLUTION_NS: f64 = 500.0;
/// Rate uncertainty assumed when no pair of anchors measured it: 100 ppm, well beyond a crystal's
/// drift, so the bound stays a bound.
pub const ASSUMED_DRIFT: f64 = 100e-6;

#[derive(Clone, Copy, Debug)]
struct Anchor {
    device: u64,
    mid_ns: f64,
    half_width_ns: f64,
    /// Device ns since the previous anchor of the same device.
    elapsed: Option<i64>,
}

/// How one anchor converts offsets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conv {
    pub mid_ns: f64,
    pub half_width_ns: f64,
    /// Host ns per device ns.
    pub rate: f64,
    /// Uncertainty of `rate`.
    pub rate_err: f64,
    /// Whether `rate` was measured (else 1 ± `ASSUMED_DRIFT`).
    pub measured: bool,
}

/// A converted device time: host CLOCK_MONOTONIC ns and its bound (ns, either way).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Converted {
    pub ns: f64,
    pub bound_ns: f64,
}

/// The anchors of one ring.
#[derive(Default, Debug)]
pub struct Anchors {
    by_id: HashMap<u64, Conv>,
    /// Rates measured between consecutive anchors (host ns per device ns), for the drift figure.
    pub rates: Vec<f64>,
    /// Half-widths of every anchor, ns.
    pub half_widths: Vec<f64>,
}

impl Anchors {
    /// Reads the anchors among a ring's live entries.
    pub fn from_entries(h: &Header, entries: &[Entry]) -> Anchors {
        let mut raw: Vec<(u64, Anchor)> = entries
            .iter()
            .filter(|e| e.kind == Some(Kind::DeviceAnchor) && e.done && e.t_end >= e.t_begin)
            .map(|e| {
                let t0 = h.ticks_to_ns(e.t_begin) as f64;
                let t1 = h.ticks_to_ns(e.t_end) as f64;
                let a = Anchor {
                    device: e.a1,
                    mid_ns: (t0 + t1) / 2.0,
                    half_width_ns: (t1 - t0) / 2.0,
                    elapsed: (e.a2 != NO_ELAPSED).then_some(e.a2 as i64),
                };
                (e.a0, a)
            })
            .collect();
        raw.sort_by_key(|&(id, _)| id);
        let mut out = Anchors::default();
        // Per device, in id order: the rate of each consecutive pair whose device gap was measured.
        let mut last: HashMap<u64, (u64, Anchor)> = HashMap::new();
        let mut fwd: HashMap<u64, (f64, f64)> = HashMap::new();
        let mut back: HashMap<u64, (f64, f64)> = HashMap::new();
        for &(id, a) in &raw {
            out.half_widths.push(a.half_width_ns);
            if let (Some(&(pid, p)), Some(e)) = (last.get(&a.device), a.elapsed) {
                if e > 0 {
                    let rate = (a.mid_ns - p.mid_ns) / e as f64;
                    let err = (a.half_width_ns + p.half_width_ns) / e as f64;
                    if rate.is_finite() && rate > 0.0 {
                        fwd.insert(pid, (rate, err));
                        back.insert(id, (rate, err));
                        out.rates.push(rate);
                    }
                }
            }
            last.insert(a.device, (id, a));
        }
        for (id, a) in raw {
            let (rate, rate_err, measured) = match fwd.get(&id).or_else(|| back.get(&id)) {
                Some(&(r, e)) => (r, e, true),
                None => (1.0, ASSUMED_DRIFT, false),
            };
            out.by_id.insert(
                id,
                Conv {
                    mid_ns: a.mid_ns,
                    half_width_ns: a.half_width_ns,
                    rate,
                    rate_err,
                    measured,
                },
            );
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn get(&self, id: u64) -> Option<&Conv> {
        self.by_id.get(&id)
    }

    /// Host time of a device offset from anchor `id`, with its bound.
    pub fn convert(&self, id: u64, offset_ns: i64) -> Option<Converted> {
        self.by_id.get(&id).map(|c| c.convert(offset_ns))
    }
}

impl Conv {
    pub fn convert(&self, offset_ns: i64) -> Converted {
        let o = offset_ns as f64;
        Converted {
            ns: self.mid_ns + o * self.rate,
            bound_ns: self.half_width_ns + o.abs() * self.rate_err + EVENT_RESOLUTION_NS,
        }
    }
}

/// An anchored interval's anchor id and signed device offsets, or `None` for other entries.
pub fn anchored(e: &Entry) -> Option<(u64, i64, i64)> {
    (e.kind == Some(Kind::DeviceInterval) && e.flags & entry_flags::ANCHORED != 0).then_some((
        e.a2 >> 32,
        e.t_begin as i64,
        e.t_end as i64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(mid: f64, hw: f64, rate: f64, err: f64) -> Conv {
        Conv {
            mid_ns: mid,
            half_width_ns: hw,
            rate,
            rate_err: err,
            measured: true,
        }
    }

    #[test]
    fn offsets_scale_by_the_measured_rate_and_the_bound_grows_with_distance() {
        let c = conv(1_000_000.0, 2_000.0, 1.0 - 200e-6, 1e-7);
        let a = c.convert(0);
        assert_eq!(a.ns, 1_000_000.0);
        assert_eq!(a.bound_ns, 2_000.0 + EVENT_RESOLUTION_NS);
        let b = c.convert(100_000_000);
        assert!((b.ns - (1_000_000.0 + 100_000_000.0 * (1.0 - 200e-6))).abs() < 1e-6);
        assert!((b.bound_ns - (2_000.0 + 10.0 + EVENT_RESOLUTION_NS)).abs() < 1e-6);
        let n = c.convert(-100_000_000);
        assert_eq!(n.bound_ns, b.bound_ns);
        assert!(n.ns < a.ns);
    }
}
