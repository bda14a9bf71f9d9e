//! Work tokens: which unit of the program's own work each thread was doing when, and where that
//! work moved between threads. A program says so through the shim's token ABI (`include/causeway.h`:
//! `Kind::TokenBegin` … `Kind::TokenAccept` entries) or through NVTX alone (ranges and marks in the
//! domain `causeway.token` whose payload is the token); `docs/format.md`, "Work tokens", has both
//! forms. Per process this gives each thread's token spans (begin or accept to end, or still open)
//! and the handoffs, each paired with the accept that took the token over: an observed edge between
//! two threads. A call belongs to the innermost span open on its thread ([`Tokens::token_of`],
//! [`Tokens::token_at`]); without one its work is scoped to the process ([`Scope::Process`]).

use crate::read::decode::Decoded;
use crate::read::names::Names;
use crate::util::fastmap::HashMap;
use causeway_ring::layout::{nvtx_payload, TOKEN_DOMAIN};
use causeway_ring::{Entry, Header, Kind};
use serde::Serialize;

/// A work token: 128 bits and a generation, all chosen by the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct TokenId {
    pub hi: u64,
    pub lo: u64,
    pub generation: u32,
}

impl std::fmt::Display for TokenId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:x}:{:x}/{}", self.hi, self.lo, self.generation)
    }
}

/// How a span was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Opened {
    /// `causeway_token_begin`.
    Begin,
    /// `causeway_token_accept`: the token was taken over from another thread.
    Accept,
    /// An NVTX range in the token domain.
    Nvtx,
}

/// One stretch of a token on one thread: begin (or accept, or NVTX range) to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    pub token: TokenId,
    pub tid: u32,
    pub opened: Opened,
    pub begin_ns: u64,
    /// Sequence number of the opening entry: a call on the same thread with a larger sequence number
    /// began after it (exact, where times may tie).
    pub begin_seq: u64,
    /// `None`: never ended in the capture (open).
    pub end_ns: Option<u64>,
    pub end_seq: Option<u64>,
}

impl Span {
    fn covers_seq(&self, seq: u64) -> bool {
        self.begin_seq < seq && self.end_seq.is_none_or(|e| seq < e)
    }

    fn covers_ns(&self, ns: u64) -> bool {
        self.begin_ns <= ns && self.end_ns.is_none_or(|e| ns < e)
    }
}

/// Where and when a thread took over a handed-off token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Accepted {
    pub tid: u32,
    pub ns: u64,
    pub seq: u64,
}

/// A token handed from one thread to another thread or a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Handoff {
    pub token: TokenId,
    pub from_tid: u32,
    pub ns: u64,
    pub seq: u64,
    /// What the program named as the receiver: a thread id or a queue id; 0 = not said.
    pub to: u64,
    /// The accept it was paired with; `None`: nobody took the token over in the capture.
    pub accepted: Option<Accepted>,
}

/// Which work a call belongs to: a token, or (without one) the whole process. Graph roots are
/// labelled by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Token(TokenId),
    Process,
}

impl Scope {
    pub fn label(&self) -> String {
        match self {
            Scope::Token(t) => format!("token {t}"),
            Scope::Process => "process (no work token)".to_string(),
        }
    }
}

/// A process's token facts.
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    /// Every span, in the order they opened.
    pub spans: Vec<Span>,
    /// Every handoff, in sequence order.
    pub handoffs: Vec<Handoff>,
    /// Ends (and NVTX pops or range ends) that closed no open span of their token on their thread.
    pub unmatched_ends: u64,
    /// Accepts that no earlier handoff of their token was waiting for (they still open a span).
    pub unmatched_accepts: u64,
    /// NVTX ranges and marks in the token domain without an integer payload: no token to read.
    pub nvtx_without_token: u64,
    /// Per thread, indices into `spans` in opening order.
    by_tid: HashMap<u32, Vec<u32>>,
}

