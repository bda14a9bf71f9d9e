//! The writer's clock. The hot path reads the invariant TSC where the CPU has one (≈ 11 ns a read on
//! the reference machine against ≈ 24 ns for `clock_gettime`), and CLOCK_MONOTONIC elsewhere. The ring
//! keeps anchors (one instant on all three clocks) so the reader converts ticks offline.

use crate::layout::ClockKind;
use std::sync::atomic::{AtomicU32, Ordering};

static KIND: AtomicU32 = AtomicU32::new(ClockKind::Monotonic as u32);

/// One instant read on the tick clock, CLOCK_MONOTONIC and CLOCK_REALTIME.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anchor {
    pub ticks: u64,
    pub mono_ns: u64,
    pub real_ns: u64,
}

pub fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; clock_gettime has no other preconditions.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86_64 CPU and has no memory effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The current time in ticks of the clock chosen by `init`.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if KIND.load(Ordering::Relaxed) == ClockKind::Tsc as u32 {
        return rdtsc();
    }
    clock_ns(libc::CLOCK_MONOTONIC)
}

pub fn kind() -> ClockKind {
    ClockKind::from_u32(KIND.load(Ordering::Relaxed)).unwrap_or(ClockKind::Monotonic)
}

/// Reads all three clocks as close together as it can: the tick read sits between two monotonic
/// reads, and the tightest of a few tries wins.
pub fn anchor() -> Anchor {
    let mut best = Anchor::default();
    let mut best_width = u64::MAX;
    for _ in 0..5 {
        let m0 = clock_ns(libc::CLOCK_MONOTONIC);
        let t = ticks();
        let m1 = clock_ns(libc::CLOCK_MONOTONIC);
        let r = clock_ns(libc::CLOCK_REALTIME);
        let width = m1.saturating_sub(m0);
        if width < best_width {
            best_width = width;
            best = Anchor {
                ticks: t,
                mono_ns: m0 + width / 2,
                real_ns: r,
            };
        }
    }
    best
}

/// Whether the TSC runs at a constant rate through frequency and idle changes (Linux reports both flags).
#[cfg(target_arch = "x86_64")]
fn tsc_is_invariant() -> bool {
    match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(s) => s.lines().find(|l| l.starts_with("flags")).is_some_and(|l| {
            l.split_whitespace().any(|f| f == "constant_tsc")
                && l.split_whitespace().any(|f| f == "nonstop_tsc")
        }),
        Err(_) => false,
    }
}

/// Some hypervisors make `rdtsc` slower than the vDSO clock; the hot path reads the clock twice per
/// call, so take whichever is cheaper here (best of five batches of 256 reads each).
#[cfg(target_arch = "x86_64")]
fn rdtsc_is_cheaper() -> bool {
    let batch = |f: &dyn Fn() -> u64| {
        (0..5)
            .map(|_| {
                let t0 = clock_ns(libc::CLOCK_MONOTONIC);
                let mut x = 0u64;
                for _ in 0..256 {
                    x = x.wrapping_add(f());
                }
                std::hint::black_box(x);
                clock_ns(libc::CLOCK_MONOTONIC) - t0
            })
            .min()
            .unwrap_or(u64::MAX)
    };
    batch(&|| rdtsc()) <= batch(&|| clock_ns(libc::CLOCK_MONOTONIC))
}

/// `init`, taking a choice already made on this machine when there is one and it is usable here;
/// `force_monotonic` wins over it. A traced process hands its choice to its children through
/// `settings::env::TICKS` (`tsc:<ticks per second>` or `monotonic`, as `describe` writes it), so that
/// each short process a program starts does not spend two milliseconds measuring the same TSC again
/// (`causeway record` sets it for the first).
pub fn init_from(force_monotonic: bool, inherited: Option<&str>) -> (ClockKind, u64) {
    match inherited.map(str::trim) {
        Some("monotonic") if !force_monotonic => {
            KIND.store(ClockKind::Monotonic as u32, Ordering::Relaxed);
            return (ClockKind::Monotonic, 1_000_000_000);
        }
        #[cfg(target_arch = "x86_64")]
        Some(v) if !force_monotonic => {
            if let Some(hz) = v
                .strip_prefix("tsc:")
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|&hz| (1_000_000..=100_000_000_000).contains(&hz))
            {
                KIND.store(ClockKind::Tsc as u32, Ordering::Relaxed);
                return (ClockKind::Tsc, hz);
            }
        }
        _ => {}
    }
    init(force_monotonic)
}

/// `settings::env::TICKS`'s value for a clock choice.
pub fn describe(kind: ClockKind, hz: u64) -> String {
    match kind {
        ClockKind::Tsc => format!("tsc:{hz}"),
        ClockKind::Monotonic => "monotonic".into(),
    }
}

