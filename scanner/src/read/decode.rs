//! Decoding a ring: checks every slot of its live window, in parallel chunks (a 64 MiB ring holds a
//! million slots; on one thread, in one walk that another walk can ride along: [`Along`]), counts
//! what could not be read and why, and gives the entries to the analyses as an
//! [`Entries`] view. A closed ring whose window is whole is read where it lies, in the mapping: a
//! decoded copy of 10 M entries is 640 MB of fresh memory, whose first touch cost more than the
//! analyses that read it. A ring with torn slots, or one a live process may still write, is copied.

use causeway_ring::layout::{ent, flags};
use causeway_ring::reader::{committed, reread};
use causeway_ring::{Entry, Kind, RingView, Slot, ENTRY_SIZE};
use rayon::prelude::*;

/// Slots per parallel work item: large enough that scheduling is noise, small enough to spread out.
const CHUNK: usize = 1 << 16;

/// The entries of one ring and the accounting of its window.
pub struct Decoded<'a> {
    /// Where the entries are.
    store: Store<'a>,
    /// Indices of the device intervals and of the other entries that are not calls (NVTX, anchors,
    /// lifecycle …), each sorted: the passes that read only those skip the calls (two thirds of a
    /// level-3 capture) and each other's entries. `None` for a window past 2^32 entries, whose
    /// passes filter every entry instead.
    listed: Option<Listed>,
    /// Committed entries (`entries().len()`).
    pub live: u64,
    /// Slots reserved but never committed (writer died mid-entry, or still writing).
    pub torn: u64,
    /// Committed calls that had not returned (`done == false`).
    pub open: u64,
    /// Entries lost to the overwrite policy (the window starts after them).
    pub overwritten: u64,
    /// Entries the writer dropped because the ring was full (drop policy; from the header).
    pub dropped: u64,
    /// Gives back the pages of the ring's bytes a pass is done with (`Decoded::release`); `None`:
    /// they are kept.
    pages: Option<Release<'a>>,
}

/// Gives back the pages of a byte range of a mapped ring file (offset, length): a pass that has
/// read them calls it, so that a command building a model from the ring does not hold the ring's
/// pages and the model at once (`read::capture::RingFile::release_range`). A page read again later
/// is mapped again from the page cache, as it was.
pub type Release<'a> = &'a (dyn Fn(usize, usize) + Sync);

enum Store<'a> {
    Mapped { view: &'a RingView<'a>, first: u64 },
    Copied(Vec<Entry>),
}

