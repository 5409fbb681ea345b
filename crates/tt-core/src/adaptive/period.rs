//! The period analyser (seed 003, LFS++, Sections 5.1–5.2): the activation period of a task
//! that announces nothing, from the times of its wakeup events.
//!
//! # Model
//! Each event at time `tᵢ` is a Dirac impulse `δ(t − tᵢ)`. A train of bursts repeated every `P`
//! has an amplitude spectrum with main peaks at the multiples of `f₀ = 1/P` (the sinc lobes of
//! the observation window, of width `1/H` for a horizon `H`), so the period is the distance
//! between main peaks: the frequency of the first main peak above 0.
//!
//! # Algorithm (the paper's heuristic, steps 1–6)
//! ```text
//! 1. |S(f)| = |Σᵢ e^{-j2πf tᵢ}| for f = f_min + k·δf, k = 0..F-1   (F = ⌊(f_max − f_min)/δf⌋ + 1)
//! 2. peaks  = local maxima of |S| (interior samples: |S(k−1)| < |S(k)| ≥ |S(k+1)|)
//! 3. keep the peaks with |S(fᵢ)| ≥ α · mean(|S|)
//! 4. none left → non-periodic
//! 5. Σᵢ = Σ_{h=1..k_max, h·fᵢ ≤ f_max} max_{f_j ∈ [h·fᵢ − ε, h·fᵢ + ε]} |S(f_j)|
//!    (the paper's formula sums every f_j of the window — `window_sum`; the largest one per
//!    multiple keeps Σ from growing with the noise of the windows, which grows with frequency)
//!    (`extend_harmonics`, not in the paper: also the h·fᵢ > f_max, their samples evaluated
//!    directly, so that every candidate is judged on k_max harmonics)
//! 6. the candidate with the largest Σᵢ — or the lowest candidate of which it is a multiple
//!    (within max(ε, m·δf)) whose Σ is within [`TIE`] = 5 % of it and whose own peak is at
//!    least [`SUB_PEAK`] = ½ of the best's: a fundamental and its multiples have nearly equal Σ
//!    when all their k_max harmonics are strong, and noise must not decide between them (a
//!    sub-harmonic, whose own |S| is noise, is not preferred)
//! 7. (refinement, not in the paper; `refine`) the frequency of every harmonic h ≤ k_max:
//!    the largest sample in [h·fᵢ − ε, h·fᵢ + ε] moved to the vertex of the parabola through it
//!    and its neighbours; f₀ = the least-squares slope Σ w_h·h·f_h / Σ w_h·h², w_h = |S(f_h)|.
//! ```
//! Step 1 is computed per event over all frequencies with a rotating phasor (one complex
//! multiplication per sample, re-anchored with `cos`/`sin` every [`REANCHOR`] samples), so an
//! event costs `F` complex multiplications, as the paper's count (3) says.
//!
//! Without step 7 the estimate is quantised to the grid (error up to `δf/2`, i.e. a relative
//! error of `δf/(2·f₀)`: 1 % at 25 Hz with δf = 0.5 Hz); with it the error of the harmonic `h`
//! is divided by `h`, and the fit is limited by the jitter of the events, not by `δf`.
//!
//! # Parameters ([`AnalyserConfig`])
//! | field | default | rule |
//! |---|---|---|
//! | `f_min_hz` | 2 Hz (a 500 ms period) | `> 0` |
//! | `f_max_hz` | 200 Hz (a 5 ms period) | `> f_min_hz` |
//! | `df_hz` (δf) | 0.05 Hz | `> 0`, at most `(f_max − f_min)/2`, at most 200,000 samples |
//! | `alpha` (α) | 2.0 | `≥ 0` |
//! | `k_max` | 10 (the paper's) | `1..=1000` |
//! | `eps_hz` (ε) | 0.25 Hz | `≥ δf/2` (at least one sample per harmonic) |
//! | `horizon_ns` (H) | 2 s | `> 0`; several periods: `≥ 2/f_min` |
//! | `min_events` | 8 | `≥ 2` |
//! | `refine` | true | — |
//! | `extend_harmonics` | true | — |
//! | `window_sum` | false | — |

use super::ParamError;
use std::collections::VecDeque;
use std::f64::consts::PI;

