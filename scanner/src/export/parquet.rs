//! `causeway export --format parquet`: the timeline model (`crate::model`) and the steps view
//! (`crate::steps`, default selection) as Parquet tables in one directory, for SQL engines and
//! dataframes (DuckDB `read_parquet`, pandas, polars). The schema, column by column, is in
//! `docs/parquet.md`.
//!
//! Tables: `processes`, `calls`, `device_intervals`, `ranges`, `marks`, `steps`, and `edges` (the
//! causal graph's typed dependencies, `analysis::causal::graph`) (each `NAME.parquet`; every table is
//! written, empty when the capture has no such rows). Names are stored inline as Utf8
//! (Parquet dictionary-encodes repeated values), so there is no separate strings table to join.
//! Nanosecond times and durations are Int64 (CLOCK_MONOTONIC ns fit); sequence numbers, stream
//! handles and byte counts are UInt64; pids and tids UInt32.
//!
//! The directory appears complete or not at all: the tables are written into a temporary directory
//! beside it, which is then renamed. An existing empty directory is taken; an existing non-empty one
//! is replaced only with `force`.

use super::{io_problem, ExportError, Summary, TokenSource};
use crate::analysis::causal::graph::{Edge, Evidence, Graph, Node};
use crate::analysis::steps::{process_steps, Selection, Step, StepOptions};
use crate::facts::model::{Call, DeviceSpan, Mark, ProcessTimeline, Range, StreamId, Timeline};
use crate::facts::tokens::Tokens;
use crate::read::capture::Capture;
use crate::util::output::Writeback;
use arrow_array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray, UInt16Array, UInt32Array,
    UInt64Array,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema};
use causeway_ring::Class;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};

/// The tables, in the order they are written.
pub const TABLES: [&str; 6] = [
    "processes",
    "calls",
    "device_intervals",
    "ranges",
    "marks",
    "steps",
];

fn ns(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A column: its field and its values.
struct Col(Field, ArrayRef);

fn u32s(name: &str, v: Vec<u32>) -> Col {
    Col(
        Field::new(name, DataType::UInt32, false),
        Arc::new(UInt32Array::from(v)),
    )
}
fn u64s(name: &str, v: Vec<u64>) -> Col {
    Col(
        Field::new(name, DataType::UInt64, false),
        Arc::new(UInt64Array::from(v)),
    )
}
fn opt_u64s(name: &str, v: Vec<Option<u64>>) -> Col {
    Col(
        Field::new(name, DataType::UInt64, true),
        Arc::new(UInt64Array::from(v)),
    )
}
fn i64s(name: &str, v: Vec<i64>) -> Col {
    Col(
        Field::new(name, DataType::Int64, false),
        Arc::new(Int64Array::from(v)),
    )
}
fn opt_i64s(name: &str, v: Vec<Option<i64>>) -> Col {
    Col(
        Field::new(name, DataType::Int64, true),
        Arc::new(Int64Array::from(v)),
    )
}
fn strs(name: &str, v: Vec<&str>) -> Result<Col, TooLong> {
    Ok(Col(
        Field::new(name, DataType::Utf8, false),
        Arc::new(string_array(v.iter().map(|s| Some(*s)))?),
    ))
}
fn opt_strs(name: &str, v: Vec<Option<&str>>) -> Result<Col, TooLong> {
    Ok(Col(
        Field::new(name, DataType::Utf8, true),
        Arc::new(string_array(v.iter().copied())?),
    ))
}

/// Most bytes of text one column of a batch holds: Arrow's `Utf8` offsets are 32-bit.
const TEXT_MAX: usize = i32::MAX as usize;

/// A batch's text column would pass `TEXT_MAX` bytes. Only a hostile or corrupt capture's names
/// come near it (the shim writes none over 1 KiB; a string record may claim 4 GiB): the rows are
/// made again as smaller batches (`within_texts`), and only one row's text alone over it fails the
/// table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong;

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a name in the capture is longer than an Arrow text column holds ({TEXT_MAX} bytes)"
        )
    }
}

/// The texts as one array, its bytes counted first and copied once (grown as they came, they were
/// copied again at each doubling, most of making a batch).
fn string_array<'a>(
    v: impl Iterator<Item = Option<&'a str>> + Clone,
) -> Result<StringArray, TooLong> {
    texts_within(v, TEXT_MAX)
}

/// `string_array` for at most `max` (≤ `TEXT_MAX`) bytes of text, `TooLong` beyond.
fn texts_within<'a>(
    v: impl Iterator<Item = Option<&'a str>> + Clone,
    max: usize,
) -> Result<StringArray, TooLong> {
    let (rows, bytes, nulls) = v.clone().fold((0, 0usize, 0), |(n, b, z), s| {
        (
            n + 1,
            b.saturating_add(s.map_or(0, str::len)),
            z + usize::from(s.is_none()),
        )
    });
    if bytes > max.min(TEXT_MAX) {
        return Err(TooLong);
    }
    let mut values = Vec::with_capacity(bytes);
    let mut offsets = Vec::with_capacity(rows + 1);
    offsets.push(0i32);
    for s in v.clone() {
        values.extend_from_slice(s.unwrap_or("").as_bytes());
        // At most `bytes`, checked above to fit.
        offsets.push(values.len() as i32);
    }
    let nulls = (nulls > 0).then(|| v.map(|s| s.is_some()).collect::<NullBuffer>());
    // SAFETY: `values` is the concatenation of whole `str`s (valid UTF-8), and `offsets` starts at 0
    // and ends each one there, rising, at most `values.len()` (below 2^31); `nulls`, if any, has one
    // bit per row.
    Ok(unsafe {
        StringArray::new_unchecked(
            OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)),
            Buffer::from_vec(values),
            nulls,
        )
    })
}

/// Appends to `out` the batch `make` gives for `rows`, or, where one of its text columns would be
/// too long, the batches of each half in turn: a capture's huge names make more, smaller batches
/// (the same rows, in order), not a panic. `TooLong` only when one row's text alone is.
fn within_texts<R, B>(
    rows: &[R],
    make: &impl Fn(&[R]) -> Result<B, TooLong>,
    out: &mut Vec<B>,
) -> Result<(), TooLong> {
    match make(rows) {
        Ok(b) => {
            out.push(b);
            Ok(())
        }
        Err(TooLong) if rows.len() > 1 => {
            let (a, b) = rows.split_at(rows.len() / 2);
            within_texts(a, make, out)?;
            within_texts(b, make, out)
        }
        Err(e) => Err(e),
    }
}

/// `within_texts`' batches of `rows`.
fn batches_of<R, B>(
    rows: &[R],
    make: &impl Fn(&[R]) -> Result<B, TooLong>,
) -> Result<Vec<B>, TooLong> {
    let mut out = Vec::new();
    within_texts(rows, make, &mut out)?;
    Ok(out)
}

fn batch(cols: Vec<Col>) -> RecordBatch {
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) =
        cols.into_iter().map(|c| (c.0, c.1)).unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .expect("columns of one table have equal lengths")
}

/// Rows per record batch the export writes: each column of a batch stays below the allocator's
/// own-mapping threshold (`util::hugealloc::BIG`), so a batch reuses the memory the last one freed
/// instead of faulting in fresh pages (that was most of a 1 M-entry export's time). The files are
/// the same: the writer gathers batches into row groups of its own size.
const CHUNK: usize = 8 << 10;

/// Rows per record batch for a capture whose longest text is `longest` bytes: `CHUNK`, or, where a
/// row could hold texts of hundreds of KiB (a hostile ring's names: the `kernel` and
/// `kernel_symbol` columns repeat a launch's name in every row), as many as keep a batch's texts
/// near 16 MiB, so that the batches made at once stay a few hundred MB rather than the table's
/// whole text (the files hold the same rows; only such a capture's batches are cut smaller).
fn chunk_rows(longest: usize) -> usize {
    if longest <= crate::read::LONG_TEXT {
        return CHUNK;
    }
    ((16 << 20) / (4 * longest)).clamp(1, CHUNK)
}

/// One row of a per-process table: the process and the item.
type Row<'t, T> = (&'t ProcessTimeline, &'t T);

/// The rows a table takes from each of its owners (processes, or their graphs), addressed by their
/// place in the whole table, so that any run of them can be fetched on any thread.
struct Flat<'t, O, T> {
    owners: &'t [O],
    items: fn(&'t O) -> &'t [T],
    /// Where each owner's rows end in the table.
    ends: Vec<usize>,
}

