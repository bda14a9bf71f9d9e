//! Helpers shared by the ring integration tests: scratch directories, in-memory and file-backed rings,
//! the entry checksum the multi-thread and multi-process tests use, and re-executing this test binary
//! as a child process with a role.
#![allow(dead_code)]

use causeway_ring::clock::Anchor;
use causeway_ring::writer::{self, Fields, Params, Writer};
use causeway_ring::{file_size, ClockKind, Kind, Policy, RingView};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// The environment variable that turns a `#[test]` child entry point on.
pub const ROLE_ENV: &str = "CAUSEWAY_RING_TEST_ROLE";
/// Where a child creates its ring.
pub const DIR_ENV: &str = "CAUSEWAY_RING_TEST_DIR";

/// A scratch directory removed (with its contents) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!(
            "causeway-ring-{tag}-{}-{n}-{}",
            std::process::id(),
            causeway_ring::clock::clock_ns(libc::CLOCK_REALTIME)
        ));
        std::fs::create_dir_all(&p).expect("create scratch dir");
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn bytes(&self) -> Vec<u8> {
        self.0.as_os_str().as_encoded_bytes().to_vec()
    }
    /// The ring files in the directory, sorted by name.
    pub fn rings(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&self.0)
            .expect("read scratch dir")
            .map(|e| e.expect("dir entry").path())
            .filter(|p| {
                p.to_str()
                    .is_some_and(|s| s.ends_with(causeway_ring::RING_SUFFIX))
            })
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Header parameters with fixed, recognisable values.
pub fn params(capacity: u64, strings_size: u64, policy: Policy) -> Params<'static> {
    Params {
        capacity,
        strings_size,
        policy,
        pid: 4242,
        ppid: 4141,
        level: 3,
        clock: ClockKind::Monotonic,
        ticks_per_sec: 1_000_000_000,
        anchor: Anchor {
            ticks: 111,
            mono_ns: 111,
            real_ns: 1_700_000_000_000_000_000,
        },
        exe: b"/opt/app/bin/train",
        host: b"node-7",
        flags: 0,
    }
}

/// A ring in zeroed, 8-aligned heap memory (no file), for tests that only need the bytes.
pub struct MemRing {
    buf: *mut u64,
    words: usize,
    pub writer: Writer,
}

// SAFETY: the buffer is owned by the MemRing and only written through the (Send + Sync) writer.
unsafe impl Send for MemRing {}
// SAFETY: as above.
unsafe impl Sync for MemRing {}

impl MemRing {
    pub fn new(p: &Params) -> MemRing {
        let len = file_size(p.capacity, p.strings_size) as usize;
        let words = len.div_ceil(8);
        let buf = Box::into_raw(vec![0u64; words].into_boxed_slice()) as *mut u64;
        // SAFETY: `buf` is a zeroed, 8-aligned buffer of at least `file_size` bytes that lives until drop,
        // and every use of the writer happens while the MemRing is alive.
        let writer = unsafe { Writer::init(buf as *mut u8, p) };
        MemRing { buf, words, writer }
    }
    pub fn len(&self) -> usize {
        self.words * 8
    }
    /// A copy of the ring's bytes as they are now.
    pub fn snapshot(&self) -> Vec<u8> {
        // SAFETY: the buffer is `words * 8` initialised bytes; callers snapshot while no writer runs.
        unsafe { std::slice::from_raw_parts(self.buf as *const u8, self.len()) }.to_vec()
    }
    /// Raw pointer to the ring bytes, to poke fields behind the writer's back.
    pub fn base(&self) -> *mut u8 {
        self.buf as *mut u8
    }
}

impl Drop for MemRing {
    fn drop(&mut self) {
        // SAFETY: `buf` came from `Box::into_raw` of a boxed slice of `words` u64s.
        unsafe {
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.buf, self.words,
            )))
        };
    }
}

/// A ring made by `writer::create_file`, as the shim makes it.
pub struct FileRing {
    pub base: *mut u8,
    pub size: u64,
    pub path: PathBuf,
    pub writer: Writer,
}

// SAFETY: the mapping is only written through the writer.
unsafe impl Send for FileRing {}
// SAFETY: as above.
unsafe impl Sync for FileRing {}

