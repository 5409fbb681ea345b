# Paths shared by the VM harness scripts (sourced, not run).
#   SCX_TT_CACHE   downloads kept across runs (the kernels); default ~/.cache/scx_tt
#   SCX_TT_VM_DIR  build outputs (initramfs, run logs); default <repo>/target/vm
#   SCX_TT_QEMU    the QEMU binary that boots the VMs; default the backport qemu.sh fetched,
#                  else the host's qemu-system-x86_64
VM_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_SRC/../.." && pwd)
CACHE=${SCX_TT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/scx_tt}
VM_DIR=${SCX_TT_VM_DIR:-$REPO/target/vm}
# SCX_TT_VM_KERNEL  the kernel the VMs boot (kernel.sh --kernel NAME): default (Debian's newest
#                   cloud kernel with sched_ext), rt (Debian's PREEMPT_RT kernel), lts (6.12 built
#                   from Debian's linux-source-6.12) or lts-rt (the same with PREEMPT_RT)
KERNEL_NAME=${SCX_TT_VM_KERNEL:-default}
case $KERNEL_NAME in
  default) KERNEL_DIR=$CACHE/kernel ;;
  rt|lts|lts-rt) KERNEL_DIR=$CACHE/kernel-$KERNEL_NAME ;;
  *) echo "vm: error: SCX_TT_VM_KERNEL=$KERNEL_NAME: not a kernel kernel.sh knows (default, rt, lts, lts-rt)" >&2
     exit 1 ;;
esac
VMLINUZ=$KERNEL_DIR/vmlinuz          # symlink to the chosen kernel image
KCONFIG=$KERNEL_DIR/config           # symlink to its config
INITRD=$VM_DIR/initrd.cpio
QEMU_DIR=$CACHE/qemu
QEMU_BACKPORT=$QEMU_DIR/root/usr/bin/qemu-system-x86_64

# The QEMU binary run.sh boots the VMs with (qemu.sh says why the backport).
qemu_bin() {
  if [ -n "${SCX_TT_QEMU:-}" ]; then
    echo "$SCX_TT_QEMU"
  elif [ -e "$QEMU_DIR/stamp" ] && [ -x "$QEMU_BACKPORT" ]; then
    echo "$QEMU_BACKPORT"
  else
    echo qemu-system-x86_64
  fi
}

log() { echo "vm: $*" >&2; }
die() { echo "vm: error: $*" >&2; exit 1; }
