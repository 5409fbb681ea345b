//! `scx_tt ctl` against a fake control socket (docs/control.md): what it sends, what it prints,
//! and its exit codes (0 ok reply, 1 error reply, 2 socket unreachable or silent, 3 admit-firm
//! rejected).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::thread::JoinHandle;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scx_tt-ctl-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn ctl(socket: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scx_tt"))
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
fn serve_once(socket: &Path, reply: Option<&'static str>) -> JoinHandle<String> {
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

#[test]
fn an_ok_reply_is_printed_and_exits_0() {
    let dir = temp_dir("ok");
    let sock = dir.join("s");
    let reply = "{\"ok\":true,\"slot\":5,\"frame_slots\":8,\"table\":\"/a.json\",\"pending_switch_slot\":null}\n";
    let server = serve_once(&sock, Some(reply));
    let out = ctl(&sock, &["status"]);
    assert_eq!(server.join().expect("server"), "{\"op\":\"status\"}\n");
    assert_eq!(String::from_utf8_lossy(&out.stdout), reply);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn switch_table_sends_an_absolute_path_and_an_error_reply_exits_1() {
    let dir = temp_dir("err");
    let sock = dir.join("s");
    let reply =
        "{\"ok\":false,\"error\":\"slot_us = 5000: must equal the running plan's 10000\"}\n";
    let server = serve_once(&sock, Some(reply));
    let out = ctl(&sock, &["switch-table", "b.json"]);
    let request: serde_json::Value =
        serde_json::from_str(&server.join().expect("server")).expect("JSON request");
    assert_eq!(request["op"], "switch_table");
    assert_eq!(
        request["plan"].as_str().map(PathBuf::from),
        Some(dir.join("b.json"))
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), reply);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_missing_socket_exits_2_and_names_it() {
    let dir = temp_dir("missing");
    let sock = dir.join("nobody");
    let out = ctl(&sock, &["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot reach the control socket") && err.contains("nobody"),
        "{err}"
    );
}

#[test]
fn a_silent_server_exits_2_after_the_timeout() {
    let dir = temp_dir("silent");
    let sock = dir.join("s");
    let server = serve_once(&sock, None);
    let out = ctl(&sock, &["--timeout-s", "0.3", "status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no reply from the control socket"), "{err}");
    let _ = server.join();
}

#[test]
fn admit_firm_sends_the_request_and_exits_0_accepted_3_rejected_1_error() {
    let dir = temp_dir("admit");
    let cases = [
        (
            "{\"ok\":true,\"accepted\":true,\"cpu\":1,\"deadline_slot\":90,\"first_slot\":33}\n",
            0,
        ),
        (
            "{\"ok\":true,\"accepted\":false,\"needed\":40,\"available\":12,\"deadline_slot\":60}\n",
            3,
        ),
        (
            "{\"ok\":false,\"error\":\"task = \\\"x\\\": no task of the plan has this name\"}\n",
            1,
        ),
    ];
    for (i, (reply, code)) in cases.into_iter().enumerate() {
        let sock = dir.join(format!("s{i}"));
        let server = serve_once(&sock, Some(reply));
        let out = ctl(
            &sock,
            &[
                "admit-firm",
                "--task",
                "tt-a",
                "--wcet-slots",
                "20",
                "--deadline-slots",
                "60",
            ],
        );
        assert_eq!(
            server.join().expect("server"),
            "{\"op\":\"admit_firm\",\"task\":\"tt-a\",\"wcet_slots\":20,\"deadline_slots\":60}\n"
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), reply);
        assert_eq!(out.status.code(), Some(code), "{reply}");
    }
}

#[test]
fn set_policy_sends_the_policy_and_exits_0_ok_1_error() {
    let dir = temp_dir("policy");
    let cases = [
        ("dvfs", "{\"ok\":true,\"policy\":\"dvfs\",\"from_slot\":41}\n", 0),
        (
            "dpm",
            "{\"ok\":false,\"error\":\"policy = \\\"dpm\\\": the kernel path runs bss or dvfs only\"}\n",
            1,
        ),
    ];
    for (i, (policy, reply, code)) in cases.into_iter().enumerate() {
        let sock = dir.join(format!("s{i}"));
        let server = serve_once(&sock, Some(reply));
        let out = ctl(&sock, &["set-policy", policy]);
        assert_eq!(
            server.join().expect("server"),
            format!("{{\"op\":\"set_policy\",\"policy\":\"{policy}\"}}\n")
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), reply);
        assert_eq!(out.status.code(), Some(code), "{reply}");
    }
    // an unknown name never reaches the socket: a usage error naming the value
    let out = ctl(&dir.join("nobody"), &["set-policy", "turbo"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown policy \"turbo\""), "{err}");
}

#[test]
fn admit_periodic_and_remove_send_the_task_and_exit_0_accepted_3_rejected_1_error() {
    let dir = temp_dir("periodic");
    let cases = [
        (
            "admit-periodic",
            "{\"ok\":true,\"accepted\":true,\"cpu\":1,\"from_slot\":400}\n",
            0,
        ),
        (
            "admit-periodic",
            "{\"ok\":true,\"accepted\":false,\"why\":\"80 slots every 100 slots on cpu 1: frame infeasible\"}\n",
            3,
        ),
        (
            "admit-periodic",
            "{\"ok\":false,\"error\":\"task = \\\"a\\\": is not declared\"}\n",
            1,
        ),
        (
            "remove",
            "{\"ok\":true,\"removed\":true,\"from_slot\":642}\n",
            0,
        ),
        (
            "remove",
            "{\"ok\":false,\"error\":\"task = \\\"vm\\\": is not running\"}\n",
            1,
        ),
    ];
    for (i, (op, reply, code)) in cases.into_iter().enumerate() {
        let sock = dir.join(format!("s{i}"));
        let server = serve_once(&sock, Some(reply));
        let out = ctl(&sock, &[op, "--task", "vm"]);
        assert_eq!(
            server.join().expect("server"),
            format!("{{\"op\":\"{}\",\"task\":\"vm\"}}\n", op.replace('-', "_"))
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), reply);
        assert_eq!(out.status.code(), Some(code), "{op}: {reply}");
    }
}
