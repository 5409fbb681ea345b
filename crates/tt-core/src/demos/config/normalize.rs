//! Normalisation: the YAML value tree → a [`Config`] in DEmOS's canonical form, walked the way
//! DEmOS's `Config::normalize` walks its yaml-cpp nodes, then validated.

use super::{
    boolean, entries, float, get, int, items, join, kind, scalar, string, Config, ConfigError,
    Partition, Process, Result, Slice, Source, Window,
};
use crate::demos::cpuset::CpuSet;
use serde_norway::Value;

struct Ctx {
    anonymous: usize,
    partitions: Vec<Partition>,
}

pub(super) fn normalize(v: &Value, source: Source) -> Result<Config> {
    let Value::Mapping(_) = v else {
        return Err(ConfigError::new("", "Config must be YAML mapping node"));
    };
    let top = entries(v, "", "a mapping")?;
    let set_cwd = match (get(&top, "set_cwd"), source) {
        (Some(_), Source::Inline) => {
            return Err(ConfigError::new(
                "set_cwd",
                "'set_cwd' cannot be used in inline config string",
            ))
        }
        (Some(b), Source::File { .. }) => boolean(b, "set_cwd")?,
        (None, Source::File { .. }) => true,
        (None, Source::Inline) => false,
    };
    if set_cwd && source == (Source::File { regular: false }) {
        return Err(ConfigError::new(
            "set_cwd",
            "When config is passed through a FIFO or other special file type, 'set_cwd' must \
             be set to 'false'",
        ));
    }
    let demos_cpu = match get(&top, "demos_cpu") {
        Some(c) => {
            let c = string(c, "demos_cpu")?;
            if c != "all" {
                CpuSet::parse(&c).map_err(|m| ConfigError::new("demos_cpu", m))?;
            }
            c
        }
        None => "all".to_string(),
    };
    let mut ctx = Ctx {
        anonymous: 0,
        partitions: Vec::new(),
    };
    if let Some(parts) = get(&top, "partitions") {
        for (i, p) in items(parts, "partitions")?.iter().enumerate() {
            let part = normalize_partition(p, None, &format!("partitions[{i}]"), &mut ctx)?;
            ctx.partitions.push(part);
        }
    }
    let mut windows = Vec::new();
    if let Some(wins) = get(&top, "windows") {
        for (i, w) in items(wins, "windows")?.iter().enumerate() {
            windows.push(normalize_window(w, &format!("windows[{i}]"), &mut ctx)?);
        }
    }
    for (k, _) in &top {
        if !["set_cwd", "demos_cpu", "partitions", "windows"].contains(&k.as_str()) {
            return Err(ConfigError::new(
                k.clone(),
                format!("Unexpected config key: {k}"),
            ));
        }
    }
    let config = Config {
        set_cwd,
        demos_cpu,
        partitions: ctx.partitions,
        windows,
    };
    validate(&config)?;
    Ok(config)
}

/// `default_budget`: `None` requires an explicit budget (canonical partitions).
fn normalize_process(v: &Value, default_budget: Option<f32>, path: &str) -> Result<Process> {
    let ProcessKeys {
        cmd,
        budget,
        jitter,
        init,
        frequency,
        mut order,
    } = process_keys(v, path)?;
    let budget = process_budget(budget, default_budget, path, &mut order)?;
    let jitter = process_jitter(jitter, budget, &mut order)?;
    if init.is_none() {
        order.push("init");
    }
    let Some(cmd) = cmd else {
        return Err(ConfigError::new(
            path,
            "Missing cmd in process definition (`cmd` property)",
        ));
    };
    Ok(Process {
        cmd,
        budget: budget as u64,
        jitter: jitter as u64,
        init: init.unwrap_or(false),
        frequency,
        path: path.to_string(),
        order,
    })
}

/// A process's keys as written (budget and jitter with their YAML paths), in document order.
struct ProcessKeys {
    cmd: Option<String>,
    budget: Option<(i64, String)>,
    jitter: Option<(i64, String)>,
    init: Option<bool>,
    frequency: Option<f64>,
    order: Vec<&'static str>,
}

