//! Names a ring's string area gives its entries: API names and classes, kernel names by function
//! handle, NVTX texts and domains.

use crate::read::capture::Ring;
use crate::util::fastmap::HashMap;
use causeway_ring::layout::{ApiInfo, Class};
use causeway_ring::{Entry, StrKind};

/// A name as the model keeps it: one interned copy of each text (`intern`), so a million calls of
/// one API hold one number, copied without touching a shared count. (A shared count was the
/// timeline's bottleneck: every call's clone of the same API name bounced one cache line among the
/// building threads, and dropping the timeline gave each count back one by one.)
///
/// The text's number in the process's table of names (4 bytes, and `Option<Name>` too): a timeline
/// holds a name or two per call and span, millions of them, where a pointer takes 8 bytes and a
/// `&str` 16. It reads as the `str` it stands for (`Deref`), and compares, hashes, orders, prints
/// and serialises as that text.
#[derive(Clone, Copy)]
pub struct Name(std::num::NonZeroU32);

/// The names the binary holds, numbered 1.. in this order, read without the table.
const SEEDED: [&str; 4] = ["<unnamed>", "memset", "[graph launch]", "[unknown kernel]"];

impl Name {
    /// The name of a text record a ring never wrote (id 0).
    pub const UNNAMED: Name = Name::seeded(0);
    /// A memset's row.
    pub const MEMSET: Name = Name::seeded(1);
    /// A whole graph launch's row (`facts::device::GRAPH_ROW`).
    pub const GRAPH_LAUNCH: Name = Name::seeded(2);
    /// A kernel whose name no entry gave (`facts::device::UNKNOWN_KERNEL_ROW`).
    pub const UNKNOWN_KERNEL: Name = Name::seeded(3);

    const fn seeded(k: usize) -> Name {
        match std::num::NonZeroU32::new(k as u32 + 1) {
            Some(n) => Name(n),
            None => panic!("a seeded name's number is never 0"),
        }
    }

    /// The text, for as long as the process lives.
    #[inline]
    pub fn as_str(self) -> &'static str {
        let n = self.0.get() as usize;
        if n <= SEEDED.len() {
            return SEEDED[n - 1];
        }
        table::get(n - SEEDED.len())
    }
}

/// The interned texts by number: chunks of doubling size (chunk `c` holds numbers `2^c..2^(c+1)`),
/// each made once and never moved or freed, so that a name reads its text without a lock.
mod table {
    use std::sync::atomic::{AtomicPtr, Ordering};

    const CHUNKS: usize = 32;

    static CHUNK: [AtomicPtr<Slot>; CHUNKS] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS];

    /// One text: null until its number is given out (`put`), then the interned `&str`, never freed.
    type Slot = AtomicPtr<&'static str>;

    fn place(n: usize) -> (usize, usize) {
        let c = n.ilog2() as usize;
        (c, n - (1 << c))
    }

    /// Text number `n` (from 1), which `put` gave out.
    #[inline]
    pub(super) fn get(n: usize) -> &'static str {
        let (c, at) = place(n);
        let chunk = CHUNK[c].load(Ordering::Acquire);
        assert!(!chunk.is_null(), "a name's number was given out by `put`");
        // SAFETY: chunk `c` is an array of `2^c` slots (made in `put`, never freed) and `at < 2^c`.
        let slot = unsafe { &*chunk.add(at) };
        let text = slot.load(Ordering::Acquire);
        assert!(!text.is_null(), "a name's number was given out by `put`");
        // SAFETY: a set slot holds a leaked `&'static str` (`put`), never freed or changed.
        unsafe { *text }
    }

    /// Sets text number `n` (from 1); called once per number, under `intern`'s lock.
    pub(super) fn put(n: usize, text: &'static str) {
        let (c, at) = place(n);
        let mut chunk = CHUNK[c].load(Ordering::Acquire);
        if chunk.is_null() {
            let slots: Box<[Slot]> = (0..1usize << c).map(|_| Slot::default()).collect();
            chunk = Box::leak(slots).as_mut_ptr();
            // Only `intern`, under its lock, makes chunks: nothing else can have set this one.
            CHUNK[c].store(chunk, Ordering::Release);
        }
        let text: &'static &'static str = Box::leak(Box::new(text));
        // SAFETY: as in `get`: the chunk holds `2^c` slots, `at < 2^c`.
        let slot = unsafe { &*chunk.add(at) };
        slot.store(std::ptr::from_ref(text).cast_mut(), Ordering::Release);
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    #[inline]
    fn deref(&self) -> &'static str {
        self.as_str()
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Name {
    #[inline]
    fn eq(&self, other: &Name) -> bool {
        // One text has one number: the same number is the same text (the common case, decided
        // without reading it). A seeded text interned again has another.
        self.0 == other.0 || self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Name> for str {
    fn eq(&self, other: &Name) -> bool {
        self == other.as_str()
    }
}

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.as_str(), f)
    }
}

