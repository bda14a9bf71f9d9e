//! Helpers of the corpus comparison (`tests/corpus.rs`), apart from the test so that both can move to
//! another crate unchanged: finding the repository, SHA-256, transcripts and their differences, and
//! the canonical decodes of the exports whose encoding may change while their content must not
//! (Perfetto protobuf, Parquet). Nothing here uses the scanner's own code: what is compared is the
//! files the `causeway` binary writes, read back by independent readers.
#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The repository root: the first directory above this crate holding `corpus/README.md`.
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .find(|d| d.join("corpus/README.md").is_file())
        .unwrap_or_else(|| panic!("no corpus/README.md above {}", here.display()))
        .to_path_buf()
}

// ---- SHA-256 (FIPS 180-4), for outputs too large to store ----------------------------------------

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// The SHA-256 digest of `data`, in lowercase hex.
pub fn sha256(data: &[u8]) -> String {
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, c) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes(c.try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (a, b) in h.iter_mut().zip(v) {
            *a = a.wrapping_add(b);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

// ---- transcripts ------------------------------------------------------------------------------------

/// One command's recorded behaviour: the command line, its exit code, then sections (stderr, stdout,
/// files it wrote), each either in full or, when larger than `limit` bytes or not UTF-8, as its size and
/// SHA-256. `full` transcripts (`limit` = usize::MAX) are what `CAUSEWAY_CORPUS_OUT` writes.
pub struct Transcript {
    pub text: String,
    /// Sections stored as digests (their titles), for the failure message.
    pub digested: Vec<String>,
}

impl Transcript {
    pub fn new(command: &str, exit: Option<i32>) -> Transcript {
        let exit = match exit {
            Some(c) => c.to_string(),
            None => "killed by a signal".into(),
        };
        Transcript {
            text: format!("$ {command}\nexit {exit}\n"),
            digested: Vec::new(),
        }
    }

    /// Appends a section: `--- TITLE (N bytes)` and the bytes, or `--- TITLE: N bytes, sha256 …`.
    pub fn section(&mut self, title: &str, bytes: &[u8], limit: usize) {
        match std::str::from_utf8(bytes) {
            Ok(s) if bytes.len() <= limit => {
                let _ = writeln!(self.text, "--- {title} ({} bytes)", bytes.len());
                self.text.push_str(s);
                if !s.is_empty() && !s.ends_with('\n') {
                    self.text.push_str("\n--- (no newline at the end)\n");
                }
            }
            r => {
                let why = if r.is_err() {
                    "not UTF-8".to_string()
                } else {
                    format!("over the {limit} bytes stored in full")
                };
                self.digest(title, bytes, &why);
            }
        }
    }

    /// Appends a section as its size and SHA-256 only: `--- TITLE: N bytes, sha256 … (WHY)`.
    pub fn digest(&mut self, title: &str, bytes: &[u8], why: &str) {
        let _ = writeln!(
            self.text,
            "--- {title}: {} bytes, sha256 {} ({why})",
            bytes.len(),
            sha256(bytes)
        );
        self.digested.push(title.to_string());
    }

    /// Appends a line that is not a section (a problem met while decoding an output).
    pub fn note(&mut self, line: &str) {
        let _ = writeln!(self.text, "--- {line}");
    }
}

/// A section's title line without its size (`--- TITLE (N bytes)` → `--- TITLE`), so that a changed
/// line is shown rather than the size of the section it is in.
fn sizeless(line: &str) -> &str {
    if let Some(head) = line.strip_prefix("--- ") {
        if let Some(i) = head.rfind(" (") {
            let tail = &head[i + 2..];
            if tail
                .strip_suffix(" bytes)")
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            {
                return &line[..4 + i];
            }
        }
    }
    line
}

/// Where `expected` and `actual` first differ, as a few lines of each with line numbers, and how many
/// lines differ in all (by position; section sizes aside).
pub fn first_difference(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let differs = |i: usize| e.get(i).map(|l| sizeless(l)) != a.get(i).map(|l| sizeless(l));
    let n = e.len().max(a.len());
    let first = match (0..n).find(|&i| differs(i)) {
        Some(i) => i,
        None => match (0..n).find(|&i| e.get(i) != a.get(i)) {
            Some(i) => i,
            None => return "the texts differ only in line endings".into(),
        },
    };
    let differing = (0..n).filter(|&i| differs(i)).count();
    let mut out = format!(
        "first difference at line {} ({differing} of {}/{} lines differ by position):\n",
        first + 1,
        e.len(),
        a.len()
    );
    let from = first.saturating_sub(2);
    let show = |out: &mut String, label: &str, v: &[&str]| {
        for (i, l) in v.iter().enumerate().skip(from).take(first - from + 4) {
            let mark = if i == first { ">" } else { " " };
            let l: String = l.chars().take(240).collect();
            let _ = writeln!(out, "  {label} {mark}{:>6} | {l}", i + 1);
        }
        if v.len() <= first {
            let _ = writeln!(out, "  {label} >  (ends after line {})", v.len());
        }
    };
    show(&mut out, "expected", &e);
    show(&mut out, "actual  ", &a);
    out
}

// ---- Perfetto: a canonical, name-resolved decode ----------------------------------------------------

/// One field of a protobuf message on the wire.
#[derive(Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    I64(u64),
    Len(&'a [u8]),
    I32(u32),
}

fn varint(b: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or("a varint runs past the end")?;
        *at += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("a varint longer than 10 bytes".into())
}

/// The fields of one message, in wire order.
fn fields(b: &[u8]) -> Result<Vec<(u32, Wire<'_>)>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let key = varint(b, &mut at)?;
        let (num, wt) = ((key >> 3) as u32, key & 7);
        let take = |at: &mut usize, n: usize| -> Result<&[u8], String> {
            let s = b.get(*at..*at + n).ok_or("a field runs past the end")?;
            *at += n;
            Ok(s)
        };
        let w = match wt {
            0 => Wire::Varint(varint(b, &mut at)?),
            1 => Wire::I64(u64::from_le_bytes(take(&mut at, 8)?.try_into().unwrap())),
            2 => {
                let n = varint(b, &mut at)? as usize;
                Wire::Len(take(&mut at, n)?)
            }
            5 => Wire::I32(u32::from_le_bytes(take(&mut at, 4)?.try_into().unwrap())),
            _ => return Err(format!("wire type {wt} (field {num})")),
        };
        out.push((num, w));
    }
    Ok(out)
}

fn text(w: Wire) -> Result<String, String> {
    match w {
        Wire::Len(s) => Ok(String::from_utf8_lossy(s).into_owned()),
        _ => Err("a string field that is not length-delimited".into()),
    }
}

fn uint(w: Wire) -> Result<u64, String> {
    match w {
        Wire::Varint(v) | Wire::I64(v) => Ok(v),
        Wire::I32(v) => Ok(v as u64),
        Wire::Len(_) => Err("a number field that is length-delimited".into()),
    }
}

/// The values of a repeated scalar field, packed or not.
fn repeated(w: Wire, fixed64: bool) -> Result<Vec<u64>, String> {
    match w {
        Wire::Len(s) if fixed64 => Ok(s
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect()),
        Wire::Len(s) => {
            let mut at = 0;
            let mut v = Vec::new();
            while at < s.len() {
                v.push(varint(s, &mut at)?);
            }
            Ok(v)
        }
        w => Ok(vec![uint(w)?]),
    }
}

/// A field this decoder has no name for, kept (as ` field_N=…`) so that nothing the exporter adds goes
/// unseen.
fn unknown(num: u32, w: Wire) -> String {
    match w {
        Wire::Varint(v) => format!(" field_{num}=varint:{v}"),
        Wire::I64(v) => format!(" field_{num}=fixed64:{v}"),
        Wire::I32(v) => format!(" field_{num}=fixed32:{v}"),
        Wire::Len(s) => match std::str::from_utf8(s) {
            Ok(t) => format!(" field_{num}=bytes:{}", quote(t)),
            Err(_) => format!(
                " field_{num}=hex:{}",
                s.iter().map(|b| format!("{b:02x}")).collect::<String>()
            ),
        },
    }
}

/// A string as a JSON string literal: quoted, escaped, on one line.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// Interned strings of one packet sequence (`InternedData`): event categories, event names and
/// debug-annotation names, by iid.
#[derive(Default, Clone)]
struct Interned {
    categories: HashMap<u64, String>,
    names: HashMap<u64, String>,
    annotation_names: HashMap<u64, String>,
    /// `debug_annotation_string_values` (29): `InternedString { iid = 1; bytes str = 2 }`.
    string_values: HashMap<u64, String>,
}

impl Interned {
    fn add(&mut self, data: &[u8]) -> Result<(), String> {
        for (num, w) in fields(data)? {
            let table = match num {
                1 => &mut self.categories,
                2 => &mut self.names,
                3 => &mut self.annotation_names,
                29 => &mut self.string_values,
                _ => return Err(format!("InternedData field {num} is not decoded here")),
            };
            let Wire::Len(entry) = w else {
                return Err("an interned entry that is not a message".into());
            };
            let (mut iid, mut name) = (None, None);
            for (n, w) in fields(entry)? {
                match n {
                    1 => iid = Some(uint(w)?),
                    2 => name = Some(text(w)?),
                    _ => return Err(format!("interned entry field {n}")),
                }
            }
            table.insert(
                iid.ok_or("an interned entry without iid")?,
                name.ok_or("an interned entry without name")?,
            );
        }
        Ok(())
    }
}

fn resolve(table: &HashMap<u64, String>, iid: u64, what: &str) -> Result<String, String> {
    table
        .get(&iid)
        .cloned()
        .ok_or_else(|| format!("{what} iid {iid} was never interned"))
}

fn message<'a>(w: Wire<'a>, what: &str) -> Result<&'a [u8], String> {
    match w {
        Wire::Len(m) => Ok(m),
        _ => Err(format!("{what} that is not a message")),
    }
}