/// What `report --json` shows per process when it has tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Distinct tokens (id and generation).
    pub tokens: u64,
    pub spans: u64,
    /// Spans never ended in the capture.
    pub open_spans: u64,
    pub handoffs: u64,
    /// Handoffs paired with an accept.
    pub accepted: u64,
    pub unmatched_ends: u64,
    pub unmatched_accepts: u64,
    pub nvtx_without_token: u64,
}

impl Tokens {
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
            && self.handoffs.is_empty()
            && self.unmatched_ends == 0
            && self.nvtx_without_token == 0
    }

    /// The innermost span open on thread `tid` at host time `ns`.
    pub fn span_of(&self, tid: u32, ns: u64) -> Option<&Span> {
        self.innermost(tid, |s| s.covers_ns(ns))
    }

    /// The token a call on thread `tid` at host time `ns` belongs to.
    pub fn token_of(&self, tid: u32, ns: u64) -> Option<TokenId> {
        self.span_of(tid, ns).map(|s| s.token)
    }

    /// The token of the entry with sequence number `seq` on thread `tid` (exact: one thread's
    /// entries are numbered in the order it wrote them).
    pub fn token_at(&self, tid: u32, seq: u64) -> Option<TokenId> {
        self.innermost(tid, |s| s.covers_seq(seq)).map(|s| s.token)
    }

    /// `token_at` as a scope: the whole process where no token is open.
    pub fn scope_at(&self, tid: u32, seq: u64) -> Scope {
        self.token_at(tid, seq).map_or(Scope::Process, Scope::Token)
    }

    /// The latest-opened span of `tid` that `covers` says holds: spans of a thread nest, so the
    /// latest one open at a point is the innermost.
    fn innermost(&self, tid: u32, covers: impl Fn(&Span) -> bool) -> Option<&Span> {
        let ids = self.by_tid.get(&tid)?;
        ids.iter()
            .rev()
            .map(|&i| &self.spans[i as usize])
            .find(|s| covers(s))
    }

    pub fn summary(&self) -> Summary {
        let mut ids: Vec<TokenId> = self.spans.iter().map(|s| s.token).collect();
        ids.extend(self.handoffs.iter().map(|h| h.token));
        ids.sort_unstable();
        ids.dedup();
        Summary {
            tokens: ids.len() as u64,
            spans: self.spans.len() as u64,
            open_spans: self.spans.iter().filter(|s| s.end_seq.is_none()).count() as u64,
            handoffs: self.handoffs.len() as u64,
            accepted: self
                .handoffs
                .iter()
                .filter(|h| h.accepted.is_some())
                .count() as u64,
            unmatched_ends: self.unmatched_ends,
            unmatched_accepts: self.unmatched_accepts,
            nvtx_without_token: self.nvtx_without_token,
        }
    }
}

/// What a mark in the token domain says, from its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// `handoff` (to = 0) or `handoff <to>`.
    Handoff(u64),
    Accept,
}

impl Verb {
    /// `handoff`, `handoff <to>` (decimal) or `accept`; anything else is no verb.
    pub fn parse(message: &str) -> Option<Verb> {
        let m = message.trim();
        if m == "accept" {
            return Some(Verb::Accept);
        }
        let rest = m.strip_prefix("handoff")?;
        if rest.is_empty() {
            return Some(Verb::Handoff(0));
        }
        let to = rest.strip_prefix(' ')?.trim().parse().ok()?;
        Some(Verb::Handoff(to))
    }
}

/// How to read a ring's NVTX entries for tokens.
pub struct Nvtx<'a> {
    /// Whether an NVTX domain id (an entry's a1) is `causeway.token`.
    pub is_token_domain: &'a dyn Fn(u64) -> bool,
    /// What a mark's message (text id, a0) says.
    pub verb: &'a dyn Fn(u64) -> Option<Verb>,
}

