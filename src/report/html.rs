//! The HTML report: one self-contained file (inline CSS and SVG, no scripts, nothing
//! fetched), a timeline with one lane per object, windows shaded across all lanes, writes
//! and conflicts marked, and the verdicts listed. Under each object the oracles watched:
//! its ground truth as it changed and what each client was given, the time the client was
//! behind shaded between them (`oracle/staleness.rs` computes the gaps).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::Report;
use crate::oracle::staleness::{DeliveryMark, TruthMark, gaps};

/// Escape text for HTML (element content and quoted attributes).
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const LEFT: f64 = 340.0;
/// A truth or delivery row under an object's lane.
const ROW: f64 = 18.0;

struct Layout<'a> {
    top: f64,
    truth: Vec<&'a TruthMark>,
    clients: Vec<String>,
}

impl Layout<'_> {
    fn rows(&self) -> usize {
        if self.truth.is_empty() && self.clients.is_empty() {
            0
        } else {
            1 + self.clients.len()
        }
    }
}

fn status_color(s: &str) -> &'static str {
    match s {
        "Current" => "#68d391",
        "InProgress" => "#f6e05e",
        "Failed" => "#fc8181",
        "Terminating" => "#a0aec0",
        _ => "none",
    }
}
const WIDTH: f64 = 1100.0;
const LANE: f64 = 30.0;
const TOP: f64 = 40.0;