/// `clock_snapshot primary=P clocks=[ID:TS,…]`
fn clock_snapshot(b: &[u8]) -> Result<String, String> {
    let (mut primary, mut clocks, mut rest) = (String::new(), Vec::new(), String::new());
    for (num, w) in fields(b)? {
        match num {
            1 => {
                let (mut id, mut ts, mut more) = (String::new(), String::new(), String::new());
                for (n, w) in fields(message(w, "a clock")?)? {
                    match n {
                        1 => id = uint(w)?.to_string(),
                        2 => ts = uint(w)?.to_string(),
                        _ => more += &unknown(n, w),
                    }
                }
                clocks.push(format!("{id}:{ts}{more}"));
            }
            2 => primary = format!(" primary={}", uint(w)?),
            _ => rest += &unknown(num, w),
        }
    }
    Ok(format!(
        "clock_snapshot{primary} clocks=[{}]{rest}",
        clocks.join(",")
    ))
}

/// `track UUID [parent=P] [name="…"] [process(pid=… name="…")] [thread(pid=… tid=… name="…")]`
fn track_descriptor(b: &[u8]) -> Result<String, String> {
    let (mut uuid, mut parent, mut name, mut sub, mut rest) = (
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
    );
    for (num, w) in fields(b)? {
        match num {
            1 => uuid = uint(w)?.to_string(),
            5 => parent = format!(" parent={}", uint(w)?),
            // `name` and `static_name` (a oneof): the same string to a viewer.
            2 | 10 => name = format!(" name={}", quote(&text(w)?)),
            3 | 4 => {
                let (mut pid, mut tid, mut pname, mut more) =
                    (String::new(), String::new(), String::new(), String::new());
                for (n, w) in fields(message(w, "a process/thread descriptor")?)? {
                    match (num, n) {
                        (_, 1) => pid = format!("pid={}", uint(w)? as i32),
                        (4, 2) => tid = format!(" tid={}", uint(w)? as i64),
                        (3, 6) | (4, 5) => pname = format!(" name={}", quote(&text(w)?)),
                        _ => more += &unknown(n, w),
                    }
                }
                let kind = if num == 3 { "process" } else { "thread" };
                sub = format!(" {kind}({pid}{tid}{pname}{more})");
            }
            _ => rest += &unknown(num, w),
        }
    }
    Ok(format!("track {uuid}{parent}{name}{sub}{rest}"))
}

