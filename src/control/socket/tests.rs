use super::*;
use std::io::{BufRead, BufReader};

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scx_tt-ctl-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("ctl.sock")
}

/// Serves until `done` says so or 2 s pass; the handler echoes the request's length.
fn serve_until(sock: &mut ControlSocket, done: impl Fn(&ControlSocket) -> bool) -> usize {
    let mut answered = 0;
    let start = Instant::now();
    while !done(sock) && start.elapsed() < Duration::from_secs(2) {
        sock.serve(|line| {
            answered += 1;
            Some(format!("{{\"ok\":true,\"len\":{}}}\n", line.len()))
        });
        std::thread::sleep(Duration::from_millis(5));
    }
    answered
}

fn read_line(stream: &UnixStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut line = String::new();
    let _ = BufReader::new(stream).read_line(&mut line);
    line
}

#[test]
fn directory_rule_mode_bits_and_owner() {
    const ROOT: u32 = 0;
    const ME: u32 = 1000;
    // /run (0755 root), a private dir (0700 mine), /tmp (1777 root), sticky group dirs
    for (mode, owner, euid) in [
        (0o40755, ROOT, ROOT),
        (0o40700, ROOT, ROOT),
        (0o40700, ME, ME),
        (0o40755, ROOT, ME),
        (0o41777, ROOT, ROOT),
        (0o41777, ROOT, ME),
        (0o41770, ME, ME),
        (0o40555, ROOT, ROOT),
    ] {
        assert_eq!(dir_risk(mode, owner, euid), None, "{mode:o} {owner} {euid}");
    }
    let others = Some(DirRisk::WritableNoSticky { who: "others" });
    let group = Some(DirRisk::WritableNoSticky { who: "its group" });
    assert_eq!(dir_risk(0o40777, ROOT, ROOT), others);
    assert_eq!(dir_risk(0o40703, ROOT, ROOT), others);
    assert_eq!(dir_risk(0o40775, ROOT, ROOT), group);
    assert_eq!(dir_risk(0o40770, ROOT, ROOT), group);
    assert_eq!(dir_risk(0o40720, ME, ME), group);
    // setuid/setgid bits are not the sticky bit
    assert_eq!(dir_risk(0o46777, ROOT, ROOT), others);
    // another user's directory, however private: its owner can replace the socket
    let foreign = Some(DirRisk::ForeignOwner { owner: ME });
    assert_eq!(dir_risk(0o40700, ME, ROOT), foreign);
    assert_eq!(dir_risk(0o41777, ME, ROOT), foreign);
    assert_eq!(
        dir_risk(0o40755, 2000, ME),
        Some(DirRisk::ForeignOwner { owner: 2000 })
    );
}

#[test]
fn a_directory_others_can_write_without_sticky_is_refused_before_binding() {
    let path = temp_path("open-dir");
    let dir = path.parent().expect("dir").to_path_buf();
    let set = |mode| {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).expect("chmod")
    };
    for (mode, who) in [(0o777, "others"), (0o770, "its group"), (0o757, "others")] {
        set(mode);
        let err = ControlSocket::bind(&path, &Access::default())
            .err()
            .expect("refused");
        let want = format!(
            "--control {}: directory {} (mode {mode:04o}, owner uid",
            path.display(),
            dir.display()
        );
        let msg = err.to_string();
        assert!(msg.starts_with(&want), "{msg}");
        assert!(
            msg.contains(&format!("is writable by {who} without the sticky bit")),
            "{msg}"
        );
        assert!(!path.exists(), "nothing bound");
    }
    // the same directory with the sticky bit (as /tmp), and private, are fine
    for mode in [0o1777, 0o700, 0o755] {
        set(mode);
        drop(
            ControlSocket::bind(&path, &Access::default())
                .unwrap_or_else(|e| panic!("{mode:o}: {e}")),
        );
    }
    // a directory below the open one is not safe either: its parent's entry can be renamed
    let below = dir.join("sub");
    std::fs::create_dir_all(&below).expect("sub");
    set(0o777);
    let err = ControlSocket::bind(&below.join("ctl.sock"), &Access::default())
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .contains(&format!("directory {} (mode 0777", dir.display())),
        "{err}"
    );
    set(0o755);
}

#[test]
fn socket_is_0600_and_removed_on_drop() {
    let path = temp_path("mode");
    let sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let mode = std::fs::metadata(&path)
        .expect("exists")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    drop(sock);
    assert!(!path.exists());
}

