/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ABI between src/bpf/tt_sched.bpf.c and the Rust loader (src/sched/, via bindgen).
 *
 * Every constant and struct that crosses the boundary lives here. Sizes are checked with
 * _Static_assert below and with const asserts in src/abi.rs (which also holds the constants); change both together.
 * Times are nanoseconds of CLOCK_MONOTONIC (bpf_ktime_get_ns()), named *_ns.
 */
#ifndef __TT_INTF_H
#define __TT_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

enum tt_limits {
	/*
	 * CPU ids must be below this (a power of two: sizes the per-CPU .bss arrays, and masks
	 * CPU ids for the verifier). The per-CPU maps (timers, dpm_until) are sized from the plan
	 * at load instead.
	 */
	TT_MAX_CPUS = 1024,
	/* Tasks (tt + be) per run: the plan's and those admitted at run time (a power of two). */
	TT_MAX_TASKS = 1024,
	/* Threads that may belong to plan tasks at once (tid -> task map). */
	TT_MAX_THREADS = 65536,
	/* How far dispatch looks ahead for the end of the owner's contiguous run of slots. */
	TT_LOOKAHEAD_SLOTS = 16,
	/* Slots one run segment is split over at most (the rest counts as lost_ns). */
	TT_MAX_PIECES = 256,
	/* Full performance for scx_bpf_cpuperf_set (SCX_CPUPERF_ONE). */
	TT_PERF_ONE = 1024,
	/* Ring buffer of per-slot records, bytes (a power of two, page multiple). */
	TT_RINGBUF_BYTES = 1 << 20,
	/*
	 * Slots per managed CPU in the observation ring (slot_obs): a power of two, more than
	 * the planner's largest lead (8 slots) + 2, so an entry lives long enough to be read.
	 */
	TT_OBS_RING = 16,
	/* Slots one deferred slot tick may skip at most (a DPM idle period, K). */
	TT_DPM_MAX_SLOTS = 1024,
	/* Adaptive tasks traced at once: one wakeup ring each (bss wake_rings, L). */
	TT_MAX_ADAPTIVE = 16,
	/* Wakeups per adaptive task's ring (a power of two; L). */
	TT_WAKE_RING = 256,
};

/* "no task": a free slot in the table, or no be task in a record. */
#define TT_NO_TASK 0xffffffffu
/*
 * A table entry is TT_NO_TASK, or a task index (below TT_MAX_TASKS, so within
 * TT_ENTRY_TASK_MASK) with flag bits above it. TT_NO_TASK is checked first: it has every bit set.
 * TT_ENTRY_JOB_START marks the first slot of a job of the entry's task: the tick that starts
 * that slot ends the task's previous job's completion (tt_sched.bpf.c, I).
 */
#define TT_ENTRY_TASK_MASK 0xffffu
#define TT_ENTRY_JOB_START 0x10000u
/*
 * "DPM idle: run nothing" (planner mode under dpm or dpm+dvfs, tt_sched.bpf.c K): no owner, and
 * unlike TT_NO_TASK no be work either (unless rodata dpm_be), so the core can sleep; the slot
 * tick is deferred through a run of such entries. Never carries flags.
 */
#define TT_DPM_IDLE 0xfffffffdu
/* task_ctx value of scx_tt's own loader thread while it arms the timers on managed CPUs. */
#define TT_LOADER_TASK 0xfffffffeu
/* table_switch_slot when no table switch is pending. */
#define TT_NO_SWITCH 0xffffffffffffffffULL

/* What a CPU does (rodata cpu_role[cpu]). CPUs not named by the plan are housekeeping. */
enum tt_cpu_role {
	TT_CPU_HOUSEKEEPING = 0,
	TT_CPU_MANAGED = 1,
};

/* Class of a plan task (rodata task_class[task]). */
enum tt_class {
	TT_CLASS_TT = 1,
	TT_CLASS_BE = 2,
};

/* How a tt task's job ends early (rodata task_completion[task]; tt_sched.bpf.c, I). */
enum tt_completion {
	TT_COMPLETION_NONE = 0, /* never early: the job runs all its slots */
	TT_COMPLETION_YIELD = 1, /* sched_yield() by a thread of the owner in its slot */
	TT_COMPLETION_BLOCK = 2, /* every thread blocked at the end of a slot the owner ran in */
};