/// ` NAME=VALUE`: u5 (uint), i-1 (int), true/false, d1.5 (double), "…" (string), p0x… (pointer).
fn annotation(b: &[u8], interned: &Interned) -> Result<String, String> {
    let (mut name, mut value, mut rest) = (String::new(), String::new(), String::new());
    for (num, w) in fields(b)? {
        match num {
            10 => name = text(w)?,
            1 => name = resolve(&interned.annotation_names, uint(w)?, "annotation name")?,
            2 => value = (uint(w)? != 0).to_string(),
            3 => value = format!("u{}", uint(w)?),
            4 => value = format!("i{}", uint(w)? as i64),
            5 => value = format!("d{}", f64::from_bits(uint(w)?)),
            6 => value = quote(&text(w)?),
            7 => value = format!("p{:#x}", uint(w)?),
            17 => {
                value = quote(&resolve(
                    &interned.string_values,
                    uint(w)?,
                    "annotation string value",
                )?)
            }
            _ => rest += &unknown(num, w),
        }
    }
    Ok(format!(" {name}={value}{rest}"))
}

/// `TYPE track=UUID ["name"] [cat,…] ARGS [flows=[…]] [terminating_flows=[…]]`
fn track_event(
    b: &[u8],
    interned: &Interned,
    default_track: Option<u64>,
) -> Result<String, String> {
    let (mut ty, mut track, mut name, mut rest) = (
        String::new(),
        default_track.map_or(String::new(), |t| format!(" track={t}")),
        String::new(),
        String::new(),
    );
    let (mut categories, mut args, mut flows, mut terminating) =
        (Vec::new(), String::new(), Vec::new(), Vec::new());
    for (num, w) in fields(b)? {
        match num {
            9 => {
                ty = match uint(w)? {
                    1 => "SLICE_BEGIN".to_string(),
                    2 => "SLICE_END".to_string(),
                    3 => "INSTANT".to_string(),
                    4 => "COUNTER".to_string(),
                    t => format!("TYPE_{t}"),
                }
            }
            11 => track = format!(" track={}", uint(w)?),
            23 => name = format!(" {}", quote(&text(w)?)),
            10 => {
                let n = resolve(&interned.names, uint(w)?, "event name")?;
                name = format!(" {}", quote(&n));
            }
            22 => categories.push(text(w)?),
            3 => {
                for iid in repeated(w, false)? {
                    categories.push(resolve(&interned.categories, iid, "category")?);
                }
            }
            4 => args += &annotation(message(w, "a debug annotation")?, interned)?,
            47 => flows.extend(repeated(w, true)?),
            48 => terminating.extend(repeated(w, true)?),
            _ => rest += &unknown(num, w),
        }
    }
    let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let mut out = format!("{ty}{track}{name}");
    if !categories.is_empty() {
        let c: Vec<String> = categories.iter().map(|c| quote(c)).collect();
        out += &format!(" [{}]", c.join(","));
    }
    out += &args;
    if !flows.is_empty() {
        out += &format!(" flows=[{}]", list(&flows));
    }
    if !terminating.is_empty() {
        out += &format!(" terminating_flows=[{}]", list(&terminating));
    }
    Ok(out + &rest)
}

