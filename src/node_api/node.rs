//! What each endpoint does: a node API request becomes one line of the control protocol, sent
//! to the run's own control socket (`--control`), so the node API and `scx_tt ctl` go through
//! one code path (`Control::serve`); the control reply becomes the node API's answer. Also the
//! node's generation and events, from the task sets `capacity` reports.

use super::simulated::Processes;
use super::wire::{
    AdmitReply, Capacity, Cpu, DryRunReply, Event, FieldError, RemoveReply, Request, API,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long a control request may take before the node API gives up on it.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest control reply read.
const MAX_REPLY: u64 = 4 << 20;
/// The events kept for `watch` (older ones: the client re-lists, HTTP 410).
pub const MAX_EVENTS: usize = 4096;

/// An answer other than 200.
#[derive(Debug, PartialEq)]
pub enum Failure {
    /// 400: a value broke a rule.
    Field(FieldError),
    /// 409: the name is admitted already.
    Conflict(String),
    /// 410: `since` is not a generation of this node's history.
    Gone(String),
    /// 422: the engine refused the request for another reason.
    Refused(String),
    /// 503: the control socket did not answer.
    Unavailable(String),
}

/// The node: its control socket, its name, the simulated processes of a simulated node, and
/// the generation history.
pub struct Node {
    control: PathBuf,
    name: String,
    procs: Option<Arc<Processes>>,
    /// One request at a time goes to the engine: a change and the generation it makes are
    /// then read together.
    state: Mutex<History>,
    changed: Condvar,
}

/// The tasks as last seen (base name → CPUs in vCPU order) and the events since the start.
#[derive(Default)]
pub struct History {
    pub generation: u64,
    tasks: Option<BTreeMap<String, Vec<u32>>>,
    events: VecDeque<Event>,
}

impl History {
    /// Takes the task list of a capacity reading: each change since the last reading is an
    /// event with the next generation (the first reading makes none).
    pub fn observe(&mut self, now: BTreeMap<String, Vec<u32>>) {
        let Some(before) = self.tasks.take() else {
            self.tasks = Some(now);
            return;
        };
        let mut push = |event: &str, name: &str, cpus: &[u32]| {
            self.generation += 1;
            if self.events.len() == MAX_EVENTS {
                self.events.pop_front();
            }
            self.events.push_back(Event {
                generation: self.generation,
                event: event.into(),
                name: name.into(),
                cpus: cpus.to_vec(),
            });
        };
        for (name, cpus) in &before {
            if now.get(name) != Some(cpus) {
                push("removed", name, cpus);
            }
        }
        for (name, cpus) in &now {
            if before.get(name) != Some(cpus) {
                push("admitted", name, cpus);
            }
        }
        self.tasks = Some(now);
    }

    /// The events after generation `since`; `Err` when `since` is ahead of this node (another
    /// process's history) or older than what is kept.
    pub fn since(&self, since: u64) -> Result<Vec<Event>, String> {
        if since > self.generation {
            return Err(format!(
                "since = {since}: this node is at generation {} (it restarted?): list its \
                 capacity again and watch from there",
                self.generation
            ));
        }
        if let Some(first) = self.events.front() {
            if since + 1 < first.generation {
                return Err(format!(
                    "since = {since}: the events kept start at generation {}: list its \
                     capacity again",
                    first.generation
                ));
            }
        }
        Ok(self
            .events
            .iter()
            .filter(|e| e.generation > since)
            .cloned()
            .collect())
    }
}

/// A task's name without its `/vcpuK` suffix, and K (0 for a task of one vCPU). K is
/// written as the control protocol writes it: decimal digits, no leading zero.
pub fn split_vcpu(task: &str) -> (&str, u32) {
    if let Some((base, k)) = task.rsplit_once("/vcpu") {
        let canonical = !k.is_empty()
            && k.bytes().all(|b| b.is_ascii_digit())
            && (k == "0" || !k.starts_with('0'));
        if let (true, Ok(k)) = (canonical, k.parse::<u32>()) {
            return (base, k);
        }
    }
    (task, 0)
}

/// The tasks of a capacity reading by base name, each with its CPUs in vCPU order.
pub fn tasks_of(cap: &Capacity) -> BTreeMap<String, Vec<u32>> {
    let mut by: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
    for c in &cap.cpus {
        for t in &c.tasks {
            let (base, k) = split_vcpu(t);
            by.entry(base.to_string()).or_default().push((k, c.cpu));
        }
    }
    by.into_iter()
        .map(|(n, mut v)| {
            v.sort_unstable();
            (n, v.into_iter().map(|(_, c)| c).collect())
        })
        .collect()
}

impl Node {
    pub fn new(control: PathBuf, name: String, procs: Option<Arc<Processes>>) -> Self {
        Node {
            control,
            name,
            procs,
            state: Mutex::new(History::default()),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, History> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One control request and its reply (a JSON object).
    fn call(&self, request: &Value) -> Result<Value, Failure> {
        let fail = |e: &dyn std::fmt::Display| {
            Failure::Unavailable(format!(
                "the control socket {}: {e}",
                self.control.display()
            ))
        };
        let mut s = UnixStream::connect(&self.control).map_err(|e| fail(&e))?;
        s.set_read_timeout(Some(CONTROL_TIMEOUT))
            .and_then(|_| s.set_write_timeout(Some(CONTROL_TIMEOUT)))
            .map_err(|e| fail(&e))?;
        let mut line = request.to_string();
        line.push('\n');
        s.write_all(line.as_bytes()).map_err(|e| fail(&e))?;
        let mut reply = String::new();
        BufReader::new(s.take(MAX_REPLY))
            .read_line(&mut reply)
            .map_err(|e| fail(&e))?;
        serde_json::from_str(&reply).map_err(|e| fail(&format!("reply {reply:?}: {e}")))
    }

    /// `error` of a refused control request as the node API's failure.
    fn refused(reply: &Value) -> Option<Failure> {
        if reply["ok"] == Value::Bool(true) {
            return None;
        }
        let text = reply["error"].as_str().unwrap_or("refused").to_string();
        Some(match text.contains("already names a task of this run") {
            true => Failure::Conflict(text),
            false => Failure::Refused(text),
        })
    }

    /// The capacity reading and the events it makes, under the lock held.
    fn read(&self, h: &mut History) -> Result<Capacity, Failure> {
        let reply = self.call(&json!({"op": "capacity"}))?;
        if let Some(f) = Self::refused(&reply) {
            return Err(f);
        }
        let mut cap = capacity_of(&reply, &self.name).map_err(Failure::Unavailable)?;
        let before = h.generation;
        h.observe(tasks_of(&cap));
        if h.generation != before {
            self.changed.notify_all();
        }
        cap.generation = h.generation;
        Ok(cap)
    }

    /// `GET /v1/capacity`.
    pub fn capacity(&self) -> Result<Capacity, Failure> {
        let mut h = self.lock();
        self.read(&mut h)
    }

    /// Re-reads the capacity (the poller: changes made through `scx_tt ctl`, gone tasks).
    pub fn refresh(&self) {
        let _ = self.capacity();
    }

    /// `POST /v1/dry-run`.
    pub fn dry_run(&self, r: &Request) -> Result<DryRunReply, Failure> {
        r.check().map_err(Failure::Field)?;
        let mut line = admit_line(r);
        line["dry_run"] = Value::Bool(true);
        if r.select.is_none() {
            line["vcpus"] = json!(r.vcpus);
        }
        let _h = self.lock();
        let reply = self.call(&line)?;
        match Self::refused(&reply) {
            Some(Failure::Conflict(why)) => Ok(DryRunReply {
                admit: false,
                cpus: vec![],
                reason: why,
            }),
            Some(f) => Err(f),
            None => Ok(DryRunReply {
                admit: reply["admit"] == Value::Bool(true),
                cpus: u32s(&reply["cpus"]),
                reason: reply["why"].as_str().unwrap_or_default().into(),
            }),
        }
    }

    /// `POST /v1/admit`: on a simulated node without `select`, a simulated QEMU process of
    /// `vcpus` vCPUs named after the pod is started first (stopped again when not admitted).
    pub fn admit(&self, r: &Request) -> Result<AdmitReply, Failure> {
        r.check().map_err(Failure::Field)?;
        let mut line = admit_line(r);
        let mut h = self.lock();
        let started = match (&self.procs, &r.select) {
            (Some(p), None) => {
                if let Some(t) = h.tasks.as_ref() {
                    if t.contains_key(&r.name) {
                        return Err(Failure::Conflict(format!("{} is admitted already", r.name)));
                    }
                }
                p.start(&r.name, r.vcpus).map_err(Failure::Refused)?;
                line["select"] = json!({"qemu_name": r.name});
                true
            }
            (None, None) => {
                return Err(Failure::Field(FieldError::new(
                    "select",
                    "null",
                    "required on a node that runs the tasks: the pod's threads, e.g. \
                     {\"qemu_name\": ...} or {\"cgroup\": ...} (docs/cluster.md)",
                )))
            }
            (_, Some(_)) => false,
        };
        let result = self.call(&line);
        let accepted = matches!(&result, Ok(v) if v["ok"] == Value::Bool(true) && v["accepted"] == Value::Bool(true));
        if started && !accepted {
            if let Some(p) = &self.procs {
                let _ = p.stop(&r.name);
            }
        }
        let reply = result?;
        if let Some(f) = Self::refused(&reply) {
            return Err(f);
        }
        if !accepted {
            return Ok(AdmitReply {
                admitted: false,
                cpus: vec![],
                generation: 0,
                reason: reply["why"].as_str().unwrap_or_default().into(),
            });
        }
        let cpus = reply["tasks"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| t["cpu"].as_u64())
                    .map(|c| c as u32)
                    .collect()
            })
            .unwrap_or_default();
        let generation = self.read(&mut h).map_or(h.generation, |c| c.generation);
        Ok(AdmitReply {
            admitted: true,
            cpus,
            generation,
            reason: String::new(),
        })
    }

    /// `POST /v1/remove`: the task leaves the plan (its capacity is free at once); a simulated
    /// node's process of that name stops.
    pub fn remove(&self, name: &str) -> Result<RemoveReply, Failure> {
        super::wire::check_name(name).map_err(Failure::Field)?;
        let mut h = self.lock();
        let reply = self.call(&json!({"op": "remove", "task": name}))?;
        let removed = reply["ok"] == Value::Bool(true);
        if let Some(p) = &self.procs {
            p.stop(name).map_err(Failure::Refused)?;
        }
        let generation = match removed {
            true => self.read(&mut h).map_or(h.generation, |c| c.generation),
            false => 0,
        };
        Ok(RemoveReply {
            removed,
            generation,
        })
    }

    /// The events after `since`, waiting up to `wait` for one when there is none yet.
    pub fn events(&self, since: u64, wait: Duration) -> Result<Vec<Event>, Failure> {
        let h = self.lock();
        let evs = h.since(since).map_err(Failure::Gone)?;
        if !evs.is_empty() {
            return Ok(evs);
        }
        let (h, _) = self
            .changed
            .wait_timeout(h, wait)
            .unwrap_or_else(|e| e.into_inner());
        h.since(since).map_err(Failure::Gone)
    }
}

/// The control `admit` line of a node API request (without `dry_run`).
fn admit_line(r: &Request) -> Value {
    let mut line = json!({
        "op": "admit",
        "name": r.name,
        "util": r.timing.util,
        "latency_us": r.timing.latency_us,
    });
    if let Some(s) = &r.select {
        line["select"] = s.clone();
    }
    line
}

fn u32s(v: &Value) -> Vec<u32> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_u64)
                .map(|c| c as u32)
                .collect()
        })
        .unwrap_or_default()
}

