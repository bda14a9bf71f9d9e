//! The corpus comparison (issue 21, item 5): every command's output on a corpus of captures, compared
//! with what it was when the expected files were last blessed, so that a restructuring of the scanner
//! shows every change of behaviour it makes — and only those it means to make.
//!
//! The corpus (`corpus/`, described in `corpus/README.md`): the shipped demo
//! (`demo/h200-torch-level3.tar.gz`), captures of the C test programs at levels 1 to 4 and both
//! device-timing backends (`corpus/*.tar.gz`), and damaged rings (`corpus/damaged.tar.gz`). Each is
//! unpacked into a scratch directory and every command runs there with relative paths, so outputs do
//! not depend on where the repository is.
//!
//! Per capture: `report`, `report --json`, `report --steps --gaps` and its `--json`, `export` to
//! Chrome JSON, Perfetto and Parquet, and `html`; a few captures get more (`--range`, `--domain`,
//! errors); and `compare` (text and `--json`) on pairs of captures. Each command's transcript — the
//! command line, exit code, stderr, stdout, and the files it wrote — is compared byte for byte with
//! `corpus/expected/<capture>/<command>.txt`. Compared are:
//!
//! * text and JSON outputs, stderr and exit codes: the bytes;
//! * Chrome JSON: the bytes; HTML: the bytes, as the page with its embedded data replaced by `…`
//!   (stored as its SHA-256: the CSS and JavaScript, the same for every capture) and the data;
//! * Perfetto: a canonical decode (`corpus_support::perfetto_canonical`: one line per packet,
//!   interned names resolved, encoding details left out), and the export's stderr without the file's
//!   size;
//! * Parquet: each table's schema and rows (`corpus_support::parquet_canonical`; row groups,
//!   compression and encodings left out), and the export's stderr without the size.
//!
//! Sections over `FULL_LIMIT` bytes (the demo's JSON reports and exports, the larger exports of a few
//! other captures) are stored as their size and SHA-256. To see what changed in one, write every
//! transcript in full at the previous commit and at this one and diff them:
//!
//! ```sh
//! git worktree add /tmp/prev HEAD~1    # or whichever commit the expected files were blessed at
//! (cd /tmp/prev && CAUSEWAY_CORPUS_OUT=/tmp/old cargo test -p causeway-cli --test corpus)
//! CAUSEWAY_CORPUS_OUT=/tmp/new cargo test -p causeway-cli --test corpus
//! diff -r /tmp/old /tmp/new
//! ```
//!
//! Every command also runs a second time, in a second scratch directory, with `RAYON_NUM_THREADS=1`:
//! its transcript must be the same (a nondeterministic output is reported as such, not as a change).
//!
//! **Blessing.** `CAUSEWAY_BLESS=1 cargo test -p causeway-cli --test corpus` rewrites the expected
//! files from the current outputs (and removes those no command makes any more). Bless only where a
//! change of output is intended (issue 21 lists where), review the diff of `corpus/expected/`, and
//! say in the commit message which outputs changed and why.

mod corpus_support;

