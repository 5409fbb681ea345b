/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_tt: enforce an offline time-triggered slot table on managed CPUs.
 *
 * A. What
 *
 * The plan (src/plan) splits the CPUs into managed and housekeeping CPUs and gives every
 * managed CPU a table: slot s of the repeating frame is owned by one `tt` task or is free.
 * Time is a common grid: slot k is [t0 + k*slot_ns, t0 + (k+1)*slot_ns) on every CPU, and
 * table entry (k mod frame_slots) says who owns it. This scheduler switches all normal tasks
 * (not partial mode) and enforces:
 *
 *   - a managed CPU runs the tt task that owns the current slot while it is runnable; else a
 *     `be` task of the plan; else it idles. Tasks outside the plan never run there;
 *   - housekeeping CPUs run everything else and never a tt/be task of the plan;
 *   - per-CPU kernel threads bound to a managed CPU still run there (forward progress: they
 *     serve IRQ work, RCU, workqueues of that CPU); their time is counted as stolen.
 *
 * B. The slot tick protocol
 *
 *   1. Arming. ops.init runs in a kernel worker on an arbitrary CPU, so it cannot pin a timer.
 *      Instead the loader pins its thread to each managed CPU in turn with
 *      sched_setaffinity and test-runs the SEC("syscall") program arm_timer there
 *      (BPF_PROG_TEST_RUN runs on the calling CPU), then restores its affinity. arm_timer
 *      checks it runs on the CPU it was asked to arm, and starts that CPU's bpf_timer with
 *      BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN at the next grid point t0 + k*slot_ns. Userspace
 *      writes t0_ns (bss) before arming, a little in the future, so every CPU's first tick is
 *      the same slot 0 boundary. arm_timer's result (enum tt_arm_result, or a bpf_timer_*
 *      errno) goes back to the loader, which names the CPU and the reason and stops.
 *   2. At a boundary (slot_tick, on the pinned CPU; a bpf_timer is a soft hrtimer, so the
 *      callback runs in softirq context: a hardirq, e.g. a wakeup's, may interrupt it, but no
 *      sched_ext op on this CPU, as those run with the runqueue lock held and IRQs off):
 *      a. charge the running task's time up to now to the slot(s) it ran in;
 *      b. close the ending slot's accounting record and emit it through the ring buffer
 *         (struct tt_slot_rec: owner, owner_ns, be/other/kthread/foreign ns, lateness);
 *      c. look up the new owner; unless the new owner is already running, kick the CPU with
 *         SCX_KICK_PREEMPT: the current task's slice drops to zero and ops.dispatch picks the
 *         new slot's task;
 *      d. with a perf table (issue 5, EASS-DVFS on schedutil systems), request the new slot's
 *         cpuperf target with scx_bpf_cpuperf_set and note it in the record;
 *      e. re-arm for the next grid point (absolute expiry, so lateness does not accumulate;
 *         a tick later than a whole slot skips ahead and counts late_skips; a re-arm the
 *         kernel refuses ends the scheduler, B.4);
 *      f. when the new slot's owner does not own the slot after it (its run ends at the next
 *         boundary), the timer is first armed for the guard-band event at that boundary minus
 *         guard_ns: if the ending owner is running, it is kicked with SCX_KICK_PREEMPT and,
 *         since dispatch starts nothing that close to the end of a run (C), the CPU idles
 *         until the boundary. The timer is then re-armed for the boundary itself. So the
 *         boundary tick's lateness no longer lets an owner run into the next owner's slot;
 *         only a guard-band event later than guard_ns does. Its price is up to guard_ns of
 *         the owner's time at the end of each run. A guard-band event that fires after the
 *         boundary is handled as the boundary tick.
 *   3. Disarming. Userspace test-runs disarm_timer for each CPU before detaching.
 *   5. The helper-thread clock (rodata rt_clock; scx_tt --slot-clock rt, the default where the
 *      kernel is PREEMPT_RT, whose verifier refuses every bpf_timer helper). The events of
 *      steps 2 and 2f are the same, with the same state (struct tt_timer without its
 *      bpf_timer); what fires them is a SCHED_FIFO thread of scx_tt per managed CPU, pinned
 *      there, that sleeps with clock_nanosleep(TIMER_ABSTIME) to t->expires_ns and then
 *      test-runs the SEC("syscall") program rt_tick on that CPU, which runs the event
 *      (run_tick) and returns the next expiry. Every bpf_timer helper call sits behind
 *      `!rt_clock` (a read-only constant, so the verifier never visits those calls). The
 *      helper's wake-up preempts the ext task on the CPU (RT is a higher class): ops.stopping
 *      zeroes a preempted task's slice (C, "Higher classes"), so the kernel hands it to
 *      ops.enqueue instead of keeping it at the head of the local DSQ, and cpu_release hands
 *      back the rest; when the helper sleeps again, ops.dispatch picks the slot's task.
 *      rt_tick is the same code as the bpf_timer callback, run in process context with
 *      migration disabled instead of softirq context: a hardirq may still interrupt it.
 *      Differences: a DPM idle period is not deferred (one tick per slot: the helper sleeps
 *      to a time it read, which a planner's shortening could not move), and the helper's
 *      lateness includes the RT wake-up path. A helper descheduled past a boundary (a
 *      higher-priority RT thread) ticks late and skips slots as a late bpf_timer does (2e).
 *      A helper the kernel moved off its CPU (the CPU is being deactivated: balance_push
 *      moves every user thread away before sched_ext's hotplug exit) makes rt_tick return
 *      TT_TICK_WRONG_CPU and run nothing: the helper re-pins itself, or ends quietly when
 *      its CPU is no longer active, and the kernel's hotplug exit ends the run as it does
 *      under the bpf_timer.
 *   4. Failures are loud. The table is only enforced while every managed CPU's timer ticks on
 *      that CPU, so a broken slot clock ends the scheduler with scx_bpf_error (sched_ext then
 *      disables it and every task returns to the fair class) instead of counting silently:
 *        - a callback running on another CPU than its timer was pinned to (pin_mismatch):
 *          "slot timer of CPU <k> ran on CPU <cpu> at slot <s>";
 *        - bpf_timer_start refusing to re-arm a timer, from the boundary tick or the
 *          guard-band event (timer_errors): "slot timer of CPU <cpu> cannot be re-armed for
 *          slot <s>: bpf_timer_start returned <errno>" (from arm_timer: "cannot be armed").
 *      The counters stay in cpu_stats and the summary (docs/run-output.md); the loader sees
 *      the exit, prints the message with the summary and exits 1.
 *
 * C. Dispatch on a managed CPU at time now in slot k with owner o = table[k mod frame]:
 *   - o's DSQ (or prev, when prev is o and still runnable: its slice is refilled), unless o's
 *     current job is done (I);
 *   - else, when the slot has an owner that leaves it unused (its job is done, or no thread of
 *     it is runnable), rodata server_design (the plan's `server`, seed 001's server designs)
 *     decides what the rest of the slot becomes:
 *       wcps (default): what follows, be work;
 *       ptps: nothing, the CPU idles to the end of the slot (purely time-driven);
 *       crps: another tt task of this CPU reclaims it, the one whose current job (released at
 *         task_offset + k * task_period, absolute deadline task_deadline later, not done) has
 *         the earliest deadline and a runnable thread; then be work. The reclaimer runs to the
 *         end of the slot at most (the boundary tick, or the guard-band event, kicks it) and
 *         task_stats.reclaimed_ns counts it. Guarantee: reclaimed time is never taken from a
 *         guaranteed job. The reclaimer's own slots are untouched, and it runs only while the
 *         slot's owner is not runnable or done: the owner's wakeup kicks the CPU (D) and
 *         dispatch starts the owner first, as it does over be work; the owner loses the kick
 *         latency, exactly as under wcps. A tt wakeup that could reclaim kicks the CPU too.
 *         Tasks with explicit (non-periodic) jobs do not reclaim; a job done early (I) stays
 *         done until its next job's first slot, so it reclaims nothing in between;
 *   - else a be task (this CPU's be DSQ, then the shared one; or a runnable be prev);
 *   - else nothing: the CPU idles until a wakeup or the next tick.
 *   Free slots (no owner) go to be work under every server design.
 *   ops.running sets the slice to the time left in the task's run: to the end of o's
 *   contiguous run of slots (looking ahead TT_LOOKAHEAD_SLOTS) for the owner, to the end of
 *   the slot for anything else. The tick at the boundary enforces the end (the scheduler tick
 *   alone is too coarse, HZ=250 is 4 ms).
 *
 *   Guard band: no task is started when less than guard_ns is left before the end of its run;
 *   the CPU idles instead, so a kick latency cannot push a fresh start across the boundary,
 *   and an owner still running then is stopped by the guard-band event (B.2f).
 *
 *   Last runnable task: with SCX_OPS_ENQ_LAST the kernel does not silently keep a task whose
 *   slice expired when nothing else is runnable; it calls ops.enqueue with SCX_ENQ_LAST and
 *   the task goes back to its DSQ, so only dispatch decides whether it may continue.
 *
 *   Exiting and migration-disabled tasks: by default the kernel does not call ops.enqueue
 *   for a task that is exiting (PF_EXITING) or has migration disabled; it puts it straight
 *   into the CPU's local DSQ with a 20 ms slice, where it runs before dispatch is asked, in
 *   whatever slot that is (seen: a tt task's child, preempted while exiting after its parent
 *   woke, ran 150-210 us into the next owner's slot; the witness caught it in the `adaptive`
 *   VM test). The loader sets SCX_OPS_ENQ_EXITING and SCX_OPS_ENQ_MIGRATION_DISABLED where
 *   the kernel has them, so such a task is routed like any other: an exiting thread of a tt
 *   task waits for its task's slot (its exit is delayed by at most a frame), a foreign one
 *   goes to the housekeeping CPUs. A plan thread with migration disabled away from its plan
 *   CPU (or a be thread of no CPU) cannot be moved to the CPU that would consume its DSQ:
 *   on a managed CPU it waits in that CPU's be DSQ (cpu_stats pinned_be), so dispatch runs
 *   it as be work there, never over a waiting owner; on a housekeeping CPU it stays in the
 *   local DSQ. (6.12 has neither the flag nor the shortcut it turns off: ops.enqueue sees
 *   these tasks there too.)
 *
 *   Higher classes: when the stopper, a deadline or an RT task preempts a sched_ext task, the
 *   kernel keeps the preempted task at the head of the CPU's local DSQ with its slice left and
 *   runs it first when the CPU comes back, without calling dispatch, even if a slot boundary
 *   passed meanwhile (the tick's kick cannot clear the slice of a task that is not running).
 *   So ops.stopping zeroes the slice of a task preempted on a managed CPU, which sends it
 *   back through ops.enqueue instead, and ops.cpu_release re-enqueues whatever else the local
 *   DSQ holds (releases counts it): the CPU goes to the owner of the slot it returns in
 *   (issue 11, defect 2; VM test `preempt`). cpu_release alone did not do on 6.12, which
 *   skips it after a preemption whose return fair's balance() answered (issue 32).
 *   Nor is cpu_release called when the CPU was not running a sched_ext task (idle, or an RT
 *   task): the kernel calls dispatch (prev NULL) before every pick, then picks a waiting
 *   higher-class task, and what dispatch put in the local DSQ runs after it without a new
 *   dispatch, whatever slot it returns in. Seen on PREEMPT_RT (6.12 and 7.3) under TCG:
 *   the idle CPU's dispatch queued be work for an idle slot, the vCPU stalled 3 ms on the
 *   host, the woken clock thread ticked the next slot (owner spin-a) and sleeps, and the be
 *   task then ran that whole slot while spin-a waited. So dispatch with prev NULL puts
 *   nothing in the local DSQ while a task of a higher class is runnable on this CPU (the
 *   rq's nr_running above its sched_ext count): that task runs first anyway, and the
 *   dispatch when it is done decides for the slot of that moment (higher_waits counts it:
 *   about 290 per CPU in 10 s of VM test `delivery` on 6.12 PREEMPT_RT, 0 on 7.3 PREEMPT_RT,
 *   whose failures never showed this). A kernel whose deadline server runs sched_ext work
 *   next to a hogging RT task gets none on a managed CPU while that task stays runnable
 *   there (RT work belongs on housekeeping CPUs).
 *
 * D. Routing (ops.enqueue; select_cpu picks the CPU a wakeup should go to)
 *   - tt thread -> TT_DSQ_TASK_BASE + task, consumed only by the task's CPU; when it is the
 *     owner of that CPU's current slot and its job is not done (I) the CPU is kicked
 *     (preempting be work or waking it) -- on a wakeup, or an enqueue from another CPU; a
 *     thread put back on its own CPU is not (that CPU is scheduling already). The task's DSQ is FIFO, unless the task schedules
 *     its own threads (task_local, a component of seed 001 whose plan workload names its
 *     threads): then it is ordered by RM priority (the thread's period, tt_task_ctx.period_ns,
 *     shortest first) or EDF (the thread's current deadline: its last wakeup + its period;
 *     a thread that runs on into its next period without blocking keeps the older, earlier
 *     deadline), threads the workload does not name last. Every wakeup of an owner thread
 *     kicks, so a higher-priority thread preempts a lower one of the same task, and dispatch
 *     keeps a preempted thread only when no queued one comes before it;
 *   - be thread -> its CPU's be DSQ or TT_DSQ_BE_ANY;
 *   - per-CPU kthread (or migration-disabled task, or a task whose affinity has no
 *     housekeeping CPU) -> the local DSQ of its CPU;
 *   - everything else -> TT_DSQ_HOUSEKEEPING, and an idle housekeeping CPU is kicked.
 *   A foreign task that starts on a managed CPU anyway (not routed there: the kernel kept it
 *   where it ran, e.g. a task priority-inherited into the RT class on PREEMPT_RT, pulled to
 *   the CPU by RT balancing and returned to sched_ext in place) is evicted: ops.running ends
 *   its run at once, so ops.enqueue routes it as above (cpu_stats evictions, evicted_ns).
 *   Threads are recognised by tid through task_ctx (written by userspace before attach, so no
 *   plan thread is ever routed as a foreign task). Threads forked by a plan thread inherit its
 *   task (ops.init_task), and entries are deleted at exit (ops.exit_task).
 *
 * E. Accounting (per managed CPU, only ever touched on that CPU, by ops with IRQs off or by
 *    the tick, which no such op interrupts; the hardirqs that may interrupt the tick do not
 *    touch it)
 *   ops.running opens a segment, ops.stopping and the tick close it; a segment is split at
 *   grid points and each piece is added to the record of its slot (two records are open, the
 *   ending and the starting slot, so a late tick loses nothing). Per task, run_ns and
 *   inside_ns (inside its own slots; be: on a managed CPU) sum all CPUs.
 *   be_ready_ns counts runs of a be task that was *started* while the slot had ticked and its
 *   owner waited in its DSQ (a wrong decision: must be 0). be_kick_ns counts how long a be
 *   task that was running legitimately went on after the owner woke (or the slot ticked)
 *   until the kick preempted it: the kick latency, reported, not a violation. An owner whose
 *   job is done (I) is not waiting in either sense. Idle time is in no record, but the same
 *   pieces, idle ones included, feed the slot's observation (J).
 *
 * F. What userspace may change while running
 *   - task_ctx entries (add threads found later, delete exited ones): a thread's next enqueue
 *     uses the new entry;
 *   - table entries carry flags above the task index (TT_ENTRY_JOB_START, I); every reader of
 *     the table goes through entry_of()/owner_of(), which strip them (TT_NO_TASK first);
 *   - the table is double buffered: table map = 2 halves of nr_managed * frame_slots entries.
 *     Userspace fills the inactive half, then writes table_next and, last, table_switch_slot
 *     (a slot S, ideally a frame start, written before slot S - 1 starts: that tick decides
 *     whether a guard-band event precedes S; scx_tt --control, docs/control.md). Every lookup
 *     for a slot >= table_switch_slot uses table_next, so all CPUs switch at the same
 *     boundary. A switch written later still gives S's record the owner in force (the owner is
 *     looked up again at S's tick), and a guard-band event armed for a run that the new table
 *     continues into S does not stop that owner;
 *   - table entries of a slot whose tick has fired: the tick fixed the slot's owner (its
 *     record's, owner_of() from then on), so a write there, meant for that slot but late (a
 *     delayed planner thread), takes effect at the entry's next use, a frame later; the slot
 *     runs whole with the owner its record names (the planner sees the mismatch in the
 *     slot's observation, J, and counts the write late);
 *   - perf_target entries (cpuperf per slot): read at each tick, so a write takes effect at
 *     the next boundary of that slot;
 *   - the task table (nr_tasks, task_class, task_cpu, task_completion; .bss): a task admitted at
 *     run time (scx_tt ctl admit) gets the next index: its entries are written first, then
 *     nr_tasks is raised, then its threads enter task_ctx (each thread's next enqueue routes
 *     it), then userspace test-runs the SEC("syscall") program join_task, which preempts the
 *     housekeeping CPUs so that a thread of it running there is enqueued again at once instead
 *     of at its slice's end, and makes the next dispatch of each housekeeping CPU move a thread
 *     of it waiting in the housekeeping DSQ to the DSQ it is routed to now (sweep_joined). Entries below nr_tasks never change (but an adaptive task's class,
 *     below), so a reader that sees a task index below nr_tasks sees its entries. Every task index has its DSQ from ops.init on. A task added
 *     that way leaves the plan again (`scx_tt ctl remove`) by losing its threads: userspace
 *     deletes their task_ctx entries (its forked children's too), then test-runs the
 *     SEC("syscall") program release_task, which moves those still queued in the task's DSQ
 *     or a be DSQ to the housekeeping DSQ and kicks the task's CPU; its index stays, unused;
 *   - an adaptive task's class (L), between be (no reservation) and tt (it holds a periodic
 *     reservation in planner mode): userspace test-runs the SEC("syscall") program
 *     reclass_task, which writes task_class, then (after a full barrier) moves the task's
 *     threads queued under the old class (be: its CPU's be DSQ, an adaptive task always has a
 *     CPU; tt: its task DSQ) to the new class's DSQ and kicks its CPU (SCX_KICK_PREEMPT), so
 *     that a thread of it running there is enqueued again under the new class: no thread is
 *     left in a DSQ nobody dispatches. An ops.enqueue on another CPU that read the old class
 *     just before the write may still insert into the old DSQ after the move: the run calls
 *     reclass_task again with the same class every 100 ms (then it only moves such stragglers,
 *     and kicks only when it moved one); a straggler in the be DSQ of a tt task's CPU runs as
 *     be work meanwhile, one in the task DSQ of a be task waits at most those 100 ms. Order, in
 *     userspace (src/cli/run/adaptive.rs, adaptive::live::class_changes): a grant is admitted
 *     while the run holds the planner (planner thread = the only writer of the table) and the
 *     task turns tt one run-loop poll and a half (150 ms) before the reservation's first slot,
 *     so it runs as be in the slack until shortly before its slots and a late poll does not
 *     leave those slots without it; a removal takes the reservation out of the planner, then
 *     reclasses be: the slots already decided (at most the lead) still name the task, and their
 *     dispatch, finding its task DSQ empty, runs be work (the task itself among it). A resize
 *     is a removal and an admission under one hold of the planner; the task is be from the
 *     removal's first slot until 150 ms before the new reservation's first slot. A reserved
 *     adaptive task is a hard reservation (the paper's CBS without reclaiming): class tt, it
 *     runs in its own slots only, not in the slack; the controller's spread x > 0 lets its
 *     budget grow when it needs more. Only adaptive tasks are reclassed (-EINVAL for any
 *     other);
 *   - nothing in rodata (slot length, guard, CPU roles) changes after load.
 *
 * G. Known limitations
 *   - A tt/be thread whose affinity excludes its plan CPU runs where it is (counted outside).
 *   - A non-plan task pinned to managed CPUs only runs there (counted foreign); housekeeping
 *     CPUs must cover everything else's affinity for foreign_ns to stay 0.
 *   - Kthreads bound to a managed CPU run when they want and delay the owner (stolen time).
 *     So does scx_tt's loader thread while it arms a managed CPU's timer (its tid is in
 *     task_ctx as TT_LOADER_TASK and it is counted as kthread time).
 *   - Enforcement granularity is the timer + kick latency (tens of us on hardware, up to ms
 *     under TCG); the guard band should exceed it, or an owner overruns its run by the excess.
 *   - Two timer callbacks instead of one at each boundary that ends a run (B.2f).
 *   - If a tick is more than a slot late, the skipped slots get no records (late_skips).
 *   - The be_ready_ns check in ops.running races with an owner wakeup that lands between
 *     ops.dispatch (which saw the owner's DSQ empty) and ops.running.
 *   - There is no unpinned fallback for BPF_F_TIMER_CPU_PIN (Linux 6.7, older than any
 *     sched_ext kernel): a timer firing on another CPU would account and kick a CPU it does
 *     not run on, so it ends the scheduler (B.4) instead.
 *   - A broken slot clock (B.4) ends the scheduler rather than the CPU's enforcement alone:
 *     the other CPUs' tables would still run, but the plan as a whole no longer holds.
 *   - Completion and observations (I, J) assume a tt task's threads run on its CPU only; a
 *     thread whose affinity excludes it counts as runnable but cannot run there.
 *
 * H. Test seam
 *   test_fault_timer / test_fault_cpu / test_fault_slot (rodata, off by default) make the
 *   first arming of test_fault_cpu's timer for a boundary at or after slot test_fault_slot
 *   (at or after: a tick more than a slot late skips slots) pass TT_TEST_BAD_TIMER_FLAG to
 *   bpf_timer_start, which the kernel refuses (-EINVAL): the real failure path of B.4 runs
 *   (slot 0: arm_timer's, later slots: the re-arm's). Under the helper-thread clock (B.5)
 *   the same setting makes rt_tick stall test_fault_cpu's clock from that slot on (no tick,
 *   the helper sleeps a second at a time), as a helper descheduled for good would, so the
 *   watchdog (tt_tick) runs for real. The loader sets it only from the environment variable
 *   SCX_TT_TEST_TIMER_FAULT=CPU:SLOT (VM tests); nothing else does.
 *
 * I. Job completion
 *
 *   A job owns wcet slots of its window; when it ends early, the rest of its slots go to be
 *   work or idle and the planner (J) may reclaim them. task_completion[task] (.bss, from the
 *   plan's `completion`, docs/plan-format.md) says how a job of a tt task ends:
 *     - TT_COMPLETION_YIELD: ops.yield (sched_yield(), @to == NULL) of a thread of the task, on
 *       its CPU, while it owns the slot in force there (cur_slot: the slot whose tick fired
 *       last, so a yield between a boundary and a late tick belongs to the slot before). A
 *       directed yield_to() (@to set, KVM's pause-loop exits) is never a job end. ops.yield
 *       zeroes the yielder's slice, as sched_ext does without ops.yield, for every task.
 *       Carry (job_started()): a job that starts while the task's previous one ran in its
 *       slots (job_ran, set by charge_piece), is not done and has not blocked since its last
 *       run in its slots ended (runnable_ns < owned_until_ns: a thread that slept and woke
 *       was released) overran; the next such yield ends that job (jobs_done, jobs_carried), not this one:
 *       no done flag, no TT_OBS_DONE. At most one job is carried. The scheduler sees no
 *       release, so a task that skipped a job while busy is taken as behind: its slots are
 *       kept (safe), never given to be work while a job may be pending;
 *     - TT_COMPLETION_BLOCK: judged by the tick that ends slot k, for k's end (the boundary,
 *       not the tick, which may come late): k's owner ran in k (owner_ns > 0) and had no
 *       thread running, queued or being woken at the boundary. From the runnable count (see
 *       below): it went to 0 before the boundary (blocked_ns) and is still 0, or left 0 only
 *       after the boundary (runnable_ns), and no wakeup that passed ops.select_cpu before the
 *       boundary is still on its way to ops.runnable (waking_ns). So a wakeup in the guard
 *       band, or one begun before the boundary and still in flight at the tick, is an awake
 *       owner: not done; one begun between the boundary and the (late) tick, even one whose
 *       interrupt lands inside the tick's own callback, wakes a done job's owner, which then
 *       waits for its next job. Not seen: a wakeup of a thread pinned to one CPU while it is
 *       in flight (the kernel calls no select_cpu for it), and a count that went 0, 1, 0 after
 *       the boundary (taken as awake: not done, the safe side);
 *     - TT_COMPLETION_NONE: never.
 *   A completion sets task_rt[task].done, counts task_stats[task].jobs_done and flags the
 *   slot's observation TT_OBS_DONE. While done, dispatch does not start the owner (be work or
 *   idle instead), its wakeups do not kick, and be work started over its queued threads is
 *   no violation (be_ready_ns, be_kick_ns). done ends at the tick that starts a slot whose
 *   table entry has TT_ENTRY_JOB_START for the task (the static table flags the first slot
 *   of each job, src/sched/config.rs; planner mode its decisions). Between such a boundary
 *   and its late tick, job_done() already treats the job as new. A tick more than a slot
 *   late starts the jobs of the slots it skipped (start_skipped_jobs: their entries, up to a
 *   frame of them; beyond TT_SKIP_SCAN_MAX every task of the CPU: never starve a job).
 *   Runnable state: ops.runnable/ops.quiescent (the kernel's own transitions, not called for
 *   migrations) count a tt task's runnable threads in task_rt[task].nr_runnable, a thread
 *   counted once (task storage thread_rt); a thread added to task_ctx while runnable (a task
 *   admitted at run time: a busy thread never passes ops.runnable again) is counted at its next
 *   ops.enqueue. runnable_ns is when the count last left 0 (from the
 *   wakeup's ops.select_cpu when there was one), blocked_ns when it last reached 0. They
 *   change under the task CPU's runqueue lock, possibly on another CPU (a remote wakeup); each
 *   time is written by xchg before the count's add or sub and read after a fetch-add of the
 *   count (all full barriers), so a reader that sees the count sees its time.
 *
 * J. Observations (struct tt_slot_obs, src/sched/obs.rs reads them)
 *
 *   Per managed CPU a ring of TT_OBS_RING entries in the BPF_F_MMAPABLE array slot_obs, entry
 *   cpu_midx[cpu] * TT_OBS_RING + slot % TT_OBS_RING. close_slot() publishes the closing
 *   slot's (at its end's tick, or at a late skip) right after its ring-buffer record, with the
 *   same owner, owner_ns and late_ns, plus flags (I), avail_ns and stolen_ns.
 *   Seqlock: seq = 2*slot+1, the fields, seq = 2*slot+2. Only the CPU's own tick writes its
 *   entries (no two writers). BPF has no plain smp_wmb(); each seq store is an xchg
 *   (__sync_lock_test_and_set), which every JIT emits fully ordered (x86: xchg, implicitly
 *   locked; arm64: swpal, or an LL/SC loop with dmb ish). A non-fetching atomic add would not
 *   do: arm64 emits it as stadd, unordered. So the odd seq is visible before any field, and
 *   every field before the even seq. On x86 (TSO) stores are not reordered anyway and the
 *   reader's loads neither; on arm64 the reader needs acquire ordering: it loads seq with
 *   acquire, the fields relaxed, an acquire fence, seq again, and accepts the fields only
 *   when both seq reads are 2*want+2 (src/sched/obs.rs, with the decoding table).
 *   avail_ns: integrated between events (observe_piece, from charge(): ops.running,
 *   ops.stopping, the tick, ops.quiescent and ops.yield on this CPU), cut at slot boundaries
 *   by time: in each piece the owner counts available while it runs, or while nr_runnable > 0
 *   from max(piece start, runnable_ns), unless job_done(). The count cannot drop to 0 between
 *   two such events without ops.quiescent on this CPU, which charges first. stolen_ns: the
 *   available pieces during which another thread (kthread, foreign, be, other tt) ran.
 *   Error bound: avail_ns misses, per wakeup of the owner in the slot, the wake-up path from
 *   try_to_wake_up to ops.runnable (a few us on hardware, tens under TCG), and for a queued
 *   owner thread moved by another CPU (sched_setaffinity, renice: dequeue + enqueue under
 *   that CPU's lock) the time from this CPU's last event to the re-enqueue; it counts a
 *   thread of the owner stuck on another CPU (G) as runnable. Nothing else: tick lateness,
 *   the guard band and switch gaps are measured, not estimated.
 *
 * K. DPM idle periods (planner mode under dpm or dpm+dvfs, rodata dpm_enabled)
 *
 *   A table entry TT_DPM_IDLE means "idle, run nothing": no owner (entry_task() gives
 *   TT_NO_TASK) and, unlike TT_NO_TASK, no be work (dispatch starts none, a be wakeup does not
 *   kick the CPU), so the core can sleep through the planner's idle period (EASS-DPM). With
 *   rodata dpm_be (--dpm-be) be work may use those slots instead, and nothing below is done:
 *   the ticks stay per slot, because be time needs per-slot records.
 *   Protocol (planner thread = the only writer of the table and of dpm_until):
 *     - the planner writes the entries of an idle period [t, X) as TT_DPM_IDLE, then
 *       dpm_until[midx] = the period's end (capped so that no entry serves two frames; a
 *       longer period is published in pieces); BPF trusts a TT_DPM_IDLE entry for deferral
 *       only below dpm_until (an entry at or past it may be last frame's);
 *     - the tick of slot k whose entry is TT_DPM_IDLE finds end = the first slot after k whose
 *       entry is not TT_DPM_IDLE, or dpm_until, at most TT_DPM_MAX_SLOTS ahead; if end > k + 1
 *       it arms phase DPM_WAKE at slot_start(end) - guard_ns (the wake-up margin: the CPU
 *       leaves its idle state before the boundary) instead of the next boundary (dpm_defers);
 *     - the DPM_WAKE event closes the skipped slots k .. slot_of(now) - 1 one by one (charge
 *       to each boundary, record and observation as at a tick, lateness 0; dpm_slots) and arms
 *       the boundary of end, which is an ordinary tick; when the planner has published a later
 *       end meanwhile (a period longer than the frame allows at once comes in pieces), it arms
 *       the wake of that end instead. So a period costs two timer events (three or more only
 *       for a period published in several pieces), not one per slot. A wake later than the
 *       boundary is handled as end's boundary tick;
 *     - shortening (an admission needs the CPU before X): the planner writes the new entries,
 *       lowers dpm_until[midx] to the first slot it needs, and then test-runs the
 *       SEC("syscall") program dpm_kick, which kicks the CPU. ops.dispatch on that CPU sees
 *       phase DPM_WAKE with dpm_until below the armed end and re-arms the wake for
 *       max(dpm_until, the slot after cur_slot) (dpm_shortened). Only that CPU's tick and its
 *       ops.dispatch touch its timer state, and both run there with no other sched_ext op
 *       interleaved (the tick in softirq context, dispatch with IRQs off), so they see each
 *       other's writes in order. A kick that lands before the deferring tick is harmless: the
 *       tick reads the lowered dpm_until itself. The planner lowers dpm_until at least one slot
 *       ahead of the slot it needs (its lead), so the wake comes in time unless the kick takes
 *       longer than a slot.
 *   Kthread or foreign time in a skipped slot beyond the two open records goes to lost_ns (E).
 *
 * L. The wakeup tracer of adaptive tasks (seed 003, docs/adaptive.md)
 *
 *   An adaptive task (plan class adaptive, or `ctl admit --class adaptive`) has no timing; the
 *   userspace period analyser infers its period from its wakeups. Userspace gives each such
 *   task a ring a < TT_MAX_ADAPTIVE (bss task_adaptive[task] = a + 1, written with its other
 *   entries before nr_tasks covers it, F). ops.runnable with SCX_ENQ_WAKEUP of any thread of
 *   the task (whatever its class at the time: be before it has a reservation, tt while it
 *   holds one, F: reclass_task)
 *   appends bpf_ktime_get_ns() to wake_rings[a] (struct tt_wake_ring, intf.h): head is
 *   reserved by fetch-add (threads of one task may wake on several CPUs at once), the entry's
 *   seq set to 0, the timestamp written, then seq = n + 1 (both by xchg, full barriers, as in
 *   J): a seqlock per entry. Two writers on one entry at once (events n and n + TT_WAKE_RING
 *   of one task within one event's few instructions) are not guarded against. The
 *   reader (src/sched/wake.rs, in the mmapped .bss) keeps its own count of events taken and
 *   takes event n only when ev[n % TT_WAKE_RING].seq == n + 1 (read with acquire): a smaller
 *   seq is not written yet (it stops there and retries later), a larger one was overwritten
 *   (the ring lapped it: counted lost). Consumed time needs nothing new: task_stats[task]
 *   .run_ns. Cost per event: a fetch-add, two xchg and a store, two bpf_ktime_get_ns and a
 *   fetch-add of cost_ns (no map lookup: .bss arrays); the tracer sums its own time (from
 *   the event's timestamp to after the xchg) in cost_ns, so the overhead per event is
 *   measured on every run (cost_ns / head; the run reports it). Measured in the VM (TCG) and
 *   documented in docs/adaptive.md. Tasks that are not adaptive pay one load and a compare.
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/* Tunables, written by userspace before load. */
const volatile u64 slot_ns = 10ULL * 1000 * 1000;
const volatile u64 guard_ns = 500ULL * 1000;
const volatile u64 frame_slots = 1;
const volatile u32 nr_managed;
const volatile u32 nr_housekeeping;

const volatile u8 cpu_role[TT_MAX_CPUS];
const volatile u32 cpu_midx[TT_MAX_CPUS]; /* managed CPU -> index into the table */
const volatile u32 housekeeping_cpus[TT_MAX_CPUS];

const volatile bool perf_enabled; /* perf_target holds a cpuperf target per slot */
const volatile bool dpm_enabled; /* TT_DPM_IDLE entries defer the slot tick (K) */
const volatile bool dpm_be; /* be work may run in TT_DPM_IDLE slots; no deferral then (K) */
const volatile u8 server_design; /* enum tt_server: an owner's unused slot time (C) */

/* The helper-thread clock's watchdog (tt_tick, B.5): a clock event this overdue ends the run. */
#define TT_CLOCK_STALL_SLOTS 20
#define TT_CLOCK_STALL_MIN_NS (1000ULL * 1000 * 1000)

/* Test seam (H): arming CPU test_fault_cpu's slot timer for a slot >= test_fault_slot fails. */
const volatile bool rt_clock; /* the slot clock is scx_tt's helper threads, not a bpf_timer (B.5) */
const volatile bool test_fault_timer; /* false: off (always, unless a test sets it) */
const volatile s32 test_fault_cpu;
const volatile u64 test_fault_slot;

/* Run-time state, written by userspace (see F). */
volatile u64 t0_ns; /* start of slot 0; 0 until userspace arms the timers */
/*
 * The task table (F): the plan's tasks from load, tasks admitted at run time after them.
 * Userspace fills entry nr_tasks (class, CPU, completion), then raises nr_tasks, then adds the
 * task's threads to task_ctx; an entry below nr_tasks never changes.
 */
volatile u32 nr_tasks;
volatile u8 task_class[TT_MAX_TASKS];
volatile s32 task_cpu[TT_MAX_TASKS]; /* tt: its CPU; be: its CPU or -1 for any */
volatile u8 task_completion[TT_MAX_TASKS]; /* enum tt_completion of a tt task (I) */
volatile u8 task_local[TT_MAX_TASKS]; /* enum tt_local: how a tt task orders its threads (D) */
/*
 * A tt task's jobs as periodic (crps, C): released at task_offset + k * task_period, absolute
 * deadline task_deadline slots later. task_period 0: not periodic (explicit jobs), never
 * reclaims.
 */
volatile u64 task_period[TT_MAX_TASKS];
/* An adaptive task's wakeup ring (L): a + 1 for wake_rings[a]; 0: not traced. */
volatile u8 task_adaptive[TT_MAX_TASKS];
volatile u64 task_offset[TT_MAX_TASKS];
volatile u64 task_deadline[TT_MAX_TASKS];
volatile u32 table_active;
volatile u32 table_next;
volatile u64 table_switch_slot = TT_NO_SWITCH;

/* Statistics, read by userspace. */
struct tt_task_stats task_stats[TT_MAX_TASKS];
struct tt_wake_ring wake_rings[TT_MAX_ADAPTIVE]; /* wakeups of adaptive tasks (L) */
struct tt_cpu_stats cpu_stats[TT_MAX_CPUS];
u64 nr_arms;
u64 nr_affinity_conflicts;
u64 nr_inherited;
u64 nr_reclasses; /* reclass_task runs (F, L) */
u64 nr_joins; /* join_task runs (F): each makes every housekeeping CPU sweep its DSQ once */
u64 nr_join_moves; /* joined threads a sweep moved out of the housekeeping DSQ (F) */
/* per CPU: the nr_joins of its last sweep of the housekeeping DSQ (F, sweep_joined) */
u64 joins_swept[TT_MAX_CPUS];

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* 2 * nr_managed * frame_slots, set before load */
	__type(key, u32);
	__type(value, u32);
} table SEC(".maps");

/* cpuperf target per (managed CPU, frame slot), same layout as one table half; 0: leave it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* nr_managed * frame_slots when perf_enabled, set before load */
	__type(key, u32);
	__type(value, u32);
} perf_target SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TT_MAX_THREADS);
	__type(key, u32);
	__type(value, struct tt_task_ctx);
} task_ctx SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TT_RINGBUF_BYTES);
} slot_recs SEC(".maps");

/* The observation ring (J): TT_OBS_RING entries per managed CPU, mmapped read-only by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* nr_managed * TT_OBS_RING, set before load */
	__type(key, u32);
	__type(value, struct tt_slot_obs);
} slot_obs SEC(".maps");

/* Per managed CPU index: the end of the DPM idle period the planner published (K). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* nr_managed, set before load */
	__type(key, u32);
	__type(value, u64);
} dpm_until SEC(".maps");

/* Per tt thread: whether it is counted in its task's nr_runnable (I). */
struct tt_thread_rt {
	u32 task;
	u32 counted;
	u64 deadline_ns; /* local EDF (D): the thread's last wakeup + its period */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tt_thread_rt);
} thread_rt SEC(".maps");

