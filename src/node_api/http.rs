//! The HTTP side of the node API: a tiny_http server, the bearer token, the routes. Each
//! request is answered by one of a fixed set of worker threads; a watch holds its own thread
//! (at most [`MAX_WATCHES`] at once).

use super::node::{Failure, Node};
use super::wire::{self, ErrorReply, FieldError, RemoveRequest, Request, MAX_BODY};
use serde::Serialize;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tiny_http::{Header, Method, Response, Server};

/// Worker threads answering requests.
pub const WORKERS: usize = 4;
/// Watches served at once; more are answered 503.
pub const MAX_WATCHES: usize = 16;
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

fn authorized(shared: &Shared, req: &tiny_http::Request) -> bool {
    req.headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .and_then(|h| h.value.as_str().strip_prefix("Bearer "))
        .is_some_and(|t| same(t.as_bytes(), shared.token.as_bytes()))
}

fn json_response(status: u16, body: &impl Serialize) -> Response<std::io::Cursor<Vec<u8>>> {
    let mut text = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    text.push(b'\n');
    Response::from_data(text)
        .with_status_code(status)
        .with_header(Header::from_bytes("Content-Type", "application/json").expect("header"))
}

fn message(status: u16, m: impl Into<String>) -> Response<std::io::Cursor<Vec<u8>>> {
    json_response(
        status,
        &ErrorReply {
            error: None,
            message: m.into(),
        },
    )
}

fn failure(f: Failure) -> Response<std::io::Cursor<Vec<u8>>> {
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

/// The body, at most [`MAX_BODY`] bytes.
fn body(req: &mut tiny_http::Request) -> Result<Vec<u8>, FieldError> {
    let mut buf = Vec::new();
    req.as_reader()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| FieldError::new("body", "", &format!("readable: {e}")))?;
    if buf.len() > MAX_BODY {
        return Err(FieldError::new(
            "body",
            format!("more than {MAX_BODY} bytes"),
            &format!("at most {MAX_BODY} bytes"),
        ));
    }
    Ok(buf)
}

fn answer<T: Serialize>(r: Result<T, Failure>) -> Response<std::io::Cursor<Vec<u8>>> {
    match r {
        Ok(v) => json_response(200, &v),
        Err(f) => failure(f),
    }
}

/// The answer to one authorized request but a watch.
fn route(shared: &Shared, req: &mut tiny_http::Request) -> Response<std::io::Cursor<Vec<u8>>> {
    let node = &shared.node;
    let path = req.url().split('?').next().unwrap_or("").to_string();
    match (req.method(), path.as_str()) {
        (Method::Get, "/v1/capacity") => answer(node.capacity()),
        (Method::Post, "/v1/dry-run") => answer(
            body(req)
                .and_then(|b| wire::parse::<Request>(&b))
                .map_err(Failure::Field)
                .and_then(|r| node.dry_run(&r)),
        ),
        (Method::Post, "/v1/admit") => answer(
            body(req)
                .and_then(|b| wire::parse::<Request>(&b))
                .map_err(Failure::Field)
                .and_then(|r| node.admit(&r)),
        ),
        (Method::Post, "/v1/remove") => answer(
            body(req)
                .and_then(|b| wire::parse::<RemoveRequest>(&b))
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
fn watch(shared: &Shared, req: tiny_http::Request) {
    let since = match since_of(req.url()) {
        Ok(s) => s,
        Err(e) => return respond(req, failure(Failure::Field(e))),
    };
    if let Err(f) = shared.node.events(since, Duration::ZERO) {
        return respond(req, failure(f));
    }
    let mut w = req.into_writer();
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

fn respond(req: tiny_http::Request, resp: Response<std::io::Cursor<Vec<u8>>>) {
    let _ = req.respond(resp);
}

/// One worker: answers requests until the server is unblocked.
pub fn worker(shared: Arc<Shared>, server: Arc<Server>) {
    while let Ok(mut req) = server.recv() {
        if !authorized(&shared, &req) {
            respond(req, message(401, "missing or wrong bearer token"));
            continue;
        }
        let is_watch =
            req.method() == &Method::Get && req.url().split('?').next() == Some("/v1/watch");
        if !is_watch {
            let resp = route(&shared, &mut req);
            respond(req, resp);
            continue;
        }
        if shared.watches.fetch_add(1, Ordering::SeqCst) >= MAX_WATCHES {
            shared.watches.fetch_sub(1, Ordering::SeqCst);
            respond(
                req,
                message(503, format!("{MAX_WATCHES} watches are served already")),
            );
            continue;
        }
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("node-api-watch".into())
            .spawn(move || {
                watch(&s, req);
                s.watches.fetch_sub(1, Ordering::SeqCst);
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
