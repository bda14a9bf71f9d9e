//! Many writers at once, as in a traced multi-process job: 8 processes (this test binary re-executed in
//! the `multi` role) × 16 threads × 20 000 entries, one ring per process in one directory. And ring file
//! names never collide, even for one pid and host.

mod common;

use causeway_ring::layout::{flags, StrKind};
use causeway_ring::{Kind, Policy, Slot, RING_SUFFIX};
use common::*;
use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

const PROCS: usize = 8;
const THREADS: u64 = 16;
const PER_THREAD: u64 = 20_000;
const CAP: u64 = 1 << 19; // ≥ 16 × 20 000 = 320 000
const START_ENV: &str = "CAUSEWAY_RING_TEST_START_NS";
const MARK: &str = "CWDONE ";

/// The child: one process's ring, written by 16 threads; a no-op test otherwise.
#[test]
fn multi_child() {
    if !is_role("multi") {
        return;
    }
    watch_parent();
    let dir = std::env::var(DIR_ENV).expect("dir");
    // All children create their rings at the same instant (as far as the scheduler allows).
    let start: u64 = std::env::var(START_ENV).unwrap().parse().unwrap();
    while causeway_ring::clock::clock_ns(libc::CLOCK_REALTIME) < start {
        std::hint::spin_loop();
    }
    let mut p = params(CAP, 8192, Policy::Drop);
    p.pid = std::process::id();
    p.host = b"samehost";
    let ring = FileRing::create(dir.as_bytes(), &p);
    let w = ring.writer;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                let tid = gettid();
                assert!(w.intern(
                    StrKind::Thread,
                    tid as u64,
                    0,
                    format!("rank-thread-{t}").as_bytes()
                ));
                for c in 0..PER_THREAD {
                    let f = fields_for(t, c, tid, c);
                    if c % 4 == 3 {
                        w.instant(&f, result_for(c));
                    } else {
                        let seq = w.begin(&f).expect("ring full");
                        w.end(seq, c + 1, result_for(c));
                    }
                }
            });
        }
    });
    w.set_flag(flags::CLOSED);
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{MARK}{}", ring.path.display()).unwrap();
    out.flush().unwrap();
}

fn check_ring(bytes: &[u8], pid: u32) {
    let v = parse(bytes);
    let h = &v.header;
    assert_eq!(h.pid, pid);
    assert_eq!(h.host, "samehost");
    assert_eq!(h.flags, flags::CLOSED);
    assert_eq!(h.head, THREADS * PER_THREAD, "pid {pid}");
    assert_eq!(h.dropped, 0, "pid {pid}");
    assert_eq!(v.window(), (0, THREADS * PER_THREAD));
    let mut seen = vec![false; (THREADS * PER_THREAD) as usize];
    let mut tids = [None; THREADS as usize];
    let mut last_seq = [None::<u64>; THREADS as usize];
    for s in 0..h.head {
        let e = match v.read(s) {
            Slot::Entry(e) => e,
            Slot::Torn => panic!("pid {pid}: seq {s} torn"),
        };
        assert!(e.done, "pid {pid}: seq {s} open");
        assert!(
            e.a0 < THREADS && e.a1 < PER_THREAD,
            "pid {pid}: seq {s}: {e:?}"
        );
        assert_eq!(
            e.a2,
            checksum(e.a0, e.a1),
            "pid {pid}: seq {s}: corrupt {e:?}"
        );
        assert_eq!(e.kind, Some(Kind::Call));
        assert_eq!(e.api, 1 + e.a0 as u16);
        assert_eq!(e.t_begin, e.a1);
        let instant = e.a1 % 4 == 3;
        assert_eq!(e.t_end, if instant { e.a1 } else { e.a1 + 1 });
        assert_eq!(e.result, result_for(e.a1));
        let t = e.a0 as usize;
        assert_eq!(*tids[t].get_or_insert(e.tid), e.tid);
        let i = (e.a0 * PER_THREAD + e.a1) as usize;
        assert!(!seen[i], "pid {pid}: thread {t} counter {} twice", e.a1);
        seen[i] = true;
        // A thread's counters appear in its reservation order.
        if let Some(prev) = last_seq[t].replace(e.a1) {
            assert!(e.a1 > prev, "pid {pid}: thread {t}: {} after {prev}", e.a1);
        }
    }
    assert!(seen.iter().all(|&b| b), "pid {pid}: entries missing");
    let names: HashSet<(u64, String)> = v
        .strings
        .iter()
        .filter(|r| r.kind == StrKind::Thread)
        .map(|r| (r.key, r.text.clone()))
        .collect();
    let want: HashSet<(u64, String)> = tids
        .iter()
        .enumerate()
        .map(|(t, tid)| (tid.unwrap() as u64, format!("rank-thread-{t}")))
        .collect();
    assert_eq!(names, want);
}

