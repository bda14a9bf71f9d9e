//! The byte layout of a ring file — the one definition shared by the writer and the reader.
//! `docs/format.md` describes the same layout in prose; change both together.
//!
//! A ring file is `[header: HEADER_SIZE][string area: strings_size][entries: capacity × ENTRY_SIZE]`.
//! All integers are little-endian (the shim only runs on little-endian hosts).

pub const MAGIC: [u8; 8] = *b"CAUSEWAY";
pub const VERSION: u32 = 2;
pub const HEADER_SIZE: usize = 4096;
pub const ENTRY_SIZE: usize = 64;
/// Ring files end with this suffix; the scanner picks them out of a capture directory by it.
pub const RING_SUFFIX: &str = ".cwring";

/// Header field offsets (bytes from the start of the file).
pub mod hdr {
    pub const MAGIC: usize = 0; // [u8; 8]
    pub const VERSION: usize = 8; // u32
    pub const HEADER_SIZE: usize = 12; // u32
    pub const ENTRY_SIZE: usize = 16; // u32
    pub const POLICY: usize = 20; // u32, see `Policy`
    pub const CAPACITY: usize = 24; // u64, entries, a power of two
    pub const STRINGS_OFFSET: usize = 32; // u64
    pub const STRINGS_SIZE: usize = 40; // u64
    pub const ENTRIES_OFFSET: usize = 48; // u64
    pub const PID: usize = 56; // u32
    pub const PPID: usize = 60; // u32
    pub const LEVEL: usize = 64; // u32, capture level 1..=4
    pub const CLOCK: usize = 68; // u32, see `ClockKind`
    pub const FLAGS: usize = 72; // u32 (atomic), see `flags`
    pub const BACKEND: usize = 76; // u32, device-timing backend, see `Backend`
    pub const HEAD: usize = 80; // u64 (atomic): slots reserved so far, ever
    pub const DROPPED: usize = 88; // u64 (atomic): entries dropped (policy drop)
    pub const STR_CURSOR: usize = 96; // u64: bytes of the string area in use
    pub const STR_LOCK: usize = 104; // u32: spin lock for string appends (never held on the hot path)
    pub const STR_DROPPED: usize = 108; // u32 (atomic): strings that did not fit
    /// Start anchor: one instant read on three clocks (ticks, CLOCK_MONOTONIC ns, CLOCK_REALTIME ns).
    pub const ANCHOR0: usize = 112; // 3 × u64
    /// Latest anchor, guarded by a sequence word (odd while being written).
    pub const ANCHOR1_SEQ: usize = 136; // u64
    pub const ANCHOR1: usize = 144; // 3 × u64
    /// Tick rate measured at start-up (ticks per second); 1e9 when ticks are nanoseconds.
    pub const TICKS_PER_SEC: usize = 168; // u64
    pub const EXE_LEN: usize = 176; // u32
    pub const EXE: usize = 180; // [u8; EXE_MAX]
    pub const HOST_LEN: usize = 1204; // u32
    pub const HOST: usize = 1208; // [u8; HOST_MAX]
    pub const NOTICE_LEN: usize = 1272; // u32 (atomic: 0 until the notice is complete)
    pub const NOTICE: usize = 1276; // [u8; NOTICE_MAX]
    /// Device timing samples one in this many device-work calls per thread (events backend; 0 or 1 =
    /// every call).
    pub const SAMPLE_EVERY: usize = 1532; // u32
    pub const COUNTERS: usize = 1536; // [u64; COUNTER_SLOTS] (atomic)
    pub const EXE_MAX: usize = 1024;
    pub const HOST_MAX: usize = 64;
    pub const NOTICE_MAX: usize = 256;
    pub const COUNTER_SLOTS: usize = 32;
}

/// Flag bits of `hdr::FLAGS`.
pub mod flags {
    /// The shim hit an internal failure and now passes every call through unrecorded.
    pub const DISABLED: u32 = 1;
    /// The process ran its exit handlers (the ring was closed cleanly).
    pub const CLOSED: u32 = 2;
    /// A child process created after `fork`; its entries start at its own fork.
    pub const FORKED: u32 = 4;
    /// The events backend sampled by steps (`sample_every` > 1 and the program pushed NVTX ranges): it
    /// timed every device-work call made while one in `sample_every` outermost push ranges was open,
    /// chosen at random, and no other call after the first such range.
    pub const STEP_SAMPLED: u32 = 8;
}