#[test]
fn a_live_socket_is_refused_a_stale_one_replaced_a_file_kept() {
    let path = temp_path("live");
    let live = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let err = ControlSocket::bind(&path, &Access::default())
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("another process is listening"),
        "{err}"
    );
    assert!(path.exists(), "the live socket must stay");
    drop(live);

    // stale: a socket file nobody listens on
    drop(UnixListener::bind(&path).expect("bind a stale one"));
    assert!(path.exists());
    let replaced = ControlSocket::bind(&path, &Access::default()).expect("stale socket replaced");
    drop(replaced);

    std::fs::write(&path, "not a socket").expect("write");
    let err = ControlSocket::bind(&path, &Access::default())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("not a socket"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).ok().as_deref(),
        Some("not a socket")
    );
}

#[test]
fn requests_are_answered_line_by_line_and_a_silent_client_blocks_nobody() {
    let path = temp_path("lines");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let silent = UnixStream::connect(&path).expect("connect");
    let talker = UnixStream::connect(&path).expect("connect");
    (&talker).write_all(b"abc\n\n12345\n").expect("write");
    let t0 = Instant::now();
    let n = serve_until(&mut sock, |_| false);
    assert_eq!(n, 2, "two non-empty lines");
    assert!(t0.elapsed() < Duration::from_secs(3));
    let mut r = BufReader::new(&talker);
    let mut a = String::new();
    let mut b = String::new();
    talker
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    r.read_line(&mut a).expect("reply 1");
    r.read_line(&mut b).expect("reply 2");
    assert_eq!(
        (a.as_str(), b.as_str()),
        ("{\"ok\":true,\"len\":3}\n", "{\"ok\":true,\"len\":5}\n")
    );
    drop(silent);
}

