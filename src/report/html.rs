//! The HTML report: one self-contained file (inline CSS and SVG, no scripts, nothing
//! fetched), a timeline with one lane per object, windows shaded across all lanes, writes
//! and conflicts marked, and the verdicts listed.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::Report;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const LEFT: f64 = 340.0;
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
    let lanes: Vec<_> = lanes.into_iter().collect();
    let height = TOP + LANE * lanes.len().max(1) as f64 + 30.0;
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
            r##"<rect class="window" data-window="{name}" x="{x1:.1}" y="{y:.1}" width="{wd:.1}" height="{h:.1}" fill="#fed7d7" fill-opacity="0.7"><title>{name} ({fault})</title></rect><text class="window-label" x="{x1:.1}" y="{ly:.1}" font-size="11" fill="#9b2c2c">{name} ({fault})</text>"##,
            name = esc(&w.name),
            fault = esc(&w.fault),
            y = TOP - 8.0,
            wd = (x2 - x1).max(1.5),
            h = LANE * lanes.len().max(1) as f64 + 8.0,
            ly = TOP - 14.0,
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
            y2 = TOP + LANE * lanes.len().max(1) as f64,
            tx = rx + 2.0,
            ty = TOP - 2.0,
            at = r.offset(rs.at),
            down = rs.down_seconds,
        );
    }
    for (i, (res, ns, name)) in lanes.iter().enumerate() {
        let y = TOP + LANE * i as f64 + LANE / 2.0;
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
                let _ = write!(
                    svg,
                    r##"<path class="conflict" d="M{a:.1} {b:.1} L{c:.1} {d:.1} M{a:.1} {d:.1} L{c:.1} {b:.1}" stroke="#c53030" stroke-width="2"><title>{title}</title></path>"##,
                    a = mx - 4.0,
                    b = y - 4.0,
                    c = mx + 4.0,
                    d = y + 4.0,
                );
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
        svg.push_str("</g>");
    }
    svg.push_str("</svg>");

    let mut list = String::new();
    if v.violations.is_empty() {
        list.push_str(r#"<p class="none">No violations.</p>"#);
    } else {
        list.push_str("<ul class=\"violations\">");
        for x in &v.violations {
            let _ = write!(
                list,
                r#"<li class="violation" data-oracle="{o}"><b>{o}</b> {res} {ns}/{name}{client} — since +{since:.1}s: {rule}</li>"#,
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
<p class="legend"><span style="color:#2b6cb0">● write</span><span style="color:#c53030">✕ conflict (409)</span><span style="background:#fed7d7">&nbsp;window&nbsp;</span><span style="color:#6b46c1">↻ controller restart</span></p>
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
