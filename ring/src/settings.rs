//! The capture settings, defined once: what `causeway record` writes into a traced program's
//! environment and what the shim reads back from it at start-up — the capture level and what each
//! level records, the device-timing backend, the full-ring policy, the ring size, the events backend's
//! sampling, the output directory — and the name of every `CAUSEWAY_*` environment variable. Both
//! sides parse and format through here, so whatever one writes the other reads the same way.
//!
//! Parsing never panics and allocates only to say what is wrong: the shim runs it in its start-up
//! constructor, where a bad value must become one line on stderr and a shim that passes every call
//! through, never a crash of the traced program.
//!
//! The on-disk codes of the policy and the backend stay in `layout` (they are part of the format);
//! their names, parsing and the rules between settings are here.

pub use crate::layout::{Backend, Policy};
use std::ffi::OsString;
use std::fmt;
use std::str::FromStr;

/// The environment variables the shim and the CLI read, one constant each. The shim reads nothing
/// else of its own (besides `NVTX_INJECTION64_PATH`, which NVTX defines), so a capture can be set up
/// by hand with these alone.
pub mod env {
    /// The directory the shim writes its ring files into. Required: without it the shim records
    /// nothing.
    pub const OUT: &str = "CAUSEWAY_OUT";
    /// The capture level, 1 to 4 (`Level`); default 2.
    pub const LEVEL: &str = "CAUSEWAY_LEVEL";
    /// The device-timing backend at levels 3 and 4: `cupti` or `events` (`Backend`). Level 3 defaults
    /// to `cupti`; level 4 times the device only when one is named; levels 1 and 2 ignore it.
    pub const BACKEND: &str = "CAUSEWAY_BACKEND";
    /// The ring size per process in MiB, 1 to `MAX_RING_MB`; default `DEFAULT_RING_MB`.
    pub const RING_MB: &str = "CAUSEWAY_RING_MB";
    /// What a full ring does: `drop` (default) or `overwrite` (`Policy`).
    pub const POLICY: &str = "CAUSEWAY_POLICY";
    /// The events backend times one step in N (`DEFAULT_EVENTS_SAMPLE` when unset; 1: every call).
    pub const EVENTS_SAMPLE: &str = "CAUSEWAY_EVENTS_SAMPLE";
    /// The CUPTI library the `cupti` backend loads (a path, or a bare name for the loader's search);
    /// unset: next to the loaded libcudart, then the toolkit's usual places.
    pub const CUPTI: &str = "CAUSEWAY_CUPTI";
    /// `1` when `OUT` is the private directory `causeway record` made: the shim then refuses it if it
    /// was swapped for a link or for another user's directory.
    pub const PRIVATE_DIR: &str = "CAUSEWAY_PRIVATE_DIR";
    /// `monotonic` makes the ring's clock CLOCK_MONOTONIC instead of the invariant TSC.
    pub const CLOCK: &str = "CAUSEWAY_CLOCK";
    /// The tick clock a traced process measured (`tsc:<ticks per second>` or `monotonic`), handed to
    /// its children so that each does not measure it again (`causeway record` sets it for the first).
    pub const TICKS: &str = "CAUSEWAY_TICKS";
    /// Where `causeway record` finds the shim when `--shim` is not given (read by the CLI only).
    pub const SHIM: &str = "CAUSEWAY_SHIM";
    /// How the `cupti` backend ties device records to calls: `callback` (default) or `external`
    /// (`Correlation`).
    pub const CUPTI_CORRELATION: &str = "CAUSEWAY_CUPTI_CORRELATION";
    /// `1`: the `cupti` backend also collects kernels' queued and submitted times (CUPTI's latency
    /// timestamps, `causeway why`'s phases); off by default, for what it may cost per launch.
    pub const CUPTI_LATENCY: &str = "CAUSEWAY_CUPTI_LATENCY";
    /// Diagnostics of the `cupti` backend (comma-separated: `driver-domain`, `no-timestamp`,
    /// `no-runtime-cb`), to measure what each of its parts costs. Not for normal use.
    pub const CUPTI_DIAG: &str = "CAUSEWAY_CUPTI_DIAG";
    /// Diagnostic of the `events` backend: `grow-during-run` brings back the event pool that grew
    /// while the program ran (the distortion of issue 19). Not for normal use.
    pub const EVENTS_DIAG: &str = "CAUSEWAY_EVENTS_DIAG";
    /// Set (to anything but empty): `causeway export` prints each of its stages to stderr as it
    /// ends (time and CPU time since the start, resident memory, the peak within the stage), to measure
    /// where an export's time and memory go (docs/costs.md). Read by the CLI only; not for normal use.
    pub const STAGES: &str = "CAUSEWAY_STAGES";

