//! `causeway._native`: the causeway scanner as a Python extension module (pyo3, stable ABI 3.8+).
//!
//! The Python package `causeway` (`pyscan/python/causeway`) wraps this module; users never import it
//! directly. It uses the scanner's public API only: `Capture` opens and validates the rings,
//! `model::Timeline` builds the timeline model, `export::parquet::tables` turns it (and the steps
//! view) into Arrow record batches — the same tables, columns and types as `causeway export --format
//! parquet` (`docs/parquet.md`) — and `Report` is `causeway report --json`.
//!
//! All of that work runs with the GIL released (`Python::detach`), on rayon's pool as in the CLI.
//! Only turning finished results into Python objects holds the GIL. Scanner errors become
//! `causeway.CaptureError` (defined in Python, `causeway/_errors.py`, so both engines raise one and
//! the same class) carrying the scanner's own message.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use causeway_ring::layout::counter;
use causeway_ring::{Policy, StrKind};
use causeway_scanner::export::parquet;
use causeway_scanner::facts::model::Timeline;
use causeway_scanner::{Capture, CaptureError, Report};
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList, PyString};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Large tables on huge pages, as in the `causeway` binary (`hugealloc`): the extension's own
/// allocations only (Python's are its own allocator's). Faulting a 10 M-entry capture's tables in
/// 4 KiB pages was most of what opening it cost.
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOC: causeway_scanner::util::hugealloc::HugeAlloc =
    causeway_scanner::util::hugealloc::HugeAlloc;

/// What one ring's header, string area and timeline say about its process, besides the tables.
struct ProcInfo {
    /// The ring's key (its file name without `.cwring`): unique where a pid is not.
    ring: String,
    path: String,
    pid: u32,
    ppid: u32,
    exe: String,
    host: String,
    level: u32,
    policy: &'static str,
    clock: &'static str,
    backend: String,
    flags: u32,
    capacity: u64,
    head: u64,
    dropped: u64,
    overwritten: u64,
    strings_dropped: u32,
    strings_torn: bool,
    notice: Option<String>,
    sample_every: u32,
    counters: Vec<(&'static str, u64)>,
    unplaced_device: u64,
    threads: Vec<u32>,
    /// (kind, key, aux, text) of every string record, in area order.
    strings: Vec<(&'static str, u64, u32, String)>,
}

/// An opened capture: its mapped rings (kept for `report`), what `ProcInfo` holds per process, and
/// the tables.
#[pyclass(frozen, module = "causeway._native")]
struct NativeCapture {
    capture: Capture,
    procs: Vec<ProcInfo>,
    /// Each table as batches of one schema (`parquet::tables`).
    tables: Vec<(&'static str, Vec<RecordBatch>)>,
}

fn str_kind(k: StrKind) -> &'static str {
    match k {
        StrKind::Api => "api",
        StrKind::Kernel => "kernel",
        StrKind::Text => "text",
        StrKind::Thread => "thread",
    }
}

/// Opens, validates and models the capture at `path`: everything `open` does without the GIL.
fn build(path: &Path) -> Result<NativeCapture, CaptureError> {
    let capture = Capture::open(path)?;
    let rings = capture.rings()?;
    let timeline = Timeline::build(&rings);
    let procs = rings
        .iter()
        .zip(&timeline.processes)
        .map(|(r, p)| {
            let h = &r.view.header;
            let (first, _) = r.view.window();
            ProcInfo {
                path: r.path.display().to_string(),
                ring: p.ring.clone(),
                pid: h.pid,
                ppid: h.ppid,
                exe: h.exe.clone(),
                host: h.host.clone(),
                level: h.level,
                policy: h.policy.name(),
                clock: match h.clock {
                    causeway_ring::ClockKind::Monotonic => "monotonic",
                    causeway_ring::ClockKind::Tsc => "tsc",
                },
                backend: p.backend.clone(),
                flags: h.flags,
                capacity: h.capacity,
                head: h.head,
                dropped: h.dropped,
                overwritten: match h.policy {
                    Policy::Overwrite => first,
                    Policy::Drop => 0,
                },
                strings_dropped: h.strings_dropped,
                strings_torn: r.view.strings_torn,
                notice: h.notice.clone(),
                sample_every: h.sample_every,
                counters: counter::NAMES
                    .iter()
                    .zip(h.counters)
                    .map(|(n, v)| (*n, v))
                    .collect(),
                unplaced_device: p.unplaced_device,
                threads: p.threads.clone(),
                strings: r
                    .view
                    .strings
                    .iter()
                    .map(|s| (str_kind(s.kind), s.key, s.aux, s.text.clone()))
                    .collect(),
            }
        })
        .collect();
    let tables = parquet::tables(&timeline).map_err(|e| CaptureError::new(path, e.to_string()))?;
    drop(rings);
    Ok(NativeCapture {
        capture,
        procs,
        tables,
    })
}

/// `causeway.CaptureError(message, path, problem)`, the class the pure-Python engine raises too.
fn capture_error(py: Python<'_>, e: &CaptureError) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let class = py.import("causeway._errors")?.getattr("CaptureError")?;
        let value = class.call1((
            e.to_string(),
            e.path.display().to_string(),
            e.problem.clone(),
        ))?;
        Ok(PyErr::from_value(value))
    })();
    made.unwrap_or_else(|err| err)
}

