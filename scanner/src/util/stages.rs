//! Stage marks, for measuring where a command's time and memory go (`CAUSEWAY_STAGES`, read once):
//! each mark prints to stderr the time since the first mark, the CPU time the process spent since
//! then (all threads: with the wall time, how many CPUs a stage kept busy), the resident memory,
//! and the peak since the mark before, whose count it then resets (Linux: `/proc/self/clear_refs`),
//! so that each stage shows its own peak. Nothing happens when the variable is unset or empty.

use std::sync::OnceLock;
use std::time::Instant;

/// When the first mark was made and the process's CPU time then, if marks are on.
fn start() -> Option<(Instant, f64)> {
    static START: OnceLock<Option<(Instant, f64)>> = OnceLock::new();
    *START.get_or_init(|| {
        std::env::var_os(causeway_ring::settings::env::STAGES)
            .filter(|v| !v.is_empty())
            .map(|_| (Instant::now(), cpu_ms()))
    })
}

/// Marks the end of stage `name`.
pub fn mark(name: &str) {
    let Some((t0, cpu0)) = start() else { return };
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let cpu = cpu_ms() - cpu0;
    let (rss, peak) = memory();
    let mb = |kb: Option<u64>| kb.map_or("?".to_string(), |k| format!("{} MB", k >> 10));
    eprintln!(
        "causeway: stage {name}: {ms:.1} ms, cpu {cpu:.1} ms, resident {}, peak since the last \
         stage {}",
        mb(rss),
        mb(peak)
    );
    // Resets the peak count (VmHWM) to the resident size; without it (not Linux) the peak is the
    // process's so far.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// User and system CPU time of the whole process so far, in milliseconds.
fn cpu_ms() -> f64 {
    // SAFETY: `getrusage` only writes the struct it is given, which is plain data.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to that struct.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    ms(u.ru_utime) + ms(u.ru_stime)
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
