//! A script of Kubernetes API steps, run against one endpoint and recorded step by step, so
//! two runs can be compared: `proxy_real.rs` runs one on a real apiserver direct and
//! through the proxy, `sim_differential.rs` one on the simulator and on a real apiserver.
//!
//! What differs between those tests is parameterised: the script's text and its
//! collections ([`Script`]), the endpoints ([`Endpoint`]), and what is compared — each
//! test projects every [`Observed`] step to what it compares before [`compare`] lists the
//! steps whose projections differ ([`report`] shows them all, each with both observations).
//!
//! Entry points: [`Run::run`] (one script on one endpoint), [`compare`], [`report`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::envtest::RealApiserver;
use super::watch_stream::{Stream, field, frame_json, split_frames, str_of};
use super::{Kubectl, Proxy, Response, Sim};

/// How long anything may take on a busy 2-core machine before a test gives up.
pub const WAIT: Duration = Duration::from_secs(60);
pub const JSON: &str = "application/json";
pub const MERGE: &str = "application/merge-patch+json";
/// Protobuf, as a body's content type.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// A watch that accepts only protobuf.
pub const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// What client-go sends when configured for protobuf: protobuf, or JSON if that is all the
/// server has (the simulator's case).
pub const PROTOBUF_OR_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";
/// `kubectl get`'s server-side printing.
pub const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
/// Aggregated discovery (what kubectl ≥ 1.30 and client-go ask `/api` and `/apis` for).
pub const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

// ---------------------------------------------------------------------------------------
// Endpoints.

/// One way to reach an apiserver, with curl and kubectl.
#[derive(Clone)]
pub struct Endpoint {
    pub name: &'static str,
    pub base: String,
    pub ca: PathBuf,
    /// curl flags carrying the credentials: a client certificate, a bearer token, none.
    pub auth: Vec<String>,
    pub kubeconfig: PathBuf,
    pub cache: PathBuf,
}

impl super::Kubectl for Endpoint {
    fn kubeconfig_file(&self) -> &Path {
        &self.kubeconfig
    }

    fn cache_dir(&self) -> PathBuf {
        self.cache.clone()
    }

    fn whom(&self) -> &'static str {
        self.name
    }
}

impl Endpoint {
    /// Straight to a real apiserver, as the envtest admin (client certificate).
    pub fn direct(api: &RealApiserver) -> Endpoint {
        let (crt, key) = api.admin_cert();
        let auth = [
            "--cert".into(),
            crt.display().to_string(),
            "--key".into(),
            key.display().to_string(),
        ];
        Endpoint {
            name: "direct",
            base: api.url.clone(),
            ca: api.ca(),
            auth: auth.to_vec(),
            kubeconfig: api.kubeconfig.clone(),
            cache: api.cache_dir(),
        }
    }

    /// Through the proxy, without credentials: the proxy uses the upstream kubeconfig's.
    pub fn proxied(proxy: &Proxy) -> Endpoint {
        Endpoint {
            name: "proxied",
            base: proxy.url.clone(),
            ca: proxy.ca(),
            auth: Vec::new(),
            kubeconfig: proxy.kubeconfig.clone(),
            cache: proxy.dir.path().join("kubectl-cache"),
        }
    }

    /// The simulator, as the admin of its kubeconfig (a bearer token).
    pub fn sim(sim: &Sim) -> Endpoint {
        Endpoint {
            name: "sim",
            base: sim.url.clone(),
            ca: sim.ca(),
            auth: vec![
                "-H".into(),
                format!("Authorization: Bearer {}", sim.admin_token()),
            ],
            kubeconfig: sim.kubeconfig.clone(),
            cache: sim.cache_dir(),
        }
    }

    /// The same way in, with this bearer token as the only credential.
    pub fn bearer(&self, token: &str) -> Endpoint {
        let auth = vec!["-H".into(), format!("Authorization: Bearer {token}")];
        Endpoint {
            auth,
            ..self.clone()
        }
    }

    /// A request; an empty `body` sends none.
    pub fn call(&self, method: &str, path: &str, hdr: &[(&str, &str)], body: &str) -> Response {
        self.call_bytes(method, path, hdr, body.as_bytes())
    }

