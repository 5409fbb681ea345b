//! The node admission API `scx_tt.node/v1` (issue 35, docs/cluster.md): what a cluster
//! scheduler asks a node's scx_tt — its capacity, a dry run, admit, remove, watch — as JSON
//! over HTTP/1.1 on TCP, next to the control socket.
//!
//! - **One code path**: each request becomes a line of the control protocol sent to the run's
//!   own `--control` socket ([`node`]), answered by `Control::serve` like `scx_tt ctl`.
//! - **Authentication**: a bearer token read from a file only its owner may read (mode 0600 or
//!   stricter, checked at start), compared in constant time. Chosen over mutual TLS because a
//!   node needs no certificate authority for it and the token is rotated like any Kubernetes
//!   Secret; the connection itself is plain HTTP, so serve it on a trusted network or behind a
//!   TLS proxy (docs/cluster.md says what is left).
//! - **Simulated node** (`--simulated-node`): the same API over the simulated engine, whose
//!   processes ([`simulated`]) stand for the pods' VMs.

pub mod http;
pub mod node;
pub mod simulated;
pub mod wire;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the node re-reads its capacity for `watch` (changes made by `scx_tt ctl`, tasks
/// whose threads are gone).
const POLL: Duration = Duration::from_millis(500);
/// The longest token file read.
const MAX_TOKEN_BYTES: u64 = 4096;

/// What the node API serves and where.
pub struct Config {
    pub listen: SocketAddr,
    pub token_file: PathBuf,
    pub node: String,
    pub control: PathBuf,
    pub procs: Option<Arc<simulated::Processes>>,
}

/// The running node API; stopped when dropped.
pub struct NodeApi {
    pub addr: SocketAddr,
    shared: Arc<http::Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// The bearer token in `path`: a regular file only its owner may read or write (no group or
/// other permission bits), 1 to 4096 bytes of visible ASCII once trimmed.
pub fn read_token(path: &Path) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let show = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("--node-token-file {show}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("--node-token-file {show}: must be a regular file"));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "--node-token-file {show}: mode {mode:o}: must be readable by its owner alone \
             (chmod 600)"
        ));
    }
    if meta.len() > MAX_TOKEN_BYTES {
        return Err(format!(
            "--node-token-file {show}: {} bytes: at most {MAX_TOKEN_BYTES}",
            meta.len()
        ));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("--node-token-file {show}: {e}"))?;
    let token = text.trim();
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "--node-token-file {show}: must hold one token of visible ASCII characters"
        ));
    }
    Ok(token.to_string())
}

impl NodeApi {
    /// Binds `cfg.listen` and starts the workers and the capacity poller.
    pub fn start(cfg: Config) -> Result<Self, String> {
        let token = read_token(&cfg.token_file)?;
        let listener = std::net::TcpListener::bind(cfg.listen)
            .map_err(|e| format!("--node-api {}: {e}", cfg.listen))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("--node-api {}: {e}", cfg.listen))?;
        let shared = Arc::new(http::Shared::new(
            node::Node::new(cfg.control, cfg.node, cfg.procs),
            token,
        ));
        let (tx, rx) = std::sync::mpsc::sync_channel(http::QUEUE);
        let rx = Arc::new(std::sync::Mutex::new(rx));
        let mut threads = Vec::new();
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .map_err(|e| format!("starting the node API: {e}"))
        };
        let s = shared.clone();
        threads.push(spawn(
            "node-api-accept".into(),
            Box::new(move || http::acceptor(s, listener, tx)),
        )?);
        for i in 0..http::WORKERS {
            let (s, q) = (shared.clone(), rx.clone());
            threads.push(spawn(
                format!("node-api-{i}"),
                Box::new(move || http::worker(s, q)),
            )?);
        }
        let s = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name("node-api-poll".into())
                .spawn(move || {
                    while !s.stop.load(Ordering::Relaxed) {
                        s.node.refresh();
                        std::thread::sleep(POLL);
                    }
                })
                .map_err(|e| format!("starting the node API: {e}"))?,
        );
        Ok(NodeApi {
            addr,
            shared,
            threads,
        })
    }
}

impl Drop for NodeApi {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // The acceptor sees `stop` at its next connection: one from here (to the loopback
        // address when it listens on every address). It then drops the queue's sender, which
        // ends the workers once they are done with their connection.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = std::net::TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_token_file_must_be_its_owners_alone_and_hold_one_token() {
        let dir = std::env::temp_dir().join(format!("scx_tt-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("token");
        let write = |text: &str, mode: u32| {
            std::fs::write(&f, text).unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        write("s3cret\n", 0o600);
        assert_eq!(read_token(&f).unwrap(), "s3cret");
        write("s3cret\n", 0o640);
        assert!(read_token(&f).unwrap_err().contains("mode 640"));
        write("s3cret\n", 0o604);
        assert!(read_token(&f).is_err());
        for bad in ["", "  \n", "two words", "caf\u{e9}"] {
            write(bad, 0o600);
            assert!(read_token(&f).unwrap_err().contains("one token"), "{bad:?}");
        }
        write(&"x".repeat(4097), 0o600);
        assert!(read_token(&f).unwrap_err().contains("at most 4096"));
        assert!(read_token(&dir).unwrap_err().contains("regular file"));
        assert!(read_token(&dir.join("none")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