/// Named slots of the counter array at `hdr::COUNTERS`.
pub mod counter {
    /// cuGetProcAddress results for hooked names whose pointer matched no known variant (passed through).
    pub const PROC_UNMATCHED: usize = 0;
    /// Function handles whose name could not be interned (handle table full or name lookup failed).
    pub const NAMES_MISSED: usize = 1;
    /// Hooks called before their real function could be found.
    pub const REAL_MISSING: usize = 2;
    /// NVTX strings that could not be interned (intern table full).
    pub const NVTX_MISSED: usize = 3;
    /// Ends of calls whose slot had been overwritten before the call returned (policy overwrite).
    pub const END_LOST: usize = 4;
    /// Entries given up because their slot was held by a newer entry or stayed busy (policy overwrite).
    pub const LAPPED: usize = 5;
    /// Device records the timing backend reported dropped (CUPTI's own count).
    pub const DEVICE_DROPPED: usize = 6;
    /// Device work a level-3 backend could not time (events backend: no free event pair, no current
    /// context, an event call failed, or still pending when the process exited).
    pub const DEVICE_UNTIMED: usize = 7;
    pub const NAMES: [&str; 8] = [
        "proc_unmatched",
        "names_missed",
        "real_missing",
        "nvtx_missed",
        "end_lost",
        "lapped",
        "device_dropped",
        "device_untimed",
    ];
    /// What each counter counts, in a report's words (by the same index as `NAMES`).
    pub const MEANINGS: [&str; 8] = [
        "entry points cuGetProcAddress gave for hooked names that matched no known variant: \
         passed through, their calls not recorded",
        "kernels whose name could not be read: shown by handle",
        "hooked calls made before their real function was found",
        "NVTX strings the shim's string table could not hold: those ranges and marks are unnamed",
        "call ends lost to an overwritten slot",
        "entries given up to newer ones in a full flight-recorder ring",
        "device records the timing backend dropped",
        "device work the timing backend could not time",
    ];
}

/// What a full ring does (`hdr::POLICY`). Names and parsing: `settings`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// A full ring drops the newest entry and counts it exactly.
    Drop = 1,
    /// A full ring overwrites the oldest entry (flight recorder).
    Overwrite = 2,
}

impl Policy {
    pub fn from_u32(v: u32) -> Option<Policy> {
        match v {
            1 => Some(Policy::Drop),
            2 => Some(Policy::Overwrite),
            _ => None,
        }
    }
}

#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockKind {
    /// Ticks are CLOCK_MONOTONIC nanoseconds.
    Monotonic = 1,
    /// Ticks are the invariant TSC; convert through the anchors.
    Tsc = 2,
}

impl ClockKind {
    pub fn from_u32(v: u32) -> Option<ClockKind> {
        match v {
            1 => Some(ClockKind::Monotonic),
            2 => Some(ClockKind::Tsc),
            _ => None,
        }
    }
}

/// Entry field offsets within one `ENTRY_SIZE` slot.
pub mod ent {
    /// u64 commit word: 0 = never written; `((seq + 1) << 2) | state` (0 being written, 1 open,
    /// 3 complete). Written last, with release order.
    pub const STAMP: usize = 0;
    pub const T_BEGIN: usize = 8; // u64 ticks
    pub const T_END: usize = 16; // u64 ticks, 0 while the call is still open
    pub const TID: usize = 24; // u32 kernel thread id
    pub const API: usize = 28; // u16, id of an API name record in the string area
    pub const KIND: usize = 30; // u8, see `Kind`
    pub const FLAGS: usize = 31; // u8, see `entry_flags`
    pub const RESULT: usize = 32; // i32, the call's return code (CUresult / cudaError_t)
    pub const DEPTH: usize = 36; // u16, hooked calls already open on this thread when this one began
    /// u16: a device interval's graph node (`Kind::DeviceInterval`, work a graph launch ran): the
    /// node's index in its executable graph + 1, as `Kind::GraphEdge` numbers nodes; 0 otherwise.
    pub const NODE: usize = 38;
    pub const A0: usize = 40; // u64, meaning depends on the API class (see docs/format.md)
    pub const A1: usize = 48; // u64
    pub const A2: usize = 56; // u64
}

