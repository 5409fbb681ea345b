use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;
use std::time::{Instant, SystemTime};

/// The columns of summary.tsv, tab-separated.
pub const HEADER: &str = "test\tboots\tcrashes\thangs\tremeasured\tverdict\twall_s\n";

pub fn summary_path() -> PathBuf {
    super::repo().join("target/vm/summary.tsv")
}

/// The boots of one or more run.sh calls: every try, and the tries whose guest crashed or
/// hung (each retried while tries remained).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tries {
    pub boots: u32,
    pub crashes: u32,
    pub hangs: u32,
}

/// What one test's thread has cost so far.
pub struct Ledger {
    test: String,
    /// summary.tsv; a unit test points it elsewhere.
    path: PathBuf,
    started: Instant,
    tries: Tries,
    /// Measurements beyond the first of every `measure_until_settled`.
    pub remeasured: u32,
    pub timing_not_judged: bool,
    failed: bool,
    /// The panic's message (the failed checks), for failures.txt.
    failure: Option<String>,
}

thread_local! {
    static LEDGER: RefCell<Option<Ledger>> = const { RefCell::new(None) };
}

/// Updates the current test's ledger, starting it (and its wall clock) at the test's first
/// harness call. Nothing outside a libtest thread.
pub fn note(update: impl FnOnce(&mut Ledger)) {
    let thread = std::thread::current();
    let Some(test) = thread.name().filter(|n| *n != "main") else {
        return;
    };
    install_panic_hook();
    // try_with: a harness call from another thread-local's destructor finds no ledger
    let _ = LEDGER.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            update(l.get_or_insert_with(|| Ledger::new(&row_name(test), summary_path())));
        }
    });
}

/// The test's row name: its name, with ` @KERNEL` when the VMs boot another kernel than
/// `default` (SCX_TT_VM_KERNEL), so one summary can hold the same test on several kernels.
pub fn row_name(test: &str) -> String {
    match std::env::var("SCX_TT_VM_KERNEL") {
        Ok(k) if !k.is_empty() && k != "default" => format!("{test} @{k}"),
        _ => test.to_string(),
    }
}

fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // A panic inside `note` finds the ledger borrowed; libtest reports it anyway.
            let _ = LEDGER.try_with(|l| {
                if let Ok(mut l) = l.try_borrow_mut() {
                    if let Some(l) = l.as_mut() {
                        l.failed = true;
                        let p = info.payload();
                        let text = p
                            .downcast_ref::<String>()
                            .map(String::as_str)
                            .or_else(|| p.downcast_ref::<&str>().copied())
                            .unwrap_or("(a panic without a message)");
                        let at = info
                            .location()
                            .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
                        l.failure = Some(format!("{}{at}", digest(text)));
                    }
                }
            });
            previous(info);
        }));
    });
}

impl Ledger {
    fn new(test: &str, path: PathBuf) -> Ledger {
        Ledger {
            test: test.replace(['\t', '\n'], " "),
            path,
            started: Instant::now(),
            tries: Tries::default(),
            remeasured: 0,
            timing_not_judged: false,
            failed: false,
            failure: None,
        }
    }

    pub fn add(&mut self, t: Tries) {
        self.tries.boots += t.boots;
        self.tries.crashes += t.crashes;
        self.tries.hangs += t.hangs;
    }

    fn verdict(&self) -> &'static str {
        match (self.failed, self.timing_not_judged) {
            (true, _) => "FAIL",
            (false, true) => "pass-timing-not-judged",
            (false, false) => "pass",
        }
    }

    fn row(&self) -> String {
        let t = self.tries;
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{:.1}\n",
            self.test,
            t.boots,
            t.crashes,
            t.hangs,
            self.remeasured,
            self.verdict(),
            self.started.elapsed().as_secs_f64()
        )
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        if self.tries.boots == 0 {
            return;
        }
        if let Err(e) = append_row(&self.path, &self.row()) {
            eprintln!(
                "vm: {}: no summary row for {}: {e}",
                self.path.display(),
                self.test
            );
        }
        if let Some(f) = &self.failure {
            let path = failures_path(&self.path);
            let entry = format!("--- {}\n{f}\n", self.test);
            if let Err(e) = append_entry(&path, &entry) {
                eprintln!("vm: {}: {e}", path.display());
            }
        }
    }
}

/// Where a failed test's message goes: `failures.txt` beside the summary table, printed
/// after it by scripts/vm-summary.sh. A CI log shows its tail: the table and then why each
/// failed test failed, not only which.
pub fn failures_path(summary: &Path) -> PathBuf {
    summary.with_file_name("failures.txt")
}

