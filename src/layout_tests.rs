//! The crate's top-level modules form a hierarchy: no module depends, through any chain
//! of `crate::` paths, on one that depends back on it. Import circles are how a fault
//! used to end up spread over five files; this test keeps them out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `crate::NAME` references in `text`, including `use crate::{a, b::c}` groups.
fn references(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// Top-level module → the top-level modules its files reference.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).expect("under src");
            let first = rel
                .components()
                .next()
                .and_then(|c| c.as_os_str().to_str())
                .unwrap_or("");
            let module = first.trim_end_matches(".rs").to_string();
            if matches!(module.as_str(), "lib" | "main" | "layout_tests") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("readable source");
            let refs = g.entry(module.clone()).or_default();
            for r in references(&text) {
                if r != module {
                    refs.insert(r);
                }
            }
        }
    }
    g
}

/// A cycle through `node`, if any, as the path that closes it.
fn cycle(
    g: &BTreeMap<String, BTreeSet<String>>,
    node: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(i) = path.iter().position(|p| p == node) {
        let mut c = path[i..].to_vec();
        c.push(node.to_string());
        return Some(c);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_string());
    for next in g.get(node).into_iter().flatten() {
        if let Some(c) = cycle(g, next, path, done) {
            return Some(c);
        }
    }
    path.pop();
    done.insert(node.to_string());
    None
}

#[test]
fn modules_have_no_import_circles() {
    let g = graph();
    assert!(g.contains_key("proxy") && g.contains_key("fault"), "{g:?}");
    let mut done = BTreeSet::new();
    let mut circles = Vec::new();
    for node in g.keys() {
        if let Some(c) = cycle(&g, node, &mut Vec::new(), &mut done) {
            circles.push(c.join(" → "));
        }
    }
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn references_are_read_from_paths_and_use_groups() {
    let r = references("use crate::{fault::Fault, watch};\nlet x = crate::proxy::OTHER;");
    assert_eq!(
        r.into_iter().collect::<Vec<_>>(),
        ["fault", "proxy", "watch"]
    );
}