impl Decoded<'_> {
    /// Whether a ring read in place is as it was when `decode` checked it: no writer reserved a slot
    /// since (a process still exiting after it set the closed flag). When it is not, read it again
    /// with `decode_copy`. A copy is always unchanged: it is a snapshot.
    pub fn unchanged(&self) -> bool {
        match &self.store {
            Store::Mapped { view, .. } => view.head_now() == view.header.head,
            Store::Copied(_) => true,
        }
    }

    /// The committed entries in sequence order.
    pub fn entries(&self) -> Entries<'_> {
        match &self.store {
            Store::Mapped { view, first } => {
                Entries::Mapped(Window::new(view, *first, self.live as usize))
            }
            Store::Copied(v) => Entries::Copied(v),
        }
    }

    /// The device intervals (`Kind::DeviceInterval`), with their indices, in sequence order.
    /// Reading them, the call each names (`a0`) is asked for ahead too: the device pass reads it.
    pub fn intervals(&self) -> Subset<'_> {
        self.subset(|l| &l.intervals, |k| k == Some(Kind::DeviceInterval), true)
    }

    /// `intervals` in consecutive parts of at most `chunk` intervals each, with how many each holds
    /// and the entries they lie among (for `release`), for work on several threads; `None` where the
    /// decode kept no list (read `intervals`).
    pub fn interval_parts(
        &self,
        chunk: usize,
    ) -> Option<Vec<(Subset<'_>, usize, std::ops::Range<usize>)>> {
        let l = self.listed.as_ref()?;
        Some(
            (l.intervals.chunks(chunk.max(1)))
                .map(|c| {
                    let among = c[0] as usize..c[c.len() - 1] as usize + 1;
                    (
                        Subset::Listed(self.entries(), c.iter(), true),
                        c.len(),
                        among,
                    )
                })
                .collect(),
        )
    }

    /// `rest`, giving back the pages behind the pass as it goes (`behind`): scattered as they are,
    /// these entries lie on nearly every page of the ring.
    pub fn rest_behind(&self) -> impl Iterator<Item = (usize, Entry)> + '_ {
        let mut behind = self.behind();
        self.rest().inspect(move |&(i, _)| behind.at(i))
    }

    /// A pass's cursor that gives back the pages behind it (`Behind::at`): for a pass over a subset
    /// of the entries in order, whose reads map every part of the ring they fall in.
    fn behind(&self) -> Behind<'_> {
        Behind { d: self, from: 0 }
    }

    /// Gives back the pages that only entries `r` of the window lie on, when the entries are read
    /// in place from a ring decoded to release them (`analysed_releasing`); else nothing. Reading
    /// them again afterwards is correct, and costs page faults.
    pub fn release(&self, r: std::ops::Range<usize>) {
        let (Store::Mapped { view, first }, Some(release)) = (&self.store, self.pages) else {
            return;
        };
        release_slots(view, first + r.start as u64, r.len(), release);
    }

    /// How many calls the entries `range` (indices into `entries()`) hold, from the lists of the
    /// others where the decode kept them (no entry read), else by reading each entry's kind.
    pub fn calls_in(&self, range: std::ops::Range<usize>) -> usize {
        match &self.listed {
            Some(l) => {
                let within = |v: &[u32]| {
                    v.partition_point(|&i| (i as usize) < range.end)
                        - v.partition_point(|&i| (i as usize) < range.start)
                };
                range.len() - within(&l.intervals) - within(&l.rest)
            }
            None => {
                let entries = self.entries();
                range
                    .filter(|&i| entries.get(i).kind == Some(Kind::Call))
                    .count()
            }
        }
    }

    /// [`Decoded::intervals`], for a pass that does not read the calls they name.
    pub fn intervals_alone(&self) -> Subset<'_> {
        self.subset(|l| &l.intervals, |k| k == Some(Kind::DeviceInterval), false)
    }

    /// The entries that are neither calls nor device intervals (NVTX, anchors, graph nodes,
    /// lifecycle, unknown kinds), with their indices, in sequence order.
    pub fn rest(&self) -> Subset<'_> {
        self.subset(|l| &l.rest, |k| !is_listed_apart(k), false)
    }

    fn subset(
        &self,
        list: impl Fn(&Listed) -> &Vec<u32>,
        keep: fn(Option<Kind>) -> bool,
        calls_ahead: bool,
    ) -> Subset<'_> {
        let entries = self.entries();
        match &self.listed {
            Some(l) => Subset::Listed(entries, list(l).iter(), calls_ahead),
            None => Subset::Filtered(entries.iter().enumerate(), keep),
        }
    }
}

/// Entries that `rest` leaves out: calls, and device intervals (listed on their own).
fn is_listed_apart(k: Option<Kind>) -> bool {
    matches!(k, Some(Kind::Call | Kind::DeviceInterval))
}

#[derive(Default)]
struct Listed {
    intervals: Vec<u32>,
    rest: Vec<u32>,
}

impl Listed {
    #[inline(always)]
    fn add(&mut self, i: usize, kind: u8) {
        if kind == Kind::DeviceInterval as u8 {
            self.intervals.push(i as u32);
        } else if kind != Kind::Call as u8 {
            self.rest.push(i as u32);
        }
    }