impl<'t, O, T> Flat<'t, O, T> {
    fn new(owners: &'t [O], items: fn(&'t O) -> &'t [T]) -> Self {
        let ends = (owners.iter())
            .scan(0, |end, o| {
                *end += items(o).len();
                Some(*end)
            })
            .collect();
        Flat {
            owners,
            items,
            ends,
        }
    }

    fn len(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Rows `r` of the table, each with its owner.
    fn rows(&self, r: std::ops::Range<usize>) -> Vec<(&'t O, &'t T)> {
        let mut out = Vec::with_capacity(r.len());
        let mut k = self.ends.partition_point(|&e| e <= r.start);
        while out.len() < r.len() && k < self.owners.len() {
            let o = &self.owners[k];
            let begin = if k == 0 { 0 } else { self.ends[k - 1] };
            let from = r.start + out.len() - begin;
            let take = (r.len() - out.len()).min(self.ends[k] - begin - from);
            out.extend((self.items)(o)[from..from + take].iter().map(|x| (o, x)));
            k += 1;
        }
        out
    }
}

/// A table of `rows` rows in record batches of `CHUNK` rows (`chunk_rows`), at least one (empty
/// when there are none: every table is written, with its schema), `make` giving the batches of a
/// run of rows (one, or more where its texts are huge: `within_texts`): made a few at a time on
/// every thread, handed out in order.
fn par_batches<'a>(
    rows: usize,
    make: impl Fn(std::ops::Range<usize>) -> Result<Vec<RecordBatch>, TooLong> + Sync + Send + 'a,
) -> impl Iterator<Item = Result<RecordBatch, TooLong>> + Send + 'a {
    let chunk = chunk_rows(crate::read::longest_text());
    let count = rows.div_ceil(chunk).max(1);
    let ahead = rayon::current_num_threads().max(8);
    let mut next = 0;
    let mut ready = Vec::new().into_iter();
    std::iter::from_fn(move || {
        if let Some(b) = ready.next() {
            return Some(b);
        }
        if next == count {
            return None;
        }
        let until = (next + ahead).min(count);
        let made: Vec<_> = (next..until)
            .into_par_iter()
            .map(|k| make(k * chunk..((k + 1) * chunk).min(rows)))
            .collect();
        next = until;
        ready = made
            .into_iter()
            .flat_map(flat)
            .collect::<Vec<_>>()
            .into_iter();
        ready.next()
    })
}

/// `batches`, one by one, or their error.
fn flat(
    batches: Result<Vec<RecordBatch>, TooLong>,
) -> impl Iterator<Item = Result<RecordBatch, TooLong>> {
    let (ok, err) = match batches {
        Ok(bs) => (bs, None),
        Err(e) => (Vec::new(), Some(Err(e))),
    };
    ok.into_iter().map(Ok).chain(err)
}