impl serde::Serialize for Name {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

const _: () = assert!(std::mem::size_of::<Option<Name>>() == 4);

/// `s` interned: the one copy of its text the process keeps. Texts are kept for the life of the
/// process, shared by every capture it reads, so what they cost is bounded by the distinct names of
/// the captures read (their string areas), whatever their entries.
pub fn intern(s: &str) -> Name {
    static TEXTS: std::sync::Mutex<Option<std::collections::HashSet<Name>>> =
        std::sync::Mutex::new(None);
    // A poisoned lock still holds a consistent set (an insert is the only change).
    let mut g = TEXTS.lock().unwrap_or_else(|e| e.into_inner());
    let set = g.get_or_insert_with(Default::default);
    if let Some(&t) = set.get(s) {
        return t;
    }
    let text: &'static str = Box::leak(s.into());
    // Numbered on from the seeded names: the set holds each number given out, and only this does.
    let n = set.len() + 1;
    table::put(n, text);
    let t = u32::try_from(n + SEEDED.len())
        .ok()
        .and_then(std::num::NonZeroU32::new)
        .map(Name)
        .expect("fewer than 2^32 distinct names (each is kept in memory)");
    set.insert(t);
    t
}

/// `<api N>`, the name of an API the ring does not describe (a damaged string area names none:
/// every call may be one), made once per id, then read without a lock.
pub(crate) fn unknown_api(id: u16) -> Name {
    use std::sync::atomic::{AtomicU32, Ordering};
    // Zeros (zeroed memory, no space in the binary) until a name is set; each set number is an
    // interned name's (`intern`).
    static NAMES: [AtomicU32; 1 << 16] = [const { AtomicU32::new(0) }; 1 << 16];
    let slot = &NAMES[usize::from(id)];
    if let Some(n) = std::num::NonZeroU32::new(slot.load(Ordering::Acquire)) {
        return Name(n);
    }
    let name = intern(&format!("<api {id}>"));
    // Interning gives every racing thread the same number: whichever stores it, the slot holds it.
    slot.store(name.0.get(), Ordering::Release);
    name
}

/// The longest text of any string record read in this process (`longest_text`).
static LONGEST: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The longest text (name, symbol, NVTX string) of the rings read so far: what one of the model's
/// names can cost an output row. The shim writes none over 1 KiB; a hostile ring's may claim 4 GiB,
/// and outputs that repeat a name per row cut their buffers by it (a 10 MB ring naming one 300 KB
/// kernel in 100 k launches is 30 GB of text in a table's `kernel` column).
pub fn longest_text() -> usize {
    LONGEST.load(std::sync::atomic::Ordering::Relaxed)
}

/// The longest text an output's buffers are sized for as they are: four times what the shim writes.
/// Past it (only a hostile ring) Chrome's units and Parquet's batches are cut by `longest_text`.
pub const LONG_TEXT: usize = 4 << 10;

pub(crate) struct Names {
    apis: HashMap<u16, (Name, ApiInfo)>,
    /// Class by API id, as a flat table: looked up several times per entry, so no hashing.
    classes: Vec<Option<Class>>,
    /// Kernel names as people read them (demangled).
    kernels: HashMap<u64, Name>,
    /// The raw symbol of each kernel name that demangling changed (display → symbol).
    symbols: HashMap<String, String>,
    texts: HashMap<u64, Name>,
    /// Texts that are mangled symbols (CUPTI's kernel names come as texts), demangled.
    kernel_texts: HashMap<u64, Name>,
}

/// Symbols longer than this are shown as they are (a name this long is no longer read anyway, and
/// demangling cost grows with it).
const DEMANGLE_MAX: usize = 16 << 10;

/// A kernel symbol as people read it: an Itanium C++ mangled name (`_Z…`) demangled, anything else
/// (a C name, Triton's, a name that does not parse) as it is.
///
/// The C++ runtime's `__cxa_demangle` (libstdc++, loaded at first use) does it where it can be
/// loaded: its text is what `c++filt`, Nsight Systems and the pure-Python engine print (the
/// `cpp_demangle` crate writes some template arguments differently: `(unsigned long)2` for `2ul`).
/// Without libstdc++, the crate does it.
pub fn demangle(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.starts_with("_Z") || s.len() > DEMANGLE_MAX {
        return std::borrow::Cow::Borrowed(s);
    }
    if let Some(cxa) = cxa_demangle() {
        return match cxa.demangle(s) {
            Some(d) => std::borrow::Cow::Owned(d),
            None => std::borrow::Cow::Borrowed(s),
        };
    }
    match cpp_demangle::Symbol::new(s) {
        Ok(sym) => match sym.demangle(&cpp_demangle::DemangleOptions::default()) {
            Ok(d) if !d.is_empty() => std::borrow::Cow::Owned(d),
            _ => std::borrow::Cow::Borrowed(s),
        },
        Err(_) => std::borrow::Cow::Borrowed(s),
    }
}

type CxaDemangle = unsafe extern "C" fn(
    *const libc::c_char,
    *mut libc::c_char,
    *mut libc::size_t,
    *mut libc::c_int,
) -> *mut libc::c_char;

/// libstdc++'s demangler, kept loaded for the life of the process.
struct Cxa {
    _lib: libloading::Library,
    f: CxaDemangle,
}

impl Cxa {
    /// `None` for a symbol it rejects (status ≠ 0: invalid, or nested past its recursion limit).
    fn demangle(&self, s: &str) -> Option<String> {
        let c = std::ffi::CString::new(s).ok()?;
        let mut status: libc::c_int = -1;
        // SAFETY: `c` is a NUL-terminated string that outlives the call; a null buffer asks
        // __cxa_demangle to malloc the result, which is freed below once copied.
        let p = unsafe {
            (self.f)(
                c.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut status,
            )
        };
        if p.is_null() {
            return None;
        }
        // SAFETY: on success `p` is a NUL-terminated malloc'd string, read once and freed once.
        let out = unsafe {
            let text = std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned();
            libc::free(p.cast());
            text
        };
        (status == 0 && !out.is_empty()).then_some(out)
    }
}

fn cxa_demangle() -> Option<&'static Cxa> {
    static CXA: std::sync::OnceLock<Option<Cxa>> = std::sync::OnceLock::new();
    CXA.get_or_init(|| {
        // SAFETY: loading libstdc++ runs its initialisers, which only set up the C++ runtime; the
        // symbol has the Itanium ABI's signature.
        unsafe {
            let lib = libloading::Library::new("libstdc++.so.6").ok()?;
            let f: CxaDemangle = *lib.get::<CxaDemangle>(b"__cxa_demangle\0").ok()?;
            Some(Cxa { _lib: lib, f })
        }
    })
    .as_ref()
}

