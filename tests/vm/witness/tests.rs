use super::*;

/// A debugging aid, not a test of its own: checks the witness of a run directory left by an
/// earlier boot, e.g. `SCX_TT_WITNESS_DIR=target/vm/runs/preempt SCX_TT_WITNESS_RUN=preempt
/// cargo test --release --test vm witness::tests::run_dir -- --ignored --nocapture`
/// (`SCX_TT_WITNESS_FILES=summary.json,trace.jsonl` for other file names).
#[test]
#[ignore = "reads SCX_TT_WITNESS_DIR"]
fn run_dir() {
    let dir = std::env::var("SCX_TT_WITNESS_DIR").expect("SCX_TT_WITNESS_DIR");
    let run = std::env::var("SCX_TT_WITNESS_RUN").expect("SCX_TT_WITNESS_RUN");
    let out = crate::harness::open_run(std::path::Path::new(&dir)).unwrap();
    let allowed = out
        .number("rt_pid")
        .map(|p| vec![p as u32])
        .unwrap_or_default();
    // SCX_TT_WITNESS_FILES=SUMMARY,TRACE for other names than RUN.json, RUN.trace.jsonl
    let files = std::env::var("SCX_TT_WITNESS_FILES")
        .unwrap_or_else(|_| format!("{run}.json,{run}.trace.jsonl"));
    let (summary, trace) = files.split_once(',').expect("SUMMARY,TRACE");
    let mut c = Checks::default();
    let b = Bounds {
        allowed,
        ..Bounds::default()
    };
    check_files(&mut c, &out, &run, summary, trace, &b);
    c.finish();
}

const SW: &str = "          <idle>-0       [001] d..2.     6.321346: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=CPU 0/TCG next_pid=145 next_prio=120";

#[test]
fn lines_parse_with_spaces_in_comms() {
    let e = parse_line(SW).unwrap().unwrap();
    assert_eq!(e.ts_ns, 6_321_346_000);
    assert_eq!(e.cpu, 1);
    assert_eq!(
        e.kind,
        Kind::Switch {
            prev_pid: 0,
            prev_comm: "swapper/1".into(),
            prev_state: "R".into(),
            next_pid: 145,
            next_comm: "CPU 0/TCG".into(),
            next_prio: 120
        }
    );
    let w = "  sh-122     [000] d.s4.     6.320512: sched_wakeup: comm=kworker/0:0 pid=9 prio=120 target_cpu=000";
    assert_eq!(
        parse_line(w).unwrap().unwrap().kind,
        Kind::Wakeup { pid: 9, target: 0 }
    );
    let f = "  sh-122     [000] .....     6.320868: sched_process_fork: comm=sh pid=122 child_comm=sh child_pid=145";
    assert_eq!(
        parse_line(f).unwrap().unwrap().kind,
        Kind::Fork {
            parent: 122,
            child: 145
        }
    );
    let m = "  migration/0-21 [000] d..5. 7.000100: sched_migrate_task: comm=sh pid=74 prio=120 orig_cpu=0 dest_cpu=1";
    assert_eq!(
        parse_line(m).unwrap().unwrap().kind,
        Kind::Migrate {
            pid: 74,
            orig: 0,
            dest: 1
        }
    );
    // a wakeup without target_cpu, a migration without dest_cpu: refused, not guessed
    assert!(parse_line("  sh-1 [000] d..2. 1.000001: sched_wakeup: comm=a pid=1 prio=1").is_err());
    assert!(parse_line(
        "  sh-1 [000] d..2. 1.000001: sched_migrate_task: comm=a pid=1 prio=1 orig_cpu=0"
    )
    .is_err());
    assert!(parse_line("garbage").is_err());
    assert!(parse_line("  sh-1 [000] d..2. 1.x: sched_wakeup: comm=a pid=1 prio=1").is_err());
    assert_eq!(parse_ts("12.000001"), Some(12_000_001_000));
    assert_eq!(parse_ts("12."), None);
}

