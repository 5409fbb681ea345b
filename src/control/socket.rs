//! The socket of `--control PATH` (docs/control.md): a unix stream socket, mode 0600 (0660
//! with its group set to `--control-group`), served from the run loop without ever blocking
//! it. Every connection's peer credentials (SO_PEERCRED, SO_PEERGROUPS) are checked when it is
//! accepted ([`authorize`]): root, scx_tt's own user and members of the control group are
//! served, anyone else gets one refusal line and is closed before a byte is read. Non-blocking accept and reads; one JSON request
//! per line, answered by the caller's handler (`Control::serve` over the run's engine); a line
//! over `MAX_REQUEST_BYTES` or a connection idle for `IDLE_TIMEOUT` is answered or closed. The
//! work of one call is bounded whatever clients send: at most `MAX_REQUESTS_PER_TURN` requests
//! are answered per call (the rest wait in their connection, in order, for the next turn of
//! the run loop; a connection with an unanswered request is not read from, so a pipelining
//! client is held back by its own socket buffer), and a connection is closed `MAX_CONN_AGE`
//! after it was accepted, so clients that keep sending cannot hold the `MAX_CONNECTIONS` slots
//! for ever. The socket file is removed when this is dropped (every exit path of the run, error
//! or not).

use super::{Reply, RequestError, MAX_REQUEST_BYTES};
use anyhow::{bail, Context, Result};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Connections served at once; more are told so and closed.
const MAX_CONNECTIONS: usize = 16;
/// A connection that sends no complete request for this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Read at most this much per connection per call, so one client cannot hold the loop.
const READ_BUDGET: usize = MAX_REQUEST_BYTES + 4096;
/// Requests answered per call over all connections (`scx_tt ctl` sends one per connection).
const MAX_REQUESTS_PER_TURN: usize = 16;
/// A connection is closed this long after it was accepted, whatever it sends.
const MAX_CONN_AGE: Duration = Duration::from_secs(30);

/// Who may use the socket besides root and scx_tt's own user.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// `--control-group`: the socket is 0660 with this group, whose members are served.
    pub group: Option<Group>,
}

/// A group, by id and by the name it was given as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub gid: u32,
    pub name: String,
}

impl Group {
    /// `--control-group GROUP`: a group name (looked up in the system's group database) or a
    /// numeric gid.
    pub fn lookup(spec: &str) -> Result<Group> {
        if let Ok(gid) = spec.parse::<u32>() {
            return Ok(Group {
                gid,
                name: spec.into(),
            });
        }
        let c = std::ffi::CString::new(spec)
            .map_err(|_| anyhow::anyhow!("--control-group {spec:?}: contains a NUL byte"))?;
        let mut buf = vec![0u8; 16384];
        // SAFETY: an all-zero struct group is a valid out-parameter.
        let mut grp: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call; buf outlives the use of grp.
        let rc = unsafe {
            libc::getgrnam_r(
                c.as_ptr(),
                &mut grp,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut found,
            )
        };
        if rc != 0 || found.is_null() {
            bail!(
                "--control-group {spec:?}: no such group in the system's group database{}; \
                 give a group name or a numeric gid",
                match rc {
                    0 => String::new(),
                    e => format!(" ({})", std::io::Error::from_raw_os_error(e)),
                }
            );
        }
        Ok(Group {
            gid: grp.gr_gid,
            name: spec.into(),
        })
    }
}

/// A connection's peer, as the kernel recorded it at `connect` (SO_PEERCRED, SO_PEERGROUPS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
    /// Its supplementary groups.
    pub groups: Vec<u32>,
}

/// Whether `peer` may use the control socket of a scx_tt running as `euid`: root, that user,
/// or (with `--control-group`) a member of the group, by its primary or a supplementary group.
/// `Err`: the refusal, naming the peer and the rule.
pub fn authorize(peer: &Peer, euid: u32, group: Option<&Group>) -> std::result::Result<(), String> {
    if peer.uid == 0 || peer.uid == euid {
        return Ok(());
    }
    match group {
        Some(g) if peer.gid == g.gid || peer.groups.contains(&g.gid) => Ok(()),
        Some(g) => Err(format!(
            "permission denied: uid {} (pid {}) is neither root, scx_tt's user (uid {euid}) nor \
             a member of the control group {} (gid {}, --control-group)",
            peer.uid, peer.pid, g.name, g.gid
        )),
        None => Err(format!(
            "permission denied: uid {} (pid {}) is neither root nor scx_tt's user (uid {euid}); \
             start scx_tt with --control-group GROUP to let that group's members in",
            peer.uid, peer.pid
        )),
    }
}

