//! A hostile ring's huge names: one 300 KB kernel name in 2 000 launches (and their device spans), a
//! step name as long, is 600 MB of text in every output that repeats it per row, but what the
//! commands hold stays near what the ring holds, not what the names repeated would be.

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use causeway_ring::layout::{Class, ClockKind, Kind, Layer, Policy};
use common::*;

const LAUNCHES: u64 = 2_000;

fn huge_names_ring() -> RingBuilder {
    let at = (3, ClockKind::Monotonic, 1_000_000_000);
    let b = RingBuilder::with_strings(8192, 640 << 10, Policy::Drop, 1000, 1, at);
    let huge = "K".repeat(300_000);
    b.api(1, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .kernel(0xd00, &huge)
        .text(5, &huge)
        .text(10, &huge);
    b.instant(Kind::ProcessStart, TID, 1, 0, 0, 0);
    for i in 0..LAUNCHES {
        let t = 1_000 + 10_000 * i;
        if i % 2 == 0 {
            b.instant(Kind::RangePush, TID, t, 10, 0, 0);
        }
        let seq = b.call(TID, 1, 0, t + 100, t + 200, 0, 0xd00).unwrap();
        b.kernel_interval(seq, 5, t + 300, t + 900).unwrap();
        if i % 2 == 1 {
            b.instant(Kind::RangePop, TID, t + 5_000, 0, 0, 0);
        }
    }
    b
}

/// Runs `causeway ARGS` and returns its peak resident set (KiB), from its own `wait4`.
// The child is reaped by `wait4`, which clippy does not see; `Child::wait` would not give its usage.
#[allow(clippy::zombie_processes)]
fn peak_kib(args: &[&std::ffi::OsStr]) -> i64 {
    let mut child = causeway()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read to its end (the child's exit) first: a full pipe would stop it.
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    let mut status = 0;
    // SAFETY: zeroed bytes are a valid `rusage`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child; `status` and `ru` are valid for writes.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as i32);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{args:?}: status {status}: {said}"
    );
    ru.ru_maxrss
}

#[test]
fn huge_names_repeated_per_row_do_not_multiply_memory() {
    let dir = TempDir::new("huge-names");
    let ring = dir.join("a.cwring");
    huge_names_ring().write_to(&ring);
    let ring_kib = (std::fs::metadata(&ring).unwrap().len() / 1024) as i64;
    let os = |s: &str| std::ffi::OsString::from(s);
    // (command, arguments, most KiB it may hold): far below one copy per row (600 MB a column) —
    // the names once and the model (about 20 MB here in a debug build); for Parquet its batches in
    // flight too, which `chunk_rows` keeps to a few hundred MB whatever the rows (410 MB here: two
    // text columns of three tables side by side). Before: html 340 MB, Parquet 790 MB (every run of
    // the edges table's batches at once; 2.5 GB for a ring of 1 000 steps).
    for (what, args, most) in [
        (
            "html",
            vec![os("html"), os("-o"), dir.join("r.html").into()],
            100 << 10,
        ),
        (
            "parquet",
            vec![
                os("export"),
                os("--format"),
                os("parquet"),
                os("-o"),
                dir.join("pq").into(),
            ],
            600 << 10,
        ),
        (
            "perfetto",
            vec![
                os("export"),
                os("--format"),
                os("perfetto"),
                os("-o"),
                dir.join("t.pftrace").into(),
            ],
            100 << 10,
        ),
        (
            "report --steps",
            vec![os("report"), os("--steps")],
            100 << 10,
        ),
    ] {
        let mut a: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_os_str()).collect();
        a.push(ring.as_os_str());
        let kib = peak_kib(&a);
        assert!(
            kib < most,
            "{what}: peak {kib} KiB for a {ring_kib} KiB ring"
        );
    }
}
