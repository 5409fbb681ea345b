//! One adaptive task's live period inference: the wakeups the BPF tracer published
//! (src/bpf/tt_sched.bpf.c L, drained by `sched::wake`) go into its [`PeriodAnalyser`]; every
//! sampling period `S` the analyser's window is detected. Pure: times in, detections out; the
//! run (src/cli/run/adaptive.rs) feeds it and prints what it found.

use super::{AdaptiveParams, Detection, ParamError, PeriodAnalyser, PeriodEstimate};

/// The inference state of one adaptive task.
#[derive(Clone, Debug)]
pub struct Tracker {
    analyser: PeriodAnalyser,
    sampling_ns: u64,
    next_ns: u64,
    /// Wakeups handed over by the tracer so far.
    pub wakeups: u64,
    /// Wakeups the ring overwrote before they were read.
    pub lost: u64,
    /// Wakeups earlier than one already taken (threads waking on two CPUs at once publish in
    /// reservation order, which may differ from time order by the few ns between a timestamp
    /// and its reservation); the analyser ignores them.
    pub out_of_order: u64,
    /// The last periodic detection.
    pub period: Option<PeriodEstimate>,
    /// Detections so far.
    pub samples: u64,
}

impl Tracker {
    /// A tracker with `params`' analyser, its first detection one sampling period after `now_ns`.
    pub fn new(params: &AdaptiveParams, now_ns: u64) -> Result<Self, ParamError> {
        Ok(Tracker {
            analyser: PeriodAnalyser::new(params.analyser.clone())?,
            sampling_ns: params.controller.sampling_ns,
            next_ns: now_ns.saturating_add(params.controller.sampling_ns),
            wakeups: 0,
            lost: 0,
            out_of_order: 0,
            period: None,
            samples: 0,
        })
    }

    /// Wakeups at `times_ns` (ring order), and `lost` more the ring overwrote.
    pub fn feed(&mut self, times_ns: &[u64], lost: u64) {
        self.lost = self.lost.saturating_add(lost);
        for &t in times_ns {
            self.wakeups = self.wakeups.saturating_add(1);
            if !self.analyser.push(t) {
                self.out_of_order = self.out_of_order.saturating_add(1);
            }
        }
    }

    /// At `now_ns`: when a sampling period has passed since the last detection, the detection
    /// of the window (the last `horizon`); a periodic one is kept in [`Self::period`] (a
    /// non-periodic one keeps the previous estimate). `None` before the sampling period is due.
    pub fn sample(&mut self, now_ns: u64) -> Option<Detection> {
        if now_ns < self.next_ns {
            return None;
        }
        // the next one S after this one's due time (no drift), or S after now when far behind
        let next = self.next_ns.saturating_add(self.sampling_ns);
        self.next_ns = if next <= now_ns {
            now_ns.saturating_add(self.sampling_ns)
        } else {
            next
        };
        self.analyser.advance(now_ns);
        let d = self.analyser.detect();
        self.samples += 1;
        if let Some(e) = d.estimate() {
            self.period = Some(e.clone());
        }
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::AdaptiveBounds;

    fn params(sampling_us: u64) -> AdaptiveParams {
        AdaptiveBounds {
            period_min_us: Some(10_000),
            period_max_us: Some(100_000),
            sampling_us: Some(sampling_us),
            ..Default::default()
        }
        .params(Some(2000))
        .expect("valid")
    }

    /// A 40 ms train fed in 100 ms batches, sampled every 500 ms: the estimate is within 0.1 %
    /// once the window holds enough events; a change to 30 ms is followed within the horizon.
    #[test]
    fn a_periodic_train_gives_its_period_and_follows_a_change() {
        let t0 = 1_000_000_000u64;
        let mut tr = Tracker::new(&params(500_000), t0).expect("tracker");
        let mut t = t0;
        let mut train = Vec::new();
        let end_40 = t0 + 4_000_000_000;
        let end = end_40 + 4_000_000_000;
        while t < end {
            // a little jitter, deterministic
            train.push(t + (t / 7_000_000) % 500_000);
            t += if t < end_40 { 40_000_000 } else { 30_000_000 };
        }
        let mut at_change = None;
        let mut followed = None;
        let mut i = 0;
        let mut now = t0;
        while now < end {
            now += 100_000_000;
            let batch: Vec<u64> = train[i..]
                .iter()
                .take_while(|&&x| x < now)
                .copied()
                .collect();
            i += batch.len();
            tr.feed(&batch, 0);
            if tr.sample(now).is_some() {
                let p = tr.period.as_ref().map(|e| e.period_ns);
                if now == end_40 {
                    at_change = p;
                }
                if now > end_40 && followed.is_none() {
                    if let Some(p) = p.filter(|p| (p / 30e6 - 1.0).abs() < 0.01) {
                        followed = Some((now - end_40, p));
                    }
                }
            }
        }
        let p40 = at_change.expect("a period before the change");
        assert!((p40 / 40e6 - 1.0).abs() < 0.001, "{p40}");
        let (after, p30) = followed.expect("the new period found");
        println!("40 ms: {p40:.0} ns; 30 ms found {after} ns after the change: {p30:.0} ns");
        assert!(after <= 2_500_000_000, "{after}");
        assert_eq!(tr.wakeups, train.len() as u64);
        assert_eq!((tr.lost, tr.out_of_order), (0, 0));
    }

    #[test]
    fn samples_come_every_sampling_period_and_out_of_order_wakeups_are_counted() {
        let mut tr = Tracker::new(&params(1_000_000), 0).expect("tracker");
        assert!(tr.sample(999_999_999).is_none());
        assert!(matches!(
            tr.sample(1_000_000_000),
            Some(Detection::TooFewEvents { events: 0 })
        ));
        assert!(tr.sample(1_500_000_000).is_none());
        assert!(tr.sample(2_000_000_000).is_some());
        // far behind: the next is S after now, not a burst of catch-up samples
        assert!(tr.sample(10_000_000_000).is_some());
        assert!(tr.sample(10_500_000_000).is_none());
        assert!(tr.sample(11_000_000_000).is_some());
        tr.feed(&[10_000_000_000, 9_000_000_000, 10_500_000_000], 3);
        assert_eq!((tr.wakeups, tr.out_of_order, tr.lost), (3, 1, 3));
        assert_eq!(tr.samples, 4);
    }
}
