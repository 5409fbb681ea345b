//! Tests of the power policies and of [`super::events_from_sim`].

use super::*;
use crate::demos::config::Source;
use crate::demos::sim::{simulate, SimOptions};

fn cfg(yaml: &str) -> Config {
    Config::from_yaml(yaml, Source::Inline).unwrap()
}

/// i.MX8QM: A53 cluster (CPUs 0-3) and A72 cluster (CPUs 4-5).
fn imx8() -> Vec<Domain> {
    vec![
        Domain {
            id: 0,
            cpus: CpuSet::from_cpus(0..4),
            min_khz: 600_000,
            max_khz: 1_200_000,
            available_khz: Some(vec![600_000, 896_000, 1_104_000, 1_200_000]),
        },
        Domain {
            id: 4,
            cpus: CpuSet::from_cpus(4..6),
            min_khz: 600_000,
            max_khz: 1_596_000,
            available_khz: Some(vec![600_000, 1_056_000, 1_296_000, 1_596_000]),
        },
    ]
}

#[test]
fn parses_names_like_demos_and_refuses_others_listing_the_valid_ones() {
    assert_eq!(PowerPolicy::parse("minbe"), Ok(PowerPolicy::MinBe));
    assert_eq!(PowerPolicy::parse("MinBE"), Ok(PowerPolicy::MinBe));
    assert_eq!(PowerPolicy::parse(""), Ok(PowerPolicy::None));
    assert_eq!(PowerPolicy::parse("none"), Ok(PowerPolicy::None));
    assert_eq!(
        PowerPolicy::parse("imx8_per_process"),
        Ok(PowerPolicy::PerProcess)
    );
    assert_eq!("high".parse::<PowerPolicy>(), Ok(PowerPolicy::High));
    let e = PowerPolicy::parse("turbo").unwrap_err().to_string();
    assert!(e.contains("\"turbo\""), "{e}");
    for n in POLICY_NAMES {
        assert!(e.contains(n), "{e}");
    }
    let e = PowerPolicy::parse("minbe:").unwrap_err().to_string();
    assert!(e.contains("takes no arguments, got 1"), "{e}");
    let e = PowerPolicy::parse("low:1,2").unwrap_err().to_string();
    assert!(e.contains("got 2"), "{e}");
    let e = PowerPolicy::parse("imx8_fixed:1,2")
        .unwrap_err()
        .to_string();
    assert!(e.contains("i.MX8-only"), "{e}");
}

#[test]
fn minbe_low_high_write_every_active_domain() {
    let c = cfg("{windows: [{length: 10, sc_processes: a}]}");
    let mut ds = imx8();
    ds.push(Domain {
        id: 6,
        cpus: CpuSet::EMPTY,
        min_khz: 1,
        max_khz: 2,
        available_khz: None,
    });
    let all = CpuSet::first_n(6);
    let mut e = PowerEngine::new(PowerPolicy::MinBe, ds.clone(), &c, all).unwrap();
    let w = |d, khz| Write { domain: d, khz };
    assert_eq!(
        e.on_event(&Event::Init).unwrap(),
        [w(0, 1_200_000), w(4, 1_596_000)]
    );
    assert_eq!(
        e.on_event(&Event::BeStart { window: 0 }).unwrap(),
        [w(0, 600_000), w(4, 600_000)]
    );
    assert_eq!(e.cpu_khz(5), Some(600_000));
    assert_eq!(e.on_event(&Event::WindowStart { window: 0 }).unwrap(), []);
    assert_eq!(e.on_event(&Event::ScStart { window: 0 }).unwrap().len(), 2);
    assert_eq!(e.cpu_khz(1), Some(1_200_000));
    assert_eq!(e.cpu_khz(6), None);
    let mut l = PowerEngine::new(PowerPolicy::Low, ds.clone(), &c, all).unwrap();
    assert_eq!(
        l.on_event(&Event::Init).unwrap(),
        [w(0, 600_000), w(4, 600_000)]
    );
    assert_eq!(l.on_event(&Event::ScStart { window: 0 }).unwrap(), []);
    assert_eq!(l.on_event(&Event::BeStart { window: 0 }).unwrap(), []);
    let mut h = PowerEngine::new(PowerPolicy::High, ds, &c, all).unwrap();
    assert_eq!(
        h.on_event(&Event::Init).unwrap(),
        [w(0, 1_200_000), w(4, 1_596_000)]
    );
    assert_eq!(h.on_event(&Event::BeStart { window: 0 }).unwrap(), []);
}

