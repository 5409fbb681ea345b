#!/bin/bash
# Fetches a Debian kernel with CONFIG_SCHED_CLASS_EXT=y for the test VMs and caches it.
#
# --kernel NAME (default: $SCX_TT_VM_KERNEL, else default) picks which:
#   default  the newest cloud kernel (linux-image-cloud-amd64), cached in $CACHE/kernel;
#   rt       the newest PREEMPT_RT kernel (linux-image-rt-amd64; CONFIG_PREEMPT_RT=y, where the
#            verifier refuses bpf_timer and scx_tt runs its helper-thread slot clock), cached in
#            $CACHE/kernel-rt.
#   lts      the 6.12 LTS, built here from Debian trixie's linux-source-6.12 (Debian's own 6.12
#            images have no sched_ext) with a small config for the test VM: tinyconfig plus
#            tests/vm/lts.config. Cached in $CACHE/kernel-lts; the source tree in $CACHE/lts-src.
#   lts-rt   the same build with CONFIG_PREEMPT_RT=y (mainline since 6.12), in $CACHE/kernel-lts-rt.
#            A build is reused while the source version and the config fragment are unchanged.
#            Needs gcc, make, flex, bison, bc, libelf-dev and pahole (dwarves): install-deps.sh.
# The candidates are the meta package in sid and in trixie-backports; the newer version
# wins. apt runs with a private configuration (sources, lists, cache under $CACHE/kernel/apt)
# derived from this machine's own /etc/apt/sources.list.d/debian.sources, so the system's apt
# state is untouched and no archive host is named here.
#
# Usage: kernel.sh [--kernel NAME] [--refresh]
#   A cached kernel younger than $SCX_TT_KERNEL_MAX_AGE_DAYS (default 7) is reused without any
#   network access; --refresh forces a new resolution. If the download fails and a cached
#   kernel exists, it is used with a warning.
# Prints the kernel release and the image path.
set -euo pipefail
REFRESH=""
while [ $# -gt 0 ]; do
  case $1 in
    --kernel) export SCX_TT_VM_KERNEL=${2:?--kernel needs a NAME}; shift 2 ;;
    --refresh) REFRESH=1; shift ;;
    *) echo "kernel.sh: unknown argument $1 (usage: kernel.sh [--kernel NAME] [--refresh])" >&2
       exit 2 ;;
  esac
done
source "$(dirname "$0")/common.sh"

SUITES=(sid trixie-backports)
case $KERNEL_NAME in
  default) META=linux-image-cloud-amd64 ;;
  rt) META=linux-image-rt-amd64 ;;
  lts|lts-rt) META=linux-source-6.12 ;;
esac
SOURCES=/etc/apt/sources.list.d/debian.sources
MAX_AGE_DAYS=${SCX_TT_KERNEL_MAX_AGE_DAYS:-7}

# Fails unless the config enables sched_ext.
verify_config() {
  grep -q '^CONFIG_SCHED_CLASS_EXT=y' "$1" || die "$1 lacks CONFIG_SCHED_CLASS_EXT=y"
  case $KERNEL_NAME in
    rt|lts-rt) grep -q '^CONFIG_PREEMPT_RT=y' "$1" || die "$1 lacks CONFIG_PREEMPT_RT=y" ;;
  esac
}

cached_ok() {
  [ -e "$VMLINUZ" ] && [ -e "$KCONFIG" ] || return 1
  verify_config "$KCONFIG"
}

report() {
  echo "kernel: $KERNEL_NAME: $(cat "$KERNEL_DIR/release") ($(cat "$KERNEL_DIR/suite"))"
  echo "image:  $(readlink -f "$VMLINUZ")"
  grep -E '^CONFIG_(SCHED_CLASS_EXT|HZ|DEBUG_INFO_BTF|FUNCTION_TRACER|PREEMPT_RT)=' "$KCONFIG" | tr '\n' ' '
  echo
}

# apt options for a private state directory of one suite.
apt_opts() {
  local w=$KERNEL_DIR/apt/$1
  echo "-o Dir::Etc::SourceList=$w/private.sources -o Dir::Etc::SourceParts=/dev/null" \
       "-o Dir::State::Lists=$w/lists -o Dir::Cache=$w/cache" \
       "-o Dir::State::Status=/var/lib/dpkg/status -o APT::Get::List-Cleanup=0"
}

# Writes the private deb822 sources file of a suite (apt wants the name to end in .sources): the
# system file's first stanza (the main archive) with its Suites line replaced.
prepare_suite() {
  local w=$KERNEL_DIR/apt/$1
  mkdir -p "$w/lists/partial" "$w/cache/archives/partial"
  [ -r "$SOURCES" ] || die "$SOURCES not found: cannot derive the archive for the VM kernel"
  awk 'BEGIN { RS = ""; ORS = "\n\n" } NR == 1' "$SOURCES" \
    | sed -E "s/^Suites:.*/Suites: $1/" > "$w/private.sources"
}

