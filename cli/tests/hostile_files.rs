//! Capture files that lie or change under the reader (issue 20, items 4, 5 and 7): a sparse ring that
//! claims a billion reserved slots, a ring truncated while it is read, a FIFO named like a ring. Each
//! gets an answer, in bounded time and memory, and never a signal, an abort or a hang.

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use causeway_ring::layout::{self, hdr, Policy};
use causeway_scanner::read::capture::RingFile;
use common::*;
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Peak RSS of this process's children, in KiB.
fn children_max_rss_kib() -> i64 {
    // SAFETY: zeroed bytes are a valid `rusage`; a valid out-pointer.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    u.ru_maxrss
}

/// A ring whose header claims 2^30 slots, every one reserved (head = capacity), in a sparse file of
/// the size that needs (64 GiB of holes): readers must answer from what is there.
#[test]
fn a_sparse_ring_claiming_a_billion_slots_is_read_in_bounded_memory() {
    let dir = TempDir::new("sparse");
    let b = RingBuilder::new(64, Policy::Drop);
    let mut bytes = b.bytes().to_vec();
    let cap: u64 = 1 << 30;
    let strings = u64::from_le_bytes(
        bytes[hdr::STRINGS_SIZE..hdr::STRINGS_SIZE + 8]
            .try_into()
            .unwrap(),
    );
    put64(&mut bytes, hdr::CAPACITY, cap);
    put64(&mut bytes, hdr::HEAD, cap);
    let entries = layout::HEADER_SIZE as u64 + strings;
    bytes.truncate(entries as usize);
    let path = dir.join("sparse.cwring");
    std::fs::write(&path, &bytes).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(layout::file_size(cap, strings)).unwrap();
    drop(f);
    let t0 = Instant::now();
    let o = causeway()
        .args(["report", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let took = t0.elapsed();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["processes"][0];
    assert_eq!(p["entries"], 0, "{p}");
    assert_eq!(p["torn"], cap, "{p}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let rss = children_max_rss_kib();
    assert!(
        rss < 512 * 1024,
        "peak RSS {rss} KiB reading a 64 GiB sparse ring"
    );
}

/// A mapped ring cut short while it is read: the reader sees zeros past the new end (torn slots),
/// says the file changed, and is not killed by SIGBUS.
#[test]
fn a_ring_truncated_while_it_is_read_does_not_kill_the_reader() {
    let dir = TempDir::new("shrink");
    let path = dir.join("a.cwring");
    scenario().write_to(&path);
    let len = std::fs::metadata(&path).unwrap().len();
    let rf = RingFile::open(&path).unwrap();
    assert!(!rf.changed());
    // Another process truncates the file.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let b = rf.bytes();
    assert_eq!(b.len() as u64, len);
    // Past the new end: a zero page instead of SIGBUS.
    let tail: u64 = b[b.len() - 4096..].iter().map(|&x| x as u64).sum();
    assert_eq!(tail, 0);
    assert!(rf.changed());
    assert!(causeway_scanner::util::guard::any_fault());
}

/// The same through the CLI: a shrinking ring is reported as an error (exit 2, one line), never a
/// signal. The truncation races the read, so the test repeats it; every run must end in 0 or 2.
#[test]
fn the_cli_reports_a_ring_that_shrinks_under_it() {
    let dir = TempDir::new("shrink-cli");
    let big = {
        let b = RingBuilder::new(1 << 18, Policy::Drop);
        b.api(
            1,
            "cudaMemcpy",
            causeway_ring::layout::Layer::Runtime,
            causeway_ring::layout::Class::Copy,
        );
        for i in 0..(1u64 << 18) - 8 {
            b.call(TID, 1, 0, 1_000 + 10 * i, 1_005 + 10 * i, 0, 0);
        }
        b.bytes().to_vec()
    };
    let mut saw_error = false;
    for k in 0..8 {
        let path = dir.join(&format!("r{k}.cwring"));
        std::fs::write(&path, &big).unwrap();
        let child = causeway().arg("report").arg(&path).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(k * 3));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            o.status.signal(),
            None,
            "killed by a signal: {:?}",
            o.status
        );
        let code = o.status.code();
        assert!(matches!(code, Some(0) | Some(2)), "{code:?}");
        saw_error |= code == Some(2);
    }
    // Not asserted that a race was caught: the unit test above makes the fault happen for sure.
    let _ = saw_error;
}

/// A FIFO named like a ring: refused at once as not a regular file, in a directory or named alone.
#[test]
fn a_fifo_named_like_a_ring_does_not_hang_the_reader() {
    let dir = TempDir::new("fifo");
    let fifo = dir.join("x.cwring");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for target in [fifo.as_path(), dir.path()] {
        let t0 = Instant::now();
        let mut child = causeway()
            .arg("report")
            .arg(target)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                panic!("causeway report hangs on a FIFO");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(2));
        let mut e = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut e).unwrap();
        assert!(e.contains("not a regular file"), "{e}");
    }
}

/// A header whose head word was zeroed hides nothing: the committed entries past it are read, and
/// the report says so (issue 20: all entries vanished without a word).
#[test]
fn a_zeroed_head_does_not_hide_the_entries() {
    let dir = TempDir::new("zero-head");
    let path = dir.join("a.cwring");
    let mut b = scenario();
    let ring = b.bytes_mut();
    ring[hdr::HEAD..hdr::HEAD + 8].copy_from_slice(&0u64.to_le_bytes());
    std::fs::write(&path, &ring).unwrap();
    let o = causeway()
        .args(["report", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["processes"][0];
    assert!(p["entries"].as_u64().unwrap() > 0, "{p}");
    assert!(p["head_behind"].as_u64().unwrap() > 0, "{p}");
    let o = causeway().arg("report").arg(&path).output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("past the header's head word"), "{e}");
}
