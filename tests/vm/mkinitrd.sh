#!/bin/bash
# Builds the test VM's initramfs: busybox-static, the guest init and lib.sh, every scenario
# folder's guest.sh, plans and DEmOS configurations (tests/vm/scenarios/NAME/{guest.sh,*.json,*.yaml} -> /tt/scenarios/NAME/),
# scx_tt, tt_timer_baseline, tt_jobs and tt_component (release builds), stress-ng, cyclictest, bpftool, chrt and
# qemu-system-x86_64 (with SeaBIOS) from Debian,
# the shared libraries of every binary (found with ldd), the VM kernel's config
# (/boot/config-RELEASE) and schedules/.
#
# Usage: mkinitrd.sh [--bin-dir DIR] [--out FILE]   (defaults: target/release, $INITRD)
#
# Extra files: SCX_TT_INITRD_EXTRA="HOSTPATH:GUESTPATH ..." (entries separated by spaces; no
# spaces or colons in the paths) adds each HOSTPATH to the guest at the absolute GUESTPATH,
# after everything above, so an extra file may replace one of ours:
#   - a file is copied to GUESTPATH (symlinks followed; missing parent directories created); an
#     executable one gets its shared libraries (ldd) like the binaries above;
#   - a directory's contents are copied recursively into the directory GUESTPATH (created when
#     missing, merged with what is there).
# An entry without ':', a HOSTPATH that does not exist, a GUESTPATH that is not absolute, is
# '/' or contains '..', or a file whose GUESTPATH is a directory of the initramfs, fails
# naming the path and the entry. Example:
#   SCX_TT_INITRD_EXTRA="/usr/bin/perf:/usr/bin/perf $PWD/my-plans:/tt/my-plans" make vm-initrd
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

# SCX_TT_INITRD_EXTRA, checked before anything is built: (host path, guest path) pairs.
EXTRA_HOST=() EXTRA_GUEST=()
read -r -a extra_entries <<< "${SCX_TT_INITRD_EXTRA:-}"
for entry in "${extra_entries[@]}"; do
  [[ $entry == *:* ]] || die "SCX_TT_INITRD_EXTRA: entry '$entry' is not HOSTPATH:GUESTPATH"
  host=${entry%%:*} guest=${entry#*:}
  [ -n "$host" ] && [ -e "$host" ] \
    || die "SCX_TT_INITRD_EXTRA: host path '$host' does not exist (entry '$entry')"
  [[ $guest == /* && $guest != *:* && /$guest/ != */../* && ${guest//\//} != "" ]] \
    || die "SCX_TT_INITRD_EXTRA: guest path '$guest' must be absolute, not '/', without '..' or ':' (entry '$entry')"
  EXTRA_HOST+=("$host") EXTRA_GUEST+=("$guest")
done

BINARIES=("$BIN_DIR/scx_tt" "$BIN_DIR/tt_timer_baseline" "$BIN_DIR/tt_jobs" "$BIN_DIR/tt_component"
          "$(command -v stress-ng || true)" "$(command -v cyclictest || true)"
          "$(command -v bpftool || true)" "$(command -v chrt || true)"
          "$(command -v qemu-system-x86_64 || true)")
# the DEmOS-like baseline of bench/demos_lateness.rs
BINARIES+=("$BIN_DIR/tt_demos_baseline")
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
  cp "$dir"/*.yaml "$ROOT/tt/scenarios/$name/" 2>/dev/null || true
done
cp "$REPO"/schedules/*.json "$ROOT/schedules/" 2>/dev/null || true
# libbpf resolves the scx headers' __kconfig externs (CONFIG_PREEMPT_RCU) from /boot/config-<release>.
# Every cached kernel's (kernel.sh --kernel NAME), so one initramfs boots each of them.
mkdir -p "$ROOT/boot" && cp -L "$KCONFIG" "$ROOT/boot/config-$(cat "$KERNEL_DIR/release")"
for k in "$CACHE"/kernel "$CACHE"/kernel-*; do
  [ -e "$k/config" ] && [ -e "$k/release" ] && cp -L "$k/config" "$ROOT/boot/config-$(cat "$k/release")"
done
# Debug info is not needed in the guest and would double the archive.
for b in scx_tt tt_timer_baseline tt_jobs tt_component; do objcopy --strip-debug "$BIN_DIR/$b" "$ROOT/bin/$b"; done
objcopy --strip-debug "$BIN_DIR/tt_demos_baseline" "$ROOT/bin/tt_demos_baseline"
cp "$(command -v stress-ng)" "$(command -v cyclictest)" "$(command -v bpftool)" \
   "$(command -v chrt)" "$(command -v qemu-system-x86_64)" "$ROOT/usr/bin/"
# QEMU's SeaBIOS: the `admit` scenario boots real (nested TCG) VMs inside the guest
# (at its host path: QEMU looks it up there; Debian's lives in /usr/share/seabios)
bios=""
for f in /usr/share/qemu/bios-256k.bin /usr/share/seabios/bios-256k.bin; do
  if [ -z "$bios" ] && [ -e "$f" ]; then bios=$f; fi
done
[ -n "$bios" ] || die "no SeaBIOS bios-256k.bin for the guest's QEMU (scripts/install-deps.sh)"
mkdir -p "$ROOT$(dirname "$bios")" && cp -L "$bios" "$ROOT$bios"
# and its TCG accelerator, a loadable module in Debian's build (at its host path too)
for m in /usr/lib/*/qemu/accel-tcg-x86_64.so; do
  if [ -e "$m" ]; then mkdir -p "$ROOT$(dirname "$m")" && cp -L "$m" "$ROOT$m"; fi
done

# SCX_TT_INITRD_EXTRA (checked above).
for i in "${!EXTRA_HOST[@]}"; do
  host=${EXTRA_HOST[$i]} guest=${EXTRA_GUEST[$i]}
  if [ -d "$host" ]; then
    mkdir -p "$ROOT$guest" && cp -rL "$host"/. "$ROOT$guest"/
  else
    [ ! -d "$ROOT$guest" ] \
      || die "SCX_TT_INITRD_EXTRA: guest path '$guest' is a directory in the initramfs; name the file (entry '$host:$guest')"
    mkdir -p "$ROOT$(dirname "$guest")" && cp -L "$host" "$ROOT$guest"
    if [ -x "$host" ]; then BINARIES+=("$host"); fi
  fi
  echo "initrd: extra $host -> $guest"
done

# Shared libraries at their host paths (ldd prints nothing useful for static binaries).
for b in "${BINARIES[@]}"; do
  for lib in $(ldd "$b" 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*'); do
    mkdir -p "$ROOT$(dirname "$lib")"
    [ -e "$ROOT$lib" ] || cp -L "$lib" "$ROOT$lib"
  done
done

# Uncompressed: the guest kernel unpacked the 31 MB gzip -1 archive (89 MB) in 5-6 s of every
# boot under TCG, the plain archive in about 1 s (boot to /init 10.6 s -> 7.0 s, 2026-11-29);
# QEMU copies the file into guest memory, which the 1 GiB guest has room for.
(cd "$ROOT" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "initrd: $OUT ($(du -h "$OUT" | cut -f1)); schedules: $(ls "$ROOT/schedules" | tr '\n' ' ')"
