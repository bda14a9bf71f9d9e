//! The injection entry point. Each copy of the header-only NVTX in the process dlopens the library
//! `NVTX_INJECTION64_PATH` names (the shim, see `announce`) on its first call and calls its
//! `InitializeInjectionNvtx2`, which writes the shim's callbacks into NVTX's core
//! (`NVTX_CB_MODULE_CORE`) and domain (`NVTX_CB_MODULE_CORE2`) function tables.

use super::abi::*;
use super::callbacks::*;
use std::ffi::{c_int, c_uint};

/// (callback id, function) pairs for `NVTX_CB_MODULE_CORE` (`enum NvtxCallbackIdCore`). 12 and 13
/// (NameCategoryA/W) stay NVTX's no-ops.
pub(super) fn core_callbacks() -> [(u32, *const ()); 13] {
    [
        (1, mark_ex as *const ()),           // NVTX_CBID_CORE_MarkEx
        (2, mark_a as *const ()),            // NVTX_CBID_CORE_MarkA
        (3, mark_w as *const ()),            // NVTX_CBID_CORE_MarkW
        (4, range_start_ex as *const ()),    // NVTX_CBID_CORE_RangeStartEx
        (5, range_start_a as *const ()),     // NVTX_CBID_CORE_RangeStartA
        (6, range_start_w as *const ()),     // NVTX_CBID_CORE_RangeStartW
        (7, range_end as *const ()),         // NVTX_CBID_CORE_RangeEnd
        (8, range_push_ex as *const ()),     // NVTX_CBID_CORE_RangePushEx
        (9, range_push_a as *const ()),      // NVTX_CBID_CORE_RangePushA
        (10, range_push_w as *const ()),     // NVTX_CBID_CORE_RangePushW
        (11, range_pop as *const ()),        // NVTX_CBID_CORE_RangePop
        (14, name_os_thread_a as *const ()), // NVTX_CBID_CORE_NameOsThreadA
        (15, name_os_thread_w as *const ()), // NVTX_CBID_CORE_NameOsThreadW
    ]
}

/// (callback id, function) pairs for `NVTX_CB_MODULE_CORE2` (`enum NvtxCallbackIdCore2`). 6-9
/// (resources, category names) and 15 (Initialize) stay NVTX's no-ops.
pub(super) fn core2_callbacks() -> [(u32, *const ()); 10] {
    [
        (1, domain_mark_ex as *const ()), // NVTX_CBID_CORE2_DomainMarkEx
        (2, domain_range_start_ex as *const ()), // NVTX_CBID_CORE2_DomainRangeStartEx
        (3, domain_range_end as *const ()), // NVTX_CBID_CORE2_DomainRangeEnd
        (4, domain_range_push_ex as *const ()), // NVTX_CBID_CORE2_DomainRangePushEx
        (5, domain_range_pop as *const ()), // NVTX_CBID_CORE2_DomainRangePop
        (10, domain_register_string_a as *const ()), // NVTX_CBID_CORE2_DomainRegisterStringA
        (11, domain_register_string_w as *const ()), // NVTX_CBID_CORE2_DomainRegisterStringW
        (12, domain_create_a as *const ()), // NVTX_CBID_CORE2_DomainCreateA
        (13, domain_create_w as *const ()), // NVTX_CBID_CORE2_DomainCreateW
        (14, domain_destroy as *const ()), // NVTX_CBID_CORE2_DomainDestroy
    ]
}

