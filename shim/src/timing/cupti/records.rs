//! Reading CUPTI's activity records: the fields the backend uses, at the offsets of `ffi::off`, never
//! past the bytes CUPTI handed over.

use super::ffi::*;
use causeway_ring::layout::DeviceKind;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// A device record's fields, as CUPTI wrote them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Device {
    pub(super) kind: DeviceKind,
    pub(super) copy_kind: u8,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) device: u32,
    pub(super) stream: u32,
    pub(super) corr: u32,
    pub(super) bytes: u64,
    /// Kernels: the address of CUPTI's copy of the name (0 = none).
    pub(super) name: Option<usize>,
    /// Kernels: when the kernel was queued into a command buffer and when that buffer was submitted
    /// to the device (CUPTI's latency timestamps; 0 = not collected).
    pub(super) queued: u64,
    pub(super) submitted: u64,
    /// Work a graph launch ran: CUPTI's `graphNodeId` (the executable graph's id << 32 | the node's
    /// index in it); 0 otherwise.
    pub(super) graph_node: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rec {
    External {
        kind: u32,
        id: u64,
        corr: u32,
    },
    Device(Device),
    /// Kinds the backend does not use (API records, …), and records too short to read.
    Other,
}

/// Reads one activity record (the bytes from its start to at most the end of the buffer).
pub(super) fn parse(b: &[u8]) -> Rec {
    parse_opt(b).unwrap_or(Rec::Other)
}

