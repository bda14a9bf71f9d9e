//! The shim's folders stay layered. Reads every file under `shim/src`, finds each path into the crate
//! (`crate::…`, `$crate::…`, `super::…`, `use crate::{…}` groups; comments and string literals
//! skipped) and fails on an edge the order declared in `src/lib.rs` (its `- \`layer\`: deps` list)
//! does not allow, on a timing backend that names the seam or the other backend, on a hook table that
//! names more than the hook machinery, and on `super::super`. Test modules (`#[cfg(test)] mod …` at the
//! end of a file) are left out: a test may check two layers against each other.

#[path = "../../ci/crate_paths.rs"]
mod crate_paths;

use crate_paths::{code_of, module_of, paths_of, rust_files};
use std::collections::BTreeMap;
use std::path::Path;

/// `layer → layers it may use`, as `src/lib.rs` declares them.
type Order = BTreeMap<String, Vec<String>>;

/// The modules behind the timing seam: the backends and what the Intel ones share.
const BACKEND_PARTS: [&str; 5] = ["cupti", "events", "ur", "ze", "anchored"];

fn declared_order(lib_rs: &str) -> Order {
    let mut order = Order::new();
    for line in lib_rs.lines() {
        let Some(rest) = line.strip_prefix("//! - `") else {
            continue;
        };
        let Some((name, deps)) = rest.split_once("`:") else {
            continue;
        };
        let deps = deps
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty() && *d != "—")
            .map(String::from)
            .collect();
        order.insert(name.to_string(), deps);
    }
    order
}

/// What is wrong with the paths of the file whose module is `module`.
fn violations(order: &Order, module: &[String], code: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let Some(layer) = module.first() else {
        return bad; // lib.rs: the root declares the layers.
    };
    let Some(allowed) = order.get(layer) else {
        return vec![format!("`{layer}` is not a layer declared in src/lib.rs")];
    };
    for p in paths_of(code, module) {
        let p = match p {
            Ok(p) => p,
            Err(e) => {
                bad.push(e);
                continue;
            }
        };
        let Some(target) = p.first() else { continue };
        let shown = format!("crate::{}", p.join("::"));
        if target != layer {
            if !order.contains_key(target) {
                // `$crate::…` in a macro may name an item of the root; there is none.
                bad.push(format!("{shown}: `{target}` is not a layer"));
            } else if !allowed.contains(target) {
                bad.push(format!("{shown}: `{layer}` may not use `{target}`"));
            }
            if target == "timing"
                && p.get(1)
                    .is_some_and(|b| BACKEND_PARTS.contains(&b.as_str()))
            {
                bad.push(format!("{shown}: only the timing seam names a backend"));
            }
            continue;
        }
        // Inside a layer.
        if layer == "timing" && module.len() >= 2 {
            let own = &module[1];
            // What the Intel backends share (`anchored`) is theirs to name.
            if p.get(1) != Some(own) && p.get(1).is_none_or(|m| m != "anchored") {
                bad.push(format!(
                    "{shown}: the `{own}` backend names the seam or the other backend"
                ));
            }
        }
        if layer == "intercept" && module.get(1).is_some_and(|m| m == "tables") {
            let ok = matches!(
                p.get(1).map(String::as_str),
                Some("hooks" | "graph" | "links" | "tables")
            );
            if !ok {
                bad.push(format!(
                    "{shown}: a hook table names only the machinery (hooks, graph, links)"
                ));
            }
        }
    }
    bad
}