/// SO_PEERGROUPS (asm-generic/socket.h; the libc crate does not export it on every arch).
const SO_PEERGROUPS: libc::c_int = 59;

/// The peer credentials of a connected unix socket.
pub fn peer_of(stream: &UnixStream) -> std::io::Result<Peer> {
    let fd = stream.as_raw_fd();
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: fd is an open socket; cred and len are valid for the kernel to fill.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // NGROUPS_MAX is 65536; the kernel says how much room it needs (ERANGE) when 256 is short
    let mut groups = vec![0u32; 256];
    loop {
        let mut len = (groups.len() * 4) as libc::socklen_t;
        // SAFETY: groups has len bytes of room.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                SO_PEERGROUPS,
                groups.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc == 0 {
            groups.truncate(len as usize / 4);
            break;
        }
        let e = std::io::Error::last_os_error();
        let need = len as usize / 4;
        if e.raw_os_error() == Some(libc::ERANGE) && need > groups.len() && need <= 65536 {
            groups.resize(need, 0);
            continue;
        }
        return Err(e);
    }
    Ok(Peer {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
        groups,
    })
}

pub struct ControlSocket {
    path: PathBuf,
    listener: UnixListener,
    access: Access,
    /// scx_tt's effective user.
    euid: u32,
    /// [`ControlSocket::wait`] saw a connection to accept.
    listener_ready: bool,
    /// (dev, ino) of the socket file we created: only that file is removed at the end.
    file_id: (u64, u64),
    conns: Vec<Conn>,
}

struct Conn {
    stream: UnixStream,
    buf: Vec<u8>,
    opened: Instant,
    last_request: Instant,
    /// [`ControlSocket::wait`] saw it readable (or it was just accepted).
    ready: bool,
    /// A request of this connection was accepted and is answered later ([`ControlSocket::deliver`]):
    /// nothing more is read or answered on it until then, so replies stay in request order.
    waiting: bool,
}

impl ControlSocket {
    /// Creates the socket at `path`, mode 0600, or 0660 with group `access.group`. Refuses a
    /// path in an unsafe directory ([`check_dir`]), and when a live socket (one that accepts a
    /// connection) or anything that is not a socket is there; removes a stale socket (nobody
    /// listening).
    pub fn bind(path: &Path, access: &Access) -> Result<Self> {
        if check_free(path)? {
            std::fs::remove_file(path).with_context(|| {
                format!("--control {}: removing the stale socket", path.display())
            })?;
        }
        // Mode 0600 from the start: no window in which others could connect.
        // SAFETY: umask only swaps the process file mode mask.
        let old_mask = unsafe { libc::umask(0o177) };
        let bound = UnixListener::bind(path);
        // SAFETY: as above, restoring the previous mask.
        unsafe { libc::umask(old_mask) };
        let listener = bound.with_context(|| format!("--control {}: binding", path.display()))?;
        let meta = std::fs::metadata(path)
            .with_context(|| format!("--control {}: reading back", path.display()))?;
        let socket = ControlSocket {
            path: path.to_path_buf(),
            listener,
            access: access.clone(),
            // SAFETY: geteuid has no preconditions.
            euid: unsafe { libc::geteuid() },
            listener_ready: false,
            file_id: (meta.dev(), meta.ino()),
            conns: Vec::new(),
        };
        let mode = match &access.group {
            Some(g) => {
                std::os::unix::fs::chown(path, None, Some(g.gid)).with_context(|| {
                    format!(
                        "--control {}: giving the socket to group {} (gid {})",
                        path.display(),
                        g.name,
                        g.gid
                    )
                })?;
                0o660
            }
            None => 0o600,
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("--control {}: chmod {mode:04o}", path.display()))?;
        socket
            .listener
            .set_nonblocking(true)
            .with_context(|| format!("--control {}: non-blocking accept", path.display()))?;
        Ok(socket)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sleeps until a client connects or sends, or `timeout` passes (a signal cuts it short).
    /// `true`: there may be something to serve (also at once when a request waits in a
    /// connection's buffer for its turn); what woke it is kept for [`Self::serve_ready`]. The
    /// run loop sleeps here, so that a request is answered when it arrives, not at the next
    /// turn.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        if self
            .conns
            .iter()
            .any(|c| !c.waiting && c.buf.contains(&b'\n'))
        {
            return true;
        }
        // a connection waiting for a deferred reply is not read from (it may have hung up)
        let mut fds: Vec<libc::pollfd> = std::iter::once(self.listener.as_raw_fd())
            .chain(
                self.conns
                    .iter()
                    .filter(|c| !c.waiting)
                    .map(|c| c.stream.as_raw_fd()),
            )
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: fds is a valid array of fds.len() pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n <= 0 {
            return false;
        }
        self.listener_ready = fds[0].revents != 0;
        let mut polled = fds[1..].iter();
        for c in self.conns.iter_mut().filter(|c| !c.waiting) {
            c.ready = polled.next().is_some_and(|p| p.revents != 0);
        }
        true
    }

