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
//! where δr is the rate's uncertainty (`ASSUMED_DRIFT` when no pair of anchors measured it) and
//! `EVENT_RESOLUTION_NS` is the resolution CUDA documents for `cuEventElapsedTime` (about 0.5 µs).
//!
//! The rate is the device's, one per chain of anchors (anchors of one device whose gaps were all
//! measured), from its best-conditioned pair (`best_pair`): a clock's drift is steady, and one anchor
//! taken while the backend was descheduled (a wide bracket) must not spoil it. Such an anchor is itself
//! placed from the chain's narrowest anchor when that is more certain.

use crate::read::decode::Entries;
use crate::util::fastmap::HashMap;
use causeway_ring::layout::{entry_flags, NO_ELAPSED};
use causeway_ring::{Entry, Header, Kind};

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
    pub fn from_entries<'e>(h: &Header, entries: impl Into<Entries<'e>>) -> Anchors {
        Anchors::of(h, entries.into().iter())
    }

    /// Reads the anchors among `entries` (any subset of a ring's entries that holds its anchors).
    pub fn of(h: &Header, entries: impl Iterator<Item = Entry>) -> Anchors {
        let mut raw: Vec<(u64, Anchor)> = entries
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
        // Per device, chains of anchors whose device gaps were all measured: within a chain every
        // anchor has a device time (the sum of the gaps from the chain's first).
        let mut chains: Vec<Vec<(u64, Anchor, f64)>> = Vec::new();
        let mut open: HashMap<u64, usize> = HashMap::default();
        for &(id, a) in &raw {
            out.half_widths.push(a.half_width_ns);
            let cont = match (open.get(&a.device), a.elapsed) {
                (Some(&c), Some(e)) if e > 0 => Some((c, e as f64)),
                _ => None,
            };
            match cont {
                Some((c, e)) => {
                    let d = chains[c].last().map_or(0.0, |x| x.2) + e;
                    chains[c].push((id, a, d));
                }
                None => {
                    open.insert(a.device, chains.len());
                    chains.push(vec![(id, a, 0.0)]);
                }
            }
        }
        for chain in chains {
            let best = best_pair(&chain);
            if let Some((rate, _)) = best {
                out.rates.push(rate);
            }
            // The best-conditioned pair's anchors, for re-centring a wide one.
            for &(id, a, d) in &chain {
                let (rate, rate_err, measured) = match best {
                    Some((r, e)) => (r, e, true),
                    None => (1.0, ASSUMED_DRIFT, false),
                };
                // An anchor whose own bracket is wide (the backend was descheduled while taking it) is
                // placed from the chain's narrowest anchor instead, when that is more certain.
                let (mut mid, mut hw) = (a.mid_ns, a.half_width_ns);
                if let Some(&(_, n, dn)) = chain
                    .iter()
                    .min_by(|x, y| x.1.half_width_ns.total_cmp(&y.1.half_width_ns))
                {
                    let via = n.half_width_ns + (d - dn).abs() * rate_err;
                    if measured && via < hw {
                        mid = n.mid_ns + (d - dn) * rate;
                        hw = via;
                    }
                }
                out.by_id.insert(
                    id,
                    Conv {
                        mid_ns: mid,
                        half_width_ns: hw,
                        rate,
                        rate_err,
                        measured,
                    },
                );
            }
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn get(&self, id: u64) -> Option<&Conv> {
        self.by_id.get(&id)
    }

    /// A timed anchored interval's start and end on the host clock: `None` when its anchor is not in
    /// the capture or its end precedes its start.
    pub fn span(&self, id: u64, o0: i64, o1: i64) -> Option<(Converted, Converted)> {
        let c = self.by_id.get(&id).filter(|_| o1 >= o0)?;
        Some((c.convert(o0), c.convert(o1)))
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

/// The device clock's rate (host ns per device ns) from the best-conditioned pair of a chain's anchors,
/// with its uncertainty: among the narrowest anchor of the chain's first half and that of its second
/// half (their separation dominates), and every consecutive pair, the one whose (w_i + w_j) / (D_j −
/// D_i) is smallest. `None` for a chain of one anchor.
fn best_pair(chain: &[(u64, Anchor, f64)]) -> Option<(f64, f64)> {
    let rate_of = |i: usize, j: usize| -> Option<(f64, f64)> {
        let (a, b) = (&chain[i], &chain[j]);
        let e = b.2 - a.2;
        if e <= 0.0 {
            return None;
        }
        let rate = (b.1.mid_ns - a.1.mid_ns) / e;
        let err = (a.1.half_width_ns + b.1.half_width_ns) / e;
        (rate.is_finite() && rate > 0.0).then_some((rate, err))
    };
    let n = chain.len();
    if n < 2 {
        return None;
    }
    let narrowest = |r: std::ops::Range<usize>| {
        r.min_by(|&x, &y| {
            chain[x]
                .1
                .half_width_ns
                .total_cmp(&chain[y].1.half_width_ns)
        })
    };
    let mut candidates: Vec<(f64, f64)> = (1..n).filter_map(|j| rate_of(j - 1, j)).collect();
    if let (Some(i), Some(j)) = (narrowest(0..n / 2), narrowest(n / 2..n)) {
        candidates.extend(rate_of(i, j));
    }
    candidates.into_iter().min_by(|x, y| x.1.total_cmp(&y.1))
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
    fn one_wide_anchor_does_not_spoil_the_rate() {
        // A device clock 5000 ppm fast: host = device / 1.005. Anchors every 200 ms of device time,
        // ±5 µs, except one taken while descheduled: ±3 ms, and off-centre by 2.5 ms.
        let truth = 1.0 / 1.005;
        let chain: Vec<(u64, Anchor, f64)> = (0..4)
            .map(|k| {
                let d = k as f64 * 200e6;
                let (hw, skew) = if k == 2 { (3e6, 2.5e6) } else { (5e3, 0.0) };
                let a = Anchor {
                    device: 0,
                    mid_ns: 1e12 + d * truth + skew,
                    half_width_ns: hw,
                    elapsed: None,
                };
                (k + 1, a, d)
            })
            .collect();
        let (rate, err) = best_pair(&chain).unwrap();
        assert!(((rate - truth) / truth).abs() < 1e-6, "rate {rate}");
        assert!(err < 1e-4, "err {err}");
        // Consecutive pairs through the wide anchor would have been off by ~12 500 ppm.
        assert!(best_pair(&chain[1..3]).unwrap().1 > 1e-3);
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