/// The tokens of one decoded ring: one walk over the non-calls, keeping only the entries tokens are
/// made of (a capture of millions of NVTX ranges outside the token domain copies none of them).
pub(crate) fn tokens(h: &Header, d: &Decoded, names: &Names) -> Tokens {
    let domains = names.text_ids(TOKEN_DOMAIN);
    // The token domain's marks and ranges, and the start ranges' ids: their attributes follow them
    // and their ends may not name the domain (`nvtxRangeEnd`).
    let mut owners: HashMap<u64, ()> = HashMap::default();
    let mut ranges: HashMap<u64, ()> = HashMap::default();
    let mut wanted = Vec::new();
    for (_, e) in d.rest_behind() {
        let keep = match e.kind {
            Some(Kind::TokenBegin | Kind::TokenEnd | Kind::TokenHandoff | Kind::TokenAccept) => {
                true
            }
            _ if domains.is_empty() => false,
            Some(Kind::NvtxAttributes) => owners.contains_key(&e.a0),
            Some(Kind::RangeEnd) => ranges.contains_key(&e.a2) || domains.contains(&e.a1),
            Some(Kind::RangePush | Kind::RangePop | Kind::RangeStart | Kind::Mark)
                if domains.contains(&e.a1) =>
            {
                owners.insert(e.seq, ());
                if e.kind == Some(Kind::RangeStart) {
                    ranges.insert(e.a2, ());
                }
                true
            }
            _ => false,
        };
        if keep {
            wanted.push(e);
        }
    }
    let is_token_domain = |id: u64| domains.contains(&id);
    let verb = |id: u64| Verb::parse(&names.text(id));
    let nvtx = Nvtx {
        is_token_domain: &is_token_domain,
        verb: &verb,
    };
    from_entries(&wanted, &nvtx, |t| h.ticks_to_ns(t))
}

/// The tokens of one ring of a capture (its pages given back as they are read: a command reads
/// the tokens beside a model it holds).
pub fn of_ring(ring: &crate::read::capture::Ring) -> Tokens {
    let names = Names::of(ring);
    ring.analysed_releasing(|d| tokens(&ring.view.header, d, &names))
}

/// The token an NVTX attributes entry carries: an integer payload is the low 64 bits, the
/// category the generation.
fn nvtx_token(x: Option<&Entry>) -> Option<TokenId> {
    let x = x?;
    let lo = match x.result {
        nvtx_payload::U64 | nvtx_payload::I64 => x.a1,
        nvtx_payload::U32 | nvtx_payload::I32 => x.a1 & 0xffff_ffff,
        _ => return None,
    };
    Some(TokenId {
        hi: 0,
        lo,
        generation: x.a2 as u32,
    })
}

/// The tokens of a process from its entries in sequence order (token entries, and NVTX entries of
/// the token domain with their attributes; other entries are ignored), `ns` converting ticks.
pub fn from_entries(entries: &[Entry], nvtx: &Nvtx, ns: impl Fn(u64) -> u64) -> Tokens {
    let attrs: HashMap<u64, &Entry> = entries
        .iter()
        .filter(|e| e.kind == Some(Kind::NvtxAttributes))
        .map(|e| (e.a0, e))
        .collect();
    let mut b = Builder::default();
    // NVTX pushes of the token domain per thread (None: no token in its payload), and start/end
    // ranges by range id, each with its span.
    let mut pushed: HashMap<u32, Vec<Option<u32>>> = HashMap::default();
    let mut started: HashMap<u64, u32> = HashMap::default();
    for e in entries {
        let at = (e.tid, ns(e.t_begin), e.seq);
        let abi = TokenId {
            hi: e.a0,
            lo: e.a1,
            generation: e.result as u32,
        };
        // A range end pairs by range id whatever domain it names (ids are unique in a process).
        let nvtx_entry = matches!(
            e.kind,
            Some(Kind::RangePush | Kind::RangePop | Kind::RangeStart | Kind::Mark)
        );
        let in_domain = (nvtx.is_token_domain)(e.a1);
        if nvtx_entry && !in_domain {
            continue;
        }
        let carried = || nvtx_token(attrs.get(&e.seq).copied());
        match e.kind {
            Some(Kind::TokenBegin) => {
                b.open(abi, Opened::Begin, at);
            }
            Some(Kind::TokenAccept) => b.accept(abi, at),
            Some(Kind::TokenEnd) => b.end(abi, at),
            Some(Kind::TokenHandoff) => b.handoff(abi, e.a2, at),
            Some(Kind::RangePush) => {
                let span = match carried() {
                    Some(t) => Some(b.open(t, Opened::Nvtx, at)),
                    None => {
                        b.out.nvtx_without_token += 1;
                        None
                    }
                };
                pushed.entry(e.tid).or_default().push(span);
            }
            Some(Kind::RangePop) => match pushed.get_mut(&e.tid).and_then(Vec::pop) {
                Some(Some(i)) => b.close(i, at),
                Some(None) => {}
                None => b.out.unmatched_ends += 1,
            },
            Some(Kind::RangeStart) => match carried() {
                Some(t) => {
                    let i = b.open(t, Opened::Nvtx, at);
                    started.insert(e.a2, i);
                }
                None => b.out.nvtx_without_token += 1,
            },
            Some(Kind::RangeEnd) => match started.remove(&e.a2) {
                Some(i) => b.close(i, at),
                None if in_domain => b.out.unmatched_ends += 1,
                None => {}
            },
            Some(Kind::Mark) => match (carried(), (nvtx.verb)(e.a0)) {
                (Some(t), Some(Verb::Handoff(to))) => b.handoff(t, to, at),
                (Some(t), Some(Verb::Accept)) => b.pair_accept(t, at),
                (None, Some(_)) => b.out.nvtx_without_token += 1,
                _ => {}
            },
            _ => {}
        }
    }
    b.out
}

