//! Writing and reading the BPF maps: the batched u32 array helpers, the writers the planner
//! thread owns ([`TableWriter`], [`DpmWriter`]) and the [`HalfWriter`] of the table half the
//! next switch fills, with the `Scheduler` methods that hand them out.

use super::{map_err, LoadError, Scheduler};
use crate::abi;
use libbpf_rs::{MapCore, MapFlags};
use std::mem::size_of;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// Entries written per `BPF_MAP_UPDATE_BATCH` call.
const BATCH_ENTRIES: usize = 64 * 1024;

/// Writes `values` into the u32 ARRAY map `map` at keys `first_key..`, in batches (one syscall
/// per 64 Ki entries instead of one per entry: a 256-CPU × 10,000-slot table has 5 M entries);
/// falls back to one update per entry when the kernel refuses batch operations on the map.
pub(super) fn write_u32_array(
    map: &impl MapCore,
    first_key: u32,
    values: &[u32],
) -> Result<(), libbpf_rs::Error> {
    for (c, chunk) in values.chunks(BATCH_ENTRIES).enumerate() {
        let base = first_key + (c * BATCH_ENTRIES) as u32;
        let keys: Vec<u8> = (0..chunk.len() as u32)
            .flat_map(|i| (base + i).to_ne_bytes())
            .collect();
        let vals: Vec<u8> = chunk.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let batch = map.update_batch(
            &keys,
            &vals,
            chunk.len() as u32,
            MapFlags::ANY,
            MapFlags::ANY,
        );
        match batch {
            Ok(()) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    libbpf_rs::ErrorKind::InvalidInput | libbpf_rs::ErrorKind::Unsupported
                ) =>
            {
                for (i, v) in chunk.iter().enumerate() {
                    map.update(
                        &(base + i as u32).to_ne_bytes(),
                        &v.to_ne_bytes(),
                        MapFlags::ANY,
                    )?;
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads keys `0..len` of the u32 ARRAY map `map`: in batches when the kernel supports them,
/// else (or when a batch came back short) one lookup per entry.
pub(super) fn read_u32_array(map: &impl MapCore, len: usize) -> Result<Vec<u32>, libbpf_rs::Error> {
    let mut out = vec![0u32; len];
    let mut seen = 0;
    if let Ok(batches) = map.lookup_batch(BATCH_ENTRIES as u32, MapFlags::ANY, MapFlags::ANY) {
        for (k, v) in batches {
            let (Ok(k), Ok(v)) = (<[u8; 4]>::try_from(k), <[u8; 4]>::try_from(v)) else {
                break;
            };
            if let Some(slot) = out.get_mut(u32::from_ne_bytes(k) as usize) {
                *slot = u32::from_ne_bytes(v);
                seen += 1;
            }
        }
    }
    if seen == len {
        return Ok(out);
    }
    for (key, slot) in out.iter_mut().enumerate() {
        let value = map.lookup(&(key as u32).to_ne_bytes(), MapFlags::ANY)?;
        let bytes = value
            .and_then(|v| <[u8; 4]>::try_from(v).ok())
            .ok_or_else(|| {
                libbpf_rs::Error::from(std::io::Error::other(format!("no entry {key}")))
            })?;
        *slot = u32::from_ne_bytes(bytes);
    }
    Ok(out)
}

/// Writes entries of the active half of the BPF table (`Scheduler::table_writer`) or of the
/// perf map (`Scheduler::perf_writer`); `Send`, so the planner thread owns it. One
/// `bpf_map_update_elem` per entry: a u32 store the BPF side reads atomically.
pub struct TableWriter {
    fd: OwnedFd,
    /// The map's name, for errors.
    map: &'static str,
    /// First key of the active half (0 for the perf map).
    base: usize,
    /// Entries per half: managed CPUs × frame slots.
    len: usize,
}

/// Publishes the end of each managed CPU's DPM idle period to BPF (`Scheduler::dpm_writer`):
/// `dpm_until[managed index]`, then, when it was lowered, a test run of `dpm_kick` for the CPU
/// (src/bpf/tt_sched.bpf.c K). `Send`, so the planner thread owns it.
pub struct DpmWriter {
    until: OwnedFd,
    kick: OwnedFd,
    managed: Vec<u32>,
}

impl DpmWriter {
    /// Writes `until` for managed CPU index `midx`, then kicks that CPU when `kick`.
    pub fn publish(&self, midx: usize, until: u64, kick: bool) -> std::io::Result<()> {
        let Some(&cpu) = self.managed.get(midx) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "managed CPU index {midx} is not one of {} managed CPUs",
                    self.managed.len()
                ),
            ));
        };
        // the map's key and value sizes are 4 and 8 bytes (src/bpf/tt_sched.bpf.c `dpm_until`)
        update_elem(&self.until, midx as u32, &until)?;
        if !kick {
            return Ok(());
        }
        let mut arg = abi::tt_arm_arg {
            cpu: cpu as i32,
            pad: 0,
        };
        let mut opts = libbpf_rs::libbpf_sys::bpf_test_run_opts {
            sz: size_of::<libbpf_rs::libbpf_sys::bpf_test_run_opts>() as _,
            ctx_in: (&mut arg as *mut abi::tt_arm_arg).cast(),
            ctx_size_in: size_of::<abi::tt_arm_arg>() as u32,
            ..Default::default()
        };
        // SAFETY: the program reads the 8-byte context, which lives across the call.
        let ret = unsafe {
            libbpf_rs::libbpf_sys::bpf_prog_test_run_opts(self.kick.as_raw_fd(), &mut opts)
        };
        if ret < 0 {
            return Err(std::io::Error::from_raw_os_error(-ret));
        }
        match opts.retval as i32 {
            0 => Ok(()),
            rc => Err(std::io::Error::other(format!(
                "dpm_kick of CPU {cpu}: {}",
                abi::arm_result_text(rc)
            ))),
        }
    }
}