/// Writes `fns` into the slots of one module's function table. False if NVTX has no such table.
///
/// # Safety
/// `get_table` is NVTX's `GetModuleFunctionTable`.
unsafe fn install(
    get_table: GetModuleFunctionTable,
    module: c_int,
    fns: &[(u32, *const ())],
) -> bool {
    let mut table: FunctionTable = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: valid out-pointers.
    if unsafe { get_table(module, &mut table, &mut size) } == 0 || table.is_null() {
        return false;
    }
    for &(cbid, f) in fns {
        // `size` counts the table's entries, index 0 (always NULL) included.
        if cbid >= size {
            continue;
        }
        // SAFETY: cbid < size, so the entry is inside the table NVTX handed out.
        let slot = unsafe { *table.add(cbid as usize) };
        if !slot.is_null() {
            // SAFETY: the entry points at NVTX's function-pointer slot for this callback id; NVTX's
            // init holds every other caller off until it returns (nvtxInitOnce).
            unsafe { slot.write(f) };
        }
    }
    true
}

/// NVTX's injection entry point (`NvtxInitializeInjectionNvtxFunc_t`), called once by each NVTX copy
/// in the process on its first NVTX call. Returns 1 when attached, 0 to leave NVTX to its no-ops.
///
/// # Safety
/// `get_export_table` is NULL or NVTX's `nvtxGetExportTable`.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(
    get_export_table: Option<GetExportTable>,
) -> c_int {
    let Some(get) = get_export_table else {
        return 0;
    };
    // SAFETY: NVTX's export-table getter returns NULL or a table of the requested kind that starts
    // with its size; fields are read only when that size covers them.
    unsafe {
        let vi = get(ETID_VERSIONINFO) as *const ExportTableVersionInfo;
        if !vi.is_null() && (*vi).struct_size >= std::mem::size_of::<ExportTableVersionInfo>() {
            if let Some(set) = (*vi).set_injection_nvtx_version {
                set(NVTX_VERSION);
            }
        }
        let cb = get(ETID_CALLBACKS) as *const ExportTableCallbacks;
        if cb.is_null() || (*cb).struct_size < std::mem::size_of::<ExportTableCallbacks>() {
            return 0;
        }
        let Some(get_table) = (*cb).get_module_function_table else {
            return 0;
        };
        if !install(get_table, MODULE_CORE, &core_callbacks()) {
            return 0;
        }
        install(get_table, MODULE_CORE2, &core2_callbacks());
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvtx::message::tests::attrs;
    use std::ffi::{c_char, c_void};
    use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

    // A stand-in for NVTX's side of the protocol: two modules of 16 slots (index 0 unused), as in
    // nvtxGlobals_t's functionTable_CORE / functionTable_CORE2.
    const UNSET: usize = 0xdead;
    static CORE: [AtomicUsize; 16] = [const { AtomicUsize::new(UNSET) }; 16];
    static CORE2: [AtomicUsize; 16] = [const { AtomicUsize::new(UNSET) }; 16];
    static VERSION_SET: AtomicU32 = AtomicU32::new(0);

    unsafe extern "C" fn fake_table(
        module: c_int,
        out: *mut FunctionTable,
        size: *mut c_uint,
    ) -> c_int {
        let slots = match module {
            MODULE_CORE => &CORE,
            MODULE_CORE2 => &CORE2,
            _ => return 0,
        };
        let mut v: Vec<*mut *const ()> =
            slots.iter().map(|s| s.as_ptr() as *mut *const ()).collect();
        v[0] = std::ptr::null_mut();
        v.push(std::ptr::null_mut());
        // SAFETY: the caller's out-pointers.
        unsafe {
            *out = Box::leak(v.into_boxed_slice()).as_mut_ptr();
            *size = 16;
        }
        1
    }

    unsafe extern "C" fn fake_set_version(v: u32) {
        VERSION_SET.store(v, Ordering::Relaxed);
    }

    static CALLBACKS: ExportTableCallbacks = ExportTableCallbacks {
        struct_size: 16,
        get_module_function_table: Some(fake_table),
    };
    static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
        struct_size: 24,
        version: 3,
        reserved0: 0,
        set_injection_nvtx_version: Some(fake_set_version),
    };

    unsafe extern "C" fn fake_get(id: u32) -> *const c_void {
        match id {
            ETID_CALLBACKS => &CALLBACKS as *const _ as *const c_void,
            ETID_VERSIONINFO => &VERSION_INFO as *const _ as *const c_void,
            _ => std::ptr::null(),
        }
    }

    unsafe extern "C" fn no_tables(_: u32) -> *const c_void {
        std::ptr::null()
    }

    #[test]
    fn injection_fills_the_right_slots_and_callbacks_answer_like_nvtx() {
        // SAFETY: our stand-in export table.
        assert_eq!(unsafe { InitializeInjectionNvtx2(Some(fake_get)) }, 1);
        // SAFETY: as above.
        assert_eq!(unsafe { InitializeInjectionNvtx2(Some(no_tables)) }, 0);
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { InitializeInjectionNvtx2(None) }, 0);
        assert_eq!(VERSION_SET.load(Ordering::Relaxed), 3);
        let core = |i: usize| CORE[i].load(Ordering::Relaxed);
        let core2 = |i: usize| CORE2[i].load(Ordering::Relaxed);
        for (cbid, f) in core_callbacks() {
            assert_eq!(core(cbid as usize), f as usize, "core {cbid}");
        }
        for (cbid, f) in core2_callbacks() {
            assert_eq!(core2(cbid as usize), f as usize, "core2 {cbid}");
        }
        assert_eq!((core(0), core(12), core(13)), (UNSET, UNSET, UNSET));
        for i in [0, 6, 7, 8, 9, 15] {
            assert_eq!(core2(i), UNSET, "core2 {i}");
        }
        assert_eq!(core(9), range_push_a as *const () as usize);
        assert_eq!(core2(12), domain_create_a as *const () as usize);

        std::thread::spawn(move || {
            type PushA = unsafe extern "C" fn(*const c_char) -> c_int;
            type Pop = unsafe extern "C" fn() -> c_int;
            type StartA = unsafe extern "C" fn(*const c_char) -> u64;
            type CreateA = unsafe extern "C" fn(*const c_char) -> *mut c_void;
            type RegisterA = unsafe extern "C" fn(*const c_void, *const c_char) -> *mut c_void;
            type DomainPush = unsafe extern "C" fn(*const c_void, *const EventAttributes) -> c_int;
            type DomainPop = unsafe extern "C" fn(*const c_void) -> c_int;
            // SAFETY: each slot holds the callback of that id, whose signature is the header's.
            unsafe {
                let push = std::mem::transmute::<usize, PushA>(core(9));
                let pop = std::mem::transmute::<usize, Pop>(core(11));
                let start = std::mem::transmute::<usize, StartA>(core(5));
                let create = std::mem::transmute::<usize, CreateA>(core2(12));
                let register = std::mem::transmute::<usize, RegisterA>(core2(10));
                let dpush = std::mem::transmute::<usize, DomainPush>(core2(4));
                let dpop = std::mem::transmute::<usize, DomainPop>(core2(5));
                assert_eq!(push(c"outer".as_ptr()), 0);
                assert_eq!(push(std::ptr::null()), 1);
                let d = create(c"my domain".as_ptr());
                assert!(!d.is_null());
                assert_eq!(create(c"my domain".as_ptr()), d);
                assert_ne!(create(c"other domain".as_ptr()), d);
                let s = register(d, c"registered".as_ptr());
                assert!(!s.is_null());
                assert_eq!(register(std::ptr::null(), c"registered".as_ptr()), s);
                let a = attrs(MESSAGE_REGISTERED, s);
                assert_eq!(dpush(d, &a), 0);
                assert_eq!(dpush(d, std::ptr::null()), 1);
                assert_eq!(dpop(d), 1);
                assert_eq!(dpop(d), 0);
                assert_eq!(pop(), 1);
                assert_eq!(pop(), 0);
                assert_eq!(pop(), -1);
                let (r1, r2) = (start(c"a".as_ptr()), start(c"b".as_ptr()));
                assert!(r1 != 0 && r2 > r1);
            }
        })
        .join()
        .unwrap();
    }
}
