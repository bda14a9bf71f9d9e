//! The Intel path end to end: real Unified Runtime work through the real UR loader from PyPI (its
//! OpenCL adapter over PoCL, a CPU OpenCL driver), traced at levels 2 and 4; the program counts
//! its own calls (`call.NAME=k`), and the capture must hold exactly those.
//!
//! Needs `sh ci/ur/install.sh` and `make -C ci ur` (ci/test.sh does both and sets
//! CAUSEWAY_REQUIRE_UR=1); elsewhere the tests say they were skipped.

use causeway_itests::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// ci/build/ur_prog, or None (with a note) when it was not built here.
fn ur_prog() -> Option<PathBuf> {
    let p = ci_build().join("ur_prog");
    if p.exists() {
        return Some(p);
    }
    if std::env::var_os("CAUSEWAY_REQUIRE_UR").is_some() {
        panic!(
            "{} missing: run `sh ci/ur/install.sh && make -C ci ur`",
            p.display()
        );
    }
    eprintln!(
        "skipped: {} not built (sh ci/ur/install.sh && make -C ci ur)",
        p.display()
    );
    None
}

/// The program's own call counts: `call.NAME=k` lines.
fn own_counts(out: &str) -> BTreeMap<String, u64> {
    out.lines()
        .filter_map(|l| l.strip_prefix("call."))
        .filter_map(|l| l.split_once('='))
        .map(|(n, k)| (n.to_string(), k.trim().parse().expect("a count")))
        .collect()
}

/// The UR entry points overrides.txt puts at level 2.
fn level2_ur() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("shim/gen/overrides.txt")).expect("overrides");
    text.lines()
        .filter(|l| l.starts_with("ur"))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (name, level) = (w.next()?, w.next()?);
            (level == "2").then(|| name.to_string())
        })
        .collect()
}

fn run(level: u8) -> Option<(String, serde_json::Value)> {
    let prog = ur_prog()?;
    let cmd = || {
        let mut c = std::process::Command::new(&prog);
        c.arg("7").env_remove("LD_PRELOAD");
        c
    };
    let b = bare(cmd());
    assert!(b.status.success(), "ur_prog failed bare: {}", stderr(&b));
    let (o, cap) = traced(cmd(), level, &[]);
    assert!(o.status.success(), "ur_prog failed traced: {}", stderr(&o));
    // The traced program computes and prints the same (its checks passed: result=ok).
    assert_eq!(stdout(&b), stdout(&o));
    assert!(stdout(&o).contains("result=ok"), "{}", stdout(&o));
    Some((stdout(&o), report(&cap)))
}

#[test]
fn level_4_records_every_ur_call_the_program_makes() {
    let Some((out, r)) = run(4) else { return };
    let own = own_counts(&out);
    assert!(own.len() > 20, "{own:?}");
    for (name, k) in &own {
        assert_eq!(calls(&r, name), *k, "{name}");
    }
    // Besides them only the loader's own discovery of its built-in adapter's tables.
    for row in r["apis"].as_array().expect("apis") {
        let name = row["name"].as_str().unwrap();
        assert_eq!(row["layer"], "unified_runtime", "{row}");
        assert!(
            own.contains_key(name)
                || (name.starts_with("urGet") && name.ends_with("ProcAddrTable")),
            "{name} recorded but not called by the program: {row}"
        );
    }
    assert_eq!(launches(&r, "add_inc"), 7, "{}", r["kernels"]);
}

#[test]
fn level_2_records_the_work_and_waits_only() {
    let Some((out, r)) = run(2) else { return };
    let own = own_counts(&out);
    let l2 = level2_ur();
    for (name, k) in &own {
        let want = if l2.contains(name) { *k } else { 0 };
        assert_eq!(
            calls(&r, name),
            want,
            "{name} (level 2: {})",
            l2.contains(name)
        );
    }
    assert_eq!(calls(&r, "urEnqueueKernelLaunchWithArgsExp"), 7);
    assert_eq!(launches(&r, "add_inc"), 7, "{}", r["kernels"]);
    let classes: BTreeMap<&str, &str> = r["apis"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["name"].as_str().unwrap(), a["class"].as_str().unwrap()))
        .collect();
    assert_eq!(classes["urEnqueueMemBufferRead"], "copy");
    assert_eq!(classes["urEnqueueMemBufferFill"], "memset");
    assert_eq!(classes["urQueueFinish"], "sync");
    assert_eq!(classes["urEventWait"], "event_sync");
}