#[test]
fn every_crate_path_follows_the_declared_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let order = declared_order(&lib);
    assert!(order.len() >= 7, "src/lib.rs declares no layers: {order:?}");
    // The declared order itself has no loop: each layer uses only layers declared before it.
    let names: Vec<&String> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//! - `")?.split_once('`').map(|(n, _)| n))
        .filter_map(|n| order.get_key_value(n).map(|(k, _)| k))
        .collect();
    for (i, n) in names.iter().enumerate() {
        for d in &order[*n] {
            assert!(
                names[..i].contains(&d),
                "src/lib.rs: `{n}` uses `{d}`, which is not declared below it"
            );
        }
    }
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut bad = Vec::new();
    let mut edges = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let text = std::fs::read_to_string(f).unwrap();
        let code = match code_of(&text) {
            Ok(c) => c,
            Err(e) => {
                bad.push(format!("{}: {e}", rel.display()));
                continue;
            }
        };
        edges += paths_of(&code, &module_of(rel)).len();
        for v in violations(&order, &module_of(rel), &code) {
            bad.push(format!("{}: {v}", rel.display()));
        }
    }
    // Not vacuous: the files and their paths were found.
    assert!(files.len() > 30, "only {} files found", files.len());
    assert!(edges > 150, "only {edges} paths into the crate found");
    assert!(bad.is_empty(), "layering broken:\n  {}", bad.join("\n  "));
}

#[test]
fn the_checker_sees_what_it_must() {
    let order = declared_order(
        "//! - `hot`: —\n//! - `timing`: hot\n//! - `intercept`: hot, timing\n//! - `lifecycle`: hot, timing, intercept\n",
    );
    let m = |s: &str| s.split('/').map(String::from).collect::<Vec<_>>();
    let check = |module: &str, src: &str| violations(&order, &m(module), &code_of(src).unwrap());
    // Downward edges, in every spelling.
    assert!(check("intercept/hooks", "use crate::hot::record;\nuse crate::{hot::{guard, state}, timing};\nfn f() { $crate::timing::tie(); crate::hot::state::writer(); }").is_empty());
    // Upward edges, in every spelling.
    assert_eq!(check("hot/state", "use crate::timing;").len(), 1);
    assert_eq!(
        check("hot/state", "use crate::{intercept::registry, timing};").len(),
        2
    );
    assert_eq!(
        check("timing/events", "fn f() { crate::lifecycle::x(); }").len(),
        1
    );
    assert_eq!(
        check(
            "timing",
            "macro_rules! m { () => { $crate::intercept::x() } }"
        )
        .len(),
        1
    );
    // A backend reaching up to the seam or across to the other backend; the seam reaching down.
    assert_eq!(check("timing/events", "use super::Bracket;").len(), 1);
    // The Intel backends share `anchored`, and name each other no more than CUDA's do.
    assert!(check("timing/ur", "use crate::timing::anchored::Work;").is_empty());
    assert_eq!(check("timing/ur", "use crate::timing::ze::x;").len(), 1);
    assert_eq!(
        check("intercept/links", "fn f() { crate::timing::ze::x() }").len(),
        1
    );
    assert_eq!(check("timing/events", "use super::*;").len(), 1);
    assert_eq!(
        check("timing/cupti/start", "use crate::timing::events;").len(),
        1
    );
    assert!(check(
        "timing/cupti/start",
        "use super::ffi::*; use crate::timing::cupti::x;"
    )
    .is_empty());
    assert!(check(
        "timing",
        "mod cupti; use cupti::x; fn f() { cupti::start() }"
    )
    .is_empty());
    assert_eq!(
        check("intercept/hooks", "fn f() { crate::timing::cupti::push() }").len(),
        1
    );
    // Tables name the machinery only.
    assert!(check(
        "intercept/tables/runtime",
        "use crate::intercept::hooks::hook_table;"
    )
    .is_empty());
    assert_eq!(
        check(
            "intercept/tables/runtime",
            "use crate::intercept::registry;"
        )
        .len(),
        1
    );
    // Comments, strings and test modules do not count; `super::super` does.
    assert!(check(
        "hot/state",
        "// crate::timing\n/// `crate::lifecycle`\nconst S: &str = \"crate::timing\";\n"
    )
    .is_empty());
    assert!(check(
        "hot/state",
        "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    use crate::timing;\n}\n"
    )
    .is_empty());
    assert_eq!(
        check("timing/cupti/start", "use super::super::events;").len(),
        1
    );
    assert_eq!(check("nowhere/x", "").len(), 1, "an undeclared folder");
    assert!(code_of("#[cfg(test)]\nmod tests {\n}\nfn after() {}\n").is_err());
}
