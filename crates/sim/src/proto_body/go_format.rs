//! Times and durations as Go writes and reads them: `time.Time.Format(time.RFC3339)`
//! (and metav1's `RFC3339Micro`), `time.Duration.String()`, `time.ParseDuration`.
//! Exact for every int64 of seconds, years below 0 and above 9999 included (Go's
//! `appendInt(year, 4)`: `-0001`, `10000`).

/// `2006-01-02T15:04:05Z`, or with `micros` `2006-01-02T15:04:05.000000Z`, in UTC.
pub(super) fn rfc3339(secs: i64, micros: Option<u32>) -> String {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let year = if y < 0 {
        format!("-{:04}", y.unsigned_abs())
    } else {
        format!("{y:04}")
    };
    let frac = micros.map_or(String::new(), |u| format!(".{u:06}"));
    format!(
        "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}{frac}Z",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

/// Howard Hinnant's `civil_from_days`: (year, month, day) of days since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = i128::from(z) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i128::from(m <= 2);
    (
        y.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64,
        m,
        d,
    )
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = y - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds and nanoseconds of an RFC 3339 time (`Z` or `±hh:mm`), for the encoder.
pub(super) fn parse_rfc3339(s: &str) -> Option<(i64, u32)> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b.len() < 20
        || b.get(4) != Some(&b'-')
        || b.get(10).map(u8::to_ascii_uppercase) != Some(b'T')
    {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut nanos = 0u32;
    if let Some(f) = rest.strip_prefix('.') {
        let digits = f.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let mut padded = f[..digits.min(9)].to_string();
        while padded.len() < 9 {
            padded.push('0');
        }
        nanos = padded.parse().ok()?;
        rest = &f[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (oh * 3600 + om * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    Some((days * 86_400 + h * 3600 + mi * 60 + sec - offset, nanos))
}

/// `time.Duration(nanos).String()`: `1h2m3.5s`, `1.5ms`, `0s`.
pub(super) fn duration_string(nanos: i64) -> String {
    let neg = nanos < 0;
    let mut u = nanos.unsigned_abs();
    // Built backwards, as Go's `format` fills its buffer.
    let mut out: Vec<u8> = Vec::with_capacity(32);
    out.push(b's');
    if u < 1_000_000_000 {
        let prec = match u {
            0 => {
                out.push(b'0');
                return finish(out, false);
            }
            1..1_000 => {
                out.push(b'n');
                0
            }
            1_000..1_000_000 => {
                // "µ" (U+00B5), its two UTF-8 bytes backwards.
                out.extend_from_slice(&[0xb5, 0xc2]);
                3
            }
            _ => {
                out.push(b'm');
                6
            }
        };
        u = frac(&mut out, u, prec);
        int(&mut out, u);
    } else {
        u = frac(&mut out, u, 9);
        int(&mut out, u % 60);
        u /= 60;
        if u > 0 {
            out.push(b'm');
            int(&mut out, u % 60);
            u /= 60;
            if u > 0 {
                out.push(b'h');
                int(&mut out, u);
            }
        }
    }
    finish(out, neg)
}

fn finish(mut out: Vec<u8>, neg: bool) -> String {
    if neg {
        out.push(b'-');
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

/// Go's `fmtFrac`: the fraction v/10^prec without trailing zeros (nor the point when
/// it is 0), backwards; returns v/10^prec.
fn frac(out: &mut Vec<u8>, mut v: u64, prec: usize) -> u64 {
    let mut print = false;
    for _ in 0..prec {
        let digit = (v % 10) as u8;
        print = print || digit != 0;
        if print {
            out.push(b'0' + digit);
        }
        v /= 10;
    }
    if print {
        out.push(b'.');
    }
    v
}

fn int(out: &mut Vec<u8>, mut v: u64) {
    if v == 0 {
        out.push(b'0');
    }
    while v > 0 {
        out.push(b'0' + (v % 10) as u8);
        v /= 10;
    }
}

/// `time.ParseDuration`, for the encoder: `[-+]` then numbers with units (`h`, `m`, `s`,
/// `ms`, `us`, `µs`, `ns`), fractions allowed; `0` alone.
pub(super) fn parse_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .bytes()
            .take_while(|c| c.is_ascii_digit() || *c == b'.')
            .count();
        let value: f64 = rest.get(..n)?.parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii_digit() || *c == '.')
            .map_or(rest.len(), |(i, _)| i);
        let unit = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[u..];
        total += value * unit;
    }
    let total = total.round();
    Some(if neg { -total } else { total } as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_go_formats_them() {
        assert_eq!(rfc3339(0, None), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(893_826_795, None), "1998-04-29T05:13:15Z");
        assert_eq!(rfc3339(-62_135_596_801, None), "0000-12-31T23:59:59Z");
        assert_eq!(rfc3339(-62_198_755_200, None), "-0001-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(253_402_300_800, Some(5)),
            "10000-01-01T00:00:00.000005Z"
        );
        for secs in [0, 1, -1, 951_782_400, 4_102_444_800, -62_135_596_800] {
            assert_eq!(parse_rfc3339(&rfc3339(secs, None)), Some((secs, 0)));
        }
        assert_eq!(
            parse_rfc3339("2024-01-01T01:00:00.5+01:00"),
            Some((1_704_067_200, 500_000_000))
        );
        assert_eq!(parse_rfc3339("2024-01-01"), None);
    }

    #[test]
    fn durations_as_go_formats_them() {
        for (nanos, s) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (1_500_000, "1.5ms"),
            (1_000_000_000, "1s"),
            (3_723_500_000_000, "1h2m3.5s"),
            (-90_000_000_000, "-1m30s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ] {
            assert_eq!(duration_string(nanos), s);
            if nanos != i64::MIN {
                assert_eq!(parse_duration(s), Some(nanos), "{s}");
            }
        }
    }
}