    /// Every variable above with one line on what it does, in that order (for help and docs).
    pub const ALL: [(&str, &str); 16] = [
        (OUT, "directory the ring files are written into (required)"),
        (
            LEVEL,
            "capture level: 1 phases, 2 host (default), 3 full, 4 edge",
        ),
        (
            BACKEND,
            "device timing at levels 3 and 4: cupti (level 3's default) or events",
        ),
        (RING_MB, "ring size per process in MiB (default 64)"),
        (POLICY, "what a full ring does: drop (default) or overwrite"),
        (
            EVENTS_SAMPLE,
            "events backend: time one step in N (default 16; 1: every call)",
        ),
        (CUPTI, "the CUPTI library the cupti backend loads"),
        (
            PRIVATE_DIR,
            "1: the directory is causeway record's private one (refused if swapped)",
        ),
        (CLOCK, "monotonic: CLOCK_MONOTONIC ticks instead of the TSC"),
        (
            TICKS,
            "the measured tick clock, handed from a traced process to its children",
        ),
        (
            SHIM,
            "the shim causeway record preloads (default: beside the causeway executable)",
        ),
        (
            CUPTI_CORRELATION,
            "cupti backend: callback (default) or external correlation",
        ),
        (
            CUPTI_LATENCY,
            "cupti backend: 1 collects kernels' queued and submitted times",
        ),
        (CUPTI_DIAG, "cupti backend diagnostics (not for normal use)"),
        (
            EVENTS_DIAG,
            "events backend diagnostics (not for normal use)",
        ),
        (
            STAGES,
            "causeway export: each stage's time, CPU and memory on stderr (for measuring)",
        ),
    ];
}

/// Ring size per process in MiB when none is given (`--ring-mb`, `CAUSEWAY_RING_MB`).
pub const DEFAULT_RING_MB: u64 = 64;
/// The largest ring size in MiB the shim accepts.
pub const MAX_RING_MB: u64 = 1 << 16;

/// Whether `mb` is a ring size the shim accepts (1 to `MAX_RING_MB` MiB).
pub fn ring_mb_ok(mb: u64) -> bool {
    (1..=MAX_RING_MB).contains(&mb)
}

/// The events backend times one in this many steps (outermost NVTX push ranges; calls, in a program
/// without them) unless told otherwise (`--sample`, `CAUSEWAY_EVENTS_SAMPLE`): two timing events per
/// operation cost about 1.2 µs of host time each on the H200 (2026-12-01), which at sample 1 lengthens
/// a step of 80 µs ops by 9 % and one of 10 µs ops by 28 %; one step in 16 keeps both within 3 %.
pub const DEFAULT_EVENTS_SAMPLE: u32 = 16;

/// Whether `n` is a sampling rate (one in `n`; 1 times every call).
pub fn sample_ok(n: u32) -> bool {
    n >= 1
}

/// Whether a `CAUSEWAY_CLOCK` value forces the CLOCK_MONOTONIC tick clock.
pub fn forces_monotonic(value: Option<&str>) -> bool {
    value == Some("monotonic")
}

/// A value a setting does not take. Displays as `VALUE is not EXPECTED`, so that `NAME=` in front of
/// it makes the shim's message (`CAUSEWAY_POLICY=x is not drop or overwrite`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    pub value: String,
    pub expected: String,
}

impl fmt::Display for Invalid {
    /// The value as data: control characters escaped (an environment's value must not reach the
    /// terminal as a control sequence) and cut after 64 characters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown: String = (self.value.chars().take(64))
            .flat_map(|c| match c.is_control() {
                true => c.escape_default().collect::<Vec<_>>(),
                false => vec![c],
            })
            .collect();
        if self.value.chars().nth(64).is_some() {
            shown.push('…');
        }
        write!(f, "{shown} is not {}", self.expected)
    }
}

