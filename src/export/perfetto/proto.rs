/// `perfetto.protos.Trace`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `perfetto.protos.TracePacket`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// `oneof optional_trusted_packet_sequence_id`.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;

/// `perfetto.protos.TrackDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// `oneof static_or_dynamic_name`.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
    #[prost(string, optional, tag = "14")]
    pub description: Option<String>,
}

/// `perfetto.protos.CounterDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    /// `CounterDescriptor.Unit`.
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

/// `CounterDescriptor.Unit.UNIT_TIME_NS`.
pub const UNIT_TIME_NS: i32 = 1;

/// `perfetto.protos.TrackEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// `TrackEvent.Type`.
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    /// `oneof name_field`.
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// `oneof counter_value_field`.
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    /// `oneof counter_value_field`.
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
}

/// `TrackEvent.Type` values.
pub const TYPE_SLICE_BEGIN: i32 = 1;
pub const TYPE_SLICE_END: i32 = 2;
pub const TYPE_INSTANT: i32 = 3;
pub const TYPE_COUNTER: i32 = 4;

/// `perfetto.protos.DebugAnnotation` (a slice's or instant's arguments in the UI).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    /// `oneof name_field`.
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    /// `oneof value`.
    #[prost(uint64, optional, tag = "3")]
    pub uint_value: Option<u64>,
    /// `oneof value`.
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
}
