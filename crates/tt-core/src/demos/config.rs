//! DEmOS YAML configurations (seed 002, Appendix 2): both forms, normalised to one model.
//!
//! The YAML is read with serde (`serde_norway`) into a generic value tree; this module then
//! walks that tree the way DEmOS's `Config::normalize` walks its yaml-cpp nodes, keeping the
//! YAML path of everything so that every error names it, e.g.
//! `windows[1].slices[0].cpu: Could not parse cpulist: 0-x`.
//!
//! Normalisation (what the simplified form means), as DEmOS does it:
//! - a window without `slices` gets one slice made of its `cpu` (default `all`),
//!   `sc_partition`, `be_partition`, `sc_processes` and `be_processes` keys; a window with only
//!   `length` stays empty (no slice);
//! - `sc_partition`/`be_partition` is a partition name, or a partition defined in place: a list
//!   of processes, a mapping with `processes` (and optionally `name`), or a mapping that is
//!   itself one process (`cmd`, `budget`, ...); `sc_processes`/`be_processes` is a list of
//!   processes (or a single one); a process is a mapping or just its command string;
//! - partitions defined in place are named `anonymous_N` in order of appearance;
//! - a missing budget defaults to `0.6 × window length / number of processes` for SC and
//!   `window length / number of processes` for BE (32-bit float arithmetic, truncated, as
//!   DEmOS); canonical `partitions` require explicit budgets;
//! - `jitter` defaults to 0, `init` to false, `set_cwd` to true for a file and false for an
//!   inline string, `demos_cpu` to `all`.
//!
//! Rejected as DEmOS rejects them (tests/demos_config.rs): a non-mapping config, unknown keys
//! (`Unexpected config key: ...`), `set_cwd` in an inline string, `set_cwd: true` for a FIFO,
//! a bad CPU list, a missing budget in a canonical partition, a missing `cpu` in a slice,
//! budget ≤ 0, jitter < 0 or > 2 × budget, both `slices` and inline slice keys in a window,
//! both `*_partition` and `*_processes`, a reference to an unknown partition, overlapping CPU
//! sets of the slices of one window (`cpu: all` with any other slice included).
//!
//! Stricter than DEmOS (DEmOS accepts these and then misbehaves or fails at run time): a
//! missing `cmd`; a missing or non-positive window `length`; a partition name defined twice;
//! both `sc_partition` and `sc_processes` (or the BE pair) in one canonical slice (DEmOS keeps
//! the last); CPU list items with trailing garbage (`1x,2`, which DEmOS's C parser lets
//! through).

use super::cpuset::CpuSet;
use serde_norway::Value;
use std::fmt;

/// Normalisation (the YAML value tree → a [`Config`]) and validation.
mod normalize;

use normalize::normalize;

/// A configuration error: the YAML path (empty for the document itself) and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl ConfigError {
    fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

type Result<T> = std::result::Result<T, ConfigError>;

/// Where the configuration came from: it decides the default of `set_cwd` and whether the key
/// is allowed (DEmOS's `-C` string versus `-c` file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// An inline string (`demos-sched -C`): `set_cwd` defaults to false and may not be given.
    Inline,
    /// A file; `regular` is false for a FIFO or another special file, which requires
    /// `set_cwd: false`.
    File { regular: bool },
}

/// A normalised configuration (DEmOS's canonical form).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub set_cwd: bool,
    /// DEmOS's own CPUs (`all` or a CPU list); not used by the simulator or the import.
    pub demos_cpu: String,
    pub partitions: Vec<Partition>,
    pub windows: Vec<Window>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    pub name: String,
    pub processes: Vec<Process>,
    /// YAML path of the definition.
    pub path: String,
    order: Vec<&'static str>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Process {
    pub cmd: String,
    /// Milliseconds, ≥ 1.
    pub budget: u64,
    /// Milliseconds, ≤ 2 × budget: each activation's budget is drawn from
    /// `[budget − jitter/2, budget + (jitter − jitter/2)]`.
    pub jitter: u64,
    pub init: bool,
    /// Per-process frequency (MHz) for DEmOS's per-process power policies; kept, not used.
    pub frequency: Option<f64>,
    pub path: String,
    order: Vec<&'static str>,
}