impl std::error::Error for Invalid {}

/// A setting with a fixed set of named values (`--policy drop`, `CAUSEWAY_BACKEND=events`): the names a
/// user can give, in the order help lists them, and one line of help each. The CLI builds its option
/// parsers from this, the shim parses the environment with it.
pub trait Choice: Copy + 'static {
    /// The values a user can name.
    const CHOICES: &'static [Self];
    fn name(self) -> &'static str;
    /// One line on what the value does, for `--help`.
    fn about(self) -> &'static str;

    /// The value named `s` (exactly as `name` spells it).
    fn from_name(s: &str) -> Result<Self, Invalid> {
        Self::CHOICES
            .iter()
            .copied()
            .find(|c| c.name() == s)
            .ok_or_else(|| Invalid {
                value: s.to_string(),
                expected: Self::expected(),
            })
    }

    /// The names, as a message lists them: `drop or overwrite`, `a, b or c`.
    fn expected() -> String {
        let names: Vec<&str> = Self::CHOICES.iter().map(|c| c.name()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            Some((last, _)) => last.to_string(),
            None => String::new(),
        }
    }
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Drop => "drop",
            Policy::Overwrite => "overwrite",
        }
    }
}

impl Choice for Policy {
    const CHOICES: &'static [Policy] = &[Policy::Drop, Policy::Overwrite];
    fn name(self) -> &'static str {
        Policy::name(self)
    }
    fn about(self) -> &'static str {
        match self {
            Policy::Drop => "Keep the oldest entries and count the dropped ones",
            Policy::Overwrite => "Keep the newest entries (flight recorder)",
        }
    }
}

impl Backend {
    /// `none`, `cupti` or `events` (also how a capture's header is described); `unified_runtime`
    /// and `level_zero` for the Intel runtimes' own timing, which the shim uses where the program's
    /// work goes through them.
    pub fn name(self) -> &'static str {
        match self {
            Backend::None => "none",
            Backend::Cupti => "cupti",
            Backend::Events => "events",
            Backend::UnifiedRuntime => "unified_runtime",
            Backend::LevelZero => "level_zero",
        }
    }

    /// Whether this backend can time only some steps (`--sample`, `CAUSEWAY_EVENTS_SAMPLE`): CUPTI
    /// records every kernel; timing events can be sampled.
    pub fn samples(self) -> bool {
        self == Backend::Events
    }
}

/// The backends a user can name (`none` is what is left when none is named, not a choice).
impl Choice for Backend {
    const CHOICES: &'static [Backend] = &[Backend::Cupti, Backend::Events];
    fn name(self) -> &'static str {
        Backend::name(self)
    }
    fn about(self) -> &'static str {
        match self {
            Backend::None => "No device timing",
            Backend::Cupti => "CUPTI activity records on the host clock",
            Backend::Events => "CUDA timing events around each operation, anchored to host time",
            Backend::UnifiedRuntime => "Unified Runtime event profiling, anchored to host time",
            Backend::LevelZero => "Level Zero kernel timestamp events, anchored to host time",
        }
    }
}

/// How the `cupti` backend ties CUPTI's device records to calls (`CAUSEWAY_CUPTI_CORRELATION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Correlation {
    /// Each outermost device-work call pushes its sequence number as an external correlation id.
    External,
    /// CUPTI's API callbacks note (correlation id → call); no per-call API records. The default:
    /// as exact, and 2.3 µs cheaper per launch on the H200 (docs/costs.md, issue 26).
    #[default]
    Callback,
}

impl Choice for Correlation {
    const CHOICES: &'static [Correlation] = &[Correlation::External, Correlation::Callback];
    fn name(self) -> &'static str {
        match self {
            Correlation::External => "external",
            Correlation::Callback => "callback",
        }
    }
    fn about(self) -> &'static str {
        match self {
            Correlation::External => "External correlation ids pushed around each device-work call",
            Correlation::Callback => "CUPTI's API callbacks note which call issued what",
        }
    }
}

