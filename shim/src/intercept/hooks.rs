//! The hook machinery: each declarative table (`tables/`) expands through `hook_table!` into exported
//! functions — each one guard, real call, entry, as in bytehound's preload crate — with one slot for
//! its real function and one `Hook` record (id, name, layer, class, level) that the registry
//! (`registry.rs`), `dlsym` and `cuGetProcAddress` consult to hand out hooks. What a hook does around
//! its real call: the hot path (`hot::record`), kernel names (`strings::names`) and device timing (only
//! through the `timing` seam).

use causeway_ring::layout::ApiInfo;
use std::ffi::CStr;
use std::sync::atomic::AtomicUsize;

/// One hooked entry point: an exported symbol with one ABI.
pub struct Hook {
    /// API id written into entries (unique across all tables).
    pub id: u16,
    pub name: &'static CStr,
    pub info: ApiInfo,
    /// Address of our exported function.
    pub hook: *const (),
    /// The real function it calls, once found.
    pub real: &'static AtomicUsize,
    /// The CUDA version `cuGetProcAddress` maps the name to (`cudaTypedefs.h`); 0 where it has none
    /// (the runtime, and names the typedefs do not list). Substitution matches answers by address, so
    /// only the tests and docs/interception.md read it.
    #[cfg_attr(not(test), allow(dead_code))]
    pub abi: u32,
}

// SAFETY: `hook` is the address of a function, immutable and valid for the life of the process.
unsafe impl Sync for Hook {}

/// CUDA's `dim3`, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

pub type P = *mut std::ffi::c_void;

