//! An NVTX event's message — ASCII, wide or a registered string — read within the bounds the caller
//! declared and interned in the process-wide text table (`strings::text`), whose ids entries carry.

use super::abi::{
    EventAttributes, PayloadData, ResourceAttributes, SyncUserAttributes, COLOR_ARGB,
    MESSAGE_ASCII, MESSAGE_REGISTERED, MESSAGE_UNICODE,
};
use super::WChar;
use crate::hot::state;
use crate::strings::text::{self, Table, MAX_LEN};
use causeway_ring::layout::nvtx_payload;
use causeway_ring::Writer;
use std::ffi::{c_char, c_void};

/// A message as the application passed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Msg {
    None,
    Ascii(*const c_char),
    Wide(*const WChar),
    Registered(u64),
}

/// Handle value returned when a domain or registered string could not be interned: never NULL, never
/// an id. A domain with this handle is recorded as domain `u64::MAX` (unnamed, but kept apart from the
/// default domain); a registered string with it as "no message".
pub(super) const UNNAMED: u64 = u64::MAX;

#[inline]
pub(super) fn handle(id: u64) -> *mut c_void {
    (if id == 0 { UNNAMED } else { id }) as usize as *mut c_void
}

#[inline]
pub(super) fn domain_id(d: *const c_void) -> u64 {
    d as usize as u64
}

/// The message of an event attribute structure, reading only fields inside its declared `size`.
///
/// # Safety
/// `a` is NULL or points to at least `(*a).size` readable bytes, as the NVTX API requires.
#[inline]
pub(super) unsafe fn attr_message(a: *const EventAttributes) -> Msg {
    if a.is_null() {
        return Msg::None;
    }
    // SAFETY: the first four bytes (version, size) are always present.
    let size = unsafe { std::ptr::addr_of!((*a).size).read_unaligned() } as usize;
    if size < std::mem::offset_of!(EventAttributes, message) + std::mem::size_of::<*const c_void>()
    {
        return Msg::None;
    }
    // SAFETY: both fields lie within the `size` bytes the caller declared.
    let (ty, v) = unsafe {
        (
            std::ptr::addr_of!((*a).message_type).read_unaligned(),
            std::ptr::addr_of!((*a).message).read_unaligned(),
        )
    };
    msg_of(ty, v)
}

/// A message from its `nvtxMessageType_t` and `nvtxMessageValue_t`.
fn msg_of(ty: i32, v: *const c_void) -> Msg {
    match ty {
        MESSAGE_ASCII => Msg::Ascii(v as *const c_char),
        MESSAGE_UNICODE => Msg::Wide(v as *const WChar),
        MESSAGE_REGISTERED => Msg::Registered(v as usize as u64),
        _ => Msg::None,
    }
}

/// The declared size of an attribute structure (its `u16` at offset 2), 0 for NULL.
///
/// # Safety
/// `a` is NULL or points to at least 4 readable bytes.
#[inline]
unsafe fn declared_size(a: *const u8) -> usize {
    if a.is_null() {
        return 0;
    }
    // SAFETY: every NVTX attribute structure starts with `u16 version, u16 size`.
    unsafe { (a.add(2) as *const u16).read_unaligned() as usize }
}

/// The message and identifier (type, value) of a resource attribute structure, within its size.
///
/// # Safety
/// `a` is NULL or points to at least `(*a).size` readable bytes.
pub(super) unsafe fn resource_attrs(a: *const ResourceAttributes) -> (i32, u64, Msg) {
    // SAFETY: forwarded contract.
    let size = unsafe { declared_size(a as *const u8) };
    let end = |off: usize, n: usize| off + n <= size;
    let (mut ty, mut id, mut msg) = (0, 0, Msg::None);
    // SAFETY: each field read lies within the `size` bytes the caller declared.
    unsafe {
        if end(std::mem::offset_of!(ResourceAttributes, identifier), 8) {
            ty = std::ptr::addr_of!((*a).identifier_type).read_unaligned();
            id = std::ptr::addr_of!((*a).identifier).read_unaligned();
        }
        if end(std::mem::offset_of!(ResourceAttributes, message), 8) {
            msg = msg_of(
                std::ptr::addr_of!((*a).message_type).read_unaligned(),
                std::ptr::addr_of!((*a).message).read_unaligned(),
            );
        }
    }
    (ty, id, msg)
}

