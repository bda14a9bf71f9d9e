//! Writing an output file the way every file `causeway` writes is written: private (0600, no link
//! followed), into a temporary file beside the target, synced, then renamed over it, so it appears
//! complete or not at all; an existing file is replaced only when asked.

use std::fmt;
use std::io::{self, BufWriter, Write as _};
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
    body: impl FnOnce(&mut BufWriter<Writeback>) -> Result<T, OutputError>,
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
        let mut w = BufWriter::with_capacity(1 << 20, Writeback::new(file));
        let v = body(&mut w)?;
        let file = w
            .into_inner()
            .map_err(|e| cannot(e.into_error()))?
            .into_file();
        crate::util::stages::mark("written");
        file.sync_all().map_err(cannot)?;
        crate::util::stages::mark("synced");
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
    refuse_planted(output)?;
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

/// An output reached through a symbolic link another user could have planted is refused
/// (`causeway_ring::private::planted_link`): run as root, the CLI would write where they chose.
pub fn refuse_planted(output: &Path) -> Result<(), OutputError> {
    match causeway_ring::private::planted_link(output) {
        Some(why) => Err(OutputError(format!(
            "{}: {why} (name the directory it leads to instead, if you trust it)",
            output.display()
        ))),
        None => Ok(()),
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

/// An output file written from start to end, whose written pages are handed to the kernel's
/// writeback every `WRITEBACK_STEP` bytes (Linux `sync_file_range`, which only starts it): the disk
/// works while the rest is made, and the sync before the rename waits for the last part only.
pub struct Writeback {
    file: std::fs::File,
    written: u64,
    started: u64,
}

const WRITEBACK_STEP: u64 = 16 << 20;

impl Writeback {
    pub fn new(file: std::fs::File) -> Writeback {
        Writeback {
            file,
            written: 0,
            started: 0,
        }
    }

    /// The file, to sync before it is renamed into place.
    pub fn into_file(self) -> std::fs::File {
        self.file
    }
}

impl io::Write for Writeback {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = self.file.write(b)?;
        self.written += n as u64;
        if self.written - self.started >= WRITEBACK_STEP {
            #[cfg(target_os = "linux")]
            {
                use std::os::fd::AsRawFd;
                // SAFETY: the descriptor is this open file's; the call only starts writeback of the
                // range written, and a failure is left to the final sync to report.
                unsafe {
                    libc::sync_file_range(
                        self.file.as_raw_fd(),
                        self.started as libc::off64_t,
                        (self.written - self.started) as libc::off64_t,
                        libc::SYNC_FILE_RANGE_WRITE,
                    )
                };
            }
            self.started = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// A writer that takes a large buffer straight to where it goes: an export's units are made in
/// buffers of their own, and copying each into a `BufWriter`'s buffer first is one more pass over
/// every byte on the one thread that writes (2.5 GB for Chrome at 10 M entries).
pub trait Direct: io::Write {
    /// Writes all of `b`, after whatever is buffered, without copying it into a buffer.
    fn write_direct(&mut self, b: &[u8]) -> io::Result<()>;
}

impl<W: io::Write> Direct for BufWriter<W> {
    fn write_direct(&mut self, b: &[u8]) -> io::Result<()> {
        // Small writes keep the buffer's batching; a flush costs a syscall.
        if b.len() < self.capacity() / 4 {
            return self.write_all(b);
        }
        self.flush()?;
        self.get_mut().write_all(b)
    }
}

impl Direct for Vec<u8> {
    fn write_direct(&mut self, b: &[u8]) -> io::Result<()> {
        self.extend_from_slice(b);
        Ok(())
    }
}

/// Writes to `w`, in order, the bytes `encode` makes of each of `units`: a window of units at a time
/// made on every thread while the window before is written, so the encoding and the writing overlap.
/// The two windows' buffers are reused: fresh memory is paid for page by page. Two units per thread
/// a window: both windows together hold what one window of four per thread held before they
/// overlapped (a Chrome unit is megabytes of text). Each unit's bytes go to `w` as they are
/// (`Direct`).
pub fn write_in_order<U: Sync, W: Direct + Send>(
    units: &[U],
    w: &mut W,
    encode: impl Fn(&U, &mut Vec<u8>) + Sync,
) -> io::Result<()> {
    let window = 2 * rayon::current_num_threads().max(1);
    let (mut ready, mut spare): (Vec<Vec<u8>>, Vec<Vec<u8>>) = Default::default();
    for win in units.chunks(window) {
        let mut bufs = std::mem::take(&mut spare);
        bufs.resize_with(win.len(), Vec::new);
        let (written, ()) = rayon::join(
            || ready.iter().try_for_each(|b| w.write_direct(b)),
            || {
                use rayon::prelude::*;
                win.par_iter().zip(bufs.par_iter_mut()).for_each(|(u, b)| {
                    b.clear();
                    encode(u, b)
                })
            },
        );
        written?;
        spare = std::mem::replace(&mut ready, bufs);
    }
    ready.iter().try_for_each(|b| w.write_direct(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units come out in their order, across many windows and with empty ones; a failing write
    /// stops the writing with its error.
    #[test]
    fn units_are_written_in_order_and_a_write_error_is_returned() {
        let units: Vec<u32> = (0..1000).collect();
        let encode = |u: &u32, b: &mut Vec<u8>| {
            if !u.is_multiple_of(7) {
                b.extend_from_slice(format!("{u},").as_bytes())
            }
        };
        let mut out = Vec::new();
        write_in_order(&units, &mut out, encode).unwrap();
        let want: String = (0..1000)
            .filter(|u| u % 7 != 0)
            .map(|u| format!("{u},"))
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), want);
        // Through a small buffer, units below a quarter of it are buffered and larger ones go
        // straight to the writer after it is flushed: the order holds across both.
        let mut buffered = BufWriter::with_capacity(16, Vec::new());
        write_in_order(&units, &mut buffered, encode).unwrap();
        let out = buffered.into_inner().unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), want);

        struct Full(usize);
        impl io::Write for Full {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 < b.len() {
                    return Err(io::Error::new(io::ErrorKind::StorageFull, "full"));
                }
                self.0 -= b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let e = write_in_order(&units, &mut BufWriter::with_capacity(8, Full(100)), encode)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    }
}
