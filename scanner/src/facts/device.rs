//! Device intervals (level 3): when each kernel, copy and memset ran on the device, as the shim's
//! device-timing backend wrote them into the ring off the hot path, and which call issued each.
//!
//! Each interval names the call that issued it by sequence number (`a0`), so association is by
//! identity, never by timestamp proximity; [`issuer`] is that rule, for the report and the
//! timeline alike. When an interval ran on the host clock is [`crate::facts::placement`]'s answer.

use crate::read::decode::Entries;
use causeway_ring::layout::NO_CALL;
use causeway_ring::{Class, Entry, Kind};

/// The name of a header's device-timing backend (`layout::Backend`, named by `settings`).
pub fn backend_name(v: u32) -> String {
    match causeway_ring::layout::Backend::from_u32(v) {
        Some(b) => b.name().to_string(),
        None => format!("unknown({v})"),
    }
}

/// The name of a memcpy kind (CUPTI's `CUpti_ActivityMemcpyKind`, the interval's `depth`).
pub fn copy_kind_name(kind: u16) -> String {
    match kind {
        1 => "HtoD",
        2 => "DtoH",
        3 => "HtoA",
        4 => "AtoH",
        5 => "AtoA",
        6 => "AtoD",
        7 => "DtoA",
        8 => "DtoD",
        9 => "HtoH",
        10 => "PtoP",
        0 => "unknown",
        n => return format!("kind {n}"),
    }
    .into()
}

/// The `kind` of the copies row that counts memsets.
pub const MEMSET_ROW: &str = "memset";

/// The kernel row of a graph launch timed as a whole (events backend).
pub const GRAPH_ROW: &str = "[graph launch]";
/// The kernel row of an anchored kernel interval whose launch call is not in the capture.
pub const UNKNOWN_KERNEL_ROW: &str = "[unknown kernel]";

/// Whether `e` is a device interval as the backend completed it. An interval is written whole; one
/// that is not is a torn write, already counted as open.
#[inline]
pub(crate) fn completed_interval(e: &Entry) -> bool {
    e.kind == Some(Kind::DeviceInterval) && e.done
}

/// Who issued a device interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Issuer {
    /// The call at this index of the ring's entries (a call of a class that issues work).
    Call(usize),
    /// The backend did not name a call (work it could not correlate).
    NoCall,
    /// The named call is not in the capture (overwritten, dropped, or before the window).
    NotInCapture,
    /// The named entry is not a call that issues device work (a corrupt or foreign record).
    WrongClass,
}

/// The issuer of completed interval `e`, given `index`, the index of the entry its `a0` names
/// (`entries.index_of_seq(e.a0)`, asked by the caller, who may have it already).
#[inline]
pub fn issuer(
    entries: Entries,
    e: &Entry,
    index: Option<usize>,
    class_of: impl Fn(&Entry) -> Option<Class>,
) -> Issuer {
    if e.a0 == NO_CALL {
        return Issuer::NoCall;
    }
    match index {
        None => Issuer::NotInCapture,
        Some(i) => {
            let c = entries.get(i);
            if c.kind == Some(Kind::Call) && class_of(&c).is_some_and(Class::issues_work) {
                Issuer::Call(i)
            } else {
                Issuer::WrongClass
            }
        }
    }
}