/*
 * What a tt owner's unused slot time becomes (rodata server_design; seed 001's server designs,
 * tt_sched.bpf.c C): the owner has no runnable thread or its job is done.
 */
enum tt_server {
	TT_SERVER_WCPS = 0, /* be work (the default) */
	TT_SERVER_PTPS = 1, /* nothing: the CPU idles to the end of the slot */
	TT_SERVER_CRPS = 2, /* another tt task of the CPU with a current job (EDF), then be work */
};

/* How a tt task orders its own threads in its DSQ (bss task_local; tt_sched.bpf.c D). */
enum tt_local {
	TT_LOCAL_FIFO = 0,
	TT_LOCAL_RM = 1, /* by the thread's period (tt_task_ctx.period_ns), shortest first */
	TT_LOCAL_EDF = 2, /* by the thread's current deadline: its last wakeup + its period */
};

/*
 * Dispatch queues. Only housekeeping CPUs consume TT_DSQ_HOUSEKEEPING; only the task's
 * managed CPU consumes TT_DSQ_TASK_BASE + task (tt); managed CPUs consume their
 * TT_DSQ_BE_CPU_BASE + cpu and TT_DSQ_BE_ANY (be tasks not restricted to one CPU).
 */
enum tt_dsq {
	TT_DSQ_HOUSEKEEPING = 0,
	TT_DSQ_BE_ANY = 1,
	TT_DSQ_BE_CPU_BASE = 0x1000,
	TT_DSQ_TASK_BASE = 0x10000,
};

/* Value of the tid -> task map (key: u32 thread id), written by userspace before attach. */
struct tt_task_ctx {
	u32 task; /* index into the plan's tasks */
	u32 inherited; /* 1 when BPF added it at fork of a plan thread */
	u64 period_ns; /* local scheduling (tt_local): the thread's period; 0: not named */
};

/* Context of the SEC("syscall") programs arm_timer / disarm_timer. */
struct tt_arm_arg {
	s32 cpu; /* the CPU the calling thread is pinned to */
	u32 pad;
};

/*
 * Context of the SEC("syscall") program rt_tick (B.5: the helper-thread slot clock): in, the
 * CPU the helper is pinned to; out, the CLOCK_MONOTONIC ns it sleeps to before its next call.
 */
struct tt_tick_arg {
	s32 cpu;
	u32 ticked; /* out: 1 when this call ran a tick (0: it came before the armed expiry) */
	u64 next_ns;
};

/* Context of the SEC("syscall") program release_task (a task leaves the plan at run time). */
struct tt_release_arg {
	u32 task; /* its index */
	s32 cpu; /* its managed CPU, or -1 */
};

/*
 * Context of the SEC("syscall") program reclass_task (an adaptive task gets or loses its
 * reservation: its class between TT_CLASS_BE and TT_CLASS_TT; tt_sched.bpf.c F, L).
 */
struct tt_reclass_arg {
	u32 task; /* its index (an adaptive task) */
	u32 class; /* enum tt_class: TT_CLASS_TT or TT_CLASS_BE */
};

/*
 * What arm_timer returns: 0 when the timer is armed; one of these when scx_tt's own checks
 * refuse; a negative errno when bpf_timer_init, bpf_timer_set_callback or bpf_timer_start
 * fails (a failed bpf_timer_start also exits the scheduler with scx_bpf_error naming the CPU
 * and the slot).
 */
enum tt_arm_result {
	TT_ARM_WRONG_CPU = 1, /* ran on another CPU than arg->cpu: the caller was not pinned there */
	TT_ARM_NOT_MANAGED = 2, /* arg->cpu is not a managed CPU */
	TT_ARM_NO_T0 = 3, /* t0_ns was not written before arming */
	TT_ARM_NO_TIMER = 4, /* arg->cpu has no entry in the timers map */
	TT_ARM_NOT_RT_CLOCK = 5, /* rt_tick called while the slot clock is the bpf_timer (B.5) */
	TT_TICK_WRONG_CPU = 6, /* rt_tick ran on another CPU than arg->cpu (its helper was moved) */
};

