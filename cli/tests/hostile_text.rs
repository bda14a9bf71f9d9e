//! Strings from the traced program (NVTX messages, kernel names, the paths of its files) are data: no
//! terminal control sequence in them reaches the terminal through any text view or error line, and a
//! line feed in a name cannot forge a line of the report (issue 20, item 8).

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use causeway_ring::layout::{Class, Kind, Layer, Policy};
use common::*;

const EVIL_RANGE: &str = "step\u{1b}[2J\u{1b}]0;pwned\u{7}";
const EVIL_KERNEL: &str = "gemm\u{1b}[31m\nFAKE LINE\u{9b}1m\u{202e}";

fn assert_clean(what: &str, s: &str) {
    for (i, c) in s.chars().enumerate() {
        assert!(
            c == '\n' || !(c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
            "{what}: raw {:?} at char {i} in:\n{s}",
            c
        );
    }
    assert!(!s.contains("\nFAKE LINE"), "{what}: a forged line:\n{s}");
}

fn hostile_ring() -> RingBuilder {
    let b = RingBuilder::new(64, Policy::Drop);
    b.api(1, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .kernel(0xd00, EVIL_KERNEL)
        .text(10, EVIL_RANGE);
    b.instant(Kind::ProcessStart, TID, 1, 0, 0, 0);
    for i in 0..4u64 {
        let t = 1_000 + 10_000 * i;
        b.instant(Kind::RangePush, TID, t, 10, 0, 0);
        b.call(TID, 1, 0, t + 100, t + 200, 0, 0xd00).unwrap();
        b.instant(Kind::RangePop, TID, t + 5_000, 0, 0, 0);
    }
    b
}

#[test]
fn names_and_messages_are_escaped_in_every_text_view() {
    let dir = TempDir::new("hostile-text");
    let ring = dir.join("a.cwring");
    hostile_ring().write_to(&ring);
    for args in [
        &["report"][..],
        &["report", "--steps"],
        &["report", "--gaps"],
    ] {
        let o = causeway().args(args).arg(&ring).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout);
        assert_clean(&format!("{args:?}"), &out);
        assert_clean(
            &format!("{args:?} stderr"),
            &String::from_utf8_lossy(&o.stderr),
        );
    }
    let o = causeway().arg("report").arg(&ring).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("gemm\\x1b[31m\\x0aFAKE LINE"), "{out}");
    let o = causeway()
        .args(["report", "--steps"])
        .arg(&ring)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("step\\x1b[2J"));
    let o = causeway()
        .args(["compare"])
        .arg(&ring)
        .arg(&ring)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_clean("compare", &String::from_utf8_lossy(&o.stdout));
    // JSON keeps the exact bytes (escaped by JSON itself).
    let o = causeway()
        .args(["report", "--json"])
        .arg(&ring)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.to_string().contains("\\u001b[31m"), "{v}");
}

#[test]
fn a_path_with_control_characters_is_escaped_in_the_error_line() {
    let dir = TempDir::new("hostile-path");
    let p = dir.join("cap\u{1b}]0;pwned\u{7}\nforged.cwring");
    std::fs::write(&p, b"not a ring").unwrap();
    let o = causeway().arg("report").arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_clean("error", &e);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("cap\\x1b]0;pwned\\x07\\x0aforged"), "{e}");
}

/// Kernel names are shown demangled, the symbol kept beside them in JSON (issue 20, item 12).
#[test]
fn kernel_names_are_demangled_with_the_symbol_kept() {
    let dir = TempDir::new("demangle");
    let ring = dir.join("a.cwring");
    let b = RingBuilder::new(64, Policy::Drop);
    b.api(1, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .kernel(0xd00, "_Z6vecAddPfS_S_i");
    b.instant(Kind::ProcessStart, TID, 1, 0, 0, 0);
    b.call(TID, 1, 0, 100, 200, 0, 0xd00).unwrap();
    b.write_to(&ring);
    let o = causeway()
        .args(["report", "--json"])
        .arg(&ring)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["kernels"][0]["name"],
        "vecAdd(float*, float*, float*, int)"
    );
    assert_eq!(v["kernels"][0]["symbol"], "_Z6vecAddPfS_S_i");
    let o = causeway().arg("report").arg(&ring).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("vecAdd(float*, float*, float*, int)"),
        "{text}"
    );
    assert!(!text.contains("_Z6vecAdd"), "{text}");
}
