//! The reader side: validates every field of a ring file before trusting it and reads entries out of
//! a byte slice (usually a read-only mapping). Bad files give a `FormatError` naming the problem; nothing
//! here panics on hostile input.

use crate::clock::Anchor;
use crate::layout::{
    self, ent, hdr, rec, ClockKind, Kind, Policy, StrKind, ENTRY_SIZE, HEADER_SIZE,
};
use std::fmt;

/// The largest capacity and string area a reader accepts; anything bigger is corruption, not a capture.
const MAX_CAPACITY: u64 = 1 << 36;
const MAX_STRINGS: u64 = 1 << 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(pub String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

fn err<T>(msg: impl Into<String>) -> Result<T, FormatError> {
    Err(FormatError(msg.into()))
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map_or(0, |s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
}

fn text(b: &[u8], off: usize, len: usize) -> String {
    String::from_utf8_lossy(b.get(off..off + len).unwrap_or(&[])).into_owned()
}

/// `N` bytes of a slot at `off` (a constant offset within it).
#[inline(always)]
pub fn field<const N: usize>(b: &[u8; ENTRY_SIZE], off: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&b[off..off + N]);
    out
}

/// Whether a slot's bytes (`RingView::slots`) hold entry `seq` committed, and whether it had returned
/// (`done`); `None` for a torn slot or another entry's. Reads the stamp only: the cheap check of a
/// whole window.
#[inline(always)]
pub fn committed(b: &[u8; ENTRY_SIZE], seq: u64) -> Option<bool> {
    match layout::unstamp(u64::from_le_bytes(field(b, ent::STAMP))) {
        Some((s, done)) if s == seq => Some(done),
        _ => None,
    }
}

/// A slot's fields as an entry numbered `seq`, its stamp not checked: for a slot [`committed`]
/// found committed with that number. A slot changed since reads as whatever it now holds.
#[inline(always)]
pub fn reread(b: &[u8; ENTRY_SIZE], seq: u64) -> Entry {
    let done = u64::from_le_bytes(field(b, ent::STAMP)) & 3 == 3;
    entry(b, seq, done)
}

/// A slot's fields as an entry numbered `seq`. An open call's end and result are not yet written.
#[inline(always)]
fn entry(b: &[u8; ENTRY_SIZE], seq: u64, done: bool) -> Entry {
    Entry {
        seq,
        done,
        t_begin: u64::from_le_bytes(field(b, ent::T_BEGIN)),
        t_end: if done {
            u64::from_le_bytes(field(b, ent::T_END))
        } else {
            0
        },
        tid: u32::from_le_bytes(field(b, ent::TID)),
        api: u16::from_le_bytes(field(b, ent::API)),
        kind: Kind::from_u8(b[ent::KIND]),
        flags: b[ent::FLAGS],
        result: if done {
            i32::from_le_bytes(field(b, ent::RESULT))
        } else {
            0
        },
        depth: u16::from_le_bytes(field(b, ent::DEPTH)),
        node: u16::from_le_bytes(field(b, ent::NODE)),
        a0: u64::from_le_bytes(field(b, ent::A0)),
        a1: u64::from_le_bytes(field(b, ent::A1)),
        a2: u64::from_le_bytes(field(b, ent::A2)),
    }
}

#[derive(Debug, Clone)]
pub struct Header {
    pub version: u32,
    pub policy: Policy,
    pub capacity: u64,
    pub strings_offset: u64,
    pub strings_size: u64,
    pub entries_offset: u64,
    pub pid: u32,
    pub ppid: u32,
    pub level: u32,
    pub clock: ClockKind,
    pub flags: u32,
    /// Device-timing backend (`layout::Backend` as a number; unknown values are kept as they are).
    pub backend: u32,
    /// One in this many device-work calls per thread was timed (0 or 1: every one).
    pub sample_every: u32,
    pub head: u64,
    /// Committed entries found past the header's `head` (0 normally): a header whose head word was
    /// zeroed or rolled back would otherwise hide them. `head` includes them.
    pub head_behind: u64,
    pub dropped: u64,
    pub strings_used: u64,
    pub strings_dropped: u32,
    pub anchor0: Anchor,
    pub anchor1: Anchor,
    pub ticks_per_sec: u64,
    /// The tick rate used for conversion: measured between the anchors when they are far enough apart,
    /// else `ticks_per_sec`.
    pub rate: u64,
    pub exe: String,
    pub host: String,
    pub notice: Option<String>,
    pub counters: [u64; hdr::COUNTER_SLOTS],
}

impl Header {
    /// Entries the overwrite policy lost: the oldest ones, whose slots newer entries took (0 under
    /// the drop policy, which counts its losses in `dropped`).
    pub fn overwritten(&self) -> u64 {
        match self.policy {
            Policy::Drop => 0,
            Policy::Overwrite => self.head.saturating_sub(self.capacity),
        }
    }

    /// Converts writer ticks to CLOCK_MONOTONIC nanoseconds: through the two anchors when they are far
    /// enough apart, otherwise through the rate measured at start-up.
    #[inline]
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        crate::clock::ticks_to_ns(self.clock, &self.anchor0, self.rate, ticks)
    }

    /// A converter of this ring's ticks for a pass over many of them (`clock::Converter`): the same
    /// nanoseconds as `ticks_to_ns`, for less work.
    pub fn converter(&self) -> crate::clock::Converter {
        crate::clock::Converter::new(self.clock, &self.anchor0, self.rate)
    }

    /// A duration in ticks as nanoseconds.
    #[inline]
    pub fn span_ns(&self, t0: u64, t1: u64) -> u64 {
        self.ticks_to_ns(t1).saturating_sub(self.ticks_to_ns(t0))
    }
}

