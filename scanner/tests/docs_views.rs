//! `docs/views.md` (what `--help` points users to for the figures' definitions) is the module
//! documentation of the views, word for word: it cannot drift from the code that computes them.
//! Regenerate with `CAUSEWAY_WRITE_DOCS=1 cargo test -p causeway-scanner --test docs_views`.

use std::path::Path;

const VIEWS: [(&str, &str); 5] = [
    (
        "Steps: `causeway report --steps`, `html`",
        "src/analysis/steps.rs",
    ),
    (
        "Launch gaps: `causeway report --gaps`",
        "src/analysis/gaps.rs",
    ),
    (
        "Two captures: `causeway compare`",
        "src/analysis/compare.rs",
    ),
    ("Why: `causeway why`", "src/analysis/causal/why.rs"),
    (
        "The dependency graph (`why`, the `edges` table)",
        "src/analysis/causal/graph.rs",
    ),
];

fn module_doc(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| {
            l.strip_prefix("//!")
                .unwrap()
                .strip_prefix(' ')
                .unwrap_or("")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn generated() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = String::from(
        "# What the views' figures mean\n\n\
         The definitions of every figure `causeway report --steps`, `report --gaps`, `html` and \
         `compare` print, as the scanner's source states them (generated from its module docs; \
         `scanner/tests/docs_views.rs` checks this file is current). The control harness has its \
         own page: [control.md](control.md); the Parquet tables: [parquet.md](parquet.md).\n",
    );
    for (title, file) in VIEWS {
        out.push_str(&format!(
            "\n## {title}\n\n{}\n",
            module_doc(&root.join(file))
        ));
    }
    out
}

#[test]
fn docs_views_is_the_module_docs() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/views.md");
    let want = generated();
    if std::env::var_os("CAUSEWAY_WRITE_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/views.md is not the views' module docs: regenerate it with \
         CAUSEWAY_WRITE_DOCS=1 cargo test -p causeway-scanner --test docs_views"
    );
}
