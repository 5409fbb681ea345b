//! `scx_tt ctl` against a fake control socket (docs/control.md): what it sends, what it prints,
//! and its exit codes (0 ok reply, 1 error reply, 2 socket unreachable or silent, 3 admit-firm
//! rejected).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

fn ctl(socket: &Path, args: &[&str]) -> Output {
    common::scx_tt()
        .current_dir(socket.parent().expect("dir"))
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(args)
        .output()
        .expect("runs scx_tt")
}

/// A server answering one request with `reply` (None: read it and stay silent); returns the
/// request line it received.
fn serve_once(socket: &Path, reply: Option<String>) -> JoinHandle<String> {
    let listener = UnixListener::bind(socket).expect("bind");
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut line = String::new();
        BufReader::new(&stream)
            .read_line(&mut line)
            .expect("request");
        match reply {
            Some(r) => (&stream).write_all(r.as_bytes()).expect("reply"),
            None => std::thread::sleep(std::time::Duration::from_millis(1500)),
        }
        line
    })
}

/// Runs `scx_tt ctl ARGS` against a server on a new socket in `dir` answering the line `reply`
/// (JSON); checks that ctl prints the reply line and exits `code`; returns the request line the
/// server received.
fn exchange(dir: &Path, args: &[&str], reply: &str, code: i32) -> String {
    static SOCKETS: AtomicUsize = AtomicUsize::new(0);
    let sock = dir.join(format!("s{}", SOCKETS.fetch_add(1, Ordering::Relaxed)));
    serde_json::from_str::<serde_json::Value>(reply).expect("the reply is JSON");
    let line = format!("{reply}\n");
    let server = serve_once(&sock, Some(line.clone()));
    let out = ctl(&sock, args);
    assert_eq!(String::from_utf8_lossy(&out.stdout), line);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {reply}");
    server.join().expect("server")
}

