//! Work tokens end to end: `token_prog` (ci/doubles/progs) hands one token from thread A to thread
//! B through `include/causeway.h` (weak symbols) or through NVTX alone. Bare, it runs unchanged and
//! finds no token functions; traced, the capture holds exactly its token entries, the scanner's
//! facts pair the handoff with B's accept, and the launches on both threads belong to the token.

use causeway_itests::*;
use causeway_ring::Kind;
use causeway_scanner::facts::tokens::{self, Opened, TokenId};
use causeway_scanner::read::capture::Capture;
use causeway_scanner::read::decode::decode;
use std::path::Path;

fn value(out: &str, key: &str) -> u64 {
    let prefix = format!("{key}=");
    out.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no `{key}=` line in:\n{out}"))
        .trim()
        .parse()
        .unwrap()
}

/// The doubles' counters: what the program did to CUDA, which the shim must not change.
fn cuda_counters(out: &str) -> Vec<String> {
    let skip = ["FuncGetName", "KernelGetName"];
    counters(out)
        .into_iter()
        .filter(|l| !skip.iter().any(|s| l.contains(s)))
        .collect()
}

/// The program's one ring: its token entries (kind, tid, a0, a1, a2, generation) in sequence order,
/// the sequence numbers and threads of its launch calls, and its token facts.
struct Seen {
    entries: Vec<(Kind, u32, u64, u64, u64, u32)>,
    launches: Vec<(u32, u64)>,
    tokens: tokens::Tokens,
}

fn seen(cap: &Path) -> Seen {
    let c = Capture::open(cap).unwrap();
    let rings = c.rings().unwrap();
    assert_eq!(rings.len(), 1, "one process, one ring");
    let ring = &rings[0];
    let d = decode(&ring.view);
    let launch_api: Vec<u64> = ring
        .view
        .strings
        .iter()
        .filter(|s| s.kind == causeway_ring::StrKind::Api && s.text == "cudaLaunchKernel")
        .map(|s| s.key)
        .collect();
    let mut entries = Vec::new();
    let mut launches = Vec::new();
    for e in d.entries().iter() {
        match e.kind {
            Some(
                k @ (Kind::TokenBegin | Kind::TokenEnd | Kind::TokenHandoff | Kind::TokenAccept),
            ) => {
                assert_eq!((e.api, e.done), (0, true));
                entries.push((k, e.tid, e.a0, e.a1, e.a2, e.result as u32))
            }
            Some(Kind::Call) if launch_api.contains(&(e.api as u64)) => {
                launches.push((e.tid, e.seq))
            }
            _ => {}
        }
    }
    Seen {
        entries,
        launches,
        tokens: tokens::of_ring(ring),
    }
}

/// Runs `token_prog MODE` bare and traced at `level`; returns the traced stdout and capture.
fn run(mode: &str, level: u8) -> (String, std::path::PathBuf) {
    let b = bare(command("token_prog", &[mode]));
    assert!(
        b.status.success(),
        "token_prog {mode} failed bare: {}",
        stderr(&b)
    );
    assert_eq!(value(&stdout(&b), "traced"), 0, "bare: no token functions");
    assert_eq!(value(&stdout(&b), "launches"), 2);
    let (t, cap) = traced(command("token_prog", &[mode]), level, &[]);
    assert!(
        t.status.success(),
        "token_prog {mode} failed traced: {}",
        stderr(&t)
    );
    assert!(
        !stderr(&t).contains("causeway:"),
        "shim complained: {}",
        stderr(&t)
    );
    assert_eq!(
        value(&stdout(&t), "traced"),
        1,
        "the weak symbols found the shim"
    );
    assert_eq!(cuda_counters(&stdout(&b)), cuda_counters(&stdout(&t)));
    (stdout(&t), cap)
}

/// The facts both forms give: A's span, B's span, one handoff A → B accepted by B, and (where the
/// level records launches) each thread's launch inside its span.
fn check_facts(s: &Seen, token: TokenId, a: u32, b: u32, opened_b: Opened, level: u8) {
    let k = &s.tokens;
    assert_eq!(k.spans.len(), 2, "{:?}", k.spans);
    let (sa, sb) = (k.spans[0], k.spans[1]);
    assert_eq!((sa.token, sa.tid), (token, a));
    assert_eq!((sb.token, sb.tid, sb.opened), (token, b, opened_b));
    assert!(sa.end_seq.is_some() && sb.end_seq.is_some(), "both ended");
    assert!(
        sa.end_seq < Some(sb.begin_seq),
        "A ended before B took over"
    );
    assert_eq!(k.handoffs.len(), 1);
    let h = k.handoffs[0];
    assert_eq!((h.token, h.from_tid, h.to), (token, a, b as u64));
    let acc = h.accepted.expect("the handoff is paired with B's accept");
    assert_eq!(acc.tid, b);
    assert!(h.seq < acc.seq && h.ns <= acc.ns);
    assert_eq!(
        (k.unmatched_ends, k.unmatched_accepts, k.nvtx_without_token),
        (0, 0, 0)
    );
    if level >= 2 {
        assert_eq!(s.launches.len(), 2, "one launch per thread");
        for &(tid, seq) in &s.launches {
            assert!(tid == a || tid == b);
            assert_eq!(k.token_at(tid, seq), Some(token), "launch {seq} on {tid}");
        }
    }
}

