use super::*;

#[test]
fn results_parse_last_value_wins() {
    let r = parse_results("a=1\nnot a result\nb = x y \na=2\n");
    assert_eq!(r.get("a").map(String::as_str), Some("2"));
    assert_eq!(r.get("b").map(String::as_str), Some("x y"));
    assert_eq!(r.len(), 2);
}

/// How many measurements `measure_until_settled` takes when try k fails as `fail(k)` says
/// (`Some(true)`: a timing check, `Some(false)`: an exact one), and whether it passed.
fn settle(fail: impl Fn(u32) -> Option<bool>) -> (u32, bool) {
    settle_on(fail, |_| None)
}

/// [`settle`] with the timer lateness the witness notes in try k.
fn settle_on(fail: impl Fn(u32) -> Option<bool>, p50: impl Fn(u32) -> Option<u64>) -> (u32, bool) {
    let calls = std::cell::Cell::new(0);
    let passed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        measure_until_settled("t", |_| {
            calls.set(calls.get() + 1);
            let mut c = Checks::default();
            if let Some(ns) = p50(calls.get()) {
                c.note_timer_late_p50(ns);
            }
            match fail(calls.get()) {
                Some(true) => c.check_timing(false, format!("late, try {}", calls.get())),
                Some(false) => c.check(false, "foreign time".into()),
                None => {}
            }
            c
        })
    }))
    .is_ok();
    (calls.get(), passed)
}

#[test]
fn timing_failures_are_measured_again_and_exact_ones_are_not() {
    // Two measurements that miss only a timing bound, then one that passes: three calls, pass.
    assert_eq!(settle(|k| (k < 3).then_some(true)), (3, true));
    // An exact failure is final at once.
    assert_eq!(settle(|_| Some(false)), (1, false));
    // Timing failures on every try fail after TIMING_TRIES measurements.
    assert_eq!(settle(|_| Some(true)), (TIMING_TRIES, false));
}

#[test]
fn timing_is_not_judged_only_when_every_measurement_was_too_slow() {
    let slow = NOISY_TIMER_P50_NS;
    // every try missed timing on a too slow host: passes after TIMING_TRIES measurements
    assert_eq!(
        settle_on(|_| Some(true), |_| Some(slow)),
        (TIMING_TRIES, true)
    );
    // one try was fast enough to judge: its timing failure counts
    assert_eq!(
        settle_on(
            |_| Some(true),
            |k| Some(if k == 2 { slow - 1 } else { slow })
        ),
        (TIMING_TRIES, false)
    );
    // no witness figure: judged as before
    assert_eq!(settle_on(|_| Some(true), |_| None), (TIMING_TRIES, false));
    // an exact failure on a slow host still fails at once
    assert_eq!(settle_on(|_| Some(false), |_| Some(slow)), (1, false));
}
