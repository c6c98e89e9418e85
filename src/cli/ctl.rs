//! `stalemate ctl`: the command-line client of a running proxy's control API.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use clap::{Args, Subcommand};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  stalemate ctl status
  stalemate ctl freeze gitrepositories.source.toolkit.fluxcd.io -n flux-system --for 2s
  stalemate ctl open window.json          # a window object, as in a schedule file
  stalemate ctl close f1-stale-gitrepository")]
pub struct CtlArgs {
    /// The proxy's admin listener.
    #[arg(
        long,
        env = "STALEMATE_ADMIN",
        default_value = "http://127.0.0.1:9464",
        value_name = "URL"
    )]
    pub admin: String,

    /// Bearer token, when the proxy runs with --admin-token.
    #[arg(
        long,
        env = "STALEMATE_ADMIN_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,

    /// Print the API's JSON instead of a table.
    #[arg(long)]
    pub json: bool,

    #[command(subcommand)]
    pub command: CtlCommand,
}

#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// Open windows, open watch streams, held events and view memory.
    Status,
    /// The open windows, and the armed ones waiting for their trigger.
    Windows,
    /// The schedule's clients and what each has sent.
    Clients,
    /// Open a window (or arm its trigger) from a JSON file holding one window object;
    /// `-` reads standard input.
    Open {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Close a window now (its held events are released), or cancel an armed one before
    /// its trigger fires.
    Close {
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Freeze resources now (a `freeze` window): no watch events reach the client until
    /// the window closes, then all of them, in order.
    Freeze {
        /// Resources as kubectl names them: `configmaps`, `gitrepositories.source.toolkit.fluxcd.io`.
        #[arg(value_name = "RESOURCE", required = true)]
        resources: Vec<String>,
        /// Only these namespaces (repeatable; default all).
        #[arg(short = 'n', long = "namespace", value_name = "NS")]
        namespaces: Vec<String>,
        /// Only this schedule client (default: everyone).
        #[arg(long, default_value = "*", value_name = "NAME")]
        client: String,
        /// Close it after this long (default: until `ctl close`).
        #[arg(long = "for", value_parser = super::values::parse_duration, value_name = "DURATION")]
        duration: Option<Duration>,
        /// The window's name.
        #[arg(long, default_value = "ctl-freeze", value_name = "NAME")]
        name: String,
    },
}

/// One request to the admin listener: (status code, parsed JSON body).
async fn call(
    args: &CtlArgs,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<(u16, Value)> {
    let base: http::Uri = args
        .admin
        .parse()
        .with_context(|| format!("--admin {:?} is not a URL", args.admin))?;
    if base.scheme_str() != Some("http") {
        bail!(
            "--admin {:?}: the admin listener speaks plain http://",
            args.admin
        );
    }
    let Some(authority) = base.authority().cloned() else {
        bail!("--admin {:?} has no host:port", args.admin);
    };
    let port = authority.port_u16().unwrap_or(80);
    let unreachable = || {
        format!(
            "cannot reach the admin listener at {} (is `stalemate serve` running? see --admin)",
            args.admin
        )
    };
    let tcp = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::net::TcpStream::connect((authority.host(), port)),
    )
    .await
    .with_context(unreachable)?
    .with_context(unreachable)?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await?;
    tokio::spawn(conn);
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, authority.as_str());
    if let Some(t) = &args.token {
        req = req.header(http::header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let payload = match &body {
        Some(b) => {
            req = req.header(http::header::CONTENT_TYPE, "application/json");
            Bytes::from(b.to_string())
        }
        None => Bytes::new(),
    };
    let resp = tokio::time::timeout(
        Duration::from_secs(30),
        sender.send_request(req.body(Full::new(payload))?),
    )
    .await
    .with_context(|| format!("{} did not answer within 30s", args.admin))??;
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await?.to_bytes();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| json!({"error": String::from_utf8_lossy(&bytes)}));
    if code == 401 {
        bail!("the admin listener wants a token: pass --token or set $STALEMATE_ADMIN_TOKEN");
    }
    Ok((code, v))
}

fn error_of(v: &Value) -> String {
    v["error"]
        .as_str()
        .map_or_else(|| v.to_string(), str::to_string)
}

fn seconds(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |s| format!("{s:.1}s"))
}