#[test]
fn percpu_kthreads_by_name() {
    assert!(is_percpu_kthread_of("ksoftirqd/1", 1));
    assert!(is_percpu_kthread_of("kworker/1:2H", 1));
    assert!(!is_percpu_kthread_of("kworker/11:2", 1));
    assert!(!is_percpu_kthread_of("kworker/u4:1", 1));
    assert!(!is_percpu_kthread_of("sh", 1));
}

/// A line of ftrace text for a switch at `us` µs on `cpu`.
fn sw(us: u64, cpu: u32, prev: (&str, u32, &str), next: (&str, u32)) -> String {
    format!(
        "  x-1 [{cpu:03}] d..2. {}.{:06}: sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> next_comm={} next_pid={} next_prio=120",
        us / 1_000_000,
        us % 1_000_000,
        prev.0,
        prev.1,
        prev.2,
        next.0,
        next.1
    )
}

/// Kthread and clock-thread time on the managed CPUs, cut to the window: by hand, run by
/// run (CPU 1 managed, CPU 0 not; window [1 ms, 9 ms)).
#[test]
fn taken_counts_kthreads_and_the_clock_thread_on_managed_cpus_within_the_window() {
    let lines = [
        // CPU 1: busy 0-2 ms (tt), ksoftirqd/1 2-3, tt-clock/1 3-3.5, tt-clock/0 (another
        // CPU's clock: neither) 3.5-4, kworker pid 50 (a kthreadd child) 4-6, idle 6-8,
        // migration/1 8-10 (1 ms of it inside the window)
        sw(0, 1, ("swapper/1", 0, "R"), ("busy", 10)),
        sw(2_000, 1, ("busy", 10, "R"), ("ksoftirqd/1", 20)),
        sw(3_000, 1, ("ksoftirqd/1", 20, "S"), ("tt-clock/1", 30)),
        sw(3_500, 1, ("tt-clock/1", 30, "S"), ("tt-clock/0", 31)),
        sw(4_000, 1, ("tt-clock/0", 31, "S"), ("unbound", 50)),
        sw(6_000, 1, ("unbound", 50, "S"), ("swapper/1", 0)),
        sw(8_000, 1, ("swapper/1", 0, "R"), ("migration/1", 60)),
        sw(10_000, 1, ("migration/1", 60, "S"), ("busy", 10)),
        // CPU 0 (housekeeping): a kthread there counts for nothing
        sw(1_000, 0, ("swapper/0", 0, "R"), ("ksoftirqd/0", 21)),
        sw(5_000, 0, ("ksoftirqd/0", 21, "S"), ("swapper/0", 0)),
    ];
    let events = parse(&lines.join("\n")).unwrap();
    let t = taken_from(&events, &HashSet::from([50]), &[1], (1_000_000, 9_000_000));
    assert_eq!(
        t,
        Taken {
            kthread_ns: 1_000_000 + 2_000_000 + 1_000_000,
            clock_ns: 500_000
        }
    );
    // 4.5 ms of 45 ms planned: 10 %
    assert!((t.bound(90.0, 45_000_000) - 80.0).abs() < 1e-9);
    assert!(t.explain(90.0, 45_000_000).contains("90 less 10.0 %"));
}

/// A BPF timer's hrtimer expiring at `us` µs on `cpu`.
fn timer(us: u64, cpu: u32) -> String {
    format!(
        "  <idle>-0 [{cpu:03}] d.h2. {}.{:06}: hrtimer_expire_entry: hrtimer=00000000a1b2c3d4 function=bpf_timer_cb now={}",
        us / 1_000_000,
        us % 1_000_000,
        us * 1000
    )
}

fn wake(us: u64, pid: u32) -> String {
    format!(
        "  x-1 [000] d..2. {}.{:06}: sched_wakeup: comm=t pid={pid} prio=120 target_cpu=001",
        us / 1_000_000,
        us % 1_000_000
    )
}

