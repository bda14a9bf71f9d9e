//! `causeway export --format graph`: the causal graph as one JSON document, for tools and
//! benchmarks that score it (control-experiments/ambiguity): each process's calls, NVTX ranges and
//! device work as the timeline model has them, the records the capture lacks, and every typed edge
//! with its evidence class. An edge's ends index the process's `calls`, `device` or `absent`.

use super::{Summary, TokenSource};
use crate::analysis::causal::graph::{Edge, Graph, Node};
use crate::facts::model::{Call, DeviceSpan, Range, Timeline};
use serde::Serialize;
use std::io::{self, Write};

#[derive(Serialize)]
struct Doc<'a> {
    format: &'static str,
    capture: &'a str,
    processes: Vec<Proc<'a>>,
}

#[derive(Serialize)]
struct Proc<'a> {
    ring: &'a str,
    pid: u32,
    exe: &'a str,
    /// What the ring lost: entries dropped, overwritten, torn.
    lost: Lost,
    calls: &'a [Call],
    ranges: &'a [Range],
    device: &'a [DeviceSpan],
    absent: Vec<String>,
    edges: Vec<Edge>,
}

#[derive(Serialize)]
struct Lost {
    dropped: u64,
    overwritten: u64,
    torn: u64,
}

/// Writes the graph document of `t` to `w`.
pub fn write(
    t: &Timeline,
    tokens: &TokenSource,
    capture: &str,
    w: &mut impl Write,
) -> io::Result<Summary> {
    let mut s = Summary::default();
    let processes = (t.processes.iter().enumerate())
        .map(|(k, p)| {
            let g = Graph::build_with(p, tokens.get(k));
            let real = |n: Node| !matches!(n, Node::Absent(_));
            s.dependency_flows += (g.edges.iter())
                .filter(|e| e.kind.crosses_tracks() && real(e.from()) && real(e.to()))
                .count();
            let empty = p.calls.is_empty()
                && p.ranges.is_empty()
                && p.marks.is_empty()
                && p.device.is_empty();
            if empty {
                s.empty_processes += 1;
            } else {
                s.processes += 1;
            }
            s.calls += p.calls.len();
            s.ranges += p.ranges.len();
            s.marks += p.marks.len();
            s.device_spans += p.device.len();
            s.unplaced_device += p.unplaced_device;
            Proc {
                ring: &p.ring,
                pid: p.pid,
                exe: &p.exe,
                lost: Lost {
                    dropped: p.loss.dropped,
                    overwritten: p.loss.overwritten,
                    torn: p.loss.torn,
                },
                calls: &p.calls,
                ranges: &p.ranges,
                device: &p.device,
                absent: g.absent,
                edges: g.edges,
            }
        })
        .collect();
    let doc = Doc {
        format: "causeway-graph 1",
        capture,
        processes,
    };
    serde_json::to_writer(&mut *w, &doc).map_err(io::Error::other)?;
    w.write_all(b"\n")?;
    Ok(s)
}