/// One record of the string area.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrRecord {
    pub kind: StrKind,
    pub key: u64,
    pub aux: u32,
    pub text: String,
}

/// One committed entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub seq: u64,
    /// False while the call had not returned when the capture was read (hung, or the process died in it).
    pub done: bool,
    pub t_begin: u64,
    pub t_end: u64,
    pub tid: u32,
    pub api: u16,
    pub kind: Option<Kind>,
    pub flags: u8,
    pub result: i32,
    pub depth: u16,
    /// `ent::NODE`: a device interval's graph node index + 1 (0: not graph work).
    pub node: u16,
    pub a0: u64,
    pub a1: u64,
    pub a2: u64,
}

/// What a reserved slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Entry(Entry),
    /// Reserved but never committed (the writer died mid-entry, or is still writing it).
    Torn,
}

/// A validated view of one ring file.
pub struct RingView<'a> {
    bytes: &'a [u8],
    pub header: Header,
    pub strings: Vec<StrRecord>,
    /// A string record was reserved but never committed; records after it are unreadable.
    pub strings_torn: bool,
    /// The byte ranges of the file that hold data (the rest are holes of a sparse file, which read
    /// as zeros); `None`: all of it. A hostile ring can claim billions of reserved slots in a sparse
    /// file: readers skip the holes (`present`) rather than read, or make room for, what is not there.
    data: Option<&'a [(u64, u64)]>,
}

