//! How a shard's output leaves its pod (`explore job`, `explore gather`): written to the
//! pod's log at the end — standard output, between two marker lines — as a gzip'd tar in
//! base64. Reading it needs nothing but the log API `kubectl logs` uses: no volume, no
//! object store, no RBAC inside the pod; and by hand, `sed '1,/BEGIN/d;/END/,$d' LOG |
//! base64 -d | tar xz` gets it back.
//!
//! **The log's size.** Kubelet rotates a container's log at 10 MiB by default
//! (`containerLogMaxSize`), and the log API serves only the newest file: an archive
//! bigger than that would lose its beginning. So the archive is kept under `LIMIT` of
//! text: the summary and the findings (reproducers, and their trials' traces, reports
//! and controller output) always; then the other failing trials' files and the
//! references'; then every other run's controller output — the last two left out, in
//! that order, when they would not fit, and said so in `logs/archive-left-out.txt`.

use std::io::{Read, Write};
use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine;

use crate::explore::output::Summary;

/// Base64 text at most this long: room under kubelet's 10 MiB for explore's own lines.
pub const LIMIT: usize = 8 << 20;
const BEGIN: &str = "----- BEGIN stalemate explore output";
const END: &str = "----- END stalemate explore output";

/// What a shard's output packs into: files relative to it, most wanted first.
fn tiers(root: &Path, s: &Summary) -> [Vec<String>; 3] {
    let mut first = vec!["summary.json".to_string()];
    first.extend(list(root, "findings"));
    let mut second: Vec<String> = s
        .trials
        .iter()
        .filter(|t| t.verdict == crate::explore::record::TrialVerdict::Fail)
        .flat_map(|t| t.files.iter().cloned())
        .chain(s.reference_files.iter().cloned())
        .filter(|f| !first.contains(f))
        .collect();
    second.dedup();
    let third = list(root, "trials")
        .into_iter()
        .chain(list(root, "logs"))
        .filter(|f| !first.contains(f) && !second.contains(f))
        .collect();
    [first, second, third]
}

/// The files of `root/sub`, as `sub/NAME`, sorted.
fn list(root: &Path, sub: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join(sub))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| format!("{sub}/{}", e.file_name().to_string_lossy()))
        .collect();
    v.sort();
    v
}

/// The output in `root` as the text a pod prints at its end: marker lines around the
/// archive, which holds as much as fits in `limit` (`LIMIT`). Returns it and what was
/// left out.
pub fn pack(root: &Path, s: &Summary, limit: usize) -> Result<(String, Vec<String>)> {
    let label = match &s.shard {
        Some(r) => format!("shard {}/{}", r.index, r.count),
        None => "unsharded".into(),
    };
    let tiers = tiers(root, s);
    let mut encoded = String::new();
    let mut left_out = Vec::new();
    for keep in (1..=3).rev() {
        left_out = tiers[keep..].concat();
        let mut files: Vec<String> = tiers[..keep].concat();
        if !left_out.is_empty() {
            files.push("logs/archive-left-out.txt".into());
        }
        let note = left_out.join("\n") + "\n";
        encoded = base64::engine::general_purpose::STANDARD.encode(archive(root, &files, &note)?);
        if encoded.len() <= limit {
            break;
        }
    }
    let mut text = format!("{BEGIN} {label} (tar.gz, base64) -----\n");
    for chunk in encoded.as_bytes().chunks(76) {
        text.push_str(&String::from_utf8_lossy(chunk));
        text.push('\n');
    }
    text.push_str(&format!("{END} {label} -----\n"));
    Ok((text, left_out))
}

/// A gzip'd tar of `files` under `root` (`logs/archive-left-out.txt` is `note`; a file gone since it
/// was listed is skipped).
fn archive(root: &Path, files: &[String], note: &str) -> Result<Vec<u8>> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for f in files {
        let data = if f == "logs/archive-left-out.txt" {
            note.as_bytes().to_vec()
        } else {
            match std::fs::read(root.join(f)) {
                Ok(d) => d,
                Err(_) => continue,
            }
        };
        tar_entry(&mut gz, f, &data)?;
    }
    gz.write_all(&[0; 1024])?;
    Ok(gz.finish()?)
}

/// One regular file of a tar (ustar; a name over 100 bytes as GNU tar writes it, an
/// `L` entry before it).
fn tar_entry(w: &mut impl Write, name: &str, data: &[u8]) -> Result<()> {
    if name.len() > 100 {
        let mut long = name.as_bytes().to_vec();
        long.push(0);
        w.write_all(&header("././@LongLink", long.len(), b'L'))?;
        write_padded(w, &long)?;
    }
    w.write_all(&header(name, data.len(), b'0'))?;
    write_padded(w, data)
}

fn write_padded(w: &mut impl Write, data: &[u8]) -> Result<()> {
    w.write_all(data)?;
    let pad = (512 - data.len() % 512) % 512;
    w.write_all(&vec![0; pad])?;
    Ok(())
}

