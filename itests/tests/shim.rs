//! The shim end to end: the C test programs run bare and under `libcauseway.so` against the honest
//! doubles (`ci/doubles`), and the capture is read back through `causeway report --json`.

use causeway_itests::*;
use std::process::Command;

/// Counters of the calls the shim itself makes (kernel names once per handle; graph contents once per
/// instantiation), which the doubles honestly count.
const SHIM_QUERIES: [&str; 7] = [
    "FuncGetName",
    "KernelGetName",
    "cuGraphGetNodes",
    "cuGraphNodeGetType",
    "cuGraphKernelNodeGetParams",
    "cuGraphChildGraphNodeGetGraph",
    "cuGraphGetEdges",
];

/// The programs' stdout without the counters of the shim's own queries. Process ids differ from run to
/// run and are masked.
fn without_shim_queries(out: &str) -> String {
    out.lines()
        .filter(|l| !SHIM_QUERIES.iter().any(|q| l.contains(q)))
        .map(|l| match l.find("pid=") {
            Some(i) => {
                let rest = l[i + 4..].trim_start_matches(|c: char| c.is_ascii_digit());
                format!("{}pid=N{rest}", &l[..i])
            }
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn value(out: &str, key: &str) -> u64 {
    let prefix = format!("{key}=");
    out.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no `{key}=` line in:\n{out}"))
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The process in a report whose executable ends with `exe`.
fn proc_of<'a>(r: &'a serde_json::Value, exe: &str) -> &'a serde_json::Value {
    r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["exe"].as_str().unwrap_or("").ends_with(exe))
        .unwrap_or_else(|| panic!("no process {exe} in {r}"))
}

/// Runs a program bare and traced, checks output and exit code are identical, returns (stdout, report).
fn same_bare_and_traced(name: &str, args: &[&str], level: u8) -> (String, serde_json::Value) {
    let b = bare(command(name, args));
    let (t, cap) = traced(command(name, args), level, &[]);
    assert!(b.status.success(), "{name} failed bare: {}", stderr(&b));
    assert_eq!(
        b.status.code(),
        t.status.code(),
        "exit code changed under the shim: {}",
        stderr(&t)
    );
    assert_eq!(
        without_shim_queries(&stdout(&b)),
        without_shim_queries(&stdout(&t)),
        "{name}: output changed under the shim"
    );
    assert!(
        !stderr(&t).contains("causeway:"),
        "shim complained: {}",
        stderr(&t)
    );
    (stdout(&t), report(&cap))
}

#[test]
fn counts_are_exact_under_many_threads() {
    let (out, r) = same_bare_and_traced("mt_launch", &["16", "300"], 2);
    let n = value(&out, "total_launches");
    assert_eq!(n, 16 * 300);
    assert_eq!(calls(&r, "cudaLaunchKernel"), n);
    // The runtime double launches through the driver pointer it got from cuGetProcAddress.
    assert_eq!(calls(&r, "cuLaunchKernel"), n);
    assert_eq!(
        calls(&r, "cudaMemcpyAsync"),
        value(&out, "total_memcpy_async")
    );
    assert_eq!(
        calls(&r, "cudaEventRecord"),
        value(&out, "total_event_records")
    );
    // A runtime launch and the driver launch inside it are one launch.
    let total: u64 = r["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["launches"].as_u64().unwrap())
        .sum();
    assert_eq!(total, n);
    let p = proc_of(&r, "mt_launch");
    assert_eq!(
        (
            p["dropped"].as_u64(),
            p["torn"].as_u64(),
            p["open"].as_u64()
        ),
        (Some(0), Some(0), Some(0))
    );
    assert_eq!(errors(&r, "cudaLaunchKernel"), 0);
}

#[test]
fn rtld_local_cudart_is_found() {
    // A library that links cudart, dlopened RTLD_LOCAL like a Python extension module.
    let (out, r) = same_bare_and_traced("rtld_local", &[], 2);
    let n = value(&out, "app_run");
    assert_eq!(calls(&r, "cudaLaunchKernel"), n);
    assert_eq!(launches(&r, "sleep_1us"), n);
    let p = proc_of(&r, "rtld_local");
    assert_eq!(p["counters"]["real_missing"].as_u64(), Some(0), "{p}");
}

#[test]
fn driver_entry_points_found_with_dlsym_are_traced() {
    let (out, r) = same_bare_and_traced("dlsym_driver", &["9"], 2);
    assert_eq!(value(&out, "launches"), 9);
    assert_eq!(calls(&r, "cuLaunchKernel"), 9);
    assert_eq!(calls(&r, "cuMemcpyHtoD_v2"), 1);
    assert_eq!(launches(&r, "sleep_1us"), 9);
}

#[test]
fn cu_get_proc_address_hands_out_the_right_variant() {
    let (out, r) = same_bare_and_traced("procaddr", &["11"], 4);
    // The double counts which exported variant ran: the per-thread one, as the program asked.
    assert_eq!(counter(&out, "cuLaunchKernel_ptsz"), 11);
    assert_eq!(counter(&out, "cuLaunchKernel"), 0);
    assert_eq!(calls(&r, "cuLaunchKernel_ptsz"), 11);
    assert_eq!(calls(&r, "cuLaunchKernel"), 0);
    assert_eq!(
        calls(&r, "cuMemcpyHtoD_v2_ptds"),
        counter(&out, "cuMemcpyHtoD_v2_ptds")
    );
    // The self-request: the program's lookups went through our cuGetProcAddress hooks.
    assert!(calls(&r, "cuGetProcAddress_v2") >= 4, "{r}");
    // The unknown symbol failed the same way with and without the shim (checked by the output
    // comparison) and is recorded as an error.
    assert!(errors(&r, "cuGetProcAddress_v2") >= 1);
    let p = proc_of(&r, "procaddr");
    assert_eq!(p["counters"]["proc_unmatched"].as_u64(), Some(0), "{p}");
}

#[test]
fn dlsym_rtld_next_stays_relative_to_the_caller() {
    let (out, _) = same_bare_and_traced("rtld_next", &[], 2);
    assert!(out.contains("next_probe=2"), "{out}");
}

#[test]
fn runtime_calls_nest_their_driver_calls() {
    let (_, cap) = traced(command("mt_launch", &["1", "10"]), 2, &[]);
    let r = report(&cap);
    // Two layers of launch calls, one launch each.
    assert_eq!(calls(&r, "cudaLaunchKernel"), 10);
    assert_eq!(calls(&r, "cuLaunchKernel"), 10);
    assert_eq!(launches(&r, "sleep_0us"), 10);
}

#[test]
fn levels_choose_what_is_recorded() {
    let (_, c1) = traced(command("procaddr", &["3"]), 1, &[]);
    let (_, c2) = traced(command("procaddr", &["3"]), 2, &[]);
    let (_, c4) = traced(command("procaddr", &["3"]), 4, &[]);
    let (r1, r2, r4) = (report(&c1), report(&c2), report(&c4));
    assert_eq!(
        calls(&r1, "cuLaunchKernel_ptsz"),
        0,
        "level 1 records no calls"
    );
    assert_eq!(calls(&r2, "cuLaunchKernel_ptsz"), 3);
    assert_eq!(calls(&r2, "cuGetProcAddress_v2"), 0, "lookups are level 4");
    assert_eq!(calls(&r2, "cuModuleLoadData"), 0);
    assert_eq!(calls(&r4, "cuLaunchKernel_ptsz"), 3);
    assert!(calls(&r4, "cuGetProcAddress_v2") > 0);
    assert_eq!(calls(&r4, "cuModuleLoadData"), 1);
}

#[test]
fn real_cudart_without_a_driver_records_its_real_errors() {
    let lib = std::env::var("CAUSEWAY_REAL_CUDART")
        .unwrap_or_else(|_| "/tmp/wheels/x/nvidia/cu13/lib/libcudart.so.13".into());
    assert!(
        std::path::Path::new(&lib).exists(),
        "real cudart not found at {lib}: set CAUSEWAY_REAL_CUDART (ci/test.sh installs it)"
    );
    // No LD_LIBRARY_PATH: the doubles must not stand in for the missing driver.
    let cmd = || {
        let mut c = command("real_cudart", &[&lib]);
        c.env_remove("LD_LIBRARY_PATH");
        c
    };
    let b = bare(cmd());
    let (t, cap) = traced(cmd(), 4, &[]);
    assert_eq!(stdout(&b), stdout(&t), "output changed under the shim");
    assert_eq!(b.status.code(), t.status.code());
    let r = report(&cap);
    for line in stdout(&b).lines() {
        let Some((name, code)) = line.split_once('=') else {
            continue;
        };
        let Ok(code) = code.parse::<i64>() else {
            continue;
        };
        let row = r["apis"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name);
        let Some(row) = row else { continue }; // not every call in the program is a traced API
        assert_eq!(row["calls"], 1, "{row}");
        if code == 0 {
            assert_eq!(row["errors"], 0, "{row}");
        } else {
            assert_eq!(
                row["error_codes"][code.to_string()],
                1,
                "{name} returned {code} but the capture says {row}"
            );
        }
    }
    // The calls the program makes that the tables cover must all be there.
    for name in [
        "cudaMalloc",
        "cudaMemcpy",
        "cudaStreamCreate",
        "cudaStreamSynchronize",
        "cudaEventCreate",
        "cudaDeviceSynchronize",
    ] {
        assert_eq!(calls(&r, name), 1, "{name} missing from {r}");
    }
}

#[test]
fn fork_gives_the_child_its_own_ring() {
    let (out, r) = same_bare_and_traced("forker", &["5"], 2);
    let procs: Vec<_> = r["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["exe"].as_str().unwrap().ends_with("forker"))
        .collect();
    assert_eq!(procs.len(), 2, "{r}");
    let child = procs
        .iter()
        .find(|p| p["forked"] == true)
        .expect("a forked ring");
    let parent = procs
        .iter()
        .find(|p| p["forked"] == false)
        .expect("the parent's ring");
    assert_eq!(child["ppid"], parent["pid"]);
    assert_eq!(calls(&r, "cudaLaunchKernel"), 15, "{out}");
}

#[test]
fn a_hung_sync_is_visible_as_an_open_call() {
    let mut c = command("hang", &[]);
    let cap = scratch("hang");
    c.env("LD_PRELOAD", shim())
        .env("CAUSEWAY_OUT", &cap)
        .env("CAUSEWAY_LEVEL", "2")
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buf = [0u8; 64];
    let mut seen = String::new();
    while !seen.contains("syncing") {
        let n = std::io::Read::read(&mut out, &mut buf).unwrap();
        assert!(n > 0, "hang exited early: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let r = report(&cap);
    let sync = r["apis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "cudaStreamSynchronize")
        .expect("the sync is in the capture");
    assert_eq!(sync["open"], 1, "{sync}");
    assert_eq!(
        process_sum(&r, "open"),
        2,
        "the runtime sync and the driver sync inside it: {r}"
    );
}

#[test]
fn sigkill_loses_nothing_committed() {
    let cap = scratch("kill");
    let mut c = command("spin", &["0"]);
    c.env("LD_PRELOAD", shim())
        .env("CAUSEWAY_OUT", &cap)
        .env("CAUSEWAY_LEVEL", "2")
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 256];
    // `spin` prints "progress N" after synchronising every 10 000 launches.
    while seen.matches("progress ").count() < 3 {
        let n = std::io::Read::read(&mut out, &mut buf).unwrap();
        assert!(n > 0);
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let reported: u64 = seen
        .lines()
        .filter_map(|l| l.strip_prefix("progress "))
        .filter_map(|v| v.trim().parse().ok())
        .max()
        .unwrap();
    assert!(reported >= 30_000);
    let r = report(&cap);
    let p = proc_of(&r, "spin");
    // Every launch the program reported before it was killed was committed and is read back.
    assert!(
        calls(&r, "cudaLaunchKernel") >= reported,
        "{} < {reported}",
        calls(&r, "cudaLaunchKernel")
    );
    assert!(p["torn"].as_u64().unwrap() <= 1, "{p}");
    assert_eq!(p["closed"], false);
}

#[test]
fn full_ring_drops_newest_with_an_exact_count() {
    let (o, cap) = traced(
        command("mt_launch", &["4", "5000"]),
        2,
        &[("CAUSEWAY_RING_MB", "1")],
    );
    assert!(o.status.success());
    let r = report(&cap);
    let p = proc_of(&r, "mt_launch");
    let capacity = p["capacity"].as_u64().unwrap();
    assert_eq!(capacity, 16384);
    assert_eq!(p["entries"].as_u64().unwrap(), capacity, "{p}");
    // Every reservation past capacity was dropped, and counted.
    let written = calls(&r, "cudaLaunchKernel") + calls(&r, "cuLaunchKernel");
    assert!(written < 2 * 20000);
    assert!(p["dropped"].as_u64().unwrap() > 0);
    assert_eq!(p["torn"], 0);
}

#[test]
fn overwrite_policy_keeps_the_newest() {
    let (o, cap) = traced(
        command("mt_launch", &["2", "20000"]),
        2,
        &[("CAUSEWAY_RING_MB", "1"), ("CAUSEWAY_POLICY", "overwrite")],
    );
    assert!(o.status.success());
    let r = report(&cap);
    let p = proc_of(&r, "mt_launch");
    assert_eq!(p["dropped"], 0);
    assert!(p["overwritten"].as_u64().unwrap() > 0, "{p}");
    assert_eq!(
        p["entries"].as_u64().unwrap() + p["torn"].as_u64().unwrap(),
        p["capacity"].as_u64().unwrap()
    );
    // The process exit is the newest entry, so it survives.
    assert_eq!(p["closed"], true);
}

#[test]
fn a_shim_that_cannot_set_up_passes_everything_through_and_says_so_once() {
    let b = bare(command("mt_launch", &["2", "50"]));
    let mut c = command("mt_launch", &["2", "50"]);
    c.env("LD_PRELOAD", shim())
        .env("CAUSEWAY_OUT", "/nonexistent/causeway/dir")
        .env("CAUSEWAY_LEVEL", "2");
    let t = c.output().unwrap();
    assert_eq!(stdout(&b), stdout(&t));
    assert_eq!(b.status.code(), t.status.code());
    let err = stderr(&t);
    assert_eq!(err.matches("causeway:").count(), 1, "{err}");
    assert!(
        err.contains("cannot create a ring in /nonexistent/causeway/dir")
            && err.contains("passing calls through"),
        "{err}"
    );
    // Without CAUSEWAY_OUT at all.
    let mut c = command("mt_launch", &["2", "50"]);
    c.env("LD_PRELOAD", shim());
    let t = c.output().unwrap();
    assert_eq!(stdout(&b), stdout(&t));
    assert!(
        stderr(&t).contains("CAUSEWAY_OUT is not set"),
        "{}",
        stderr(&t)
    );
}

#[test]
fn record_passes_the_exit_code_through_and_prints_the_capture() {
    let out = scratch("rec");
    let o = Command::new(cli())
        .args(["record", "--level", "2", "--out"])
        .arg(&out)
        .arg("--shim")
        .arg(shim())
        .arg("--")
        .arg(prog("exitcode"))
        .arg("7")
        .env("LD_LIBRARY_PATH", ci_build())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let last = stderr(&o).lines().last().unwrap_or("").to_owned();
    let dir = last
        .strip_prefix("causeway: capture written to ")
        .unwrap_or_else(|| panic!("{last}"));
    let r = report(std::path::Path::new(dir));
    assert_eq!(r["totals"]["launches"], 1, "{r}");
    assert_eq!(calls(&r, "cudaLaunchKernel"), 1);
}

/// Range `name` (in `domain`, None = default) from a report: (count, open).
fn range(r: &serde_json::Value, name: &str, domain: Option<&str>) -> (u64, u64) {
    let row = r["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name && x["domain"].as_str() == domain);
    row.map(|x| (x["count"].as_u64().unwrap(), x["open"].as_u64().unwrap()))
        .unwrap_or((0, 0))
}

#[test]
fn nvtx_ranges_from_the_v3_headers_are_recorded_at_every_level() {
    for level in [1, 2, 4] {
        let (out, r) = same_bare_and_traced("nvtx_prog", &[], level);
        assert_eq!(value(&out, "nvtxRangePushA"), 15);
        // 5 steps, each with a nested forward > kernel, pushed through the injection table.
        for name in ["step", "forward", "kernel"] {
            assert_eq!(
                range(&r, name, None),
                (5, 0),
                "{name} at level {level}: {}",
                r["ranges"]
            );
        }
        assert_eq!(range(&r, "io", None), (1, 0), "start/end range");
        assert_eq!(
            range(&r, "cw_registered_range", Some("cw_domain")),
            (1, 0),
            "registered string in a domain"
        );
        assert_eq!(range(&r, "cw_ascii_range", Some("cw_domain")), (1, 0));
        let marks: Vec<_> = r["marks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_owned())
            .collect();
        assert!(
            marks.contains(&"checkpoint".to_owned())
                && marks.contains(&"cw_domain_mark".to_owned()),
            "{marks:?}"
        );
        // Calls are recorded from level 2 on.
        let expect = if level >= 2 {
            value(&out, "kernel_launches")
        } else {
            0
        };
        assert_eq!(calls(&r, "cudaLaunchKernel"), expect, "level {level}");
    }
}

/// Every NVTX entry point of the CORE, CORE2, CUDA, CUDART and SYNC modules, called through the
/// real headers, is recorded exactly as often as the program called it, at every level: marks and
/// ranges as marks and ranges, every other call as a call of its own name.
#[test]
fn every_nvtx_callback_slot_is_recorded_exactly() {
    for level in [1, 2] {
        let (out, r) = same_bare_and_traced("nvtx_full", &[], level);
        let counts: Vec<(&str, u64)> = out
            .lines()
            .filter(|l| l.starts_with("nvtx"))
            .map(|l| {
                let (k, v) = l.split_once('=').unwrap();
                (k, v.parse().unwrap())
            })
            .collect();
        assert_eq!(counts.len(), 50, "one line per entry point: {out}");
        let is_event = |k: &str| {
            ["Mark", "RangeStart", "RangeEnd", "RangePush", "RangePop"]
                .iter()
                .any(|w| {
                    k.starts_with(&format!("nvtx{w}")) || k.starts_with(&format!("nvtxDomain{w}"))
                })
        };
        let mut pushes_and_starts = 0;
        let mut marks = 0;
        for &(k, n) in &counts {
            assert!(n >= 1, "{k} called");
            if is_event(k) {
                assert_eq!(calls(&r, k), 0, "{k} is a mark or range, not a call");
                if k.contains("Push") || k.contains("Start") {
                    pushes_and_starts += n;
                }
                if k.contains("Mark") {
                    marks += n;
                }
            } else {
                assert_eq!(calls(&r, k), n, "{k} at level {level}");
            }
        }
        let ranges: u64 = r["ranges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["count"].as_u64().unwrap() + x["open"].as_u64().unwrap())
            .sum();
        assert_eq!(ranges, pushes_and_starts, "{}", r["ranges"]);
        let got_marks: u64 = r["marks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["count"].as_u64().unwrap())
            .sum();
        assert_eq!(got_marks, marks);
        assert_eq!(range(&r, "cw_payload_range", None), (1, 0));
        assert_eq!(range(&r, "cw_registered", Some("cw_full")), (1, 0));
        // What the program named, the later name of a stream named twice.
        let named: Vec<(String, String)> = r["nvtx_names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                let s = |f: &str| x[f].as_str().unwrap().to_owned();
                (s("kind"), s("name"))
            })
            .collect();
        for (kind, name) in [
            ("stream", "cw_named_stream"),
            ("stream", "cw_wide_stream"),
            ("event", "cw_event_w"),
            ("device", "cw_cuda_device"),
            ("context", "cw_context_w"),
            ("category", "cw_domain_category"),
            ("thread", "cw_thread_w"),
            ("other", "cw_resource"),
        ] {
            assert!(
                named.contains(&(kind.into(), name.into())),
                "{kind} {name}: {named:?}"
            );
        }
        assert!(!named.iter().any(|n| n.1 == "cw_first_name"), "{named:?}");
        let o = Command::new(cli())
            .arg("report")
            .arg(r["capture"].as_str().unwrap())
            .output()
            .unwrap();
        let text = stdout(&o);
        assert!(
            text.contains("NVTX NAMES") && text.contains("cw_named_stream"),
            "{text}"
        );
    }
}

#[test]
fn nvcc13_launch_stubs_are_traced_with_kernel_names() {
    // nvcc 13's <<<>>> lowers to __cudaGetKernel + __cudaLaunchKernel(cudaKernel_t, ...).
    let (out, r) = same_bare_and_traced("nvcc13_launch", &["20"], 2);
    assert_eq!(value(&out, "launches"), 20);
    assert_eq!(
        calls(&r, "__cudaLaunchKernel") + calls(&r, "__cudaLaunchKernel_ptsz"),
        20
    );
    assert_eq!(r["totals"]["launches"], 20, "{r}");
    let unnamed: Vec<_> = r["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["name"].as_str().unwrap().starts_with("<unknown"))
        .collect();
    assert!(unnamed.is_empty(), "every kernel has its name: {unnamed:?}");
}

/// The "expect <kernel>=<executions>" lines a graph program prints.
fn expected_executions(out: &str) -> Vec<(String, u64)> {
    out.lines()
        .filter_map(|l| l.strip_prefix("expect "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim().parse().unwrap()))
        .collect()
}

#[test]
fn captured_launches_run_nothing_and_graph_launches_run_their_kernels() {
    let (out, r) = same_bare_and_traced("graph_prog", &["5"], 2);
    let expect = expected_executions(&out);
    assert!(!expect.is_empty(), "{out}");
    for (name, n) in &expect {
        assert_eq!(launches(&r, name), *n, "{name}: {}", r["kernels"]);
    }
    assert_eq!(
        r["totals"]["graph_launches"],
        value(&out, "graph_launches"),
        "{}",
        r["totals"]
    );
    assert_eq!(
        r["totals"]["captured_launches"],
        value(&out, "captured_launches")
    );
    assert_eq!(r["totals"]["graph_launches_unresolved"], 0);
}

#[test]
fn child_graphs_are_walked_for_their_kernels() {
    let (out, r) = same_bare_and_traced("graph_tree", &["4"], 2);
    let expect = expected_executions(&out);
    assert_eq!(expect.len(), 3, "{out}");
    for (name, n) in &expect {
        assert_eq!(launches(&r, name), *n, "{name}: {}", r["kernels"]);
    }
}

#[test]
fn a_process_that_records_nothing_costs_no_ring_memory_or_disk() {
    use std::os::unix::fs::MetadataExt;
    // `rtld_next` makes no CUDA call; `exitcode` makes some.
    // The default ring size (the harness uses 16 MiB otherwise).
    let mb = [("CAUSEWAY_RING_MB", "64")];
    let (o, cap) = traced(command("rtld_next", &[]), 4, &mb);
    assert!(o.status.success());
    let (o2, cap2) = traced(command("exitcode", &["0"]), 4, &mb);
    assert!(o2.status.success());
    let allocated = |dir: &std::path::Path| -> Vec<(u64, u64)> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap())
            .map(|m| (m.blocks() * 512, m.len()))
            .collect()
    };
    let quiet_rings = allocated(&cap);
    assert_eq!(quiet_rings.len(), 1, "{quiet_rings:?}");
    let (used, len) = quiet_rings[0];
    assert!(
        len >= 64 << 20,
        "the file still has the ring's full size: {len}"
    );
    assert!(
        used <= 1 << 20,
        "a process that records nothing reserves at most 1 MiB, not {used}"
    );
    // It is still a valid capture, with its lifecycle.
    let r = report(&cap);
    assert_eq!(r["processes"][0]["closed"], true, "{r}");
    // A process that records calls has its whole ring reserved.
    let busy = allocated(&cap2);
    assert!(busy.iter().all(|&(used, len)| used >= len), "{busy:?}");
}