/// Chooses the tick clock once per process (`CAUSEWAY_CLOCK=monotonic` forces the portable one): the
/// invariant TSC where the CPU has one and it is the cheaper read, else CLOCK_MONOTONIC. Returns it with
/// its measured rate in ticks per second. Costs about two milliseconds with the TSC.
pub fn init(force_monotonic: bool) -> (ClockKind, u64) {
    #[cfg(target_arch = "x86_64")]
    if !force_monotonic && tsc_is_invariant() && rdtsc_is_cheaper() {
        KIND.store(ClockKind::Tsc as u32, Ordering::Relaxed);
        let a = anchor();
        // Spin rather than sleep: a sleeping thread may wake late but the rate stays exact either way.
        while clock_ns(libc::CLOCK_MONOTONIC) < a.mono_ns + 2_000_000 {
            std::hint::spin_loop();
        }
        let b = anchor();
        let hz = rate(&a, &b);
        if hz > 0 {
            return (ClockKind::Tsc, hz);
        }
    }
    let _ = force_monotonic;
    KIND.store(ClockKind::Monotonic as u32, Ordering::Relaxed);
    (ClockKind::Monotonic, 1_000_000_000)
}

/// Ticks per second between two anchors (0 if they are too close to say).
pub fn rate(a: &Anchor, b: &Anchor) -> u64 {
    let dt = b.mono_ns.saturating_sub(a.mono_ns);
    let dticks = b.ticks.saturating_sub(a.ticks);
    if dt < 100_000 {
        return 0;
    }
    ((dticks as u128 * 1_000_000_000) / dt as u128) as u64
}

const NS_PER_SEC: u64 = 1_000_000_000;

/// A tick of a ring with this clock, start anchor and rate (`Header::rate`) in CLOCK_MONOTONIC
/// nanoseconds, exactly as `docs/format.md` defines it:
/// `max(0, anchor.mono_ns + trunc((t − anchor.ticks) × 10⁹ / rate))`. A report converts tens of
/// millions of times: as whole seconds of ticks and the rest, the quotient takes two 64-bit divisions
/// where the 128-bit one took a library call (half the time per conversion, measured).
#[inline]
pub fn ticks_to_ns(clock: ClockKind, anchor: &Anchor, rate: u64, t: u64) -> u64 {
    if clock == ClockKind::Monotonic {
        return t;
    }
    if rate == 0 {
        return anchor.mono_ns;
    }
    let m = t.abs_diff(anchor.ticks);
    let ahead = t >= anchor.ticks;
    if rate <= u64::MAX / NS_PER_SEC {
        // The rest is below the rate, so its product with 10⁹ fits in 64 bits.
        let (q, r) = (m / rate, m % rate);
        let rest = r * NS_PER_SEC / rate;
        if ahead {
            // The format takes the sum mod 2⁶⁴.
            anchor
                .mono_ns
                .wrapping_add(q.wrapping_mul(NS_PER_SEC).wrapping_add(rest))
        } else {
            // A span past 2⁶⁴ ns is past any start: 0.
            q.checked_mul(NS_PER_SEC)
                .and_then(|s| s.checked_add(rest))
                .map_or(0, |span| anchor.mono_ns.saturating_sub(span))
        }
    } else {
        // Only a corrupt header has a rate this high.
        offset(
            anchor.mono_ns,
            ahead,
            m as u128 * NS_PER_SEC as u128 / rate as u128,
        )
    }
}

/// [`ticks_to_ns`] for one ring's many ticks in a pass over its entries: the same nanoseconds, for
/// less work when times fall close together. It keeps the whole second of ticks it last converted
/// (`[lo, lo + rate)` after the anchor), within which a time is `lo_ns + ⌊(t − lo) × 10⁹ / rate⌋`,
/// and for a rate above 1 GHz and up to 2³² Hz (any TSC of the last decade) divides by multiplying
/// with `⌈2⁶⁴ × 10⁹ / rate⌉`, which fits in 64 bits: exact for every `t − lo` below the rate (the
/// error, below `rate / 2⁶⁴`, stays under the `1 / rate` gap between the quotient's fractions and the
/// next integer). Other rates go through `ticks_to_ns`. Two 64-bit divisions per time were a tenth
/// of a report's instructions. Not shared between threads: each pass makes its own.
#[derive(Clone, Debug)]
pub struct Converter {
    clock: ClockKind,
    anchor: Anchor,
    rate: u64,
    /// `⌈2⁶⁴ × 10⁹ / rate⌉` when 10⁹ < rate ≤ 2³², else 0 (every time through `ticks_to_ns`).
    magic: u64,
    /// `(lo, lo_ns, width)`: the second last converted, `width` its ticks (the rate; 0 before one
    /// is kept, so that nothing falls in it). Never one whose end passes 2⁶⁴.
    second: std::cell::Cell<(u64, u64, u64)>,
}

