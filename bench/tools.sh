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