    /// [`Self::serve`] of only what [`Self::wait`] saw ready: the listener if a client
    /// connected, the connections that sent (or hung up) and those with a complete request in
    /// their buffer; the others are left as they are, their timeouts checked at the next
    /// [`Self::serve`]. The run loop serves this way when it woke for the socket, and calls
    /// `serve` on its 10 ms turn: a request costs its own connection's reads, not a pass over
    /// every connection.
    pub fn serve_ready(&mut self, mut handle: impl FnMut(&str) -> Option<String>) {
        let now = Instant::now();
        if std::mem::take(&mut self.listener_ready) {
            self.accept_all(now);
        }
        let mut budget = MAX_REQUESTS_PER_TURN;
        self.conns.retain_mut(|c| {
            let due = std::mem::take(&mut c.ready) || (!c.waiting && c.buf.contains(&b'\n'));
            !due || c.serve(now, &mut budget, &mut handle) == Keep::Open
        });
    }

    /// Accepts new connections and answers every complete request line with `handle`'s reply
    /// (a JSON line); `None` from `handle`: the reply comes later through [`Self::deliver`]
    /// and the connection waits for it. Never blocks.
    pub fn serve(&mut self, handle: impl FnMut(&str) -> Option<String>) {
        self.serve_at(Instant::now(), handle);
    }

    /// Writes the reply `line` of the request a connection waits for (the first one that
    /// waits: the control protocol has one deferred request at a time); dropped when that
    /// connection has been closed meanwhile.
    pub fn deliver(&mut self, line: &str) {
        if let Some(c) = self.conns.iter_mut().find(|c| c.waiting) {
            c.waiting = false;
            if c.stream.write_all(line.as_bytes()).is_err() {
                // a client that does not read: closed at its next turn like any broken one
                c.buf.clear();
                let _ = c.stream.shutdown(std::net::Shutdown::Both);
            }
        }
    }

    /// `serve` with the time given (tests step it).
    fn serve_at(&mut self, now: Instant, mut handle: impl FnMut(&str) -> Option<String>) {
        self.listener_ready = false;
        self.accept_all(now);
        let mut budget = MAX_REQUESTS_PER_TURN;
        self.conns.retain_mut(|c| {
            c.ready = false;
            c.serve(now, &mut budget, &mut handle) == Keep::Open
        });
    }

    /// Accepts every pending connection: refused ones (peer credentials, too many) get their
    /// line and are closed.
    fn accept_all(&mut self, now: Instant) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let allowed = peer_of(&stream)
                        .map_err(|e| format!("reading the peer's credentials: {e}"))
                        .and_then(|p| authorize(&p, self.euid, self.access.group.as_ref()));
                    if let Err(why) = allowed {
                        // one line, then closed: nothing it sends is read
                        let _ = (&stream).write_all(Reply::Err(why).to_line().as_bytes());
                        continue;
                    }
                    if self.conns.len() >= MAX_CONNECTIONS {
                        let busy =
                            Reply::Err(format!("too many connections (at most {MAX_CONNECTIONS})"));
                        let _ = (&stream).write_all(busy.to_line().as_bytes());
                        continue;
                    }
                    self.conns.push(Conn {
                        stream,
                        buf: Vec::new(),
                        opened: now,
                        last_request: now,
                        waiting: false,
                        // a request sent with the connect is read at once
                        ready: true,
                    });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    eprintln!("scx_tt: warning: control socket accept: {e}");
                    break;
                }
            }
        }
    }
}