pub fn render(r: &Report) -> String {
    let v = &r.verdicts;
    let total = r.offset(r.ended_at).max(0.001);
    let x =
        |t: std::time::SystemTime| LEFT + (r.offset(t) / total).min(1.0) * (WIDTH - LEFT - 20.0);
    // One lane per object the run touched or judged.
    let mut lanes: BTreeSet<(String, String, String)> = BTreeSet::new();
    for m in &v.timeline {
        lanes.insert((m.resource.clone(), m.namespace.clone(), m.name.clone()));
    }
    for o in &v.objects {
        lanes.insert((o.resource.clone(), o.namespace.clone(), o.name.clone()));
    }
    for o in &v.violations {
        lanes.insert((o.resource.clone(), o.namespace.clone(), o.name.clone()));
    }
    for o in &v.truth {
        lanes.insert((o.resource.clone(), o.namespace.clone(), o.name.clone()));
    }
    let lanes: Vec<_> = lanes.into_iter().collect();
    // Each object: its writes row, then (when the oracles watched it) a ground-truth row
    // and one row per client it was delivered to.
    let layout: Vec<Layout> = {
        let mut y = TOP;
        lanes
            .iter()
            .map(|(res, ns, name)| {
                let is = |r: &str, n: &str, m: &str| r == res && n == ns && m == name;
                let truth: Vec<&TruthMark> = v
                    .truth
                    .iter()
                    .filter(|t| is(&t.resource, &t.namespace, &t.name))
                    .collect();
                let mut clients: Vec<String> = v
                    .deliveries
                    .iter()
                    .filter(|d| is(&d.resource, &d.namespace, &d.name))
                    .map(|d| d.client.clone())
                    .collect();
                clients.sort();
                clients.dedup();
                let rows = if truth.is_empty() && clients.is_empty() {
                    0
                } else {
                    1 + clients.len()
                };
                let l = Layout {
                    top: y,
                    truth,
                    clients,
                };
                y += LANE + ROW * rows as f64;
                l
            })
            .collect()
    };
    let lanes_height = layout
        .last()
        .map_or(LANE, |l| l.top - TOP + LANE + ROW * l.rows() as f64);
    let height = TOP + lanes_height + 30.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">"#
    );
    // Time axis: a tick every tenth of the run.
    for i in 0..=10 {
        let tx = LEFT + f64::from(i) / 10.0 * (WIDTH - LEFT - 20.0);
        let _ = write!(
            svg,
            r##"<line x1="{tx:.1}" y1="{}" x2="{tx:.1}" y2="{:.1}" stroke="#e2e8f0"/><text x="{tx:.1}" y="{}" font-size="10" text-anchor="middle" fill="#4a5568">+{:.1}s</text>"##,
            TOP - 8.0,
            height - 20.0,
            height - 6.0,
            total * f64::from(i) / 10.0
        );
    }
    for w in &v.windows {
        let x1 = x(w.opened_at);
        let x2 = w.closed_at.map_or(WIDTH - 20.0, x);
        let _ = write!(
            svg,
            r##"<rect class="window{cls}" data-window="{name}" x="{x1:.1}" y="{y:.1}" width="{wd:.1}" height="{h:.1}" fill="{fill}" fill-opacity="0.6"><title>{name} ({fault})</title></rect><text class="window-label" x="{x1:.1}" y="{ly:.1}" font-size="11" fill="{ink}">{mark}{name} ({fault})</text>"##,
            name = esc(&w.name),
            fault = esc(&w.fault),
            y = TOP - 8.0,
            wd = (x2 - x1).max(1.5),
            h = lanes_height + 8.0,
            ly = TOP - 14.0,
            // A rewind sends readers back in time: marked apart from the windows that hold.
            cls = if w.fault == "rewind" { " rewind" } else { "" },
            fill = if w.fault == "rewind" {
                "#e9d8fd"
            } else {
                "#fed7d7"
            },
            ink = if w.fault == "rewind" {
                "#553c9a"
            } else {
                "#9b2c2c"
            },
            mark = if w.fault == "rewind" { "⟲ " } else { "" },
        );
    }
    // Controller restarts: a dashed line across every lane where the process was killed.
    for rs in &v.restarts {
        let rx = x(rs.at);
        let _ = write!(
            svg,
            r##"<g class="restart" data-window="{name}"><line x1="{rx:.1}" y1="{y1:.1}" x2="{rx:.1}" y2="{y2:.1}" stroke="#6b46c1" stroke-width="2" stroke-dasharray="4 3"/><text x="{tx:.1}" y="{ty:.1}" font-size="11" fill="#6b46c1">↻</text><title>controller killed by {name} at +{at:.2}s, down {down:.1}s</title></g>"##,
            name = esc(&rs.window),
            y1 = TOP - 8.0,
            y2 = TOP + lanes_height,
            tx = rx + 2.0,
            ty = TOP - 2.0,
            at = r.offset(rs.at),
            down = rs.down_seconds,
        );
    }
    for (i, (res, ns, name)) in lanes.iter().enumerate() {
        let lay = &layout[i];
        let y = lay.top + LANE / 2.0;
        let stuck = v
            .violations
            .iter()
            .any(|x| &x.resource == res && &x.namespace == ns && &x.name == name);
        let label = if ns.is_empty() {
            format!("{res} {name}")
        } else {
            format!("{res} {ns}/{name}")
        };
        let _ = write!(
            svg,
            r##"<g class="lane{cls}" data-object="{obj}"><text x="8" y="{ty:.1}" font-size="12" fill="{color}">{label}</text><line x1="{LEFT}" y1="{y:.1}" x2="{x2}" y2="{y:.1}" stroke="#cbd5e0"/>"##,
            cls = if stuck { " violated" } else { "" },
            obj = esc(&format!("{ns}/{name}")),
            ty = y + 4.0,
            color = if stuck { "#c53030" } else { "#1a202c" },
            label = esc(&label),
            x2 = WIDTH - 20.0,
        );
        for viol in v
            .violations
            .iter()
            .filter(|x| &x.resource == res && &x.namespace == ns && &x.name == name)
        {
            let sx = x(viol.since);
            let _ = write!(
                svg,
                r##"<path class="since" d="M{sx:.1} {a:.1} L{b:.1} {c:.1} L{d:.1} {c:.1} Z" fill="#c53030"><title>{t}</title></path>"##,
                a = y - 6.0,
                b = sx + 5.0,
                c = y - 13.0,
                d = sx - 5.0,
                t = esc(&format!(
                    "{} violation since +{:.1}s: {}",
                    viol.oracle,
                    r.offset(viol.since),
                    viol.rule
                )),
            );
        }
        for m in v
            .timeline
            .iter()
            .filter(|m| &m.resource == res && &m.namespace == ns && &m.name == name)
        {
            let mx = x(m.at);
            let title = esc(&format!(
                "+{:.3}s {} {} → {}",
                r.offset(m.at),
                m.client,
                m.verb,
                m.code
            ));
            if m.code == 409 {
                cross(&mut svg, "conflict", mx, y, 4.0, "#c53030", 2.0, &title);
            } else {
                let _ = write!(
                    svg,
                    r##"<circle class="write" cx="{mx:.1}" cy="{y:.1}" r="3.5" fill="{fill}"><title>{title}</title></circle>"##,
                    fill = if (200..300).contains(&m.code) {
                        "#2b6cb0"
                    } else {
                        "#d69e2e"
                    },
                );
            }
        }
        staleness_rows(&mut svg, r, lay, res, ns, name, &x);
        svg.push_str("</g>");
    }
    svg.push_str("</svg>");

    // One item per violation (or per rate seen inside windows).
    let item = |list: &mut String, x: &crate::oracle::Violation, class: &str, when: &str| {
        let _ = write!(
            list,
            r#"<li class="{class}" data-oracle="{o}"><b>{o}</b> {res} {ns}/{name}{client} — {when} +{since:.1}s: {rule}</li>"#,
            o = esc(&x.oracle),
            res = esc(&x.resource),
            ns = esc(&x.namespace),
            name = esc(&x.name),
            client = x
                .client
                .as_deref()
                .map_or(String::new(), |c| format!(" (client {})", esc(c))),
            since = r.offset(x.since),
            rule = esc(&x.rule),
        );
    };
    let mut list = String::new();
    if v.violations.is_empty() {
        list.push_str(r#"<p class="none">No violations.</p>"#);
    } else {
        list.push_str("<ul class=\"violations\">");
        for x in &v.violations {
            item(&mut list, x, "violation", "since");
        }
        list.push_str("</ul>");
    }
    if !v.inside_windows.is_empty() {
        list.push_str("<p>Seen inside windows (or just after one closed), not violations:</p><ul class=\"inside-windows\">");
        for x in &v.inside_windows {
            item(&mut list, x, "inside", "from");
        }
        list.push_str("</ul>");
    }
    let mut recov = String::new();
    if !v.recoveries.is_empty() {
        recov.push_str("<h2>Recovery after each window</h2><table><tr><th>window</th><th>object</th><th>recovered after</th></tr>");
        for rc in &v.recoveries {
            let _ = write!(
                recov,
                "<tr><td>{}</td><td>{}/{}</td><td>{}</td></tr>",
                esc(&rc.window),
                esc(&rc.namespace),
                esc(&rc.name),
                rc.seconds
                    .map_or("not recovered".to_string(), |s| format!("{s:.2} s"))
            );
        }
        recov.push_str("</table>");
    }
    let verdict = match r.verdict.as_str() {
        "fail" => format!("FAIL — {} violation(s)", v.violations.len()),
        "pass" => "PASS".to_string(),
        _ => format!(
            "NOT JUDGED — {}",
            esc(v.pending.as_deref().unwrap_or("the run ended too early"))
        ),
    };
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>stalemate report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; color: #1a202c; }}
h1 {{ font-size: 20px; }} h2 {{ font-size: 16px; margin-top: 24px; }}
.verdict {{ font-weight: bold; padding: 4px 8px; border-radius: 4px; display: inline-block; }}
.verdict.fail {{ background: #fed7d7; color: #9b2c2c; }} .verdict.pass {{ background: #c6f6d5; color: #22543d; }}
.verdict.not-judged {{ background: #fefcbf; color: #744210; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #e2e8f0; padding: 2px 8px; text-align: left; }}
.legend span {{ margin-right: 16px; }}
</style></head>
<body>
<h1>stalemate report</h1>
<p>{started} — {secs:.1} s. <span class="verdict {vcls}" id="verdict">{verdict}</span></p>
<p class="legend"><span style="color:#2b6cb0">● write</span><span style="color:#c53030">✕ conflict (409)</span><span style="background:#fed7d7">&nbsp;window&nbsp;</span><span style="background:#e9d8fd">&nbsp;⟲ rewind&nbsp;</span><span style="color:#6b46c1">↻ controller restart</span></p>
<p class="legend">Under each watched object: <b>truth</b> (kstatus: <span style="background:#68d391">&nbsp;Current&nbsp;</span> <span style="background:#f6e05e">&nbsp;InProgress&nbsp;</span> <span style="background:#fc8181">&nbsp;Failed&nbsp;</span>, a tick per resourceVersion) and what each client was given (<span style="color:#2f855a">● delivered</span> <span style="color:#c05621">■ held</span> <span style="color:#2b6cb0">◆ released</span> <span style="color:#718096">✕ dropped</span>); <span style="background:#fefcbf">&nbsp;shaded&nbsp;</span>: the client was behind the truth.</p>
{svg}
<h2>Violations</h2>
{list}
{recov}
</body></html>
"#,
        started = humantime::format_rfc3339_seconds(r.started_at),
        secs = total,
        vcls = r.verdict.replace(' ', "-"),
    )
}

/// An ✕ of half-size `r` at (x, y), with a tooltip (`title` already escaped).
#[allow(clippy::too_many_arguments)]
fn cross(
    svg: &mut String,
    class: &str,
    x: f64,
    y: f64,
    r: f64,
    stroke: &str,
    width: f64,
    title: &str,
) {
    let (a, b, c, d) = (x - r, y - r, x + r, y + r);
    let _ = write!(
        svg,
        r##"<path class="{class}" d="M{a:.1} {b:.1} L{c:.1} {d:.1} M{a:.1} {d:.1} L{c:.1} {b:.1}" stroke="{stroke}" stroke-width="{width}"><title>{title}</title></path>"##,
    );
}

/// An object's truth row and one row per client, the gap between them shaded.
fn staleness_rows(
    svg: &mut String,
    r: &Report,
    lay: &Layout,
    res: &str,
    ns: &str,
    name: &str,
    x: &dyn Fn(std::time::SystemTime) -> f64,
) {
    if lay.rows() == 0 {
        return;
    }
    let end = WIDTH - 20.0;
    let truth_y = lay.top + LANE;
    let _ = write!(
        svg,
        r##"<text x="24" y="{ty:.1}" font-size="10" fill="#4a5568">truth</text>"##,
        ty = truth_y + ROW / 2.0 + 3.0
    );
    for (i, t) in lay.truth.iter().enumerate() {
        let x1 = x(t.at);
        let x2 = lay.truth.get(i + 1).map_or(end, |n| x(n.at));
        let what = if t.status == "Deleted" {
            format!("+{:.3}s deleted", r.offset(t.at))
        } else {
            format!(
                "+{:.3}s resourceVersion {} · generation {} · observedGeneration {} · {}",
                r.offset(t.at),
                t.resource_version,
                t.generation.map_or("-".into(), |g| g.to_string()),
                t.observed_generation.map_or("-".into(), |g| g.to_string()),
                t.status
            )
        };
        let _ = write!(
            svg,
            r##"<g class="truth" data-status="{st}"><rect x="{x1:.1}" y="{y:.1}" width="{w:.1}" height="10" fill="{fill}"/><line x1="{x1:.1}" y1="{y:.1}" x2="{x1:.1}" y2="{y2:.1}" stroke="#2d3748"/><title>{what}</title></g>"##,
            st = esc(&t.status),
            y = truth_y + 4.0,
            y2 = truth_y + 14.0,
            w = (x2 - x1).max(1.0),
            fill = status_color(&t.status),
            what = esc(&what),
        );
    }
    for (c, client) in lay.clients.iter().enumerate() {
        let row_y = truth_y + ROW * (c + 1) as f64;
        let mine: Vec<&DeliveryMark> = r
            .verdicts
            .deliveries
            .iter()
            .filter(|d| {
                d.resource == res && d.namespace == ns && d.name == name && &d.client == client
            })
            .collect();
        // The gap first, under the marks: from a change to the client catching up.
        for (from, to, rv) in gaps(&lay.truth, &mine) {
            let x1 = x(from);
            let x2 = to.map_or(end, x);
            if x2 - x1 < 1.0 {
                continue;
            }
            let _ = write!(
                svg,
                r##"<rect class="gap" data-client="{cl}" x="{x1:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="#fefcbf" fill-opacity="0.9"><title>{cl} behind the truth from +{a:.3}s {until} (truth at resourceVersion {rv})</title></rect>"##,
                cl = esc(client),
                y = truth_y + 2.0,
                w = x2 - x1,
                h = ROW * (c + 1) as f64 + 12.0,
                a = r.offset(from),
                until = to.map_or("to the end".to_string(), |t| format!(
                    "until +{:.3}s",
                    r.offset(t)
                )),
                rv = esc(&rv),
            );
        }
        let _ = write!(
            svg,
            r##"<text x="24" y="{ty:.1}" font-size="10" fill="#4a5568">seen by {cl}</text><line x1="{LEFT}" y1="{ly:.1}" x2="{end}" y2="{ly:.1}" stroke="#edf2f7"/>"##,
            cl = esc(client),
            ty = row_y + ROW / 2.0 + 3.0,
            ly = row_y + ROW / 2.0,
        );
        let cy = row_y + ROW / 2.0;
        for d in &mine {
            let dx = x(d.at);
            let title = esc(&format!(
                "+{:.3}s {} {} resourceVersion {}",
                r.offset(d.at),
                d.fate,
                d.type_,
                d.resource_version
            ));
            match d.fate.as_str() {
                "held" => {
                    let _ = write!(
                        svg,
                        r##"<rect class="held" x="{a:.1}" y="{b:.1}" width="7" height="7" fill="#c05621"><title>{title}</title></rect>"##,
                        a = dx - 3.5,
                        b = cy - 3.5,
                    );
                }
                "released" => {
                    // A line back to where it was held.
                    if let Some(h) = mine.iter().find(|h| {
                        h.fate == "held" && h.resource_version == d.resource_version && h.at <= d.at
                    }) {
                        let _ = write!(
                            svg,
                            r##"<line x1="{a:.1}" y1="{cy:.1}" x2="{dx:.1}" y2="{cy:.1}" stroke="#c05621" stroke-dasharray="2 2"/>"##,
                            a = x(h.at),
                        );
                    }
                    let _ = write!(
                        svg,
                        r##"<path class="released" d="M{dx:.1} {a:.1} L{b:.1} {cy:.1} L{dx:.1} {c:.1} L{e:.1} {cy:.1} Z" fill="#2b6cb0"><title>{title}</title></path>"##,
                        a = cy - 4.5,
                        b = dx + 4.5,
                        c = cy + 4.5,
                        e = dx - 4.5,
                    );
                }
                "dropped" => {
                    cross(svg, "dropped", dx, cy, 3.0, "#718096", 1.5, &title);
                }
                _ => {
                    let _ = write!(
                        svg,
                        r##"<circle class="delivered" cx="{dx:.1}" cy="{cy:.1}" r="3" fill="#2f855a"><title>{title}</title></circle>"##,
                    );
                }
            }
        }
    }
}
