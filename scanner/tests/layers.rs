//! The scanner's folders are its pipeline (`src/lib.rs`): util → read → facts → analysis →
//! {render, export}. A module may use its own layer and the layers before it, never a later one
//! (render and export are siblings: neither uses the other), and no two modules may use each other,
//! directly or round a loop. This test reads every `crate::…` path in `src/` and fails on an edge
//! that breaks either rule, so the layout keeps saying where a fact is computed and where it is shown.

#[path = "../../ci/crate_paths.rs"]
mod crate_paths;

use crate_paths::{code_of, module_of, paths_of, rust_files};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A file's module as a node of the import graph: its first two segments (`analysis::report` for
/// src/analysis/report/device.rs), the depth the paths read out of the code go to.
fn node(src: &Path, file: &Path) -> String {
    let m = module_of(file.strip_prefix(src).unwrap());
    m[..m.len().min(2)].join("::")
}

/// Rank of each top-level folder; equal ranks are siblings that may not use each other unless equal
/// names.
fn rank(layer: &str) -> Option<u32> {
    Some(match layer {
        "util" => 0,
        "read" => 1,
        "facts" => 2,
        "analysis" => 3,
        "render" | "export" => 4,
        _ => return None,
    })
}

/// The module a path names, given the crate's modules: its longest prefix that is one.
fn target(path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| modules.contains(m))
}

#[test]
fn layers_and_no_loops() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    rust_files(&src, &mut all);
    let modules: BTreeSet<String> = all.iter().map(|f| node(&src, f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut found = 0;
    for f in &all {
        let from = node(&src, f);
        if from == "lib" || from.is_empty() {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let layer = from.split("::").next().unwrap().to_string();
        let r = rank(&layer).unwrap_or_else(|| panic!("{from}: not in a known layer folder"));
        let module = module_of(f.strip_prefix(&src).unwrap());
        for p in paths_of(&code, &module) {
            let p =
                p.unwrap_or_else(|e| panic!("{from}: {e}; name the module by its crate:: path"));
            found += 1;
            let Some(to) = target(&p.join("::"), &modules) else {
                continue; // a crate-root re-export or an item of lib.rs
            };
            if to == from
                || from.starts_with(&format!("{to}::"))
                || to.starts_with(&format!("{from}::"))
            {
                continue;
            }
            let to_layer = to.split("::").next().unwrap();
            let tr = rank(to_layer).unwrap_or(u32::MAX);
            if tr > r || (tr == r && to_layer != layer) {
                wrong.push(format!(
                    "{from} uses {to} (crate::{}): a later or sibling layer",
                    p.join("::")
                ));
            }
            edges.entry(from.clone()).or_default().insert(to);
        }
    }
    // Not vacuous: the paths were found.
    assert!(found > 150, "only {found} paths into the crate found");
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));

    // No loops: every module's uses, followed, never come back to it.
    for start in edges.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((m, path)) = stack.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                if next == start {
                    panic!("import loop: {} -> {start}", path.join(" -> "));
                }
                if seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
}

#[test]
fn the_path_reader_expands_braces_and_skips_comments() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let code = code_of(
        "use crate::{read::decode::{Decoded, Entries}, util::rank};\n// crate::analysis::x\nlet x = crate::facts::model::ring_key(p);\nuse super::Item;",
    )
    .unwrap();
    let paths: Vec<String> = paths_of(&code, &m("export::chrome"))
        .into_iter()
        .map(|p| p.unwrap().join("::"))
        .collect();
    assert_eq!(
        paths,
        vec![
            "read::decode",
            "read::decode",
            "util::rank",
            "facts::model",
            "export::Item"
        ]
    );
}
