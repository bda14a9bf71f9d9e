//! A synthetic capture for scanner benchmarks, shared by `benches/scan.rs` and
//! `examples/synth_capture.rs`: one ring file of about N entries shaped like a training loop at level 3
//! — per op a runtime launch (depth 0) containing a driver launch (depth 1), a CUPTI-style device
//! interval on the host clock, and every 64 ops an NVTX step range and a stream sync; durations vary
//! (a fixed pseudo-random jitter), as measured ones do. Entries go through the real writer
//! (`causeway_ring::Writer`), so the file is what the shim writes. Times are TSC ticks at 2.1 GHz by
//! default, as the shim writes them on an x86 host with an invariant TSC (the H200 machine's
//! captures), so every time the scanner reads goes through the tick conversion.

use causeway_ring::clock::Anchor;
use causeway_ring::layout::{
    self, entry_flags, ApiInfo, Class, ClockKind, Kind, Layer, Policy, StrKind,
};
use causeway_ring::{Fields, Params, Writer};
use std::io::Write;
use std::path::{Path, PathBuf};

const LAUNCH_RT: u16 = 1;
const LAUNCH_DRV: u16 = 2;
const SYNC: u16 = 3;
const NVTX: u16 = 4;

/// The class of a synthetic capture's API ids, as its string area names them.
#[allow(dead_code)] // used by the bench, not by the example
pub fn class_of(e: &causeway_ring::Entry) -> Option<Class> {
    match e.api {
        LAUNCH_RT | LAUNCH_DRV => Some(Class::Launch),
        SYNC => Some(Class::Sync),
        _ => None,
    }
}

/// The tick rate of a synthetic TSC capture (the H200 machine's TSC runs at 2.1 GHz).
const TSC_HZ: u64 = 2_100_000_000;

