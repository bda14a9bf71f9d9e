//! `causeway export --format parquet` end to end on a synthetic two-process capture written with the
//! real ring writer: every table decoded back with the parquet crate's arrow reader, row counts equal to
//! the timeline model's (and the steps view's), values checked, and the directory contract (created,
//! an empty one taken, a non-empty one refused without --force and replaced with it).

#[path = "../../scanner/tests/common/mod.rs"]
mod common;

use arrow_array::{Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::DataType;
use causeway_ring::layout::{Backend, Class, ClockKind, Kind, Layer, Policy};
use causeway_scanner::analysis::steps::{process_steps, StepOptions};
use causeway_scanner::facts::model::Timeline;
use causeway_scanner::Capture;
use common::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::{Path, PathBuf};

const LAUNCH: u16 = 1;
const MEMCPY: u16 = 3;
const SYNC: u16 = 7;
const H_K: u64 = 0xa00;
const T_K: u64 = 100;
const T_STEP: u64 = 10;
const T_DOM: u64 = 11;
const T_IO: u64 = 12;
const T_MARK: u64 = 13;
const S1: u64 = 0x5000;

/// pid 1000 (level 3, CUPTI), thread 1: two "step" ranges [1000, 2200] and [3000, 3700], each with a
/// launch of "gemm" on S1 (kernels [1300, 1800] and [3300, 3500]) and a sync; the first also with a copy
/// of 4096 bytes ([1900, 2000] on the device); a range "io" in domain "dom" [4000, 4100], a mark at
/// 3800, a sync from 4500 that never returns, and a kernel tied to no call [5000, 5100].
/// pid 2000 (level 2, child of 1000): one launch and a range "io" never closed.
fn write_capture(dir: &Path) {
    let b = RingBuilder::level3(64, Policy::Drop);
    b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .api(MEMCPY, "cudaMemcpyAsync", Layer::Runtime, Class::Copy)
        .api(SYNC, "cudaStreamSynchronize", Layer::Runtime, Class::Sync)
        .kernel(H_K, "gemm")
        .text(T_K, "gemm")
        .text(T_STEP, "step")
        .text(T_DOM, "dom")
        .text(T_IO, "io")
        .text(T_MARK, "mark");
    b.w.set_backend(Backend::Cupti);
    b.instant(Kind::RangePush, TID, 1000, T_STEP, 0, 0);
    let k1 = b
        .call_args(TID, LAUNCH, 0, 1100, 1200, 0, [S1, H_K, 1])
        .unwrap();
    let cp = b
        .call_args(TID, MEMCPY, 0, 1250, 1280, 0, [S1, 0, 4096])
        .unwrap();
    b.call_args(TID, SYNC, 0, 1300, 2100, 0, [S1, 0, 0])
        .unwrap();
    b.instant(Kind::RangePop, TID, 2200, 0, 0, 0);
    b.instant(Kind::RangePush, TID, 3000, T_STEP, 0, 0);
    let k2 = b
        .call_args(TID, LAUNCH, 0, 3100, 3200, 0, [S1, H_K, 1])
        .unwrap();
    b.call_args(TID, SYNC, 0, 3250, 3600, 0, [S1, 0, 0])
        .unwrap();
    b.instant(Kind::RangePop, TID, 3700, 0, 0, 0);
    b.instant(Kind::Mark, TID, 3800, T_MARK, 0, 0);
    b.instant(Kind::RangePush, TID, 4000, T_IO, T_DOM, 0);
    b.instant(Kind::RangePop, TID, 4100, 0, T_DOM, 0);
    b.open_args(TID, SYNC, 0, 4500, [S1, 0, 0]).unwrap();
    b.kernel_interval(k1, T_K, 1300, 1800).unwrap();
    b.copy_interval(cp, 1, 4096, 1900, 2000).unwrap();
    b.kernel_interval(k2, T_K, 3300, 3500).unwrap();
    b.device(Dev {
        stream: 9,
        ..Dev::kernel(0, T_K, 5000, 5100).no_call()
    })
    .unwrap();
    b.write_to(&dir.join("a.cwring"));

    let c = RingBuilder::with(64, Policy::Drop, 2000, 1000);
    c.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
        .kernel(H_K, "gemm")
        .text(T_IO, "io");
    c.call_args(TID, LAUNCH, 0, 100, 200, 0, [0, H_K, 1])
        .unwrap();
    c.instant(Kind::RangePush, TID, 300, T_IO, 0, 0);
    c.write_to(&dir.join("b.cwring"));
}

fn setup(tag: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(tag);
    let cap = dir.join("cap");
    std::fs::create_dir(&cap).unwrap();
    write_capture(&cap);
    (dir, cap)
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    let o = causeway().arg("export").args(args).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into())
}

