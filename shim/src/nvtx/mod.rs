//! NVTX v3 injection. Every copy of the header-only NVTX in the process reads `NVTX_INJECTION64_PATH`
//! on its first call, dlopens that library and calls its `InitializeInjectionNvtx2`; `announce` points
//! the variable at this shim, and `InitializeInjectionNvtx2` writes our callbacks into NVTX's core
//! (`NVTX_CB_MODULE_CORE`) and domain (`NVTX_CB_MODULE_CORE2`) function tables. The callbacks record
//! marks and ranges as instant entries: a0 = message text id (0: none), a1 = domain (0: the default
//! domain; otherwise the domain name's text id, which is also the domain handle), a2 = range id for
//! start/end. They run on the application's hot path: no allocation, no lock, no panic.
//!
//! Layouts and ids come from the NVTX 3 headers (`nvtxDetail/nvtxTypes.h`, `nvtxDetail/nvtxImpl.h`,
//! `nvToolsExt.h`); the numbers are repeated here next to each use.
//!
//! **Files.** `abi` (NVTX's numbers and structures), `message` (reading an event's message and
//! interning its text), `callbacks` (what each NVTX call records), `inject` (the injection entry
//! point that installs the callbacks), `announce` (pointing `NVTX_INJECTION64_PATH` at the shim).
//! Device timing's step sampling hears of outermost push ranges through the `timing` seam.

mod abi;
mod announce;
mod callbacks;
mod inject;
mod message;

use causeway_ring::layout::{ApiInfo, Class, Layer};

pub use announce::announce;

/// Linux's `wchar_t` (UTF-32).
type WChar = libc::wchar_t;

/// API ids of the NVTX entry points that write entries.
#[derive(Clone, Copy)]
#[repr(u16)]
enum Api {
    MarkEx = 1000,
    MarkA,
    MarkW,
    RangeStartEx,
    RangeStartA,
    RangeStartW,
    RangeEnd,
    RangePushEx,
    RangePushA,
    RangePushW,
    RangePop,
    DomainMarkEx,
    DomainRangeStartEx,
    DomainRangeEnd,
    DomainRangePushEx,
    DomainRangePop,
}

const NAMES: [(Api, &str); 16] = [
    (Api::MarkEx, "nvtxMarkEx"),
    (Api::MarkA, "nvtxMarkA"),
    (Api::MarkW, "nvtxMarkW"),
    (Api::RangeStartEx, "nvtxRangeStartEx"),
    (Api::RangeStartA, "nvtxRangeStartA"),
    (Api::RangeStartW, "nvtxRangeStartW"),
    (Api::RangeEnd, "nvtxRangeEnd"),
    (Api::RangePushEx, "nvtxRangePushEx"),
    (Api::RangePushA, "nvtxRangePushA"),
    (Api::RangePushW, "nvtxRangePushW"),
    (Api::RangePop, "nvtxRangePop"),
    (Api::DomainMarkEx, "nvtxDomainMarkEx"),
    (Api::DomainRangeStartEx, "nvtxDomainRangeStartEx"),
    (Api::DomainRangeEnd, "nvtxDomainRangeEnd"),
    (Api::DomainRangePushEx, "nvtxDomainRangePushEx"),
    (Api::DomainRangePop, "nvtxDomainRangePop"),
];

const INFO: ApiInfo = ApiInfo {
    layer: Layer::Nvtx,
    class: Class::Other,
    level: 1,
};

/// The API ids and names of the NVTX entry points, interned when a ring is created.
pub fn apis() -> impl Iterator<Item = (u16, &'static str, ApiInfo)> {
    NAMES.iter().map(|&(api, name)| (api as u16, name, INFO))
}
