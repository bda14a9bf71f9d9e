//! causeway-cli: the `causeway` command line. `record` runs a program under the shim ([`record`]),
//! `report`, `export`, `html` and `compare` read captures through the `causeway-scanner` library,
//! `control` checks a capture's claims against runs without device timing ([`control`], its logic
//! in `causeway-control`). This crate parses arguments, prints, and owns the exit codes: every
//! failure is one line on stderr and exit code 2; record's own failures 125–127; the traced
//! program's own exit code passes through `record` unchanged.

use causeway_cli::{control, line, record};

use causeway_cli::record::RecordOptions;
use causeway_ring::settings::{Backend, Choice, Policy};
use causeway_scanner::analysis::steps::StepOptions;
use causeway_scanner::analysis::views::{ViewOptions, Views};
use causeway_scanner::render::text as render;
use causeway_scanner::Report;
use clap::{Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Large tables on huge pages (see `hugealloc`): a fifth of a large report's time was page faults.
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOC: causeway_scanner::util::hugealloc::HugeAlloc =
    causeway_scanner::util::hugealloc::HugeAlloc;

/// Exit code for every causeway failure (bad capture, bad option, missing shim or command).
const EXIT_ERROR: u8 = 2;

#[derive(Parser)]
#[command(
    name = "causeway",
    version,
    about = "Trace what a GPU program asks of CUDA, and report it",
    long_about = "Trace what a GPU program asks of CUDA, and report it.\n\n\
        causeway record runs a program with the causeway shim (libcauseway.so) preloaded; the shim \
        records CUDA runtime, driver and NVTX calls (and, at level 3, when the device ran the work) \
        into one ring file per process. report summarizes a capture (--steps: per NVTX step, --gaps: \
        gaps between device work), export writes it for Perfetto, chrome://tracing or as Parquet \
        tables, html as one page, compare puts two captures side by side, and control checks what \
        device timing changed.",
    after_help = "EXAMPLES:\n  \
        causeway record --level 3 --out /tmp/caps -- python train.py\n  \
        causeway report /tmp/caps/cw-20261201-120000-4242\n  \
        causeway report --steps --gaps /tmp/caps/cw-20261201-120000-4242\n  \
        causeway html -o run.html /tmp/caps/cw-20261201-120000-4242\n  \
        causeway export --format perfetto -o run.pftrace /tmp/caps/cw-20261201-120000-4242\n  \
        causeway compare before/cw-… after/cw-…\n\n\
        Docs: README.md, docs/views.md (what each figure means), docs/control.md, docs/parquet.md."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a command under the shim and write a capture directory
    #[command(
        override_usage = "causeway record [OPTIONS] -- CMD [ARGS]...",
        long_about = "Run CMD with the causeway shim preloaded, writing one ring file per process into a \
            fresh capture directory DIR/cw-<YYYYmmdd-HHMMSS>-<pid>. Exits with CMD's exit code \
            (128+S if a signal S killed it).",
        after_help = "LEVELS (what is recorded; each level includes the ones before it):\n  \
            1  phases: NVTX ranges and marks, process and thread lifecycle\n  \
            2  host:   + the calls that issue device work or wait for it (launches, copies, memsets,\n             \
            prefetches, stream memory operations, graph launches and uploads, host functions,\n             \
            syncs, event records and waits, stream waits, context events, graph instantiation,\n             \
            stream capture, stream, event and graph lifetimes: creation and destruction)\n  \
            3  full:   + device intervals: when each kernel, copy and memset ran on the device,\n             \
            tied to the call that issued it (the device-timing backend, --backend)\n  \
            4  edge:   + every other call of the CUDA runtime and driver API (docs/interception.md):\n             \
            queries, handles, allocations, module loading, entry-point lookups (device intervals\n             \
            only with --backend)\n\n\
            DEVICE TIMING (level 3, default cupti; level 4 with --backend; an error at levels 1 and 2):\n  \
            cupti   CUPTI activity records, put on the host clock by CUPTI's timestamp callback\n          \
            (default); --cupti PATH names libcupti.so (CAUSEWAY_CUPTI), else the loader finds it\n  \
            events  CUDA timing events recorded around each launch, copy, memset and graph launch on\n          \
            its stream (never on a capturing stream), anchored to host time by reference events;\n          \
            the report states the conversion bound. Works where CUPTI is taken (torch.profiler,\n          \
            Nsight); a graph launch is one interval (its nodes are not seen). An interval spans the\n          \
            stream between the two events: an upper bound on the work's device time. --sample N\n          \
            (CAUSEWAY_EVENTS_SAMPLE) times one step in N (outermost NVTX ranges, every call in a\n          \
            timed one; one call in N without ranges): default 16, --sample 1 times every call\n          \
            (two timing events per op cost ~1.2 us of host time each: +11 % on an 80 us-op step)\n\n\
            POLICIES (what a full ring does):\n  \
            drop       keep the oldest entries; count each dropped entry exactly (default)\n  \
            overwrite  flight recorder: keep the newest entries, overwriting the oldest\n\n\
            The ring is 64 MiB per process by default (--ring-mb); one entry takes 64 bytes.\n\n\
            The shim reads only environment variables, so it works without this command:\n  \
            LD_PRELOAD=/path/to/libcauseway.so CAUSEWAY_OUT=DIR CAUSEWAY_LEVEL=2 \\\n  \
            CAUSEWAY_RING_MB=64 CAUSEWAY_POLICY=drop CMD [ARGS...]\n\
            (level 3 adds CAUSEWAY_BACKEND=cupti|events and optionally CAUSEWAY_CUPTI=PATH)\n\
            The shim is found as --shim PATH, else $CAUSEWAY_SHIM, else libcauseway.so beside causeway.\n\n\
            EXIT: the program's exit code (128+S when signal S ended it; SIGTERM and SIGHUP sent to\n\
            record are passed on to it); 125 when record itself fails, 126 when the command cannot be\n\
            run, 127 when it is not found.\n\n\
            EXAMPLES:\n  \
            causeway record -- ./my_cuda_app --size 4096\n  \
            causeway record --level 3 --out /tmp/caps -- python train.py\n  \
            causeway record --level 3 --backend events -- python serve.py   # where CUPTI is taken\n  \
            causeway record --level 4 --ring-mb 256 --policy overwrite -- ./long_job"
    )]
    Record(RecordArgs),
    /// Summarize a capture (a capture directory or one .cwring file)
    #[command(
        long_about = "Summarize a capture (a capture directory or one .cwring file): processes, APIs, \
            kernels, NVTX ranges and marks, as tables or (--json) one JSON object.",
        after_help = "KERNEL COUNTS (comparable to a profiler's count of kernel executions):\n  \
            launches   direct + graph\n  \
            direct     successful launch calls outside stream capture (a runtime launch and the\n             \
            driver launch it makes count once)\n  \
            graph      one per kernel node of each successful graph launch (JSON: via_graph)\n  \
            captured   launches into a stream being captured: they built a graph and ran nothing\n  \
            failed     launch calls that returned an error\n  \
            open       launch calls that had not returned\n\n\
            A graph launch whose graph's instantiation is not in the capture cannot be expanded; it is\n\
            counted in totals.graph_launches_unresolved and its kernels are missing from launches.\n\n\
            DEVICE (level 3 captures): device intervals say when each kernel, copy and memset ran. Each is\n\
            tied to the call that issued it by sequence number (never by time); the kernels table adds\n\
            `device` (executions observed) beside launches (executions requested). Device time per kernel\n\
            and per copy kind is shown with p50/p99; launch->start = device start - issuing call's begin\n\
            (for graph kernels, the graph launch's). The clock line says how device times were put on the\n\
            host clock; the causality line counts intervals that start before their call, which bounds\n\
            the conversion error from below. Intervals not on the host clock give durations only.\n\n\
            Definitions of every figure: docs/views.md.\n\n\
            EXAMPLES:\n  \
            causeway report CAPTURE\n  \
            causeway report --json CAPTURE | jq '.kernels[:5]'\n  \
            causeway report --steps --range train_step CAPTURE\n  \
            causeway report --gaps CAPTURE"
    )]
    Report {
        /// Print one JSON object instead of tables
        #[arg(long)]
        json: bool,
        /// Per-step view instead of the summary: steps are NVTX ranges (--range, else the outermost
        /// range that repeats most); per step host time in launches and syncs, NVTX sub-ranges, device
        /// busy/idle, copy, compute and their overlap, with min/median/p99/max, the slowest steps and a
        /// histogram of step times (definitions: docs/views.md)
        #[arg(long)]
        steps: bool,
        /// With --steps: the steps are the ranges with this name
        #[arg(long, value_name = "NAME", requires = "steps")]
        range: Option<String>,
        /// With --steps: only ranges of this NVTX domain
        #[arg(long, value_name = "DOMAIN", requires = "steps")]
        domain: Option<String>,
        /// Launch-gap view instead of the summary (with --steps: as well): gaps between consecutive
        /// device spans per stream and for all streams, p50/p99/p99.9/max, and the largest gaps with
        /// the host calls and NVTX ranges in them (definitions: docs/views.md)
        #[arg(long)]
        gaps: bool,
        /// A capture directory (cw-…) or a single ring file
        capture: PathBuf,
    },
    /// Write a capture as a timeline (Perfetto protobuf, Chrome JSON) or as Parquet tables
    #[command(
        long_about = "Write a capture (a capture directory or one .cwring file) as a trace file for a \
            timeline viewer: chrome (Trace Event Format JSON: chrome://tracing, ui.perfetto.dev) or \
            perfetto (protobuf .pftrace: ui.perfetto.dev, trace_processor); or as a directory of Parquet \
            tables (parquet: DuckDB, pandas, Spark; schema in docs/parquet.md); or as the causal graph \
            `causeway why` reads (graph: one JSON document, for tools and benchmarks).",
        after_help = "LAYOUT (both formats):\n  \
            one process per traced process; one track per host thread with its calls and NVTX ranges as\n  \
            slices and its marks as instants; one track per device stream (after the threads) with the\n  \
            kernels, copies, memsets and graph launches on the host clock; an arrow from each call to\n  \
            the device work it issued. A slice that does not nest on its track (interleaved NVTX ranges,\n  \
            overlapping device spans) goes on an extra `(overlap N)` track: nothing is dropped or clipped.\n\n\
            Times are the capture's CLOCK_MONOTONIC nanoseconds. Each device span carries bound_ns, the\n\
            uncertainty of its conversion to host time; the file's metadata (chrome: the top-level\n\
            `metadata` object; perfetto: the `causeway capture` instant on each process) has the\n\
            backend, the largest bound and how many device intervals had no host time (left out).\n\n\
            PARQUET: processes, calls, device_intervals, ranges, marks and steps, one file each; every\n\
            table keyed by the ring (its `ring` column). --force replaces only an earlier export.\n\n\
            GRAPH: {capture, processes: [{ring, pid, exe, calls, ranges, device, absent, edges}]}; an\n  \
            edge is {from, to, kind, evidence}, its ends {\"call\": i}, {\"work\": i} (an index into\n  \
            calls or device) or {\"absent\": i} (a record the capture lacks, described in absent).\n\n\
            EXAMPLES:\n  \
            causeway export --format perfetto -o run.pftrace CAPTURE\n  \
            causeway export --format chrome -o run.json CAPTURE\n  \
            causeway export --format parquet -o run.pq CAPTURE\n  \
            duckdb -c \"SELECT name, COUNT(*) FROM 'run.pq/device_intervals.parquet' GROUP BY name\""
    )]
    Export {
        /// Output format
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: ExportFormat,
        /// The file to write (for parquet: a directory, one .parquet file per table)
        #[arg(short = 'o', long = "output", value_name = "PATH")]
        output: PathBuf,
        /// Replace PATH if it exists
        #[arg(long)]
        force: bool,
        /// A capture directory (cw-…) or a single ring file
        capture: PathBuf,
    },
    /// Write one self-contained HTML page for a capture: charts, top kernels, a zoomable timeline
    #[command(
        long_about = "Write one self-contained HTML page for a capture (a capture directory or one \
            .cwring file): a header with the processes, the clock conversion and its bound and what was \
            dropped; step times with min/median/p99/max; per-step host budget (launch / sync / other) and \
            device busy vs idle; a histogram of the gaps between device spans; the top kernels; and a \
            zoomable timeline of one step (default the slowest; the whole capture without steps).",
        after_help = "The page needs no network: CSS and JavaScript are inline and the data is embedded \
            as JSON.\nSteps are chosen as by `report --steps` (--range NAME, else the outermost repeating \
            NVTX range).\nAn existing -o file is replaced only with --force.\n\n\
            EXAMPLES:\n  \
            causeway html CAPTURE                      # writes report.html\n  \
            causeway html --range decode -o decode.html CAPTURE"
    )]
    Html {
        /// The file to write
        #[arg(
            short = 'o',
            long = "output",
            value_name = "PATH",
            default_value = "report.html"
        )]
        output: PathBuf,
        /// Replace PATH if it exists
        #[arg(long)]
        force: bool,
        /// The steps are the ranges with this name
        #[arg(long, value_name = "NAME")]
        range: Option<String>,
        /// A capture directory (cw-…) or a single ring file
        capture: PathBuf,
    },
    /// Put two captures side by side: step figures, kernels and APIs, A, B and B - A
    #[command(
        long_about = "Put two captures (capture directories or ring files) side by side: per step figure \
            (wall, launch, sync, other; device busy, idle, copy, compute, overlap) A's and B's min, median \
            and max, the difference of medians B - A and its spread; per kernel name count, p50 and total, \
            and per API calls and p50 host time, A, B and B - A. Numbers only.",
        after_help = "SPREAD: the nearest-rank p5 and p95 of the n_A x n_B differences b - a over every pair \
            of an A step and a B step\n(computed exactly). Steps are chosen with the same rule on both sides: \
            --range NAME, else each process's outermost\nrepeating NVTX range (as `report --steps`). \
            Kernels: device time per name when both captures have device intervals\n(level 3), else \
            executions requested. A warning says when backends or levels differ: the figures are then not\n\
            like for like. Definitions: docs/views.md.\n\n\
            EXAMPLES:\n  \
            causeway compare before/cw-… after/cw-…\n  \
            causeway compare --json --range train_step A B"
    )]
    Compare {
        /// Print one JSON object instead of tables
        #[arg(long)]
        json: bool,
        /// The steps are the ranges with this name, on both sides
        #[arg(long, value_name = "NAME")]
        range: Option<String>,
        /// The first capture (A)
        a: PathBuf,
        /// The second capture (B)
        b: PathBuf,
    },
    /// Why one item was late: its critical predecessor chain, each link's edge type and evidence
    #[command(
        long_about = "Explain one item of a capture from its dependency graph (host calls, device work; \
            program order, issue, stream order, event waits, host waits; each edge explicit, observed, \
            inferred or missing): the critical predecessor chain back from the item, per link what, edge \
            type, evidence class and the delay that entered there; the item's phases (issue, submitted, \
            start, end); a cause — host (issued late: what the thread did before), dependency (waited \
            for a predecessor: which), device (ready, but the device was busy: with what) or unknown (a \
            record the chain needs is not in the capture) — and whether the chain is complete. Late is \
            against a stated baseline: the median of the same item (kernel launch-to-start latency, \
            step time, API call duration).",
        group(clap::ArgGroup::new("what").required(true).args(["step", "kernel", "call"])),
        after_help = "Device work needs a level-3 capture; at level 2 chains run through calls only.\n\
            JSON keys: target, pid, late_ns, baseline, cause, detail, complete, chain [{what, node, edge, \
            evidence, confidence, delay_ns}], phases, scope. Definitions: docs/views.md.\n\n\
            EXAMPLES:\n  \
            causeway why --step slowest CAPTURE\n  \
            causeway why --step 12 --range train_step CAPTURE\n  \
            causeway why --kernel gemm_kernel#3 --json CAPTURE\n  \
            causeway why --call 4242:1234 CAPTURE"
    )]
    Why {
        /// Print one JSON object instead of text
        #[arg(long)]
        json: bool,
        /// A step of the steps view by index, or `slowest`
        #[arg(long, value_name = "N|slowest")]
        step: Option<String>,
        /// The steps are the ranges with this name (with --step)
        #[arg(long, value_name = "NAME", requires = "step")]
        range: Option<String>,
        /// An execution of a kernel: NAME (the latest against its baseline) or NAME#K (the K-th, from 1)
        #[arg(long, value_name = "NAME[#K]")]
        kernel: Option<String>,
        /// A call: PID:SEQ
        #[arg(long, value_name = "PID:SEQ")]
        call: Option<String>,
        /// A capture directory (cw-…) or a single ring file
        capture: PathBuf,
    },
    /// Check the instrumented arm's claims against runs without device timing (and optionally bare)
    #[command(
        override_usage = "causeway control [OPTIONS] -- CMD [ARGS]...",
        long_about = "Run CMD in interleaved arms, N runs each — instrumented (the shim at --level and \
            --backend), control (the shim without device timing: no CUPTI, no timing events; NVTX steps \
            and host time only) and, with --bare, bare (no shim) — and check every claim the \
            instrumented arm supports against the control: step time, per-step copy/compute overlap, \
            concurrency between streams and, with --bare, process time. Each claim is printed as \
            instrumented vs control with min/median/max, its effect with a 95 % interval from the noise \
            the runs themselves show, the smallest effect the experiment resolves, and the mark \
            \"does not survive the control\" when the effect is beyond that noise, \"holds under \
            control\" when it is not. Every run's capture is kept.",
        after_help = "ARMS (every round runs them in this order, so drift hits all arms alike):\n  \
            instrumented  the shim at --level/--backend, exactly as `causeway record` would run it\n  \
            control       the shim at --control-level with no device timing (default level 2; one level\n                \
            below the instrumented arm's when that has no device timing: level 2 -> 1)\n  \
            durations     when the instrumented arm times with events: level 3 with CUPTI, only for how\n                \
            long each copy and kernel takes (events spans include launch latency); not with\n                \
            --no-durations, or when CUPTI records nothing (then the events spans are used)\n  \
            bare          (--bare) no shim at all; only the process's wall time (spawn to exit)\n\n\
            CLAIMS (each run gives its median over its steps; printed: min / median / max of those):\n  \
            step time             step wall (NVTX range, host clock); control: measured alike\n  \
            copy/compute overlap  |copy & compute| / min(copy, compute) in a step; control: the least the\n                        \
            control's step wall W allows, (copy + compute - out - W) / min(copy, compute),\n                        \
            with copy and compute busy times from the durations arm (else the instrumented\n                        \
            arm's, events spans less their issuing call's host time)\n  \
            stream concurrency    (sum of per-stream busy - their union) / (sum - busiest stream): 0 when\n                        \
            the streams were serialised; control: (sum - out - W) / (sum - busiest), out = how\n                        \
            far the measured work reached beyond its steps' edges\n  \
            process time          (--bare) spawn to exit, against the bare arm\n\n\
            MARKS, from the noise measured: a claim's effect (instrumented - control; for a lower bound,\n\
            the bound - instrumented; per run, the median over its steps) gets a 95 % interval from the\n\
            spread of those per-run medians (Welch's t); half its width is the smallest effect this\n\
            experiment resolves (printed per claim):\n  \
            does not survive the control  the interval excludes 0 (for a lower bound >=: lies above 0)\n  \
            holds under control           otherwise\n  \
            not tested                    one side has no figure, or fewer than 3 runs per arm (the\n                                \
            claim's line says why)\n\
            A mark says whether the instrument changed the answer; nothing is called faster or slower.\n\n\
            ASSUMPTIONS behind the lower bounds (printed with every result): the busy times are the\n\
            program's own (the instrument moves work, it does not lengthen it); a step's device work\n\
            lies inside the step (work reaching beyond a step's edges is allowed for: subtracted as\n\
            `out`); the control's device idle time is taken as zero. So the control can show that the\n\
            instrument removed overlap, never that it invented it. Details: docs/control.md.\n\n\
            With --backend events the instrumented arm times one step in 16 by default (--sample N; 1\n\
            times every call): the overlap claims come from the timed steps, the step time from all.\n\n\
            Captures: DIR/cw-control-<time>-<pid>/r01-instrumented, r01-control, ... (with stdout.txt and\n\
            stderr.txt of the program); `causeway report --steps` reads each. A run that exits non-zero\n\
            stops the experiment.\n\n\
            EXAMPLES:\n  \
            causeway control -- python train.py                              # level 3, CUPTI\n  \
            causeway control --backend events --bare --steps decode -- python serve.py\n  \
            causeway control --runs 10 --json -- ./overlap a > control.json"
    )]
    Control(ControlArgs),
}