#[test]
fn an_oversized_request_gets_an_error_and_is_closed() {
    let path = temp_path("big");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let client = UnixStream::connect(&path).expect("connect");
    let writer = {
        let c = client.try_clone().expect("clone");
        std::thread::spawn(move || {
            // more than the cap, no newline; the server closes, so a write may fail
            let _ = (&c).write_all(&vec![b'x'; 3 * MAX_REQUEST_BYTES]);
        })
    };
    // connect() returned, so the first call accepts; the connection is then open until
    // the cap is exceeded
    let mut answered = 0;
    let start = Instant::now();
    loop {
        sock.serve(|_| {
            answered += 1;
            Some(String::new())
        });
        if sock.conns.is_empty() || start.elapsed() > Duration::from_secs(2) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(sock.conns.is_empty(), "closed within 2 s");
    assert_eq!(answered, 0, "the handler never sees an oversized request");
    assert_eq!(
        read_line(&client),
        format!(
            "{{\"ok\":false,\"error\":\"request is longer than {MAX_REQUEST_BYTES} bytes\"}}\n"
        )
    );
    let _ = writer.join();
}

#[test]
fn pipelined_requests_are_answered_in_order_a_bounded_number_per_turn() {
    let path = temp_path("pipelined");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let client = UnixStream::connect(&path).expect("connect");
    let lines: String = (0..40).map(|i| format!("r{i}\n")).collect();
    (&client).write_all(lines.as_bytes()).expect("write");
    let (mut total, mut most, start) = (0, 0, Instant::now());
    while total < 40 && start.elapsed() < Duration::from_secs(2) {
        let mut answered = 0;
        sock.serve(|line| {
            answered += 1;
            Some(format!("{line}\n"))
        });
        total += answered;
        most = most.max(answered);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(total, 40, "every request answered");
    assert_eq!(
        most, MAX_REQUESTS_PER_TURN,
        "at most the per-turn budget in one call"
    );
    client
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    let replies: Vec<String> = BufReader::new(&client)
        .lines()
        .take(40)
        .map(|l| l.expect("reply"))
        .collect();
    let want: Vec<String> = (0..40).map(|i| format!("r{i}")).collect();
    assert_eq!(replies, want, "in order");
}

/// A deferred request (a switch_table whose plan loads): its connection waits, in order,
/// while other connections are served; `deliver` answers it.
#[test]
fn a_deferred_reply_keeps_its_connection_in_order_and_blocks_nobody() {
    let path = temp_path("deferred");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let waiter = UnixStream::connect(&path).expect("connect");
    let other = UnixStream::connect(&path).expect("connect");
    (&waiter).write_all(b"switch\nafter\n").expect("write");
    (&other).write_all(b"status\n").expect("write");
    let mut seen = Vec::new();
    let start = Instant::now();
    while seen.len() < 2 && start.elapsed() < Duration::from_secs(2) {
        sock.serve(|line| {
            seen.push(line.to_string());
            (line != "switch").then(|| format!("{line}-reply\n"))
        });
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        seen,
        ["switch", "status"],
        "`after` waits behind the switch"
    );
    assert_eq!(read_line(&other), "status-reply\n");
    // more turns: still nothing for the waiting connection, `after` not answered
    for _ in 0..3 {
        sock.serve(|line| {
            seen.push(line.to_string());
            Some(String::new())
        });
    }
    assert_eq!(seen.len(), 2);
    sock.deliver("switch-reply\n");
    sock.serve(|line| {
        seen.push(line.to_string());
        Some(format!("{line}-reply\n"))
    });
    assert_eq!(seen, ["switch", "status", "after"]);
    let mut r = BufReader::new(&waiter);
    waiter
        .set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    let (mut a, mut b) = (String::new(), String::new());
    r.read_line(&mut a).expect("reply 1");
    r.read_line(&mut b).expect("reply 2");
    assert_eq!(
        (a.as_str(), b.as_str()),
        ("switch-reply\n", "after-reply\n")
    );
}

#[test]
fn a_connection_is_closed_at_its_age_limit_whatever_it_sends() {
    let path = temp_path("age");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let client = UnixStream::connect(&path).expect("connect");
    let t0 = Instant::now();
    sock.serve_at(t0, |_| Some(String::new()));
    assert_eq!(sock.conns.len(), 1, "accepted");
    // a request every 4 s keeps it under the idle timeout...
    let mut answered = 0;
    for k in 1..=7u64 {
        (&client).write_all(b"status\n").expect("write");
        std::thread::sleep(Duration::from_millis(20));
        sock.serve_at(t0 + Duration::from_secs(4 * k), |_| {
            answered += 1;
            Some("{}\n".into())
        });
        assert_eq!(sock.conns.len(), 1, "open at {} s", 4 * k);
    }
    assert_eq!(answered, 7);
    // ... but not past its age limit
    (&client).write_all(b"status\n").expect("write");
    std::thread::sleep(Duration::from_millis(20));
    sock.serve_at(t0 + MAX_CONN_AGE, |_| {
        answered += 1;
        Some("{}\n".into())
    });
    assert!(sock.conns.is_empty(), "closed at {MAX_CONN_AGE:?}");
    assert_eq!(
        answered, 7,
        "nothing more answered on an expired connection"
    );
}

fn peer(uid: u32, gid: u32, groups: &[u32]) -> Peer {
    Peer {
        pid: 42,
        uid,
        gid,
        groups: groups.to_vec(),
    }
}

#[test]
fn who_may_use_the_socket() {
    let tt = Group {
        gid: 500,
        name: "tt".into(),
    };
    // (peer, scx_tt's euid, group, allowed)
    let cases = [
        (peer(0, 0, &[]), 0, None, true),
        (peer(0, 0, &[]), 1000, None, true),
        (peer(1000, 1000, &[]), 1000, None, true),
        (peer(1000, 1000, &[]), 0, None, false),
        (peer(1000, 1000, &[500]), 0, None, false),
        (peer(1000, 500, &[]), 0, Some(&tt), true),
        (peer(1000, 1000, &[7, 500]), 0, Some(&tt), true),
        (peer(1000, 1000, &[7, 501]), 0, Some(&tt), false),
        (peer(65534, 65534, &[]), 0, Some(&tt), false),
    ];
    for (p, euid, g, allowed) in cases {
        let got = authorize(&p, euid, g);
        assert_eq!(
            got.is_ok(),
            allowed,
            "{p:?} euid {euid} group {g:?}: {got:?}"
        );
        if let Err(why) = got {
            assert!(
                why.contains(&format!("uid {}", p.uid)) && why.contains("pid 42"),
                "{why}"
            );
            assert!(
                why.contains(match g {
                    Some(_) => "control group tt (gid 500",
                    None => "--control-group GROUP",
                }),
                "{why}"
            );
        }
    }
}

#[test]
fn a_control_group_is_a_gid_or_a_name_of_the_group_database() {
    assert_eq!(
        Group::lookup("4242").expect("a gid"),
        Group {
            gid: 4242,
            name: "4242".into()
        }
    );
    // root's group is 0 wherever /etc/group exists
    if std::path::Path::new("/etc/group").exists() {
        assert_eq!(Group::lookup("root").expect("root").gid, 0);
    }
    let e = Group::lookup("no-such-group-scx-tt")
        .expect_err("unknown")
        .to_string();
    assert!(
        e.starts_with("--control-group \"no-such-group-scx-tt\": no such group")
            && e.contains("give a group name or a numeric gid"),
        "{e}"
    );
    let e = Group::lookup("a\0b").expect_err("NUL").to_string();
    assert!(e.contains("NUL"), "{e}");
}

#[test]
fn peer_credentials_are_the_connecting_process() {
    let (a, _b) = UnixStream::pair().expect("pair");
    let p = peer_of(&a).expect("peer");
    // SAFETY: these have no preconditions.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    assert_eq!((p.pid, p.uid, p.gid), (std::process::id() as i32, uid, gid));
    // SAFETY: getgroups(0, NULL) asks for the count; then fills n entries.
    let mut mine = vec![0u32; unsafe { libc::getgroups(0, std::ptr::null_mut()) } as usize];
    let n = unsafe { libc::getgroups(mine.len() as i32, mine.as_mut_ptr()) };
    mine.truncate(n.max(0) as usize);
    let mut theirs = p.groups.clone();
    mine.sort();
    theirs.sort();
    assert_eq!(theirs, mine);
}

/// Connects to `path` from a thread whose own credentials are (euid, egid) with the
/// supplementary `groups` (a raw setresuid/setresgid/setgroups changes only the calling
/// thread), sends `status` and returns what came back.
fn as_user(path: &Path, euid: u32, egid: u32, groups: &[u32]) -> String {
    let path = path.to_path_buf();
    let groups = groups.to_vec();
    std::thread::spawn(move || {
        // SAFETY: raw syscalls on this thread's credentials only; the thread ends after.
        unsafe {
            assert_eq!(
                libc::syscall(libc::SYS_setgroups, groups.len(), groups.as_ptr()),
                0
            );
            assert_eq!(libc::syscall(libc::SYS_setresgid, -1, egid, -1), 0);
            assert_eq!(libc::syscall(libc::SYS_setresuid, -1, euid, -1), 0);
        }
        match UnixStream::connect(&path) {
            Ok(s) => {
                let _ = (&s).write_all(b"status\n");
                read_line(&s)
            }
            Err(e) => format!("connect: {e}"),
        }
    })
    .join()
    .expect("thread")
}

#[test]
fn another_user_is_refused_and_a_group_member_served() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to act as another user");
        return;
    }
    let path = temp_path("peer");
    // the directory is 0755 root: others may reach the socket once its mode lets them
    std::fs::set_permissions(
        path.parent().unwrap(),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod dir");
    let group = Group {
        gid: 4242,
        name: "tt-test".into(),
    };
    let mut sock = ControlSocket::bind(
        &path,
        &Access {
            group: Some(group.clone()),
        },
    )
    .expect("bind");
    let meta = std::fs::metadata(&path).expect("socket");
    assert_eq!((meta.mode() & 0o777, meta.gid()), (0o660, 4242));
    let served = std::sync::atomic::AtomicUsize::new(0);
    let serve = |sock: &mut ControlSocket, euid: u32, egid: u32, groups: &[u32]| {
        std::thread::scope(|s| {
            let client = s.spawn(|| as_user(&path, euid, egid, groups));
            while !client.is_finished() {
                sock.serve(|_| {
                    served.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    Some("{\"ok\":true}\n".into())
                });
                std::thread::sleep(Duration::from_millis(2));
            }
            client.join().expect("client")
        })
    };
    // the file mode keeps a stranger out...
    let stranger = serve(&mut sock, 65534, 65534, &[7]);
    assert!(stranger.contains("Permission denied"), "{stranger}");
    // ... a member of the group is served ...
    let member = serve(&mut sock, 65534, 4242, &[]);
    assert_eq!(member, "{\"ok\":true}\n");
    // ... and so is a member by a supplementary group only (SO_PEERGROUPS read for it)
    let member = serve(&mut sock, 65534, 65534, &[7, 4242]);
    assert_eq!(member, "{\"ok\":true}\n");
    // ... and a socket made world-writable by mistake still refuses a stranger, by its
    // peer credentials, before reading a byte
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let stranger = serve(&mut sock, 65534, 65534, &[7]);
    assert!(
        stranger.contains("\"ok\":false")
            && stranger.contains("permission denied: uid 65534")
            && stranger.contains("control group tt-test (gid 4242"),
        "{stranger}"
    );
    assert_eq!(
        served.load(std::sync::atomic::Ordering::Relaxed),
        2,
        "only the members' requests"
    );
}

#[test]
fn serve_ready_serves_what_wait_saw_and_leaves_the_rest() {
    let path = temp_path("ready");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let quiet = UnixStream::connect(&path).expect("connect");
    sock.serve(|_| None);
    assert_eq!(sock.conns.len(), 1);
    // a new client's request sent with its connect: one wait, one serve_ready, answered
    let talker = UnixStream::connect(&path).expect("connect");
    (&talker).write_all(b"status\n").expect("write");
    assert!(sock.wait(Duration::from_secs(2)));
    let mut seen = Vec::new();
    sock.serve_ready(|line| {
        seen.push(line.to_string());
        Some("{}\n".into())
    });
    assert_eq!(seen, ["status"]);
    assert_eq!(read_line(&talker), "{}\n");
    // the quiet one was not ready: untouched even past its idle timeout (only the full
    // turn closes it), then the full turn does
    let old = Instant::now() - IDLE_TIMEOUT - Duration::from_secs(1);
    sock.conns[0].last_request = old;
    (&talker).write_all(b"again\n").expect("write");
    assert!(sock.wait(Duration::from_secs(2)));
    assert!(sock.conns[1].ready && !sock.conns[0].ready);
    sock.serve_ready(|line| {
        seen.push(line.to_string());
        Some("{}\n".into())
    });
    assert_eq!(seen, ["status", "again"]);
    assert_eq!(
        sock.conns.len(),
        2,
        "the quiet connection is left for the full turn"
    );
    sock.serve(|_| Some("{}\n".into()));
    assert_eq!(sock.conns.len(), 1, "the full turn closes the idle one");
    drop(quiet);
}

#[test]
fn wait_returns_when_a_client_sends_and_sleeps_otherwise() {
    let path = temp_path("wait");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let t = Instant::now();
    assert!(!sock.wait(Duration::from_millis(50)), "nothing to serve");
    let slept = t.elapsed();
    assert!(slept >= Duration::from_millis(45), "slept {slept:?}");
    // a connection wakes it at once
    let client = UnixStream::connect(&path).expect("connect");
    let t = Instant::now();
    assert!(sock.wait(Duration::from_secs(5)));
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "woke after {:?}",
        t.elapsed()
    );
    sock.serve(|_| Some("{}\n".into()));
    assert_eq!(sock.conns.len(), 1);
    // so does a request arriving later
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        (&client).write_all(b"status\n").expect("write");
        client
    });
    let t = Instant::now();
    assert!(sock.wait(Duration::from_secs(5)));
    let woke = t.elapsed();
    assert!(
        woke >= Duration::from_millis(90) && woke < Duration::from_secs(1),
        "woke after {woke:?}"
    );
    let client = sender.join().expect("sender");
    let mut answered = 0;
    sock.serve(|_| {
        answered += 1;
        Some("{}\n".into())
    });
    assert_eq!(answered, 1);
    assert_eq!(read_line(&client), "{}\n");
}