/* Prefixed: kernel type names are taken by vmlinux.h. */
struct tt_timer {
	struct bpf_timer timer;
	u64 expires_ns; /* when the timer is armed for */
	u64 slot; /* the slot whose start is the next boundary */
	u32 phase; /* enum tt_phase: what the armed expiry is */
	/*
	 * 1 from disarm_timer on (scx_tt's shutdown, a restart), 0 from arm_timer on: a callback
	 * already running when userspace disarms neither ticks on nor re-arms, and its failed
	 * re-arm (the kernel's cancel racing with it) is the shutdown's, not an error (B.4).
	 */
	u32 disarmed;
};

enum tt_phase {
	TT_PHASE_BOUNDARY = 0, /* expires_ns = slot_start(slot) */
	TT_PHASE_STOP, /* expires_ns = slot_start(slot) - guard_ns: the owner's run ends then */
	TT_PHASE_DPM_WAKE, /* expires_ns = slot_start(slot) - guard_ns: a DPM idle period ends (K) */
};

/*
 * The slot clock of each managed CPU, keyed by CPU id: the highest managed id + 1 entries, set
 * before load (a plan of CPUs 1-2 holds 3, not TT_MAX_CPUS); a lookup beyond it finds nothing.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* the highest managed CPU id + 1, set before load */
	__type(key, u32);
	__type(value, struct tt_timer);
} timers SEC(".maps");

