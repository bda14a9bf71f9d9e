//! `causeway why`: why one item was late, from the dependency graph (`graph`).
//!
//! For a target — a step (an NVTX range of the steps view), a kernel execution, or a call — the
//! answer is the **critical predecessor chain**: starting at the target, the predecessor whose time
//! the target waited for last, then that predecessor's, and so on while a link still explains delay.
//! Each link says what the predecessor is, the edge type, its evidence class and the delay that
//! entered there. Dependencies that lead back to an item already on the chain (a damaged ring's
//! graph edges in a cycle) end it with a `cycle` link of evidence `missing`: the chain is then
//! incomplete. The **cause** is read at the target's first link:
//! * `dependency` — the work started within a short slack of a predecessor's end (stream order, an
//!   event wait): it waited for that predecessor;
//! * `device` — it was ready (issued, predecessors done) and did not start for longer than the slack
//!   (20 µs, or three times the capture's median dispatch latency — how long its device takes to
//!   start ready work, over at least 16 items — when that is more): the device was busy; the answer lists what ran on the
//!   device meanwhile;
//! * `host` — its issuing call came last: it was issued late, and the answer says what the thread did
//!   before (a gap with no calls, a sync it was blocked in, other calls);
//! * `unknown` — an edge into it is `missing` (its record is not in the capture): the first link that
//!   could not be established. `complete` is false whenever a link on the chain is missing.
//!
//! "Late" is against a stated baseline: for a kernel execution, the median launch-to-start latency of
//! its kernel name; for a step, the median step; for a call, the median duration of its API.
//!
//! In JSON each link also names its node (`{"call": i}`, `{"work": j}` or `{"absent": k}`), an
//! index into the process's calls, device work or absent records of `causeway export --format
//! graph`, which writes the whole graph for tools (the ambiguity benchmark scores it).

use super::graph::{Edge, EdgeKind, Evidence, Graph, Node};
use crate::analysis::steps::{process_steps, ProcessSteps, StepCause, StepOptions};
use crate::facts::model::{ProcessTimeline, Timeline};
use crate::facts::tokens::{Scope, Tokens};
use rayon::prelude::*;
use serde::Serialize;

/// A predecessor that ends this close before an item starts is what the item waited for; a longer
/// gap with every predecessor done is the device's (or, for a call, the host's) own time. For device
/// work the slack is at least `DISPATCH_SLACK_FACTOR` times the capture's median dispatch latency
/// (`dispatch_slack`).
pub const SLACK_NS: u64 = 20_000;
/// How many median dispatch latencies a ready item may wait before the device counts as busy.
const DISPATCH_SLACK_FACTOR: u64 = 3;
/// Work items a capture needs before its median dispatch latency is used.
const DISPATCH_SAMPLE_MIN: usize = 16;

/// The slack for device work in `g`: the larger of `SLACK_NS` and `DISPATCH_SLACK_FACTOR` times the
/// (lower) median ready-to-start gap of its work items (start minus the latest of the issuing
/// call's return and the predecessors' ends; items with a missing predecessor left out), once there
/// are `DISPATCH_SAMPLE_MIN` of them. A device, or a simulated one, that takes 40 µs to start any
/// ready work is not busy when it takes 40 µs here.
fn dispatch_slack(g: &Graph) -> u64 {
    let mut gaps: Vec<u64> = (0..g.p.device.len())
        .filter_map(|j| {
            let n = Node::work(j);
            let (start, _) = g.times(n)?;
            let mut ready = None;
            for e in g.preds(n).filter(|e| e.kind != EdgeKind::HostWait) {
                if e.evidence() == Evidence::Missing {
                    return None;
                }
                let r = match (e.kind, e.from()) {
                    (EdgeKind::Issue | EdgeKind::GraphNode, Node::Call(ci)) => {
                        let c = &g.p.calls[ci as usize];
                        c.end_ns.get().unwrap_or(c.begin_ns)
                    }
                    _ => released(g, e)?,
                };
                ready = ready.max(Some(r));
            }
            start.checked_sub(ready?)
        })
        .collect();
    // Too few items to say what the device's usual latency is.
    if gaps.len() < DISPATCH_SAMPLE_MIN {
        return SLACK_NS;
    }
    let mid = (gaps.len() - 1) / 2;
    let (_, median, _) = gaps.select_nth_unstable(mid);
    SLACK_NS.max(DISPATCH_SLACK_FACTOR.saturating_mul(*median))
}
/// How many links a chain follows at most.
const MAX_LINKS: usize = 32;