    /// A request with a body of any bytes (protobuf); an empty `body` sends none.
    pub fn call_bytes(
        &self,
        method: &str,
        path: &str,
        hdr: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let mut flags: Vec<&str> = self.auth.iter().map(String::as_str).collect();
        flags.extend(["--max-time", "60"]);
        let body = Some(body).filter(|b| !b.is_empty());
        super::curl(&self.ca, &self.base, method, path, hdr, body, &flags)
    }

    pub fn get(&self, path: &str) -> Response {
        self.call("GET", path, &[], "")
    }

    /// Open a watch and read it as it streams (curl -N, the body on a pipe).
    pub fn stream(&self, path: &str, accept: &str) -> Stream {
        let child = Command::new("curl")
            .args(["-sS", "-N", "--http1.1", "--cacert"])
            .arg(&self.ca)
            .args(&self.auth)
            .args(["-H", &format!("Accept: {accept}")])
            .arg(format!("{}{path}", self.base))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn curl");
        Stream::read(child, WAIT)
    }
}

// ---------------------------------------------------------------------------------------
// The script.

/// A script and the collections its requests name.
///
/// The text: one step a line — `name | expected answer | request` — and its body, if any,
/// on the indented lines after it. Answers: a status code, then the Status reason and/or
/// checks on the body (`.path=JSON`, `.path!=JSON`); `ok`/`fails` for kubectl; for a
/// `WATCH` (ended by the server after 2 s), the events in the indented lines (`TYPE name`,
/// `ERROR code reason`, `BOOKMARK` — `BOOKMARK initial-events-end` for the bookmark that
/// ends `sendInitialEvents`). Requests: `METHOD PATH [how]`, `AWAIT GET PATH` (polled until
/// 200: what a controller outside the script makes), `WATCH PATH how`, or `kubectl ARGS`
/// (the body on its stdin). `how` is a patch type (`merge`, `json`, `strategic`,
/// `apply`), `protobuf-body` (the body — JSON with its apiVersion and kind — sent as
/// protobuf, as client-go's typed clients send it) or what the client accepts (`json`, `protobuf` — only protobuf —,
/// `protobuf-or-json` as client-go sends, `table`, `aggregated` discovery).
/// Placeholders: `{ns}` the run's namespace, a collection's name (`{cm}`), and
/// `{rv@STEP}` `{continue@STEP}` `{name@STEP}` `{uid@STEP}` from an earlier step's answer.
pub struct Script<'a> {
    pub text: &'a str,
    /// Placeholder → path, e.g. `("{cm}", "/api/v1/namespaces/{ns}/configmaps")`.
    pub collections: &'a [(&'a str, &'a str)],
}

/// One step of a script, as written.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    pub expect: String,
    pub request: String,
    pub body: String,
}

/// The steps of a script's text.
pub fn parse(text: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match (line.strip_prefix("    "), steps.last_mut()) {
            (Some(more), Some(step)) => step.body = format!("{}\n{more}", step.body),
            _ => match line.split(" | ").collect::<Vec<_>>()[..] {
                [name, expect, request] => steps.push(Step {
                    name: name.into(),
                    expect: expect.into(),
                    request: request.into(),
                    body: String::new(),
                }),
                _ => panic!("not a step: {line}"),
            },
        }
    }
    let mut names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    let twice = names.windows(2).find(|w| w[0] == w[1]);
    assert!(twice.is_none(), "two steps named {twice:?}");
    steps
}

/// What one step observed, normalised (see [`Normaliser`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub step: String,
    /// The request as sent, namespace and generated names scrubbed.
    pub request: String,
    pub kind: StepKind,
    /// A request: `{accept, answer: {code, warning, contentType}, body}`; a watch:
    /// `{accept, code, contentType, events, body}` (a body only when not 200); kubectl:
    /// `{ok, stdout, stderr}`. Plus `missing`: placeholders an earlier step's answer had
    /// no value for.
    pub value: Value,
    /// The script's checks this answer failed.
    pub failed: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepKind {
    Request,
    Watch,
    Kubectl,
}

