//! The HTTP side of the node API: a bounded HTTP/1.1 server over std's TCP (requests parsed by
//! `httparse`), the bearer token, the routes. One request per connection (`Connection: close`).
//!
//! Bounds, so that no client (authenticated or not) can exhaust the node: an accept thread
//! hands connections to [`WORKERS`] worker threads through a queue of [`QUEUE`]; a connection
//! that finds the queue full is answered 503 at once and closed. A worker gives a request
//! [`REQUEST_DEADLINE`] from its acceptance to arrive (head and body; a client that sends nothing,
//! or one byte at a time, is cut off, and a queue of such connections empties within one
//! deadline), a head at most [`MAX_HEAD`] bytes and [`MAX_HEADERS`] headers, a body
//! at most [`MAX_BODY`] bytes (announced by `Content-Length`). A watch holds a thread of its own
//! (at most [`MAX_WATCHES`] at once) whose writes time out after [`WRITE_TIMEOUT`], so a client
//! that stops reading frees it. (tiny_http, used before, gave every connection a thread of its
//! own for as long as the client kept it open, without a timeout.)

use super::node::{Failure, Node};
use super::wire::{self, ErrorReply, FieldError, RemoveRequest, Request, MAX_BODY};
use serde::Serialize;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

/// A connection waiting for a worker, with the time it was accepted (its request deadline
/// counts from there, so that a queue of idle connections empties within one deadline).
pub type Queued = (TcpStream, Instant);
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Worker threads answering requests.
pub const WORKERS: usize = 4;
/// Accepted connections waiting for a worker; more are answered 503.
pub const QUEUE: usize = 64;
/// Watches served at once; more are answered 503.
pub const MAX_WATCHES: usize = 16;
/// How long a request may take to arrive, from its connection's acceptance to its last byte.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// How long one write may block (an answer, a watch's events).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest request head (request line and headers).
pub const MAX_HEAD: usize = 16 * 1024;
/// The most headers a request may carry.
pub const MAX_HEADERS: usize = 64;
/// The longest a worker's read blocks before it looks at `stop` again.
const READ_SLICE: Duration = Duration::from_millis(250);
/// How long a watch waits for an event before it checks whether the client is still there.
const WATCH_BEAT: Duration = Duration::from_secs(1);

/// What the workers share.
pub struct Shared {
    pub node: Node,
    pub token: String,
    pub stop: AtomicBool,
    watches: AtomicUsize,
}

impl Shared {
    pub fn new(node: Node, token: String) -> Self {
        Shared {
            node,
            token,
            stop: AtomicBool::new(false),
            watches: AtomicUsize::new(0),
        }
    }
}

/// Compares in time independent of where the two differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One request as read from a connection.
pub struct Req {
    pub method: String,
    /// The request target (path and query).
    pub url: String,
    headers: Vec<(String, Vec<u8>)>,
    /// The body, or why it was not read (too long): answered 400 naming `body`.
    body: Result<Vec<u8>, FieldError>,
}

impl Req {
    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    fn path(&self) -> &str {
        self.url.split('?').next().unwrap_or("")
    }
}

/// Why no request could be read: answered with the status (or nothing, for a client gone).
#[derive(Debug)]
pub enum ReadError {
    /// Answered with this status and message, then the connection is closed.
    Answer(u16, String),
    /// Nothing to answer (the client closed, or the deadline passed before a whole head).
    Gone,
}

/// Reads one request from `s` before `deadline`.
pub fn read_request(
    s: &mut TcpStream,
    deadline: Instant,
    stop: &AtomicBool,
) -> Result<Req, ReadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let too_long = || {
        ReadError::Answer(
            431,
            format!("the request head is longer than {MAX_HEAD} bytes"),
        )
    };
    let mut searched = 0;
    let head_len = loop {
        if let Some(i) = buf[searched..].windows(4).position(|w| w == b"\r\n\r\n") {
            match searched + i + 4 {
                end if end > MAX_HEAD => return Err(too_long()),
                end => break end,
            }
        }
        if buf.len() > MAX_HEAD {
            return Err(too_long());
        }
        searched = buf.len().saturating_sub(3);
        match read_some(s, &mut chunk, deadline, stop)? {
            0 => return Err(ReadError::Gone),
            n => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(&buf[..head_len]) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(ReadError::Gone),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ReadError::Answer(
                431,
                format!("more than {MAX_HEADERS} headers"),
            ))
        }
        Err(e) => return Err(ReadError::Answer(400, format!("not an HTTP request: {e}"))),
    }
    let mut req = Req {
        method: parsed.method.unwrap_or("").to_string(),
        url: parsed.path.unwrap_or("").to_string(),
        headers: parsed
            .headers
            .iter()
            .map(|h| (h.name.to_string(), h.value.to_vec()))
            .collect(),
        body: Ok(Vec::new()),
    };
    if req.header("Transfer-Encoding").is_some() {
        return Err(ReadError::Answer(
            411,
            "a body must come with Content-Length (no Transfer-Encoding)".into(),
        ));
    }
    let len = match req.header("Content-Length") {
        None => 0,
        Some(v) => match std::str::from_utf8(v)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
        {
            Some(n) => n,
            None => {
                return Err(ReadError::Answer(
                    400,
                    "Content-Length is not an integer >= 0".into(),
                ))
            }
        },
    };
    if len > MAX_BODY as u64 {
        req.body = Err(FieldError::new(
            "body",
            format!("{len} bytes"),
            &format!("at most {MAX_BODY} bytes"),
        ));
        return Ok(req);
    }
    let mut body = buf[head_len..].to_vec();
    body.truncate(len as usize);
    while body.len() < len as usize {
        let want = (len as usize - body.len()).min(chunk.len());
        match read_some(s, &mut chunk[..want], deadline, stop)? {
            0 => return Err(ReadError::Gone),
            n => body.extend_from_slice(&chunk[..n]),
        }
    }
    req.body = Ok(body);
    Ok(req)
}