/// A per-process table's batches: the rows `items` picks from every process, each batch made by
/// `batch` (`par_batches`).
fn per_process<'t, T: Sync + 't>(
    ps: &'t [ProcessTimeline],
    items: fn(&'t ProcessTimeline) -> &'t [T],
    batch: fn(&[Row<'t, T>]) -> Result<RecordBatch, TooLong>,
) -> Box<dyn Iterator<Item = Result<RecordBatch, TooLong>> + Send + 't> {
    let f = Flat::new(ps, items);
    Box::new(par_batches(f.len(), move |r| {
        batches_of(&f.rows(r), &batch)
    }))
}

fn processes_batch(ps: &[ProcessTimeline]) -> Result<RecordBatch, TooLong> {
    Ok(batch(vec![
        strs("ring", ps.iter().map(|p| p.ring.as_str()).collect())?,
        u32s("pid", ps.iter().map(|p| p.pid).collect()),
        u32s("ppid", ps.iter().map(|p| p.ppid).collect()),
        strs("exe", ps.iter().map(|p| p.exe.as_str()).collect())?,
        strs("host", ps.iter().map(|p| p.host.as_str()).collect())?,
        strs("backend", ps.iter().map(|p| p.backend.as_str()).collect())?,
        u64s(
            "unplaced_device",
            ps.iter().map(|p| p.unplaced_device).collect(),
        ),
    ]))
}

fn calls_batch(calls: &[Row<Call>]) -> Result<RecordBatch, TooLong> {
    Ok(batch(vec![
        strs("ring", calls.iter().map(|c| c.0.ring.as_str()).collect())?,
        u32s("pid", calls.iter().map(|c| c.0.pid).collect()),
        u64s("seq", calls.iter().map(|c| c.1.seq).collect()),
        u32s("tid", calls.iter().map(|c| c.1.tid).collect()),
        strs("api", calls.iter().map(|c| c.1.api.as_str()).collect())?,
        strs("layer", calls.iter().map(|c| c.1.layer_name()).collect())?,
        opt_strs(
            "class",
            calls.iter().map(|c| c.1.class.map(Class::name)).collect(),
        )?,
        i64s("begin_ns", calls.iter().map(|c| ns(c.1.begin_ns)).collect()),
        opt_i64s(
            "end_ns",
            calls.iter().map(|c| c.1.end_ns.get().map(ns)).collect(),
        ),
        Col(
            Field::new("depth", DataType::UInt16, false),
            Arc::new(UInt16Array::from(
                calls.iter().map(|c| c.1.depth).collect::<Vec<_>>(),
            )),
        ),
        Col(
            Field::new("result", DataType::Int32, false),
            Arc::new(Int32Array::from(
                calls.iter().map(|c| c.1.result).collect::<Vec<_>>(),
            )),
        ),
        opt_u64s("stream", calls.iter().map(|c| c.1.stream()).collect()),
        opt_strs(
            "kernel",
            calls
                .iter()
                .map(|c| c.1.kernel.map(|k| k.as_str()))
                .collect(),
        )?,
        opt_strs(
            "kernel_symbol",
            calls
                .iter()
                .map(|c| c.1.kernel.map(|k| c.0.symbol_of(k.as_str())))
                .collect(),
        )?,
    ]))
}

fn device_batch(spans: &[Row<DeviceSpan>]) -> Result<RecordBatch, TooLong> {
    // Each stream's label made once (formatted per span, they were a tenth of making the batch).
    let mut made = std::collections::HashMap::new();
    let mut texts: Vec<String> = Vec::new();
    let label: Vec<usize> = (spans.iter())
        .map(|s| {
            let key = (std::ptr::from_ref(s.0), s.1.stream.get());
            *made.entry(key).or_insert_with(|| {
                texts.push(s.0.stream_label(&key.1));
                texts.len() - 1
            })
        })
        .collect();
    Ok(batch(vec![
        strs("ring", spans.iter().map(|s| s.0.ring.as_str()).collect())?,
        u32s("pid", spans.iter().map(|s| s.0.pid).collect()),
        strs("kind", spans.iter().map(|s| s.1.kind.name()).collect())?,
        strs("name", spans.iter().map(|s| s.1.name.as_str()).collect())?,
        strs(
            "symbol",
            spans
                .iter()
                .map(|s| s.0.symbol_of(s.1.name.as_str()))
                .collect(),
        )?,
        i64s("begin_ns", spans.iter().map(|s| ns(s.1.begin_ns)).collect()),
        i64s("end_ns", spans.iter().map(|s| ns(s.1.end_ns)).collect()),
        i64s("bound_ns", spans.iter().map(|s| ns(s.1.bound_ns)).collect()),
        strs("stream", label.iter().map(|&k| texts[k].as_str()).collect())?,
        opt_u64s(
            "stream_handle",
            spans
                .iter()
                .map(|s| match s.1.stream.get() {
                    StreamId::Handle(h) => Some(h),
                    _ => None,
                })
                .collect(),
        ),
        opt_u64s("call_seq", spans.iter().map(|s| s.1.call.get()).collect()),
        u64s("bytes", spans.iter().map(|s| s.1.bytes).collect()),
    ]))
}

fn ranges_batch(rs: &[Row<Range>]) -> Result<RecordBatch, TooLong> {
    Ok(batch(vec![
        strs("ring", rs.iter().map(|r| r.0.ring.as_str()).collect())?,
        u32s("pid", rs.iter().map(|r| r.0.pid).collect()),
        u32s("tid", rs.iter().map(|r| r.1.tid).collect()),
        strs("name", rs.iter().map(|r| r.1.name.as_str()).collect())?,
        opt_strs(
            "domain",
            rs.iter().map(|r| r.1.domain.map(|d| d.as_str())).collect(),
        )?,
        i64s("begin_ns", rs.iter().map(|r| ns(r.1.begin_ns)).collect()),
        opt_i64s("end_ns", rs.iter().map(|r| r.1.end_ns.map(ns)).collect()),
        u32s("level", rs.iter().map(|r| r.1.level).collect()),
    ]))
}

fn marks_batch(ms: &[Row<Mark>]) -> Result<RecordBatch, TooLong> {
    Ok(batch(vec![
        strs("ring", ms.iter().map(|m| m.0.ring.as_str()).collect())?,
        u32s("pid", ms.iter().map(|m| m.0.pid).collect()),
        u32s("tid", ms.iter().map(|m| m.1.tid).collect()),
        strs("name", ms.iter().map(|m| m.1.name.as_str()).collect())?,
        opt_strs(
            "domain",
            ms.iter().map(|m| m.1.domain.map(|d| d.as_str())).collect(),
        )?,
        i64s("ns", ms.iter().map(|m| ns(m.1.ns)).collect()),
    ]))
}

/// The tables of `t`, by name (in `TABLES` order), each as batches of up to `GROUP_ROWS` rows (the
/// Python module's tables, handed to pyarrow as they are), made side by side on every thread.
/// (Made as one batch on one thread, the calls of a 10 M-entry capture took seconds.)
pub fn tables(t: &Timeline) -> Result<Vec<(&'static str, Vec<RecordBatch>)>, TooLong> {
    let ps = &t.processes;
    let batches = |i: usize| -> Result<Vec<RecordBatch>, TooLong> {
        match i {
            0 => batches_of(ps, &processes_batch),
            1 => groups(ps, |p| &p.calls, calls_batch),
            2 => groups(ps, |p| &p.device, device_batch),
            3 => groups(ps, |p| &p.ranges, ranges_batch),
            4 => groups(ps, |p| &p.marks, marks_batch),
            _ => steps_batches(ps),
        }
    };
    (0..TABLES.len())
        .into_par_iter()
        .map(|i| Ok((TABLES[i], batches(i)?)))
        .collect()
}

/// The rows `items` picks from every process as batches of `GROUP_ROWS` rows (`in_groups`).
fn groups<'t, T: Sync + 't>(
    ps: &'t [ProcessTimeline],
    items: fn(&'t ProcessTimeline) -> &'t [T],
    batch: fn(&[Row<'t, T>]) -> Result<RecordBatch, TooLong>,
) -> Result<Vec<RecordBatch>, TooLong> {
    in_groups(&Flat::new(ps, items), batch)
}

/// The rows of `f` as batches of `GROUP_ROWS` rows, at least one (empty when there are none: the
/// table keeps its schema), each made by `make` on a thread of its own.
fn in_groups<'t, O: Sync, T: Sync>(
    f: &Flat<'t, O, T>,
    make: impl Fn(&[(&'t O, &'t T)]) -> Result<RecordBatch, TooLong> + Sync,
) -> Result<Vec<RecordBatch>, TooLong> {
    let n = f.len();
    let groups = (0..n.div_ceil(GROUP_ROWS).max(1))
        .into_par_iter()
        .map(|k| {
            batches_of(
                &f.rows(k * GROUP_ROWS..((k + 1) * GROUP_ROWS).min(n)),
                &make,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(groups.into_iter().flatten().collect())
}

/// A row of the `steps` table: its process (pid, ring), the step ranges' selection, the step.
type StepRow<'v> = ((u32, &'v str), Option<&'v Selection>, &'v Step);

/// The `steps` table's batches: every process's steps view (default selection).
fn steps_batches(ps: &[ProcessTimeline]) -> Result<Vec<RecordBatch>, TooLong> {
    let views: Vec<_> = ps
        .iter()
        .map(|p| {
            (
                (p.pid, p.ring.as_str()),
                process_steps(p, &StepOptions::default()),
            )
        })
        .collect();
    let st: Vec<_> = views
        .iter()
        .flat_map(|((pid, ring), v)| {
            let sel = v.selection.as_ref();
            v.steps.iter().map(move |s| ((*pid, *ring), sel, s))
        })
        .collect();
    batches_of(&st, &steps_batch)
}

fn steps_batch(st: &[StepRow]) -> Result<RecordBatch, TooLong> {
    let dev = |f: fn(&crate::analysis::steps::StepDevice) -> u64| -> Vec<Option<i64>> {
        st.iter()
            .map(|s| s.2.device.as_ref().map(|d| ns(f(d))))
            .collect()
    };
    Ok(batch(vec![
        strs("ring", st.iter().map(|s| s.0 .1).collect())?,
        u32s("pid", st.iter().map(|s| s.0 .0).collect()),
        u64s("index", st.iter().map(|s| s.2.index as u64).collect()),
        u32s("tid", st.iter().map(|s| s.2.tid).collect()),
        strs(
            "range",
            st.iter()
                .map(|s| s.1.map(|x| x.name.as_str()).unwrap_or(""))
                .collect(),
        )?,
        opt_strs(
            "domain",
            st.iter()
                .map(|s| s.1.and_then(|x| x.domain.as_deref()))
                .collect(),
        )?,
        i64s("begin_ns", st.iter().map(|s| ns(s.2.begin_ns)).collect()),
        i64s("end_ns", st.iter().map(|s| ns(s.2.end_ns)).collect()),
        i64s("wall_ns", st.iter().map(|s| ns(s.2.wall_ns)).collect()),
        i64s("launch_ns", st.iter().map(|s| ns(s.2.launch_ns)).collect()),
        u64s(
            "launch_calls",
            st.iter().map(|s| s.2.launch_calls).collect(),
        ),
        i64s("sync_ns", st.iter().map(|s| ns(s.2.sync_ns)).collect()),
        u64s("sync_calls", st.iter().map(|s| s.2.sync_calls).collect()),
        i64s("other_ns", st.iter().map(|s| ns(s.2.other_ns)).collect()),
        opt_u64s(
            "device_spans",
            st.iter()
                .map(|s| s.2.device.as_ref().map(|d| d.spans))
                .collect(),
        ),
        opt_i64s("device_busy_ns", dev(|d| d.busy_ns)),
        opt_i64s("device_idle_ns", dev(|d| d.idle_ns)),
        opt_i64s("device_copy_ns", dev(|d| d.copy_ns)),
        opt_i64s("device_compute_ns", dev(|d| d.compute_ns)),
        opt_i64s("device_overlap_ns", dev(|d| d.overlap_ns)),
        opt_i64s("device_bound_ns", dev(|d| d.bound_ns)),
    ]))
}

/// The tables the export writes beyond `TABLES` (the Python module's tables): the causal graph's
/// edges.
pub const GRAPH_TABLES: [&str; 1] = ["edges"];

/// The causal graph's edges of every process: each edge's type and evidence, and both ends — a call
/// (its sequence number, API, times), a device interval (its issuing call's sequence number, name,
/// times) or a record the capture does not have (`absent`, with what it is).
/// As batches of `GROUP_ROWS` rows (the Python module's `edges()`), made while the graph's walk
/// makes the edges (`streamed_edges`).
pub fn edges(t: &Timeline, tokens: &TokenSource) -> Result<Vec<RecordBatch>, TooLong> {
    let toks = tokens_of(tokens, t.processes.len());
    let drawn = AtomicUsize::new(0);
    std::thread::scope(|s| {
        streamed_edges(s, &t.processes, toks, GROUP_ROWS, &drawn, None).collect()
    })
}

/// Each process's work tokens, read from `tokens` (whose cells only one thread may fill).
fn tokens_of<'s>(tokens: &'s TokenSource, processes: usize) -> Vec<Option<&'s Tokens>> {
    (0..processes).map(|k| tokens.get(k)).collect()
}

/// What the rows of one process's edges read besides the edges: the process, and what its absent
/// nodes stand for (`Graph::edges_streamed`).
struct ProcEdges<'a> {
    p: &'a ProcessTimeline,
    absent: &'a [String],
}

/// The `edges` table's batches of `rows` rows (at least one, empty when no process has an edge),
/// every process's in turn, made while the causal graph's walk makes the edges, so that the graph's
/// edges are never all held at once (at 10 M entries they were 160 MB). The walk runs on a thread
/// of `scope`'s own, a row group's worth of edges ahead of the batches at most; each run of edges
/// is made into batches on every thread. Adds to `drawn` how many rows the trace exports draw as
/// dependency flows. The walk begins once `after`'s sender is gone, where one is given.
fn streamed_edges<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    ps: &'s [ProcessTimeline],
    tokens: Vec<Option<&'s Tokens>>,
    rows: usize,
    drawn: &'s AtomicUsize,
    after: Option<Receiver<()>>,
) -> impl Iterator<Item = Result<RecordBatch, TooLong>> + Send + 's {
    use std::sync::mpsc::sync_channel;
    // Runs taken at once, their batches made side by side: as many batches as `par_batches` makes
    // at a time (a run is 16 of the Parquet table's batches, one of the Python module's). The batches
    // of 16 runs at a time were 300 MB at 10 M entries on 16 threads.
    let ahead = rayon::current_num_threads().max(8);
    let width = (ahead * rows).div_ceil(GROUP_ROWS).max(1);
    // (process, a run of its edges, its absent nodes made since the run before)
    let (tx, rx) = sync_channel::<(usize, Vec<Edge>, Vec<String>)>(width);
    scope.spawn(move || {
        // Waits for its sender to be dropped (nothing is ever sent).
        if let Some(after) = after {
            let _ = after.recv();
        }
        for (k, (p, tk)) in ps.iter().zip(tokens).enumerate() {
            // A send fails only when the batches are no longer wanted (the table failed).
            let mut take = |edges, absent| drop(tx.send((k, edges, absent)));
            Graph::edges_streamed(p, tk, GROUP_ROWS, &mut take);
        }
        crate::util::stages::mark("walk");
    });
    // The next run (waited for, the walk's own parallel parts run meanwhile: `recv_helping`), or
    // the next already sent.
    let next = move |wait: bool| match wait {
        true => recv_helping(&rx),
        false => rx.try_recv().ok(),
    };
    let (mut absent, mut current, mut any) = (Vec::new(), usize::MAX, false);
    let mut held: Option<(usize, Vec<Edge>, Vec<String>)> = None;
    let mut ready = Vec::new().into_iter();
    // The runs taken (all of one process) and the first of their rows not yet made into batches
    // (run, row): made `ahead` batches at a time, so that the batches in flight stay what
    // `chunk_rows` sizes them for, also where a run holds many batches (a hostile ring's huge names
    // make batches of a few rows: a run's were all made at once, 2.5 GB for a 1 MB ring).
    let mut runs: Vec<(usize, Vec<Edge>, Vec<String>)> = Vec::new();
    let mut at = (0, 0);
    std::iter::from_fn(move || loop {
        if let Some(b) = ready.next() {
            any = true;
            return Some(b);
        }
        if at.0 < runs.len() {
            let mut chunks: Vec<&[Edge]> = Vec::with_capacity(ahead);
            while chunks.len() < ahead && at.0 < runs.len() {
                let edges = &runs[at.0].1;
                let end = (at.1 + rows).min(edges.len());
                if at.1 < end {
                    chunks.push(&edges[at.1..end]);
                }
                at = if end == edges.len() {
                    (at.0 + 1, 0)
                } else {
                    (at.0, end)
                };
            }
            let g = ProcEdges {
                p: &ps[current],
                absent: &absent,
            };
            let made: Vec<_> = (chunks.par_iter())
                .map(|run| {
                    let rows: Vec<EdgeRow> = run.iter().map(|e| (&g, e)).collect();
                    batches_of(&rows, &edges_batch)
                })
                .collect();
            let mut out = Vec::with_capacity(made.len());
            for m in made {
                match m {
                    Ok(bs) => out.extend(bs.into_iter().map(|(b, d)| {
                        drawn.fetch_add(d, Relaxed);
                        Ok(b)
                    })),
                    Err(e) => out.push(Err(e)),
                }
            }
            ready = out.into_iter();
            continue;
        }
        // The runs there are (one at least, waited for), up to `width`, of one process.
        let Some(first) = held.take().or_else(|| next(true)) else {
            // A table without rows keeps its schema.
            return (!std::mem::replace(&mut any, true)).then(|| edges_batch(&[]).map(|b| b.0));
        };
        let k = first.0;
        runs.clear();
        runs.push(first);
        while runs.len() < width {
            match next(false) {
                Some(m) if m.0 == k => runs.push(m),
                other => {
                    held = other;
                    break;
                }
            }
        }
        if k != current {
            absent.clear();
            current = k;
        }
        // A process's absent nodes only grow: its later runs' list serves the earlier ones.
        for (_, _, new) in &mut runs {
            absent.append(new);
        }
        at = (0, 0);
    })
}

