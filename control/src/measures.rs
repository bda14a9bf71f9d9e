//! What the harness needs from each run's capture, per step. The scanner fills these in from its steps
//! view (`causeway report --steps`: the same step selection and the same definitions); the harness never
//! reads a capture itself.

use serde::Serialize;

/// The steps of one run (instrumented or control arm), in time order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunMeasures {
    pub steps: Vec<StepMeasure>,
    /// Whether the capture had device spans on the host clock (false for the control arm).
    pub device_timed: bool,
    /// Whether those spans came from the events backend (timing events around each call: a span
    /// starts before its work does) rather than CUPTI.
    pub event_timed: bool,
    /// Records the capture lost: entries dropped (ring full) or overwritten, device records the
    /// backend dropped. Steps after a loss miss calls, ranges or device spans.
    pub lost: u64,
    /// The device-timing backends the capture's rings name, of the processes whose steps were
    /// device-timed (`cupti`, `events`, `unified_runtime`, `level_zero`), sorted, each once.
    pub timed_by: Vec<String>,
}

/// One step (one NVTX range).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepMeasure {
    /// End − begin of the step's range, host clock.
    pub wall_ns: u64,
    /// `None` without device timing.
    pub device: Option<DeviceMeasure>,
}

/// The device figures of one step: device spans overlapping the step, clipped to it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceMeasure {
    /// |∪ memcpy spans|.
    pub copy_ns: u64,
    /// |∪ kernel spans|.
    pub compute_ns: u64,
    /// |copy ∩ compute|.
    pub overlap_ns: u64,
    /// Per stream with device work in the step: |∪ that stream's spans| (any kind), largest first.
    pub streams_ns: Vec<u64>,
    /// |∪ every span| of those streams.
    pub union_ns: u64,
    /// How far device work fails to lie inside the step (ns; 0 when it all does): of the spans mostly
    /// inside the step (its own work), the largest reach before its begin plus the largest after its
    /// end; plus, of the spans mostly outside it (other steps' work), the largest piece inside it.
    pub outside_ns: u64,
    /// |∪ memcpy spans| with each event-timed span's start moved later by its issuing call's host
    /// time (an events span starts when its stream reached the start event, before the call had
    /// submitted the work); equal to `copy_ns` for CUPTI's spans, which start when the work did.
    pub copy_lo_ns: u64,
    /// The same for kernel spans (`compute_ns`).
    pub compute_lo_ns: u64,
    /// The same per stream (`streams_ns`, in the same order).
    pub streams_lo_ns: Vec<u64>,
}

impl DeviceMeasure {
    /// overlap / min(copy, compute); `None` when either is 0.
    pub fn copy_compute_overlap(&self) -> Option<f64> {
        let m = self.copy_ns.min(self.compute_ns);
        (m > 0).then(|| self.overlap_ns as f64 / m as f64)
    }

    /// Σ streams − max stream: the time the streams other than the busiest were busy.
    fn others_ns(&self) -> u64 {
        let sum: u64 = self.streams_ns.iter().sum();
        sum - self.streams_ns.iter().copied().max().unwrap_or(0)
    }

    /// Stream concurrency: (Σ streams − |∪|) / (Σ streams − max stream), the share of the time of the
    /// streams other than the busiest that ran alongside other streams' work — 0 when the streams'
    /// work was serialised, 1 when it was all hidden under the busiest stream. For two streams A and B
    /// it is |A ∩ B| / min(|A|, |B|). `None` with fewer than two busy streams.
    pub fn stream_concurrency(&self) -> Option<f64> {
        let sum: u64 = self.streams_ns.iter().sum();
        let others = self.others_ns();
        (others > 0).then(|| sum.saturating_sub(self.union_ns) as f64 / others as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(copy: u64, compute: u64, overlap: u64, streams: &[u64], union: u64) -> DeviceMeasure {
        DeviceMeasure {
            copy_ns: copy,
            compute_ns: compute,
            overlap_ns: overlap,
            streams_ns: streams.to_vec(),
            union_ns: union,
            outside_ns: 0,
            copy_lo_ns: copy,
            compute_lo_ns: compute,
            streams_lo_ns: streams.to_vec(),
        }
    }

    #[test]
    fn overlap_and_concurrency_on_fixed_steps() {
        // Copy 100 on one stream, kernel 200 on another, 80 of them together.
        let d = dev(100, 200, 80, &[200, 100], 220);
        assert_eq!(d.copy_compute_overlap(), Some(0.8));
        assert_eq!(d.stream_concurrency(), Some(0.8));
        // Serialised on two streams.
        let d = dev(100, 200, 0, &[200, 100], 300);
        assert_eq!(d.stream_concurrency(), Some(0.0));
        // Three streams of 100 all at once: everything but the busiest is hidden.
        let d = dev(0, 300, 0, &[100, 100, 100], 100);
        assert_eq!(d.stream_concurrency(), Some(1.0));
        assert_eq!(d.copy_compute_overlap(), None);
        // One stream: no concurrency figure.
        assert_eq!(dev(1, 1, 0, &[2], 2).stream_concurrency(), None);
    }
}
