//! The HTML of the report: sections in order, every chart inline SVG. Strings from the inputs go
//! through [`esc`] only; the script reads the page's DOM and never receives input text.

use super::{bar_count, cpu_stats, cpus, deliveries, esc, late_histogram, Bin, Inputs, PlanCpu};
use crate::report::input::HistBucketView;
use crate::trace::{SlotKind, SlotRecord};
use std::collections::BTreeMap;
use std::fmt::Write;

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// Catches every error of the page's scripts before they run: the count goes into
/// `<html data-js-errors>` (the browser test reads it).
const ERROR_CATCHER: &str = "window.__reportErrors=0;window.addEventListener('error',function(){\
window.__reportErrors++;document.documentElement.setAttribute('data-js-errors',\
String(window.__reportErrors));});";

/// Gantt rows, in SVG user units (x is in slots).
const BAR_Y: f64 = 2.0;
const BAR_H: f64 = 26.0;
const GANTT_H: f64 = 30.0;
const PLAN_TABLE_Y: f64 = 34.0;
const PLAN_TABLE_H: f64 = 10.0;
const CAP_Y: f64 = 48.0;
const CAP_H: f64 = 20.0;
const GANTT_PLAN_H: f64 = 70.0;
/// At most this many plan rectangles (frames × intervals and ranges) per CPU; beyond, the plan
/// rows are left out with a note.
const MAX_PLAN_RECTS: u64 = 100_000;