/// One run of a script on one endpoint, in a namespace of its own.
pub struct Run<'a> {
    ep: &'a Endpoint,
    collections: &'a [(&'a str, &'a str)],
    norm: Normaliser,
    /// Each earlier step's raw answer, for the placeholders.
    answers: Vec<(String, Value)>,
    /// Placeholders the current step could not fill.
    missing: Vec<String>,
}

impl<'a> Run<'a> {
    /// Run the script; what each step observed. It does not stop at a failed check: each
    /// step's failures are recorded with what it observed.
    pub fn run(ep: &'a Endpoint, ns: &str, script: &Script<'a>) -> Vec<Observed> {
        let mut r = Run {
            ep,
            collections: script.collections,
            norm: Normaliser::new(ns),
            answers: Vec::new(),
            missing: Vec::new(),
        };
        let mut seen = Vec::new();
        for step in parse(script.text) {
            r.missing.clear();
            let expect = r.fill(&step.expect);
            let request = r.fill(&step.request);
            let body = r.fill(&step.body);
            let words: Vec<&str> = request.split_whitespace().collect();
            let (kind, mut value, failed, answer) = match words[..] {
                ["kubectl", ref args @ ..] => r.kubectl(&expect, args, body.trim()),
                ["WATCH", path, how] => r.watch(path, how, &body),
                ["AWAIT", "GET", path] => r.await_ok(path, &expect),
                _ => r.request(&expect, &words, &body),
            };
            if !r.missing.is_empty() {
                value["missing"] = json!(r.missing);
            }
            let request = r.norm.scrub(&request);
            let failed = failed.iter().map(|f| r.norm.scrub(f)).collect();
            seen.push(Observed {
                step: step.name.clone(),
                request,
                kind,
                value,
                failed,
            });
            r.answers.push((step.name, answer));
        }
        seen
    }

    /// The placeholders filled in.
    fn fill(&mut self, s: &str) -> String {
        let re = regex::Regex::new(r"\{(rv|continue|name|uid)@([^}]+)\}").unwrap();
        let mut missing = Vec::new();
        let s = re.replace_all(s, |c: &regex::Captures| {
            let step = self.answers.iter().find(|a| a.0 == c[2]);
            let answer = &step
                .unwrap_or_else(|| panic!("no earlier step {:?}", &c[2]))
                .1;
            let key = match &c[1] {
                "rv" => "resourceVersion",
                key => key,
            };
            let Some(v) = answer["metadata"][key].as_str() else {
                missing.push(c[0].to_string());
                return "missing".to_string();
            };
            form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>()
        });
        self.missing.extend(missing);
        let mut s = s.into_owned();
        for (placeholder, path) in self.collections {
            s = s.replace(placeholder, path);
        }
        s.replace("{ns}", &self.norm.ns)
    }

    /// METHOD PATH [how]: the answer, checked against `expect`.
    fn request(&mut self, expect: &str, words: &[&str], body: &str) -> Stepped {
        let (ctype, accept) = match words[2..] {
            ["merge"] => (MERGE, JSON),
            ["json"] => ("application/json-patch+json", JSON),
            ["strategic"] => ("application/strategic-merge-patch+json", JSON),
            ["apply"] => ("application/apply-patch+yaml", JSON),
            ["protobuf-or-json"] => (JSON, PROTOBUF_OR_JSON),
            ["protobuf-body"] => (PROTOBUF, JSON),
            ["table"] => (JSON, TABLE),
            ["aggregated"] => (JSON, AGGREGATED),
            [] => (JSON, JSON),
            ref how => panic!("{words:?}: unknown {how:?}"),
        };
        let headers = [("Content-Type", ctype), ("Accept", accept)];
        let body = match ctype {
            // The simulator's own encoder (gogo-protobuf's layout): the real apiserver
            // decodes it with Go's, so the differential checks the encoder too.
            PROTOBUF => {
                let obj: Value = serde_json::from_str(body).expect("a protobuf-body step's JSON");
                stalemate::sim::proto_body::encode(&obj).expect("a protobuf-body step's object")
            }
            _ => body.as_bytes().to_vec(),
        };
        let r = self.ep.call_bytes(words[0], words[1], &headers, &body);
        let (code, value) = (r.status, body_json(&r));
        let failed = checks(expect, code, &value);
        let (warning, ctype) = (r.header("warning"), r.header("content-type"));
        let answer = json!({"code": code, "warning": warning, "contentType": ctype});
        let body = self.norm.normalise(value.clone());
        let observed = json!({"accept": accept, "answer": answer, "body": body});
        (StepKind::Request, observed, failed, value)
    }

