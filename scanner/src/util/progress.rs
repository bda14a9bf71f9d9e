//! Progress for long scans on a terminal (indicatif): a spinner with the rings done and the time
//! spent, on stderr, only when stderr is a terminal and the capture is large. Nothing otherwise, so
//! pipes, logs and `--json` consumers see exactly the report.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Captures smaller than this scan in well under a second: no progress shown.
const SHOW_FROM_BYTES: u64 = 256 << 20;

/// A progress display over the rings of one scan (hidden unless worth showing).
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// For a scan of `rings` rings of `bytes` bytes in all, doing `what`.
    pub fn rings(what: &str, rings: usize, bytes: u64) -> Progress {
        if bytes < SHOW_FROM_BYTES || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let pb = ProgressBar::with_draw_target(Some(rings as u64), ProgressDrawTarget::stderr());
        let style =
            ProgressStyle::with_template("{spinner} {msg}: {pos}/{len} ring(s) done, {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
        pb.set_style(style);
        pb.set_message(format!("{what} ({} MiB)", bytes >> 20));
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        Progress(Some(pb))
    }

    /// One ring done (any thread).
    pub fn ring_done(&self) {
        if let Some(pb) = &self.0 {
            pb.inc(1);
        }
    }

    pub fn is_shown(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(pb) = &self.0 {
            pb.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_shown_for_small_captures_or_off_a_terminal() {
        // Under the test harness stderr is captured, not a terminal.
        assert!(!Progress::rings("scan", 4, 1 << 40).is_shown());
        assert!(!Progress::rings("scan", 4, 1).is_shown());
    }
}
