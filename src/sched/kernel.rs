//! What the running kernel offers scx_tt's features, and the refusal of a feature it lacks
//! (issue 32 item 3, docs/vm-harness.md "Kernels"). Pure: the loader reads [`KernelPieces`] once
//! at start (`sched::loader::probe_kernel`, from the kernel's BTF and version), and the run asks
//! [`lacks`] before anything is attached, so a refused feature changes nothing.
//!
//! One BPF object runs on every kernel from 6.12 on; what differs between them is decided here:
//! - the bpf_timer slot clock needs a kernel whose verifier allows `bpf_timer` in these programs:
//!   not CONFIG_PREEMPT_RT (6.12 and 7.3 alike refuse it there; the helper-thread clock replaces
//!   it, `sched::rt_clock`);
//! - per-slot frequency targets through BPF (`--freq-backend cpuperf`, `--perf-table`) need the
//!   kfunc `scx_bpf_cpuperf_set`;
//! - the ops flags `SCX_OPS_ENQ_EXITING` and `SCX_OPS_ENQ_MIGRATION_DISABLED` route exiting and
//!   migration-disabled tasks through ops.enqueue (src/bpf/tt_sched.bpf.c C). Without
//!   `SCX_OPS_ENQ_EXITING` the kernel keeps an exiting task on its CPU's local DSQ, where it can
//!   run into another owner's slot for up to one slot: the run goes on, and [`notes`] says so at
//!   start. A kernel without `SCX_OPS_ENQ_MIGRATION_DISABLED` (6.12) needs no note: the flag came
//!   with the kernel's local-DSQ shortcut for migration-disabled tasks that it turns off (6.15),
//!   and 6.12's `do_enqueue_task` calls ops.enqueue for them (kernel/sched/ext.c).

use std::fmt;

/// The pieces of the running kernel that scx_tt's features need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelPieces {
    /// `uname -r`.
    pub release: String,
    /// CONFIG_PREEMPT_RT (its verifier refuses bpf_timer).
    pub preempt_rt: bool,
    /// The kfunc `scx_bpf_cpuperf_set`.
    pub cpuperf_set: bool,
    /// The ops flag `SCX_OPS_ENQ_EXITING`.
    pub enq_exiting: bool,
    /// The ops flag `SCX_OPS_ENQ_MIGRATION_DISABLED`.
    pub enq_migration_disabled: bool,
}

/// A feature that needs a kernel piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// `--slot-clock timer` (or `auto` where it resolves to the bpf_timer).
    TimerSlotClock,
    /// Per-slot frequency targets passed to the kernel by BPF: `--freq-backend cpuperf`,
    /// `--perf-table`.
    CpuperfTargets(&'static str),
}

impl Feature {
    fn name(self) -> &'static str {
        match self {
            Feature::TimerSlotClock => "--slot-clock timer",
            Feature::CpuperfTargets(flag) => flag,
        }
    }
}

/// A feature the running kernel cannot provide: names the feature, the kernel and the piece.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    pub feature: Feature,
    pub release: String,
    pub piece: &'static str,
    /// What to use instead.
    pub instead: &'static str,
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: kernel {} lacks {}; {}",
            self.feature.name(),
            self.release,
            self.piece,
            self.instead
        )
    }
}

/// Why kernel `k` cannot provide `feature` (None: it can).
pub fn lacks(k: &KernelPieces, feature: Feature) -> Option<Missing> {
    let (piece, instead) = match feature {
        Feature::TimerSlotClock if k.preempt_rt => (
            "bpf_timer in BPF programs (the kernel is PREEMPT_RT, whose BPF verifier refuses \
             bpf_timer)",
            "use --slot-clock auto or rt: helper threads tick the slots",
        ),
        Feature::CpuperfTargets(_) if !k.cpuperf_set => (
            "the kfunc scx_bpf_cpuperf_set (sched_ext's frequency targets)",
            "use --freq-backend cpufreq (the userspace governor) or none",
        ),
        _ => return None,
    };
    Some(Missing {
        feature,
        release: k.release.clone(),
        piece,
        instead,
    })
}

/// What runs differently on kernel `k` without refusing anything: one line per missing ops
/// flag, naming the kernel, the flag and the consequence.
pub fn notes(k: &KernelPieces) -> Vec<String> {
    let mut out = Vec::new();
    // not SCX_OPS_ENQ_MIGRATION_DISABLED: a kernel without it has no shortcut to bypass
    for (has, flag, tasks) in [(k.enq_exiting, "SCX_OPS_ENQ_EXITING", "an exiting task")] {
        if !has {
            out.push(format!(
                "kernel {} lacks {flag}: {tasks} stays on its CPU's local DSQ without \
                 ops.enqueue and may run up to one slot into another owner's slot",
                k.release
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(rt: bool, perf: bool, exiting: bool, migr: bool) -> KernelPieces {
        KernelPieces {
            release: "6.12.117-lts".into(),
            preempt_rt: rt,
            cpuperf_set: perf,
            enq_exiting: exiting,
            enq_migration_disabled: migr,
        }
    }

    /// Every combination of pieces against every feature, against the rule written out: the
    /// timer clock needs a kernel that is not PREEMPT_RT, cpuperf targets need the kfunc.
    #[test]
    fn a_feature_is_refused_exactly_when_its_piece_is_missing() {
        for bits in 0..16u8 {
            let k = kernel(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0, bits & 8 != 0);
            let timer = lacks(&k, Feature::TimerSlotClock);
            assert_eq!(timer.is_some(), k.preempt_rt, "{k:?}");
            let perf = lacks(&k, Feature::CpuperfTargets("--perf-table"));
            assert_eq!(perf.is_some(), !k.cpuperf_set, "{k:?}");
            // a note only for the exiting flag (see `notes`)
            assert_eq!(notes(&k).len(), usize::from(!k.enq_exiting), "{k:?}");
        }
    }

    #[test]
    fn a_refusal_names_the_feature_the_kernel_and_the_piece() {
        let k = kernel(true, false, true, true);
        let t = lacks(&k, Feature::TimerSlotClock)
            .expect("refused")
            .to_string();
        assert!(
            t.starts_with("--slot-clock timer: kernel 6.12.117-lts lacks bpf_timer")
                && t.contains("PREEMPT_RT")
                && t.contains("--slot-clock auto or rt"),
            "{t}"
        );
        let p = lacks(&k, Feature::CpuperfTargets("--freq-backend cpuperf"))
            .expect("refused")
            .to_string();
        assert!(
            p.starts_with(
                "--freq-backend cpuperf: kernel 6.12.117-lts lacks the kfunc scx_bpf_cpuperf_set"
            ),
            "{p}"
        );
    }

    #[test]
    fn a_missing_ops_flag_is_a_note_naming_the_kernel_and_the_flag() {
        let n = notes(&kernel(false, true, false, true));
        assert_eq!(n.len(), 1);
        assert!(
            n[0].starts_with(
                "kernel 6.12.117-lts lacks SCX_OPS_ENQ_EXITING: an exiting task stays on its \
                 CPU's local DSQ"
            ),
            "{}",
            n[0]
        );
        assert!(notes(&kernel(false, true, true, true)).is_empty());
        // 6.12: no SCX_OPS_ENQ_MIGRATION_DISABLED, and no shortcut it would turn off
        assert!(notes(&kernel(false, true, true, false)).is_empty());
    }
}
