//! The node admission API `scx_tt.node/v1` of a simulated node (issue 35, docs/cluster.md),
//! end to end: the real binary (`scx_tt --simulated-node --node-api`), its control socket and
//! journal, spoken to over TCP as a cluster scheduler would. What it shows:
//! - the token: no answer but 401 without it;
//! - every bad request is a 400 naming the field, and changes nothing (the capacity before and
//!   after are the same);
//! - a dry run answers what the admit then does, and the reserved slots equal a recomputation
//!   written here from the documented rule (the longest period P dividing the frame with
//!   Q = ceil(U·P) and 2·(P − Q)·slot ≤ L);
//! - remove frees the slots; watch streams the events; a generation from the future is 410;
//! - SIGKILL then `--resume` brings back every task on its CPUs; SIGTERM ends the node at once,
//!   its control socket removed.

mod common;

use common::{fresh_temp_dir, BIN};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "t0ken-for-tests";
const FRAME: u64 = 120;
const SLOT_US: u64 = 10_000;

struct Node {
    child: Child,
    addr: String,
    dir: PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn setup(dir: &Path) {
    let plan = json!({"version": 1, "slot_us": SLOT_US, "frame_slots": FRAME,
        "cpus": {"managed": [1, 2, 3, 4], "housekeeping": [0]},
        "tasks": [{"name": "base", "class": "tt", "cpu": 1, "period": 12, "wcet": 1, "comm": "no-such-thread"}]});
    std::fs::write(dir.join("plan.json"), plan.to_string()).unwrap();
    let token = dir.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Starts the node on `listen` (port 0: any), waiting for its "listening" line.
fn start(dir: &Path, listen: &str, resume: bool) -> Node {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "--table",
        "plan.json",
        "--planner",
        "bss",
        "--simulated-node",
    ])
    .args(["--control", "ctl.sock", "--run-dir", "."])
    .args([
        "--node-api",
        listen,
        "--node-token-file",
        "token",
        "--node-name",
        "n1",
    ])
    .current_dir(dir)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if resume {
        cmd.arg("--resume");
    }
    let mut child = cmd.spawn().expect("scx_tt starts");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let addr = loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            panic!("scx_tt ended before serving: {seen}");
        }
        seen.push_str(&line);
        if let Some(a) = line.trim().strip_prefix("scx_tt: node API listening on ") {
            break a.to_string();
        }
    };
    // the rest of its stderr is drained so that it never blocks on a full pipe
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    Node {
        child,
        addr,
        dir: dir.to_path_buf(),
    }
}

/// One request; (status, body).
fn http(addr: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).expect("an answer");
    let status = text[9..12].parse().expect("a status");
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{body}: {e}"))
}

fn call(n: &Node, method: &str, path: &str, body: &str) -> (u16, Value) {
    let (st, b) = http(&n.addr, method, path, Some(TOKEN), body);
    (st, json_of(&b))
}

/// (cpu, reserved_slots, tasks) of each CPU.
fn state(n: &Node) -> Vec<(u64, u64, Vec<String>)> {
    let (st, cap) = call(n, "GET", "/v1/capacity", "");
    assert_eq!(st, 200, "{cap}");
    cap["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let tasks = c["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string());
            (
                c["cpu"].as_u64().unwrap(),
                c["reserved_slots"].as_u64().unwrap(),
                tasks.collect(),
            )
        })
        .collect()
}

/// Slots per frame a vCPU of (util, latency) reserves, by the documented rule, by brute force.
fn slots_by_hand(util: f64, latency_us: u64) -> u64 {
    let mut best = None;
    for p in 1..=FRAME {
        if !FRAME.is_multiple_of(p) {
            continue;
        }
        let q = (util * p as f64).ceil() as u64;
        if q <= p && 2 * (p - q) * SLOT_US <= latency_us {
            best = Some((p, q));
        }
    }
    let (p, q) = best.expect("period 1 always fits");
    q * (FRAME / p)
}

fn request(name: &str, vcpus: u32, util: f64, latency_us: u64) -> String {
    json!({"name": name, "vcpus": vcpus, "timing": {"util": util, "latency_us": latency_us}})
        .to_string()
}

