//! Reading a crate's own module paths out of its source, for the tests that keep a crate's folders
//! layered (`shim/tests/layers.rs`, `scanner/tests/layers.rs`, which include this file): the module
//! a file is, its code without comments, literals and trailing test module, and every path into the
//! crate it names (`crate::…`, `$crate::…`, `super::…`, `use crate::{…}` groups), made absolute.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The module path of a file under `src/`: `timing/cupti/start.rs` → `[timing, cupti, start]`,
/// `timing/mod.rs` → `[timing]`, `lib.rs` → `[]`.
pub fn module_of(rel: &Path) -> Vec<String> {
    let mut m: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if m.last().is_some_and(|l| l == "mod" || l == "lib") {
        m.pop();
    }
    m
}

/// The code of `src` without comments, with string and char literals emptied, and without the test
/// module at its end. `Err` when a test module is not the file's last item (its end would be guessed).
pub fn code_of(src: &str) -> Result<String, String> {
    let lines: Vec<&str> = src.lines().collect();
    let mut end = lines.len();
    for (i, l) in lines.iter().enumerate() {
        let next = lines[i + 1..].iter().find(|n| !n.trim().is_empty());
        let is_mod = next.is_some_and(|n| {
            let n = n
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub(super) ");
            n.starts_with("mod ") && n.trim_end().ends_with('{')
        });
        if l.trim_end() == "#[cfg(test)]" && is_mod {
            let top_level_after: Vec<&&str> = lines[i + 1..]
                .iter()
                .filter(|n| n.chars().next().is_some_and(|c| !c.is_whitespace()))
                .collect();
            // The `mod … {` line itself and its closing `}`.
            if top_level_after.len() != 2 || top_level_after[1].trim_end() != "}" {
                return Err(format!(
                    "line {}: the test module is not the last item",
                    i + 1
                ));
            }
            end = i;
            break;
        }
    }
    let text = lines[..end].join("\n");
    let mut out = String::with_capacity(text.len());
    let b: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && next == Some('\\') {
            // An escaped char literal: '\n', '\'', '\u{…}'.
            i += 2;
            while i < b.len() && b[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c == '\'' && b.get(i + 2) == Some(&'\'') {
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    Ok(out)
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The first segments of the paths a `use` group or path tail names: `{hot::{guard, state}, resolve}`
/// → `[[hot, guard], [hot, state], [resolve]]` (two segments are enough for the rules).
pub fn expand(tail: &str) -> Vec<Vec<String>> {
    let tail = tail.trim_start();
    if let Some(inner) = tail.strip_prefix('{') {
        let mut depth = 0;
        let mut items = Vec::new();
        let mut cur = String::new();
        for c in inner.chars() {
            match c {
                '{' => {
                    depth += 1;
                    cur.push(c);
                }
                '}' if depth == 0 => break,
                '}' => {
                    depth -= 1;
                    cur.push(c);
                }
                ',' if depth == 0 => items.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        items.push(cur);
        return items
            .iter()
            .filter(|s| !s.trim().is_empty())
            .flat_map(|s| expand(s))
            .collect();
    }
    let head: String = tail.chars().take_while(|&c| is_ident(c)).collect();
    if head.is_empty() {
        return vec![];
    }
    let rest = &tail[head.len()..];
    match rest.strip_prefix("::") {
        Some(r) => {
            let subs = expand(r);
            if subs.is_empty() {
                vec![vec![head]]
            } else {
                subs.into_iter()
                    .map(|mut s| {
                        s.insert(0, head.clone());
                        s.truncate(2);
                        s
                    })
                    .collect()
            }
        }
        None => vec![vec![head]],
    }
}

/// Every path into the crate that `code` names, made absolute (`super::` resolved against `module`,
/// whose last segment is the file's own: a `mod.rs` file is its folder's module); `Err` for
/// `super::super`.
pub fn paths_of(code: &str, module: &[String]) -> Vec<Result<Vec<String>, String>> {
    let mut found = Vec::new();
    let text = code;
    for (at, _) in text.match_indices("::") {
        // The word just before `::`.
        let before = &text[..at];
        let word: String = before
            .chars()
            .rev()
            .take_while(|&c| is_ident(c) || c == '$')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let start = at - word.len();
        // Only the start of a path (not `a::b` inside `crate::a::b`).
        if text[..start].ends_with("::") {
            continue;
        }
        let base: Vec<String> = match word.as_str() {
            "crate" | "$crate" => vec![],
            "super" => {
                if text[at + 2..].starts_with("super") {
                    found.push(Err(format!("`super::super` at byte {start}")));
                    continue;
                }
                module[..module.len().saturating_sub(1)].to_vec()
            }
            _ => continue,
        };
        let tails = expand(&text[at + 2..]);
        if tails.is_empty() {
            // `super::*`: the module itself.
            found.push(Ok(base.clone()));
        }
        for tail in tails {
            let mut p = base.clone();
            p.extend(tail);
            found.push(Ok(p));
        }
    }
    found
}

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}
