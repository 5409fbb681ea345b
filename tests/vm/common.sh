# Paths shared by the VM harness scripts (sourced, not run).
#   SCX_TT_CACHE   downloads kept across runs (the kernel); default ~/.cache/scx_tt
#   SCX_TT_VM_DIR  build outputs (initramfs, run logs); default <repo>/target/vm
VM_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_SRC/../.." && pwd)
CACHE=${SCX_TT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/scx_tt}
VM_DIR=${SCX_TT_VM_DIR:-$REPO/target/vm}
KERNEL_DIR=$CACHE/kernel
VMLINUZ=$KERNEL_DIR/vmlinuz          # symlink to the chosen kernel image
KCONFIG=$KERNEL_DIR/config           # symlink to its config
INITRD=$VM_DIR/initrd.gz

log() { echo "vm: $*" >&2; }
die() { echo "vm: error: $*" >&2; exit 1; }
