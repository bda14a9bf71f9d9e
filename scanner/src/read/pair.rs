//! Nesting of calls: for each call entry, the call that contains it on the same thread. The shim hooks
//! both the CUDA runtime and the driver, so one `cudaLaunchKernel` (depth 0) shows up again as the
//! `cuLaunchKernel` (depth 1) the runtime made for it; the report needs the pairing to count that launch
//! once and to borrow the driver call's kernel name when the runtime entry has none.

use causeway_ring::layout::entry_flags;
use causeway_ring::{Class, Entry, Kind};

use crate::read::decode::Entries;
use crate::util::fastmap::{ByThread, HashMap};

/// How the calls of one ring nest, computed once per ring (kernel counting and the wait pass both
/// need it): per entry its tag and its same-class child. An entry whose index does not fit in 32 bits
/// (a window of 256 GiB of entries) has no parent or child.
pub struct Nesting {
    /// Per entry, how far after it its same-class child is: 0 none, [`FAR`] in `far`. A byte, not an
    /// index: the child is nearly always a few entries on (the driver call the runtime call made
    /// next), and a table of 32-bit indices was 40 MB of fresh memory for 10 M entries.
    child: Vec<u8>,
    /// Children [`FAR`] or more entries after their parent, by parent index.
    far: HashMap<u32, u32>,
    /// Per entry, what the passes that walk calls in order need to know before reading it
    /// ([`Tag`], packed in a byte): most entries (device intervals, the driver call inside each
    /// runtime call) are skipped without touching their 64-byte slot or their parent's.
    tags: Vec<u8>,
    /// The threads that made calls, in no order.
    threads: Vec<u32>,
}

/// What an entry is to a pass over calls in sequence order (kernel counting, waits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// Neither a call of a known class nor a graph node.
    Skip,
    /// A `Kind::GraphNode` entry.
    GraphNode,
    /// A call of a known class; `outermost` unless it is nested directly in a call of the same
    /// class (the same operation one layer down).
    Call { class: Class, outermost: bool },
}

const TAG_SKIP: u8 = 0;
const TAG_GRAPH_NODE: u8 = 1;

impl Tag {
    fn pack(self) -> u8 {
        match self {
            Tag::Skip => TAG_SKIP,
            Tag::GraphNode => TAG_GRAPH_NODE,
            Tag::Call { class, outermost } => 2 + (class as u8) * 2 + u8::from(!outermost),
        }
    }

    #[inline]
    fn unpack(b: u8) -> Tag {
        match b {
            TAG_SKIP => Tag::Skip,
            TAG_GRAPH_NODE => Tag::GraphNode,
            _ => Tag::Call {
                class: Class::from_u8((b - 2) / 2),
                outermost: (b - 2) & 1 == 0,
            },
        }
    }
}

/// A `child` distance that is looked up in `far`.
const FAR: u8 = u8::MAX;

impl Nesting {
    /// One pass over the entries in sequence order. `class_of` gives a call entry's API class.
    pub fn of<'e>(
        entries: impl Into<Entries<'e>>,
        class_of: impl Fn(&Entry) -> Option<Class>,
    ) -> Nesting {
        Nesting::visiting(entries.into(), class_of, |_, _, _| {})
    }

    /// [`Nesting::of`], handing each call entry to `visit` on the way, with its index and its parent:
    /// the innermost call enclosing it on the same thread, with depth one less and a time span that
    /// contains it (`None` for depth-0 calls and calls whose parent was lost: dropped, overwritten or
    /// torn). A pass over millions of entries costs more in memory traffic than most of what is done
    /// per entry, so what needs only the calls rides along; and no table of parents is kept, which
    /// only `visit` needs.
    pub fn visiting(
        entries: Entries,
        class_of: impl Fn(&Entry) -> Option<Class>,
        mut visit: impl FnMut(usize, &Entry, Option<usize>),
    ) -> Nesting {
        let mut n = Nester::new(entries.len());
        for (i, e) in entries.iter().enumerate() {
            if let Some(parent) = n.step(i, &e, &class_of) {
                visit(i, &e, parent);
            }
        }
        n.finish()
    }

    /// The thread ids of the calls, in no order: the nesting keeps a stack per thread anyway.
    pub fn threads(&self) -> &[u32] {
        &self.threads
    }

    /// What entry `i` is to a pass over calls ([`Tag`]).
    #[inline]
    pub fn tag(&self, i: usize) -> Tag {
        self.tags.get(i).map_or(Tag::Skip, |&b| Tag::unpack(b))
    }

    /// Call `i`'s first child that is the same operation one layer down: a call of the same class
    /// nested directly in it (the driver launch a runtime launch made).
    #[inline]
    pub fn child(&self, i: usize) -> Option<usize> {
        match self.child.get(i).copied() {
            None | Some(0) => None,
            Some(FAR) => self.far.get(&(i as u32)).map(|&c| c as usize),
            Some(d) => Some(i + d as usize),
        }
    }
}

