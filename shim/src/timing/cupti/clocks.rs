//! Clocks: CUPTI's timestamps on the ring's clock. CUPTI wants nanoseconds from its timestamp
//! callback, so the callback hands it the ring's ticks scaled to nanoseconds (`Scale`; the identity
//! when the ring's clock is CLOCK_MONOTONIC), and the intervals are scaled back to ticks when written.

use causeway_ring::clock;
use std::sync::OnceLock;

static SCALE: OnceLock<Scale> = OnceLock::new();

/// The scale of this process's ring clock (`hz` ticks per second), fixed on first use: the timestamp
/// callback reads it from then on.
pub(super) fn ring_scale(hz: u64) -> Scale {
    *SCALE.get_or_init(|| match clock::kind() {
        causeway_ring::ClockKind::Monotonic => Scale::IDENTITY,
        causeway_ring::ClockKind::Tsc => {
            let a = clock::anchor();
            Scale::new(a.ticks, a.mono_ns, hz)
        }
    })
}

/// CUPTI's clock: the ring's ticks in nanoseconds (CUPTI requires nanoseconds).
pub(super) unsafe extern "C" fn timestamp() -> u64 {
    let t = clock::ticks();
    match SCALE.get() {
        Some(s) => s.ns(t),
        None => t,
    }
}

/// The ring's ticks ↔ nanoseconds for CUPTI, linear around one anchor, in 64.64 fixed point so that
/// the timestamp callback (called on CUDA API calls) costs a multiplication. The identity when the
/// ring's clock is CLOCK_MONOTONIC. Both directions round to nearest: a round trip is exact to a tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Scale {
    t0: u64,
    ns0: u64,
    /// Nanoseconds per tick, << 64.
    ns_per_tick: u128,
    /// Ticks per nanosecond, << 64.
    ticks_per_ns: u128,
}

impl Scale {
    pub(super) const IDENTITY: Scale = Scale {
        t0: 0,
        ns0: 0,
        ns_per_tick: 1 << 64,
        ticks_per_ns: 1 << 64,
    };

    pub(super) fn new(t0: u64, ns0: u64, hz: u64) -> Scale {
        let hz = hz.max(1) as u128;
        Scale {
            t0,
            ns0,
            ns_per_tick: ((1_000_000_000u128 << 64) + hz / 2) / hz,
            ticks_per_ns: ((hz << 64) + 500_000_000) / 1_000_000_000,
        }
    }

    fn map(x: u64, from: u64, to: u64, factor: u128) -> u64 {
        let scaled = |d: u64| {
            (d as u128)
                .checked_mul(factor)
                .and_then(|p| p.checked_add(1 << 63))
                .map_or(u64::MAX, |p| (p >> 64).min(u64::MAX as u128) as u64)
        };
        if x >= from {
            to.saturating_add(scaled(x - from))
        } else {
            to.saturating_sub(scaled(from - x))
        }
    }

    pub(super) fn ns(&self, ticks: u64) -> u64 {
        Scale::map(ticks, self.t0, self.ns0, self.ns_per_tick)
    }

    /// Ticks of a CUPTI time; 0 (no time) stays 0.
    pub(super) fn ticks(&self, ns: u64) -> u64 {
        if ns == 0 {
            return 0;
        }
        Scale::map(ns, self.ns0, self.t0, self.ticks_per_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_round_trips_to_a_tick() {
        let s = Scale::IDENTITY;
        for t in [1u64, 12345, u64::MAX / 3] {
            assert_eq!(s.ns(t), t);
            assert_eq!(s.ticks(t), t);
        }
        // A 2.9 GHz TSC anchored at (ticks 10^12, mono 5·10^11 ns).
        let s = Scale::new(1_000_000_000_000, 500_000_000_000, 2_900_000_000);
        assert_eq!(s.ns(1_000_000_000_000), 500_000_000_000);
        assert_eq!(s.ns(1_000_000_000_000 + 2_900_000_000), 501_000_000_000);
        assert_eq!(s.ns(1_000_000_000_000 - 2_900_000_000), 499_000_000_000);
        for t in [
            1_000_000_000_000u64,
            1_000_000_000_001,
            999_999_123_456,
            1_000_000_000_000 + 86_400 * 2_900_000_000,
        ] {
            let back = s.ticks(s.ns(t));
            assert!(back.abs_diff(t) <= 1, "{t} -> {back}");
        }
        assert_eq!(s.ticks(0), 0, "no time stays no time");
    }
}
