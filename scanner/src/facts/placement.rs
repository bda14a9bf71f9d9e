//! When device work ran, on the host clock: the one rule that decides, for a device interval,
//! whether it was timed at all and how its times map onto the host's CLOCK_MONOTONIC. The report's
//! device section, the waits and the timeline (steps, gaps, exports, HTML) all place intervals
//! through [`timing`], so an interval one of them draws is never one another calls untimed.

use crate::facts::anchors::{anchored, Anchors, Converted};
use causeway_ring::clock::Converter;
use causeway_ring::layout::entry_flags;
use causeway_ring::Entry;

/// How a completed device interval was timed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timing {
    /// The backend could not time it: a time of 0 (CUPTI out of device memory), or an end before
    /// its begin. `convertible`: its clock would have converted (host clock, or an anchor present).
    Untimed { convertible: bool },
    /// Timed on the host clock (CUPTI's timestamp callback): the entry's ticks convert as host ticks.
    HostClock { t_begin: u64, t_end: u64 },
    /// Timed from an events-backend anchor: host times with their bounds.
    Anchored {
        begin: Converted,
        end: Converted,
        /// Whether the anchor chain measured the device clock's rate (else it was assumed).
        measured: bool,
    },
    /// Timed on the backend's own clock, with no conversion to the host's (the anchor is not in the
    /// capture, or the backend wrote device time): only the duration means something.
    OwnClock { duration_ns: u64 },
}

/// The timing of device interval `e`. `anchors`: the ring's anchors (the events backend); `None`
/// only where no interval is anchored.
#[inline]
pub fn timing(e: &Entry, anchors: Option<&Anchors>) -> Timing {
    let anchor =
        anchored(e).and_then(|(id, o0, o1)| anchors.and_then(|a| a.get(id)).map(|c| (c, o0, o1)));
    let on_host_clock = e.flags & entry_flags::HOST_CLOCK != 0;
    // Anchored offsets are signed and may be 0; any other time of 0 is the backend saying it could
    // not time the work.
    let timed = if e.flags & entry_flags::ANCHORED != 0 {
        (e.t_end as i64) >= (e.t_begin as i64)
    } else {
        e.t_begin != 0 && e.t_end != 0 && e.t_end >= e.t_begin
    };
    if !timed {
        Timing::Untimed {
            convertible: on_host_clock || anchor.is_some(),
        }
    } else if let Some((c, o0, o1)) = anchor {
        Timing::Anchored {
            begin: c.convert(o0),
            end: c.convert(o1),
            measured: c.measured,
        }
    } else if on_host_clock {
        Timing::HostClock {
            t_begin: e.t_begin,
            t_end: e.t_end,
        }
    } else {
        Timing::OwnClock {
            duration_ns: (e.t_end as i64).wrapping_sub(e.t_begin as i64).max(0) as u64,
        }
    }
}

/// An interval placed on the host clock: begin and end in host ns, and how far either may be off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    pub begin_ns: u64,
    pub end_ns: u64,
    /// 0 on the host clock; an anchored interval's larger conversion bound, rounded up.
    pub bound_ns: u64,
}

impl Timing {
    /// Where the interval lies on the host clock, or `None` when it cannot be placed there.
    #[inline]
    pub fn placed(&self, ticks: &Converter) -> Option<Placed> {
        match *self {
            Timing::HostClock { t_begin, t_end } => Some(Placed {
                begin_ns: ticks.ns(t_begin),
                end_ns: ticks.ns(t_end),
                bound_ns: 0,
            }),
            Timing::Anchored { begin, end, .. } => Some(Placed {
                begin_ns: begin.ns.max(0.0).round() as u64,
                end_ns: end.ns.max(0.0).round() as u64,
                bound_ns: begin.bound_ns.max(end.bound_ns).ceil() as u64,
            }),
            Timing::Untimed { .. } | Timing::OwnClock { .. } => None,
        }
    }
}

/// Where device interval `e` lies on the host clock, if it can be placed there.
#[inline]
pub fn place(e: &Entry, anchors: &Anchors, ticks: &Converter) -> Option<Placed> {
    timing(e, Some(anchors)).placed(ticks)
}
