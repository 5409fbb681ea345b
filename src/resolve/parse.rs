//! Pure parsers of /proc and cgroupfs text.

/// Thread ids of a `cgroup.threads` / `cgroup.procs` file: one decimal id per line.
pub fn parse_tid_list(text: &str) -> Vec<u32> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// QEMU names its vCPU threads "CPU <n>/KVM" (or "CPU <n>/TCG" without KVM).
pub fn is_qemu_vcpu_comm(comm: &str) -> bool {
    let Some(rest) = comm.strip_prefix("CPU ") else {
        return false;
    };
    let Some((n, accel)) = rest.split_once('/') else {
        return false;
    };
    !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && matches!(accel, "KVM" | "TCG")
}

/// The guest name of a QEMU command line (`/proc/<pid>/cmdline`, NUL separated):
/// `-name NAME`, `-name guest=NAME,...` or `-name NAME,debug-threads=on`.
pub fn qemu_name_from_cmdline(cmdline: &[u8]) -> Option<String> {
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let exe = std::str::from_utf8(args.first()?).ok()?;
    if !exe.rsplit('/').next()?.starts_with("qemu") {
        return None;
    }
    let pos = args
        .iter()
        .position(|a| *a == b"-name" || *a == b"--name")?;
    let value = std::str::from_utf8(args.get(pos + 1)?).ok()?;
    value
        .split(',')
        .find_map(|part| match part.split_once('=') {
            Some(("guest", v)) => Some(v.to_string()),
            Some(_) => None,
            None => Some(part.to_string()),
        })
}

/// A kernel CPU list such as `0-3,8,10-11`.
pub fn parse_cpu_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_list_ranges_and_singles() {
        assert_eq!(parse_cpu_list("0-2,5,7-8\n"), vec![0, 1, 2, 5, 7, 8]);
    }

    #[test]
    fn vcpu_comm_needs_number_and_accel() {
        assert!(is_qemu_vcpu_comm("CPU 0/KVM"));
        assert!(is_qemu_vcpu_comm("CPU 12/TCG"));
        assert!(!is_qemu_vcpu_comm("CPU /KVM"));
        assert!(!is_qemu_vcpu_comm("IO mon_iothread"));
    }
}