impl Converter {
    pub fn new(clock: ClockKind, anchor: &Anchor, rate: u64) -> Converter {
        let fast = clock == ClockKind::Tsc && rate > NS_PER_SEC && rate <= 1 << 32;
        let magic = if fast {
            ((NS_PER_SEC as u128) << 64).div_ceil(rate as u128) as u64
        } else {
            0
        };
        let c = Converter {
            clock,
            anchor: *anchor,
            rate,
            magic,
            second: std::cell::Cell::new((0, 0, 0)),
        };
        // The anchor's own second is as good a start as any.
        if magic != 0 {
            c.cache(anchor.ticks, anchor.mono_ns);
        }
        c
    }

    /// `t` in CLOCK_MONOTONIC nanoseconds, as `ticks_to_ns` gives it.
    #[inline]
    pub fn ns(&self, t: u64) -> u64 {
        if self.magic != 0 {
            let (lo, lo_ns, width) = self.second.get();
            let r = t.wrapping_sub(lo);
            if r < width {
                return lo_ns.wrapping_add(self.rest(r));
            }
            return self.miss(t);
        }
        ticks_to_ns(self.clock, &self.anchor, self.rate, t)
    }

    /// A duration in ticks as nanoseconds, as `Header::span_ns` gives it.
    #[inline]
    pub fn span_ns(&self, t0: u64, t1: u64) -> u64 {
        self.ns(t1).saturating_sub(self.ns(t0))
    }

    /// `⌊r × 10⁹ / rate⌋` for `r < rate`, by the multiplication.
    #[inline]
    fn rest(&self, r: u64) -> u64 {
        ((r as u128 * self.magic as u128) >> 64) as u64
    }

    /// A time outside the cached second: its own second becomes the cached one when it is after
    /// the anchor (the format's sum is then `mono_ns + q × 10⁹ + rest`, mod 2⁶⁴).
    #[cold]
    fn miss(&self, t: u64) -> u64 {
        let a = &self.anchor;
        if t < a.ticks {
            return ticks_to_ns(self.clock, a, self.rate, t);
        }
        let q = (t - a.ticks) / self.rate;
        // At most t: no overflow.
        let lo = a.ticks + q * self.rate;
        let lo_ns = a.mono_ns.wrapping_add(q.wrapping_mul(NS_PER_SEC));
        self.cache(lo, lo_ns);
        lo_ns.wrapping_add(self.rest(t - lo))
    }

    /// Keeps the second from `lo` unless its end passes 2⁶⁴, where a time before `lo` would wrap
    /// into it.
    fn cache(&self, lo: u64, lo_ns: u64) {
        if lo.checked_add(self.rate).is_some() {
            self.second.set((lo, lo_ns, self.rate));
        }
    }
}

