//! DEmOS configurations: both YAML forms and their normalisation (the cases of DEmOS's
//! `test/0200-config.t`, compared with what `demos-sched -d` prints), the configurations DEmOS
//! rejects (`0200`, `0210-config_validation.t`, `0020-basic.t`) with the YAML path in every
//! message, and `plan import --demos` (a valid plan, the gcd slot, the caps).

mod common;

use scx_tt::demos::ConfigFile as _;
use scx_tt::demos::{self, Config, ConfigError, CpuSet, ImportOptions, Source};
use std::path::Path;

fn inline(text: &str) -> Result<Config, ConfigError> {
    Config::from_yaml(text, Source::Inline)
}

fn normalized(text: &str) -> String {
    inline(text)
        .unwrap_or_else(|e| panic!("{e}"))
        .to_demos_yaml()
}

fn error(text: &str) -> ConfigError {
    match inline(text) {
        Ok(c) => panic!("accepted: {c:?}"),
        Err(e) => e,
    }
}

// ---- both forms → the canonical form (0200-config.t) --------------------------------------

#[test]
fn missing_slice_definition() {
    assert_eq!(
        normalized(
            "{ windows: [ {length: 500, sc_partition: SC} ],
               partitions: [ {name: SC, processes: [{cmd: echo, budget: 100}] }] }"
        ),
        "set_cwd: false
demos_cpu: all
partitions:
  - name: SC
    processes:
      - cmd: echo
        budget: 100
        jitter: 0
        init: false
windows:
  - length: 500
    slices:
      - cpu: all
        sc_partition: SC"
    );
}

const ANON_PROC1: &str = "set_cwd: false
demos_cpu: all
partitions:
  - name: anonymous_0
    processes:
      - cmd: proc1
        budget: 500
        jitter: 0
        init: false
windows:
  - length: 500
    slices:
      - cpu: all
        sc_partition: anonymous_0";

#[test]
fn partition_defined_in_a_window() {
    assert_eq!(
        normalized("{ windows: [ {length: 500, sc_partition: [{cmd: proc1, budget: 500}] } ] }"),
        ANON_PROC1
    );
    // ... with one process, without the list
    assert_eq!(
        normalized("{ windows: [ {length: 500, sc_partition: {cmd: proc1, budget: 500} } ] }"),
        ANON_PROC1
    );
}

#[test]
fn a_window_with_only_length_stays_empty() {
    assert_eq!(
        normalized("{windows: [{length: 1000}]}"),
        "set_cwd: false\ndemos_cpu: all\npartitions: ~\nwindows:\n  - length: 1000"
    );
    let c = inline("{windows: [{length: 1000}]}").unwrap();
    assert!(c.windows[0].slices().is_empty());
}

#[test]
fn default_budgets() {
    // SC: 0.6 × window length, shared among the processes
    let sc = |procs: &str, budget: u32| {
        let text = normalized(&format!("{{ windows: [ {{length: 500, {procs}}} ] }}"));
        assert!(text.contains(&format!("budget: {budget}\n")), "{text}");
        text
    };
    sc("sc_partition: [{cmd: proc1}]", 300);
    let t = sc("sc_processes: proc", 300); // a process as a plain string
    assert!(t.contains("- cmd: proc\n"), "{t}");
    let t = sc("sc_processes: [proc1, proc2]", 150);
    assert!(
        t.contains("- cmd: proc1\n") && t.contains("- cmd: proc2\n"),
        "{t}"
    );
    // BE: the whole window
    let c = inline("{windows: [{length: 500, be_processes: [a, b]}]}").unwrap();
    assert_eq!(c.partitions[0].processes[1].budget, 250);
    assert_eq!(
        c.windows[0].slices()[0].be_partition.as_deref(),
        Some("anonymous_0")
    );
}

#[test]
fn short_form_jitter() {
    let t = normalized(
        "{ windows: [ {length: 100, sc_partition: SC} ],
           partitions: [ {name: SC, processes: [{cmd: echo, budget: 100, jitter: 50}] }] }",
    );
    assert!(t.contains("budget: 100\n        jitter: 50\n"), "{t}");
}

