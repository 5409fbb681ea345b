//! Where the socket may be placed: the directory rule and the checks made before binding.

use anyhow::{bail, Context, Result};
use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::Path;

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
