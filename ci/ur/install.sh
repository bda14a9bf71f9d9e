#!/bin/sh
# Installs what ci/ur/ur_prog needs (see ci/ur/README.md), idempotently:
#   - the Unified Runtime loader from PyPI, pinned, into ci/build/deps/ur
#     (lib/libur_loader.so.0 with its built-in OpenCL adapter and the libraries
#     it needs);
#   - Debian's PoCL CPU OpenCL driver, the OpenCL ICD loader and the OpenCL
#     headers (pocl-opencl-icd, ocl-icd-libopencl1, ocl-icd-opencl-dev), with
#     apt-get when missing and running as root;
#   - with --intel-opencl, also Intel's CPU OpenCL runtime from PyPI into
#     ci/build/deps/ur-intel-opencl (about 800 MB), a second CPU driver that
#     the printed OCL_ICD_VENDORS selects instead of PoCL.
# Progress goes to stderr; stdout gets only the environment to run with, as
# shell lines:   eval "$(sh ci/ur/install.sh)"
# Exit status: 0 ready, 1 something could not be installed (said why).
set -eu

intel=0
for a in "$@"; do
  case "$a" in
    --intel-opencl) intel=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "ci/ur/install.sh: unknown argument '$a' (--intel-opencl, --help)" >&2; exit 1 ;;
  esac
done

cd "$(dirname "$0")/../.."
root=$(pwd)
deps="$root/ci/build/deps"
mkdir -p "$deps"

# Pinned: the loader wheel (UR 0.12.0) and, with --no-deps, every wheel it pulls in.
UR_WHEELS="intel-cmplr-lib-ur==2026.2.0 intel-cmplr-lib-rt==2026.2.0 umf==1.2.0 tcmlib==1.6.0"
UR_STAMP="$deps/.ur-wheels-2026.2.0-1"
# intel-opencl-rt needs libimf/libsvml/libirng/libintlc from intel-cmplr-lib-rt without declaring it.
INTEL_WHEELS="intel-opencl-rt==2026.2.0 intel-cmplr-lic-rt==2026.2.0 intel-cmplr-lib-rt==2026.2.0 tbb==2023.2.0 tcmlib==1.6.0"
INTEL_STAMP="$deps/.ur-intel-opencl-2026.2.0-1"
DEBS="pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev"

say() { echo "ci/ur/install.sh: $*" >&2; }

# pip --prefix, not --target: these wheels put their shared libraries in the
# wheel's data/lib, which pip install --target drops (it keeps only the
# packages' own folders); --prefix puts them in PREFIX/lib.
pip_prefix() {
  prefix=$1; shift
  rm -rf "$prefix"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --ignore-installed \
    --no-warn-script-location --prefix "$prefix" "$@" >&2
}

# --- UR loader wheels --------------------------------------------------------------
if [ ! -f "$UR_STAMP" ] || [ ! -f "$deps/ur/lib/libur_loader.so.0" ]; then
  say "installing $UR_WHEELS into $deps/ur"
  rm -f "$UR_STAMP"
  if ! pip_prefix "$deps/ur" $UR_WHEELS || [ ! -f "$deps/ur/lib/libur_loader.so.0" ]; then
    say "installing the UR wheels failed (no $deps/ur/lib/libur_loader.so.0)"
    exit 1
  fi
  touch "$UR_STAMP"
else
  say "UR wheels already in $deps/ur"
fi

# --- PoCL, the ICD loader and the OpenCL headers (Debian) ----------------------------
deb_missing() {
  missing=""
  for p in $DEBS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing="$missing $p"
    fi
  done
  echo "$missing"
}
if command -v dpkg-query >/dev/null; then
  missing=$(deb_missing)
  if [ -n "$missing" ]; then
    if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
      say "installing$missing with apt-get"
      apt="apt-get -o DPkg::Lock::Timeout=300 -qq"
      if ! { $apt update && DEBIAN_FRONTEND=noninteractive $apt install -y $missing; } >&2; then
        say "apt-get install$missing failed (see above)"
        exit 1
      fi
      missing=$(deb_missing)
      if [ -n "$missing" ]; then
        say "still missing after apt-get:$missing"
        exit 1
      fi
    else
      say "missing Debian packages$missing, and not root with apt-get: install them (apt-get install$missing)"
      exit 1
    fi
  else
    say "Debian packages present: $DEBS"
  fi
elif [ ! -f /usr/include/CL/cl.h ] || ! ldconfig -p 2>/dev/null | grep -q 'libOpenCL\.so\.1 '; then
  say "no dpkg here: install an OpenCL ICD loader with its development files (CL/cl.h, libOpenCL.so)" \
      "and a CPU OpenCL driver (PoCL) yourself"
  exit 1
fi

# --- optional: Intel's CPU OpenCL runtime (PyPI) ---------------------------------------
if [ "$intel" = 1 ]; then
  if [ ! -f "$INTEL_STAMP" ] || [ ! -f "$deps/ur-intel-opencl/lib/libintelocl.so" ]; then
    say "installing $INTEL_WHEELS into $deps/ur-intel-opencl"
    rm -f "$INTEL_STAMP"
    if ! pip_prefix "$deps/ur-intel-opencl" $INTEL_WHEELS \
      || [ ! -f "$deps/ur-intel-opencl/lib/libintelocl.so" ]; then
      say "installing intel-opencl-rt failed (no $deps/ur-intel-opencl/lib/libintelocl.so)"
      exit 1
    fi
    # The wheel's own .icd file names a path of its build machine: write one that names this one.
    mkdir -p "$deps/ur-intel-opencl/vendors"
    echo "$deps/ur-intel-opencl/lib/libintelocl.so" > "$deps/ur-intel-opencl/vendors/intel-cpu.icd"
    touch "$INTEL_STAMP"
  else
    say "intel-opencl-rt already in $deps/ur-intel-opencl"
  fi
fi

# --- the environment ------------------------------------------------------------------
say "ready: make -C ci ur && ci/build/ur_prog [N]"
cat <<EOF
# ci/build/ur_prog finds the loader through its RUNPATH and needs none of these;
# a program that loads libur_loader.so.0 by name needs LD_LIBRARY_PATH.
export LD_LIBRARY_PATH="$deps/ur/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
# Only the OpenCL adapter (built into the loader): the Level Zero adapters beside it are not even loaded.
export ONEAPI_DEVICE_SELECTOR="opencl:cpu"
EOF
if [ "$intel" = 1 ]; then
  cat <<EOF
# Intel's CPU OpenCL runtime as the only OpenCL platform, instead of PoCL.
export OCL_ICD_VENDORS="$deps/ur-intel-opencl/vendors"
EOF
fi