/// The message of a user sync object's attribute structure, within its size.
///
/// # Safety
/// `a` is NULL or points to at least `(*a).size` readable bytes.
pub(super) unsafe fn sync_user_message(a: *const SyncUserAttributes) -> Msg {
    // SAFETY: forwarded contract.
    let size = unsafe { declared_size(a as *const u8) };
    if size < std::mem::offset_of!(SyncUserAttributes, message) + 8 {
        return Msg::None;
    }
    // SAFETY: both fields lie within the declared size.
    unsafe {
        msg_of(
            std::ptr::addr_of!((*a).message_type).read_unaligned(),
            std::ptr::addr_of!((*a).message).read_unaligned(),
        )
    }
}

/// What an event attribute structure carries besides its message (`Kind::NvtxAttributes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Extras {
    pub category: u32,
    pub color: Option<u32>,
    /// `nvtxPayloadType_t` (0: none).
    pub payload_type: i32,
    /// The payload's bits; for an extended payload, the first one's schema id.
    pub payload: u64,
    /// Extended payloads: how many (`reserved0`).
    pub ext_count: u16,
}

impl Extras {
    pub fn is_empty(&self) -> bool {
        *self == Extras::default()
    }
}

/// The category, colour and payload of an event attribute structure, reading only fields inside its
/// declared `size` (and, for an extended payload, only the first `nvtxPayloadData_t`'s schema id,
/// never the data it points to).
///
/// # Safety
/// `a` is NULL or points to at least `(*a).size` readable bytes; an extended payload's pointer is NULL
/// or points to `reserved0` `nvtxPayloadData_t`s, as the NVTX API requires.
pub(super) unsafe fn attr_extras(a: *const EventAttributes) -> Extras {
    // SAFETY: forwarded contract.
    let size = unsafe { declared_size(a as *const u8) };
    let has = |off: usize, n: usize| off + n <= size;
    let mut x = Extras::default();
    // SAFETY: each field read lies within the `size` bytes the caller declared.
    unsafe {
        if has(std::mem::offset_of!(EventAttributes, category), 4) {
            x.category = std::ptr::addr_of!((*a).category).read_unaligned();
        }
        if has(std::mem::offset_of!(EventAttributes, color), 4)
            && std::ptr::addr_of!((*a).color_type).read_unaligned() == COLOR_ARGB
        {
            x.color = Some(std::ptr::addr_of!((*a).color).read_unaligned());
        }
        if !has(std::mem::offset_of!(EventAttributes, payload), 8) {
            return x;
        }
        let ty = std::ptr::addr_of!((*a).payload_type).read_unaligned();
        let bits = std::ptr::addr_of!((*a).payload).read_unaligned();
        match ty {
            nvtx_payload::U64 | nvtx_payload::I64 | nvtx_payload::DOUBLE => {
                (x.payload_type, x.payload) = (ty, bits)
            }
            // 32-bit members of the union sit in its first four bytes (little-endian).
            nvtx_payload::U32 | nvtx_payload::I32 | nvtx_payload::FLOAT => {
                (x.payload_type, x.payload) = (ty, bits & 0xffff_ffff)
            }
            nvtx_payload::EXT => {
                let count = std::ptr::addr_of!((*a).reserved0).read_unaligned();
                let data = bits as usize as *const PayloadData;
                x.payload_type = ty;
                x.ext_count = count.clamp(0, u16::MAX as i32) as u16;
                if count > 0 && !data.is_null() {
                    x.payload = std::ptr::addr_of!((*data).schema_id).read_unaligned();
                }
            }
            _ => {}
        }
    }
    x
}