/// A panic message cut for failures.txt: its first 40 lines of at most 400 characters.
pub fn digest(text: &str) -> String {
    let mut lines: Vec<String> = text
        .lines()
        .take(40)
        .map(|l| match l.char_indices().nth(400) {
            Some((i, _)) => format!("{} [...]", &l[..i]),
            None => l.to_string(),
        })
        .collect();
    if text.lines().count() > 40 {
        lines.push("[... more lines in the test's log]".into());
    }
    lines.join("\n")
}

/// Appends `entry` in one write (O_APPEND), which lands whole at the end of the file even
/// when other tests append at once (the rows of [`append_row`], failures.txt).
fn append_entry(path: &Path, entry: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(entry.as_bytes())
}

/// Appends `row` to the table at `path`, writing the header first when the file is new.
/// Tests finishing at once (the smoke tests run in parallel) must neither interleave their
/// rows nor both write the header: the header is linked into place (`link` never replaces
/// a file, so exactly one lands, before any row), and each row is one `write` in append
/// mode (O_APPEND), which lands whole at the end.
pub fn append_row(path: &Path, row: &str) -> std::io::Result<()> {
    static TMP: AtomicU32 = AtomicU32::new(0);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    if !path.exists() {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(
            ".{}.{}",
            std::process::id(),
            TMP.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&tmp, HEADER)?;
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    append_entry(path, row)
}

/// What run.sh takes for a crashed guest on a boot's console.
const CRASHED: [&str; 3] = ["Oops", "Kernel panic", "BUG: "];

/// The tries of one run.sh call, from the consoles of its boots in order (try-1, try-2,
/// ...): run.sh stops at the first completed boot, so when the run `completed` (it wrote
/// scenario.rc) every boot before the last was retried, otherwise every boot failed. A
/// failed boot whose console shows a kernel crash (run.sh's own pattern: `Oops`,
/// `Kernel panic`, `BUG: `) counts as a crash, any other as a hang (no `=== tt-vm: done
/// rc=` marker, or, rarely, the result files did not all arrive: run.sh calls both hung).
pub fn tally_tries(consoles: &[&str], completed: bool) -> Tries {
    let failed = if completed {
        consoles.len().saturating_sub(1)
    } else {
        consoles.len()
    };
    let crashes = consoles[..failed]
        .iter()
        .filter(|c| CRASHED.iter().any(|p| c.contains(p)))
        .count();
    Tries {
        boots: consoles.len() as u32,
        crashes: crashes as u32,
        hangs: (failed - crashes) as u32,
    }
}

/// [`tally_tries`] over run directory `dir` after a run.sh call that started at `since`.
/// run.sh empties the directory first, but not when it stops before that (no kernel, no
/// initramfs): consoles older than the call are an earlier run's and are not counted.
pub fn tally_run_dir(dir: &Path, since: SystemTime) -> Tries {
    // file times come from the kernel's coarse clock, up to a tick behind `since`
    let since = since - std::time::Duration::from_secs(1);
    let mut consoles: Vec<(u32, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let k = name.strip_prefix("try-")?.strip_suffix(".console.log")?;
            let k = k.parse().ok()?;
            if e.metadata().and_then(|m| m.modified()).ok()? < since {
                return None;
            }
            let text = String::from_utf8_lossy(&std::fs::read(e.path()).ok()?).into_owned();
            Some((k, text))
        })
        .collect();
    consoles.sort_by_key(|&(k, _)| k);
    let texts: Vec<&str> = consoles.iter().map(|(_, t)| t.as_str()).collect();
    tally_tries(&texts, dir.join("scenario.rc").exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DONE: &str = "=== tt-vm: boot\nscenario output\n=== tt-vm: done rc=0\n";
    const OOPS: &str = "=== tt-vm: boot\nOops: int3: 0000 [#1] SMP\nKernel panic - not syncing\n";
    const HUNG: &str = "=== tt-vm: boot\nscenario output\n";

    fn tries(boots: u32, crashes: u32, hangs: u32) -> Tries {
        Tries {
            boots,
            crashes,
            hangs,
        }
    }

    #[test]
    fn a_completed_run_retried_every_boot_but_its_last() {
        // a crash, a hang, then the completed boot
        assert_eq!(tally_tries(&[OOPS, HUNG, DONE], true), tries(3, 1, 1));
        assert_eq!(tally_tries(&[DONE], true), tries(1, 0, 0));
        // a boot with the done marker that was retried anyway lost result files: run.sh
        // calls it hung
        assert_eq!(tally_tries(&[DONE, DONE], true), tries(2, 0, 1));
        // the smoke test's crash and hang scenarios: every boot failed (run.sh exit 3)
        assert_eq!(
            tally_tries(&[OOPS, "BUG: kernel NULL pointer dereference"], false),
            tries(2, 2, 0)
        );
        assert_eq!(tally_tries(&[HUNG], false), tries(1, 0, 1));
        assert_eq!(tally_tries(&[], false), Tries::default());
    }

    #[test]
    fn a_run_dir_is_read_in_try_order() {
        // nine crashes and the completed try 10: sorted as text, try-9 would look like
        // the completed one
        let dir = crate::common::temp_dir("ledger", "tries");
        for k in 1..=9 {
            std::fs::write(dir.join(format!("try-{k}.console.log")), OOPS).expect("write");
        }
        std::fs::write(dir.join("try-10.console.log"), DONE).expect("write");
        std::fs::write(dir.join("console.log"), DONE).expect("write");
        std::fs::write(dir.join("scenario.rc"), "0\n").expect("write");
        let all = tries(10, 9, 0);
        assert_eq!(tally_run_dir(&dir, SystemTime::now()), all);
        // consoles from before the call are an earlier run's
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        assert_eq!(tally_run_dir(&dir, later), Tries::default());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Runs `body` in a thread named `test` whose ledger writes to `path`, as libtest runs a
    /// test; true when the thread panicked.
    fn in_test_thread(test: &str, path: &Path, body: impl FnOnce() + Send + 'static) -> bool {
        let path = path.to_path_buf();
        std::thread::Builder::new()
            .name(test.to_string())
            .spawn(move || {
                note(|l| l.path = path);
                body();
            })
            .expect("spawn")
            .join()
            .is_err()
    }

    #[test]
    fn each_test_thread_leaves_one_row_with_its_verdict_when_it_ends() {
        let dir = crate::common::temp_dir("ledger", "rows");
        let path = dir.join("summary.tsv");
        let boots = |crashes| Tries {
            boots: 1 + crashes,
            crashes,
            hangs: 0,
        };
        assert!(!in_test_thread("vm::passes", &path, move || {
            note(|l| l.add(boots(1)));
            note(|l| l.remeasured += 2);
        }));
        assert!(in_test_thread("vm::fails", &path, move || {
            note(|l| l.add(boots(0)));
            panic!("an expected panic: the ledger must say FAIL");
        }));
        assert!(!in_test_thread("vm::too_slow", &path, move || {
            note(|l| l.add(boots(0)));
            note(|l| l.timing_not_judged = true);
        }));
        // booted nothing (a unit test of the harness): no row
        assert!(!in_test_thread("vm::no_boot", &path, || note(|l| l
            .remeasured +=
            1)));
        let text = std::fs::read_to_string(&path).expect("summary.tsv");
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
        let cut: Vec<Vec<&str>> = rows.iter().map(|r| r[..6].to_vec()).collect();
        assert_eq!(
            cut,
            [
                vec!["test", "boots", "crashes", "hangs", "remeasured", "verdict"],
                vec!["vm::passes", "2", "1", "0", "2", "pass"],
                vec!["vm::fails", "1", "0", "0", "0", "FAIL"],
                vec!["vm::too_slow", "1", "0", "0", "0", "pass-timing-not-judged"],
            ]
        );
        assert_eq!(rows[0][6], "wall_s");
        for r in &rows[1..] {
            assert!(
                r[6].parse::<f64>().is_ok_and(|s| s < 60.0),
                "wall_s {}",
                r[6]
            );
        }
        // the failed test's message, and only its, beside the table
        let failures = std::fs::read_to_string(failures_path(&path)).expect("failures.txt");
        assert!(
            failures.starts_with("--- vm::fails\nan expected panic: the ledger must say FAIL at ")
                && failures.lines().filter(|l| l.starts_with("--- ")).count() == 1,
            "{failures}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failure_s_digest_keeps_its_head_and_cuts_long_lines() {
        let long = "x".repeat(1000);
        let text = format!("failed checks:\n  {long}\n{}", "  more\n".repeat(60));
        let d = digest(&text);
        let lines: Vec<&str> = d.lines().collect();
        assert_eq!(lines[0], "failed checks:");
        assert_eq!(lines[1], format!("  {} [...]", &long[..398]));
        assert_eq!(lines.len(), 41, "40 lines and the note");
        assert_eq!(lines[40], "[... more lines in the test's log]");
        assert_eq!(digest("one line"), "one line");
    }

    #[test]
    fn rows_appended_at_once_stay_whole_under_one_header() {
        let dir = crate::common::temp_dir("ledger", "append");
        let path = dir.join("summary.tsv");
        let writers: Vec<_> = (0..8)
            .map(|k| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let row = format!("t{k}\t{}\n", "x".repeat(2000));
                    for _ in 0..50 {
                        append_row(&path, &row).expect("append");
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        let text = std::fs::read_to_string(&path).expect("summary.tsv");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER.trim_end());
        assert_eq!(lines.len(), 1 + 8 * 50);
        for l in &lines[1..] {
            let (test, xs) = l.split_once('\t').expect("a tab");
            assert!(
                test.len() == 2 && xs.len() == 2000 && !xs.contains('t'),
                "{l:.40}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
