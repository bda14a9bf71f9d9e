//! Interception coverage: every entry point the real runtime exports (NVIDIA's `libcudart.so.13` from
//! the PyPI wheel, no driver) and every driver entry point the shim hooks (against a stub driver built
//! here) is called once, with zero arguments, bare and under the shim; the program must behave the
//! same, and the capture must hold each call by name with the result it returned. What the shim does
//! not hook must be exactly what `docs/interception.md` (written by `shim/gen/hookgen.py`) says.

use causeway_itests::*;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// The defined function symbols of `lib` whose names start with one of `prefixes`, sorted.
fn exports(lib: &Path, prefixes: &[&str]) -> Vec<String> {
    let o = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib)
        .output()
        .expect("nm (binutils) is needed");
    assert!(
        o.status.success(),
        "nm -D {}: {}",
        lib.display(),
        stderr(&o)
    );
    let mut names: Vec<String> = stdout(&o)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && "TtWi".contains(f[1]))
                .then(|| f[2].split('@').next().unwrap().to_string())
        })
        .filter(|n| prefixes.iter().any(|p| n.starts_with(p)))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// docs/interception.md: (hooked name → C return type, names listed as not hooked).
fn documented() -> (HashMap<String, String>, Vec<String>) {
    let doc =
        std::fs::read_to_string(repo().join("docs/interception.md")).expect("docs/interception.md");
    let mut hooked = HashMap::new();
    let mut not_hooked = Vec::new();
    for l in doc.lines() {
        if let Some(rest) = l.strip_prefix("- `") {
            let (name, note) = rest.split_once('`').unwrap();
            if note.contains("not hooked") {
                not_hooked.push(name.to_string());
            }
        } else if let Some(rest) = l.strip_prefix("| `") {
            let cells: Vec<&str> = rest.split('|').map(str::trim).collect();
            let name = cells[0].trim_end_matches('`');
            hooked.insert(name.to_string(), cells[5].trim_matches('`').to_string());
        }
    }
    (hooked, not_hooked)
}

/// The program's lines, with what a `void` function "returned" (whatever its return register held)
/// masked: that is no value of the function's.
fn lines_of(out: &str, ret_of: &HashMap<String, String>) -> Vec<String> {
    out.lines()
        .map(|l| match l.split_once('=') {
            Some((name, _)) if ret_of.get(name).is_some_and(|r| r == "void") => {
                format!("{name}=void")
            }
            _ => l.to_string(),
        })
        .collect()
}

/// Calls every name through `every_export`, bare and traced; checks both runs print the same and
/// returns (the program's lines, the report).
fn call_each(
    lib: &Path,
    names: &[String],
    ld_path: Option<&Path>,
    ret_of: &HashMap<String, String>,
) -> (Vec<String>, serde_json::Value) {
    let dir = scratch("names");
    let file = dir.join("names.txt");
    std::fs::write(&file, names.join("\n")).unwrap();
    let cmd = || {
        let mut c = command(
            "every_export",
            &[lib.to_str().unwrap(), file.to_str().unwrap()],
        );
        match ld_path {
            Some(p) => c.env("LD_LIBRARY_PATH", p),
            None => c.env_remove("LD_LIBRARY_PATH"),
        };
        c
    };
    let b = bare(cmd());
    // One ring per child process: the smallest rings, so hundreds of them stay small on disk.
    let (t, cap) = traced(cmd(), 4, &[("CAUSEWAY_RING_MB", "1")]);
    assert!(
        b.status.success(),
        "every_export failed bare: {}",
        stderr(&b)
    );
    let lines = lines_of(&stdout(&b), ret_of);
    assert_eq!(
        lines,
        lines_of(&stdout(&t), ret_of),
        "the program behaved differently under the shim"
    );
    assert!(
        !stderr(&t).contains("causeway:"),
        "shim complained: {}",
        stderr(&t)
    );
    assert_eq!(lines.len(), names.len(), "one line per name");
    (lines, report(&cap))
}

/// Checks the report against what each call printed: a call per hooked name with its result, none
/// for the names documented as not hooked. Returns how many calls were checked.
fn check(
    lines: &[String],
    r: &serde_json::Value,
    ret_of: &HashMap<String, String>,
    not_hooked: &[String],
) -> usize {
    let mut checked = 0;
    for line in lines {
        if line.contains(" crashed=") || line.ends_with(" missing") {
            // The function itself dereferenced a NULL argument (bare too: the outputs are equal).
            continue;
        }
        let (name, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("odd line {line:?}"));
        if not_hooked.iter().any(|n| n == name) {
            assert_eq!(
                calls(r, name),
                0,
                "{name} is documented as not hooked but was recorded"
            );
            continue;
        }
        let ret = ret_of.get(name).unwrap_or_else(|| {
            panic!("{name} is exported but neither hooked nor listed as not hooked")
        });
        assert_eq!(calls(r, name), 1, "{name}: expected one recorded call");
        let error_code = matches!(ret.as_str(), "cudaError_t" | "CUresult");
        if error_code {
            let code: i64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
            let row = r["apis"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["name"] == name)
                .unwrap();
            if code == 0 {
                assert_eq!(row["errors"], 0, "{row}");
            } else {
                assert_eq!(
                    row["error_codes"][code.to_string()],
                    1,
                    "{name} returned {code}: {row}"
                );
            }
        }
        checked += 1;
    }
    checked
}

