#!/bin/bash
# Builds the test VM's initramfs: busybox-static, the guest init and lib.sh, every scenario
# folder's guest.sh and plans (tests/vm/scenarios/NAME/{guest.sh,*.json} -> /tt/scenarios/NAME/),
# scx_tt and tt_timer_baseline (release builds), stress-ng, cyclictest and bpftool from Debian,
# the shared libraries of every binary (found with ldd), the VM kernel's config
# (/boot/config-RELEASE) and schedules/.
#
# Usage: mkinitrd.sh [--bin-dir DIR] [--out FILE]   (defaults: target/release, $INITRD)
set -euo pipefail
source "$(dirname "$0")/common.sh"

BIN_DIR=$REPO/target/release
OUT=$INITRD
while [ $# -gt 0 ]; do
  case $1 in
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) die "mkinitrd.sh: unknown argument $1" ;;
  esac
done

BINARIES=("$BIN_DIR/scx_tt" "$BIN_DIR/tt_timer_baseline"
          "$(command -v stress-ng || true)" "$(command -v cyclictest || true)"
          "$(command -v bpftool || true)")
for b in "${BINARIES[@]}"; do
  [ -n "$b" ] && [ -x "$b" ] || die "missing binary '$b' (cargo build --release; scripts/install-deps.sh)"
done
[[ $(ldd /bin/busybox 2>&1 || true) == *"not a dynamic"* ]] \
  || die "/bin/busybox is not static: install busybox-static"

mkdir -p "$VM_DIR"
ROOT=$(mktemp -d "$VM_DIR/root.XXXX")
chmod 755 "$ROOT"   # the guest's /: unprivileged users must traverse it
trap 'rm -rf "$ROOT"' EXIT
mkdir -p "$ROOT"/{bin,usr/bin,dev,proc,sys,tmp,run,out,tt/scenarios,schedules}
cp /bin/busybox "$ROOT/bin/busybox"
install -m 755 "$VM_SRC/guest/init" "$ROOT/init"
cp "$VM_SRC/guest/lib.sh" "$ROOT/tt/lib.sh"
for dir in "$VM_SRC"/scenarios/*/; do
  [ -f "$dir/guest.sh" ] || continue
  name=$(basename "$dir")
  mkdir -p "$ROOT/tt/scenarios/$name"
  cp "$dir/guest.sh" "$ROOT/tt/scenarios/$name/"
  cp "$dir"/*.json "$ROOT/tt/scenarios/$name/" 2>/dev/null || true
done
cp "$REPO"/schedules/*.json "$ROOT/schedules/" 2>/dev/null || true
# libbpf resolves the scx headers' __kconfig externs (CONFIG_PREEMPT_RCU) from /boot/config-<release>.
mkdir -p "$ROOT/boot" && cp -L "$KCONFIG" "$ROOT/boot/config-$(cat "$KERNEL_DIR/release")"
# Debug info is not needed in the guest and would double the archive.
for b in scx_tt tt_timer_baseline; do objcopy --strip-debug "$BIN_DIR/$b" "$ROOT/bin/$b"; done
cp "$(command -v stress-ng)" "$(command -v cyclictest)" "$(command -v bpftool)" "$ROOT/usr/bin/"

# Shared libraries at their host paths (ldd prints nothing useful for static binaries).
for b in "${BINARIES[@]}"; do
  for lib in $(ldd "$b" 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*'); do
    mkdir -p "$ROOT$(dirname "$lib")"
    [ -e "$ROOT$lib" ] || cp -L "$lib" "$ROOT$lib"
  done
done

(cd "$ROOT" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "initrd: $OUT ($(du -h "$OUT" | cut -f1)); schedules: $(ls "$ROOT/schedules" | tr '\n' ' ')"