/// Reads a process: a command string, or a mapping of the process keys.
fn process_keys(v: &Value, path: &str) -> Result<ProcessKeys> {
    let mut keys = ProcessKeys {
        cmd: None,
        budget: None,
        jitter: None,
        init: None,
        frequency: None,
        order: Vec::new(),
    };
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => {
            keys.cmd = scalar(v);
            keys.order.push("cmd");
        }
        Value::Mapping(_) | Value::Null => {
            for (k, val) in entries(v, path, "a process mapping")? {
                let kp = join(path, &k);
                match k.as_str() {
                    "cmd" => {
                        keys.cmd = Some(string(val, &kp)?);
                        keys.order.push("cmd");
                    }
                    "budget" => {
                        keys.budget = Some((int(val, &kp)?, kp));
                        keys.order.push("budget");
                    }
                    "jitter" => {
                        keys.jitter = Some((int(val, &kp)?, kp));
                        keys.order.push("jitter");
                    }
                    "init" => {
                        keys.init = Some(boolean(val, &kp)?);
                        keys.order.push("init");
                    }
                    "frequency" => {
                        keys.frequency = Some(float(val, &kp)?);
                        keys.order.push("frequency");
                    }
                    _ => return Err(ConfigError::new(kp, format!("Unexpected config key: {k}"))),
                }
            }
        }
        other => {
            return Err(ConfigError::new(
                path,
                format!(
                    "expected a process (a command string or a mapping), got {}",
                    kind(other)
                ),
            ))
        }
    }
    Ok(keys)
}

/// The budget (ms): as written, else `default_budget` (added to `order`); it must be positive.
fn process_budget(
    budget: Option<(i64, String)>,
    default_budget: Option<f32>,
    path: &str,
    order: &mut Vec<&'static str>,
) -> Result<i64> {
    let (budget, budget_path) = match budget {
        Some(b) => b,
        None => {
            let Some(d) = default_budget else {
                return Err(ConfigError::new(
                    path,
                    "Missing budget in process definition",
                ));
            };
            order.push("budget");
            // DEmOS: int(float); truncation toward zero
            (d as i64, path.to_string())
        }
    };
    if budget <= 0 {
        return Err(ConfigError::new(
            budget_path,
            format!(
                "Process budget must be a positive time duration in milliseconds, got '{budget}'"
            ),
        ));
    }
    Ok(budget)
}

/// The jitter (ms): 0 when not written (added to `order`), else in `0..=2 × budget`.
fn process_jitter(
    jitter: Option<(i64, String)>,
    budget: i64,
    order: &mut Vec<&'static str>,
) -> Result<i64> {
    Ok(match jitter {
        None => {
            order.push("jitter");
            0
        }
        Some((j, jp)) => {
            if j < 0 {
                return Err(ConfigError::new(
                    jp,
                    format!(
                        "Jitter must be a non-negative time duration in milliseconds, got '{j}'"
                    ),
                ));
            }
            if j > 2 * budget {
                return Err(ConfigError::new(
                    jp,
                    format!(
                        "`budget - jitter / 2` must be >= 0, otherwise jitter could result in a \
                         negative budget, got budget: '{budget} ms', jitter: '{j} ms'"
                    ),
                ));
            }
            j
        }
    })
}

fn normalize_processes(v: &Value, total: Option<f32>, path: &str) -> Result<Vec<Process>> {
    match v {
        Value::Sequence(s) => s
            .iter()
            .enumerate()
            .map(|(i, p)| {
                normalize_process(
                    p,
                    total.map(|t| t / s.len() as f32),
                    &format!("{path}[{i}]"),
                )
            })
            .collect(),
        _ => Ok(vec![normalize_process(v, total, path)?]),
    }
}

const PROCESS_KEYS: [&str; 6] = ["cmd", "budget", "jitter", "init", "_a53_freq", "_a72_freq"];