#[test]
fn every_export_of_the_real_runtime_is_recorded_with_its_result() {
    let lib = std::env::var("CAUSEWAY_REAL_CUDART")
        .unwrap_or_else(|_| "/tmp/wheels/x/nvidia/cu13/lib/libcudart.so.13".into());
    let lib = Path::new(&lib);
    assert!(
        lib.exists(),
        "real cudart not found at {}: set CAUSEWAY_REAL_CUDART",
        lib.display()
    );
    let names = exports(lib, &["cuda", "__cuda"]);
    assert!(names.len() > 400, "{} exports", names.len());
    let (ret_of, not_hooked) = documented();
    let (lines, r) = call_each(lib, &names, None, &ret_of);
    let checked = check(&lines, &r, &ret_of, &not_hooked);
    let crashed = lines.iter().filter(|l| l.contains(" crashed=")).count();
    let skipped = names.iter().filter(|n| not_hooked.contains(n)).count();
    assert_eq!(checked + crashed + skipped, names.len());
    // A call that dereferences its NULL argument is rare (a struct returned through a hidden pointer).
    assert!(crashed <= 2, "{crashed} calls crashed: {lines:?}");
}

/// A stub `libcuda.so.1` defining every name in `names` as a function that returns
/// `CUDA_ERROR_NOT_SUPPORTED` (801) and ignores its arguments.
fn stub_driver(names: &[String]) -> std::path::PathBuf {
    let dir = scratch("stubdriver");
    let src = dir.join("stub.c");
    let mut c =
        String::from("/* every hooked driver entry point: returns CUDA_ERROR_NOT_SUPPORTED */\n");
    for n in names {
        c.push_str(&format!("int {n}(void) {{ return 801; }}\n"));
    }
    std::fs::write(&src, c).unwrap();
    let so = dir.join("libcuda.so.1");
    let o = Command::new("cc")
        .args([
            "-shared",
            "-fPIC",
            "-O0",
            "-w",
            "-Wl,-soname,libcuda.so.1",
            "-o",
        ])
        .arg(&so)
        .arg(&src)
        .output()
        .expect("cc");
    assert!(
        o.status.success(),
        "building the stub driver: {}",
        stderr(&o)
    );
    dir
}

#[test]
fn every_driver_hook_records_its_call_and_passes_the_result_through() {
    // The shim's own driver hooks: the names hookgen.py wrote from cuda.h.
    let (ret_of, _) = documented();
    let names: Vec<String> = exports(&shim(), &["cu"])
        .into_iter()
        .filter(|n| !n.starts_with("cuda") && !n.starts_with("cuGetProcAddress"))
        .collect();
    assert!(names.len() > 600, "{} driver hooks exported", names.len());
    for n in &names {
        assert_eq!(
            ret_of.get(n).map(String::as_str),
            Some("CUresult"),
            "{n} not in docs/interception.md"
        );
    }
    // A newer driver's entry point the tables do not have: reached through dlsym, untraced, and
    // listed as such.
    const NEWER: &str = "cuFutureEntryPoint_v2";
    let mut stubbed = names.clone();
    stubbed.push(NEWER.into());
    let dir = stub_driver(&stubbed);
    let lib = dir.join("libcuda.so.1");
    let (lines, r) = call_each(&lib, &stubbed, Some(&dir), &ret_of);
    assert!(
        lines.iter().all(|l| l.ends_with("=801")),
        "a call did not reach the stub: {lines:?}"
    );
    let (lines, newer) = lines.split_at(names.len());
    assert_eq!(newer, [format!("{NEWER}=801")]);
    assert_eq!(check(lines, &r, &ret_of, &[]), names.len());
    assert_eq!(calls(&r, NEWER), 0);
    let listed: Vec<&str> = r["unmatched_lookups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [NEWER],
        "the untraced entry point is listed, and only it"
    );
    let per_process = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["untraced"].as_array().is_some_and(|u| !u.is_empty()))
        .count();
    assert_eq!(per_process, 1, "listed for the one process that reached it");
}
