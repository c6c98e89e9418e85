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

/// The report's time scale: where a moment of the run sits on the timeline.
struct Scale<'a> {
    r: &'a Report,
    /// The run's length in seconds (never zero).
    total: f64,
}

impl Scale<'_> {
    /// The x coordinate of `t`, clamped to the end of the run.
    fn x(&self, t: std::time::SystemTime) -> f64 {
        LEFT + (self.r.offset(t) / self.total).min(1.0) * (WIDTH - LEFT - 20.0)
    }
}

/// An object on the timeline: (resource, namespace, name).
type Lane = (String, String, String);

pub fn render(r: &Report) -> String {
    let v = &r.verdicts;
    let total = r.offset(r.ended_at).max(0.001);
    let s = Scale { r, total };
    let lanes = lanes(v);
    let layout = layouts(v, &lanes);
    let lanes_height = layout
        .last()
        .map_or(LANE, |l| l.top - TOP + LANE + ROW * l.rows() as f64);
    let height = TOP + lanes_height + 30.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">"#
    );
    time_axis(&mut svg, total, height);
    window_bands(&mut svg, &s, lanes_height);
    restart_lines(&mut svg, &s, lanes_height);
    for (key, lay) in lanes.iter().zip(&layout) {
        lane(&mut svg, &s, lay, key);
    }
    svg.push_str("</svg>");
    let list = violations_list(r);
    let recov = recoveries_table(v);
    let verdict = verdict_text(r);
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

/// One lane per object the run touched or judged, in order.
fn lanes(v: &crate::oracle::Verdicts) -> Vec<Lane> {
    let mut lanes: BTreeSet<Lane> = BTreeSet::new();
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
    lanes.into_iter().collect()
}

/// Where each lane sits and what goes under it.
fn layouts<'a>(v: &'a crate::oracle::Verdicts, lanes: &[Lane]) -> Vec<Layout<'a>> {
    // Each object: its writes row, then (when the oracles watched it) a ground-truth row
    // and one row per client it was delivered to.
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
            let l = Layout {
                top: y,
                truth,
                clients,
            };
            y += LANE + ROW * l.rows() as f64;
            l
        })
        .collect()
}

/// The time axis: a tick every tenth of the run.
fn time_axis(svg: &mut String, total: f64, height: f64) {
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
}

/// Each window shaded across all lanes, labelled with its name and fault.
fn window_bands(svg: &mut String, s: &Scale, lanes_height: f64) {
    for w in &s.r.verdicts.windows {
        let x1 = s.x(w.opened_at);
        let x2 = w.closed_at.map_or(WIDTH - 20.0, |t| s.x(t));
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
}

/// Controller restarts: a dashed line across every lane where the process was killed.
fn restart_lines(svg: &mut String, s: &Scale, lanes_height: f64) {
    for rs in &s.r.verdicts.restarts {
        let rx = s.x(rs.at);
        let _ = write!(
            svg,
            r##"<g class="restart" data-window="{name}"><line x1="{rx:.1}" y1="{y1:.1}" x2="{rx:.1}" y2="{y2:.1}" stroke="#6b46c1" stroke-width="2" stroke-dasharray="4 3"/><text x="{tx:.1}" y="{ty:.1}" font-size="11" fill="#6b46c1">↻</text><title>controller killed by {name} at +{at:.2}s, down {down:.1}s</title></g>"##,
            name = esc(&rs.window),
            y1 = TOP - 8.0,
            y2 = TOP + lanes_height,
            tx = rx + 2.0,
            ty = TOP - 2.0,
            at = s.r.offset(rs.at),
            down = rs.down_seconds,
        );
    }
}

/// One object's lane: its label, where its violations began, its writes and conflicts,
/// then its staleness rows.
fn lane(svg: &mut String, s: &Scale, lay: &Layout, key: &Lane) {
    let (res, ns, name) = key;
    let y = lay.top + LANE / 2.0;
    let stuck =
        s.r.verdicts
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
    violation_flags(svg, s, key, y);
    write_marks(svg, s, key, y);
    staleness_rows(svg, s, lay, key);
    svg.push_str("</g>");
}

/// A flag on the lane where each of the object's violations began.
fn violation_flags(svg: &mut String, s: &Scale, (res, ns, name): &Lane, y: f64) {
    for viol in
        s.r.verdicts
            .violations
            .iter()
            .filter(|x| &x.resource == res && &x.namespace == ns && &x.name == name)
    {
        let sx = s.x(viol.since);
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
                s.r.offset(viol.since),
                viol.rule
            )),
        );
    }
}