/// Samples between two exact `cos`/`sin` evaluations of the rotating phasor.
pub const REANCHOR: usize = 64;
/// Most spectrum samples a configuration may ask for.
pub const MAX_SAMPLES: usize = 200_000;
/// Step 6: a candidate of which the best is a multiple wins if its Σ is within this relative
/// distance of the best's.
pub const TIE: f64 = 0.05;
/// Step 6: ... and if its own peak is at least this fraction of the best's (a sub-harmonic's
/// peak is noise, a fundamental's is a main peak).
pub const SUB_PEAK: f64 = 0.5;

/// The analyser's parameters (module doc, "Parameters").
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AnalyserConfig {
    /// Lowest frequency of the spectrum (the longest period considered), Hz.
    pub f_min_hz: f64,
    /// Highest frequency (the shortest period), Hz.
    pub f_max_hz: f64,
    /// Spectrum step δf, Hz.
    pub df_hz: f64,
    /// Peak threshold α: a peak below α times the spectrum's mean is discarded.
    pub alpha: f64,
    /// Harmonics accumulated per candidate.
    pub k_max: u32,
    /// Harmonic tolerance ε, Hz.
    pub eps_hz: f64,
    /// Observation horizon H of [`PeriodAnalyser`] (events older than `H` before the newest are
    /// dropped), ns.
    pub horizon_ns: u64,
    /// Fewer events in the window: no estimate.
    pub min_events: usize,
    /// Step 7: refine the frequency from the harmonics' interpolated peaks.
    pub refine: bool,
    /// Step 5 accumulates the multiples above `f_max` too (evaluated directly): every candidate
    /// gets its `k_max` harmonics. The paper stops at `f_max`, which favours sub-harmonics when
    /// `f_max < k_max · f₀` (docs/adaptive.md).
    pub extend_harmonics: bool,
    /// Step 5 sums every sample within ε of a multiple (the paper's formula, literally);
    /// `false`: the largest sample within ε, one value per multiple.
    pub window_sum: bool,
}

impl Default for AnalyserConfig {
    fn default() -> Self {
        AnalyserConfig {
            f_min_hz: 2.0,
            f_max_hz: 200.0,
            df_hz: 0.05,
            alpha: 2.0,
            k_max: 10,
            eps_hz: 0.25,
            horizon_ns: 2_000_000_000,
            min_events: 8,
            refine: true,
            extend_harmonics: true,
            window_sum: false,
        }
    }
}

impl AnalyserConfig {
    /// The defaults with the frequency range of the periods `[period_min_ns, period_max_ns]`.
    pub fn for_periods(period_min_ns: u64, period_max_ns: u64) -> Self {
        AnalyserConfig {
            f_min_hz: 1e9 / period_max_ns.max(1) as f64,
            f_max_hz: 1e9 / period_min_ns.max(1) as f64,
            ..AnalyserConfig::default()
        }
    }

    /// Every rule of the module doc's table; the first broken one.
    pub fn validate(&self) -> Result<(), ParamError> {
        let finite_pos = |field: &'static str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(ParamError::new(field, v, "must be a finite number > 0"))
            }
        };
        finite_pos("f_min_hz", self.f_min_hz)?;
        finite_pos("f_max_hz", self.f_max_hz)?;
        if self.f_max_hz <= self.f_min_hz {
            return Err(ParamError::new(
                "f_max_hz",
                self.f_max_hz,
                format!("must be above f_min_hz ({})", self.f_min_hz),
            ));
        }
        finite_pos("df_hz", self.df_hz)?;
        let span = self.f_max_hz - self.f_min_hz;
        if self.df_hz > span / 2.0 {
            return Err(ParamError::new(
                "df_hz",
                self.df_hz,
                format!("must be at most (f_max_hz - f_min_hz)/2 = {}", span / 2.0),
            ));
        }
        if span / self.df_hz + 1.0 > MAX_SAMPLES as f64 {
            return Err(ParamError::new(
                "df_hz",
                self.df_hz,
                format!(
                    "gives {:.0} spectrum samples, above {MAX_SAMPLES}",
                    span / self.df_hz + 1.0
                ),
            ));
        }
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return Err(ParamError::new(
                "alpha",
                self.alpha,
                "must be a finite number >= 0",
            ));
        }
        if !(1..=1000).contains(&self.k_max) {
            return Err(ParamError::new("k_max", self.k_max, "must be in 1..=1000"));
        }
        if !(self.eps_hz.is_finite() && self.eps_hz >= self.df_hz / 2.0) {
            return Err(ParamError::new(
                "eps_hz",
                self.eps_hz,
                format!(
                    "must be at least df_hz/2 = {} (one sample per harmonic)",
                    self.df_hz / 2.0
                ),
            ));
        }
        let longest_ns = 2e9 / self.f_min_hz;
        if self.horizon_ns == 0 || (self.horizon_ns as f64) < longest_ns {
            return Err(ParamError::new(
                "horizon_ns",
                self.horizon_ns,
                format!("must hold two of the longest periods: at least 2/f_min_hz = {longest_ns:.0} ns"),
            ));
        }
        if self.min_events < 2 {
            return Err(ParamError::new(
                "min_events",
                self.min_events,
                "must be at least 2",
            ));
        }
        Ok(())
    }

    /// Number of spectrum samples `F`.
    pub fn samples(&self) -> usize {
        ((self.f_max_hz - self.f_min_hz) / self.df_hz + 1e-9).floor() as usize + 1
    }

    /// Frequency of sample `k`.
    pub fn freq(&self, k: usize) -> f64 {
        self.f_min_hz + k as f64 * self.df_hz
    }
}