#[derive(PartialEq)]
enum Keep {
    Open,
    Close,
}

impl Conn {
    fn serve(
        &mut self,
        now: Instant,
        requests: &mut usize,
        handle: &mut impl FnMut(&str) -> Option<String>,
    ) -> Keep {
        if now.duration_since(self.opened) >= MAX_CONN_AGE {
            return Keep::Close;
        }
        if self.waiting {
            // its reply comes from deliver(); the idle timeout does not run meanwhile
            self.last_request = now;
            return Keep::Open;
        }
        let (mut eof, mut chunk) = (false, [0u8; 4096]);
        // Nothing is read while a complete request waits for its turn.
        let mut budget = if self.buf.contains(&b'\n') {
            0
        } else {
            READ_BUDGET
        };
        while budget > 0 {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    budget = budget.saturating_sub(n);
                    if n < chunk.len() {
                        // a unix stream socket hands over all it holds: a short read emptied
                        // it (more that comes later wakes the next wait)
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => return Keep::Close,
            }
        }
        while *requests > 0 && !self.waiting {
            let Some(end) = self.buf.iter().position(|&b| b == b'\n') else {
                break;
            };
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            self.last_request = now;
            *requests -= 1;
            if self.answer(&line[..end], handle) == Keep::Close {
                return Keep::Close;
            }
        }
        if self.buf.contains(&b'\n') || self.waiting {
            // requests left for the next turn, or a reply to come; nothing below applies
            return Keep::Open;
        }
        if self.buf.len() > MAX_REQUEST_BYTES {
            let too_long = Reply::Err(RequestError::TooLong.to_string());
            let _ = self.stream.write_all(too_long.to_line().as_bytes());
            return Keep::Close;
        }
        if eof {
            // a last request without its newline still gets an answer
            let rest = std::mem::take(&mut self.buf);
            if self.answer(&rest, handle) == Keep::Open && self.waiting {
                // the client closed its side only: its reply still comes
                return Keep::Open;
            }
            return Keep::Close;
        }
        if now.duration_since(self.last_request) >= IDLE_TIMEOUT {
            return Keep::Close;
        }
        Keep::Open
    }

    fn answer(&mut self, line: &[u8], handle: &mut impl FnMut(&str) -> Option<String>) -> Keep {
        let reply = match std::str::from_utf8(line) {
            Ok(text) if text.trim().is_empty() => return Keep::Open,
            Ok(text) => match handle(text.trim()) {
                Some(reply) => reply,
                None => {
                    self.waiting = true;
                    return Keep::Open;
                }
            },
            Err(e) => Reply::Err(format!("request is not UTF-8: {e}")).to_line(),
        };
        // Replies are small: a full socket buffer means a client that does not read.
        match self.stream.write_all(reply.as_bytes()) {
            Ok(()) => Keep::Open,
            Err(_) => Keep::Close,
        }
    }
}

/// Why a directory is no safe place for the control socket: someone else than root and
/// scx_tt's own user could bind the path first (the run would then refuse to start, or clients
/// would talk to the squatter) or replace the socket while the run serves it.
#[derive(Debug, PartialEq, Eq)]
pub enum DirRisk {
    /// Writable by its group or by others (`who`), without the sticky bit: anyone who may write
    /// there can create, remove or rename any entry.
    WritableNoSticky { who: &'static str },
    /// Owned by another user, who may change its mode or remove any entry whatever the bits.
    ForeignOwner { owner: u32 },
}

impl std::fmt::Display for DirRisk {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            DirRisk::WritableNoSticky { who } => write!(
                f,
                "is writable by {who} without the sticky bit: another user could bind the \
                 socket's path first or replace the socket"
            ),
            DirRisk::ForeignOwner { owner } => write!(
                f,
                "is owned by uid {owner}, neither root nor scx_tt's user: its owner could \
                 replace the socket"
            ),
        }
    }
}