impl<'a> RingView<'a> {
    pub fn parse(b: &'a [u8]) -> Result<RingView<'a>, FormatError> {
        if b.len() < HEADER_SIZE {
            if b.len() >= 8 && b[..8] != layout::MAGIC {
                return err("not a causeway ring (no CAUSEWAY magic)");
            }
            return err(format!(
                "truncated: {} bytes, a ring header alone is {HEADER_SIZE}",
                b.len()
            ));
        }
        if b[..8] != layout::MAGIC {
            if b[..8].iter().all(|&c| c == 0) {
                return err("header never completed (the writer died while creating the ring)");
            }
            return err("not a causeway ring (no CAUSEWAY magic)");
        }
        let version = u32_at(b, hdr::VERSION);
        if version != layout::VERSION {
            return err(format!(
                "unsupported format version {version} (this reader reads version {})",
                layout::VERSION
            ));
        }
        if u32_at(b, hdr::HEADER_SIZE) as usize != HEADER_SIZE
            || u32_at(b, hdr::ENTRY_SIZE) as usize != ENTRY_SIZE
        {
            return err(format!(
                "corrupt header: header size {} / entry size {} (expected {HEADER_SIZE} / {ENTRY_SIZE})",
                u32_at(b, hdr::HEADER_SIZE),
                u32_at(b, hdr::ENTRY_SIZE)
            ));
        }
        let policy = Policy::from_u32(u32_at(b, hdr::POLICY)).ok_or_else(|| {
            FormatError(format!(
                "corrupt header: unknown policy {}",
                u32_at(b, hdr::POLICY)
            ))
        })?;
        let clock = ClockKind::from_u32(u32_at(b, hdr::CLOCK)).ok_or_else(|| {
            FormatError(format!(
                "corrupt header: unknown clock {}",
                u32_at(b, hdr::CLOCK)
            ))
        })?;
        let capacity = u64_at(b, hdr::CAPACITY);
        if capacity == 0 || !capacity.is_power_of_two() || capacity > MAX_CAPACITY {
            return err(format!(
                "corrupt header: capacity {capacity} is not a power of two in 1..=2^36"
            ));
        }
        let strings_offset = u64_at(b, hdr::STRINGS_OFFSET);
        let strings_size = u64_at(b, hdr::STRINGS_SIZE);
        let entries_offset = u64_at(b, hdr::ENTRIES_OFFSET);
        if strings_offset != HEADER_SIZE as u64
            || strings_size & 7 != 0
            || strings_size > MAX_STRINGS
            || entries_offset != strings_offset + strings_size
        {
            return err(format!(
                "corrupt header: string area at {strings_offset}+{strings_size}, entries at {entries_offset}"
            ));
        }
        let need = layout::file_size(capacity, strings_size);
        if (b.len() as u64) < need {
            return err(format!(
                "truncated: {} bytes, the header describes {need}",
                b.len()
            ));
        }
        let level = u32_at(b, hdr::LEVEL);
        if !(1..=4).contains(&level) {
            return err(format!(
                "corrupt header: capture level {level} is not 1..=4"
            ));
        }
        let exe_len = u32_at(b, hdr::EXE_LEN) as usize;
        let host_len = u32_at(b, hdr::HOST_LEN) as usize;
        if exe_len > hdr::EXE_MAX || host_len > hdr::HOST_MAX {
            return err("corrupt header: executable or host name longer than its field");
        }
        let notice_len = u32_at(b, hdr::NOTICE_LEN) as usize;
        let notice = (notice_len > 0 && notice_len <= hdr::NOTICE_MAX)
            .then(|| text(b, hdr::NOTICE, notice_len));
        let strings_used = u64_at(b, hdr::STR_CURSOR);
        if strings_used > strings_size {
            return err(format!(
                "corrupt header: {strings_used} string bytes used of {strings_size}"
            ));
        }
        let anchor = |off: usize| Anchor {
            ticks: u64_at(b, off),
            mono_ns: u64_at(b, off + 8),
            real_ns: u64_at(b, off + 16),
        };
        let mut counters = [0u64; hdr::COUNTER_SLOTS];
        for (i, c) in counters.iter_mut().enumerate() {
            *c = u64_at(b, hdr::COUNTERS + 8 * i);
        }
        let mut header = Header {
            version,
            policy,
            capacity,
            strings_offset,
            strings_size,
            entries_offset,
            pid: u32_at(b, hdr::PID),
            ppid: u32_at(b, hdr::PPID),
            level,
            clock,
            flags: u32_at(b, hdr::FLAGS),
            backend: u32_at(b, hdr::BACKEND),
            sample_every: u32_at(b, hdr::SAMPLE_EVERY),
            head: u64_at(b, hdr::HEAD),
            head_behind: 0,
            dropped: u64_at(b, hdr::DROPPED),
            strings_used,
            strings_dropped: u32_at(b, hdr::STR_DROPPED),
            anchor0: anchor(hdr::ANCHOR0),
            // An odd sequence word means the writer died while refreshing anchor1: it is half written,
            // so fall back to the start anchor (and with it to the measured tick rate).
            anchor1: if u64_at(b, hdr::ANCHOR1_SEQ) & 1 == 1 {
                anchor(hdr::ANCHOR0)
            } else {
                anchor(hdr::ANCHOR1)
            },
            ticks_per_sec: u64_at(b, hdr::TICKS_PER_SEC),
            rate: 0,
            exe: text(b, hdr::EXE, exe_len),
            host: text(b, hdr::HOST, host_len),
            notice,
            counters,
        };
        header.rate = match crate::clock::rate(&header.anchor0, &header.anchor1) {
            0 => header.ticks_per_sec,
            r => r,
        };
        let (strings, strings_torn) = parse_strings(b, &header)?;
        let mut view = RingView {
            bytes: b,
            header,
            strings,
            strings_torn,
            data: None,
        };
        // Entries committed past the head word: a damaged header must not hide them silently. Only
        // when the slot at the head holds the next entry is anything scanned; at most a capacity.
        let head = view.header.head;
        let mut seq = head;
        while seq - head < view.header.capacity
            && seq < u64::MAX >> 3
            && committed(view.slot(seq).1, seq).is_some()
        {
            seq += 1;
        }
        view.header.head_behind = seq - head;
        view.header.head = seq;
        Ok(view)
    }

    /// The view, told which byte ranges of the file hold data (sorted, disjoint; from
    /// `SEEK_DATA`/`SEEK_HOLE`): the slots that lie wholly in holes are then known to be empty
    /// without reading them.
    pub fn with_data(mut self, data: &'a [(u64, u64)]) -> RingView<'a> {
        self.data = Some(data);
        self
    }

    /// Whether any slot of sequence numbers `[from, to)` may hold an entry: false only when all of
    /// them lie in holes of the file (they read as zeros: never committed).
    pub fn present(&self, from: u64, to: u64) -> bool {
        let Some(data) = self.data else {
            return true;
        };
        if to <= from {
            return false;
        }
        let cap = self.header.capacity;
        let base = self.header.entries_offset;
        let byte = |slot: u64| base + slot * ENTRY_SIZE as u64;
        let overlaps = |lo: u64, hi: u64| {
            if lo >= hi {
                return false;
            }
            // The first data range ending after `lo` starts before `hi`.
            let i = data.partition_point(|&(_, e)| e <= lo);
            data.get(i).is_some_and(|&(b, _)| b < hi)
        };
        if to - from >= cap {
            return overlaps(byte(0), byte(cap));
        }
        let (s, e) = (from & (cap - 1), to & (cap - 1));
        if s < e {
            overlaps(byte(s), byte(e))
        } else {
            overlaps(byte(s), byte(cap)) || overlaps(byte(0), byte(e))
        }
    }

    /// The ring file's size in bytes.
    pub fn size(&self) -> usize {
        self.bytes.len()
    }

    /// Sequence numbers of the slots that can hold live entries: `[first, end)`. Under the overwrite
    /// policy `first` is the number of entries overwritten (`Header::overwritten`).
    pub fn window(&self) -> (u64, u64) {
        let h = &self.header;
        match h.policy {
            Policy::Drop => (0, h.head.min(h.capacity)),
            Policy::Overwrite => (h.overwritten(), h.head),
        }
    }

    /// Reads the slot that sequence number `seq` was given.
    pub fn read(&self, seq: u64) -> Slot {
        let (off, b) = self.slot(seq);
        let stamp = u64::from_le_bytes(field(b, ent::STAMP));
        match layout::unstamp(stamp) {
            Some((s, done)) if s == seq => self.settled(off, stamp, entry(b, seq, done)),
            _ => Slot::Torn,
        }
    }

    /// The header's head word as the file holds it now (`header.head` is as it was at `parse`): a
    /// reader that reads a ring in place checks it again afterwards, to know no writer moved on.
    pub fn head_now(&self) -> u64 {
        // SAFETY: `parse` checked the header lies within the bytes; HEAD is 8-aligned in the
        // page-aligned mapping but read unaligned to make no assumption. Volatile: the file may be
        // written meanwhile, and the compiler must not reuse an earlier read.
        let b = unsafe {
            std::ptr::read_volatile(self.bytes.as_ptr().add(hdr::HEAD) as *const [u8; 8])
        };
        u64::from_le_bytes(b)
    }

    /// Every slot of the ring, in slot order (sequence number `seq` lives in slot
    /// `seq & (capacity - 1)`): for a reader that checked a window with `committed` and reads it
    /// again with [`reread`] (a closed ring, which nothing writes any more).
    pub fn slots(&self) -> &'a [[u8; ENTRY_SIZE]] {
        let start = self.header.entries_offset as usize;
        let n = self.header.capacity as usize;
        // `parse` checked that every slot lies within the file.
        let (slots, _) = self.bytes[start..start + n * ENTRY_SIZE].as_chunks::<ENTRY_SIZE>();
        slots
    }

    /// The byte offset and bytes of the slot `seq` maps to.
    #[inline]
    fn slot(&self, seq: u64) -> (usize, &[u8; ENTRY_SIZE]) {
        let off = self.header.entries_offset as usize
            + ((seq & (self.header.capacity - 1)) as usize) * ENTRY_SIZE;
        // `parse` checked that every slot lies within the file.
        let b = self.bytes[off..off + ENTRY_SIZE]
            .try_into()
            .expect("a slot is ENTRY_SIZE bytes");
        (off, b)
    }

    /// The entry if its stamp is unchanged after the copy; a slot rewritten meanwhile (the mapping of
    /// a live process) is torn. The re-read is volatile so the compiler cannot reuse the first one.
    fn settled(&self, off: usize, stamp: u64, e: Entry) -> Slot {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        // SAFETY: `off` was bounds-checked by the slice taken in `read`; the stamp is 8-aligned in the
        // mapping (page-aligned base, 64-byte slots) but read unaligned to make no assumption.
        let again = unsafe {
            std::ptr::read_volatile(self.bytes.as_ptr().add(off + ent::STAMP) as *const [u8; 8])
        };
        if u64::from_le_bytes(again) == stamp {
            Slot::Entry(e)
        } else {
            Slot::Torn
        }
    }
}

fn parse_strings(b: &[u8], h: &Header) -> Result<(Vec<StrRecord>, bool), FormatError> {
    let area = &b[h.strings_offset as usize..(h.strings_offset + h.strings_used) as usize];
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < area.len() {
        let size = u32_at(area, pos + rec::SIZE) as usize;
        if size == 0 {
            return Ok((out, true));
        }
        let len = u32_at(area, pos + rec::LEN) as usize;
        if size < rec::HDR || size & 7 != 0 || pos + size > area.len() || rec::HDR + len > size {
            return err(format!("corrupt string record at offset {pos} of the string area (size {size}, length {len})"));
        }
        let kind_raw = u32_at(area, pos + rec::KIND);
        let kind = StrKind::from_u32(kind_raw).ok_or_else(|| {
            FormatError(format!(
                "corrupt string record at offset {pos}: unknown kind {kind_raw}"
            ))
        })?;
        out.push(StrRecord {
            kind,
            key: u64_at(area, pos + rec::KEY),
            aux: u32_at(area, pos + rec::AUX),
            text: text(area, pos + rec::HDR, len),
        });
        pos += size;
    }
    Ok((out, false))
}