/// The complex spectrum `Σᵢ e^{-j2πf tᵢ}` on the grid `f_min + k·δf`, built one event at a time
/// (the paper's iterative computation). Times are seconds relative to an origin chosen by the
/// caller (the amplitude does not depend on it).
#[derive(Clone, Debug)]
pub struct Spectrum {
    f_min: f64,
    df: f64,
    re: Vec<f64>,
    im: Vec<f64>,
    events: usize,
}

impl Spectrum {
    /// An empty spectrum of `samples` frequencies from `f_min` by `df` (Hz).
    pub fn new(f_min: f64, df: f64, samples: usize) -> Self {
        Spectrum {
            f_min,
            df,
            re: vec![0.0; samples],
            im: vec![0.0; samples],
            events: 0,
        }
    }

    /// Adds `sign · e^{-j2πf t}` for every frequency of the grid (`sign` −1 removes an event
    /// added before).
    fn accumulate(&mut self, t: f64, sign: f64) {
        let step = -2.0 * PI * self.df * t;
        let (ds, dc) = step.sin_cos();
        let mut k = 0;
        let n = self.re.len();
        while k < n {
            let phase = -2.0 * PI * (self.f_min + k as f64 * self.df) * t;
            let (mut s, mut c) = phase.sin_cos();
            let end = (k + REANCHOR).min(n);
            for j in k..end {
                self.re[j] += sign * c;
                self.im[j] += sign * s;
                let c2 = c * dc - s * ds;
                s = s * dc + c * ds;
                c = c2;
            }
            k = end;
        }
    }

    /// Adds the event at `t` seconds.
    pub fn add(&mut self, t: f64) {
        self.accumulate(t, 1.0);
        self.events += 1;
    }

    /// Removes the event at `t` seconds (added before).
    pub fn remove(&mut self, t: f64) {
        self.accumulate(t, -1.0);
        self.events = self.events.saturating_sub(1);
    }

    /// Events in the spectrum.
    pub fn events(&self) -> usize {
        self.events
    }

    /// `|S(f_min + k·δf)|` for every `k`: equation (4).
    pub fn amplitude(&self) -> Vec<f64> {
        self.re
            .iter()
            .zip(&self.im)
            .map(|(r, i)| r.hypot(*i))
            .collect()
    }
}

/// The amplitude spectrum (4) of events at `times_s` seconds on the grid of `cfg`.
pub fn amplitude_spectrum(times_s: &[f64], cfg: &AnalyserConfig) -> Vec<f64> {
    let mut s = Spectrum::new(cfg.f_min_hz, cfg.df_hz, cfg.samples());
    for &t in times_s {
        s.add(t);
    }
    s.amplitude()
}

/// A detected period.
#[derive(Clone, Debug, PartialEq)]
pub struct PeriodEstimate {
    /// The estimated fundamental frequency, Hz (refined if `refine`).
    pub frequency_hz: f64,
    /// `1/frequency_hz`, ns.
    pub period_ns: f64,
    /// The chosen candidate's grid frequency (step 6, before refinement), Hz.
    pub peak_hz: f64,
    /// `|S|` at the chosen candidate over the spectrum's mean (≥ α).
    pub peak_ratio: f64,
    /// Σ of the chosen candidate (step 5).
    pub score: f64,
    /// Candidates left after step 3.
    pub candidates: usize,
    /// Events analysed.
    pub events: usize,
}