fn header(name: &str, size: usize, kind: u8) -> [u8; 512] {
    let mut h = [0u8; 512];
    let n = name.as_bytes();
    h[..n.len().min(100)].copy_from_slice(&n[..n.len().min(100)]);
    let octal = |h: &mut [u8; 512], at: usize, width: usize, v: u64| {
        let s = format!("{v:0w$o}", w = width - 1);
        h[at..at + width - 1].copy_from_slice(s.as_bytes());
    };
    octal(&mut h, 100, 8, 0o644);
    octal(&mut h, 108, 8, 0);
    octal(&mut h, 116, 8, 0);
    octal(&mut h, 124, 12, size as u64);
    octal(&mut h, 136, 12, 0);
    h[148..156].copy_from_slice(b"        ");
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    let sum: u64 = h.iter().map(|b| u64::from(*b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

/// The archive in a pod's log (`name` says which, for errors): its files, each path
/// relative and inside the output.
pub fn unpack(log: &str, name: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let lines: Vec<&str> = log.lines().map(untimed).collect();
    let begin = lines.iter().rposition(|l| l.starts_with(BEGIN));
    let end = lines.iter().rposition(|l| l.starts_with(END));
    let (b, e) = match (begin, end) {
        (Some(b), Some(e)) if b < e => (b, e),
        (None, Some(_)) => bail!(
            "{name}: the archive's end is there but not its beginning: the log was rotated (kubelet keeps 10 MiB of a container's log by default) or cut"
        ),
        (Some(_), _) => bail!(
            "{name}: the archive begins but never ends: the log was cut, or the pod is still writing it"
        ),
        (None, None) => {
            let tail: Vec<&str> = lines.iter().rev().take(3).rev().copied().collect();
            bail!(
                "{name}: no explore output in it: the explore did not finish (it ends: {:?})",
                tail.join(" / ")
            )
        }
    };
    // A line of something else written meanwhile (a log line on standard error lands
    // in the same container log) is not the archive's: base64 has no spaces or colons.
    let text: String = lines[b + 1..e]
        .iter()
        .map(|l| l.trim())
        .filter(|l| {
            l.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/' || c == b'=')
        })
        .collect();
    let gz = base64::engine::general_purpose::STANDARD
        .decode(text.as_bytes())
        .map_err(|err| anyhow::anyhow!("{name}: the archive is not base64: {err}"))?;
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut tar)
        .with_context(|| format!("{name}: the archive is not gzip"))?;
    read_tar(&tar).with_context(|| format!("{name}: the archive is not a tar explore wrote"))
}

/// A log line without the RFC 3339 time `kubectl logs --timestamps` puts before it.
fn untimed(line: &str) -> &str {
    match line.split_once(' ') {
        Some((t, rest))
            if t.len() >= 20
                && t.as_bytes()[..4].iter().all(u8::is_ascii_digit)
                && t.as_bytes()[4] == b'-'
                && t.contains('T') =>
        {
            rest
        }
        _ => line,
    }
}

/// The regular files of a tar.
fn read_tar(tar: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    let mut at = 0;
    let mut long: Option<String> = None;
    while at + 512 <= tar.len() {
        let h = &tar[at..at + 512];
        if h.iter().all(|b| *b == 0) {
            break;
        }
        let size = octal(&h[124..136]).context("a header's size")?;
        let start = at + 512;
        let data = tar
            .get(start..start.saturating_add(size))
            .context("an entry longer than the archive")?;
        at = start + size.div_ceil(512) * 512;
        let name = match long.take() {
            Some(n) => n,
            None => {
                let field = |r: std::ops::Range<usize>| {
                    let f = &h[r];
                    let n = f.iter().position(|b| *b == 0).unwrap_or(f.len());
                    String::from_utf8_lossy(&f[..n]).into_owned()
                };
                let (prefix, name) = (field(345..500), field(0..100));
                if prefix.is_empty() {
                    name
                } else {
                    format!("{prefix}/{name}")
                }
            }
        };
        match h[156] {
            b'L' => {
                long = Some(
                    String::from_utf8_lossy(data)
                        .trim_end_matches('\0')
                        .to_string(),
                )
            }
            b'0' | 0 => {
                let safe = !name.is_empty()
                    && !name.starts_with('/')
                    && name
                        .split('/')
                        .all(|c| !c.is_empty() && c != "." && c != "..");
                if !safe {
                    bail!("{name:?} is not a path inside an explore output");
                }
                files.push((name, data.to_vec()));
            }
            _ => {}
        }
    }
    Ok(files)
}

fn octal(field: &[u8]) -> Result<usize> {
    let s = String::from_utf8_lossy(field);
    let s = s.trim_matches(|c: char| c == '\0' || c == ' ');
    if s.is_empty() {
        return Ok(0);
    }
    usize::from_str_radix(s, 8).map_err(|_| anyhow::anyhow!("{s:?} is not an octal number"))
}

#[cfg(test)]
#[path = "pack_tests.rs"]
mod tests;
