//! Stage marks, for measuring where a command's time and memory go (`CAUSEWAY_STAGES`, read once):
//! each mark prints to stderr the time since the first mark, the resident memory, and the peak
//! since the mark before, whose count it then resets (Linux: `/proc/self/clear_refs`), so that each
//! stage shows its own peak. Nothing happens when the variable is unset or empty.

use std::sync::OnceLock;
use std::time::Instant;

/// When the first mark was made, if marks are on.
fn start() -> Option<Instant> {
    static START: OnceLock<Option<Instant>> = OnceLock::new();
    *START.get_or_init(|| {
        std::env::var_os(causeway_ring::settings::env::STAGES)
            .filter(|v| !v.is_empty())
            .map(|_| Instant::now())
    })
}

/// Marks the end of stage `name`.
pub fn mark(name: &str) {
    let Some(t0) = start() else { return };
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let (rss, peak) = memory();
    let mb = |kb: Option<u64>| kb.map_or("?".to_string(), |k| format!("{} MB", k >> 10));
    eprintln!(
        "causeway: stage {name}: {ms:.1} ms, resident {}, peak since the last stage {}",
        mb(rss),
        mb(peak)
    );
    // Resets the peak count (VmHWM) to the resident size; without it (not Linux) the peak is the
    // process's so far.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Resident memory and its peak (VmHWM), in KiB, where the system says.
fn memory() -> (Option<u64>, Option<u64>) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        let line = status.lines().find(|l| l.starts_with(key))?;
        line[key.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    (kb("VmRSS:"), kb("VmHWM:"))
}
