//! Writing an output file the way every file `causeway` writes is written: private (0600, no link
//! followed), into a temporary file beside the target, synced, then renamed over it, so it appears
//! complete or not at all; an existing file is replaced only when asked.

use std::fmt;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

/// Why writing an output failed: one line, naming the file concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputError(pub String);

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OutputError {}

/// Writes `output` the way every file `causeway` writes is written: into a temporary file beside it
/// (through `body`), synced, then renamed over it, so it appears complete or not at all. Without `force`
/// the name is claimed with `create_new` first, so a file that appeared meanwhile is not replaced
/// either. Returns `body`'s value and the bytes written. `fallback` names the temporary file when
/// `output` has no file name.
pub fn write_output<T>(
    output: &Path,
    force: bool,
    fallback: &str,
    body: impl FnOnce(&mut BufWriter<std::fs::File>) -> Result<T, OutputError>,
) -> Result<(T, u64), OutputError> {
    let tmp = temp_path(output, fallback);
    let cannot = |e: io::Error| {
        OutputError(format!(
            "{}: cannot write: {}",
            output.display(),
            io_problem(&e)
        ))
    };
    let result = (|| -> Result<(T, u64), OutputError> {
        let file = causeway_ring::private::create_file(&tmp, false).map_err(|e| {
            OutputError(format!(
                "{}: cannot create: {}",
                output.display(),
                io_problem(&e)
            ))
        })?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let v = body(&mut w)?;
        let file = w.into_inner().map_err(|e| cannot(e.into_error()))?;
        file.sync_all().map_err(cannot)?;
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        if !force {
            causeway_ring::private::create_file(output, false)
                .map_err(|e| exists_error(output, &e))?;
        } else if std::fs::symlink_metadata(output).is_ok_and(|m| !m.is_file()) {
            // --force replaces a file an earlier export wrote, not a directory, link or device.
            return Err(OutputError(format!(
                "{}: exists and is not a regular file; not replacing it",
                output.display()
            )));
        }
        if crate::util::guard::any_fault() {
            return Err(OutputError(format!(
                "{}: not written: a ring file was truncated while it was being read",
                output.display()
            )));
        }
        std::fs::rename(&tmp, output).map_err(cannot)?;
        Ok((v, bytes))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// An `-o` that names a directory, or an existing file without `force`, is refused.
pub fn check_output(output: &Path, force: bool) -> Result<(), OutputError> {
    match std::fs::metadata(output) {
        Ok(m) if m.is_dir() => Err(OutputError(format!(
            "{}: is a directory (-o names the file to write)",
            output.display()
        ))),
        Ok(_) if !force => Err(OutputError(format!(
            "{}: already exists (pass --force to overwrite it)",
            output.display()
        ))),
        _ => Ok(()),
    }
}

fn exists_error(output: &Path, e: &io::Error) -> OutputError {
    if e.kind() == io::ErrorKind::AlreadyExists {
        OutputError(format!(
            "{}: already exists (pass --force to overwrite it)",
            output.display()
        ))
    } else {
        OutputError(format!(
            "{}: cannot create: {}",
            output.display(),
            io_problem(e)
        ))
    }
}

/// `output` with its directory resolved (the file itself may not exist yet).
pub fn canonical_target(output: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(output) {
        return Some(p);
    }
    let name = output.file_name()?;
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(dir).ok()?.join(name))
}

fn temp_path(output: &Path, fallback: &str) -> PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| fallback.into());
    output.with_file_name(format!(".{name}.causeway-{}.tmp", std::process::id()))
}

pub fn io_problem(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