/* What is running on a CPU, for accounting. */
enum tt_run_kind {
	TT_RUN_NONE = 0,
	TT_RUN_PLAN, /* a tt or be thread; the task index is in cur_task */
	TT_RUN_KTHREAD,
	TT_RUN_FOREIGN,
};

struct tt_slot_acc {
	struct tt_slot_rec rec; /* rec.slot says which slot it collects */
	u64 avail_ns; /* the observation's (J) */
	u64 stolen_ns;
	u32 obs_flags; /* TT_OBS_* */
	bool open;
	bool ticked; /* the slot's tick has fired (kick issued) */
};

struct tt_cpu_acct {
	u32 cur_kind;
	u32 cur_task;
	bool be_started_over_owner; /* the running be task started while the owner waited */
	bool reclaiming; /* the running tt task was started in another owner's slot (crps, C) */
	bool evicting; /* the running task is foreign and was sent away as it started (D) */
	u64 seg_start_ns;
	u64 owner_ready_ns; /* when the current owner last became runnable */
	u64 cur_slot; /* the slot whose tick fired last: the slot in force on this CPU */
	/*
	 * The owner of slot tick_slot - 1 as its tick read it (F): a table write for a slot that
	 * has ticked takes effect at that entry's next use, not inside the slot. 0: none yet.
	 */
	u64 tick_slot;
	u32 tick_owner;
	/* B.5: the run the last preemption ended (ops.stopping, runnable): kind, task, when */
	u32 preempt_kind;
	u32 preempt_task;
	u64 preempt_ns;
	bool preempt_reclaiming;
	u64 piece_from; /* charge()'s cursor over the pieces of a segment */
	struct tt_slot_acc acc[2]; /* indexed by slot & 1 */
};

static struct tt_cpu_acct cpu_acct[TT_MAX_CPUS];

/*
 * Per tt task (I): its threads' runnable state and its job's completion. nr_runnable and
 * runnable_ns change under the runqueue lock of the task's CPU (ops.runnable/ops.quiescent),
 * possibly from another CPU (a remote wakeup); done changes on the task's CPU only.
 */
struct tt_task_rt {
	u64 runnable_ns; /* when nr_runnable last went from 0 to 1 (or that wakeup's select_cpu) */
	u64 blocked_ns; /* when nr_runnable last went from 1 to 0 */
	u64 waking_ns; /* a wakeup passed ops.select_cpu and has not reached ops.runnable; 0: none */
	s64 nr_runnable; /* threads running or queued */
	bool done; /* the current job has completed (I) */
	bool carry; /* yield: the previous job overran into this one; the next yield ends it (I) */
	bool job_ran; /* ran in its own slots since its current job started (I) */
	u64 owned_until_ns; /* the end of its last run in its own slots (I) */
};

static struct tt_task_rt task_rt[TT_MAX_TASKS];

static __always_inline bool is_managed(s32 cpu)
{
	return cpu >= 0 && cpu < TT_MAX_CPUS && cpu_role[cpu] == TT_CPU_MANAGED;
}

static __always_inline u64 task_dsq(u32 task)
{
	return TT_DSQ_TASK_BASE + task;
}

static __always_inline bool started(u64 now)
{
	u64 t0 = t0_ns;

	return t0 && now >= t0;
}

/* Slot of a time at or after t0. */
static __always_inline u64 slot_of(u64 now)
{
	return (now - t0_ns) / slot_ns;
}

static __always_inline u64 slot_start(u64 slot)
{
	return t0_ns + slot * slot_ns;
}

/* The table entry of slot @slot on managed CPU @cpu (flag bits included), or TT_NO_TASK. */
static u32 entry_of(s32 cpu, u64 slot)
{
	u32 half = slot >= table_switch_slot ? table_next : table_active;
	u32 midx, key, *entry;

	if (!is_managed(cpu))
		return TT_NO_TASK;
	midx = cpu_midx[cpu];
	key = (half * nr_managed + midx) * frame_slots + slot % frame_slots;
	entry = bpf_map_lookup_elem(&table, &key);
	return entry ? *entry : TT_NO_TASK;
}

/* Whether @entry has no owner: TT_NO_TASK or TT_DPM_IDLE (K). */
static __always_inline bool entry_free(u32 entry)
{
	return entry == TT_NO_TASK || entry == TT_DPM_IDLE;
}

/* The task of a table entry: TT_NO_TASK, or the index with the flag bits stripped. */
static __always_inline u32 entry_task(u32 entry)
{
	return entry_free(entry) ? TT_NO_TASK : entry & TT_ENTRY_TASK_MASK;
}

/* Whether @entry starts a job of its task (TT_NO_TASK, TT_DPM_IDLE never do). */
static __always_inline bool entry_job_start(u32 entry)
{
	return !entry_free(entry) && (entry & TT_ENTRY_JOB_START);
}

/* Whether slot @slot on @cpu is DPM idle with be work kept off it (K). */
static __always_inline bool dpm_idle(s32 cpu, u64 slot)
{
	return dpm_enabled && !dpm_be && entry_of(cpu, slot) == TT_DPM_IDLE;
}

/*
 * The task owning slot @slot on managed CPU @cpu, or TT_NO_TASK: the owner its tick read once
 * the tick has fired (F), else its table entry now.
 */
static u32 owner_of(s32 cpu, u64 slot)
{
	if (cpu >= 0 && cpu < TT_MAX_CPUS && cpu_acct[cpu].tick_slot == slot + 1)
		return cpu_acct[cpu].tick_owner;
	return entry_task(entry_of(cpu, slot));
}

/* End of the run of consecutive slots from @slot that @owner owns on @cpu. */
static u64 run_end(s32 cpu, u64 slot, u32 owner)
{
	u64 end = slot + 1;
	int i;

	for (i = 0; i < TT_LOOKAHEAD_SLOTS; i++) {
		if (owner_of(cpu, end) != owner)
			break;
		end++;
	}
	return slot_start(end);
}

static __always_inline struct tt_task_ctx *lookup_ctx(const struct task_struct *p)
{
	u32 tid = p->pid;

	return bpf_map_lookup_elem(&task_ctx, &tid);
}