/// The stderr of a ctl run, which must have exited 2.
fn exit_2(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

#[test]
fn an_ok_reply_is_printed_and_exits_0() {
    let dir = common::temp_dir("ctl-cli", "ok");
    let reply =
        r#"{"ok":true,"slot":5,"frame_slots":8,"table":"/a.json","pending_switch_slot":null}"#;
    assert_eq!(
        exchange(&dir, &["status"], reply, 0),
        "{\"op\":\"status\"}\n"
    );
}

#[test]
fn switch_table_sends_an_absolute_path_and_an_error_reply_exits_1() {
    let dir = common::temp_dir("ctl-cli", "err");
    let reply = r#"{"ok":false,"error":"slot_us = 5000: must equal the running plan's 10000"}"#;
    let line = exchange(&dir, &["switch-table", "b.json"], reply, 1);
    let request: serde_json::Value = serde_json::from_str(&line).expect("JSON request");
    assert_eq!(request["op"], "switch_table");
    assert_eq!(
        request["plan"].as_str().map(PathBuf::from),
        Some(dir.join("b.json"))
    );
}

#[test]
fn a_missing_socket_exits_2_and_names_it() {
    let sock = common::temp_dir("ctl-cli", "missing").join("nobody");
    let err = exit_2(&ctl(&sock, &["status"]));
    assert!(
        err.contains("cannot reach the control socket") && err.contains("nobody"),
        "{err}"
    );
}

#[test]
fn a_silent_server_exits_2_after_the_timeout() {
    let sock = common::temp_dir("ctl-cli", "silent").join("s");
    let server = serve_once(&sock, None);
    let err = exit_2(&ctl(&sock, &["--timeout-s", "0.3", "status"]));
    assert!(err.contains("no reply from the control socket"), "{err}");
    let _ = server.join();
}

#[test]
fn admit_firm_sends_the_request_and_exits_0_accepted_3_rejected_1_error() {
    let dir = common::temp_dir("ctl-cli", "admit");
    let cases = [
        (
            r#"{"ok":true,"accepted":true,"cpu":1,"deadline_slot":90,"first_slot":33}"#,
            0,
        ),
        (
            r#"{"ok":true,"accepted":false,"needed":40,"available":12,"deadline_slot":60}"#,
            3,
        ),
        (
            r#"{"ok":false,"error":"task = \"x\": no task of the plan has this name"}"#,
            1,
        ),
    ];
    let args = [
        "admit-firm",
        "--task",
        "tt-a",
        "--wcet-slots",
        "20",
        "--deadline-slots",
        "60",
    ];
    for (reply, code) in cases {
        assert_eq!(
            exchange(&dir, &args, reply, code),
            "{\"op\":\"admit_firm\",\"task\":\"tt-a\",\"wcet_slots\":20,\"deadline_slots\":60}\n"
        );
    }
}

#[test]
fn set_policy_sends_the_policy_and_exits_0_ok_1_error() {
    let dir = common::temp_dir("ctl-cli", "policy");
    let cases = [
        ("dvfs", r#"{"ok":true,"policy":"dvfs","from_slot":41}"#, 0),
        (
            "dpm",
            r#"{"ok":false,"error":"policy = \"dpm\": the kernel path runs bss or dvfs only"}"#,
            1,
        ),
    ];
    for (policy, reply, code) in cases {
        assert_eq!(
            exchange(&dir, &["set-policy", policy], reply, code),
            format!("{{\"op\":\"set_policy\",\"policy\":\"{policy}\"}}\n")
        );
    }
    // an unknown name never reaches the socket: a usage error naming the value
    let err = exit_2(&ctl(&dir.join("nobody"), &["set-policy", "turbo"]));
    assert!(err.contains("unknown policy \"turbo\""), "{err}");
}

#[test]
fn admit_periodic_and_remove_send_the_task_and_exit_0_accepted_3_rejected_1_error() {
    let dir = common::temp_dir("ctl-cli", "periodic");
    let cases = [
        (
            "admit-periodic",
            r#"{"ok":true,"accepted":true,"cpu":1,"from_slot":400}"#,
            0,
        ),
        (
            "admit-periodic",
            r#"{"ok":true,"accepted":false,"why":"80 slots every 100 slots on cpu 1: frame infeasible"}"#,
            3,
        ),
        (
            "admit-periodic",
            r#"{"ok":false,"error":"task = \"a\": is not declared"}"#,
            1,
        ),
        ("remove", r#"{"ok":true,"removed":true,"from_slot":642}"#, 0),
        (
            "remove",
            r#"{"ok":false,"error":"task = \"vm\": is not running"}"#,
            1,
        ),
    ];
    for (op, reply, code) in cases {
        assert_eq!(
            exchange(&dir, &[op, "--task", "vm"], reply, code),
            format!("{{\"op\":\"{}\",\"task\":\"vm\"}}\n", op.replace('-', "_"))
        );
    }
}

#[test]
fn admit_sends_every_selector_kind_and_timing_and_exits_0_accepted_3_rejected() {
    let dir = common::temp_dir("ctl-cli", "admit-sel");
    let ok = r#"{"ok":true,"accepted":true,"tasks":[{"task":"vm","cpu":1,"from_slot":40,"period_slots":10,"wcet_slots":2,"tids":[7]}]}"#;
    let no = r#"{"ok":true,"accepted":false,"why":"vm: 2 slots every 10 slots on cpu 1: frame infeasible"}"#;
    // (the selector flags, the select object sent)
    let selectors: [(&[&str], &str); 6] = [
        (&["--pid", "500"], r#"{"pid":500}"#),
        (&["--tids", "501,502"], r#"{"tids":[501,502]}"#),
        (&["--comm", "worker"], r#"{"comm":"worker"}"#),
        (&["--cgroup", "/vms/a"], r#"{"cgroup":"/vms/a"}"#),
        (&["--qemu", "4242"], r#"{"qemu_pid":4242}"#),
        (&["--qemu", "guest-1"], r#"{"qemu_name":"guest-1"}"#),
    ];
    for (k, (flags, select)) in selectors.iter().enumerate() {
        let mut args = vec!["admit", "--name", "vm"];
        args.extend_from_slice(flags);
        let (timing, sent): (&[&str], &str) = match k % 2 {
            0 => (
                &["--period-slots", "10", "--wcet-slots", "2"],
                r#""period_slots":10,"wcet_slots":2"#,
            ),
            _ => (
                &["--util", "0.2", "--latency-us", "40000", "--cpu", "1"],
                r#""util":0.2,"latency_us":40000,"cpu":1"#,
            ),
        };
        args.extend_from_slice(timing);
        let (reply, code) = if k < 3 { (ok, 0) } else { (no, 3) };
        assert_eq!(
            exchange(&dir, &args, reply, code),
            format!("{{\"op\":\"admit\",\"name\":\"vm\",\"select\":{select},{sent}}}\n"),
            "{args:?}"
        );
    }
}

#[test]
fn admit_class_be_takes_no_timing_flags_it_needs_none() {
    let dir = common::temp_dir("ctl-cli", "admit-be");
    let ok = r#"{"ok":true,"accepted":true,"tasks":[{"task":"b","class":"be","cpu":null,"from_slot":4,"period_slots":0,"wcet_slots":0,"tids":[9]}]}"#;
    assert_eq!(
        exchange(
            &dir,
            &["admit", "--name", "b", "--pid", "9", "--class", "be"],
            ok,
            0
        ),
        "{\"op\":\"admit\",\"name\":\"b\",\"select\":{\"pid\":9},\"class\":\"be\"}\n"
    );
    let err = exit_2(&ctl(
        &dir.join("nobody"),
        &["admit", "--name", "b", "--pid", "9", "--class", "rt"],
    ));
    assert!(err.contains("invalid value 'rt' for '--class"), "{err}");
}

#[test]
fn admit_sends_windows_and_aperiodic_timing_and_refuses_flags_out_of_place() {
    let dir = common::temp_dir("ctl-cli", "admit-win");
    let ok = r#"{"ok":true,"accepted":true,"tasks":[{"task":"j","cpu":1,"from_slot":6,"period_slots":0,"wcet_slots":2,"deadline_slot":16,"after":"leave","tids":[9]}]}"#;
    assert_eq!(
        exchange(
            &dir,
            &[
                "admit",
                "--name",
                "w",
                "--pid",
                "9",
                "--period-slots",
                "8",
                "--wcet-slots",
                "2",
                "--offset-slots",
                "1",
                "--deadline-slots",
                "4"
            ],
            ok,
            0
        ),
        "{\"op\":\"admit\",\"name\":\"w\",\"select\":{\"pid\":9},\"period_slots\":8,\
         \"wcet_slots\":2,\"offset_slots\":1,\"deadline_slots\":4}\n"
    );
    assert_eq!(
        exchange(
            &dir,
            &[
                "admit",
                "--name",
                "j",
                "--pid",
                "9",
                "--wcet-slots",
                "2",
                "--deadline-slots",
                "10",
                "--after",
                "leave"
            ],
            ok,
            0
        ),
        "{\"op\":\"admit\",\"name\":\"j\",\"select\":{\"pid\":9},\"wcet_slots\":2,\
         \"deadline_slots\":10,\"after\":\"leave\"}\n"
    );
    // flags out of place never reach the socket: usage errors naming the flag
    let nobody = dir.join("nobody");
    for (args, flag) in [
        (
            &["--wcet-slots", "2", "--after", "be"][..],
            "--deadline-slots",
        ),
        (
            &["--wcet-slots", "2", "--offset-slots", "1"][..],
            "--period-slots",
        ),
        (
            &[
                "--period-slots",
                "8",
                "--wcet-slots",
                "2",
                "--deadline-slots",
                "4",
                "--after",
                "be",
            ][..],
            "--after",
        ),
        (
            &[
                "--wcet-slots",
                "2",
                "--deadline-slots",
                "4",
                "--after",
                "never",
            ][..],
            "--after",
        ),
    ] {
        let mut all = vec!["admit", "--name", "x", "--pid", "9"];
        all.extend_from_slice(args);
        let err = exit_2(&ctl(&nobody, &all));
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(
            !err.contains("cannot reach"),
            "{args:?} reached for the socket: {err}"
        );
    }
}

/// `ctl batch`: stdin's request lines over one connection, each after the previous reply, the
/// replies printed in order; the exit code is the worst reply's.
#[test]
fn batch_sends_every_line_over_one_connection_and_exits_by_the_worst_reply() {
    use std::process::Stdio;
    let dir = common::temp_dir("ctl-cli", "batch");
    let replies = [
        r#"{"ok":true,"slot":4,"frame_slots":8,"table":"/p.json"}"#,
        r#"{"ok":true,"accepted":false,"why":"x: 9 slots every 8 slots on cpu 1: too much"}"#,
        r#"{"ok":false,"error":"op = \"reboot\": unknown operation"}"#,
    ];
    for (n, want) in [(1usize, 0), (2, 3), (3, 1)] {
        let sock = dir.join(format!("b{n}"));
        let listener = UnixListener::bind(&sock).expect("bind");
        let answers: Vec<String> = replies[..n].iter().map(|r| format!("{r}\n")).collect();
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            listener.set_nonblocking(true).expect("nonblocking");
            let mut reader = BufReader::new(&stream);
            let mut got = Vec::new();
            for a in &answers {
                let mut line = String::new();
                reader.read_line(&mut line).expect("request");
                got.push(line);
                (&stream).write_all(a.as_bytes()).expect("reply");
            }
            let mut rest = String::new();
            let _ = reader.read_line(&mut rest);
            // one connection: nobody else connected
            assert!(listener.accept().is_err(), "a second connection");
            (got, rest)
        });
        let requests = [
            r#"{"op":"status"}"#,
            r#"{"op":"admit","name":"x","select":{"pid":9},"period_slots":8,"wcet_slots":9}"#,
            r#"{"op":"reboot"}"#,
        ];
        // the requests, with a comment and a blank line after the first (skipped)
        let mut input = String::new();
        for (k, r) in requests[..n].iter().enumerate() {
            input += &format!("{r}\n");
            if k == 0 {
                input += "# a comment\n\n";
            }
        }
        let mut child = common::scx_tt()
            .args(["ctl", "--socket"])
            .arg(&sock)
            .arg("batch")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("runs scx_tt");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("input");
        let out = child.wait_with_output().expect("output");
        let (got, rest) = server.join().expect("server");
        let sent: Vec<String> = input
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(got, sent, "the requests, in order");
        assert_eq!(rest, "", "nothing after the last request");
        let printed: String = replies[..n].iter().map(|r| format!("{r}\n")).collect();
        assert_eq!(String::from_utf8_lossy(&out.stdout), printed);
        assert_eq!(out.status.code(), Some(want), "{n} requests");
    }
}

/// `ctl batch --timing`: each request's round trip on standard error, at least as long as the
/// server held its reply (here 30 ms and 60 ms), and a summary of them; the replies on standard
/// output are the same as without it.
#[test]
fn batch_timing_prints_each_round_trip_and_their_percentiles() {
    use std::process::Stdio;
    let dir = common::temp_dir("ctl-cli", "batch_timing");
    let sock = dir.join("t");
    let listener = UnixListener::bind(&sock).expect("bind");
    let holds_ms = [30u64, 60];
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(&stream);
        for ms in holds_ms {
            let mut line = String::new();
            reader.read_line(&mut line).expect("request");
            std::thread::sleep(std::time::Duration::from_millis(ms));
            (&stream)
                .write_all(b"{\"ok\":true,\"slot\":1,\"frame_slots\":8,\"table\":\"/p.json\"}\n")
                .expect("reply");
        }
    });
    let mut child = common::scx_tt()
        .args(["ctl", "--socket"])
        .arg(&sock)
        .args(["batch", "--timing"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs scx_tt");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"{\"op\":\"status\"}\n{\"op\":\"status\"}\n")
        .expect("input");
    let out = child.wait_with_output().expect("output");
    server.join().expect("server");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    let rtts = common::round_trips_us(&err);
    assert_eq!(rtts.len(), 2, "one round trip a request: {err}");
    for (rtt, ms) in rtts.iter().zip(holds_ms) {
        assert!(
            *rtt >= ms * 1000,
            "round trip {rtt} us < the reply's hold {ms} ms: {err}"
        );
    }
    let summary = err.lines().last().unwrap_or_default();
    assert_eq!(
        summary,
        format!(
            "scx_tt ctl batch: round trips 2, p50 {} us, p99 {} us, max {} us",
            rtts[0].min(rtts[1]),
            rtts[0].max(rtts[1]),
            rtts[0].max(rtts[1])
        ),
        "{err}"
    );
}
