//! A real Prometheus (Debian's `prometheus`, installed by `.ci/run`) scraping a running
//! proxy: a freeze, a watch held by it, a hot loop — and PromQL over Prometheus's HTTP API
//! sees them. The alerting rules in `deploy/prometheus/` pass `promtool check` and
//! `promtool test`; the Grafana dashboard's queries parse and name metrics that exist.

#[path = "common/mod.rs"]
mod common;
use common::Kubectl;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{KillOnDrop, Proxy, Sim, repo, wait_for};
use serde_json::{Value, json};

fn promtool(args: &[&str], dir: &Path) -> (bool, String) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("promtool (Debian `prometheus`; .ci/run installs it)");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The rules file passes `promtool check rules` and its unit tests; the PrometheusRule
/// carries exactly the same groups.
#[test]
fn alerting_rules_check_and_pass_their_tests() {
    let dir = repo("deploy/prometheus");
    let (ok, out) = promtool(&["check", "rules", "stalemate-rules.yaml"], &dir);
    assert!(ok, "{out}");
    assert!(out.contains("SUCCESS: 4 rules found"), "{out}");
    let (ok, out) = promtool(&["test", "rules", "stalemate-rules.test.yaml"], &dir);
    assert!(ok, "{out}");
    let plain: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.join("stalemate-rules.yaml")).unwrap())
            .unwrap();
    let operator: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.join("prometheusrule.yaml")).unwrap())
            .unwrap();
    assert_eq!(operator["kind"], "PrometheusRule");
    assert_eq!(operator["spec"]["groups"], plain["groups"]);
}

/// Every PromQL expression of the dashboard.
fn dashboard_exprs() -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("expr", Value::String(e)) => out.push(e.clone()),
                        _ => walk(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let d: Value = serde_json::from_slice(
        &std::fs::read(repo("deploy/grafana/stalemate-dashboard.json")).unwrap(),
    )
    .expect("the dashboard is valid JSON");
    let mut out = Vec::new();
    walk(&d, &mut out);
    out
}

/// The `stalemate_*` metric names a query uses.
fn metric_names(expr: &str) -> Vec<String> {
    let re = regex::Regex::new(r"\bstalemate_[a-z_]+").unwrap();
    re.find_iter(expr).map(|m| m.as_str().to_string()).collect()
}

