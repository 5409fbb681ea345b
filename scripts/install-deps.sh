#!/bin/bash
# Installs the Debian packages scx_tt needs to build and to run its VM tests, when missing.
# Idempotent; run as root (CI and the dev machines are root). Rust comes from the preinstalled
# toolchain (rustc >= 1.91).
set -euo pipefail
# build: clang-19 (scx_cargo needs clang >= 18) .. libc6-dev;
# VM tests: qemu-system-x86 .. rt-tests (cyclictest; stress-ng also loads the host in
# make test-vm-loaded), bpftool (BPF run time per program), flex .. dwarves (tests/vm/kernel.sh
# builds the 6.12 LTS test kernels; pahole makes their BTF), binutils (objcopy strips guest
# binaries), procps (pgrep: scripts/with-load.sh), bsdextrautils (column: the VM tests' summary
# table, scripts/vm-summary.sh); reports and traces: chromium (the report's browser
# test, make report-demo), protobuf-compiler (protoc reads the Perfetto export against
# Perfetto's published schema); packaging: systemd (systemd-analyze verify of the unit),
# dpkg-dev (make deb's dpkg-shlibdeps; cargo-deb itself is installed by `make deb`).
PKGS=(clang-19 libelf-dev zlib1g-dev pkg-config make gcc libc6-dev
      qemu-system-x86 busybox-static cpio stress-ng rt-tests bpftool flex bison bc libssl-dev dwarves
      binutils procps bsdextrautils
      chromium protobuf-compiler systemd dpkg-dev python3-pip)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "install-deps: cargo not found (need Rust >= 1.91)" >&2; exit 1; }
# Perfetto's published trace schema for tests/trace_perfetto.rs: PyPI's perfetto package,
# into the build tree (not the system's Python; the test puts it on PYTHONPATH).
PYDEPS="$(cd "$(dirname "$0")/.." && pwd)/target/pydeps"
if [ ! -d "$PYDEPS/perfetto" ]; then
  echo "install-deps: perfetto 0.59.1 (PyPI) into $PYDEPS"
  python3 -m pip install -q --no-deps --disable-pip-version-check --root-user-action=ignore \
    --target "$PYDEPS" perfetto==0.59.1
fi
