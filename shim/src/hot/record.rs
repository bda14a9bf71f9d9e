//! Recording a call: deciding whether it is recorded and writing its entry — committed open before
//! the real call, completed after it. No allocation, no lock, no system call here (a thread's first
//! call takes one `gettid`, once).

use super::guard::{tls, Tls};
use super::state;
use causeway_ring::layout::entry_flags;
use causeway_ring::{clock, Fields, Kind};

#[cold]
fn first_call_on_thread(t: &Tls) -> u32 {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
    t.tid.set(tid);
    if let Some(w) = state::writer() {
        let f = Fields {
            t_begin: clock::ticks(),
            tid,
            kind: Kind::ThreadStart as u8,
            ..Fields::default()
        };
        w.instant(&f, 0);
    }
    tid
}

/// A hooked call the level does not record still makes its thread known (its `ThreadStart`), once:
/// thread lifecycle is recorded at every level. One thread-local read afterwards.
#[inline(always)]
fn note_thread() {
    let t = tls();
    if t.tid.get() == 0 && !t.internal.get() && state::writer().is_some() {
        first_call_on_thread(t);
    }
}

/// This thread's kernel id, cached (the first call on a thread records its start).
#[inline(always)]
fn tid(t: &Tls) -> u32 {
    match t.tid.get() {
        0 => first_call_on_thread(t),
        id => id,
    }
}

/// An open, recorded call. `finish` completes it.
pub struct Open {
    w: causeway_ring::Writer,
    seq: Option<u64>,
    depth: u16,
    tls: &'static Tls,
}

/// Starts recording a call of `api` if the shim is active, the level asks for it and the caller is not
/// the shim itself. `None` means: just make the real call.
#[inline(always)]
pub fn begin(api: u16, level: u8, flags: u8, a0: u64, a1: u64, a2: u64) -> Option<Open> {
    begin_with(api, level, flags, a0, a1, a2, |_| ()).map(|(open, ())| open)
}

/// `begin`, running `pre(depth)` just before the call's begin time is read: what the shim itself does
/// before the real call (the events backend's start event) stays out of the call's recorded duration.
#[inline(always)]
pub fn begin_with<X>(
    api: u16,
    level: u8,
    flags: u8,
    a0: u64,
    a1: u64,
    a2: u64,
    pre: impl FnOnce(u16) -> X,
) -> Option<(Open, X)> {
    if level > state::level() {
        state::start_device_timing_early();
        note_thread();
        return None;
    }
    let w = state::writer()?;
    let t = tls();
    if t.internal.get() {
        return None;
    }
    state::ensure_started();
    let tid = tid(t);
    let depth = t.depth.get();
    t.depth.set(depth.wrapping_add(1));
    let x = pre(depth);
    let f = Fields {
        node: 0,
        t_begin: clock::ticks(),
        tid,
        api,
        kind: Kind::Call as u8,
        flags,
        depth,
        a0,
        a1,
        a2,
    };
    let open = Open {
        w,
        seq: w.begin(&f),
        depth,
        tls: t,
    };
    Some((open, x))
}

impl Open {
    /// The call's ring sequence number (`None` when a full ring dropped its entry): what the device
    /// intervals it issues carry as their `a0`.
    #[inline(always)]
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }

    /// Recorded calls already open on this thread when this one began (0 = outermost).
    #[inline(always)]
    pub fn depth(&self) -> u16 {
        self.depth
    }

    #[inline(always)]
    pub fn finish(self, result: i32) {
        self.finish_with(result, None);
    }

    /// `finish`, replacing the entry's `a1` with what the call handed back, when given.
    #[inline(always)]
    pub fn finish_with(self, result: i32, a1: Option<u64>) {
        let t = clock::ticks();
        if let Some(seq) = self.seq {
            self.w.end_with(seq, t, result, a1);
        }
        self.tls.depth.set(self.tls.depth.get().wrapping_sub(1));
    }
}