/// The dashboard's queries parse (as recording rules, by promtool).
#[test]
fn dashboard_queries_parse() {
    let exprs = dashboard_exprs();
    assert!(exprs.len() >= 8, "{exprs:?}");
    let dir = tempfile::tempdir().unwrap();
    let rules = json!({"groups": [{"name": "dashboard", "rules": exprs.iter().enumerate()
        .map(|(i, e)| json!({"record": format!("dashboard:query_{i}"), "expr": e}))
        .collect::<Vec<_>>()}]});
    std::fs::write(dir.path().join("dashboard.json"), rules.to_string()).unwrap();
    let (ok, out) = promtool(&["check", "rules", "dashboard.json"], dir.path());
    assert!(ok, "{out}");
    // And a broken one would not (the check is a real parse).
    std::fs::write(
        dir.path().join("broken.json"),
        json!({"groups": [{"name": "x", "rules": [{"record": "x:y", "expr": "sum by (a (stalemate_window_active)"}]}]}).to_string(),
    )
    .unwrap();
    assert!(!promtool(&["check", "rules", "broken.json"], dir.path()).0);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn query(prom: &str, q: &str) -> Vec<Value> {
    let out = Command::new("curl")
        .args(["-sf", "--get", "--data-urlencode"])
        .arg(format!("query={q}"))
        .arg(format!("{prom}/api/v1/query"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

/// The value of a one-series answer.
fn scalar(prom: &str, q: &str) -> Option<f64> {
    query(prom, q)
        .first()
        .and_then(|s| s["value"][1].as_str().and_then(|v| v.parse().ok()))
}

/// Prometheus scrapes the proxy once a second while a freeze holds a kubectl watch's
/// events and a client hot-loops on a ConfigMap; PromQL then finds the window, the held
/// events, the view's lag, the violation and the upstream up — and every metric the
/// dashboard names.
#[test]
fn a_real_prometheus_records_a_freeze() {
    let sim = Sim::start();
    let dir = tempfile::tempdir().unwrap();
    let schedule = dir.path().join("schedule.json");
    std::fs::write(
        &schedule,
        // A hot-loop oracle four writes in a row trip (outside any window: inside one a
        // rate is what the window does, not a violation), and a freeze of configmaps for
        // 20 s from the fifth write through the proxy.
        json!({
            "windows": [{"name": "freeze-configmaps", "resources": ["configmaps"], "fault": {"freeze": {}},
                         "trigger": {"afterRequests": {"verb": "patch", "resource": "configmaps", "count": 5}}, "duration": "20s"}],
            "oracles": {"hotLoop": {"maxWritesPerObjectPerMinute": 3, "resources": ["configmaps"]}}
        })
        .to_string(),
    )
    .unwrap();
    let proxy = Proxy::start(&sim, &["--schedule", schedule.to_str().unwrap()]);
    let admin = proxy.admin.trim_start_matches("http://").to_string();
    let port = free_port();
    let prom = format!("http://127.0.0.1:{port}");
    std::fs::write(
        dir.path().join("prometheus.yml"),
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nscrape_configs:\n  - job_name: stalemate\n    static_configs: [{{targets: ['{admin}']}}]\n"
        ),
    )
    .unwrap();
    let _prometheus = KillOnDrop(
        Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian `prometheus`; .ci/run installs it)"),
    );
    wait_for("prometheus to be ready", Duration::from_secs(60), || {
        Command::new("curl")
            .args(["-sf", &format!("{prom}/-/ready")])
            .output()
            .ok()
            .filter(|o| o.status.success())
    });

    sim.kubectl_ok(&["create", "configmap", "watched", "-n", "default"]);
    // A watch through the proxy, then a freeze on configmaps for 20 s.
    let _watch = KillOnDrop(
        common::kubectl::kubectl_cmd(&proxy.kubeconfig, &dir.path().join("kubectl-cache"))
            .args(["get", "configmaps", "-n", "default", "-w", "-o", "name"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the watch to open", Duration::from_secs(30), || {
        let (_, m) = proxy.admin_get("/metrics");
        m.lines()
            .any(|l| l.starts_with("stalemate_watch_streams{") && l.ends_with(" 1"))
            .then_some(())
    });
    for i in 0..6 {
        // A change made directly (from the sixth, the frozen watch holds it), then a
        // write through the proxy: the first four are a hot loop; the fifth opens the
        // freeze.
        sim.kubectl_ok(&[
            "label",
            "--overwrite",
            "configmap",
            "watched",
            &format!("n={i}"),
        ]);
        proxy.kubectl_ok(&[
            "annotate",
            "--overwrite",
            "configmap",
            "watched",
            &format!("at={i}"),
        ]);
    }
    // A real 409 from the upstream: AlreadyExists.
    assert!(
        !proxy
            .kubectl(&["create", "configmap", "watched"])
            .status
            .success()
    );

    let seen = |what: &str, q: &str, ok: fn(f64) -> bool| {
        wait_for(what, Duration::from_secs(30), || {
            scalar(&prom, q).filter(|v| ok(*v))
        })
    };
    seen(
        "the window open",
        r#"max_over_time(stalemate_window_active{window="freeze-configmaps"}[5m])"#,
        |v| v == 1.0,
    );
    seen(
        "held events",
        r#"sum(max_over_time(stalemate_watch_events_total{action="held",resource="configmaps"}[5m]))"#,
        |v| v >= 1.0,
    );
    seen(
        "the view's lag",
        r#"max(max_over_time(stalemate_view_lag_seconds{resource="configmaps"}[5m]))"#,
        |v| v > 0.0,
    );
    seen(
        "the hot-loop violation",
        r#"max_over_time(stalemate_oracle_violations{oracle="hotLoop"}[5m])"#,
        |v| v >= 1.0,
    );
    seen("the upstream up", "min(stalemate_upstream_up)", |v| {
        v == 1.0
    });
    seen(
        "the window's planned length",
        r#"max(stalemate_window_planned_seconds{window="freeze-configmaps"})"#,
        |v| v == 20.0,
    );

    // Every metric the dashboard queries is one Prometheus has scraped.
    let names: Vec<String> = {
        let out = Command::new("curl")
            .args(["-sf", &format!("{prom}/api/v1/label/__name__/values")])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect()
    };
    for e in dashboard_exprs() {
        for m in metric_names(&e) {
            assert!(
                names.contains(&m),
                "the dashboard's {m:?} ({e}) is not a scraped metric: {names:?}"
            );
        }
    }
}
