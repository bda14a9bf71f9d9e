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
    kernels: HashMap<u64, String>,
    texts: HashMap<u64, String>,
}

impl Names {
    pub(crate) fn of(ring: &Ring) -> Names {
        let mut n = Names {
            apis: HashMap::default(),
            classes: Vec::new(),
            kernels: HashMap::default(),
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
                    n.kernels.entry(r.key).or_insert_with(|| r.text.clone());
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