/// The name of an API layer, as reports and exports print it.
pub fn layer_name(l: causeway_ring::Layer) -> &'static str {
    use causeway_ring::Layer;
    match l {
        Layer::Runtime => "runtime",
        Layer::Driver => "driver",
        Layer::Nvtx => "nvtx",
        Layer::Loader => "loader",
        Layer::LevelZero => "level_zero",
        Layer::UnifiedRuntime => "unified_runtime",
    }
}

impl Names {
    pub(crate) fn of(ring: &Ring) -> Names {
        let mut n = Names {
            apis: HashMap::default(),
            classes: Vec::new(),
            kernels: HashMap::default(),
            symbols: HashMap::default(),
            texts: HashMap::default(),
            kernel_texts: HashMap::default(),
        };
        for r in &ring.view.strings {
            LONGEST.fetch_max(r.text.len(), std::sync::atomic::Ordering::Relaxed);
            // First record wins: the writer interns each key once, so a repeat is corruption.
            match r.kind {
                StrKind::Api => {
                    if let Ok(id) = u16::try_from(r.key) {
                        let info = ApiInfo::unpack(r.aux);
                        n.apis.entry(id).or_insert_with(|| (intern(&r.text), info));
                        if n.classes.len() <= id as usize {
                            n.classes.resize(id as usize + 1, None);
                        }
                        n.classes[id as usize].get_or_insert(info.class);
                    }
                }
                StrKind::Kernel => {
                    if let std::collections::hash_map::Entry::Vacant(v) = n.kernels.entry(r.key) {
                        let shown = demangle(&r.text);
                        if shown != r.text.as_str() {
                            n.symbols
                                .entry(shown.to_string())
                                .or_insert_with(|| r.text.clone());
                        }
                        v.insert(intern(&shown));
                    }
                }
                StrKind::Text => {
                    if let std::collections::hash_map::Entry::Vacant(v) = n.texts.entry(r.key) {
                        let shown = demangle(&r.text);
                        if shown != r.text.as_str() {
                            n.symbols
                                .entry(shown.to_string())
                                .or_insert_with(|| r.text.clone());
                            n.kernel_texts.insert(r.key, intern(&shown));
                        }
                        v.insert(intern(&r.text));
                    }
                }
                StrKind::Thread => {}
            }
        }
        n
    }

