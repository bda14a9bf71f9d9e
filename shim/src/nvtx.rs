//! NVTX injection (placeholder until the injection table lands).
use causeway_ring::layout::ApiInfo;

pub fn apis() -> impl Iterator<Item = (u16, &'static str, ApiInfo)> {
    std::iter::empty()
}

pub fn announce() {}
