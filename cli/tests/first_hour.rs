//! What a first-time user trips over (issue 20, items 16 and 17): a mistyped range name, a program that
//! never used CUDA, help that must say what the commands do.

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use causeway_ring::layout::{Class, Kind, Layer, Policy};
use common::*;

#[test]
fn a_range_that_does_not_exist_is_an_error_that_lists_the_ranges() {
    let dir = TempDir::new("no-range");
    let ring = dir.join("a.cwring");
    scenario().write_to(&ring);
    let out = dir.join("r.html");
    for args in [
        vec!["report", "--steps", "--range", "stpe"],
        vec!["report", "--steps", "--json", "--range", "stpe"],
        vec!["html", "--range", "stpe", "-o", out.to_str().unwrap()],
    ] {
        let o = causeway().args(&args).arg(&ring).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.contains("no NVTX range \"stpe\"") && e.contains("\"step\" (3x)"),
            "{args:?}: {e}"
        );
        assert!(o.stdout.is_empty());
    }
    assert!(!out.exists());
    // The name that exists still works.
    let o = causeway()
        .args(["report", "--steps", "--range", "step"])
        .arg(&ring)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn a_program_that_never_used_cuda_is_said_to_have_not() {
    let dir = TempDir::new("no-cuda");
    let ring = dir.join("a.cwring");
    let b = RingBuilder::new(64, Policy::Drop);
    b.api(1, "cudaLaunchKernel", Layer::Runtime, Class::Launch);
    b.instant(Kind::ProcessStart, TID, 1, 0, 0, 0);
    b.write_to(&ring);
    let o = causeway().arg("report").arg(&ring).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("no CUDA runtime or driver call was recorded"),
        "{e}"
    );
    // A capture with calls says nothing of the kind.
    scenario().write_to(&ring);
    let o = causeway().arg("report").arg(&ring).output().unwrap();
    assert!(!String::from_utf8_lossy(&o.stderr).contains("no CUDA runtime"));
}

/// Help says what the commands do, with examples, in users' terms (issue 20, item 17).
#[test]
fn help_has_examples_and_no_source_paths() {
    let help = |args: &[&str]| {
        let o = causeway().args(args).arg("--help").output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let top = help(&[]);
    assert!(top.contains("parquet") || top.contains("Parquet"), "{top}");
    for sub in ["record", "report", "export", "html", "compare", "control"] {
        let h = help(&[sub]);
        assert!(h.contains("EXAMPLES:"), "{sub}: no examples");
        assert!(
            !h.contains("causeway_scanner::") && !h.contains("src/"),
            "{sub}: points at source: {h}"
        );
    }
    let r = help(&["record"]);
    let level2 = r
        .lines()
        .skip_while(|l| !l.contains("2  host:"))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        !level2.contains("alloc"),
        "allocations are level 4: {level2}"
    );
    let level4 = r
        .lines()
        .skip_while(|l| !l.contains("4  edge:"))
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(level4.contains("allocations"), "{level4}");
    assert!(help(&["export"]).contains("parquet"));
}
