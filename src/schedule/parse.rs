//! Reading a schedule file, with as many of its errors as can be found at once, each at
//! its line and column.
//!
//! The text is read as JSON first (a syntax error stops there: nothing after it can be
//! trusted). Then the top level, each client and each window are deserialized apart, so
//! one window's type error does not hide another's; the checks serde cannot make
//! (references, regexes, unique names) run on every part that deserialized, with the
//! names of the clients and windows taken from the text itself so a part that did not
//! deserialize is not reported again as a dangling reference. Every error is placed with
//! the text's [`Spans`].

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use super::{ClientMatcher, Fault, Schedule, ScheduleError, Window};
use crate::spans::{self, Located, Spans, item, join};

impl Schedule {
    /// Parse and check a schedule. `file` names it in errors (a file path). The errors
    /// come in the order of the text.
    pub fn parse(text: &str, file: &str) -> Result<Schedule, Vec<ScheduleError>> {
        let (value, spans) = spans::read_json(text, file).map_err(|e| vec![e])?;
        let mut errs = spans.duplicate_errors(file);
        let parts = Parts::of(&value, file, &spans, &mut errs);
        errs.extend(
            parts
                .problems()
                .into_iter()
                .map(|(path, message)| Located::at_path(file, &spans, path, message)),
        );
        spans::sort(&mut errs);
        match parts.top {
            Some(mut s) if errs.is_empty() => {
                s.clients = parts.clients;
                s.windows = parts.windows.into_iter().map(|(_, w)| w).collect();
                Ok(s)
            }
            _ => Err(errs),
        }
    }

    /// The checks serde cannot make, on a schedule built in code (explore's plans): its
    /// errors name `file` and a path, with no text to place them in.
    pub fn check(&self, file: &str) -> Vec<ScheduleError> {
        let parts = Parts {
            top: None,
            clients: self.clients.clone(),
            windows: self.windows.iter().cloned().enumerate().collect(),
            client_names: self.clients.keys().map(String::as_str).collect(),
            window_names: (self.windows.iter().enumerate())
                .map(|(i, w)| (i, w.name.as_str()))
                .collect(),
        };
        let none = Spans::default();
        (parts.problems().into_iter())
            .map(|(path, message)| Located::at_path(file, &none, path, message))
            .collect()
    }
}

impl Window {
    /// Parse a window object (control API body): its first error, placed in the body.
    pub fn parse(text: &str) -> Result<Window, ScheduleError> {
        spans::from_json(text, "window").map_err(|mut e| e.swap_remove(0))
    }
}

/// The value, or `None` with its error kept.
fn keep<T>(r: Result<T, Located>, errs: &mut Vec<Located>) -> Option<T> {
    r.map_err(|e| errs.push(e)).ok()
}

/// A schedule's parts, each deserialized on its own.
struct Parts<'a> {
    /// Everything but the clients and the windows (`None`: it did not deserialize).
    top: Option<Schedule>,
    clients: BTreeMap<String, ClientMatcher>,
    /// The windows that deserialized, with their index in the file.
    windows: Vec<(usize, Window)>,
    /// The names the text gives clients and windows, deserialized or not.
    client_names: HashSet<&'a str>,
    window_names: Vec<(usize, &'a str)>,
}

