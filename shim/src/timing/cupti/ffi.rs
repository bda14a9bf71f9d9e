//! CUPTI's ABI as the backend uses it (CUDA 13.0: `cupti_result.h`, `cupti_activity.h`,
//! `cupti_callbacks.h`, `cupti_runtime_cbid.h`, `cupti_driver_cbid.h`): result and activity-kind
//! codes, the byte offsets of the activity-record fields read, the entry points called, the callback
//! data, and the callback ids of the device-work entry points. Declarations only.

use std::ffi::{c_char, c_void, CStr};

pub(super) const SUCCESS: i32 = 0;
pub(super) const KIND_MEMCPY: u32 = 1;
pub(super) const KIND_MEMSET: u32 = 2;
pub(super) const KIND_KERNEL: u32 = 3;
pub(super) const KIND_DRIVER: u32 = 4;
pub(super) const KIND_RUNTIME: u32 = 5;
pub(super) const KIND_CONCURRENT_KERNEL: u32 = 10;
pub(super) const KIND_MEMCPY2: u32 = 22;
pub(super) const KIND_EXTERNAL_CORRELATION: u32 = 39;
/// The activity kinds' names, for messages.
pub(super) fn kind_name(kind: u32) -> &'static str {
    match kind {
        KIND_MEMCPY => "MEMCPY",
        KIND_MEMSET => "MEMSET",
        KIND_KERNEL => "KERNEL",
        KIND_DRIVER => "DRIVER",
        KIND_RUNTIME => "RUNTIME",
        KIND_CONCURRENT_KERNEL => "CONCURRENT_KERNEL",
        KIND_MEMCPY2 => "MEMCPY2",
        KIND_EXTERNAL_CORRELATION => "EXTERNAL_CORRELATION",
        _ => "?",
    }
}
/// `CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0`: ours (torch uses its own kinds).
pub(super) const EXTERNAL_KIND: u32 = 3;
pub(super) const FLUSH_FORCED: u32 = 1;

/// Byte offsets of the fields read from CUPTI 13.0's activity records, from `cupti_activity.h`
/// (x86-64 / LP64, `PACKED_ALIGNMENT` = packed, 8-aligned). Each was checked with `offsetof` in a C
/// program compiled against the real header (CUDA 13.0.85); `SIZE` is `sizeof`. Change them only
/// together with that check.
pub(super) mod off {
    /// `CUpti_ActivityKernel10` (kinds `KERNEL` and `CONCURRENT_KERNEL`).
    pub mod kernel {
        pub const START: usize = 16; // uint64_t start
        pub const END: usize = 24; // uint64_t end
        pub const DEVICE: usize = 40; // uint32_t deviceId
        pub const STREAM: usize = 48; // uint32_t streamId
        pub const CORRELATION: usize = 92; // uint32_t correlationId
        pub const NAME: usize = 104; // const char *name
        pub const QUEUED: usize = 120; // uint64_t queued
        pub const SUBMITTED: usize = 128; // uint64_t submitted
        pub const GRAPH_NODE: usize = 144; // uint64_t graphNodeId
        /// The fields every device record has (`records::parse`).
        pub const COMMON: [usize; 6] = [START, END, DEVICE, STREAM, CORRELATION, GRAPH_NODE];
        pub const SIZE: usize = 216;
    }
    /// `CUpti_ActivityMemcpy6` (kind `MEMCPY`).
    pub mod memcpy {
        pub const COPY_KIND: usize = 4; // uint8_t copyKind (CUpti_ActivityMemcpyKind)
        pub const BYTES: usize = 8; // uint64_t bytes
        pub const START: usize = 16;
        pub const END: usize = 24;
        pub const DEVICE: usize = 32;
        pub const STREAM: usize = 40;
        pub const CORRELATION: usize = 44;
        pub const GRAPH_NODE: usize = 64; // uint64_t graphNodeId
        /// The fields every device record has (`records::parse`).
        pub const COMMON: [usize; 6] = [START, END, DEVICE, STREAM, CORRELATION, GRAPH_NODE];
        pub const SIZE: usize = 96;
    }
    /// `CUpti_ActivityMemcpyPtoP4` (kind `MEMCPY2`, peer-to-peer copies).
    pub mod p2p {
        pub const COPY_KIND: usize = 4;
        pub const BYTES: usize = 8;
        pub const START: usize = 16;
        pub const END: usize = 24;
        pub const DEVICE: usize = 32;
        pub const STREAM: usize = 40;
        pub const CORRELATION: usize = 60;
        pub const GRAPH_NODE: usize = 72; // uint64_t graphNodeId
        /// The fields every device record has (`records::parse`).
        pub const COMMON: [usize; 6] = [START, END, DEVICE, STREAM, CORRELATION, GRAPH_NODE];
        pub const SIZE: usize = 96;
    }
    /// `CUpti_ActivityMemset4` (kind `MEMSET`).
    pub mod memset {
        pub const BYTES: usize = 8;
        pub const START: usize = 16;
        pub const END: usize = 24;
        pub const DEVICE: usize = 32;
        pub const STREAM: usize = 40;
        pub const CORRELATION: usize = 44;
        pub const GRAPH_NODE: usize = 64; // uint64_t graphNodeId
        /// The fields every device record has (`records::parse`).
        pub const COMMON: [usize; 6] = [START, END, DEVICE, STREAM, CORRELATION, GRAPH_NODE];
        pub const SIZE: usize = 88;
    }
    /// `CUpti_ActivityExternalCorrelation` (kind `EXTERNAL_CORRELATION`).
    pub mod external {
        pub const EXTERNAL_KIND: usize = 4; // CUpti_ExternalCorrelationKind externalKind
        pub const EXTERNAL_ID: usize = 8; // uint64_t externalId
        pub const CORRELATION: usize = 16; // uint32_t correlationId
        pub const SIZE: usize = 24;
    }
}