#[derive(clap::Args)]
struct ControlArgs {
    /// Runs per arm
    #[arg(long, value_name = "N", default_value_t = 5)]
    runs: usize,
    /// The instrumented arm's capture level (as `causeway record`)
    #[arg(long, value_name = "L", default_value_t = 3)]
    level: u32,
    /// The instrumented arm's device-timing backend (level 3: default cupti)
    #[arg(long, value_parser = choice::<Backend>(), value_name = "BACKEND")]
    backend: Option<Backend>,
    /// The CUPTI library for --backend cupti and the durations arm (default: found by the dynamic loader)
    #[arg(long, value_name = "PATH")]
    cupti: Option<PathBuf>,
    /// With --backend events: time one in N steps (default 16; 1 times every call)
    #[arg(long, value_name = "N")]
    sample: Option<u32>,
    /// With --backend events: no durations arm (the lower bounds then use the events spans)
    #[arg(long)]
    no_durations: bool,
    /// The control arm's level: 1 (NVTX only) or 2 (+ host calls)
    #[arg(long, value_name = "L")]
    control_level: Option<u32>,
    /// Add the bare arm: the program without the shim, timed as a whole process
    #[arg(long)]
    bare: bool,
    /// The steps are the NVTX ranges named RANGE (default: the outermost repeating range)
    #[arg(long, value_name = "RANGE")]
    steps: Option<String>,
    /// Only NVTX ranges of this domain
    #[arg(long, value_name = "DOMAIN")]
    domain: Option<String>,
    /// Leave out the first K steps of each process (warm-up)
    #[arg(long, value_name = "K", default_value_t = 0)]
    skip_steps: usize,
    /// Directory in which the experiment's directory is created
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
    /// Ring size per process, in MiB
    #[arg(long, value_name = "N", default_value_t = record::DEFAULT_RING_MB)]
    ring_mb: u64,
    /// The shim to preload (default: $CAUSEWAY_SHIM, else libcauseway.so beside causeway)
    #[arg(long, value_name = "PATH")]
    shim: Option<PathBuf>,
    /// Print one JSON object instead of tables
    #[arg(long)]
    json: bool,
    /// The command to run, after `--`
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    cmd: Vec<OsString>,
}