/// Bits of `ent::FLAGS`.
pub mod entry_flags {
    /// The per-thread default stream variant (`_ptsz` / `_ptds`) was called.
    pub const PER_THREAD: u8 = 1;
    /// Device interval times are already on the ring's tick clock (CUPTI with our timestamp callback).
    pub const HOST_CLOCK: u8 = 2;
    /// A call recorded through CUPTI's runtime-API callback, not a hook (a cudart the shim cannot
    /// hook, e.g. linked statically); its a0/a1/a2 are 0.
    pub const VIA_CUPTI_CALLBACK: u8 = 4;
    /// Device interval times are signed nanoseconds of the device clock relative to a device anchor
    /// (events backend): `t_begin`/`t_end` are `i64` offsets from the anchor named in `a2 >> 32`.
    pub const ANCHORED: u8 = 8;
    /// NVTX attributes (`Kind::NvtxAttributes`): the event carried an ARGB colour (`a2 >> 32`).
    pub const NVTX_COLOR: u8 = 16;
    /// A kernel's device interval carries CUPTI's latency timestamps: `tid` = start − submitted and
    /// `result` (its u32 bits) = submitted − queued, in the interval's time units (set only when both
    /// fit in 32 bits).
    pub const LATENCY: u8 = 32;
    /// A device interval timed by the runtime's own event profiling (Unified Runtime:
    /// `urEventGetProfilingInfo`), so its start was taken after the issuing call began: a converted
    /// start before the call's begin can only mean the conversion is off.
    pub const PROFILED: u8 = 64;
}

/// What an entry records.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Call = 1,
    RangePush = 2,
    RangePop = 3,
    RangeStart = 4,
    RangeEnd = 5,
    Mark = 6,
    ThreadStart = 7,
    ProcessStart = 8,
    ProcessExit = 9,
    /// One kernel node of an instantiated graph: a0 = exec handle, a1 = function handle,
    /// a2 = node ordinal | kernel-node count << 32.
    GraphNode = 10,
    /// A `cuGetProcAddress` answer for a traced name that matched none of our variants and was passed
    /// through untouched: a0 = text id of the symbol, a1 = cudaVersion, a2 = flags.
    ProcUnmatched = 11,
    /// When device work ran, from the device-timing backend (written off the hot path): t_begin/t_end =
    /// device start/end (ticks of the ring's clock when `entry_flags::HOST_CLOCK` is set), api =
    /// `DeviceKind`, depth = copy kind (memcpy), a0 = sequence number of the call that issued it
    /// (`NO_CALL` if none could be tied), a1 = text id of the kernel name (kernels) or bytes (copies,
    /// memsets), a2 = backend stream id | device << 32.
    DeviceInterval = 12,
    /// A reference point between host and device time (events backend): a timing event recorded on
    /// the backend's own idle stream. Its device instant lies between t_begin (host ticks before the
    /// record call) and t_end (host ticks when it was seen complete). a0 = anchor id (from 1),
    /// a1 = device ordinal, a2 = device nanoseconds since the previous anchor of the same device
    /// (`i64`; `NO_ELAPSED` for a device's first anchor).
    DeviceAnchor = 13,
    /// What an NVTX mark or range's attribute structure carried besides its message, written by the
    /// same thread right after that entry when any of it is set: a0 = the mark's or range's sequence
    /// number, a1 = the payload's bits (`nvtx_payload`; for `EXT`, the first payload's schema id),
    /// a2 = category | colour << 32 (colour only with `entry_flags::NVTX_COLOR`), result = NVTX's
    /// payload type (0: none), depth = number of extended payloads (`EXT` only).
    NvtxAttributes = 14,
    /// A work token begins on the writing thread (`causeway_token_begin`): calls the thread makes
    /// until the matching `TokenEnd` belong to the token. a0 = the token's high 64 bits, a1 = its low
    /// 64 bits, a2 = 0, result = its generation (`u32` bits). Recorded at every level; api = 0.
    TokenBegin = 15,
    /// The token ends on the writing thread (`causeway_token_end`); fields as `TokenBegin`.
    TokenEnd = 16,
    /// The writing thread hands the token to another thread or queue (`causeway_token_handoff`):
    /// fields as `TokenBegin`, a2 = `to` (a kernel thread id or a queue id the program chose; 0 = not
    /// said).
    TokenHandoff = 17,
    /// The writing thread takes over a token handed off to it (`causeway_token_accept`): the token
    /// continues on this thread until its `TokenEnd` here. Fields as `TokenBegin`.
    TokenAccept = 18,
    /// An event a Level Zero or Unified Runtime call signals or waits for, written by the calling
    /// thread right after the call returned successfully: a0 = the call's sequence number, a1 = the
    /// event handle, a2 = `event_link::SIGNALS` (the call's work completes the event) or
    /// `event_link::WAITS` (its work, or for a host wait the call itself, waits for the event).
    EventLink = 19,
    /// One dependency between two nodes of an instantiated graph, written right after the graph's
    /// `GraphNode` entries: a0 = the exec handle, a1 = the node depended on and a2 = the dependent
    /// node, each as its index in the executable graph (the number a device interval's `ent::NODE`
    /// carries, minus 1). A child graph's nodes are numbered after its parent's; its entry nodes
    /// depend on what the child graph node depends on, and what depends on that node depends on the
    /// child graph's exit nodes.
    GraphEdge = 20,
}

