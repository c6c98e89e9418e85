//! The command a reproducer's `run it:` line starts stalemate with: the path this
//! process was started as, not the binary the kernel reports. On Linux
//! `std::env::current_exe()` reads `/proc/self/exe`, which names a binary replaced while
//! it runs (`cargo build` during an hour-long explore) `…/stalemate (deleted)` — a line a
//! shell cannot run. The path it was started as names the binary that is there now.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// How this process was started, as a shell would run it again: `argv[0]` made absolute
/// when it names a path (the working directory is the one at start: stalemate never
/// changes it), as it is when it is a bare name (`$PATH` found it, and will again).
pub fn stalemate() -> String {
    match std::env::args_os().next() {
        Some(arg0) => command(&arg0, std::env::current_dir().ok().as_deref()),
        None => "stalemate".into(),
    }
}

fn command(arg0: &OsStr, cwd: Option<&Path>) -> String {
    let path = Path::new(arg0);
    let names_a_path = path.components().count() > 1 || path.is_absolute();
    if !names_a_path || path.as_os_str().is_empty() {
        return path.display().to_string();
    }
    let joined = match cwd {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    };
    // `./target/release/stalemate` from /work is /work/target/release/stalemate, not
    // /work/./target/…; `..` is kept (a symlinked directory makes it mean something).
    let clean: PathBuf = joined
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    clean.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_stays_for_path_to_find() {
        assert_eq!(
            command(OsStr::new("stalemate"), Some(Path::new("/w"))),
            "stalemate"
        );
    }

    #[test]
    fn a_relative_path_is_made_absolute_from_where_it_started() {
        assert_eq!(
            command(
                OsStr::new("./target/release/stalemate"),
                Some(Path::new("/work/main"))
            ),
            "/work/main/target/release/stalemate"
        );
        assert_eq!(
            command(
                OsStr::new("../bin/stalemate"),
                Some(Path::new("/work/main"))
            ),
            "/work/main/../bin/stalemate"
        );
    }

    #[test]
    fn an_absolute_path_is_kept_as_it_was_given() {
        assert_eq!(
            command(
                OsStr::new("/opt/stalemate/bin/stalemate"),
                Some(Path::new("/tmp"))
            ),
            "/opt/stalemate/bin/stalemate"
        );
    }

    #[test]
    fn the_running_binary_is_named_by_the_path_it_was_started_as() {
        // The test harness was started by a path (cargo gives an absolute one): the
        // command names that file, which exists, and never says "(deleted)".
        let me = stalemate();
        assert!(!me.ends_with("(deleted)"), "{me}");
        assert!(Path::new(&me).is_file(), "{me} is not a file");
    }
}