/// What to explain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A step by index (`None`: the slowest), of the named range or the steps view's choice.
    Step {
        index: Option<usize>,
        range: Option<String>,
    },
    /// The K-th execution (1-based, in start order) of a kernel; `None`: the latest against its
    /// baseline.
    Kernel { name: String, k: Option<usize> },
    /// A call by process id and sequence number.
    Call { pid: u32, seq: u64 },
}

impl Target {
    /// Parses `--kernel NAME[#K]`.
    pub fn kernel(spec: &str) -> Result<Target, String> {
        match spec.rsplit_once('#') {
            Some((name, k)) if !name.is_empty() && k.chars().all(|c| c.is_ascii_digit()) => {
                let k: usize = k.parse().map_err(|_| format!("--kernel {spec}: bad #K"))?;
                if k == 0 {
                    return Err(format!("--kernel {spec}: executions count from #1"));
                }
                Ok(Target::Kernel {
                    name: name.into(),
                    k: Some(k),
                })
            }
            _ => Ok(Target::Kernel {
                name: spec.into(),
                k: None,
            }),
        }
    }

    /// Parses `--call PID:SEQ`.
    pub fn call(spec: &str) -> Result<Target, String> {
        let (pid, seq) = spec
            .split_once(':')
            .ok_or_else(|| format!("--call {spec}: expected PID:SEQ (e.g. 4242:1234)"))?;
        Ok(Target::Call {
            pid: pid
                .parse()
                .map_err(|_| format!("--call {spec}: {pid:?} is not a process id"))?,
            seq: seq
                .parse()
                .map_err(|_| format!("--call {spec}: {seq:?} is not a sequence number"))?,
        })
    }
}

/// One link of the chain: the predecessor the item before it waited for.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Link {
    pub what: String,
    /// The predecessor's node in the graph (`export --format graph` indexes the same calls, device
    /// work and absent records): for tools that score or join chains.
    pub node: Node,
    pub edge: &'static str,
    pub evidence: &'static str,
    /// For inferred edges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
    /// The delay that entered at this link: from this predecessor's end (or, for an issue edge,
    /// the issuing call's begin) to the start of the item it leads to.
    pub delay_ns: i64,
}

/// When the late item went through each phase (host nanoseconds); what the capture does not have
/// is null.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Phases {
    /// The issuing call began.
    pub issue_ns: Option<u64>,
    /// Submitted to the device: CUPTI's submitted timestamp where it collected one, else when the
    /// issuing call returned (the work is submitted by then).
    pub submitted_ns: Option<u64>,
    /// Queued into a command buffer (CUPTI's queued timestamp), where collected.
    pub queued_ns: Option<u64>,
    pub start_ns: Option<u64>,
    pub end_ns: Option<u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Why {
    pub target: String,
    pub pid: u32,
    /// Against `baseline`; null when there is nothing to compare with.
    pub late_ns: Option<i64>,
    pub baseline: String,
    /// `host`, `dependency`, `device` or `unknown`.
    pub cause: &'static str,
    /// What the cause was, in words: the predecessor waited for, what ran on the device meanwhile,
    /// what the thread was doing, or which record is missing.
    pub detail: String,
    pub complete: bool,
    pub chain: Vec<Link>,
    pub phases: Phases,
    /// The work token the target's call belongs to, or the process when it has none: without work
    /// tokens, roots are process-scoped.
    pub scope: String,
    /// The target's call (thread, sequence number): for its scope.
    #[serde(skip)]
    pub anchor: Option<(u32, u64)>,
    /// What limits the answer (the device-timing backend's), if anything.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The events backend's caveat: its device intervals begin when the stream reached the work.
const EVENTS_NOTE: &str = "device times come from timing events: an interval begins when its stream \
     reached the work, not when the work began to execute, so time queued behind other streams' work \
     counts as the work's own and a busy device cannot be told from a long run (CUPTI's records can)";

/// Opens the capture at `path` and explains `target` in it.
pub fn from_path(path: &std::path::Path, target: &Target) -> Result<Why, crate::CaptureError> {
    let capture = crate::Capture::open(path)?;
    let rings = capture.rings()?;
    let t = Timeline::build(&rings);
    let tokens = TokenSource::of(&rings);
    tokens.read_all_and_release(&capture);
    let w = why_with(&t, &tokens, target);
    crate::util::drop::drop_later(t);
    w.map_err(|e| crate::CaptureError::new(path, e))
}

/// Explains `target` in the capture's timeline (no work tokens).
pub fn why(t: &Timeline, target: &Target) -> Result<Why, String> {
    why_with(t, &TokenSource::none(), target)
}

/// Explains `target`; `tokens` are the processes' work tokens, in the timeline's process order
/// (empty: none).
/// Each process's work tokens, read from its ring (the timeline's process order) only when a graph of
/// that process is built: an answer about one process decodes no other ring a second time.
pub struct TokenSource<'r> {
    rings: &'r [crate::read::capture::Ring<'r>],
    read: Vec<std::cell::OnceCell<Tokens>>,
}