/// [`Nesting`] built one entry at a time, in sequence order: what [`Nesting::visiting`] walks, and
/// what a walk made for another reason (the decoder's check of every slot, on one thread) can carry
/// along instead of a walk of its own.
pub struct Nester {
    child: Vec<u8>,
    far: HashMap<u32, u32>,
    tags: Vec<u8>,
    /// Per thread, its stack in `stacks`.
    slot: ByThread<usize>,
    /// Per thread, the chain of calls that may still enclose its next call, depths increasing.
    /// Sequence numbers are reserved in program order on a thread and entries arrive sorted by
    /// sequence, so each thread's calls arrive in the order it made them. A stack of this shape keeps
    /// hostile depths (up to 65535) linear in time and memory.
    stacks: Vec<Vec<Frame>>,
}

impl Nester {
    /// For a window of `len` entries.
    pub fn new(len: usize) -> Nester {
        Nester {
            child: crate::util::bigvec::filled(len, 0u8),
            far: HashMap::default(),
            tags: crate::util::bigvec::filled(len, TAG_SKIP),
            slot: ByThread::default(),
            stacks: Vec::new(),
        }
    }

    /// Entry `i` (each index once, increasing, below the window's length). For a call, its parent
    /// (as [`Nesting::visiting`] gives it); `None` for any other entry.
    #[inline(always)]
    pub fn step(
        &mut self,
        i: usize,
        e: &Entry,
        class_of: impl Fn(&Entry) -> Option<Class>,
    ) -> Option<Option<usize>> {
        if e.kind != Some(Kind::Call) {
            if e.kind == Some(Kind::GraphNode) {
                self.tags[i] = TAG_GRAPH_NODE;
            }
            return None;
        }
        let c = class_of(e);
        let mut outermost = true;
        let mut parent = None;
        let stacks = &mut self.stacks;
        let b = self.slot.get_or_insert_with(e.tid, || {
            stacks.push(Vec::new());
            stacks.len() - 1
        });
        let stack = &mut stacks[b];
        // A call at depth d started after every earlier call at depth >= d on this thread had
        // returned.
        while stack.last().is_some_and(|f| f.depth >= e.depth) {
            stack.pop();
        }
        if let Some(f) = stack.last() {
            let p = f.index;
            let small = u32::try_from(i).ok().zip(u32::try_from(p).ok());
            if let Some((i32, _)) =
                small.filter(|_| e.depth > 0 && f.depth == e.depth - 1 && f.contains(e))
            {
                parent = Some(p);
                if c.is_some() && f.class == c {
                    outermost = false;
                    if self.child[p] == 0 {
                        // i > p: a parent precedes its children.
                        match u8::try_from(i - p) {
                            Ok(d) if d < FAR => self.child[p] = d,
                            _ => {
                                self.child[p] = FAR;
                                self.far.insert(p as u32, i32);
                            }
                        }
                    }
                }
            }
        }
        if let Some(class) = c {
            self.tags[i] = Tag::Call { class, outermost }.pack();
        }
        stack.push(Frame {
            depth: e.depth,
            class: c,
            done: e.done,
            index: i,
            t_begin: e.t_begin,
            t_end: e.t_end,
        });
        Some(parent)
    }

    pub fn finish(self) -> Nesting {
        Nesting {
            child: self.child,
            far: self.far,
            tags: self.tags,
            threads: self.slot.ids().collect(),
        }
    }
}

/// A call that may still enclose its thread's next call: what the nesting needs of it, kept on the
/// stack so that the entry is not read again.
struct Frame {
    depth: u16,
    class: Option<Class>,
    done: bool,
    index: usize,
    t_begin: u64,
    t_end: u64,
}

impl Frame {
    /// Whether this call's span contains `c`'s. An open call (`done == false`) extends to the end of
    /// the capture.
    #[inline]
    fn contains(&self, c: &Entry) -> bool {
        if self.t_begin > c.t_begin {
            return false;
        }
        if !self.done {
            return true;
        }
        c.t_begin <= self.t_end && (!c.done || c.t_end <= self.t_end)
    }
}

/// Entry `i` with the arguments it was recorded with — or, for a call recorded through CUPTI's runtime
/// callback (which carries none), those of its same-class child: stream, handles and the per-thread
/// stream flag.
#[inline(always)]
pub fn args_of(entries: Entries, nest: &Nesting, i: usize) -> Entry {
    let e = entries.get(i);
    if e.flags & entry_flags::VIA_CUPTI_CALLBACK == 0 {
        return e;
    }
    match nest.child(i) {
        Some(c) => {
            let k = &entries.get(c);
            let per_thread = k.flags & entry_flags::PER_THREAD;
            Entry {
                a0: k.a0,
                a1: k.a1,
                a2: k.a2,
                flags: e.flags | per_thread,
                ..e
            }
        }
        _ => e,
    }
}