    fn concat(parts: Vec<Listed>) -> Listed {
        let mut out = Listed {
            intervals: Vec::with_capacity(parts.iter().map(|p| p.intervals.len()).sum()),
            rest: Vec::with_capacity(parts.iter().map(|p| p.rest.len()).sum()),
        };
        for p in parts {
            out.intervals.extend(p.intervals);
            out.rest.extend(p.rest);
        }
        out
    }
}

/// Some of a ring's entries with their indices ([`Decoded::intervals`], [`Decoded::rest`]).
pub enum Subset<'a> {
    /// The listed indices; with `true`, the entries named by the `a0` of those ahead are asked
    /// for too (a device interval's issuing call).
    Listed(Entries<'a>, std::slice::Iter<'a, u32>, bool),
    Filtered(std::iter::Enumerate<Iter<'a>>, fn(Option<Kind>) -> bool),
}

impl Iterator for Subset<'_> {
    type Item = (usize, Entry);

    #[inline(always)]
    fn next(&mut self) -> Option<(usize, Entry)> {
        match self {
            Subset::Listed(entries, ix, calls_ahead) => {
                // The listed entries are scattered among the calls: ask for one a few ahead.
                if let Some(&ahead) = ix.as_slice().get(LIST_AHEAD) {
                    entries.prefetch(ahead as usize);
                }
                // And for the call named by one half as far ahead, asked for before: a cache miss
                // per interval was a quarter of the device pass (perf, 10 M entries).
                if *calls_ahead {
                    if let Some(&half) = ix.as_slice().get(LIST_AHEAD / 2) {
                        entries.prefetch_named(half as usize);
                    }
                }
                ix.next().map(|&i| (i as usize, entries.get(i as usize)))
            }
            Subset::Filtered(it, keep) => it.find(|(_, e)| keep(e.kind)),
        }
    }
}

/// Reads the window `[first, end)` of `view`: in place when the ring is closed and every slot of the
/// window is committed, else as a copy.
pub fn decode<'a>(view: &'a RingView<'a>) -> Decoded<'a> {
    decode_as(view, true)
}

/// Reads the window `[first, end)` of `view` as a copy, whatever its state: for a ring that changed
/// while it was read in place (`Decoded::unchanged`).
pub fn decode_copy<'a>(view: &'a RingView<'a>) -> Decoded<'a> {
    decode_as(view, false)
}

/// `analyse` applied to the decoded ring, again on a copy when the ring was read in place and a
/// writer moved on meanwhile (a process still exiting after it set the closed flag): what every
/// whole-ring analysis uses, so none reads slots that changed under it.
pub fn analysed<'a, T>(view: &'a RingView<'a>, analyse: impl Fn(&Decoded<'a>) -> T) -> T {
    analysed_along(view, None::<&Alone>, |d, _| analyse(d))
}

/// `analysed`, giving back each part of the ring's pages once the check has read it, and letting
/// `analyse`'s passes give back what they read (`Decoded::release`): for an analysis that builds a
/// model of the ring, so that the ring's pages and the model are not held at once.
pub fn analysed_releasing<'r, T>(
    view: &'r RingView<'r>,
    release: Release<'r>,
    analyse: impl Fn(&Decoded<'r>) -> T,
) -> T {
    let (mut d, _) = decode_along(view, true, None::<&Alone>, Some(release));
    d.pages = Some(release);
    let out = analyse(&d);
    if d.unchanged() {
        out
    } else {
        let (d, _) = decode_along(view, false, None::<&Alone>, None);
        analyse(&d)
    }
}