/// Shades per kind; a task's bars take shade `index % len` of its kind's list.
fn palette(kind: SlotKind) -> &'static [&'static str] {
    match kind {
        SlotKind::Tt => &[
            "#2f6fd0", "#5b93e6", "#1d4f9c", "#86b0ef", "#3d5fa8", "#0f3a7a",
        ],
        SlotKind::Aperiodic => &["#e07b12", "#f0a24d", "#b35d00", "#f5c07f"],
        SlotKind::Be => &["#3c9a4a", "#72bd7a", "#267233", "#a2d6a8"],
        SlotKind::Idle => &["#d9d9d9"],
    }
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Shade of each (kind, task) pair, in order of appearance.
fn shades(records: &[SlotRecord]) -> BTreeMap<(&'static str, String), &'static str> {
    let mut per_kind: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for r in records {
        if r.kind == SlotKind::Idle {
            continue;
        }
        let key = (r.kind.name(), r.task.clone().unwrap_or_default());
        if out.contains_key(&key) {
            continue;
        }
        let n = per_kind.entry(key.0).or_default();
        let p = palette(r.kind);
        out.insert(key, p[*n % p.len()]);
        *n += 1;
    }
    out
}

pub(super) fn render(inp: &Inputs) -> String {
    let mut s = String::with_capacity(4096 + inp.records.len() * 200);
    let cpu_list = cpus(inp.header, inp.records);
    let stats = cpu_stats(inp.records);
    let slot_ns = inp
        .header
        .map(|h| h.slot_ns)
        .or(inp.summary.map(|s| s.slot_us * 1000))
        .or(inp.plan.map(|p| p.slot_us * 1000));
    let (lo, hi) = match (
        inp.records.iter().map(|r| r.slot).min(),
        inp.records.iter().map(|r| r.slot).max(),
    ) {
        (Some(a), Some(b)) => (a, b + 1),
        _ => (0, 1),
    };
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>scx_tt run report: {}</title><style>{CSS}</style><script>{ERROR_CATCHER}</script></head>\n<body>\n",
        esc(inp.title)
    );
    let _ = writeln!(s, "<h1>scx_tt run report: {}</h1>", esc(inp.title));
    facts(&mut s, inp, &cpu_list, slot_ns, lo, hi);
    gantt(&mut s, inp, &cpu_list, lo, hi);
    lateness(&mut s, inp, &cpu_list, &stats);
    delivery(&mut s, inp, slot_ns);
    frequency(&mut s, inp, &cpu_list, &stats, lo, hi);
    energy(&mut s, inp);
    let _ = write!(s, "<script>{JS}</script>\n</body></html>\n");
    s
}

fn facts(s: &mut String, inp: &Inputs, cpu_list: &[u32], slot_ns: Option<u64>, lo: u64, hi: u64) {
    s.push_str("<section id=\"facts\"><h2>Run</h2><table class=\"facts\">\n");
    let mut row = |k: &str, v: String| {
        let _ = writeln!(s, "<tr><th>{k}</th><td>{v}</td></tr>");
    };
    row(
        "trace source",
        inp.header
            .map(|h| esc(&h.source))
            .unwrap_or_else(|| "unknown (no header line)".into()),
    );
    row(
        "slot length",
        slot_ns
            .map(|n| format!("{} ms", ms(n)))
            .unwrap_or_else(|| "unknown".into()),
    );
    row(
        "managed CPUs",
        cpu_list
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    );
    if inp.records.is_empty() {
        row("slots", "none: the trace has no slot records".into());
    } else {
        row("slots", format!("{lo} to {} ({} slots)", hi - 1, hi - lo));
    }
    row("slot records", inp.records.len().to_string());
    row(
        "Gantt bars (non-idle records)",
        format!("<span id=\"bar-count\">{}</span>", bar_count(inp.records)),
    );
    if let Some(sm) = inp.summary {
        row("duration", format!("{} ms", ms(sm.duration_ns)));
        if let Some(e) = &sm.exit {
            row("exit", esc(e));
        }
        if let Some(l) = sm.planner_late_slots {
            row("planner late slots", l.to_string());
        }
    } else {
        row("summary", "not given (--summary)".into());
    }
    match inp.plan {
        Some(p) => row(
            "plan",
            format!(
                "frame {} slots, {} µs slots, capacity intervals of CPUs {}",
                p.frame_slots,
                p.slot_us,
                p.cpus
                    .iter()
                    .map(|c| c.cpu.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        None => row("plan", "not given (--plan)".into()),
    }
    s.push_str("</table></section>\n");
}

fn legend(s: &mut String, inp: &Inputs) {
    s.push_str("<div class=\"legend\">");
    for k in [
        SlotKind::Tt,
        SlotKind::Aperiodic,
        SlotKind::Be,
        SlotKind::Idle,
    ] {
        let _ = write!(
            s,
            "<span class=\"key\"><span class=\"swatch\" style=\"background:{}\"></span>{}</span>",
            palette(k)[0],
            match k {
                SlotKind::Tt => "tt (table / admitted periodic)",
                SlotKind::Aperiodic => "aperiodic (firm)",
                SlotKind::Be => "be (best effort, soft)",
                SlotKind::Idle => "idle (no bar)",
            }
        );
    }
    if inp.plan.is_some() {
        s.push_str(
            "<span class=\"key\"><span class=\"swatch\" style=\"background:#9c9c9c\"></span>\
planned (offline table)</span><span class=\"key\"><span class=\"swatch cap-pos\"></span>\
interval with spare capacity</span><span class=\"key\"><span class=\"swatch cap-zero\"></span>\
no spare capacity</span><span class=\"key\"><span class=\"swatch cap-neg\"></span>\
borrows (sc &lt; 0)</span>",
        );
    }
    s.push_str("</div>\n<div class=\"legend tasks\">");
    for ((kind, task), colour) in shades(inp.records) {
        let name = if task.is_empty() {
            "(anonymous)".to_string()
        } else {
            esc(&task)
        };
        let _ = write!(
            s,
            "<span class=\"key\"><span class=\"swatch\" style=\"background:{colour}\"></span>{kind}: {name}</span>"
        );
    }
    s.push_str("</div>\n");
}

fn gantt(s: &mut String, inp: &Inputs, cpu_list: &[u32], lo: u64, hi: u64) {
    s.push_str("<section id=\"gantt\"><h2>Gantt chart</h2>\n");
    s.push_str(
        "<p class=\"note\">One bar per non-idle slot. Wheel or the buttons zoom (down to one \
slot), drag or the slider pans; hover a bar for its record.</p>\n",
    );
    legend(s, inp);
    let _ = writeln!(
        s,
        "<div class=\"controls\" id=\"zoom\" data-min=\"{lo}\" data-max=\"{hi}\">\
<button type=\"button\" id=\"zoom-in\">zoom in</button>\
<button type=\"button\" id=\"zoom-out\">zoom out</button>\
<button type=\"button\" id=\"zoom-reset\">whole run</button>\
<label>slots <input type=\"number\" id=\"zoom-from\" value=\"{lo}\"> to \
<input type=\"number\" id=\"zoom-to\" value=\"{hi}\"></label>\
<button type=\"button\" id=\"zoom-go\">show</button>\
<input type=\"range\" id=\"zoom-pan\" min=\"0\" max=\"1000\" value=\"0\">\
<span id=\"zoom-label\"></span></div>"
    );
    let shade = shades(inp.records);
    let mut by_cpu: BTreeMap<u32, Vec<&SlotRecord>> = BTreeMap::new();
    for r in inp.records {
        by_cpu.entry(r.cpu).or_default().push(r);
    }
    for &cpu in cpu_list {
        let plan_cpu = inp.plan.and_then(|p| p.cpus.iter().find(|c| c.cpu == cpu));
        let h = if plan_cpu.is_some() {
            GANTT_PLAN_H
        } else {
            GANTT_H
        };
        let _ = write!(
            s,
            "<div class=\"gantt-cpu\"><h3>CPU {cpu}</h3><svg class=\"gantt zoomable\" data-cpu=\"{cpu}\" \
data-h=\"{h}\" viewBox=\"{lo} 0 {} {h}\" preserveAspectRatio=\"none\" height=\"{}\" \
xmlns=\"http://www.w3.org/2000/svg\">",
            hi - lo,
            h * 1.6
        );
        let _ = write!(
            s,
            "<rect class=\"track\" x=\"{lo}\" y=\"{BAR_Y}\" width=\"{}\" height=\"{BAR_H}\"/>",
            hi - lo
        );
        for r in by_cpu.get(&cpu).map(Vec::as_slice).unwrap_or(&[]) {
            if r.kind == SlotKind::Idle {
                continue;
            }
            let kind = r.kind.name();
            let task = r.task.as_deref().unwrap_or("");
            let colour = shade
                .get(&(kind, task.to_string()))
                .copied()
                .unwrap_or(palette(r.kind)[0]);
            let _ = write!(
                s,
                "<rect class=\"bar k-{kind}\" data-cpu=\"{cpu}\" data-slot=\"{}\" data-kind=\"{kind}\"",
                r.slot
            );
            if let Some(t) = &r.task {
                let _ = write!(s, " data-task=\"{}\"", esc(t));
            }
            let _ = write!(
                s,
                " x=\"{}\" y=\"{BAR_Y}\" width=\"1\" height=\"{BAR_H}\" fill=\"{colour}\"><title>{}</title></rect>",
                r.slot,
                esc(&bar_title(r))
            );
        }
        if let (Some(pc), Some(plan)) = (plan_cpu, inp.plan) {
            plan_rows(s, pc, plan.frame_slots, lo, hi);
        }
        s.push_str("</svg></div>\n");
    }
    if cpu_list.is_empty() {
        s.push_str("<p class=\"note\">No CPU: the trace has no slot records.</p>\n");
    }
    s.push_str("<div class=\"axis\" id=\"gantt-axis\"></div>\n</section>\n");
}

fn bar_title(r: &SlotRecord) -> String {
    let mut t = format!("slot {} · CPU {} · {}", r.slot, r.cpu, r.kind.name());
    if let Some(task) = &r.task {
        let _ = write!(t, " {task}");
    }
    let _ = write!(t, " · freq {:.3}", r.freq);
    if let Some(v) = r.ran_ns {
        let _ = write!(t, " · ran {} ms", ms(v));
    }
    if let Some(v) = r.stolen_ns {
        let _ = write!(t, " · stolen {} ms", ms(v));
    }
    if let Some(v) = r.late_ns {
        let _ = write!(t, " · late {:.1} µs", v as f64 / 1e3);
    }
    t
}

/// The plan under a CPU's bars, repeated for every frame the trace covers: the offline table's
/// ranges, then the capacity intervals coloured by their spare capacity.
fn plan_rows(s: &mut String, pc: &PlanCpu, frame: u64, lo: u64, hi: u64) {
    if frame == 0 {
        return;
    }
    let first = lo / frame;
    let last = (hi - 1) / frame;
    let frames = last - first + 1;
    let per_frame = (pc.intervals.len() + pc.table.len()) as u64;
    if frames.saturating_mul(per_frame) > MAX_PLAN_RECTS {
        let _ = write!(
            s,
            "<text x=\"{lo}\" y=\"{}\" font-size=\"10\">plan rows left out: {frames} frames</text>",
            CAP_Y + 10.0
        );
        return;
    }
    for k in first..=last {
        let base = k * frame;
        for (a, b, task) in &pc.table {
            let _ = write!(
                s,
                "<rect class=\"planned\" data-task=\"{}\" x=\"{}\" y=\"{PLAN_TABLE_Y}\" width=\"{}\" \
height=\"{PLAN_TABLE_H}\"><title>planned: {} slots {}..{} of frame {k}</title></rect>",
                esc(task),
                base + a,
                b - a,
                esc(task),
                a,
                b
            );
        }
        for &(a, b, sc) in &pc.intervals {
            let class = match sc {
                x if x > 0 => "cap cap-pos",
                0 => "cap cap-zero",
                _ => "cap cap-neg",
            };
            // Spare capacity as the share of the interval it could still give away.
            let share = if b > a && sc > 0 {
                (sc as f64 / (b - a) as f64).min(1.0)
            } else {
                0.0
            };
            let _ = write!(
                s,
                "<rect class=\"{class}\" data-sc=\"{sc}\" x=\"{}\" y=\"{CAP_Y}\" width=\"{}\" height=\"{CAP_H}\" \
style=\"fill-opacity:{:.2}\"><title>capacity interval [{a}, {b}) of frame {k}: spare capacity {sc} slots</title></rect>",
                base + a,
                b - a,
                if sc > 0 { 0.25 + 0.75 * share } else { 0.8 }
            );
            if sc > 0 {
                // The spare capacity itself, at the end of its interval.
                let w = (sc as u64).min(b - a);
                let _ = write!(
                    s,
                    "<rect class=\"spare\" x=\"{}\" y=\"{}\" width=\"{w}\" height=\"4\"/>",
                    base + b - w,
                    CAP_Y + CAP_H - 4.0
                );
            }
        }
    }
}

/// A bar chart of histogram bins.
fn histogram_svg(s: &mut String, bins: &[Bin], cpu: u32) {
    let max = bins.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    let w = 58.0;
    let plot_h = 120.0;
    let width = w * bins.len() as f64 + 10.0;
    let _ = write!(
        s,
        "<svg class=\"hist\" data-cpu=\"{cpu}\" viewBox=\"0 0 {width} 175\" width=\"{width}\" height=\"175\" \
xmlns=\"http://www.w3.org/2000/svg\">"
    );
    for (i, b) in bins.iter().enumerate() {
        let x = 5.0 + i as f64 * w;
        let h = plot_h * b.count as f64 / max as f64;
        let _ = write!(
            s,
            "<rect class=\"hbin\" data-count=\"{}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\">\
<title>{}: {}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" class=\"count\">{}</text>\
<text x=\"{:.1}\" y=\"{:.1}\" class=\"blabel\">{}</text>",
            b.count,
            x + 2.0,
            20.0 + plot_h - h,
            w - 4.0,
            esc(&b.label),
            b.count,
            x + w / 2.0,
            16.0 + plot_h - h,
            b.count,
            x + w / 2.0,
            20.0 + plot_h + 16.0,
            esc(&b.label)
        );
    }
    s.push_str("</svg>");
}

/// The summary's histogram buckets as bins (`≤ bound`, the open one `> last bound`).
fn summary_bins(h: &[HistBucketView]) -> Vec<Bin> {
    let last = h.iter().filter_map(|b| b.le_ns).max().unwrap_or(0);
    h.iter()
        .map(|b| Bin {
            label: match b.le_ns {
                Some(n) => format!("≤ {}", super::fmt_ns_short(n as i64)),
                None => format!("> {}", super::fmt_ns_short(last as i64)),
            },
            count: b.count,
        })
        .collect()
}

fn lateness(
    s: &mut String,
    inp: &Inputs,
    cpu_list: &[u32],
    stats: &BTreeMap<u32, super::CpuStats>,
) {
    s.push_str(
        "<section id=\"lateness\"><h2>Slot tick lateness</h2>\n<p class=\"note\">Timer callback \
time minus the slot boundary (<code>late_ns</code>, kernel traces), per CPU: how many slot ticks \
fell in each bucket.</p>\n",
    );
    for &cpu in cpu_list {
        let st = stats.get(&cpu);
        let late = st.map(|x| x.late.as_slice()).unwrap_or(&[]);
        let _ = write!(s, "<div class=\"chart\"><h3>CPU {cpu}</h3>");
        if !late.is_empty() {
            let (mn, mx) = (
                late.iter().min().copied().unwrap_or(0),
                late.iter().max().copied().unwrap_or(0),
            );
            let mut sorted = late.to_vec();
            sorted.sort_unstable();
            let p = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
            let _ = write!(
                s,
                "<p>{} ticks from the trace: min {:.1} µs, p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs</p>",
                late.len(),
                mn as f64 / 1e3,
                p(0.5) as f64 / 1e3,
                p(0.99) as f64 / 1e3,
                mx as f64 / 1e3
            );
            histogram_svg(s, &late_histogram(late), cpu);
        } else if let Some(c) = inp.summary.and_then(|sm| {
            sm.cpus
                .iter()
                .find(|c| c.cpu == cpu && !c.late_hist.is_empty())
        }) {
            s.push_str("<p>No <code>late_ns</code> in the trace; the summary's histogram:</p>");
            histogram_svg(s, &summary_bins(&c.late_hist), cpu);
        } else {
            s.push_str(
                "<p class=\"note\">No lateness: the trace has no <code>late_ns</code> (a \
<code>simulate</code> trace) and no summary says it.</p>",
            );
        }
        s.push_str("</div>\n");
    }
}

fn delivery(s: &mut String, inp: &Inputs, slot_ns: Option<u64>) {
    let ds = deliveries(inp.records, slot_ns, inp.summary);
    let _ = write!(
        s,
        "<section id=\"delivery\"><h2>Delivered vs planned</h2>\n<p class=\"note\">{}</p>\n",
        if inp.summary.is_some() {
            "From the summary: <code>planned_ns</code> (the task's slots) against \
<code>delivered_ns</code> (what it ran inside them)."
        } else {
            "From the trace (no summary given): planned is the slots a task owns × the slot \
length, delivered the sum of their <code>ran_ns</code>."
        }
    );
    if ds.is_empty() {
        s.push_str("<p class=\"note\">No named task in the trace.</p></section>\n");
        return;
    }
    s.push_str(
        "<table class=\"delivery\"><tr><th>task</th><th>class</th><th>CPU</th><th>planned ms</th>\
<th>delivered ms</th><th>delivered %</th><th></th></tr>\n",
    );
    let max = ds
        .iter()
        .map(|d| d.planned_ns.max(d.delivered_ns.unwrap_or(0)))
        .max()
        .unwrap_or(0)
        .max(1);
    for d in &ds {
        let pct = match (d.delivered_ns, d.planned_ns) {
            (Some(x), p) if p > 0 => format!("{:.1}", 100.0 * x as f64 / p as f64),
            _ => "–".into(),
        };
        let pw = 240.0 * d.planned_ns as f64 / max as f64;
        let dw = 240.0 * d.delivered_ns.unwrap_or(0) as f64 / max as f64;
        let _ = writeln!(
            s,
            "<tr data-task=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{pct}</td>\
<td><svg width=\"250\" height=\"16\" xmlns=\"http://www.w3.org/2000/svg\">\
<rect class=\"planned-bar\" x=\"0\" y=\"2\" width=\"{pw:.1}\" height=\"12\"/>\
<rect class=\"delivered-bar\" x=\"0\" y=\"5\" width=\"{dw:.1}\" height=\"6\"/></svg></td></tr>",
            esc(&d.task),
            esc(&d.task),
            esc(&d.class),
            d.cpu.map(|c| c.to_string()).unwrap_or_else(|| "–".into()),
            ms(d.planned_ns),
            d.delivered_ns.map(ms).unwrap_or_else(|| "–".into()),
        );
    }
    s.push_str(
        "</table><div class=\"legend\"><span class=\"key\"><span class=\"swatch planned-sw\"></span>\
planned</span><span class=\"key\"><span class=\"swatch delivered-sw\"></span>delivered</span></div>\
</section>\n",
    );
}

fn frequency(
    s: &mut String,
    inp: &Inputs,
    cpu_list: &[u32],
    stats: &BTreeMap<u32, super::CpuStats>,
    lo: u64,
    hi: u64,
) {
    s.push_str(
        "<section id=\"frequency\"><h2>Frequency and idle residency</h2>\n<p class=\"note\">The \
normalised frequency each slot ran at (<code>freq</code>, 1.0 = the highest), on the Gantt's \
zoom; idle slots shaded.</p>\n",
    );
    let mut by_cpu: BTreeMap<u32, Vec<&SlotRecord>> = BTreeMap::new();
    for r in inp.records {
        by_cpu.entry(r.cpu).or_default().push(r);
    }
    for &cpu in cpu_list {
        let mut recs = by_cpu.remove(&cpu).unwrap_or_default();
        recs.sort_by_key(|r| r.slot);
        freq_chart(s, cpu, &recs, lo, hi);
    }
    idle_residency_table(s, cpu_list, stats);
    if let Some(sm) = inp.summary {
        freq_residency_table(s, sm);
    }
    s.push_str("</section>\n");
}

/// The frequency chart of one CPU: its idle runs shaded and its frequency as lines.
fn freq_chart(s: &mut String, cpu: u32, recs: &[&SlotRecord], lo: u64, hi: u64) {
    let _ = write!(
        s,
        "<div class=\"gantt-cpu\"><h3>CPU {cpu}</h3><svg class=\"freq zoomable\" data-cpu=\"{cpu}\" data-h=\"100\" \
viewBox=\"{lo} 0 {} 100\" preserveAspectRatio=\"none\" height=\"90\" xmlns=\"http://www.w3.org/2000/svg\">\
<rect class=\"track\" x=\"{lo}\" y=\"0\" width=\"{}\" height=\"100\"/>",
        hi - lo,
        hi - lo
    );
    idle_spans(s, recs);
    freq_lines(s, recs);
    s.push_str("</svg></div>\n");
}

/// Shades a CPU's idle slots in its frequency chart.
fn idle_spans(s: &mut String, recs: &[&SlotRecord]) {
    // Idle slots, merged into runs.
    let mut run: Option<(u64, u64)> = None;
    let flush = |s: &mut String, run: Option<(u64, u64)>| {
        if let Some((a, b)) = run {
            let _ = write!(
                s,
                "<rect class=\"idle-span\" x=\"{a}\" y=\"0\" width=\"{}\" height=\"100\"/>",
                b - a
            );
        }
    };
    for r in recs {
        if r.kind == SlotKind::Idle {
            run = match run {
                Some((a, b)) if b == r.slot => Some((a, b + 1)),
                other => {
                    flush(s, other);
                    Some((r.slot, r.slot + 1))
                }
            };
        }
    }
    flush(s, run);
}

/// The frequency of a CPU's slots as polylines, one per run of consecutive slots.
fn freq_lines(s: &mut String, recs: &[&SlotRecord]) {
    let mut pts = String::new();
    let mut prev: Option<u64> = None;
    for r in recs {
        let y = 100.0 - 95.0 * r.freq.clamp(0.0, 1.0);
        if prev.is_some_and(|p| p + 1 != r.slot) && !pts.is_empty() {
            let _ = write!(
                s,
                "<polyline class=\"freq-line\" points=\"{}\"/>",
                pts.trim_end()
            );
            pts.clear();
        }
        let _ = write!(pts, "{},{y:.2} {},{y:.2} ", r.slot, r.slot + 1);
        prev = Some(r.slot);
    }
    if !pts.is_empty() {
        let _ = write!(
            s,
            "<polyline class=\"freq-line\" points=\"{}\"/>",
            pts.trim_end()
        );
    }
}

/// The idle residency table: each CPU's slots by kind, from the trace.
fn idle_residency_table(s: &mut String, cpu_list: &[u32], stats: &BTreeMap<u32, super::CpuStats>) {
    s.push_str(
        "<h3>Idle residency (from the trace)</h3><table class=\"residency\"><tr><th>CPU</th>\
<th>slots</th><th>tt</th><th>aperiodic</th><th>be</th><th>idle</th><th>of which DPM idle</th>\
<th>idle %</th><th>mean busy freq</th><th></th></tr>\n",
    );
    for &cpu in cpu_list {
        let st = stats.get(&cpu).cloned().unwrap_or_default();
        let bar = residency_bar(&st);
        let _ = writeln!(
            s,
            "<tr data-cpu=\"{cpu}\"><td>{cpu}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
<td>{}</td><td>{:.1}</td><td>{}</td><td>{bar}</td></tr>",
            st.slots,
            st.tt,
            st.aperiodic,
            st.be,
            st.idle,
            st.dpm_idle,
            100.0 * st.idle_fraction(),
            st.busy_freq_mean
                .map(|f| format!("{f:.3}"))
                .unwrap_or_else(|| "–".into())
        );
    }
    s.push_str("</table>\n");
}

/// A CPU's slots by kind as a stacked bar.
fn residency_bar(st: &super::CpuStats) -> String {
    let n = st.slots.max(1) as f64;
    let mut bar =
        String::from("<svg width=\"200\" height=\"14\" xmlns=\"http://www.w3.org/2000/svg\">");
    let mut x = 0.0;
    for (count, kind) in [
        (st.tt, SlotKind::Tt),
        (st.aperiodic, SlotKind::Aperiodic),
        (st.be, SlotKind::Be),
        (st.idle, SlotKind::Idle),
    ] {
        let w = 200.0 * count as f64 / n;
        let _ = write!(
            bar,
            "<rect x=\"{x:.1}\" y=\"0\" width=\"{w:.1}\" height=\"14\" fill=\"{}\"><title>{}: {count}</title></rect>",
            palette(kind)[0],
            kind.name()
        );
        x += w;
    }
    bar.push_str("</svg>");
    bar
}

/// The frequency residency table of the summary's managed CPUs, when it has any.
fn freq_residency_table(s: &mut String, sm: &super::SummaryView) {
    let res: Vec<_> = sm
        .cpus
        .iter()
        .filter(|c| c.managed && !c.freq_residency.is_empty())
        .collect();
    if !res.is_empty() {
        s.push_str(
            "<h3>Frequency residency (summary, per P-state of the power model)</h3>\
<table class=\"residency\"><tr><th>CPU</th><th>MHz</th><th>seconds</th><th>share %</th><th></th></tr>\n",
        );
        for c in res {
            for f in &c.freq_residency {
                let _ = writeln!(
                    s,
                    "<tr><td>{}</td><td>{}</td><td>{:.3}</td><td>{:.1}</td><td><svg width=\"200\" \
height=\"10\" xmlns=\"http://www.w3.org/2000/svg\"><rect class=\"delivered-bar\" x=\"0\" y=\"0\" \
width=\"{:.1}\" height=\"10\"/></svg></td></tr>",
                    c.cpu,
                    f.mhz,
                    f.seconds,
                    100.0 * f.fraction,
                    200.0 * f.fraction.clamp(0.0, 1.0)
                );
            }
        }
        s.push_str("</table>\n");
    }
}

fn energy(s: &mut String, inp: &Inputs) {
    s.push_str("<section id=\"energy\"><h2>Energy</h2>\n");
    match inp.summary.map(|sm| &sm.energy) {
        None => s.push_str("<p class=\"note\">No summary given (--summary): no energy figure.</p>"),
        Some(None) => s.push_str(
            "<p class=\"note\">The summary has no energy figure (energy unavailable).</p>",
        ),
        Some(Some(e)) => {
            let _ = write!(
                s,
                "<p class=\"energy\"><b>{:.3} J</b> ({}: {})</p>",
                e.joules,
                esc(&e.label),
                esc(&e.source)
            );
            if !e.segments.is_empty() {
                let max = e
                    .segments
                    .iter()
                    .map(|g| g.joules)
                    .fold(0.0_f64, f64::max)
                    .max(1e-12);
                s.push_str(
                    "<table class=\"residency\"><tr><th>policy</th><th>from slot</th><th>idle rule</th>\
<th>J</th><th></th></tr>\n",
                );
                for g in &e.segments {
                    let _ = writeln!(
                        s,
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td><svg width=\"200\" \
height=\"10\" xmlns=\"http://www.w3.org/2000/svg\"><rect class=\"delivered-bar\" x=\"0\" y=\"0\" \
width=\"{:.1}\" height=\"10\"/></svg></td></tr>",
                        esc(&g.policy),
                        g.from_slot,
                        esc(&g.idle),
                        g.joules,
                        200.0 * (g.joules / max).clamp(0.0, 1.0)
                    );
                }
                s.push_str("</table>");
            }
        }
    }
    s.push_str("\n</section>\n");
}