/// Opens the capture at `path` (a directory of rings or one ring file).
#[pyfunction]
fn open(py: Python<'_>, path: PathBuf) -> PyResult<NativeCapture> {
    py.detach(|| build(&path))
        .map_err(|e| capture_error(py, &e))
}

/// The Arrow type names the Python side maps to pyarrow types (`causeway/_tables.py`).
fn type_name(t: &DataType) -> &'static str {
    match t {
        DataType::UInt16 => "uint16",
        DataType::UInt32 => "uint32",
        DataType::UInt64 => "uint64",
        DataType::Int32 => "int32",
        DataType::Int64 => "int64",
        DataType::Utf8 => "string",
        _ => "unsupported",
    }
}

/// One column as a Python list (`None` for nulls). Repeated strings (API names, stream labels) share
/// one Python object.
fn column<'py>(py: Python<'py>, a: &dyn Array) -> PyResult<Bound<'py, PyList>> {
    fn ints<'py, T>(
        py: Python<'py>,
        a: &arrow_array::PrimitiveArray<T>,
    ) -> PyResult<Bound<'py, PyList>>
    where
        T: arrow_array::ArrowPrimitiveType,
        T::Native: for<'a> IntoPyObject<'a>,
    {
        PyList::new(py, a.iter())
    }
    match a.data_type() {
        DataType::UInt16 => ints(py, a.as_primitive::<UInt16Type>()),
        DataType::UInt32 => ints(py, a.as_primitive::<UInt32Type>()),
        DataType::UInt64 => ints(py, a.as_primitive::<UInt64Type>()),
        DataType::Int32 => ints(py, a.as_primitive::<Int32Type>()),
        DataType::Int64 => ints(py, a.as_primitive::<Int64Type>()),
        DataType::Utf8 => {
            let mut seen: HashMap<&str, Bound<'py, PyString>> = HashMap::new();
            let items: Vec<Option<Bound<'py, PyString>>> = a
                .as_string::<i32>()
                .iter()
                .map(|v| {
                    v.map(|s| {
                        seen.entry(s)
                            .or_insert_with(|| PyString::new(py, s))
                            .clone()
                    })
                })
                .collect();
            PyList::new(py, items)
        }
        t => Err(PyRuntimeError::new_err(format!(
            "column type {t} has no Python conversion"
        ))),
    }
}

#[pymethods]
impl NativeCapture {
    /// The path the capture was opened with.
    #[getter]
    fn path(&self) -> String {
        self.capture.path.display().to_string()
    }