fn normalize_partition(
    v: &Value,
    total: Option<f32>,
    path: &str,
    ctx: &mut Ctx,
) -> Result<Partition> {
    let mut name = None;
    let mut processes = None;
    let mut order = Vec::new();
    match v {
        Value::Sequence(_) => processes = Some(normalize_processes(v, total, path)?),
        Value::Mapping(_) | Value::Null => {
            let e = entries(v, path, "a partition mapping")?;
            for (k, val) in &e {
                let kp = join(path, k);
                match k.as_str() {
                    "name" => {
                        name = Some(string(val, &kp)?);
                        order.push("name");
                    }
                    "processes" => {
                        processes = Some(normalize_processes(val, total, &kp)?);
                        order.push("processes");
                    }
                    k if PROCESS_KEYS.contains(&k) => {}
                    _ => return Err(ConfigError::new(kp, format!("Unexpected config key: {k}"))),
                }
            }
            if processes.is_none() {
                // the mapping is itself the partition's only process
                let mut m = serde_norway::Mapping::new();
                for key in PROCESS_KEYS {
                    if let Some(val) = get(&e, key) {
                        m.insert(Value::String(key.to_string()), val.clone());
                    }
                }
                processes = Some(vec![normalize_process(&Value::Mapping(m), total, path)?]);
            }
        }
        other => {
            return Err(ConfigError::new(
                path,
                format!("expected a partition mapping, got {}", kind(other)),
            ))
        }
    }
    let name = match name {
        Some(n) => n,
        None => {
            order.push("name");
            let n = format!("anonymous_{}", ctx.anonymous);
            ctx.anonymous += 1;
            n
        }
    };
    if !order.contains(&"processes") {
        order.push("processes");
    }
    Ok(Partition {
        name,
        processes: processes.unwrap_or_default(),
        path: path.to_string(),
        order,
    })
}

/// `sc_partition`/`be_partition`: a name, or a partition defined in place (added to `ctx`).
fn partition_ref(v: &Value, total: f32, path: &str, ctx: &mut Ctx) -> Result<String> {
    if let Some(name) = scalar(v) {
        return Ok(name);
    }
    let p = normalize_partition(v, Some(total), path, ctx)?;
    let name = p.name.clone();
    ctx.partitions.push(p);
    Ok(name)
}

/// `sc_processes`/`be_processes`: an anonymous partition of these processes.
fn processes_ref(v: &Value, total: f32, path: &str, ctx: &mut Ctx) -> Result<String> {
    let processes = normalize_processes(v, Some(total), path)?;
    let name = format!("anonymous_{}", ctx.anonymous);
    ctx.anonymous += 1;
    ctx.partitions.push(Partition {
        name: name.clone(),
        processes,
        path: path.to_string(),
        order: vec!["processes", "name"],
    });
    Ok(name)
}

