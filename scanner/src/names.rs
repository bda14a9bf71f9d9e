//! Names a ring's string area gives its entries: API names and classes, kernel names by function
//! handle, NVTX texts and domains.

use crate::capture::Ring;
use crate::fastmap::HashMap;
use causeway_ring::layout::{ApiInfo, Class};
use causeway_ring::{Entry, StrKind};

pub(crate) struct Names {
    apis: HashMap<u16, (String, ApiInfo)>,
    /// Class by API id, as a flat table: looked up several times per entry, so no hashing.
    classes: Vec<Option<Class>>,
    /// Kernel names as people read them (demangled).
    kernels: HashMap<u64, String>,
    /// The raw symbol of each kernel name that demangling changed (display → symbol).
    symbols: HashMap<String, String>,
    texts: HashMap<u64, String>,
}

/// Symbols longer than this are shown as they are (a name this long is no longer read anyway, and
/// demangling cost grows with it).
const DEMANGLE_MAX: usize = 16 << 10;

/// A kernel symbol as people read it: an Itanium C++ mangled name (`_Z…`) demangled, anything else
/// (a C name, Triton's, a name that does not parse) as it is.
pub fn demangle(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.starts_with("_Z") || s.len() > DEMANGLE_MAX {
        return std::borrow::Cow::Borrowed(s);
    }
    match cpp_demangle::Symbol::new(s) {
        Ok(sym) => match sym.demangle(&cpp_demangle::DemangleOptions::default()) {
            Ok(d) if !d.is_empty() => std::borrow::Cow::Owned(d),
            _ => std::borrow::Cow::Borrowed(s),
        },
        Err(_) => std::borrow::Cow::Borrowed(s),
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
        };
        for r in &ring.view.strings {
            // First record wins: the writer interns each key once, so a repeat is corruption.
            match r.kind {
                StrKind::Api => {
                    if let Ok(id) = u16::try_from(r.key) {
                        let info = ApiInfo::unpack(r.aux);
                        n.apis.entry(id).or_insert_with(|| (r.text.clone(), info));
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
                        v.insert(shown.into_owned());
                    }
                }
                StrKind::Text => {
                    n.texts.entry(r.key).or_insert_with(|| r.text.clone());
                }
                StrKind::Thread => {}
            }
        }
        n
    }

    pub(crate) fn api(&self, id: u16) -> Option<&(String, ApiInfo)> {
        self.apis.get(&id)
    }

    pub(crate) fn kernel(&self, handle: u64) -> Option<&str> {
        self.kernels.get(&handle).map(String::as_str)
    }

    /// Demangled kernel names and the raw symbols they came from.
    pub(crate) fn symbols(&self) -> impl Iterator<Item = (&String, &String)> {
        self.symbols.iter()
    }

    pub(crate) fn class(&self, e: &Entry) -> Option<Class> {
        self.classes.get(e.api as usize).copied().flatten()
    }

    pub(crate) fn text(&self, id: u64) -> String {
        match id {
            0 => "<unnamed>".into(),
            _ => self
                .texts
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("<string {id}>")),
        }
    }

    pub(crate) fn domain(&self, id: u64) -> Option<String> {
        (id != 0).then(|| self.text(id))
    }
}

#[cfg(test)]
mod tests {
    use super::demangle;

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
}