#[derive(Default)]
struct Builder {
    out: Tokens,
    /// Spans open per (thread, token), innermost last.
    open: HashMap<(u32, TokenId), Vec<u32>>,
    /// Handoffs not yet accepted, per token, oldest first.
    waiting: HashMap<TokenId, Vec<u32>>,
}

impl Builder {
    fn open(&mut self, token: TokenId, opened: Opened, (tid, ns, seq): (u32, u64, u64)) -> u32 {
        let i = self.out.spans.len() as u32;
        self.out.spans.push(Span {
            token,
            tid,
            opened,
            begin_ns: ns,
            begin_seq: seq,
            end_ns: None,
            end_seq: None,
        });
        self.out.by_tid.entry(tid).or_default().push(i);
        self.open.entry((tid, token)).or_default().push(i);
        i
    }

    /// Ends span `i` (an NVTX range; a start/end range may end on another thread than the one it
    /// is a span of).
    fn close(&mut self, i: u32, (_, ns, seq): (u32, u64, u64)) {
        let s = &mut self.out.spans[i as usize];
        if let Some(v) = self.open.get_mut(&(s.tid, s.token)) {
            v.retain(|&j| j != i);
        }
        s.end_ns = Some(ns);
        s.end_seq = Some(seq);
    }

    fn end(&mut self, token: TokenId, at: (u32, u64, u64)) {
        match self.open.get_mut(&(at.0, token)).and_then(Vec::pop) {
            Some(i) => {
                let s = &mut self.out.spans[i as usize];
                s.end_ns = Some(at.1);
                s.end_seq = Some(at.2);
            }
            None => self.out.unmatched_ends += 1,
        }
    }

    fn handoff(&mut self, token: TokenId, to: u64, (tid, ns, seq): (u32, u64, u64)) {
        let i = self.out.handoffs.len() as u32;
        self.out.handoffs.push(Handoff {
            token,
            from_tid: tid,
            ns,
            seq,
            to,
            accepted: None,
        });
        self.waiting.entry(token).or_default().push(i);
    }

    /// Pairs an accept with the handoff of its token that waits for it: the oldest one addressed to
    /// this thread, else the oldest one.
    fn pair_accept(&mut self, token: TokenId, (tid, ns, seq): (u32, u64, u64)) {
        let Some(w) = self.waiting.get_mut(&token).filter(|w| !w.is_empty()) else {
            self.out.unmatched_accepts += 1;
            return;
        };
        let handoffs = &self.out.handoffs;
        let k = w
            .iter()
            .position(|&i| handoffs[i as usize].to == tid as u64)
            .unwrap_or(0);
        let i = w.remove(k);
        self.out.handoffs[i as usize].accepted = Some(Accepted { tid, ns, seq });
    }