/// `base`: the path the slice's keys hang from.
fn normalize_slice(
    keys: &[(String, &Value)],
    win_length: f32,
    base: &str,
    ctx: &mut Ctx,
) -> Result<Slice> {
    let mut s = Slice {
        cpu: String::new(),
        frequency: None,
        sc_partition: None,
        be_partition: None,
        path: base.to_string(),
        order: Vec::new(),
    };
    let mut cpu = None;
    let mut seen_sc = None::<&str>;
    let mut seen_be = None::<&str>;
    for (k, v) in keys {
        let kp = join(base, k);
        let put = |s: &mut Slice, key: &'static str| {
            if !s.order.contains(&key) {
                s.order.push(key);
            }
        };
        match k.as_str() {
            "cpu" => {
                cpu = Some(string(v, &kp)?);
                put(&mut s, "cpu");
            }
            "frequency" => {
                s.frequency = Some(float(v, &kp)?);
                put(&mut s, "frequency");
            }
            "sc_partition" | "sc_processes" | "be_partition" | "be_processes" => {
                let sc = k.starts_with("sc_");
                let seen = if sc { &mut seen_sc } else { &mut seen_be };
                if let Some(other) = seen {
                    return Err(ConfigError::new(
                        kp,
                        format!("Cannot have both '{other}' and '{k}' in the same slice"),
                    ));
                }
                *seen = Some(if k.ends_with("_partition") {
                    if sc {
                        "sc_partition"
                    } else {
                        "be_partition"
                    }
                } else if sc {
                    "sc_processes"
                } else {
                    "be_processes"
                });
                // SC default budget: 0.6 × the window, leaving room for BE (as DEmOS)
                let total = if sc { win_length * 0.6f32 } else { win_length };
                let name = if k.ends_with("_partition") {
                    partition_ref(v, total, &kp, ctx)?
                } else {
                    processes_ref(v, total, &kp, ctx)?
                };
                if sc {
                    s.sc_partition = Some(name);
                    put(&mut s, "sc_partition");
                } else {
                    s.be_partition = Some(name);
                    put(&mut s, "be_partition");
                }
            }
            _ => {
                return Err(ConfigError::new(
                    kp,
                    format!("Unexpected config key in slice definition: {k}"),
                ))
            }
        }
    }
    let Some(cpu) = cpu else {
        return Err(ConfigError::new(
            base,
            "Missing cpu set in slice definition (`cpu` property)",
        ));
    };
    if cpu != "all" {
        CpuSet::parse(&cpu).map_err(|m| ConfigError::new(join(base, "cpu"), m))?;
    }
    s.cpu = cpu;
    Ok(s)
}

const INLINE_SLICE_KEYS: [&str; 5] = [
    "cpu",
    "sc_partition",
    "be_partition",
    "sc_processes",
    "be_processes",
];

fn normalize_window(v: &Value, path: &str, ctx: &mut Ctx) -> Result<Window> {
    let Value::Mapping(_) = v else {
        return Err(ConfigError::new(
            path,
            format!("expected a window mapping, got {}", kind(v)),
        ));
    };
    let e = entries(v, path, "a window mapping")?;
    let length = window_length(&e, path)?;
    check_window_keys(&e, path)?;
    let (mut slices, slices_first) = window_slices(&e, path, length, ctx)?;
    if e.len() == 1 {
        // only `length`: an empty window
        return Ok(Window {
            length: length as u64,
            slices: None,
            path: path.to_string(),
            slices_first: false,
        });
    }
    if slices.is_none() {
        slices = Some(vec![inline_slice(&e, path, length, ctx)?]);
    }
    Ok(Window {
        length: length as u64,
        slices,
        path: path.to_string(),
        slices_first,
    })
}

/// The window's `length` (ms): required and positive.
fn window_length(e: &[(String, &Value)], path: &str) -> Result<i64> {
    let Some(length) = get(e, "length") else {
        return Err(ConfigError::new(
            path,
            "Missing window length (`length` property)",
        ));
    };
    let lp = join(path, "length");
    let length = int(length, &lp)?;
    if length <= 0 {
        return Err(ConfigError::new(
            lp,
            format!(
                "Window length must be a positive time duration in milliseconds, got '{length}'"
            ),
        ));
    }
    Ok(length)
}

/// Refuses `slices` together with inline slice keys, and both `*_partition` and
/// `*_processes` for SC or BE.
fn check_window_keys(e: &[(String, &Value)], path: &str) -> Result<()> {
    let has = |k: &str| get(e, k).is_some();
    let conflict = |m: &str| Err(ConfigError::new(path, m.to_string()));
    if has("slices") && (has("sc_partition") || has("be_partition")) {
        return conflict("Cannot have both 'slices' and '*_partition' in window definition");
    }
    if has("slices") && has("cpu") {
        return conflict("Cannot have both 'slices' and 'cpu' in window definition");
    }
    if has("slices") && (has("sc_processes") || has("be_processes")) {
        return conflict("Cannot have both 'slices' and '*_processes' in window definition");
    }
    if (has("sc_partition") && has("sc_processes")) || (has("be_partition") && has("be_processes"))
    {
        return conflict("Cannot have both '*_partition' and '*_processes' in the same window");
    }
    Ok(())
}