/// The object's writes (dots) and conflicts (crosses) on its lane.
fn write_marks(svg: &mut String, s: &Scale, (res, ns, name): &Lane, y: f64) {
    for m in
        s.r.verdicts
            .timeline
            .iter()
            .filter(|m| &m.resource == res && &m.namespace == ns && &m.name == name)
    {
        let mx = s.x(m.at);
        let title = esc(&format!(
            "+{:.3}s {} {} → {}",
            s.r.offset(m.at),
            m.client,
            m.verb,
            m.code
        ));
        if m.code == 409 {
            cross(svg, "conflict", mx, y, 4.0, "#c53030", 2.0, &title);
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
}

/// `namespace/name`, or the name alone for a cluster-scoped object (as kubectl names it).
fn object_name(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    }
}

/// The list of violations, then the rates seen inside windows.
fn violations_list(r: &Report) -> String {
    let v = &r.verdicts;
    // One item per violation (or per rate seen inside windows).
    let item = |list: &mut String, x: &crate::oracle::Violation, class: &str, when: &str| {
        let _ = write!(
            list,
            r#"<li class="{class}" data-oracle="{o}"><b>{o}</b> {res} {object}{client} — {when} +{since:.1}s: {rule}</li>"#,
            o = esc(x.oracle.as_str()),
            res = esc(&x.resource),
            object = esc(&object_name(&x.namespace, &x.name)),
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
    list
}

/// The table of how long each object took to recover after each window (empty: none).
fn recoveries_table(v: &crate::oracle::Verdicts) -> String {
    let mut recov = String::new();
    if !v.recoveries.is_empty() {
        recov.push_str("<h2>Recovery after each window</h2><table><tr><th>window</th><th>object</th><th>recovered after</th></tr>");
        for rc in &v.recoveries {
            let _ = write!(
                recov,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&rc.window),
                esc(&object_name(&rc.namespace, &rc.name)),
                rc.seconds
                    .map_or("not recovered".to_string(), |s| format!("{s:.2} s"))
            );
        }
        recov.push_str("</table>");
    }
    recov
}

/// The verdict in the page's heading (escaped).
fn verdict_text(r: &Report) -> String {
    let v = &r.verdicts;
    match r.verdict.as_str() {
        "fail" => format!("FAIL — {} violation(s)", v.violations.len()),
        "pass" if r.no_window_opened => format!(
            "PASS, but nothing was tested — {}",
            esc(super::NO_WINDOW_OPENED)
        ),
        "pass" => "PASS".to_string(),
        _ => format!(
            "NOT JUDGED — {}",
            esc(v.pending.as_deref().unwrap_or("the run ended too early"))
        ),
    }
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

/// One client's row under an object: where it sits and what it was given.
struct ClientRow<'a> {
    client: &'a str,
    /// The y of the object's truth row.
    truth_y: f64,
    /// The y of this row.
    row_y: f64,
    /// Rows below the truth row (1 for the first client).
    below: usize,
    mine: Vec<&'a DeliveryMark>,
}

/// An object's truth row and one row per client, the gap between them shaded.
fn staleness_rows(svg: &mut String, s: &Scale, lay: &Layout, (res, ns, name): &Lane) {
    if lay.rows() == 0 {
        return;
    }
    let truth_y = lay.top + LANE;
    truth_row(svg, s, lay, truth_y);
    for (c, client) in lay.clients.iter().enumerate() {
        let mine: Vec<&DeliveryMark> = s
            .r
            .verdicts
            .deliveries
            .iter()
            .filter(|d| {
                &d.resource == res && &d.namespace == ns && &d.name == name && &d.client == client
            })
            .collect();
        let row = ClientRow {
            client,
            truth_y,
            row_y: truth_y + ROW * (c + 1) as f64,
            below: c + 1,
            mine,
        };
        // The gap first, under the marks: from a change to the client catching up.
        gap_shades(svg, s, lay, &row);
        let _ = write!(
            svg,
            r##"<text x="24" y="{ty:.1}" font-size="10" fill="#4a5568">seen by {cl}</text><line x1="{LEFT}" y1="{ly:.1}" x2="{end}" y2="{ly:.1}" stroke="#edf2f7"/>"##,
            cl = esc(client),
            ty = row.row_y + ROW / 2.0 + 3.0,
            ly = row.row_y + ROW / 2.0,
            end = WIDTH - 20.0,
        );
        delivery_marks(svg, s, &row);
    }
}

/// The truth row: the object's kstatus as it changed, a tick per resourceVersion.
fn truth_row(svg: &mut String, s: &Scale, lay: &Layout, truth_y: f64) {
    let end = WIDTH - 20.0;
    let _ = write!(
        svg,
        r##"<text x="24" y="{ty:.1}" font-size="10" fill="#4a5568">truth</text>"##,
        ty = truth_y + ROW / 2.0 + 3.0
    );
    for (i, t) in lay.truth.iter().enumerate() {
        let x1 = s.x(t.at);
        let x2 = lay.truth.get(i + 1).map_or(end, |n| s.x(n.at));
        let what = if t.status == "Deleted" {
            format!("+{:.3}s deleted", s.r.offset(t.at))
        } else {
            format!(
                "+{:.3}s resourceVersion {} · generation {} · observedGeneration {} · {}",
                s.r.offset(t.at),
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
}

/// The time the client was behind the truth, shaded from the truth row down to its row.
fn gap_shades(svg: &mut String, s: &Scale, lay: &Layout, row: &ClientRow) {
    let end = WIDTH - 20.0;
    for (from, to, rv) in gaps(&lay.truth, &row.mine) {
        let x1 = s.x(from);
        let x2 = to.map_or(end, |t| s.x(t));
        if x2 - x1 < 1.0 {
            continue;
        }
        let _ = write!(
            svg,
            r##"<rect class="gap" data-client="{cl}" x="{x1:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="#fefcbf" fill-opacity="0.9"><title>{cl} behind the truth from +{a:.3}s {until} (truth at resourceVersion {rv})</title></rect>"##,
            cl = esc(row.client),
            y = row.truth_y + 2.0,
            w = x2 - x1,
            h = ROW * row.below as f64 + 12.0,
            a = s.r.offset(from),
            until = to.map_or("to the end".to_string(), |t| format!(
                "until +{:.3}s",
                s.r.offset(t)
            )),
            rv = esc(&rv),
        );
    }
}

/// What the client was given: a mark per event by its fate.
fn delivery_marks(svg: &mut String, s: &Scale, row: &ClientRow) {
    let cy = row.row_y + ROW / 2.0;
    for d in &row.mine {
        let dx = s.x(d.at);
        let title = esc(&format!(
            "+{:.3}s {} {} resourceVersion {}",
            s.r.offset(d.at),
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
            "released" => released_mark(svg, s, &row.mine, d, cy, &title),
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

/// A released event: a diamond, with a line back to where it was held.
fn released_mark(
    svg: &mut String,
    s: &Scale,
    mine: &[&DeliveryMark],
    d: &DeliveryMark,
    cy: f64,
    title: &str,
) {
    let dx = s.x(d.at);
    // A line back to where it was held.
    if let Some(h) = mine
        .iter()
        .find(|h| h.fate == "held" && h.resource_version == d.resource_version && h.at <= d.at)
    {
        let _ = write!(
            svg,
            r##"<line x1="{a:.1}" y1="{cy:.1}" x2="{dx:.1}" y2="{cy:.1}" stroke="#c05621" stroke-dasharray="2 2"/>"##,
            a = s.x(h.at),
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
