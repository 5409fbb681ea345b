//! DEmOS configurations on scx_tt (`tt_core::demos`, pure, re-exported here) and, here at the
//! edge, what touches the machine: its online CPUs (`cpu: all`), configuration files, the
//! cpufreq driver of DEmOS's power policies, and what `-m`/`-M`/`-p` print and write
//! ([`output`]).

pub use tt_core::demos::*;

pub mod output;

use crate::energy::cpufreq::SysfsCpufreq;
use crate::energy::sysfs::Journal;
use power::{PowerDriver, PowerError, PowerPolicy};
use std::path::Path;

/// This machine's online CPUs (`/sys/devices/system/cpu/online`; else `0..nproc`), at most
/// [`cpuset::MAX_CPUS`]: what DEmOS's `cpu: all` means when it runs here.
pub fn machine_cpus() -> CpuSet {
    match crate::plan::read_online_cpus() {
        Ok(cpus) if !cpus.is_empty() => CpuSet::from_cpus(cpus),
        _ => CpuSet::first_n(std::thread::available_parallelism().map_or(1, |n| n.get() as u32)),
    }
}

/// `cpu: all` for `plan import`: the machine's CPUs without CPU 0, which stays the
/// housekeeping CPU (a one-CPU machine keeps CPU 0).
pub fn import_all_cpus() -> CpuSet {
    all_but_cpu0(machine_cpus())
}

/// Reading a configuration from a file (the parse is the core's: [`Config::from_yaml`]).
pub trait ConfigFile {
    /// Read a configuration file (`set_cwd` defaults to true).
    fn from_file(path: &Path) -> anyhow::Result<Config>;
}

impl ConfigFile for Config {
    fn from_file(path: &Path) -> anyhow::Result<Config> {
        use anyhow::Context;
        let meta = std::fs::metadata(path)
            .with_context(|| format!("Cannot load configuration file: {}", path.display()))?;
        let regular = meta.is_file();
        let text = if regular {
            std::fs::read_to_string(path)
                .with_context(|| format!("Cannot load configuration file: {}", path.display()))?
        } else {
            let mut s = String::new();
            use std::io::Read;
            std::fs::File::open(path)
                .and_then(|f| f.take(16 << 20).read_to_string(&mut s))
                .with_context(|| format!("Cannot load configuration file: {}", path.display()))?;
            s
        };
        Config::from_yaml(&text, Source::File { regular })
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }
}

/// DEmOS's power policies driving the real cpufreq through the `userspace` governor.
pub trait SysfsPowerDriver: Sized {
    /// Takes cpufreq over through `journal` (the `userspace` governor on every policy with an
    /// affected CPU in `cpus`, all when `None`, as DEmOS takes all) for `policy`; `Ok(None)` for
    /// `none`, which leaves cpufreq alone. On error everything changed is restored.
    fn take_control(
        journal: Journal,
        cpus: Option<&[u32]>,
        policy: PowerPolicy,
        config: &Config,
        all_cpus: CpuSet,
    ) -> Result<Option<Self>, PowerError>;

    /// Restores everything changed (governors, limits, driver modes, `scaling_setspeed`).
    /// Returns the number of files that could not be restored (each logged).
    fn finish(self) -> usize;
}

impl SysfsPowerDriver for PowerDriver<SysfsCpufreq> {
    fn take_control(
        journal: Journal,
        cpus: Option<&[u32]>,
        policy: PowerPolicy,
        config: &Config,
        all_cpus: CpuSet,
    ) -> Result<Option<Self>, PowerError> {
        if !policy.is_active() {
            return Ok(None);
        }
        let backend = SysfsCpufreq::take_control_of(journal, cpus)
            .map_err(|e| PowerError(format!("power policy '{policy}': {e}")))?;
        PowerDriver::new(backend, policy, config, all_cpus).map(Some)
    }

    fn finish(self) -> usize {
        let mut b = self.into_backend();
        b.restore()
    }
}
