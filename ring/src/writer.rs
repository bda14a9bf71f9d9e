//! The writer side: creating a ring file and appending to it without allocating, locking or making a
//! system call on the hot path (`begin`/`end`/`instant`). String interning takes a spin lock, but only
//! once per distinct string, off the hot path.

use crate::clock::{self, Anchor};
use crate::layout::{self, ent, hdr, rec, ClockKind, Policy, StrKind, ENTRY_SIZE, HEADER_SIZE};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// How long `claim` waits for an older writer still writing the same slot before giving its own entry up.
const CLAIM_SPINS: u32 = 1 << 12;

/// What the writer puts in the header of a new ring.
pub struct Params<'a> {
    pub capacity: u64,
    pub strings_size: u64,
    pub policy: Policy,
    pub pid: u32,
    pub ppid: u32,
    pub level: u32,
    pub clock: ClockKind,
    pub ticks_per_sec: u64,
    pub anchor: Anchor,
    pub exe: &'a [u8],
    pub host: &'a [u8],
    pub flags: u32,
}

/// The fields of one entry as the hot path fills them.
#[derive(Clone, Copy, Default)]
pub struct Fields {
    pub t_begin: u64,
    pub tid: u32,
    pub api: u16,
    pub kind: u8,
    pub flags: u8,
    pub depth: u16,
    /// `ent::NODE` (device intervals of graph work; 0 elsewhere).
    pub node: u16,
    pub a0: u64,
    pub a1: u64,
    pub a2: u64,
}

/// A handle on a mapped ring. Cheap to copy; all mutation goes through atomics or reserved slots.
#[derive(Clone, Copy)]
pub struct Writer {
    base: *mut u8,
    entries: *mut u8,
    strings: *mut u8,
    strings_size: u64,
    mask: u64,
    capacity: u64,
    overwrite: bool,
}

// SAFETY: the mapping is shared memory written through atomics (header, stamps) or through slots that
// one reservation owns; the pointers stay valid for the life of the process (never unmapped).
unsafe impl Send for Writer {}
// SAFETY: as above.
unsafe impl Sync for Writer {}

impl Writer {
    /// Lays out a fresh header in `base` and returns a writer over it.
    ///
    /// # Safety
    /// `base` must point to a writable, zero-filled mapping of at least
    /// `layout::file_size(p.capacity, p.strings_size)` bytes that outlives every use of the writer.
    pub unsafe fn init(base: *mut u8, p: &Params) -> Writer {
        let w = Writer {
            base,
            entries: base.add(HEADER_SIZE + p.strings_size as usize),
            strings: base.add(HEADER_SIZE),
            strings_size: p.strings_size,
            mask: p.capacity - 1,
            capacity: p.capacity,
            overwrite: p.policy == Policy::Overwrite,
        };
        let put32 = |off: usize, v: u32| (base.add(off) as *mut u32).write_unaligned(v);
        let put64 = |off: usize, v: u64| (base.add(off) as *mut u64).write_unaligned(v);
        put32(hdr::VERSION, layout::VERSION);
        put32(hdr::HEADER_SIZE, HEADER_SIZE as u32);
        put32(hdr::ENTRY_SIZE, ENTRY_SIZE as u32);
        put32(hdr::POLICY, p.policy as u32);
        put64(hdr::CAPACITY, p.capacity);
        put64(hdr::STRINGS_OFFSET, HEADER_SIZE as u64);
        put64(hdr::STRINGS_SIZE, p.strings_size);
        put64(hdr::ENTRIES_OFFSET, HEADER_SIZE as u64 + p.strings_size);
        put32(hdr::PID, p.pid);
        put32(hdr::PPID, p.ppid);
        put32(hdr::LEVEL, p.level);
        put32(hdr::CLOCK, p.clock as u32);
        put32(hdr::FLAGS, p.flags);
        for (i, v) in [p.anchor.ticks, p.anchor.mono_ns, p.anchor.real_ns]
            .into_iter()
            .enumerate()
        {
            put64(hdr::ANCHOR0 + 8 * i, v);
            put64(hdr::ANCHOR1 + 8 * i, v);
        }
        put64(hdr::TICKS_PER_SEC, p.ticks_per_sec);
        let exe = &p.exe[..p.exe.len().min(hdr::EXE_MAX)];
        std::ptr::copy_nonoverlapping(exe.as_ptr(), base.add(hdr::EXE), exe.len());
        put32(hdr::EXE_LEN, exe.len() as u32);
        let host = &p.host[..p.host.len().min(hdr::HOST_MAX)];
        std::ptr::copy_nonoverlapping(host.as_ptr(), base.add(hdr::HOST), host.len());
        put32(hdr::HOST_LEN, host.len() as u32);
        // The magic goes last: a reader never sees a half-made header as a ring.
        std::sync::atomic::fence(Ordering::Release);
        std::ptr::copy_nonoverlapping(layout::MAGIC.as_ptr(), base.add(hdr::MAGIC), 8);
        w
    }