fn check_summary(cap: &Path) {
    let r = report(cap);
    let p = &r["processes"][0];
    assert_eq!(p["unknown_kind"], 0);
    assert_eq!(
        p["tokens"],
        serde_json::json!({
            "tokens": 1, "spans": 2, "open_spans": 0, "handoffs": 1, "accepted": 1,
            "unmatched_ends": 0, "unmatched_accepts": 0, "nvtx_without_token": 0
        })
    );
}

#[test]
fn abi_tokens_cross_threads_at_every_level() {
    for level in [1, 2, 3, 4] {
        let (out, cap) = run("abi", level);
        let (a, b) = (value(&out, "tid_a") as u32, value(&out, "tid_b") as u32);
        let s = seen(&cap);
        let (hi, lo, g) = (0x1111, 0x2222, 3);
        assert_eq!(
            s.entries,
            vec![
                (Kind::TokenBegin, a, hi, lo, 0, g),
                (Kind::TokenHandoff, a, hi, lo, b as u64, g),
                (Kind::TokenEnd, a, hi, lo, 0, g),
                (Kind::TokenAccept, b, hi, lo, 0, g),
                (Kind::TokenEnd, b, hi, lo, 0, g),
            ],
            "level {level}"
        );
        let token = TokenId {
            hi,
            lo,
            generation: g,
        };
        check_facts(&s, token, a, b, Opened::Accept, level);
        check_summary(&cap);
    }
}

#[test]
fn nvtx_tokens_cross_threads() {
    for level in [1, 2] {
        let (out, cap) = run("nvtx", level);
        let (a, b) = (value(&out, "tid_a") as u32, value(&out, "tid_b") as u32);
        let s = seen(&cap);
        assert!(s.entries.is_empty(), "NVTX alone: no ABI entries");
        let token = TokenId {
            hi: 0,
            lo: 0x2222,
            generation: 3,
        };
        check_facts(&s, token, a, b, Opened::Nvtx, level);
        check_summary(&cap);
    }
}

#[test]
fn a_program_without_tokens_has_no_token_summary() {
    let (t, cap) = traced(command("mt_launch", &["2", "3"]), 2, &[]);
    assert!(t.status.success(), "{}", stderr(&t));
    let r = report(&cap);
    for p in r["processes"].as_array().unwrap() {
        assert!(p.get("tokens").is_none(), "{p}");
    }
    assert!(tokens::of_ring(&Capture::open(&cap).unwrap().rings().unwrap()[0]).is_empty());
}

/// `causeway why` on thread B's launch: its work arrived from thread A through the token's handoff,
/// an `observed` edge, and the answer's scope is the token.
#[test]
fn why_follows_a_token_handoff_across_threads() {
    for mode in ["abi", "nvtx"] {
        let (out, cap) = run(mode, 2);
        let b = value(&out, "tid_b") as u32;
        let r = report(&cap);
        let pid = r["processes"][0]["pid"].as_u64().unwrap();
        // Thread B's launch: the report has no per-call rows; find its sequence number in the
        // capture's calls through the scanner.
        let capture = causeway_scanner::Capture::open(&cap).unwrap();
        let rings = capture.rings().unwrap();
        let t = causeway_scanner::facts::model::Timeline::build(&rings);
        let launch = t.processes[0]
            .calls
            .iter()
            .find(|c| c.tid == b && c.depth == 0 && c.class == Some(causeway_ring::Class::Launch))
            .expect("thread B's launch");
        let o = std::process::Command::new(cli())
            .args(["why", "--json", "--call", &format!("{pid}:{}", launch.seq)])
            .arg(&cap)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(w["cause"], "host", "{mode}: {w}");
        assert!(
            w["detail"]
                .as_str()
                .unwrap()
                .contains("handed over from thread"),
            "{mode}: {w}"
        );
        assert_eq!(w["chain"][0]["edge"], "handoff", "{mode}: {w}");
        assert_eq!(w["chain"][0]["evidence"], "observed", "{mode}: {w}");
        assert!(
            w["scope"].as_str().unwrap().starts_with("token "),
            "{mode}: {w}"
        );
    }
}