# Prints "<version> <image package>" of the meta package's kernel in one suite.
resolve_suite() {
  local s=$1 img ver
  prepare_suite "$s"
  # shellcheck disable=SC2046
  apt-get -q $(apt_opts "$s") update > "$KERNEL_DIR/apt/$s/update.log" 2>&1 \
    || { log "apt update for $s failed (see $KERNEL_DIR/apt/$s/update.log)"; return 1; }
  img=$(apt-cache $(apt_opts "$s") depends "$META" 2>/dev/null \
          | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
  [ -n "$img" ] || { log "$s: $META resolves to no image package"; return 1; }
  ver=$(apt-cache $(apt_opts "$s") show "$img" 2>/dev/null | awk '/^Version:/ { print $2; exit }')
  echo "$ver $img"
}

# Downloads and unpacks an image package; since ~6.17 Debian splits it into linux-binary-*
# (vmlinuz, modules) and linux-base-* (config, System.map).
fetch_image() {
  local s=$1 img=$2 dest=$3 pkgs
  pkgs=$(apt-cache $(apt_opts "$s") depends "$img" 2>/dev/null \
           | awk '/Depends: linux-(binary|base)-/ { print $2 }' | sort -u)
  [ -n "$pkgs" ] || pkgs=$img
  rm -rf "$dest" && mkdir -p "$dest/debs"
  # shellcheck disable=SC2086
  (cd "$dest/debs" && apt-get -q $(apt_opts "$s") download $pkgs > ../download.log 2>&1) \
    || die "download of $pkgs failed (see $dest/download.log)"
  for d in "$dest"/debs/*.deb; do dpkg-deb -x "$d" "$dest/root"; done
  rm -rf "$dest/debs"
}

# --- lts, lts-rt: the 6.12 LTS built from source -------------------------------------------

LTS_SRC_ROOT=$CACHE/lts-src
FRAGMENT=$VM_SRC/lts.config

# The fragment this build merges over tinyconfig: lts.config, plus PREEMPT_RT for lts-rt.
# The release names the build (6.12.117-lts, 6.12.117-lts-rt): the initramfs keeps each cached
# kernel's config as /boot/config-<release>, so two builds of one version must not share it.
write_fragment() {
  if [ "$KERNEL_NAME" = lts-rt ]; then
    grep -vE '^CONFIG_PREEMPT_(VOLUNTARY|DYNAMIC)=' "$FRAGMENT"
    printf '%s\n' '# lts-rt' 'CONFIG_PREEMPT_RT=y'
  else
    cat "$FRAGMENT"
  fi
  printf 'CONFIG_LOCALVERSION="-%s"\n' "$KERNEL_NAME"
}

# Downloads linux-source-6.12 VERSION from SUITE and unpacks its tarball once into
# $LTS_SRC_ROOT/VERSION/src; prints the tree.
lts_source() {
  local s=$1 ver=$2 dir=$LTS_SRC_ROOT/$2 tarball
  if [ ! -e "$dir/unpacked" ]; then
    log "fetching $META $ver from $s"
    rm -rf "$dir" && mkdir -p "$dir/debs"
    # shellcheck disable=SC2046
    (cd "$dir/debs" && apt-get -q $(apt_opts "$s") download "$META=$ver" > ../download.log 2>&1) \
      || die "download of $META $ver failed (see $dir/download.log)"
    dpkg-deb -x "$dir"/debs/*.deb "$dir/deb"
    tarball=$(ls "$dir"/deb/usr/src/linux-source-*.tar.* | head -1)
    [ -n "$tarball" ] || die "$META $ver has no source tarball"
    mkdir -p "$dir/src" && tar -xf "$tarball" -C "$dir/src" --strip-components=1
    rm -rf "$dir/debs" "$dir/deb"
    touch "$dir/unpacked"
  fi
  echo "$dir/src"
}

# Configures and builds bzImage out of tree in $KERNEL_DIR/build; every step's output goes to
# $KERNEL_DIR/build.log. Options of the fragment that did not survive olddefconfig (a missing
# dependency) fail the build with their names.
lts_build() {
  local src=$1 ver=$2 b=$KERNEL_DIR/build started=$SECONDS opt want got missing=()
  mkdir -p "$b"
  local frag=$KERNEL_DIR/fragment.config
  write_fragment > "$frag"
  {
    make -C "$src" O="$b" tinyconfig
    "$src/scripts/kconfig/merge_config.sh" -m -O "$b" "$b/.config" "$frag"
    make -C "$src" O="$b" olddefconfig
  } > "$KERNEL_DIR/build.log" 2>&1 || die "configuring $META failed (see $KERNEL_DIR/build.log)"
  while IFS= read -r opt; do
    case $opt in
      CONFIG_*=*) want=$opt; got=$(grep -E "^${opt%%=*}=" "$b/.config" || true)
        [ "$got" = "$want" ] || missing+=("$want (got ${got:-unset})") ;;
      "# CONFIG_"*" is not set") want=${opt#\# }; want=${want%% *}
        if grep -qE "^$want=" "$b/.config"; then missing+=("$want unset (got set)"); fi ;;
    esac
  done < "$frag"
  [ ${#missing[@]} -eq 0 ] || die "config fragment not applied: ${missing[*]} (tests/vm/lts.config)"
  log "building $META $ver ($KERNEL_NAME) with $(nproc) jobs; log: $KERNEL_DIR/build.log"
  make -C "$src" O="$b" -j"$(nproc)" bzImage >> "$KERNEL_DIR/build.log" 2>&1 \
    || { tail -n 20 "$KERNEL_DIR/build.log" >&2; die "building $META failed (see $KERNEL_DIR/build.log)"; }
  log "built in $((SECONDS - started)) s"
}

lts_main() {
  mkdir -p "$KERNEL_DIR"
  local key_now
  key_now=$(write_fragment | sha256sum | cut -c1-16)
  if [ -z "$REFRESH" ] && cached_ok && [ "$(cat "$KERNEL_DIR/key" 2>/dev/null)" = "$key_now" ]; then
    report; return
  fi
  local started=$SECONDS s=trixie line ver src
  line=$(resolve_source "$s") || die "could not resolve $META in $s"
  ver=${line%% *}
  log "$s: $META $ver"
  src=$(lts_source "$s" "$ver")
  lts_build "$src" "$ver"
  ln -sfn "$KERNEL_DIR/build/arch/x86/boot/bzImage" "$VMLINUZ"
  ln -sfn "$KERNEL_DIR/build/.config" "$KCONFIG"
  verify_config "$KCONFIG"
  make -s -C "$src" O="$KERNEL_DIR/build" kernelrelease > "$KERNEL_DIR/release"
  echo "$s $META $ver" > "$KERNEL_DIR/suite"
  echo "$key_now" > "$KERNEL_DIR/key"
  touch "$KERNEL_DIR/stamp"
  report
  echo "fetched and built in $((SECONDS - started)) s"
}

# Prints "<version> <package>" of a source package in one suite.
resolve_source() {
  local s=$1 ver
  prepare_suite "$s"
  # shellcheck disable=SC2046
  apt-get -q $(apt_opts "$s") update > "$KERNEL_DIR/apt/$s/update.log" 2>&1 \
    || { log "apt update for $s failed (see $KERNEL_DIR/apt/$s/update.log)"; return 1; }
  ver=$(apt-cache $(apt_opts "$s") show "$META" 2>/dev/null | awk '/^Version:/ { print $2; exit }')
  [ -n "$ver" ] || { log "$s: no $META"; return 1; }
  echo "$ver $META"
}

fresh() {
  [ -e "$KERNEL_DIR/stamp" ] && [ -z "$(find "$KERNEL_DIR/stamp" -mtime +"$MAX_AGE_DAYS")" ]
}

main() {
  mkdir -p "$KERNEL_DIR"
  if [ -z "$REFRESH" ] && fresh && cached_ok; then report; return; fi
  local started=$SECONDS

  local best_suite="" best_ver="" best_img="" line
  for s in "${SUITES[@]}"; do
    line=$(resolve_suite "$s") || continue
    log "$s: ${line#* } ${line%% *}"
    if [ -z "$best_ver" ] || dpkg --compare-versions "${line%% *}" gt "$best_ver"; then
      best_suite=$s; best_ver=${line%% *}; best_img=${line#* }
    fi
  done
  if [ -z "$best_suite" ]; then
    cached_ok && { log "warning: no suite resolved; using the cached kernel"; report; return; }
    die "could not resolve $META in ${SUITES[*]} and no kernel is cached"
  fi

  local dest=$KERNEL_DIR/$best_img image config
  if [ ! -d "$dest/root" ]; then
    log "fetching $best_img $best_ver from $best_suite"
    fetch_image "$best_suite" "$best_img" "$dest"
  fi
  image=$(ls "$dest"/root/usr/lib/modules/*/vmlinuz "$dest"/root/boot/vmlinuz-* 2>/dev/null | head -1 || true)
  config=$(ls "$dest"/root/usr/lib/modules/*/config "$dest"/root/boot/config-* 2>/dev/null | head -1 || true)
  [ -n "$image" ] && [ -n "$config" ] || die "$best_img has no vmlinuz or config"
  verify_config "$config"
  ln -sfn "$image" "$VMLINUZ"
  ln -sfn "$config" "$KCONFIG"
  echo "${best_img#linux-image-}" > "$KERNEL_DIR/release"
  echo "$best_suite $best_ver" > "$KERNEL_DIR/suite"
  touch "$KERNEL_DIR/stamp"
  report
  echo "fetched in $((SECONDS - started)) s"
}

case $KERNEL_NAME in
  lts|lts-rt) lts_main ;;
  *) main ;;
esac