use corpus_support::{
    first_difference, parquet_canonical, perfetto_canonical, repo_root, Transcript,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Sections larger than this are stored as their size and SHA-256 instead of their bytes.
const FULL_LIMIT: usize = 32 * 1024;

/// What a command writes besides stdout and stderr, and how it is compared.
#[derive(Clone)]
enum Out {
    None,
    /// Chrome JSON: the bytes.
    Chrome(String),
    /// Perfetto protobuf: the canonical decode.
    Perfetto(String),
    /// A directory of Parquet tables: schemas and rows.
    Parquet(String),
    /// The HTML page: the bytes.
    Html(String),
}

#[derive(Clone)]
struct Case {
    /// The expected transcript: `corpus/expected/<file>.txt`.
    file: String,
    args: Vec<String>,
    out: Out,
}

fn case(file: String, args: &[&str], out: Out) -> Case {
    Case {
        file,
        args: args.iter().map(|s| s.to_string()).collect(),
        out,
    }
}

/// The standard commands on one capture (`path`, relative to the scratch directory), stored under
/// `corpus/expected/<key>/`.
fn standard(key: &str, path: &str) -> Vec<Case> {
    let f = |name: &str| format!("{key}/{name}");
    let o = |ext: &str| format!("out/{}.{ext}", key.replace('/', "-"));
    vec![
        case(f("report"), &["report", path], Out::None),
        case(f("report--json"), &["report", "--json", path], Out::None),
        case(
            f("report--steps--gaps"),
            &["report", "--steps", "--gaps", path],
            Out::None,
        ),
        case(
            f("report--steps--gaps--json"),
            &["report", "--steps", "--gaps", "--json", path],
            Out::None,
        ),
        case(
            f("why--step-slowest"),
            &["why", "--step", "slowest", path],
            Out::None,
        ),
        case(
            f("why--step-slowest--json"),
            &["why", "--step", "slowest", "--json", path],
            Out::None,
        ),
        case(
            f("export-chrome"),
            &["export", "--format", "chrome", "-o", &o("json"), path],
            Out::Chrome(o("json")),
        ),
        case(
            f("export-perfetto"),
            &["export", "--format", "perfetto", "-o", &o("pftrace"), path],
            Out::Perfetto(o("pftrace")),
        ),
        case(
            f("export-parquet"),
            &["export", "--format", "parquet", "-o", &o("parquet"), path],
            Out::Parquet(o("parquet")),
        ),
        case(
            f("html"),
            &["html", "-o", &o("html"), path],
            Out::Html(o("html")),
        ),
    ]
}

/// The captures, as (key, path relative to the scratch directory), after unpacking into `dir`.
fn captures(root: &Path, dir: &Path) -> Vec<(String, String)> {
    let untar = |tgz: &Path, into: &Path| {
        std::fs::create_dir_all(into).unwrap();
        let ok = Command::new("tar")
            .arg("xzf")
            .arg(tgz)
            .arg("-C")
            .arg(into)
            .status()
            .expect("run tar");
        assert!(ok.success(), "tar xzf {} failed", tgz.display());
    };
    let mut out = Vec::new();
    untar(
        &root.join("demo/h200-torch-level3.tar.gz"),
        &dir.join("demo"),
    );
    let demo = sorted_names(&dir.join("demo"));
    assert_eq!(demo.len(), 1, "the demo holds one capture directory");
    out.push(("demo".to_string(), format!("demo/{}", demo[0])));
    for name in sorted_names(&root.join("corpus")) {
        let Some(stem) = name.strip_suffix(".tar.gz") else {
            continue;
        };
        untar(&root.join("corpus").join(&name), dir);
        if stem == "damaged" {
            for d in sorted_names(&dir.join("damaged")) {
                let key = d.strip_suffix(".cwring").unwrap_or(&d);
                out.push((format!("damaged/{key}"), format!("damaged/{d}")));
            }
        } else {
            assert!(dir.join(stem).is_dir(), "{name} holds no directory {stem}/");
            out.push((stem.to_string(), stem.to_string()));
        }
    }
    out
}

fn sorted_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every command, in groups: a group's commands run in order (a later one may need an earlier one's
/// file); groups run in parallel.
fn groups(caps: &[(String, String)]) -> Vec<Vec<Case>> {
    let path = |key: &str| {
        caps.iter()
            .find(|c| c.0 == key)
            .unwrap_or_else(|| panic!("no capture {key} in the corpus"))
            .1
            .clone()
    };
    let mut groups: Vec<Vec<Case>> = Vec::new();
    for (key, p) in caps {
        let mut g = standard(key, p);
        let f = |name: &str| format!("{key}/{name}");
        match key.as_str() {
            "steps-l2" => {
                g.extend([
                    case(f("report--steps"), &["report", "--steps", p], Out::None),
                    case(f("report--gaps"), &["report", "--gaps", p], Out::None),
                    case(
                        f("report--steps--range-compute--json"),
                        &["report", "--steps", "--range", "compute", "--json", p],
                        Out::None,
                    ),
                    case(
                        f("report--steps--range-nosuch"),
                        &["report", "--steps", "--range", "nosuch", p],
                        Out::None,
                    ),
                    case(
                        f("html--range-nosuch"),
                        &["html", "--range", "nosuch", "-o", "out/nosuch.html", p],
                        Out::Html("out/nosuch.html".into()),
                    ),
                    // The standard Chrome export wrote this file: without --force it stays.
                    case(
                        f("export-chrome-exists"),
                        &["export", "--format", "chrome", "-o", "out/steps-l2.json", p],
                        Out::None,
                    ),
                ]);
            }
            "steps-l4" => g.push(case(
                f("report--steps--range-h2d"),
                &["report", "--steps", "--range", "h2d", p],
                Out::None,
            )),
            "multi-l3" => g.extend([
                case(
                    f("report--steps--domain-cw_domain--json"),
                    &["report", "--steps", "--domain", "cw_domain", "--json", p],
                    Out::None,
                ),
                case(
                    f("html--range-step"),
                    &["html", "--range", "step", "-o", "out/multi-step.html", p],
                    Out::Html("out/multi-step.html".into()),
                ),
            ]),
            _ => {}
        }
        groups.push(g);
    }
    // compare: pairs of captures, text and JSON.
    let demo = path("demo");
    let pairs: [(&str, &[&str], String, String); 9] = [
        ("demo--demo", &[], demo.clone(), demo.clone()),
        (
            "demo--steps-l3-cupti",
            &[],
            demo.clone(),
            path("steps-l3-cupti"),
        ),
        (
            "steps-l2--steps-l3-cupti",
            &[],
            path("steps-l2"),
            path("steps-l3-cupti"),
        ),
        (
            "steps-l3-cupti--steps-l3-events",
            &[],
            path("steps-l3-cupti"),
            path("steps-l3-events"),
        ),
        (
            "steps-l1--steps-l4",
            &[],
            path("steps-l1"),
            path("steps-l4"),
        ),
        (
            "range-h2d--steps-l3-cupti--steps-l4",
            &["--range", "h2d"],
            path("steps-l3-cupti"),
            path("steps-l4"),
        ),
        (
            "range-nosuch--steps-l2--steps-l4",
            &["--range", "nosuch"],
            path("steps-l2"),
            path("steps-l4"),
        ),
        (
            "steps-l3-cupti--damaged-torn",
            &[],
            path("steps-l3-cupti"),
            path("damaged/torn"),
        ),
        (
            "steps-l2--damaged-truncated",
            &[],
            path("steps-l2"),
            path("damaged/truncated"),
        ),
    ];
    let mut g = Vec::new();
    for (name, opts, a, b) in pairs {
        for json in [false, true] {
            let mut args = vec!["compare"];
            if json {
                args.push("--json");
            }
            args.extend_from_slice(opts);
            args.extend([a.as_str(), b.as_str()]);
            let file = format!("compare/{name}{}", if json { "--json" } else { "" });
            g.push(case(file, &args, Out::None));
        }
    }
    groups.push(g);
    groups
}

/// What one command did, in full.
struct Raw {
    command: String,
    exit: Option<i32>,
    /// Title, bytes, and why they are always stored as a digest (None: in full up to the limit).
    sections: Vec<(String, Vec<u8>, Option<&'static str>)>,
    notes: Vec<String>,
}

impl Raw {
    fn transcript(&self, limit: usize) -> Transcript {
        let mut t = Transcript::new(&self.command, self.exit);
        for (title, bytes, digest) in &self.sections {
            match digest {
                Some(why) if limit != usize::MAX => t.digest(title, bytes, why),
                _ => t.section(title, bytes, limit),
            }
        }
        for n in &self.notes {
            t.note(n);
        }
        t
    }
}

/// `wrote PATH (N bytes)` with N left out: the size of a Perfetto or Parquet export is its encoding's.
fn without_size(stderr: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(stderr);
    let mut out = String::new();
    for line in s.split_inclusive('\n') {
        if let Some(i) = line.find(" bytes)") {
            let start = line[..i].rfind(" (").map(|j| j + 2).unwrap_or(i);
            if line.starts_with("causeway: wrote ")
                && start < i
                && line[start..i].bytes().all(|b| b.is_ascii_digit())
            {
                out.push_str(&line[..start]);
                out.push_str("SIZE");
                out.push_str(&line[i..]);
                continue;
            }
        }
        out.push_str(line);
    }
    out.into_bytes()
}

fn run(cwd: &Path, c: &Case, single_thread: bool) -> Raw {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_causeway"));
    cmd.args(&c.args).current_dir(cwd);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("CAUSEWAY_") {
            cmd.env_remove(k);
        }
    }
    cmd.env_remove("RAYON_NUM_THREADS");
    if single_thread {
        cmd.env("RAYON_NUM_THREADS", "1");
    }
    let o = cmd.output().expect("run causeway");
    let mut raw = Raw {
        command: format!("causeway {}", c.args.join(" ")),
        exit: o.status.code(),
        sections: Vec::new(),
        notes: Vec::new(),
    };
    let (stderr_title, stderr) = match c.out {
        Out::Perfetto(_) | Out::Parquet(_) => {
            ("stderr (the file's size left out)", without_size(&o.stderr))
        }
        _ => ("stderr", o.stderr.clone()),
    };
    raw.sections.push((stderr_title.into(), stderr, None));
    raw.sections.push(("stdout".into(), o.stdout, None));
    let file = match &c.out {
        Out::None => return raw,
        Out::Chrome(f) | Out::Perfetto(f) | Out::Parquet(f) | Out::Html(f) => f.clone(),
    };
    let path = cwd.join(&file);
    if !path.exists() {
        raw.notes.push(format!("{file}: not written"));
        return raw;
    }
    let bytes = || std::fs::read(&path).unwrap();
    let decoded = match &c.out {
        Out::Chrome(_) => Ok(("Chrome JSON, the bytes", bytes())),
        Out::Html(_) => {
            let page = bytes();
            match html_data(&page) {
                Some((template, data)) => {
                    // The page is the template with the data in place of `…`: both equal, the page is.
                    raw.sections.push((
                        format!("{file}: the page with its data left out (…)"),
                        template,
                        Some("the page's CSS and JavaScript, the same for every capture"),
                    ));
                    Ok(("the page's data (causeway-data)", data))
                }
                None => Ok(("HTML, the bytes (no causeway-data script found)", page)),
            }
        }
        Out::Perfetto(_) => perfetto_canonical(&bytes()).map(|s| {
            (
                "Perfetto, decoded: one line per packet, names resolved",
                s.into_bytes(),
            )
        }),
        Out::Parquet(_) => parquet_canonical(&path)
            .map(|s| ("Parquet tables, decoded: schema and rows", s.into_bytes())),
        Out::None => unreachable!(),
    };
    match decoded {
        Ok((what, bytes)) => raw.sections.push((format!("{file}: {what}"), bytes, None)),
        Err(e) => raw.notes.push(format!("{file}: cannot be decoded: {e}")),
    }
    raw
}

/// An HTML page split into its template (the data replaced by `…`) and the JSON data it embeds in
/// `<script type="application/json" id="causeway-data">`.
fn html_data(page: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let find = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).position(|w| w == needle);
    let open = br#"<script type="application/json" id="causeway-data">"#;
    let start = find(page, open)? + open.len();
    let end = start + find(&page[start..], b"</script>")?;
    let mut template = page[..start].to_vec();
    template.extend_from_slice("…".as_bytes());
    template.extend_from_slice(&page[end..]);
    Some((template, page[start..end].to_vec()))
}