#[test]
fn eight_processes_sixteen_threads_each() {
    if std::env::var_os(ROLE_ENV).is_some() {
        return;
    }
    let dir = TempDir::new("multi");
    let dir_s = dir.path().to_str().unwrap().to_string();
    let start = causeway_ring::clock::clock_ns(libc::CLOCK_REALTIME) + 300_000_000;
    let mut kids: Vec<(ChildGuard, std::path::PathBuf)> = (0..PROCS)
        .map(|i| {
            let errf = dir.path().join(format!("child{i}.stderr"));
            let c = spawn_role(
                "multi_child",
                "multi",
                &[(DIR_ENV, dir_s.clone()), (START_ENV, start.to_string())],
                &errf,
            );
            (ChildGuard(Some(c)), errf)
        })
        .collect();
    let mut paths = Vec::new();
    let mut pids = Vec::new();
    for (g, errf) in kids.iter_mut() {
        let rx = lines_of(g.child());
        paths.push(wait_for(&rx, MARK, Duration::from_secs(120), errf));
        pids.push(g.child().id());
        let st = g.child().wait().expect("wait");
        g.0 = None;
        assert!(
            st.success(),
            "child failed: {st:?}\n{}",
            std::fs::read_to_string(&*errf).unwrap_or_default()
        );
    }
    let rings = dir.rings();
    assert_eq!(rings.len(), PROCS, "{rings:?}");
    let names: HashSet<_> = rings.iter().map(|p| p.file_name().unwrap()).collect();
    assert_eq!(names.len(), PROCS);
    let mut printed: Vec<_> = paths.iter().map(std::path::PathBuf::from).collect();
    printed.sort();
    assert_eq!(printed, rings);
    for (path, pid) in paths.iter().zip(&pids) {
        let name = std::path::Path::new(path)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        assert!(name.starts_with(&format!("samehost-{pid}-")), "{name}");
        let bytes = std::fs::read(path).expect("read ring");
        check_ring(&bytes, *pid);
    }
}

#[test]
fn create_file_never_reuses_a_name() {
    let dir = TempDir::new("names");
    let p = params(16, 64, Policy::Drop);
    // 100 rings for one pid and host, from 4 threads at once.
    let made: Vec<FileRing> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let d = dir.bytes();
                let p = &p;
                s.spawn(move || (0..25).map(|_| FileRing::create(&d, p)).collect::<Vec<_>>())
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let names: HashSet<_> = made.iter().map(|r| r.path.clone()).collect();
    assert_eq!(names.len(), 100);
    assert_eq!(dir.rings().len(), 100);
    for r in &made {
        let n = r.path.file_name().unwrap().to_str().unwrap();
        assert!(
            n.starts_with("node-7-4242-") && n.ends_with(RING_SUFFIX),
            "{n}"
        );
        // Each is its own file: writing one does not show up in another.
        r.writer.instant(&fields_for(0, 0, 0, 0), 0);
        assert_eq!(parse(&r.read_file()).header.head, 1);
    }

    // Suffixes above 0 mean two creations shared a nanosecond and the O_EXCL retry kicked in.
    let retried = made
        .iter()
        .filter(|r| {
            !r.path
                .to_str()
                .unwrap()
                .ends_with(&format!("-0{RING_SUFFIX}"))
        })
        .count();
    eprintln!("{retried} of 100 names needed a retry");
}