#[test]
fn set_cwd_defaults_to_false_inline_and_true_for_a_file() {
    assert!(normalized("{}").starts_with("set_cwd: false\n"));
    let c = Config::from_yaml("{}", Source::File { regular: true }).unwrap();
    assert!(c.set_cwd);
    assert!(c.to_demos_yaml().starts_with("set_cwd: true\n"));
    let c = Config::from_yaml("set_cwd: no", Source::File { regular: true }).unwrap();
    assert!(!c.set_cwd);
    // a FIFO only with set_cwd: false
    let e = Config::from_yaml("{}", Source::File { regular: false }).unwrap_err();
    assert_eq!(e.path, "set_cwd");
    assert!(e.message.contains("FIFO"), "{e}");
    assert!(Config::from_yaml("set_cwd: false", Source::File { regular: false }).is_ok());
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demos-example.yaml");
    assert!(Config::from_file(&f).unwrap().set_cwd);
}

#[test]
fn canonical_and_simplified_forms_normalise_to_the_same_model() {
    let canonical = inline(
        "partitions:
  - name: anonymous_0
    processes:
      - {cmd: c, budget: 10}
  - name: anonymous_1
    processes:
      - {cmd: a, budget: 3}
      - {cmd: b, budget: 3}
windows:
  - length: 10
    slices:
      - {cpu: all, sc_partition: anonymous_1, be_partition: anonymous_0}",
    )
    .unwrap();
    // an inline slice takes its keys in DEmOS's fixed order (cpu, sc_partition, be_partition,
    // sc_processes, be_processes): the BE partition defined in place is named first
    let simplified =
        inline("{windows: [{length: 10, sc_processes: [a, b], be_partition: {cmd: c}}]}").unwrap();
    let strip = |c: &Config| -> Vec<(String, Vec<(String, u64)>)> {
        c.partitions
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    p.processes
                        .iter()
                        .map(|q| (q.cmd.clone(), q.budget))
                        .collect(),
                )
            })
            .collect()
    };
    assert_eq!(strip(&canonical), strip(&simplified));
    let w = |c: &Config| {
        let s = &c.windows[0].slices()[0];
        (
            c.windows[0].length,
            s.cpu.clone(),
            s.sc_partition.clone(),
            s.be_partition.clone(),
        )
    };
    assert_eq!(w(&canonical), w(&simplified));
}

// ---- what DEmOS rejects, with the YAML path --------------------------------------------------