impl Process {
    /// The largest budget jitter can give (`budget + jitter − jitter/2`).
    pub fn max_budget(&self) -> u64 {
        self.budget + (self.jitter - self.jitter / 2)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// Milliseconds, ≥ 1.
    pub length: u64,
    /// `None`: a window with only `length` (kept empty, no `slices` key when dumped).
    pub slices: Option<Vec<Slice>>,
    pub path: String,
    slices_first: bool,
}

impl Window {
    pub fn slices(&self) -> &[Slice] {
        self.slices.as_deref().unwrap_or(&[])
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    /// `all` or a CPU list, as written.
    pub cpu: String,
    pub frequency: Option<f64>,
    pub sc_partition: Option<String>,
    pub be_partition: Option<String>,
    /// YAML path of the slice (`windows[0].slices[1]`, or `windows[0]` for an inline slice);
    /// its keys are at `{path}.cpu` etc.
    pub path: String,
    order: Vec<&'static str>,
}

impl Slice {
    /// The slice's CPUs; `all` is `all_cpus`.
    pub fn cpus(&self, all_cpus: CpuSet) -> CpuSet {
        if self.cpu == "all" {
            all_cpus
        } else {
            // validated when the configuration was loaded
            CpuSet::parse(&self.cpu).unwrap_or_default()
        }
    }
}

impl Config {
    /// Parse and normalise a configuration from YAML text.
    pub fn from_yaml(text: &str, source: Source) -> Result<Config> {
        let value: Value = serde_norway::from_str(text)
            .map_err(|e| ConfigError::new("", format!("Configuration error: {e}")))?;
        normalize(&value, source)
    }

    /// Each partition's index by its name.
    pub fn partition_index(&self) -> std::collections::HashMap<&str, usize> {
        self.partitions
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.as_str(), i))
            .collect()
    }

    pub fn partition(&self, name: &str) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.name == name)
    }

    /// The major frame: the sum of the window lengths (ms).
    pub fn major_frame_ms(&self) -> u64 {
        self.windows.iter().map(|w| w.length).sum()
    }

    /// The normalised configuration as `demos-sched -d` prints it.
    pub fn to_demos_yaml(&self) -> String {
        let parts = if self.partitions.is_empty() {
            Y::Null
        } else {
            Y::Seq(self.partitions.iter().map(partition_y).collect())
        };
        let wins = if self.windows.is_empty() {
            Y::Null
        } else {
            Y::Seq(self.windows.iter().map(window_y).collect())
        };
        let top = vec![
            ("set_cwd".to_string(), Y::Raw(self.set_cwd.to_string())),
            ("demos_cpu".to_string(), Y::S(self.demos_cpu.clone())),
            ("partitions".to_string(), parts),
            ("windows".to_string(), wins),
        ];
        let mut lines = Vec::new();
        map_lines(&top, 0, &mut lines);
        lines.join("\n")
    }
}

// ---------------------------------------------------------------------------------------------
// Reading values

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a sequence",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn string(v: &Value, path: &str) -> Result<String> {
    scalar(v).ok_or_else(|| ConfigError::new(path, format!("expected a string, got {}", kind(v))))
}

fn int(v: &Value, path: &str) -> Result<i64> {
    let bad = || {
        ConfigError::new(
            path,
            format!(
                "expected a whole number of milliseconds, got {}",
                scalar(v).map_or_else(|| kind(v).to_string(), |s| format!("'{s}'"))
            ),
        )
    };
    match v {
        Value::Number(n) => n.as_i64().ok_or_else(bad),
        Value::String(s) => s.trim().parse::<i64>().map_err(|_| bad()),
        _ => Err(bad()),
    }
}

