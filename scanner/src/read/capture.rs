//! Opening a capture: a directory of ring files (one per process, `*.cwring`) or a single ring file,
//! mapped read-only and validated by the ring reader. Every failure names the file it concerns, so the
//! CLI can print one line that tells the user which file is bad and why.

use causeway_ring::{RingView, RING_SUFFIX};
use memmap2::Mmap;
use std::fmt;
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
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

/// One ring file, not yet parsed: mapped read-only (watched, so a file truncated meanwhile does not
/// kill the reader: `guard`), or read into memory when the watch table is full.
pub struct RingFile {
    pub path: PathBuf,
    bytes: Bytes,
    /// The byte ranges that hold data (`None`: all, or unknown): holes of a sparse file are skipped.
    data: Option<Vec<(u64, u64)>>,
}

enum Bytes {
    // Field order: the mapping is unmapped before its watch is given up.
    Mapped(Mmap, crate::util::guard::Watch),
    /// Read into anonymous memory: the file's data ranges only, its holes left as untouched zero
    /// pages (a sparse ring claiming 8 GiB read whole took 8.6 GB).
    Read(memmap2::MmapMut),
}

impl RingFile {
    /// Opens `path` without blocking (a FIFO or device named `*.cwring` would hang a plain open),
    /// refuses anything that is not a non-empty regular file, and maps it.
    pub fn open(path: &Path) -> Result<RingFile, CaptureError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| CaptureError::new(path, io_problem(&e)))?;
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
        let data = data_ranges(&file, meta.len());
        // SAFETY: the mapping is read-only and private to this process. A shim still appending to a
        // live ring only changes bytes the reader validates per slot; a file truncated meanwhile is
        // answered by the SIGBUS guard (zero pages, and the command reports the change).
        let map = unsafe { Mmap::map(&file) }
            .map_err(|e| CaptureError::new(path, format!("cannot map: {e}")))?;
        let watch = crate::util::guard::watch(map.as_ptr(), map.len());
        let bytes = if watch.active() {
            Bytes::Mapped(map, watch)
        } else {
            drop(map);
            Bytes::Read(
                read_sparse(&file, meta.len(), data.as_deref()).map_err(|e| {
                    CaptureError::new(path, format!("cannot read into memory: {}", io_problem(&e)))
                })?,
            )
        };
        Ok(RingFile {
            path: path.to_path_buf(),
            bytes,
            data,
        })
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m, _) => m,
            Bytes::Read(v) => &v[..],
        }
    }

    /// Gives back the pages of the file this process has mapped (they stay in the page cache; a
    /// later read maps them again). For a command whose model holds what it still needs: the mapped
    /// ring is the largest part of its memory otherwise.
    pub fn release_pages(&self) {
        if let Bytes::Mapped(m, _) = &self.bytes {
            // SAFETY: the mapping is private and read-only, so this process never wrote to it: its
            // pages read back from the file as they were; nothing borrows it across this call in
            // a way that could observe a difference.
            let _ = unsafe { m.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }

    /// Gives back the whole pages of bytes `offset..offset + len` of the file this process has mapped
    /// (`release_pages` for a part: the pages a pass over the ring has read). A file read into memory
    /// keeps its bytes.
    pub fn release_range(&self, offset: usize, len: usize) {
        if let Bytes::Mapped(m, _) = &self.bytes {
            // The mapping starts on a page: only pages wholly in the range are given back, so a
            // neighbour's entries on a shared page stay mapped.
            let page = crate::util::hugealloc::page();
            let start = offset.div_ceil(page) * page;
            let end = (offset + len).min(m.len()) / page * page;
            if start < end {
                // SAFETY: as `release_pages`: a private, read-only mapping, never written, reads
                // back from the file as it was.
                let _ = unsafe {
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
                };
            }
        }
    }

    /// Whether the file shrank while it was being read (a page of it was gone: see `guard`).
    pub fn changed(&self) -> bool {
        matches!(&self.bytes, Bytes::Mapped(_, w) if w.faulted())
    }

    /// Validates the ring and returns a view of it.
    pub fn view(&self) -> Result<RingView<'_>, CaptureError> {
        let v = RingView::parse(self.bytes()).map_err(|e| CaptureError::new(&self.path, e.0))?;
        Ok(match &self.data {
            Some(d) => v.with_data(d),
            None => v,
        })
    }
}

