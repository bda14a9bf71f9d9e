//! Level 3 end to end: the shim's CUPTI backend against the C CUPTI double (`ci/build/libcupti.so.13`),
//! which emits kernel, copy and memset records for the work the driver double runs, with CUPTI's
//! correlation rules. Checked: every device interval is tied to the call that issued it, graph kernels to
//! their graph launch, durations against the kernels' known sleeps, causality, and the honest fallbacks.

use causeway_itests::*;
use serde_json::Value;

fn cupti_double() -> String {
    prog("libcupti.so.13").display().to_string()
}

fn level3(name: &str, args: &[&str], extra: &[(&str, &str)]) -> (std::process::Output, Value) {
    let lib = cupti_double();
    let mut env: Vec<(&str, &str)> = vec![("CAUSEWAY_CUPTI", lib.as_str())];
    env.extend_from_slice(extra);
    let (o, cap) = traced(command(name, args), 3, &env);
    assert!(
        o.status.success(),
        "{name} failed under level 3: {}",
        stderr(&o)
    );
    (o, report(&cap))
}

fn device_kernel<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["device"]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == name)
        .unwrap_or_else(|| panic!("no device row for {name}: {}", r["device"]))
}

#[test]
fn every_device_interval_is_tied_to_its_call() {
    let (o, r) = level3("mt_launch", &["4", "50"], &[]);
    let d = &r["device"];
    let launches = calls(&r, "cudaLaunchKernel");
    assert_eq!(launches, 200);
    // Kernels plus the copies: each tied to the call that issued it, none left over.
    assert_eq!(d["unassociated"]["total"], 0, "{d}");
    assert_eq!(d["associated"], d["intervals"]);
    assert_eq!(device_kernel(&r, "sleep_0us")["count"], launches);
    let copies: u64 = d["copies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(copies, calls(&r, "cudaMemcpyAsync"));
    // Times are on the host clock and causal: no kernel starts before the call that launched it.
    assert_eq!(d["clock"]["conversion"], "cupti-timestamp-callback");
    assert_eq!(d["clock"]["before_call"], 0, "{}", d["clock"]);
    assert!(d["clock"]["min_launch_to_start_ns"].as_i64().unwrap() >= 0);
    assert!(!stderr(&o).contains("causeway:"), "{}", stderr(&o));
    let p = &r["processes"][0];
    assert_eq!(p["backend"], "cupti", "{p}");
}

#[test]
fn graph_kernels_are_tied_to_their_graph_launch() {
    let (o, r) = level3("graph_prog", &["5"], &[]);
    let out = stdout(&o);
    // Observed on the device = requested by the host, per kernel, graph nodes included.
    for line in out.lines().filter_map(|l| l.strip_prefix("expect ")) {
        let (name, n) = line.split_once('=').unwrap();
        let n: u64 = n.trim().parse().unwrap();
        let row = r["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["name"] == name)
            .unwrap();
        assert_eq!(row["launches"], n, "{row}");
        assert_eq!(row["device_count"], n, "{row}");
    }
    assert_eq!(r["device"]["unassociated"]["total"], 0, "{}", r["device"]);
}

#[test]
fn device_durations_cover_the_simulated_kernel_time() {
    // The doubles' kernels sleep for the time in their name: a device interval can only be longer.
    let (_, r) = level3("graph_prog", &["5"], &[]);
    let k10 = device_kernel(&r, "sleep_10us");
    assert!(k10["p50_ns"].as_u64().unwrap() >= 10_000, "{k10}");
    let k1 = device_kernel(&r, "sleep_1us");
    assert!(k1["p50_ns"].as_u64().unwrap() >= 1_000, "{k1}");
    assert!(k10["p50_ns"].as_u64().unwrap() > k1["p50_ns"].as_u64().unwrap());
}

#[test]
fn correlations_that_arrive_late_are_still_resolved() {
    let (_, r) = level3("graph_prog", &["5"], &[("CWC_LATE_CORRELATION", "1")]);
    assert_eq!(r["device"]["unassociated"]["total"], 0, "{}", r["device"]);
    assert_eq!(r["device"]["associated"], r["device"]["intervals"]);
}

#[test]
fn records_cupti_drops_are_counted_and_what_cannot_be_tied_is_said() {
    let (_, r) = level3("graph_prog", &["5"], &[("CWC_DROP_EVERY", "3")]);
    let d = &r["device"];
    assert!(d["dropped"].as_u64().unwrap() > 0, "{d}");
    // A dropped correlation record leaves its kernel unassociated — counted, never guessed.
    let unassoc = d["unassociated"]["total"].as_u64().unwrap();
    assert_eq!(
        d["associated"].as_u64().unwrap() + unassoc,
        d["intervals"].as_u64().unwrap()
    );
    assert_eq!(unassoc, d["unassociated"]["no_call"].as_u64().unwrap());
}

#[test]
fn cupti_held_by_another_tool_degrades_to_host_calls_and_says_so() {
    let (o, r) = level3("graph_prog", &["5"], &[("CWC_BUSY", "1")]);
    let err = stderr(&o);
    assert_eq!(err.matches("causeway:").count(), 1, "{err}");
    assert!(
        err.contains("CUPTI unavailable") && err.contains("recording host calls only"),
        "{err}"
    );
    assert_eq!(r["device"]["intervals"], 0);
    // Host calls are still recorded in full.
    assert_eq!(r["totals"]["graph_launches"], 5);
    let p = &r["processes"][0];
    assert!(p["notice"].as_str().unwrap_or("").contains("CUPTI"), "{p}");
}

#[test]
fn a_missing_cupti_degrades_to_host_calls() {
    let (o, cap) = traced(
        command("mt_launch", &["1", "5"]),
        3,
        &[("CAUSEWAY_CUPTI", "/nonexistent/libcupti.so.13")],
    );
    assert!(o.status.success());
    assert!(stderr(&o).contains("CUPTI unavailable"), "{}", stderr(&o));
    let r = report(&cap);
    assert_eq!(calls(&r, "cudaLaunchKernel"), 5);
}

#[test]
fn level_3_output_is_the_programs_own() {
    let lib = cupti_double();
    let b = bare(command("graph_prog", &["3"]));
    let (t, _) = traced(
        command("graph_prog", &["3"]),
        3,
        &[("CAUSEWAY_CUPTI", lib.as_str())],
    );
    // Only the lines the program computes (the doubles' call counters now include CUPTI's hooks).
    let facts = |s: &str| {
        s.lines()
            .take_while(|l| !l.starts_with("---"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(facts(&stdout(&b)), facts(&stdout(&t)));
    assert_eq!(b.status.code(), t.status.code());
}

#[test]
fn work_issued_through_a_static_cudart_is_tied_to_its_call() {
    // `static_launch` reaches the runtime through entry points the shim does not hook, as a program with
    // cudart linked statically does; CUPTI's runtime callback opens the call, the first launch included.
    let (o, r) = level3("static_launch", &["10"], &[]);
    assert_eq!(value_of(&stdout(&o), "launches"), 10);
    let d = &r["device"];
    assert_eq!(device_kernel(&r, "sleep_10us")["count"], 10, "{d}");
    assert_eq!(d["unassociated"]["total"], 0, "{d}");
    assert_eq!(d["associated"], d["intervals"]);
    // The runtime calls are in the capture, recorded through CUPTI's callback.
    assert_eq!(calls(&r, "cudaLaunchKernel"), 10, "{}", r["apis"]);
    assert_eq!(d["clock"]["before_call"], 0);
}

fn value_of(out: &str, key: &str) -> u64 {
    let prefix = format!("{key}=");
    out.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key}= in {out}"))
}

/// `CAUSEWAY_CUPTI_CORRELATION=callback` (the default): calls tied through CUPTI callbacks instead of
/// external correlation records (no API activity kinds) — the same answers, for runtime, graph,
/// static-cudart and driver-only programs.
#[test]
fn callback_correlation_ties_the_same_work_as_external_correlation() {
    // The double refuses the API and external-correlation kinds: only callbacks can tie anything.
    let cb = [
        ("CAUSEWAY_CUPTI_CORRELATION", "callback"),
        ("CWC_NO_API_KINDS", "1"),
    ];
    let (o, r) = level3("mt_launch", &["4", "50"], &cb);
    assert!(!stderr(&o).contains("causeway:"), "{}", stderr(&o));
    let d = &r["device"];
    assert_eq!(device_kernel(&r, "sleep_0us")["count"], 200, "{d}");
    assert_eq!(d["unassociated"]["total"], 0, "{d}");
    assert_eq!(d["associated"], d["intervals"]);
    assert_eq!(d["clock"]["before_call"], 0, "{}", d["clock"]);

    let (_, r) = level3("graph_prog", &["5"], &cb);
    assert_eq!(r["device"]["unassociated"]["total"], 0, "{}", r["device"]);
    let ext = [("CAUSEWAY_CUPTI_CORRELATION", "external")];
    let (_, e) = level3("graph_prog", &["5"], &ext);
    // Durations differ run to run; names and counts must not.
    let counts = |r: &Value| -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = r["device"]["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| {
                (
                    k["name"].as_str().unwrap().to_string(),
                    k["count"].as_u64().unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(counts(&r), counts(&e));

    let (_, r) = level3("static_launch", &["10"], &cb);
    assert_eq!(device_kernel(&r, "sleep_10us")["count"], 10);
    assert_eq!(r["device"]["unassociated"]["total"], 0, "{}", r["device"]);

    // Straight to the driver: tied through the driver-domain callback.
    let (_, r) = level3("dlsym_driver", &["20"], &cb);
    assert_eq!(
        device_kernel(&r, "sleep_1us")["count"],
        20,
        "{}",
        r["device"]
    );
    assert_eq!(r["device"]["unassociated"]["total"], 0, "{}", r["device"]);

    // External correlation cannot work against this double: the capture says so and keeps host calls.
    let (o, r) = level3(
        "mt_launch",
        &["1", "5"],
        &[("CWC_NO_API_KINDS", "1"), ext[0]],
    );
    assert!(stderr(&o).contains("CUPTI unavailable"), "{}", stderr(&o));
    assert_eq!(r["device"]["intervals"], 0);

    // Callback correlation is the default: with nothing set, the same double ties everything.
    let (o, r) = level3("mt_launch", &["2", "10"], &[("CWC_NO_API_KINDS", "1")]);
    assert!(!stderr(&o).contains("causeway:"), "{}", stderr(&o));
    assert_eq!(
        device_kernel(&r, "sleep_0us")["count"],
        20,
        "{}",
        r["device"]
    );
    assert_eq!(r["device"]["unassociated"]["total"], 0, "{}", r["device"]);
}

/// CUPTI's latency timestamps (`CAUSEWAY_CUPTI_LATENCY=1`): every kernel interval of the CUPTI double carries when it was queued
/// (pushed to its stream) and submitted (taken up by the stream), in that order before its start, on
/// the host clock; `why` shows them as the kernel's phases.
#[test]
fn kernels_carry_cuptis_queued_and_submitted_times() {
    let lib = cupti_double();
    let (o, cap) = traced(
        command("mt_launch", &["2", "5"]),
        3,
        &[
            ("CAUSEWAY_CUPTI", lib.as_str()),
            ("CAUSEWAY_CUPTI_LATENCY", "1"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // Off by default: the same run without the setting has no latency times.
    let (_, plain) = traced(
        command("mt_launch", &["2", "5"]),
        3,
        &[("CAUSEWAY_CUPTI", lib.as_str())],
    );
    let plain_why = std::process::Command::new(cli())
        .args(["why", "--json", "--kernel", "sleep_0us#2"])
        .arg(&plain)
        .output()
        .expect("spawn causeway");
    let pw: Value = serde_json::from_slice(&plain_why.stdout).unwrap();
    assert!(pw["phases"]["queued_ns"].is_null(), "{}", pw["phases"]);
    let doc = graph_export(&cap);
    let spans = doc["processes"][0]["device"].as_array().unwrap();
    let kernels: Vec<&Value> = spans.iter().filter(|s| s["kind"] == "kernel").collect();
    assert_eq!(kernels.len(), 10, "{spans:?}");
    for k in &kernels {
        let (q, s, b) = (
            k["queued_ns"]
                .as_u64()
                .unwrap_or_else(|| panic!("no queued time: {k}")),
            k["submitted_ns"].as_u64().unwrap(),
            k["begin_ns"].as_u64().unwrap(),
        );
        assert!(q <= s && s <= b, "queued {q} submitted {s} start {b}");
    }
    let why = std::process::Command::new(cli())
        .args(["why", "--json", "--kernel", "sleep_0us#2"])
        .arg(&cap)
        .output()
        .expect("spawn causeway");
    assert!(why.status.success(), "{}", stderr(&why));
    let w: Value = serde_json::from_slice(&why.stdout).unwrap();
    let ph = &w["phases"];
    assert!(
        ph["queued_ns"].as_u64().unwrap() <= ph["submitted_ns"].as_u64().unwrap(),
        "{ph}"
    );
    assert!(
        ph["submitted_ns"].as_u64().unwrap() <= ph["start_ns"].as_u64().unwrap(),
        "{ph}"
    );
}

/// The graph topology recorded at instantiation orders a graph launch's node executions: `graph_tree`
/// runs n0 `sleep_1us` → child graph (c0 `sleep_0us` → c1 `sleep_10us`) → n2 `sleep_1us`, and each
/// execution depends on the one before it through the child graph's entry and exit nodes.
#[test]
fn a_graphs_topology_orders_its_node_executions() {
    let lib = cupti_double();
    let (o, cap) = traced(
        command("graph_tree", &["2"]),
        3,
        &[("CAUSEWAY_CUPTI", lib.as_str())],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let doc = graph_export(&cap);
    let p = &doc["processes"][0];
    let device = p["device"].as_array().unwrap();
    let name = |n: &Value| -> String {
        let j = n["work"]
            .as_u64()
            .unwrap_or_else(|| panic!("not device work: {n}"));
        device[j as usize]["name"].as_str().unwrap().to_string()
    };
    let mut got: Vec<(String, String)> = p["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "graph_edge")
        .map(|e| {
            assert_eq!(e["evidence"]["class"], "explicit", "{e}");
            (name(&e["from"]), name(&e["to"]))
        })
        .collect();
    got.sort();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    let want = vec![
        pair("sleep_0us", "sleep_10us"),
        pair("sleep_0us", "sleep_10us"),
        pair("sleep_10us", "sleep_1us"),
        pair("sleep_10us", "sleep_1us"),
        pair("sleep_1us", "sleep_0us"),
        pair("sleep_1us", "sleep_0us"),
    ];
    assert_eq!(got, want, "two launches, three dependencies each");
    // The second `sleep_1us` (n2 of the first launch) waited for the child graph's exit node.
    let why = std::process::Command::new(cli())
        .args(["why", "--json", "--kernel", "sleep_1us#2"])
        .arg(&cap)
        .output()
        .expect("spawn causeway");
    assert!(why.status.success(), "{}", stderr(&why));
    let w: Value = serde_json::from_slice(&why.stdout).unwrap();
    assert_eq!(w["chain"][0]["edge"], "graph_edge", "{w}");
    assert!(
        w["chain"][0]["what"]
            .as_str()
            .unwrap()
            .contains("sleep_10us"),
        "{w}"
    );
}