/// One read before `deadline` (in slices of at most [`READ_SLICE`], so that a stopping node API
/// does not wait for a slow client).
fn read_some(
    s: &mut TcpStream,
    buf: &mut [u8],
    deadline: Instant,
    stop: &AtomicBool,
) -> Result<usize, ReadError> {
    let late = || {
        ReadError::Answer(
            408,
            format!(
                "the request took more than {} s",
                REQUEST_DEADLINE.as_secs()
            ),
        )
    };
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(ReadError::Gone);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        // Past the deadline, one last short read: what a client sent in time while its
        // connection waited in the queue is still served.
        let last = left.is_zero();
        s.set_read_timeout(Some(left.clamp(Duration::from_millis(1), READ_SLICE)))
            .map_err(|_| ReadError::Gone)?;
        match s.read(buf) {
            Ok(n) => return Ok(n),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::Interrupted
                        | std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                ) =>
            {
                if last {
                    return Err(late());
                }
            }
            Err(_) => return Err(ReadError::Gone),
        }
    }
}

fn authorized(shared: &Shared, req: &Req) -> bool {
    req.header("Authorization")
        .and_then(|v| v.strip_prefix(b"Bearer "))
        .is_some_and(|t| same(t, shared.token.as_bytes()))
}

/// An answer: status and JSON body.
pub struct Resp {
    pub status: u16,
    pub body: Vec<u8>,
}

fn json_response(status: u16, body: &impl Serialize) -> Resp {
    let mut text = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    text.push(b'\n');
    Resp { status, body: text }
}

fn message(status: u16, m: impl Into<String>) -> Resp {
    json_response(
        status,
        &ErrorReply {
            error: None,
            message: m.into(),
        },
    )
}

fn failure(f: Failure) -> Resp {
    match f {
        Failure::Field(e) => json_response(
            400,
            &ErrorReply {
                error: Some(e),
                message: String::new(),
            },
        ),
        Failure::Conflict(m) => message(409, m),
        Failure::Gone(m) => message(410, m),
        Failure::Refused(m) => message(422, m),
        Failure::Unavailable(m) => message(503, m),
    }
}

fn answer<T: Serialize>(r: Result<T, Failure>) -> Resp {
    match r {
        Ok(v) => json_response(200, &v),
        Err(f) => failure(f),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        422 => "Unprocessable Entity",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// Writes `resp` and closes the connection. With `drain` (the client may still be sending what
/// was not read: a body too long, a head refused), what it sends next is read and dropped for
/// a short while first, so that the answer is not lost to a reset.
fn respond_then(mut s: TcpStream, resp: Resp, drain: bool) {
    let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
    if write_answer(&mut s, &resp).is_err() {
        return;
    }
    let _ = s.shutdown(Shutdown::Write);
    if !drain {
        return;
    }
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    while drained < MAX_BODY {
        match s.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

/// Writes `resp`'s status line, headers and body.
fn write_answer(s: &mut TcpStream, resp: &Resp) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        resp.status,
        reason(resp.status),
        resp.body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(&resp.body)?;
    s.flush()
}

/// Writes `resp` and closes the connection (the whole request was read).
fn respond(s: TcpStream, resp: Resp) {
    respond_then(s, resp, false)
}

/// The answer to one authorized request but a watch.
fn route(shared: &Shared, req: &Req) -> Resp {
    let node = &shared.node;
    let body = || req.body.as_deref().map_err(FieldError::clone);
    match (req.method.as_str(), req.path()) {
        ("GET", "/v1/capacity") => answer(node.capacity()),
        ("POST", "/v1/dry-run") => answer(
            body()
                .and_then(wire::parse::<Request>)
                .map_err(Failure::Field)
                .and_then(|r| node.dry_run(&r)),
        ),
        ("POST", "/v1/admit") => answer(
            body()
                .and_then(wire::parse::<Request>)
                .map_err(Failure::Field)
                .and_then(|r| node.admit(&r)),
        ),
        ("POST", "/v1/remove") => answer(
            body()
                .and_then(wire::parse::<RemoveRequest>)
                .map_err(Failure::Field)
                .and_then(|r| node.remove(&r.name)),
        ),
        (m, p) => message(404, format!("no such endpoint: {m} {p}")),
    }
}

/// `since` of a watch's query: `Err` names it and the rule.
pub fn since_of(url: &str) -> Result<u64, FieldError> {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let mut since = 0;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("since", v)) => {
                since = v
                    .parse()
                    .map_err(|_| FieldError::new("since", v, "an integer >= 0 (a generation)"))?
            }
            _ => {
                return Err(FieldError::new(
                    "query",
                    pair,
                    "only since=G (a generation)",
                ))
            }
        }
    }
    Ok(since)
}

