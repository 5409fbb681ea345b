//! Reading what the BPF scheduler counts: the slot-record ring buffer, per-task and per-CPU
//! counters, and the run-time statistics of its programs.

use super::{map_err, LoadError, Scheduler};
use crate::abi::{self, MAX_TASKS, NO_TASK};
use crate::accounting::{CpuCounters, ProgStats, SlotSample, TaskCounters};
use libbpf_rs::{RingBuffer, RingBufferBuilder};
use std::collections::BTreeMap;
use std::mem::size_of;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

impl Scheduler<'_> {
    /// A ring buffer reader calling `sink` for every slot record.
    pub fn slot_records<'cb>(
        &self,
        mut sink: impl FnMut(SlotSample) + 'cb,
    ) -> Result<RingBuffer<'cb>, LoadError> {
        let mut b = RingBufferBuilder::new();
        b.add(&self.skel.maps.slot_recs, move |bytes: &[u8]| {
            if bytes.len() >= size_of::<abi::tt_slot_rec>() {
                // SAFETY: the ring buffer record is a tt_slot_rec written by BPF.
                let r: abi::tt_slot_rec =
                    unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
                sink(sample_of(&r));
            }
            0
        })
        .map_err(map_err("slot_recs"))?;
        b.build().map_err(map_err("slot_recs"))
    }

    /// Task `task`'s CPU time so far (BPF's `task_stats.run_ns`), ns; `None` past the table.
    pub fn task_run_ns(&self, task: usize) -> Option<u64> {
        let bss = self.skel.maps.bss_data.as_ref()?;
        // SAFETY: a volatile copy of a counter BPF updates concurrently.
        Some(unsafe { std::ptr::read_volatile(&bss.task_stats.get(task)?.run_ns) })
    }

    /// Per-task totals (plan order) and per managed CPU counters.
    pub fn counters(&self, nr_tasks: usize) -> (Vec<TaskCounters>, BTreeMap<u32, CpuCounters>) {
        let Some(bss) = self.skel.maps.bss_data.as_ref() else {
            return (vec![TaskCounters::default(); nr_tasks], BTreeMap::new());
        };
        // SAFETY: volatile copies of counters BPF updates concurrently.
        let tasks = (0..nr_tasks.min(MAX_TASKS))
            .map(|t| {
                let s = unsafe { std::ptr::read_volatile(&bss.task_stats[t]) };
                TaskCounters {
                    run_ns: s.run_ns,
                    inside_ns: s.inside_ns,
                    jobs_done: s.jobs_done,
                    jobs_carried: s.jobs_carried,
                    reclaimed_ns: s.reclaimed_ns,
                }
            })
            .collect();
        let cpus = self
            .managed
            .iter()
            .map(|&c| {
                // Exhaustive on both sides: a counter added to intf.h without a summary field
                // (or the reverse) does not compile.
                let crate::bpf_skel::types::tt_cpu_stats {
                    ticks,
                    tick_cost_ns,
                    late_skips,
                    pin_mismatch,
                    rec_drops,
                    lost_ns,
                    stop_events,
                    stop_late,
                    stop_kicks,
                    stop_cost_ns,
                    timer_errors,
                    releases,
                    dpm_defers,
                    dpm_slots,
                    dpm_shortened,
                    evictions,
                    evicted_ns,
                    higher_waits,
                    pinned_be,
                } = unsafe { std::ptr::read_volatile(&bss.cpu_stats[c as usize]) };
                let counters = CpuCounters {
                    ticks,
                    tick_cost_ns,
                    late_skips,
                    pin_mismatch,
                    rec_drops,
                    lost_ns,
                    stop_events,
                    stop_late,
                    stop_kicks,
                    stop_cost_ns,
                    timer_errors,
                    releases,
                    dpm_defers,
                    dpm_slots,
                    dpm_shortened,
                    evictions,
                    evicted_ns,
                    higher_waits,
                    pinned_be,
                };
                (c, counters)
            })
            .collect();
        (tasks, cpus)
    }

    /// Turn on kernel.bpf_stats run-time accounting for as long as this scheduler lives
    /// (BPF_ENABLE_STATS: the kernel turns it off when the fd closes, even on SIGKILL).
    pub fn enable_bpf_stats(&mut self) -> std::io::Result<()> {
        // SAFETY: plain syscall wrapper; a non-negative result is a new fd we own.
        let fd = unsafe {
            libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME)
        };
        if fd < 0 {
            return Err(std::io::Error::from_raw_os_error(-fd));
        }
        // SAFETY: fd is a fresh descriptor returned by the kernel.
        self.stats_fd = Some(unsafe { OwnedFd::from_raw_fd(fd) });
        Ok(())
    }

    /// run_cnt / run_time_ns of the scheduler's struct_ops programs (zero without bpf_stats).
    pub fn prog_stats(&self) -> Vec<ProgStats> {
        let p = &self.skel.progs;
        [
            ("select_cpu", p.tt_select_cpu.as_fd()),
            ("enqueue", p.tt_enqueue.as_fd()),
            ("dispatch", p.tt_dispatch.as_fd()),
            ("running", p.tt_running.as_fd()),
            ("stopping", p.tt_stopping.as_fd()),
            ("runnable", p.tt_runnable.as_fd()),
        ]
        .into_iter()
        .filter_map(|(name, fd)| {
            // SAFETY: bpf_prog_info is plain data; the kernel fills at most `len` bytes.
            let mut info: libbpf_rs::libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
            let mut len = size_of_val(&info) as u32;
            let rc = unsafe {
                libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len)
            };
            (rc == 0).then(|| ProgStats {
                name: name.to_string(),
                run_cnt: info.run_cnt,
                run_time_ns: info.run_time_ns,
                ns_per_run: info.run_time_ns.checked_div(info.run_cnt).unwrap_or(0),
            })
        })
        .collect()
    }

    /// Every program's name and the instructions the kernel's verifier walked to load it
    /// (`bpf_prog_info.verified_insns`): what the load's time grows with (`-v` prints them).
    pub fn verified_insns(&self) -> Vec<(String, u32)> {
        use libbpf_rs::skel::Skel;
        self.skel
            .object()
            .progs()
            .filter_map(|prog| {
                // SAFETY: as in `prog_stats`.
                let mut info: libbpf_rs::libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
                let mut len = size_of_val(&info) as u32;
                let rc = unsafe {
                    libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(
                        prog.as_fd().as_raw_fd(),
                        &mut info,
                        &mut len,
                    )
                };
                (rc == 0).then(|| {
                    (
                        prog.name().to_string_lossy().into_owned(),
                        info.verified_insns,
                    )
                })
            })
            .collect()
    }
}

fn sample_of(r: &abi::tt_slot_rec) -> SlotSample {
    let task = |t: u32| (t != NO_TASK).then_some(t as usize);
    SlotSample {
        slot: r.slot,
        cpu: r.cpu,
        owner: task(r.owner),
        owner_ns: r.owner_ns,
        be_ns: r.be_ns,
        other_tt_ns: r.other_tt_ns,
        kthread_ns: r.kthread_ns,
        foreign_ns: r.foreign_ns,
        be_ready_ns: r.be_ready_ns,
        be_kick_ns: r.be_kick_ns,
        late_ns: r.late_ns,
        be_top: task(r.be_top),
        perf: (r.perf != 0).then_some(r.perf),
    }
}
