#!/bin/bash
# The QEMU that boots the test VMs: Debian's backported build (bookworm-backports: QEMU 10),
# extracted into the cache ($CACHE/qemu) instead of installed, so the host's own packages stay as
# they are (installing it would pull a newer Mesa and more into the system).
#
# Why not the host's QEMU 7.2: its multi-threaded TCG lets a vCPU execute a stale `int3` that
# another vCPU's kernel text patching left behind (every sched_ext attach and detach patches
# static keys in the scheduler's hottest paths): "Oops: int3" in sched_tick, update_rq_clock,
# task_sched_runtime. In a fresh-clone run of the suite 10 of 40 boots crashed so (completion 3
# of 4, restart 2 of 3, demos_seq 2 of 3), each crash costing a boot of 10-60 s, and a scenario
# could exhaust its tries. With QEMU 10.0 the same scenarios booted 6 of 6 times without one
# (completion 3, restart 3; 2026-11-27, docs/vm-harness.md).
#
# Usage: qemu.sh [--refresh]
# Prints the QEMU that run.sh will use. When the backport cannot be fetched or does not run on
# this host (a missing library), it says so and run.sh uses the host's qemu-system-x86_64; the
# tests then still pass, with more crashed boots retried. SCX_TT_QEMU overrides both.
set -euo pipefail
source "$(dirname "$0")/common.sh"

SUITE=${SCX_TT_QEMU_SUITE:-bookworm-backports}
PKGS=(qemu-system-x86 qemu-system-common qemu-system-data seabios)
SOURCES=/etc/apt/sources.list.d/debian.sources

# The apt options of a private configuration under $QEMU_DIR/apt (the system's stays untouched).
apt_opts() {
  local w=$QEMU_DIR/apt
  echo "-o Dir::Etc::SourceList=$w/private.sources -o Dir::Etc::SourceParts=/dev/null" \
       "-o Dir::State::Lists=$w/lists -o Dir::Cache=$w/cache" \
       "-o Dir::State::Status=/var/lib/dpkg/status -o APT::Get::List-Cleanup=0"
}

# Whether the extracted QEMU runs here: every library found, and it answers --version.
usable() {
  [ -x "$QEMU_BACKPORT" ] || return 1
  ! ldd "$QEMU_BACKPORT" 2>/dev/null | grep -q 'not found' || return 1
  "$QEMU_BACKPORT" --version > /dev/null 2>&1
}

report() {
  echo "qemu: $("$(qemu_bin)" --version | head -1) ($(qemu_bin))"
}

fallback() {
  log "qemu: $*; the VM tests use the host's $(command -v qemu-system-x86_64 || echo qemu-system-x86_64) (QEMU 7.2 crashes more boots, which are retried)"
  rm -f "$QEMU_DIR/stamp"
  report
  exit 0
}

main() {
  if [ "${1:-}" != --refresh ] && [ -e "$QEMU_DIR/stamp" ] && usable; then report; return; fi
  local t0=$SECONDS w=$QEMU_DIR/apt
  rm -rf "$QEMU_DIR" && mkdir -p "$w/lists/partial" "$w/cache/archives/partial" "$QEMU_DIR/debs"
  [ -r "$SOURCES" ] || fallback "$SOURCES not found: cannot derive the archive"
  # the host's first archive stanza (its mirror, as kernel.sh does) with the backports suite
  awk 'BEGIN { RS = ""; ORS = "\n\n" } NR == 1' "$SOURCES" \
    | sed -E "s/^Suites:.*/Suites: $SUITE/" > "$w/private.sources"
  apt-get -q $(apt_opts) update > "$w/update.log" 2>&1 \
    || fallback "apt update for $SUITE failed (see $w/update.log)"
  (cd "$QEMU_DIR/debs" && apt-get -q $(apt_opts) download "${PKGS[@]}" > ../download.log 2>&1) \
    || fallback "downloading ${PKGS[*]} from $SUITE failed (see $QEMU_DIR/download.log)"
  for d in "$QEMU_DIR"/debs/*.deb; do dpkg-deb -x "$d" "$QEMU_DIR/root"; done
  rm -rf "$QEMU_DIR/debs"
  usable || fallback "the extracted $QEMU_BACKPORT does not run here ($(ldd "$QEMU_BACKPORT" 2>&1 | grep 'not found' | tr '\n' ' '))"
  "$QEMU_BACKPORT" --version | sed -n '1s/^QEMU emulator version //p' > "$QEMU_DIR/version"
  date -u '+%F %T' > "$QEMU_DIR/stamp"
  log "qemu: fetched ${PKGS[*]} from $SUITE in $((SECONDS - t0)) s"
  report
}

main "$@"