/// `max(0, mono_ns ± span)` mod 2⁶⁴: the quotient's magnitude, rounded down, is the signed quotient
/// truncated toward zero. `span` < 2⁶⁴ × 10⁹ fits in an i128.
#[inline]
fn offset(mono_ns: u64, ahead: bool, span: u128) -> u64 {
    let span = span as i128;
    let at = if ahead {
        mono_ns as i128 + span
    } else {
        mono_ns as i128 - span
    };
    at.max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift from `seed`: the same values every run, spread over the whole range.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// The format's definition, in 128-bit arithmetic.
    fn reference(clock: ClockKind, a: &Anchor, rate: u64, t: u64) -> u64 {
        if clock == ClockKind::Monotonic {
            return t;
        }
        if rate == 0 {
            return a.mono_ns;
        }
        let dt = t as i128 - a.ticks as i128;
        (a.mono_ns as i128 + dt * 1_000_000_000 / rate as i128).max(0) as u64
    }

    #[test]
    fn the_converter_gives_ticks_to_ns_for_every_time_in_any_order() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        let rates = [
            1_000_000_000,
            1_000_000_001,
            2_099_999_550,
            2_100_000_649,
            3_000_000_000,
            (1 << 32) - 1,
            1 << 32,
            (1 << 32) + 1,
            999_999_999,
            1,
            0,
        ];
        let anchors = [0, 1_000, 1 << 40, u64::MAX - 3_000_000_000, u64::MAX];
        let mut checked = 0u64;
        for &rate in &rates {
            for &at in &anchors {
                for clock in [ClockKind::Tsc, ClockKind::Monotonic] {
                    let a = Anchor {
                        ticks: at,
                        mono_ns: next() >> (next() % 64),
                        real_ns: 0,
                    };
                    let c = Converter::new(clock, &a, rate);
                    // Walks (a capture's times: forward, a little back, across seconds), jumps
                    // anywhere, second edges, and both ends of the range.
                    let mut t = at.wrapping_sub(next() % 10_000_000_000);
                    for i in 0..4_000u64 {
                        t = match i % 50 {
                            0 => next(),
                            1 => at.wrapping_add(rate.wrapping_mul(next() % 1000)),
                            2 => at
                                .wrapping_add(rate.wrapping_mul(next() % 1000))
                                .wrapping_sub(1),
                            3 => u64::MAX - next() % 3,
                            4 => next() % 3,
                            5 => t.wrapping_sub(next() % 5_000_000),
                            _ => t.wrapping_add(next() % 50_000_000),
                        };
                        assert_eq!(
                            c.ns(t),
                            ticks_to_ns(clock, &a, rate, t),
                            "clock {clock:?} rate {rate} anchor {at}/{} t {t}",
                            a.mono_ns
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 11 * 5 * 2 * 4_000);
    }

    /// `x` with `x × a ≡ 1 (mod m)`, for `a` and `m` coprime.
    fn inverse(a: u64, m: u64) -> u64 {
        let (mut r0, mut r1) = (m as i128, a as i128 % m as i128);
        let (mut s0, mut s1) = (0i128, 1i128);
        while r1 != 0 {
            let q = r0 / r1;
            (r0, r1) = (r1, r0 - q * r1);
            (s0, s1) = (s1, s0 - q * s1);
        }
        s0.rem_euclid(m as i128) as u64
    }

    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }

    #[test]
    fn the_converter_is_exact_where_the_quotient_is_or_comes_nearest_an_integer() {
        // Within a second, (t − lo) × 10⁹ / rate has its largest fraction, 1 − gcd / rate, at the
        // remainder r with r × 10⁹ ≡ −gcd (mod rate): where the multiplication's error would first
        // carry into the integer part.
        for rate in [
            1_000_000_001,
            1_000_000_007,
            2_099_999_550,
            2_100_000_001,
            3_000_000_019,
            (1 << 32) - 5,
            (1 << 32) - 1,
            1 << 32,
            // Past 2³², where the multiplication would no longer be exact (these divide).
            (1 << 32) + 1,
            5_000_000_029,
            (1 << 35) + 1,
        ] {
            let g = gcd(NS_PER_SEC, rate);
            let (a, m) = (NS_PER_SEC / g, rate / g);
            let r = ((m - 1) as u128 * inverse(a, m) as u128 % m as u128) as u64;
            assert_eq!(
                (r as u128 * NS_PER_SEC as u128 % rate as u128) as u64,
                rate - g
            );
            let anchor = Anchor {
                ticks: 7_000,
                mono_ns: 1 << 40,
                real_ns: 0,
            };
            let c = Converter::new(ClockKind::Tsc, &anchor, rate);
            // And where it is an integer (its fraction 0), the floor a reciprocal rounded down
            // would miss.
            for k in [0, 1, 2, 1_000, 86_400] {
                for r in [r, r + m.min(rate - 1 - r), m % rate, (2 * m) % rate] {
                    let t = anchor.ticks + k * rate + r;
                    assert_eq!(
                        c.ns(t),
                        ticks_to_ns(ClockKind::Tsc, &anchor, rate, t),
                        "rate {rate} second {k} rest {r}"
                    );
                }
            }
        }
    }

    #[test]
    fn ticks_to_ns_matches_the_formats_arithmetic_everywhere() {
        let big = u64::MAX / NS_PER_SEC;
        let rates = [
            0,
            1,
            3,
            999_999_999,
            1_000_000_000,
            2_099_999_550,
            2_100_000_649,
            3_000_000_000,
            1 << 33,
            big - 1,
            big,
            big + 1,
            1 << 62,
            u64::MAX,
        ];
        let points = [0, 1, 1_000, 1 << 32, 1 << 63, u64::MAX - 1, u64::MAX];
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let mut checked = 0;
        for &rate in &rates {
            for &at in &points {
                for &mono in &[0, 1_000, 1 << 40, u64::MAX - 5, u64::MAX] {
                    let a = Anchor {
                        ticks: at,
                        mono_ns: mono,
                        real_ns: 0,
                    };
                    for clock in [ClockKind::Tsc, ClockKind::Monotonic] {
                        // Near the anchor either side (a capture's times), and anywhere.
                        let mut ts = points.to_vec();
                        for _ in 0..64 {
                            let d = next() % 5_000_000_000;
                            ts.extend([at.wrapping_add(d), at.wrapping_sub(d), next()]);
                        }
                        for t in ts {
                            assert_eq!(
                                ticks_to_ns(clock, &a, rate, t),
                                reference(clock, &a, rate, t),
                                "clock {clock:?} rate {rate} anchor {at}/{mono} t {t}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 100_000);
    }
}