#[test]
fn per_process_validates_and_detects_conflicts_on_a_shared_domain() {
    let c = cfg("{partitions: [{name: A, processes: [{cmd: a, budget: 5, frequency: 896}]},
                     {name: B, processes: [{cmd: b, budget: 5, frequency: 1200}]}],
                     windows: [{length: 10, slices: [{cpu: 0, sc_partition: A}, {cpu: 1, sc_partition: B}]}]}");
    let all = CpuSet::first_n(6);
    let mut e = PowerEngine::new(PowerPolicy::PerProcess, imx8(), &c, all).unwrap();
    let start = |slice, partition, f| Event::ProcessStart {
        window: 0,
        slice,
        proc: ProcId {
            partition,
            process: 0,
        },
        cpus: CpuSet::from_cpus([slice as u32]),
        freq_mhz: Some(f),
    };
    assert_eq!(
        e.on_event(&start(0, 0, 896.0)).unwrap(),
        [Write {
            domain: 0,
            khz: 896_000
        }]
    );
    let err = e.on_event(&start(1, 1, 1200.0)).unwrap_err().0;
    assert!(err.contains("'896 MHz', '1200 MHz'"), "{err}");
    // after the first ends, the second may start
    let mut e = PowerEngine::new(PowerPolicy::PerProcess, imx8(), &c, all).unwrap();
    e.on_event(&start(0, 0, 896.0)).unwrap();
    e.on_event(&Event::ProcessEnd {
        window: 0,
        slice: 0,
        proc: ProcId {
            partition: 0,
            process: 0,
        },
    })
    .unwrap();
    assert_eq!(e.on_event(&start(1, 1, 1200.0)).unwrap().len(), 1);
    assert_eq!(e.cpu_khz(3), Some(1_200_000));
    assert_eq!(e.cpu_khz(4), None);
    // 1000 MHz is within the A53's range but not one of its frequencies
    let bad = cfg(
        "{windows: [{length: 10, cpu: 0, sc_processes: [{cmd: a, budget: 5, frequency: 1000}]}]}",
    );
    let err = PowerEngine::new(PowerPolicy::PerProcess, imx8(), &bad, all)
        .unwrap_err()
        .0;
    assert!(
        err.starts_with("windows[0].sc_processes[0].frequency: 1000 MHz is not a frequency of cpufreq policy0 (available: 600, 896, 1104, 1200 MHz)"),
        "{err}"
    );
    // other policies warn that they ignore it
    let e = PowerEngine::new(PowerPolicy::MinBe, imx8(), &bad, all).unwrap();
    assert!(e.warnings()[0].contains("per-process frequency"));
}

#[test]
fn per_slice_sets_each_windows_frequencies_and_refuses_disagreeing_slices() {
    let c = cfg("{windows: [{length: 10, slices: [{cpu: 0, frequency: 896, sc_processes: a},
                                                        {cpu: 4, frequency: 1296, be_processes: b}]},
                                {length: 10, slices: [{cpu: 5, frequency: 600, be_processes: c}]}]}");
    let all = CpuSet::first_n(6);
    let mut e = PowerEngine::new(PowerPolicy::PerSlice, imx8(), &c, all).unwrap();
    assert_eq!(e.on_event(&Event::Init).unwrap(), []);
    let w0 = e.on_event(&Event::WindowStart { window: 0 }).unwrap();
    assert_eq!(
        w0,
        [
            Write {
                domain: 0,
                khz: 896_000
            },
            Write {
                domain: 4,
                khz: 1_296_000
            }
        ]
    );
    let w1 = e.on_event(&Event::WindowStart { window: 1 }).unwrap();
    assert_eq!(
        w1,
        [Write {
            domain: 4,
            khz: 600_000
        }]
    );
    assert_eq!(e.cpu_khz(0), Some(896_000));
    let bad = cfg("{windows: [{length: 10, slices: [{cpu: 0, frequency: 896, sc_processes: a},
                                                          {cpu: 1, frequency: 600, sc_processes: b}]}]}");
    let err = PowerEngine::new(PowerPolicy::PerSlice, imx8(), &bad, all)
        .unwrap_err()
        .0;
    assert!(
        err.starts_with("windows[0].slices[1].frequency: scheduled slices require different frequencies on the CPU(s) 0-3"),
        "{err}"
    );
}

