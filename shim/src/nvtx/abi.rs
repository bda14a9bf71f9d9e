//! NVTX's side of the injection protocol, from the NVTX 3 headers (`nvtxDetail/nvtxTypes.h`,
//! `nvtxDetail/nvtxImpl.h`, `nvToolsExt.h`): export-table and module ids, message types, and the
//! structures the shim reads. The numbers are repeated here next to each use.

use std::ffi::{c_int, c_uint, c_void};

/// `NVTX_ETID_CALLBACKS` and `NVTX_ETID_VERSIONINFO` (`enum NvtxExportTableID`).
pub(super) const ETID_CALLBACKS: u32 = 1;
pub(super) const ETID_VERSIONINFO: u32 = 3;
/// `NVTX_CB_MODULE_*` (`enum NvtxCallbackModule`): CORE, CUDA, CUDART, CORE2, SYNC (3, OpenCL, is
/// not filled).
pub(super) const MODULE_CORE: c_int = 1;
pub(super) const MODULE_CUDA: c_int = 2;
pub(super) const MODULE_CUDART: c_int = 4;
pub(super) const MODULE_CORE2: c_int = 5;
pub(super) const MODULE_SYNC: c_int = 6;
/// `NVTX_COLOR_ARGB` (`enum nvtxColorType_t`).
pub(super) const COLOR_ARGB: i32 = 1;
/// `NVTX_RESOURCE_MAKE_TYPE(CLASS, INDEX)` = class << 16 | index, for the classes whose identifiers
/// name CUDA objects (`nvToolsExtCuda.h`: class 4, `nvToolsExtCudaRt.h`: class 5).
pub(super) const RESOURCE_CUDA_DEVICE: i32 = 4 << 16 | 1;
pub(super) const RESOURCE_CUDA_CONTEXT: i32 = 4 << 16 | 2;
pub(super) const RESOURCE_CUDA_STREAM: i32 = 4 << 16 | 3;
pub(super) const RESOURCE_CUDA_EVENT: i32 = 4 << 16 | 4;
pub(super) const RESOURCE_CUDART_DEVICE: i32 = 5 << 16;
pub(super) const RESOURCE_CUDART_STREAM: i32 = 5 << 16 | 1;
pub(super) const RESOURCE_CUDART_EVENT: i32 = 5 << 16 | 2;
/// `NVTX_VERSION` of the headers this was written against.
pub(super) const NVTX_VERSION: u32 = 3;
/// `NVTX_NO_PUSH_POP_TRACKING`: what push and pop return when levels are not tracked.
pub(super) const NO_PUSH_POP_TRACKING: c_int = -2;
/// `NVTX_MESSAGE_TYPE_ASCII`, `_UNICODE`, `_REGISTERED` (`enum nvtxMessageType_t`).
pub(super) const MESSAGE_ASCII: i32 = 1;
pub(super) const MESSAGE_UNICODE: i32 = 2;
pub(super) const MESSAGE_REGISTERED: i32 = 3;

/// `NvtxGetExportTableFunc_t`: `const void *(*)(uint32_t exportTableId)`.
pub type GetExportTable = unsafe extern "C" fn(u32) -> *const c_void;
/// `NvtxFunctionTable`: an array of pointers to NVTX's function-pointer slots.
pub(super) type FunctionTable = *mut *mut *const ();
/// `NvtxExportTableCallbacks::GetModuleFunctionTable`.
pub(super) type GetModuleFunctionTable =
    unsafe extern "C" fn(c_int, *mut FunctionTable, *mut c_uint) -> c_int;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
pub(super) struct ExportTableCallbacks {
    pub(super) struct_size: usize,
    pub(super) get_module_function_table: Option<GetModuleFunctionTable>,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
pub(super) struct ExportTableVersionInfo {
    pub(super) struct_size: usize,
    pub(super) version: u32,
    pub(super) reserved0: u32,
    pub(super) set_injection_nvtx_version: Option<unsafe extern "C" fn(u32)>,
}

/// `nvtxEventAttributes_v2` (v1 has the same layout). The payload union holds a double, so it is
/// 8-aligned: `message_type` is at 32 and `message` at 40, 48 bytes in all.
#[repr(C)]
pub struct EventAttributes {
    pub version: u16,
    pub size: u16,
    pub category: u32,
    pub color_type: i32,
    pub color: u32,
    pub payload_type: i32,
    pub reserved0: i32,
    pub payload: u64,
    pub message_type: i32,
    /// `nvtxMessageValue_t`: `const char *`, `const wchar_t *` or `nvtxStringHandle_t`.
    pub message: *const c_void,
}

/// `nvtxResourceAttributes_v0`: 32 bytes.
#[repr(C)]
pub struct ResourceAttributes {
    pub version: u16,
    pub size: u16,
    pub identifier_type: i32,
    /// `union identifier_t` (a pointer or a `uint64_t`).
    pub identifier: u64,
    pub message_type: i32,
    pub message: *const c_void,
}

/// `nvtxSyncUserAttributes_v0`: 16 bytes.
#[repr(C)]
pub struct SyncUserAttributes {
    pub version: u16,
    pub size: u16,
    pub message_type: i32,
    pub message: *const c_void,
}

/// `nvtxPayloadData_t` (`nvToolsExtPayload.h`): one extended payload.
#[repr(C)]
pub struct PayloadData {
    pub schema_id: u64,
    pub size: usize,
    pub payload: *const c_void,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_attributes_layout_matches_the_header() {
        assert_eq!(std::mem::offset_of!(EventAttributes, message_type), 32);
        assert_eq!(std::mem::offset_of!(EventAttributes, message), 40);
        assert_eq!(std::mem::size_of::<EventAttributes>(), 48);
        assert_eq!(std::mem::size_of::<ExportTableVersionInfo>(), 24);
        assert_eq!(std::mem::size_of::<ExportTableCallbacks>(), 16);
        assert_eq!(std::mem::offset_of!(EventAttributes, payload), 24);
        assert_eq!(std::mem::offset_of!(ResourceAttributes, identifier), 8);
        assert_eq!(std::mem::offset_of!(ResourceAttributes, message), 24);
        assert_eq!(std::mem::size_of::<ResourceAttributes>(), 32);
        assert_eq!(std::mem::offset_of!(SyncUserAttributes, message), 8);
        assert_eq!(std::mem::size_of::<SyncUserAttributes>(), 16);
        assert_eq!(std::mem::size_of::<PayloadData>(), 24);
    }
}
