//! CPU affinity of the calling thread: the one place scx_tt calls `sched_setaffinity` /
//! `sched_getaffinity` (the loader pins itself to each managed CPU to arm its slot timer; the
//! planner thread pins itself to a housekeeping CPU), and the one place a thread that is
//! starting gets its CPU and SCHED_FIFO from its parent ([`start_fifo`]).

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
    of(0).unwrap_or_default()
}

/// The CPUs thread `tid` may run on (its affinity), in increasing order.
pub fn of(tid: u32) -> std::io::Result<Vec<u32>> {
    // SAFETY: sched_getaffinity fills the set we own.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid as libc::pid_t, size_of::<libc::cpu_set_t>(), &mut set) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as u32)
            .filter(|&c| libc::CPU_ISSET(c as usize, &set))
            .collect())
    }
}

/// Gives the thread of `handle`, which has just been spawned, SCHED_FIFO priority `prio` (after
/// restricting it to `cpus`, when given), from the spawning thread. A new thread starts in the
/// class of its parent: as a sched_ext task it would wait for its first run in the housekeeping
/// queue behind every busy task there (under TCG with four busy processes: 200-400 ms, seen on
/// the rt kernel), and only then make itself SCHED_FIFO. Set from the parent, it runs at once.
/// The thread still sets both itself (so this is an early start, not its only setting).
pub fn start_fifo<T>(
    handle: &std::thread::JoinHandle<T>,
    cpus: Option<&[u32]>,
    prio: i32,
) -> std::io::Result<()> {
    use std::os::unix::thread::JoinHandleExt;
    let thread = handle.as_pthread_t();
    let check = |rc: i32| match rc {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    };
    if let Some(cpus) = cpus {
        // SAFETY: as in `set`; `thread` is a live thread (the handle is not joined).
        check(unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus
                .iter()
                .filter(|&&c| (c as usize) < libc::CPU_SETSIZE as usize)
            {
                libc::CPU_SET(c as usize, &mut set);
            }
            libc::pthread_setaffinity_np(thread, size_of::<libc::cpu_set_t>(), &set)
        })?;
    }
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: a valid parameter for a live thread.
    check(unsafe { libc::pthread_setschedparam(thread, libc::SCHED_FIFO, &param) })
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

    /// The parent sets a new thread's CPU and, where permitted (root), its class.
    #[test]
    fn a_started_thread_gets_its_cpu_and_fifo_from_its_parent() {
        let one = get()[0];
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            go_rx.recv().ok();
            // SAFETY: plain syscall on the calling thread.
            (get(), unsafe { libc::sched_getscheduler(0) })
        });
        let r = start_fifo(&h, Some(&[one]), 1);
        go_tx.send(()).ok();
        let (cpus, policy) = h.join().expect("thread");
        assert_eq!(cpus, vec![one], "restricted by its parent");
        // SAFETY: plain syscall.
        let root = unsafe { libc::geteuid() } == 0;
        match r {
            Ok(()) => assert_eq!(policy, libc::SCHED_FIFO),
            Err(e) => {
                assert!(!root, "refused to root: {e}");
                assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
            }
        }
    }
}