/// One packet sequence's incremental state: interned strings, the defaults its packets take
/// (`TracePacketDefaults`: clock id, `TrackEventDefaults.track_uuid`), and its incremental clocks
/// (id → the last timestamp on it, the clock read beside it in its snapshot, and that clock's
/// reading minus its own).
#[derive(Default, Clone)]
struct Sequence {
    interned: Interned,
    default_clock: Option<u64>,
    default_track: Option<u64>,
    incremental: HashMap<u64, (u64, u64, i128)>,
}

impl Sequence {
    fn defaults(&mut self, b: &[u8]) -> Result<(), String> {
        for (num, w) in fields(b)? {
            match num {
                58 => self.default_clock = Some(uint(w)?),
                11 => {
                    for (n, w) in fields(message(w, "track event defaults")?)? {
                        match n {
                            11 => self.default_track = Some(uint(w)?),
                            _ => return Err(format!("TrackEventDefaults field {n}")),
                        }
                    }
                }
                _ => return Err(format!("TracePacketDefaults field {num}")),
            }
        }
        Ok(())
    }

    /// The incremental clocks of a snapshot, each against the snapshot's first other clock.
    fn clocks(&mut self, b: &[u8]) -> Result<(), String> {
        let mut clocks = Vec::new();
        for (num, w) in fields(b)? {
            if num == 1 {
                let (mut id, mut ts, mut incremental, mut unit) = (0, 0, false, 1);
                for (n, w) in fields(message(w, "a clock")?)? {
                    match n {
                        1 => id = uint(w)?,
                        2 => ts = uint(w)?,
                        3 => incremental = uint(w)? != 0,
                        4 => unit = uint(w)?,
                        _ => {}
                    }
                }
                if unit != 1 {
                    return Err(format!("clock {id}: unit {unit} ns"));
                }
                clocks.push((id, ts, incremental));
            }
        }
        let base = clocks.iter().find(|c| !c.2).copied();
        for &(id, ts, incremental) in &clocks {
            if incremental {
                let (bid, bts, _) = base.ok_or("an incremental clock with no clock beside it")?;
                self.incremental
                    .insert(id, (ts, bid, i128::from(bts) - i128::from(ts)));
            }
        }
        Ok(())
    }
}