// Every field read lies inside its struct, and `parse` is given enough bytes for the largest one.
const _: () = {
    assert!(off::kernel::NAME + 8 <= off::kernel::SIZE);
    assert!(off::memcpy::CORRELATION + 4 <= off::memcpy::SIZE);
    assert!(off::p2p::CORRELATION + 4 <= off::p2p::SIZE);
    assert!(off::memset::CORRELATION + 4 <= off::memset::SIZE);
    assert!(off::external::CORRELATION + 4 <= off::external::SIZE);
    assert!(off::kernel::SIZE >= off::memcpy::SIZE && off::kernel::SIZE >= off::p2p::SIZE);
    assert!(off::kernel::SIZE >= off::memset::SIZE && off::kernel::SIZE >= off::external::SIZE);
};
/// The most bytes of one record `parse` is handed.
pub(super) const MAX_RECORD: usize = off::kernel::SIZE;

pub(super) type Subscribe =
    unsafe extern "C" fn(*mut *mut c_void, Option<CallbackFn>, *mut c_void) -> i32;
pub(super) type CallbackFn = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);
pub(super) type RequestFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
pub(super) type CompleteFn = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);
pub(super) type TimestampFn = unsafe extern "C" fn() -> u64;

/// The CUPTI entry points the backend calls (signatures from `cupti_activity.h`,
/// `cupti_callbacks.h`, `cupti_result.h`; enums are 32-bit).
pub(super) struct Api {
    pub(super) subscribe: Subscribe,
    pub(super) unsubscribe: unsafe extern "C" fn(*mut c_void) -> i32,
    pub(super) register_timestamp: unsafe extern "C" fn(TimestampFn) -> i32,
    pub(super) register_callbacks: unsafe extern "C" fn(RequestFn, CompleteFn) -> i32,
    pub(super) enable: unsafe extern "C" fn(u32) -> i32,
    pub(super) disable: unsafe extern "C" fn(u32) -> i32,
    pub(super) next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> i32,
    pub(super) dropped: unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> i32,
    pub(super) flush_all: unsafe extern "C" fn(u32) -> i32,
    pub(super) push: unsafe extern "C" fn(u32, u64) -> i32,
    pub(super) pop: unsafe extern "C" fn(u32, *mut u64) -> i32,
    pub(super) result_string: Option<unsafe extern "C" fn(i32, *mut *const c_char) -> i32>,
    /// `cuptiEnableCallback(enable, subscriber, domain, cbid)`.
    pub(super) enable_callback: Option<unsafe extern "C" fn(u32, *mut c_void, u32, u32) -> i32>,
    /// `cuptiEnableDomain(enable, subscriber, domain)`.
    pub(super) enable_domain: Option<unsafe extern "C" fn(u32, *mut c_void, u32) -> i32>,
    /// `cuptiActivityEnableLatencyTimestamps(enable)`: kernels' queued and submitted times.
    pub(super) enable_latency: Option<unsafe extern "C" fn(u8) -> i32>,
}

impl Api {
    /// `CUPTI_ERROR_… (n)` for a result code.
    pub(super) fn describe(&self, r: i32) -> String {
        let mut s: *const c_char = std::ptr::null();
        if let Some(f) = self.result_string {
            // SAFETY: cuptiGetResultString writes a static string's address into `s`.
            if unsafe { f(r, &mut s) } == SUCCESS && !s.is_null() {
                // SAFETY: a NUL-terminated string CUPTI keeps for the life of the process.
                let name = unsafe { CStr::from_ptr(s) }.to_string_lossy();
                return format!("{name} ({r})");
            }
        }
        format!("error {r}")
    }
}

/// `CUPTI_CB_DOMAIN_RUNTIME_API`, `CUPTI_API_ENTER`, `CUPTI_API_EXIT` (`cupti_callbacks.h`).
pub(super) const DOMAIN_RUNTIME: u32 = 2;
pub(super) const API_ENTER: u32 = 0;
pub(super) const API_EXIT: u32 = 1;

/// The runtime and driver callback ids of the hooks that issue device work: generated from CUPTI's
/// headers with the hook tables (`shim/gen/hookgen.py`), so the two cannot drift apart.
pub(super) use super::cbids::{DRIVER_CBIDS, RUNTIME_CBIDS};

/// `CUpti_CallbackData` (CUDA 13.0, LP64): the fields up to `correlationId`.
#[repr(C)]
pub(super) struct CallbackData {
    pub(super) callback_site: u32,
    pub(super) function_name: *const c_char,
    pub(super) function_params: *const c_void,
    pub(super) function_return_value: *mut c_void,
    pub(super) symbol_name: *const c_char,
    pub(super) context: *mut c_void,
    pub(super) context_uid: u32,
    pub(super) correlation_data: *mut u64,
    pub(super) correlation_id: u32,
}

/// `CUPTI_CB_DOMAIN_DRIVER_API`.
pub(super) const DOMAIN_DRIVER: u32 = 1;