/// The analyser's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Detection {
    Periodic(PeriodEstimate),
    /// Step 4: no peak reaches α times the mean.
    NonPeriodic {
        events: usize,
    },
    /// Fewer than `min_events` events (or all at one instant).
    TooFewEvents {
        events: usize,
    },
}

impl Detection {
    /// The estimate, if periodic.
    pub fn estimate(&self) -> Option<&PeriodEstimate> {
        match self {
            Detection::Periodic(e) => Some(e),
            _ => None,
        }
    }
}

/// Steps 2–7 on an amplitude spectrum sampled on `cfg`'s grid, of the events at `times_s`
/// seconds (used only by `extend_harmonics`, for the harmonics above `f_max`).
pub fn detect_peaks(amp: &[f64], cfg: &AnalyserConfig, times_s: &[f64]) -> Detection {
    let events = times_s.len();
    let n = amp.len();
    if n < 3 {
        return Detection::NonPeriodic { events };
    }
    let mean = amp.iter().sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return Detection::NonPeriodic { events };
    }
    // steps 2–3
    let candidates: Vec<usize> = (1..n - 1)
        .filter(|&k| amp[k - 1] < amp[k] && amp[k] >= amp[k + 1])
        .filter(|&k| amp[k] >= cfg.alpha * mean)
        .collect();
    // step 4
    if candidates.is_empty() {
        return Detection::NonPeriodic { events };
    }
    // step 5
    let scores: Vec<f64> = candidates
        .iter()
        .map(|&k| {
            let f = cfg.freq(k);
            let beyond = if cfg.extend_harmonics {
                harmonic_sum_beyond(times_s, cfg, f)
            } else {
                0.0
            };
            harmonic_sum(amp, cfg, f) + beyond
        })
        .collect();
    // step 6
    let best = scores.iter().copied().fold(f64::MIN, f64::max);
    let top = scores
        .iter()
        .position(|&s| s == best)
        .expect("the best score is one of the scores");
    let f_best = cfg.freq(candidates[top]);
    let pick = candidates
        .iter()
        .zip(&scores)
        .find(|(&k, &s)| {
            let f = cfg.freq(k);
            let m = (f_best / f).round().max(1.0);
            s >= best * (1.0 - TIE)
                && amp[k] >= SUB_PEAK * amp[candidates[top]]
                && (f_best - m * f).abs() <= cfg.eps_hz.max(m * cfg.df_hz)
        })
        .map(|(&k, &s)| (k, s))
        .expect("the best candidate qualifies");
    let (k, score) = pick;
    let peak_hz = cfg.freq(k);
    let frequency_hz = if cfg.refine {
        refine(amp, cfg, peak_hz).unwrap_or(peak_hz)
    } else {
        peak_hz
    };
    Detection::Periodic(PeriodEstimate {
        frequency_hz,
        period_ns: 1e9 / frequency_hz,
        peak_hz,
        peak_ratio: amp[k] / mean,
        score,
        candidates: candidates.len(),
        events,
    })
}

/// Index range of the grid samples in `[lo, hi]` (empty when outside the grid).
fn window(cfg: &AnalyserConfig, n: usize, lo: f64, hi: f64) -> std::ops::Range<usize> {
    let first = ((lo - cfg.f_min_hz) / cfg.df_hz - 1e-9).ceil().max(0.0);
    let last = ((hi - cfg.f_min_hz) / cfg.df_hz + 1e-9).floor();
    if last < 0.0 || first > last {
        return 0..0;
    }
    let (first, last) = (first as usize, (last as usize).min(n.saturating_sub(1)));
    if first > last {
        0..0
    } else {
        first..last + 1
    }
}

/// Step 5: Σ over the multiples `h·f`, `h = 1..=k_max`, `h·f ≤ f_max`, of the largest `|S|`
/// within ε of `h·f` (of every `|S|` within ε with `window_sum`).
pub fn harmonic_sum(amp: &[f64], cfg: &AnalyserConfig, f: f64) -> f64 {
    let mut sum = 0.0;
    for h in 1..=cfg.k_max {
        let center = h as f64 * f;
        if center > cfg.f_max_hz + 1e-9 {
            break;
        }
        let w = &amp[window(cfg, amp.len(), center - cfg.eps_hz, center + cfg.eps_hz)];
        sum += if cfg.window_sum {
            w.iter().sum::<f64>()
        } else {
            w.iter().copied().fold(0.0, f64::max)
        };
    }
    sum
}