#[test]
fn accepted_connections_are_non_blocking_and_close_on_exec() {
    let path = temp_path("flags");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let _client = UnixStream::connect(&path).expect("connect");
    sock.serve(|_| None);
    assert_eq!(sock.conns.len(), 1);
    let fd = sock.conns[0].stream.as_raw_fd();
    // SAFETY: fcntl reads the flags of an open fd.
    let (fl, fdfl) = unsafe {
        (
            libc::fcntl(fd, libc::F_GETFL),
            libc::fcntl(fd, libc::F_GETFD),
        )
    };
    assert!(fl & libc::O_NONBLOCK != 0, "not non-blocking: {fl:#o}");
    assert!(fdfl & libc::FD_CLOEXEC != 0, "not close-on-exec: {fdfl:#o}");
}

#[test]
fn supplementary_groups_are_read_only_when_the_rule_needs_them() {
    let tt = Group {
        gid: 500,
        name: "tt".into(),
    };
    // (peer, scx_tt's euid, group, groups needed)
    let cases = [
        (peer(0, 0, &[]), 1000, Some(&tt), false),
        (peer(1000, 1000, &[]), 1000, Some(&tt), false),
        (peer(1000, 500, &[]), 0, Some(&tt), false),
        (peer(1000, 1000, &[]), 0, None, false),
        (peer(1000, 1000, &[]), 0, Some(&tt), true),
    ];
    for (p, euid, g, needed) in cases {
        assert_eq!(needs_groups(&p, euid, g), needed, "{p:?} euid {euid} {g:?}");
        // whenever they are not read, the rule decides the same without them
        if !needed {
            let with = peer(p.uid, p.gid, &[500, 7]);
            assert_eq!(authorize(&p, euid, g), authorize(&with, euid, g), "{p:?}");
        }
    }
}