#[test]
fn rejected_like_demos_with_the_yaml_path() {
    // (config, path, part of the message)
    let cases: &[(&str, &str, &str)] = &[
        ("{ windows: [], partitions: [], garbage: garbage}", "garbage", "Unexpected config key: garbage"),
        ("-d", "", "must be YAML mapping node"),
        ("bad config", "", "must be YAML mapping node"),
        ("set_cwd: yes", "set_cwd", "'set_cwd' cannot be used in inline config string"),
        (
            "{ windows: [ {length: 500, sc_partition: SC} ],
               partitions: [ {name: SC, processes: [{cmd: echo, budget: 100, jitter: 250}]} ] }",
            "partitions[0].processes[0].jitter",
            "`budget - jitter / 2` must be >= 0",
        ),
        (
            "{partitions: [ name: p1, processes: [ cmd: proc1 ] ], windows: [{length: 100, sc_partition: p1}]}",
            "partitions[0]",
            "Missing budget in process definition",
        ),
        (
            "windows: [{length: 100, slices: [{}]}]",
            "windows[0].slices[0]",
            "Missing cpu set in slice definition (`cpu` property)",
        ),
        (
            "{ windows: [{length: 1, cpu: 0, sc_partition: NON_EXISTENT}], partitions: [] }",
            "windows[0].sc_partition",
            "unknown partition 'NON_EXISTENT'",
        ),
        (
            "{ windows: [{length: 1, slices: [ {cpu: 0, sc_partition: SC1}, {cpu: 0, sc_partition: SC2} ]}],
               partitions: [ {name: SC1, processes: {cmd: echo, budget: 1}},
                             {name: SC2, processes: {cmd: echo, budget: 1}} ] }",
            "windows[0].slices[1].cpu",
            "overlapping CPU sets",
        ),
        (
            "{windows: [{length: 10, slices: [{cpu: all, sc_processes: a}, {cpu: 3, sc_processes: b}]}]}",
            "windows[0].slices[0].cpu",
            "overlapping CPU sets",
        ),
        (
            "{windows: [{length: 10, cpu: 0, sc_processes: a}, {length: 10, slices: [{cpu: 0-x, sc_processes: b}]}]}",
            "windows[1].slices[0].cpu",
            "Could not parse cpulist: 0-x",
        ),
        (
            "{windows: [{length: 10, cpu: 0, sc_processes: [{cmd: a, budget: 0}]}]}",
            "windows[0].sc_processes[0].budget",
            "Process budget must be a positive time duration in milliseconds, got '0'",
        ),
        (
            "{windows: [{length: 10, cpu: 0, sc_processes: [{cmd: a, budget: 2, jitter: -1}]}]}",
            "windows[0].sc_processes[0].jitter",
            "Jitter must be a non-negative",
        ),
        (
            "{windows: [{length: 10, cpu: 0, sc_processes: [{cmd: a, budjet: 2}]}]}",
            "windows[0].sc_processes[0].budjet",
            "Unexpected config key: budjet",
        ),
        (
            "{windows: [{length: 10, slices: [{cpu: 0, sc_partition: [a], prio: 1}]}]}",
            "windows[0].slices[0].prio",
            "Unexpected config key in slice definition: prio",
        ),
        (
            "{windows: [{length: 10, period: 5}]}",
            "windows[0].period",
            "Unexpected config key in window definition: period",
        ),
        (
            "{windows: [{length: 10, cpu: 0, slices: []}]}",
            "windows[0]",
            "Cannot have both 'slices' and 'cpu' in window definition",
        ),
        (
            "{windows: [{length: 10, slices: [], sc_partition: a}]}",
            "windows[0]",
            "Cannot have both 'slices' and '*_partition' in window definition",
        ),
        (
            "{windows: [{length: 10, slices: [], be_processes: a}]}",
            "windows[0]",
            "Cannot have both 'slices' and '*_processes' in window definition",
        ),
        (
            "{windows: [{length: 10, sc_partition: [a], sc_processes: [b]}]}",
            "windows[0]",
            "Cannot have both '*_partition' and '*_processes' in the same window",
        ),
        (
            "{partitions: [{name: P, processes: [{cmd: a, budget: 1}], prio: 3}]}",
            "partitions[0].prio",
            "Unexpected config key: prio",
        ),
        (
            "{partitions: [{name: P, processes: [{cmd: a, budget: 1, init: perhaps}]}]}",
            "partitions[0].processes[0].init",
            "expected a boolean",
        ),
        (
            "{windows: [{length: 10, cpu: 0, sc_processes: [{cmd: a, budget: 1.5}]}]}",
            "windows[0].sc_processes[0].budget",
            "expected a whole number of milliseconds, got '1.5'",
        ),
        ("demos_cpu: 1-", "demos_cpu", "Could not parse cpulist: 1-"),
        // stricter than DEmOS (it accepts these, then fails or misbehaves at run time)
        (
            "{windows: [{length: 10, cpu: 0, sc_processes: [{budget: 1}]}]}",
            "windows[0].sc_processes[0]",
            "Missing cmd",
        ),
        ("{windows: [{cpu: 0, sc_processes: a}]}", "windows[0]", "Missing window length"),
        ("{windows: [{length: 0}]}", "windows[0].length", "positive"),
        (
            "{partitions: [{name: P, processes: [{cmd: a, budget: 1}]}, {name: P, processes: [{cmd: b, budget: 1}]}]}",
            "partitions[1]",
            "defined twice (also at partitions[0])",
        ),
        (
            "{windows: [{length: 10, slices: [{cpu: 0, sc_partition: [a], sc_processes: [b]}]}]}",
            "windows[0].slices[0].sc_processes",
            "Cannot have both 'sc_partition' and 'sc_processes' in the same slice",
        ),
    ];
    for (text, path, msg) in cases {
        let e = error(text);
        assert_eq!(&e.path, path, "{text}: {e}");
        assert!(e.message.contains(msg), "{text}: {e}");
        // the display names the path first
        if !path.is_empty() {
            assert!(e.to_string().starts_with(&format!("{path}: ")), "{e}");
        }
    }
}