static __always_inline bool is_percpu_kthread(const struct task_struct *p)
{
	return (p->flags & PF_KTHREAD) && p->nr_cpus_allowed == 1;
}

static struct tt_task_stats *stats_of(u32 task)
{
	if (task >= TT_MAX_TASKS)
		return NULL;
	return &task_stats[task];
}

static __always_inline bool is_tt(u32 task)
{
	return task < nr_tasks && task < TT_MAX_TASKS &&
	       task_class[task & (TT_MAX_TASKS - 1)] == TT_CLASS_TT;
}

/*
 * Whether @task's current job is done as seen in @slot on @cpu (I): its done flag, except in a
 * slot that starts a job of @task and whose tick has not fired yet (a late tick): the tick
 * will clear the flag, and the time from the boundary to the tick belongs to the new job.
 */
static bool job_done(struct tt_cpu_acct *a, s32 cpu, u64 slot, u32 task)
{
	u32 entry;

	if (task >= TT_MAX_TASKS || !task_rt[task].done)
		return false;
	if (slot <= a->cur_slot)
		return true;
	entry = entry_of(cpu, slot);
	return !(entry_job_start(entry) && entry_task(entry) == task);
}

/* Threads of @task running or queued, read with a full barrier (I, J: runnable_ns after it). */
static __always_inline s64 nr_runnable(struct tt_task_rt *rt)
{
	return __sync_fetch_and_add(&rt->nr_runnable, 0);
}

/* ---- local scheduling inside a tt task (D) ---- */

/* The DSQ key of threads a local workload does not name: after every named one. */
#define TT_UNNAMED_VTIME (1ULL << 62)

/*
 * The key of @p, a thread of a tt task with local scheduling @local, in its task's DSQ (D): RM
 * its period; EDF its current deadline, set at each wakeup (tt_runnable), or now + its period
 * for a thread that has not woken since it joined the task.
 */
static u64 local_vtime(struct task_struct *p, const struct tt_task_ctx *tctx, u8 local)
{
	struct tt_thread_rt *th;
	u64 now;

	if (local == TT_LOCAL_RM)
		return tctx->period_ns ? tctx->period_ns : TT_UNNAMED_VTIME;
	now = bpf_ktime_get_ns();
	if (!tctx->period_ns)
		return now + TT_UNNAMED_VTIME;
	th = bpf_task_storage_get(&thread_rt, p, 0, 0);
	if (!th)
		return now + tctx->period_ns;
	if (!th->deadline_ns)
		th->deadline_ns = now + tctx->period_ns;
	return th->deadline_ns;
}

/* ---- reclaiming (crps, C) ---- */

/*
 * The absolute deadline slot of @task's current job at @slot: released at or before @slot,
 * deadline after it. 0 when none (between a job's deadline and the next release, before the
 * first release, or jobs that are not periodic).
 */
static u64 current_deadline(u32 task, u64 slot)
{
	u64 period, offset, r;

	task &= TT_MAX_TASKS - 1;
	period = task_period[task];
	offset = task_offset[task];
	if (!period || slot < offset)
		return 0;
	r = offset + (slot - offset) / period * period;
	return slot < r + task_deadline[task] ? r + task_deadline[task] : 0;
}

/*
 * Whether @owner leaves @slot on @cpu unused (C): its job is done, or none of its threads is
 * running or queued.
 */
static bool owner_idle(struct tt_cpu_acct *a, s32 cpu, u64 slot, u32 owner)
{
	if (owner >= TT_MAX_TASKS)
		return false;
	return job_done(a, cpu, slot, owner) || nr_runnable(&task_rt[owner]) <= 0;
}

/* ---- accounting (E) ---- */

static void acc_open(struct tt_cpu_acct *a, s32 cpu, u64 slot)
{
	struct tt_slot_acc *acc = &a->acc[slot & 1];

	__builtin_memset(&acc->rec, 0, sizeof(acc->rec));
	acc->rec.slot = slot;
	acc->rec.cpu = cpu;
	acc->rec.owner = owner_of(cpu, slot);
	acc->rec.be_top = TT_NO_TASK;
	acc->avail_ns = 0;
	acc->stolen_ns = 0;
	acc->obs_flags = 0;
	acc->open = true;
	acc->ticked = false;
}

/*
 * Add @ns that ran in @slot on managed CPU @cpu: to the task's inside time (decided by the
 * table, so it holds even for a slot whose record was lost to a very late tick) and to the
 * slot's record.
 */
static void charge_piece(struct tt_cpu_acct *a, s32 cpu, u64 slot, u64 piece_start, u64 ns)
{
	struct tt_slot_acc *acc = &a->acc[slot & 1];
	struct tt_slot_rec *rec = &acc->rec;
	bool has_rec = acc->open && rec->slot == slot;
	u32 task = a->cur_task, owner;
	struct tt_task_stats *ts;
	u64 ready, from;
	bool be;

	if (!has_rec && cpu < TT_MAX_CPUS)
		__sync_fetch_and_add(&cpu_stats[cpu].lost_ns, ns);
	if (a->cur_kind != TT_RUN_PLAN) {
		if (!has_rec)
			return;
		if (a->cur_kind == TT_RUN_KTHREAD)
			rec->kthread_ns += ns;
		else if (a->cur_kind == TT_RUN_FOREIGN)
			rec->foreign_ns += ns;
		if (a->cur_kind == TT_RUN_FOREIGN && a->evicting && cpu < TT_MAX_CPUS)
			__sync_fetch_and_add(&cpu_stats[cpu].evicted_ns, ns);
		return;
	}
	if (task >= TT_MAX_TASKS)
		return;
	ts = &task_stats[task];
	be = task_class[task & (TT_MAX_TASKS - 1)] == TT_CLASS_BE;
	owner = owner_of(cpu, slot);
	if (be || task == owner)
		__sync_fetch_and_add(&ts->inside_ns, ns);
	if (!be && task == owner) {
		task_rt[task].job_ran = true;
		task_rt[task].owned_until_ns = piece_start + ns;
	}
	if (!has_rec)
		return;
	if (!be) {
		if (task == owner) {
			rec->owner_ns += ns;
		} else {
			rec->other_tt_ns += ns;
			if (a->reclaiming && owner != TT_NO_TASK)
				__sync_fetch_and_add(&ts->reclaimed_ns, ns);
		}
		return;
	}
	rec->be_ns += ns;
	rec->be_top = task;
	if (a->be_started_over_owner) {
		rec->be_ready_ns += ns;
		return;
	}
	/* before the slot's tick fired, the overrun is tick lateness, not a choice */
	if (acc->ticked && owner != TT_NO_TASK && !job_done(a, cpu, slot, owner) &&
	    scx_bpf_dsq_nr_queued(task_dsq(owner)) > 0) {
		ready = a->owner_ready_ns;
		from = ready > piece_start ? ready : piece_start;
		if (from < piece_start + ns)
			rec->be_kick_ns += piece_start + ns - from;
	}
}

/*
 * The observation (J) of [@from, @end) in @slot on @cpu, during which a->cur_kind/cur_task ran
 * (or nothing): add it to avail_ns when the slot's owner was available (a thread running or
 * runnable, its job not done), and to stolen_ns when, in addition, another thread ran. The
 * owner's runnable state cannot have ended inside the interval (that is ops.quiescent on this
 * CPU, which charges first); it may have begun inside it (a wakeup), at runnable_ns.
 */
static void observe_piece(struct tt_cpu_acct *a, s32 cpu, u64 slot, u64 from, u64 end)
{
	struct tt_slot_acc *acc = &a->acc[slot & 1];
	u32 owner = owner_of(cpu, slot);
	struct tt_task_rt *rt;
	bool running;
	u64 since;

	if (!acc->open || acc->rec.slot != slot || !is_tt(owner) || owner >= TT_MAX_TASKS)
		return;
	if (job_done(a, cpu, slot, owner))
		return;
	rt = &task_rt[owner];
	running = a->cur_kind == TT_RUN_PLAN && a->cur_task == owner;
	if (!running) {
		if (nr_runnable(rt) <= 0)
			return;
		since = rt->runnable_ns;
		if (since > from)
			from = since;
		if (from >= end)
			return;
	}
	acc->avail_ns += end - from;
	if (!running && a->cur_kind != TT_RUN_NONE)
		acc->stolen_ns += end - from;
}

/*
 * One piece of charge()'s segment on @cpu, from a->piece_from to the end of its slot or @now;
 * false when the segment is charged. A subprogram, not inlined, and its cursor in the map: with
 * the body inline, its branches left different values in the loop's registers (and a local
 * `from` a lower bound one higher per iteration), so the 6.12 verifier, whose liveness does not
 * prune them inside a loop, never saw two equal loop states and gave up after 8192 jumps
 * (E2BIG). The caller's loop now holds the same registers on every path and converges.
 */
static __noinline bool charge_next_piece(s32 cpu, u64 now)
{
	struct tt_cpu_acct *a;
	u64 from, end, slot;

	if (cpu < 0 || cpu >= TT_MAX_CPUS)
		return false;
	a = &cpu_acct[cpu];
	from = a->piece_from;
	if (from >= now)
		return false;
	slot = slot_of(from);
	end = slot_start(slot + 1);
	if (end > now)
		end = now;
	/* idle time is in no record, but the owner may be waiting through it (J) */
	if (a->cur_kind != TT_RUN_NONE)
		charge_piece(a, cpu, slot, from, end - from);
	observe_piece(a, cpu, slot, from, end);
	a->piece_from = end;
	return true;
}

/* Close the running segment on @cpu at @now (the segment stays open from @now). */
static void charge(s32 cpu, u64 now)
{
	struct tt_cpu_acct *a;
	struct tt_task_stats *ts;
	u64 from;
	int i;

	if (cpu < 0 || cpu >= TT_MAX_CPUS)
		return;
	a = &cpu_acct[cpu];
	from = a->seg_start_ns;
	a->seg_start_ns = now;
	if (now <= from)
		return;
	if (a->cur_kind == TT_RUN_PLAN && (ts = stats_of(a->cur_task)))
		__sync_fetch_and_add(&ts->run_ns, now - from);
	if (!is_managed(cpu) || !started(now))
		return;
	if (!started(from))
		from = t0_ns;
	/* a segment spans more than two slots only when ticks were very late */
	a->piece_from = from;
	bpf_for(i, 0, TT_MAX_PIECES) {
		if (!charge_next_piece(cpu, now))
			break;
	}
	from = a->piece_from;
	if (from < now && a->cur_kind != TT_RUN_NONE)
		__sync_fetch_and_add(&cpu_stats[cpu].lost_ns, now - from);
}

/*
 * Publish the observation of the closing slot @acc on @cpu (J): odd seq, fields, even seq. The
 * xchg of each seq write is a full barrier on every JIT, so a reader that sees the even seq
 * sees every field of that slot, and one that sees fields of a later write sees its odd seq
 * (or a later one) on its second read of seq.
 */
static void publish_obs(s32 cpu, struct tt_slot_acc *acc)
{
	u32 key = cpu_midx[cpu & (TT_MAX_CPUS - 1)] * TT_OBS_RING +
		  (u32)(acc->rec.slot & (TT_OBS_RING - 1));
	struct tt_slot_obs *o = bpf_map_lookup_elem(&slot_obs, &key);
	u64 slot = acc->rec.slot;

	if (!o)
		return;
	__sync_lock_test_and_set(&o->seq, 2 * slot + 1);
	o->slot = slot;
	o->owner = acc->rec.owner;
	o->flags = acc->obs_flags;
	o->owner_ns = acc->rec.owner_ns;
	o->avail_ns = acc->avail_ns;
	o->stolen_ns = acc->stolen_ns;
	o->late_ns = acc->rec.late_ns;
	__sync_lock_test_and_set(&o->seq, 2 * slot + 2);
}

/* @task's job completed now, in @slot on @cpu (I): count it, flag the slot's observation. */
static void complete_job(struct tt_cpu_acct *a, u64 slot, u32 task)
{
	struct tt_slot_acc *acc = &a->acc[slot & 1];
	struct tt_task_stats *ts;

	if (task >= TT_MAX_TASKS)
		return;
	task_rt[task].done = true;
	if (acc->open && acc->rec.slot == slot)
		acc->obs_flags |= TT_OBS_DONE;
	if ((ts = stats_of(task)))
		__sync_fetch_and_add(&ts->jobs_done, 1);
}

/*
 * The `block` rule (I) at the tick that ends @slot on @cpu: the slot's owner, whose job is not
 * done yet, ran in the slot and had no thread running, queued or being woken at the slot's end
 * (the boundary, not the tick, which may come late): its threads' count went to 0 before the
 * boundary and either is still 0, or left 0 after it with a wakeup begun after it.
 */
static void complete_block(struct tt_cpu_acct *a, s32 cpu, u64 slot)
{
	struct tt_slot_acc *acc = &a->acc[slot & 1];
	u64 end = slot_start(slot + 1), waking;
	struct tt_task_rt *rt;
	u32 owner;

	if (!acc->open || acc->rec.slot != slot)
		return;
	owner = acc->rec.owner;
	if (!is_tt(owner) || owner >= TT_MAX_TASKS ||
	    task_completion[owner & (TT_MAX_TASKS - 1)] != TT_COMPLETION_BLOCK)
		return;
	rt = &task_rt[owner];
	if (rt->done || !acc->rec.owner_ns)
		return;
	/* the count first (a full barrier), then the times its writers stored before it */
	if (nr_runnable(rt) > 0 && rt->runnable_ns < end)
		return;
	if (rt->blocked_ns > end)
		return;
	waking = rt->waking_ns;
	if (waking && waking < end)
		return;
	complete_job(a, slot, owner);
}

/* Emit the record of @slot on @cpu and reuse its buffer for @slot + 2. */
static void close_slot(s32 cpu, u64 slot, s64 late_ns)
{
	struct tt_cpu_acct *a;
	struct tt_slot_acc *acc;
	struct tt_slot_rec *out;

	if (cpu < 0 || cpu >= TT_MAX_CPUS)
		return;
	a = &cpu_acct[cpu];
	acc = &a->acc[slot & 1];
	if (acc->open && acc->rec.slot == slot) {
		out = bpf_ringbuf_reserve(&slot_recs, sizeof(*out), 0);
		if (out) {
			__builtin_memcpy(out, &acc->rec, sizeof(*out));
			/* no wakeup per record: userspace drains the ring every 100 ms */
			bpf_ringbuf_submit(out, BPF_RB_NO_WAKEUP);
		} else {
			__sync_fetch_and_add(&cpu_stats[cpu].rec_drops, 1);
		}
		publish_obs(cpu, acc);
	}
	acc_open(a, cpu, slot + 2);
	/* the record of the slot that starts now carries this tick's lateness */
	acc = &a->acc[(slot + 1) & 1];
	if (acc->open && acc->rec.slot == slot + 1) {
		acc->rec.late_ns = late_ns;
		acc->ticked = true;
	}
}

/* ---- the slot tick (B) ---- */

