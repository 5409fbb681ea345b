//! The socket of `--control PATH` (docs/control.md): a unix stream socket, mode 0600 (0660
//! with its group set to `--control-group`), served from the run loop without ever blocking
//! it. Every connection's peer credentials (SO_PEERCRED, SO_PEERGROUPS) are checked when it is
//! accepted ([`check_peer`], [`authorize`]'s rule; SO_PEERGROUPS is read only when the rule
//! needs it): root, scx_tt's own user and members of the control group are served, anyone
//! else gets one refusal line and is closed before a byte is read. Non-blocking accept and reads; one JSON request
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
use anyhow::{Context, Result};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
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
/// Connections accepted (or refused) per call: a flood of connects cannot hold one turn.
const MAX_ACCEPTS_PER_TURN: usize = 2 * MAX_CONNECTIONS;

mod access;
mod placement;

pub use access::{authorize, check_peer, needs_groups, peer_of, Access, Group, Peer};
pub use placement::{check_dir, check_free, dir_risk, DirRisk};

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
    pub fn serve_ready(&mut self, handle: impl FnMut(&str) -> Option<String>) {
        let accept = std::mem::take(&mut self.listener_ready);
        self.serve_turn(Instant::now(), false, accept, handle);
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
    fn serve_at(&mut self, now: Instant, handle: impl FnMut(&str) -> Option<String>) {
        self.listener_ready = false;
        self.serve_turn(now, true, true, handle);
    }

    /// One turn: the connections we have first (every one when `all`, else those due), so that
    /// those whose client hung up give their slot back before new ones are counted against
    /// `MAX_CONNECTIONS` (with a connection per request, a client that closed after its reply
    /// would otherwise have a newcomer refused as one too many); then, when `accept`, the
    /// pending connections, each served at once (a request sent with the connect is answered
    /// in this turn).
    fn serve_turn(
        &mut self,
        now: Instant,
        all: bool,
        accept: bool,
        mut handle: impl FnMut(&str) -> Option<String>,
    ) {
        let mut budget = MAX_REQUESTS_PER_TURN;
        self.conns.retain_mut(|c| {
            let ready = std::mem::take(&mut c.ready);
            let due = all || ready || (!c.waiting && c.buf.contains(&b'\n'));
            !due || c.serve(now, &mut budget, &mut handle) == Keep::Open
        });
        if !accept {
            return;
        }
        let old = self.conns.len();
        self.accept_all(now);
        let mut i = 0;
        self.conns.retain_mut(|c| {
            i += 1;
            i <= old || {
                c.ready = false;
                c.serve(now, &mut budget, &mut handle) == Keep::Open
            }
        });
    }

    /// Accepts the pending connections, at most `MAX_ACCEPTS_PER_TURN` (the rest wait in the
    /// listener's backlog, which keeps the listener ready for the next [`Self::wait`]): refused
    /// ones (peer credentials, too many) get their line and are closed.
    fn accept_all(&mut self, now: Instant) {
        for _ in 0..MAX_ACCEPTS_PER_TURN {
            let stream = match self.accept() {
                Ok(stream) => stream,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // the client gave up before we got to it: nothing to serve
                Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => continue,
                Err(e) => {
                    eprintln!("scx_tt: warning: control socket accept: {e}");
                    break;
                }
            };
            let allowed = check_peer(&stream, self.euid, self.access.group.as_ref());
            if let Err(why) = allowed {
                // one line, then closed: nothing it sends is read
                let _ = (&stream).write_all(Reply::Err(why).to_line().as_bytes());
                continue;
            }
            if self.conns.len() >= MAX_CONNECTIONS {
                let busy = Reply::Err(format!("too many connections (at most {MAX_CONNECTIONS})"));
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
    }

    /// One pending connection, non-blocking and close-on-exec from the start (accept4: no
    /// fcntl per connection).
    fn accept(&self) -> std::io::Result<UnixStream> {
        let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        // SAFETY: the listener's fd is open; null address and length are allowed.
        let fd = unsafe {
            libc::accept4(
                self.listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                flags,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: accept4 returned a new socket fd that nothing else owns.
        Ok(unsafe { UnixStream::from_raw_fd(fd) })
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
mod tests;
