//! Test helpers: synthetic rings written with the real `causeway_ring::Writer`, and temporary
//! directories, so the scanner is tested against the same bytes the shim produces.
#![allow(dead_code)]

use causeway_ring::clock::Anchor;
use causeway_ring::layout::{
    self, ent, entry_flags, hdr, ApiInfo, Class, ClockKind, DeviceKind, Kind, Layer, Policy,
    StrKind, NO_CALL,
};
use causeway_ring::{Fields, Params, Writer};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// This process's resident file-backed memory, in KiB (`RssFile` of /proc/self/status).
pub fn rss_file_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("RssFile:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "causeway-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(keep) = std::env::var_os("CAUSEWAY_KEEP_TEST_CAPTURES") {
            keep_rings(
                &self.0,
                &Path::new(&keep).join(self.0.file_name().unwrap_or_default()),
            );
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies every `*.cwring` under `from` (files as they are at the end of the test — corrupted ones
/// included — and directories of that name as empty directories) to `to`, keeping the layout, so
/// that pyscan's tests (`pyscan/tests`) can read every capture these tests used with both of its
/// engines. Only with `CAUSEWAY_KEEP_TEST_CAPTURES=DIR` (ci/test.sh sets it); best effort.
fn keep_rings(from: &Path, to: &Path) {
    let Ok(rd) = std::fs::read_dir(from) else {
        return;
    };
    for item in rd.flatten() {
        let (src, name) = (item.path(), item.file_name());
        let dst = to.join(&name);
        let Ok(meta) = std::fs::symlink_metadata(&src) else {
            continue;
        };
        let ring = name.to_string_lossy().ends_with(layout::RING_SUFFIX);
        if meta.is_dir() {
            if ring {
                let _ = std::fs::create_dir_all(&dst);
            }
            keep_rings(&src, &dst);
        } else if ring && meta.is_file() {
            // A sparse file (the hostile 2^30-slot ring) would be copied whole, tens of GB: pyscan's
            // own captures.py has that case.
            use std::os::unix::fs::MetadataExt;
            if meta.blocks() * 512 < meta.len() / 2 {
                continue;
            }
            let _ = std::fs::create_dir_all(to);
            let _ = std::fs::copy(&src, &dst);
        }
    }
}

pub const STRINGS: u64 = 4096;
/// The API id test rings give NVTX instants (interned as `nvtxRangePushA` where a test needs it).
pub const NVTX_API: u16 = 5;

/// A ring in memory, written through the real writer. Ticks are nanoseconds (monotonic clock), so
/// durations in the report equal tick differences.
pub struct RingBuilder {
    // u64 storage keeps the base 8-aligned, as the writer's atomics need.
    buf: Vec<u64>,
    pub w: Writer,
    pub capacity: u64,
}

impl RingBuilder {
    pub fn new(capacity: u64, policy: Policy) -> RingBuilder {
        Self::with(capacity, policy, 1000, 1)
    }

    pub fn with(capacity: u64, policy: Policy, pid: u32, ppid: u32) -> RingBuilder {
        Self::custom(
            capacity,
            policy,
            pid,
            ppid,
            2,
            ClockKind::Monotonic,
            1_000_000_000,
        )
    }

    /// A level-3 ring (device intervals) on the monotonic clock: ticks are nanoseconds.
    pub fn level3(capacity: u64, policy: Policy) -> RingBuilder {
        Self::custom(
            capacity,
            policy,
            1000,
            1,
            3,
            ClockKind::Monotonic,
            1_000_000_000,
        )
    }

    /// A level-3 ring on the TSC clock at `ticks_per_sec`; call `set_anchors` once the entries are
    /// written (the writer refreshes anchor 1 from the real clock at sequence 0).
    pub fn level3_tsc(capacity: u64, ticks_per_sec: u64) -> RingBuilder {
        Self::custom(
            capacity,
            Policy::Drop,
            1000,
            1,
            3,
            ClockKind::Tsc,
            ticks_per_sec,
        )
    }

    pub fn custom(
        capacity: u64,
        policy: Policy,
        pid: u32,
        ppid: u32,
        level: u32,
        clock: ClockKind,
        ticks_per_sec: u64,
    ) -> RingBuilder {
        let at = (level, clock, ticks_per_sec);
        Self::with_strings(capacity, STRINGS, policy, pid, ppid, at)
    }

    /// `custom` with a string area of `strings` bytes (a multiple of 8); `at` is (level, clock,
    /// ticks per second).
    pub fn with_strings(
        capacity: u64,
        strings: u64,
        policy: Policy,
        pid: u32,
        ppid: u32,
        (level, clock, ticks_per_sec): (u32, ClockKind, u64),
    ) -> RingBuilder {
        let size = layout::file_size(capacity, strings) as usize;
        let mut buf = vec![0u64; size.div_ceil(8)];
        let p = Params {
            capacity,
            strings_size: strings,
            policy,
            pid,
            ppid,
            level,
            clock,
            ticks_per_sec,
            anchor: Anchor::default(),
            exe: b"/usr/bin/app",
            host: b"testhost",
            flags: 0,
        };
        // SAFETY: the buffer is zeroed, 8-aligned, large enough, and lives as long as the writer (the
        // Vec is never resized, so its heap block does not move when the builder moves).
        let w = unsafe { Writer::init(buf.as_mut_ptr() as *mut u8, &p) };
        RingBuilder { buf, w, capacity }
    }

    pub fn api(&self, id: u16, name: &str, layer: Layer, class: Class) -> &Self {
        let info = ApiInfo {
            layer,
            class,
            level: 2,
        };
        assert!(self
            .w
            .intern(StrKind::Api, id as u64, info.pack(), name.as_bytes()));
        self
    }

    pub fn kernel(&self, handle: u64, name: &str) -> &Self {
        assert!(self.w.intern(StrKind::Kernel, handle, 0, name.as_bytes()));
        self
    }

    pub fn text(&self, id: u64, s: &str) -> &Self {
        assert!(self.w.intern(StrKind::Text, id, 0, s.as_bytes()));
        self
    }

    /// A completed call `[t0, t1]`; returns its sequence number (None if dropped).
    #[allow(clippy::too_many_arguments)]
    pub fn call(
        &self,
        tid: u32,
        api: u16,
        depth: u16,
        t0: u64,
        t1: u64,
        result: i32,
        a1: u64,
    ) -> Option<u64> {
        let seq = self.open(tid, api, depth, t0, a1)?;
        self.w.end(seq, t1, result);
        Some(seq)
    }

    /// A call that never returns.
    pub fn open(&self, tid: u32, api: u16, depth: u16, t0: u64, a1: u64) -> Option<u64> {
        self.w.begin(&Fields {
            t_begin: t0,
            tid,
            api,
            kind: Kind::Call as u8,
            depth,
            a1,
            ..Fields::default()
        })
    }

    /// A call that never returns, with all three arguments.
    pub fn open_args(&self, tid: u32, api: u16, depth: u16, t0: u64, a: [u64; 3]) -> Option<u64> {
        self.w.begin(&Fields {
            t_begin: t0,
            tid,
            api,
            kind: Kind::Call as u8,
            depth,
            a0: a[0],
            a1: a[1],
            a2: a[2],
            ..Fields::default()
        })
    }

    /// A completed call `[t0, t1]` with all three arguments; returns its sequence number.
    #[allow(clippy::too_many_arguments)]
    pub fn call_args(
        &self,
        tid: u32,
        api: u16,
        depth: u16,
        t0: u64,
        t1: u64,
        result: i32,
        a: [u64; 3],
    ) -> Option<u64> {
        let seq = self.open_args(tid, api, depth, t0, a)?;
        self.w.end(seq, t1, result);
        Some(seq)
    }

    /// A graph-node entry as the shim writes it after an instantiation (api 0): node `ordinal` of
    /// `count` kernel nodes of graph exec `exec` runs function `func`.
    pub fn graph_node(&self, tid: u32, t: u64, exec: u64, func: u64, ordinal: u32, count: u32) {
        self.w.instant(
            &Fields {
                t_begin: t,
                tid,
                kind: Kind::GraphNode as u8,
                a0: exec,
                a1: func,
                a2: ordinal as u64 | (count as u64) << 32,
                ..Fields::default()
            },
            0,
        );
    }

    /// An NVTX (or lifecycle) instant, recorded under API id `NVTX_API` as the shim would.
    pub fn instant(&self, kind: Kind, tid: u32, t: u64, a0: u64, a1: u64, a2: u64) {
        self.w.instant(
            &Fields {
                t_begin: t,
                tid,
                api: NVTX_API,
                kind: kind as u8,
                a0,
                a1,
                a2,
                ..Fields::default()
            },
            0,
        );
    }

    /// A work-token entry as the shim's token ABI writes it (api 0, generation in `result`).
    #[allow(clippy::too_many_arguments)]
    pub fn token(&self, kind: Kind, tid: u32, t: u64, hi: u64, lo: u64, generation: u32, to: u64) {
        self.w.instant(
            &Fields {
                t_begin: t,
                tid,
                kind: kind as u8,
                a0: hi,
                a1: lo,
                a2: to,
                ..Fields::default()
            },
            generation as i32,
        );
    }

    /// An NVTX entry followed by its attributes entry: a u64 `payload` and `category`.
    #[allow(clippy::too_many_arguments)]
    pub fn nvtx_with_payload(
        &self,
        kind: Kind,
        tid: u32,
        t: u64,
        a: [u64; 3],
        payload: u64,
        category: u32,
    ) {
        let f = Fields {
            t_begin: t,
            tid,
            api: NVTX_API,
            kind: kind as u8,
            a0: a[0],
            a1: a[1],
            a2: a[2],
            ..Fields::default()
        };
        let owner = self.w.complete(&f, t, 0).expect("room in the ring");
        let x = Fields {
            kind: Kind::NvtxAttributes as u8,
            a0: owner,
            a1: payload,
            a2: category as u64,
            ..f
        };
        self.w.instant(&x, causeway_ring::layout::nvtx_payload::U64);
    }

    pub fn bytes(&self) -> &[u8] {
        // The file's size: a multiple of 8 (the header, a string area of whole records, entries).
        let len = self.buf.len() * 8;
        // SAFETY: the u64 buffer holds `len` initialized bytes.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr() as *const u8, len) }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.buf.len() * 8;
        // SAFETY: as above; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_mut_ptr() as *mut u8, len) }
    }

    /// Byte offset of the slot that sequence number `seq` uses.
    pub fn slot_offset(&self, seq: u64) -> usize {
        // The entries are the file's last `capacity` slots, whatever its string area.
        self.buf.len() * 8 - (self.capacity as usize) * layout::ENTRY_SIZE
            + ((seq & (self.capacity - 1)) as usize) * layout::ENTRY_SIZE
    }

    /// Reserves the next slot and leaves it torn: stamped with another sequence number, as a slot
    /// looks when its writer died between reserving and committing.
    pub fn torn(&mut self) -> u64 {
        let seq = self.open(99, 0, 0, 1, 0).expect("ring has room");
        let off = self.slot_offset(seq);
        let other = layout::stamp(seq + 12345, true);
        self.bytes_mut()[off + ent::STAMP..off + ent::STAMP + 8]
            .copy_from_slice(&other.to_le_bytes());
        seq
    }

    /// Overwrites both clock anchors (ticks, monotonic ns, realtime ns), so tick conversion is exact.
    pub fn set_anchors(&mut self, a0: [u64; 3], a1: [u64; 3]) {
        let b = self.bytes_mut();
        for (base, a) in [(hdr::ANCHOR0, a0), (hdr::ANCHOR1, a1)] {
            for (i, v) in a.into_iter().enumerate() {
                b[base + 8 * i..base + 8 * i + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        b[hdr::ANCHOR1_SEQ..hdr::ANCHOR1_SEQ + 8].copy_from_slice(&2u64.to_le_bytes());
    }

    /// A device interval as the timing backend writes it (complete, on thread `DEVICE_TID`).
    pub fn device(&self, d: Dev) -> Option<u64> {
        let seq = self.w.begin(&Fields {
            node: 0,
            t_begin: d.t0,
            tid: DEVICE_TID,
            api: d.kind as u16,
            kind: Kind::DeviceInterval as u8,
            flags: if d.host_clock {
                entry_flags::HOST_CLOCK
            } else {
                0
            },
            depth: d.copy_kind,
            a0: d.call,
            a1: d.a1,
            a2: d.stream | (d.device as u64) << 32,
        })?;
        self.w.end(seq, d.t1, 0);
        Some(seq)
    }

    /// An events-backend anchor: anchor `id` of device `device`, recorded between host ticks `t0`
    /// and `t1`, `elapsed` device ns after the previous anchor of its device (`NO_ELAPSED`: none).
    pub fn anchor(&self, id: u64, device: u64, t0: u64, t1: u64, elapsed: u64) -> Option<u64> {
        let seq = self.w.begin(&Fields {
            t_begin: t0,
            tid: DEVICE_TID,
            kind: Kind::DeviceAnchor as u8,
            a0: id,
            a1: device,
            a2: elapsed,
            ..Fields::default()
        })?;
        self.w.end(seq, t1, 0);
        Some(seq)
    }

    /// An events-backend kernel interval issued by call `call`: device ns offsets `o0`..`o1` from
    /// anchor `anchor` (entry flag `ANCHORED`), named by its launch's function handle.
    pub fn anchored_kernel(&self, call: u64, anchor: u64, o0: i64, o1: i64) -> Option<u64> {
        let seq = self.w.begin(&Fields {
            t_begin: o0 as u64,
            tid: DEVICE_TID,
            api: DeviceKind::Kernel as u16,
            kind: Kind::DeviceInterval as u8,
            flags: entry_flags::ANCHORED,
            a0: call,
            a2: anchor << 32,
            ..Fields::default()
        })?;
        self.w.end(seq, o1 as u64, 0);
        Some(seq)
    }

    /// A kernel interval on the ring's clock, issued by call `call`, named by text id `name`.
    pub fn kernel_interval(&self, call: u64, name: u64, t0: u64, t1: u64) -> Option<u64> {
        self.device(Dev::kernel(call, name, t0, t1))
    }

    /// A copy interval on the ring's clock of memcpy kind `copy_kind` (1 HtoD, 2 DtoH, 8 DtoD, …).
    pub fn copy_interval(
        &self,
        call: u64,
        copy_kind: u16,
        bytes: u64,
        t0: u64,
        t1: u64,
    ) -> Option<u64> {
        self.device(Dev {
            kind: DeviceKind::Memcpy,
            copy_kind,
            a1: bytes,
            ..Dev::kernel(call, 0, t0, t1)
        })
    }

    /// A memset interval on the ring's clock.
    pub fn memset_interval(&self, call: u64, bytes: u64, t0: u64, t1: u64) -> Option<u64> {
        self.device(Dev {
            kind: DeviceKind::Memset,
            a1: bytes,
            ..Dev::kernel(call, 0, t0, t1)
        })
    }

    pub fn write_to(&self, path: &Path) {
        std::fs::write(path, self.bytes()).unwrap();
    }

    /// The report of this ring (on one thread), checked against the report of the same ring marked
    /// closed (on one and four threads) and against its report on two and four threads. A closed
    /// ring is read in place from its mapping and an open one is copied first (`decode`). On one
    /// thread the nesting, the per-API table and the device intervals ride along the decoder's walk
    /// (the device pass is made apart when an interval needs the anchors) and kernel counting rides
    /// along the waits' walk; on two only the order-free passes ride along others; on four they run
    /// apart (`report::analyze`). Whatever a test builds, all must say the same, except the `closed`
    /// flag itself and the paths.
    pub fn report(&self, tag: &str) -> causeway_scanner::analysis::report::Report {
        let dir = TempDir::new(tag);
        let open = dir.join("open");
        let closed = dir.join("closed");
        std::fs::create_dir_all(&open).unwrap();
        std::fs::create_dir_all(&closed).unwrap();
        self.write_to(&open.join("x.cwring"));
        let mut bytes = self.bytes().to_vec();
        mark_closed(&mut bytes);
        std::fs::write(closed.join("x.cwring"), bytes).unwrap();
        // The scanner fuses order-free passes into others on a pool of few threads and spreads them
        // on a larger one: each copy under each schedule.
        let on = |threads: usize, path: &std::path::Path| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| causeway_scanner::analysis::report::Report::from_path(path).unwrap())
        };
        let r = on(1, &open);
        let c = on(4, &closed);
        // One thread on a closed ring: the nesting, the per-API table and the device intervals
        // ride along the decoder's check of the slots (and start again on a copy when a torn slot
        // turns up).
        let c1 = on(1, &closed);
        let spread = on(4, &open);
        // Two threads fuse the order-free passes but count kernels beside the waits.
        let two = on(2, &open);
        // Paths (in `capture`, `file` and warnings) name the folder each copy is in.
        let plain = |r: &causeway_scanner::analysis::report::Report| {
            let text = serde_json::to_string(r)
                .unwrap()
                .replace(closed.to_str().unwrap(), open.to_str().unwrap());
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            for p in v["processes"].as_array_mut().unwrap() {
                p["closed"] = false.into();
            }
            v
        };
        assert_eq!(
            plain(&r),
            plain(&spread),
            "the ring reports otherwise with its passes spread over threads than fused"
        );
        assert_eq!(
            plain(&r),
            plain(&two),
            "the ring reports otherwise on two threads than on one"
        );
        assert_eq!(
            plain(&r),
            plain(&c),
            "the closed ring (read in place) reports otherwise"
        );
        assert_eq!(
            plain(&r),
            plain(&c1),
            "the closed ring reports otherwise on one thread"
        );
        r
    }
}

/// Sets the closed flag in a ring file's bytes, as the shim does at exit.
pub fn mark_closed(ring: &mut [u8]) {
    let f = u32::from_le_bytes(ring[hdr::FLAGS..hdr::FLAGS + 4].try_into().unwrap());
    ring[hdr::FLAGS..hdr::FLAGS + 4].copy_from_slice(&(f | layout::flags::CLOSED).to_le_bytes());
}

/// The thread test rings give device intervals (the timing backend's own thread).
pub const DEVICE_TID: u32 = 77;

/// One device interval for `RingBuilder::device`.
#[derive(Clone, Copy)]
pub struct Dev {
    pub kind: DeviceKind,
    pub t0: u64,
    pub t1: u64,
    /// Times on the ring's clock (entry flag `HOST_CLOCK`).
    pub host_clock: bool,
    /// The memcpy kind (entry `depth`).
    pub copy_kind: u16,
    /// Sequence number of the issuing call, or `NO_CALL`.
    pub call: u64,
    /// Kernel name text id, or bytes.
    pub a1: u64,
    pub stream: u64,
    pub device: u32,
}

impl Dev {
    pub fn kernel(call: u64, name: u64, t0: u64, t1: u64) -> Dev {
        Dev {
            kind: DeviceKind::Kernel,
            t0,
            t1,
            host_clock: true,
            copy_kind: 0,
            call,
            a1: name,
            stream: 7,
            device: 0,
        }
    }

    pub fn no_call(self) -> Dev {
        Dev {
            call: NO_CALL,
            ..self
        }
    }

    /// Times in the backend's own clock (no `HOST_CLOCK`).
    pub fn unconverted(self) -> Dev {
        Dev {
            host_clock: false,
            ..self
        }
    }
}

/// The `causeway` binary, for the command-line tests (`cli/tests`, which include this module; the
/// scanner's own tests have no binary to run).
#[allow(dead_code)]
pub fn causeway() -> std::process::Command {
    match option_env!("CARGO_BIN_EXE_causeway") {
        Some(bin) => std::process::Command::new(bin),
        None => panic!("causeway() is for the tests of the causeway-cli package"),
    }
}

pub const TID: u32 = 1;
pub const TID2: u32 = 2;

/// The reference capture most tests use. Every number the tests assert follows from this function;
/// the comments give the arithmetic.
///
/// Thread 1:
/// * 3 runtime launches (cudaLaunchKernel, stub 0x500, no kernel record; durations 100, 200, 300)
///   each containing a driver launch (cuLaunchKernel, handle 0xd00 = "vecAdd", duration 80)
/// * a direct driver launch of 0xe00 = "direct" (50)
/// * a runtime launch of unknown handle 0x999 with no child (40)
/// * a failed runtime launch (result 98, 30) containing a failed driver launch of 0xd00 (result 1, 20)
/// * a runtime launch of 0x500 (100) followed, after it returned, by a depth-1 driver launch of 0xd00
///   (100): its parent was lost, so it is a launch of its own
/// * 10 cudaMemcpy calls lasting 100, 200, …, 1000 ns
/// * 1 cuStreamSynchronize that never returns
/// * NVTX: push step / pop (1000 ns); push step, push load, pop (500), pop (3000); start load in
///   domain "mydomain" as range 7 (ended on thread 2 after 700 ns); a mark "step"
/// * one torn slot
///
/// Thread 2:
/// * a depth-1 driver launch of 0xd00 (60) during thread 1's first runtime launch: another thread,
///   so not nested in it
/// * the end of range 7, a pop with no push, a push "step" that is never popped
pub fn scenario() -> RingBuilder {
    let mut b = RingBuilder::new(64, Policy::Drop);
    b.api(1, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .api(2, "cuLaunchKernel", Layer::Driver, Class::Launch)
        .api(3, "cudaMemcpy", Layer::Runtime, Class::Copy)
        .api(4, "cuStreamSynchronize", Layer::Driver, Class::Sync)
        .api(NVTX_API, "nvtxRangePushA", Layer::Nvtx, Class::Other)
        .kernel(0xd00, "vecAdd")
        .kernel(0xe00, "direct")
        .text(10, "step")
        .text(11, "load")
        .text(12, "mydomain");
    b.instant(Kind::ProcessStart, TID, 1, 0, 0, 0);
    for k in 0..3u64 {
        let t = 10_000 + 1000 * k;
        let r = b.open(TID, 1, 0, t, 0x500).unwrap();
        b.call(TID, 2, 1, t + 10, t + 90, 0, 0xd00).unwrap();
        b.w.end(r, t + 100 * (k + 1), 0);
    }
    b.call(TID, 2, 0, 20_000, 20_050, 0, 0xe00).unwrap();
    b.call(TID, 1, 0, 21_000, 21_040, 0, 0x999).unwrap();
    let r = b.open(TID, 1, 0, 22_000, 0x500).unwrap();
    b.call(TID, 2, 1, 22_005, 22_025, 1, 0xd00).unwrap();
    b.w.end(r, 22_030, 98);
    b.call(TID, 1, 0, 23_000, 23_100, 0, 0x500).unwrap();
    b.call(TID, 2, 1, 23_200, 23_300, 0, 0xd00).unwrap();
    b.call(TID2, 2, 1, 10_020, 10_080, 0, 0xd00).unwrap();
    for i in 0..10u64 {
        let t = 30_000 + 2000 * i;
        b.call(TID, 3, 0, t, t + 100 * (i + 1), 0, 0).unwrap();
    }
    b.open(TID, 4, 0, 60_000, 0).unwrap();
    b.instant(Kind::RangePush, TID, 100_000, 10, 0, 0);
    b.instant(Kind::RangePop, TID, 101_000, 0, 0, 0);
    b.instant(Kind::RangePush, TID, 102_000, 10, 0, 0);
    b.instant(Kind::RangePush, TID, 102_500, 11, 0, 0);
    b.instant(Kind::RangePop, TID, 103_000, 0, 0, 0);
    b.instant(Kind::RangePop, TID, 105_000, 0, 0, 0);
    b.instant(Kind::RangeStart, TID, 110_000, 11, 12, 7);
    b.instant(Kind::RangeEnd, TID2, 110_700, 0, 0, 7);
    b.instant(Kind::RangePop, TID2, 111_000, 0, 0, 0);
    b.instant(Kind::RangePush, TID2, 120_000, 10, 0, 0);
    b.instant(Kind::Mark, TID, 130_000, 10, 0, 0);
    b.torn();
    b
}

/// Entries `scenario` commits: 24 call entries (12 launch entries on thread 1, 1 on thread 2,
/// 10 copies, 1 open sync) + 11 NVTX instants + 1 ProcessStart.
pub const SCENARIO_ENTRIES: u64 = 36;