#[derive(clap::Args)]
struct RecordArgs {
    /// Capture level: 1 phases, 2 host, 3 full (+ device intervals), 4 edge
    #[arg(long, value_name = "N", default_value_t = record::DEFAULT_LEVEL)]
    level: u32,
    /// Directory in which the capture directory is created (created if missing)
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
    /// Ring size per process, in MiB
    #[arg(long, value_name = "N", default_value_t = record::DEFAULT_RING_MB)]
    ring_mb: u64,
    /// What a full ring does
    #[arg(long, value_parser = choice::<Policy>(), default_value_t = Policy::Drop)]
    policy: Policy,
    /// Device-timing backend: level 3 (default cupti) or level 4 (default none); an error at 1 and 2
    #[arg(long, value_parser = choice::<Backend>(), value_name = "BACKEND")]
    backend: Option<Backend>,
    /// The CUPTI library for --backend cupti (default: found by the dynamic loader)
    #[arg(long, value_name = "PATH")]
    cupti: Option<PathBuf>,
    /// With --backend events: time one step in N (default 16; 1 times every call)
    #[arg(long, value_name = "N")]
    sample: Option<u32>,
    /// The shim to preload (default: $CAUSEWAY_SHIM, else libcauseway.so beside causeway)
    #[arg(long, value_name = "PATH")]
    shim: Option<PathBuf>,
    /// The command to record, after `--`
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    cmd: Vec<OsString>,
}

