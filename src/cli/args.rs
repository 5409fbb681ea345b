//! Argument parsers shared by the subcommands: numbers of seconds are finite and bounded, so
//! no flag can ask `Duration` for infinity, NaN or more than it holds, and a bad value is
//! refused by clap naming the flag, the value and the range.

/// `text` as seconds in `lo..=hi`.
pub fn secs_in(text: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|e| format!("{text:?} is not a number of seconds: {e}"))?;
    if !(lo..=hi).contains(&secs) {
        return Err(format!(
            "{text:?} must be a number of seconds in {lo}..={hi}"
        ));
    }
    Ok(secs)
}

/// `ctl --timeout-s`: 0.001 s to a day.
pub fn timeout_secs(text: &str) -> Result<f64, String> {
    secs_in(text, 0.001, 86_400.0)
}

/// `--duration-s`: 0 s to a year (omit it to run until a signal).
pub fn duration_secs(text: &str) -> Result<f64, String> {
    secs_in(text, 0.0, 31_536_000.0)
}

/// `--stats`: every 0.1 s to once a day.
pub fn stats_secs(text: &str) -> Result<f64, String> {
    secs_in(text, 0.1, 86_400.0)
}

/// `simulate --etf`: the execution-time factor of the local workloads, in (0, 1].
pub fn etf(text: &str) -> Result<f64, String> {
    let f: f64 = text
        .trim()
        .parse()
        .map_err(|e| format!("{text:?} is not a number: {e}"))?;
    if !(f > 0.0 && f <= 1.0) {
        return Err(format!(
            "{text:?} must be an execution-time factor in (0, 1] (a job runs at most its WCET)"
        ));
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etf_is_a_factor_in_zero_one() {
        assert_eq!(etf("1"), Ok(1.0));
        assert_eq!(etf(" 0.1 "), Ok(0.1));
        for bad in ["0", "-0.5", "1.01", "inf", "NaN", "x", ""] {
            assert!(etf(bad).is_err(), "{bad}");
        }
        let e = etf("1.5").unwrap_err();
        assert!(e.contains("\"1.5\"") && e.contains("(0, 1]"), "{e}");
    }

    #[test]
    fn seconds_are_finite_and_within_the_flags_range() {
        assert_eq!(timeout_secs("2.5"), Ok(2.5));
        assert_eq!(duration_secs("0"), Ok(0.0));
        assert_eq!(stats_secs(" 1 "), Ok(1.0));
        for bad in ["inf", "-inf", "NaN", "1e300", "-1", "x", ""] {
            assert!(timeout_secs(bad).is_err(), "timeout {bad}");
            assert!(duration_secs(bad).is_err(), "duration {bad}");
            assert!(stats_secs(bad).is_err(), "stats {bad}");
        }
        assert!(timeout_secs("0").is_err() && timeout_secs("86401").is_err());
        assert!(stats_secs("0.05").is_err());
        assert!(duration_secs("31536001").is_err());
        let e = duration_secs("inf").unwrap_err();
        assert!(e.contains("\"inf\"") && e.contains("0..=31536000"), "{e}");
    }
}