#[test]
fn yaml_syntax_errors_are_reported() {
    let e = error("{windows: [");
    assert!(e.message.starts_with("Configuration error: "), "{e}");
}

#[test]
fn empty_configs_parse_but_cannot_run() {
    // 0020-basic: `{windows: [], partitions: []}` passes -d but demos-sched refuses to run it
    let c = inline("{windows: [], partitions: []}").unwrap();
    let o = demos::SimOptions {
        all_cpus: CpuSet::first_n(2),
        until_ms: 10,
        seed: 1,
    };
    assert!(demos::simulate(&c, &o).unwrap_err().contains("no window"));
    assert!(demos::import(&c, &import_opts(None)).is_err());
}

// ---- plan import ------------------------------------------------------------------------------

fn import_opts(slot_us: Option<u64>) -> ImportOptions {
    ImportOptions {
        slot_us,
        all_cpus: CpuSet::parse("1-3").unwrap(),
        config_dir: None,
    }
}

fn example() -> Config {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demos-example.yaml");
    Config::from_file(&f).unwrap()
}

#[test]
fn import_places_sc_processes_in_their_window_and_passes_plan_validation() {
    let imp = demos::import(&example(), &import_opts(None)).unwrap();
    // lengths 200, 100 and budgets 100, 50, 175, 25, 40: gcd 5 ms
    assert_eq!(imp.slot_us, 5000);
    assert_eq!(imp.frame_slots, 60);
    let json = serde_json::to_string_pretty(&imp.raw).unwrap();
    let plan = scx_tt::plan::from_str(&json).unwrap_or_else(|e| panic!("{e:?}\n{json}"));
    assert_eq!(plan.frame_slots, 60);
    assert_eq!(plan.managed, vec![1, 2]);
    assert_eq!(plan.housekeeping, vec![0]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    // cpu 1: SC1's two processes back to back from the window start, then SC3 in window 2
    let t1 = &v["table"][0];
    assert_eq!(t1["cpu"], 1);
    let ranges: Vec<(u64, u64, String)> = t1["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["start"].as_u64().unwrap(),
                r["end"].as_u64().unwrap(),
                r["task"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        ranges,
        [
            (0, 20, "SC1.0".to_string()),
            (20, 30, "SC1.1".to_string()),
            (40, 48, "SC3.0".to_string()),
        ]
    );
    let task = |name: &str| {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(task("SC2.0")["cpu"], 2);
    assert_eq!(
        task("SC2.0")["jobs"],
        serde_json::json!([{"release": 0, "deadline": 40, "wcet": 35}])
    );
    assert_eq!(task("BE1.0")["class"], "be");
    assert_eq!(task("BE1.0")["cpu"], 1);
    assert!(imp
        .warnings
        .iter()
        .any(|w| w.contains("BE partition 'BE1'")));
}

#[test]
fn slot_defaults_to_the_gcd_and_a_given_slot_must_divide() {
    let c = inline(
        "{windows: [{length: 30, cpu: 1, sc_processes: [{cmd: a, budget: 10}]},
                    {length: 20, cpu: 1, sc_processes: [{cmd: b, budget: 15, jitter: 10}]}]}",
    )
    .unwrap();
    // 30, 20, 10 and b's largest budget 15 + 5 = 20: gcd 10 ms
    let imp = demos::import(&c, &import_opts(None)).unwrap();
    assert_eq!((imp.slot_us, imp.frame_slots), (10_000, 5));
    assert!(imp.warnings.iter().any(|w| w.contains("jitter")));
    let imp = demos::import(&c, &import_opts(Some(2500))).unwrap();
    assert_eq!((imp.slot_us, imp.frame_slots), (2500, 20));
    let e = demos::import(&c, &import_opts(Some(3000))).unwrap_err();
    assert_eq!(e.path, "--slot-us");
    assert!(
        e.message
            .contains("does not divide windows[1].length = 20 ms"),
        "{e}"
    );
    let e = demos::import(&c, &import_opts(Some(50))).unwrap_err();
    assert!(e.message.contains("100..=1000000"), "{e}");
    // a gcd above the largest slot: the largest divisor of it that fits (1 s)
    let c = inline("{windows: [{length: 4000, cpu: 1, sc_processes: [{cmd: a, budget: 2000}]}]}")
        .unwrap();
    let imp = demos::import(&c, &import_opts(None)).unwrap();
    assert_eq!((imp.slot_us, imp.frame_slots), (1_000_000, 4));
}

#[test]
fn a_gcd_too_fine_for_the_frame_is_refused() {
    // 1 ms slots for a frame of 1,000,001 ms: above the plan's 1,000,000-slot frame cap
    let c = inline(
        "{windows: [{length: 1000000, cpu: 1, sc_processes: [{cmd: a, budget: 2}]},
                    {length: 1, cpu: 1}]}",
    )
    .unwrap();
    let e = demos::import(&c, &import_opts(None)).unwrap_err();
    assert!(
        e.message.contains("1000001 slots") && e.message.contains("cap of 1000000 slots"),
        "{e}"
    );
    assert!(e.message.contains("gcd"), "{e}");
    // 17 managed CPUs × 1,000,000 slots exceed the plan's CPU × frame limit
    let c =
        inline("{windows: [{length: 1000000, cpu: 0-16, sc_processes: [{cmd: a, budget: 1}]}]}")
            .unwrap();
    let e = demos::import(&c, &import_opts(None)).unwrap_err();
    assert!(e.message.contains("too fine"), "{e}");
}

