//! The task table at run time: local scheduling's thread periods, tasks added, released and
//! reclassed, the wakeup rings of adaptive tasks, and the SEC("syscall") programs that move
//! their threads.

use super::{map_err, LoadError, Scheduler};
use crate::abi::{self, MAX_TASKS};
use crate::plan::Class;
use crate::sched::config::SchedConfig;
use libbpf_rs::{MapCore, MapFlags, ProgramInput};

impl Scheduler<'_> {
    /// Local scheduling (src/bpf/tt_sched.bpf.c D): give every thread in the task map whose
    /// task schedules its own threads the period of the workload thread its name (or tid) says
    /// now — a thread forked after load, or renamed since, starts unnamed (0: last). Returns
    /// how many entries changed. Reads every entry of the map: call it only when
    /// [`SchedConfig::has_local`].
    pub fn refresh_local(&mut self, cfg: &SchedConfig) -> Result<usize, LoadError> {
        let map = &self.skel.maps.task_ctx;
        let mut changed = 0;
        let keys: Vec<Vec<u8>> = map.keys().collect();
        for key in keys {
            let Ok(tid_bytes) = <[u8; 4]>::try_from(key.as_slice()) else {
                continue;
            };
            let tid = u32::from_ne_bytes(tid_bytes);
            let Ok(Some(value)) = map.lookup(&key, MapFlags::ANY) else {
                continue;
            };
            let Ok(bytes) = <[u8; 16]>::try_from(value.as_slice()) else {
                continue;
            };
            // SAFETY: tt_task_ctx is plain old data of the size checked in abi.rs.
            let mut ctx: abi::tt_task_ctx = unsafe { std::mem::transmute(bytes) };
            let task = ctx.task as usize;
            if cfg.local.get(task).is_none_or(Option::is_none) {
                continue;
            }
            let period = cfg.thread_period_ns(task, tid, thread_comm(tid).as_deref());
            if period == ctx.period_ns {
                continue;
            }
            ctx.period_ns = period;
            // SAFETY: as above.
            let bytes: [u8; 16] = unsafe { std::mem::transmute(ctx) };
            // BPF_EXIST: a thread that exited meanwhile (exit_task deleted it) stays deleted
            if map.update(&key, &bytes, MapFlags::EXIST).is_ok() {
                changed += 1;
            }
        }
        Ok(changed)
    }

    /// Task `index` (added at run time, [`Self::add_task`]) leaves the plan
    /// (src/bpf/tt_sched.bpf.c F): every thread of it in the task map is deleted (those forked
    /// since too), then BPF moves the ones still queued on a managed CPU's queues to the
    /// housekeeping CPUs. Returns (threads deleted from the map, threads BPF moved).
    pub fn release_task(
        &mut self,
        index: usize,
        cpu: Option<u32>,
    ) -> Result<(usize, u32), LoadError> {
        let map = &self.skel.maps.task_ctx;
        let mut deleted = 0;
        let keys: Vec<Vec<u8>> = map.keys().collect();
        for key in keys {
            let Ok(Some(value)) = map.lookup(&key, MapFlags::ANY) else {
                continue;
            };
            let Ok(bytes) = <[u8; 16]>::try_from(value.as_slice()) else {
                continue;
            };
            // SAFETY: tt_task_ctx is plain old data of the size checked in abi.rs.
            let ctx: abi::tt_task_ctx = unsafe { std::mem::transmute(bytes) };
            if ctx.task as usize == index && map.delete(&key).is_ok() {
                deleted += 1;
            }
        }
        let moved = run_task_prog(&self.skel.progs.release_task, "release_task", index, cpu)?;
        Ok((deleted, moved))
    }

    /// The task index the next [`Self::add_task`] gets (the tasks so far: the plan's, then those
    /// admitted at run time).
    pub fn nr_tasks(&mut self) -> Result<usize, LoadError> {
        Ok(self.bss_mut()?.nr_tasks as usize)
    }

    /// Adds a task at index [`Self::nr_tasks`] (src/bpf/tt_sched.bpf.c F): its class, CPU and
    /// completion first, then `nr_tasks` raised, then its threads into the task map. Returns
    /// the index. A failure leaves BPF without the task's threads (they stay outside the plan).
    pub fn add_task(
        &mut self,
        class: Class,
        cpu: Option<u32>,
        completion: crate::plan::Completion,
        tids: &[u32],
    ) -> Result<usize, LoadError> {
        let bss = self.bss_mut()?;
        let index = bss.nr_tasks as usize;
        if index >= MAX_TASKS {
            return Err(LoadError::Map {
                map: "task table",
                msg: format!("{index} tasks: the BPF task table holds at most {MAX_TASKS}"),
            });
        }
        bss.task_class[index] = class_abi(class);
        bss.task_cpu[index] = cpu.map_or(-1, |c| c as i32);
        bss.task_completion[index] = completion.abi();
        bss.task_adaptive[index] = match class {
            Class::Adaptive => next_wake_ring(&bss.task_adaptive[..index])?,
            _ => 0,
        };
        // the entries before the count (F): a reader that sees the index sees them
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: a u32 of the mmapped .bss that BPF reads; a volatile store.
        unsafe { std::ptr::write_volatile(&mut bss.nr_tasks, index as u32 + 1) };
        for &tid in tids {
            let ctx = abi::tt_task_ctx {
                task: index as u32,
                inherited: 0,
                period_ns: 0,
            };
            // SAFETY: tt_task_ctx is plain old data of the size checked in abi.rs.
            let bytes: [u8; 16] = unsafe { std::mem::transmute(ctx) };
            self.skel
                .maps
                .task_ctx
                .update(&tid.to_ne_bytes(), &bytes, MapFlags::ANY)
                .map_err(map_err("task_ctx"))?;
        }
        // a thread running on a housekeeping CPU now is enqueued again, as a plan thread
        run_task_prog(&self.skel.progs.join_task, "join_task", index, cpu)?;
        Ok(index)
    }

    /// Adaptive task `index` gets (`Class::Tt`) or loses (`Class::Be`) its reservation
    /// (src/bpf/tt_sched.bpf.c F, `reclass_task`): its class changes and its queued threads
    /// move to the new class's queue. Called again with the same class, it moves the threads an
    /// enqueue racing with the change left in the old queue. Returns 1 when a thread moved, 0
    /// when none did; an error for a task that is not adaptive (BPF refuses it, -EINVAL) or
    /// another class.
    pub fn reclass_task(&mut self, index: usize, class: Class) -> Result<u32, LoadError> {
        if !matches!(class, Class::Tt | Class::Be) {
            return Err(LoadError::Map {
                map: "reclass_task",
                msg: format!(
                    "task {index}: class {class:?}: an adaptive task is reclassed to tt or be only"
                ),
            });
        }
        let arg = abi::tt_reclass_arg {
            task: index as u32,
            class: class_abi(class) as u32,
        };
        run_prog_with(&self.skel.progs.reclass_task, "reclass_task", index, arg)
    }

    /// The wakeup ring of adaptive task `task` (src/bpf/tt_sched.bpf.c L), in the mmapped
    /// .bss; `None` for a task that is not adaptive (or an index past the table).
    pub fn wake_ring(&self, task: usize) -> Option<&crate::sched::wake::WakeRing> {
        let bss = self.skel.maps.bss_data.as_deref()?;
        // SAFETY: a u8 BPF never writes; userspace wrote it before nr_tasks covered the task.
        let a = unsafe { std::ptr::read_volatile(bss.task_adaptive.get(task)?) } as usize;
        let ring = bss.wake_rings.get(a.checked_sub(1)?)?;
        // SAFETY: tt_wake_ring is u64s only, laid out as WakeRing (sizes asserted in
        // sched::wake); BPF writes it concurrently, which WakeRing reads as atomics.
        Some(unsafe { &*(ring as *const _ as *const crate::sched::wake::WakeRing) })
    }
}