#[test]
fn a_simulated_node_serves_the_node_api_with_its_rules_and_its_journal() {
    let dir = fresh_temp_dir("node_api", "node");
    setup(&dir);
    let n = start(&dir, "127.0.0.1:0", false);
    let base = state(&n);
    assert_eq!(base[0], (1, 10, vec!["base".to_string()]), "{base:?}");

    // the token
    for token in [None, Some("wrong"), Some("t0ken-for-test")] {
        let (st, body) = http(&n.addr, "GET", "/v1/capacity", token, "");
        assert_eq!(st, 401, "{token:?}: {body}");
    }

    // bad requests: 400 naming the field; nothing changes
    let huge = format!("{{\"name\":\"{}\"}}", "x".repeat(70_000));
    for (path, body, field) in [
        (
            "/v1/admit",
            r#"{"name":"nons","vcpus":1,"timing":{"util":0.2,"latency_us":100000}}"#,
            "name",
        ),
        (
            "/v1/admit",
            r#"{"name":"a/b","vcpus":0,"timing":{"util":0.2,"latency_us":100000}}"#,
            "vcpus",
        ),
        (
            "/v1/admit",
            r#"{"name":"a/b","vcpus":4294967296,"timing":{"util":0.2,"latency_us":1}}"#,
            "vcpus",
        ),
        (
            "/v1/admit",
            r#"{"name":"a/b","vcpus":1,"timing":{"util":1.0,"latency_us":100000}}"#,
            "timing.util",
        ),
        (
            "/v1/dry-run",
            r#"{"name":"a/b","vcpus":1,"timing":{"util":0.2,"latency_us":0}}"#,
            "timing.latency_us",
        ),
        (
            "/v1/dry-run",
            r#"{"name":"a/b","vcpus":1,"timing":{"util":0.2,"latency_us":-5}}"#,
            "timing.latency_us",
        ),
        (
            "/v1/admit",
            r#"{"name":"a/b","vcpus":1,"timing":{"util":0.2,"latency_us":9},"cpu":1}"#,
            "cpu",
        ),
        ("/v1/admit", "not json", "body"),
        ("/v1/remove", r#"{"name":""}"#, "name"),
        ("/v1/remove", &huge, "body"),
    ] {
        let (st, b) = call(&n, "POST", path, body);
        assert_eq!(st, 400, "{path} {}: {b}", &body[..body.len().min(80)]);
        assert_eq!(b["error"]["field"], field, "{b}");
        assert!(!b["error"]["rule"].as_str().unwrap().is_empty(), "{b}");
    }
    let (st, b) = call(
        &n,
        "POST",
        "/v1/admit",
        &request("ns/too-big", 5, 0.2, 100_000),
    );
    assert_eq!(st, 422, "5 vCPUs on 4 CPUs: {b}");
    assert!(
        b["message"].as_str().unwrap().contains("vcpus")
            || b["message"].as_str().unwrap().contains("select"),
        "{b}"
    );
    let (st, b) = call(&n, "GET", "/v1/nothing", "");
    assert_eq!(st, 404, "{b}");
    assert_eq!(state(&n), base, "a refused request changed the node");

    // a first pod takes CPU 2 and leaves again before the kill, so that the VM's CPUs (3, 4)
    // are not where a fresh placement would put it (2, 3): --resume must keep them
    let (st, big) = call(&n, "POST", "/v1/admit", &request("ns/big", 1, 0.6, 100_000));
    assert_eq!((st, &big["cpus"]), (200, &json!([2])), "{big}");
    let with_big = state(&n);

    // dry run, then the admit gets the same CPUs; the slots are the rule's
    let vm = request("ns/vm", 2, 0.3, 200_000);
    let (st, dry) = call(&n, "POST", "/v1/dry-run", &vm);
    assert_eq!((st, &dry["admit"]), (200, &json!(true)), "{dry}");
    assert_eq!(state(&n), with_big, "a dry run changed the node");
    let (st, adm) = call(&n, "POST", "/v1/admit", &vm);
    assert_eq!((st, &adm["admitted"]), (200, &json!(true)), "{adm}");
    assert_eq!(
        adm["cpus"], dry["cpus"],
        "the admit took other CPUs than its dry run said"
    );
    let (st, dup) = call(&n, "POST", "/v1/admit", &vm);
    assert_eq!(st, 409, "{dup}");
    let (st, one) = call(&n, "POST", "/v1/admit", &request("ns/one", 1, 0.15, 60_000));
    assert_eq!((st, &one["admitted"]), (200, &json!(true)), "{one}");
    let now = state(&n);
    let mut want: Vec<u64> = base.iter().map(|c| c.1).collect();
    let at = |cpu: &Value| {
        now.iter()
            .position(|c| c.0 == cpu.as_u64().unwrap())
            .unwrap()
    };
    for c in adm["cpus"].as_array().unwrap() {
        want[at(c)] += slots_by_hand(0.3, 200_000);
    }
    want[at(&one["cpus"][0])] += slots_by_hand(0.15, 60_000);
    want[at(&big["cpus"][0])] += slots_by_hand(0.6, 100_000);
    assert_eq!(now.iter().map(|c| c.1).collect::<Vec<_>>(), want, "{now:?}");
    assert_eq!(adm["cpus"], json!([3, 4]), "{now:?}");
    let (st, rm) = call(&n, "POST", "/v1/remove", r#"{"name":"ns/big"}"#);
    assert_eq!((st, &rm["removed"]), (200, &json!(true)), "{rm}");
    let cpu0 = at(&adm["cpus"][0]);
    assert!(now[cpu0].2.contains(&"ns/vm/vcpu0".to_string()), "{now:?}");

    // watch: the two admissions, then a generation from the future is gone
    let (st, w) = http(&n.addr, "GET", "/v1/watch?since=99", Some(TOKEN), "");
    assert_eq!(st, 410, "{w}");
    let mut s = TcpStream::connect(&n.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /v1/watch?since=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut events = Vec::new();
    let mut line = String::new();
    while events.len() < 4 && r.read_line(&mut line).unwrap() > 0 {
        if line.starts_with('{') {
            events.push(json_of(&line));
        }
        line.clear();
    }
    let names: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["event"].as_str().unwrap(), e["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("admitted", "ns/big"),
            ("admitted", "ns/vm"),
            ("admitted", "ns/one"),
            ("removed", "ns/big")
        ]
    );

    // killed and resumed: the same tasks on the same CPUs
    let before = state(&n);
    let addr = n.addr.clone();
    drop(n);
    let n = start(&dir, &addr, true);
    assert_eq!(state(&n), before, "--resume moved or lost a task");

    // remove frees the slots
    let (st, rm) = call(&n, "POST", "/v1/remove", r#"{"name":"ns/vm"}"#);
    assert_eq!((st, &rm["removed"]), (200, &json!(true)), "{rm}");
    let (st, rm) = call(&n, "POST", "/v1/remove", r#"{"name":"ns/vm"}"#);
    assert_eq!((st, &rm["removed"]), (200, &json!(false)), "{rm}");
    let after: Vec<u64> = state(&n).iter().map(|c| c.1).collect();
    let mut want = base.iter().map(|c| c.1).collect::<Vec<_>>();
    want[at(&one["cpus"][0])] += slots_by_hand(0.15, 60_000);
    assert_eq!(after, want);

    // SIGTERM: it ends at once, its socket gone
    let mut n = n;
    let t0 = Instant::now();
    unsafe { libc::kill(n.child.id() as i32, libc::SIGTERM) };
    let status = n.child.wait().unwrap();
    let took = t0.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(took < Duration::from_secs(3), "SIGTERM took {took:?}");
    assert!(
        !n.dir.join("ctl.sock").exists(),
        "the control socket was left behind"
    );
    eprintln!("node_api: SIGTERM ended the node in {took:?}");
}

/// Threads of process `pid` now.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Sends `raw` on a new connection and reads the answer's status (0: closed without one).
fn raw_status(addr: &str, raw: &[u8]) -> u16 {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(raw);
    let mut text = Vec::new();
    let _ = s.read_to_end(&mut text);
    std::str::from_utf8(text.get(9..12).unwrap_or(b"000"))
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

/// What a client may send without a token cannot exhaust the node (docs/cluster.md, "Bounds"):
/// 300 connections that send nothing and one that sends a byte a second add no thread to the
/// process (tiny_http, before, spawned one per connection and never timed them out); the ones
/// past the queue are answered 503 at once, the others are cut off with 408 after the request
/// deadline; heads too long or with too many headers, a length that is no number and a chunked
/// body are refused with their status; and the node answers as before once they are gone.
#[test]
fn idle_and_slow_connections_are_bounded_and_cut_off() {
    let dir = fresh_temp_dir("node_api", "bounds");
    setup(&dir);
    let n = start(&dir, "127.0.0.1:0", false);
    let pid = n.child.id();
    assert_eq!(call(&n, "GET", "/v1/capacity", "").0, 200);
    let before = threads(pid);

    // Malformed requests: each refused with its status, naming the rule.
    let long_head = format!(
        "GET /v1/capacity HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    let many: String = (0..100).map(|i| format!("X-H{i}: v\r\n")).collect();
    let cases: [(&str, Vec<u8>, u16); 4] = [
        ("head over 16 KiB", long_head.into_bytes(), 431),
        (
            "100 headers",
            format!("GET /v1/capacity HTTP/1.1\r\n{many}\r\n").into_bytes(),
            431,
        ),
        (
            "Content-Length not a number",
            b"POST /v1/admit HTTP/1.1\r\nContent-Length: ten\r\n\r\n".to_vec(),
            400,
        ),
        (
            "chunked body",
            b"POST /v1/admit HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
            411,
        ),
    ];
    for (what, raw, want) in cases {
        assert_eq!(raw_status(&n.addr, &raw), want, "{what}");
    }

    // 300 idle connections.
    let t0 = Instant::now();
    let mut idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(&n.addr).expect("connects"))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let during = threads(pid);
    println!("threads of scx_tt: {before} before, {during} with 300 idle connections");
    assert!(
        during <= before + 1,
        "idle connections took threads: {before} before, {during} with them"
    );
    let (mut busy, mut cut, mut last_cut) = (0, 0, Duration::ZERO);
    for s in &mut idle {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut text = Vec::new();
        let _ = s.read_to_end(&mut text);
        match text.get(9..12) {
            Some(b"503") => busy += 1,
            Some(b"408") => {
                cut += 1;
                last_cut = t0.elapsed();
            }
            other => panic!(
                "an idle connection got {:?}",
                other.map(String::from_utf8_lossy)
            ),
        }
    }
    println!(
        "300 idle connections: {busy} answered 503 at once, {cut} cut off with 408 (the last \
         after {:.1} s; deadline 5 s from acceptance)",
        last_cut.as_secs_f64()
    );
    // The workers (4) and the queue (64) hold the rest; the others were turned away.
    assert!(busy >= 300 - 4 - 64 - 1, "{busy} answered 503");
    assert!(cut >= 1, "none waited for a worker");
    assert!(
        last_cut < Duration::from_secs(5 + 5),
        "the queue took {last_cut:?} to empty"
    );
    assert_eq!(call(&n, "GET", "/v1/capacity", "").0, 200);

    // A client that sends a byte every 0.9 s is cut off at the deadline.
    let mut s = TcpStream::connect(&n.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(900)))
        .unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    for b in b"GET /v1/capacity HTTP/1.1\r\nHost: x\r\n".iter().cycle() {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        let mut buf = [0u8; 512];
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => answer.extend_from_slice(&buf[..k]),
            Err(_) => {}
        }
        if !answer.is_empty() || started.elapsed() > Duration::from_secs(30) {
            break;
        }
    }
    let took = started.elapsed();
    let answer = String::from_utf8_lossy(&answer).to_string();
    println!(
        "a client sending a byte every 0.9 s: answered after {:.1} s: {}",
        took.as_secs_f64(),
        answer.lines().next().unwrap_or("")
    );
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(took < Duration::from_secs(5 + 3), "cut off after {took:?}");
    drop(idle);
    assert_eq!(call(&n, "GET", "/v1/capacity", "").0, 200);
    assert!(threads(pid) <= before + 1);
    let _ = std::fs::remove_dir_all(&dir);
}
