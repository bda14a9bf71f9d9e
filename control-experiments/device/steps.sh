# Step runner shared by spine.sh and level3.sh (sourced, not run). Expects LOG (the log file), WORK (a
# scratch folder), BUDGET (seconds for all steps, measured with $SECONDS) and the arrays FAILED and the
# variable RC to exist; defines say, note, fail, step, check_rc, checksum_line, field, capture_dir_from,
# and the builds both scripts share: build_cupti_count and build_nvcc.
# shellcheck shell=bash
say() { printf '%s\n' "$*" | tee -a "$LOG"; }
note() { printf '%s\n' "$*" >> "$LOG"; }
fail() {
  FAILED+=("$1")
  say "FAIL: $1"
}

# step NAME TIMEOUT CMD...: run CMD under `timeout` (capped by what is left of
# the budget), stdout to $WORK/NAME.out, stderr to $WORK/NAME.err, both copied
# into the log. Sets RC (124: timed out, 125: skipped). Never aborts the script.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - SECONDS))
  : > "$WORK/$name.out"
  : > "$WORK/$name.err"
  if ((left < 20)); then
    RC=125
    say "[skip   ] $name (only ${left}s of the budget left)"
    FAILED+=("$name: skipped, out of time")
    return 0
  fi
  if ((limit > left - 10)); then limit=$((left - 10)); fi
  local t0=$SECONDS
  note ""
  note "===== $name (timeout ${limit}s): $*"
  RC=0
  timeout -k 5 "$limit" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" < /dev/null || RC=$?
  {
    echo "--- stdout (last 20000 bytes)"
    tail -c 20000 "$WORK/$name.out"
    echo "--- stderr (last 20000 bytes)"
    tail -c 20000 "$WORK/$name.err"
    echo "--- exit code $RC"
  } >> "$LOG"
  local status="ok"
  if ((RC == 124 || RC == 137)); then
    status="TIMEOUT"
  elif ((RC != 0)); then
    status="rc=$RC"
  fi
  say "$(printf '[%-7s] %s (%ss)' "$status" "$name" "$((SECONDS - t0))")"
  if ((RC != 0)); then
    # Show why right away: the last lines of stderr.
    tail -n 5 "$WORK/$name.err" | sed 's/^/          | /' | tee -a "$LOG"
  fi
  return 0
}

# check_rc WHAT: count a failure if the last step did not exit 0 (a skipped
# step has been counted already).
check_rc() {
  if ((RC == 0 || RC == 125)); then return 0; fi
  if ((RC == 124 || RC == 137)); then
    fail "$1: timed out"
  else
    fail "$1: exit code $RC"
  fi
  return 0
}

checksum_line() { grep -m1 '^checksum' "$1" 2> /dev/null || true; }

# field KEY "k=v k=v ...": the value of KEY, or "-".
field() {
  local kv
  for kv in $2; do
    if [[ $kv == "$1="* ]]; then
      printf '%s' "${kv#*=}"
      return 0
    fi
  done
  printf -- '-'
}

capture_dir_from() { # stderr file of `causeway record` -> capture directory
  sed -n 's/^causeway: capture written to //p' "$1" 2> /dev/null | tail -n 1
}

# build_cupti_count: finds CUPTI under $CUDA_HOME and builds the counting injection library
# (workloads/cupti_count.c) into $WORK; sets CUPTI_INC, CUPTI_LIB and CUPTI_SO ("" when it could not).
# Expects WL (the workloads folder) and CUDA_HOME.
build_cupti_count() {
  CUPTI_INC=""
  for d in "$CUDA_HOME/extras/CUPTI/include" "$CUDA_HOME/include" "$CUDA_HOME/targets/x86_64-linux/include"; do
    if [[ -f $d/cupti.h ]]; then
      CUPTI_INC=$d
      break
    fi
  done
  CUPTI_LIB=""
  for d in "$CUDA_HOME/extras/CUPTI/lib64" "$CUDA_HOME/lib64" "$CUDA_HOME/targets/x86_64-linux/lib"; do
    for f in "$d/libcupti.so" "$d"/libcupti.so.[0-9]*; do
      if [[ -e $f ]]; then
        CUPTI_LIB=$f
        break 2
      fi
    done
  done
  say "CUPTI headers: ${CUPTI_INC:-NOT FOUND}, library: ${CUPTI_LIB:-NOT FOUND}"
  CUPTI_SO="$WORK/cupti_count.so"
  if [[ -n $CUPTI_INC && -n $CUPTI_LIB ]]; then
    INC=(-I"$CUPTI_INC")
    for d in "$CUDA_HOME/include" "$CUDA_HOME/targets/x86_64-linux/include"; do
      if [[ -d $d ]]; then INC+=(-I"$d"); fi
    done
    # The default picks the record struct from CUPTI_API_VERSION; the others
    # are fallbacks in case that guess does not compile.
    for rec in "" CUpti_ActivityKernel11 CUpti_ActivityKernel10 CUpti_ActivityKernel9; do
      step build-cupti-count 120 gcc -O2 -Wall -shared -fPIC ${rec:+-DCUPTI_KERNEL_RECORD=$rec} \
        -o "$CUPTI_SO" "$WL/cupti_count.c" "${INC[@]}" "$CUPTI_LIB" \
        -Wl,-rpath,"$(dirname "$CUPTI_LIB")" -lpthread
      if ((RC == 0)); then break; fi
    done
    check_rc "build cupti_count.so"
  else
    fail "CUPTI not found under $CUDA_HOME"
  fi
  [[ -f $CUPTI_SO ]] || CUPTI_SO=""
}

# build_nvcc NAME OUTPUT SOURCE [extra flags...]: nvcc with NVFLAGS as a step. Expects NVCC ("" = none).
NVFLAGS=(-O2 -arch=sm_90 -cudart=static)
build_nvcc() {
  local name=$1 out=$2 src=$3
  shift 3
  if [[ -z $NVCC ]]; then
    fail "$name: no nvcc"
    return 0
  fi
  step "$name" 240 "$NVCC" "${NVFLAGS[@]}" "$@" -o "$out" "$src"
  check_rc "$name"
  return 0
}