/// The part of step 5 the grid does not hold (`extend_harmonics`): for the multiples
/// `h·f > f_max`, `h ≤ k_max`, the samples of the same grid (`f_min + k·δf`) within ε of `h·f`,
/// each `|Σᵢ e^{-j2πf tᵢ}|` evaluated directly.
pub fn harmonic_sum_beyond(times_s: &[f64], cfg: &AnalyserConfig, f: f64) -> f64 {
    let mut sum = 0.0;
    let top = cfg.f_max_hz + 1e-9;
    for h in 1..=cfg.k_max {
        let center = h as f64 * f;
        let first = ((center - cfg.eps_hz - cfg.f_min_hz) / cfg.df_hz - 1e-9).ceil();
        let last = ((center + cfg.eps_hz - cfg.f_min_hz) / cfg.df_hz + 1e-9).floor();
        let mut k = first.max(0.0);
        let mut best: f64 = 0.0;
        while k <= last {
            let fk = cfg.f_min_hz + k * cfg.df_hz;
            if fk > top {
                let (re, im) = times_s.iter().fold((0.0, 0.0), |(r, i), &t| {
                    let (s, c) = (-2.0 * PI * fk * t).sin_cos();
                    (r + c, i + s)
                });
                let a = f64::hypot(re, im);
                if cfg.window_sum {
                    sum += a;
                } else {
                    best = best.max(a);
                }
            }
            k += 1.0;
        }
        sum += best;
    }
    sum
}

/// Step 7: the least-squares fundamental through the interpolated harmonic peaks near `h·f`.
fn refine(amp: &[f64], cfg: &AnalyserConfig, f: f64) -> Option<f64> {
    let (mut num, mut den) = (0.0, 0.0);
    for h in 1..=cfg.k_max {
        let center = h as f64 * f;
        if center > cfg.f_max_hz + 1e-9 {
            break;
        }
        let w = window(cfg, amp.len(), center - cfg.eps_hz, center + cfg.eps_hz);
        let Some(k) = w.clone().max_by(|&a, &b| amp[a].total_cmp(&amp[b])) else {
            continue;
        };
        // only a true local maximum inside the grid can be interpolated
        if k == 0 || k + 1 >= amp.len() || amp[k - 1] > amp[k] || amp[k + 1] > amp[k] {
            continue;
        }
        let (a, b, c) = (amp[k - 1], amp[k], amp[k + 1]);
        let curv = a - 2.0 * b + c;
        let delta = if curv < 0.0 {
            (0.5 * (a - c) / curv).clamp(-0.5, 0.5)
        } else {
            0.0
        };
        let fh = cfg.freq(k) + delta * cfg.df_hz;
        let hw = h as f64;
        num += b * hw * fh;
        den += b * hw * hw;
    }
    (den > 0.0).then(|| num / den)
}

/// Detects the period of events at `times_ns` (any order, ns): steps 1–7 in one call.
pub fn analyse(times_ns: &[u64], cfg: &AnalyserConfig) -> Detection {
    let events = times_ns.len();
    let Some(&t0) = times_ns.iter().min() else {
        return Detection::TooFewEvents { events };
    };
    let t1 = times_ns.iter().copied().max().unwrap_or(t0);
    if events < cfg.min_events || t1 == t0 {
        return Detection::TooFewEvents { events };
    }
    let times: Vec<f64> = times_ns.iter().map(|&t| (t - t0) as f64 * 1e-9).collect();
    detect_peaks(&amplitude_spectrum(&times, cfg), cfg, &times)
}

/// The analyser of one task: a sliding window of the events of the last `horizon_ns`, and the
/// detection on demand. Events must come in non-decreasing time order (a tracer's ring).
#[derive(Clone, Debug)]
pub struct PeriodAnalyser {
    cfg: AnalyserConfig,
    events: VecDeque<u64>,
}

impl PeriodAnalyser {
    /// An analyser with a validated configuration.
    pub fn new(cfg: AnalyserConfig) -> Result<Self, ParamError> {
        cfg.validate()?;
        Ok(PeriodAnalyser {
            cfg,
            events: VecDeque::new(),
        })
    }