/// A walk that rides along the decoder's own walk over every entry of a ring, in sequence order,
/// instead of making one of its own. The decoder's walk then runs on the calling thread alone (the
/// check of the slots is otherwise split across the pool): for one thread, where it saves a walk
/// over every slot.
pub trait Along {
    type State;
    /// The walk's state for a window of `len` entries.
    fn start(&self, len: usize) -> Self::State;
    /// Entry `i`, each once, in increasing order; `entries` are the window's. Those after `i` are
    /// not checked yet: a step must not read them (a slot torn when read may be committed by the
    /// time the check reaches it, on a ring whose writer is still exiting). Those before `i` are
    /// checked. If the check finds a torn slot, the state is dropped and made again on a copy:
    /// the work done along is then done twice (a ring closed with a torn slot is rare).
    fn step(&self, s: &mut Self::State, entries: Entries, i: usize, e: &Entry);
}

/// No walk along.
struct Alone;

impl Along for Alone {
    type State = ();
    fn start(&self, _: usize) {}
    fn step(&self, _: &mut (), _: Entries, _: usize, _: &Entry) {}
}

/// [`analysed`], with `along` riding the decoder's walk (when given); `analyse` gets its state, made
/// afresh for each decoding (`None` without `along`).
pub fn analysed_along<'a, A: Along, T>(
    view: &'a RingView<'a>,
    along: Option<&A>,
    analyse: impl Fn(&Decoded<'a>, Option<A::State>) -> T,
) -> T {
    let (d, s) = decode_along(view, true, along, None);
    let out = analyse(&d, s);
    if d.unchanged() {
        out
    } else {
        let (d, s) = decode_along(view, false, along, None);
        analyse(&d, s)
    }
}

fn decode_as<'a>(view: &'a RingView<'a>, in_place: bool) -> Decoded<'a> {
    decode_along(view, in_place, None::<&Alone>, None).0
}

fn decode_along<'a, A: Along>(
    view: &'a RingView<'a>,
    in_place: bool,
    along: Option<&A>,
    release: Option<Release>,
) -> (Decoded<'a>, Option<A::State>) {
    let (first, end) = view.window();
    // The reader bounds the window by the ring's capacity, which the file's size bounds.
    let n = usize::try_from(end.saturating_sub(first)).unwrap_or(0);
    let fits = u32::try_from(n).is_ok();
    // Only a closed ring is read in place: a ring a live process may still write is copied, so its
    // slots cannot change under the analyses (and is not checked twice first).
    let closed = view.header.flags & flags::CLOSED != 0;
    if in_place && closed {
        let checked = match along {
            None => whole(view, first, n, fits, release).map(|w| (w, None)),
            Some(a) => whole_along(view, first, n, fits, a).map(|(w, s)| (w, Some(s))),
        };
        if let Some(((open, lists), s)) = checked {
            let d = Decoded {
                store: Store::Mapped { view, first },
                listed: lists,
                live: n as u64,
                torn: 0,
                open,
                overwritten: view.header.overwritten(),
                dropped: view.header.dropped,
                pages: None,
            };
            return (d, s);
        }
    }
    let v = copy(view, first, n);
    let (mut open, mut lists) = (0, fits.then(Listed::default));
    let mut s = along.map(|a| a.start(v.len()));
    for (i, e) in v.iter().enumerate() {
        open += u64::from(!e.done);
        if let Some(l) = &mut lists {
            l.add(i, e.kind.map_or(0, |k| k as u8));
        }
        if let (Some(a), Some(s)) = (along, &mut s) {
            a.step(s, Entries::Copied(&v), i, e);
        }
    }
    let d = Decoded {
        live: v.len() as u64,
        torn: n as u64 - v.len() as u64,
        open,
        listed: lists,
        store: Store::Copied(v),
        overwritten: view.header.overwritten(),
        dropped: view.header.dropped,
        pages: None,
    };
    (d, s)
}

/// What checking a whole window gives: the open calls, and the lists of device intervals and of
/// the other non-calls (when the window's indices fit in 32 bits).
type Checked = (u64, Option<Listed>);

