//! Streams: which stream a call is on (the per-thread default stream is each thread's own), which
//! streams are being captured into a graph at each point of the capture, and which calls name a
//! stream. The report, the waits, the device association and the timeline all read these, so each
//! rule is written once, here (which classes issue device work is the ring crate's
//! `Class::issues_work`).

use crate::util::fastmap::HashMap;
use causeway_ring::layout::{capture_phase, entry_flags};
use causeway_ring::{Class, Entry};

/// Whether a call of this class names a stream in its first argument (`a0`).
#[inline]
pub fn takes_stream(c: Option<Class>) -> bool {
    matches!(
        c,
        Some(
            Class::Launch
                | Class::Copy
                | Class::Memset
                | Class::Sync
                | Class::EventRecord
                | Class::StreamWait
                | Class::GraphLaunch
                | Class::Capture
                | Class::HostFunc
                | Class::Prefetch
                | Class::MemOp
                | Class::StreamOp
        )
    )
}

/// CUDA's per-thread default stream handle (`cudaStreamPerThread`, `CU_STREAM_PER_THREAD`).
pub const PER_THREAD_STREAM: u64 = 2;
/// `cudaErrorStreamCaptureInvalidated` / `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`: an end-capture call
/// that returns it still ends the capture (with no graph).
const CAPTURE_INVALIDATED: i32 = 901;

/// A stream as capture tracking sees it: the handle, and for the per-thread default stream (which
/// each thread has its own of) the thread.
pub type StreamKey = (u64, u32);

pub fn stream_key(e: &Entry) -> StreamKey {
    key_of(e.a0, e.tid, e.flags & entry_flags::PER_THREAD != 0)
}

/// The stream key of a call naming `stream` on thread `tid`; `per_thread`: the call is a per-thread
/// variant (`_ptsz`/`_ptds`), whose stream 0 is the thread's own default stream.
pub fn key_of(stream: u64, tid: u32, per_thread: bool) -> StreamKey {
    if stream == PER_THREAD_STREAM || (stream == 0 && per_thread) {
        (PER_THREAD_STREAM, tid)
    } else {
        (stream, 0)
    }
}

/// Which streams of one process are being captured, followed in sequence order.
#[derive(Default)]
pub(crate) struct Captures {
    /// Capturing streams → their capture (the sequence number of the call that began it).
    streams: HashMap<StreamKey, u64>,
    /// Events last recorded into a capturing stream → that capture. A stream that waits on one joins
    /// the capture (CUDA's fork/join pattern for capturing several streams into one graph).
    events: HashMap<u64, u64>,
}

impl Captures {
    /// Whether calls of `class` change capture state (`apply` ignores every other class).
    #[inline]
    pub(crate) fn tracks(class: Class) -> bool {
        matches!(
            class,
            Class::Capture | Class::EventRecord | Class::StreamWait
        )
    }

    #[inline]
    pub(crate) fn capturing(&self, e: &Entry) -> bool {
        // Most programs never capture: no hashing per launch then.
        !self.streams.is_empty() && self.streams.contains_key(&stream_key(e))
    }

    /// Applies a completed call of class `class`. A runtime call and the driver call inside it both
    /// arrive here; each step is idempotent, so the pair acts once.
    pub(crate) fn apply(&mut self, class: Class, e: &Entry) {
        let ok = e.done && e.result == 0;
        match class {
            Class::Capture if ok && e.a2 == capture_phase::BEGIN => {
                self.streams.entry(stream_key(e)).or_insert(e.seq);
            }
            Class::Capture
                if e.done
                    && e.a2 == capture_phase::END
                    && (e.result == 0 || e.result == CAPTURE_INVALIDATED) =>
            {
                // Ending the capture on its origin stream ends it for every stream that joined it.
                if let Some(c) = self.streams.get(&stream_key(e)).copied() {
                    self.streams.retain(|_, v| *v != c);
                    self.events.retain(|_, v| *v != c);
                }
            }
            Class::EventRecord if ok => match self.streams.get(&stream_key(e)) {
                Some(&c) => {
                    self.events.insert(e.a1, c);
                }
                None => {
                    self.events.remove(&e.a1);
                }
            },
            Class::StreamWait if ok => {
                if let Some(&c) = self.events.get(&e.a1) {
                    self.streams.entry(stream_key(e)).or_insert(c);
                }
            }
            _ => {}
        }
    }
}
