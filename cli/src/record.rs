//! `causeway record`: runs a command with the shim preloaded and the capture settings in its
//! environment, then reports where the capture went. The shim reads only `CAUSEWAY_*` variables, so
//! everything here can also be done by hand; this module just gets the details right (absolute paths,
//! a fresh directory, LD_PRELOAD order, exit status).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The shim's file name, looked up beside the `causeway` executable.
pub const SHIM_NAME: &str = "libcauseway.so";
/// `--level`'s default, as the number the option takes.
pub const DEFAULT_LEVEL: u32 = Level::DEFAULT.number() as u32;
use causeway_ring::settings::{self, env, Settings};
pub use causeway_ring::settings::{
    Backend, Level, Policy, DEFAULT_EVENTS_SAMPLE, DEFAULT_RING_MB, MAX_RING_MB,
};

#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// As given (`check_level` says whether it exists).
    pub level: u32,
    /// The device-timing backend asked for; `None` = the level's default (`Level::default_backend`).
    /// An error below level 3.
    pub backend: Option<Backend>,
    /// The CUPTI library the shim should load (`CAUSEWAY_CUPTI`); level 3 with CUPTI only.
    pub cupti: Option<PathBuf>,
    /// Events backend: time one step in N (`None`: the shim's default, `DEFAULT_EVENTS_SAMPLE`).
    pub sample: Option<u32>,
    pub out: PathBuf,
    pub ring_mb: u64,
    pub policy: Policy,
    pub shim: Option<PathBuf>,
    pub cmd: Vec<OsString>,
}

/// A refusal or failure of `record`, already worded for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError(pub String);

/// `record`'s own exit codes, apart from any a program can return (as `env` and `timeout` do): 127 the
/// command was not found, 126 it was found but could not be run, 125 `record` itself failed.
pub const EXIT_NOT_FOUND: u8 = 127;
pub const EXIT_CANNOT_RUN: u8 = 126;
pub const EXIT_RECORD_FAILED: u8 = 125;