/// A Perfetto trace as one line per packet, with what a viewer sees and none of how it was encoded:
/// interned names, categories, annotation names and annotation string values (`InternedData`, per
/// packet sequence, cleared by `SEQ_INCREMENTAL_STATE_CLEARED`) are resolved to their strings; a
/// sequence's defaults (`TracePacketDefaults`: clock, track) are applied to its packets, and
/// timestamps on its incremental clocks made absolute on the clock its snapshot read beside them;
/// `name` and `static_name` are one; packed and unpacked repeated fields read alike; fields appear in
/// a fixed order whatever their order on the wire (debug annotations in theirs); the packet sequence
/// id and the sequence flags are left out, and so are packets that only set a sequence up
/// (interned data, defaults, its clock). Fields this decoder does not know are kept as `field_N=…`.
/// Lines come in file order, the track events after the rest, stably by timestamp: how the packets
/// of several tracks interleave in the file does not matter.
///
/// A line: `[ts=T] [clock=C] ` and one of `clock_snapshot …`, `track UUID …` (a track descriptor) or
/// `TYPE track=UUID "name" ["category"] arg=value… [flows=[…]]` (a track event).
pub fn perfetto_canonical(trace: &[u8]) -> Result<String, String> {
    let (mut head, mut events) = (String::new(), Vec::new());
    let mut sequences: HashMap<u64, Sequence> = HashMap::new();
    for (num, w) in fields(trace)? {
        if num != 1 {
            return Err(format!("Trace field {num}"));
        }
        let fs = fields(message(w, "a packet")?)?;
        let (mut seq, mut flags) = (0, 0);
        for &(n, w) in &fs {
            match n {
                10 => seq = uint(w)?,
                13 => flags = uint(w)?,
                _ => {}
            }
        }
        if flags & 1 != 0 {
            sequences.insert(seq, Sequence::default());
        }
        let sq = sequences.entry(seq).or_default();
        let mut setup = false;
        for &(n, w) in &fs {
            match n {
                12 => sq.interned.add(message(w, "InternedData")?)?,
                59 => {
                    sq.defaults(message(w, "TracePacketDefaults")?)?;
                    setup = true;
                }
                _ => {}
            }
        }
        if setup {
            for &(n, w) in &fs {
                if n == 6 {
                    sq.clocks(message(w, "a clock snapshot")?)?;
                }
            }
            continue;
        }
        let sq = sq.clone();
        let (mut ts, mut clock, mut data, mut rest) = (None, None, String::new(), String::new());
        let mut event = false;
        for (n, w) in fs {
            match n {
                10 | 12 | 13 => {}
                8 => ts = Some(uint(w)?),
                58 => clock = Some(uint(w)?),
                6 => data = clock_snapshot(message(w, "a clock snapshot")?)?,
                11 => {
                    data =
                        track_event(message(w, "a track event")?, &sq.interned, sq.default_track)?;
                    event = true;
                }
                60 => data = track_descriptor(message(w, "a track descriptor")?)?,
                _ => rest += &unknown(n, w),
            }
        }
        let mut clock = clock.or(sq.default_clock);
        if let (Some(t), Some(c)) = (ts, clock) {
            if let Some(&(last, base, offset)) = sq.incremental.get(&c) {
                let now = last + t;
                sequences
                    .get_mut(&seq)
                    .unwrap()
                    .incremental
                    .insert(c, (now, base, offset));
                ts = Some((i128::from(now) + offset) as u64);
                clock = Some(base);
            }
        }
        let ts_text = ts.map_or(String::new(), |t| format!("ts={t} "));
        let clock_text = clock
            .filter(|_| ts.is_some())
            .map_or(String::new(), |c| format!("clock={c} "));
        let line = format!("{ts_text}{clock_text}{data}{rest}");
        if line.is_empty() {
            continue;
        }
        let line = line.trim_end().to_string();
        if event {
            events.push((ts.unwrap_or(0), line));
        } else {
            head += &line;
            head.push('\n');
        }
    }
    events.sort_by_key(|e| e.0);
    for (_, line) in events {
        head += &line;
        head.push('\n');
    }
    Ok(head)
}