    /// One dict per process (ring), in ring-file order.
    fn processes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for p in &self.procs {
            let d = PyDict::new(py);
            d.set_item("path", &p.path)?;
            d.set_item("pid", p.pid)?;
            d.set_item("ppid", p.ppid)?;
            d.set_item("exe", &p.exe)?;
            d.set_item("host", &p.host)?;
            d.set_item("level", p.level)?;
            d.set_item("policy", p.policy)?;
            d.set_item("clock", p.clock)?;
            d.set_item("ring", &p.ring)?;
            d.set_item("backend", &p.backend)?;
            d.set_item("flags", p.flags)?;
            d.set_item("capacity", p.capacity)?;
            d.set_item("head", p.head)?;
            d.set_item("dropped", p.dropped)?;
            d.set_item("overwritten", p.overwritten)?;
            d.set_item("strings_dropped", p.strings_dropped)?;
            d.set_item("strings_torn", p.strings_torn)?;
            d.set_item("notice", &p.notice)?;
            d.set_item("sample_every", p.sample_every)?;
            let c = PyDict::new(py);
            for (name, v) in &p.counters {
                c.set_item(*name, *v)?;
            }
            d.set_item("counters", c)?;
            d.set_item("unplaced_device", p.unplaced_device)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// (path, problem) of each ring of a capture directory left out because it cannot be read
    /// (`Capture::open`): what `CaptureError` would have said of it.
    fn skipped(&self) -> Vec<(String, String)> {
        (self.capture.skipped().iter())
            .map(|e| (e.path.display().to_string(), e.problem.clone()))
            .collect()
    }

    /// (pid, tid) of every thread that made calls or pushed NVTX ranges, per process sorted by tid.
    fn threads(&self) -> Vec<(u32, u32)> {
        self.procs
            .iter()
            .flat_map(|p| p.threads.iter().map(move |&t| (p.pid, t)))
            .collect()
    }

    /// (pid, kind, key, aux, text) of every string record, per process in area order.
    fn strings(&self) -> Vec<(u32, &'static str, u64, u32, String)> {
        self.procs
            .iter()
            .flat_map(|p| {
                p.strings
                    .iter()
                    .map(move |s| (p.pid, s.0, s.1, s.2, s.3.clone()))
            })
            .collect()
    }

    /// The table names, in `export --format parquet` order.
    fn table_names(&self) -> Vec<&'static str> {
        self.tables.iter().map(|t| t.0).collect()
    }

    /// (column, type, nullable) of table `name`.
    fn schema(&self, name: &str) -> PyResult<Vec<(String, &'static str, bool)>> {
        let b = self.table(name)?;
        Ok(b[0]
            .schema()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), type_name(f.data_type()), f.is_nullable()))
            .collect())
    }

    /// Rows of table `name`.
    fn num_rows(&self, name: &str) -> PyResult<usize> {
        Ok(self.table(name)?.iter().map(RecordBatch::num_rows).sum())
    }

    /// Table `name` as one list per column, in schema order.
    fn columns<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Vec<Bound<'py, PyList>>> {
        let bs = self.table(name)?;
        (0..bs[0].num_columns())
            .map(|c| {
                let parts: Vec<&dyn Array> = bs.iter().map(|b| b.column(c).as_ref()).collect();
                let whole = arrow_select::concat::concat(&parts)
                    .map_err(|e| PyRuntimeError::new_err(format!("{name}: {e}")))?;
                column(py, whole.as_ref())
            })
            .collect()
    }

    /// Table `name` as an Arrow IPC stream (for `pyarrow.ipc.open_stream`), written without the GIL:
    /// for a pyarrow that cannot take `arrow_stream`'s capsule.
    fn ipc<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
        ipc_bytes(py, name, self.table(name)?)
    }

    /// Table `name` as an Arrow C stream in a PyCapsule named `arrow_array_stream` (the Arrow
    /// PyCapsule interface: `pyarrow.RecordBatchReader.from_stream` reads it): the batches are
    /// handed over as they are, without a copy. A capsule never read releases its stream when freed.
    fn arrow_stream<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyCapsule>> {
        stream_capsule(py, self.table(name)?.clone())
    }

    /// The causal graph's edges as an Arrow IPC stream: for a pyarrow that cannot take
    /// `edges_stream`'s capsule.
    fn edges_ipc<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bs = self.edge_batches(py)?;
        ipc_bytes(py, "edges", &bs)
    }

    /// The causal graph's edges as an Arrow C stream in a PyCapsule (as `arrow_stream`).
    fn edges_stream<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let bs = self.edge_batches(py)?;
        stream_capsule(py, bs)
    }

    /// `causeway why --json` for one target (`step`: an index or "slowest", with `range`; `kernel`:
    /// NAME or NAME#K; `call`: "PID:SEQ"), as JSON text.
    #[pyo3(signature = (step=None, range=None, kernel=None, call=None))]
    fn why_json(
        &self,
        py: Python<'_>,
        step: Option<String>,
        range: Option<String>,
        kernel: Option<String>,
        call: Option<String>,
    ) -> PyResult<String> {
        use causeway_scanner::analysis::causal::why::{from_path, Target};
        let target = match (step, kernel, call) {
            (Some(s), None, None) => Ok(Target::Step {
                index: if s == "slowest" {
                    None
                } else {
                    Some(s.parse().map_err(|_| {
                        PyValueError::new_err(format!("step={s:?}: an index or \"slowest\""))
                    })?)
                },
                range,
            }),
            (None, Some(k), None) => Target::kernel(&k),
            (None, None, Some(c)) => Target::call(&c),
            _ => Err("say what to explain: exactly one of step=, kernel= or call=".into()),
        }
        .map_err(PyValueError::new_err)?;
        let result = py.detach(|| from_path(&self.capture.path, &target));
        let w = result.map_err(|e| capture_error(py, &e))?;
        serde_json::to_string(&w).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// `causeway report --json` of this capture, as JSON text.
    fn report_json(&self, py: Python<'_>) -> PyResult<String> {
        let result = py.detach(|| -> Result<String, CaptureError> {
            let rings = self.capture.rings()?;
            let mut r = Report::build(&self.capture.path.display().to_string(), &rings);
            r.warnings.splice(0..0, self.capture.skipped_warnings());
            serde_json::to_string(&r)
                .map_err(|e| CaptureError::new(&self.capture.path, e.to_string()))
        });
        result.map_err(|e| capture_error(py, &e))
    }
}

