//! `resource.Quantity` as the apiserver stores it: the string a protobuf body carries,
//! parsed as `ParseQuantity` parses it and written as `MarshalJSON` writes it
//! (k8s.io/apimachinery `pkg/api/resource/quantity.go`, `amount.go`, `suffix.go`): `0.5`
//! becomes `500m`, `1024Mi` `1Gi`, `1.5n` rounds up to `2n`, a binary quantity is capped
//! at 2^63-1 — and a string ParseQuantity calls canonical is kept as written (`+1Ki`,
//! `5.`), quirks included. `quantities.json` (made by `gen/`) holds Go's answers for
//! 3,000 strings; the test below checks every one.

use super::decoded::DecodeError;

/// A magnitude: decimal digits (most significant first, no leading zero; empty is 0)
/// times ten to `exp`.
#[derive(Debug, Clone, PartialEq)]
struct Dec {
    digits: Vec<u8>,
    exp: i64,
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    DecimalExponent,
    DecimalSi,
    BinarySi,
}

/// The quantity's JSON string, or why Go refuses it.
pub(super) fn canonical(s: &str) -> Result<String, DecodeError> {
    parse(s).map_err(|why| DecodeError::Invalid(format!("quantity {s:?}: {why}")))
}

const FORMAT: &str = "quantities must match the regular expression \
                      '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// `parseQuantityString`'s pieces.
struct Parts<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
    /// Whether the number as written (its `value`) has a digit at all (`Pi` has none).
    has_digit: bool,
}

fn parse(s: &str) -> Result<String, &'static str> {
    if s.is_empty() {
        return Err(FORMAT);
    }
    if s == "0" {
        return Ok(s.into());
    }
    let p = pieces(s)?;
    let (base, exponent, format) =
        interpret(p.suffix).ok_or("unable to parse quantity's suffix")?;
    match fast_path(&p, exponent, format) {
        Some(true) => return Ok(s.into()),
        Some(false) => {}
        // The slow path parses the number as an inf.Dec, which needs a digit.
        None if !p.has_digit => return Err("quantities must be numeric"),
        None => {}
    }
    let mut d = Dec {
        digits: digits_of(&format!("{}{}", p.num, p.denom)),
        exp: -(p.denom.len() as i64),
    };
    match base {
        10 => d.exp += i64::from(exponent),
        _ => (0..exponent).for_each(|_| d.digits = times(&d.digits, 2, 0)),
    }
    // Round up (away from zero) to nanos: asking for some resource gets some.
    if d.exp < -9 && !d.digits.is_empty() {
        d = ceil_to(&d, -9);
    }
    let mut format = format;
    if format == Format::BinarySi {
        if cmp(&d, &int(i64::MAX as u64)).is_gt() {
            d = int(i64::MAX as u64);
        }
        if !d.digits.is_empty() && cmp(&d, &int(1)).is_lt() {
            format = Format::DecimalSi;
        }
    }
    Ok(canonicalize(p.positive, d, format))
}

/// Go's `parseQuantityString`: sign, leading zeros, digits, a fraction, suffix letters,
/// then an optional sign and digits; the suffix is whatever follows the number.
fn pieces(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut positive = true;
    match b[0] {
        b'-' => (positive, pos) = (false, 1),
        b'+' => pos = 1,
        _ => {}
    }
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    let zero = Parts {
        positive,
        num: "0",
        denom: "",
        suffix: "",
        has_digit: true,
    };
    if pos >= b.len() {
        return Ok(zero);
    }
    let start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    if pos >= b.len() {
        return Ok(Parts { num, ..zero });
    }
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
        if pos >= b.len() {
            return Ok(Parts { num, denom, ..zero });
        }
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && matches!(b[pos], b'+' | b'-') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < b.len() {
        return Err(FORMAT);
    }
    let has_digit = s[..suffix_start].bytes().any(|c| c.is_ascii_digit());
    Ok(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
        has_digit,
    })
}