/* Request the slot's cpuperf target (schedutil systems) and note it in the slot's record. */
static void set_slot_perf(struct tt_cpu_acct *a, s32 cpu, u64 slot)
{
	struct tt_slot_acc *acc = &a->acc[slot & 1];
	u32 key, *perf;

	key = cpu_midx[cpu & (TT_MAX_CPUS - 1)] * frame_slots + slot % frame_slots;
	perf = bpf_map_lookup_elem(&perf_target, &key);
	if (!perf || !*perf)
		return;
	if (bpf_ksym_exists(scx_bpf_cpuperf_set))
		scx_bpf_cpuperf_set(cpu, *perf);
	if (acc->open && acc->rec.slot == slot)
		acc->rec.perf = *perf;
}

/*
 * Start @timer of @cpu at t->expires_ns, pinned to the calling CPU (B.1). The test seam (H)
 * adds a flag the kernel refuses when arming @cpu for a slot at or after test_fault_slot.
 */
static int start_timer(struct tt_timer *t, struct bpf_timer *timer, s32 cpu)
{
	u64 flags = BPF_F_TIMER_ABS | BPF_F_TIMER_CPU_PIN;

	/* B.5: the helper thread sleeps to t->expires_ns; no bpf_timer call is ever verified */
	if (rt_clock)
		return 0;
	if (test_fault_timer && cpu == test_fault_cpu && t->slot >= test_fault_slot)
		flags |= TT_TEST_BAD_TIMER_FLAG;
	return bpf_timer_start(timer, t->expires_ns, flags);
}

/*
 * Re-arm @cpu's slot timer from its callback. A failure would stop the CPU's slot clock, so
 * the scheduler exits instead, naming the CPU, the slot and the error (B.4).
 */
static bool rearm(struct tt_timer *t, struct bpf_timer *timer, s32 cpu)
{
	int ret = start_timer(t, timer, cpu);

	if (!ret)
		return true;
	if (*(volatile u32 *)&t->disarmed)
		return false;
	__sync_fetch_and_add(&cpu_stats[cpu & (TT_MAX_CPUS - 1)].timer_errors, 1);
	scx_bpf_error("slot timer of CPU %d cannot be re-armed for slot %llu: bpf_timer_start returned %d",
		      cpu, t->slot, ret);
	return false;
}

/*
 * Arm @t for the boundary that starts slot @next. When the current slot's owner @owner does
 * not own @next, its run ends at that boundary: arm the guard-band event first (B.2f), so the
 * owner is stopped guard_ns before the boundary and a late boundary tick does not let it run
 * into the next owner's slot.
 */
static void arm_next(struct tt_timer *t, struct bpf_timer *timer, s32 cpu, u64 next, u32 owner)
{
	u64 boundary = slot_start(next);

	t->slot = next;
	if (owner != TT_NO_TASK && guard_ns && guard_ns < slot_ns && owner_of(cpu, next) != owner) {
		t->phase = TT_PHASE_STOP;
		t->expires_ns = boundary - guard_ns;
	} else {
		t->phase = TT_PHASE_BOUNDARY;
		t->expires_ns = boundary;
	}
	rearm(t, timer, cpu);
}

/*
 * The guard-band event of the run ending at slot_start(t->slot): preempt the ending owner if it
 * runs. Dispatch starts nothing within guard_ns of the end of a run (C), so the CPU idles
 * until the boundary tick starts the next slot. Returns false when the event is so late that
 * the boundary has passed: the caller then runs the boundary tick at once.
 */
static bool stop_tick(struct tt_timer *t, struct bpf_timer *timer, s32 cpu, u64 now)
{
	struct tt_cpu_acct *a = &cpu_acct[cpu & (TT_MAX_CPUS - 1)];
	u64 boundary = slot_start(t->slot);
	u32 ending;

	__sync_fetch_and_add(&cpu_stats[cpu].stop_events, 1);
	if (now >= boundary) {
		__sync_fetch_and_add(&cpu_stats[cpu].stop_late, 1);
		return false;
	}
	ending = owner_of(cpu, t->slot - 1);
	/*
	 * the ending owner, or a tt task reclaiming its slot (crps, C); a table switch written
	 * after this event was armed may continue the owner's run into t->slot
	 */
	if (a->cur_kind == TT_RUN_PLAN && is_tt(a->cur_task) &&
	    (a->cur_task == ending || a->reclaiming) &&
	    owner_of(cpu, t->slot) != a->cur_task) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		__sync_fetch_and_add(&cpu_stats[cpu].stop_kicks, 1);
	} else if (rt_clock && a->cur_kind == TT_RUN_NONE && a->preempt_ns >= t->expires_ns &&
		   a->preempt_kind == TT_RUN_PLAN && is_tt(a->preempt_task) &&
		   (a->preempt_task == ending || a->preempt_reclaiming) &&
		   owner_of(cpu, t->slot) != a->preempt_task) {
		/*
		 * B.5: the clock thread's wake-up for this event preempted the ending owner, whose
		 * slice ops.stopping zeroed: it is stopped already (dispatch starts nothing this
		 * close to the end of the run); count it as the kick would be
		 */
		__sync_fetch_and_add(&cpu_stats[cpu].stop_kicks, 1);
	}
	t->phase = TT_PHASE_BOUNDARY;
	t->expires_ns = boundary;
	rearm(t, timer, cpu);
	__sync_fetch_and_add(&cpu_stats[cpu].stop_cost_ns, bpf_ktime_get_ns() - now);
	return true;
}

/*
 * A job of tt task @task starts: the tick of a slot whose entry has TT_ENTRY_JOB_START for it,
 * or a late tick that skipped such a slot (I). The owner may run again (done ends). A `yield`
 * task whose previous job is not done, ran in its slots, and has not blocked since its last
 * run there (it was running or queued when that run ended, and still is) overran: its next
 * sched_yield() in its slots ends that job, not this one (carry). A done task, or one that
 * blocked since (a thread that slept and woke up was released: a new job), is in step; one
 * that did not run in its previous job's slots keeps the carry it had.
 */
static void job_started(u32 task)
{
	struct tt_task_rt *rt;

	if (task >= TT_MAX_TASKS)
		return;
	rt = &task_rt[task];
	/* the count first (a full barrier), then the time its writer stored before it */
	if (rt->done || nr_runnable(rt) <= 0 || rt->runnable_ns >= rt->owned_until_ns)
		rt->carry = false;
	else if (rt->job_ran && task_completion[task] == TT_COMPLETION_YIELD)
		rt->carry = true;
	rt->done = false;
	rt->job_ran = false;
}

#define TT_SKIP_SCAN_MAX 4096

/*
 * A late tick on @cpu skipped the slots [@from, @to): start the jobs that they start (I), each
 * entry at most once (a frame of them). A second start of a task in the range finds it not
 * done and not run since the first, so it keeps the first's carry.
 */
static void start_skipped_jobs(s32 cpu, u64 from, u64 to)
{
	u64 n = to > from ? to - from : 0;
	u32 entry, t;
	int i;

	if (n > frame_slots)
		n = frame_slots;
	if (n > TT_SKIP_SCAN_MAX) {
		/* too many to read in a tick: every job of the CPU may start (never starve one) */
		bpf_for(t, 0, nr_tasks) {
			if (t >= TT_MAX_TASKS)
				break;
			if (task_cpu[t & (TT_MAX_TASKS - 1)] == cpu)
				job_started(t);
		}
		return;
	}
	bpf_for(i, 0, (int)n) {
		entry = entry_of(cpu, from + i);
		if (entry_job_start(entry))
			job_started(entry_task(entry));
	}
}

/* ---- DPM idle periods (K) ---- */

/* The end the planner published for @cpu's DPM idle period (0: none). */
static u64 dpm_published(s32 cpu)
{
	u32 key = cpu_midx[cpu & (TT_MAX_CPUS - 1)];
	u64 *until = bpf_map_lookup_elem(&dpm_until, &key);

	return until ? *(volatile u64 *)until : 0;
}

/*
 * The end of the DPM idle period slot @slot (entry TT_DPM_IDLE) starts on @cpu: the first
 * later slot whose entry is not TT_DPM_IDLE, at most dpm_until and TT_DPM_MAX_SLOTS ahead.
 * dpm_until is read first: the planner writes it after the entries below it.
 */
static u64 dpm_end(s32 cpu, u64 slot)
{
	u64 lim = dpm_published(cpu), end = slot + 1;
	int i;

	bpf_for(i, 0, TT_DPM_MAX_SLOTS) {
		if (end >= lim || entry_of(cpu, end) != TT_DPM_IDLE)
			break;
		end++;
	}
	return end;
}

/* Arm @t's DPM wake for the period ending at slot @end (K). */
static void arm_dpm_wake(struct tt_timer *t, struct bpf_timer *timer, s32 cpu, u64 end, u64 now)
{
	u64 wake = slot_start(end) - guard_ns;

	t->slot = end;
	t->phase = TT_PHASE_DPM_WAKE;
	t->expires_ns = wake > now ? wake : now;
	rearm(t, timer, cpu);
}

/*
 * The DPM wake of the period ending at t->slot (K): close the slots the deferral skipped, up to
 * the one running now, as their ticks would have (lateness 0), then arm the boundary of the
 * period's end. Returns false when the wake is so late that the boundary has passed: the
 * caller then runs that boundary's tick (t->slot, its expiry) at once.
 */
static bool dpm_wake(struct tt_timer *t, struct bpf_timer *timer, s32 cpu, u64 now)
{
	struct tt_cpu_acct *a = &cpu_acct[cpu & (TT_MAX_CPUS - 1)];
	u64 end = t->slot, s = a->cur_slot;
	int i;

	bpf_for(i, 0, TT_DPM_MAX_SLOTS) {
		if (s + 2 > end || slot_start(s + 1) > now)
			break;
		charge(cpu, slot_start(s + 1));
		close_slot(cpu, s, 0);
		s++;
		__sync_fetch_and_add(&cpu_stats[cpu & (TT_MAX_CPUS - 1)].dpm_slots, 1);
	}
	a->cur_slot = s;
	if (now >= slot_start(end)) {
		t->phase = TT_PHASE_BOUNDARY;
		t->expires_ns = slot_start(end);
		return false;
	}
	/*
	 * A long period is published in pieces (an entry serves one frame): when the planner has
	 * published a later end since, sleep on to it (one event per piece, not a wake and a tick)
	 */
	if (entry_of(cpu, end) == TT_DPM_IDLE) {
		u64 later = dpm_end(cpu, end - 1);

		if (later > end) {
			arm_dpm_wake(t, timer, cpu, later, now);
			return true;
		}
	}
	t->phase = TT_PHASE_BOUNDARY;
	t->expires_ns = slot_start(end);
	rearm(t, timer, cpu);
	return true;
}

/*
 * From ops.dispatch on @cpu: a lowered dpm_until cuts the deferred tick short (K). The planner
 * kicks the CPU after lowering it (dpm_kick).
 */
static void dpm_recheck(s32 cpu, u64 now)
{
	u32 key = cpu;
	struct tt_timer *t = bpf_map_lookup_elem(&timers, &key);
	u64 until, end;

	if (rt_clock || !t || t->phase != TT_PHASE_DPM_WAKE)
		return;
	until = dpm_published(cpu);
	if (until >= t->slot)
		return;
	end = cpu_acct[cpu & (TT_MAX_CPUS - 1)].cur_slot + 1;
	if (until > end)
		end = until;
	if (end >= t->slot)
		return;
	arm_dpm_wake(t, &t->timer, cpu, end, now);
	__sync_fetch_and_add(&cpu_stats[cpu & (TT_MAX_CPUS - 1)].dpm_shortened, 1);
}

/*
 * The slot clock's event on @cpu at @now (B.2): the guard-band event, a DPM wake or a boundary
 * tick, as t->phase says; re-arms @t (bpf_timer: @timer; B.5: t->expires_ns only).
 */
static void run_tick(struct tt_timer *t, struct bpf_timer *timer, s32 cpu, u64 now)
{
	struct tt_cpu_acct *a;
	u64 slot;
	u32 owner, entry;

	if (cpu < 0 || cpu >= TT_MAX_CPUS)
		return;
	if (t->phase == TT_PHASE_STOP) {
		if (stop_tick(t, timer, cpu, now))
			return;
		/* the guard-band event came after the boundary: this is the boundary tick */
		t->phase = TT_PHASE_BOUNDARY;
		t->expires_ns = slot_start(t->slot);
	} else if (t->phase == TT_PHASE_DPM_WAKE) {
		/* the end of a DPM idle period (K); a wake after the boundary is its tick */
		if (dpm_wake(t, timer, cpu, now))
			return;
	}
	slot = t->slot;
	a = &cpu_acct[cpu];

	charge(cpu, now);
	if (slot > 0) {
		complete_block(a, cpu, slot - 1);
		close_slot(cpu, slot - 1, (s64)(now - t->expires_ns));
	} else {
		a->acc[0].rec.late_ns = (s64)(now - t->expires_ns);
		a->acc[0].ticked = true;
	}
	if (slot_start(slot + 1) <= now) {
		/*
		 * More than a slot late: emit what this slot has, skip to the slot we are in
		 * (the skipped slots get no record; their run time still counts per task).
		 */
		__sync_fetch_and_add(&cpu_stats[cpu].late_skips, 1);
		/*
		 * the skipped slot's record was opened two slots ago; like a tick's (below), it
		 * names the owner its entry says now (a planner that voided the slot since, J)
		 */
		if (a->acc[slot & 1].open && a->acc[slot & 1].rec.slot == slot)
			a->acc[slot & 1].rec.owner = entry_task(entry_of(cpu, slot));
		close_slot(cpu, slot, 0);
		slot = slot_of(now);
		acc_open(a, cpu, slot);
		acc_open(a, cpu, slot + 1);
		a->acc[slot & 1].rec.late_ns = (s64)(now - slot_start(slot));
		a->acc[slot & 1].ticked = true;
		/* the skipped slots' job starts (I) */
		start_skipped_jobs(cpu, t->slot, slot);
	}

	a->cur_slot = slot;
	entry = entry_of(cpu, slot);
	owner = entry_task(entry);
	if (entry_job_start(entry))
		job_started(owner);
	/* the record was opened two slots ago; a table switch since then changes its owner */
	if (a->acc[slot & 1].open && a->acc[slot & 1].rec.slot == slot)
		a->acc[slot & 1].rec.owner = owner;
	/* the slot's owner from now to its end, whatever is written to its entry meanwhile (F) */
	a->tick_owner = owner;
	/* the owner before the slot (xchg: a full barrier); a remote reader (enqueue's kick) that
	 * sees the old pair for a moment decides on the entry, as before the tick */
	__sync_lock_test_and_set(&a->tick_slot, slot + 1);
	if (!(a->cur_kind == TT_RUN_PLAN && a->cur_task == owner))
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	if (perf_enabled)
		set_slot_perf(a, cpu, slot);

	if (dpm_enabled && !dpm_be && !rt_clock && entry == TT_DPM_IDLE) {
		/* a DPM idle period: one wake at its end instead of a tick per slot (K) */
		u64 end = dpm_end(cpu, slot);

		if (end > slot + 1) {
			arm_dpm_wake(t, timer, cpu, end, now);
			__sync_fetch_and_add(&cpu_stats[cpu].dpm_defers, 1);
		} else {
			arm_next(t, timer, cpu, slot + 1, owner);
		}
	} else {
		arm_next(t, timer, cpu, slot + 1, owner);
	}

	__sync_fetch_and_add(&cpu_stats[cpu].ticks, 1);
	__sync_fetch_and_add(&cpu_stats[cpu].tick_cost_ns, bpf_ktime_get_ns() - now);
}