    #[inline(always)]
    fn a64(&self, off: usize) -> &AtomicU64 {
        // SAFETY: `off` is an 8-aligned header offset inside the mapping (page-aligned base).
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    #[inline(always)]
    fn a32(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` is a 4-aligned header offset inside the mapping.
        unsafe { &*(self.base.add(off) as *const AtomicU32) }
    }

    #[inline(always)]
    fn slot(&self, seq: u64) -> *mut u8 {
        // SAFETY: the masked index is below capacity, so the slot lies inside the entry area.
        unsafe { self.entries.add(((seq & self.mask) as usize) * ENTRY_SIZE) }
    }

    #[inline(always)]
    fn stamp_of(&self, p: *mut u8) -> &AtomicU64 {
        // SAFETY: slots are 64-byte aligned inside the mapping; the stamp is the slot's first word.
        unsafe { &*(p.add(ent::STAMP) as *const AtomicU64) }
    }

    /// Reserves a slot, fills it and commits it as an open call. Returns the sequence number to pass to
    /// `end`, or `None` when the ring is full under the drop policy (the drop is counted).
    #[inline(always)]
    pub fn begin(&self, f: &Fields) -> Option<u64> {
        self.put(f, 0, 0, false)
    }

    /// Records an entry that is complete when written (NVTX marks, lifecycle events).
    #[inline(always)]
    pub fn instant(&self, f: &Fields, result: i32) {
        self.put(f, f.t_begin, result, true);
    }

    /// Records an entry that is complete when written and spans `f.t_begin`..`t_end` (device intervals,
    /// whose times come from the timing backend rather than from the writing thread's clock).
    pub fn complete(&self, f: &Fields, t_end: u64, result: i32) -> Option<u64> {
        self.put(f, t_end, result, true)
    }

    #[inline(always)]
    fn put(&self, f: &Fields, t_end: u64, result: i32, done: bool) -> Option<u64> {
        let seq = self.a64(hdr::HEAD).fetch_add(1, Ordering::Relaxed);
        if !self.overwrite && seq >= self.capacity {
            self.a64(hdr::DROPPED).fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let p = self.slot(seq);
        if self.overwrite && !self.claim(p, seq) {
            return None;
        }
        // SAFETY: the reservation above (and, when slots are reused, the claim) gives this thread the
        // slot; all offsets are inside it.
        unsafe {
            (p.add(ent::T_BEGIN) as *mut u64).write(f.t_begin);
            (p.add(ent::T_END) as *mut u64).write(t_end);
            (p.add(ent::TID) as *mut u32).write(f.tid);
            (p.add(ent::API) as *mut u16).write(f.api);
            p.add(ent::KIND).write(f.kind);
            p.add(ent::FLAGS).write(f.flags);
            (p.add(ent::RESULT) as *mut i32).write(result);
            (p.add(ent::DEPTH) as *mut u16).write(f.depth);
            (p.add(ent::NODE) as *mut u16).write(f.node);
            (p.add(ent::A0) as *mut u64).write(f.a0);
            (p.add(ent::A1) as *mut u64).write(f.a1);
            (p.add(ent::A2) as *mut u64).write(f.a2);
        }
        self.stamp_of(p)
            .store(layout::stamp(seq, done), Ordering::Release);
        if seq & 0x3fff == 0 {
            self.update_anchor();
        }
        Some(seq)
    }

    /// Completes the open call `seq` with its end time and return code.
    #[inline(always)]
    pub fn end(&self, seq: u64, t_end: u64, result: i32) {
        self.end_with(seq, t_end, result, None);
    }

    /// `end`, also replacing the entry's `a1` with `a1` when given: what a call handed back through
    /// an output parameter (a created stream or event), known only once it returned.
    #[inline(always)]
    pub fn end_with(&self, seq: u64, t_end: u64, result: i32, a1: Option<u64>) {
        let p = self.slot(seq);
        let stamp = self.stamp_of(p);
        // Overwrite policy: take the slot back from "open" to "being written", unless a newer entry has
        // claimed it meanwhile (the ring lapped while the call ran).
        if self.overwrite
            && stamp
                .compare_exchange(
                    layout::stamp(seq, false),
                    layout::busy(seq),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            self.bump(layout::counter::END_LOST);
            return;
        }
        // SAFETY: the slot is ours (drop policy: never reused; overwrite: claimed just above).
        unsafe {
            (p.add(ent::T_END) as *mut u64).write(t_end);
            (p.add(ent::RESULT) as *mut i32).write(result);
            if let Some(a1) = a1 {
                (p.add(ent::A1) as *mut u64).write(a1);
            }
        }
        stamp.store(layout::stamp(seq, true), Ordering::Release);
    }

    /// Overwrite policy: makes slot `p` ours for `seq` by moving its commit word to "being written".
    /// A slot held by an older entry is taken over once that entry is committed (open or complete); a
    /// slot another writer is still writing is waited for (briefly — a writer is never blocked inside a
    /// call); a slot that a newer entry already holds means this writer was lapped: the entry is lost.
    #[inline(always)]
    fn claim(&self, p: *mut u8, seq: u64) -> bool {
        let stamp = self.stamp_of(p);
        let mut cur = stamp.load(Ordering::Relaxed);
        for _ in 0..CLAIM_SPINS {
            match layout::stamp_seq(cur) {
                Some(owner) if owner >= seq => break,
                // Being written by an older writer: wait for it to commit rather than mix two entries.
                Some(_) if cur & 3 == 0 => {
                    std::hint::spin_loop();
                    cur = stamp.load(Ordering::Relaxed);
                    continue;
                }
                _ => {}
            }
            match stamp.compare_exchange_weak(
                cur,
                layout::busy(seq),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
        self.bump(layout::counter::LAPPED);
        false
    }

    /// Appends a string record; returns false if the string area is full (counted).
    pub fn intern(&self, kind: StrKind, key: u64, aux: u32, bytes: &[u8]) -> bool {
        let len = bytes.len().min(u16::MAX as usize);
        let size = (rec::HDR + len + 7) & !7;
        let lock = self.a32(hdr::STR_LOCK);
        while lock
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        let cursor = self.a64(hdr::STR_CURSOR).load(Ordering::Relaxed);
        let fits = cursor + size as u64 <= self.strings_size;
        if fits {
            // SAFETY: [cursor, cursor + size) lies inside the string area and the lock makes it ours.
            unsafe {
                let r = self.strings.add(cursor as usize);
                (r.add(rec::KIND) as *mut u32).write(kind as u32);
                (r.add(rec::KEY) as *mut u64).write_unaligned(key);
                (r.add(rec::LEN) as *mut u32).write(len as u32);
                (r.add(rec::AUX) as *mut u32).write(aux);
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), r.add(rec::HDR), len);
                (*(r.add(rec::SIZE) as *const AtomicU32)).store(size as u32, Ordering::Release);
            }
            self.a64(hdr::STR_CURSOR)
                .store(cursor + size as u64, Ordering::Release);
        } else {
            self.a32(hdr::STR_DROPPED).fetch_add(1, Ordering::Relaxed);
        }
        lock.store(0, Ordering::Release);
        fits
    }

    /// Refreshes the latest anchor (a seqlock; skipped if another thread is already at it).
    pub fn update_anchor(&self) {
        let seq = self.a64(hdr::ANCHOR1_SEQ);
        let s = seq.load(Ordering::Relaxed);
        if s & 1 == 1
            || seq
                .compare_exchange(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let a = clock::anchor();
        for (i, v) in [a.ticks, a.mono_ns, a.real_ns].into_iter().enumerate() {
            self.a64(hdr::ANCHOR1 + 8 * i).store(v, Ordering::Relaxed);
        }
        seq.store(s + 2, Ordering::Release);
    }

    /// Records which device-timing backend this ring's device intervals come from.
    pub fn set_backend(&self, b: layout::Backend) {
        self.a32(hdr::BACKEND).store(b as u32, Ordering::Release);
    }

    /// Records `b` as the ring's device-timing backend unless one is recorded already (a process
    /// whose work goes through two runtimes names the first that timed it).
    pub fn claim_backend(&self, b: layout::Backend) {
        let _ = self.a32(hdr::BACKEND).compare_exchange(
            layout::Backend::None as u32,
            b as u32,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// Device timing samples one in `n` device-work calls per thread.
    pub fn set_sample_every(&self, n: u32) {
        self.a32(hdr::SAMPLE_EVERY).store(n, Ordering::Release);
    }

    pub fn set_flag(&self, flag: u32) {
        self.a32(hdr::FLAGS).fetch_or(flag, Ordering::Release);
    }

    pub fn bump(&self, counter: usize) {
        if counter < hdr::COUNTER_SLOTS {
            self.a64(hdr::COUNTERS + 8 * counter)
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Stores a one-line notice (why the shim disabled itself, …). Only the first notice is kept.
    pub fn notice(&self, msg: &[u8]) {
        let len_word = self.a32(hdr::NOTICE_LEN);
        if len_word
            .compare_exchange(0, u32::MAX, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let n = msg.len().min(hdr::NOTICE_MAX);
        // SAFETY: the notice field is inside the header and the CAS above made it ours.
        unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr(), self.base.add(hdr::NOTICE), n) };
        len_word.store(n as u32, Ordering::Release);
    }
}

/// Why a ring file could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateError {
    /// The directory + name did not fit the path buffer.
    PathTooLong,
    /// A system call failed with this errno.
    Os(&'static str, i32),
    /// The capture directory must be private and is not: a symbolic link, another user's, or open to
    /// others (the reason).
    NotPrivate(&'static str),
    /// The ring is larger than the process may make a file (`RLIMIT_FSIZE`, bytes): growing the file
    /// would kill the program with SIGXFSZ.
    FileSizeLimit(u64),
}

impl CreateError {
    pub fn describe(&self, buf: &mut FixedBuf) {
        match self {
            CreateError::PathTooLong => {
                buf.push(b"capture path too long");
            }
            CreateError::Os(what, errno) => {
                buf.push(what.as_bytes());
                buf.push(b" failed: ");
                // Our own words for the usual causes: strerror may take locale locks, which a fork
                // child must not.
                let text: &[u8] = match *errno {
                    libc::ENOSPC => b"no space left on the device",
                    libc::EDQUOT => b"disk quota exceeded",
                    libc::EACCES | libc::EPERM => b"permission denied",
                    libc::EROFS => b"read-only file system",
                    libc::ENOENT => b"no such directory",
                    libc::ENOTDIR => b"not a directory",
                    libc::EFBIG => b"file too large",
                    libc::EMFILE | libc::ENFILE => b"too many open files",
                    libc::ENOMEM => b"out of memory",
                    _ => b"",
                };
                buf.push(text);
                buf.push(if text.is_empty() {
                    b"errno "
                } else {
                    b" (errno "
                });
                buf.push_u64(*errno as u64);
                if !text.is_empty() {
                    buf.push(b")");
                }
            }
            CreateError::NotPrivate(why) => {
                buf.push(b"the capture directory is not private (")
                    .push(why.as_bytes())
                    .push(b"): refusing to write a ring there");
            }
            CreateError::FileSizeLimit(limit) => {
                buf.push(b"the ring is larger than this process may write a file (RLIMIT_FSIZE ")
                    .push_u64(*limit)
                    .push(b" bytes)");
            }
        }
    }
}

/// The largest file this process may make (`RLIMIT_FSIZE`), `None` when unlimited.
pub fn file_size_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut r) } != 0
        || r.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(r.rlim_cur)
}

/// Bytes an unprivileged writer may still take on the filesystem of `dir` (`statvfs`), `None` when it
/// cannot be told. No heap allocation.
pub fn free_bytes(dir: &[u8]) -> Option<u64> {
    let mut d = FixedBuf::default();
    d.push(dir);
    if d.overflowed() {
        return None;
    }
    // SAFETY: statvfs is a plain C struct for which zero bytes are valid; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `st` is a valid out-pointer.
    if unsafe { libc::statvfs(d.as_cstr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// A fixed-capacity byte buffer for building paths and messages without allocating (fork children,
/// the hot path's rare slow branches).
pub struct FixedBuf {
    buf: [u8; 4096],
    len: usize,
    overflow: bool,
}

impl Default for FixedBuf {
    fn default() -> Self {
        FixedBuf {
            buf: [0; 4096],
            len: 0,
            overflow: false,
        }
    }
}

impl FixedBuf {
    pub fn push(&mut self, b: &[u8]) -> &mut Self {
        // Keep one byte free for the terminating NUL of `as_cstr`.
        let room = self.buf.len() - 1 - self.len;
        let n = b.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
        self.overflow |= n < b.len();
        self
    }
    /// `b` as part of a file name: every byte but ASCII letters, digits, `.`, `_` and `-` becomes
    /// `_`, so a name built from it stays in its directory (a host name is the machine's to set: in a
    /// UTS namespace of its own a program may name it `../..`) and prints plainly.
    pub fn push_name_part(&mut self, b: &[u8]) -> &mut Self {
        for &c in b {
            let ok = c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-');
            self.push(&[if ok { c } else { b'_' }]);
        }
        self
    }
    pub fn push_u64(&mut self, mut v: u64) -> &mut Self {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&digits[i..])
    }
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    pub fn overflowed(&self) -> bool {
        self.overflow
    }
    /// NUL-terminated view; the buffer always keeps room for the NUL.
    pub fn as_cstr(&mut self) -> *const libc::c_char {
        self.buf[self.len] = 0;
        self.buf.as_ptr() as *const libc::c_char
    }
}

/// A ring file just created: its shared mapping, its path, the descriptor `reserve` needs and the
/// file's identity (`FileId`), by which a descriptor kept for later is checked to be this file still.
pub struct RingFile {
    pub base: *mut u8,
    pub path: FixedBuf,
    pub fd: i32,
    pub id: FileId,
}

/// A file's identity (device and inode): whether a descriptor still refers to the file it was opened
/// on. A program may close every descriptor it did not open (daemons do) and open its own files, which
/// then get the numbers; a descriptor kept across the program's code must be checked before use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The identity of the file `fd` refers to; `None` if it refers to none (closed). One `fstat`, no
    /// heap allocation.
    pub fn of(fd: i32) -> Option<FileId> {
        // SAFETY: zeroed bytes are a valid `stat`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes into `st`; an invalid descriptor is an error, not undefined behaviour.
        if fd < 0 || unsafe { libc::fstat(fd, &mut st) } != 0 {
            return None;
        }
        Some(FileId {
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }

    /// Whether `fd` refers to this file.
    pub fn is(&self, fd: i32) -> bool {
        FileId::of(fd) == Some(*self)
    }
}

/// A descriptor for the ring file `id` at `path`, for `reserve`: `kept` when it still refers to that
/// file, else the file opened again (read-write, never through a link) and checked to be the same one;
/// `(fd, true)` when the caller must close it. `None` when neither is the ring (closed and the file
/// removed or replaced). No heap allocation.
pub fn ring_descriptor(kept: i32, id: FileId, path: &mut FixedBuf) -> Option<(i32, bool)> {
    if id.is(kept) {
        return Some((kept, false));
    }
    // SAFETY: a NUL-terminated path.
    let fd = unsafe {
        libc::open(
            path.as_cstr(),
            libc::O_RDWR | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd >= 0 && id.is(fd) {
        return Some((fd, true));
    }
    if fd >= 0 {
        // SAFETY: closing the descriptor just opened.
        unsafe { libc::close(fd) };
    }
    None
}

/// Creates `dir/<host>-<pid>-<ns>-<n>.cwring` (0600, `O_EXCL|O_NOFOLLOW`), reserves and maps all of it.
/// Makes no heap allocation, so it is safe in a child right after `fork`.
pub fn create_file(
    dir: &[u8],
    host: &[u8],
    pid: u32,
    size: u64,
) -> Result<(*mut u8, FixedBuf), CreateError> {
    let f = create_file_lazy(dir, false, host, pid, size, size)?;
    // SAFETY: the mapping holds its own reference to the file; the descriptor is not needed any more.
    unsafe { libc::close(f.fd) };
    Ok((f.base, f.path))
}

/// Opens the capture directory `dir` for creating files in it. `private`: it must be the private
/// directory `causeway record` made — not a symbolic link (`O_NOFOLLOW`), owned by this process's
/// effective user, open to nobody else — so that a directory swapped for a link or for someone else's
/// between its creation and now is refused rather than written into.
fn open_dir(dir: &[u8], private: bool) -> Result<i32, CreateError> {
    let mut d = FixedBuf::default();
    d.push(dir);
    if d.overflowed() {
        return Err(CreateError::PathTooLong);
    }
    let mut flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
    if private {
        flags |= libc::O_NOFOLLOW;
    }
    // SAFETY: a NUL-terminated path.
    let dfd = unsafe { libc::open(d.as_cstr(), flags) };
    if dfd < 0 {
        let e = errno();
        // O_NOFOLLOW with O_DIRECTORY answers a link with ENOTDIR (or ELOOP): tell it apart.
        // SAFETY: zeroed bytes are a valid `stat`; the path is NUL-terminated.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let link = private
            && unsafe { libc::lstat(d.as_cstr(), &mut st) } == 0
            && st.st_mode & libc::S_IFMT == libc::S_IFLNK;
        return Err(if link {
            CreateError::NotPrivate("a symbolic link")
        } else {
            CreateError::Os("open of the capture directory", e)
        });
    }
    if private {
        // SAFETY: zeroed bytes are a valid `stat`; `dfd` is ours.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let why = if unsafe { libc::fstat(dfd, &mut st) } != 0 {
            Some("cannot be examined")
        // SAFETY: geteuid has no preconditions.
        } else if st.st_uid != unsafe { libc::geteuid() } {
            Some("owned by another user")
        } else if st.st_mode & 0o077 != 0 {
            Some("open to other users")
        } else {
            None
        };
        if let Some(why) = why {
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(dfd) };
            return Err(CreateError::NotPrivate(why));
        }
    }
    Ok(dfd)
}

/// Creates and maps a ring file of `size` bytes of which only the first `reserve_now` are reserved and
/// pre-faulted now; `reserve` does the rest later. A process that never records a call thus costs no
/// memory and (on filesystems with sparse files) no disk beyond that prefix. The file is made relative
/// to the opened directory (`open_dir`; `private` as there) and never through a link. A size over the
/// process's `RLIMIT_FSIZE` is refused before the file grows (growing it would raise SIGXFSZ, which
/// kills the program). No heap allocation.
pub fn create_file_lazy(
    dir: &[u8],
    private: bool,
    host: &[u8],
    pid: u32,
    size: u64,
    reserve_now: u64,
) -> Result<RingFile, CreateError> {
    if let Some(limit) = file_size_limit().filter(|&l| size > l) {
        return Err(CreateError::FileSizeLimit(limit));
    }
    let dfd = open_dir(dir, private)?;
    let r = create_in(dfd, dir, host, pid, size, reserve_now);
    // SAFETY: closing our own descriptor; the file, once made, no longer needs it.
    unsafe { libc::close(dfd) };
    r
}

fn create_in(
    dfd: i32,
    dir: &[u8],
    host: &[u8],
    pid: u32,
    size: u64,
    reserve_now: u64,
) -> Result<RingFile, CreateError> {
    let stamp = clock::clock_ns(libc::CLOCK_REALTIME);
    for n in 0..64u64 {
        let mut name = FixedBuf::default();
        name.push_name_part(host)
            .push(b"-")
            .push_u64(pid as u64)
            .push(b"-")
            .push_u64(stamp)
            .push(b"-")
            .push_u64(n)
            .push(layout::RING_SUFFIX.as_bytes());
        let mut path = FixedBuf::default();
        path.push(dir).push(b"/").push(name.as_bytes());
        if path.overflowed() || name.overflowed() {
            return Err(CreateError::PathTooLong);
        }
        let flags =
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: `as_cstr` yields a NUL-terminated name that lives across the call; `dfd` is open.
        let fd = unsafe { libc::openat(dfd, name.as_cstr(), flags, 0o600 as libc::c_uint) };
        if fd < 0 {
            let e = errno();
            if e == libc::EEXIST {
                continue;
            }
            return Err(CreateError::Os("open", e));
        }
        let fail = |e: CreateError| {
            // SAFETY: fd is ours; the half-made file is removed so the scanner never sees it.
            unsafe {
                libc::close(fd);
                libc::unlinkat(dfd, name.buf.as_ptr() as *const libc::c_char, 0);
            }
            Err(e)
        };
        // SAFETY: a plain system call on a descriptor we own.
        if unsafe { libc::ftruncate(fd, size as libc::off_t) } != 0 {
            return fail(CreateError::Os("ftruncate", errno()));
        }
        // MAP_SHARED on a real file: committed entries survive SIGKILL.
        // SAFETY: mapping a file we own and just sized.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return fail(CreateError::Os("mmap", errno()));
        }
        // SAFETY: `p` maps the whole file `fd`, and the range is clamped to it.
        let prefix = unsafe {
            if reserve_now < size {
                reserve_written(fd, p as *mut u8, 0, reserve_now)
            } else {
                reserve(fd, p as *mut u8, 0, size)
            }
        };
        if let Err(e) = prefix {
            // SAFETY: unmapping what we just mapped; nothing else refers to it yet.
            unsafe { libc::munmap(p, size as usize) };
            return fail(e);
        }
        let Some(id) = FileId::of(fd) else {
            // SAFETY: unmapping what we just mapped; nothing else refers to it yet.
            unsafe { libc::munmap(p, size as usize) };
            return fail(CreateError::Os("fstat", errno()));
        };
        return Ok(RingFile {
            base: p as *mut u8,
            path,
            fd,
            id,
        });
    }
    Err(CreateError::Os("open", libc::EEXIST))
}

/// Reserves the file's blocks for bytes `[from, to)` (so a full disk fails here, not as SIGBUS on the hot
/// path) and pre-faults their pages (so the hot path never takes a page fault: measured ≈ 30 ns per
/// entry otherwise). `from` must be page-aligned and `[from, to)` inside the mapping at `base` of the
/// file `fd`. No heap allocation.
///
/// # Safety
/// `base` must be the start of a live shared mapping of the file `fd` that covers `[from, to)`.
pub unsafe fn reserve(fd: i32, base: *mut u8, from: u64, to: u64) -> Result<(), CreateError> {
    if to <= from {
        return Ok(());
    }
    let len = to - from;
    // SAFETY: a plain system call on a descriptor we own.
    let r = unsafe { libc::posix_fallocate(fd, from as libc::off_t, len as libc::off_t) };
    // posix_fallocate returns the error instead of setting errno; some filesystems lack it, and then the
    // pre-fault below still reports a full disk as an error rather than SIGBUS.
    if r != 0 && r != libc::EOPNOTSUPP {
        return Err(CreateError::Os("posix_fallocate", r));
    }
    // SAFETY: the range lies inside our mapping.
    let m = unsafe {
        libc::madvise(
            base.add(from as usize) as *mut libc::c_void,
            len as usize,
            libc::MADV_POPULATE_WRITE,
        )
    };
    if m != 0 {
        let e = errno();
        if e != libc::EINVAL {
            return Err(CreateError::Os("madvise(MADV_POPULATE_WRITE)", e));
        }
        // Kernels before 5.14 lack MADV_POPULATE_WRITE: touch each page instead (the blocks are
        // reserved, so the write cannot fault for lack of space).
        let mut off = from;
        while off < to {
            // SAFETY: inside our mapping; rewriting the byte's own value changes nothing a reader sees.
            unsafe {
                let b = base.add(off as usize);
                std::ptr::write_volatile(b, std::ptr::read_volatile(b));
            }
            off += 4096;
        }
    }
    Ok(())
}

/// Zeros for `reserve_written`.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// `reserve` for a small range of a file just created, done by writing its zeros (`pwrite`) rather
/// than allocating it: the pages are then in the page cache when the mapping is populated. The first
/// write fault on a freshly allocated, never written page cost 2.2–5.8 ms on ext4 (the VM of
/// 2026-12-01; the unwritten extent is converted), paid by every traced process however short, where
/// writing 64 KiB costs 0.05 ms. For the prefix every ring writes at once (header, the first names and
/// lifecycle entries); the rest of a ring is reserved with `reserve`, which writes nothing to disk.
/// No heap allocation.
///
/// # Safety
/// As for [`reserve`].
pub unsafe fn reserve_written(
    fd: i32,
    base: *mut u8,
    from: u64,
    to: u64,
) -> Result<(), CreateError> {
    let mut off = from;
    while off < to {
        let n = ((to - off) as usize).min(ZEROS.len());
        // SAFETY: a plain system call writing our own zero buffer to a descriptor we own.
        let w = unsafe {
            libc::pwrite(
                fd,
                ZEROS.as_ptr() as *const libc::c_void,
                n,
                off as libc::off_t,
            )
        };
        if w < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(CreateError::Os("write", e));
        }
        off += w as u64;
    }
    // SAFETY: as the caller promises for `reserve`; the bytes are written, so this only maps pages.
    unsafe { reserve(fd, base, from, to) }
}

fn errno() -> i32 {
    // SAFETY: __errno_location always returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}