#[test]
fn check_peer_decides_as_authorize_over_all_credentials() {
    let (a, _b) = UnixStream::pair().expect("pair");
    let full = peer_of(&a).expect("peer");
    let groups = [
        full.gid,
        full.groups.first().copied().unwrap_or(full.gid),
        4_000_000,
    ];
    for euid in [full.uid, full.uid.wrapping_add(1)] {
        for gid in groups {
            let g = Group {
                gid,
                name: "g".into(),
            };
            for group in [None, Some(&g)] {
                assert_eq!(
                    check_peer(&a, euid, group),
                    authorize(&full, euid, group),
                    "euid {euid} group {group:?}"
                );
            }
        }
    }
}

#[test]
fn a_flood_of_connects_is_accepted_a_bounded_number_per_turn() {
    let path = temp_path("flood");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let n = MAX_ACCEPTS_PER_TURN + 8;
    let clients: Vec<_> = (0..n)
        .map(|_| UnixStream::connect(&path).expect("connect"))
        .collect();
    sock.serve(|_| None);
    assert_eq!(sock.conns.len(), MAX_CONNECTIONS);
    let refused = |clients: &[UnixStream]| {
        clients
            .iter()
            .filter(|c| {
                c.set_nonblocking(true).expect("non-blocking");
                let mut b = [0u8; 256];
                matches!((&**c).read(&mut b), Ok(k) if k > 0 && b[..k].starts_with(b"{\"ok\":false"))
            })
            .count()
    };
    assert_eq!(
        refused(&clients),
        MAX_ACCEPTS_PER_TURN - MAX_CONNECTIONS,
        "one turn accepts (or refuses) at most MAX_ACCEPTS_PER_TURN"
    );
    // the rest wait in the backlog, and the listener stays ready for the next turn
    assert!(sock.wait(Duration::from_secs(1)));
    sock.serve(|_| None);
    assert_eq!(refused(&clients), 8);
}