    pub fn config(&self) -> &AnalyserConfig {
        &self.cfg
    }

    /// Records a wakeup at `t_ns`; drops the events older than `t_ns − horizon_ns`. An event
    /// earlier than the newest one is ignored (returns false).
    pub fn push(&mut self, t_ns: u64) -> bool {
        if self.events.back().is_some_and(|&last| t_ns < last) {
            return false;
        }
        self.events.push_back(t_ns);
        let oldest = t_ns.saturating_sub(self.cfg.horizon_ns);
        while self.events.front().is_some_and(|&t| t < oldest) {
            self.events.pop_front();
        }
        true
    }

    /// Events in the window.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Forgets every event.
    pub fn clear(&mut self) {
        self.events.clear();
    }

    /// Drops the events older than `now_ns − horizon_ns` (time passes without events too).
    pub fn advance(&mut self, now_ns: u64) {
        let oldest = now_ns.saturating_sub(self.cfg.horizon_ns);
        while self.events.front().is_some_and(|&t| t < oldest) {
            self.events.pop_front();
        }
    }

    /// The detection over the current window.
    pub fn detect(&self) -> Detection {
        let (a, b) = self.events.as_slices();
        let mut v = Vec::with_capacity(self.events.len());
        v.extend_from_slice(a);
        v.extend_from_slice(b);
        analyse(&v, &self.cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_every_rule_names_its_field() {
        AnalyserConfig::default().validate().unwrap();
        let bad = [
            (
                AnalyserConfig {
                    f_min_hz: 0.0,
                    ..Default::default()
                },
                "f_min_hz",
            ),
            (
                AnalyserConfig {
                    f_max_hz: 1.0,
                    ..Default::default()
                },
                "f_max_hz",
            ),
            (
                AnalyserConfig {
                    df_hz: 1e-6,
                    ..Default::default()
                },
                "df_hz",
            ),
            (
                AnalyserConfig {
                    alpha: -1.0,
                    ..Default::default()
                },
                "alpha",
            ),
            (
                AnalyserConfig {
                    k_max: 0,
                    ..Default::default()
                },
                "k_max",
            ),
            (
                AnalyserConfig {
                    eps_hz: 0.01,
                    ..Default::default()
                },
                "eps_hz",
            ),
            (
                AnalyserConfig {
                    horizon_ns: 100_000_000,
                    ..Default::default()
                },
                "horizon_ns",
            ),
            (
                AnalyserConfig {
                    min_events: 1,
                    ..Default::default()
                },
                "min_events",
            ),
        ];
        for (cfg, field) in bad {
            let e = cfg.validate().unwrap_err();
            assert_eq!(e.field, field, "{e}");
            assert!(e.to_string().contains(field), "{e}");
        }
    }

    #[test]
    fn rotating_phasor_matches_direct_evaluation() {
        let cfg = AnalyserConfig::default();
        let times = [0.0, 0.0123, 0.5, 1.7, 1.999];
        let amp = amplitude_spectrum(&times, &cfg);
        for k in (0..amp.len()).step_by(97) {
            let f = cfg.freq(k);
            let (re, im) = times.iter().fold((0.0, 0.0), |(r, i), t| {
                let ph = -2.0 * PI * f * t;
                (r + ph.cos(), i + ph.sin())
            });
            assert!((amp[k] - re.hypot(im)).abs() < 1e-9, "k {k}");
        }
    }

    #[test]
    fn removing_an_event_undoes_adding_it() {
        let cfg = AnalyserConfig::default();
        let mut s = Spectrum::new(cfg.f_min_hz, cfg.df_hz, cfg.samples());
        s.add(0.25);
        let once = s.amplitude();
        s.add(0.7);
        s.remove(0.7);
        for (a, b) in once.iter().zip(s.amplitude()) {
            assert!((a - b).abs() < 1e-9);
        }
        assert_eq!(s.events(), 1);
    }

    #[test]
    fn a_perfect_train_gives_its_period() {
        let cfg = AnalyserConfig::default();
        let times: Vec<u64> = (0..50).map(|k| k * 40_000_000).collect();
        let e = analyse(&times, &cfg);
        let e = e.estimate().expect("periodic");
        assert!((e.period_ns / 40e6 - 1.0).abs() < 1e-3, "{e:?}");
    }
}