/// Records an entry that is complete when written (NVTX ranges and marks, lifecycle). Recorded at
/// every level.
#[inline(always)]
pub fn instant(kind: Kind, api: u16, a0: u64, a1: u64, a2: u64) {
    instant_seq(kind, api, a0, a1, a2);
}

/// `instant`, returning the entry's sequence number (`None`: not recorded), which an NVTX mark's or
/// range's `NvtxAttributes` entry names.
#[inline(always)]
pub fn instant_seq(kind: Kind, api: u16, a0: u64, a1: u64, a2: u64) -> Option<u64> {
    instant_result(kind, api, [a0, a1, a2], 0)
}

/// `instant_seq` with a `result` field (a graph node's index in its executable graph).
#[inline(always)]
pub fn instant_result(kind: Kind, api: u16, a: [u64; 3], result: i32) -> Option<u64> {
    let [a0, a1, a2] = a;
    let w = state::writer()?;
    let t = tls();
    if t.internal.get() {
        return None;
    }
    if !matches!(kind, Kind::ProcessStart | Kind::ProcessExit) {
        state::ensure_reserved();
    }
    let f = Fields {
        t_begin: clock::ticks(),
        tid: tid(t),
        api,
        kind: kind as u8,
        a0,
        a1,
        a2,
        ..Fields::default()
    };
    w.complete(&f, f.t_begin, result)
}

/// Records a work-token entry (`Kind::TokenBegin` … `Kind::TokenAccept`): a0 = hi, a1 = lo, a2 =
/// `to` (handoffs), result = generation. Recorded at every level, like NVTX marks; api 0, since no
/// hooked entry point made it.
#[inline]
pub fn token(kind: Kind, hi: u64, lo: u64, generation: u32, to: u64) {
    complete_now(kind, 0, [hi, lo, to], generation as i32);
}

/// What an NVTX attribute structure carried beyond its message, for the entry `owner` (see
/// `Kind::NvtxAttributes`).
pub struct NvtxAttributes {
    pub owner: u64,
    pub payload: u64,
    pub category: u32,
    pub color: Option<u32>,
    pub payload_type: i32,
    pub ext_count: u16,
}

/// Records the `NvtxAttributes` entry that follows an NVTX mark or range. Recorded at every level.
#[inline]
pub fn nvtx_attributes(api: u16, x: &NvtxAttributes) {
    let Some(w) = state::writer() else { return };
    let t = tls();
    if t.internal.get() {
        return;
    }
    let f = Fields {
        node: 0,
        t_begin: clock::ticks(),
        tid: tid(t),
        api,
        kind: Kind::NvtxAttributes as u8,
        flags: if x.color.is_some() {
            entry_flags::NVTX_COLOR
        } else {
            0
        },
        depth: x.ext_count,
        a0: x.owner,
        a1: x.payload,
        a2: x.category as u64 | (x.color.unwrap_or(0) as u64) << 32,
    };
    w.complete(&f, f.t_begin, x.payload_type);
}

/// Records an NVTX call that is not a mark or range (naming, domains, resources, user sync objects)
/// as a complete call: it does nothing the program waits for, so it takes no time. Recorded at every
/// level, like the marks and ranges, at this thread's current call depth.
#[inline]
pub fn nvtx_call(api: u16, a0: u64, a1: u64, a2: u64) {
    complete_now(Kind::Call, api, [a0, a1, a2], 0);
}

/// A complete entry of `kind` taking no time, at every level, at this thread's current call depth
/// (work tokens, NVTX calls that are not marks or ranges).
#[inline]
fn complete_now(kind: Kind, api: u16, a: [u64; 3], result: i32) {
    let Some(w) = state::writer() else { return };
    let t = tls();
    if t.internal.get() {
        return;
    }
    state::ensure_reserved();
    let f = Fields {
        t_begin: clock::ticks(),
        tid: tid(t),
        api,
        kind: kind as u8,
        depth: t.depth.get(),
        a0: a[0],
        a1: a[1],
        a2: a[2],
        ..Fields::default()
    };
    w.complete(&f, f.t_begin, result);
}