impl TableWriter {
    /// Sets entry `index` (`managed index × frame_slots + frame slot`, the layout of
    /// `SchedConfig::table`) of the table in force (or of the perf map) to `task` (the target).
    pub fn write(&self, index: usize, task: u32) -> std::io::Result<()> {
        if index >= self.len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{} entry {index} is outside the map's {} entries",
                    self.map, self.len
                ),
            ));
        }
        // the map's key and value sizes are 4 bytes (src/bpf/tt_sched.bpf.c `table`,
        // `perf_target`)
        update_elem(&self.fd, (self.base + index) as u32, &task)
    }
}

/// `bpf_map_update_elem(fd, &key, value, BPF_ANY)` of an array map whose value is a `T` (the
/// caller checks the map's value size).
fn update_elem<T: Copy>(fd: &OwnedFd, key: u32, value: &T) -> std::io::Result<()> {
    // SAFETY: key and value point to plain values that live across the call; the kernel reads
    // the map's key and value sizes from them.
    let ret = unsafe {
        libbpf_rs::libbpf_sys::bpf_map_update_elem(
            fd.as_raw_fd(),
            (&key as *const u32).cast(),
            (value as *const T).cast(),
            libbpf_rs::libbpf_sys::BPF_ANY as u64,
        )
    };
    if ret < 0 {
        return Err(std::io::Error::from_raw_os_error(-ret));
    }
    Ok(())
}

impl Scheduler<'_> {
    /// A handle that writes single entries of the table in force from another thread (the
    /// planner mode of `scx_tt --planner`, which never switches tables): it owns a duplicate of
    /// the table map's fd and the index of the active half.
    pub fn table_writer(&mut self) -> Result<TableWriter, LoadError> {
        if self.data_mut()?.table_switch_slot != abi::NO_SWITCH {
            return Err(LoadError::Map {
                map: "table",
                msg: "a table switch is pending: entries would go to the wrong half".into(),
            });
        }
        let half = self.bss_mut()?.table_active;
        let fd = self
            .skel
            .maps
            .table
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| LoadError::Map {
                map: "table",
                msg: format!("duplicating the map fd: {e}"),
            })?;
        Ok(TableWriter {
            fd,
            map: "table",
            base: half as usize * self.table_len,
            len: self.table_len,
        })
    }

    /// A handle that writes single cpuperf targets of the perf map from another thread (planner
    /// mode); the scheduler must have been loaded with a perf row (`SchedConfig::perf`).
    pub fn perf_writer(&mut self) -> Result<TableWriter, LoadError> {
        let Some(len) = self.perf_len else {
            return Err(LoadError::Map {
                map: "perf_target",
                msg: "loaded without a perf row: perf_enabled is off".into(),
            });
        };
        let fd = self
            .skel
            .maps
            .perf_target
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| LoadError::Map {
                map: "perf_target",
                msg: format!("duplicating the map fd: {e}"),
            })?;
        Ok(TableWriter {
            fd,
            map: "perf_target",
            base: 0,
            len,
        })
    }

    /// The writer of the DPM idle period ends (`dpm_until`) and the kick that makes a
    /// lowered one take effect (src/bpf/tt_sched.bpf.c K), for the planner thread.
    pub fn dpm_writer(&mut self) -> Result<DpmWriter, LoadError> {
        let dup = |fd: BorrowedFd<'_>, map: &'static str| {
            fd.try_clone_to_owned().map_err(|e| LoadError::Map {
                map,
                msg: format!("duplicating the fd: {e}"),
            })
        };
        Ok(DpmWriter {
            until: dup(self.skel.maps.dpm_until.as_fd(), "dpm_until")?,
            kick: dup(self.skel.progs.dpm_kick.as_fd(), "dpm_kick")?,
            managed: self.managed.clone(),
        })
    }
}

