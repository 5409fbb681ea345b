//! Who may use the socket: the control group, a connection's peer credentials and the rule.

use anyhow::{bail, Result};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

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

/// Whether `authorize` needs the peer's supplementary groups to decide: only with a control
/// group, for a peer that is neither root, scx_tt's user nor of the group by its primary gid.
pub fn needs_groups(peer: &Peer, euid: u32, group: Option<&Group>) -> bool {
    match group {
        Some(g) => peer.uid != 0 && peer.uid != euid && peer.gid != g.gid,
        None => false,
    }
}

/// [`authorize`] of the peer of `stream`, reading only what the rule needs: SO_PEERCRED, and
/// SO_PEERGROUPS only when [`needs_groups`] (a connection per request, as `scx_tt ctl` makes,
/// otherwise pays a second getsockopt and a 1 KiB buffer for groups nobody looks at). The
/// decision is `authorize(&peer_of(stream)?, ..)`'s.
pub fn check_peer(
    stream: &UnixStream,
    euid: u32,
    group: Option<&Group>,
) -> std::result::Result<(), String> {
    let why = |e: std::io::Error| format!("reading the peer's credentials: {e}");
    let mut peer = peer_cred(stream).map_err(why)?;
    if needs_groups(&peer, euid, group) {
        peer.groups = peer_groups(stream).map_err(why)?;
    }
    authorize(&peer, euid, group)
}

/// The peer credentials of a connected unix socket.
pub fn peer_of(stream: &UnixStream) -> std::io::Result<Peer> {
    let mut peer = peer_cred(stream)?;
    peer.groups = peer_groups(stream)?;
    Ok(peer)
}

/// SO_PEERCRED: the peer's pid, uid and gid (no supplementary groups).
fn peer_cred(stream: &UnixStream) -> std::io::Result<Peer> {
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
    Ok(Peer {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
        groups: Vec::new(),
    })
}

/// SO_PEERGROUPS: the peer's supplementary groups.
fn peer_groups(stream: &UnixStream) -> std::io::Result<Vec<u32>> {
    let fd = stream.as_raw_fd();
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
            return Ok(groups);
        }
        let e = std::io::Error::last_os_error();
        let need = len as usize / 4;
        if e.raw_os_error() == Some(libc::ERANGE) && need > groups.len() && need <= 65536 {
            groups.resize(need, 0);
            continue;
        }
        return Err(e);
    }
}