impl<'r> TokenSource<'r> {
    pub fn of(rings: &'r [crate::read::capture::Ring<'r>]) -> TokenSource<'r> {
        TokenSource {
            rings,
            read: rings.iter().map(|_| std::cell::OnceCell::new()).collect(),
        }
    }

    /// No tokens: roots are process-scoped.
    pub fn none() -> TokenSource<'static> {
        TokenSource {
            rings: &[],
            read: Vec::new(),
        }
    }

    /// Decodes every process's tokens, then gives `capture`'s mapped pages back
    /// (`Capture::release_pages`): for a command that, from here on, reads the timeline and these
    /// tokens only.
    pub fn read_all_and_release(&self, capture: &crate::Capture) {
        (0..self.rings.len()).for_each(|k| {
            self.get(k);
        });
        capture.release_pages();
    }

    /// The tokens of the timeline's `k`-th process (decoded on first use); `None` without rings.
    pub fn get(&self, k: usize) -> Option<&Tokens> {
        let ring = self.rings.get(k)?;
        Some(self.read[k].get_or_init(|| crate::facts::tokens::of_ring(ring)))
    }
}

pub fn why_with(t: &Timeline, tokens: &TokenSource, target: &Target) -> Result<Why, String> {
    let mut w = explain(t, tokens, target)?;
    // The scope: the token the target's (issuing) call ran under.
    if let Some(p) = t.processes.iter().find(|p| p.pid == w.pid) {
        if let (Some(tk), Some((tid, seq))) = (tokens_for(t, tokens, p), w.anchor) {
            w.scope = tk.scope_at(tid, seq).label();
        }
    }
    Ok(w)
}

/// The work tokens of process `p` of `t`, if any were given.
fn tokens_for<'a>(
    t: &Timeline,
    tokens: &'a TokenSource,
    p: &ProcessTimeline,
) -> Option<&'a Tokens> {
    t.processes
        .iter()
        .position(|q| std::ptr::eq(q, p))
        .and_then(|k| tokens.get(k))
}

fn explain(t: &Timeline, tokens: &TokenSource, target: &Target) -> Result<Why, String> {
    let tokens_of = |p: &ProcessTimeline| tokens_for(t, tokens, p);
    match target {
        Target::Call { pid, seq } => {
            let p = t
                .processes
                .iter()
                .find(|p| p.pid == *pid && p.calls.binary_search_by_key(seq, |c| c.seq).is_ok())
                .ok_or_else(|| match t.processes.iter().any(|p| p.pid == *pid) {
                    true => format!("no call with sequence number {seq} in process {pid}"),
                    false => {
                        let mut pids: Vec<u32> = t.processes.iter().map(|p| p.pid).collect();
                        pids.sort_unstable();
                        pids.dedup();
                        let some: Vec<String> = pids.iter().take(8).map(u32::to_string).collect();
                        let more = if pids.len() > 8 { ", …" } else { "" };
                        format!(
                            "no process {pid} in the capture (its pids: {}{more})",
                            some.join(", ")
                        )
                    }
                })?;
            let g = Graph::build_with(p, tokens_of(p));
            let i = g.call_of_seq(*seq).expect("found above");
            Ok(explain_call(&g, i))
        }
        Target::Kernel { name, k } => {
            let mut found = None;
            for p in &t.processes {
                let runs = executions(p, name);
                if !runs.is_empty() {
                    found = Some((p, runs));
                    break;
                }
            }
            let (p, runs) = found.ok_or_else(|| {
                format!(
                    "no device execution of a kernel named {name:?} (level 3 captures have them)"
                )
            })?;
            let g = Graph::build_with(p, tokens_of(p));
            let base = latency_baseline(&g, &runs);
            let j = match k {
                Some(k) => *runs.get(k - 1).ok_or_else(|| {
                    format!(
                        "kernel {name:?} ran {} times; #{k} does not exist",
                        runs.len()
                    )
                })?,
                None => *runs
                    .iter()
                    .max_by_key(|&&j| latency(&g, j).map_or(i64::MIN, |l| l as i64))
                    .expect("non-empty"),
            };
            let mut w = explain_work(&g, j);
            let nth = runs.iter().position(|&r| r == j).unwrap() + 1;
            w.target = format!("kernel {}#{nth}", p.device[j].name);
            if let (Some(l), Some(b)) = (latency(&g, j), base) {
                w.late_ns = Some(l as i64 - b as i64);
            }
            w.baseline = match base {
                Some(b) => format!(
                    "median launch-to-start latency of its {} executions: {b} ns",
                    runs.len()
                ),
                None => "no launch-to-start latency (executions not tied to calls)".into(),
            };
            Ok(w)
        }
        Target::Step { index, range } => explain_step(t, tokens, *index, range.clone()),
    }
}

