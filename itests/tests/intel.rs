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
    run_cap(level).map(|(out, r, _)| (out, r))
}

/// `run`, with the capture's path.
fn run_cap(level: u8) -> Option<(String, serde_json::Value, PathBuf)> {
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
    let r = report(&cap);
    Some((stdout(&o), r, cap))
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

/// The events Unified Runtime calls signalled or waited for, as the capture has them.
fn event_links(cap: &std::path::Path) -> Vec<(u64, bool)> {
    use causeway_scanner::facts::model::Timeline;
    use causeway_scanner::read::capture::Capture;
    let c = Capture::open(cap).expect("capture");
    let t = Timeline::build(&c.rings().expect("rings"));
    t.processes[0]
        .event_links
        .iter()
        .map(|l| (l.event, l.signals))
        .collect()
}

#[test]
fn level_3_times_every_enqueue_by_urs_own_event_profiling() {
    let Some((out, r, cap)) = run_cap(3) else {
        return;
    };
    let d = &r["device"];
    // The capture names the runtime that timed the work (not "none", not the CUPTI asked for).
    assert_eq!(r["processes"][0]["backend"], "unified_runtime");
    // 1 fill, 2 writes, 7 launches, 3 reads: each timed, each tied to its enqueue call.
    assert_eq!(d["intervals"], 13, "{d}");
    assert_eq!(d["associated"], 13, "{d}");
    let clock = &d["clock"];
    assert_eq!(clock["converted"], 13, "{clock}");
    assert_eq!(clock["unconverted"], 0, "{clock}");
    assert!(clock["anchors"].as_u64().unwrap() >= 1, "{clock}");
    // UR took each start after its enqueue began: none may start before its call.
    assert_eq!(clock["checked"], 13, "{clock}");
    assert_eq!(clock["before_call"], 0, "{clock}");
    assert!(
        clock["bound_ns_max"].as_u64().unwrap() < 1_000_000,
        "{clock}"
    );
    let kernels = d["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1, "{kernels:?}");
    assert_eq!(kernels[0]["name"], "add_inc");
    assert_eq!(kernels[0]["count"], 7);
    let copies: BTreeMap<String, (u64, u64)> = d["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap();
            (
                c["kind"].as_str().unwrap().to_string(),
                (n("count"), n("bytes")),
            )
        })
        .collect();
    let quarter = 4096 * 4 / 4;
    assert_eq!(copies["HtoD"], (2, 2 * quarter), "{copies:?}");
    assert_eq!(copies["DtoH"], (3, 4 * quarter), "{copies:?}");
    assert_eq!(copies["memset"], (1, 4 * quarter), "{copies:?}");
    assert_eq!(launches(&r, "add_inc"), 7);
    assert!(out.contains("result=ok"));
    // The events the backend made for enqueues that asked for none are not the program's: the
    // capture's event links are level 2's (the program's one event, signalled and waited for).
    let (_, _, cap2) = run_cap(2).unwrap();
    let roles = |c: &std::path::Path| -> Vec<bool> { event_links(c).iter().map(|l| l.1).collect() };
    assert_eq!(roles(&cap), roles(&cap2));
    let links = event_links(&cap);
    assert_eq!(links.len(), 2, "{links:?}");
    assert_eq!(links[0].0, links[1].0, "one event: {links:?}");
}

/// `causeway control --runs 3 --json` on `prog ARGS` (with `env`): its JSON, and the first run's
/// instrumented and control reports.
fn control_run(
    prog: &std::path::Path,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> (serde_json::Value, serde_json::Value, serde_json::Value) {
    let out = scratch("intelcontrol");
    let mut c = std::process::Command::new(cli());
    c.arg("control")
        .args(["--runs", "3", "--ring-mb", "4", "--json", "--out"])
        .arg(&out)
        .arg("--")
        .arg(prog)
        .args(args)
        .env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars() {
        if k.starts_with("CAUSEWAY_") {
            c.env_remove(k);
        }
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("spawn causeway");
    assert!(
        o.status.success(),
        "causeway control failed: {}",
        stderr(&o)
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(r["instrumented"]["level"], 3, "{}", r["instrumented"]);
    assert_eq!(r["control"]["backend"], "none", "{}", r["control"]);
    let ids: Vec<&str> = (r["claims"].as_array().unwrap().iter())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["step_time", "copy_compute_overlap", "stream_concurrency"]
    );
    let dir = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .expect("the control's directory");
    let (i, k) = (
        report(&dir.join("r01-instrumented")),
        report(&dir.join("r01-control")),
    );
    (r, i, k)
}

/// `causeway control` on Unified Runtime work: `ur_prog 10 6` runs six NVTX steps, each a write on
/// one queue beside ten launches on another; the instrumented arm times every operation (82: the 16
/// of the main part, 11 per step), the control arm none, and every claim is checked.
#[test]
fn control_checks_ur_claims_against_runs_without_profiling() {
    let Some(prog) = ur_prog() else { return };
    let (r, i, k) = control_run(&prog, &["10", "6"], &[]);
    // CUPTI was asked for (the default); UR's own profiling timed the work, and the report says so.
    assert_eq!(r["instrumented"]["backend"], "cupti");
    assert_eq!(
        r["instrumented"]["timed_by"],
        serde_json::json!(["unified_runtime"])
    );
    assert_eq!(r["control"]["timed_by"], serde_json::json!([]));
    assert_eq!(i["device"]["intervals"], 82);
    assert_eq!(i["device"]["clock"]["before_call"], 0);
    assert_eq!(k["device"]["intervals"], 0);
}

/// `causeway control` on Level Zero work: `ze_prog 3 0 6` adds six NVTX steps, each a 200 us launch
/// on one immediate list beside a 1 MiB copy on another; every operation is timed in the
/// instrumented arm (20 + 2 per step), none in the control, and the overlap the instrumented arm saw
/// is checked against the control.
#[test]
fn control_checks_level_zero_claims_against_runs_without_timestamps() {
    let Some((prog, double)) = ze_prog() else {
        return;
    };
    let env = [("ZE_ENABLE_ALT_DRIVERS", double.as_os_str())];
    let (r, i, k) = control_run(&prog, &["3", "0", "6"], &env);
    assert_eq!(
        r["instrumented"]["timed_by"],
        serde_json::json!(["level_zero"])
    );
    assert_eq!(i["device"]["intervals"], 32);
    assert_eq!(i["device"]["clock"]["before_call"], 0);
    assert_eq!(k["device"]["intervals"], 0);
    let overlap = (r["claims"].as_array().unwrap().iter())
        .find(|c| c["id"] == "copy_compute_overlap")
        .unwrap();
    // Every instrumented run measured it and the claim was compared. How much the two lists
    // overlapped, and so the mark, depends on how busy this machine's two cores are: not asserted.
    assert_eq!(overlap["instrumented"]["n"], 3, "{overlap}");
    assert_ne!(overlap["mark"], "not-tested", "{overlap}");
}

#[test]
fn level_2_leaves_ur_work_untimed() {
    let Some((_, r)) = run(2) else { return };
    assert_eq!(r["device"]["intervals"], 0, "{}", r["device"]);
    assert_eq!(r["processes"][0]["backend"], "none");
}

/// With `--backend events` asked for, UR's own profiling still times UR work, and the capture names
/// it (the CUDA events backend, never started here, does not claim the header).
#[test]
fn ur_work_recorded_with_the_events_backend_names_its_own_timing() {
    let Some(prog) = ur_prog() else { return };
    let mut c = std::process::Command::new(&prog);
    c.arg("7").env_remove("LD_PRELOAD");
    let (o, cap) = traced(c, 3, &[("CAUSEWAY_BACKEND", "events")]);
    assert!(o.status.success(), "ur_prog failed traced: {}", stderr(&o));
    let r = report(&cap);
    assert_eq!(r["processes"][0]["backend"], "unified_runtime");
    assert_eq!(r["device"]["intervals"], 13, "{}", r["device"]);
}

/// ci/build/ze_prog and the Level Zero double it runs on through the real loader, or None (with a
/// note) when they were not built here.
fn ze_prog() -> Option<(PathBuf, PathBuf)> {
    let (p, d) = (
        ci_build().join("ze_prog"),
        ci_build().join("libze_double.so"),
    );
    if p.exists() && d.exists() {
        return Some((p, d));
    }
    if std::env::var_os("CAUSEWAY_REQUIRE_UR").is_some() {
        panic!("{} missing: run `make -C ci ze`", p.display());
    }
    eprintln!("skipped: {} not built (make -C ci ze)", p.display());
    None
}

/// The program's facts (before the double's counters) and the counters, `name=count`.
fn ze_split(out: &str) -> (String, BTreeMap<String, u64>) {
    let (facts, counters) = out
        .split_once("--- level zero driver counters")
        .unwrap_or_else(|| panic!("no counters in: {out}"));
    let counters = counters
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter_map(|(n, k)| Some((n.to_string(), k.trim().parse().ok()?)))
        .collect();
    (facts.to_string(), counters)
}

/// One traced run: the program's facts, the double's counters bare and traced, the report, the
/// capture.
type ZeRun = (
    String,
    BTreeMap<String, u64>,
    BTreeMap<String, u64>,
    serde_json::Value,
    PathBuf,
);

/// `ze_prog 3` on the Level Zero double, not preloaded.
fn ze_command(prog: &std::path::Path, double: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(prog);
    c.arg("3")
        .env_remove("LD_PRELOAD")
        .env("ZE_ENABLE_ALT_DRIVERS", double);
    c
}

fn ze_run(level: u8) -> Option<ZeRun> {
    let (prog, double) = ze_prog()?;
    let cmd = || ze_command(&prog, &double);
    let b = bare(cmd());
    assert!(b.status.success(), "ze_prog failed bare: {}", stderr(&b));
    let (o, cap) = traced(cmd(), level, &[]);
    assert!(o.status.success(), "ze_prog failed traced: {}", stderr(&o));
    let (facts_b, bare_counts) = ze_split(&stdout(&b));
    let (facts_t, traced_counts) = ze_split(&stdout(&o));
    // The program saw the same results, its bad-handle checks included.
    assert_eq!(facts_b, facts_t);
    assert!(
        facts_t.contains("data_ok=1") && facts_t.contains("bad_handles_ok=13"),
        "{facts_t}"
    );
    Some((facts_t, bare_counts, traced_counts, report(&cap), cap))
}

/// Calls the driver saw that are not the application's own: the loader's table discovery, its
/// second `zeInit`, and the shim's kernel-name queries.
fn not_the_programs(name: &str) -> bool {
    name.ends_with("ProcAddrTable") || name == "zeInit" || name == "zeKernelGetName"
}

#[test]
fn level_zero_level_4_records_every_call_the_driver_saw_from_the_program() {
    let Some((_, bare_counts, traced_counts, r, _)) = ze_run(4) else {
        return;
    };
    for (name, k) in &bare_counts {
        if not_the_programs(name) {
            continue;
        }
        assert_eq!(
            traced_counts[name], *k,
            "{name}: the driver saw other calls traced"
        );
        assert_eq!(calls(&r, name), *k, "{name}");
    }
    assert_eq!(calls(&r, "zeInit"), 1);
    // The shim asks each kernel's name once (size, then name) and nothing else of the driver.
    let named = r["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["name"].as_str().is_some_and(|n| n.starts_with("sleep_")))
        .count() as u64;
    assert_eq!(named, 3, "{}", r["kernels"]);
    assert_eq!(
        traced_counts["zeKernelGetName"],
        bare_counts["zeKernelGetName"] + 2 * named
    );
    let rows = r["apis"].as_array().unwrap();
    assert!(rows.iter().all(|a| a["layer"] == "level_zero"), "{rows:?}");
}

/// Level 3 on Level Zero: every kernel, copy and fill ze_prog runs is timed by kernel timestamp
/// events — on its immediate lists (a launch signalling the program's timestamp event, a copy and a
/// fill signalling none, a launch behind a host-opened gate) tied to the append, on its regular list
/// (executed 3 times, then reset, re-recorded and executed once) tied to each execute — and lands on
/// the host clock within its stated bound of the true times the driver double logs (`CWZ_TRUTH`).
#[test]
fn level_zero_level_3_times_immediate_list_work_within_its_bound() {
    let Some((prog, double)) = ze_prog() else {
        return;
    };
    let truth = scratch("zetruth").join("truth.txt");
    let cmd = || ze_command(&prog, &double);
    let b = bare(cmd());
    let mut t = cmd();
    t.env("CWZ_TRUTH", &truth);
    let (o, cap) = traced(t, 3, &[]);
    assert!(o.status.success(), "ze_prog failed traced: {}", stderr(&o));
    assert_eq!(ze_split(&stdout(&b)).0, ze_split(&stdout(&o)).0);
    let r = report(&cap);
    assert_eq!(r["processes"][0]["backend"], "level_zero");
    let d = &r["device"];
    // 3 executes × 5 (2 launches, 2 copies, a fill), 1 after the reset, 4 on the immediate lists.
    assert_eq!(d["intervals"], 20, "{d}");
    assert_eq!(d["associated"], 20, "{d}");
    assert_eq!(d["clock"]["converted"], 20, "{}", d["clock"]);
    assert_eq!(d["clock"]["before_call"], 0, "{}", d["clock"]);
    // Each interval against the truth, both in start order.
    let doc = graph_export(&cap);
    let spans = doc["processes"][0]["device"].as_array().unwrap().clone();
    let text = std::fs::read_to_string(&truth).unwrap();
    let mut lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
    lines.sort_by_key(|l| l[2].parse::<u64>().unwrap());
    assert_eq!(lines.len(), 20, "{text}");
    let mut ours: Vec<&serde_json::Value> = spans.iter().collect();
    ours.sort_by_key(|s| s["begin_ns"].as_u64().unwrap());
    let ns = |v: &serde_json::Value| v.as_u64().unwrap() as i64;
    for (s, l) in ours.iter().zip(&lines) {
        let (t0, t1): (i64, i64) = (l[2].parse().unwrap(), l[3].parse().unwrap());
        let bound = ns(&s["bound_ns"]) + 80; // + one tick of the double's 12.5 MHz timer
        assert!(
            (ns(&s["begin_ns"]) - t0).abs() <= bound && (ns(&s["end_ns"]) - t1).abs() <= bound,
            "{s} against the truth {l:?} (bound {bound} ns)"
        );
        if l[0] == "kernel" {
            assert_eq!(s["name"], l[4], "{s}");
        } else {
            assert_eq!(s["kind"], l[0], "{s}");
        }
    }
    // The events the backend signalled for appends that named none are not the program's.
    let links = |c: &std::path::Path| {
        use causeway_scanner::facts::model::Timeline;
        use causeway_scanner::read::capture::Capture;
        let c = Capture::open(c).expect("capture");
        Timeline::build(&c.rings().expect("rings")).processes[0]
            .event_links
            .len()
    };
    let (_, cap2) = traced(cmd(), 2, &[]);
    assert_eq!(links(&cap), links(&cap2));
}

/// ze_cases (see its header): a kernel signalling the program's timestamp event stays timed across
/// an unrelated synchronous list's append; one signalling an event of a pool without timestamps is
/// written untimed (never asked for timestamps); the context is destroyed after the backend's pool.
#[test]
fn level_zero_timing_cases() {
    let Some((_, double)) = ze_prog() else { return };
    let prog = ci_build().join("ze_cases");
    let mut c = std::process::Command::new(&prog);
    c.env_remove("LD_PRELOAD")
        .env("ZE_ENABLE_ALT_DRIVERS", &double);
    let (o, cap) = traced(c, 3, &[]);
    assert!(o.status.success(), "ze_cases failed traced: {}", stderr(&o));
    assert!(stdout(&o).contains("result=ok"), "{}", stdout(&o));
    let r = report(&cap);
    let d = &r["device"];
    // The kernel of case 1, the fill, the kernel of case 2.
    assert_eq!(d["intervals"], 3, "{d}");
    let kernels = d["kernels"].as_array().unwrap();
    let row = |n: &str| {
        kernels
            .iter()
            .find(|k| k["name"] == n)
            .unwrap_or_else(|| panic!("{n}: {d}"))
    };
    let slow = row("sleep_3000us");
    assert_eq!(slow["count"], 1);
    assert!(slow["total_ns"].as_u64().unwrap() >= 3_000_000, "{slow}");
    // Case 2's kernel: known, not timed.
    assert_eq!(row("sleep_200us")["count"], 1);
    assert_eq!(d["untimed"], 1, "{d}");
}

#[test]
fn level_zero_level_2_graph_has_barriers_event_waits_and_fence_waits() {
    let Some((_, bare_counts, _, r, cap)) = ze_run(2) else {
        return;
    };
    assert_eq!(
        calls(&r, "zeCommandListAppendLaunchKernel"),
        bare_counts["zeCommandListAppendLaunchKernel"]
    );
    assert_eq!(
        calls(&r, "zeKernelSetArgumentValue"),
        0,
        "a level-4 call at level 2"
    );
    let g = cap.with_extension("graph.json");
    let o = std::process::Command::new(cli())
        .args(["export", "--format", "graph", "--force", "-o"])
        .arg(&g)
        .arg(&cap)
        .output()
        .expect("spawn causeway");
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&g).unwrap()).unwrap();
    let p = &doc["processes"][0];
    let api = |n: &serde_json::Value| {
        n.get("call")
            .and_then(|i| p["calls"][i.as_u64().unwrap() as usize]["api"].as_str())
            .unwrap_or("-")
            .to_string()
    };
    let edges: Vec<(String, String, String)> = p["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                api(&e["from"]),
                api(&e["to"]),
            )
        })
        .collect();
    let has = |kind: &str, from: &str, to: &str| {
        edges
            .iter()
            .any(|(k, f, t)| k == kind && f == from && t == to)
    };
    assert!(
        has(
            "event_wait",
            "zeCommandListAppendLaunchKernel",
            "zeCommandListAppendLaunchKernel"
        ),
        "{edges:?}"
    );
    assert!(
        has(
            "stream_order",
            "zeCommandListAppendLaunchKernel",
            "zeCommandListAppendBarrier"
        ),
        "{edges:?}"
    );
    assert!(
        has(
            "host_wait",
            "zeCommandQueueExecuteCommandLists",
            "zeFenceHostSynchronize"
        ),
        "{edges:?}"
    );
    // The lists are not created in order: no stream order from one launch straight to the next.
    assert!(
        !has(
            "stream_order",
            "zeCommandListAppendLaunchKernel",
            "zeCommandListAppendLaunchKernel"
        ),
        "{edges:?}"
    );
}

/// A program that probes for a runtime with `dlsym(RTLD_DEFAULT, name)` gets the answer it gets bare:
/// the shim exports every hooked name, but a global lookup that only found the shim's export (no
/// loaded library has the function) answers nothing, for Level Zero, UR and CUDA names alike.
#[test]
fn probing_for_a_runtime_finds_what_it_finds_bare() {
    let names = [
        "zeInit",
        "zeCommandListAppendLaunchKernel",
        "urAdapterGet",
        "urEnqueueKernelLaunchWithArgsExp",
        "cuInit",
        "cudaMalloc",
        "printf",
    ];
    let cmd = || {
        let mut c = command("probe_default", &names);
        c.env_remove("LD_LIBRARY_PATH");
        c
    };
    let b = bare(cmd());
    assert!(stdout(&b).contains("zeInit=absent") && stdout(&b).contains("printf=found"));
    for level in [2, 4] {
        let (o, _) = traced(cmd(), level, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o), stdout(&b), "level {level}");
    }
}
