//! The run's figures: the slot records the BPF ring buffer delivers go into the accounting,
//! the live energy and the `--trace` file. Created at the first start and kept across
//! restarts, so the summary covers the whole run; each scheduler gets its own ring reader
//! feeding the same records.

use super::energy::LiveEnergy;
use super::obs_test::ObsTest;
use super::RunArgs;
use anyhow::{Context, Result};
use libbpf_rs::RingBuffer;
use scx_tt::accounting::{Accounting, SlotSample, TaskInfo};
use scx_tt::clock::SlotClock;
use scx_tt::energy::model::PowerModel;
use scx_tt::energy::sysfs::Root;
use scx_tt::plan::Plan;
use scx_tt::sched::config::SchedConfig;
use scx_tt::sched::loader::Scheduler;
use scx_tt::trace::TraceHeader;
use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::rc::Rc;

pub struct Stats {
    pub acc: Accounting,
    pub energy: LiveEnergy,
    trace: Option<BufWriter<File>>,
    /// Records read from the ring buffer, not yet accounted.
    samples: Rc<RefCell<Vec<SlotSample>>>,
    /// The test hook `SCX_TT_TEST_OBS` (obs_test.rs): the observation ring against the records.
    pub obs_test: Option<ObsTest>,
    /// `--demos`: DEmOS's messages and power policy, from the records (demos.rs).
    pub demos: Option<super::demos::DemosRun>,
}

impl Stats {
    /// The accounting of `plan` under `cfg`, the energy meter (RAPL or the model's estimate)
    /// and the `--trace` file (its first line the header with the slot grid `clock`);
    /// `demos_seq`: the sequenced run's DEmOS sequencer, whose events `--demos` follows.
    pub fn open(
        args: &RunArgs,
        plan: &Plan,
        model: &PowerModel,
        cfg: &SchedConfig,
        clock: &SlotClock,
        kernel_idle: bool,
        demos_seq: Option<&super::planner_loop::DemosSeq>,
    ) -> Result<Self> {
        let acc = Accounting::new(
            cfg.slot_ns,
            TaskInfo::of_plan(plan),
            &cfg.managed,
            args.timeline_slots,
        )
        .with_power_model(model.clone());
        let root = Root::new(args.sysfs_root.clone());
        let energy = LiveEnergy::open(
            &root,
            model,
            &cfg.managed,
            plan.slot_us,
            args.planner,
            kernel_idle,
        );
        if args.verbose {
            eprintln!("scx_tt: {} ({})", energy.describe(), model.name);
        }
        let trace = match &args.trace {
            Some(p) => {
                let mut w = BufWriter::new(
                    File::create(p).with_context(|| format!("creating trace {}", p.display()))?,
                );
                // the header: the slot grid the records' slot numbers count on
                let header = TraceHeader::kernel(clock.slot_ns, clock.t0_ns, &cfg.managed);
                serde_json::to_writer(&mut w, &header).context("writing the trace")?;
                w.write_all(b"\n").context("writing the trace")?;
                // the header at once: the slot grid is there for whoever aligns to it (a
                // workload reading t0_ns from it, tt_jobs --t0-from)
                w.flush().context("writing the trace")?;
                Some(w)
            }
            None => None,
        };
        Ok(Stats {
            acc,
            energy,
            trace,
            samples: Rc::default(),
            obs_test: ObsTest::from_env(&cfg.managed)?,
            demos: super::demos::DemosRun::open(args, plan, clock, demos_seq.map(|d| d.driver()))?,
        })
    }

    /// A ring buffer reader of `sched` feeding these figures (through [`Stats::drain`]).
    pub fn reader(&self, sched: &Scheduler) -> Result<RingBuffer<'static>> {
        let samples = self.samples.clone();
        Ok(sched.slot_records(move |s| samples.borrow_mut().push(s))?)
    }

    /// Accounts the records read so far: accounting, energy estimate, trace.
    pub fn drain(&mut self) -> Result<()> {
        for s in self.samples.borrow_mut().drain(..) {
            if let Some(t) = self.obs_test.as_mut() {
                t.record(&s);
            }
            if let Some(d) = self.demos.as_mut() {
                d.record(s.slot);
            }
            self.acc.add(&s);
            let rec = self.acc.trace_record(&s);
            self.energy.record(&rec);
            if let Some(w) = self.trace.as_mut() {
                serde_json::to_writer(&mut *w, &rec).context("writing the trace")?;
                w.write_all(b"\n").context("writing the trace")?;
            }
        }
        if let Some(d) = self.demos.as_mut() {
            d.emit()?;
        }
        Ok(())
    }

    pub fn flush_trace(&mut self) -> Result<()> {
        if let Some(w) = self.trace.as_mut() {
            w.flush().context("writing the trace")?;
        }
        if let Some(t) = self.obs_test.as_mut() {
            t.finish()?;
        }
        if let Some(d) = self.demos.as_mut() {
            d.finish();
        }
        Ok(())
    }
}
