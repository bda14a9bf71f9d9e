//! The injection entry point. Each copy of the header-only NVTX in the process dlopens the library
//! `NVTX_INJECTION64_PATH` names (the shim, see `announce`) on its first call and calls its
//! `InitializeInjectionNvtx2`, which writes the shim's callbacks into every slot of NVTX's CORE, CORE2,
//! CUDA, CUDART and SYNC function tables.

use super::abi::*;
use super::callbacks::*;
use std::ffi::{c_int, c_uint};

/// Every callback slot the shim fills: (module, callback id, function). Ids are the header's
/// `NVTX_CBID_<MODULE>_<Name>` (`nvtxDetail/nvtxTypes.h`); each module's ids run from 1 without gaps,
/// and all of them are here (OpenCL's module, 3, is not filled).
pub(super) fn slots() -> [(c_int, u32, *const ()); 50] {
    const C: c_int = MODULE_CORE;
    const C2: c_int = MODULE_CORE2;
    const CU: c_int = MODULE_CUDA;
    const RT: c_int = MODULE_CUDART;
    const SY: c_int = MODULE_SYNC;
    [
        (C, 1, mark_ex as *const ()),
        (C, 2, mark_a as *const ()),
        (C, 3, mark_w as *const ()),
        (C, 4, range_start_ex as *const ()),
        (C, 5, range_start_a as *const ()),
        (C, 6, range_start_w as *const ()),
        (C, 7, range_end as *const ()),
        (C, 8, range_push_ex as *const ()),
        (C, 9, range_push_a as *const ()),
        (C, 10, range_push_w as *const ()),
        (C, 11, range_pop as *const ()),
        (C, 12, name_category_a as *const ()),
        (C, 13, name_category_w as *const ()),
        (C, 14, name_os_thread_a as *const ()),
        (C, 15, name_os_thread_w as *const ()),
        (C2, 1, domain_mark_ex as *const ()),
        (C2, 2, domain_range_start_ex as *const ()),
        (C2, 3, domain_range_end as *const ()),
        (C2, 4, domain_range_push_ex as *const ()),
        (C2, 5, domain_range_pop as *const ()),
        (C2, 6, domain_resource_create as *const ()),
        (C2, 7, domain_resource_destroy as *const ()),
        (C2, 8, domain_name_category_a as *const ()),
        (C2, 9, domain_name_category_w as *const ()),
        (C2, 10, domain_register_string_a as *const ()),
        (C2, 11, domain_register_string_w as *const ()),
        (C2, 12, domain_create_a as *const ()),
        (C2, 13, domain_create_w as *const ()),
        (C2, 14, domain_destroy as *const ()),
        (C2, 15, initialize as *const ()),
        (CU, 1, name_cu_device_a as *const ()),
        (CU, 2, name_cu_device_w as *const ()),
        (CU, 3, name_cu_context_a as *const ()),
        (CU, 4, name_cu_context_w as *const ()),
        (CU, 5, name_cu_stream_a as *const ()),
        (CU, 6, name_cu_stream_w as *const ()),
        (CU, 7, name_cu_event_a as *const ()),
        (CU, 8, name_cu_event_w as *const ()),
        (RT, 1, name_cuda_device_a as *const ()),
        (RT, 2, name_cuda_device_w as *const ()),
        (RT, 3, name_cuda_stream_a as *const ()),
        (RT, 4, name_cuda_stream_w as *const ()),
        (RT, 5, name_cuda_event_a as *const ()),
        (RT, 6, name_cuda_event_w as *const ()),
        (SY, 1, sync_user_create as *const ()),
        (SY, 2, sync_user_destroy as *const ()),
        (SY, 3, sync_user_acquire_start as *const ()),
        (SY, 4, sync_user_acquire_failed as *const ()),
        (SY, 5, sync_user_acquire_success as *const ()),
        (SY, 6, sync_user_releasing as *const ()),
    ]
}