impl<'a> Parts<'a> {
    fn of(value: &'a Value, file: &str, spans: &Spans, errs: &mut Vec<Located>) -> Parts<'a> {
        let clients_in = value.get("clients").and_then(Value::as_object);
        let windows_in = value.get("windows").and_then(Value::as_array);
        let mut top = value.clone();
        if let Some(o) = top.as_object_mut() {
            // Deserialized apart below; a wrong type stays for the top to report.
            if clients_in.is_some() {
                o.insert("clients".into(), Value::Object(Default::default()));
            }
            if windows_in.is_some() {
                o.insert("windows".into(), Value::Array(Vec::new()));
            }
        }
        let top = keep(spans::deserialize::<Schedule>(&top, "", file, spans), errs);
        let clients = clients_in
            .into_iter()
            .flatten()
            .filter_map(|(name, c)| {
                let path = join("clients", name);
                keep(
                    spans::deserialize::<ClientMatcher>(c, &path, file, spans),
                    errs,
                )
                .map(|c| (name.clone(), c))
            })
            .collect();
        let windows = windows_in
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(i, w)| {
                keep(
                    spans::deserialize::<Window>(w, &item("windows", i), file, spans),
                    errs,
                )
                .map(|w| (i, w))
            })
            .collect();
        Parts {
            top,
            clients,
            windows,
            client_names: clients_in
                .into_iter()
                .flatten()
                .map(|(k, _)| k.as_str())
                .collect(),
            window_names: windows_in
                .into_iter()
                .flatten()
                .enumerate()
                .filter_map(|(i, w)| Some((i, w.get("name")?.as_str()?)))
                .collect(),
        }
    }

    /// The checks serde cannot make, as (path, message).
    fn problems(&self) -> Vec<(String, String)> {
        let mut errs = Vec::new();
        for (name, c) in &self.clients {
            for (f, m) in c.check() {
                errs.push((format!("clients.{name}.{f}"), m));
            }
        }
        let names: HashSet<&str> = self.window_names.iter().map(|(_, n)| *n).collect();
        for (i, w) in &self.windows {
            if let Fault::Rewind(r) = &w.fault
                && let Some(at) = &r.at
                && (!names.contains(at.as_str()) || *at == w.name)
            {
                errs.push((
                    format!("windows[{i}].fault.rewind.at"),
                    format!("{at:?} is not another window of this schedule"),
                ));
            }
            errs.extend(
                w.check_with(|c| self.client_names.contains(c))
                    .into_iter()
                    .map(|(p, m)| (format!("windows[{i}].{p}"), m)),
            );
        }
        let mut seen = HashSet::new();
        for (i, name) in &self.window_names {
            if !seen.insert(name) {
                errs.push((
                    format!("windows[{i}].name"),
                    format!("{name:?} is used by another window"),
                ));
            }
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_is_read_apart_and_every_error_placed_in_order() {
        let text = "{\"sead\": 1, \"clients\": {\"a\": {\"userAgent\": \"(\"}},\n \"windows\": [\n  {\"name\": \"x\", \"fault\": {\"frieze\": {}}},\n  {\"name\": \"y\", \"client\": \"a\", \"fault\": {\"rewind\": {\"at\": \"x\"}}, \"fault\": {\"freeze\": {}}}\n]}";
        let e = Schedule::parse(text, "f.json").unwrap_err();
        let got: Vec<(String, u32, u32)> = e
            .iter()
            .map(|e| {
                let at = e.at.unwrap_or(crate::spans::Pos { line: 0, column: 0 });
                (e.path.clone(), at.line, at.column)
            })
            .collect();
        // The client with a bad regex is still a client, and the window that did not
        // deserialize still a name: no error about either follows from theirs.
        assert_eq!(
            got,
            [
                ("sead".to_string(), 1, 2),
                ("clients.a.userAgent".to_string(), 1, 44),
                ("windows[0].fault".to_string(), 3, 26),
                ("windows[1]".to_string(), 4, 66),
            ],
            "{e:#?}"
        );
        assert_eq!(e[3].message, "duplicate field `fault`");
        assert!(
            e[2].message.contains("unknown variant `frieze`"),
            "{}",
            e[2]
        );
    }

    #[test]
    fn a_window_body_is_placed_too() {
        let e = Window::parse("{\"name\": \"w\",\n \"fault\": {\"lag\": {\"delay\": \"soon\"}}}")
            .unwrap_err();
        assert!(
            e.to_string().starts_with("window:2:29: fault.lag.delay: "),
            "{e}"
        );
    }
}