fn bytes(n: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB"];
    let mut n = n;
    let mut u = 0;
    while n >= 1024.0 && u + 1 < units.len() {
        n /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n:.0} {}", units[u])
    } else {
        format!("{n:.1} {}", units[u])
    }
}

/// The open windows as a table, then the armed ones.
fn windows_table(v: &Value) -> String {
    let mut out = open_table(v);
    let armed = v["armed"].as_array().cloned().unwrap_or_default();
    if !armed.is_empty() {
        let rows: Vec<[String; 4]> = armed
            .iter()
            .map(|a| {
                let win = &a["window"];
                let trigger = win["trigger"]
                    .as_object()
                    .map(|t| {
                        t.iter()
                            .map(|(k, v)| match v {
                                Value::String(s) => format!("{k} {s}"),
                                _ => k.clone(),
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                let progress = match (a["seen"].as_u64(), a["count"].as_u64()) {
                    (Some(s), Some(c)) => format!("{s} of {c}"),
                    _ => "-".into(),
                };
                [
                    win["name"].as_str().unwrap_or("").to_string(),
                    fault_name(win),
                    trigger,
                    progress,
                ]
            })
            .collect();
        out.push('\n');
        out.push_str(&table(&["ARMED", "FAULT", "TRIGGER", "SEEN"], &rows));
    }
    out
}

fn fault_name(win: &Value) -> String {
    win["fault"]
        .as_object()
        .and_then(|o| o.keys().next().cloned())
        .unwrap_or_default()
}

/// The open windows as a table.
fn open_table(v: &Value) -> String {
    let ws = v["windows"].as_array().cloned().unwrap_or_default();
    if ws.is_empty() {
        return "no open windows\n".into();
    }
    let rows: Vec<[String; 6]> = ws
        .iter()
        .map(|w| {
            let win = &w["window"];
            let fault = fault_name(win);
            let list = |k: &str| {
                win[k]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str())
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "*".into())
            };
            [
                win["name"].as_str().unwrap_or("").to_string(),
                fault,
                win["client"].as_str().unwrap_or("*").to_string(),
                format!("{} in {}", list("resources"), list("namespaces")),
                seconds(&w["openForSeconds"]),
                seconds(&w["remainingSeconds"]),
            ]
        })
        .collect();
    table(
        &["WINDOW", "FAULT", "CLIENT", "TARGET", "OPEN", "REMAINING"],
        &rows,
    )
}

fn table<const N: usize>(head: &[&str; N], rows: &[[String; N]]) -> String {
    let mut width = head.map(str::len);
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == N {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  ", w = width[i]));
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

fn status_text(v: &Value) -> String {
    let mut out = windows_table(v);
    let streams: Vec<[String; 3]> = v["streams"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|s| {
            [
                s["client"].as_str().unwrap_or("").to_string(),
                s["resource"].as_str().unwrap_or("").to_string(),
                s["streams"].to_string(),
            ]
        })
        .collect();
    out.push('\n');
    if streams.is_empty() {
        out.push_str("no open watch streams\n");
    } else {
        out.push_str(&table(&["CLIENT", "RESOURCE", "WATCHES"], &streams));
    }
    out.push_str(&format!(
        "\nheld: {} events, {}\nviews: {} of {}\n",
        v["held"]["events"].as_i64().unwrap_or(0),
        bytes(v["held"]["bytes"].as_f64().unwrap_or(0.0)),
        bytes(v["views"]["bytes"].as_f64().unwrap_or(0.0)),
        bytes(v["views"]["maxBytes"].as_f64().unwrap_or(0.0)),
    ));
    out
}

fn clients_text(v: &Value) -> String {
    let rows: Vec<[String; 4]> = v["clients"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            [
                c["name"].as_str().unwrap_or("").to_string(),
                match &c["match"] {
                    Value::Null => "(everyone else)".to_string(),
                    m => m.to_string(),
                },
                c["requests"].to_string(),
                c["watchStreams"].to_string(),
            ]
        })
        .collect();
    table(&["CLIENT", "MATCH", "REQUESTS", "WATCHES"], &rows)
}

/// The control API request a command makes: method, path and JSON body.
fn request(command: &CtlCommand) -> Result<(&'static str, String, Option<Value>)> {
    Ok(match command {
        CtlCommand::Status => ("GET", "/v1/status".into(), None),
        CtlCommand::Windows => ("GET", "/v1/windows".into(), None),
        CtlCommand::Clients => ("GET", "/v1/clients".into(), None),
        CtlCommand::Open { file } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading standard input")?
            } else {
                std::fs::read_to_string(file)
                    .with_context(|| format!("reading {}", file.display()))?
            };
            // Check it here, so the error names the file and the line.
            let w = crate::schedule::Window::parse(&text).map_err(|mut e| {
                e.file = if file.as_os_str() == "-" {
                    "standard input".to_string()
                } else {
                    file.display().to_string()
                };
                anyhow::anyhow!("{e}")
            })?;
            (
                "POST",
                "/v1/windows".into(),
                Some(serde_json::to_value(&w)?),
            )
        }
        CtlCommand::Close { name } => {
            let enc: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
            (
                "DELETE",
                format!("/v1/windows/{}", enc.replace('+', "%20")),
                None,
            )
        }
        CtlCommand::Freeze {
            resources,
            namespaces,
            client,
            duration,
            name,
        } => {
            let mut w = json!({"name": name, "client": client, "resources": resources, "fault": {"freeze": {}}});
            if !namespaces.is_empty() {
                w["namespaces"] = json!(namespaces);
            }
            if let Some(d) = duration {
                w["duration"] = json!(format!("{}ms", d.as_millis()));
            }
            ("POST", "/v1/windows".into(), Some(w))
        }
    })
}

pub async fn run(args: CtlArgs) -> Result<()> {
    let (method, path, body) = request(&args.command)?;
    let (code, v) = call(&args, method, &path, body).await?;
    if !(200..300).contains(&code) {
        bail!("{method} {path}: {code}: {}", error_of(&v));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let text = match &args.command {
        CtlCommand::Status => status_text(&v),
        CtlCommand::Windows => windows_table(&v),
        CtlCommand::Clients => clients_text(&v),
        CtlCommand::Open { .. } | CtlCommand::Freeze { .. } => match v["armed"].as_str() {
            Some(n) => format!("armed {n} (it opens when its trigger fires)\n"),
            None => format!("opened {}\n", v["opened"].as_str().unwrap_or("?")),
        },
        CtlCommand::Close { name } => {
            let mut t = String::new();
            if v["closed"] == true {
                t.push_str(&format!("closed {name} (held events released)\n"));
            }
            if v["disarmed"] == true {
                t.push_str(&format!("disarmed {name} (its trigger will not open it)\n"));
            }
            t
        }
    };
    print!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_read_well() {
        let v = json!({"windows": [{"window": {"name": "f", "client": "*", "resources": ["configmaps"], "fault": {"freeze": {}}}, "openForSeconds": 1.25, "remainingSeconds": null}],
                       "streams": [{"client": "other", "resource": "configmaps", "streams": 2}],
                       "held": {"events": 3, "bytes": 2048, "budgetUsedBytes": 2048},
                       "views": {"bytes": 100, "maxBytes": 268435456}});
        let t = status_text(&v);
        assert!(t.starts_with("WINDOW  FAULT   CLIENT  TARGET           OPEN  REMAINING\nf       freeze  *       configmaps in *  1.2s  -\n"), "{t}");
        assert!(t.contains("other   configmaps  2"), "{t}");
        assert!(
            t.contains("held: 3 events, 2.0 KiB\nviews: 100 B of 256.0 MiB"),
            "{t}"
        );
        assert_eq!(windows_table(&json!({"windows": []})), "no open windows\n");
        let armed = json!({"windows": [], "armed": [
            {"window": {"name": "a", "fault": {"freeze": {}}, "trigger": {"afterRequests": {"verb": "patch", "count": 2}}}, "seen": 1, "count": 2},
            {"window": {"name": "b", "fault": {"lag": {"delay": "1s"}}, "trigger": {"every": "30s"}}, "seen": null, "count": null}]});
        let t = windows_table(&armed);
        assert!(
            t.ends_with("ARMED  FAULT   TRIGGER        SEEN\na      freeze  afterRequests  1 of 2\nb      lag     every 30s      -\n"),
            "{t}"
        );
    }
}