fn export(cap: &Path, out: &Path, force: bool) -> (Option<i32>, String) {
    let mut a = vec!["--format", "parquet", "-o", out.to_str().unwrap()];
    if force {
        a.push("--force");
    }
    a.push(cap.to_str().unwrap());
    run(&a)
}

/// One table, decoded: its batches (possibly none) and its schema's (name, type, nullable).
struct Table {
    batches: Vec<RecordBatch>,
    fields: Vec<(String, DataType, bool)>,
}

impl Table {
    fn read(path: &Path) -> Table {
        let f = std::fs::File::open(path).unwrap();
        let b = ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
        let fields = b
            .schema()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
            .collect();
        let batches = b.build().unwrap().map(Result::unwrap).collect();
        Table { batches, fields }
    }
    fn rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
    fn col<A: Array + 'static, T>(
        &self,
        name: &str,
        get: impl Fn(&A, usize) -> T,
    ) -> Vec<Option<T>> {
        let mut out = Vec::new();
        for b in &self.batches {
            let c = b
                .column_by_name(name)
                .unwrap_or_else(|| panic!("no column {name}"));
            let a = c.as_any().downcast_ref::<A>().unwrap();
            out.extend((0..a.len()).map(|i| a.is_valid(i).then(|| get(a, i))));
        }
        out
    }
    fn u64s(&self, name: &str) -> Vec<Option<u64>> {
        self.col::<UInt64Array, _>(name, |a, i| a.value(i))
    }
    fn u32s(&self, name: &str) -> Vec<Option<u32>> {
        self.col::<UInt32Array, _>(name, |a, i| a.value(i))
    }
    fn i64s(&self, name: &str) -> Vec<Option<i64>> {
        self.col::<Int64Array, _>(name, |a, i| a.value(i))
    }
    fn strs(&self, name: &str) -> Vec<Option<String>> {
        self.col::<StringArray, _>(name, |a, i| a.value(i).to_string())
    }
}