/// Writes this module's functions of `slots` into its function table. False if NVTX has no such
/// table (an NVTX older than the module).
///
/// # Safety
/// `get_table` is NVTX's `GetModuleFunctionTable`.
unsafe fn install(
    get_table: GetModuleFunctionTable,
    module: c_int,
    slots: &[(c_int, u32, *const ())],
) -> bool {
    let mut table: FunctionTable = std::ptr::null_mut();
    let mut size: c_uint = 0;
    // SAFETY: valid out-pointers.
    if unsafe { get_table(module, &mut table, &mut size) } == 0 || table.is_null() {
        return false;
    }
    for &(_, cbid, f) in slots.iter().filter(|s| s.0 == module) {
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
        let slots = slots();
        if !install(get_table, MODULE_CORE, &slots) {
            return 0;
        }
        for module in [MODULE_CORE2, MODULE_CUDA, MODULE_CUDART, MODULE_SYNC] {
            install(get_table, module, &slots);
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvtx::message::tests::attrs;
    use std::ffi::{c_char, c_void};
    use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

    // A stand-in for NVTX's side of the protocol: one table per module, each `NVTX_CBID_<M>_SIZE`
    // slots long (index 0 unused), as in nvtxGlobals_t's functionTable_<M>.
    const UNSET: usize = 0xdead;
    static CORE: [AtomicUsize; 16] = [const { AtomicUsize::new(UNSET) }; 16];
    static CORE2: [AtomicUsize; 16] = [const { AtomicUsize::new(UNSET) }; 16];
    static CUDA: [AtomicUsize; 16] = [const { AtomicUsize::new(UNSET) }; 16];
    static CUDART: [AtomicUsize; 16] = [const { AtomicUsize::new(UNSET) }; 16];
    static SYNC: [AtomicUsize; 16] = [const { AtomicUsize::new(UNSET) }; 16];
    static VERSION_SET: AtomicU32 = AtomicU32::new(0);

    /// (table, NVTX_CBID_<M>_SIZE) of a module.
    fn table(module: c_int) -> Option<(&'static [AtomicUsize; 16], u32)> {
        Some(match module {
            MODULE_CORE => (&CORE, 16),
            MODULE_CORE2 => (&CORE2, 16),
            MODULE_CUDA => (&CUDA, 9),
            MODULE_CUDART => (&CUDART, 7),
            MODULE_SYNC => (&SYNC, 7),
            _ => return None,
        })
    }

    unsafe extern "C" fn fake_table(
        module: c_int,
        out: *mut FunctionTable,
        size: *mut c_uint,
    ) -> c_int {
        let Some((slots, n)) = table(module) else {
            return 0;
        };
        let mut v: Vec<*mut *const ()> = slots[..n as usize]
            .iter()
            .map(|s| s.as_ptr() as *mut *const ())
            .collect();
        v[0] = std::ptr::null_mut();
        v.push(std::ptr::null_mut());
        // SAFETY: the caller's out-pointers.
        unsafe {
            *out = Box::leak(v.into_boxed_slice()).as_mut_ptr();
            *size = n;
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
        for (module, cbid, f) in slots() {
            let (t, _) = table(module).unwrap();
            assert_eq!(
                t[cbid as usize].load(Ordering::Relaxed),
                f as usize,
                "{module} {cbid}"
            );
        }
        // Every slot of every module but index 0 is filled, each with a different function, and
        // nothing past a module's size is written.
        let mut seen = std::collections::HashSet::new();
        for module in [
            MODULE_CORE,
            MODULE_CORE2,
            MODULE_CUDA,
            MODULE_CUDART,
            MODULE_SYNC,
        ] {
            let (t, n) = table(module).unwrap();
            for (i, slot) in t.iter().enumerate() {
                let v = slot.load(Ordering::Relaxed);
                if i == 0 || i >= n as usize {
                    assert_eq!(v, UNSET, "module {module} slot {i}");
                } else {
                    assert!(v != UNSET && seen.insert(v), "module {module} slot {i}");
                }
            }
        }
        assert_eq!(seen.len(), 50);
        // Each API id is recorded by exactly one slot's function, and every slot's API is named.
        assert_eq!(crate::nvtx::apis().count(), 50);
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