macro_rules! from_str_by_name {
    ($($t:ty),*) => {$(
        impl FromStr for $t {
            type Err = Invalid;
            fn from_str(s: &str) -> Result<Self, Invalid> {
                <$t as Choice>::from_name(s)
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(Choice::name(*self))
            }
        }
    )*};
}
from_str_by_name!(Policy, Backend, Correlation);

/// A capture level: what the shim records. Each level records everything the ones below it do. The
/// hook tables give each hooked call the lowest level that records it.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// 1: NVTX ranges and marks, process and thread lifecycle.
    Phases = 1,
    /// 2: + the calls that issue device work or wait for it, with host times (which calls:
    /// docs/interception.md, generated with the hook tables).
    Host = 2,
    /// 3: + device intervals: when each kernel, copy and memset ran on the device, from a
    /// device-timing backend.
    Full = 3,
    /// 4: + every intercepted call (queries, handles, allocation, module loading, entry-point
    /// lookups); device intervals only with a backend named.
    Edge = 4,
}

impl Level {
    pub const ALL: [Level; 4] = [Level::Phases, Level::Host, Level::Full, Level::Edge];
    /// The level when none is given (`--level`, `CAUSEWAY_LEVEL`).
    pub const DEFAULT: Level = Level::Host;
    /// What `CAUSEWAY_LEVEL` must be.
    const EXPECTED: &'static str = "one of 1, 2, 3, 4";

    /// The level numbered `n` (1 to 4).
    pub fn from_number(n: u32) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.number() as u32 == n)
    }

    /// 1 to 4, as the environment, the ring header and the hook tables number levels.
    pub const fn number(self) -> u8 {
        self as u8
    }

    /// `phases`, `host`, `full` or `edge`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Phases => "phases",
            Level::Host => "host",
            Level::Full => "full",
            Level::Edge => "edge",
        }
    }

    /// Whether device timing may be on at this level: 3, whose point it is, and 4, on request.
    pub fn may_time_device(self) -> bool {
        self >= Level::Full
    }

    /// The backend this level times the device with when none is named: CUPTI at level 3 (device
    /// intervals are what level 3 adds); none at level 4 (every host call; device timing there is
    /// opt-in) and below 3.
    pub fn default_backend(self) -> Backend {
        if self == Level::Full {
            Backend::Cupti
        } else {
            Backend::None
        }
    }
}

impl FromStr for Level {
    type Err = Invalid;
    /// Exactly `1`, `2`, `3` or `4`.
    fn from_str(s: &str) -> Result<Level, Invalid> {
        Level::ALL
            .into_iter()
            .find(|l| s.len() == 1 && s.as_bytes()[0] == b'0' + l.number())
            .ok_or_else(|| Invalid {
                value: s.to_string(),
                expected: Level::EXPECTED.to_string(),
            })
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

impl From<Level> for u32 {
    fn from(l: Level) -> u32 {
        l.number() as u32
    }
}

/// The settings of one capture, as `causeway record` hands them to the shim through the environment
/// (`to_env`) and the shim reads them back (`from_env`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Where the ring files go (`CAUSEWAY_OUT`).
    pub out: OsString,
    /// `out` is the private directory `causeway record` made (`CAUSEWAY_PRIVATE_DIR=1`).
    pub private_dir: bool,
    pub level: Level,
    /// Where device intervals come from (`Backend::None`: nowhere). Always `None` below level 3.
    pub backend: Backend,
    /// Ring size per process in MiB.
    pub ring_mb: u64,
    pub policy: Policy,
    /// The events backend times one step in this many (`None`: `DEFAULT_EVENTS_SAMPLE`). Only with
    /// the events backend.
    pub sample: Option<u32>,
    /// The CUPTI library (`CAUSEWAY_CUPTI`). The `cupti` backend reads the variable itself when it
    /// starts, on the process's first call, not at start-up.
    pub cupti: Option<OsString>,
}

impl Settings {
    /// The defaults, writing into `out`.
    pub fn new(out: impl Into<OsString>) -> Settings {
        Settings {
            out: out.into(),
            private_dir: false,
            level: Level::DEFAULT,
            backend: Level::DEFAULT.default_backend(),
            ring_mb: DEFAULT_RING_MB,
            policy: Policy::Drop,
            sample: None,
            cupti: None,
        }
    }