/* The bpf_timer callback of CPU *@key's slot clock (B.2). */
static int slot_tick(void *map, int *key, struct bpf_timer *timer)
{
	u64 now = bpf_ktime_get_ns();
	s32 cpu = bpf_get_smp_processor_id();
	u32 k = *key;
	struct tt_timer *t;

	t = bpf_map_lookup_elem(&timers, &k);
	if (!t)
		return 0;
	if (cpu != k) {
		/* armed with BPF_F_TIMER_CPU_PIN on CPU k (B.1): the slot clock of k is broken */
		__sync_fetch_and_add(&cpu_stats[k & (TT_MAX_CPUS - 1)].pin_mismatch, 1);
		scx_bpf_error("slot timer of CPU %u ran on CPU %d at slot %llu", k, cpu, t->slot);
		return 0;
	}
	if (*(volatile u32 *)&t->disarmed)
		return 0;
	run_tick(t, timer, cpu, now);
	return 0;
}

/*
 * The helper-thread slot clock of CPU arg->cpu (B.5), test-run by its helper pinned there:
 * runs the event armed for now or earlier (none before it: a wake-up before its time), and
 * returns the expiry to sleep to in arg->next_ns. Returns 0 or an enum tt_arm_result.
 */
SEC("syscall")
int rt_tick(struct tt_tick_arg *arg)
{
	s32 cpu = bpf_get_smp_processor_id();
	u32 key = arg->cpu;
	struct tt_timer *t;
	u64 now;

	if (!rt_clock)
		return TT_ARM_NOT_RT_CLOCK;
	if (cpu != arg->cpu)
		/* the kernel moved the helper off its CPU: that CPU is going offline (balance_push
		 * moves every user thread off a CPU being deactivated, before sched_ext's hotplug
		 * exit), or someone changed its affinity. Nothing runs; the helper re-pins itself or
		 * ends (src/sched/rt_clock.rs), and an overdue event is the watchdog's (B.5). */
		return TT_TICK_WRONG_CPU;
	t = bpf_map_lookup_elem(&timers, &key);
	if (!t)
		return TT_ARM_NO_TIMER;
	now = bpf_ktime_get_ns();
	arg->ticked = 0;
	if (test_fault_timer && cpu == test_fault_cpu && t->slot >= test_fault_slot) {
		/* H: the helper stalls, as one descheduled for good would: no tick from here on,
		 * and it sleeps a second at a time; the watchdog (tt_tick) must end the scheduler */
		arg->next_ns = now + TT_CLOCK_STALL_MIN_NS;
		return 0;
	}
	if (now >= t->expires_ns) {
		run_tick(t, &t->timer, cpu, now);
		arg->ticked = 1;
	}
	arg->next_ns = t->expires_ns;
	return 0;
}

/*
 * Arm the slot timer of the CPU this runs on (test-run by a thread pinned to arg->cpu).
 * Returns 0, an enum tt_arm_result, or a bpf_timer_* helper's negative errno (B.1, B.4).
 */
SEC("syscall")
int arm_timer(struct tt_arm_arg *arg)
{
	s32 cpu = bpf_get_smp_processor_id();
	u32 key = arg->cpu;
	struct tt_timer *t;
	struct tt_cpu_acct *a;
	u64 now, slot;
	int ret;

	if (cpu != arg->cpu)
		return TT_ARM_WRONG_CPU;
	if (!is_managed(cpu))
		return TT_ARM_NOT_MANAGED;
	if (!t0_ns)
		return TT_ARM_NO_T0;
	t = bpf_map_lookup_elem(&timers, &key);
	if (!t)
		return TT_ARM_NO_TIMER;
	t->disarmed = 0;
	if (!rt_clock) {
		ret = bpf_timer_init(&t->timer, &timers, CLOCK_MONOTONIC);
		if (ret && ret != -EBUSY)
			return ret;
		ret = bpf_timer_set_callback(&t->timer, slot_tick);
		if (ret)
			return ret;
	}

	now = bpf_ktime_get_ns();
	slot = now < t0_ns ? 0 : slot_of(now) + 1;
	a = &cpu_acct[cpu & (TT_MAX_CPUS - 1)];
	/*
	 * The two open records (E): the slot the first tick starts and the one running now; before
	 * t0 that is slot 1 instead, which the tick at slot 0 (closing nothing) would not open.
	 */
	acc_open(a, cpu, slot);
	acc_open(a, cpu, slot > 0 ? slot - 1 : 1);
	a->cur_slot = slot > 0 ? slot - 1 : 0;
	a->tick_slot = 0;
	t->slot = slot;
	t->expires_ns = slot_start(slot);
	t->phase = TT_PHASE_BOUNDARY;
	ret = start_timer(t, &t->timer, cpu);
	if (ret) {
		/* the scheduler is attached: it cannot run this CPU's table (B.4) */
		__sync_fetch_and_add(&cpu_stats[cpu & (TT_MAX_CPUS - 1)].timer_errors, 1);
		scx_bpf_error("slot timer of CPU %d cannot be armed for slot %llu: bpf_timer_start returned %d",
			      cpu, slot, ret);
		return ret;
	}
	__sync_fetch_and_add(&nr_arms, 1);
	return 0;
}

SEC("syscall")
int disarm_timer(struct tt_arm_arg *arg)
{
	u32 key = arg->cpu;
	struct tt_timer *t = bpf_map_lookup_elem(&timers, &key);

	if (!t)
		return -ENOENT;
	t->disarmed = 1;
	/* B.5: the helper threads have stopped; no event is due any more (the watchdog) */
	if (rt_clock) {
		t->expires_ns = 0;
		return 0;
	}
	return bpf_timer_cancel(&t->timer);
}

/*
 * Kick managed CPU arg->cpu (K: after the planner lowered its dpm_until, so that its
 * ops.dispatch re-arms a deferred tick). Test-run from the planner thread on any CPU.
 */
SEC("syscall")
int dpm_kick(struct tt_arm_arg *arg)
{
	if (!is_managed(arg->cpu))
		return TT_ARM_NOT_MANAGED;
	scx_bpf_kick_cpu(arg->cpu, 0);
	return 0;
}

/* Move the threads in @dsq that no longer belong to the plan to the housekeeping DSQ. */
static __always_inline s32 release_from(u64 dsq)
{
	struct task_struct *p;
	s32 moved = 0;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (lookup_ctx(p))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, TT_DSQ_HOUSEKEEPING, 0))
			moved++;
	}
	return moved;
}

/*
 * A task leaves the plan at run time (`scx_tt ctl remove` of a task `admit` added; F):
 * userspace has deleted its threads from task_ctx (their next enqueue routes them as any other
 * process) and test-runs this. Threads of the task still queued in its DSQ (tt) or a be DSQ
 * it used (be) would wait there for ever: move every thread there that is no longer in the
 * plan to the housekeeping DSQ, wake idle housekeeping CPUs, and kick the task's CPU so that a
 * thread of it running there now is re-enqueued. Returns how many threads were moved.
 */
SEC("syscall")
int release_task(struct tt_release_arg *arg)
{
	s32 moved = 0;
	u32 i;

	if (arg->task >= TT_MAX_TASKS)
		return -22; /* EINVAL */
	/* a DSQ iterator outside a sched_ext op needs an RCU read-side section */
	bpf_rcu_read_lock();
	moved += release_from(task_dsq(arg->task));
	moved += release_from(TT_DSQ_BE_ANY);
	if (is_managed(arg->cpu))
		moved += release_from(TT_DSQ_BE_CPU_BASE + arg->cpu);
	bpf_rcu_read_unlock();
	if (is_managed(arg->cpu))
		scx_bpf_kick_cpu(arg->cpu, SCX_KICK_PREEMPT);
	bpf_for(i, 0, nr_housekeeping) {
		if (i >= TT_MAX_CPUS)
			break;
		scx_bpf_kick_cpu(housekeeping_cpus[i], SCX_KICK_IDLE);
	}
	return moved;
}

/*
 * A task joins the plan at run time (`scx_tt ctl admit`; F): userspace has written its class and
 * CPU and its threads into task_ctx and test-runs this. A thread of it running on a housekeeping
 * CPU now would go on there until its slice ends (up to SCX_SLICE_DFL): preempt the other
 * housekeeping CPUs so that every running thread is enqueued again, a new plan thread now routed
 * to its task (D); one queued or running on the caller's CPU is caught by ops.running. Returns
 * 0, or -EINVAL for an index beyond the table.
 */
SEC("syscall")
int join_task(struct tt_release_arg *arg)
{
	s32 self = bpf_get_smp_processor_id();
	u32 i;

	if (arg->task >= TT_MAX_TASKS)
		return -22; /* EINVAL */
	/* a full barrier after userspace's task_ctx writes: a sweep that sees it sees them */
	__sync_fetch_and_add(&nr_joins, 1);
	bpf_for(i, 0, nr_housekeeping) {
		if (i >= TT_MAX_CPUS)
			break;
		/*
		 * Not the caller's own CPU: preempting the caller (scx_tt, holding its planner while
		 * it registers a task) would let every queued thread there run a slice first. A
		 * thread of the task queued in the housekeeping DSQ is moved by the next dispatch of
		 * any housekeeping CPU (sweep_joined); one already in this CPU's local DSQ is caught
		 * when it starts running (ops.running, D).
		 */
		if (housekeeping_cpus[i] != self)
			scx_bpf_kick_cpu(housekeeping_cpus[i], SCX_KICK_PREEMPT);
	}
	return 0;
}

/*
 * Move the threads of @task queued in @dsq to @to (reclass_task); whether any moved (a flag,
 * not a count: a counter would give the verifier a new state per iteration).
 */
static __always_inline bool move_threads(u64 dsq, u32 task, u64 to)
{
	struct tt_task_ctx *tctx;
	struct task_struct *p;
	bool moved = false;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		tctx = lookup_ctx(p);
		if (!tctx || tctx->task != task)
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, to, 0))
			moved = true;
	}
	return moved;
}

/*
 * An adaptive task gets (TT_CLASS_TT) or loses (TT_CLASS_BE) its reservation (F, L): its class
 * changes, its threads already queued under the old class move to the new class's DSQ (be: its
 * CPU's be DSQ; tt: its task DSQ), and its CPU is kicked so that a thread of
 * it running there is enqueued again under the new class. Idempotent: with the class unchanged
 * it only moves stragglers (a thread whose ops.enqueue read the old class while this ran) and
 * kicks only when it moved one. Returns 1 when a thread moved, 0 when none did, or -EINVAL for
 * a task that is not an adaptive task of the table or a class other than tt and be.
 */
SEC("syscall")
int reclass_task(struct tt_reclass_arg *arg)
{
	u32 task = arg->task;
	bool changed, moved;
	u64 be, from, to;
	s32 cpu;

	if (task >= nr_tasks || task >= TT_MAX_TASKS || !task_adaptive[task & (TT_MAX_TASKS - 1)])
		return -22; /* EINVAL */
	if (arg->class != TT_CLASS_TT && arg->class != TT_CLASS_BE)
		return -22;
	cpu = task_cpu[task & (TT_MAX_TASKS - 1)];
	if (!is_managed(cpu))
		return -22;
	be = TT_DSQ_BE_CPU_BASE + cpu;
	changed = task_class[task & (TT_MAX_TASKS - 1)] != arg->class;
	/*
	 * the class first, then a fetch-add (a full barrier; BPF has no 8-bit xchg): an enqueue
	 * after it routes by the new class
	 */
	task_class[task & (TT_MAX_TASKS - 1)] = arg->class;
	__sync_fetch_and_add(&nr_reclasses, 1);
	/*
	 * one queue to empty: an adaptive task has a CPU, so as be it is queued in that CPU's be
	 * DSQ only (D), never in TT_DSQ_BE_ANY. A DSQ iterator outside a sched_ext op needs an
	 * RCU read-side section.
	 */
	from = arg->class == TT_CLASS_TT ? be : task_dsq(task);
	to = arg->class == TT_CLASS_TT ? task_dsq(task) : be;
	bpf_rcu_read_lock();
	moved = move_threads(from, task, to);
	bpf_rcu_read_unlock();
	if (changed || moved)
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	return moved;
}

/* ---- routing (D) ---- */

static bool housekeeping_allowed(const struct task_struct *p)
{
	u32 i;

	bpf_for(i, 0, nr_housekeeping) {
		if (i >= TT_MAX_CPUS)
			break;
		if (bpf_cpumask_test_cpu(housekeeping_cpus[i], p->cpus_ptr))
			return true;
	}
	return false;
}

/* An allowed housekeeping CPU, idle if possible (claimed), else @prev_cpu if allowed. */
static s32 pick_housekeeping(const struct task_struct *p, s32 prev_cpu)
{
	s32 first = -1, cpu;
	u32 i;

	if (prev_cpu >= 0 && !is_managed(prev_cpu) &&
	    bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) &&
	    scx_bpf_test_and_clear_cpu_idle(prev_cpu))
		return prev_cpu;
	bpf_for(i, 0, nr_housekeeping) {
		if (i >= TT_MAX_CPUS)
			break;
		cpu = housekeeping_cpus[i];
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		if (scx_bpf_test_and_clear_cpu_idle(cpu))
			return cpu;
		if (first < 0)
			first = cpu;
	}
	if (prev_cpu >= 0 && !is_managed(prev_cpu) && bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr))
		return prev_cpu;
	return first;
}

s32 BPF_STRUCT_OPS(tt_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct tt_task_ctx *tctx = lookup_ctx(p);
	s32 cpu;

	if (tctx && tctx->task < nr_tasks) {
		/* a wakeup on its way to ops.runnable, for the block rule (I) */
		if (is_tt(tctx->task) && (wake_flags & SCX_WAKE_TTWU))
			task_rt[tctx->task & (TT_MAX_TASKS - 1)].waking_ns = bpf_ktime_get_ns();
		if (tctx->task < TT_MAX_TASKS) {
			cpu = task_cpu[tctx->task & (TT_MAX_TASKS - 1)];
			if (cpu >= 0 && bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
				return cpu;
		}
		return prev_cpu;
	}
	cpu = pick_housekeeping(p, prev_cpu);
	return cpu >= 0 ? cpu : prev_cpu;
}

static void kick_idle_housekeeping(const struct task_struct *p)
{
	s32 cpu;
	u32 i;

	bpf_for(i, 0, nr_housekeeping) {
		if (i >= TT_MAX_CPUS)
			break;
		cpu = housekeeping_cpus[i];
		if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr) && scx_bpf_test_and_clear_cpu_idle(cpu)) {
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			return;
		}
	}
}

/*
 * Count @p, a runnable thread of tt task @task, in the task's nr_runnable once (I): from
 * ops.runnable, and from ops.enqueue for a thread that joined its task while runnable (added to
 * task_ctx at run time, `scx_tt ctl admit`: a busy thread never passes ops.runnable again).
 */