/// The name of thread `tid` (`/proc/<tid>/comm`), `None` when it is gone.
pub(super) fn thread_comm(tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

/// The `task_adaptive` value of the next adaptive task after `before` (src/bpf/tt_sched.bpf.c
/// L): its wakeup ring + 1, rings given in task order.
pub(super) fn next_wake_ring(before: &[u8]) -> Result<u8, LoadError> {
    let used = before.iter().filter(|&&a| a != 0).count();
    if used >= abi::MAX_ADAPTIVE {
        return Err(LoadError::Map {
            map: "wake_rings",
            msg: format!(
                "adaptive task {}: the BPF scheduler traces at most {} adaptive tasks \
                 (TT_MAX_ADAPTIVE)",
                used + 1,
                abi::MAX_ADAPTIVE
            ),
        });
    }
    Ok(used as u8 + 1)
}

pub(super) fn class_abi(class: Class) -> u8 {
    (match class {
        Class::Tt => abi::tt_class_TT_CLASS_TT,
        // an adaptive task is best effort until the supervisor grants it a reservation
        Class::Be | Class::Adaptive => abi::tt_class_TT_CLASS_BE,
    }) as u8
}

/// Test-runs the SEC("syscall") task program `prog` (`release_task`, `join_task`; src/bpf/
/// tt_sched.bpf.c F) for task `index` on `cpu`: its non-negative return value, or an error
/// naming the program.
fn run_task_prog(
    prog: &libbpf_rs::ProgramMut<'_>,
    name: &'static str,
    index: usize,
    cpu: Option<u32>,
) -> Result<u32, LoadError> {
    let arg = abi::tt_release_arg {
        task: index as u32,
        cpu: cpu.map_or(-1, |c| c as i32),
    };
    run_prog_with(prog, name, index, arg)
}

/// Test-runs the SEC("syscall") program `prog` for task `index` with context `arg` (an
/// 8-byte struct of src/bpf/intf.h): its non-negative return value, or an error naming the
/// program.
fn run_prog_with<T: Copy>(
    prog: &libbpf_rs::ProgramMut<'_>,
    name: &'static str,
    index: usize,
    mut arg: T,
) -> Result<u32, LoadError> {
    // SAFETY: `arg` is a plain-old-data context struct of intf.h; the program reads its bytes
    // and nothing beyond them.
    let ctx =
        unsafe { std::slice::from_raw_parts_mut(&mut arg as *mut T as *mut u8, size_of_val(&arg)) };
    let input = ProgramInput {
        context_in: Some(ctx),
        ..Default::default()
    };
    let out = prog.test_run(input).map_err(map_err(name))?;
    u32::try_from(out.return_value as i32).map_err(|_| LoadError::Map {
        map: name,
        msg: format!(
            "task {index}: the BPF program returned {}",
            out.return_value as i32
        ),
    })
}
