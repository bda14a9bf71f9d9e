//! The level table that `causeway record --help` and the README print is tested against the generated
//! hook tables (`docs/interception.md`, written by `shim/gen/hookgen.py` from the same overrides the
//! shim is built from): every class recorded at level 2 is named in the level-2 text, and the classes
//! recorded only at level 4 are named in the level-4 text and not at level 2. A class moved between
//! levels in `shim/gen/overrides.txt` fails here until the help and README say so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// The words the help and README use for each class.
fn phrase(class: &str) -> &'static str {
    match class {
        "Launch" => "launches",
        "Copy" => "copies",
        "Memset" => "memsets",
        "Prefetch" => "prefetches",
        "MemOp" => "stream memory operations",
        "StreamOp" => "uploads",
        "GraphLaunch" => "graph launches",
        "HostFunc" => "host functions",
        "Sync" => "syncs",
        "EventRecord" => "event records",
        "EventSync" => "waits",
        "StreamWait" => "stream waits",
        "CtxEventRecord" | "CtxEventWait" => "context events",
        "Graph" => "graph instantiation",
        "Capture" => "stream capture",
        "Alloc" | "Free" => "allocations",
        "Module" => "module loading",
        "Lookup" => "entry-point lookups",
        "Query" => "queries",
        "Stream" | "Event" => "lifetimes",
        "Other" => "every other call",
        other => panic!("class {other} has no phrase: add one here and to the help and README"),
    }
}

/// docs/interception.md's "By level and class" table: level → classes.
fn levels() -> BTreeMap<u8, BTreeSet<String>> {
    let doc = std::fs::read_to_string(repo().join("docs/interception.md")).unwrap();
    let table = doc
        .split("## By level and class")
        .nth(1)
        .expect("a by-level table")
        .split("##")
        .next()
        .unwrap();
    let mut out: BTreeMap<u8, BTreeSet<String>> = BTreeMap::new();
    for l in table.lines() {
        let cells: Vec<&str> = l.split('|').map(str::trim).collect();
        if let (Some(level), Some(class)) = (cells.get(1), cells.get(2)) {
            if let Ok(level) = level.parse() {
                out.entry(level).or_default().insert(class.to_string());
            }
        }
    }
    assert!(out.contains_key(&2) && out.contains_key(&4), "{out:?}");
    out
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn between<'a>(s: &'a str, from: &str, to: &str) -> &'a str {
    let a = s.find(from).unwrap_or_else(|| panic!("no {from:?} in {s}")) + from.len();
    let b = a + s[a..]
        .find(to)
        .unwrap_or_else(|| panic!("no {to:?} after {from:?}"));
    &s[a..b]
}

fn check(what: &str, level2: &str, level4: &str) {
    let lv = levels();
    let at2 = &lv[&2];
    for class in at2 {
        assert!(
            level2.contains(phrase(class)),
            "{what}: level 2 records {class} calls, but its level-2 text does not say {:?}: {level2}",
            phrase(class)
        );
    }
    for class in lv[&4].difference(at2) {
        let p = phrase(class);
        assert!(
            level4.contains(p),
            "{what}: level 4 text does not say {p:?}: {level4}"
        );
        assert!(
            !level2.contains(p),
            "{what}: level 2 text says {p:?}, a level-4 class: {level2}"
        );
    }
}

#[test]
fn record_help_levels_match_the_hook_tables() {
    let o = Command::new(env!("CARGO_BIN_EXE_causeway"))
        .args(["record", "--help"])
        .output()
        .unwrap();
    let help = squash(&String::from_utf8_lossy(&o.stdout));
    check(
        "record --help",
        between(&help, "2 host:", "3 full:"),
        between(&help, "4 edge:", "DEVICE TIMING"),
    );
}

#[test]
fn readme_levels_match_the_hook_tables() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let row = |prefix: &str| {
        readme
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no README row {prefix:?}"))
            .split('|')
            .nth(2)
            .unwrap()
            .to_string()
    };
    check("README", &row("| 2 host |"), &row("| 4 edge |"));
}