/// NVTX payload types (`nvtxPayloadType_t`; `NVTX_PAYLOAD_TYPE_EXT` from `nvToolsExtPayload.h`), as
/// `Kind::NvtxAttributes` carries them in `result`. 32-bit values sit in the low half of `a1`.
pub mod nvtx_payload {
    pub const U64: i32 = 1;
    pub const I64: i32 = 2;
    pub const DOUBLE: i32 = 3;
    pub const U32: i32 = 4;
    pub const I32: i32 = 5;
    pub const FLOAT: i32 = 6;
    /// Extended payload (`nvtxPayloadData_t` array): a1 = the first one's schema id.
    pub const EXT: i32 = 0xDFBD_0009_u32 as i32;
}

/// `a2 & 0xff` of a name-class call: what the NVTX call named (`a0` is its handle or id).
pub mod named {
    /// Not one of the below (a generic `nvtxDomainResourceCreate` identifier).
    pub const OTHER: u64 = 0;
    /// A device ordinal (`CUdevice`, or cudart's `int` device).
    pub const DEVICE: u64 = 1;
    pub const CONTEXT: u64 = 2;
    /// A stream handle (`CUstream` or `cudaStream_t`: the same pointer).
    pub const STREAM: u64 = 3;
    pub const EVENT: u64 = 4;
    /// An NVTX category id, within the domain in `a2 >> 32`.
    pub const CATEGORY: u64 = 5;
    /// An OS thread id.
    pub const THREAD: u64 = 6;
}

/// The NVTX domain whose ranges and marks carry work tokens (`docs/format.md`, "Work tokens").
pub const TOKEN_DOMAIN: &str = "causeway.token";

/// `a2` of a device anchor with no earlier anchor on its device.
pub const NO_ELAPSED: u64 = u64::MAX;

/// `a0` of a device interval no issuing call could be tied to.
pub const NO_CALL: u64 = u64::MAX;

/// What a device interval is (its `api` field, which `as u16` writes). One byte in memory: the
/// scanner's device spans, millions of them, hold one each.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    Kernel = 1,
    Memcpy = 2,
    Memset = 3,
    /// A whole graph launch, start to end (events backend: it cannot see the graph's nodes).
    Graph = 4,
}

impl DeviceKind {
    pub fn from_u16(v: u16) -> Option<DeviceKind> {
        match v {
            1 => Some(DeviceKind::Kernel),
            2 => Some(DeviceKind::Memcpy),
            3 => Some(DeviceKind::Memset),
            4 => Some(DeviceKind::Graph),
            _ => None,
        }
    }

    /// Its name as the scanner's outputs show it.
    pub const fn name(self) -> &'static str {
        match self {
            DeviceKind::Kernel => "kernel",
            DeviceKind::Memcpy => "memcpy",
            DeviceKind::Memset => "memset",
            DeviceKind::Graph => "graph",
        }
    }
}

/// The device-timing backend a ring was recorded with (`hdr::BACKEND`). Names, parsing and which
/// capture levels use which: `settings`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// No device timing.
    None = 0,
    /// CUPTI activity records.
    Cupti = 1,
    /// CUDA timing events around each device-work call.
    Events = 2,
    /// Unified Runtime's event profiling (the shim turns it on when device timing is asked for and
    /// the program's work goes through UR; not a choice of its own).
    UnifiedRuntime = 3,
    /// Level Zero kernel timestamp events (likewise).
    LevelZero = 4,
}