/// yaml-cpp's booleans: true/false, yes/no, on/off, y/n in lower, Title or UPPER case.
fn boolean(v: &Value, path: &str) -> Result<bool> {
    let bad = || ConfigError::new(path, format!("expected a boolean, got {}", kind(v)));
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) => {
            let forms = |w: &str| {
                let mut t = w.to_string();
                t[..1].make_ascii_uppercase();
                [w.to_string(), t, w.to_ascii_uppercase()]
            };
            for w in ["true", "yes", "on", "y"] {
                if forms(w).contains(s) {
                    return Ok(true);
                }
            }
            for w in ["false", "no", "off", "n"] {
                if forms(w).contains(s) {
                    return Ok(false);
                }
            }
            Err(ConfigError::new(
                path,
                format!("expected a boolean (true/false, yes/no, on/off), got '{s}'"),
            ))
        }
        _ => Err(bad()),
    }
}

fn float(v: &Value, path: &str) -> Result<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| ConfigError::new(path, format!("expected a number, got {}", kind(v))))
}

/// The entries of a mapping with scalar keys, in document order.
fn entries<'a>(v: &'a Value, path: &str, what: &str) -> Result<Vec<(String, &'a Value)>> {
    match v {
        Value::Mapping(m) => m
            .iter()
            .map(|(k, v)| {
                scalar(k)
                    .map(|k| (k, v))
                    .ok_or_else(|| ConfigError::new(path, "mapping keys must be strings"))
            })
            .collect(),
        Value::Null => Ok(Vec::new()),
        other => Err(ConfigError::new(
            path,
            format!("expected {what}, got {}", kind(other)),
        )),
    }
}

fn get<'a>(e: &[(String, &'a Value)], key: &str) -> Option<&'a Value> {
    e.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// The items of a sequence (`null` is empty).