/// A control `capacity` reply as the node API's capacity (generation left 0).
pub fn capacity_of(reply: &Value, node: &str) -> Result<Capacity, String> {
    let num = |v: &Value, f: &str| {
        v[f].as_u64()
            .ok_or_else(|| format!("capacity reply without {f}: {reply}"))
    };
    let frame = num(reply, "frame_slots")?;
    let mut cpus = Vec::new();
    for c in reply["cpus"]
        .as_array()
        .ok_or("capacity reply without cpus")?
    {
        let reserved = num(c, "reserved_slots")?;
        cpus.push(Cpu {
            cpu: num(c, "cpu")? as u32,
            utilisation: reserved as f64 / frame.max(1) as f64,
            reserved_slots: reserved,
            firm_slots: num(c, "firm_slots")?,
            spare_slots: num(c, "spare_slots")?,
            tasks: c["tasks"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .filter_map(|s| s.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    Ok(Capacity {
        api: API.into(),
        node: node.into(),
        generation: 0,
        slot_us: num(reply, "slot_us")?,
        frame_slots: frame,
        cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(pairs: &[(&str, &[u32])]) -> BTreeMap<String, Vec<u32>> {
        pairs
            .iter()
            .map(|(n, c)| (n.to_string(), c.to_vec()))
            .collect()
    }

    #[test]
    fn vcpu_suffixes_split_only_when_they_are_a_number() {
        assert_eq!(split_vcpu("ns/vm/vcpu12"), ("ns/vm", 12));
        assert_eq!(split_vcpu("ns/vm"), ("ns/vm", 0));
        assert_eq!(split_vcpu("ns/vm/vcpux"), ("ns/vm/vcpux", 0));
        assert_eq!(split_vcpu("ns/vm/vcpu"), ("ns/vm/vcpu", 0));
        assert_eq!(split_vcpu("ns/vm/vcpu+1"), ("ns/vm/vcpu+1", 0));
        assert_eq!(split_vcpu("ns/vm/vcpu01"), ("ns/vm/vcpu01", 0));
    }

    #[test]
    fn capacity_readings_become_events_with_one_generation_each() {
        let mut h = History::default();
        h.observe(tasks(&[("base", &[1])]));
        assert_eq!(h.generation, 0, "the first reading makes no event");
        h.observe(tasks(&[("base", &[1]), ("ns/a", &[2, 3])]));
        h.observe(tasks(&[("base", &[1]), ("ns/a", &[2, 3])]));
        assert_eq!(h.generation, 1);
        h.observe(tasks(&[("base", &[1]), ("ns/b", &[1])]));
        let evs = h.since(0).unwrap();
        let got: Vec<(u64, &str, &str, Vec<u32>)> = evs
            .iter()
            .map(|e| {
                (
                    e.generation,
                    e.event.as_str(),
                    e.name.as_str(),
                    e.cpus.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, "admitted", "ns/a", vec![2, 3]),
                (2, "removed", "ns/a", vec![2, 3]),
                (3, "admitted", "ns/b", vec![1]),
            ]
        );
        assert_eq!(h.since(2).unwrap().len(), 1);
        assert!(h.since(3).unwrap().is_empty());
        assert!(h.since(4).unwrap_err().contains("generation 3"));
    }

    #[test]
    fn old_generations_beyond_what_is_kept_are_gone() {
        let mut h = History::default();
        h.observe(BTreeMap::new());
        for i in 0..(MAX_EVENTS + 10) {
            h.observe(tasks(&[(&format!("ns/t{}", i % 2), &[1])]));
        }
        assert_eq!(h.events.len(), MAX_EVENTS);
        let first = h.events.front().unwrap().generation;
        assert!(h.since(first - 1).is_ok());
        assert!(h
            .since(first - 2)
            .unwrap_err()
            .contains("list its capacity again"));
    }

    #[test]
    fn a_control_capacity_reply_maps_to_the_node_apis() {
        let reply: Value = serde_json::from_str(
            r#"{"ok":true,"slot_us":10000,"frame_slots":120,"from_slot":6,"cpus":[
            {"cpu":1,"reserved_slots":30,"firm_slots":0,"spare_slots":200,"spare_until_slot":360,"tasks":["base","ns/vm/vcpu1"]},
            {"cpu":2,"reserved_slots":0,"firm_slots":2,"spare_slots":240,"spare_until_slot":360,"tasks":["ns/vm/vcpu0","ns/p"]}]}"#,
        )
        .unwrap();
        let cap = capacity_of(&reply, "n1").unwrap();
        assert_eq!(
            (cap.api.as_str(), cap.frame_slots, cap.slot_us),
            (API, 120, 10000)
        );
        assert_eq!(cap.cpus[0].utilisation, 0.25);
        assert_eq!(cap.cpus[1].firm_slots, 2);
        assert_eq!(
            tasks_of(&cap),
            tasks(&[("base", &[1]), ("ns/p", &[2]), ("ns/vm", &[2, 1])])
        );
        assert!(capacity_of(&serde_json::json!({"ok":true}), "n").is_err());
    }
}