impl Backend {
    pub fn from_u32(v: u32) -> Option<Backend> {
        match v {
            0 => Some(Backend::None),
            1 => Some(Backend::Cupti),
            2 => Some(Backend::Events),
            3 => Some(Backend::UnifiedRuntime),
            4 => Some(Backend::LevelZero),
            _ => None,
        }
    }
}

impl Kind {
    pub fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Call,
            2 => Kind::RangePush,
            3 => Kind::RangePop,
            4 => Kind::RangeStart,
            5 => Kind::RangeEnd,
            6 => Kind::Mark,
            7 => Kind::ThreadStart,
            8 => Kind::ProcessStart,
            9 => Kind::ProcessExit,
            10 => Kind::GraphNode,
            20 => Kind::GraphEdge,
            11 => Kind::ProcUnmatched,
            12 => Kind::DeviceInterval,
            13 => Kind::DeviceAnchor,
            14 => Kind::NvtxAttributes,
            15 => Kind::TokenBegin,
            16 => Kind::TokenEnd,
            17 => Kind::TokenHandoff,
            18 => Kind::TokenAccept,
            19 => Kind::EventLink,
            _ => return None,
        })
    }
}

/// String record header offsets. A record is `[STR_HDR bytes][payload][zero padding to 8]`.
pub mod rec {
    /// u32 record size in bytes, header and padding included; written last (0 = not committed).
    pub const SIZE: usize = 0;
    pub const KIND: usize = 4; // u32, see `StrKind`
    pub const KEY: usize = 8; // u64
    pub const LEN: usize = 16; // u32 payload bytes
    pub const AUX: usize = 20; // u32, see `StrKind`
    pub const HDR: usize = 24;
}

/// What a string record names.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StrKind {
    /// key = API id used in `ent::API`; aux = `ApiInfo::pack`.
    Api = 1,
    /// key = function handle (as passed to the launch call); payload = kernel name.
    Kernel = 2,
    /// key = string id used by NVTX entries (message, domain or registered string).
    Text = 3,
    /// key = thread id; payload = thread name.
    Thread = 4,
}

impl StrKind {
    pub fn from_u32(v: u32) -> Option<StrKind> {
        Some(match v {
            1 => StrKind::Api,
            2 => StrKind::Kernel,
            3 => StrKind::Text,
            4 => StrKind::Thread,
            _ => return None,
        })
    }
}

/// A stream-class create's a2 (besides the runtime's own flags, bit 0 = CUDA's non-blocking).
pub mod stream_flags {
    /// Work on the created stream may run in any order between barriers (a Level Zero command list
    /// or queue created without `IN_ORDER`, a Unified Runtime queue created out-of-order): no
    /// stream order between its items, only barriers and events.
    pub const UNORDERED: u64 = 1 << 31;
}

/// `Kind::EventLink`'s a2: what the call does with the event.
pub mod event_link {
    /// The call's work completes the event (an enqueue's output event, an append's signal event).
    pub const SIGNALS: u64 = 1;
    /// The call's work (or, for a host wait, the call) waits for the event.
    pub const WAITS: u64 = 2;
}

/// Which runtime an API belongs to.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    Runtime = 1,
    Driver = 2,
    Nvtx = 3,
    Loader = 4,
    /// oneAPI Level Zero (`ze*`, `zet*`, `zes*`, `zel*`: libze_loader).
    LevelZero = 5,
    /// oneAPI Unified Runtime (`ur*`: libur_loader).
    UnifiedRuntime = 6,
}

