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

/// A hook whose real function cannot be found: count it and fail the call with the runtime's
/// "not initialised" code (3 in both cudart and the driver) rather than crash.
#[cold]
pub fn missing(code: i32) -> i32 {
    if let Some(w) = crate::hot::state::writer() {
        w.bump(causeway_ring::layout::counter::REAL_MISSING);
    }
    code
}

macro_rules! hook_table {
    (
        $table:ident, $layer:ident, first_id = $first:expr, missing = $missing:expr;
        $( $name:ident : $level:literal $class:ident ( $($arg:ident : $ty:ty),* ) => [$a0:expr, $a1:expr, $a2:expr]
           $(, after $after:expr)?; )*
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
            }
        ),*];

        $(
            #[no_mangle]
            #[allow(clippy::too_many_arguments, clippy::missing_safety_doc, unused_variables)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> i32 {
                let h = &$table[Ids::$name as usize];
                let real = $crate::resolve::real(h.real, h.name, causeway_ring::layout::Layer::$layer);
                if real == 0 {
                    return $crate::intercept::hooks::missing($missing);
                }
                // SAFETY: `real` is the function this symbol names in the real library, which has
                // exactly this signature (the table is written from the CUDA headers).
                let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn($($ty),*) -> i32>(real) };
                const FLAGS: u8 = $crate::intercept::hooks::per_thread(stringify!($name));
                const CLASS: causeway_ring::layout::Class = causeway_ring::layout::Class::$class;
                // Device timing (`timing`) follows the outermost launch, copy, memset or graph launch:
                // the events backend's start event is recorded before the call's begin time is read
                // (so its cost stays out of the call's duration). Other classes compile this away.
                const WORK: bool = CLASS.issues_work();
                let started = $crate::hot::record::begin_with(h.id, $level, FLAGS, ($a0) as u64, ($a1) as u64, ($a2) as u64, |depth| {
                    if WORK && depth == 0 { $crate::timing::bracket(FLAGS, ($a0) as u64) } else { None }
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
                        // SAFETY: as above.
                        let r = unsafe { f($($arg),*) };
                        let seq = open.seq();
                        open.finish(r);
                        if let Some(b) = bracket {
                            $crate::timing::close(b, seq, r, CLASS, ($a1) as u64, ($a2) as u64);
                        }
                        if tied {
                            $crate::timing::untie();
                        }
                        // Extra entries a successful call calls for (graph nodes after instantiation).
                        $( if r == 0 { $after; } )?
                        r
                    }
                }
            }
        )*
    };
}
pub(crate) use hook_table;