fn items<'a>(v: &'a Value, path: &str) -> Result<&'a [Value]> {
    match v {
        Value::Sequence(s) => Ok(s),
        Value::Null => Ok(&[]),
        other => Err(ConfigError::new(
            path,
            format!("expected a sequence, got {}", kind(other)),
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// The `demos-sched -d` dump (yaml-cpp's block style)

enum Y {
    S(String),
    /// A number or a boolean: never quoted.
    Raw(String),
    Null,
    Seq(Vec<Y>),
    Map(Vec<(String, Y)>),
}

fn process_y(p: &Process) -> Y {
    Y::Map(
        p.order
            .iter()
            .map(|&k| {
                let v = match k {
                    "cmd" => Y::S(p.cmd.clone()),
                    "budget" => Y::Raw(p.budget.to_string()),
                    "jitter" => Y::Raw(p.jitter.to_string()),
                    "init" => Y::Raw(p.init.to_string()),
                    _ => Y::Raw(p.frequency.unwrap_or_default().to_string()),
                };
                (k.to_string(), v)
            })
            .collect(),
    )
}

fn partition_y(p: &Partition) -> Y {
    Y::Map(
        p.order
            .iter()
            .map(|&k| {
                let v = if k == "name" {
                    Y::S(p.name.clone())
                } else if p.processes.is_empty() {
                    Y::Null
                } else {
                    Y::Seq(p.processes.iter().map(process_y).collect())
                };
                (k.to_string(), v)
            })
            .collect(),
    )
}

fn window_y(w: &Window) -> Y {
    let mut m = vec![("length".to_string(), Y::Raw(w.length.to_string()))];
    if let Some(slices) = &w.slices {
        let s = if slices.is_empty() {
            Y::Null
        } else {
            Y::Seq(slices.iter().map(slice_y).collect())
        };
        let entry = ("slices".to_string(), s);
        if w.slices_first {
            m.insert(0, entry);
        } else {
            m.push(entry);
        }
    }
    Y::Map(m)
}

fn slice_y(s: &Slice) -> Y {
    Y::Map(
        s.order
            .iter()
            .map(|&k| {
                let v = match k {
                    "cpu" => s.cpu.clone(),
                    "frequency" => s.frequency.unwrap_or_default().to_string(),
                    "sc_partition" => s.sc_partition.clone().unwrap_or_default(),
                    _ => s.be_partition.clone().unwrap_or_default(),
                };
                (k.to_string(), Y::S(v))
            })
            .collect(),
    )
}

fn plain(s: &str) -> String {
    let special_start = s
        .chars()
        .next()
        .is_none_or(|c| "-?:,[]{}#&*!|>'\"%@` ".contains(c));
    let reserved = [
        "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", "yes",
        "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y", "n",
    ];
    if special_start
        || s.ends_with(' ')
        || s.contains(": ")
        || s.contains(" #")
        || s.contains('\n')
        || reserved.contains(&s)
    {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        s.to_string()
    }
}

fn map_lines(m: &[(String, Y)], indent: usize, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    for (k, v) in m {
        match v {
            Y::S(s) => out.push(format!("{pad}{k}: {}", plain(s))),
            Y::Raw(s) => out.push(format!("{pad}{k}: {s}")),
            Y::Null => out.push(format!("{pad}{k}: ~")),
            Y::Seq(items) => {
                out.push(format!("{pad}{k}:"));
                for item in items {
                    let start = out.len();
                    match item {
                        Y::Map(m2) => map_lines(m2, indent + 4, out),
                        Y::S(s) => out.push(format!("{pad}    {}", plain(s))),
                        Y::Raw(s) => out.push(format!("{pad}    {s}")),
                        Y::Null => out.push(format!("{pad}    ~")),
                        Y::Seq(_) => out.push(format!("{pad}    []")),
                    }
                    if let Some(first) = out.get_mut(start) {
                        first.replace_range(indent + 2..indent + 4, "- ");
                    }
                }
            }
            Y::Map(m2) => {
                out.push(format!("{pad}{k}:"));
                map_lines(m2, indent + 2, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inline(text: &str) -> Result<Config> {
        Config::from_yaml(text, Source::Inline)
    }

    #[test]
    fn budgets_default_in_single_precision_and_truncate() {
        let c = inline("{windows: [{length: 7, sc_processes: [a, b], be_processes: c}]}").unwrap();
        // 7 × 0.6f = 4.2 / 2 = 2.1 → 2; BE: 7
        assert_eq!(c.partitions[0].processes[0].budget, 2);
        assert_eq!(c.partitions[1].processes[0].budget, 7);
        let e = inline("{windows: [{length: 1, sc_processes: a}]}").unwrap_err();
        assert_eq!(e.path, "windows[0].sc_processes");
        assert!(e.message.contains("got '0'"), "{e}");
    }

    #[test]
    fn yaml_1_1_booleans_are_accepted() {
        let c = inline("{windows: [{length: 5, sc_processes: [{cmd: a, init: yes}]}]}").unwrap();
        assert!(c.partitions[0].processes[0].init);
        let e =
            inline("{windows: [{length: 5, sc_processes: [{cmd: a, init: maybe}]}]}").unwrap_err();
        assert_eq!(e.path, "windows[0].sc_processes[0].init");
    }

    #[test]
    fn anonymous_partitions_are_numbered_in_order() {
        let c = inline(
            "{windows: [{length: 10, slices: [{cpu: 0, be_partition: [x], sc_partition: [y]}]},
                         {length: 10, sc_processes: z}]}",
        )
        .unwrap();
        let names: Vec<_> = c.partitions.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["anonymous_0", "anonymous_1", "anonymous_2"]);
        assert_eq!(c.partitions[0].processes[0].cmd, "x");
        assert_eq!(
            c.windows[0].slices()[0].be_partition.as_deref(),
            Some("anonymous_0")
        );
    }
}