/// The rule for every directory on the socket's path: owned by root or by `euid`, and not
/// writable by its group or others unless it has the sticky bit (then only an entry's owner
/// may remove or rename it: /tmp). `mode`: `st_mode`; `owner`: `st_uid`.
pub fn dir_risk(mode: u32, owner: u32, euid: u32) -> Option<DirRisk> {
    if owner != 0 && owner != euid {
        return Some(DirRisk::ForeignOwner { owner });
    }
    if mode & 0o1000 != 0 {
        return None;
    }
    match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (_, true) => Some(DirRisk::WritableNoSticky { who: "others" }),
        (true, false) => Some(DirRisk::WritableNoSticky { who: "its group" }),
        (false, false) => None,
    }
}

/// The refusals of [`ControlSocket::bind`] that change nothing, so that the run makes them
/// before its start-up checks: an unsafe directory ([`check_dir`]), a live socket (one that
/// accepts a connection: another scx_tt's, say), anything that is not a socket. Returns whether
/// a stale socket (nobody listening) is there, which `bind` removes.
pub fn check_free(path: &Path) -> Result<bool> {
    check_dir(path)?;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => match UnixStream::connect(path) {
            Ok(_) => bail!(
                "--control {}: another process is listening on this socket (another scx_tt? \
                 `scx_tt ctl --socket {} status` asks it): stop it, or give another --control \
                 path",
                path.display(),
                path.display()
            ),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => Ok(true),
            Err(e) => bail!(
                "--control {}: probing the existing socket: {e}",
                path.display()
            ),
        },
        Ok(_) => bail!(
            "--control {}: exists and is not a socket; not replacing it (remove it, or give \
             another --control path)",
            path.display()
        ),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => bail!("--control {}: {e}", path.display()),
    }
}

/// Refuses a socket path whose directory, or any directory above it, breaks [`dir_risk`]'s
/// rule (after resolving symbolic links: the directories the socket really lives in). The
/// error names the directory, its mode and owner, and the rule.
pub fn check_dir(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let real = std::fs::canonicalize(parent).with_context(|| {
        format!(
            "--control {}: its directory {}",
            path.display(),
            parent.display()
        )
    })?;
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    for dir in real.ancestors() {
        let meta = std::fs::metadata(dir)
            .with_context(|| format!("--control {}: {}", path.display(), dir.display()))?;
        if let Some(risk) = dir_risk(meta.mode(), meta.uid(), euid) {
            bail!(
                "--control {}: directory {} (mode {:04o}, owner uid {}) {risk}; use a \
                 directory only root can write, such as /run, or a sticky one such as /tmp \
                 (docs/control.md, \"The socket\")",
                path.display(),
                dir.display(),
                meta.mode() & 0o7777,
                meta.uid()
            );
        }
    }
    Ok(())
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let ours =
            std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.file_id);
        if ours {
            if let Err(e) = std::fs::remove_file(&self.path) {
                eprintln!(
                    "scx_tt: warning: removing the control socket {}: {e}",
                    self.path.display()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
        let replaced =
            ControlSocket::bind(&path, &Access::default()).expect("stale socket replaced");
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

    /// Connects to `path` from a thread whose own credentials are (euid, egid) with no
    /// supplementary group (a raw setresuid/setresgid/setgroups changes only the calling
    /// thread), sends `status` and returns what came back.
    fn as_user(path: &Path, euid: u32, egid: u32) -> String {
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            // SAFETY: raw syscalls on this thread's credentials only; the thread ends after.
            unsafe {
                assert_eq!(
                    libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<u32>()),
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
        let serve = |sock: &mut ControlSocket, euid: u32, egid: u32| {
            std::thread::scope(|s| {
                let client = s.spawn(|| as_user(&path, euid, egid));
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
        let stranger = serve(&mut sock, 65534, 65534);
        assert!(stranger.contains("Permission denied"), "{stranger}");
        // ... a member of the group is served ...
        let member = serve(&mut sock, 65534, 4242);
        assert_eq!(member, "{\"ok\":true}\n");
        // ... and a socket made world-writable by mistake still refuses a stranger, by its
        // peer credentials, before reading a byte
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let stranger = serve(&mut sock, 65534, 65534);
        assert!(
            stranger.contains("\"ok\":false")
                && stranger.contains("permission denied: uid 65534")
                && stranger.contains("control group tt-test (gid 4242"),
            "{stranger}"
        );
        assert_eq!(
            served.load(std::sync::atomic::Ordering::Relaxed),
            1,
            "only the member's request"
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
}