/// The next message on `rx`, or `None` once every sender is gone. A rayon worker waiting here runs
/// the pool's other work meanwhile: with one worker thread, blocking it would stop for good the work
/// that sends.
fn recv_helping<T>(rx: &std::sync::mpsc::Receiver<T>) -> Option<T> {
    use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
    loop {
        match rx.try_recv() {
            Ok(m) => return Some(m),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            continue;
        }
        match rx.recv_timeout(std::time::Duration::from_micros(200)) {
            Ok(m) => return Some(m),
            Err(RecvTimeoutError::Disconnected) => return None,
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// One row of `edges`: an edge and the process it is in.
type EdgeRow<'g, 'a> = (&'g ProcEdges<'a>, &'g Edge);

/// `edges` of these rows, and how many of them the trace exports draw as dependency flows (edges
/// across tracks between two slices: no absent end).
fn edges_batch(rows: &[EdgeRow]) -> Result<(RecordBatch, usize), TooLong> {
    let mut drawn = 0;
    // One end's columns, filled edge by edge.
    #[derive(Default)]
    struct Ends<'a> {
        node: Vec<&'static str>,
        seq: Vec<Option<u64>>,
        name: Vec<Option<&'a str>>,
        begin: Vec<Option<i64>>,
        end: Vec<Option<i64>>,
        what: Vec<Option<&'a str>>,
    }
    impl<'a> Ends<'a> {
        fn add(&mut self, g: &'a ProcEdges, n: Node) {
            let p = g.p;
            let (node, seq, name, begin, end, what) = match n {
                Node::Call(i) => {
                    let c = &p.calls[i as usize];
                    let (b, e) = (ns(c.begin_ns), c.end_ns.get().map(ns));
                    ("call", Some(c.seq), Some(c.api.as_str()), Some(b), e, None)
                }
                Node::Work(j) => {
                    let d = &p.device[j as usize];
                    let (b, e) = (ns(d.begin_ns), ns(d.end_ns));
                    (
                        "device",
                        d.call.get(),
                        Some(d.name.as_str()),
                        Some(b),
                        Some(e),
                        None,
                    )
                }
                Node::Absent(k) => (
                    "absent",
                    None,
                    None,
                    None,
                    None,
                    Some(g.absent[k as usize].as_str()),
                ),
            };
            self.node.push(node);
            self.seq.push(seq);
            self.name.push(name);
            self.begin.push(begin);
            self.end.push(end);
            self.what.push(what);
        }
    }
    let n = rows.len();
    let ends = || Ends {
        node: Vec::with_capacity(n),
        seq: Vec::with_capacity(n),
        name: Vec::with_capacity(n),
        begin: Vec::with_capacity(n),
        end: Vec::with_capacity(n),
        what: Vec::with_capacity(n),
    };
    let (mut from, mut to) = (ends(), ends());
    let (mut ring, mut pid) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut kind, mut evidence, mut conf) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for &(g, e) in rows {
        let absent = |n| matches!(n, Node::Absent(_));
        if e.kind.crosses_tracks() && !absent(e.from()) && !absent(e.to()) {
            drawn += 1;
        }
        ring.push(g.p.ring.as_str());
        pid.push(g.p.pid);
        kind.push(e.kind.name());
        evidence.push(e.evidence().name());
        conf.push(match e.evidence() {
            Evidence::Inferred { confidence } => Some(confidence as f64),
            _ => None,
        });
        from.add(g, e.from());
        to.add(g, e.to());
    }
    let f64s = |name: &str, v: Vec<Option<f64>>| {
        Col(
            Field::new(name, DataType::Float64, true),
            Arc::new(arrow_array::Float64Array::from(v)) as ArrayRef,
        )
    };
    let b = batch(vec![
        strs("ring", ring)?,
        u32s("pid", pid),
        strs("kind", kind)?,
        strs("evidence", evidence)?,
        f64s("confidence", conf),
        strs("from_node", from.node)?,
        opt_u64s("from_seq", from.seq),
        opt_strs("from_name", from.name)?,
        opt_i64s("from_begin_ns", from.begin),
        opt_i64s("from_end_ns", from.end),
        opt_strs("from_absent", from.what)?,
        strs("to_node", to.node)?,
        opt_u64s("to_seq", to.seq),
        opt_strs("to_name", to.name)?,
        opt_i64s("to_begin_ns", to.begin),
        opt_i64s("to_end_ns", to.end),
    ]);
    Ok((b, drawn))
}

/// Rows per row group: DuckDB's own size (122 880) rounded up to a power of two. Row groups are
/// encoded side by side, so a table's slowest column is split among threads; readers split their
/// work by row group too. (arrow-rs's default, 1 Mi rows, left the largest table's slowest column on
/// one thread: the `edges` table's names at 10 M entries.)
pub const GROUP_ROWS: usize = 128 << 10;

/// Rows per row group for a capture whose longest text is `longest` bytes: `GROUP_ROWS`, or, for a
/// hostile ring's names of hundreds of KiB, 16 batches (`chunk_rows`): a row group's batches are
/// held until it is encoded, and `GROUP_ROWS` rows of such names were tens of GB.
fn group_rows(longest: usize) -> usize {
    match chunk_rows(longest) {
        CHUNK => GROUP_ROWS,
        rows => 16 * rows,
    }
}

/// Where a table's batches come from, which decides how many of its row groups are encoded at once.
#[derive(Clone, Copy)]
enum Source {
    /// Made from the model, ready at any time: the tables written side by side keep every thread
    /// busy between them.
    Model,
    /// Made as the causal graph's walk makes the edges: a row group's batches are taken from the
    /// walk only when a slot frees, so the walk waits while the groups ahead of it encode.
    Walk,
}

/// Row groups being encoded at once, with `twice` enough (group, column) tasks for every thread
/// twice over: half that for a table made from the model (one for the large tables at 16 threads),
/// one more for the walk's `edges`, so that the walk, the export's longest path, is not held back by
/// one group's slowest column (docs/results/2026-12-04-walk-h200.md).
fn groups_in_flight(columns: usize, source: Source) -> usize {
    let twice = (2 * rayon::current_num_threads()).div_ceil(columns.max(1));
    match source {
        Source::Model => (twice / 2).max(1),
        Source::Walk => twice + 1,
    }
}

/// Writes `batches` (at least one; all of one schema, flat) as the table `name` in `dir`; returns the
/// file's bytes. The file is the one `ArrowWriter` writes (the same row groups, pages and metadata:
/// each column of each row group is given the same batches in the same order), but every column of
/// a window of row groups is encoded on a thread of its own: arrow-rs encodes a table's columns one
/// after another, and encoding was most of the export.
fn write_table(
    dir: &Path,
    name: &str,
    source: Source,
    props: impl FnOnce(&Schema) -> WriterProperties,
    mut batches: impl Iterator<Item = Result<RecordBatch, TooLong>> + Send,
) -> Result<u64, ExportError> {
    let path = dir.join(format!("{name}.parquet"));
    let err =
        |e: &dyn std::fmt::Display| ExportError(format!("{}: cannot write: {e}", path.display()));
    let first = (batches.next().expect("every table has a batch")).map_err(|e| err(&e))?;
    let schema = first.schema();
    let mut props = props(&schema);
    add_encoded_arrow_schema_to_metadata(&schema, &mut props);
    let layout = ArrowSchemaConverter::new()
        .with_coerce_types(props.coerce_types())
        .convert(&schema)
        .map_err(|e| err(&e))?;
    let props = Arc::new(props);
    let group_rows = props.max_row_group_row_count().unwrap_or(usize::MAX);
    let file =
        causeway_ring::private::create_file(&path, false).map_err(|e| err(&io_problem(&e)))?;
    // The pages go to writeback as they are written: the sync below waits for the last part only.
    let mut w = SerializedFileWriter::new(
        Writeback::new(file),
        layout.root_schema_ptr(),
        props.clone(),
    )
    .map_err(|e| err(&e))?;
    let columns = ArrowRowGroupWriterFactory::new(&w, schema.clone());
    let fields = schema.fields();
    // The batches of the next row group, cut as `ArrowWriter` cuts them: a batch that would cross
    // the group's end is split there, and an empty batch is skipped (a table without rows has no
    // row group). A batch that could not be made is the group's error, and the last group.
    let mut pending = Some(first);
    let mut broken = false;
    let next_group = || {
        let (mut group, mut rows) = (Vec::new(), 0);
        while rows < group_rows && !broken {
            let b = match pending.take().map(Ok).or_else(|| batches.next()) {
                None => break,
                Some(Ok(b)) => b,
                Some(Err(e)) => {
                    broken = true;
                    return Some(Err(err(&e)));
                }
            };
            let mut b = b;
            if rows + b.num_rows() > group_rows {
                let fits = group_rows - rows;
                pending = Some(b.slice(fits, b.num_rows() - fits));
                b = b.slice(0, fits);
            }
            rows += b.num_rows();
            if b.num_rows() > 0 {
                group.push(b);
            }
        }
        (!group.is_empty()).then_some(Ok(group))
    };
    // One row group's column chunks: column c is field c's writer (every table is flat: a nested
    // field has several), given every batch of the group, then closed.
    let encode = |k: usize, group: Result<Vec<RecordBatch>, ExportError>| {
        let group = group?;
        let columns = columns.create_column_writers(k).map_err(|e| err(&e))?;
        assert_eq!(columns.len(), fields.len(), "{name}: a flat schema");
        (columns.into_par_iter().enumerate())
            .map(|(c, mut cw)| {
                for b in &group {
                    for leaf in compute_leaves(fields[c].as_ref(), b.column(c))? {
                        cw.write(&leaf)?;
                    }
                }
                cw.close()
            })
            .collect::<parquet::errors::Result<Vec<_>>>()
            .map_err(|e| err(&e))
    };
    // Each row group is encoded on every thread as soon as one of those before it is appended (a
    // window of groups waited for its slowest column before the next began), and appended to the
    // file in order, here, while the others encode.
    let failed = || Err(err(&"encoding a row group failed"));
    in_order(
        groups_in_flight(fields.len(), source),
        next_group,
        encode,
        failed,
        |chunks| {
            let mut group = w.next_row_group().map_err(|e| err(&e))?;
            for chunk in chunks? {
                chunk.append_to_row_group(&mut group).map_err(|e| err(&e))?;
            }
            group.close().map(drop).map_err(|e| err(&e))
        },
    )?;
    let file = w.into_inner().map_err(|e| err(&e))?.into_file();
    file.sync_all().map_err(|e| err(&io_problem(&e)))?;
    Ok(file.metadata().map(|m| m.len()).unwrap_or(0))
}

/// Gives `append` the result of `encode` for each item `next` gives, in their order, while the
/// items are encoded on every thread, at most `in_flight` (at least one) of them at a time beyond
/// the last appended; returns `append`'s first error (no later item is made). Every item answers,
/// so the wait ends: a panic in `encode` gives that item `failed()`.
fn in_order<G: Send, R: Send, E>(
    in_flight: usize,
    mut next: impl FnMut() -> Option<G>,
    encode: impl Fn(usize, G) -> R + Sync,
    failed: impl Fn() -> R,
    mut append: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E> {
    let (tx, rx) = std::sync::mpsc::channel();
    rayon::in_place_scope(|s| {
        let (mut started, mut appended, mut more) = (0usize, 0usize, true);
        let mut done = std::collections::BTreeMap::new();
        loop {
            while more && started - appended < in_flight.max(1) {
                match next() {
                    Some(item) => {
                        let (tx, encode) = (tx.clone(), &encode);
                        s.spawn(move |_| {
                            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                                encode(started, item)
                            }));
                            // Fails only when the items are no longer wanted (`append` failed).
                            drop(tx.send((started, r.ok())))
                        });
                        started += 1;
                    }
                    None => more = false,
                }
            }
            if appended == started {
                return Ok(());
            }
            let (k, r) = recv_helping(&rx).expect("a sender is held here");
            done.insert(k, r);
            while let Some(r) = done.remove(&appended) {
                append(r.unwrap_or_else(&failed))?;
                appended += 1;
            }
        }
    })
}