/// The bytes of a C string, at most `MAX_LEN`; a cut never splits a UTF-8 sequence.
///
/// # Safety
/// `p` is a valid NUL-terminated string.
#[inline]
pub(super) unsafe fn c_text<'a>(p: *const c_char) -> &'a [u8] {
    // SAFETY: strnlen reads at most MAX_LEN bytes, stopping at the NUL the caller guarantees.
    let n = unsafe { libc::strnlen(p, MAX_LEN) };
    // SAFETY: the n bytes before the NUL (or the cap) are readable.
    let b = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n) };
    if n == MAX_LEN {
        if let Err(e) = std::str::from_utf8(b) {
            if e.error_len().is_none() {
                return &b[..e.valid_up_to()];
            }
        }
    }
    b
}

/// Converts wide characters to UTF-8 into `out`, stopping when the next character would not fit.
/// Takes UTF-32 (Linux's `wchar_t`) and also pairs UTF-16 surrogates; anything invalid becomes U+FFFD.
pub fn wide_to_utf8(units: impl Iterator<Item = u32>, out: &mut [u8]) -> usize {
    let mut units = units.peekable();
    let mut n = 0;
    while let Some(u) = units.next() {
        let c = match u {
            0xd800..=0xdbff => match units.peek() {
                Some(&lo @ 0xdc00..=0xdfff) => {
                    units.next();
                    char::from_u32(0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00))
                }
                _ => None,
            },
            _ => char::from_u32(u),
        }
        .unwrap_or(char::REPLACEMENT_CHARACTER);
        let Some(dst) = out.get_mut(n..n + c.len_utf8()) else {
            break;
        };
        c.encode_utf8(dst);
        n += c.len_utf8();
    }
    n
}

/// The units of a NUL-terminated wide string, never reading past its NUL nor past `MAX_LEN + 1`
/// units.
///
/// # Safety
/// `p` is a valid NUL-terminated wide string.
pub(super) unsafe fn wide_units(p: *const WChar) -> impl Iterator<Item = u32> {
    let mut i = 0usize;
    std::iter::from_fn(move || {
        if i > MAX_LEN {
            return None;
        }
        // SAFETY: units up to and including the NUL are readable; `i` stops at the NUL (it is not
        // advanced past it, so every later call reads the NUL again).
        let u = unsafe { p.add(i).read() };
        if u == 0 {
            return None;
        }
        i += 1;
        // `wchar_t` is i32 on x86-64 and u32 on aarch64: the same bits either way.
        #[allow(clippy::unnecessary_cast)]
        Some(u as u32)
    })
}

/// The text id of a message, interned in `t` (and recorded in `w`'s ring).
///
/// # Safety
/// Pointers in `m` are NULL or valid NUL-terminated strings.
pub(super) unsafe fn message_id<const S: usize, const A: usize>(
    t: &Table<S, A>,
    m: Msg,
    w: Option<Writer>,
) -> u64 {
    match m {
        Msg::None => 0,
        Msg::Ascii(p) if p.is_null() => 0,
        Msg::Wide(p) if p.is_null() => 0,
        // SAFETY: a valid string, per this function's contract.
        Msg::Ascii(p) => t.intern(unsafe { c_text(p) }, w),
        Msg::Wide(p) => {
            let mut buf = [0u8; MAX_LEN];
            // SAFETY: as above.
            let n = wide_to_utf8(unsafe { wide_units(p) }, &mut buf);
            t.intern(&buf[..n], w)
        }
        Msg::Registered(UNNAMED) => 0,
        Msg::Registered(id) => {
            t.touch(id, w);
            id
        }
    }
}