/// t0 = 1 s, slots of 10 ms, CPU 1 managed; task a (tid 10) owns even slots, b (be, tid
/// 20); slot 0..4 recorded with ran_ns.
fn frame(ran: [u64; 2]) -> Frame {
    let mut f = Frame {
        t0_ns: 1_000_000_000,
        slot_ns: 10_000_000,
        end_ns: 1_040_000_000,
        managed: vec![1],
        ..Frame::default()
    };
    f.tasks.insert("a".into(), ("tt".into(), Some(1)));
    f.tasks.insert("b".into(), ("be".into(), None));
    f.tids.insert(10, "a".into());
    f.tids.insert(20, "b".into());
    for s in 0..4u64 {
        let own = (s % 2 == 0).then(|| "a".to_string());
        if own.is_some() {
            f.ran_ns.insert((1, s), ran[(s / 2) as usize]);
        }
        f.owners.insert((1, s), own);
    }
    f
}

fn run(f: &Frame, lines: &[String]) -> Report {
    f.analyse(&parse(&lines.join("\n")).unwrap())
}

#[test]
fn an_exact_run_passes_and_figures_add_up() {
    // a runs slots 0 and 2 fully (1.000-1.010, 1.020-1.030), b the others
    let l = [
        sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
        sw(1_010_000, 1, ("a", 10, "R"), ("b", 20)),
        sw(1_020_000, 1, ("b", 20, "R"), ("a", 10)),
        sw(1_030_000, 1, ("a", 10, "R"), ("b", 20)),
    ];
    let r = run(&frame([10_000_000, 10_000_000]), &l);
    let a = &r.tt["a"];
    assert_eq!(
        (a.run_ns, a.inside_ns, a.outside_ns, a.off_managed_ns),
        (20_000_000, 20_000_000, 0, 0)
    );
    assert_eq!(r.foreign_ns[&1], 0);
    assert!(r.be_over_owner.is_empty());
    assert_eq!(r.diffs, vec![(1, 2, 0, 1, 0)], "slot 2, one switch in it");
    assert_eq!(r.slot0, vec![(1, 0)], "slot 0 apart");
    assert_eq!(r.unrecorded_slots, 0);
}

/// An ending owner's run past its boundary is the platform's until the scheduler's timer
/// fired (by the kernel's trace) and KICK_NS after; the rest is the scheduler's. A timer
/// that is not a BPF timer's explains nothing.
#[test]
fn an_owner_past_a_late_timer_is_explained_until_the_timer_fired() {
    // a owns slot 0 and runs 3 ms into slot 1 (1.010-1.013), then b runs
    let base = vec![
        sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
        sw(1_013_000, 1, ("a", 10, "R"), ("b", 20)),
        sw(1_020_000, 1, ("b", 20, "R"), ("a", 10)),
        sw(1_030_000, 1, ("a", 10, "R"), ("b", 20)),
    ];
    let f = frame([13_000_000, 10_000_000]);
    let with = |extra: &[String], f: &Frame| {
        let mut l = base.clone();
        l.extend_from_slice(extra);
        run(f, &l)
    };
    // no timer in the trace: all 3 ms are the scheduler's
    let r = with(&[], &f);
    assert_eq!(
        (r.tt["a"].outside_ns, r.tt["a"].late_timer_ns, r.timers),
        (3_000_000, 0, 0)
    );
    // the slot-1 timer fired 2.8 ms late: the run until then + 0.2 ms is explained
    let r = with(&[timer(1_012_800, 1)], &f);
    assert_eq!(r.tt["a"].late_timer_ns, 3_000_000);
    assert_eq!(r.kick, vec![200_000]);
    assert_eq!(
        r.tick_late,
        vec![2_800_000],
        "slot 1's timer; slots 2, 3 have none"
    );
    // it fired on time: KICK_NS of the 3 ms is explained, the rest is the scheduler's
    let r = with(&[timer(1_010_000, 1)], &f);
    assert_eq!(r.tt["a"].late_timer_ns, KICK_NS);
    // another hrtimer (not bpf_timer_cb), or one on another CPU, explains nothing
    let other = "  <idle>-0 [001] d.h2. 1.012800: hrtimer_expire_entry: hrtimer=00000000a1b2c3d4 function=tick_nohz_handler now=1012800000".to_string();
    let r = with(&[other, timer(1_012_800, 0)], &f);
    assert_eq!((r.tt["a"].late_timer_ns, r.timers), (0, 1));
    // with a 1 ms guard band, the guard timer fired on time at 1.009 s: the owner should
    // have stopped then; only until the boundary + KICK_NS is explained
    let mut fg = f.clone();
    fg.guard_ns = 1_000_000;
    let r = with(&[timer(1_009_000, 1), timer(1_012_800, 1)], &fg);
    assert_eq!(r.tt["a"].late_timer_ns, KICK_NS);
    // the guard timer itself came late: explained until it fired
    let r = with(&[timer(1_012_800, 1)], &fg);
    assert_eq!(r.tt["a"].late_timer_ns, 3_000_000);
    // a run in the middle of a slot it does not own is never explained: a in slot 3
    let mut l = base.clone();
    l.pop();
    l.push(sw(1_030_000, 1, ("a", 10, "R"), ("b", 20)));
    l.push(sw(1_035_000, 1, ("b", 20, "R"), ("a", 10)));
    l.push(sw(1_036_000, 1, ("a", 10, "R"), ("b", 20)));
    l.push(timer(1_034_900, 1));
    let r = run(&f, &l);
    assert_eq!(r.tt["a"].outside_ns, 4_000_000);
    assert_eq!(
        r.tt["a"].late_timer_ns, 0,
        "slot 1's first timer is in slot 3, too late to explain; slot 3's run is mid-slot"
    );
    // record agreement: slot 2's timer 300 us late and slot 3's on time give the record of
    // slot 2 a 300 us tolerance more
    let r = with(&[timer(1_020_300, 1), timer(1_030_000, 1)], &f);
    assert_eq!(r.diffs, vec![(1, 2, 0, 1, 300_000)]);
}

