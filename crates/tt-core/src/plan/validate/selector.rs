//! Stage 1: a task's selector, exactly one of `pid`, `tids`, `comm`, `cgroup`, `qemu` and `cmd`.

use super::{Errors, COMM_MAX};
use crate::plan::error::Rule;
use crate::plan::raw::{RawQemu, RawTask};
use crate::plan::{QemuSelector, Selector};

pub(super) fn check_selector(t: &RawTask, p: &str, errs: &mut Errors) -> Option<Selector> {
    let found: Vec<&str> = [
        ("pid", t.pid.is_some()),
        ("tids", t.tids.is_some()),
        ("comm", t.comm.is_some()),
        ("cgroup", t.cgroup.is_some()),
        ("qemu", t.qemu.is_some()),
        ("cmd", t.cmd.is_some()),
    ]
    .iter()
    .filter(|(_, set)| *set)
    .map(|(n, _)| *n)
    .collect();
    if found.len() != 1 {
        let what = if found.is_empty() {
            "none".to_string()
        } else {
            found.join(", ")
        };
        errs.push(p, None, Rule::SelectorCount(what));
        return None;
    }
    let before = errs.0.len();
    let sel = if let Some(pid) = t.pid {
        if pid == 0 {
            errs.value(format!("{p}.pid"), &pid, Rule::Zero);
        }
        Selector::Pid(pid)
    } else if let Some(tids) = &t.tids {
        if tids.is_empty() {
            errs.value(format!("{p}.tids"), tids, Rule::Empty);
        }
        for (i, &tid) in tids.iter().enumerate() {
            if tid == 0 {
                errs.value(format!("{p}.tids[{i}]"), &tid, Rule::Zero);
            }
        }
        Selector::Tids(tids.clone())
    } else if let Some(comm) = &t.comm {
        if comm.is_empty() {
            errs.value(format!("{p}.comm"), comm, Rule::Empty);
        } else if comm.len() > COMM_MAX {
            errs.value(format!("{p}.comm"), comm, Rule::CommTooLong);
        }
        Selector::Comm(comm.clone())
    } else if let Some(cg) = &t.cgroup {
        if !cg.starts_with('/') {
            errs.value(format!("{p}.cgroup"), cg, Rule::CgroupNotAbsolute);
        }
        Selector::Cgroup(cg.clone())
    } else if let Some(q) = &t.qemu {
        Selector::Qemu(check_qemu(q, p, errs)?)
    } else if let Some(cmd) = &t.cmd {
        if cmd.is_empty() {
            errs.value(format!("{p}.cmd"), cmd, Rule::Empty);
        } else if cmd[0].is_empty() {
            errs.value(format!("{p}.cmd[0]"), "", Rule::Empty);
        }
        Selector::Cmd(cmd.clone())
    } else {
        return None;
    };
    (errs.0.len() == before).then_some(sel)
}

/// `qemu`: exactly one of `pid` (not 0) and `name` (not empty). `None` (with the error pushed)
/// when it has both or neither; a zero pid or an empty name is pushed but still returned.
fn check_qemu(q: &RawQemu, p: &str, errs: &mut Errors) -> Option<QemuSelector> {
    let qp = format!("{p}.qemu");
    match (q.pid, &q.name) {
        (Some(0), None) => {
            errs.value(format!("{qp}.pid"), &0, Rule::Zero);
            Some(QemuSelector::Pid(0))
        }
        (Some(pid), None) => Some(QemuSelector::Pid(pid)),
        (None, Some(n)) => {
            if n.is_empty() {
                errs.value(format!("{qp}.name"), n, Rule::Empty);
            }
            Some(QemuSelector::Name(n.clone()))
        }
        (pid, name) => {
            let n = [("pid", pid.is_some()), ("name", name.is_some())]
                .iter()
                .filter(|x| x.1)
                .map(|x| x.0)
                .collect::<Vec<_>>();
            let what = if n.is_empty() {
                "none".into()
            } else {
                n.join(", ")
            };
            errs.value(qp, q, Rule::QemuSelector(what));
            None
        }
    }
}