/// Interns the text of `m` in the process-wide table whether or not a ring is active (handles must stay
/// valid), returning its id.
///
/// # Safety
/// As `message_id`.
pub(super) unsafe fn intern_now(m: Msg) -> u64 {
    // SAFETY: forwarded contract.
    unsafe { message_id(&text::TEXT, m, state::writer()) }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::strings::text::tests::TestRing;
    use crate::strings::text::{hash, Table};

    pub(crate) fn attrs(ty: i32, msg: *const c_void) -> EventAttributes {
        EventAttributes {
            version: 3,
            size: std::mem::size_of::<EventAttributes>() as u16,
            category: 0,
            color_type: 1,
            color: 0xff88_0000,
            payload_type: 0,
            reserved0: 0,
            payload: 0,
            message_type: ty,
            message: msg,
        }
    }

    pub(crate) fn wide(s: &str) -> Vec<WChar> {
        s.chars().map(|c| c as WChar).chain([0]).collect()
    }

    #[test]
    fn event_attributes_parse() {
        let s = c"step";
        let w = wide("wide");
        let a = attrs(MESSAGE_ASCII, s.as_ptr() as *const c_void);
        let u = attrs(MESSAGE_UNICODE, w.as_ptr() as *const c_void);
        let r = attrs(MESSAGE_REGISTERED, 7usize as *const c_void);
        let none = attrs(0, s.as_ptr() as *const c_void);
        let bogus = attrs(9, s.as_ptr() as *const c_void);
        let mut short = attrs(MESSAGE_ASCII, s.as_ptr() as *const c_void);
        short.size = 40;
        let mut zero = attrs(MESSAGE_ASCII, s.as_ptr() as *const c_void);
        zero.size = 0;
        // SAFETY: valid structs (or NULL).
        unsafe {
            assert_eq!(attr_message(&a), Msg::Ascii(s.as_ptr()));
            assert_eq!(attr_message(&u), Msg::Wide(w.as_ptr()));
            assert_eq!(attr_message(&r), Msg::Registered(7));
            assert_eq!(attr_message(&none), Msg::None);
            assert_eq!(attr_message(&bogus), Msg::None);
            assert_eq!(attr_message(&short), Msg::None);
            assert_eq!(attr_message(&zero), Msg::None);
            assert_eq!(attr_message(std::ptr::null()), Msg::None);
        }
    }

    #[test]
    fn categories_colours_and_payloads_are_read_within_the_size() {
        let mut a = attrs(MESSAGE_ASCII, c"m".as_ptr() as *const c_void);
        a.category = 7;
        a.payload_type = nvtx_payload::DOUBLE;
        a.payload = 2.5f64.to_bits();
        // SAFETY: valid structs (or NULL) of their declared sizes; `data` outlives the reads.
        unsafe {
            let x = attr_extras(&a);
            assert_eq!((x.category, x.color), (7, Some(0xff88_0000)));
            assert_eq!((x.payload_type, x.payload), (3, 2.5f64.to_bits()));
            a.payload_type = nvtx_payload::I32;
            a.payload = 0xdead_beef_ffff_fffe;
            a.color_type = 0;
            let x = attr_extras(&a);
            assert_eq!((x.color, x.payload), (None, 0xffff_fffe));
            let data = [PayloadData {
                schema_id: 0x1_0001,
                size: 16,
                payload: std::ptr::null(),
            }];
            a.payload_type = nvtx_payload::EXT;
            a.reserved0 = 1;
            a.payload = data.as_ptr() as u64;
            let x = attr_extras(&a);
            assert_eq!((x.payload, x.ext_count), (0x1_0001, 1));
            a.payload = 0;
            assert_eq!(
                attr_extras(&a).payload,
                0,
                "a NULL payload array is not read"
            );
            a.payload_type = 99;
            a.category = 0;
            assert!(
                attr_extras(&a).is_empty(),
                "an unknown payload type is dropped"
            );
            a.category = 7;
            a.size = 8;
            let x = attr_extras(&a);
            assert_eq!((x.category, x.color, x.payload_type), (7, None, 0));
            a.size = 4;
            assert!(attr_extras(&a).is_empty());
            assert!(attr_extras(std::ptr::null()).is_empty());
        }
    }

    #[test]
    fn a_shorter_struct_is_read_only_within_its_size() {
        // A v1-sized caller that declares only the first 36 bytes: the message is not read.
        let mut b = [0u8; 36];
        b[2..4].copy_from_slice(&36u16.to_le_bytes());
        b[32..36].copy_from_slice(&MESSAGE_ASCII.to_le_bytes());
        // SAFETY: 36 readable bytes, as declared.
        let m = unsafe { attr_message(b.as_ptr() as *const EventAttributes) };
        assert_eq!(m, Msg::None);
    }

    #[test]
    fn wide_strings_become_utf8() {
        let mut out = [0u8; 64];
        let utf32 = ['h' as u32, 0xe9, 0x4e2d, 0x1f600];
        let n = wide_to_utf8(utf32.into_iter(), &mut out);
        assert_eq!(std::str::from_utf8(&out[..n]).unwrap(), "hé中😀");
        // UTF-16 surrogate pairs are paired; lone surrogates and out-of-range values are replaced.
        let utf16 = [
            0xd83d,
            0xde00,
            0x41,
            0xd800,
            0x42,
            0xdc00,
            0x11_0000,
            0xffff_ffff,
        ];
        let n = wide_to_utf8(utf16.into_iter(), &mut out);
        assert_eq!(
            std::str::from_utf8(&out[..n]).unwrap(),
            "😀A\u{fffd}B\u{fffd}\u{fffd}\u{fffd}"
        );
        // A full buffer stops at a character boundary.
        let mut small = [0u8; 5];
        let n = wide_to_utf8(['a' as u32, 0x1f600, 'b' as u32].into_iter(), &mut small);
        assert_eq!(&small[..n], "a😀".as_bytes());
        let mut tiny = [0u8; 4];
        let n = wide_to_utf8(['a' as u32, 0x1f600].into_iter(), &mut tiny);
        assert_eq!(&tiny[..n], b"a");
    }

    #[test]
    fn wide_units_stop_at_nul_and_cap() {
        let w = wide("abc");
        // SAFETY: NUL-terminated.
        let units: Vec<u32> = unsafe { wide_units(w.as_ptr()) }.collect();
        assert_eq!(units, vec![97, 98, 99]);
        let mut long = vec!['x' as WChar; 5000];
        long.push(0);
        // SAFETY: NUL-terminated.
        assert_eq!(unsafe { wide_units(long.as_ptr()) }.count(), MAX_LEN + 1);
    }

    #[test]
    fn long_ascii_is_cut_on_a_character_boundary() {
        let mut s = vec![b'a'; MAX_LEN - 1];
        s.extend_from_slice("é tail".as_bytes());
        s.push(0);
        // SAFETY: NUL-terminated.
        let b = unsafe { c_text(s.as_ptr() as *const c_char) };
        assert_eq!(b.len(), MAX_LEN - 1);
        let mut t = vec![b'a'; 10];
        t.push(0);
        // SAFETY: NUL-terminated.
        assert_eq!(unsafe { c_text(t.as_ptr() as *const c_char) }, &t[..10]);
    }

    #[test]
    fn messages_intern_by_content_whatever_their_encoding() {
        let t: Box<Table<64, 8192>> = Box::new(Table::new(hash));
        let r = TestRing::new();
        let w = wide("héllo");
        let a = c"héllo";
        // SAFETY: NUL-terminated strings.
        unsafe {
            let id = message_id(&*t, Msg::Ascii(a.as_ptr()), Some(r.w));
            assert_ne!(id, 0);
            assert_eq!(message_id(&*t, Msg::Wide(w.as_ptr()), Some(r.w)), id);
            let other = message_id(&*t, Msg::Ascii(c"bye".as_ptr()), Some(r.w));
            assert_ne!(other, id);
            assert_eq!(message_id(&*t, Msg::Registered(other), Some(r.w)), other);
            assert_eq!(message_id(&*t, Msg::Registered(UNNAMED), Some(r.w)), 0);
            assert_eq!(message_id(&*t, Msg::None, Some(r.w)), 0);
            assert_eq!(message_id(&*t, Msg::Ascii(std::ptr::null()), Some(r.w)), 0);
            assert_eq!(message_id(&*t, Msg::Wide(std::ptr::null()), Some(r.w)), 0);
            assert_eq!(r.texts(), vec![(id, "héllo".into()), (other, "bye".into())]);
        }
    }
}