/// [`whole`] in one walk on the calling thread, with `along` taking each entry as it is checked.
fn whole_along<A: Along>(
    view: &RingView,
    first: u64,
    n: usize,
    fits: bool,
    along: &A,
) -> Option<(Checked, A::State)> {
    let window = Window::new(view, first, n);
    let entries = Entries::Mapped(window);
    let mut s = along.start(n);
    let (mut open, mut list) = (0, fits.then(Listed::default));
    for i in 0..n {
        // `first + i` is within the window, whose end cannot overflow (see `whole`).
        let seq = first + i as u64;
        window.prefetch(seq.wrapping_add(PREFETCH));
        let slot = window.slot(seq);
        check(slot, seq, i, &mut open, list.as_mut())?;
        along.step(&mut s, entries, i, &reread(slot, seq));
    }
    Some(((open, list), s))
}

/// Checks slot `seq`, entry `i` of the window: `None` if it is torn; else counts it if it is an
/// open call, and lists it in `list` (when listing).
#[inline(always)]
fn check(
    slot: &[u8; ENTRY_SIZE],
    seq: u64,
    i: usize,
    open: &mut u64,
    list: Option<&mut Listed>,
) -> Option<()> {
    let done = committed(slot, seq)?;
    *open += u64::from(!done);
    // The kind byte shares the stamp's cache line: listing costs no extra read.
    if let Some(l) = list {
        l.add(i, slot[ent::KIND]);
    }
    Some(())
}

/// Checks that every slot of the `n` from `first` is committed with its number, in parallel chunks;
/// if so, the number of open calls among them and (when `fits`) the lists of device intervals and
/// other non-calls. `None` at the first torn slot's chunk. Each chunk's slots are given to `release`
/// once checked (wrapping round the ring: the slots of one chunk are in one or two runs).
fn whole(
    view: &RingView,
    first: u64,
    n: usize,
    fits: bool,
    release: Option<Release>,
) -> Option<Checked> {
    let window = Window::new(view, first, n);
    let chunks: Vec<(u64, Listed)> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            // Offsets within the window: `first + n` is the window's end, which cannot overflow
            // however close to u64::MAX a hostile header puts it.
            let s = first + (c * CHUNK) as u64;
            let e = first + ((c + 1) * CHUNK).min(n) as u64;
            // Slots in holes of a sparse file were never written: torn, and not read.
            if !view.present(s, e) {
                return None;
            }
            let (mut open, mut list) = (0, Listed::default());
            for seq in s..e {
                let listed = fits.then_some(&mut list);
                check(
                    window.slot(seq),
                    seq,
                    (seq - first) as usize,
                    &mut open,
                    listed,
                )?;
            }
            if let Some(release) = release {
                release_slots(view, s, (e - s) as usize, release);
            }
            Some((open, list))
        })
        .collect::<Option<Vec<_>>>()?;
    let open = chunks.iter().map(|c| c.0).sum();
    let lists = fits.then(|| Listed::concat(chunks.into_iter().map(|c| c.1).collect()));
    Some((open, lists))
}

/// `Decoded::behind`.
struct Behind<'d> {
    d: &'d Decoded<'d>,
    from: usize,
}

impl Behind<'_> {
    /// The pass has reached entry `i`: the pages of the entries before it are given back, a chunk
    /// at a time.
    #[inline]
    fn at(&mut self, i: usize) {
        if i >= self.from + CHUNK {
            self.d.release(self.from..i);
            self.from = i;
        }
    }
}

/// Gives the bytes of the `n` slots from sequence number `seq` to `release`: one run, or two where
/// they wrap round the ring.
fn release_slots(view: &RingView, seq: u64, n: usize, release: Release) {
    if n == 0 {
        return;
    }
    let capacity = view.header.capacity as usize;
    let at = |slot: usize| view.header.entries_offset as usize + slot * ENTRY_SIZE;
    // `parse` checked the capacity is a power of two.
    let s = (seq & (view.header.capacity - 1)) as usize;
    let head = n.min(capacity - s);
    release(at(s), head * ENTRY_SIZE);
    if head < n {
        release(at(0), (n - head) * ENTRY_SIZE);
    }
}