    pub(crate) fn api(&self, id: u16) -> Option<&(Name, ApiInfo)> {
        self.apis.get(&id)
    }

    pub(crate) fn kernel(&self, handle: u64) -> Option<&str> {
        self.kernels.get(&handle).map(|k| &**k)
    }

    /// `kernel`, shared rather than copied.
    pub(crate) fn kernel_name(&self, handle: u64) -> Option<Name> {
        self.kernels.get(&handle).cloned()
    }

    /// Demangled kernel names and the raw symbols they came from.
    pub(crate) fn symbols(&self) -> impl Iterator<Item = (&String, &String)> {
        self.symbols.iter()
    }

    pub(crate) fn class(&self, e: &Entry) -> Option<Class> {
        self.classes.get(e.api as usize).copied().flatten()
    }

    pub(crate) fn text(&self, id: u64) -> String {
        self.text_name(id).to_string()
    }

    /// `text`, shared rather than copied where the ring names it.
    pub(crate) fn text_name(&self, id: u64) -> Name {
        match id {
            0 => Name::UNNAMED,
            _ => self
                .texts
                .get(&id)
                .cloned()
                .unwrap_or_else(|| intern(&format!("<string {id}>"))),
        }
    }

    /// A text that names a kernel (CUPTI's kernel records), demangled like `kernel`'s names.
    pub(crate) fn kernel_text(&self, id: u64) -> String {
        self.kernel_text_name(id).to_string()
    }

    /// `kernel_text`, shared rather than copied.
    pub(crate) fn kernel_text_name(&self, id: u64) -> Name {
        match self.kernel_texts.get(&id) {
            Some(&k) => k,
            None => self.text_name(id),
        }
    }

    /// The ids of the text records that say exactly `s` (an NVTX domain is named by its name's id).
    pub(crate) fn text_ids(&self, s: &str) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .texts
            .iter()
            .filter(|(_, t)| &***t == s)
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        ids
    }

    pub(crate) fn domain(&self, id: u64) -> Option<String> {
        (id != 0).then(|| self.text(id))
    }

    /// `domain`, shared rather than copied.
    pub(crate) fn domain_name(&self, id: u64) -> Option<Name> {
        (id != 0).then(|| self.text_name(id))
    }
}

#[cfg(test)]
mod tests {
    use super::{demangle, intern, unknown_api};

