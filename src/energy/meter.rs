//! The energy readout's sysfs side: powercap RAPL ([`RaplMeter`]) and [`EnergyMeter`], which
//! measures through it when the machine has it and estimates from the power model otherwise
//! (`tt_core::energy::meter`, re-exported here: the estimate, the labels, the wrap-around).

pub use tt_core::energy::meter::*;

use super::estimate::EstimateOptions;
use super::model::PowerModel;
use super::sysfs::{Root, SysfsError};
use crate::trace::SlotRecord;
use std::path::PathBuf;

const POWERCAP_DIR: &str = "/sys/class/powercap";

/// One RAPL package zone being sampled.
#[derive(Clone, Debug, PartialEq)]
pub struct RaplZone {
    pub dir: PathBuf,
    pub name: String,
    pub max_range_uj: u64,
    last_uj: u64,
    total_uj: u128,
}

/// Sums the package zones' `energy_uj` since [`RaplMeter::open`].
#[derive(Clone, Debug)]
pub struct RaplMeter {
    root: Root,
    zones: Vec<RaplZone>,
}

impl RaplMeter {
    /// `Ok(None)` when there is no package zone (no RAPL, e.g. the test VM).
    pub fn open(root: &Root) -> Result<Option<Self>, SysfsError> {
        let Ok(entries) = std::fs::read_dir(root.path(POWERCAP_DIR)) else {
            return Ok(None);
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| {
                n.strip_prefix("intel-rapl:").is_some_and(|rest| {
                    !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit())
                })
            })
            .collect();
        names.sort();
        let mut zones = Vec::new();
        for n in names {
            let dir = PathBuf::from(POWERCAP_DIR).join(n);
            let now = root.read_u64(dir.join("energy_uj"))?;
            zones.push(RaplZone {
                name: root.read(dir.join("name")).unwrap_or_default(),
                max_range_uj: root.read_u64(dir.join("max_energy_range_uj"))?,
                dir,
                last_uj: now,
                total_uj: 0,
            });
        }
        if zones.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            root: root.clone(),
            zones,
        }))
    }

    pub fn zones(&self) -> &[RaplZone] {
        &self.zones
    }

    /// Sample every zone; returns the total since open, µJ.
    pub fn poll(&mut self) -> Result<u128, SysfsError> {
        for z in &mut self.zones {
            let now = self.root.read_u64(z.dir.join("energy_uj"))?;
            z.total_uj += u128::from(wrapping_delta_uj(z.last_uj, now, z.max_range_uj));
            z.last_uj = now;
        }
        Ok(self.zones.iter().map(|z| z.total_uj).sum())
    }
}

/// Measured-or-estimated energy since it was opened.
#[derive(Clone, Debug)]
pub enum EnergyMeter {
    Measured(RaplMeter),
    Estimated(ModelMeter),
}

impl EnergyMeter {
    /// RAPL when present under `root`, else an estimate from `model`, else an error.
    pub fn open(
        root: &Root,
        model: Option<PowerModel>,
        opts: EstimateOptions,
    ) -> Result<Self, MeterError> {
        if let Some(rapl) = RaplMeter::open(root)? {
            return Ok(EnergyMeter::Measured(rapl));
        }
        match model {
            Some(m) => Ok(EnergyMeter::Estimated(ModelMeter::new(m, opts))),
            None => Err(MeterError::NoSource(root.path(POWERCAP_DIR))),
        }
    }

    /// Feed a per-slot record (only the estimate uses it).
    pub fn record(&mut self, r: &SlotRecord) -> Result<(), MeterError> {
        if let EnergyMeter::Estimated(m) = self {
            m.record(r)?;
        }
        Ok(())
    }

    pub fn read(&mut self) -> Result<EnergyReading, MeterError> {
        Ok(match self {
            EnergyMeter::Measured(r) => EnergyReading {
                joules: r.poll()? as f64 * 1e-6,
                label: EnergyLabel::Measured {
                    zones: r.zones().iter().map(|z| z.name.clone()).collect(),
                },
            },
            EnergyMeter::Estimated(m) => EnergyReading {
                joules: m.joules(),
                label: EnergyLabel::Estimated {
                    model: m.model_name().to_string(),
                },
            },
        })
    }
}