/// Copies the committed entries of the `n` slots from `first`, each chunk straight into its place
/// in one vector (a vector per chunk, concatenated, copied every entry a second time). The committed
/// slots are counted first, so the vector holds what is there, not what the header claims (a hostile
/// ring can claim 2^30 reserved slots: 64 GiB); chunks wholly in holes of a sparse file are neither
/// counted nor copied.
fn copy(view: &RingView, first: u64, n: usize) -> Vec<Entry> {
    let chunks = n.div_ceil(CHUNK);
    let range = |c: usize| {
        let s = first + (c * CHUNK) as u64;
        (s, s + (CHUNK.min(n - c * CHUNK)) as u64)
    };
    let window = Window::new(view, first, n);
    let counts: Vec<usize> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let (s, e) = range(c);
            if !view.present(s, e) {
                return 0;
            }
            (s..e)
                .filter(|&seq| committed(window.slot(seq), seq).is_some())
                .count()
        })
        .collect();
    let total: usize = counts.iter().sum();
    let mut entries: Vec<Entry> = crate::util::bigvec::with_capacity(total);
    // Each chunk's place: the counts before it.
    let mut outs = Vec::with_capacity(chunks);
    let mut rest = &mut entries.spare_capacity_mut()[..total];
    for &k in &counts {
        let (head, tail) = rest.split_at_mut(k);
        outs.push(head);
        rest = tail;
    }
    let written: Vec<usize> = outs
        .into_par_iter()
        .enumerate()
        .map(|(c, out)| {
            if out.is_empty() {
                return 0;
            }
            let (s, e) = range(c);
            let mut w = 0;
            for seq in s..e {
                // A live writer may commit a slot between the count and the copy: what does not fit
                // its chunk's place waits for the next read of the ring.
                if w == out.len() {
                    break;
                }
                if let Slot::Entry(en) = view.read(seq) {
                    out[w].write(en);
                    w += 1;
                }
            }
            w
        })
        .collect();
    // Close the holes that slots torn since the count left at the end of their chunks' places.
    let base = entries.as_mut_ptr();
    let mut len = 0;
    let mut at = 0;
    for (c, &w) in written.iter().enumerate() {
        if at != len {
            // SAFETY: chunk `c` initialised `w` entries at `at`; `len <= at`, both ranges lie within
            // the capacity `total`, and `ptr::copy` allows them to overlap. `Entry` is `Copy`.
            unsafe { std::ptr::copy(base.add(at), base.add(len), w) };
        }
        len += w;
        at += counts[c];
    }
    // SAFETY: the first `len` elements are initialised (moved into place above), `len <= total`.
    unsafe { entries.set_len(len) };
    entries
}

/// The live entries of one ring, by index in sequence order: read from the ring's mapping, or from a
/// copy. Cheap to copy; `get` returns an entry by value (a mapped one is read from its slot, and only
/// the fields used are loaded).
#[derive(Clone, Copy)]
pub enum Entries<'a> {
    /// Every slot of the window, each committed with its number.
    Mapped(Window<'a>),
    /// Decoded entries (torn slots left out).
    Copied(&'a [Entry]),
}

/// A ring's window in its mapping: entry `i` has sequence number `first + i`, in slot
/// `(first + i) & mask`.
#[derive(Clone, Copy)]
pub struct Window<'a> {
    slots: &'a [[u8; ENTRY_SIZE]],
    mask: u64,
    first: u64,
    len: usize,
}