/// The executions (device interval indices, in start order) of kernel `name`: its shown name, its
/// symbol, or the shown name without its parameter list (`scale` for `scale(float*, int)`).
fn executions(p: &ProcessTimeline, name: &str) -> Vec<usize> {
    let bare = |shown: &str| {
        let head = shown.split('(').next().unwrap_or(shown).trim();
        head.strip_prefix("void ").unwrap_or(head).to_string()
    };
    let mut v: Vec<usize> = p
        .device
        .iter()
        .enumerate()
        .filter(|(_, d)| {
            d.kind == causeway_ring::layout::DeviceKind::Kernel
                && (d.name == name || p.symbol_of(&d.name) == name || bare(&d.name) == name)
        })
        .map(|(j, _)| j)
        .collect();
    v.sort_by_key(|&j| (p.device[j].begin_ns, j));
    v
}

/// Launch-to-start latency of a device interval: its start minus its issuing call's begin.
fn latency(g: &Graph, j: usize) -> Option<u64> {
    let d = &g.p.device[j];
    let i = g.call_of_seq(d.call.get()?)?;
    Some(d.begin_ns.saturating_sub(g.p.calls[i].begin_ns))
}

/// The nearest-rank median, as the steps view states its medians.
fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    crate::util::rank::nearest_rank(&v, 50)
}

/// Whether a call is a host wait by the steps view's rule (`steps::SYNC_CLASSES`).
fn is_sync(c: &crate::facts::model::Call) -> bool {
    c.class
        .is_some_and(|k| crate::analysis::steps::SYNC_CLASSES.contains(&k))
}

fn latency_baseline(g: &Graph, runs: &[usize]) -> Option<u64> {
    median(runs.iter().filter_map(|&j| latency(g, j)).collect())
}

/// When a predecessor let its successor go: its end, or for an issue edge the call's begin (work
/// cannot start before it is issued). `None` for an absent record.
fn released(g: &Graph, e: &Edge) -> Option<u64> {
    let (b, end) = g.times(e.from())?;
    Some(match e.kind {
        EdgeKind::Issue | EdgeKind::GraphNode => b,
        _ => end,
    })
}

fn link(g: &Graph, e: &Edge, start: u64) -> Link {
    let delay = released(g, e).map_or(0, |r| start as i64 - r as i64);
    Link {
        what: g.describe(e.from()),
        node: e.from(),
        edge: e.kind.name(),
        evidence: e.evidence().name(),
        confidence: match e.evidence() {
            Evidence::Inferred { confidence } => Some(confidence),
            _ => None,
        },
        delay_ns: delay,
    }
}