static void count_runnable(struct task_struct *p, u32 task)
{
	struct tt_thread_rt *th;
	struct tt_task_rt *rt;
	u64 now;

	task &= TT_MAX_TASKS - 1;
	th = bpf_task_storage_get(&thread_rt, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!th || th->counted)
		return;
	th->task = task;
	th->counted = 1;
	rt = &task_rt[task];
	/*
	 * runnable_ns before the count (xchg: a full barrier), for readers of both (I, J); a
	 * wakeup counts from its ops.select_cpu (the thread was on its way then)
	 */
	if (rt->nr_runnable <= 0) {
		now = bpf_ktime_get_ns();
		if (rt->waking_ns && rt->waking_ns < now)
			now = rt->waking_ns;
		__sync_lock_test_and_set(&rt->runnable_ns, now);
	}
	__sync_fetch_and_add(&rt->nr_runnable, 1);
	rt->waking_ns = 0;
}

/* Be work queued for @cpu: wake it if idle, but not through a DPM idle period (K). */
static void kick_for_be(s32 cpu)
{
	u64 now = bpf_ktime_get_ns();

	if (!(started(now) && dpm_idle(cpu, slot_of(now))))
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

static void enqueue_plan(struct task_struct *p, const struct tt_task_ctx *tctx, u64 enq_flags)
{
	u32 task = tctx->task;
	s32 cpu = task_cpu[task & (TT_MAX_TASKS - 1)];
	u8 local;
	u64 now, slot;
	u32 owner;

	if (cpu >= 0 && !bpf_cpumask_test_cpu(cpu, p->cpus_ptr)) {
		__sync_fetch_and_add(&nr_affinity_conflicts, 1);
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slot_ns, enq_flags);
		return;
	}
	/*
	 * Migration disabled away from its plan CPU (or a be task of no CPU): only the CPU it is
	 * on may take it (C, "Exiting and migration-disabled tasks"). On a managed CPU it waits
	 * in that CPU's be DSQ, so that dispatch decides: it runs as be work there, never over a
	 * waiting owner. (The local DSQ with a slot's slice, as before, ran it over the owner on
	 * PREEMPT_RT, where every sleeping spinlock disables migration: a be task of no CPU, woken
	 * on CPU 1 inside such a section, ran 3.4 ms of spin-b's slot in VM test `delivery` on
	 * 6.12 PREEMPT_RT under host load.) On a housekeeping CPU it stays local.
	 */
	if (is_migration_disabled(p) && (cpu < 0 || scx_bpf_task_cpu(p) != cpu)) {
		s32 here = scx_bpf_task_cpu(p);

		if (is_managed(here)) {
			__sync_fetch_and_add(&cpu_stats[here & (TT_MAX_CPUS - 1)].pinned_be, 1);
			scx_bpf_dsq_insert(p, TT_DSQ_BE_CPU_BASE + here, slot_ns, enq_flags);
			kick_for_be(here);
			return;
		}
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slot_ns, enq_flags);
		return;
	}
	if (task_class[task & (TT_MAX_TASKS - 1)] == TT_CLASS_BE) {
		scx_bpf_dsq_insert(p, cpu >= 0 ? TT_DSQ_BE_CPU_BASE + cpu : TT_DSQ_BE_ANY,
				   slot_ns, enq_flags);
		if (cpu >= 0)
			kick_for_be(cpu);
		return;
	}
	count_runnable(p, task);
	local = task_local[task & (TT_MAX_TASKS - 1)];
	if (local == TT_LOCAL_FIFO)
		scx_bpf_dsq_insert(p, task_dsq(task), slot_ns, enq_flags);
	else
		scx_bpf_dsq_insert_vtime(p, task_dsq(task), slot_ns, local_vtime(p, tctx, local),
					 enq_flags);
	now = bpf_ktime_get_ns();
	if (cpu < 0 || cpu >= TT_MAX_CPUS || !started(now))
		return;
	/*
	 * A thread put back on its own CPU (its slice ended, a kick preempted it) needs no kick:
	 * that CPU is scheduling now and dispatch decides. Kicking there preempted the thread it
	 * picked next, which came back here and kicked again: two runnable threads of one task
	 * (a parent and its exiting child) switched every few us for a whole slot.
	 */
	if (!(enq_flags & SCX_ENQ_WAKEUP) && bpf_get_smp_processor_id() == cpu)
		return;
	slot = slot_of(now);
	owner = owner_of(cpu, slot);
	if (owner == task && !job_done(&cpu_acct[cpu], cpu, slot, task)) {
		cpu_acct[cpu].owner_ready_ns = now;
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	} else if (server_design == TT_SERVER_CRPS && owner != task && owner != TT_NO_TASK &&
		   current_deadline(task, slot) && owner_idle(&cpu_acct[cpu], cpu, slot, owner)) {
		/* it may reclaim the unused slot (C): dispatch decides, preempting be work */
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
}

void BPF_STRUCT_OPS(tt_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct tt_task_ctx *tctx = lookup_ctx(p);
	s32 cpu;

	if (tctx && tctx->task < nr_tasks) {
		enqueue_plan(p, tctx, enq_flags);
		return;
	}
	cpu = scx_bpf_task_cpu(p);
	if (is_percpu_kthread(p) || is_migration_disabled(p) || !housekeeping_allowed(p)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, is_managed(cpu) ? slot_ns : SCX_SLICE_DFL,
				   enq_flags);
		return;
	}
	if ((enq_flags & SCX_ENQ_LAST) && !is_managed(cpu)) {
		/* last runnable task of a housekeeping CPU: keep it there */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, enq_flags);
		return;
	}
	scx_bpf_dsq_insert(p, TT_DSQ_HOUSEKEEPING, SCX_SLICE_DFL, enq_flags);
	if (is_managed(cpu))
		kick_idle_housekeeping(p);
}

/* ---- dispatch (C) ---- */

/*
 * A thread that joined the plan (F, join_task) while it waited in the housekeeping DSQ would
 * wait there behind every other process, then start on a housekeeping CPU, where ops.running
 * ends its run at once (seen in the `admit` VM test on a loaded host: 54 ms in the queue, over
 * the first slots of its task, which went to be work). So after each join_task the next
 * dispatch of every housekeeping CPU sweeps the housekeeping DSQ and moves each plan thread it
 * finds to the DSQ ops.enqueue routes it to now (D: its task's DSQ, or its CPU's be DSQ), and
 * kicks that CPU (its dispatch decides whether the thread's task owns the slot). A thread the
 * move cannot serve stays: one whose affinity excludes its plan CPU or whose migration is
 * disabled (ops.running's rule, G), and one of a task that orders its own threads (a vtime
 * DSQ; the plan names those, they never join at run time).
 */
static void sweep_joined(s32 cpu)
{
	struct tt_task_ctx *tctx;
	struct task_struct *p;
	u64 joins = nr_joins;
	u32 task;
	s32 tcpu;

	if (cpu < 0 || cpu >= TT_MAX_CPUS || joins_swept[cpu & (TT_MAX_CPUS - 1)] == joins)
		return;
	joins_swept[cpu & (TT_MAX_CPUS - 1)] = joins;
	bpf_for_each(scx_dsq, p, TT_DSQ_HOUSEKEEPING, 0) {
		tctx = lookup_ctx(p);
		if (!tctx || tctx->task >= nr_tasks || tctx->task >= TT_MAX_TASKS)
			continue;
		task = tctx->task;
		tcpu = task_cpu[task & (TT_MAX_TASKS - 1)];
		if (!is_managed(tcpu) || !bpf_cpumask_test_cpu(tcpu, p->cpus_ptr) ||
		    is_migration_disabled(p))
			continue;
		if (task_class[task & (TT_MAX_TASKS - 1)] == TT_CLASS_BE) {
			if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, TT_DSQ_BE_CPU_BASE + tcpu, 0)) {
				__sync_fetch_and_add(&nr_join_moves, 1);
				scx_bpf_kick_cpu(tcpu, SCX_KICK_IDLE);
			}
			continue;
		}
		if (task_local[task & (TT_MAX_TASKS - 1)] != TT_LOCAL_FIFO)
			continue;
		/* idempotent per thread; a thread the move misses is enqueued again (and counted) */
		count_runnable(p, task);
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, task_dsq(task), 0)) {
			__sync_fetch_and_add(&nr_join_moves, 1);
			scx_bpf_kick_cpu(tcpu, SCX_KICK_PREEMPT);
		}
	}
}

/*
 * Keep @prev (still runnable, slice expired) when it is a thread of @task: refilling its slice
 * makes the kernel keep it; ops.running is not called again, so the slice is set here.
 */
static bool keep_prev(struct task_struct *prev, u32 task, u64 slice_ns)
{
	struct tt_task_ctx *tctx;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED))
		return false;
	tctx = lookup_ctx(prev);
	if (!tctx || tctx->task != task)
		return false;
	prev->scx.slice = slice_ns;
	return true;
}

static bool keep_prev_be(struct task_struct *prev, s32 cpu, u64 slice_ns)
{
	struct tt_task_ctx *tctx;
	s32 tcpu;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED))
		return false;
	tctx = lookup_ctx(prev);
	if (!tctx || tctx->task >= TT_MAX_TASKS ||
	    task_class[tctx->task & (TT_MAX_TASKS - 1)] != TT_CLASS_BE)
		return false;
	tcpu = task_cpu[tctx->task & (TT_MAX_TASKS - 1)];
	if (tcpu >= 0 && tcpu != cpu)
		return false;
	prev->scx.slice = slice_ns;
	return true;
}

/* The plan task of @prev when it is still runnable (its slice expired), else TT_NO_TASK. */
static u32 prev_task(struct task_struct *prev)
{
	struct tt_task_ctx *tctx;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED))
		return TT_NO_TASK;
	tctx = lookup_ctx(prev);
	return tctx ? tctx->task : TT_NO_TASK;
}

/*
 * Start a thread of tt task @task on this CPU for @slice_ns: the head of its DSQ, else @prev
 * when it is a runnable thread of @task. Under local scheduling (D) @prev stays when it comes
 * no later than the head in the task's order (it was preempted by a wakeup, or its slice ran
 * out).
 */
static bool run_task(u32 task, struct task_struct *prev, u64 slice_ns)
{
	struct task_struct *head;
	u64 dsq = task_dsq(task);

	if (task_local[task & (TT_MAX_TASKS - 1)] != TT_LOCAL_FIFO && prev_task(prev) == task) {
		head = __COMPAT_scx_bpf_dsq_peek(dsq);
		if (!head || !time_before(head->scx.dsq_vtime, prev->scx.dsq_vtime))
			return keep_prev(prev, task, slice_ns);
	}
	return scx_bpf_dsq_move_to_local(dsq, 0) || keep_prev(prev, task, slice_ns);
}

/*
 * crps (C): the unused time of @owner's @slot on @cpu goes to the tt task of @cpu, other than
 * @owner, whose current job has the earliest deadline among those released, not done and with
 * a runnable thread (@prev counts). The reclaimer runs to the end of the slot at most; the
 * owner's wakeup kicks the CPU and dispatch starts the owner again.
 */
static bool reclaim(s32 cpu, u64 slot, u32 owner, struct task_struct *prev, u64 now)
{
	struct tt_cpu_acct *a = &cpu_acct[cpu & (TT_MAX_CPUS - 1)];
	u32 t, best = TT_NO_TASK, from_prev = prev_task(prev);
	u64 best_dl = ~0ULL, dl;

	bpf_for(t, 0, nr_tasks) {
		if (t >= TT_MAX_TASKS)
			break;
		if (t == owner || task_class[t] != TT_CLASS_TT || task_cpu[t] != cpu)
			continue;
		dl = current_deadline(t, slot);
		if (!dl || dl >= best_dl || job_done(a, cpu, slot, t))
			continue;
		if (t != from_prev && scx_bpf_dsq_nr_queued(task_dsq(t)) <= 0)
			continue;
		best = t;
		best_dl = dl;
	}
	if (best == TT_NO_TASK)
		return false;
	return run_task(best, prev, slot_start(slot + 1) - now);
}

/*
 * Is a task of a higher sched class (stop, deadline, RT, fair) runnable on @cpu, whose rq
 * lock dispatch holds? It runs before anything dispatch would put in the local DSQ (C,
 * "Higher classes").
 */
/* 6.18 and later (7.x has no scx_bpf_cpu_rq); the flavor suffix makes it weak here */
struct rq *scx_bpf_locked_rq___tt(void) __ksym __weak;

static bool higher_class_runnable(s32 cpu)
{
	struct rq *rq = NULL;

	/* not the per-CPU variable runqueues: the 6.12 LTS build cannot resolve its address */
	if (bpf_ksym_exists(scx_bpf_locked_rq___tt))
		rq = scx_bpf_locked_rq___tt();
	else if (bpf_ksym_exists(scx_bpf_cpu_rq))
		rq = scx_bpf_cpu_rq(cpu);
	return rq && rq->nr_running > rq->scx.nr_running;
}

void BPF_STRUCT_OPS(tt_dispatch, s32 cpu, struct task_struct *prev)
{
	u64 now, slot, end;
	u32 owner;

	if (!is_managed(cpu)) {
		sweep_joined(cpu);
		if (scx_bpf_dsq_move_to_local(TT_DSQ_HOUSEKEEPING, 0))
			return;
		if (prev && (prev->scx.flags & SCX_TASK_QUEUED) && !lookup_ctx(prev))
			prev->scx.slice = SCX_SLICE_DFL;
		return;
	}

	now = bpf_ktime_get_ns();
	if (!started(now))
		return;
	/* no cpu_release will follow to take back a decision that goes stale (C) */
	if (!prev && higher_class_runnable(cpu)) {
		__sync_fetch_and_add(&cpu_stats[cpu & (TT_MAX_CPUS - 1)].higher_waits, 1);
		return;
	}
	if (dpm_enabled)
		dpm_recheck(cpu, now);
	slot = slot_of(now);
	owner = owner_of(cpu, slot);
	/* an owner whose job is done is not started until its next job starts (I) */
	if (owner != TT_NO_TASK && !job_done(&cpu_acct[cpu], cpu, slot, owner)) {
		end = run_end(cpu, slot, owner);
		if (end - now <= guard_ns)
			return;
		if (run_task(owner, prev, end - now))
			return;
	}
	if (slot_start(slot + 1) - now <= guard_ns)
		return;
	/* the owner leaves its slot unused: the server design decides (C) */
	if (owner != TT_NO_TASK && server_design == TT_SERVER_PTPS)
		return;
	if (owner != TT_NO_TASK && server_design == TT_SERVER_CRPS &&
	    reclaim(cpu, slot, owner, prev, now))
		return;
	/* DPM idle: run nothing, the core sleeps (K) */
	if (dpm_idle(cpu, slot))
		return;
	if (scx_bpf_dsq_move_to_local(TT_DSQ_BE_CPU_BASE + cpu, 0) ||
	    scx_bpf_dsq_move_to_local(TT_DSQ_BE_ANY, 0))
		return;
	keep_prev_be(prev, cpu, slot_start(slot + 1) - now);
}

/*
 * A higher sched class (the stopper `migration/N`, deadline, RT) takes a managed CPU (C,
 * "Higher classes"). The kernel has put the preempted task back at the head of the local DSQ
 * with the slice it had left, and would run it again as soon as the CPU returns, without
 * asking dispatch: a be task preempted there would go on into the next owner's slot. Hand
 * the local DSQ back to ops.enqueue (SCX_ENQ_REENQ), so the tasks return to their DSQs and
 * dispatch decides for the slot the CPU comes back in.
 */