/*
 * The flag the test seam of tt_sched.bpf.c (H) adds to bpf_timer_start's flags: no valid
 * BPF_F_TIMER_* flag, so the kernel refuses the call with -EINVAL.
 */
#define TT_TEST_BAD_TIMER_FLAG (1ULL << 63)

/*
 * One record per (managed CPU, slot), emitted through the ring buffer by the slot timer when
 * the slot ends. owner_ns + be_ns + other_tt_ns + kthread_ns + foreign_ns <= slot length;
 * the rest was idle.
 */
struct tt_slot_rec {
	u64 slot; /* absolute slot number since t0 */
	u32 cpu;
	u32 owner; /* task that owns the slot in the table, or TT_NO_TASK */
	u64 owner_ns; /* the owner's threads ran inside the slot */
	u64 be_ns; /* be tasks of the plan */
	u64 other_tt_ns; /* tt tasks that do not own the slot (overrun past their slot end) */
	u64 kthread_ns; /* per-CPU kernel threads bound to this CPU */
	u64 foreign_ns; /* tasks outside the plan (not kthreads) */
	u64 be_ready_ns; /* be was started while the owner had a runnable thread waiting */
	u64 be_kick_ns; /* be still ran after the owner woke or the slot ticked (kick latency) */
	s64 late_ns; /* slot tick lateness: timer callback time minus the slot boundary */
	u32 be_top; /* the be task that ran last in the slot, or TT_NO_TASK */
	u32 perf; /* cpuperf target requested at the slot's tick (1..TT_PERF_ONE), 0: none */
};

/*
 * The observation of one (managed CPU, slot), published by the slot tick when the slot closes
 * (tt_sched.bpf.c, J) into the mmapable array slot_obs at index
 * midx * TT_OBS_RING + slot % TT_OBS_RING (midx: the CPU's index in the plan's managed list),
 * for the planner thread to read without a system call (src/sched/obs.rs). A seqlock: seq is
 * 2*slot+1 while the tick writes the entry, 2*slot+2 once it is complete, 0 if never written.
 *
 * avail_ns: the ns of the slot during which the owner had a thread running or runnable
 * (queued, waiting) and its current job was not done (a completion, I, ends it). A busy
 * owner's avail_ns is the whole slot: the guard band (kicked, still runnable), switch gaps and
 * tick lateness (waiting) included; an owner that blocks midway has the time until it blocked.
 * Measured between scheduling events from the kernel's own runnable transitions
 * (ops.runnable/ops.quiescent), split at slot boundaries by time; error bound in J.
 * stolen_ns: the part of avail_ns during which another thread ran on the CPU (kthread,
 * foreign, be, another tt task). owner_ns <= avail_ns holds up to the few us an owner runs
 * between its yield and the switch away.
 */
#define TT_OBS_DONE 1u /* flags: the owner's current job completed in this slot */
struct tt_slot_obs {
	u64 seq; /* seqlock: 2*slot+1 while written, 2*slot+2 complete, 0 never written */
	u64 slot; /* absolute slot number */
	u32 owner; /* table owner of the slot (task index, flag bits stripped) or TT_NO_TASK */
	u32 flags; /* TT_OBS_* */
	u64 owner_ns; /* the owner's threads ran inside the slot (= tt_slot_rec.owner_ns) */
	u64 avail_ns; /* the owner was running or runnable and its job not done */
	u64 stolen_ns; /* of avail_ns: others ran while the owner had a runnable thread waiting */
	s64 late_ns; /* the slot's tick lateness (= tt_slot_rec.late_ns) */
};

/* Per plan task, summed over all CPUs (bss task_stats[task]). */
struct tt_task_stats {
	u64 run_ns; /* ran anywhere */
	u64 inside_ns; /* tt: inside its own slots on its CPU; be: on a managed CPU */
	u64 nr_runs; /* ops.running() calls */
	u64 jobs_done; /* tt: jobs completed early by its completion rule (yield or block) */
	u64 reclaimed_ns; /* tt: ran in another owner's unused slot of its CPU (crps) */
	u64 jobs_carried; /* tt, yield: of jobs_done, those that ended in the next job's slots */
};

