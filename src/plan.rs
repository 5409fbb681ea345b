//! Plans (`tt_core::plan`, pure: text or bytes in, a validated [`Plan`] out) and, here at the
//! edge, reading them from files and the machine's online CPUs from sysfs.

pub use tt_core::plan::*;

use std::path::Path;

/// Where the kernel lists the online CPUs.
pub const ONLINE_CPUS_PATH: &str = "/sys/devices/system/cpu/online";

/// Read, parse and validate a plan file. A file above [`MAX_PLAN_BYTES`] or not UTF-8 is an
/// invalid plan (one error: the size, or the offset of the first bad byte); at most
/// `MAX_PLAN_BYTES + 1` bytes are read.
pub fn from_file(path: impl AsRef<Path>) -> Result<Plan, LoadError> {
    let path = path.as_ref();
    let bytes = read_capped(path, MAX_PLAN_BYTES).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    from_bytes(path, &bytes)
}

/// At most `cap + 1` bytes of the regular file at `path` (one more than allowed tells it is too
/// large). Anything else (a FIFO, a device, a directory) is refused without reading, so a
/// control request naming a FIFO cannot block the run loop: the file is opened non-blocking
/// (opening a FIFO with no writer would wait) and checked on the open descriptor.
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {what}: plans and arrivals are read from regular files only"),
        ));
    }
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The online CPUs of this machine.
pub fn read_online_cpus() -> std::io::Result<Vec<u32>> {
    let text = std::fs::read_to_string(ONLINE_CPUS_PATH)?;
    cpus::parse_cpu_list(&text).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}
