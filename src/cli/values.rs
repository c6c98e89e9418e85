//! What flags' values are parsed with: the durations and sizes every command takes.
//! Apart from `mod.rs` (the command tree), so that a command's file uses them without
//! importing the tree that names it.

/// Parse a Go-style duration (`1500ms`, `2m`, `1h30m`) for flags and files.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    crate::k8s::duration::parse(s)
}

/// Parse a byte size for flags: `1048576`, `64KiB`, `64MiB`, `2GiB` (also `K`, `M`, `G`,
/// `KB`, `MB`, `GB`, all powers of 1024).
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size like 1048576, 64KiB, 64MiB or 2GiB"))?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "{s:?}: unknown unit {unit:?} (use KiB, MiB or GiB)"
            ));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes() {
        assert_eq!(super::parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(super::parse_bytes("8388608"), Ok(8388608));
        assert_eq!(super::parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(super::parse_bytes("0"), Ok(0));
        assert!(
            super::parse_bytes("12 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(super::parse_bytes("MiB").is_err());
        assert!(super::parse_bytes("99999999999999999999GiB").is_err());
    }
}
