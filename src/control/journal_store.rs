//! The control journal's file (`RUN_DIR/control-state.json`): written atomically, read with a
//! size cap, set aside. What it holds and how it is parsed is the core's
//! (`tt_core::control::journal`, re-exported here with these three as `control::journal`).

use std::io::Read;
use std::path::Path;
use tt_core::control::journal::{parse, path, State, MAX_FILE_BYTES};

/// Writes the state atomically (module doc), creating `run_dir` (0700) if needed.
pub fn store(run_dir: &Path, state: &State) -> Result<(), String> {
    let file = path(run_dir);
    let fail = |e: &dyn std::fmt::Display| format!("{}: cannot write: {e}", file.display());
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(run_dir)
            .map_err(|e| fail(&e))?;
    }
    let text = serde_json::to_vec_pretty(state).map_err(|e| fail(&e))?;
    crate::energy::journal_file::store_atomic(&file, &text).map_err(|e| fail(&e))
}

/// Reads the state under `run_dir`: `Ok(None)` when there is none. Refused (naming the file and
/// the rule) when it is larger than [`MAX_FILE_BYTES`], not JSON of this format, or not
/// a regular file.
pub fn load(run_dir: &Path) -> Result<Option<State>, String> {
    let file = path(run_dir);
    let meta = match std::fs::symlink_metadata(&file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    if !meta.file_type().is_file() {
        return Err(format!("{}: is not a regular file", file.display()));
    }
    let mut text = String::new();
    std::fs::File::open(&file)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| format!("{}: {e}", file.display()))?;
    parse(&file, &text).map(Some)
}

/// A start without `--resume`: an existing state is renamed to `control-state.json.old`
/// (replacing an older one); returns how many requests it held, if there was one.
pub fn set_aside(run_dir: &Path) -> Result<Option<usize>, String> {
    let found = load(run_dir)?;
    let Some(state) = found else {
        return Ok(None);
    };
    let file = path(run_dir);
    std::fs::rename(&file, file.with_extension("json.old"))
        .map_err(|e| format!("{}: setting it aside: {e}", file.display()))?;
    Ok(Some(state.requests.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use tt_core::control::journal::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("scx_tt-cj-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_state_round_trips_and_bad_files_are_refused_naming_the_rule() {
        let d = dir("rt");
        assert_eq!(load(&d), Ok(None), "no run dir: nothing to resume");
        let s = State {
            format: FORMAT.into(),
            table: "/p/plan.json".into(),
            requests: vec![r#"{"op":"set_policy","policy":"dvfs"}"#.into()],
        };
        store(&d, &s).expect("store");
        assert_eq!(load(&d), Ok(Some(s.clone())));
        // no temporary is left behind
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(FILE)]);
        for (text, rule) in [
            ("{", "EOF"),
            (
                r#"{"format":"x","table":"t","requests":[]}"#,
                "format = \"x\"",
            ),
            (
                r#"{"format":"scx_tt control state v1","table":"t","requests":[],"more":1}"#,
                "unknown field `more`",
            ),
        ] {
            std::fs::write(path(&d), text).unwrap();
            let e = load(&d).expect_err(text);
            assert!(e.contains(FILE) && e.contains(rule), "{text}: {e}");
        }
        let big = vec![b' '; MAX_FILE_BYTES as usize + 1];
        std::fs::write(path(&d), big).unwrap();
        assert!(load(&d).unwrap_err().contains("larger than"));
        // set aside: the state moves to .old, nothing is left to resume
        store(&d, &s).expect("store");
        assert_eq!(set_aside(&d), Ok(Some(1)));
        assert_eq!(load(&d), Ok(None));
        assert!(path(&d).with_extension("json.old").exists());
        assert_eq!(set_aside(&d), Ok(None));
        let _ = std::fs::remove_dir_all(&d);
    }
}