// ---- Parquet: schema and rows -------------------------------------------------------------------------

fn cell(col: &dyn arrow_array::Array, row: usize) -> serde_json::Value {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    use arrow_schema::DataType as T;
    if col.is_null(row) {
        return serde_json::Value::Null;
    }
    match col.data_type() {
        T::Utf8 => col.as_string::<i32>().value(row).into(),
        T::LargeUtf8 => col.as_string::<i64>().value(row).into(),
        T::Boolean => col.as_boolean().value(row).into(),
        T::Int8 => col.as_primitive::<Int8Type>().value(row).into(),
        T::Int16 => col.as_primitive::<Int16Type>().value(row).into(),
        T::Int32 => col.as_primitive::<Int32Type>().value(row).into(),
        T::Int64 => col.as_primitive::<Int64Type>().value(row).into(),
        T::UInt8 => col.as_primitive::<UInt8Type>().value(row).into(),
        T::UInt16 => col.as_primitive::<UInt16Type>().value(row).into(),
        T::UInt32 => col.as_primitive::<UInt32Type>().value(row).into(),
        T::UInt64 => col.as_primitive::<UInt64Type>().value(row).into(),
        T::Float32 => (col.as_primitive::<Float32Type>().value(row) as f64).into(),
        T::Float64 => col.as_primitive::<Float64Type>().value(row).into(),
        _ => {
            let f = arrow_cast::display::ArrayFormatter::try_new(col, &Default::default())
                .expect("a displayable column");
            serde_json::json!({ "display": f.value(row).to_string() })
        }
    }
}

