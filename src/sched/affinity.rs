//! CPU affinity of the calling thread: the one place scx_tt calls `sched_setaffinity` /
//! `sched_getaffinity` (the loader pins itself to each managed CPU to arm its slot timer; the
//! planner thread pins itself to a housekeeping CPU).

use std::mem::size_of;

/// Restricts the calling thread to `cpus` (ids at or above `CPU_SETSIZE` are ignored).
pub fn set(cpus: &[u32]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays inside it for cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus
            .iter()
            .filter(|&&c| (c as usize) < libc::CPU_SETSIZE as usize)
        {
            libc::CPU_SET(c as usize, &mut set);
        }
        if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPUs the calling thread may run on (empty if the kernel refuses to say).
pub fn get() -> Vec<u32> {
    // SAFETY: sched_getaffinity fills the set we own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as u32)
            .filter(|&c| libc::CPU_ISSET(c as usize, &set))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_to_one_allowed_cpu_and_back() {
        let before = get();
        assert!(!before.is_empty());
        std::thread::spawn(move || {
            let one = before[0];
            set(&[one]).expect("pin");
            assert_eq!(get(), vec![one]);
            set(&before).expect("restore");
            assert_eq!(get(), before);
        })
        .join()
        .expect("thread");
    }
}