#[test]
fn a_foreign_task_in_a_higher_class_is_printed_apart() {
    // sh (pid 99) switched in on CPU 1 at prio 98: priority-inherited into the RT class
    // (PREEMPT_RT), out of sched_ext's hands; the same run at prio 120 is foreign
    let boosted = |prio: u32| {
        vec![
            sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
            format!("  x-1 [001] d..2. 1.010500: sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=sh next_pid=99 next_prio={prio}"),
            sw(1_011_500, 1, ("sh", 99, "S"), ("a", 10)),
            sw(1_020_000, 1, ("a", 10, "S"), ("swapper/1", 0)),
        ]
    };
    let f = frame([10_000_000, 9_900_000]);
    let r = run(&f, &boosted(98));
    assert_eq!((r.foreign_ns[&1], r.higher_class_ns[&1]), (0, 1_000_000));
    assert_eq!(
        r.higher_class_top,
        vec![(1, "sh".to_string(), 99, 1_000_000)]
    );
    let r = run(&f, &boosted(120));
    assert_eq!(r.foreign_ns[&1], 1_000_000);
    assert!(r.higher_class_ns.is_empty());
}

#[test]
fn each_violation_is_seen() {
    // slot 2: b is switched in at 1.0215 s although a was woken at 1.020 s (1.5 ms
    // waiting); a runs only from 1.025 s, while the record claims 9.9 ms; a
    // foreign sh runs 1 ms in slot 1; a runs 0.5 ms into slot 1 (outside) and on CPU 0.
    let l = [
        sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
        "  migration/0-21 [000] d..5. 1.010000: sched_migrate_task: comm=sh pid=99 prio=120 orig_cpu=0 dest_cpu=1".into(),
        sw(1_010_500, 1, ("a", 10, "S"), ("sh", 99)),
        sw(1_011_500, 1, ("sh", 99, "S"), ("b", 20)),
        wake(1_020_000, 10),
        sw(1_020_000, 1, ("b", 20, "R"), ("migration/1", 15)),
        sw(1_021_500, 1, ("migration/1", 15, "S"), ("b", 20)),
        sw(1_025_000, 1, ("b", 20, "R"), ("a", 10)),
        sw(1_030_000, 1, ("a", 10, "R"), ("ksoftirqd/1", 16)),
        sw(1_030_100, 1, ("ksoftirqd/1", 16, "S"), ("swapper/1", 0)),
        sw(1_035_000, 0, ("swapper/0", 0, "R"), ("a", 11)),
        "  x-1 [000] ..... 1.001000: sched_process_fork: comm=a pid=10 child_comm=a child_pid=11".into(),
        sw(1_036_000, 0, ("a", 11, "S"), ("swapper/0", 0)),
    ];
    let mut f = frame([10_000_000, 9_900_000]);
    let r = run(&f, &l);
    let a = &r.tt["a"];
    assert_eq!(a.outside_ns, 500_000);
    assert_eq!(a.off_managed_ns, 1_000_000, "the forked thread 11 on CPU 0");
    assert_eq!(r.foreign_ns[&1], 1_000_000);
    assert_eq!(r.foreign_top[0], (1, "sh".to_string(), 99, 1_000_000));
    // how it came: its one run, from 10.5 ms after t0, after the kernel moved it to CPU 1
    let how = &r.foreign_how[0];
    assert!(
        how.starts_with("sh 99 on CPU 1: 1 runs, the first from +10.500 ms"),
        "{how}"
    );
    assert!(
        how.contains("+10.000 ms [0] Migrate { pid: 99, orig: 0, dest: 1 }"),
        "{how}"
    );
    assert!(
        how.ends_with("next_pid: 99, next_comm: \"sh\", next_prio: 120 }"),
        "{how}"
    );
    assert_eq!(r.kthread_ns[&1], 1_600_000);
    assert_eq!(r.be_over_owner.len(), 1);
    let b = &r.be_over_owner[0];
    assert_eq!(
        (b.slot, b.owner_waited_ns, b.ran_ns),
        (2, 1_500_000, 3_500_000)
    );
    // record 2 claims 9.9 ms, the witness saw 5 ms
    assert_eq!(r.diffs[0], (1, 2, 4_900_000, 3, 0));
    // the same be start within the race window is not a violation
    let mut l2 = l.clone();
    l2[4] = wake(1_021_400, 10);
    let r2 = run(&f, &l2);
    assert!(r2.be_over_owner.is_empty());
    assert_eq!(r2.be_near_race, 1);
    // a be start before the slot's late tick is BPF still enforcing the slot before:
    // counted apart; a tick that came before the be start leaves it judged
    let mut ft = f.clone();
    ft.late_ns.insert((1, 2), 2_000_000);
    let rt = run(&ft, &l);
    assert!(rt.be_over_owner.is_empty());
    assert_eq!(rt.be_before_tick, 1);
    ft.late_ns.insert((1, 2), 1_000_000);
    assert_eq!(run(&ft, &l).be_over_owner.len(), 1);
    // an owner whose job is over by its own log (it yielded) is not owed the CPU
    let mut fd = f.clone();
    fd.done
        .insert("a".into(), vec![(1_019_000_000, 1_030_000_000)]);
    let rd = run(&fd, &l);
    assert!(rd.be_over_owner.is_empty());
    assert_eq!(rd.be_after_done, 1);
    // a window that ends before the be start changes nothing
    fd.done
        .insert("a".into(), vec![(1_019_000_000, 1_021_000_000)]);
    assert_eq!(run(&fd, &l).be_over_owner.len(), 1);
    // an adaptive owner that BPF had in class be then is counted apart, not judged
    let mut fb = f.clone();
    fb.be_class
        .insert("a".into(), vec![(1_019_000_000, 1_030_000_000)]);
    let rb = run(&fb, &l);
    assert!(rb.be_over_owner.is_empty());
    assert_eq!(rb.be_over_be_class, 1);
    fb.be_class
        .insert("a".into(), vec![(1_019_000_000, 1_021_000_000)]);
    assert_eq!(run(&fb, &l).be_over_owner.len(), 1);
    // the starting task adaptive and in class tt then (outside its be windows): judged
    // as tt by its outside share, counted apart; inside a be window it is be work
    let mut fa = f.clone();
    fa.be_class.insert("b".into(), vec![(0, 1_019_000_000)]);
    let ra = run(&fa, &l);
    assert!(ra.be_over_owner.is_empty());
    assert_eq!(ra.adaptive_in_tt, 1);
    fa.be_class.insert("b".into(), vec![(0, 1_030_000_000)]);
    assert_eq!(run(&fa, &l).be_over_owner.len(), 1);
    // the starting task another tt task of the CPU: a tt start over the waiting owner,
    // counted apart from the be starts, with its run
    let mut fo = f.clone();
    fo.tasks.insert("b".into(), ("tt".into(), Some(1)));
    let ro = run(&fo, &l);
    assert!(ro.be_over_owner.is_empty());
    assert_eq!(ro.tt_over_owner.len(), 1);
    let t = &ro.tt_over_owner[0];
    assert_eq!((t.be.as_str(), t.owner.as_str(), t.slot), ("b", "a", 2));
    assert_eq!(t.ran_ns, 3_500_000);
    // in its own slot a tt task's start is none of that
    fo.owners.insert((1, 2), Some("b".into()));
    assert!(run(&fo, &l).tt_over_owner.is_empty());
    // a kernel thread by pid (not per-CPU by name) is printed apart, not foreign
    let mut fk = f.clone();
    fk.kthreads.insert(99);
    let rk = run(&fk, &l);
    assert_eq!((rk.foreign_ns[&1], rk.other_kthread_ns[&1]), (0, 1_000_000));
    // declaring sh allowed moves its time out of foreign
    f.allowed.insert(99);
    let r3 = run(&f, &l);
    assert_eq!((r3.foreign_ns[&1], r3.allowed_ns[&1]), (0, 1_000_000));
    // and the checks fail on the first run's figures
    let mut c = Checks::default();
    let tight = Bounds {
        outside_share: 0.01,
        ..Bounds::default()
    };
    report(&mut c, "t", &frame([0, 0]), &r, &tight);
    let fails = c.failures().join("\n");
    for what in [
        "foreign 1.000 ms",
        "housekeeping",
        "1 starts",
        "other slots",
        "beyond",
    ] {
        assert!(fails.contains(what), "{what} not in {fails}");
    }
}