#[test]
fn sc_work_that_does_not_fit_its_window_is_clipped_with_a_warning() {
    let c = inline(
        "{windows: [{length: 10, cpu: 1, sc_processes: [{cmd: a, budget: 8}, {cmd: b, budget: 4}, {cmd: c, budget: 2}]}]}",
    )
    .unwrap();
    let imp = demos::import(&c, &import_opts(None)).unwrap();
    let names: Vec<_> = imp.plan.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["anonymous_0.0", "anonymous_0.1"]);
    assert!(
        imp.warnings
            .iter()
            .any(|w| w.contains("gets 2 of its 4 ms")),
        "{:?}",
        imp.warnings
    );
    assert!(
        imp.warnings.iter().any(|w| w.contains("never fits")),
        "{:?}",
        imp.warnings
    );
}

#[test]
fn the_cli_writes_a_plan_that_plan_check_accepts() {
    let dir = common::temp_dir("demos-config", "import");
    let out = dir.join("plan.json");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("schedules/demos-example.yaml");
    let r = common::scx_tt()
        .args(["plan", "import", "--all-cpus", "1-3", "--demos"])
        .arg(&example)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    let plan = std::fs::read_to_string(&out).unwrap();
    // set_cwd: the commands run in the configuration's directory
    assert!(plan.contains("&& ./sc1-control"), "{plan}");
    let r = common::scx_tt()
        .args(["plan", "check"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    assert!(String::from_utf8_lossy(&r.stdout).contains("frame 60 slots x 5000 us"));
    // a refused configuration: exit 2, the YAML path in the message, no plan written
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "windows: [{length: 10, slices: [{cpu: 0, sc_partition: X}]}]\n",
    )
    .unwrap();
    let out2 = dir.join("none.json");
    let r = common::scx_tt()
        .args(["plan", "import", "--demos"])
        .arg(&bad)
        .arg("--out")
        .arg(&out2)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("windows[0].slices[0].sc_partition: Reference to unknown partition 'X'"),
        "{err}"
    );
    assert!(!out2.exists());
    std::fs::remove_dir_all(&dir).ok();
}