/// `bs` (at least one batch, all of one schema) as Arrow IPC stream bytes, written without the GIL.
fn ipc_bytes<'py>(
    py: Python<'py>,
    name: &str,
    bs: &[RecordBatch],
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = py
        .detach(|| -> Result<Vec<u8>, arrow_schema::ArrowError> {
            let mut w = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &bs[0].schema())?;
            bs.iter().try_for_each(|b| w.write(b))?;
            w.into_inner()
        })
        .map_err(|e| PyRuntimeError::new_err(format!("{name}: cannot write Arrow IPC: {e}")))?;
    Ok(PyBytes::new(py, &bytes))
}

/// `bs` (at least one batch, all of one schema) as an Arrow C stream in a PyCapsule named
/// `arrow_array_stream`, the batches moved in as they are.
fn stream_capsule(py: Python<'_>, bs: Vec<RecordBatch>) -> PyResult<Bound<'_, PyCapsule>> {
    let schema = bs[0].schema();
    let reader = arrow_array::RecordBatchIterator::new(bs.into_iter().map(Ok), schema);
    let stream = arrow_array::ffi_stream::FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new(py, stream, Some(c"arrow_array_stream".into()))
}

impl NativeCapture {
    /// The causal graph's edges (the Parquet export's `edges` table), built without the GIL.
    fn edge_batches(&self, py: Python<'_>) -> PyResult<Vec<RecordBatch>> {
        let result = py.detach(|| -> Result<Vec<RecordBatch>, CaptureError> {
            let rings = self.capture.rings()?;
            let t = Timeline::build(&rings);
            let tokens = causeway_scanner::export::TokenSource::of(&rings);
            parquet::edges(&t, &tokens)
                .map_err(|e| CaptureError::new(&self.capture.path, e.to_string()))
        });
        result.map_err(|e| capture_error(py, &e))
    }

    fn table(&self, name: &str) -> PyResult<&Vec<RecordBatch>> {
        self.tables
            .iter()
            .find(|t| t.0 == name)
            .map(|t| &t.1)
            .ok_or_else(|| PyKeyError::new_err(format!("no table {name:?}")))
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_class::<NativeCapture>()?;
    m.add("SCANNER_VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