/// Runs every group in `dir` on all cores; results by case, in the order of `groups` flattened.
fn run_all(dir: &Path, groups: &[Vec<Case>], single_thread: bool) -> Vec<Raw> {
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Vec<Raw>)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(g) = groups.get(i) else { break };
                let raws = g.iter().map(|c| run(dir, c, single_thread)).collect();
                results.lock().unwrap().push((i, raws));
            });
        }
    });
    let mut r = results.into_inner().unwrap();
    r.sort_by_key(|x| x.0);
    r.into_iter().flat_map(|x| x.1).collect()
}

/// Every `*.txt` under `dir`, as paths relative to it without the extension.
fn expected_files(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if e.path().is_dir() {
            expected_files(&e.path(), &rel, out);
        } else if let Some(stem) = rel.strip_suffix(".txt") {
            out.push(stem.to_string());
        }
    }
}

#[test]
fn every_command_on_the_corpus_is_unchanged() {
    let t0 = std::time::Instant::now();
    let root = repo_root();
    let expected_dir = root.join("corpus/expected");
    let work = std::env::temp_dir().join(format!("causeway-corpus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let (one, two) = (work.join("run1"), work.join("run2"));
    let caps = captures(&root, &one);
    assert_eq!(captures(&root, &two), caps);
    let groups = groups(&caps);
    let cases: Vec<&Case> = groups.iter().flatten().collect();
    let first = run_all(&one, &groups, false);
    let second = run_all(&two, &groups, true);

    // Nondeterminism first: an output that differs between two runs cannot be compared.
    let mut unstable = Vec::new();
    for ((c, a), b) in cases.iter().zip(&first).zip(&second) {
        let (a, b) = (a.transcript(usize::MAX).text, b.transcript(usize::MAX).text);
        if a != b {
            unstable.push(format!(
                "{}: `{}`\n{}",
                c.file,
                c.args.join(" "),
                first_difference(&a, &b)
                    .replace("expected", "run 1   ")
                    .replace("actual  ", "run 2   ")
            ));
        }
    }
    assert!(
        unstable.is_empty(),
        "{} command(s) gave different outputs on two runs of the same capture (the second with \
         RAYON_NUM_THREADS=1); scratch directory kept: {}\n\n{}",
        unstable.len(),
        work.display(),
        unstable.join("\n")
    );

    if let Some(dir) = std::env::var_os("CAUSEWAY_CORPUS_OUT") {
        let dir = PathBuf::from(dir);
        for (c, r) in cases.iter().zip(&first) {
            let p = dir.join(format!("{}.txt", c.file));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, r.transcript(usize::MAX).text).unwrap();
        }
        eprintln!("corpus: full transcripts written to {}", dir.display());
    }

    let mut have = Vec::new();
    expected_files(&expected_dir, "", &mut have);
    let bless = std::env::var_os("CAUSEWAY_BLESS").is_some_and(|v| v == "1");
    if bless {
        for (c, r) in cases.iter().zip(&first) {
            let p = expected_dir.join(format!("{}.txt", c.file));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, r.transcript(FULL_LIMIT).text).unwrap();
        }
        for stale in have.iter().filter(|h| !cases.iter().any(|c| &c.file == *h)) {
            std::fs::remove_file(expected_dir.join(format!("{stale}.txt"))).unwrap();
            eprintln!("corpus: removed corpus/expected/{stale}.txt (no command makes it)");
        }
        eprintln!(
            "corpus: blessed {} transcripts in corpus/expected/ — review `git diff corpus/expected` and \
             say in the commit which outputs changed and why",
            cases.len()
        );
        let _ = std::fs::remove_dir_all(&work);
        return;
    }

    let mut failures = Vec::new();
    let mut digest_changed = false;
    let actual_dir = work.join("actual");
    for (c, r) in cases.iter().zip(&first) {
        let t = r.transcript(FULL_LIMIT);
        let p = expected_dir.join(format!("{}.txt", c.file));
        let want = match std::fs::read(&p) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(_) => {
                failures.push(format!(
                    "{}: no expected file corpus/expected/{}.txt (a new command or capture: bless it)",
                    c.file, c.file
                ));
                continue;
            }
        };
        if want != t.text {
            let a = actual_dir.join(format!("{}.txt", c.file));
            std::fs::create_dir_all(a.parent().unwrap()).unwrap();
            std::fs::write(&a, &t.text).unwrap();
            let diff = first_difference(&want, &t.text);
            digest_changed |= diff.contains(", sha256 ");
            failures.push(format!(
                "{}: `causeway {}` changed\n{diff}  (diff -u {} {})",
                c.file,
                c.args.join(" "),
                p.display(),
                a.display()
            ));
        }
    }
    for stale in have.iter().filter(|h| !cases.iter().any(|c| &c.file == *h)) {
        failures.push(format!(
            "corpus/expected/{stale}.txt: no command makes it any more (bless to remove it)"
        ));
    }
    let took = t0.elapsed();
    if failures.is_empty() {
        eprintln!(
            "corpus: {} commands on {} captures unchanged, twice each, in {:.1} s",
            cases.len(),
            caps.len(),
            took.as_secs_f64()
        );
        let _ = std::fs::remove_dir_all(&work);
        return;
    }
    let mut msg = format!(
        "{} of {} corpus transcripts differ from corpus/expected/ (scratch directory kept: {}).\n\
         If the change is intended (issue 21 says where), bless: CAUSEWAY_BLESS=1 cargo test -p \
         causeway-cli --test corpus, and say in the commit which outputs changed and why.\n",
        failures.len(),
        cases.len(),
        work.display()
    );
    if digest_changed {
        msg.push_str(
            "Some differ in an output stored as a digest (size, sha256). To see how: write every \
             transcript in full here and at the commit the expected files were blessed at, and diff:\n  \
             git worktree add /tmp/prev HEAD~1\n  \
             (cd /tmp/prev && CAUSEWAY_CORPUS_OUT=/tmp/old cargo test -p causeway-cli --test corpus)\n  \
             CAUSEWAY_CORPUS_OUT=/tmp/new cargo test -p causeway-cli --test corpus\n  \
             diff -r /tmp/old /tmp/new\n",
        );
    }
    msg.push('\n');
    for f in failures.iter().take(30) {
        msg.push_str(f);
        msg.push('\n');
    }
    if failures.len() > 30 {
        msg.push_str(&format!("… and {} more\n", failures.len() - 30));
    }
    panic!("{msg}");
}