/// The predecessor `n` waited for last among the given edges: the latest release time, explicit
/// and observed edges before inferred ones (never promoted: an inferred edge is critical only when no
/// proven one is).
fn critical<'g>(g: &'g Graph, edges: &[&'g Edge]) -> Option<&'g Edge> {
    let proven = edges
        .iter()
        .filter(|e| matches!(e.evidence(), Evidence::Explicit | Evidence::Observed))
        .max_by_key(|e| released(g, e));
    proven
        .or_else(|| {
            edges
                .iter()
                .filter(|e| matches!(e.evidence(), Evidence::Inferred { .. }))
                .max_by_key(|e| released(g, e))
        })
        .copied()
}

/// What ran on the device between `lo` and `hi` apart from `not`: names and busy time, the
/// longest first.
fn device_busy(g: &Graph, lo: u64, hi: u64, not: usize) -> String {
    let mut by: Vec<(String, u64)> = Vec::new();
    for (j, d) in g.p.device.iter().enumerate() {
        if j == not || d.end_ns <= lo || d.begin_ns >= hi {
            continue;
        }
        let ns = d.end_ns.min(hi) - d.begin_ns.max(lo);
        let what = format!("{} {}", d.kind.name(), d.name);
        match by.iter_mut().find(|(w, _)| *w == what) {
            Some((_, t)) => *t += ns,
            None => by.push((what, ns)),
        }
    }
    if by.is_empty() {
        return "nothing the capture saw (another process, or untimed work)".into();
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    by.iter()
        .take(3)
        .map(|(w, ns)| format!("{w} ({ns} ns)"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a thread did before call `i` began: a gap with no calls, a sync it was blocked in, or other
/// calls; and the program-order edge, if any.
fn before_call<'g>(g: &'g Graph, i: usize) -> (String, Option<&'g Edge>) {
    let c = &g.p.calls[i];
    // A handoff the thread took over after its previous call: the work arrived from another thread.
    let handoff = g.preds(Node::call(i)).find(|e| e.kind == EdgeKind::Handoff);
    let prev = g
        .preds(Node::call(i))
        .find(|e| e.kind == EdgeKind::ProgramOrder);
    if let Some(h) = handoff {
        let h_end = g.times(h.from()).map_or(0, |t| t.1);
        let p_end = prev.and_then(|e| g.times(e.from())).map_or(0, |t| t.1);
        if h_end >= p_end {
            let Node::Call(hi) = h.from() else {
                unreachable!()
            };
            let hc = &g.p.calls[hi as usize];
            return (
                format!(
                    "its work was handed over from thread {} (after {} seq {}) {} ns before it \
                     (a work-token handoff the program declared)",
                    hc.tid,
                    hc.api,
                    hc.seq,
                    c.begin_ns.saturating_sub(h_end)
                ),
                Some(h),
            );
        }
    }
    let Some(e) = prev else {
        return (
            format!("it is the first call of thread {} in the capture", c.tid),
            None,
        );
    };
    let Node::Call(pi) = e.from() else {
        unreachable!()
    };
    let pc = &g.p.calls[pi as usize];
    let pend = pc.end_ns.get().unwrap_or(pc.begin_ns);
    let gap = c.begin_ns.saturating_sub(pend);
    let is_sync = is_sync(pc);
    let text = if gap > SLACK_NS || !is_sync {
        format!(
            "thread {} made no call for {gap} ns before it, after {} (seq {}) returned: host \
             work, a sleep or descheduling",
            c.tid, pc.api, pc.seq
        )
    } else {
        format!(
            "thread {} was blocked in {} (seq {}) for {} ns just before it",
            c.tid,
            pc.api,
            pc.seq,
            pend.saturating_sub(pc.begin_ns)
        )
    };
    (text, Some(e))
}

fn phases_of_work(g: &Graph, j: usize) -> Phases {
    let d = &g.p.device[j];
    let call = d
        .call
        .get()
        .and_then(|s| g.call_of_seq(s))
        .map(|i| &g.p.calls[i]);
    Phases {
        issue_ns: call.map(|c| c.begin_ns),
        submitted_ns: d.submitted_ns.get().or(call.and_then(|c| c.end_ns.get())),
        queued_ns: d.queued_ns.get(),
        start_ns: Some(d.begin_ns),
        end_ns: Some(d.end_ns),
    }
}

fn new_why(g: &Graph, target: String) -> Why {
    Why {
        target,
        pid: g.p.pid,
        late_ns: None,
        baseline: String::new(),
        cause: "unknown",
        detail: String::new(),
        complete: true,
        chain: Vec::new(),
        phases: Phases::default(),
        scope: Scope::Process.label(),
        anchor: None,
        notes: if g.p.backend == "events" {
            vec![EVENTS_NOTE.to_string()]
        } else {
            Vec::new()
        },
    }
}

/// Why device interval `j` started when it did.
fn explain_work(g: &Graph, j: usize) -> Why {
    let mut w = new_why(g, g.describe(Node::work(j)));
    w.phases = phases_of_work(g, j);
    w.anchor = g.p.device[j]
        .call
        .get()
        .and_then(|s| g.call_of_seq(s))
        .map(|i| (g.p.calls[i].tid, g.p.calls[i].seq));
    let (cause, detail) = follow(g, Node::work(j), &mut w.chain, dispatch_slack(g));
    w.cause = cause;
    w.detail = detail;
    w.complete = !w.chain.iter().any(|l| l.evidence == "missing");
    w
}

/// Follows the critical chain back from `n`, appending links; returns the cause at `n`.
/// `slack`: `dispatch_slack(g)`.
fn follow(g: &Graph, mut n: Node, chain: &mut Vec<Link>, slack: u64) -> (&'static str, String) {
    let mut first: Option<(&'static str, String)> = None;
    let mut seen: Vec<Node> = Vec::with_capacity(MAX_LINKS);
    for _ in 0..MAX_LINKS {
        // Dependencies that lead back to an item already on the chain (a damaged ring's graph
        // edges in a cycle; a CUDA graph has none) explain nothing further: the chain ends there,
        // incomplete, saying so.
        if seen.contains(&n) {
            chain.push(Link {
                what: format!("a cycle back to {}", g.describe(n)),
                node: n,
                edge: "cycle",
                evidence: Evidence::Missing.name(),
                confidence: None,
                delay_ns: 0,
            });
            first.get_or_insert((
                "unknown",
                format!(
                    "its recorded dependencies form a cycle back to {} (a damaged capture)",
                    g.describe(n)
                ),
            ));
            break;
        }
        seen.push(n);
        let (start, _) = match g.times(n) {
            Some(t) => t,
            None => break,
        };
        let edges: Vec<&Edge> = g
            .preds(n)
            .filter(|e| e.kind != EdgeKind::HostWait)
            .collect();
        // For a call, its own program-order predecessor is the host's part: handled by `host`.
        let missing = edges.iter().find(|e| e.evidence() == Evidence::Missing);
        if let Some(m) = missing {
            chain.push(link(g, m, start));
            let why = (
                "unknown",
                format!(
                    "a record it depends on is missing: {}",
                    g.describe(m.from())
                ),
            );
            first.get_or_insert(why);
            break;
        }
        let Some(e) = critical(g, &edges) else {
            break;
        };
        chain.push(link(g, e, start));
        let released = released(g, e).unwrap_or(start);
        let gap = start.saturating_sub(released);
        match (n, e.kind) {
            (Node::Work(j), EdgeKind::Issue | EdgeKind::GraphNode) => {
                let Node::Call(ci) = e.from() else { break };
                let c = &g.p.calls[ci as usize];
                let submitted = c.end_ns.get().unwrap_or(c.begin_ns);
                if start > submitted + slack {
                    // Submitted, nothing it waits for still running, and not started.
                    let gap = start - submitted;
                    let busy = device_busy(g, submitted, start, j as usize);
                    first.get_or_insert((
                        "device",
                        format!("submitted {gap} ns before it started, with nothing it waits for still running: the device was busy with {busy}"),
                    ));
                    break;
                }
                // Issued last. The host's part: time inside the issuing call before the work
                // started, and before the call, what the thread did (the larger is said first).
                let in_call = start.min(submitted).saturating_sub(c.begin_ns);
                let (text, prev) = before_call(g, ci as usize);
                let before = prev
                    .and_then(|p| g.times(p.from()))
                    .map_or(0, |(_, end)| c.begin_ns.saturating_sub(end));
                let inside = format!(
                    "the issuing call {} (seq {}) spent {in_call} ns before the work started (time \
                     inside the runtime or driver: a first use loads modules or compiles, or the \
                     call contended)",
                    c.api, c.seq
                );
                let detail = if in_call > SLACK_NS && in_call >= before {
                    format!("{inside}; before it, {text}")
                } else if in_call > SLACK_NS {
                    format!("issued late: {text}; then {inside}")
                } else {
                    format!("issued late: {text}")
                };
                first.get_or_insert(("host", detail));
                let Some(prev) = prev else { break };
                let Node::Call(pi) = prev.from() else { break };
                let pc = &g.p.calls[pi as usize];
                chain.push(link(g, prev, c.begin_ns));
                if is_sync(pc) {
                    // Blocked in a sync: what did it wait for?
                    match why_sync_ended(g, pi as usize, chain) {
                        Some(next) => n = next,
                        None => break,
                    }
                } else {
                    break;
                }
            }
            (Node::Work(j), _) => {
                if gap > slack {
                    let busy = device_busy(g, released, start, j as usize);
                    first.get_or_insert((
                        "device",
                        format!(
                            "ready {gap} ns before it started ({} done): the device was busy with {busy}",
                            g.describe(e.from())
                        ),
                    ));
                    break;
                }
                first.get_or_insert((
                    "dependency",
                    format!("waited for {} ({})", g.describe(e.from()), e.kind.name()),
                ));
                n = e.from();
            }
            (Node::Call(ci), _) => {
                let (text, _) = before_call(g, ci as usize);
                first.get_or_insert(("host", text));
                break;
            }
            (Node::Absent(_), _) => break,
        }
    }
    first.unwrap_or((
        "unknown",
        "no predecessor in the capture explains it".into(),
    ))
}

/// The device work a sync call `i` waited for last, after appending its host-wait link; `None`
/// when it waited for nothing the capture saw.
fn why_sync_ended(g: &Graph, i: usize, chain: &mut Vec<Link>) -> Option<Node> {
    let waits: Vec<&Edge> = g
        .preds(Node::call(i))
        .filter(|e| e.kind == EdgeKind::HostWait)
        .collect();
    let end = g.p.calls[i].end_ns.get()?;
    if let Some(m) = waits.iter().find(|e| e.evidence() == Evidence::Missing) {
        chain.push(link(g, m, end));
        return None;
    }
    let e = critical(g, &waits)?;
    chain.push(link(g, e, end));
    Some(e.from())
}

/// Why call `i` took as long as it did (a sync: what it waited for) or began when it did.
fn explain_call(g: &Graph, i: usize) -> Why {
    let c = &g.p.calls[i];
    let mut w = new_why(g, g.describe(Node::call(i)));
    w.anchor = Some((c.tid, c.seq));
    w.phases = Phases {
        issue_ns: Some(c.begin_ns),
        submitted_ns: c.end_ns.get(),
        ..Phases::default()
    };
    let same: Vec<u64> =
        g.p.calls
            .iter()
            .filter(|o| o.api == c.api)
            .filter_map(|o| Some(o.end_ns.get()?.saturating_sub(o.begin_ns)))
            .collect();
    let n = same.len();
    if let (Some(b), Some(end)) = (median(same), c.end_ns.get()) {
        w.late_ns = Some(end.saturating_sub(c.begin_ns) as i64 - b as i64);
        w.baseline = format!("median duration of its API's {n} calls: {b} ns");
    }
    if is_sync(c) {
        match why_sync_ended(g, i, &mut w.chain) {
            Some(next @ Node::Work(j)) => {
                let d = &g.p.device[j as usize];
                let ran = d.end_ns.saturating_sub(d.begin_ns);
                let (cause, detail) = follow(g, next, &mut w.chain, dispatch_slack(g));
                w.cause = if cause == "unknown" {
                    cause
                } else {
                    "dependency"
                };
                w.detail = format!(
                    "it waited for {} (which ran {ran} ns); that work started when it did: {cause}: {detail}",
                    g.describe(next)
                );
            }
            Some(next) => {
                // Work without a device interval (level 2, or untimed): when it ran is not known.
                w.cause = "dependency";
                w.detail = format!(
                    "it waited for the work of {}, whose device time the capture does not have (no \
                     device interval: level 2, or untimed)",
                    g.describe(next)
                );
            }
            None => {
                w.cause = if w.chain.iter().any(|l| l.evidence == "missing") {
                    "unknown"
                } else {
                    "host"
                };
                w.detail = if w.cause == "unknown" {
                    "the work it waited for is not in the capture".into()
                } else {
                    "it waited for no device work the capture saw: its time is the host's".into()
                };
            }
        }
    } else {
        let (text, prev) = before_call(g, i);
        if let Some(prev) = prev {
            w.chain.push(link(g, prev, c.begin_ns));
        }
        w.cause = "host";
        w.detail = text;
    }
    w.complete = !w.chain.iter().any(|l| l.evidence == "missing");
    w
}

/// Why a step took as long as it did: the work its end waited for.
fn explain_step(
    t: &Timeline,
    tokens: &TokenSource,
    index: Option<usize>,
    range: Option<String>,
) -> Result<Why, String> {
    let o = StepOptions {
        range: range.clone(),
        ..StepOptions::default()
    };
    // Every process's steps, side by side; the process with the most is chosen as before.
    let all: Vec<(&ProcessTimeline, ProcessSteps)> = (t.processes.par_iter())
        .map(|p| (p, process_steps(p, &o)))
        .collect();
    let (p, steps) = all
        .into_iter()
        .filter(|(_, s)| !s.steps.is_empty())
        .max_by_key(|(_, s)| s.steps.len())
        .ok_or_else(|| match &range {
            Some(r) => format!("no step ranges named {r:?} in the capture"),
            None => "no steps in the capture (steps are repeated NVTX ranges; see `causeway report --steps`)".into(),
        })?;
    let idx = match index {
        Some(i) => i,
        None => steps.slowest.first().copied().unwrap_or(0),
    };
    if !steps.steps.iter().any(|s| s.index == idx) {
        return Err(format!(
            "no step {idx}: the capture has steps 0 to {}",
            steps.steps.len() - 1
        ));
    }
    let g = Graph::build_with(p, tokens_for(t, tokens, p));
    Ok(explain_one_step(&g, &steps, idx))
}

/// The brief cause of each of a process's slowest steps (the steps view shows them).
pub fn step_causes(p: &ProcessTimeline, steps: &ProcessSteps) -> Vec<StepCause> {
    if steps.slowest.is_empty() {
        return Vec::new();
    }
    let g = Graph::build(p);
    steps
        .slowest
        .iter()
        .map(|&i| {
            let idx = steps.steps[i].index;
            let w = explain_one_step(&g, steps, idx);
            StepCause {
                index: idx,
                cause: w.cause,
                detail: w.detail,
                complete: w.complete,
            }
        })
        .collect()
}

/// Why step `idx` of `steps` (a process's steps view) took as long as it did.
fn explain_one_step(g: &Graph, steps: &ProcessSteps, idx: usize) -> Why {
    let s = steps
        .steps
        .iter()
        .find(|s| s.index == idx)
        .expect("the caller checked the index");
    let name = steps.selection.as_ref().map_or("step", |s| s.name.as_str());
    let mut w = new_why(g, format!("step {idx} ({name}, thread {})", s.tid));
    let walls: Vec<u64> = steps.steps.iter().map(|s| s.wall_ns).collect();
    if let Some(b) = median(walls) {
        w.late_ns = Some(s.wall_ns as i64 - b as i64);
        w.baseline = format!("median of the {} steps: {b} ns", steps.steps.len());
    }
    w.phases = Phases {
        issue_ns: Some(s.begin_ns),
        start_ns: Some(s.begin_ns),
        end_ns: Some(s.end_ns),
        ..Phases::default()
    };
    // Where the step's extra time went, against the median step: waiting in syncs, or the host's
    // own time (launch calls, and the rest: gaps between calls).
    let med = |f: fn(&crate::analysis::steps::Step) -> u64| {
        median(steps.steps.iter().map(f).collect()).unwrap_or(0) as i64
    };
    let d_sync = s.sync_ns as i64 - med(|s| s.sync_ns);
    let d_launch = s.launch_ns as i64 - med(|s| s.launch_ns);
    let d_other = s.other_ns as i64 - med(|s| s.other_ns);
    let in_step = |c: &&crate::facts::model::Call| {
        c.tid == s.tid && c.depth == 0 && c.begin_ns >= s.begin_ns && c.begin_ns <= s.end_ns
    };
    let calls: Vec<usize> =
        g.p.calls
            .iter()
            .enumerate()
            .filter(|(_, c)| in_step(c))
            .map(|(i, _)| i)
            .collect();
    if calls.is_empty() {
        w.cause = "host";
        w.detail = "no CUDA call in the step: its time is the host's own".into();
        return w;
    }
    let sync_calls: Vec<usize> = calls
        .iter()
        .copied()
        .filter(|&i| is_sync(&g.p.calls[i]))
        .collect();
    let dur = |i: usize| {
        let c = &g.p.calls[i];
        c.end_ns
            .get()
            .unwrap_or(c.begin_ns)
            .saturating_sub(c.begin_ns)
    };
    let split = format!(
        "against the median step: syncs {}{} ns, launch calls {}{} ns, other host time {}{} ns",
        if d_sync >= 0 { "+" } else { "" },
        d_sync,
        if d_launch >= 0 { "+" } else { "" },
        d_launch,
        if d_other >= 0 { "+" } else { "" },
        d_other
    );
    if d_sync >= d_launch.max(d_other) && !sync_calls.is_empty() {
        // Its syncs grew the most: the longest one, and the work it waited for.
        let i = *sync_calls.iter().max_by_key(|&&i| dur(i)).unwrap();
        let inner = explain_call(g, i);
        w.chain = inner.chain;
        w.complete = inner.complete;
        w.cause = inner.cause;
        w.detail = format!(
            "{split}; its longest wait, {} (seq {}, {} ns): {}",
            g.p.calls[i].api,
            g.p.calls[i].seq,
            dur(i),
            inner.detail
        );
    } else {
        // The host's own time grew: the longest stretch without a call.
        let (gap, i) = calls
            .iter()
            .map(|&i| {
                let c = &g.p.calls[i];
                let prev_end = g
                    .preds(Node::call(i))
                    .find(|e| e.kind == EdgeKind::ProgramOrder)
                    .and_then(|e| g.times(e.from()))
                    .map_or(s.begin_ns, |(_, e)| e.max(s.begin_ns));
                (c.begin_ns.saturating_sub(prev_end), i)
            })
            .max()
            .unwrap();
        let (text, prev) = before_call(g, i);
        if let Some(prev) = prev {
            w.chain.push(link(g, prev, g.p.calls[i].begin_ns));
        }
        w.cause = "host";
        w.detail = format!(
            "{split}; the longest stretch without a call ({gap} ns) ends at {} (seq {}): {text}",
            g.p.calls[i].api, g.p.calls[i].seq
        );
    }
    w
}