/// `quantitySuffixer.interpret`: (base, exponent, format).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSi));
    let bin = |e| Some((2, e, Format::BinarySi));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        _ if suffix.len() > 1 && suffix.starts_with(['e', 'E']) => {
            // strconv.ParseInt(.., 64), then int32(...): Go wraps.
            let e: i64 = suffix[1..].parse().ok()?;
            Some((10, e as i32, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// ParseQuantity's fast path (an int64 at a scale of nanos or more): `None` when it
/// does not apply; else whether it keeps the caller's string, which it does when that
/// looks canonical already (a multiple-of-three scale without trailing `000`, or a
/// binary suffix on a number not divisible by 8).
fn fast_path(p: &Parts, exponent: i32, format: Format) -> Option<bool> {
    let digits = (p.num.len() + p.denom.len()) as i64;
    let (precision, mut scale, shift) = match format {
        Format::BinarySi if p.denom.is_empty() => {
            let e = i64::from(exponent);
            (
                15 - p.num.len() as i64 - (e as f32 * 3.0 / 10.0) as i64 - 1,
                0,
                e,
            )
        }
        Format::BinarySi => return None,
        _ => (18 - digits, i64::from(exponent), 0),
    };
    if precision < 0 {
        return None;
    }
    scale -= p.denom.len() as i64;
    let shifted = format!("{}{}", p.num, p.denom);
    let value = shifted.parse::<i64>().ok()?;
    if scale < -9 || shift > 62 {
        return None;
    }
    value.checked_mul(1i64 << shift)?;
    Some(match format {
        Format::BinarySi => exponent % 10 == 0 && value & 7 != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    })
}

/// `Quantity.String()` of a parsed quantity (`CanonicalizeBytes`).
fn canonicalize(positive: bool, d: Dec, format: Format) -> String {
    if d.digits.is_empty() {
        return "0".into();
    }
    let sign = if positive { "" } else { "-" };
    let mut format = format;
    if format == Format::BinarySi {
        let small = cmp(&d, &int(1024)).is_lt();
        if small || !is_integer(&d) {
            format = Format::DecimalSi;
        }
    }
    if format == Format::BinarySi {
        // AsCanonicalBase1024Bytes: factors of 1024 into the suffix.
        let mut v = as_integer(&d);
        let mut k = 0;
        loop {
            let (q, r) = divide(&v, 1024);
            if r != 0 || q.is_empty() {
                break;
            }
            v = q;
            k += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
            .get(k)
            .copied()
            .unwrap_or("");
        return format!("{sign}{}{suffix}", text(&v));
    }
    // AsCanonicalBytes: factors of ten into the exponent, then down to a multiple of 3.
    let (mut digits, mut exp) = (d.digits, d.exp);
    while digits.len() > 1 && digits.last() == Some(&0) {
        digits.pop();
        exp += 1;
    }
    let exp32 = exp as i32;
    let mut e = exp32;
    while e % 3 != 0 {
        digits.push(0);
        e -= 1;
    }
    let suffix = match format {
        Format::DecimalExponent if e == 0 => String::new(),
        Format::DecimalExponent => format!("e{e}"),
        // A decimal exponent no SI suffix names writes none (Go does the same).
        _ => match e {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        }
        .to_string(),
    };
    format!("{sign}{}{suffix}", text(&digits))
}

fn digits_of(s: &str) -> Vec<u8> {
    let d: Vec<u8> = s
        .bytes()
        .map(|c| c - b'0')
        .skip_while(|c| *c == 0)
        .collect();
    d
}

fn int(v: u64) -> Dec {
    Dec {
        digits: digits_of(&v.to_string()),
        exp: 0,
    }
}

fn text(digits: &[u8]) -> String {
    if digits.is_empty() {
        return "0".into();
    }
    digits.iter().map(|d| char::from(b'0' + d)).collect()
}

/// `digits × m + add`.
fn times(digits: &[u8], m: u32, add: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(digits.len() + 2);
    let mut carry = add;
    for d in digits.iter().rev() {
        let v = u32::from(*d) * m + carry;
        out.push((v % 10) as u8);
        carry = v / 10;
    }
    while carry > 0 {
        out.push((carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    digits_of(&text(&out))
}

/// Long division by a small number: (quotient, remainder).
fn divide(digits: &[u8], by: u32) -> (Vec<u8>, u32) {
    let (mut q, mut r) = (Vec::with_capacity(digits.len()), 0u32);
    for d in digits {
        let v = r * 10 + u32::from(*d);
        q.push((v / by) as u8);
        r = v % by;
    }
    (q.into_iter().skip_while(|d| *d == 0).collect(), r)
}

/// `d` rounded away from zero to `10^exp` (`exp` above `d.exp`).
fn ceil_to(d: &Dec, exp: i64) -> Dec {
    let drop = usize::try_from(exp - d.exp).unwrap_or(usize::MAX);
    if drop >= d.digits.len() {
        return Dec {
            digits: vec![1],
            exp,
        };
    }
    let (keep, gone) = d.digits.split_at(d.digits.len() - drop);
    let up = u32::from(gone.iter().any(|g| *g != 0));
    Dec {
        digits: times(keep, 1, up),
        exp,
    }
}

fn is_integer(d: &Dec) -> bool {
    let trailing = d.digits.iter().rev().take_while(|x| **x == 0).count() as i64;
    d.exp >= 0 || trailing >= -d.exp
}

/// An integer `Dec` as plain digits (exponent applied).
fn as_integer(d: &Dec) -> Vec<u8> {
    let mut digits = d.digits.clone();
    match d.exp {
        e if e >= 0 => digits.extend(std::iter::repeat_n(0, e.min(4096) as usize)),
        e => digits.truncate(digits.len().saturating_sub(e.unsigned_abs() as usize)),
    }
    digits
}

/// Compare two magnitudes.
fn cmp(a: &Dec, b: &Dec) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a.digits.is_empty(), b.digits.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    // Orders of magnitude first: the count of digits before the point.
    let (ma, mb) = (a.digits.len() as i64 + a.exp, b.digits.len() as i64 + b.exp);
    if ma != mb {
        return ma.cmp(&mb);
    }
    let n = a.digits.len().max(b.digits.len());
    let pad = |d: &[u8]| -> Vec<u8> {
        let mut v = d.to_vec();
        v.resize(n, 0);
        v
    };
    pad(&a.digits).cmp(&pad(&b.digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every string `gen/` asked Go about, and Go's answer (null: refused).
    #[test]
    fn as_go_parses_and_writes_them() {
        let vectors: Vec<(String, Option<String>)> =
            serde_json::from_str(include_str!("quantities.json")).expect("quantities.json");
        assert!(vectors.len() > 3_000, "{}", vectors.len());
        let wrong: Vec<String> = (vectors.iter())
            .filter_map(|(input, want)| {
                let got = canonical(input).ok();
                (got != *want).then(|| format!("{input:?}: Go {want:?}, here {got:?}"))
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "{} differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}