/// Every `*.parquet` table in `dir`, by file name: the Parquet schema (per column its name, physical
/// and converted type and repetition — what any reader sees) and every row as a JSON array, in
/// order. Row groups, pages, compression, encodings, dictionary or plain, statistics and the writer's
/// name are left out: they may change while the tables do not. Arrow dictionary columns are read as
/// their values.
pub fn parquet_canonical(dir: &Path) -> Result<String, String> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = format!("files: {}\n", names.join(" "));
    for name in names.iter().filter(|n| n.ends_with(".parquet")) {
        let path = dir.join(name);
        let open = || std::fs::File::open(&path).map_err(|e| format!("{name}: {e}"));
        let meta = SerializedFileReader::new(open()?)
            .map_err(|e| format!("{name}: {e}"))?
            .metadata()
            .file_metadata()
            .clone();
        let _ = writeln!(out, "== {name}: {} rows", meta.num_rows());
        for c in meta.schema_descr().columns() {
            let _ = writeln!(
                out,
                "column {}: {} {} {}",
                c.path(),
                c.physical_type(),
                c.converted_type(),
                c.self_type().get_basic_info().repetition()
            );
        }
        let reader = ParquetRecordBatchReaderBuilder::try_new(open()?)
            .and_then(|b| b.build())
            .map_err(|e| format!("{name}: {e}"))?;
        for batch in reader {
            let batch = batch.map_err(|e| format!("{name}: {e}"))?;
            let cols: Vec<arrow_array::ArrayRef> = batch
                .columns()
                .iter()
                .map(|c| match c.data_type() {
                    arrow_schema::DataType::Dictionary(_, v) => {
                        arrow_cast::cast(c, v).expect("a dictionary cast to its values")
                    }
                    _ => c.clone(),
                })
                .collect();
            for row in 0..batch.num_rows() {
                let cells: Vec<serde_json::Value> =
                    cols.iter().map(|c| cell(c.as_ref(), row)).collect();
                out.push_str(&serde_json::Value::Array(cells).to_string());
                out.push('\n');
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A protobuf field: key and value (`Varint`, `Len` or `I64`).
    fn put(out: &mut Vec<u8>, num: u32, w: Wire) {
        fn var(out: &mut Vec<u8>, mut v: u64) {
            while v >= 0x80 {
                out.push(v as u8 | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        }
        match w {
            Wire::Varint(v) => {
                var(out, (num as u64) << 3);
                var(out, v);
            }
            Wire::I64(v) => {
                var(out, (num as u64) << 3 | 1);
                out.extend_from_slice(&v.to_le_bytes());
            }
            Wire::Len(b) => {
                var(out, (num as u64) << 3 | 2);
                var(out, b.len() as u64);
                out.extend_from_slice(b);
            }
            Wire::I32(v) => {
                var(out, (num as u64) << 3 | 5);
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }

    fn msg(fields: &[(u32, Wire)]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(n, w) in fields {
            put(&mut out, n, w);
        }
        out
    }

    fn packet(trace: &mut Vec<u8>, fields: &[(u32, Wire)]) {
        put(trace, 1, Wire::Len(&msg(fields)));
    }

    /// The same two events written the way the exporter writes them now (names inline, flow ids one
    /// field each) and interned (names, categories and annotation names by iid, flow ids packed, a
    /// track's `static_name`, fields in another order): one canonical text.
    #[test]
    fn perfetto_interning_and_field_order_do_not_change_the_canonical_decode() {
        let ann =
            |name: &str, v: u64| msg(&[(10, Wire::Len(name.as_bytes())), (3, Wire::Varint(v))]);
        let mut inline = Vec::new();
        packet(
            &mut inline,
            &[
                (10, Wire::Varint(1)),
                (13, Wire::Varint(1)),
                (
                    60,
                    Wire::Len(&msg(&[(1, Wire::Varint(7)), (2, Wire::Len(b"stream 1"))])),
                ),
            ],
        );
        for (ts, ty, flow) in [(100, 1, 41), (200, 1, 42)] {
            let ev = msg(&[
                (4, Wire::Len(&ann("seq", 5))),
                (9, Wire::Varint(ty)),
                (11, Wire::Varint(7)),
                (22, Wire::Len(b"launch")),
                (23, Wire::Len(b"cudaLaunchKernel")),
                (47, Wire::I64(flow)),
                (47, Wire::I64(flow + 100)),
            ]);
            packet(
                &mut inline,
                &[
                    (8, Wire::Varint(ts)),
                    (58, Wire::Varint(3)),
                    (10, Wire::Varint(1)),
                    (11, Wire::Len(&ev)),
                ],
            );
        }

        let entry =
            |iid: u64, name: &str| msg(&[(1, Wire::Varint(iid)), (2, Wire::Len(name.as_bytes()))]);
        let mut interned = Vec::new();
        packet(
            &mut interned,
            &[
                (10, Wire::Varint(1)),
                (13, Wire::Varint(1 | 2)),
                (
                    60,
                    Wire::Len(&msg(&[(10, Wire::Len(b"stream 1")), (1, Wire::Varint(7))])),
                ),
            ],
        );
        let data = msg(&[
            (1, Wire::Len(&entry(1, "launch"))),
            (2, Wire::Len(&entry(1, "cudaLaunchKernel"))),
            (3, Wire::Len(&entry(1, "seq"))),
        ]);
        for (i, (ts, ty, flow)) in [(100u64, 1u64, 41u64), (200, 1, 42)]
            .into_iter()
            .enumerate()
        {
            let mut flows = Vec::new();
            flows.extend_from_slice(&flow.to_le_bytes());
            flows.extend_from_slice(&(flow + 100).to_le_bytes());
            let ev = msg(&[
                (11, Wire::Varint(7)),
                (9, Wire::Varint(ty)),
                (10, Wire::Varint(1)),
                (3, Wire::Len(&[1])),
                (
                    4,
                    Wire::Len(&msg(&[(1, Wire::Varint(1)), (3, Wire::Varint(5))])),
                ),
                (47, Wire::Len(&flows)),
            ]);
            let mut fields = vec![
                (58, Wire::Varint(3)),
                (8, Wire::Varint(ts)),
                (10, Wire::Varint(1)),
                (13, Wire::Varint(2)),
            ];
            if i == 0 {
                fields.push((12, Wire::Len(&data)));
            }
            fields.push((11, Wire::Len(&ev)));
            packet(&mut interned, &fields);
        }
        let a = perfetto_canonical(&inline).unwrap();
        assert_eq!(a, perfetto_canonical(&interned).unwrap());
        assert_eq!(
            a,
            "track 7 name=\"stream 1\"\n\
             ts=100 clock=3 SLICE_BEGIN track=7 \"cudaLaunchKernel\" [\"launch\"] seq=u5 flows=[41,141]\n\
             ts=200 clock=3 SLICE_BEGIN track=7 \"cudaLaunchKernel\" [\"launch\"] seq=u5 flows=[42,142]\n"
        );
        // A name that was never interned is an error, not a silent blank.
        let mut bad = Vec::new();
        packet(
            &mut bad,
            &[(
                11,
                Wire::Len(&msg(&[(9, Wire::Varint(3)), (10, Wire::Varint(9))])),
            )],
        );
        assert!(perfetto_canonical(&bad)
            .unwrap_err()
            .contains("never interned"));
    }

    /// One table written plainly and with every layout option changed (row groups of 2, another
    /// compression, no dictionary, statistics off, an Arrow dictionary column): one canonical text.
    #[test]
    fn parquet_layout_does_not_change_the_canonical_decode() {
        use arrow_array::{ArrayRef, DictionaryArray, RecordBatch, StringArray, UInt64Array};
        use arrow_schema::{DataType, Field, Schema};
        use parquet::arrow::ArrowWriter;
        use parquet::basic::Compression;
        use parquet::file::properties::{EnabledStatistics, WriterProperties};
        use std::sync::Arc;
        let names = ["gemm", "copy", "gemm", "gemm", "sync"];
        let seq: ArrayRef = Arc::new(UInt64Array::from(vec![
            Some(1),
            None,
            Some(3),
            Some(4),
            Some(5),
        ]));
        let plain = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("name", DataType::Utf8, false),
                Field::new("seq", DataType::UInt64, true),
            ])),
            vec![Arc::new(StringArray::from(names.to_vec())), seq.clone()],
        )
        .unwrap();
        let dict: DictionaryArray<arrow_array::types::Int32Type> = names.into_iter().collect();
        let dictionary = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new(
                    "name",
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                    false,
                ),
                Field::new("seq", DataType::UInt64, true),
            ])),
            vec![Arc::new(dict), seq],
        )
        .unwrap();
        let dir = std::env::temp_dir().join(format!("causeway-corpus-pq-{}", std::process::id()));
        let write = |sub: &str, b: &RecordBatch, props: WriterProperties| {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).unwrap();
            let f = std::fs::File::create(d.join("t.parquet")).unwrap();
            let mut w = ArrowWriter::try_new(f, b.schema(), Some(props)).unwrap();
            w.write(b).unwrap();
            w.close().unwrap();
            parquet_canonical(&d).unwrap()
        };
        let a = write(
            "a",
            &plain,
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build(),
        );
        let b = write(
            "b",
            &dictionary,
            WriterProperties::builder()
                .set_compression(Compression::UNCOMPRESSED)
                .set_max_row_group_row_count(Some(2))
                .set_dictionary_enabled(false)
                .set_statistics_enabled(EnabledStatistics::None)
                .set_created_by("someone else".into())
                .build(),
        );
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(a, b);
        assert_eq!(
            a,
            "files: t.parquet\n== t.parquet: 5 rows\n\
             column \"name\": BYTE_ARRAY UTF8 REQUIRED\n\
             column \"seq\": INT64 UINT_64 OPTIONAL\n\
             [\"gemm\",1]\n[\"copy\",null]\n[\"gemm\",3]\n[\"gemm\",4]\n[\"sync\",5]\n"
        );
    }

    #[test]
    fn sha256_of_known_strings() {
        assert_eq!(
            sha256(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let long = vec![b'a'; 1000];
        assert_eq!(
            sha256(&long),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"
        );
    }
}