#[test]
fn every_table_decodes_with_the_model_s_rows_and_values() {
    let (dir, cap) = setup("pq-rows");
    let out = dir.join("pq");
    let (code, err) = export(&cap, &out, false);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("2 process(es), 7 calls"), "{err}");

    let opened = Capture::open(&cap).unwrap();
    let rings = opened.rings().unwrap();
    let t = Timeline::build(&rings);
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "calls.parquet",
            "device_intervals.parquet",
            "edges.parquet",
            "marks.parquet",
            "processes.parquet",
            "ranges.parquet",
            "steps.parquet"
        ]
    );
    let table = |n: &str| Table::read(&out.join(format!("{n}.parquet")));
    let sum = |f: fn(&causeway_scanner::facts::model::ProcessTimeline) -> usize| -> usize {
        t.processes.iter().map(f).sum()
    };

    let p = table("processes");
    assert_eq!(p.rows(), 2);
    // Every table's first column is the ring's key, unique where pids need not be.
    let mut rings: Vec<_> = p.strs("ring").into_iter().flatten().collect();
    rings.sort();
    rings.dedup();
    assert_eq!(rings.len(), 2);
    let mut pids: Vec<_> = p.u32s("pid").into_iter().flatten().collect();
    pids.sort();
    assert_eq!(pids, [1000, 2000]);
    assert!(p
        .strs("exe")
        .iter()
        .all(|e| e.as_deref() == Some("/usr/bin/app")));

    let c = table("calls");
    assert_eq!(c.rows(), sum(|p| p.calls.len()));
    assert_eq!(c.rows(), 7);
    assert_eq!(
        c.fields
            .iter()
            .map(|f| (f.0.as_str(), f.2))
            .collect::<Vec<_>>(),
        [
            ("ring", false),
            ("pid", false),
            ("seq", false),
            ("tid", false),
            ("api", false),
            ("layer", false),
            ("class", true),
            ("begin_ns", false),
            ("end_ns", true),
            ("depth", false),
            ("result", false),
            ("stream", true),
            ("kernel", true),
            ("kernel_symbol", true)
        ]
    );
    assert!(c
        .fields
        .iter()
        .filter(|f| f.0.ends_with("_ns"))
        .all(|f| f.1 == DataType::Int64));
    let apis = c.strs("api");
    assert_eq!(
        apis.iter()
            .filter(|a| a.as_deref() == Some("cudaLaunchKernel"))
            .count(),
        3
    );
    assert_eq!(c.i64s("end_ns").iter().filter(|e| e.is_none()).count(), 1);
    let kernels = c.strs("kernel");
    assert_eq!(kernels.iter().flatten().filter(|k| *k == "gemm").count(), 3);
    let begins = c.i64s("begin_ns");
    let first = begins.iter().position(|b| *b == Some(1100)).unwrap();
    assert_eq!(c.i64s("end_ns")[first], Some(1200));
    assert_eq!(c.u64s("stream")[first], Some(S1));
    assert_eq!(c.strs("class")[first].as_deref(), Some("launch"));
    assert_eq!(c.strs("layer")[first].as_deref(), Some("runtime"));

    let d = table("device_intervals");
    assert_eq!(d.rows(), sum(|p| p.device.len()));
    assert_eq!(d.rows(), 4);
    assert_eq!(d.u64s("call_seq").iter().filter(|c| c.is_none()).count(), 1);
    assert_eq!(d.u64s("bytes").iter().flatten().sum::<u64>(), 4096);
    let streams = d.strs("stream");
    assert_eq!(streams[0].as_deref(), Some("stream 0x5000"));
    assert_eq!(streams[3].as_deref(), Some("device stream 9"));
    assert_eq!(d.u64s("stream_handle")[3], None);
    assert_eq!(d.i64s("begin_ns")[0], Some(1300));
    assert_eq!(d.strs("kind")[1].as_deref(), Some("memcpy"));
    assert_eq!(d.strs("name")[1].as_deref(), Some("HtoD"));
    // Each tied interval's call_seq names a call of the same process.
    let seqs = c.u64s("seq");
    for s in d.u64s("call_seq").into_iter().flatten() {
        assert!(seqs.contains(&Some(s)));
    }

    let r = table("ranges");
    assert_eq!(r.rows(), sum(|p| p.ranges.len()));
    assert_eq!(r.rows(), 4);
    assert_eq!(r.i64s("end_ns").iter().filter(|e| e.is_none()).count(), 1);
    assert_eq!(
        r.strs("domain").iter().flatten().collect::<Vec<_>>(),
        ["dom"]
    );

    let m = table("marks");
    assert_eq!(m.rows(), sum(|p| p.marks.len()));
    assert_eq!(m.i64s("ns"), [Some(3800)]);

    let s = table("steps");
    let want: usize = t
        .processes
        .iter()
        .map(|p| process_steps(p, &StepOptions::default()).steps.len())
        .sum();
    assert_eq!(s.rows(), want);
    assert_eq!(s.rows(), 2);
    assert_eq!(s.i64s("wall_ns"), [Some(1200), Some(700)]);
    assert_eq!(s.strs("range")[0].as_deref(), Some("step"));
    // Step 1: launch 100 + copy 30; sync 800; device busy = kernel 500 + copy 100.
    assert_eq!(s.i64s("launch_ns")[0], Some(130));
    assert_eq!(s.i64s("sync_ns")[0], Some(800));
    assert_eq!(s.i64s("device_busy_ns")[0], Some(600));
    assert_eq!(s.i64s("device_idle_ns")[0], Some(600));
    assert_eq!(s.i64s("device_compute_ns")[1], Some(200));
}

#[test]
fn a_capture_without_steps_gives_empty_tables_with_their_schema() {
    let dir = TempDir::new("pq-empty");
    let cap = dir.join("cap");
    std::fs::create_dir(&cap).unwrap();
    let b = RingBuilder::new(64, Policy::Drop);
    b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch);
    b.call(TID, LAUNCH, 0, 100, 200, 0, 0).unwrap();
    b.write_to(&cap.join("a.cwring"));
    let out = dir.join("pq");
    let (code, err) = export(&cap, &out, false);
    assert_eq!(code, Some(0), "{err}");
    let s = Table::read(&out.join("steps.parquet"));
    assert_eq!(s.rows(), 0);
    assert!(s.fields.iter().any(|f| f.0 == "device_busy_ns" && f.2));
    assert_eq!(Table::read(&out.join("device_intervals.parquet")).rows(), 0);
    assert_eq!(Table::read(&out.join("calls.parquet")).rows(), 1);
}