#[test]
fn a_marked_pause_is_not_judged() {
    // sh (foreign) runs in slot 1 between the pause and resume marks: not judged; the
    // same run without marks fails
    let mark = |us: u64, m: &str| {
        format!(
            "  sh-5 [000] ..... {}.{:06}: tracing_mark_write: tt-witness {m}",
            us / 1_000_000,
            us % 1_000_000
        )
    };
    let l = [
        sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
        mark(1_009_000, "pause"),
        sw(1_010_000, 1, ("a", 10, "R"), ("sh", 99)),
        sw(1_019_000, 1, ("sh", 99, "S"), ("swapper/1", 0)),
        mark(1_019_500, "resume"),
        sw(1_020_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
        sw(1_030_000, 1, ("a", 10, "R"), ("swapper/1", 0)),
    ];
    let f = frame([10_000_000, 10_000_000]);
    let r = run(&f, &l);
    assert_eq!(r.foreign_ns[&1], 0);
    assert_eq!(r.paused_ns, 10_500_000);
    assert_eq!(
        r.tt["a"].inside_ns, 10_000_000,
        "slot 0 was paused too, slot 2 judged"
    );
    let unmarked: Vec<String> = l
        .iter()
        .filter(|x| !x.contains("tt-witness"))
        .cloned()
        .collect();
    assert_eq!(run(&f, &unmarked).foreign_ns[&1], 9_000_000);
    // other markers are ignored
    let other = "  sh-5 [000] ..... 1.000001: tracing_mark_write: hello";
    assert_eq!(parse_line(other).unwrap(), None);
}

#[test]
fn a_blocked_owner_lets_be_start() {
    // a blocks at 1.001 (state S): b may run the rest of slot 0; a wakes at 1.005 and b
    // is already running: no start, no violation
    let l = [
        sw(1_000_000, 1, ("swapper/1", 0, "R"), ("a", 10)),
        sw(1_001_000, 1, ("a", 10, "S"), ("b", 20)),
        wake(1_005_000, 10),
        sw(1_005_100, 1, ("b", 20, "R"), ("a", 10)),
    ];
    let r = run(&frame([5_000_000, 0]), &l);
    assert!(r.be_over_owner.is_empty(), "{:?}", r.be_over_owner);
    assert_eq!(r.tt["a"].inside_ns, 1_000_000 + 4_900_000 + 10_000_000);
}
