//! Ring file names when every creation happens in the same nanosecond. This test binary defines its own
//! `clock_gettime`, which the static link binds `clock::clock_ns` (and so `create_file`) to: it can
//! freeze CLOCK_REALTIME, and passes everything else to the kernel.

mod common;

use causeway_ring::writer::{create_file, CreateError};
use causeway_ring::{Policy, RING_SUFFIX};
use common::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

/// When non-zero, what CLOCK_REALTIME reads (ns).
static FROZEN_REALTIME: AtomicU64 = AtomicU64::new(0);

/// # Safety
/// As `clock_gettime(2)`: `ts` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn clock_gettime(
    id: libc::clockid_t,
    ts: *mut libc::timespec,
) -> libc::c_int {
    let frozen = FROZEN_REALTIME.load(Ordering::Relaxed);
    if id == libc::CLOCK_REALTIME && frozen != 0 {
        (*ts).tv_sec = (frozen / 1_000_000_000) as libc::time_t;
        (*ts).tv_nsec = (frozen % 1_000_000_000) as libc::c_long;
        return 0;
    }
    libc::syscall(libc::SYS_clock_gettime, id as libc::c_long, ts) as libc::c_int
}

#[test]
fn rings_created_in_one_nanosecond_get_distinct_names() {
    let stamp = 1_750_000_000_123_456_789u64;
    FROZEN_REALTIME.store(stamp, Ordering::Relaxed);
    assert_eq!(
        causeway_ring::clock::clock_ns(libc::CLOCK_REALTIME),
        stamp,
        "the clock override is not in effect"
    );
    let dir = TempDir::new("samens");
    let p = params(16, 64, Policy::Drop);
    // 64 rings for one host and pid in the same nanosecond, from 8 threads at once.
    let made: Vec<FileRing> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let d = dir.bytes();
                let p = &p;
                s.spawn(move || (0..8).map(|_| FileRing::create(&d, p)).collect::<Vec<_>>())
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let names: HashSet<String> = made
        .iter()
        .map(|r| r.path.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    let want: HashSet<String> = (0..64)
        .map(|n| format!("node-7-4242-{stamp}-{n}{RING_SUFFIX}"))
        .collect();
    assert_eq!(names, want);
    // Each file is its own ring: mark each, then check no mark landed in another.
    for (i, r) in made.iter().enumerate() {
        r.writer.instant(&fields_for(i as u64, 0, 0, 0), 0);
    }
    for (i, r) in made.iter().enumerate() {
        let b = r.read_file();
        let v = parse(&b);
        assert_eq!(v.header.head, 1, "{}", r.path.display());
        assert!(
            matches!(v.read(0), causeway_ring::Slot::Entry(e) if e.a0 == i as u64),
            "{}",
            r.path.display()
        );
    }
    // A 65th in the same nanosecond: create_file tries 64 suffixes, so it must fail cleanly (EEXIST)
    // rather than reuse a name — or, if the retry limit grows, succeed under a new name.
    let extra = match create_file(&dir.bytes(), b"node-7", 4242, 8192) {
        Err(e) => {
            assert_eq!(e, CreateError::Os("open", libc::EEXIST));
            0
        }
        Ok((base, path)) => {
            let name = String::from_utf8_lossy(path.as_bytes()).to_string();
            assert!(!want.iter().any(|w| name.ends_with(w.as_str())), "{name}");
            // SAFETY: the mapping create_file just made, 8192 bytes, unused.
            unsafe { libc::munmap(base as *mut libc::c_void, 8192) };
            1
        }
    };
    assert_eq!(dir.rings().len(), 64 + extra);
    FROZEN_REALTIME.store(0, Ordering::Relaxed);
}

/// The host name is the machine's to set (a program in a UTS namespace of its own may call it
/// `../..`): in a ring's file name it is made plain, so the ring stays in its directory.
#[test]
fn a_host_name_cannot_move_the_ring_out_of_its_directory() {
    let dir = TempDir::new("host-name");
    let inner = dir.path().join("inner");
    std::fs::create_dir(&inner).unwrap();
    let inner_bytes = inner.as_os_str().as_encoded_bytes().to_vec();
    let (base, path) = create_file(&inner_bytes, b"../../x\x1b[31m y", 7, 8192).unwrap();
    // SAFETY: the mapping create_file just made, 8192 bytes, unused.
    unsafe { libc::munmap(base as *mut libc::c_void, 8192) };
    let made = std::path::PathBuf::from(String::from_utf8(path.as_bytes().to_vec()).unwrap());
    assert_eq!(made.parent(), Some(inner.as_path()), "{}", made.display());
    let name = made.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(".._.._x__31m_y-7-"), "{name}");
    assert_eq!(std::fs::read_dir(&inner).unwrap().count(), 1);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only inner/"
    );
}