    /// The events backend's sampling rate, the default applied.
    pub fn sample_every(&self) -> u32 {
        self.sample.unwrap_or(DEFAULT_EVENTS_SAMPLE)
    }

    /// The environment that hands these settings to the shim: `(variable, Some(value))` to set and
    /// `(variable, None)` to remove, so that a variable inherited from the caller's environment never
    /// contradicts them (`CAUSEWAY_CUPTI` only when given).
    pub fn to_env(&self) -> Vec<(&'static str, Option<OsString>)> {
        let mut v = vec![
            (env::OUT, Some(self.out.clone())),
            (env::LEVEL, Some(self.level.to_string().into())),
            (env::RING_MB, Some(self.ring_mb.to_string().into())),
            (env::POLICY, Some(self.policy.name().into())),
            (env::PRIVATE_DIR, self.private_dir.then(|| "1".into())),
            (
                env::BACKEND,
                (self.backend != Backend::None).then(|| self.backend.name().into()),
            ),
            (
                env::EVENTS_SAMPLE,
                self.sample.map(|n| n.to_string().into()),
            ),
        ];
        if let Some(c) = &self.cupti {
            v.push((env::CUPTI, Some(c.clone())));
        }
        v
    }

    /// The settings as the shim reads them at start-up, from `get` (a variable's value; `None` when
    /// unset or empty). `Err` is the one line that says what is wrong (the shim then records nothing);
    /// the warnings are things to say once the capture runs (a bad sampling rate takes the default).
    /// The backend is read only at the levels that time the device, the sampling rate only with the
    /// events backend.
    pub fn from_env(
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<(Settings, Vec<String>), String> {
        let out = get(env::OUT).ok_or_else(|| {
            format!(
                "{} is not set (use `causeway record` or set it to a directory)",
                env::OUT
            )
        })?;
        let level = match get(env::LEVEL) {
            None => Level::DEFAULT,
            Some(v) => v.parse().map_err(|e| format!("{}={e}", env::LEVEL))?,
        };
        let backend = if !level.may_time_device() {
            Backend::None
        } else {
            match get(env::BACKEND) {
                None => level.default_backend(),
                Some(v) => v.parse().map_err(|e| format!("{}={e}", env::BACKEND))?,
            }
        };
        let ring_mb = match get(env::RING_MB) {
            None => DEFAULT_RING_MB,
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|&m| ring_mb_ok(m))
                .ok_or_else(|| {
                    let e = Invalid {
                        value: v,
                        expected: format!("1..={MAX_RING_MB}"),
                    };
                    format!("{}={e}", env::RING_MB)
                })?,
        };
        let policy = match get(env::POLICY) {
            None => Policy::Drop,
            Some(v) => v.parse().map_err(|e| format!("{}={e}", env::POLICY))?,
        };
        let mut warnings = Vec::new();
        let sample = match get(env::EVENTS_SAMPLE) {
            Some(v) if backend.samples() => match v.parse::<u32>() {
                Ok(n) if sample_ok(n) => Some(n),
                _ => {
                    let e = Invalid {
                        value: v,
                        expected: "a whole number >= 1".into(),
                    };
                    warnings.push(format!(
                        "{}={e}; timing one step in {DEFAULT_EVENTS_SAMPLE}",
                        env::EVENTS_SAMPLE
                    ));
                    None
                }
            },
            _ => None,
        };
        let settings = Settings {
            out: out.into(),
            private_dir: get(env::PRIVATE_DIR).as_deref() == Some("1"),
            level,
            backend,
            ring_mb,
            policy,
            sample,
            cupti: get(env::CUPTI).map(OsString::from),
        };
        Ok((settings, warnings))
    }
}

/// A variable of this process's environment as the shim reads it: `None` when unset, empty or not
/// UTF-8.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<(Settings, Vec<String>), String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_env(|k| m.get(k).cloned().filter(|v| !v.is_empty()))
    }

    fn err(vars: &[(&str, &str)]) -> String {
        read(vars).unwrap_err()
    }

    #[test]
    fn names_are_one_each_and_all_listed() {
        let names: Vec<&str> = env::ALL.iter().map(|(n, _)| *n).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "a variable listed twice");
        assert!(names.iter().all(|n| n.starts_with("CAUSEWAY_")));
        for n in [
            env::OUT,
            env::LEVEL,
            env::BACKEND,
            env::RING_MB,
            env::POLICY,
            env::EVENTS_SAMPLE,
            env::CUPTI,
            env::PRIVATE_DIR,
            env::CLOCK,
            env::TICKS,
            env::SHIM,
            env::CUPTI_CORRELATION,
            env::CUPTI_DIAG,
            env::EVENTS_DIAG,
            env::STAGES,
        ] {
            assert!(names.contains(&n), "{n} is not in env::ALL");
        }
    }

    #[test]
    fn the_shims_messages() {
        assert_eq!(
            err(&[]),
            "CAUSEWAY_OUT is not set (use `causeway record` or set it to a directory)"
        );
        let o = ("CAUSEWAY_OUT", "/tmp/x");
        assert_eq!(
            err(&[o, ("CAUSEWAY_LEVEL", "5")]),
            "CAUSEWAY_LEVEL=5 is not one of 1, 2, 3, 4"
        );
        assert_eq!(
            err(&[o, ("CAUSEWAY_LEVEL", "02")]),
            "CAUSEWAY_LEVEL=02 is not one of 1, 2, 3, 4"
        );
        assert_eq!(
            err(&[o, ("CAUSEWAY_LEVEL", "3"), ("CAUSEWAY_BACKEND", "nsys")]),
            "CAUSEWAY_BACKEND=nsys is not cupti or events"
        );
        assert_eq!(
            err(&[o, ("CAUSEWAY_LEVEL", "3"), ("CAUSEWAY_BACKEND", "none")]),
            "CAUSEWAY_BACKEND=none is not cupti or events"
        );
        assert_eq!(
            err(&[o, ("CAUSEWAY_RING_MB", "0")]),
            "CAUSEWAY_RING_MB=0 is not 1..=65536"
        );
        assert_eq!(
            err(&[o, ("CAUSEWAY_RING_MB", "lots")]),
            "CAUSEWAY_RING_MB=lots is not 1..=65536"
        );
        assert_eq!(
            err(&[o, ("CAUSEWAY_POLICY", "keep")]),
            "CAUSEWAY_POLICY=keep is not drop or overwrite"
        );
        // A value is data: no control sequence of it reaches the terminal, and a long one is cut.
        assert_eq!(
            err(&[o, ("CAUSEWAY_LEVEL", "\u{1b}[31mred\n")]),
            "CAUSEWAY_LEVEL=\\u{1b}[31mred\\n is not one of 1, 2, 3, 4"
        );
        assert_eq!(
            err(&[o, ("CAUSEWAY_POLICY", &"x".repeat(100))]),
            format!(
                "CAUSEWAY_POLICY={}… is not drop or overwrite",
                "x".repeat(64)
            )
        );
        // The first bad value is the one reported, in this order.
        assert_eq!(
            err(&[o, ("CAUSEWAY_LEVEL", "9"), ("CAUSEWAY_POLICY", "keep")]),
            "CAUSEWAY_LEVEL=9 is not one of 1, 2, 3, 4"
        );
    }

    #[test]
    fn backends_follow_the_level() {
        let o = ("CAUSEWAY_OUT", "/tmp/x");
        let backend = |vars: &[(&str, &str)]| read(vars).unwrap().0.backend;
        assert_eq!(backend(&[o, ("CAUSEWAY_LEVEL", "3")]), Backend::Cupti);
        assert_eq!(backend(&[o, ("CAUSEWAY_LEVEL", "4")]), Backend::None);
        for l in ["3", "4"] {
            for (name, b) in [("cupti", Backend::Cupti), ("events", Backend::Events)] {
                assert_eq!(
                    backend(&[o, ("CAUSEWAY_LEVEL", l), ("CAUSEWAY_BACKEND", name)]),
                    b
                );
            }
        }
        // Levels 1 and 2 never time the device, and do not even read the variable.
        for l in ["1", "2"] {
            assert_eq!(
                backend(&[o, ("CAUSEWAY_LEVEL", l), ("CAUSEWAY_BACKEND", "nsys")]),
                Backend::None
            );
            assert_eq!(backend(&[o, ("CAUSEWAY_LEVEL", l)]), Backend::None);
        }
        assert!(!Level::Host.may_time_device() && Level::Edge.may_time_device());
    }

    #[test]
    fn a_bad_sample_takes_the_default_and_says_so() {
        let o = ("CAUSEWAY_OUT", "/tmp/x");
        let ev = [o, ("CAUSEWAY_LEVEL", "3"), ("CAUSEWAY_BACKEND", "events")];
        let with = |v: &str| {
            let mut vars = ev.to_vec();
            vars.push(("CAUSEWAY_EVENTS_SAMPLE", v));
            read(&vars).unwrap()
        };
        assert_eq!(with("4").0.sample, Some(4));
        assert_eq!(with("4").0.sample_every(), 4);
        let (s, w) = with("0");
        assert_eq!((s.sample, s.sample_every()), (None, 16));
        assert_eq!(
            w,
            vec!["CAUSEWAY_EVENTS_SAMPLE=0 is not a whole number >= 1; timing one step in 16"]
        );
        assert_eq!(with("-3").1.len(), 1);
        // Only the events backend samples: elsewhere the variable is not read.
        let (s, w) = read(&[o, ("CAUSEWAY_LEVEL", "3"), ("CAUSEWAY_EVENTS_SAMPLE", "x")]).unwrap();
        assert_eq!((s.sample, w.len()), (None, 0));
    }

    #[test]
    fn what_the_cli_writes_the_shim_reads() {
        let mut s = Settings::new("/tmp/caps/cw-1");
        let plain = s.clone();
        s.private_dir = true;
        s.level = Level::Full;
        s.backend = Backend::Events;
        s.ring_mb = 256;
        s.policy = Policy::Overwrite;
        s.sample = Some(4);
        s.cupti = Some("libcupti.so.13".into());
        for s in [plain, s] {
            let vars: HashMap<&str, Option<OsString>> = s.to_env().into_iter().collect();
            let back = Settings::from_env(|k| {
                vars.get(k)
                    .cloned()
                    .flatten()
                    .map(|v| v.into_string().unwrap())
            })
            .unwrap();
            assert_eq!(back, (s.clone(), vec![]));
            // Settings left at their default are removed, never inherited.
            assert!(vars.contains_key(env::BACKEND) && vars.contains_key(env::EVENTS_SAMPLE));
        }
    }

    #[test]
    fn names_parse_and_print_alike() {
        for p in Policy::CHOICES {
            assert_eq!(p.name().parse::<Policy>(), Ok(*p));
            assert_eq!(p.to_string(), p.name());
        }
        for b in Backend::CHOICES {
            assert_eq!(b.name().parse::<Backend>(), Ok(*b));
        }
        assert_eq!(Backend::expected(), "cupti or events");
        assert_eq!(Policy::expected(), "drop or overwrite");
        assert_eq!(Correlation::expected(), "external or callback");
        assert_eq!(Backend::None.name(), "none");
        for l in Level::ALL {
            assert_eq!(l.to_string().parse::<Level>(), Ok(l));
            assert_eq!(Level::from_number(l.number() as u32), Some(l));
        }
        assert_eq!(Level::from_number(0), None);
        assert_eq!(Level::from_number(5), None);
        assert_eq!(Level::DEFAULT.number(), 2);
        assert_eq!(Level::Full.default_backend(), Backend::Cupti);
        assert_eq!(Level::Edge.default_backend(), Backend::None);
        // The on-disk codes are the format's and never change.
        assert_eq!((Policy::Drop as u32, Policy::Overwrite as u32), (1, 2));
        assert_eq!(
            (
                Backend::None as u32,
                Backend::Cupti as u32,
                Backend::Events as u32
            ),
            (0, 1, 2)
        );
        assert!(forces_monotonic(Some("monotonic")) && !forces_monotonic(Some("tsc")));
        assert!(!forces_monotonic(None));
    }
}