void BPF_STRUCT_OPS(tt_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	if (!is_managed(cpu))
		return;
	__sync_fetch_and_add(&cpu_stats[cpu & (TT_MAX_CPUS - 1)].releases, 1);
	scx_bpf_reenqueue_local();
}

/*
 * The helper-thread clock's watchdog (B.5): ops.tick (the kernel's scheduler tick, on a CPU
 * running an ext task) of a managed CPU whose clock event is overdue by TT_CLOCK_STALL_SLOTS
 * slots, and at least TT_CLOCK_STALL_MIN_NS, ends the scheduler: its helper thread died or
 * cannot run, so the table is no longer enforced there. A helper that is only late ticks late
 * and skips slots (B.2e), which the records count.
 */
void BPF_STRUCT_OPS(tt_tick, struct task_struct *p)
{
	s32 cpu = bpf_get_smp_processor_id();
	u32 key = cpu;
	struct tt_timer *t;
	u64 now, stall;

	if (!rt_clock || !is_managed(cpu))
		return;
	t = bpf_map_lookup_elem(&timers, &key);
	if (!t || !t->expires_ns)
		return;
	now = bpf_ktime_get_ns();
	stall = slot_ns * TT_CLOCK_STALL_SLOTS;
	if (stall < TT_CLOCK_STALL_MIN_NS)
		stall = TT_CLOCK_STALL_MIN_NS;
	if (now > t->expires_ns + stall)
		scx_bpf_error("slot clock of CPU %d stalled: its event for slot %llu is %llu ms overdue (its helper thread died or cannot run)",
			      cpu, t->slot, (now - t->expires_ns) / 1000000);
}

/* ---- running / stopping: slices and accounting segments ---- */

/* Would starting a be task now be wrong: the slot has ticked and its owner waits? */
static bool be_over_owner(struct tt_cpu_acct *a, s32 cpu, u64 slot)
{
	struct tt_slot_acc *acc = &a->acc[slot & 1];
	u32 owner = owner_of(cpu, slot);

	return acc->open && acc->rec.slot == slot && acc->ticked && owner != TT_NO_TASK &&
	       !job_done(a, cpu, slot, owner) && scx_bpf_dsq_nr_queued(task_dsq(owner)) > 0;
}

void BPF_STRUCT_OPS(tt_running, struct task_struct *p)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct tt_task_ctx *tctx = lookup_ctx(p);
	struct tt_task_stats *ts;
	struct tt_cpu_acct *a;
	u64 now = bpf_ktime_get_ns(), slot, end;

	if (cpu < 0 || cpu >= TT_MAX_CPUS)
		return;
	a = &cpu_acct[cpu];
	charge(cpu, now);
	if (tctx && tctx->task < TT_MAX_TASKS) {
		a->cur_kind = TT_RUN_PLAN;
		a->cur_task = tctx->task;
		if ((ts = stats_of(tctx->task)))
			__sync_fetch_and_add(&ts->nr_runs, 1);
	} else if ((p->flags & PF_KTHREAD) || (tctx && tctx->task == TT_LOADER_TASK)) {
		/* the loader arming a timer here is forward progress of the scheduler itself */
		a->cur_kind = TT_RUN_KTHREAD;
		a->cur_task = TT_NO_TASK;
	} else {
		a->cur_kind = TT_RUN_FOREIGN;
		a->cur_task = TT_NO_TASK;
	}
	a->seg_start_ns = now;
	a->be_started_over_owner = false;
	a->reclaiming = false;
	a->evicting = false;

	/*
	 * A foreign task starting on a managed CPU was not routed here (D): the kernel kept it on
	 * the CPU it was running on, e.g. a task priority-inherited into the RT class (an RT waiter
	 * on a PREEMPT_RT sleeping lock it held), pulled to this CPU by RT balancing, and put back
	 * into sched_ext in place when the lock was released (ENQUEUE_RESTORE of the current task
	 * goes to the local DSQ without ops.enqueue). It would run on to the slot's end: end its run
	 * now, so that ops.enqueue routes it to the housekeeping CPUs. Not one that must stay here
	 * (migration disabled, or no housekeeping CPU in its affinity: D's local-DSQ rule).
	 */
	if (a->cur_kind == TT_RUN_FOREIGN && is_managed(cpu) && !is_migration_disabled(p) &&
	    housekeeping_allowed(p)) {
		a->evicting = true;
		__sync_fetch_and_add(&cpu_stats[cpu].evictions, 1);
		p->scx.slice = 0;
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		return;
	}

	if (!is_managed(cpu)) {
		/*
		 * A tt thread that joined the plan (F) while it waited in a housekeeping CPU's queue
		 * would run here for a whole slice: end its run at once, so that its enqueue routes it
		 * to its task (D). Not when its affinity excludes its plan CPU (G).
		 */
		if (tctx && is_tt(tctx->task)) {
			s32 own = task_cpu[tctx->task & (TT_MAX_TASKS - 1)];

			if (is_managed(own) && bpf_cpumask_test_cpu(own, p->cpus_ptr) &&
			    !is_migration_disabled(p)) {
				p->scx.slice = 0;
				scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
			}
		}
		return;
	}
	if (!started(now))
		return;
	slot = slot_of(now);
	if (tctx && tctx->task < TT_MAX_TASKS &&
	    task_class[tctx->task & (TT_MAX_TASKS - 1)] == TT_CLASS_BE)
		a->be_started_over_owner = be_over_owner(a, cpu, slot);
	if (tctx && tctx->task == owner_of(cpu, slot))
		end = run_end(cpu, slot, tctx->task);
	else
		end = slot_start(slot + 1);
	/* a tt task started in another owner's slot reclaims it (crps, C) */
	if (server_design == TT_SERVER_CRPS && tctx && is_tt(tctx->task) &&
	    owner_of(cpu, slot) != TT_NO_TASK && tctx->task != owner_of(cpu, slot))
		a->reclaiming = true;
	p->scx.slice = end > now ? end - now : 1;
}

void BPF_STRUCT_OPS(tt_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = scx_bpf_task_cpu(p);
	struct tt_cpu_acct *a;
	u64 now;

	if (cpu < 0 || cpu >= TT_MAX_CPUS)
		return;
	now = bpf_ktime_get_ns();
	charge(cpu, now);
	a = &cpu_acct[cpu];
	if (rt_clock && runnable) {
		a->preempt_kind = a->cur_kind;
		a->preempt_task = a->cur_task;
		a->preempt_reclaiming = a->reclaiming;
		a->preempt_ns = now;
	}
	a->cur_kind = TT_RUN_NONE;
	/*
	 * Preempted on a managed CPU (by a higher class: an RT task, the stopper, the slot clock's
	 * helper under B.5): back through ops.enqueue, not to the head of the local DSQ with its
	 * slice left, so dispatch decides when the CPU comes back (C, "Higher classes").
	 * ops.cpu_release re-enqueues the local DSQ too, but is not called for every preemption on
	 * every kernel: on 6.12, when fair's balance() answers for the CPU, balance_scx() never
	 * runs, rq->scx.cpu_released stays set and no later preemption calls cpu_release, so the
	 * preempted be task ran on into the next owner's slot (VM test `preempt` on the lts
	 * kernel: 506 ms of be over a waiting owner in 6 s, by the witness).
	 */
	if (runnable && is_managed(cpu))
		p->scx.slice = 0;
}

/* ---- job completion (I) ---- */

/*
 * sched_yield() of @from (@to == NULL): end of its job when it is a thread of the owner of the
 * slot in force on its CPU, with completion `yield`. Without ops.yield, sched_ext zeroes the
 * yielder's slice; it is done here too, so the task goes back to ops.enqueue and dispatch
 * decides. A directed yield_to() (@to set: KVM's pause-loop exits) is no job end and changes
 * nothing (false: not yielded).
 */
bool BPF_STRUCT_OPS(tt_yield, struct task_struct *from, struct task_struct *to)
{
	struct tt_task_stats *ts;
	struct tt_task_ctx *tctx;
	struct tt_cpu_acct *a;
	s32 cpu;
	u64 now;
	u32 task;

	if (to)
		return false;
	from->scx.slice = 0;
	tctx = lookup_ctx(from);
	if (!tctx || !is_tt(tctx->task))
		return false;
	task = tctx->task & (TT_MAX_TASKS - 1);
	cpu = bpf_get_smp_processor_id();
	now = bpf_ktime_get_ns();
	if (task_completion[task] != TT_COMPLETION_YIELD || task_cpu[task] != cpu ||
	    !is_managed(cpu) || !started(now) || task_rt[task].done)
		return false;
	a = &cpu_acct[cpu & (TT_MAX_CPUS - 1)];
	if (owner_of(cpu, a->cur_slot) != task)
		return false;
	if (task_rt[task].carry) {
		/* the end of the job that overran into this one's slots: this one goes on (I) */
		task_rt[task].carry = false;
		if ((ts = stats_of(task))) {
			__sync_fetch_and_add(&ts->jobs_done, 1);
			__sync_fetch_and_add(&ts->jobs_carried, 1);
		}
		return false;
	}
	/* the observation up to now still counts the owner available */
	charge(cpu, now);
	complete_job(a, a->cur_slot, task);
	return false;
}

/* Publish a wakeup of adaptive task @task in its ring (L). */
static void trace_wakeup(u32 task)
{
	struct tt_wake_ring *r;
	struct tt_wake_ev *ev;
	u64 now, n;
	u32 a;

	if (task >= nr_tasks || task >= TT_MAX_TASKS)
		return;
	a = task_adaptive[task & (TT_MAX_TASKS - 1)];
	if (!a || a > TT_MAX_ADAPTIVE)
		return;
	now = bpf_ktime_get_ns();
	r = &wake_rings[(a - 1) & (TT_MAX_ADAPTIVE - 1)];
	n = __sync_fetch_and_add(&r->head, 1);
	ev = &r->ev[n & (TT_WAKE_RING - 1)];
	/* a seqlock per entry: invalid, the timestamp, then valid (xchg: full barriers) */
	__sync_lock_test_and_set(&ev->seq, 0);
	ev->t_ns = now;
	__sync_lock_test_and_set(&ev->seq, n + 1);
	__sync_fetch_and_add(&r->cost_ns, bpf_ktime_get_ns() - now);
}

/*
 * A thread becomes runnable (woken, or new): count it for its tt task (I, J); a wakeup of an
 * adaptive task's thread goes to its ring (L).
 */
void BPF_STRUCT_OPS(tt_runnable, struct task_struct *p, u64 enq_flags)
{
	struct tt_task_ctx *tctx = lookup_ctx(p);
	struct tt_thread_rt *th;
	u32 task;

	if (!tctx)
		return;
	if (enq_flags & SCX_ENQ_WAKEUP)
		trace_wakeup(tctx->task);
	if (!is_tt(tctx->task))
		return;
	task = tctx->task & (TT_MAX_TASKS - 1);
	count_runnable(p, task);
	/* local EDF (D): a wakeup releases the thread's next job, due one period later */
	if (task_local[task] == TT_LOCAL_EDF && tctx->period_ns && (enq_flags & SCX_ENQ_WAKEUP) &&
	    (th = bpf_task_storage_get(&thread_rt, p, 0, 0)))
		th->deadline_ns = bpf_ktime_get_ns() + tctx->period_ns;
}

/*
 * A thread stops being runnable (blocks, exits, or leaves for a property change). On its own
 * CPU the observation is charged first, while the task still counts as runnable.
 */
void BPF_STRUCT_OPS(tt_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct tt_thread_rt *th = bpf_task_storage_get(&thread_rt, p, 0, 0);
	struct tt_task_rt *rt;
	u64 now = bpf_ktime_get_ns();
	s32 cpu;
	u32 task;

	if (!th || !th->counted)
		return;
	task = th->task & (TT_MAX_TASKS - 1);
	rt = &task_rt[task];
	cpu = bpf_get_smp_processor_id();
	if (task_cpu[task] == cpu && is_managed(cpu))
		charge(cpu, now);
	th->counted = 0;
	/* blocked_ns before the count reaches 0 (xchg: a full barrier), as in tt_runnable */
	if (rt->nr_runnable == 1)
		__sync_lock_test_and_set(&rt->blocked_ns, now);
	__sync_fetch_and_sub(&rt->nr_runnable, 1);
}

/* ---- task lifecycle ---- */

s32 BPF_STRUCT_OPS(tt_init_task, struct task_struct *p, struct scx_init_task_args *args)
{
	struct tt_task_ctx *parent, child;
	u32 parent_tid, tid;

	if (!args->fork)
		return 0;
	parent_tid = (u32)bpf_get_current_pid_tgid();
	parent = bpf_map_lookup_elem(&task_ctx, &parent_tid);
	if (!parent)
		return 0;
	child.task = parent->task;
	child.inherited = 1;
	/* unnamed until userspace reads its name (local scheduling, D) */
	child.period_ns = 0;
	tid = p->pid;
	if (!bpf_map_update_elem(&task_ctx, &tid, &child, BPF_ANY))
		__sync_fetch_and_add(&nr_inherited, 1);
	return 0;
}

void BPF_STRUCT_OPS(tt_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	struct tt_task_ctx *tctx = lookup_ctx(p);
	u32 tid = p->pid;

	if (tctx && tctx->inherited)
		bpf_map_delete_elem(&task_ctx, &tid);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(tt_init)
{
	s32 ret, cpu;
	u32 t;

	ret = scx_bpf_create_dsq(TT_DSQ_HOUSEKEEPING, -1);
	if (ret)
		return ret;
	ret = scx_bpf_create_dsq(TT_DSQ_BE_ANY, -1);
	if (ret)
		return ret;
	bpf_for(cpu, 0, TT_MAX_CPUS) {
		if (cpu >= TT_MAX_CPUS)
			break;
		if (cpu_role[cpu] != TT_CPU_MANAGED)
			continue;
		ret = scx_bpf_create_dsq(TT_DSQ_BE_CPU_BASE + cpu, -1);
		if (ret)
			return ret;
	}
	/* every index, so that a task admitted at run time has its DSQ (F) */
	bpf_for(t, 0, TT_MAX_TASKS) {
		ret = scx_bpf_create_dsq(task_dsq(t), -1);
		if (ret)
			return ret;
	}
	return 0;
}

void BPF_STRUCT_OPS(tt_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(tt_ops,
	       .select_cpu	= (void *)tt_select_cpu,
	       .enqueue		= (void *)tt_enqueue,
	       .dispatch	= (void *)tt_dispatch,
	       .cpu_release	= (void *)tt_cpu_release,
	       .tick		= (void *)tt_tick,
	       .runnable	= (void *)tt_runnable,
	       .running		= (void *)tt_running,
	       .stopping	= (void *)tt_stopping,
	       .quiescent	= (void *)tt_quiescent,
	       .yield		= (void *)tt_yield,
	       .init_task	= (void *)tt_init_task,
	       .exit_task	= (void *)tt_exit_task,
	       .init		= (void *)tt_init,
	       .exit		= (void *)tt_exit,
	       /* a task whose slice expired with nothing else runnable comes back to
		* ops.enqueue (SCX_ENQ_LAST) instead of being kept: dispatch decides (C) */
	       .flags		= SCX_OPS_ENQ_LAST,
	       .name		= "tt");