#[test]
fn the_directory_is_created_taken_when_empty_and_replaced_only_with_force() {
    let (dir, cap) = setup("pq-dir");
    // An empty directory is taken.
    let out = dir.join("empty");
    std::fs::create_dir(&out).unwrap();
    let (code, err) = export(&cap, &out, false);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.join("calls.parquet").exists());

    // A non-empty one is refused without --force, untouched.
    let out = dir.join("full");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "x").unwrap();
    let (code, err) = export(&cap, &out, false);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("not empty") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(out.join("keep.txt").exists());
    assert!(!out.join("calls.parquet").exists());

    // Not even with --force: it holds a file no export wrote (issue 20: --force replaced any tree).
    let (code, err) = export(&cap, &out, true);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("\"keep.txt\", which no parquet export wrote"),
        "{err}"
    );
    assert!(out.join("keep.txt").exists());
    let sub = dir.join("tree");
    std::fs::create_dir_all(sub.join("deeper")).unwrap();
    std::fs::write(sub.join("deeper/precious"), "x").unwrap();
    let (code, err) = export(&cap, &sub, true);
    assert_eq!(code, Some(2), "{err}");
    assert!(sub.join("deeper/precious").exists());

    // An earlier export is replaced with --force: its tables, written anew.
    let out = dir.join("again");
    let (code, err) = export(&cap, &out, false);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = export(&cap, &out, true);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(Table::read(&out.join("calls.parquet")).rows(), 7);

    // A file in the way is an error, even with --force; nothing is left beside it.
    let f = dir.join("file");
    std::fs::write(&f, "x").unwrap();
    let (code, err) = export(&cap, &f, true);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a directory"), "{err}");
    // Replacing the capture's own directory is refused.
    let (code, err) = export(&cap, &cap, true);
    assert_eq!(code, Some(2));
    assert!(err.contains("rings of the capture"), "{err}");
    assert!(cap.join("a.cwring").exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A capture whose tables span several of the export's record batches (8 192 rows each), with a
/// process boundary inside one: every table read back equals the model's table built as one batch
/// (`tables`, `edges`, as the Python module gets them) column for column, row for row.
#[test]
fn tables_written_in_batches_equal_the_model_s_tables_built_whole() {
    use causeway_scanner::export::parquet::{edges, tables, GRAPH_TABLES};
    use causeway_scanner::export::TokenSource;
    let dir = TempDir::new("parquet-batches");
    let cap = dir.join("cap");
    std::fs::create_dir(&cap).unwrap();
    // Two processes of 9 000 and 10 000 launches, each with its kernel; a sync every 100 launches.
    for (k, (pid, n)) in [(1000u32, 9000u64), (2000, 10000)].into_iter().enumerate() {
        let b = RingBuilder::custom(
            1 << 16,
            Policy::Drop,
            pid,
            1,
            3,
            ClockKind::Monotonic,
            1_000_000_000,
        );
        b.api(LAUNCH, "cudaLaunchKernel", Layer::Runtime, Class::Launch)
            .api(SYNC, "cudaStreamSynchronize", Layer::Runtime, Class::Sync)
            .kernel(H_K, "gemm")
            .text(T_K, "gemm");
        b.w.set_backend(Backend::Cupti);
        let mut t = 1000;
        let mut launches = Vec::new();
        for i in 0..n {
            let s = b
                .call_args(TID, LAUNCH, 0, t, t + 5, 0, [S1, H_K, 1])
                .unwrap();
            launches.push((s, t + 10));
            t += 20;
            if i % 100 == 99 {
                b.call_args(TID, SYNC, 0, t, t + 500, 0, [S1, 0, 0])
                    .unwrap();
                t += 600;
            }
        }
        for (s, at) in launches {
            b.kernel_interval(s, T_K, at, at + 8).unwrap();
        }
        b.write_to(&cap.join(format!("p{k}.cwring")));
    }
    let out = dir.join("out");
    let (code, err) = export(&cap, &out, false);
    assert_eq!(code, Some(0), "{err}");

    let c = Capture::open(&cap).unwrap();
    let rings = c.rings().unwrap();
    let t = Timeline::build(&rings);
    let tokens = TokenSource::of(&rings);
    let mut parts = tables(&t).unwrap();
    parts.push((GRAPH_TABLES[0], edges(&t, &tokens).unwrap()));
    let want: Vec<(&str, RecordBatch)> = (parts.into_iter())
        .map(|(name, bs)| {
            let whole = arrow_select::concat::concat_batches(&bs[0].schema(), &bs).unwrap();
            (name, whole)
        })
        .collect();
    assert!(
        want[1].1.num_rows() > 2 * 8192,
        "calls: {}",
        want[1].1.num_rows()
    );
    for (name, whole) in want {
        let got = Table::read(&out.join(format!("{name}.parquet")));
        assert_eq!(got.rows(), whole.num_rows(), "{name}");
        for (i, field) in whole.schema().fields().iter().enumerate() {
            let mut at = 0;
            for b in &got.batches {
                let part = whole.column(i).slice(at, b.num_rows());
                let read = b.column_by_name(field.name()).unwrap();
                assert_eq!(&part, read, "{name}.{} rows {at}..", field.name());
                at += b.num_rows();
            }
        }
    }
}