/// Columns whose values are nearly all distinct (times, sequence numbers, sizes). A dictionary
/// page for them only fills and is thrown away (the writer falls back to plain encoding once it
/// passes its size limit), and interning each value into it was a fifth of the export's CPU. They
/// are delta-encoded instead (`DELTA_BINARY_PACKED`): in time order, a row's time or sequence number
/// is a small step from the last one's. Plain and Snappy-compressed they were four fifths of the
/// files (41 bytes an entry on the synthetic 1 M capture, 9.4 delta-encoded).
const DISTINCT: [&str; 23] = [
    "seq",
    "begin_ns",
    "end_ns",
    "bound_ns",
    "call_seq",
    "bytes",
    "ns",
    "wall_ns",
    "launch_ns",
    "sync_ns",
    "other_ns",
    "device_busy_ns",
    "device_idle_ns",
    "device_copy_ns",
    "device_compute_ns",
    "device_overlap_ns",
    "device_bound_ns",
    "from_seq",
    "from_begin_ns",
    "from_end_ns",
    "to_seq",
    "to_begin_ns",
    "to_end_ns",
];

/// How a table of this schema is written: row groups of `GROUP_ROWS`, Snappy pages; dictionaries
/// for names and other repeating values, deltas for the `DISTINCT` columns; no statistics for text
/// columns. (A name column's min and max, the least and greatest of thousands of names, prune no
/// row group, and computing them was two string comparisons per value.)
fn properties(schema: &Schema) -> WriterProperties {
    let b = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(group_rows(crate::read::longest_text())))
        .set_created_by(format!("causeway {}", env!("CARGO_PKG_VERSION")));
    let b = DISTINCT.iter().fold(b, |b, c| {
        let c = ColumnPath::from(*c);
        b.set_column_dictionary_enabled(c.clone(), false)
            .set_column_encoding(c, Encoding::DELTA_BINARY_PACKED)
    });
    (schema.fields().iter())
        .filter(|f| f.data_type() == &DataType::Utf8)
        .fold(b, |b, f| {
            b.set_column_statistics_enabled(
                ColumnPath::from(f.name().as_str()),
                EnabledStatistics::None,
            )
        })
        .build()
}

