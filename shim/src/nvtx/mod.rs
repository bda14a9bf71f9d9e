//! NVTX v3 injection. Every copy of the header-only NVTX in the process reads `NVTX_INJECTION64_PATH`
//! on its first call, dlopens that library and calls its `InitializeInjectionNvtx2`; `announce` points
//! the variable at this shim, and `InitializeInjectionNvtx2` writes our callbacks into every slot of
//! NVTX's CORE, CORE2, CUDA, CUDART and SYNC function tables (`inject::slots`, one table). The
//! callbacks record marks and ranges as instant entries: a0 = message text id (0: none), a1 = domain
//! (0: the default domain; otherwise the domain name's text id, which is also the domain handle), a2 =
//! range id for start/end; an attribute structure's category, colour and payload follow in an
//! `NvtxAttributes` entry. Every other NVTX call is a complete `Call` entry (class `Name` for the calls
//! that name a stream, event, device, context, category or thread). They run on the application's hot
//! path: no allocation, no lock, no panic.
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

/// API ids of the NVTX entry points, one per callback slot the shim fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub(crate) enum Api {
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
    // Ids below were added with the rest of the callback slots; the ones above keep their numbers.
    NameCategoryA,
    NameCategoryW,
    NameOsThreadA,
    NameOsThreadW,
    DomainResourceCreate,
    DomainResourceDestroy,
    DomainNameCategoryA,
    DomainNameCategoryW,
    DomainRegisterStringA,
    DomainRegisterStringW,
    DomainCreateA,
    DomainCreateW,
    DomainDestroy,
    Initialize,
    NameCuDeviceA,
    NameCuDeviceW,
    NameCuContextA,
    NameCuContextW,
    NameCuStreamA,
    NameCuStreamW,
    NameCuEventA,
    NameCuEventW,
    NameCudaDeviceA,
    NameCudaDeviceW,
    NameCudaStreamA,
    NameCudaStreamW,
    NameCudaEventA,
    NameCudaEventW,
    DomainSyncUserCreate,
    DomainSyncUserDestroy,
    DomainSyncUserAcquireStart,
    DomainSyncUserAcquireFailed,
    DomainSyncUserAcquireSuccess,
    DomainSyncUserReleasing,
}

/// Every NVTX entry point the shim records: its name, and its class (marks and ranges are entries of
/// their own kinds; the other calls are complete `Call` entries, `Name` for those that name something).
const NAMES: [(Api, &str, Class); 50] = {
    use Api::*;
    use Class::{Name as N, Other as O};
    [
        (MarkEx, "nvtxMarkEx", O),
        (MarkA, "nvtxMarkA", O),
        (MarkW, "nvtxMarkW", O),
        (RangeStartEx, "nvtxRangeStartEx", O),
        (RangeStartA, "nvtxRangeStartA", O),
        (RangeStartW, "nvtxRangeStartW", O),
        (RangeEnd, "nvtxRangeEnd", O),
        (RangePushEx, "nvtxRangePushEx", O),
        (RangePushA, "nvtxRangePushA", O),
        (RangePushW, "nvtxRangePushW", O),
        (RangePop, "nvtxRangePop", O),
        (DomainMarkEx, "nvtxDomainMarkEx", O),
        (DomainRangeStartEx, "nvtxDomainRangeStartEx", O),
        (DomainRangeEnd, "nvtxDomainRangeEnd", O),
        (DomainRangePushEx, "nvtxDomainRangePushEx", O),
        (DomainRangePop, "nvtxDomainRangePop", O),
        (NameCategoryA, "nvtxNameCategoryA", N),
        (NameCategoryW, "nvtxNameCategoryW", N),
        (NameOsThreadA, "nvtxNameOsThreadA", N),
        (NameOsThreadW, "nvtxNameOsThreadW", N),
        (DomainResourceCreate, "nvtxDomainResourceCreate", N),
        (DomainResourceDestroy, "nvtxDomainResourceDestroy", O),
        (DomainNameCategoryA, "nvtxDomainNameCategoryA", N),
        (DomainNameCategoryW, "nvtxDomainNameCategoryW", N),
        (DomainRegisterStringA, "nvtxDomainRegisterStringA", O),
        (DomainRegisterStringW, "nvtxDomainRegisterStringW", O),
        (DomainCreateA, "nvtxDomainCreateA", O),
        (DomainCreateW, "nvtxDomainCreateW", O),
        (DomainDestroy, "nvtxDomainDestroy", O),
        (Initialize, "nvtxInitialize", O),
        (NameCuDeviceA, "nvtxNameCuDeviceA", N),
        (NameCuDeviceW, "nvtxNameCuDeviceW", N),
        (NameCuContextA, "nvtxNameCuContextA", N),
        (NameCuContextW, "nvtxNameCuContextW", N),
        (NameCuStreamA, "nvtxNameCuStreamA", N),
        (NameCuStreamW, "nvtxNameCuStreamW", N),
        (NameCuEventA, "nvtxNameCuEventA", N),
        (NameCuEventW, "nvtxNameCuEventW", N),
        (NameCudaDeviceA, "nvtxNameCudaDeviceA", N),
        (NameCudaDeviceW, "nvtxNameCudaDeviceW", N),
        (NameCudaStreamA, "nvtxNameCudaStreamA", N),
        (NameCudaStreamW, "nvtxNameCudaStreamW", N),
        (NameCudaEventA, "nvtxNameCudaEventA", N),
        (NameCudaEventW, "nvtxNameCudaEventW", N),
        (DomainSyncUserCreate, "nvtxDomainSyncUserCreate", O),
        (DomainSyncUserDestroy, "nvtxDomainSyncUserDestroy", O),
        (
            DomainSyncUserAcquireStart,
            "nvtxDomainSyncUserAcquireStart",
            O,
        ),
        (
            DomainSyncUserAcquireFailed,
            "nvtxDomainSyncUserAcquireFailed",
            O,
        ),
        (
            DomainSyncUserAcquireSuccess,
            "nvtxDomainSyncUserAcquireSuccess",
            O,
        ),
        (DomainSyncUserReleasing, "nvtxDomainSyncUserReleasing", O),
    ]
};

const fn info(class: Class) -> ApiInfo {
    ApiInfo {
        layer: Layer::Nvtx,
        class,
        level: 1,
    }
}

/// The API ids and names of the NVTX entry points, interned when a ring is created.
pub fn apis() -> impl Iterator<Item = (u16, &'static str, ApiInfo)> {
    NAMES
        .iter()
        .map(|&(api, name, class)| (api as u16, name, info(class)))
}