impl<'a> Window<'a> {
    /// The `len` slots of `view` from sequence number `first`.
    fn new(view: &RingView<'a>, first: u64, len: usize) -> Window<'a> {
        Window {
            slots: view.slots(),
            // `parse` checked the capacity is a power of two.
            mask: view.header.capacity - 1,
            first,
            len,
        }
    }

    /// The slot of sequence number `seq`.
    #[inline(always)]
    fn slot(&self, seq: u64) -> &'a [u8; ENTRY_SIZE] {
        &self.slots[(seq & self.mask) as usize]
    }

    /// Asks for the slot of `seq` to be brought into the cache (any `seq`: one out of the mapping
    /// asks for nothing).
    #[inline(always)]
    fn prefetch(&self, seq: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(p) = self.slots.get((seq & self.mask) as usize) {
            // SAFETY: a prefetch is a hint: it reads nothing the program sees and cannot fault.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    p.as_ptr().cast(),
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = seq;
    }
}

impl<'a> From<&'a [Entry]> for Entries<'a> {
    fn from(v: &'a [Entry]) -> Self {
        Entries::Copied(v)
    }
}

impl<'a> From<&'a Vec<Entry>> for Entries<'a> {
    fn from(v: &'a Vec<Entry>) -> Self {
        Entries::Copied(v)
    }
}

impl<'a> Entries<'a> {
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Entries::Mapped(w) => w.len,
            Entries::Copied(v) => v.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entry `i`. Panics when `i >= len()`, as slice indexing does.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Entry {
        match *self {
            Entries::Mapped(w) => {
                assert!(i < w.len, "entry {i} of {}", w.len);
                let seq = w.first + i as u64;
                reread(w.slot(seq), seq)
            }
            Entries::Copied(v) => v[i],
        }
    }

    /// Asks for entry `i` to be brought into the cache (a mapped one; a copy is left to the hardware).
    /// Any `i` will do: one past the window asks for a slot that is no entry, or for nothing.
    #[inline(always)]
    pub fn prefetch(&self, i: usize) {
        if let Entries::Mapped(w) = self {
            w.prefetch(w.first.wrapping_add(i as u64));
        }
    }

    /// Asks for the entry whose sequence number is entry `i`'s `a0` (a device interval's issuing
    /// call) to be brought into the cache: a mapped one, and only when `i` is an entry.
    #[inline(always)]
    pub fn prefetch_named(&self, i: usize) {
        if let Entries::Mapped(w) = self {
            if i < w.len {
                let slot = w.slot(w.first.wrapping_add(i as u64));
                w.prefetch(u64::from_le_bytes(causeway_ring::reader::field(
                    slot,
                    ent::A0,
                )));
            }
        }
    }

    /// The entries in sequence order, by value.
    pub fn iter(&self) -> Iter<'a> {
        match *self {
            Entries::Mapped(w) => Iter::Mapped {
                window: w,
                seqs: w.first..w.first + w.len as u64,
            },
            Entries::Copied(v) => Iter::Copied(v.iter()),
        }
    }

    /// The index of the entry with sequence number `seq`. Sequence numbers are dense except where
    /// slots were torn, so the offset from the first entry is nearly always the index: one probe,
    /// then a search only near torn slots (a plain binary search was a cache miss per step, per
    /// device interval).
    #[inline]
    pub fn index_of_seq(&self, seq: u64) -> Option<usize> {
        match self {
            Entries::Mapped(w) => seq
                .checked_sub(w.first)
                .and_then(|g| usize::try_from(g).ok())
                .filter(|&g| g < w.len),
            Entries::Copied(v) => index_of_seq(v, seq),
        }
    }
}

/// [`Entries::iter`].
pub enum Iter<'a> {
    Mapped {
        window: Window<'a>,
        seqs: std::ops::Range<u64>,
    },
    Copied(std::slice::Iter<'a, Entry>),
}