    /// AWAIT GET PATH: polled until 200, for what a controller outside the script makes.
    fn await_ok(&mut self, path: &str, expect: &str) -> Stepped {
        let start = Instant::now();
        loop {
            let stepped = self.request(expect, &["GET", path], "");
            if stepped.1["answer"]["code"] == 200 || start.elapsed() > WAIT {
                return stepped;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn kubectl(&mut self, expect: &str, args: &[&str], stdin: &str) -> Stepped {
        let out = self.ep.kubectl_stdin(args, stdin);
        let stderr = self.norm.scrub(&String::from_utf8_lossy(&out.stderr));
        let ok = out.status.success();
        let mut failed = Vec::new();
        if ok != (expect == "ok") {
            failed.push(format!("expected kubectl to {expect}: {stderr}"));
        }
        let stdout = serde_json::from_slice::<Value>(&out.stdout);
        let stdout = stdout.unwrap_or_else(|_| json!(String::from_utf8_lossy(&out.stdout)));
        let stdout = self.norm.normalise(stdout);
        let observed = json!({"ok": ok, "stdout": stdout, "stderr": stderr});
        (StepKind::Kubectl, observed, failed, Value::Null)
    }

    /// A watch, which the server ends after 2 s; its events decoded as the response's
    /// content type says.
    fn watch(&mut self, path: &str, how: &str, expect: &str) -> Stepped {
        let accept = match how {
            "json" => JSON,
            "protobuf" => PROTOBUF_WATCH,
            "protobuf-or-json" => PROTOBUF_OR_JSON,
            how => panic!("WATCH {path}: unknown encoding {how:?}"),
        };
        let sep = if path.contains('?') { '&' } else { '?' };
        let path = format!("{path}{sep}watch=1&timeoutSeconds=2");
        let r = self.ep.call("GET", &path, &[("Accept", accept)], "");
        let ctype = r.header("content-type").unwrap_or_default().to_string();
        let mut failed = Vec::new();
        if r.status != 200 {
            failed.push(format!("status {} (not 200)", r.status));
        }
        if how == "protobuf" && !ctype.contains("protobuf") {
            failed.push(format!("content type {ctype} for a protobuf-only watch"));
        }
        let body = (r.status != 200).then(|| body_json(&r));
        let events: Vec<Value> = if body.is_some() {
            Vec::new()
        } else if ctype.contains("protobuf") {
            split_frames(&r.body)
                .iter()
                .map(|f| event_of_frame(f))
                .collect()
        } else {
            let lines: Result<_, _> = r.text().lines().map(serde_json::from_str).collect();
            lines.unwrap_or_else(|_| vec![json!(r.text())])
        };
        let expect: Vec<&str> = expect.split(',').map(str::trim).collect();
        if r.status == 200 && seq(&events) != expect {
            failed.push(format!("events {:?}, expected {expect:?}", seq(&events)));
        }
        let events = self.norm.normalise(json!(events));
        let body = self.norm.normalise(json!(body));
        let observed = json!({"accept": accept, "code": r.status, "contentType": ctype,
            "events": events, "body": body});
        (StepKind::Watch, observed, failed, Value::Null)
    }
}

/// What a step observed (kind, normalised value, failed checks) and its raw answer.
type Stepped = (StepKind, Value, Vec<String>, Value);

/// A response body as JSON; a body that is not JSON as a JSON string.
fn body_json(r: &Response) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|_| match r.header("content-type") {
        Some(t) if t.contains("protobuf") => protobuf_object(&r.body),
        _ => json!(r.text()),
    })
}

/// `expect` (`CODE [Reason] [.path=JSON] [.path!=JSON]…`) against an answer: the checks
/// it fails.
fn checks(expect: &str, code: u16, v: &Value) -> Vec<String> {
    let mut expect = expect.split(' ');
    let mut failed = Vec::new();
    let want = expect.next().unwrap_or_default();
    if want != code.to_string() {
        failed.push(format!("status {code}, expected {want}"));
    }
    for check in expect {
        let Some((path, want)) = check.split_once('=') else {
            if v["reason"] != check {
                failed.push(format!("reason {}, expected {check}", v["reason"]));
            }
            continue;
        };
        let (path, differs) = path.strip_suffix('!').map_or((path, false), |p| (p, true));
        let want: Value = serde_json::from_str(want).expect("a JSON value");
        let got = v.pointer(&path.replace('.', "/")).unwrap_or(&Value::Null);
        if (*got == want) == differs {
            failed.push(format!("{check}: got {got}"));
        }
    }
    failed
}

// ---------------------------------------------------------------------------------------
// Watch events and protobuf bodies.

/// Each event as "TYPE name", "ERROR code reason", or "BOOKMARK" (with
/// "initial-events-end" when it ends `sendInitialEvents`).
pub fn seq(events: &[Value]) -> Vec<String> {
    let s = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let one = |e: &Value| match (&e["type"], &e["object"]) {
        (t, o) if t == "ERROR" => format!("ERROR {} {}", s(&o["code"]), s(&o["reason"])),
        (t, o) if t == "BOOKMARK" => {
            let end = &o["metadata"]["annotations"]["k8s.io/initial-events-end"];
            let end = if end == "true" {
                " initial-events-end"
            } else {
                ""
            };
            format!("BOOKMARK{end}")
        }
        (t, o) if t.is_null() => format!("not an event: {o}"),
        (t, o) => format!("{} {}", s(t), s(&o["metadata"]["name"])),
    };
    events.iter().map(one).collect()
}

/// A protobuf watch frame as `frame_json` reads it, plus its object's annotations (which
/// a bookmark ending `sendInitialEvents` carries).
fn event_of_frame(frame: &[u8]) -> Value {
    let mut event = frame_json(frame);
    if event["object"]["kind"] != "Status" {
        let raw = field(field(&frame[4..], 2).0[0], 1).0[0];
        let meta = object_meta(field(field(&raw[4..], 2).0[0], 1).0[0]);
        if let Some(annotations) = meta.get("annotations") {
            event["object"]["metadata"]["annotations"] = annotations.clone();
        }
    }
    event
}

/// A protobuf object (`k8s\0`, then runtime.Unknown) as JSON, with what this module
/// reads of it: apiVersion, kind, and the metadata below — or a Status's reason, code and
/// message. Marked `"protobuf": true`.
fn protobuf_object(body: &[u8]) -> Value {
    let Some(unknown) = body.strip_prefix(b"k8s\0") else {
        return json!(format!(
            "{} bytes of protobuf without its magic",
            body.len()
        ));
    };
    fn first(b: &[u8], n: u64) -> &[u8] {
        field(b, n).0.first().copied().unwrap_or_default()
    }
    let type_meta = first(unknown, 1);
    let (api_version, kind) = (str_of(type_meta, 1), str_of(type_meta, 2));
    let raw = first(unknown, 2);
    let mut v = if kind.as_deref() == Some("Status") {
        json!({"message": str_of(raw, 3), "reason": str_of(raw, 4), "code": field(raw, 6).1})
    } else {
        json!({"metadata": object_meta(first(raw, 1))})
    };
    v["apiVersion"] = json!(api_version);
    v["kind"] = json!(kind);
    v["protobuf"] = json!(true);
    v
}

/// ObjectMeta (k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto): names, uid,
/// resourceVersion, generation (0 is none), whether it has creation and deletion
/// timestamps, labels, annotations, finalizers.
fn object_meta(m: &[u8]) -> Map<String, Value> {
    let mut out = Map::new();
    for (n, key) in [
        (1, "name"),
        (2, "generateName"),
        (3, "namespace"),
        (5, "uid"),
        (6, "resourceVersion"),
    ] {
        if let Some(s) = str_of(m, n).filter(|s| !s.is_empty()) {
            out.insert(key.into(), json!(s));
        }
    }
    if let Some(g) = field(m, 7).1.filter(|g| *g != 0) {
        out.insert("generation".into(), json!(g));
    }
    for (n, key) in [(8, "creationTimestamp"), (9, "deletionTimestamp")] {
        if !field(m, n).0.is_empty() {
            out.insert(key.into(), json!("set"));
        }
    }
    let map = |n| -> Map<String, Value> {
        let entry = |e: &[u8]| (str_of(e, 1).unwrap_or_default(), json!(str_of(e, 2)));
        field(m, n).0.into_iter().map(entry).collect()
    };
    for (n, key) in [(11, "labels"), (12, "annotations")] {
        let entries = map(n);
        if !entries.is_empty() {
            out.insert(key.into(), Value::Object(entries));
        }
    }
    let finalizers: Vec<Value> = field(m, 14)
        .0
        .iter()
        .map(|f| json!(String::from_utf8_lossy(f)))
        .collect();
    if !finalizers.is_empty() {
        out.insert("finalizers".into(), json!(finalizers));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Normalisation shared by every comparison.

/// What legitimately differs between any two runs of a script, whatever the servers,
/// taken out of what a run records:
/// - uids become their rank among those the run has seen (`uid#3`), also inside other
///   strings (a Job's `controller-uid` labels and selector): which object is which shows,
///   not the random value;
/// - `creationTimestamp`, `deletionTimestamp` and managedFields' `time` become `<set>`,
///   and managedFields entries are put in one order (see [`sort_managed_fields`]);
/// - the run's namespace becomes `<ns>`, generated names `<generated-N>`;
/// - a list's resourceVersion becomes `<list>` and a continue token `<continue>`;
/// - an object's resourceVersion becomes its rank among those seen (`rv#3`): whether it
///   moved shows, not the number (each server counts its own writes).
pub struct Normaliser {
    pub ns: String,
    rvs: Vec<String>,
    uids: Vec<String>,
    generated: Vec<String>,
}

impl Normaliser {
    pub fn new(ns: &str) -> Normaliser {
        Normaliser {
            ns: ns.into(),
            rvs: Vec::new(),
            uids: Vec::new(),
            generated: Vec::new(),
        }
    }

    pub fn normalise(&mut self, mut v: Value) -> Value {
        if v["kind"]
            .as_str()
            .is_some_and(|k| k.ends_with("List") || k == "Table")
        {
            v["metadata"]["resourceVersion"] = json!("<list>");
            let token = v["metadata"]["continue"].as_str();
            if token.is_some_and(|c| !c.is_empty()) {
                v["metadata"]["continue"] = json!("<continue>");
            }
        }
        self.names(&v);
        self.walk(&mut v);
        v
    }

    /// Learn the uids and generated names in `v` first: they may be quoted (in labels,
    /// selectors, messages) before the field that says what they are.
    fn names(&mut self, v: &Value) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(uid)) = m.get("uid")
                    && !self.uids.contains(uid)
                {
                    self.uids.push(uid.clone());
                }
                if let (Some(_), Some(Value::String(name))) = (m.get("generateName"), m.get("name"))
                    && !self.generated.contains(name)
                {
                    self.generated.push(name.clone());
                }
                m.values().for_each(|x| self.names(x));
            }
            Value::Array(a) => a.iter().for_each(|x| self.names(x)),
            _ => {}
        }
    }

    fn walk(&mut self, v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    match (k.as_str(), x.as_str()) {
                        ("creationTimestamp" | "deletionTimestamp" | "time", Some(_)) => {
                            *x = json!("<set>")
                        }
                        ("managedFields", None) => {
                            self.walk(x);
                            sort_managed_fields(x);
                        }
                        ("resourceVersion", Some(s)) if s != "<list>" => {
                            if !self.rvs.iter().any(|r| r == s) {
                                self.rvs.push(s.to_string());
                            }
                            let rank = self.rvs.iter().position(|r| r == s).unwrap();
                            *x = json!(format!("rv#{rank}"));
                        }
                        _ => self.walk(x),
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.walk(x)),
            Value::String(s) => *s = self.scrub(s),
            _ => {}
        }
    }

    /// A string without the run's namespace, generated names and uids.
    pub fn scrub(&self, s: &str) -> String {
        let mut s = s.to_string();
        for (i, uid) in self.uids.iter().enumerate() {
            s = s.replace(uid, &format!("uid#{i}"));
        }
        for (i, g) in self.generated.iter().enumerate() {
            s = s.replace(g, &format!("<generated-{i}>"));
        }
        s.replace(&self.ns, "<ns>")
    }
}