/// The half of the BPF table that the next switch fills, to be written whole on another thread
/// (the `switch_table` loader thread, so that the run loop never waits on up to 2^24 entries):
/// `Scheduler::half_writer` hands it out, [`HalfWriter::write`] fills it, and
/// `Scheduler::switch_to_written` makes it the table from a slot on. The BPF side never reads
/// that half until `table_switch_slot` is written (src/bpf/tt_sched.bpf.c, F), so filling it
/// while the scheduler runs changes nothing that is enforced or accounted.
pub struct HalfWriter {
    map: libbpf_rs::MapHandle,
    written: WrittenHalf,
}

/// Which half of which map [`HalfWriter::write`] filled, for `Scheduler::switch_to_written`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrittenHalf {
    /// The kernel's id of the table map (a restart loads a scheduler with another map).
    map_id: u32,
    /// 0 or 1.
    half: u32,
    /// Entries per half.
    len: usize,
}

impl HalfWriter {
    /// A writer of half `half` (0 or 1) of `len` entries of the u32 ARRAY `map`, which must
    /// hold both halves (benchmarks and tests pass a map of their own).
    pub fn new(map: libbpf_rs::MapHandle, half: u32, len: usize) -> Result<Self, LoadError> {
        let wrong = |msg: String| LoadError::Map { map: "table", msg };
        if half > 1 || (map.max_entries() as usize) < 2 * len {
            return Err(wrong(format!(
                "half {half} of {len} entries does not fit a map of {} entries",
                map.max_entries()
            )));
        }
        let map_id = map
            .info()
            .map_err(|e| wrong(format!("reading the map's id: {e}")))?
            .info
            .id;
        Ok(HalfWriter {
            map,
            written: WrittenHalf { map_id, half, len },
        })
    }

    /// Fills the half with `table` (the layout of `SchedConfig::table`), in batches.
    pub fn write(self, table: &[u32]) -> Result<WrittenHalf, LoadError> {
        let w = self.written;
        if table.len() != w.len {
            return Err(LoadError::Map {
                map: "table",
                msg: format!(
                    "a new table must have {} entries, not {}",
                    w.len,
                    table.len()
                ),
            });
        }
        write_u32_array(&self.map, w.half * w.len as u32, table).map_err(map_err("table"))?;
        Ok(w)
    }
}

impl Scheduler<'_> {
    /// A [`HalfWriter`] of the half the next switch fills: the one no lookup uses once the
    /// previous switch (if any) has taken effect. Like `switch_table`, only after the previous
    /// switch's slot has passed.
    pub fn half_writer(&mut self) -> Result<HalfWriter, LoadError> {
        let next = self.next_half()?;
        let map =
            libbpf_rs::MapHandle::try_from(&self.skel.maps.table).map_err(|e| LoadError::Map {
                map: "table",
                msg: format!("duplicating the map fd: {e}"),
            })?;
        HalfWriter::new(map, next, self.table_len)
    }

    /// Whether `written` is the half the next switch of this scheduler fills (not so after a
    /// restart, which loads another map, or once another switch was written).
    pub fn is_next_half(&mut self, written: &WrittenHalf) -> bool {
        let id = self.skel.maps.table.info().map(|i| i.info.id).ok();
        id == Some(written.map_id)
            && written.len == self.table_len
            && self.next_half().ok() == Some(written.half)
    }

    /// `switch_table` for a table already written by a [`HalfWriter`]: the previous switch
    /// is folded, then `table_next` and last `table_switch_slot` are written (src/bpf/
    /// tt_sched.bpf.c, F); a few stores, nothing of the table's size. Changes nothing unless
    /// `is_next_half(written)`.
    pub fn switch_to_written(
        &mut self,
        written: &WrittenHalf,
        at_slot: u64,
    ) -> Result<(), LoadError> {
        if !self.is_next_half(written) {
            return Err(LoadError::Map {
                map: "table",
                msg: "the half written is not the one this scheduler switches to".into(),
            });
        }
        if self.data_mut()?.table_switch_slot != abi::NO_SWITCH {
            // fold the previous switch: both lookups now agree on the half in use
            let bss = self.bss_mut()?;
            bss.table_active = bss.table_next;
            self.data_mut()?.table_switch_slot = abi::NO_SWITCH;
        }
        self.bss_mut()?.table_next = written.half;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        self.data_mut()?.table_switch_slot = at_slot;
        Ok(())
    }

    /// The half `switch_table` fills next: the other one than the lookups use once the
    /// previous switch (if any) has taken effect.
    fn next_half(&mut self) -> Result<u32, LoadError> {
        let pending = self.data_mut()?.table_switch_slot != abi::NO_SWITCH;
        let bss = self.bss_mut()?;
        Ok(1 - if pending {
            bss.table_next
        } else {
            bss.table_active
        })
    }
}