impl Iterator for Iter<'_> {
    type Item = Entry;

    #[inline(always)]
    fn next(&mut self) -> Option<Entry> {
        match self {
            Iter::Mapped { window, seqs } => seqs.next().map(|s| {
                window.prefetch(s.wrapping_add(PREFETCH));
                reread(window.slot(s), s)
            }),
            Iter::Copied(it) => it.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Mapped { seqs, .. } => seqs.size_hint(),
            Iter::Copied(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Slots ahead of a walk to ask the cache for: the mapping is in 4 KiB pages, at whose edges the
/// hardware prefetcher stops.
const PREFETCH: u64 = 16;

/// Listed entries ahead of a walk over a list to ask the cache for.
const LIST_AHEAD: usize = 8;

/// [`Entries::index_of_seq`] over decoded entries (sorted by sequence, as `decode` copies them).
#[inline]
fn index_of_seq(entries: &[Entry], seq: u64) -> Option<usize> {
    let first = entries.first()?.seq;
    let guess = seq.checked_sub(first)?;
    if let Some(e) = usize::try_from(guess).ok().and_then(|g| entries.get(g)) {
        if e.seq == seq {
            return Some(guess as usize);
        }
    }
    // Torn slots only shift entries down: the entry, if present, is at or before the guess.
    let hi =
        usize::try_from(guess).map_or(entries.len(), |g| g.saturating_add(1).min(entries.len()));
    entries[..hi].binary_search_by_key(&seq, |x| x.seq).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seq: u64) -> Entry {
        Entry {
            seq,
            done: true,
            t_begin: 0,
            t_end: 0,
            tid: 1,
            api: 0,
            kind: None,
            flags: 0,
            result: 0,
            depth: 0,
            node: 0,
            a0: 0,
            a1: 0,
            a2: 0,
        }
    }

    /// `calls_in` from the decode's lists equals the calls counted entry by entry, for every range,
    /// and so does its fallback without lists.
    #[test]
    fn calls_in_counts_the_calls_of_any_range() {
        let kinds = [
            Some(Kind::Call),
            Some(Kind::DeviceInterval),
            Some(Kind::Call),
            Some(Kind::RangePush),
            None,
            Some(Kind::Call),
            Some(Kind::Call),
            Some(Kind::DeviceAnchor),
            Some(Kind::Call),
        ];
        let v: Vec<Entry> = (kinds.iter().enumerate())
            .map(|(i, &k)| Entry {
                kind: k,
                ..at(100 + i as u64)
            })
            .collect();
        let mut l = Listed {
            intervals: Vec::new(),
            rest: Vec::new(),
        };
        for (i, e) in v.iter().enumerate() {
            l.add(i, e.kind.map_or(0, |k| k as u8));
        }
        let decoded = |listed| Decoded {
            store: Store::Copied(v.clone()),
            listed,
            live: v.len() as u64,
            torn: 0,
            open: 0,
            overwritten: 0,
            dropped: 0,
            pages: None,
        };
        let (with, without) = (decoded(Some(l)), decoded(None));
        for a in 0..=v.len() {
            for b in a..=v.len() {
                let want = kinds[a..b]
                    .iter()
                    .filter(|&&k| k == Some(Kind::Call))
                    .count();
                assert_eq!(with.calls_in(a..b), want, "{a}..{b}");
                assert_eq!(without.calls_in(a..b), want, "{a}..{b} without lists");
            }
        }
    }

    #[test]
    fn index_of_seq_finds_entries_across_torn_gaps() {
        // Window from 100; slots 103 and 107..=108 torn.
        let seqs = [100, 101, 102, 104, 105, 106, 109, 110];
        let e: Vec<Entry> = seqs.iter().map(|&s| at(s)).collect();
        for (i, &s) in seqs.iter().enumerate() {
            assert_eq!(index_of_seq(&e, s), Some(i), "seq {s}");
        }
        for s in [0, 99, 103, 107, 108, 111, u64::MAX] {
            assert_eq!(index_of_seq(&e, s), None, "seq {s}");
        }
        assert_eq!(index_of_seq(&[], 5), None);
    }
}
