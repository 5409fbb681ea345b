//! The kernel write of a table switch off the run loop (issue 12): `HalfWriter` fills one half of
//! a real BPF array map from another thread while the caller's loop keeps its turns, and leaves
//! the other half (the table in force) untouched. Needs the `bpf` feature and the right to
//! create BPF maps (root); without it each test says so and passes. The figures at the caps
//! (2^24 entries) come from `cargo bench --bench plan_load` (docs/control.md).
#![cfg(feature = "bpf")]

use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};
use scx_tt::sched::loader::HalfWriter;
use std::time::{Duration, Instant};

/// A u32 ARRAY map of `entries` entries, or `None` (with a note) without the right to create one.
fn array_map(entries: u32) -> Option<MapHandle> {
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    match MapHandle::create(MapType::Array, Some("tt_test_table"), 4, 4, entries, &opts) {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("skipped: cannot create a BPF map here (root or CAP_BPF needed): {e}");
            None
        }
    }
}

fn entry(map: &MapHandle, key: u32) -> u32 {
    let v = map
        .lookup(&key.to_ne_bytes(), MapFlags::ANY)
        .expect("lookup")
        .expect("an array has every key");
    u32::from_ne_bytes(v.try_into().expect("4 bytes"))
}

/// A loop of 1 ms turns on the caller's thread runs on while another thread writes 2^20 entries
/// (1/16 of the largest table); the half written holds the new table, the other the old one.
#[test]
fn a_half_is_written_on_another_thread_while_the_callers_loop_keeps_its_turns() {
    const LEN: usize = 1 << 20;
    let Some(map) = array_map(2 * LEN as u32) else {
        return;
    };
    let old: Vec<u32> = (0..LEN as u32).map(|i| i % 7).collect();
    let new: Vec<u32> = (0..LEN as u32).map(|i| 100 + i % 11).collect();
    // the table in force (half 0), written on this thread: what the run loop used to do
    let t0 = Instant::now();
    let written0 = HalfWriter::new(MapHandle::try_from(&map).expect("dup"), 0, LEN)
        .expect("writer")
        .write(&old)
        .expect("write half 0");
    let on_caller = t0.elapsed();
    let writer = HalfWriter::new(MapHandle::try_from(&map).expect("dup"), 1, LEN).expect("writer");
    let t1 = Instant::now();
    let thread = std::thread::spawn(move || writer.write(&new).map(|w| (w, new)));
    let (mut turns, mut longest, mut last) = (0u32, Duration::ZERO, Instant::now());
    while !thread.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
        let now = Instant::now();
        longest = longest.max(now - last);
        last = now;
        turns += 1;
    }
    let off_caller = t1.elapsed();
    let (written1, new) = thread.join().expect("no panic").expect("write half 1");
    eprintln!(
        "2^20 entries: written on the caller in {on_caller:?}; on another thread in \
         {off_caller:?}, while the caller's 1 ms loop made {turns} turns, the longest {longest:?}"
    );
    assert_ne!(written0, written1, "two halves");
    assert!(
        longest < Duration::from_millis(100),
        "a turn took {longest:?} while the other thread wrote"
    );
    for key in (0..LEN as u32).step_by(997).chain([LEN as u32 - 1]) {
        assert_eq!(entry(&map, key), old[key as usize], "half 0, key {key}");
        assert_eq!(
            entry(&map, LEN as u32 + key),
            new[key as usize],
            "half 1, key {key}"
        );
    }
}

#[test]
fn a_writer_refuses_a_half_outside_the_map_and_a_table_of_another_length() {
    let Some(map) = array_map(2 * 64) else {
        return;
    };
    let dup = || MapHandle::try_from(&map).expect("dup");
    assert!(HalfWriter::new(dup(), 2, 64).is_err(), "half 2");
    assert!(
        HalfWriter::new(dup(), 1, 65).is_err(),
        "2 x 65 entries in 128"
    );
    let w = HalfWriter::new(dup(), 1, 64).expect("fits");
    let e = w.write(&[1; 63]).expect_err("63 entries");
    assert!(e.to_string().contains("must have 64 entries"), "{e}");
    assert_eq!(entry(&map, 64), 0, "nothing written");
    assert_eq!(map.max_entries(), 128);
}
