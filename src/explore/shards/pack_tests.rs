use super::*;

/// An output with a summary, a finding, a failing and a passing trial.
fn output(dir: &Path) -> Summary {
    for sub in ["findings", "trials", "logs"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let long = format!("findings/01-{}.report.html", "x".repeat(120));
    let files = [
        ("findings/01-freeze.json", "{}".to_string()),
        (long.as_str(), "<html>".to_string()),
        ("trials/trial-001.trace.jsonl", "fail\n".repeat(1000)),
        ("logs/trial-001.log", "failing trial's log\n".into()),
    ];
    for (f, text) in &files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    // The passing trial's log does not compress: leaving it out is what makes room.
    let mut x: u32 = 1;
    let noise: Vec<u8> = (0..10_000)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    std::fs::write(dir.join("logs/trial-002.log"), noise).unwrap();
    let summary: Summary = serde_json::from_value(serde_json::json!({
        "schema": crate::explore::output::SCHEMA, "verdict": "findings", "controller": ["c"],
        "setup": [], "upstream": "envtest", "seconds": 1.0, "referenceSeconds": 1.0,
        "trialsRun": 2, "notExercised": 0, "trialsPerMinute": 1.0, "findings": [],
        "shard": {"index": 1, "count": 3, "seed": 1, "plans": 3, "taken": 1, "planDigest": ""},
        "trials": [
            {"id": 1, "plan": "p", "slug": "p", "round": 1, "rank": 1, "schedule": {},
             "verdict": "fail", "found": [], "seconds": 1.0, "ended": null, "at": 1.0,
             "files": ["logs/trial-001.log", "trials/trial-001.trace.jsonl"]},
            {"id": 2, "plan": "q", "slug": "q", "round": 1, "rank": 1, "schedule": {},
             "verdict": "pass", "found": [], "seconds": 1.0, "ended": null, "at": 2.0,
             "files": ["logs/trial-002.log"]}
        ],
    }))
    .unwrap();
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string(&summary).unwrap(),
    )
    .unwrap();
    summary
}

fn names(files: &[(String, Vec<u8>)]) -> Vec<&str> {
    files.iter().map(|(n, _)| n.as_str()).collect()
}

/// Packed among other log lines, it unpacks to the same files; and the system's tar
/// reads it too (a user can get it back by hand).
#[test]
fn a_packed_output_unpacks_from_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let s = output(dir.path());
    let (text, left) = pack(dir.path(), &s, LIMIT).unwrap();
    assert!(left.is_empty(), "{left:?}");
    assert!(
        text.starts_with("----- BEGIN stalemate explore output shard 1/3 (tar.gz, base64) -----\n")
    );
    assert!(
        text.lines()
            .all(|l| l.len() <= 76 || l.starts_with("-----"))
    );
    let log = format!("explore: 2 trials\nsome progress\n{text}");
    let files = unpack(&log, "pod-1").unwrap();
    let mut got = names(&files);
    got.sort();
    let long = format!("findings/01-{}.report.html", "x".repeat(120));
    let mut want = vec![
        "findings/01-freeze.json",
        long.as_str(),
        "logs/trial-001.log",
        "logs/trial-002.log",
        "summary.json",
        "trials/trial-001.trace.jsonl",
    ];
    want.sort();
    assert_eq!(got, want);
    for (n, data) in &files {
        assert_eq!(&std::fs::read(dir.path().join(n)).unwrap(), data, "{n}");
    }
    // As `kubectl logs --timestamps` saves it, with a stray log line in the middle.
    let mut lines: Vec<String> = log
        .lines()
        .map(|l| format!("2026-11-28T10:00:00.123456789Z {l}"))
        .collect();
    lines.insert(5, "2026-11-28T10:00:01Z WARN rustls: something".into());
    assert_eq!(unpack(&lines.join("\n"), "pod-1").unwrap(), files);
    // By hand: base64 -d | tar xz.
    let gz = base64::engine::general_purpose::STANDARD
        .decode(
            text.lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<String>(),
        )
        .unwrap();
    let by_hand = tempfile::tempdir().unwrap();
    std::fs::write(by_hand.path().join("a.tar.gz"), gz).unwrap();
    let st = std::process::Command::new("tar")
        .args(["xzf", "a.tar.gz"])
        .current_dir(by_hand.path())
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(
        std::fs::read_to_string(by_hand.path().join(&long)).unwrap(),
        "<html>"
    );
}

/// Too big for the log: the passing trials' output goes first, then the failing
/// trials', never the summary and findings; what is left out is listed in the archive.
#[test]
fn what_does_not_fit_is_left_out_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let s = output(dir.path());
    let (full, _) = pack(dir.path(), &s, LIMIT).unwrap();
    // Room for everything but the passing trial's log.
    let (text, left) = pack(dir.path(), &s, full.len() - 5000).unwrap();
    assert_eq!(left, ["logs/trial-002.log"]);
    let files = unpack(&text, "pod").unwrap();
    let note = files
        .iter()
        .find(|(n, _)| n == "logs/archive-left-out.txt")
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&note.1), "logs/trial-002.log\n");
    // No room at all: the summary and findings still.
    let (text, left) = pack(dir.path(), &s, 10).unwrap();
    assert_eq!(left.len(), 3, "{left:?}");
    let files = unpack(&text, "pod").unwrap();
    assert!(names(&files).contains(&"summary.json"));
    assert!(!names(&files).contains(&"trials/trial-001.trace.jsonl"));
}

#[test]
fn a_cut_or_foreign_log_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let s = output(dir.path());
    let (text, _) = pack(dir.path(), &s, LIMIT).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let no_begin = lines[1..].join("\n");
    assert!(
        unpack(&no_begin, "p")
            .unwrap_err()
            .to_string()
            .contains("rotated")
    );
    let no_end = lines[..lines.len() - 1].join("\n");
    assert!(
        unpack(&no_end, "p")
            .unwrap_err()
            .to_string()
            .contains("never ends")
    );
    let e = unpack("starting\nerror: boom\n", "p")
        .unwrap_err()
        .to_string();
    assert!(e.contains("did not finish") && e.contains("boom"), "{e}");
    let between = |body: &str| format!("{}\n{body}\n{}", lines[0], lines[lines.len() - 1]);
    let e = unpack(&between("A"), "p").unwrap_err().to_string();
    assert!(e.contains("not base64"), "{e}");
    let e = format!("{:#}", unpack(&between("QUJD"), "p").unwrap_err());
    assert!(e.contains("not gzip"), "{e}");
}

/// A tar whose entry would land outside the output is refused, whatever wrote it.
#[test]
fn an_entry_outside_the_output_is_refused() {
    for bad in ["../etc/passwd", "/etc/passwd", "findings/../../x", ""] {
        let mut tar = Vec::new();
        tar_entry(&mut tar, bad, b"x").unwrap();
        tar.extend([0; 1024]);
        let e = read_tar(&tar).unwrap_err().to_string();
        assert!(e.contains("not a path inside"), "{bad}: {e}");
    }
    // A header claiming more than there is.
    let mut tar = header("a", 5000, b'0').to_vec();
    tar.extend([0; 512]);
    assert!(read_tar(&tar).is_err());
}