impl RecordError {
    /// The exit code `causeway record` ends with for this error.
    pub fn exit_code(&self) -> u8 {
        if self.0.ends_with(": command not found") {
            EXIT_NOT_FOUND
        } else if self.0.starts_with("cannot run ") {
            EXIT_CANNOT_RUN
        } else {
            EXIT_RECORD_FAILED
        }
    }
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn fail<T>(msg: impl Into<String>) -> Result<T, RecordError> {
    Err(RecordError(msg.into()))
}

pub fn check_level(level: u32) -> Result<Level, RecordError> {
    match Level::from_number(level) {
        Some(l) => Ok(l),
        None => fail(format!(
            "level {level} does not exist; levels are 1 (phases), 2 (host), 3 (full: + device intervals) and 4 (edge)"
        )),
    }
}

/// The backend `level` records with (`Level::default_backend` when none is asked for): at levels 1 and
/// 2 none, and asking for one there is an error. `--cupti` only makes sense with CUPTI.
pub fn check_device(
    level: Level,
    backend: Option<Backend>,
    cupti: Option<&Path>,
) -> Result<Backend, RecordError> {
    if !level.may_time_device() {
        if let Some(b) = backend {
            return fail(format!(
                "--backend {b} needs --level 3 or 4: device timing (when each kernel, copy and memset ran) is what level 3 adds; level {level} records none"
            ));
        }
        if cupti.is_some() {
            return fail(format!(
                "--cupti needs --level 3 or 4: CUPTI is a device-timing backend; level {level} does not load it"
            ));
        }
        return Ok(Backend::None);
    }
    let b = backend.unwrap_or(level.default_backend());
    if cupti.is_some() && b == Backend::None {
        return fail(format!(
            "--cupti at level {level} needs --backend cupti (level {level} records device times only when a backend is given)"
        ));
    }
    if cupti.is_some() && b != Backend::Cupti {
        return fail(format!(
            "--cupti names the CUPTI library of --backend cupti; --backend {b} does not load it"
        ));
    }
    Ok(b)
}

/// The value of `CAUSEWAY_CUPTI` for `--cupti PATH`: a path (anything with a `/`) must name a file and
/// is made absolute, since the program may change directory before the shim loads it; a bare name
/// (`libcupti.so.12`) is passed as is, for the dynamic loader to search.
pub fn cupti_value(path: &Path) -> Result<OsString, RecordError> {
    if !path.as_os_str().as_bytes().contains(&b'/') {
        return Ok(path.as_os_str().to_os_string());
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => std::fs::canonicalize(path)
            .map(PathBuf::into_os_string)
            .map_err(|e| RecordError(format!("--cupti {}: {e}", path.display()))),
        Ok(_) => fail(format!(
            "--cupti {} is not a regular file (give the path of libcupti.so)",
            path.display()
        )),
        Err(_) => fail(format!(
            "CUPTI library not found: {} (--cupti); it ships with the CUDA toolkit (extras/CUPTI/lib64) or the nvidia-cuda-cupti wheels",
            path.display()
        )),
    }
}

pub fn check_ring_mb(mb: u64) -> Result<(), RecordError> {
    if settings::ring_mb_ok(mb) {
        Ok(())
    } else {
        fail(format!("--ring-mb {mb} is out of range 1..={MAX_RING_MB}"))
    }
}

/// What a ring of `mb` MiB per process will cost where it is written (`dir`): refused when one ring
/// does not fit in the free space there; a warning when a few would not, or when reserving it will
/// stall the program's first recorded call noticeably (the ring is reserved and pre-faulted then, so
/// the hot path never faults: about 4.5 s per GiB measured, 18 s for 4 GiB).
pub fn ring_cost(mb: u64, dir: &Path) -> Result<Option<String>, RecordError> {
    let bytes = mb << 20;
    let free = causeway_ring::writer::free_bytes(dir.as_os_str().as_bytes());
    if let Some(free) = free.filter(|&f| bytes > f) {
        return fail(format!(
            "--ring-mb {mb}: one process's ring needs {} MiB and {} has {} MiB free",
            mb,
            dir.display(),
            free >> 20
        ));
    }
    let mut why = Vec::new();
    if let Some(free) = free.filter(|&f| bytes.saturating_mul(4) > f) {
        why.push(format!(
            "{} MiB free there holds {} such rings (one per process that records)",
            free >> 20,
            free / bytes
        ));
    }
    if mb >= 1024 {
        why.push(format!(
            "reserving it stalls each process's first recorded call for about {:.0} s",
            mb as f64 / 1024.0 * 4.5
        ));
    }
    Ok((!why.is_empty()).then(|| {
        format!(
            "warning: --ring-mb {mb}: {} MiB of disk and memory per process; {}",
            mb,
            why.join("; ")
        )
    }))
}

/// The shim to preload: `--shim`, else `$CAUSEWAY_SHIM`, else `libcauseway.so` beside this executable.
/// Returned absolute, since the traced program may change directory before the loader needs it.
pub fn find_shim(
    explicit: Option<&Path>,
    env: Option<OsString>,
    exe: Option<PathBuf>,
) -> Result<PathBuf, RecordError> {
    let (path, how) = if let Some(p) = explicit {
        (p.to_path_buf(), "--shim")
    } else if let Some(p) = env.filter(|v| !v.is_empty()) {
        (PathBuf::from(p), env::SHIM)
    } else if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        (dir.join(SHIM_NAME), "beside the causeway executable")
    } else {
        return fail(format!(
            "cannot locate {SHIM_NAME}: the causeway executable's directory is unknown; pass --shim PATH or set {}",
            env::SHIM
        ));
    };
    let hint = format!(
        "build it with `cargo build --release -p causeway-shim`, or pass --shim PATH or set {}",
        env::SHIM
    );
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(_) => {
            return fail(format!(
                "shim not found: {} ({how}); {hint}",
                path.display()
            ))
        }
    };
    if !meta.is_file() {
        return fail(format!(
            "shim {} ({how}) is not a regular file; {hint}",
            path.display()
        ));
    }
    let mut magic = [0u8; 4];
    let is_elf = std::fs::File::open(&path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == *b"\x7fELF";
    if !is_elf {
        return fail(format!(
            "shim {} ({how}) is not a shared library (no ELF header); {hint}",
            path.display()
        ));
    }
    let abs = std::fs::canonicalize(&path)
        .map_err(|e| RecordError(format!("shim {}: {e}", path.display())))?;
    // The loader splits LD_PRELOAD at spaces and colons, so such a path cannot be preloaded.
    if abs
        .as_os_str()
        .as_bytes()
        .iter()
        .any(|&c| c == b' ' || c == b':')
    {
        return fail(format!(
            "shim path {} contains a space or colon, which LD_PRELOAD cannot express; move the shim",
            abs.display()
        ));
    }
    Ok(abs)
}

/// LD_PRELOAD with the shim first (so its hooks win) and the user's own preloads kept after it —
/// except a sanitizer's runtime the user preloads (`LD_PRELOAD=libasan.so.8`, ASan's own advice for
/// preloading beside it): it must be the first library loaded or the program aborts, so it stays
/// ahead of the shim.
pub fn preload_value(shim: &Path, existing: Option<&OsStr>) -> OsString {
    // ld.so separates entries by colons and by white space.
    let entries: Vec<&[u8]> = existing
        .map(|e| e.as_bytes())
        .unwrap_or_default()
        .split(|c| *c == b':' || c.is_ascii_whitespace())
        .filter(|e| !e.is_empty())
        .collect();
    let (first, rest): (Vec<&[u8]>, Vec<&[u8]>) =
        entries.into_iter().partition(|e| sanitizer_runtime(e));
    let mut v = OsString::new();
    for e in first {
        v.push(OsStr::from_bytes(e));
        v.push(":");
    }
    v.push(shim.as_os_str());
    for e in rest {
        v.push(":");
        v.push(OsStr::from_bytes(e));
    }
    v
}

