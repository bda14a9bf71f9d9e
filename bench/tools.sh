# tools.sh: sourced by the bench scripts from the repository root. Sets CW (the causeway binary) and
# SYNTH (scanner/examples/synth_capture), building both here in release unless both are given (carried
# binaries: then no cargo is needed).
# shellcheck shell=bash
if [[ -z ${CW:-} || -z ${SYNTH:-} ]]; then
  cargo build --release -q -p causeway-cli --bin causeway
  cargo build --release -q -p causeway-scanner --example synth_capture
fi
CW=${CW:-target/release/causeway}
SYNTH=${SYNTH:-target/release/examples/synth_capture}

# timed FILE CMD...: runs CMD (stdout to /dev/null; stderr shown only if it fails) and writes to FILE
# one line: wall seconds, peak RSS (KB), user and system seconds, minor page faults. Wall time is bash's EPOCHREALTIME
# (microseconds) around the run: /usr/bin/time's %e counts hundredths, a third of a 30 ms report.
timed() {
  local out=$1 t0 t1
  shift
  t0=$EPOCHREALTIME
  /usr/bin/time -o "$out.time" -f "%M %U %S %R" "$@" > /dev/null 2> "$out.err" ||
    { cat "$out.err" >&2; return 1; }
  t1=$EPOCHREALTIME
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }') $(tail -n 1 "$out.time")" > "$out"
}