/// `len` bytes of `file` in anonymous memory (reserved without swap: only what is written becomes
/// resident), `data`'s ranges read into it (all of it when `None`), the holes left zero. A file that
/// shrinks meanwhile reads as zeros past its end, as the mapped path does.
fn read_sparse(
    file: &File,
    len: u64,
    data: Option<&[(u64, u64)]>,
) -> std::io::Result<memmap2::MmapMut> {
    use std::os::unix::fs::FileExt;
    let size = usize::try_from(len).map_err(std::io::Error::other)?;
    let mut m = memmap2::MmapOptions::new()
        .len(size.max(1))
        .no_reserve_swap()
        .map_anon()?;
    let whole = [(0, len)];
    for &(from, to) in data.unwrap_or(&whole) {
        let mut at = from;
        while at < to {
            match file.read_at(&mut m[at as usize..to as usize], at) {
                Ok(0) => break,
                Ok(n) => at += n as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(m)
}

/// The ranges of `file` (of `len` bytes) that hold data, from `SEEK_DATA`/`SEEK_HOLE`; `None` when
/// the file has no holes, the filesystem cannot say, or it has so many ranges (more than 2^16) that
/// keeping them is not worth it (they are real data then, and reading them is what they cost).
fn data_ranges(file: &File, len: u64) -> Option<Vec<(u64, u64)>> {
    use std::os::unix::io::AsRawFd;
    let fd = file.as_raw_fd();
    let mut out = Vec::new();
    let mut at: u64 = 0;
    while at < len {
        // SAFETY: lseek on our own descriptor; it moves only this descriptor's offset.
        let d = unsafe { libc::lseek(fd, at as libc::off_t, libc::SEEK_DATA) };
        if d < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            // ENXIO: no data past `at` (the rest is a hole); anything else: the filesystem cannot tell.
            if e == Some(libc::ENXIO) {
                break;
            }
            return None;
        }
        // SAFETY: as above.
        let h = unsafe { libc::lseek(fd, d, libc::SEEK_HOLE) };
        if h < 0 {
            return None;
        }
        out.push((d as u64, (h as u64).min(len)));
        at = h as u64;
        if out.len() > 1 << 16 {
            return None;
        }
    }
    // SAFETY: as above; the mapping and reads that follow do not use the offset, but leave it at 0.
    unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
    if out.len() == 1 && out[0] == (0, len) {
        return None;
    }
    Some(out)
}

/// A capture on disk: its ring files, mapped, in file-name order.
pub struct Capture {
    pub path: PathBuf,
    pub files: Vec<RingFile>,
    /// Rings of a capture directory that cannot be read, left out (`skipped`).
    skipped: std::sync::Mutex<Vec<CaptureError>>,
}

/// A validated ring together with the file it came from.
pub struct Ring<'a> {
    pub path: &'a Path,
    pub view: RingView<'a>,
    /// The file, when its pages may be given back as a model is built from it (`None`: kept).
    pub file: Option<&'a RingFile>,
}

impl Ring<'_> {
    /// `decode::analysed` on this ring, giving its pages back as the decode's and `analyse`'s passes
    /// read them (`decode::analysed_releasing`) when it is a mapped file: for an analysis that builds
    /// a model of the ring, so that the model and the ring's pages are not held whole at once.
    pub fn analysed_releasing<T>(
        &self,
        analyse: impl Fn(&crate::read::decode::Decoded<'_>) -> T,
    ) -> T {
        use crate::read::decode;
        match self.file {
            Some(f) => {
                let release = |offset, len| f.release_range(offset, len);
                decode::analysed_releasing(&self.view, &release, analyse)
            }
            None => decode::analysed(&self.view, |d| analyse(d)),
        }
    }
}

impl Capture {
    /// Opens a capture directory (all `*.cwring` files in it, sorted by name) or a single ring file.
    ///
    /// In a directory, a ring that cannot be read (a process killed while it created its ring leaves
    /// an empty or half-made file; a file damaged since) is left out, so the other processes' rings
    /// are still read: `skipped` names it and says why, and every command warns of it. Only when no
    /// ring of the directory can be read is the capture an error: the first file's that could not
    /// be opened, else the first file's that could not be parsed (`rings`).
    pub fn open(path: &Path) -> Result<Capture, CaptureError> {
        let meta = std::fs::metadata(path).map_err(|e| CaptureError::new(path, io_problem(&e)))?;
        if !meta.is_dir() {
            return Ok(Capture {
                path: path.to_path_buf(),
                files: vec![RingFile::open(path)?],
                skipped: Default::default(),
            });
        }
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        for p in list_rings(path)? {
            match RingFile::open(&p) {
                Ok(f) => files.push(f),
                Err(e) => skipped.push(e),
            }
        }
        if files.is_empty() {
            return Err(skipped.swap_remove(0));
        }
        Ok(Capture {
            path: path.to_path_buf(),
            files,
            skipped: std::sync::Mutex::new(skipped),
        })
    }

    /// `RingFile::release_pages` for every file.
    pub fn release_pages(&self) {
        self.files.iter().for_each(RingFile::release_pages);
    }

    /// The first ring file that shrank while it was being read, if any (`RingFile::changed`).
    pub fn changed(&self) -> Option<&Path> {
        self.files
            .iter()
            .find(|f| f.changed())
            .map(|f| f.path.as_path())
    }

    /// Parses every ring. A single ring file that does not parse is the capture's error; in a
    /// directory such a ring is left out (`skipped`) unless none parses, when the first one's
    /// problem is the capture's.
    pub fn rings(&self) -> Result<Vec<Ring<'_>>, CaptureError> {
        let mut rings = Vec::with_capacity(self.files.len());
        let mut bad = Vec::new();
        for f in &self.files {
            match f.view() {
                Ok(view) => rings.push(Ring {
                    path: &f.path,
                    view,
                    file: Some(f),
                }),
                Err(e) => bad.push(e),
            }
        }
        let mut skipped = self.skipped.lock().unwrap_or_else(|p| p.into_inner());
        if rings.is_empty() {
            // Every file opened but none parsed; `open` kept a directory with no file opened.
            return Err(skipped
                .first()
                .cloned()
                .unwrap_or_else(|| bad.swap_remove(0)));
        }
        for e in bad {
            if !skipped.iter().any(|s| s.path == e.path) {
                skipped.push(e);
            }
        }
        note_skipped(&skipped);
        Ok(rings)
    }

    /// The rings of a capture directory left out because they cannot be read (file order among
    /// those that could not be opened, then among those that could not be parsed), as found so far:
    /// complete once `rings` has been called.
    pub fn skipped(&self) -> Vec<CaptureError> {
        self.skipped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Every ring file of the capture, those left out (`skipped`) too: none may be written over.
    pub fn paths(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = self.files.iter().map(|f| f.path.clone()).collect();
        v.extend(self.skipped().into_iter().map(|e| e.path));
        v
    }

    /// `skipped` as warnings, as the report lists them.
    pub fn skipped_warnings(&self) -> Vec<String> {
        self.skipped().iter().map(skipped_warning).collect()
    }
}

/// The warning for a ring left out of its capture.
pub fn skipped_warning(e: &CaptureError) -> String {
    format!("{e}: this ring is left out; the capture's other rings are read")
}

/// Every ring left out by any capture this process has read (`take_skipped`).
static SKIPPED: std::sync::Mutex<Vec<CaptureError>> = std::sync::Mutex::new(Vec::new());

fn note_skipped(now: &[CaptureError]) {
    let mut all = SKIPPED.lock().unwrap_or_else(|p| p.into_inner());
    for e in now {
        if !all.contains(e) {
            all.push(e.clone());
        }
    }
}

/// The rings left out (`Capture::skipped`) by the captures read since the last call, each once: for a
/// command whose output does not carry them itself to warn of them.
pub fn take_skipped() -> Vec<CaptureError> {
    std::mem::take(&mut *SKIPPED.lock().unwrap_or_else(|p| p.into_inner()))
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

impl From<CaptureError> for crate::util::output::OutputError {
    fn from(e: CaptureError) -> Self {
        crate::util::output::OutputError(e.to_string())
    }
}

impl Capture {
    /// An output path that is one of the capture's own rings is refused: writing over it would
    /// destroy the capture.
    pub fn refuse_as_output(&self, output: &Path) -> Result<(), crate::util::output::OutputError> {
        let Some(target) = crate::util::output::canonical_target(output) else {
            return Ok(());
        };
        for path in self.paths() {
            if std::fs::canonicalize(&path).ok().as_deref() == Some(target.as_path()) {
                return Err(crate::util::output::OutputError(format!(
                    "{}: is a ring of the capture being exported (choose another -o)",
                    output.display()
                )));
            }
        }
        Ok(())
    }
}

/// Total bytes of the rings' files (what a progress bar counts).
pub fn bytes_of(rings: &[Ring]) -> u64 {
    rings.iter().map(|r| r.view.size() as u64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resident_kib() -> u64 {
        let s = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// A ring read into memory (the watch table full) holds its data, not its holes: a 4 GiB file of
    /// which 8 KiB is written took 4 GiB read whole.
    #[test]
    fn a_sparse_file_read_into_memory_keeps_its_holes_out() {
        let path = std::env::temp_dir().join(format!("cw-sparse-{}", std::process::id()));
        let len = 4u64 << 30;
        {
            let f = std::fs::File::create(&path).unwrap();
            use std::os::unix::fs::FileExt;
            f.write_all_at(&[7u8; 4096], 0).unwrap();
            f.write_all_at(&[9u8; 4096], len - 4096).unwrap();
            f.set_len(len).unwrap();
        }
        let f = File::open(&path).unwrap();
        let data = data_ranges(&f, len);
        let before = resident_kib();
        let m = read_sparse(&f, len, data.as_deref()).unwrap();
        let grew = resident_kib().saturating_sub(before);
        assert_eq!(m.len() as u64, len);
        assert!(m[..4096].iter().all(|&b| b == 7));
        assert!(m[len as usize - 4096..].iter().all(|&b| b == 9));
        assert_eq!(m[1 << 30], 0);
        std::fs::remove_file(&path).unwrap();
        // Where the filesystem cannot tell data from holes, it is read whole: nothing to check.
        if data.is_some() {
            assert!(grew < 64 << 10, "resident grew {grew} KiB");
        }
    }
}
