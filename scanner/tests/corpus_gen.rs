//! Makes the damaged rings of the corpus (`corpus/damaged.tar.gz`, described in `corpus/README.md`):
//!
//! ```sh
//! cargo test -p causeway-scanner --test corpus_gen -- --ignored
//! ```
//!
//! Most are a real capture (`corpus/steps-l3-cupti.tar.gz`) with bytes changed the way a crash, a
//! full disk or a stray write would change them; the full rings (policy drop and overwrite) are
//! written by the real ring writer (`common::RingBuilder`), at 64 slots, because a real 1 MiB ring
//! filled to the brim would cost the corpus hundreds of KB. The files are frozen in the corpus:
//! regenerating them changes the synthetic rings' clock anchors, and so the expected outputs (bless,
//! corpus/README.md). `corpus/make-captures.sh` records the real captures.

mod common;

use causeway_ring::layout::{self, ent, hdr, rec, Class, Kind, Layer, Policy};
use common::{mark_closed, RingBuilder, NVTX_API, TID};
use std::path::{Path, PathBuf};
use std::process::Command;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("corpus")
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}
fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// The string records of a ring: (offset of the record, kind, key, payload range).
fn strings(b: &[u8]) -> Vec<(usize, u32, u64, std::ops::Range<usize>)> {
    let base = u64_at(b, hdr::STRINGS_OFFSET) as usize;
    let used = u64_at(b, hdr::STR_CURSOR) as usize;
    let mut out = Vec::new();
    let mut off = 0;
    while off < used {
        let r = base + off;
        let size = u32_at(b, r + rec::SIZE) as usize;
        assert!(size >= rec::HDR, "a string record of size {size}");
        let len = u32_at(b, r + rec::LEN) as usize;
        out.push((
            r,
            u32_at(b, r + rec::KIND),
            u64_at(b, r + rec::KEY),
            r + rec::HDR..r + rec::HDR + len,
        ));
        off += size;
    }
    out
}

/// Byte offset of the slot sequence number `seq` uses.
fn slot(b: &[u8], seq: u64) -> usize {
    let cap = u64_at(b, hdr::CAPACITY);
    u64_at(b, hdr::ENTRIES_OFFSET) as usize + (seq & (cap - 1)) as usize * layout::ENTRY_SIZE
}

/// Replaces the payload of the first string record of `kind` whose payload is `from` with `to` (same
/// length: the records stay where they are).
fn garble(b: &mut [u8], kind: u32, from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let (_, _, _, p) = strings(b)
        .into_iter()
        .find(|(_, k, _, p)| *k == kind && &b[p.clone()] == from)
        .unwrap_or_else(|| panic!("no string {:?}", String::from_utf8_lossy(from)));
    b[p].copy_from_slice(to);
}

