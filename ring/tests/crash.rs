//! SIGKILL in the middle of writing: a child process (this test binary re-executed in the `sigkill`
//! role) writes from four threads as fast as a traced program might; the parent kills it and reads the
//! file. Everything committed must be there, intact, with at most one torn or open slot per thread.

mod common;

use causeway_ring::clock;
use causeway_ring::layout::{flags, StrKind};
use causeway_ring::{Kind, Policy, Slot};
use common::*;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const THREADS: u64 = 4;
/// Big enough that the writers never fill it before the kill: each thread stops at CAP / THREADS.
const CAP: u64 = 1 << 19;
const READY_AFTER: u64 = 256;
const MARK: &str = "CWREADY ";

/// The child: never returns on its own (the parent kills it); a plain no-op test otherwise.
#[test]
fn sigkill_child() {
    if !is_role("sigkill") {
        return;
    }
    watch_parent();
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(60));
        std::process::exit(4);
    });
    let dir = std::env::var(DIR_ENV).expect("dir");
    let (kind, hz) = clock::init(false);
    let mut p = params(CAP, 4096, Policy::Drop);
    p.pid = std::process::id();
    // SAFETY: getppid has no preconditions.
    p.ppid = unsafe { libc::getppid() } as u32;
    p.clock = kind;
    p.ticks_per_sec = hz;
    p.anchor = clock::anchor();
    let ring: &'static FileRing = Box::leak(Box::new(FileRing::create(dir.as_bytes(), &p)));
    let w = ring.writer;
    let progress: &'static [AtomicU64; THREADS as usize] =
        Box::leak(Box::new([const { AtomicU64::new(0) }; THREADS as usize]));
    for t in 0..THREADS {
        std::thread::spawn(move || {
            let tid = gettid();
            assert!(w.intern(
                StrKind::Thread,
                tid as u64,
                0,
                format!("writer-{t}").as_bytes()
            ));
            for c in 0..CAP / THREADS {
                let f = fields_for(t, c, tid, clock::ticks());
                let seq = w.begin(&f).expect("ring full before the kill");
                // The call "runs" for ~2 µs, so the kill often lands between begin and end.
                let t0 = clock::clock_ns(libc::CLOCK_MONOTONIC);
                while clock::clock_ns(libc::CLOCK_MONOTONIC) < t0 + 2_000 {
                    std::hint::spin_loop();
                }
                w.end(seq, clock::ticks(), result_for(c));
                progress[t as usize].store(c + 1, Ordering::Relaxed);
                // Pause now and then so the writers do not fill the ring before the parent kills them.
                if c % 64 == 63 {
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        });
    }
    while progress
        .iter()
        .any(|p| p.load(Ordering::Relaxed) < READY_AFTER)
    {
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{MARK}{}", ring.path.display()).unwrap();
    out.flush().unwrap();
    drop(out);
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[derive(Default, Debug)]
struct Seen {
    open: u64,
    torn: u64,
    live: u64,
}

fn check_killed_ring(bytes: &[u8], child_pid: u32) -> Seen {
    let v = parse(bytes);
    let h = &v.header;
    assert_eq!(h.pid, child_pid);
    assert_eq!(h.ppid, std::process::id());
    assert_eq!(h.policy, Policy::Drop);
    assert_eq!(h.flags & flags::CLOSED, 0, "a killed process cannot close");
    assert_eq!(h.dropped, 0);
    assert!(h.head <= CAP, "ring filled before the kill");
    assert!(h.head >= THREADS * READY_AFTER, "head {} too small", h.head);
    assert_eq!(v.window(), (0, h.head));

    let mut seen = Seen::default();
    // Per thread: (seq, counter, done), in sequence order.
    let mut runs: Vec<Vec<(u64, u64, bool)>> = vec![Vec::new(); THREADS as usize];
    let mut tids = [None; THREADS as usize];
    for s in 0..h.head {
        match v.read(s) {
            Slot::Entry(e) => {
                seen.live += 1;
                assert!(e.a0 < THREADS, "seq {s}: thread index {}", e.a0);
                assert_eq!(e.a2, checksum(e.a0, e.a1), "seq {s}: corrupt entry {e:?}");
                assert_eq!(e.api, 1 + e.a0 as u16, "seq {s}");
                assert_eq!(e.kind, Some(Kind::Call), "seq {s}");
                assert_eq!(e.depth, (e.a1 % 3) as u16, "seq {s}");
                assert_eq!(e.flags, (e.a1 & 1) as u8, "seq {s}");
                let tid = tids[e.a0 as usize].get_or_insert(e.tid);
                assert_eq!(*tid, e.tid, "seq {s}: thread {} changed tid", e.a0);
                if e.done {
                    assert!(e.t_end >= e.t_begin, "seq {s}: ends before it begins");
                    assert_eq!(e.result, result_for(e.a1), "seq {s}");
                } else {
                    seen.open += 1;
                    assert_eq!((e.t_end, e.result), (0, 0));
                }
                runs[e.a0 as usize].push((s, e.a1, e.done));
            }
            Slot::Torn => seen.torn += 1,
        }
    }
    assert_eq!(seen.live + seen.torn, h.head);

    let mut threads_in_flight = 0;
    for (t, run) in runs.iter().enumerate() {
        // Sequence order is reservation order, so a thread's counters must be exactly 0, 1, 2, … n.
        for (i, &(s, c, _)) in run.iter().enumerate() {
            assert_eq!(
                c, i as u64,
                "thread {t}: counter {c} at seq {s} where {i} was expected (an entry was lost or duplicated)"
            );
        }
        assert!(
            run.len() as u64 >= READY_AFTER,
            "thread {t}: only {} entries",
            run.len()
        );
        // Only the last entry of a thread can be open (killed inside that call).
        let open: Vec<_> = run.iter().filter(|e| !e.2).collect();
        assert!(open.len() <= 1, "thread {t}: {} open entries", open.len());
        if let Some(o) = open.first() {
            assert_eq!(
                o.1,
                run.len() as u64 - 1,
                "thread {t}: an open entry that is not its last"
            );
            threads_in_flight += 1;
        }
    }
    // A torn slot is a thread killed between reserving and committing; such a thread has no open entry,
    // so torn + threads with an open entry cannot exceed the thread count.
    assert!(
        seen.torn + threads_in_flight <= THREADS,
        "{} torn slots and {threads_in_flight} threads with an open entry",
        seen.torn
    );

    // Each writer thread named itself before writing.
    let mut names: Vec<(u64, String)> = v
        .strings
        .iter()
        .filter(|r| r.kind == StrKind::Thread)
        .map(|r| (r.key, r.text.clone()))
        .collect();
    names.sort();
    let mut want: Vec<(u64, String)> = tids
        .iter()
        .enumerate()
        .map(|(t, tid)| (tid.expect("tid") as u64, format!("writer-{t}")))
        .collect();
    want.sort();
    assert_eq!(names, want);
    seen
}

#[test]
fn sigkill_mid_write_loses_nothing_committed() {
    if std::env::var_os(ROLE_ENV).is_some() {
        return;
    }
    let mut total = Seen::default();
    for round in 0..4u64 {
        let dir = TempDir::new("kill");
        let errf = dir.path().join("child.stderr");
        let dir_s = dir.path().to_str().unwrap().to_string();
        let mut g = ChildGuard(Some(spawn_role(
            "sigkill_child",
            "sigkill",
            &[(DIR_ENV, dir_s)],
            &errf,
        )));
        let rx = lines_of(g.child());
        let path = wait_for(&rx, MARK, Duration::from_secs(60), &errf);
        std::thread::sleep(Duration::from_millis(3 + 9 * round));
        let pid = g.child().id();
        g.child().kill().expect("SIGKILL");
        let status = g.child().wait().expect("wait");
        g.0 = None;
        assert_eq!(status.signal(), Some(libc::SIGKILL), "child: {status:?}");
        let rings = dir.rings();
        assert_eq!(rings.len(), 1, "{rings:?}");
        assert_eq!(rings[0].to_str().unwrap(), path);
        let bytes = std::fs::read(&path).expect("read ring");
        let s = check_killed_ring(&bytes, pid);
        total.open += s.open;
        total.torn += s.torn;
        total.live += s.live;
    }
    eprintln!("4 kills: {total:?}");
}

/// The same checks on a deterministic "crash": writers that reserved a slot and died before committing
/// it (torn), and one that died inside a call (open).
#[test]
fn simulated_crash_reads_torn_and_open_slots() {
    let ring = MemRing::new(&params(64, 256, Policy::Drop));
    let w = ring.writer;
    for c in 0..10 {
        let s = w.begin(&fields_for(0, c, 1, c)).unwrap();
        w.end(s, c + 1, result_for(c));
    }
    // Thread 1 dies inside its call.
    let open = w.begin(&fields_for(1, 0, 2, 100)).unwrap();
    // Thread 2 reserved two slots' worth of sequence numbers and died before either stamp: one slot with
    // its fields written, one untouched.
    let mut bytes = ring.snapshot();
    let head = open + 1;
    set_u64(&mut bytes, causeway_ring::hdr::HEAD, head + 2);
    let off = parse(&bytes).header.entries_offset as usize + head as usize * 64;
    set_u64(&mut bytes, off + causeway_ring::layout::ent::A0, 2);
    set_u64(
        &mut bytes,
        off + causeway_ring::layout::ent::A2,
        checksum(2, 0),
    );
    let v = parse(&bytes);
    assert_eq!(v.window(), (0, head + 2));
    assert!(matches!(v.read(open), Slot::Entry(e) if !e.done && e.a0 == 1 && e.t_end == 0));
    assert_eq!(v.read(head), Slot::Torn);
    assert_eq!(v.read(head + 1), Slot::Torn);
    let live = (0..head + 2)
        .filter(|&s| matches!(v.read(s), Slot::Entry(_)))
        .count() as u64;
    assert_eq!(live, 11);
}