fn parse_opt(b: &[u8]) -> Option<Rec> {
    // The fields every device record kind has, at its offsets: start, end, device, stream,
    // correlation id, graphNodeId (a record too short to hold the last reads it as 0).
    let device = |kind, at: [usize; 6], bytes, copy_kind, name| -> Option<Rec> {
        let [start, end, dev, stream, corr, node] = at;
        Some(Rec::Device(Device {
            kind,
            copy_kind,
            start: u64_at(b, start)?,
            end: u64_at(b, end)?,
            device: u32_at(b, dev)?,
            stream: u32_at(b, stream)?,
            corr: u32_at(b, corr)?,
            bytes,
            name,
            queued: 0,
            submitted: 0,
            graph_node: u64_at(b, node).unwrap_or(0),
        }))
    };
    Some(match u32_at(b, 0)? {
        KIND_KERNEL | KIND_CONCURRENT_KERNEL => {
            use off::kernel as k;
            let name = u64_at(b, k::NAME)? as usize;
            match device(DeviceKind::Kernel, k::COMMON, 0, 0, Some(name))? {
                Rec::Device(mut dev) => {
                    dev.queued = u64_at(b, k::QUEUED).unwrap_or(0);
                    dev.submitted = u64_at(b, k::SUBMITTED).unwrap_or(0);
                    Rec::Device(dev)
                }
                other => other,
            }
        }
        KIND_MEMCPY => {
            use off::memcpy as m;
            let (bytes, ck) = (u64_at(b, m::BYTES)?, *b.get(m::COPY_KIND)?);
            device(DeviceKind::Memcpy, m::COMMON, bytes, ck, None)?
        }
        KIND_MEMCPY2 => {
            use off::p2p as m;
            let (bytes, ck) = (u64_at(b, m::BYTES)?, *b.get(m::COPY_KIND)?);
            device(DeviceKind::Memcpy, m::COMMON, bytes, ck, None)?
        }
        KIND_MEMSET => {
            use off::memset as m;
            let bytes = u64_at(b, m::BYTES)?;
            device(DeviceKind::Memset, m::COMMON, bytes, 0, None)?
        }
        KIND_EXTERNAL_CORRELATION => {
            use off::external as x;
            Rec::External {
                kind: u32_at(b, x::EXTERNAL_KIND)?,
                id: u64_at(b, x::EXTERNAL_ID)?,
                corr: u32_at(b, x::CORRELATION)?,
            }
        }
        _ => Rec::Other,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A record of `size` bytes with `kind` at 0 and the given fields at their offsets.
    fn record(size: usize, kind: u32, fields: &[(usize, &[u8])]) -> Vec<u8> {
        let mut b = vec![0xAAu8; size];
        b[..4].copy_from_slice(&kind.to_le_bytes());
        for (off, bytes) in fields {
            b[*off..*off + bytes.len()].copy_from_slice(bytes);
        }
        b
    }

    fn kernel(corr: u32, start: u64, end: u64, name: usize) -> Vec<u8> {
        use off::kernel as k;
        record(
            k::SIZE,
            KIND_CONCURRENT_KERNEL,
            &[
                (k::START, &start.to_le_bytes()),
                (k::END, &end.to_le_bytes()),
                (k::DEVICE, &1u32.to_le_bytes()),
                (k::STREAM, &7u32.to_le_bytes()),
                (k::CORRELATION, &corr.to_le_bytes()),
                (k::NAME, &(name as u64).to_le_bytes()),
                (k::QUEUED, &(start - 100).to_le_bytes()),
                (k::SUBMITTED, &(start - 40).to_le_bytes()),
                (k::GRAPH_NODE, &(4u64 << 32 | 2).to_le_bytes()),
            ],
        )
    }

    fn external(corr: u32, id: u64) -> Vec<u8> {
        use off::external as x;
        record(
            x::SIZE,
            KIND_EXTERNAL_CORRELATION,
            &[
                (x::EXTERNAL_KIND, &EXTERNAL_KIND.to_le_bytes()),
                (x::EXTERNAL_ID, &id.to_le_bytes()),
                (x::CORRELATION, &corr.to_le_bytes()),
                (x::SIZE - 4, &0u32.to_le_bytes()),
            ],
        )
    }

    #[test]
    fn kernel_records_parse_at_the_header_offsets() {
        let name = c"_Z6vecAddPfS_S_i";
        let b = kernel(42, 1000, 2500, name.as_ptr() as usize);
        assert_eq!(b.len(), 216, "sizeof(CUpti_ActivityKernel10)");
        assert_eq!(
            parse(&b),
            Rec::Device(Device {
                kind: DeviceKind::Kernel,
                copy_kind: 0,
                start: 1000,
                end: 2500,
                device: 1,
                stream: 7,
                corr: 42,
                bytes: 0,
                name: Some(name.as_ptr() as usize),
                queued: 900,
                submitted: 960,
                graph_node: 4 << 32 | 2,
            })
        );
        // KIND_KERNEL shares the struct.
        let mut b3 = b.clone();
        b3[..4].copy_from_slice(&KIND_KERNEL.to_le_bytes());
        assert!(matches!(parse(&b3), Rec::Device(d) if d.corr == 42));
        // A record cut short by the end of the buffer is not read past it.
        assert_eq!(parse(&b[..100]), Rec::Other);
        assert_eq!(parse(&b[..2]), Rec::Other);
    }

    #[test]
    fn copy_and_memset_records_parse_at_the_header_offsets() {
        use off::{memcpy as c, memset as s, p2p as p};
        let m = record(
            c::SIZE,
            KIND_MEMCPY,
            &[
                (c::COPY_KIND, &[1]),
                (c::BYTES, &4096u64.to_le_bytes()),
                (c::START, &10u64.to_le_bytes()),
                (c::END, &20u64.to_le_bytes()),
                (c::DEVICE, &0u32.to_le_bytes()),
                (c::STREAM, &3u32.to_le_bytes()),
                (c::CORRELATION, &9u32.to_le_bytes()),
                (c::GRAPH_NODE, &0u64.to_le_bytes()),
            ],
        );
        assert_eq!(m.len(), 96, "sizeof(CUpti_ActivityMemcpy6)");
        assert_eq!(
            parse(&m),
            Rec::Device(Device {
                kind: DeviceKind::Memcpy,
                copy_kind: 1,
                start: 10,
                end: 20,
                device: 0,
                stream: 3,
                corr: 9,
                bytes: 4096,
                name: None,
                queued: 0,
                submitted: 0,
                graph_node: 0,
            })
        );
        let q = record(
            p::SIZE,
            KIND_MEMCPY2,
            &[
                (p::COPY_KIND, &[10]),
                (p::BYTES, &64u64.to_le_bytes()),
                (p::START, &1u64.to_le_bytes()),
                (p::END, &2u64.to_le_bytes()),
                (p::DEVICE, &1u32.to_le_bytes()),
                (p::STREAM, &5u32.to_le_bytes()),
                (p::CORRELATION, &11u32.to_le_bytes()),
                (p::GRAPH_NODE, &(9u64 << 32 | 7).to_le_bytes()),
            ],
        );
        assert!(
            matches!(parse(&q), Rec::Device(d) if d.corr == 11 && d.copy_kind == 10 && d.bytes == 64 && d.graph_node == 9 << 32 | 7)
        );
        let z = record(
            s::SIZE,
            KIND_MEMSET,
            &[
                (4, &0xffu32.to_le_bytes()),
                (s::BYTES, &512u64.to_le_bytes()),
                (s::START, &30u64.to_le_bytes()),
                (s::END, &31u64.to_le_bytes()),
                (s::DEVICE, &2u32.to_le_bytes()),
                (s::STREAM, &4u32.to_le_bytes()),
                (s::CORRELATION, &12u32.to_le_bytes()),
                (s::GRAPH_NODE, &(3u64 << 32).to_le_bytes()),
            ],
        );
        assert_eq!(z.len(), 88, "sizeof(CUpti_ActivityMemset4)");
        assert_eq!(
            parse(&z),
            Rec::Device(Device {
                kind: DeviceKind::Memset,
                copy_kind: 0,
                start: 30,
                end: 31,
                device: 2,
                stream: 4,
                corr: 12,
                bytes: 512,
                name: None,
                queued: 0,
                submitted: 0,
                graph_node: 3 << 32,
            })
        );
        let x = external(12, 777);
        assert_eq!(x.len(), 24, "sizeof(CUpti_ActivityExternalCorrelation)");
        assert_eq!(
            parse(&x),
            Rec::External {
                kind: EXTERNAL_KIND,
                id: 777,
                corr: 12
            }
        );
        // API records (runtime/driver) and unknown kinds are skipped.
        assert_eq!(parse(&record(64, KIND_RUNTIME, &[])), Rec::Other);
        assert_eq!(parse(&record(64, 999, &[])), Rec::Other);
    }
}