/// Writes every table of `t` into the existing directory `dir` as `NAME.parquet`; returns the bytes
/// written and how many of the `edges` rows are cross-track dependencies (what the trace exports draw
/// as dependency flows).
pub fn write_dir(
    t: &Timeline,
    tokens: &TokenSource,
    dir: &Path,
) -> Result<(u64, usize), ExportError> {
    let ps = &t.processes;
    // Each table is a file of its own: the model's tables are written side by side, while the
    // causal graph is built beside them.
    // The walk begins once the steps view is made: they are the export's two largest transients
    // (at 10 M entries about 60 MB each), and side by side they were its peak (860 MB, 800 with
    // the gate, for about 9 % more time: the steps take 110-130 ms of the export). The gate opens
    // when its sender is dropped: by the steps table, or, should the steps view panic, when the
    // model's tables are done.
    let (steps_made, walk_may_begin) = std::sync::mpsc::sync_channel::<()>(0);
    let table = |i: usize, gate: &Mutex<Option<SyncSender<()>>>| -> Result<u64, ExportError> {
        let batches: Box<dyn Iterator<Item = Result<RecordBatch, TooLong>> + Send + '_> = match i {
            0 => Box::new(flat(batches_of(ps, &processes_batch))),
            1 => per_process(ps, |p| &p.calls, calls_batch),
            2 => per_process(ps, |p| &p.device, device_batch),
            3 => per_process(ps, |p| &p.ranges, ranges_batch),
            4 => per_process(ps, |p| &p.marks, marks_batch),
            _ => {
                let steps = steps_batches(ps);
                drop(gate.lock().unwrap_or_else(|e| e.into_inner()).take());
                Box::new(flat(steps))
            }
        };
        write_table(dir, TABLES[i], Source::Model, properties, batches)
    };
    let toks = tokens_of(tokens, ps.len());
    // The causal graph's `edges` (the largest table) is written beside the others as the graph's
    // walk makes it.
    let deps = AtomicUsize::new(0);
    let (sizes, edges) = std::thread::scope(|s| {
        let edges = || {
            let rows = chunk_rows(crate::read::longest_text());
            let batches = streamed_edges(s, ps, toks, rows, &deps, Some(walk_may_begin));
            let written = write_table(dir, GRAPH_TABLES[0], Source::Walk, properties, batches);
            crate::util::stages::mark(GRAPH_TABLES[0]);
            written
        };
        rayon::join(
            || {
                let gate = Mutex::new(Some(steps_made));
                (0..TABLES.len())
                    .into_par_iter()
                    .map(|i| {
                        let written = table(i, &gate);
                        crate::util::stages::mark(TABLES[i]);
                        written
                    })
                    .collect::<Vec<_>>()
            },
            edges,
        )
    });
    // The first table's error, as when they were written one after another.
    let bytes = sizes.into_iter().sum::<Result<u64, ExportError>>()?;
    let edge_bytes = edges?;
    Ok((bytes + edge_bytes, deps.into_inner()))
}

/// `causeway export --format parquet`: opens `capture` and writes its tables into the directory
/// `output` (see the module docs for how an existing one is treated).
pub fn export(capture: &Path, output: &Path, force: bool) -> Result<Summary, ExportError> {
    crate::util::stages::mark("begin");
    crate::util::output::refuse_planted(output)?;
    let exists = match std::fs::symlink_metadata(output) {
        Ok(m) if !m.is_dir() => {
            return Err(ExportError(format!(
                "{}: exists and is not a directory (-o names the directory to write)",
                output.display()
            )))
        }
        Ok(_) => true,
        Err(_) => false,
    };
    let not_empty = || {
        std::fs::read_dir(output)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    };
    if exists && !force && not_empty() {
        return Err(not_empty_error(output));
    }

    let cap = Capture::open(capture)?;
    if exists {
        // Replacing a directory that holds the capture would destroy it.
        let out = std::fs::canonicalize(output).map_err(|e| {
            ExportError(format!(
                "{}: cannot read: {}",
                output.display(),
                io_problem(&e)
            ))
        })?;
        let inside = (cap.paths().iter())
            .any(|f| std::fs::canonicalize(f).is_ok_and(|p| p.starts_with(&out)));
        if inside {
            return Err(ExportError(format!(
                "{}: holds rings of the capture being exported (choose another -o)",
                output.display()
            )));
        }
        // --force replaces only what an earlier export wrote: a directory of our tables, nothing else.
        if let Some(other) = foreign_entry(output).filter(|_| force) {
            return Err(ExportError(format!(
                "{}: holds {other}, which no parquet export wrote; not replacing it (choose another -o, \
                 or remove it yourself)",
                output.display()
            )));
        }
    }
    let rings = cap.rings()?;
    let timeline = Timeline::build(&rings);
    crate::util::stages::mark("timeline");
    let tokens = TokenSource::of(&rings);
    tokens.read_all_and_release(&cap);
    crate::util::stages::mark("tokens");

    let tmp = sibling(output, "tmp");
    causeway_ring::private::create_dir(&tmp).map_err(|e| {
        ExportError(format!(
            "{}: cannot create: {}",
            output.display(),
            io_problem(&e)
        ))
    })?;
    let result = (|| -> Result<Summary, ExportError> {
        let (bytes, dependency_flows) = write_dir(&timeline, &tokens, &tmp)?;
        if crate::util::guard::any_fault() {
            return Err(ExportError(format!(
                "{}: not written: a ring file was truncated while it was being read",
                output.display()
            )));
        }
        let mut old = None;
        if exists && force && not_empty() {
            let o = sibling(output, "old");
            std::fs::rename(output, &o).map_err(|e| {
                ExportError(format!(
                    "{}: cannot replace: {}",
                    output.display(),
                    io_problem(&e)
                ))
            })?;
            old = Some(o);
        }
        // Renaming onto an empty directory replaces it; onto a non-empty one (one that appeared
        // meanwhile) fails, and nothing is replaced.
        if let Err(e) = std::fs::rename(&tmp, output) {
            if let Some(o) = &old {
                let _ = std::fs::rename(o, output);
            }
            return Err(match e.raw_os_error() {
                Some(libc::ENOTEMPTY) | Some(libc::EEXIST) => not_empty_error(output),
                _ => ExportError(format!(
                    "{}: cannot write: {}",
                    output.display(),
                    io_problem(&e)
                )),
            });
        }
        if let Some(o) = old {
            remove_export(&o);
        }
        let t = &timeline.processes;
        Ok(Summary {
            processes: t.len(),
            empty_processes: 0,
            calls: t.iter().map(|p| p.calls.len()).sum(),
            ranges: t.iter().map(|p| p.ranges.len()).sum(),
            marks: t.iter().map(|p| p.marks.len()).sum(),
            device_spans: t.iter().map(|p| p.device.len()).sum(),
            flows: t
                .iter()
                .map(|p| p.device.iter().filter(|d| d.call.is_some()).count())
                .sum(),
            dependency_flows,
            overlap_tracks: 0,
            unplaced_device: t.iter().map(|p| p.unplaced_device).sum(),
            bytes,
        })
    })();
    crate::util::drop::drop_later(timeline);
    if result.is_err() {
        remove_export(&tmp);
    }
    result
}

/// The file names a parquet export writes.
fn table_files() -> Vec<String> {
    (TABLES.into_iter())
        .chain(GRAPH_TABLES)
        .map(|name| format!("{name}.parquet"))
        .collect()
}

/// The first entry of `dir` that a parquet export does not write (a sub-directory, a link, any other
/// file), as a quoted name; `None` when it holds only table files.
fn foreign_entry(dir: &Path) -> Option<String> {
    let ours = table_files();
    let entries = match std::fs::read_dir(dir) {
        Ok(d) => d,
        Err(e) => {
            return Some(format!(
                "entries that cannot be listed ({})",
                io_problem(&e)
            ))
        }
    };
    for e in entries {
        let Ok(e) = e else {
            return Some("an entry that cannot be read".into());
        };
        let name = e.file_name().to_string_lossy().into_owned();
        let plain = e.file_type().is_ok_and(|t| t.is_file());
        if !plain || !ours.contains(&name) {
            return Some(format!("\"{}\"", crate::util::escape::escape(&name)));
        }
    }
    None
}

/// Removes an export directory: its table files, then the directory (left in place if anything else
/// appeared in it).
fn remove_export(dir: &Path) {
    for name in table_files() {
        let _ = std::fs::remove_file(dir.join(name));
    }
    let _ = std::fs::remove_dir(dir);
}

fn not_empty_error(output: &Path) -> ExportError {
    ExportError(format!(
        "{}: already exists and is not empty (pass --force to replace it)",
        output.display()
    ))
}