/// `GET /v1/watch?since=G`: the events as newline-delimited JSON until the client goes away or
/// the node stops (a body delimited by the connection's end).
fn watch(shared: &Shared, req: &Req, mut w: TcpStream) {
    let since = match since_of(&req.url) {
        Ok(s) => s,
        Err(e) => return respond(w, failure(Failure::Field(e))),
    };
    if let Err(f) = shared.node.events(since, Duration::ZERO) {
        return respond(w, failure(f));
    }
    let _ = w.set_write_timeout(Some(WRITE_TIMEOUT));
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nConnection: close\r\n\r\n";
    if w.write_all(head.as_bytes())
        .and_then(|_| w.flush())
        .is_err()
    {
        return;
    }
    let mut since = since;
    while !shared.stop.load(Ordering::Relaxed) {
        let evs = match shared.node.events(since, WATCH_BEAT) {
            Ok(e) => e,
            Err(_) => return, // the history moved past this client: it re-lists
        };
        let mut out = Vec::new();
        for e in &evs {
            let _ = serde_json::to_writer(&mut out, e);
            out.push(b'\n');
            since = e.generation;
        }
        // an empty write finds a client that went away only once the kernel says so; a
        // newline is a blank line readers skip
        if out.is_empty() {
            out.push(b'\n');
        }
        if w.write_all(&out).and_then(|_| w.flush()).is_err() {
            return;
        }
    }
}

/// Accepts connections until `stop`, handing them to the workers through `queue`; a
/// connection that finds the queue full is answered 503 and closed at once.
pub fn acceptor(shared: Arc<Shared>, listener: TcpListener, queue: SyncSender<Queued>) {
    for conn in listener.incoming() {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(s) = conn else {
            // out of descriptors, or an aborted connection: breathe, then go on
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        match queue.try_send((s, Instant::now())) {
            Ok(()) => {}
            Err(TrySendError::Full((s, _))) => {
                let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
                respond_busy(s);
            }
            Err(TrySendError::Disconnected(_)) => return,
        }
    }
}

/// The answer of a full queue, without reading the request (no drain: the acceptor must not
/// wait on a client).
fn respond_busy(mut s: TcpStream) {
    let busy = format!("{} connections are waiting already", QUEUE + WORKERS);
    let _ = write_answer(&mut s, &message(503, busy));
}

/// One worker: answers connections from `queue` until the node API stops.
pub fn worker(shared: Arc<Shared>, queue: Arc<Mutex<Receiver<Queued>>>) {
    loop {
        let next = match queue.lock() {
            Ok(q) => q.recv(),
            Err(_) => return,
        };
        let Ok((mut s, accepted)) = next else {
            return;
        };
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let req = match read_request(&mut s, accepted + REQUEST_DEADLINE, &shared.stop) {
            Ok(r) => r,
            Err(ReadError::Answer(status, m)) => {
                // a request that took too long sent nothing more worth waiting for
                respond_then(s, message(status, m), status != 408);
                continue;
            }
            Err(ReadError::Gone) => continue,
        };
        let unread = req.body.is_err();
        if !authorized(&shared, &req) {
            respond_then(s, message(401, "missing or wrong bearer token"), unread);
            continue;
        }
        if !(req.method == "GET" && req.path() == "/v1/watch") {
            let resp = route(&shared, &req);
            respond_then(s, resp, unread);
            continue;
        }
        if shared.watches.fetch_add(1, Ordering::SeqCst) >= MAX_WATCHES {
            shared.watches.fetch_sub(1, Ordering::SeqCst);
            respond(
                s,
                message(503, format!("{MAX_WATCHES} watches are served already")),
            );
            continue;
        }
        let sh = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("node-api-watch".into())
            .spawn(move || {
                watch(&sh, &req, s);
                sh.watches.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            shared.watches.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_a_generation_and_nothing_else_is_asked() {
        assert_eq!(since_of("/v1/watch"), Ok(0));
        assert_eq!(since_of("/v1/watch?since=17"), Ok(17));
        assert_eq!(
            since_of("/v1/watch?since=18446744073709551615"),
            Ok(u64::MAX)
        );
        for bad in [
            "since=-1",
            "since=x",
            "since=18446744073709551616",
            "since=",
            "foo=1",
        ] {
            let e = since_of(&format!("/v1/watch?{bad}")).unwrap_err();
            assert!(e.field == "since" || e.field == "query", "{bad}: {e:?}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd") && !same(b"abc", b"ab") && !same(b"", b"a"));
    }
}