/// Whether the preload `entry` is a sanitizer's runtime (gcc's `libasan.so.8`, clang's
/// `libclang_rt.asan-x86_64.so`, their thread, memory and hardware-assisted kinds).
fn sanitizer_runtime(entry: &[u8]) -> bool {
    let name = entry.rsplit(|c| *c == b'/').next().unwrap_or(entry);
    ["asan", "tsan", "msan", "hwasan"].iter().any(|k| {
        name.starts_with(format!("lib{k}").as_bytes())
            || name.starts_with(format!("libclang_rt.{k}").as_bytes())
    })
}

/// Local time as `YYYYmmdd-HHMMSS`.
pub fn timestamp() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    // SAFETY: `tm` is a plain C struct for which all-zero bytes are valid; localtime_r only writes it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; localtime_r is the thread-safe variant.
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return "00000000-000000".into();
    }
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

/// Creates a fresh `out/cw-<timestamp>-<pid>` (creating `out` if needed) and returns its absolute path.
/// An existing directory is never reused: a suffix is added instead. The capture directory is private
/// (0700 whatever the umask; `causeway_ring::private`), and the shim refuses it if it was swapped for a
/// link or for someone else's before the program started (`CAUSEWAY_PRIVATE_DIR`).
pub fn make_capture_dir(out: &Path) -> Result<PathBuf, RecordError> {
    make_dir_in(out, "cw")
}