/// A hidden name beside `output`, for the directory being written or the one being replaced.
fn sibling(output: &Path, what: &str) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".into());
    output.with_file_name(format!(".{name}.causeway-{}.{what}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches of uneven sizes (one empty, some crossing a row group's end) of a table with a
    /// dictionary-encoded text column, optional numbers and plain numbers.
    fn batches(sizes: &[usize]) -> Vec<RecordBatch> {
        let mut row = 0u64;
        sizes
            .iter()
            .map(|&n| {
                let rows: Vec<u64> = (row..row + n as u64).collect();
                row += n as u64;
                batch(vec![
                    strs(
                        "name",
                        rows.iter()
                            .map(|r| ["a", "bb", "c"][*r as usize % 3])
                            .collect(),
                    )
                    .unwrap(),
                    opt_u64s(
                        "seq",
                        rows.iter().map(|r| (r % 5 != 0).then_some(*r)).collect(),
                    ),
                    i64s(
                        "ns",
                        rows.iter().map(|r| (*r * 7919 % 1000) as i64).collect(),
                    ),
                ])
            })
            .collect()
    }

    /// The export's own properties: names get a dictionary page and no statistics, the `DISTINCT`
    /// columns (here `seq` and `ns`) no dictionary, delta encoding and their statistics, and every
    /// value reads back unchanged.
    #[test]
    fn distinct_columns_are_delta_encoded_and_text_has_no_statistics() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let dir =
            std::env::temp_dir().join(format!("causeway-parquet-dict-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bs = batches(&[5000, 3000]);
        write_table(
            &dir,
            "t",
            Source::Model,
            properties,
            bs.clone().into_iter().map(Ok),
        )
        .unwrap();
        let path = dir.join("t.parquet");
        let meta = SerializedFileReader::new(std::fs::File::open(&path).unwrap())
            .unwrap()
            .metadata()
            .clone();
        let group = meta.row_group(0);
        let column = |name: &str| {
            (0..group.num_columns())
                .map(|i| group.column(i))
                .find(|c| c.column_path().string() == name)
                .unwrap()
        };
        let dict = |name: &str| column(name).dictionary_page_offset().is_some();
        assert!(dict("name"), "a name column keeps its dictionary");
        assert!(!dict("seq") && !dict("ns"), "distinct columns have none");
        for c in ["seq", "ns"] {
            let e: Vec<Encoding> = column(c).encodings().collect();
            assert!(
                e.contains(&Encoding::DELTA_BINARY_PACKED) && !e.contains(&Encoding::PLAIN),
                "{c}: values delta-encoded, none plain: {e:?}"
            );
        }
        let stats = |name: &str| column(name).statistics().is_some();
        assert!(!stats("name"), "a text column has no min and max");
        assert!(stats("seq") && stats("ns"), "numbers keep theirs");
        let back: Vec<RecordBatch> =
            parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(
                std::fs::File::open(&path).unwrap(),
                10_000,
            )
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(back.len(), 1, "8000 rows read as one batch");
        let mut at = 0;
        for b in &bs {
            assert_eq!(back[0].slice(at, b.num_rows()).columns(), b.columns());
            at += b.num_rows();
        }
        assert_eq!(at, back[0].num_rows());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A process of `n` calls (every third a launch with its kernel), pid `pid`.
    fn process(pid: u32, n: usize) -> ProcessTimeline {
        let calls: Vec<Call> = (0..n as u64)
            .map(|i| Call {
                seq: i,
                tid: 100 + (i % 3) as u32,
                api: crate::read::intern(
                    ["cudaLaunchKernel", "cudaMemcpy", "cuCtxSync"][i as usize % 3],
                ),
                layer: Some(causeway_ring::Layer::Runtime),
                class: Some(Class::Launch),
                begin_ns: 10 * i,
                end_ns: (i % 7 != 0).then_some(10 * i + 5).into(),
                depth: 0,
                result: (i % 11) as i32,
                kernel: None,
                a0: crate::facts::handle::Handle::of(0x5000 + i % 2),
                a1: crate::facts::handle::Handle::ZERO,
                flags: 0,
            })
            .collect();
        let device: Vec<DeviceSpan> = (0..n as u64)
            .step_by(3)
            .map(|i| DeviceSpan {
                graph_node: crate::facts::model::GraphNode::NONE,
                kind: causeway_ring::layout::DeviceKind::Kernel,
                name: crate::read::intern(&format!("k{}", i % 5)),
                begin_ns: 10 * i + 7,
                end_ns: 10 * i + 9,
                bound_ns: 0,
                stream: StreamId::Handle(0x5000 + i % 2).into(),
                call: Some(i).into(),
                bytes: 0,
                queued_ns: None.into(),
                submitted_ns: None.into(),
            })
            .collect();
        ProcessTimeline {
            threads: vec![100, 101, 102],
            calls,
            device,
            backend: "cupti".into(),
            ..ProcessTimeline::empty(pid)
        }
    }

    /// The streamed `edges` table is every process's graph edges in order, absent ends named, in
    /// batches of the size asked that never span two processes, made on pools of one and three
    /// threads. (A global pool of one thread: `tests/one_thread.rs`.)
    #[test]
    fn the_streamed_edges_table_is_every_graphs_edges_in_order() {
        let mut lossy = process(3, 3 * CHUNK);
        // Device work whose calls the capture lost: absent nodes, made as the walk goes.
        for d in lossy.device.iter_mut().step_by(97) {
            d.call = Some(1 << 40).into();
        }
        let t = Timeline {
            processes: vec![process(1, GROUP_ROWS + 5 * CHUNK), process(2, 0), lossy],
        };
        let graphs: Vec<(Vec<Edge>, Vec<String>)> = (t.processes.iter())
            .map(|p| Graph::edges_with(p, None))
            .collect();
        let ends: Vec<ProcEdges> = (t.processes.iter().zip(&graphs))
            .map(|(p, g)| ProcEdges { p, absent: &g.1 })
            .collect();
        let rows: Vec<EdgeRow> = (ends.iter().zip(&graphs))
            .flat_map(|(pe, g)| g.0.iter().map(move |e| (pe, e)))
            .collect();
        assert!(
            rows.len() > 2 * GROUP_ROWS,
            "{} edges: too few runs",
            rows.len()
        );
        let (want, want_drawn) = edges_batch(&rows).unwrap();
        assert!(want.column_by_name("from_absent").unwrap().null_count() < want.num_rows());
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for size in [GROUP_ROWS, CHUNK] {
                let drawn = AtomicUsize::new(0);
                let got: Vec<RecordBatch> = pool.install(|| {
                    std::thread::scope(|s| {
                        let toks = vec![None; t.processes.len()];
                        (streamed_edges(s, &t.processes, toks, size, &drawn, None))
                            .collect::<Result<_, _>>()
                            .unwrap()
                    })
                });
                let pid = |b: &RecordBatch| {
                    let c = b.column_by_name("pid").unwrap();
                    c.as_any().downcast_ref::<UInt32Array>().unwrap().clone()
                };
                for b in &got {
                    assert!(b.num_rows() <= size && b.num_rows() > 0);
                    let p = pid(b);
                    assert!(
                        p.iter().all(|x| x == Some(p.value(0))),
                        "a batch spans processes"
                    );
                }
                let mut at = 0;
                for b in &got {
                    let (w, _) = edges_batch(&rows[at..at + b.num_rows()]).unwrap();
                    assert!(*b == w, "{threads} threads, batches of {size}: rows {at}..");
                    at += b.num_rows();
                }
                assert_eq!(at, rows.len(), "{threads} threads, batches of {size}");
                assert_eq!(drawn.into_inner(), want_drawn);
            }
        }
        // No edges at all: one empty batch, of the table's schema.
        let none = Timeline {
            processes: vec![process(2, 0)],
        };
        let got = edges(&none, &TokenSource::none()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].num_rows(), got[0].schema()), (0, want.schema()));
    }

    /// The Python module's tables, made side by side, are the batches of every row in order, a
    /// row group's worth each: across processes, groups and an empty process.
    #[test]
    fn tables_in_groups_are_every_row_in_order() {
        let t = Timeline {
            processes: vec![
                process(1, GROUP_ROWS + 3 * CHUNK + 17),
                process(2, 0),
                process(3, CHUNK - 1),
            ],
        };
        let got = tables(&t).unwrap();
        let calls: Vec<Row<Call>> = (t.processes.iter())
            .flat_map(|p| p.calls.iter().map(move |c| (p, c)))
            .collect();
        let device: Vec<Row<DeviceSpan>> = (t.processes.iter())
            .flat_map(|p| p.device.iter().map(move |d| (p, d)))
            .collect();
        let names: Vec<&str> = got.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, TABLES);
        assert_eq!(got[1].1.len(), 2);
        let want = |rows: &[Row<Call>]| {
            (rows.chunks(GROUP_ROWS).map(calls_batch)).collect::<Result<Vec<_>, _>>()
        };
        assert_eq!(Ok(got[1].1.clone()), want(&calls));
        let want_dev = (device.chunks(GROUP_ROWS).map(device_batch)).collect::<Result<Vec<_>, _>>();
        assert_eq!(Ok(got[2].1.clone()), want_dev);
        assert_eq!(
            Ok(got[0].1.clone()),
            processes_batch(&t.processes).map(|b| vec![b])
        );
        // An empty table keeps its schema: one batch without rows.
        assert_eq!(got[3].1.len(), 1);
        assert_eq!(got[3].1[0].num_rows(), 0);
    }

    /// Any run of a table's rows, across owners with none, some or many, is the run of the rows
    /// listed owner after owner.
    #[test]
    fn a_run_of_rows_is_found_across_owners() {
        let owners: Vec<Vec<u32>> = vec![
            vec![],
            vec![0, 1, 2],
            vec![],
            vec![],
            vec![3],
            vec![4, 5, 6, 7],
        ];
        let f = Flat::new(&owners, |o| o.as_slice());
        assert_eq!(f.len(), 8);
        for a in 0..=8 {
            for b in a..=8 {
                let got: Vec<u32> = f.rows(a..b).iter().map(|(_, &x)| x).collect();
                assert_eq!(got, (a as u32..b as u32).collect::<Vec<_>>(), "{a}..{b}");
            }
        }
        let none: Vec<Vec<u32>> = vec![vec![], vec![]];
        assert_eq!(Flat::new(&none, |o| o.as_slice()).rows(0..0).len(), 0);
    }

    /// The file each column written on a thread of its own makes is `ArrowWriter`'s, byte for byte:
    /// the same row groups (batches split at their end), pages and metadata; a table without rows
    /// too.
    #[test]
    fn columns_encoded_side_by_side_make_arrow_writers_file() {
        let dir = std::env::temp_dir().join(format!("causeway-parquet-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(1000))
            .set_data_page_row_count_limit(300)
            .build();
        let cases: [&[usize]; 3] = [&[700, 0, 900, 2500, 1, 999, 3000], &[0], &[1000, 1000]];
        // (Either source: only how many groups are encoded at once differs.)
        for (sizes, source) in cases
            .into_iter()
            .flat_map(|c| [(c, Source::Model), (c, Source::Walk)])
        {
            let bs = batches(sizes);
            let ours = write_table(
                &dir,
                "t",
                source,
                |_| props.clone(),
                bs.clone().into_iter().map(Ok),
            )
            .unwrap();
            let got = std::fs::read(dir.join("t.parquet")).unwrap();
            std::fs::remove_file(dir.join("t.parquet")).unwrap();
            let mut want = Vec::new();
            let mut w = parquet::arrow::ArrowWriter::try_new(
                &mut want,
                bs[0].schema(),
                Some(props.clone()),
            )
            .unwrap();
            for b in &bs {
                w.write(b).unwrap();
            }
            w.close().unwrap();
            assert_eq!(ours, got.len() as u64, "{sizes:?}");
            assert!(got == want, "{sizes:?}: the files differ");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A table from the model encodes half the window (at least one group), the walk's `edges`
    /// one group more than the window, on pools of one thread to many, with few columns and many.
    #[test]
    fn the_walks_table_has_more_groups_in_flight_than_the_models() {
        for threads in [1, 2, 16, 64] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                for columns in [1, 6, 16, 21, 200] {
                    let twice = (2 * threads).div_ceil(columns);
                    let model = groups_in_flight(columns, Source::Model);
                    let walk = groups_in_flight(columns, Source::Walk);
                    assert_eq!(model, (twice / 2).max(1), "{threads} threads, {columns}");
                    assert_eq!(walk, twice + 1, "{threads} threads, {columns}");
                    assert!(model >= 1 && walk > model, "{threads} threads, {columns}");
                }
            });
        }
        // At 16 threads the large tables (14 to 21 columns) encode one group at a time, `edges`
        // (16 columns) three.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(16)
            .build()
            .unwrap();
        pool.install(|| {
            assert_eq!(groups_in_flight(14, Source::Model), 1);
            assert_eq!(groups_in_flight(21, Source::Model), 1);
            assert_eq!(groups_in_flight(16, Source::Walk), 3);
        });
    }

    /// A row group whose encoding fails or panics (here arrow-rs's text encoder, given numbers,
    /// panics) makes the table's error, once every group in flight has answered: no hang, no panic.
    #[test]
    fn a_row_group_that_cannot_be_encoded_is_the_tables_error() {
        let dir = std::env::temp_dir().join(format!("causeway-parquet-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(10))
            .build();
        let good = || batch(vec![strs("n", vec!["x"; 10]).unwrap()]);
        let bad = batch(vec![u32s("n", (0..10).collect())]);
        let bs = vec![good(), good(), bad, good(), good()];
        let e = write_table(
            &dir,
            "t",
            Source::Model,
            |_| props.clone(),
            bs.into_iter().map(Ok),
        )
        .expect_err("numbers where a text column is declared");
        assert!(e.0.contains("t.parquet: cannot write"), "{}", e.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A batch keeps `CHUNK` rows and a row group `GROUP_ROWS` for the names a shim writes, and
    /// fewer for a hostile ring's, each batch's texts then near 16 MiB at most (a row of four texts
    /// of the longest) and a group's 16 batches, never no row.
    #[test]
    fn batches_are_cut_by_the_longest_text() {
        for longest in [0, 1 << 10, 4 << 10] {
            assert_eq!(
                (chunk_rows(longest), group_rows(longest)),
                (CHUNK, GROUP_ROWS)
            );
        }
        for longest in [(4 << 10) + 1, 300_000, 16 << 20, u32::MAX as usize] {
            let rows = chunk_rows(longest);
            assert!((1..CHUNK).contains(&rows), "{longest}: {rows}");
            assert!(
                rows == 1 || rows * 4 * longest <= 16 << 20,
                "{longest}: {rows}"
            );
            assert_eq!(group_rows(longest), 16 * rows);
        }
    }

    /// Texts past what a batch's column holds (here a limit of 1 000 bytes standing for Arrow's 2 GiB)
    /// make more, smaller batches of the same rows, in order, through the table's writer; one
    /// row's text alone past it is the table's error, naming the file: no panic, no hang.
    #[test]
    fn huge_texts_make_smaller_batches_and_one_too_long_is_the_tables_error() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::record::Field as Value;
        const MAX: usize = 1000;
        let small = texts_within(["x"; 10].iter().map(|s| Some(*s)), 10).unwrap();
        assert_eq!(arrow_array::Array::len(&small), 10);
        assert_eq!(
            texts_within(["x"; 11].iter().map(|s| Some(*s)), 10),
            Err(TooLong)
        );
        let make = |rows: &[String]| -> Result<RecordBatch, TooLong> {
            let texts = texts_within(rows.iter().map(|s| Some(s.as_str())), MAX)?;
            Ok(batch(vec![Col(
                Field::new("name", DataType::Utf8, false),
                Arc::new(texts),
            )]))
        };
        let rows: Vec<String> = (0..20_000)
            .map(|i: usize| format!("{i}:{}", "n".repeat(i % 97)))
            .collect();
        let dir =
            std::env::temp_dir().join(format!("causeway-parquet-huge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let made = batches_of(&rows[..CHUNK], &make).unwrap();
        assert!(made.len() > CHUNK * 40 / MAX, "{} batches", made.len());
        let all = par_batches(rows.len(), |r| batches_of(&rows[r], &make));
        write_table(&dir, "t", Source::Model, properties, all).unwrap();
        let file = std::fs::File::open(dir.join("t.parquet")).unwrap();
        let got: Vec<String> = (SerializedFileReader::new(file).unwrap().get_row_iter(None))
            .unwrap()
            .map(
                |row| match row.unwrap().get_column_iter().next().unwrap().1 {
                    Value::Str(s) => s.clone(),
                    other => panic!("{other:?}"),
                },
            )
            .collect();
        assert!(got == rows, "the rows read back are the rows written");
        // One row's text alone past the limit.
        let mut rows = rows;
        rows[CHUNK + 5] = "y".repeat(MAX + 1);
        let all = par_batches(rows.len(), |r| batches_of(&rows[r], &make));
        let e = write_table(&dir, "t2", Source::Model, properties, all)
            .expect_err("a text over the limit");
        assert!(
            e.0.contains("t2.parquet: cannot write: a name in the capture is longer than"),
            "{}",
            e.0
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Items are appended in their order whatever order they finish in, a panicking item answers
    /// `failed()` (no hang), and `append`'s error stops the run; on one thread as on several.
    #[test]
    fn in_order_appends_in_order_and_a_panic_is_an_items_failure() {
        for threads in [1, 4] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let mut items = 0..40u64;
                let mut got = Vec::new();
                let r: Result<(), String> = in_order(
                    3,
                    || items.next(),
                    |k, i| {
                        assert_eq!(k as u64, i);
                        // Later items often finish first.
                        std::thread::sleep(std::time::Duration::from_micros(50 * (i % 4)));
                        if i == 17 {
                            panic!("item 17");
                        }
                        Some(i * 10)
                    },
                    || None,
                    |r| {
                        got.push(r);
                        match r {
                            Some(_) => Ok(()),
                            None => Err(format!("failed after {}", got.len())),
                        }
                    },
                );
                assert_eq!(r, Err("failed after 18".to_string()), "{threads} threads");
                let want: Vec<_> = (0..17).map(|i| Some(i * 10)).chain([None]).collect();
                assert_eq!(got, want, "{threads} threads");
                // No item beyond those in flight was made after the failure.
                assert!(
                    items.next().is_some_and(|i| i <= 17 + 3 + 1),
                    "{threads} threads"
                );
            });
        }
    }
}
