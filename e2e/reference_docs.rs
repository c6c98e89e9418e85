//! The reference generated from the code, through the real binary: `stalemate check
//! --schema` (the schedule file's JSON Schema) checked with a real JSON Schema validator
//! against every schedule the repository ships or shows, and `stalemate docs cli` (the
//! hidden verb that writes docs/cli.md).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// What `stalemate check --schema` prints, parsed.
fn schema() -> Value {
    let out = Command::new(common::BIN)
        .args(["check", "--schema"])
        .output()
        .expect("running stalemate check --schema");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("check --schema prints JSON")
}

/// A validator for one of the schema's definitions (`None`: the whole schedule).
fn validator(schema: &Value, def: Option<&str>) -> jsonschema::Validator {
    let schema = match def {
        None => schema.clone(),
        Some(d) => json!({
            "$schema": schema["$schema"],
            "$ref": format!("#/$defs/{d}"),
            "$defs": schema["$defs"],
        }),
    };
    jsonschema::draft202012::new(&schema).expect("a valid draft 2020-12 schema")
}

/// Every error, one a line, with where it is.
fn errors(v: &jsonschema::Validator, instance: &Value) -> String {
    v.iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading a directory of the repository") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

/// The ```json blocks of a Markdown file that parse as JSON.
fn json_blocks(md: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(md).expect("reading a Markdown file");
    text.split("```json\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .filter_map(|b| serde_json::from_str(b).ok())
        .collect()
}

#[test]
fn check_schema_is_draft_2020_12_and_covers_the_schedule() {
    let s = schema();
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(s["additionalProperties"], false, "unknown keys are errors");
    for def in [
        "Window",
        "Trigger",
        "Fault",
        "ClientMatcher",
        "OracleConfig",
        "GoDuration",
        "Verb",
    ] {
        assert!(s["$defs"][def].is_object(), "{def} missing");
    }
    let faults = s["$defs"]["Fault"].to_string();
    for fault in [
        "freeze",
        "lag",
        "coalesce",
        "relist",
        "errors",
        "latency",
        "partition",
        "rewind",
        "restart",
        "touch",
    ] {
        assert!(faults.contains(&format!("\"{fault}\"")), "fault {fault}");
    }
}

/// Each schedule under config/ and examples/ (and each whole schedule or window the README
/// and docs/ show) is valid by the schema: what `check` accepts, an editor must not flag.
#[test]
fn check_schema_accepts_every_shipped_schedule() {
    let s = schema();
    let (schedule, oracles, window) = (
        validator(&s, None),
        validator(&s, Some("OracleConfig")),
        validator(&s, Some("Window")),
    );
    let mut files = Vec::new();
    json_files(&common::repo("config"), &mut files);
    json_files(&common::repo("examples"), &mut files);
    assert!(files.len() >= 10, "{files:?}");
    for f in &files {
        let text = std::fs::read_to_string(f).expect("reading a schedule");
        let v: Value = serde_json::from_str(&text).expect("a JSON file");
        let keys: Vec<&str> = v
            .as_object()
            .map_or(vec![], |o| o.keys().map(String::as_str).collect::<Vec<_>>());
        // An --oracles file (explore) is the schedule's `oracles` section alone.
        let is_oracles = !keys.is_empty()
            && keys
                .iter()
                .all(|k| s["$defs"]["OracleConfig"]["properties"].get(*k).is_some());
        let v_for = if is_oracles { &oracles } else { &schedule };
        let errs = errors(v_for, &v);
        assert!(errs.is_empty(), "{}:\n{errs}", f.display());
    }
    let mut shown = 0;
    let mut mds = vec![common::repo("README.md")];
    for e in std::fs::read_dir(common::repo("docs")).expect("docs/") {
        let p = e.expect("a docs/ entry").path();
        if p.extension().is_some_and(|x| x == "md") {
            mds.push(p);
        }
    }
    for md in &mds {
        for block in json_blocks(md) {
            let v_for = if block.get("windows").is_some() {
                &schedule
            } else if block.get("fault").is_some() {
                &window
            } else {
                continue;
            };
            shown += 1;
            let errs = errors(v_for, &block);
            assert!(errs.is_empty(), "{}: {block}\n{errs}", md.display());
        }
    }
    assert!(shown >= 2, "the README's and docs/schedule.md's schedules");
}

/// A typo an editor must flag: an unknown fault, an unknown field, a duration that is
/// not one, an unknown verb.
#[test]
fn check_schema_rejects_what_check_rejects() {
    let s = schema();
    let v = validator(&s, None);
    let text = std::fs::read_to_string(common::repo("config/flux-f1.json")).expect("flux-f1");
    let good: Value = serde_json::from_str(&text).expect("JSON");
    assert!(v.is_valid(&good));
    let mut bad = good.clone();
    bad["windows"][0]["fault"] = json!({"frieze": {}});
    let errs = errors(&v, &bad);
    assert!(!errs.is_empty(), "an unknown fault passed");
    assert!(errs.contains("/windows/0/fault"), "{errs}");
    let mut bad = good.clone();
    bad["sead"] = json!(7);
    assert!(errors(&v, &bad).contains("sead"), "an unknown field passed");
    let mut bad = good.clone();
    bad["windows"][0]["duration"] = json!("soon");
    assert!(
        errors(&v, &bad).contains("/windows/0/duration"),
        "a duration that is not one passed"
    );
    let mut bad = good.clone();
    bad["windows"][0]["trigger"]["at"] = json!("1s");
    assert!(
        errors(&v, &bad).contains("/windows/0/trigger"),
        "two kinds of trigger passed"
    );
    let mut bad = good;
    bad["windows"][0]["fault"] = json!({"errors": {"status": 500, "verbs": ["creat"]}});
    let errs = errors(&v, &bad);
    assert!(
        errs.contains("/windows/0/fault"),
        "an unknown verb passed: {errs}"
    );
    assert!(errs.contains("creat"), "{errs}");
}

/// `stalemate docs cli` prints docs/cli.md as committed, and stays out of `--help`.
#[test]
fn docs_cli_prints_the_committed_page_and_is_hidden() {
    let out = Command::new(common::BIN)
        .args(["docs", "cli"])
        .output()
        .expect("running stalemate docs cli");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(common::repo("docs/cli.md")).expect("docs/cli.md");
    assert!(
        String::from_utf8_lossy(&out.stdout) == page,
        "docs/cli.md is stale; regenerate it with\n    \
         cargo run --bin stalemate -- docs cli > docs/cli.md"
    );
    for section in [
        "## stalemate run",
        "### stalemate explore job",
        "`--schedule <FILE>`",
    ] {
        assert!(page.contains(section), "{section}");
    }
    let help = Command::new(common::BIN)
        .arg("--help")
        .output()
        .expect("running stalemate --help");
    let help = String::from_utf8_lossy(&help.stdout);
    let listed = |verb: &str| {
        help.lines()
            .any(|l| l.trim_start().starts_with(&format!("{verb} ")))
    };
    assert!(listed("explore") && !listed("docs"), "{help}");
}