/// What an API does, as far as the scanner needs to know. Stored in the API record, so the scanner
/// never needs the shim's hook table.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    Other = 0,
    /// a0 = stream, a1 = function handle, a2 = grid x | y << 32 (x, y truncated to 32 bits)
    Launch = 1,
    /// a0 = stream, a1 = bytes, a2 = direction (cudaMemcpyKind) when known
    Copy = 2,
    /// a0 = stream, a1 = bytes
    Memset = 3,
    /// a0 = stream (0 for device/context syncs)
    Sync = 4,
    /// a0 = stream, a1 = event
    EventRecord = 5,
    /// a1 = event
    EventSync = 6,
    /// a0 = stream, a1 = event
    StreamWait = 7,
    /// a0 = stream, a1 = graph exec
    GraphLaunch = 8,
    Graph = 9,
    /// a1 = bytes
    Alloc = 10,
    Free = 11,
    Module = 12,
    /// a0 = stream
    Stream = 13,
    /// a0 = stream, a1 = mode (begin), a2 = `capture_phase` (0 for other capture-class calls)
    Capture = 14,
    /// a0 = stream
    HostFunc = 15,
    /// a1 = event
    Event = 16,
    /// a0 = stream
    Query = 17,
    Lookup = 18,
    /// a0 = stream, a1 = bytes: unified-memory prefetches (and discards with a prefetch)
    Prefetch = 19,
    /// a0 = stream, a1 = address (count for a batch), a2 = value: stream memory operations (wait on or
    /// write a value)
    MemOp = 20,
    /// a0 = stream: other device operations ordered on a stream (graph upload, external semaphore
    /// signal and wait, batch decompression, array mapping, memory attach, discards)
    StreamOp = 21,
    /// a0 = context, a1 = event: an event recorded over every stream of a context (`cuCtxRecordEvent`,
    /// green contexts)
    CtxEventRecord = 22,
    /// a0 = context, a1 = event: every stream of a context waits for an event (`cuCtxWaitEvent`)
    CtxEventWait = 23,
    /// An NVTX call naming a resource: a0 = handle or id named, a1 = text id of the name (0: none),
    /// a2 = `named` kind | domain text id << 32 (categories; 0 = the default domain)
    Name = 24,
}

impl Class {
    /// Whether calls of this class issue device work (launches, copies, memsets, graph launches,
    /// prefetches, stream memory operations and other stream-ordered operations): the calls device
    /// timing follows and host waits wait for.
    pub const fn issues_work(self) -> bool {
        matches!(
            self,
            Class::Launch
                | Class::Copy
                | Class::Memset
                | Class::GraphLaunch
                | Class::Prefetch
                | Class::MemOp
                | Class::StreamOp
        )
    }