pub const fn cstr(bytes: &'static [u8]) -> &'static CStr {
    match CStr::from_bytes_with_nul(bytes) {
        Ok(c) => c,
        Err(_) => panic!("hook names are NUL-terminated"),
    }
}

const fn ends_with(s: &[u8], suffix: &[u8]) -> bool {
    if s.len() < suffix.len() {
        return false;
    }
    let mut i = 0;
    while i < suffix.len() {
        if s[s.len() - suffix.len() + i] != suffix[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `_ptsz` / `_ptds` variants use the per-thread default stream.
pub const fn per_thread(name: &str) -> u8 {
    let b = name.as_bytes();
    if ends_with(b, b"_ptsz") || ends_with(b, b"_ptds") {
        causeway_ring::layout::entry_flags::PER_THREAD
    } else {
        0
    }
}

/// Packs a grid's x and y into one word (entries have room for three arguments).
#[inline(always)]
pub fn grid(g: Dim3) -> u64 {
    g.x as u64 | (g.y as u64) << 32
}

/// `cudaLaunchConfig_t` and `CUlaunchConfig` both start with the grid (three u32) and keep the stream
/// at byte 32.
#[inline(always)]
pub fn cfg_stream(cfg: P) -> u64 {
    if cfg.is_null() {
        return 0;
    }
    // SAFETY: the caller passes a launch configuration, which the real call reads too.
    unsafe { (cfg as *const u8).add(32).cast::<u64>().read_unaligned() }
}

#[inline(always)]
pub fn cfg_grid(cfg: P) -> u64 {
    if cfg.is_null() {
        return 0;
    }
    // SAFETY: as in `cfg_stream`.
    unsafe { (cfg as *const u64).read_unaligned() }
}

/// The handle a call wrote through its output parameter `p` (a created stream or event); 0 for a
/// null pointer.
#[inline(always)]
pub fn created(p: P) -> u64 {
    if p.is_null() {
        return 0;
    }
    // SAFETY: the call succeeded, so it wrote a handle (pointer-sized) where `p` points, as its
    // contract says.
    unsafe { (p as *const u64).read_unaligned() }
}

/// The first of `n` handles at `p` (an event wait list, command lists to execute); 0 when there are
/// none.
#[inline(always)]
pub fn first_handle(p: P, n: u32) -> u64 {
    if p.is_null() || n == 0 {
        return 0;
    }
    // SAFETY: the caller passes `n` >= 1 handles at `p`, which the real call reads too.
    unsafe { (p as *const u64).read_unaligned() }
}

/// A Level Zero `ze_group_count_t` (three u32: x, y, z) as a launch's grid: x | y << 32.
#[inline(always)]
pub fn group_count(p: P) -> u64 {
    if p.is_null() {
        return 0;
    }
    // SAFETY: the caller passes the group count the launch reads.
    unsafe { (p as *const u64).read_unaligned() }
}

/// A Unified Runtime launch's global work size (`work_dim` size_t values) as a grid: x | y << 32,
/// each truncated to 32 bits.
#[inline(always)]
pub fn work_size(work_dim: u32, sizes: P) -> u64 {
    if sizes.is_null() || work_dim == 0 {
        return 0;
    }
    let s = sizes as *const usize;
    // SAFETY: the caller passes `work_dim` (1 to 3) sizes, which the real call reads too.
    let x = unsafe { s.read_unaligned() } as u64 & 0xffff_ffff;
    let y = if work_dim > 1 {
        // SAFETY: as above; a second size exists.
        unsafe { s.add(1).read_unaligned() as u64 & 0xffff_ffff }
    } else {
        1
    };
    x | y << 32
}

/// A u32 at byte `at` of a descriptor the call reads; 0 for a null one.
#[inline(always)]
fn desc_u32(desc: P, at: usize) -> u32 {
    if desc.is_null() {
        return 0;
    }
    // SAFETY: the caller passes a descriptor at least `at + 4` bytes long, which the call reads.
    unsafe { (desc as *const u8).add(at).cast::<u32>().read_unaligned() }
}

/// A Level Zero command list's order (`ze_command_list_desc_t`: flags at byte 20): unordered
/// unless created `ZE_COMMAND_LIST_FLAG_IN_ORDER` (bit 3).
#[inline(always)]
pub fn ze_list_order(desc: P) -> u64 {
    if desc_u32(desc, 20) & (1 << 3) != 0 {
        0
    } else {
        causeway_ring::layout::stream_flags::UNORDERED
    }
}

/// A Level Zero command queue's (or immediate list's) order (`ze_command_queue_desc_t`: flags at
/// byte 24): unordered unless created `ZE_COMMAND_QUEUE_FLAG_IN_ORDER` (bit 1).
#[inline(always)]
pub fn ze_queue_order(desc: P) -> u64 {
    if desc_u32(desc, 24) & (1 << 1) != 0 {
        0
    } else {
        causeway_ring::layout::stream_flags::UNORDERED
    }
}

/// A Unified Runtime queue's order (`ur_queue_properties_t`: flags at byte 16): unordered when
/// created `UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE` (bit 0); no properties: in order.
#[inline(always)]
pub fn ur_queue_order(props: P) -> u64 {
    if desc_u32(props, 16) & 1 != 0 {
        causeway_ring::layout::stream_flags::UNORDERED
    } else {
        0
    }
}

/// The product of two arguments (sizes), wrapping: no argument a program passes can make a hook
/// panic.
#[inline(always)]
pub fn mul(a: u64, b: u64) -> u64 {
    a.wrapping_mul(b)
}

/// The bytes of a batch: the sum of `count` sizes (`size_t`) at `sizes`, which the real call reads too.
/// 0 for a null array.
#[inline]
pub fn sum_sizes(sizes: P, count: u64) -> u64 {
    if sizes.is_null() {
        return 0;
    }
    let sizes = sizes as *const usize;
    let mut sum = 0u64;
    for i in 0..count as usize {
        // SAFETY: the caller passes `count` sizes at `sizes`, as the call's contract requires.
        sum = sum.wrapping_add(unsafe { sizes.add(i).read_unaligned() } as u64);
    }
    sum
}

/// The bytes a `cudaExtent` spans (width in bytes × height × depth), from the struct as passed.
#[inline(always)]
pub fn extent_bytes<T: Copy>(extent: &T) -> u64 {
    const { assert!(std::mem::size_of::<T>() >= 24) };
    let p = extent as *const T as *const usize;
    // SAFETY: `T` is the 24-byte cudaExtent (three size_t), checked above to be that large.
    let (w, h, d) = unsafe {
        (
            p.read_unaligned(),
            p.add(1).read_unaligned(),
            p.add(2).read_unaligned(),
        )
    };
    mul(mul(w as u64, h as u64), d as u64)
}

/// What a hook returns: the C return type's value, its result code for the entry, and what to return
/// when the real function cannot be found.
pub trait Ret: Copy {
    /// The value a hook returns when its real function is missing: the error `code` for functions
    /// that return an error code, zero (null, nothing) otherwise.
    fn missing(code: i32) -> Self;
    /// The entry's `result`: the value for functions that return an error code or an integer, 0 for
    /// the rest.
    fn code(&self) -> i32;
}

impl Ret for i32 {
    #[inline(always)]
    fn missing(code: i32) -> i32 {
        code
    }
    #[inline(always)]
    fn code(&self) -> i32 {
        *self
    }
}

macro_rules! int_ret {
    ($($t:ty),*) => {$(
        impl Ret for $t {
            fn missing(_: i32) -> $t {
                0
            }
            #[inline(always)]
            fn code(&self) -> i32 {
                *self as i32
            }
        }
    )*};
}
int_ret!(i8, u8, i16, u16, u32, i64, u64, usize);

impl Ret for () {
    fn missing(_: i32) {}
    #[inline(always)]
    fn code(&self) -> i32 {
        0
    }
}

impl Ret for P {
    fn missing(_: i32) -> P {
        std::ptr::null_mut()
    }
    #[inline(always)]
    fn code(&self) -> i32 {
        0
    }
}

/// `Ret` for structs returned or passed by value (plain C data): missing is all zeroes, the entry's
/// result 0.
macro_rules! zeroed_ret {
    ($($t:ty),*) => {$(
        impl $crate::intercept::hooks::Ret for $t {
            fn missing(_: i32) -> Self {
                // SAFETY: a plain C struct of integers and pointers: all zeroes is a valid value.
                unsafe { std::mem::zeroed() }
            }
            fn code(&self) -> i32 {
                0
            }
        }
    )*};
}
pub(crate) use zeroed_ret;

/// A hook whose real function cannot be found: count it and fail the call with the runtime's
/// "not initialised" code (3 in both cudart and the driver) rather than crash; a function that
/// returns no error code returns zero.
#[cold]
pub fn missing<R: Ret>(code: i32) -> R {
    if let Some(w) = crate::hot::state::writer() {
        w.bump(causeway_ring::layout::counter::REAL_MISSING);
    }
    R::missing(code)
}

macro_rules! hook_table {
    (
        $table:ident, $layer:ident, first_id = $first:expr, missing = $missing:expr;
        $( $name:ident : $level:literal $class:ident abi $abi:literal ( $($arg:ident : $ty:ty),* ) -> $ret:ty
           => [$a0:expr, $a1:expr, $a2:expr] $(, with $w:ident = $wexpr:expr)? $(, event $ev:ident)?
           $(, signal $sig:ident)?
           $(, out $out:expr)? $(, after $after:expr)?; )*
    ) => {
        #[allow(non_camel_case_types, dead_code, clippy::upper_case_acronyms)]
        #[repr(u16)]
        enum Ids { $($name),* }

        const COUNT: usize = [$(stringify!($name)),*].len();
        static REALS: [std::sync::atomic::AtomicUsize; COUNT] =
            [const { std::sync::atomic::AtomicUsize::new(0) }; COUNT];

        pub static $table: [$crate::intercept::hooks::Hook; COUNT] = [$(
            $crate::intercept::hooks::Hook {
                id: $first + Ids::$name as u16,
                name: $crate::intercept::hooks::cstr(concat!(stringify!($name), "\0").as_bytes()),
                info: causeway_ring::layout::ApiInfo {
                    layer: causeway_ring::layout::Layer::$layer,
                    class: causeway_ring::layout::Class::$class,
                    level: $level,
                },
                hook: $name as *const (),
                real: &REALS[Ids::$name as usize],
                abi: $abi,
            }
        ),*];

        $(
            #[no_mangle]
            #[allow(clippy::too_many_arguments, clippy::missing_safety_doc, unused_variables)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                let h = &$table[Ids::$name as usize];
                let real = $crate::resolve::real(h.real, h.name, causeway_ring::layout::Layer::$layer);
                if real == 0 {
                    return $crate::intercept::hooks::missing::<$ret>($missing);
                }
                // SAFETY: `real` is the function this symbol names in the real library, which has
                // exactly this signature (the table is generated from the CUDA headers).
                let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn($($ty),*) -> $ret>(real) };
                const FLAGS: u8 = $crate::intercept::hooks::per_thread(stringify!($name));
                const CLASS: causeway_ring::layout::Class = causeway_ring::layout::Class::$class;
                // Device timing (`timing`) follows the outermost device-work call: the events
                // backend's start event (only for the classes it brackets) is recorded before the
                // call's begin time is read (so its cost stays out of the call's duration). Other
                // classes compile this away.
                const WORK: bool = CLASS.issues_work();
                const BRACKETED: bool = $crate::timing::brackets(CLASS);
                // An argument device timing replaces for the real call, recorded or not (`with`: a
                // Unified Runtime queue's properties, to ask for profiling; Level Zero's events
                // and lists device timing must read before the program lets them go), given
                // scratch space that outlives the call. Off below level 3: one relaxed load.
                $(
                    let mut scratch = [0u64; 4];
                    let $w = ($wexpr)(&mut scratch);
                )?
                let started = $crate::hot::record::begin_with(h.id, $level, FLAGS, ($a0) as u64, ($a1) as u64, ($a2) as u64, |depth| {
                    if BRACKETED && depth == 0 { $crate::timing::bracket(FLAGS, ($a0) as u64) } else { None }
                });
                match started {
                    // SAFETY: the caller's own arguments, passed on unchanged.
                    None => unsafe { f($($arg),*) },
                    Some((open, bracket)) => {
                        if matches!(CLASS, causeway_ring::layout::Class::Launch) {
                            const HOW: $crate::strings::names::How =
                                $crate::strings::names::How::of(causeway_ring::layout::Layer::$layer, stringify!($name));
                            $crate::strings::names::note(HOW, ($a1) as u64);
                        }
                        // With CUPTI, the outermost device-work call's own sequence number is the
                        // correlation id of the work it issues, which ties that work to this entry.
                        // The class is const per hook, so other hooks compile this away; for these,
                        // it is one relaxed load when CUPTI is not collecting.
                        let tied = WORK && $crate::timing::tie(&open);
                        // A Unified Runtime enqueue's output event (`event`): device timing needs
                        // one for every timed enqueue, so where the caller asked for none the call
                        // writes ours, in `own_event` (the caller still sees none).
                        $(
                            let mut own_event = 0u64;
                            let uev = $crate::timing::ur_event_out($ev, open.depth(), CLASS, &mut own_event);
                            let $ev = uev.ph_event;
                        )?
                        // A Level Zero append's signal event (`signal`): where the caller named
                        // none, device timing's own.
                        $(
                            let zsig = $crate::timing::ze_signal(($a0) as u64, $sig, open.depth(), CLASS);
                            let $sig = zsig.event;
                        )?
                        // SAFETY: as above (an argument replaced above points to memory that
                        // outlives the call, of the type the caller's pointed to; a replaced
                        // handle is a live one of the same kind).
                        let r = unsafe { f($($arg),*) };
                        let seq = open.seq();
                        let code = <$ret as $crate::intercept::hooks::Ret>::code(&r);
                        // What a successful call handed back through an output parameter (a
                        // created handle) replaces the entry's a1.
                        #[allow(unused_mut, unused_assignments)]
                        let mut handed: Option<u64> = None;
                        $( if code == 0 { handed = Some(($out) as u64); } )?
                        open.finish_with(code, handed);
                        if let Some(b) = bracket {
                            $crate::timing::close(b, seq, code, CLASS, ($a1) as u64, ($a2) as u64);
                        }
                        if tied {
                            $crate::timing::untie();
                        }
                        // The enqueue's event, to the Unified Runtime timing (which releases ours).
                        $( if code == 0 { let _ = stringify!($ev); $crate::timing::ur_enqueued(seq, ($a0) as u64, CLASS, [($a1) as u64, ($a2) as u64], uev); } )?
                        $( let _ = stringify!($sig); $crate::timing::ze_appended(seq, ($a0) as u64, CLASS, [($a1) as u64, ($a2) as u64], zsig, code); )?
                        // A host sync: the work it waited for can be read now (Unified Runtime,
                        // Level Zero; the layer and class are constants, so other hooks compile
                        // this away).
                        if matches!(CLASS, causeway_ring::layout::Class::Sync | causeway_ring::layout::Class::EventSync)
                            && code == 0
                        {
                            $crate::timing::synced(causeway_ring::layout::Layer::$layer);
                        }
                        // Extra entries a successful call calls for (graph nodes after instantiation,
                        // the events a Level Zero or Unified Runtime call signals or waits for): the
                        // `after` closure gets the call's sequence number.
                        $( if code == 0 { ($after)(seq); } )?
                        r
                    }
                }
            }
        )*
    };
}
pub(crate) use hook_table;