/* Per CPU (bss cpu_stats[cpu]). */
struct tt_cpu_stats {
	u64 ticks; /* slot timer callbacks */
	u64 tick_cost_ns; /* time spent inside the slot timer callback */
	u64 late_skips; /* callbacks so late that whole slots were skipped */
	u64 pin_mismatch; /* this CPU's slot timer callback ran on another CPU (scx_bpf_error) */
	u64 rec_drops; /* ring buffer full */
	u64 lost_ns; /* run time that could not be attributed to a slot record */
	u64 stop_events; /* guard-band timer callbacks (before the end of an owner's run) */
	u64 stop_late; /* of which fired after the boundary (handled as the boundary tick) */
	u64 stop_kicks; /* of which (in time) found the ending owner running and preempted it */
	u64 stop_cost_ns; /* time spent inside the in-time guard-band callbacks */
	u64 timer_errors; /* bpf_timer_start refused to (re-)arm this CPU's slot timer (scx_bpf_error) */
	u64 releases; /* a higher sched class took this CPU; its local DSQ went back to ops.enqueue */
	u64 dpm_defers; /* slot ticks deferred over a DPM idle period (K) */
	u64 dpm_slots; /* slots whose tick a deferral skipped (their records closed at the wake) */
	u64 dpm_shortened; /* deferrals cut short from ops.dispatch (a lowered dpm_until) */
	u64 evictions; /* foreign tasks that started here without being routed here, sent away (D) */
	u64 evicted_ns; /* their run time in recorded slots until they left (part of the records' foreign_ns) */
	u64 higher_waits; /* dispatches (prev not sched_ext) that queued nothing: a higher class was runnable (C) */
	u64 pinned_be; /* plan threads with migration disabled here, away from their CPU: queued as this CPU's be work (C) */
};

/*
 * The wakeup tracer of adaptive tasks (tt_sched.bpf.c L): bss wake_rings[a] for the task whose
 * bss task_adaptive is a + 1. Event n (counted from 0) is at ev[n % TT_WAKE_RING]; its seq is
 * n + 1 once t_ns is written (a reader takes an entry only with the seq it expects: an older
 * one, or 0, is not written yet, a newer one was overwritten; the writer sets seq to 0 before
 * the timestamp and to n + 1 after it). head: the events reserved so far.
 * cost_ns: the tracer's own time over all events (from the event's timestamp to the end of
 * its publication, one more bpf_ktime_get_ns), the measured overhead per event.
 */
struct tt_wake_ev {
	u64 seq; /* n + 1 once t_ns is written; 0 never written */
	u64 t_ns; /* the wakeup: ops.runnable of a thread of the task with SCX_ENQ_WAKEUP */
};

struct tt_wake_ring {
	u64 head; /* events reserved (fetch-add) */
	u64 cost_ns; /* the tracer's own time, summed */
	struct tt_wake_ev ev[TT_WAKE_RING];
};

_Static_assert(sizeof(struct tt_task_ctx) == 16, "tt_task_ctx");
_Static_assert(sizeof(struct tt_wake_ev) == 16, "tt_wake_ev");
_Static_assert(sizeof(struct tt_wake_ring) == 16 + 16 * TT_WAKE_RING, "tt_wake_ring");
_Static_assert(sizeof(struct tt_arm_arg) == 8, "tt_arm_arg");
_Static_assert(sizeof(struct tt_release_arg) == 8, "tt_release_arg");
_Static_assert(sizeof(struct tt_tick_arg) == 16, "tt_tick_arg");
_Static_assert(sizeof(struct tt_reclass_arg) == 8, "tt_reclass_arg");
_Static_assert(sizeof(struct tt_slot_rec) == 88, "tt_slot_rec");
_Static_assert(sizeof(struct tt_slot_obs) == 56, "tt_slot_obs");
_Static_assert(sizeof(struct tt_task_stats) == 48, "tt_task_stats");
_Static_assert(sizeof(struct tt_cpu_stats) == 152, "tt_cpu_stats");

#endif /* __TT_INTF_H */