    pub fn from_u8(v: u8) -> Class {
        use Class::*;
        const ALL: [Class; 25] = [
            Other,
            Launch,
            Copy,
            Memset,
            Sync,
            EventRecord,
            EventSync,
            StreamWait,
            GraphLaunch,
            Graph,
            Alloc,
            Free,
            Module,
            Stream,
            Capture,
            HostFunc,
            Event,
            Query,
            Lookup,
            Prefetch,
            MemOp,
            StreamOp,
            CtxEventRecord,
            CtxEventWait,
            Name,
        ];
        ALL.get(v as usize).copied().unwrap_or(Other)
    }
    /// The class named `name` (`Class::name`), `None` for a name no class has.
    pub fn from_name(name: &str) -> Option<Class> {
        use Class::*;
        Some(match name {
            "other" => Other,
            "launch" => Launch,
            "copy" => Copy,
            "memset" => Memset,
            "sync" => Sync,
            "event_record" => EventRecord,
            "event_sync" => EventSync,
            "stream_wait" => StreamWait,
            "graph_launch" => GraphLaunch,
            "graph" => Graph,
            "alloc" => Alloc,
            "free" => Free,
            "module" => Module,
            "stream" => Stream,
            "capture" => Capture,
            "host_func" => HostFunc,
            "event" => Event,
            "query" => Query,
            "lookup" => Lookup,
            "prefetch" => Prefetch,
            "mem_op" => MemOp,
            "stream_op" => StreamOp,
            "ctx_event_record" => CtxEventRecord,
            "ctx_event_wait" => CtxEventWait,
            "name" => Name,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use Class::*;
        match self {
            Other => "other",
            Launch => "launch",
            Copy => "copy",
            Memset => "memset",
            Sync => "sync",
            EventRecord => "event_record",
            EventSync => "event_sync",
            StreamWait => "stream_wait",
            GraphLaunch => "graph_launch",
            Graph => "graph",
            Alloc => "alloc",
            Free => "free",
            Module => "module",
            Stream => "stream",
            Capture => "capture",
            HostFunc => "host_func",
            Event => "event",
            Query => "query",
            Lookup => "lookup",
            Prefetch => "prefetch",
            MemOp => "mem_op",
            StreamOp => "stream_op",
            CtxEventRecord => "ctx_event_record",
            CtxEventWait => "ctx_event_wait",
            Name => "name",
        }
    }
}

/// `a2` of capture-class calls: which end of a stream capture the call is.
pub mod capture_phase {
    pub const BEGIN: u64 = 1;
    pub const END: u64 = 2;
}

/// Static facts about one API, packed into the `aux` word of its name record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiInfo {
    pub layer: Layer,
    pub class: Class,
    /// Lowest capture level at which the API is recorded.
    pub level: u8,
}

impl ApiInfo {
    pub const fn pack(self) -> u32 {
        (self.class as u32) | (self.layer as u32) << 8 | (self.level as u32) << 16
    }
    pub fn unpack(aux: u32) -> ApiInfo {
        let layer = match (aux >> 8) & 0xff {
            1 => Layer::Runtime,
            2 => Layer::Driver,
            3 => Layer::Nvtx,
            5 => Layer::LevelZero,
            6 => Layer::UnifiedRuntime,
            _ => Layer::Loader,
        };
        ApiInfo {
            layer,
            class: Class::from_u8((aux & 0xff) as u8),
            level: ((aux >> 16) & 0xff) as u8,
        }
    }
}

/// The commit word of sequence number `seq`: `((seq + 1) << 2) | state`, state 1 = open (the call has
/// not returned), 3 = complete. 0 means never written.
#[inline(always)]
pub const fn stamp(seq: u64, done: bool) -> u64 {
    ((seq + 1) << 2) | if done { 3 } else { 1 }
}

/// The commit word of a slot a writer has claimed and is writing (state 0): readers treat it as torn.
/// Only the overwrite policy claims slots (it reuses them; under the drop policy a slot has one writer).
#[inline(always)]
pub const fn busy(seq: u64) -> u64 {
    (seq + 1) << 2
}

/// The sequence number a commit word belongs to, whatever its state; `None` for a slot never written.
#[inline]
pub const fn stamp_seq(word: u64) -> Option<u64> {
    if word < 4 {
        None
    } else {
        Some((word >> 2) - 1)
    }
}

/// Splits a commit word into (sequence number, done); `None` for a slot never written or being written.
#[inline]
pub const fn unstamp(word: u64) -> Option<(u64, bool)> {
    match (stamp_seq(word), word & 3) {
        (Some(seq), 1) => Some((seq, false)),
        (Some(seq), 3) => Some((seq, true)),
        _ => None,
    }
}

/// Bytes a ring file needs for `capacity` entries and a string area of `strings_size` bytes.
pub const fn file_size(capacity: u64, strings_size: u64) -> u64 {
    HEADER_SIZE as u64 + strings_size + capacity * ENTRY_SIZE as u64
}

// The header fields must not overlap and the entry must fill its slot exactly: checked at compile time.
const _: () = {
    assert!(hdr::EXE + hdr::EXE_MAX <= hdr::HOST_LEN);
    assert!(hdr::HOST + hdr::HOST_MAX <= hdr::NOTICE_LEN);
    assert!(hdr::NOTICE + hdr::NOTICE_MAX <= hdr::SAMPLE_EVERY);
    assert!(hdr::SAMPLE_EVERY + 4 <= hdr::COUNTERS);
    assert!(hdr::COUNTERS + 8 * hdr::COUNTER_SLOTS <= HEADER_SIZE);
    assert!(hdr::ANCHOR1 == hdr::ANCHOR1_SEQ + 8);
    assert!(ent::A2 + 8 == ENTRY_SIZE);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_round_trip() {
        for seq in [0u64, 1, 7, u32::MAX as u64, (1 << 62) - 2] {
            assert_eq!(unstamp(stamp(seq, false)), Some((seq, false)));
            assert_eq!(unstamp(stamp(seq, true)), Some((seq, true)));
        }
        assert_eq!(unstamp(0), None);
        assert_eq!(unstamp(1), None);
        assert_eq!(
            unstamp(busy(7)),
            None,
            "a slot being written is not an entry"
        );
        assert_eq!(stamp_seq(busy(7)), Some(7));
        assert_eq!(stamp_seq(stamp(7, true)), Some(7));
    }

    #[test]
    fn api_info_round_trips() {
        let i = ApiInfo {
            layer: Layer::Driver,
            class: Class::GraphLaunch,
            level: 2,
        };
        assert_eq!(ApiInfo::unpack(i.pack()), i);
        for c in (0..=u8::MAX).map(Class::from_u8) {
            assert_eq!(Class::from_name(c.name()), Some(c));
        }
        assert_eq!(Class::from_name("nonsense"), None);
    }
}