/// `out/<prefix>-<timestamp>-<pid>[-n]`, private, absolute.
pub fn make_dir_in(out: &Path, prefix: &str) -> Result<PathBuf, RecordError> {
    if let Some(why) = causeway_ring::private::planted_link(out) {
        return fail(format!(
            "{}: {why} (name the directory it leads to instead, if you trust it)",
            out.display()
        ));
    }
    if std::fs::metadata(out).is_ok_and(|m| !m.is_dir()) {
        return fail(format!(
            "{}: not a directory (--out names the directory captures go in)",
            out.display()
        ));
    }
    // Parents it makes are private too (0777 less the umask was all of them under umask 0).
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(out)
        .map_err(|e| RecordError(format!("cannot create {}: {e}", out.display())))?;
    let base = format!("{prefix}-{}-{}", timestamp(), std::process::id());
    for n in 0..1000u32 {
        let name = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        let dir = out.join(name);
        match causeway_ring::private::create_dir(&dir) {
            Ok(()) => {
                return std::fs::canonicalize(&dir)
                    .map_err(|e| RecordError(format!("{}: {e}", dir.display())))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return fail(format!("cannot create {}: {e}", dir.display())),
        }
    }
    fail(format!(
        "cannot create a fresh capture directory in {}",
        out.display()
    ))
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// What happened to the recorded command.
pub struct Outcome {
    pub capture_dir: PathBuf,
    /// The exit code `causeway record` should exit with (128 + S for a death by signal S).
    pub code: i32,
    /// Lines to print before the final "capture written" line.
    pub notes: Vec<String>,
}

/// A validated recording: the shim found and every option checked. `run` spawns one; `causeway control`
/// spawns several, each into its own directory.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub level: Level,
    /// The backend the level records with (`Backend::None`: no device timing).
    pub backend: Backend,
    /// `CAUSEWAY_CUPTI`'s value, when given.
    pub cupti: Option<OsString>,
    pub sample: Option<u32>,
    pub ring_mb: u64,
    pub policy: Policy,
    /// Absolute path of the shim.
    pub shim: PathBuf,
}

/// Checks the options (not the command and not the shim): the level, the backend and
/// `CAUSEWAY_CUPTI`'s value.
fn checked(o: &RecordOptions) -> Result<(Level, Backend, Option<OsString>), RecordError> {
    let level = check_level(o.level)?;
    let backend = check_device(level, o.backend, o.cupti.as_deref())?;
    let cupti = o.cupti.as_deref().map(cupti_value).transpose()?;
    if let Some(n) = o.sample {
        if !backend.samples() {
            return fail("--sample needs --backend events (CUPTI records every kernel; events can be sampled)");
        }
        if !settings::sample_ok(n) {
            return fail(format!(
                "--sample {n}: give N >= 1 (time one in N steps; 1 times every call)"
            ));
        }
    }
    check_ring_mb(o.ring_mb)?;
    Ok((level, backend, cupti))
}

/// Checks the options (not the command) and finds the shim.
pub fn prepare(o: &RecordOptions) -> Result<Prepared, RecordError> {
    let (level, backend, cupti) = checked(o)?;
    let shim = find_shim(
        o.shim.as_deref(),
        std::env::var_os(env::SHIM),
        std::env::current_exe().ok(),
    )?;
    Ok(Prepared {
        level,
        backend,
        cupti,
        sample: o.sample,
        ring_mb: o.ring_mb,
        policy: o.policy,
        shim,
    })
}

impl Prepared {
    /// The capture settings the shim gets, writing into `dir`.
    pub fn settings(&self, dir: &Path) -> Settings {
        Settings {
            out: dir.as_os_str().to_os_string(),
            // `dir` is the private directory this CLI made: the shim refuses it if it was swapped.
            private_dir: true,
            level: self.level,
            backend: self.backend,
            ring_mb: self.ring_mb,
            policy: self.policy,
            sample: self.sample,
            cupti: self.cupti.clone(),
        }
    }

    /// `program args` with the shim preloaded and the capture settings in its environment, writing
    /// into `dir` (which must exist).
    pub fn command(&self, program: &OsStr, args: &[OsString], dir: &Path) -> Command {
        let preload = preload_value(&self.shim, std::env::var_os("LD_PRELOAD").as_deref());
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("LD_PRELOAD", preload)
            // Measured once here rather than in every process the program starts (2 ms each).
            .env(env::TICKS, ticks_choice());
        // The options own the capture settings: a setting left at its default (no backend, no
        // sampling rate) is cleared, so one inherited from the environment never contradicts them.
        for (name, value) in self.settings(dir).to_env() {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
        cmd
    }
}

/// This machine's tick clock as the shim would choose it, measured once per CLI process.
fn ticks_choice() -> String {
    static CHOICE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CHOICE
        .get_or_init(|| {
            let force = settings::forces_monotonic(std::env::var(env::CLOCK).ok().as_deref());
            let (kind, hz) = causeway_ring::clock::init(force);
            causeway_ring::clock::describe(kind, hz)
        })
        .clone()
}

/// Validates the options, runs the command under the shim and waits for it.
pub fn run(o: &RecordOptions) -> Result<Outcome, RecordError> {
    let Some(program) = o.cmd.first() else {
        checked(o)?;
        return fail("no command to record; usage: causeway record [OPTIONS] -- CMD [ARGS...]");
    };
    let prepared = prepare(o)?;
    let mut notes = Vec::new();
    let dir = make_capture_dir(&o.out)?;
    // Said before the program runs, not after it.
    let early = |w: &str| {
        crate::line(&format!(
            "causeway: {}",
            causeway_scanner::render::text::escape_cell(w)
        ))
    };
    match ring_cost(o.ring_mb, &dir) {
        Ok(Some(w)) => early(&w),
        Ok(None) => {}
        Err(e) => {
            let _ = std::fs::remove_dir(&dir);
            return Err(e);
        }
    }
    if let Some(why) = causeway_ring::private::exposed(&o.out) {
        early(&format!(
            "warning: {why}; the capture directory inside it is private, and the shim refuses it if it is \
             swapped, but prefer an --out only you control"
        ));
    }
    let mut cmd = prepared.command(program, &o.cmd[1..], &dir);
    // SIGTERM and SIGHUP go to the program, and record exits as it did.
    let forwarding = causeway_control::signals::forward();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            // Nothing ran, so leave no empty capture behind (remove_dir refuses a non-empty one).
            let _ = std::fs::remove_dir(&dir);
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "command not found".to_string(),
                std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                _ => e.to_string(),
            };
            return fail(format!(
                "cannot run {}: {why}",
                Path::new(program).display()
            ));
        }
    };
    forwarding.child(child.id());
    // Ctrl-C and Ctrl-\ reach the whole foreground group: let the child decide what they mean and stay
    // alive to report where its capture went.
    // SAFETY: installing SIG_IGN has no preconditions; the child was spawned with default dispositions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
    }
    let status = child
        .wait()
        .map_err(|e| RecordError(format!("waiting for the command: {e}")))?;
    drop(forwarding);
    let code = if let Some(c) = status.code() {
        c
    } else if let Some(s) = status.signal() {
        notes.push(format!(
            "{} was killed by signal {s} ({}){}; exiting with {}",
            Path::new(program).display(),
            signal_name(s),
            if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            },
            128 + s
        ));
        128 + s
    } else {
        1
    };
    match causeway_scanner::read::capture::list_rings(&dir) {
        Ok(_) => {}
        Err(_) => notes.push(
            "warning: no ring files were written: the shim did not load (LD_PRELOAD is ignored by static and setuid programs; a program built with -fsanitize=address needs its runtime first: LD_PRELOAD=libasan.so.8 causeway record …) or failed before recording".into(),
        ),
    }
    Ok(Outcome {
        capture_dir: dir,
        code,
        notes,
    })
}