#[test]
fn connections_that_hung_up_give_their_slots_to_newcomers_in_the_same_turn() {
    let path = temp_path("slots");
    let mut sock = ControlSocket::bind(&path, &Access::default()).expect("bind");
    let ok = |_: &str| Some("{\"ok\":true}\n".to_string());
    for full in [false, true] {
        // a connection per request: MAX_CONNECTIONS clients asked, were answered and closed...
        let old: Vec<_> = (0..MAX_CONNECTIONS)
            .map(|_| {
                let c = UnixStream::connect(&path).expect("connect");
                (&c).write_all(b"status\n").expect("write");
                c
            })
            .collect();
        sock.serve(ok);
        assert_eq!(sock.conns.len(), MAX_CONNECTIONS);
        for c in &old {
            assert_eq!(read_line(c), "{\"ok\":true}\n");
        }
        drop(old);
        // ... before the loop's next turn, a newcomer connects and asks: it is served, not
        // refused as one too many, on either kind of turn
        let new = UnixStream::connect(&path).expect("connect");
        (&new).write_all(b"status\n").expect("write");
        assert!(sock.wait(Duration::from_secs(1)));
        match full {
            false => sock.serve_ready(ok),
            true => sock.serve(ok),
        }
        assert_eq!(read_line(&new), "{\"ok\":true}\n", "full turn: {full}");
        assert_eq!(sock.conns.len(), 1);
        drop(new);
        sock.serve(|_| None);
        assert!(sock.conns.is_empty());
    }
}
