//! `resource.Quantity` in a protobuf body: its string, checked as `ParseQuantity` checks
//! it (k8s.io/apimachinery `pkg/api/resource/quantity.go`: sign, digits, a fraction, one
//! suffix of `n u m k M G T P E`, `Ki`…`Ei` or an exponent `e±N`) — a body Go would
//! refuse is refused.
//!
//! The string is kept as written. Go's JSON shows the canonical form (`0.5` as `500m`,
//! `1024Mi` as `1Gi`), but a Go client writes a Quantity to protobuf with that same
//! canonical `String()`, so for every client-go body the two are one; only a non-Go
//! client writing a non-canonical string by hand would see its own form stored.

use super::DecodeError;

/// The quantity as the apiserver stores it (see the module doc), or why Go refuses it.
pub fn canonical(s: &str) -> Result<String, DecodeError> {
    check(s).map_err(|why| DecodeError::Invalid(format!("quantity {s:?}: {why}")))?;
    Ok(s.to_string())
}

fn check(s: &str) -> Result<(), &'static str> {
    const FORMAT: &str = "quantities must match the regular expression \
                          '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    if s.is_empty() {
        return Err(FORMAT);
    }
    let b = s.as_bytes();
    let mut pos = usize::from(matches!(b[0], b'+' | b'-'));
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    pos = digits(pos);
    if b.get(pos) == Some(&b'.') {
        pos = digits(pos + 1);
    }
    let suffix = &s[pos..];
    // parseQuantityString: suffix letters, then an optional sign and digits.
    let letters = suffix
        .bytes()
        .take_while(|c| b"eEinumkKMGTP".contains(c))
        .count();
    let mut rest = &suffix[letters..];
    rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    if !rest.bytes().all(|c| c.is_ascii_digit()) {
        return Err(FORMAT);
    }
    let known = matches!(
        suffix,
        "" | "n"
            | "u"
            | "m"
            | "k"
            | "M"
            | "G"
            | "T"
            | "P"
            | "E"
            | "Ki"
            | "Mi"
            | "Gi"
            | "Ti"
            | "Pi"
            | "Ei"
    );
    let exponent = suffix
        .strip_prefix(['e', 'E'])
        .is_some_and(|e| e.parse::<i64>().is_ok());
    if !known && !exponent {
        return Err("unable to parse quantity's suffix");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_go_parses() {
        for ok in [
            "0", "1", "100m", "1.5Gi", "-1", "+2k", "1e3", "1E-3", ".5", "5.", "0.1Ki",
        ] {
            assert!(canonical(ok).is_ok(), "{ok}");
        }
        for bad in ["", "abc", "1x", "1Kib", "1e", "1e+", "--1", "1 Gi", "1.2.3"] {
            assert!(canonical(bad).is_err(), "{bad}");
        }
    }
}