impl FileRing {
    pub fn create(dir: &[u8], p: &Params) -> FileRing {
        let size = file_size(p.capacity, p.strings_size);
        let (base, path) = match writer::create_file(dir, p.host, p.pid, size) {
            Ok(r) => r,
            Err(e) => {
                let mut b = writer::FixedBuf::default();
                e.describe(&mut b);
                panic!("create_file: {}", String::from_utf8_lossy(b.as_bytes()));
            }
        };
        // SAFETY: create_file returned a fresh zero-filled shared mapping of `size` bytes, unmapped only on
        // drop after every use of the writer.
        let writer = unsafe { Writer::init(base, p) };
        let path = PathBuf::from(String::from_utf8(path.as_bytes().to_vec()).expect("utf-8 path"));
        FileRing {
            base,
            size,
            path,
            writer,
        }
    }
    /// The file's bytes as the reader (scanner) would see them.
    pub fn read_file(&self) -> Vec<u8> {
        std::fs::read(&self.path).expect("read ring file")
    }
}

impl Drop for FileRing {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by create_file with this size and is no longer used.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.size as usize) };
    }
}

/// The a2 word the concurrency tests store: a mix of a0 (thread index) and a1 (per-thread counter).
pub fn checksum(a0: u64, a1: u64) -> u64 {
    (a0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ a1.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
        .rotate_left(17)
        ^ 0x5EED_CAFE_F00D_D00D
}

/// The result code the concurrency tests store for counter `c`.
pub fn result_for(c: u64) -> i32 {
    (c % 1000) as i32 - 500
}

pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

/// The fields the concurrency tests write for thread `t`'s `c`-th entry.
pub fn fields_for(t: u64, c: u64, tid: u32, t_begin: u64) -> Fields {
    Fields {
        node: 0,
        t_begin,
        tid,
        api: 1 + t as u16,
        kind: Kind::Call as u8,
        flags: (c & 1) as u8,
        depth: (c % 3) as u16,
        a0: t,
        a1: c,
        a2: checksum(t, c),
    }
}

/// Parses bytes that must be a valid ring.
pub fn parse(bytes: &[u8]) -> RingView<'_> {
    match RingView::parse(bytes) {
        Ok(v) => v,
        Err(e) => panic!("ring does not parse: {e}"),
    }
}

/// If this process is a child started by `spawn_role(role, ..)`, returns true.
pub fn is_role(role: &str) -> bool {
    std::env::var(ROLE_ENV).is_ok_and(|r| r == role)
}

/// Re-executes this test binary running only the test `entry` (a child entry point guarded by
/// `is_role(role)`), with stdout piped and stderr sent to `stderr_file`.
pub fn spawn_role(entry: &str, role: &str, envs: &[(&str, String)], stderr_file: &Path) -> Child {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args([entry, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE_ENV, role)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(stderr_file).expect("stderr file"));
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn child")
}

/// Kills the child (SIGKILL) when dropped, so a failing test never leaves writers running.
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("child")
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Forwards the child's stdout lines to a channel (a thread per child).
pub fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            match line {
                Ok(l) => {
                    if tx.send(l).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });
    rx
}

/// Waits for a line containing `prefix` and returns what follows it (the test harness may have printed
/// `test name ... ` on the same line first).
pub fn wait_for(
    rx: &mpsc::Receiver<String>,
    prefix: &str,
    timeout: Duration,
    stderr_file: &Path,
) -> String {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => {
                if let Some(i) = l.find(prefix) {
                    return l[i + prefix.len()..].trim().to_string();
                }
            }
            Err(e) => panic!(
                "child never printed {prefix:?} ({e:?}); its stderr:\n{}",
                std::fs::read_to_string(stderr_file).unwrap_or_default()
            ),
        }
    }
}

/// In a child: exits if the parent test process went away (we were re-parented), so a crashed test run
/// never leaves writers spinning.
pub fn watch_parent() {
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: as above.
        if unsafe { libc::getppid() } != parent {
            std::process::exit(3);
        }
    });
}

/// A small deterministic PRNG (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

pub fn set_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn set_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn get_u64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