// ---------------------------------------------------------------------------------------
// Comparison.

/// A step whose projections differ between two runs.
#[derive(Debug)]
pub struct Divergence {
    pub step: String,
    pub request: String,
    /// Each side's projection.
    pub a: Value,
    pub b: Value,
    /// Where they differ: `path: A | B`.
    pub diffs: Vec<String>,
}

/// The steps whose projections differ between two runs of one script. Each run is
/// projected by its own `project` (a projection may remember earlier steps: whether an
/// object's resourceVersion moved since the run last saw it).
pub fn compare(
    a: &[Observed],
    b: &[Observed],
    mut project_a: impl FnMut(&Observed) -> Value,
    mut project_b: impl FnMut(&Observed) -> Value,
) -> Vec<Divergence> {
    assert_eq!(a.len(), b.len(), "two runs of one script");
    let mut out = Vec::new();
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.step, y.step, "two runs of one script, step by step");
        let (pa, pb) = (project_a(x), project_b(y));
        let diffs = diff(&pa, &pb);
        if !diffs.is_empty() {
            let (step, request) = (x.step.clone(), x.request.clone());
            out.push(Divergence {
                step,
                request,
                a: pa,
                b: pb,
                diffs,
            });
        }
    }
    out
}

/// Every divergence, each with the JSON paths where the two sides differ and both
/// observations (`names`: what the two sides are called).
pub fn report(names: (&str, &str), total: usize, divs: &[Divergence]) -> String {
    let mut out = format!(
        "{} of {total} steps diverge ({} vs {}):\n",
        divs.len(),
        names.0,
        names.1
    );
    for d in divs {
        out += &format!("\n== step {:?}: {}\n", d.step, d.request);
        for line in &d.diffs {
            out += &format!("   {line}\n");
        }
        out += &format!("   {}: {}\n", names.0, clip(&d.a.to_string(), 3000));
        out += &format!("   {}: {}\n", names.1, clip(&d.b.to_string(), 3000));
    }
    out
}

fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}… ({} more bytes)", &s[..i], s.len() - i),
        None => s.to_string(),
    }
}

/// The paths where `a` and `b` differ, each as `path: A | B` (`-` where one has none).
pub fn diff(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_at("", a, b, &mut out);
    out
}

fn diff_at(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    let show = |v: Option<&Value>| v.map_or("-".into(), |v| clip(&v.to_string(), 400));
    match (a, b) {
        _ if a == b => {}
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().collect();
            keys.extend(y.keys().filter(|k| !x.contains_key(*k)));
            for k in keys {
                let p = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(v), Some(w)) => diff_at(&p, v, w, out),
                    (v, w) => out.push(format!("{p}: {} | {}", show(v), show(w))),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff_at(&format!("{path}/{i}"), v, w, out);
            }
        }
        _ => out.push(format!("{path}: {} | {}", show(Some(a)), show(Some(b)))),
    }
}

/// The apiserver orders managedFields entries by operation, then `time` in whole seconds,
/// then manager (`sortEncodedManagedFields`,
/// k8s.io/apimachinery/pkg/util/managedfields/internal/managedfields.go), so two runs of a script —
/// direct and through the proxy — whose two writes fall on either side of a second
/// boundary in one run and not in the other list the same entries in another order. With
/// the times masked, order them by what they say.
pub fn sort_managed_fields(v: &mut Value) {
    if let Value::Array(entries) = v {
        entries.sort_by_cached_key(|e| {
            let field = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (
                field("manager"),
                field("operation"),
                field("subresource"),
                e["fieldsV1"].to_string(),
            )
        });
    }
}