/// A full ring of 64 slots written by the real writer: NVTX steps, each a runtime launch with its
/// driver launch inside, a copy and a sync — 6 entries a step, 30 steps, so 182 entries offered with
/// the process start and exit.
fn full_ring(policy: Policy) -> Vec<u8> {
    let b = RingBuilder::with(64, policy, 4242, 4200);
    b.api(1, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .api(2, "cuLaunchKernel", Layer::Driver, Class::Launch)
        .api(3, "cudaMemcpyAsync", Layer::Runtime, Class::Copy)
        .api(4, "cudaStreamSynchronize", Layer::Runtime, Class::Sync)
        .api(NVTX_API, "nvtxRangePushA", Layer::Nvtx, Class::Other)
        .kernel(0xd00, "gemm_kernel")
        .text(10, "step");
    b.instant(Kind::ProcessStart, TID, 1_000, 0, 0, 0);
    for s in 0..30u64 {
        let t = 10_000 + 100_000 * s;
        b.instant(Kind::RangePush, TID, t, 10, 0, 0);
        if let Some(r) = b.open(TID, 1, 0, t + 1_000, 0x500) {
            b.call(TID, 2, 1, t + 1_500, t + 4_000, 0, 0xd00);
            b.w.end(r, t + 5_000 + 10 * s, 0);
        } else {
            b.call(TID, 2, 1, t + 1_500, t + 4_000, 0, 0xd00);
        }
        b.call(TID, 3, 0, t + 6_000, t + 9_000, 0, 0);
        b.call(TID, 4, 0, t + 10_000, t + 60_000 + 1_000 * s, 0, 0);
        b.instant(Kind::RangePop, TID, t + 61_000 + 1_000 * s, 0, 0, 0);
    }
    b.instant(Kind::ProcessExit, TID, 10_000_000, 0, 0, 0);
    let mut v = b.bytes().to_vec();
    mark_closed(&mut v);
    v
}

#[test]
#[ignore = "writes corpus/damaged.tar.gz; run by hand (corpus/README.md)"]
fn make_damaged_rings() {
    let work = std::env::temp_dir().join(format!("causeway-corpus-gen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let ok = Command::new("tar")
        .arg("xzf")
        .arg(corpus().join("steps-l3-cupti.tar.gz"))
        .arg("-C")
        .arg(&work)
        .status()
        .unwrap();
    assert!(ok.success());
    let src = std::fs::read_dir(work.join("steps-l3-cupti"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwring"))
        .unwrap();
    let good = std::fs::read(&src).unwrap();
    let head = u64_at(&good, hdr::HEAD);
    assert!(head > 100, "the source ring holds {head} entries");
    let out = work.join("damaged");
    std::fs::create_dir_all(&out).unwrap();
    let write = |name: &str, b: &[u8]| std::fs::write(out.join(name), b).unwrap();

    // Cut short in the middle of the entries (a copy interrupted, a full disk): an error.
    let entries = u64_at(&good, hdr::ENTRIES_OFFSET) as usize;
    write(
        "truncated.cwring",
        &good[..entries + 40 * layout::ENTRY_SIZE + 17],
    );

    // A capture directory holding a good ring and that truncated one: the error names the file.
    std::fs::create_dir_all(out.join("dir-with-truncated")).unwrap();
    std::fs::write(out.join("dir-with-truncated/good.cwring"), &good).unwrap();
    std::fs::write(
        out.join("dir-with-truncated/cut.cwring"),
        &good[..entries + 40 * layout::ENTRY_SIZE + 17],
    )
    .unwrap();

    // Torn slots: three slots reserved but stamped for another sequence number, as a writer killed
    // between reserving and committing leaves them (RingBuilder::torn does the same).
    let mut b = good.clone();
    for seq in [5, 40, head - 3] {
        let off = slot(&b, seq) + ent::STAMP;
        put64(&mut b, off, layout::stamp(seq + 12345, true));
    }
    write("torn.cwring", &b);

    // The header's head word zeroed: the committed entries are still there.
    let mut b = good.clone();
    put64(&mut b, hdr::HEAD, 0);
    write("zero-head.cwring", &b);

    // A string record of an unknown kind: an error.
    let mut b = good.clone();
    let first = strings(&b)[0].0;
    put32(&mut b, first + rec::KIND, 99);
    write("bad-string-kind.cwring", &b);

    // Names garbled in place (same lengths): a kernel name with a terminal escape, a BEL and bytes
    // that are not UTF-8; an NVTX range name with a NUL and a lone continuation byte.
    let mut b = good.clone();
    garble(&mut b, 2, b"sleep_200us", b"\x1b[2Jx\xffy\x07\xc3(z");
    garble(&mut b, 3, b"compute", b"c\x00mp\x80te");
    write("garbled-strings.cwring", &b);

    // Full rings: the oldest 64 entries kept and the rest counted (drop), the newest 64 kept (overwrite).
    write("full-drop.cwring", &full_ring(Policy::Drop));
    write("full-overwrite.cwring", &full_ring(Policy::Overwrite));

    let tgz = corpus().join("damaged.tar.gz");
    let sh = format!(
        "tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C '{}' -cf - damaged | gzip -9n > '{}'",
        work.display(),
        tgz.display()
    );
    assert!(Command::new("sh")
        .arg("-c")
        .arg(&sh)
        .status()
        .unwrap()
        .success());
    eprintln!(
        "wrote {} ({} bytes)",
        tgz.display(),
        std::fs::metadata(&tgz).unwrap().len()
    );
    let _ = std::fs::remove_dir_all(&work);
}