/// The option parser of a setting with named values (`--policy`, `--backend`): the names and their
/// help come from the settings type the shim reads them with, so the two never disagree.
fn choice<T: Choice + Send + Sync>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        T::CHOICES
            .iter()
            .map(|c| PossibleValue::new(c.name()).help(c.about())),
    )
    .try_map(|s| T::from_name(&s))
}

/// One line on stderr, `causeway: ` first, escaped for the terminal (paths and names in it may come
/// from the traced program).
fn say(msg: &str) {
    line(&format!(
        "causeway: {}",
        causeway_scanner::render::text::escape_cell(msg)
    ));
}

fn error(msg: impl std::fmt::Display) -> ExitCode {
    say(&format!("error: {msg}"));
    ExitCode::from(EXIT_ERROR)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Usage errors exit 2, as clap's do — except under `record`, whose own failures must not
            // look like the program's exit code 2 (record's are 125..=127, as env's and timeout's).
            let code = if !e.use_stderr() {
                0 // --help, --version
            } else if std::env::args_os().nth(1).is_some_and(|a| a == "record") {
                record::EXIT_RECORD_FAILED
            } else {
                EXIT_ERROR
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let code = run(cli.cmd);
    // Rings of a capture directory that could not be read were left out; outputs that do not list
    // them themselves (the report does) still say so.
    for e in causeway_scanner::read::capture::take_skipped() {
        say(&format!(
            "warning: {}",
            causeway_scanner::read::capture::skipped_warning(&e)
        ));
    }
    code
}

fn run(cmd: Cmd) -> ExitCode {
    match cmd {
        Cmd::Report {
            json,
            capture,
            steps,
            range,
            domain,
            gaps,
        } => {
            if steps || gaps {
                let o = ViewOptions {
                    steps: steps.then_some(StepOptions { range, domain }),
                    gaps,
                };
                views(json, &capture, &o)
            } else {
                report(json, &capture)
            }
        }
        Cmd::Export {
            format,
            output,
            force,
            capture,
        } => export(format, &output, force, &capture),
        Cmd::Compare { json, range, a, b } => compare(json, range, &a, &b),
        Cmd::Why {
            json,
            step,
            range,
            kernel,
            call,
            capture,
        } => why(json, step, range, kernel, call, &capture),
        Cmd::Html {
            output,
            force,
            range,
            capture,
        } => html(&output, force, range, &capture),
        Cmd::Control(a) => control(a),
        Cmd::Record(a) => {
            let opts = RecordOptions {
                level: a.level,
                backend: a.backend,
                cupti: a.cupti,
                sample: a.sample,
                out: a.out,
                ring_mb: a.ring_mb,
                policy: a.policy,
                shim: a.shim,
                cmd: a.cmd,
            };
            match record::run(&opts) {
                Ok(o) => {
                    for n in &o.notes {
                        say(n);
                    }
                    say(&format!("capture written to {}", o.capture_dir.display()));
                    // Exit codes are one byte on Unix; a child's own code always fits.
                    ExitCode::from((o.code & 0xff) as u8)
                }
                Err(e) => {
                    say(&format!("error: {e}"));
                    ExitCode::from(e.exit_code())
                }
            }
        }
    }
}

/// `control`: the interleaved arms, then the claims; progress on stderr, the result on stdout.
fn control(a: ControlArgs) -> ExitCode {
    use causeway_cli::control::ControlOptions;
    let o = ControlOptions {
        runs: a.runs,
        level: a.level,
        backend: a.backend,
        cupti: a.cupti,
        sample: a.sample,
        durations: !a.no_durations,
        control_level: a.control_level,
        bare: a.bare,
        steps: StepOptions {
            range: a.steps,
            domain: a.domain,
        },
        skip_steps: a.skip_steps,
        out: a.out,
        ring_mb: a.ring_mb,
        shim: a.shim,
        cmd: a.cmd,
    };
    let r = control::run(&o, |done, total, p, r| {
        line(&format!(
            "causeway: control run {done}/{total} (round {}, {}): {:.3} s",
            p.round,
            p.arm.name(),
            r.wall_ns as f64 / 1e9
        ));
    });
    let r = match r {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    if let Err(code) = emit(a.json, &r, "the result", control::render) {
        return code;
    }
    say(&format!("captures of every run in {}", r.out_dir.display()));
    ExitCode::SUCCESS
}

/// Prints `value` on stdout as pretty JSON (`json`) or as the text `render` makes of it. A closed pipe
/// (`causeway report … | head`) is not an error worth a message; any other failed write (a full
/// disk) is, since a script would otherwise read a cut JSON with exit status 0. `Err` is the exit
/// code of a value that cannot be serialised or written (`what` names it in the message).
fn emit<T: serde::Serialize>(
    json: bool,
    value: &T,
    what: &str,
    render: impl FnOnce(&T) -> String,
) -> Result<(), ExitCode> {
    let text = if json {
        match serde_json::to_string_pretty(value) {
            Ok(s) => s + "\n",
            Err(e) => return Err(error(format!("{what}: cannot serialize: {e}"))),
        }
    } else {
        // The text holds names and messages of the traced program: no control sequence of theirs
        // reaches the terminal (JSON escapes them itself).
        causeway_scanner::render::text::escape(&render(value)).into_owned()
    };
    if causeway_scanner::util::guard::any_fault() {
        return Err(error(
            "a ring file was truncated while it was being read (another process cut it short): \
             the figures would be incomplete; read a copy, or the capture once nothing writes to it",
        ));
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        // A reader that stopped early (`| head`) wanted no more.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(error(format!(
            "cannot write to standard output: {e}; the output of {what} is incomplete"
        ))),
        _ => Ok(()),
    }
}