    #[test]
    fn names_are_interned_once_and_unknown_apis_named_by_id() {
        let a = intern(&String::from("cudaLaunchKernel"));
        let b = intern("cudaLaunchKernel");
        assert!(std::ptr::eq(a.as_str(), b.as_str()), "one copy per text");
        // Asked for on many threads at once, every caller gets the same interned name.
        let got: Vec<&'static str> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8).map(|_| s.spawn(|| unknown_api(4242))).collect();
            hs.into_iter().map(|h| h.join().unwrap().as_str()).collect()
        });
        assert_eq!(got[0], "<api 4242>");
        assert!(got.iter().all(|&n| std::ptr::eq(n, got[0])));
        assert!(std::ptr::eq(
            unknown_api(4242).as_str(),
            intern("<api 4242>").as_str()
        ));
        // A name is one number, and an absent one costs nothing more.
        assert_eq!(std::mem::size_of::<Option<super::Name>>(), 4);
        // It compares, hashes and orders as its text, seeded or interned.
        let (c, m) = (super::Name::MEMSET, intern("memset"));
        assert_eq!(c, m);
        assert_ne!(c, a);
        assert_eq!(&*c, "memset");
        assert_eq!(a, "cudaLaunchKernel");
        assert_eq!("cudaLaunchKernel", a);
        assert!(intern("a") < intern("b"));
        assert!(
            super::Name::UNKNOWN_KERNEL < c,
            "as the texts order ('[' before 'm')"
        );
        let set: std::collections::HashSet<super::Name> = [a, m].into();
        assert!(set.contains("cudaLaunchKernel") && set.contains(&c) && set.contains("memset"));
        // The seeded texts are the rows the facts name.
        assert_eq!(&*super::Name::GRAPH_LAUNCH, crate::facts::device::GRAPH_ROW);
        assert_eq!(
            &*super::Name::UNKNOWN_KERNEL,
            crate::facts::device::UNKNOWN_KERNEL_ROW
        );
        // Texts far past the first chunks read back as written.
        let many: Vec<_> = (0..5000).map(|i| intern(&format!("name {i}"))).collect();
        assert!(many
            .iter()
            .enumerate()
            .all(|(i, n)| **n == format!("name {i}")));
    }

    #[test]
    fn kernel_symbols_demangle_and_other_names_stay() {
        assert_eq!(
            demangle("_Z6vecAddPfS_S_i"),
            "vecAdd(float*, float*, float*, int)"
        );
        assert_eq!(
            demangle("_ZN7cutlass6KernelINS_4gemmEEEvNT_6ParamsE"),
            demangle("_ZN7cutlass6KernelINS_4gemmEEEvNT_6ParamsE").as_ref()
        );
        assert!(demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_")
            .starts_with("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>"));
        for plain in ["sleep_200us", "triton_poi_fused_add_0", "_Zgarbage", ""] {
            assert_eq!(demangle(plain), plain);
        }
    }

    /// The C++ runtime's text, as c++filt and the Python engine print it (std::array<char*, 2ul>
    /// where the cpp_demangle crate writes `(unsigned long)2`).
    #[test]
    fn the_cxx_runtime_demangles_where_present() {
        let sym = "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_13AUnaryFunctorIN3c104HalfES4_S4_NS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_";
        let shown = demangle(sym);
        assert!(super::cxa_demangle().is_some(), "libstdc++ loads on CI");
        assert!(shown.contains("std::array<char*, 2ul>"), "{shown}");
        let cpp = cpp_demangle::Symbol::new(sym)
            .unwrap()
            .demangle(&cpp_demangle::DemangleOptions::default())
            .unwrap();
        assert!(cpp.contains("(unsigned long)2"), "{cpp}");
    }

    /// A symbol nested past either demangler's recursion limit comes back as it is, not as a crash.
    #[test]
    fn deeply_nested_symbols_stay_as_they_are() {
        for n in [1_000, 4_000] {
            let sym = format!("_Z1fI{}iEvv", "PA1_".repeat(n));
            assert_eq!(demangle(&sym), sym.as_str());
            let nested = format!("_Z1f{}i{}", "N1aI".repeat(n), "EE".repeat(n));
            assert_eq!(demangle(&nested), nested.as_str());
        }
    }
}
