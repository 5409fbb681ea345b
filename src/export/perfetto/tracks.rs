//! The tracks of the Perfetto trace: their descriptors and their timed events, then the packets.

use super::{
    cpu_track, freq_track, late_track, proto, Marker, OwnerRun, SlotTrace, EVENTS_TRACK,
    SEQUENCE_ID,
};
use crate::trace::SlotRecord;

/// A named unsigned argument of a slice or instant.
fn annotation_u(name: &str, v: u64) -> proto::DebugAnnotation {
    proto::DebugAnnotation {
        name: Some(name.into()),
        uint_value: Some(v),
        string_value: None,
    }
}

/// A named string argument of a slice or instant.
fn annotation_s(name: &str, v: &str) -> proto::DebugAnnotation {
    proto::DebugAnnotation {
        name: Some(name.into()),
        uint_value: None,
        string_value: Some(v.into()),
    }
}

/// A track descriptor with a name and a description.
fn descriptor(uuid: u64, name: String, desc: &str) -> proto::TrackDescriptor {
    proto::TrackDescriptor {
        uuid: Some(uuid),
        name: Some(name),
        counter: None,
        description: Some(desc.into()),
    }
}

/// A track event of type `ty` on `track`.
fn event(track: u64, ty: i32) -> proto::TrackEvent {
    proto::TrackEvent {
        r#type: Some(ty),
        track_uuid: Some(track),
        ..Default::default()
    }
}

/// The trace being built: its track descriptors and its timed events.
pub(super) struct Tracks<'a> {
    trace: &'a SlotTrace,
    descriptors: Vec<proto::TrackDescriptor>,
    // (timestamp, event): stable-sorted by time, so each track keeps the order it was made in
    // (a slice's end before the next one's begin at the same time, children inside parents).
    events: Vec<(u64, proto::TrackEvent)>,
}

impl<'a> Tracks<'a> {
    /// No tracks yet.
    pub(super) fn new(trace: &'a SlotTrace) -> Self {
        Tracks {
            trace,
            descriptors: Vec::new(),
            events: Vec::new(),
        }
    }

    /// The start of `slot`, ns.
    fn ts(&self, slot: u64) -> u64 {
        self.trace
            .slot_start(slot)
            .expect("checked by read_slot_trace")
    }

    /// The `scx_tt events` track and an instant per marker.
    pub(super) fn markers(&mut self, markers: &[Marker]) {
        self.descriptors.push(descriptor(
            EVENTS_TRACK,
            "scx_tt events".into(),
            "admissions, removals, policy and table switches (at the start of their slot)",
        ));
        for m in markers {
            let mut e = event(EVENTS_TRACK, proto::TYPE_INSTANT);
            e.name = Some(m.name.clone());
            e.categories = vec![m.kind.category().into()];
            e.debug_annotations = vec![
                annotation_u("slot", m.slot),
                annotation_s("source", m.source),
            ];
            self.events.push((self.ts(m.slot), e));
        }
    }

    /// The slice track of the CPU at index `i`: its owner runs with their nested stolen slices.
    pub(super) fn cpu_slices(&mut self, i: usize, cpu: u32, runs: &[OwnerRun]) {
        let slot_ns = self.trace.header.slot_ns;
        self.descriptors.push(descriptor(
            cpu_track(i),
            format!("CPU {cpu}"),
            "slot owners: one slice per run of slots with the same owner and kind; nested \
             'stolen' slices: time other tasks ran in a slot (drawn from the slot's start)",
        ));
        for run in runs.iter().filter(|r| r.cpu == cpu) {
            let mut b = event(cpu_track(i), proto::TYPE_SLICE_BEGIN);
            b.name = Some(run.name().into());
            b.categories = vec![run.kind.name().into()];
            b.debug_annotations = vec![
                annotation_u("first_slot", run.first_slot),
                annotation_u("slots", run.end_slot - run.first_slot),
            ];
            self.events.push((self.ts(run.first_slot), b));
            for &(slot, ns) in &run.stolen {
                let mut sb = event(cpu_track(i), proto::TYPE_SLICE_BEGIN);
                sb.name = Some("stolen".into());
                sb.categories = vec!["stolen".into()];
                sb.debug_annotations =
                    vec![annotation_u("slot", slot), annotation_u("stolen_ns", ns)];
                self.events.push((self.ts(slot), sb));
                self.events.push((
                    self.ts(slot) + ns.min(slot_ns),
                    event(cpu_track(i), proto::TYPE_SLICE_END),
                ));
            }
            self.events.push((
                self.ts(run.end_slot),
                event(cpu_track(i), proto::TYPE_SLICE_END),
            ));
        }
    }

    /// The counter tracks of the CPU at index `i`: its frequency, and its tick lateness when the
    /// trace has any.
    pub(super) fn cpu_counters(&mut self, i: usize, cpu: u32, records: &[SlotRecord]) {
        self.descriptors.push(proto::TrackDescriptor {
            counter: Some(proto::CounterDescriptor {
                unit: None,
                unit_name: Some("normalised frequency".into()),
            }),
            ..descriptor(
                freq_track(i),
                format!("CPU {cpu} freq"),
                "the slot's normalised frequency in (0, 1] (1.0 without DVFS)",
            )
        });
        let mut last_freq: Option<f64> = None;
        let mut has_late = false;
        for r in records.iter().filter(|r| r.cpu == cpu) {
            if last_freq != Some(r.freq) {
                let mut e = event(freq_track(i), proto::TYPE_COUNTER);
                e.double_counter_value = Some(r.freq);
                self.events.push((self.ts(r.slot), e));
                last_freq = Some(r.freq);
            }
            if let Some(late) = r.late_ns {
                has_late = true;
                let mut e = event(late_track(i), proto::TYPE_COUNTER);
                e.counter_value = Some(late);
                self.events.push((self.ts(r.slot), e));
            }
        }
        if has_late {
            self.descriptors.push(proto::TrackDescriptor {
                counter: Some(proto::CounterDescriptor {
                    unit: Some(proto::UNIT_TIME_NS),
                    unit_name: None,
                }),
                ..descriptor(
                    late_track(i),
                    format!("CPU {cpu} late_ns"),
                    "slot tick lateness: timer callback time minus the slot boundary, ns",
                )
            });
        }
    }

    /// The trace: the descriptors' packets, then the events' in time order.
    pub(super) fn into_trace(self) -> proto::Trace {
        let Tracks {
            descriptors,
            mut events,
            ..
        } = self;
        events.sort_by_key(|(t, _)| *t);
        let mut packet = Vec::with_capacity(descriptors.len() + events.len());
        for d in descriptors {
            packet.push(proto::TracePacket {
                trusted_packet_sequence_id: Some(SEQUENCE_ID),
                track_descriptor: Some(d),
                ..Default::default()
            });
        }
        for (t, e) in events {
            packet.push(proto::TracePacket {
                timestamp: Some(t),
                trusted_packet_sequence_id: Some(SEQUENCE_ID),
                track_event: Some(e),
                ..Default::default()
            });
        }
        if let Some(p) = packet.first_mut() {
            p.sequence_flags = Some(proto::SEQ_INCREMENTAL_STATE_CLEARED);
        }
        proto::Trace { packet }
    }
}