    /// The ABI accept: paired with a handoff, and the token continues on this thread.
    fn accept(&mut self, token: TokenId, at: (u32, u64, u64)) {
        self.pair_accept(token, at);
        self.open(token, Opened::Accept, at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOMAIN: u64 = 77;
    const HANDOFF: u64 = 5;
    const HANDOFF_TO_B: u64 = 6;
    const ACCEPT: u64 = 7;
    const A: u32 = 100;
    const B: u32 = 200;

    /// Synthetic entries, numbered in order; times are ticks = ns.
    #[derive(Default)]
    struct Ring(Vec<Entry>);

    impl Ring {
        fn put(&mut self, kind: Kind, tid: u32, t: u64, a: [u64; 3], result: i32) -> u64 {
            let seq = self.0.len() as u64;
            self.0.push(Entry {
                seq,
                done: true,
                t_begin: t,
                t_end: t,
                tid,
                api: 0,
                kind: Some(kind),
                flags: 0,
                result,
                depth: 0,
                node: 0,
                a0: a[0],
                a1: a[1],
                a2: a[2],
            });
            seq
        }
        fn token(&mut self, kind: Kind, tid: u32, t: u64, tok: TokenId, to: u64) -> u64 {
            self.put(kind, tid, t, [tok.hi, tok.lo, to], tok.generation as i32)
        }
        /// An NVTX entry of the token domain with an attributes entry carrying `lo`/`generation`.
        fn nvtx(
            &mut self,
            kind: Kind,
            tid: u32,
            t: u64,
            msg: u64,
            range: u64,
            tok: Option<TokenId>,
        ) {
            let owner = self.put(kind, tid, t, [msg, DOMAIN, range], 0);
            if let Some(tok) = tok {
                let g = tok.generation as u64;
                self.put(
                    Kind::NvtxAttributes,
                    tid,
                    t,
                    [owner, tok.lo, g],
                    nvtx_payload::U64,
                );
            }
        }
        fn tokens(&self) -> Tokens {
            let is = |d: u64| d == DOMAIN;
            let verb = |m: u64| match m {
                HANDOFF => Some(Verb::Handoff(0)),
                HANDOFF_TO_B => Some(Verb::Handoff(B as u64)),
                ACCEPT => Some(Verb::Accept),
                _ => None,
            };
            let nvtx = Nvtx {
                is_token_domain: &is,
                verb: &verb,
            };
            from_entries(&self.0, &nvtx, |t| t)
        }
    }

    fn tok(lo: u64, generation: u32) -> TokenId {
        TokenId {
            hi: 0xabc,
            lo,
            generation,
        }
    }

    #[test]
    fn a_token_handed_off_and_accepted_continues_on_the_other_thread() {
        let t = tok(1, 3);
        let mut r = Ring::default();
        let begin = r.token(Kind::TokenBegin, A, 10, t, 0);
        let launch_a = r.put(Kind::Call, A, 20, [0; 3], 0);
        let hand = r.token(Kind::TokenHandoff, A, 30, t, B as u64);
        let end_a = r.token(Kind::TokenEnd, A, 40, t, 0);
        let after_a = r.put(Kind::Call, A, 45, [0; 3], 0);
        let before_b = r.put(Kind::Call, B, 48, [0; 3], 0);
        let acc = r.token(Kind::TokenAccept, B, 50, t, 0);
        let launch_b = r.put(Kind::Call, B, 60, [0; 3], 0);
        let end_b = r.token(Kind::TokenEnd, B, 70, t, 0);
        let k = r.tokens();
        assert_eq!(k.spans.len(), 2);
        assert_eq!(
            (k.spans[0].tid, k.spans[0].begin_seq, k.spans[0].end_seq),
            (A, begin, Some(end_a))
        );
        assert_eq!(k.spans[0].opened, Opened::Begin);
        assert_eq!(
            (k.spans[1].tid, k.spans[1].begin_seq, k.spans[1].end_seq),
            (B, acc, Some(end_b))
        );
        assert_eq!(k.spans[1].opened, Opened::Accept);
        assert_eq!(k.handoffs.len(), 1);
        let h = k.handoffs[0];
        assert_eq!((h.from_tid, h.seq, h.to, h.ns), (A, hand, B as u64, 30));
        assert_eq!(
            h.accepted,
            Some(Accepted {
                tid: B,
                ns: 50,
                seq: acc
            })
        );
        assert_eq!(k.token_at(A, launch_a), Some(t));
        assert_eq!(k.token_at(B, launch_b), Some(t));
        assert_eq!(k.token_at(A, after_a), None);
        assert_eq!(k.token_at(B, before_b), None);
        assert_eq!(k.scope_at(A, after_a), Scope::Process);
        assert_eq!(k.token_of(A, 20), Some(t));
        assert_eq!(k.token_of(A, 40), None, "the end is exclusive");
        assert_eq!(k.token_of(B, 50), Some(t), "the accept is inclusive");
        assert_eq!(k.token_of(B, 45), None);
        let s = k.summary();
        assert_eq!(
            (s.tokens, s.spans, s.open_spans, s.handoffs, s.accepted),
            (1, 2, 0, 1, 1)
        );
        assert_eq!((s.unmatched_ends, s.unmatched_accepts), (0, 0));
    }

    #[test]
    fn an_end_never_reached_leaves_the_span_open() {
        let t = tok(2, 0);
        let mut r = Ring::default();
        r.token(Kind::TokenBegin, A, 10, t, 0);
        let call = r.put(Kind::Call, A, 1_000, [0; 3], 0);
        r.token(Kind::TokenHandoff, A, 1_100, t, 0);
        let k = r.tokens();
        assert_eq!(k.spans[0].end_ns, None);
        assert_eq!(k.token_at(A, call), Some(t));
        assert_eq!(k.token_of(A, u64::MAX), Some(t));
        assert_eq!(k.handoffs[0].accepted, None, "nobody accepted it");
        let s = k.summary();
        assert_eq!((s.open_spans, s.accepted), (1, 0));
    }

    #[test]
    fn a_reused_generation_is_a_new_span_and_generations_are_told_apart() {
        let g1 = tok(3, 1);
        let g2 = tok(3, 2);
        let mut r = Ring::default();
        r.token(Kind::TokenBegin, A, 10, g1, 0);
        r.token(Kind::TokenHandoff, A, 15, g1, 0);
        r.token(Kind::TokenEnd, A, 20, g1, 0);
        // The same id and generation again: a second life of the same token.
        r.token(Kind::TokenBegin, A, 30, g1, 0);
        let in_second = r.put(Kind::Call, A, 35, [0; 3], 0);
        r.token(Kind::TokenEnd, A, 40, g1, 0);
        // An accept of another generation does not take g1's handoff.
        r.token(Kind::TokenAccept, B, 50, g2, 0);
        // An end of g2 on A closes nothing there.
        r.token(Kind::TokenEnd, A, 55, g2, 0);
        let acc = r.token(Kind::TokenAccept, B, 60, g1, 0);
        let k = r.tokens();
        assert_eq!(k.spans.len(), 4);
        assert_eq!((k.spans[1].begin_ns, k.spans[1].end_ns), (30, Some(40)));
        assert_eq!(k.token_at(A, in_second), Some(g1));
        assert_eq!(k.unmatched_accepts, 1, "g2's accept had no handoff");
        assert_eq!(k.unmatched_ends, 1);
        assert_eq!(k.handoffs[0].accepted.map(|a| a.seq), Some(acc));
        assert_eq!(k.summary().tokens, 2);
        // B holds g2, then g1 inside it: the innermost wins.
        assert_eq!(k.token_of(B, 65), Some(g1));
        assert_eq!(k.token_of(B, 55), Some(g2));
    }

    #[test]
    fn an_accept_prefers_the_handoff_addressed_to_its_thread() {
        let t = tok(4, 0);
        let mut r = Ring::default();
        let to_c = r.token(Kind::TokenHandoff, A, 10, t, 999);
        let to_b = r.token(Kind::TokenHandoff, A, 11, t, B as u64);
        let acc_b = r.token(Kind::TokenAccept, B, 20, t, 0);
        let acc_c = r.token(Kind::TokenAccept, 999, 21, t, 0);
        let k = r.tokens();
        let by_seq = |s: u64| k.handoffs.iter().find(|h| h.seq == s).unwrap();
        assert_eq!(by_seq(to_b).accepted.map(|a| a.seq), Some(acc_b));
        assert_eq!(by_seq(to_c).accepted.map(|a| a.seq), Some(acc_c));
    }

    #[test]
    fn nvtx_ranges_and_marks_in_the_token_domain_are_tokens() {
        let t = TokenId {
            hi: 0,
            lo: 0x2222,
            generation: 3,
        };
        let mut r = Ring::default();
        r.nvtx(Kind::RangePush, A, 10, 1, 0, Some(t));
        let launch_a = r.put(Kind::Call, A, 20, [0; 3], 0);
        r.nvtx(Kind::Mark, A, 30, HANDOFF_TO_B, 0, Some(t));
        r.nvtx(Kind::RangePop, A, 40, 0, 0, None);
        r.nvtx(Kind::RangePush, B, 50, 1, 0, Some(t));
        r.nvtx(Kind::Mark, B, 55, ACCEPT, 0, Some(t));
        let launch_b = r.put(Kind::Call, B, 60, [0; 3], 0);
        r.nvtx(Kind::RangePop, B, 70, 0, 0, None);
        // A start/end range on another thread; and, outside the domain, a range that is no token.
        r.nvtx(Kind::RangeStart, 300, 80, 1, 42, Some(tok(9, 0)));
        r.put(Kind::RangePush, A, 85, [1, 0, 0], 0);
        r.put(Kind::RangePop, A, 86, [0, 0, 0], 0);
        r.nvtx(Kind::RangeEnd, A, 90, 0, 42, None);
        // A token-domain range with no payload: counted, not a token; its pop closes nothing.
        r.nvtx(Kind::RangePush, B, 100, 1, 0, None);
        r.nvtx(Kind::RangePop, B, 110, 0, 0, None);
        let k = r.tokens();
        assert_eq!(k.spans.len(), 3);
        assert!(k.spans.iter().all(|s| s.opened == Opened::Nvtx));
        assert_eq!((k.spans[0].tid, k.spans[0].end_ns), (A, Some(40)));
        assert_eq!((k.spans[1].tid, k.spans[1].end_ns), (B, Some(70)));
        assert_eq!((k.spans[2].tid, k.spans[2].end_ns), (300, Some(90)));
        assert_eq!(k.token_at(A, launch_a), Some(t));
        assert_eq!(k.token_at(B, launch_b), Some(t));
        assert_eq!(k.handoffs.len(), 1);
        assert_eq!(k.handoffs[0].to, B as u64);
        assert_eq!(k.handoffs[0].accepted.map(|a| (a.tid, a.ns)), Some((B, 55)));
        assert_eq!(k.nvtx_without_token, 1);
        assert_eq!((k.unmatched_ends, k.unmatched_accepts), (0, 0));
    }

    #[test]
    fn mark_messages_are_read_strictly() {
        assert_eq!(Verb::parse("handoff"), Some(Verb::Handoff(0)));
        assert_eq!(Verb::parse("handoff 1234"), Some(Verb::Handoff(1234)));
        assert_eq!(Verb::parse("accept"), Some(Verb::Accept));
        assert_eq!(Verb::parse("handoffs"), None);
        assert_eq!(Verb::parse("handoff x"), None);
        assert_eq!(Verb::parse("checkpoint"), None);
    }

    #[test]
    fn no_token_entries_no_tokens() {
        let mut r = Ring::default();
        r.put(Kind::Call, A, 1, [0; 3], 0);
        r.put(Kind::RangePush, A, 2, [1, 0, 0], 0);
        let k = r.tokens();
        assert!(k.is_empty());
        assert_eq!(k.scope_at(A, 0), Scope::Process);
        assert_eq!(Scope::Token(tok(1, 2)).label(), "token abc:1/2");
    }
}
