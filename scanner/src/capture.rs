//! Opening a capture: a directory of ring files (one per process, `*.cwring`) or a single ring file,
//! mapped read-only and validated by the ring reader. Every failure names the file it concerns, so the
//! CLI can print one line that tells the user which file is bad and why.

use causeway_ring::{RingView, RING_SUFFIX};
use memmap2::Mmap;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Why a capture (or one ring of it) could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError {
    pub path: PathBuf,
    pub problem: String,
}

impl CaptureError {
    pub fn new(path: impl Into<PathBuf>, problem: impl Into<String>) -> CaptureError {
        CaptureError {
            path: path.into(),
            problem: problem.into(),
        }
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

impl std::error::Error for CaptureError {}

/// One mapped ring file, not yet parsed.
pub struct RingFile {
    pub path: PathBuf,
    map: Mmap,
}

impl RingFile {
    /// Maps `path` read-only. Empty files and anything that is not a regular file are refused here, so
    /// the mapping always covers real file bytes.
    pub fn open(path: &Path) -> Result<RingFile, CaptureError> {
        let file = File::open(path).map_err(|e| CaptureError::new(path, io_problem(&e)))?;
        let meta = file
            .metadata()
            .map_err(|e| CaptureError::new(path, io_problem(&e)))?;
        if !meta.is_file() {
            return Err(CaptureError::new(
                path,
                "not a regular file (a capture is a directory of *.cwring files or one such file)",
            ));
        }
        if meta.len() == 0 {
            return Err(CaptureError::new(
                path,
                "empty file (0 bytes): the ring was never created completely",
            ));
        }
        // SAFETY: the mapping is read-only and private to this process. Ring files are created at their
        // full size (fallocate) and never truncated afterwards, so the pages stay backed while we read;
        // a shim still appending to a live ring only changes bytes the reader validates per slot.
        let map = unsafe { Mmap::map(&file) }
            .map_err(|e| CaptureError::new(path, format!("cannot map: {e}")))?;
        Ok(RingFile {
            path: path.to_path_buf(),
            map,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Validates the ring and returns a view of it.
    pub fn view(&self) -> Result<RingView<'_>, CaptureError> {
        RingView::parse(self.bytes()).map_err(|e| CaptureError::new(&self.path, e.0))
    }
}

/// A capture on disk: its ring files, mapped, in file-name order.
pub struct Capture {
    pub path: PathBuf,
    pub files: Vec<RingFile>,
}

/// A validated ring together with the file it came from.
pub struct Ring<'a> {
    pub path: &'a Path,
    pub view: RingView<'a>,
}

impl Capture {
    /// Opens a capture directory (all `*.cwring` files in it, sorted by name) or a single ring file.
    pub fn open(path: &Path) -> Result<Capture, CaptureError> {
        let meta = std::fs::metadata(path).map_err(|e| CaptureError::new(path, io_problem(&e)))?;
        let paths = if meta.is_dir() {
            list_rings(path)?
        } else {
            vec![path.to_path_buf()]
        };
        let files = paths
            .iter()
            .map(|p| RingFile::open(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Capture {
            path: path.to_path_buf(),
            files,
        })
    }

    /// Parses every ring; the first bad one fails the whole capture, named by its own path.
    pub fn rings(&self) -> Result<Vec<Ring<'_>>, CaptureError> {
        self.files
            .iter()
            .map(|f| {
                Ok(Ring {
                    path: &f.path,
                    view: f.view()?,
                })
            })
            .collect()
    }
}

/// The ring files of a capture directory, sorted by name so reports are reproducible.
pub fn list_rings(dir: &Path) -> Result<Vec<PathBuf>, CaptureError> {
    let rd = std::fs::read_dir(dir).map_err(|e| CaptureError::new(dir, io_problem(&e)))?;
    let mut out = Vec::new();
    for item in rd {
        let item = item.map_err(|e| CaptureError::new(dir, io_problem(&e)))?;
        let name = item.file_name();
        if name.to_string_lossy().ends_with(RING_SUFFIX) {
            out.push(item.path());
        }
    }
    if out.is_empty() {
        return Err(CaptureError::new(
            dir,
            format!("no causeway rings (*{RING_SUFFIX}) in {}", dir.display()),
        ));
    }
    out.sort();
    Ok(out)
}

/// io::Error text without the "(os error N)" tail, which tells a user nothing.
fn io_problem(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound => "no such file or directory".into(),
        PermissionDenied => "permission denied".into(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    }
}