/// Writes `dir/bench-4242-0-0.cwring` with about `n` entries from `threads` threads, times in `clock`
/// ticks; returns its path, the entries written and the ops.
pub fn write(dir: &Path, n: u64, threads: u32, clock: ClockKind) -> (PathBuf, u64, u64) {
    std::fs::create_dir_all(dir).expect("create DIR");
    let capacity = n.next_power_of_two().max(1024);
    let strings = 1u64 << 20;
    let size = layout::HEADER_SIZE as u64 + strings + capacity * layout::ENTRY_SIZE as u64;
    let mut buf: Vec<u64> = vec![0; (size / 8) as usize];
    let params = Params {
        capacity,
        strings_size: strings,
        policy: Policy::Drop,
        pid: 4242,
        ppid: 1,
        level: 3,
        clock,
        ticks_per_sec: match clock {
            ClockKind::Monotonic => 1_000_000_000,
            ClockKind::Tsc => TSC_HZ,
        },
        anchor: Anchor {
            ticks: 1_000,
            mono_ns: 1_000,
            real_ns: 1_700_000_000_000_000_000,
        },
        exe: b"/synthetic/train",
        host: b"bench",
        flags: 0,
    };
    // SAFETY: `buf` is 8-aligned, zeroed, as large as the layout needs, and outlives the writer.
    let w = unsafe { Writer::init(buf.as_mut_ptr() as *mut u8, &params) };
    let api = |id: u16, name: &str, layer: Layer, class: Class| {
        let info = ApiInfo {
            layer,
            class,
            level: 2,
        };
        w.intern(StrKind::Api, id as u64, info.pack(), name.as_bytes());
    };
    api(LAUNCH_RT, "cudaLaunchKernel", Layer::Runtime, Class::Launch);
    api(LAUNCH_DRV, "cuLaunchKernel", Layer::Driver, Class::Launch);
    api(SYNC, "cudaStreamSynchronize", Layer::Runtime, Class::Sync);
    api(NVTX, "nvtxRangePushA", Layer::Nvtx, Class::Other);
    for k in 0..16u64 {
        w.intern(
            StrKind::Kernel,
            0x1000 + k,
            0,
            format!("kernel_{k}").as_bytes(),
        );
        w.intern(StrKind::Text, 100 + k, 0, format!("kernel_{k}").as_bytes());
    }
    w.intern(StrKind::Text, 1, 0, b"step");

    // Durations vary, as measured ones do (a sort of millions of equal values costs nothing; of
    // varying ones it was a sixth of a report): a fixed xorshift, so every capture is the same.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut jitter = |below: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % below
    };
    let mut t = 10_000u64;
    let mut written = 0u64;
    let mut op = 0u64;
    while written + 8 <= n {
        let tid = 100 + (op % threads as u64) as u32;
        let k = op % 16;
        // Steps, their syncs and NVTX ranges are on the first thread.
        if op.is_multiple_of(64) {
            let f = Fields {
                t_begin: t,
                tid: 100,
                api: NVTX,
                kind: Kind::RangePush as u8,
                a0: 1,
                ..Fields::default()
            };
            w.instant(&f, 0);
            written += 1;
        }
        let rt = Fields {
            t_begin: t,
            tid,
            api: LAUNCH_RT,
            kind: Kind::Call as u8,
            a0: 0x5000,
            a1: 0x1000 + k,
            a2: 1,
            ..Fields::default()
        };
        let Some(seq) = w.begin(&rt) else { break };
        let drv = Fields {
            depth: 1,
            api: LAUNCH_DRV,
            t_begin: t + 500,
            ..rt
        };
        // The driver call inside the runtime call: [t + 500, ≤ t + 2000] in [t, ≤ t + 2500].
        if let Some(s2) = w.begin(&drv) {
            w.end(s2, t + 800 + jitter(1_200), 0);
        }
        w.end(seq, t + 2_000 + jitter(500), 0);
        let start = t + 4_000 + jitter(200);
        let dev = Fields {
            t_begin: start,
            api: 1,
            kind: Kind::DeviceInterval as u8,
            flags: entry_flags::HOST_CLOCK,
            a0: seq,
            a1: 100 + k,
            a2: 7,
            ..Fields::default()
        };
        w.complete(&dev, start + 1_000 + k * 100 + jitter(300), 0);
        written += 3;
        t += 3_000;
        op += 1;
        if op.is_multiple_of(64) {
            let s = Fields {
                t_begin: t,
                tid: 100,
                api: SYNC,
                kind: Kind::Call as u8,
                a0: 0x5000,
                ..Fields::default()
            };
            if let Some(s) = w.begin(&s) {
                w.end(s, t + 15_000 + jitter(5_000), 0);
            }
            let p = Fields {
                t_begin: t + 20_100,
                tid: 100,
                api: NVTX,
                kind: Kind::RangePop as u8,
                ..Fields::default()
            };
            w.instant(&p, 0);
            written += 2;
            t += 21_000;
        }
    }
    // The writer's last write into `buf`: what follows patches the header behind it.
    w.set_flag(layout::flags::CLOSED);
    if clock == ClockKind::Tsc {
        // The writer refreshes the latest anchor from this process's own clock, which these made-up
        // ticks do not follow: put the anchor the shim would have written at the last tick, so the
        // reader's measured rate is the TSC's (as on the H200 machine, 2.1 GHz).
        let a = params.anchor;
        let mono = a.mono_ns + ((t - a.ticks) as u128 * 1_000_000_000 / TSC_HZ as u128) as u64;
        for (i, v) in [t, mono, a.real_ns + (mono - a.mono_ns)]
            .into_iter()
            .enumerate()
        {
            buf[(layout::hdr::ANCHOR1 + 8 * i) / 8] = v.to_le();
        }
        buf[layout::hdr::ANCHOR1_SEQ / 8] = 2u64.to_le();
    }
    let path = dir.join(format!("bench-4242-0-0{}", layout::RING_SUFFIX));
    let mut f = std::fs::File::create(&path).expect("create ring file");
    // SAFETY: viewing the initialised u64 buffer as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, size as usize) };
    f.write_all(bytes).expect("write ring file");
    (path, written, op)
}