fn report(json: bool, capture: &std::path::Path) -> ExitCode {
    let r = match Report::from_path(capture) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    if let Err(code) = emit(json, &r, &capture.display().to_string(), render::render) {
        return code;
    }
    // The report's warnings name the rings left out.
    causeway_scanner::read::capture::take_skipped();
    for w in &r.warnings {
        say(&format!("warning: {w}"));
    }
    ExitCode::SUCCESS
}

/// `report --steps` / `--gaps`: the views instead of the summary.
fn views(json: bool, capture: &std::path::Path, o: &ViewOptions) -> ExitCode {
    let v = match Views::from_path(capture, o) {
        Ok(v) => v,
        Err(e) => return error(e),
    };
    match emit(
        json,
        &v,
        &capture.display().to_string(),
        render::render_views,
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum ExportFormat {
    /// Chrome Trace Event Format (JSON)
    Chrome,
    /// Perfetto protobuf trace (.pftrace)
    Perfetto,
    /// A directory of Parquet tables (-o names the directory; docs/parquet.md)
    Parquet,
    /// The causal graph as JSON: calls, NVTX ranges, device work and typed edges (docs/views.md)
    Graph,
}

/// `export`: the capture as a trace file; a one-line summary on stderr.
fn export(
    format: ExportFormat,
    output: &std::path::Path,
    force: bool,
    capture: &std::path::Path,
) -> ExitCode {
    use causeway_scanner::export::{self, Format};
    let f = match format {
        ExportFormat::Chrome => Format::Chrome,
        ExportFormat::Perfetto => Format::Perfetto,
        ExportFormat::Parquet => Format::Parquet,
        ExportFormat::Graph => Format::Graph,
    };
    let s = match export::export(capture, f, output, force) {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    say(&format!(
        "wrote {} ({} bytes): {} process(es), {} calls, {} NVTX ranges, {} marks, {} device \
         spans, {} call->device flows, {} dependency flows",
        output.display(),
        s.bytes,
        s.processes,
        s.calls,
        s.ranges,
        s.marks,
        s.device_spans,
        s.flows,
        s.dependency_flows
    ));
    if s.empty_processes > 0 {
        line(&format!(
            "causeway: note: {} process(es) of the capture recorded nothing to draw (listed in the \
             metadata only)",
            s.empty_processes
        ));
    }
    if s.overlap_tracks > 0 {
        line(&format!(
            "causeway: note: {} extra track(s) hold slices that do not nest on their thread's or \
             stream's track",
            s.overlap_tracks
        ));
    }
    if s.unplaced_device > 0 {
        line(&format!(
            "causeway: warning: {} device interval(s) have no host time and are not in the export",
            s.unplaced_device
        ));
    }
    ExitCode::SUCCESS
}

/// `compare`: two captures side by side.
fn compare(
    json: bool,
    range: Option<String>,
    a: &std::path::Path,
    b: &std::path::Path,
) -> ExitCode {
    use causeway_scanner::analysis::compare::{CompareOptions, Comparison};
    let c = match Comparison::from_paths(a, b, &CompareOptions { range }) {
        Ok(c) => c,
        Err(e) => return error(e),
    };
    match emit(json, &c, "the comparison", render::render_compare) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

/// `why`: one item's critical predecessor chain.
fn why(
    json: bool,
    step: Option<String>,
    range: Option<String>,
    kernel: Option<String>,
    call: Option<String>,
    capture: &std::path::Path,
) -> ExitCode {
    use causeway_scanner::analysis::causal::why::{from_path, Target};
    let target = if let Some(s) = step {
        match s.as_str() {
            "slowest" => Ok(Target::Step { index: None, range }),
            n => n
                .parse()
                .map(|i| Target::Step {
                    index: Some(i),
                    range,
                })
                .map_err(|_| format!("--step {n}: expected a step index or `slowest`")),
        }
    } else if let Some(k) = kernel {
        Target::kernel(&k)
    } else if let Some(c) = call {
        Target::call(&c)
    } else {
        Err("say what to explain: --step, --kernel or --call".into())
    };
    let target = match target {
        Ok(t) => t,
        Err(e) => return error(e),
    };
    let w = match from_path(capture, &target) {
        Ok(w) => w,
        Err(e) => return error(e),
    };
    match emit(
        json,
        &w,
        "the answer",
        causeway_scanner::render::why::render,
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

/// `html`: one self-contained page; a one-line summary on stderr.
fn html(
    output: &std::path::Path,
    force: bool,
    range: Option<String>,
    capture: &std::path::Path,
) -> ExitCode {
    use causeway_scanner::render::html::{write_file, HtmlOptions};
    let s = match write_file(capture, output, force, &HtmlOptions { range }) {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    say(&format!(
        "wrote {} ({} bytes): {} process(es), {} steps, {} timeline items{}",
        output.display(),
        s.bytes,
        s.processes,
        s.steps,
        s.items,
        if s.items_left_out > 0 {
            format!(" ({} left out over the page's cap)", s.items_left_out)
        } else {
            String::new()
        }
    ));
    ExitCode::SUCCESS
}
