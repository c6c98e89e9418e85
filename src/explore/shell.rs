//! Command lines as a shell reads them: a reproducer's `run it` line, a sequence's
//! steps. A leaf: nothing of explore's below it.

/// An argv as one line a POSIX shell splits back into the same argv.
pub fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
