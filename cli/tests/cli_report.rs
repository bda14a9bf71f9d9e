//! `causeway report` end to end: good captures in both forms, and hostile files that must give one
//! error line and exit code 2, never a panic.

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use causeway_ring::layout::{self, hdr, rec};
use common::*;
use std::path::Path;

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn report(args: &[&str], capture: &Path) -> Run {
    let o = causeway()
        .arg("report")
        .args(args)
        .arg(capture)
        .output()
        .unwrap();
    Run {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

/// Asserts the one-line error contract and returns the problem text after `<path>: `.
fn expect_error(capture: &Path, bad_file: &Path) -> String {
    for args in [&[][..], &["--json"][..]] {
        let r = report(args, capture);
        assert_eq!(
            r.code,
            Some(2),
            "exit code for {}: stderr {:?}",
            bad_file.display(),
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "panic: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "one line: {:?}", r.stderr);
        assert!(r.stdout.is_empty(), "nothing on stdout: {:?}", r.stdout);
        let prefix = format!("causeway: error: {}: ", bad_file.display());
        assert!(
            r.stderr.starts_with(&prefix),
            "{:?} should start with {:?}",
            r.stderr,
            prefix
        );
    }
    let r = report(&[], capture);
    r.stderr.trim_end()[format!("causeway: error: {}: ", bad_file.display()).len()..].to_string()
}

fn bad_file(dir: &TempDir, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    expect_error(&p, &p)
}

/// xorshift64*: deterministic "random" bytes without a dependency.
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

fn good() -> Vec<u8> {
    scenario().bytes().to_vec()
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

#[test]
fn human_report_has_the_tables_and_warnings() {
    let dir = TempDir::new("human");
    scenario().write_to(&dir.join("x.cwring"));
    let r = report(&[], dir.path());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for head in [
        "PROCESSES",
        "APIS (by total host time)",
        "KERNELS (by launches)",
        "NVTX RANGES",
    ] {
        assert!(r.stdout.contains(head), "{head} missing:\n{}", r.stdout);
    }
    let vec_add = r.stdout.lines().find(|l| l.ends_with("vecAdd")).unwrap();
    let cells: Vec<&str> = vec_add.split_whitespace().collect();
    // launches, direct, graph, captured, failed, open: the scenario has no graphs and no capture, so
    // all 5 launches are direct.
    assert_eq!(cells, ["5", "5", "0", "0", "1", "0", "vecAdd"]);
    // Columns line up: the "calls" header ends where every API row's calls number ends.
    let lines: Vec<&str> = r.stdout.lines().collect();
    let head = lines.iter().position(|l| l.starts_with("api ")).unwrap();
    let end = lines[head].find("calls").unwrap() + "calls".len();
    for row in &lines[head + 1..head + 5] {
        let before = &row[..end];
        assert!(
            before.ends_with(char::is_numeric),
            "{row:?} vs {:?}",
            lines[head]
        );
        assert_eq!(row.as_bytes()[end], b' ', "{row:?}");
    }
    assert!(lines[head + 1].starts_with("cudaMemcpy "));
    assert!(r.stderr.contains("causeway: warning: pid 1000"));
    assert!(r.stderr.contains("1 slots torn"));
    assert!(r.stderr.contains("1 calls still open"));
}

#[test]
fn json_report_is_one_object() {
    let dir = TempDir::new("json");
    scenario().write_to(&dir.join("x.cwring"));
    let r = report(&["--json"], dir.path());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("one JSON object");
    assert_eq!(v["processes"][0]["pid"], 1000);
    assert_eq!(v["processes"][0]["entries"], SCENARIO_ENTRIES);
    assert_eq!(v["processes"][0]["torn"], 1);
    assert_eq!(v["processes"][0]["dropped"], 0);
    let memcpy = v["apis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "cudaMemcpy")
        .unwrap();
    assert_eq!(memcpy["calls"], 10);
    assert_eq!(memcpy["total_ns"], 5500);
    assert_eq!(memcpy["p99_ns"], 1000);
    assert_eq!(
        v["kernels"][0],
        // No graphs and no capture in the scenario: launches are all direct.
        serde_json::json!({"name": "vecAdd", "symbol": "vecAdd", "launches": 5, "direct": 5, "via_graph": 0,
            "captured": 0, "failed": 1, "open": 0})
    );
    assert_eq!(v["ranges"][0]["name"], "step");
    assert_eq!(v["ranges"][0]["total_ns"], 4000);
}

#[test]
fn disabled_shim_notice_is_printed() {
    let dir = TempDir::new("disabled");
    let b = RingBuilder::new(16, layout::Policy::Drop);
    b.w.set_flag(layout::flags::DISABLED);
    b.w.notice(b"real cuLaunchKernel not found");
    b.write_to(&dir.join("x.cwring"));
    let r = report(&[], dir.path());
    assert_eq!(r.code, Some(0));
    assert!(r.stdout.contains("disabled"));
    assert!(r
        .stderr
        .contains("the shim disabled itself and stopped recording: real cuLaunchKernel not found"));
}

#[test]
fn missing_path() {
    let dir = TempDir::new("missing");
    let p = dir.join("nope");
    assert_eq!(expect_error(&p, &p), "no such file or directory");
}

#[test]
fn directory_without_rings() {
    let dir = TempDir::new("empty-dir");
    std::fs::write(dir.join("readme.txt"), "hi").unwrap();
    let problem = expect_error(dir.path(), dir.path());
    assert_eq!(
        problem,
        format!("no causeway rings (*.cwring) in {}", dir.path().display())
    );
}

#[test]
fn empty_file() {
    let dir = TempDir::new("empty");
    assert!(bad_file(&dir, "x.cwring", &[]).contains("empty file (0 bytes)"));
}

#[test]
fn garbage() {
    let dir = TempDir::new("garbage");
    let problem = bad_file(&dir, "x.cwring", &noise(7, 100));
    assert_eq!(problem, "not a causeway ring (no CAUSEWAY magic)");
    let problem = bad_file(&dir, "y.cwring", &noise(8, 10_000));
    assert_eq!(problem, "not a causeway ring (no CAUSEWAY magic)");
}

#[test]
fn truncated_rings() {
    let dir = TempDir::new("trunc");
    let g = good();
    let strings = layout::HEADER_SIZE + STRINGS as usize;
    for len in [
        1,
        7,
        8,
        100,
        4095,
        4096,
        strings - 1,
        strings,
        strings + 64,
        g.len() - 64,
        g.len() - 1,
    ] {
        let problem = bad_file(&dir, &format!("t{len}.cwring"), &g[..len]);
        assert!(problem.starts_with("truncated: "), "len {len}: {problem}");
    }
}

#[test]
fn bumped_version() {
    let dir = TempDir::new("version");
    let mut g = good();
    put32(&mut g, hdr::VERSION, layout::VERSION + 1);
    let problem = bad_file(&dir, "x.cwring", &g);
    let want = format!("unsupported format version {}", layout::VERSION + 1);
    assert!(problem.starts_with(&want), "{problem}");
}

#[test]
fn corrupt_header_fields() {
    let dir = TempDir::new("header");
    for (i, cap) in [0u64, 3, 48, 1 << 40, u64::MAX].into_iter().enumerate() {
        let mut g = good();
        put64(&mut g, hdr::CAPACITY, cap);
        let problem = bad_file(&dir, &format!("cap{i}.cwring"), &g);
        assert!(problem.contains("capacity"), "{problem}");
    }
    // A capacity that is valid but larger than the file: the file is then too short.
    let mut g = good();
    put64(&mut g, hdr::CAPACITY, 1 << 20);
    assert!(bad_file(&dir, "big.cwring", &g).starts_with("truncated"));
    let mut g = good();
    put32(&mut g, hdr::POLICY, 9);
    assert!(bad_file(&dir, "policy.cwring", &g).contains("unknown policy 9"));
    let mut g = good();
    put32(&mut g, hdr::LEVEL, 0);
    assert!(bad_file(&dir, "level.cwring", &g).contains("capture level 0"));
    let mut g = good();
    put64(&mut g, hdr::STR_CURSOR, STRINGS + 8);
    assert!(bad_file(&dir, "cursor.cwring", &g).contains("string bytes used"));
    let mut g = good();
    g[..8].fill(0);
    assert!(bad_file(&dir, "nomagic.cwring", &g).contains("header never completed"));
}

#[test]
fn corrupt_string_records() {
    let dir = TempDir::new("strings");
    let base = layout::HEADER_SIZE;
    let mut g = good();
    put32(&mut g, base + rec::KIND, 99);
    assert!(bad_file(&dir, "kind.cwring", &g).contains("unknown kind 99"));
    let mut g = good();
    put32(&mut g, base + rec::SIZE, 12);
    assert!(bad_file(&dir, "size.cwring", &g).contains("corrupt string record at offset 0"));
    let mut g = good();
    put32(&mut g, base + rec::LEN, 1 << 30);
    assert!(bad_file(&dir, "len.cwring", &g).contains("corrupt string record"));
    let mut g = good();
    put32(&mut g, base + rec::SIZE, 1 << 20);
    assert!(bad_file(&dir, "huge.cwring", &g).contains("corrupt string record"));
}

#[test]
fn random_bytes_after_a_valid_magic() {
    let dir = TempDir::new("magic");
    for seed in 1..=20u64 {
        let mut b = noise(seed, 4096 + 64 * 64 + (seed as usize * 37));
        b[..8].copy_from_slice(&layout::MAGIC);
        let p = dir.join(&format!("m{seed}.cwring"));
        std::fs::write(&p, &b).unwrap();
        expect_error(&p, &p);
    }
}

/// In a directory a ring that cannot be read is left out, named in a warning (on stderr and in the
/// JSON report), and the others are read; a directory of nothing readable is the first bad file's
/// error, one that cannot be opened before one that cannot be parsed.
#[test]
fn a_bad_ring_in_a_directory_is_left_out_and_named() {
    let dir = TempDir::new("dir-bad");
    scenario().write_to(&dir.join("a.cwring"));
    let cut = dir.join("b.cwring");
    std::fs::write(&cut, &good()[..5000]).unwrap();
    let empty = dir.join("c.cwring");
    std::fs::write(&empty, b"").unwrap();
    let sub = dir.join("d.cwring");
    std::fs::create_dir(&sub).unwrap();
    let left_out = |p: &Path, problem: &str| {
        format!(
            "{}: {problem}: this ring is left out; the capture's other rings are read",
            p.display()
        )
    };
    // File order among those that could not be opened, then those that could not be parsed.
    let want = [
        left_out(
            &empty,
            "empty file (0 bytes): the ring was never created completely",
        ),
        left_out(
            &sub,
            "not a regular file (a capture is a directory of *.cwring files or one such file)",
        ),
        left_out(
            &cut,
            &format!(
                "truncated: 5000 bytes, the header describes {}",
                good().len()
            ),
        ),
    ];
    let r = report(&[], dir.path());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("1 process,"), "{}", r.stdout);
    for w in &want {
        assert!(
            r.stderr.contains(&format!("causeway: warning: {w}\n")),
            "{w}\n{}",
            r.stderr
        );
    }
    let j = report(&["--json"], dir.path());
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    assert_eq!(
        v["warnings"].as_array().unwrap()[..3],
        want.map(serde_json::Value::from)
    );
    assert_eq!(
        j.stderr.matches("left out").count(),
        3,
        "each once: {}",
        j.stderr
    );
    // The views do not list warnings: the CLI says it.
    let s = report(&["--steps"], dir.path());
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    assert_eq!(s.stderr.matches("left out").count(), 3, "{}", s.stderr);

    std::fs::remove_file(dir.join("a.cwring")).unwrap();
    assert!(expect_error(dir.path(), &empty).starts_with("empty file"));
    std::fs::remove_file(&empty).unwrap();
    std::fs::remove_dir(&sub).unwrap();
    assert!(expect_error(dir.path(), &cut).starts_with("truncated"));
}

/// Valid headers over random string areas and entries: any outcome but a panic or a hang.
#[test]
fn valid_header_random_body_never_panics() {
    let dir = TempDir::new("body");
    let g = good();
    for seed in 1..=12u64 {
        let mut b = g.clone();
        let body = noise(seed, b.len() - layout::HEADER_SIZE);
        let start = if seed % 2 == 0 {
            // Keep the strings, randomize only the entries.
            layout::HEADER_SIZE + STRINGS as usize
        } else {
            layout::HEADER_SIZE
        };
        b[start..].copy_from_slice(&body[start - layout::HEADER_SIZE..]);
        if seed % 3 == 0 {
            // Claim the whole window is written so every random slot is examined.
            put64(&mut b, hdr::HEAD, u64::MAX - seed);
        }
        let p = dir.join(&format!("r{seed}.cwring"));
        std::fs::write(&p, &b).unwrap();
        for args in [&[][..], &["--json"][..]] {
            let r = report(args, &p);
            assert!(
                r.code == Some(0) || r.code == Some(2),
                "seed {seed}: exit {:?}: {}",
                r.code,
                r.stderr
            );
            assert!(!r.stderr.contains("panicked"), "seed {seed}: {}", r.stderr);
        }
    }
}

/// A full disk under stdout is an error (exit 2, one line), not a cut JSON with status 0; a reader
/// that stops early (`| head`) is not.
#[test]
fn a_failed_write_to_stdout_is_an_error_and_a_closed_pipe_is_not() {
    let dir = TempDir::new("stdout-full");
    scenario().write_to(&dir.join("x.cwring"));
    for args in [&[][..], &["--json"][..], &["--steps", "--json"][..]] {
        let o = causeway()
            .arg("report")
            .args(args)
            .arg(dir.path())
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("causeway: error: cannot write to standard output: No space left"),
            "{args:?}: {err}"
        );
    }
    let mut child = causeway()
        .arg("report")
        .arg("--json")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("error"), "{err}");
}

/// A TSC ring whose header gives no tick rate and whose anchors measure none (a damaged header):
/// its times cannot be nanoseconds, and the report says so rather than showing them as such.
#[test]
fn a_ring_without_a_tick_rate_is_named() {
    let dir = TempDir::new("no-rate");
    let mut b = RingBuilder::level3_tsc(64, 0);
    b.call(TID, 1, 0, 1_000, 2_000, 0, 0).unwrap();
    b.set_anchors([5, 5, 5], [5, 5, 5]);
    b.write_to(&dir.join("x.cwring"));
    let r = report(&[], dir.path());
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("the ring's tick rate is unknown"),
        "{}",
        r.stderr
    );
    let mut ok = RingBuilder::level3_tsc(64, 1_000_000_000);
    ok.call(TID, 1, 0, 1_000, 2_000, 0, 0).unwrap();
    ok.set_anchors([0, 0, 0], [1_000_000_000, 1_000_000_000, 1_000_000_000]);
    ok.write_to(&dir.join("x.cwring"));
    let r = report(&[], dir.path());
    assert!(!r.stderr.contains("tick rate"), "{}", r.stderr);
}