/// The window's `slices` (`None` without the key) and whether the key comes before `length`;
/// refuses unknown keys.
fn window_slices(
    e: &[(String, &Value)],
    path: &str,
    length: i64,
    ctx: &mut Ctx,
) -> Result<(Option<Vec<Slice>>, bool)> {
    let mut slices = None;
    let mut slices_first = false;
    for (k, val) in e {
        let kp = join(path, k);
        match k.as_str() {
            "length" => {}
            "slices" => {
                slices_first = !e
                    .iter()
                    .take_while(|(k, _)| k != "slices")
                    .any(|(k, _)| k == "length");
                slices = Some(slice_list(val, &kp, length, ctx)?);
            }
            k if INLINE_SLICE_KEYS.contains(&k) => {}
            _ => {
                return Err(ConfigError::new(
                    kp,
                    format!("Unexpected config key in window definition: {k}"),
                ))
            }
        }
    }
    Ok((slices, slices_first))
}

/// The slices of a `slices` sequence at `kp`, each a mapping.
fn slice_list(val: &Value, kp: &str, length: i64, ctx: &mut Ctx) -> Result<Vec<Slice>> {
    let mut out = Vec::new();
    for (j, s) in items(val, kp)?.iter().enumerate() {
        let sp = format!("{kp}[{j}]");
        let Value::Mapping(_) = s else {
            return Err(ConfigError::new(
                sp,
                format!("expected a slice mapping, got {}", kind(s)),
            ));
        };
        let keys = entries(s, &sp, "a slice mapping")?;
        out.push(normalize_slice(&keys, length as f32, &sp, ctx)?);
    }
    Ok(out)
}

/// The one slice of a window without `slices`: its inline slice keys, `cpu` defaulting to
/// `all`.
fn inline_slice(e: &[(String, &Value)], path: &str, length: i64, ctx: &mut Ctx) -> Result<Slice> {
    let all = Value::String("all".to_string());
    let mut keys: Vec<(String, &Value)> = Vec::new();
    if get(e, "cpu").is_none() {
        keys.push(("cpu".to_string(), &all));
    }
    for k in INLINE_SLICE_KEYS {
        if let Some(v) = get(e, k) {
            keys.push((k.to_string(), v));
        }
    }
    normalize_slice(&keys, length as f32, path, ctx)
}

fn validate(c: &Config) -> Result<()> {
    for (i, p) in c.partitions.iter().enumerate() {
        if let Some(first) = c.partitions[..i].iter().find(|q| q.name == p.name) {
            return Err(ConfigError::new(
                p.path.clone(),
                format!(
                    "partition name '{}' is defined twice (also at {})",
                    p.name, first.path
                ),
            ));
        }
    }
    for (i, w) in c.windows.iter().enumerate() {
        for (j, s) in w.slices().iter().enumerate() {
            for (key, name) in [
                ("sc_partition", &s.sc_partition),
                ("be_partition", &s.be_partition),
            ] {
                if let Some(name) = name {
                    if c.partition(name).is_none() {
                        return Err(ConfigError::new(
                            join(&s.path, key),
                            format!(
                                "Reference to unknown partition '{name}' in window #{i}, slice #{j}"
                            ),
                        ));
                    }
                }
            }
        }
    }
    for (i, w) in c.windows.iter().enumerate() {
        let mut acc = CpuSet::EMPTY;
        let n = w.slices().len();
        for s in w.slices() {
            let cpus = s.cpus(CpuSet::EMPTY);
            if (s.cpu == "all" && n > 1) || acc.intersects(cpus) {
                return Err(ConfigError::new(
                    join(&s.path, "cpu"),
                    format!("Slices in window #{i} have overlapping CPU sets"),
                ));
            }
            acc = acc.or(cpus);
        }
    }
    Ok(())
}