fn names(evs: &[Timed]) -> Vec<String> {
    evs.iter()
        .map(|t| {
            let e = match &t.event {
                Event::Init => "init".to_string(),
                Event::WindowStart { window } => format!("ws{window}"),
                Event::ScStart { window } => format!("sc{window}"),
                Event::BeStart { window } => format!("be{window}"),
                Event::WindowEnd { window } => format!("we{window}"),
                Event::ProcessStart { slice, proc, .. } => {
                    format!("+{slice}:{}.{}", proc.partition, proc.process)
                }
                Event::ProcessEnd { slice, proc, .. } => {
                    format!("-{slice}:{}.{}", proc.partition, proc.process)
                }
            };
            format!("{} {e}", t.time_ms)
        })
        .collect()
}

#[test]
fn rebuilds_events_with_completions_and_be_carry_over() {
    let c = cfg("{windows: [{length: 10, cpu: 0,
               sc_processes: [{cmd: 'TT_SIM_WORK_MS=2 a', budget: 5}, {cmd: b, budget: 3}],
               be_processes: [{cmd: c, budget: 7}]}]}");
    let opts = SimOptions {
        all_cpus: CpuSet::first_n(2),
        until_ms: 20,
        seed: 5489,
    };
    let r = simulate(&c, &opts).unwrap();
    let evs = events_from_sim(&c, &opts, &r).unwrap();
    // SC: a completes at 2, b runs to 5; BE c runs 5..10 (cut, 2 left), then 15..17
    assert_eq!(
        names(&evs),
        [
            "0 init",
            "0 ws0",
            "0 sc0",
            "0 +0:0.0",
            "2 -0:0.0",
            "2 +0:0.1",
            "5 -0:0.1",
            "5 be0",
            "5 +0:1.0",
            "10 we0",
            "10 -0:1.0",
            "10 ws0",
            "10 sc0",
            "10 +0:0.0",
            "12 -0:0.0",
            "12 +0:0.1",
            "15 -0:0.1",
            "15 be0",
            "15 +0:1.0",
            "17 -0:1.0",
            "20 we0",
            "20 ws0",
            "20 sc0",
            "20 +0:0.0"
        ]
    );
}

#[test]
fn a_window_without_sc_starts_be_at_once_and_an_overrun_never_does() {
    let c = cfg("{windows: [{length: 10, cpu: 0, be_processes: [{cmd: x, budget: 4}]},
                                {length: 10, cpu: 0, sc_processes: [{cmd: y, budget: 12}], be_processes: [{cmd: z, budget: 1}]}]}");
    let opts = SimOptions {
        all_cpus: CpuSet::first_n(1),
        until_ms: 20,
        seed: 5489,
    };
    let r = simulate(&c, &opts).unwrap();
    let evs = events_from_sim(&c, &opts, &r).unwrap();
    assert_eq!(
        names(&evs),
        [
            "0 init",
            "0 ws0",
            "0 sc0",
            "0 be0",
            "0 +0:0.0",
            "4 -0:0.0",
            "10 we0",
            "10 ws1",
            "10 sc1",
            "10 +0:1.0",
            "20 we1",
            "20 -0:1.0",
            "20 ws0",
            "20 sc0",
            "20 be0",
            "20 +0:0.0"
        ]
    );
}

#[test]
fn a_log_that_does_not_fit_the_config_is_refused() {
    let c = cfg("{windows: [{length: 10, cpu: 0, sc_processes: [{cmd: a, budget: 4}]}]}");
    let opts = SimOptions {
        all_cpus: CpuSet::first_n(1),
        until_ms: 10,
        seed: 5489,
    };
    let mut r = simulate(&c, &opts).unwrap();
    r.log[0].time_ms = 3;
    assert!(events_from_sim(&c, &opts, &r).is_err());
}
