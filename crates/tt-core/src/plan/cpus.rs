//! Which CPUs exist: the kernel's CPU list format (`0-3,5,7-8`) and the plan's check against it.

use super::error::{PlanError, PlanErrors, Rule};
use super::Plan;

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad CPU list {text:?}: {why}")]
pub struct CpuListError {
    pub text: String,
    pub why: &'static str,
}

/// Parse a kernel CPU list (`0-3,5\n`) into sorted, distinct CPU numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, CpuListError> {
    let bad = |why| CpuListError {
        text: text.to_string(),
        why,
    };
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let lo: u32 = lo.trim().parse().map_err(|_| bad("not a number"))?;
        let hi: u32 = hi.trim().parse().map_err(|_| bad("not a number"))?;
        if lo > hi {
            return Err(bad("range runs backwards"));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

impl Plan {
    /// Every managed and housekeeping CPU of the plan must be in `online`; the error lists each
    /// missing one with its path (`cpus.managed[1] = 7: ...`). `plan check` reports these as
    /// warnings; loading a plan to run must treat them as errors.
    pub fn check_cpus_exist(&self, online: &[u32]) -> Result<(), PlanErrors> {
        let shown = format_cpu_list(online);
        let mut errs = Vec::new();
        for (list, cpus) in [
            ("managed", &self.managed),
            ("housekeeping", &self.housekeeping),
        ] {
            for (i, c) in cpus.iter().enumerate() {
                if !online.contains(c) {
                    errs.push(PlanError::new(
                        format!("cpus.{list}[{i}]"),
                        Some(c.to_string()),
                        Rule::CpuOffline {
                            online: shown.clone(),
                        },
                    ));
                }
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(PlanErrors(errs))
        }
    }
}

/// The inverse of [`parse_cpu_list`]: `[5,0,1,2]` → `0-2,5`.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut cpus = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,5\n"), Ok(vec![0, 1, 2, 3, 5]));
        assert_eq!(parse_cpu_list("0\n"), Ok(vec![0]));
        assert_eq!(parse_cpu_list(""), Ok(vec![]));
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
    }

    #[test]
    fn formats_round_trip() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(
            parse_cpu_list("0-2,5,7-8").map(|c| format_cpu_list(&c)),
            Ok("0-2,5,7-8".into())
        );
    }
}
