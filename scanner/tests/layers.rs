//! The scanner's folders are its pipeline (`src/lib.rs`): util → read → facts → analysis →
//! {render, export}. A module may use its own layer and the layers before it, never a later one
//! (render and export are siblings: neither uses the other), and no two modules may use each other,
//! directly or round a loop. This test reads every `crate::…` path in `src/` and fails on an edge
//! that breaks either rule, so the layout keeps saying where a fact is computed and where it is shown.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module a file is (`facts::waits` for src/facts/waits.rs, `render::html` for
/// src/render/html/mod.rs).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// Every `crate::a::b…` path in `text`, braces expanded (`crate::{a::x, b}` gives `a::x` and `b`),
/// comments skipped.
fn crate_paths(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if rest.starts_with('{') {
            let mut depth = 0;
            let mut end = 0;
            for (j, c) in rest.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = j;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let inner = &rest[1..end];
            let mut d = 0;
            let mut start = 0;
            for (j, c) in inner.char_indices() {
                match c {
                    '{' => d += 1,
                    '}' => d -= 1,
                    ',' if d == 0 => {
                        out.push(inner[start..j].trim().to_string());
                        start = j + 1;
                    }
                    _ => {}
                }
            }
            out.push(inner[start..].trim().to_string());
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            out.push(rest[..end].trim_end_matches(':').to_string());
        }
    }
    out.retain(|p| !p.is_empty());
    out
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
    files(&src, &mut all);
    let modules: BTreeSet<String> = all.iter().map(|f| module_of(&src, f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for f in &all {
        let from = module_of(&src, f);
        if from == "lib" || from == "main" {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        assert!(
            !text.contains("super::super"),
            "{from}: reaches up with super::super; name the module by its crate:: path"
        );
        let layer = from.split("::").next().unwrap().to_string();
        let r = rank(&layer).unwrap_or_else(|| panic!("{from}: not in a known layer folder"));
        for p in crate_paths(&text) {
            let Some(to) = target(&p, &modules) else {
                continue; // a crate-root re-export or an item of lib.rs
            };
            if to == from || to.starts_with(&format!("{from}::")) {
                continue;
            }
            let to_layer = to.split("::").next().unwrap();
            let tr = rank(to_layer).unwrap_or(u32::MAX);
            if tr > r || (tr == r && to_layer != layer) {
                wrong.push(format!("{from} uses {to} ({p}): a later or sibling layer"));
            }
            edges.entry(from.clone()).or_default().insert(to);
        }
    }
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
    let paths = crate_paths(
        "use crate::{read::decode::{Decoded, Entries}, util::rank};\n// crate::analysis::x\nlet x = crate::facts::model::ring_key(p);",
    );
    assert_eq!(
        paths,
        vec![
            "read::decode::{Decoded, Entries}",
            "util::rank",
            "facts::model::ring_key"
        ]
    );
}
