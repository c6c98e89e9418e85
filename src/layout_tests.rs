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

// ---- circles inside one folder -------------------------------------------------------
//
// The same rule one level down: the files and subfolders of a folder form a hierarchy.
// References are read from `super::`, `self::` and `crate::<folder>::` paths (and, in the
// folder's `mod.rs`, paths through the modules it declares); a subfolder is one node, and
// `mod.rs` is the node `mod` (a child naming an item of `mod.rs` depends on it).

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The path that starts at `s` (`a::b::{c, d::e}` gives `a::b::c` and `a::b::d::e`), each
/// as its segments, and how many bytes it took.
fn path_at(s: &str) -> (Vec<Vec<String>>, usize) {
    let mut segs = Vec::new();
    let mut i = 0;
    loop {
        let ident: String = s[i..].chars().take_while(|c| is_ident(*c)).collect();
        if ident.is_empty() {
            if s[i..].starts_with('*') {
                segs.push("*".to_string());
                i += 1;
            }
            return (vec![segs], i);
        }
        i += ident.len();
        segs.push(ident);
        if !s[i..].starts_with("::") {
            return (vec![segs], i);
        }
        i += 2;
        if s[i..].starts_with('{') {
            let (items, used) = group_at(&s[i + 1..]);
            let out = items
                .into_iter()
                .map(|tail| segs.iter().cloned().chain(tail).collect())
                .collect();
            return (out, i + 1 + used);
        }
    }
}

/// The paths of a `{...}` group whose text starts after its `{`, and the bytes up to and
/// including its `}`.
fn group_at(s: &str) -> (Vec<Vec<String>>, usize) {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i..].chars().next().unwrap_or(' ');
        if c == '}' {
            return (out, i + 1);
        }
        if is_ident(c) || c == '*' {
            let (paths, used) = path_at(&s[i..]);
            out.extend(
                paths
                    .into_iter()
                    .filter(|p| p.first().is_none_or(|f| f != "self")),
            );
            i += used.max(1);
            continue;
        }
        i += c.len_utf8();
    }
    (out, i)
}

/// Every path in `text` that starts at a word boundary (comment lines skipped), with the
/// number of inline modules (`mod tests {`) open where it starts (approximated: opened
/// above it).
fn paths_in(text: &str) -> Vec<(Vec<String>, usize)> {
    let mut code = String::with_capacity(text.len());
    // Where each inline module opens, as a byte offset into `code`.
    let mut opened = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        let decl = ["pub ", "pub(crate) ", "pub(super) "]
            .iter()
            .fold(t, |d, p| d.strip_prefix(p).unwrap_or(d));
        if decl.starts_with("mod ") && decl.trim_end().ends_with('{') {
            opened.push(code.len());
        }
        code.push_str(line);
        code.push('\n');
    }
    let mut out = Vec::new();
    let (mut i, mut prev) = (0, ' ');
    while i < code.len() {
        let c = code[i..].chars().next().unwrap_or(' ');
        if is_ident(c) && !is_ident(prev) && prev != ':' {
            let (paths, used) = path_at(&code[i..]);
            let inline = opened.iter().filter(|o| **o <= i).count();
            out.extend(
                (paths.into_iter())
                    .filter(|p| p.len() > 1)
                    .map(|p| (p, inline)),
            );
            prev = code[i..i + used].chars().last().unwrap_or(' ');
            i += used.max(1);
            continue;
        }
        prev = c;
        i += c.len_utf8();
    }
    out
}

/// Module graph of the folder `<crate>/<folder>` (`crate` a crate's `src/`, `folder` empty
/// for the crate's own top level): node → the nodes its files reference.
fn folder_graph(krate: &str, folder: &str) -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(krate)
        .join(folder);
    let prefix: Vec<String> = (folder.split('/'))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("folder is readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let node_of = |first: &str| first.trim_end_matches(".rs").to_string();
    let nodes: BTreeSet<String> = (files.iter())
        .filter_map(|f| f.strip_prefix(&root).ok()?.components().next())
        .map(|c| node_of(&c.as_os_str().to_string_lossy()))
        .filter(|n| n != "lib")
        .collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(&root).expect("under the folder");
        // The file's module path inside the folder (`a/mod.rs` is `a`, `mod.rs` is empty).
        let mut module: Vec<String> = (rel.components())
            .map(|c| node_of(&c.as_os_str().to_string_lossy()))
            .collect();
        if module.last().is_some_and(|m| m == "mod") || module == ["lib"] {
            module.pop();
        }
        let node = module.first().cloned().unwrap_or_else(|| "mod".into());
        let text = std::fs::read_to_string(file).expect("readable source");
        let refs = g.entry(node.clone()).or_default();
        for (path, inline) in paths_in(&text) {
            let here: Vec<String> = (module.iter().cloned())
                .chain(std::iter::repeat_n(String::new(), inline))
                .collect();
            let target: Vec<String> = match path[0].as_str() {
                "crate" if path[1..].starts_with(&prefix) => path[1 + prefix.len()..].to_vec(),
                "self" => here.iter().chain(&path[1..]).cloned().collect(),
                "super" => {
                    let up = path.iter().take_while(|s| *s == "super").count();
                    if up > here.len() {
                        continue;
                    }
                    here[..here.len() - up]
                        .iter()
                        .chain(&path[up..])
                        .cloned()
                        .collect()
                }
                first if module.is_empty() && nodes.contains(first) && first != "mod" => path,
                _ => continue,
            };
            let to = match target.first() {
                Some(t) if nodes.contains(t) && t != "mod" => t.clone(),
                _ => "mod".to_string(),
            };
            if to != node {
                refs.insert(to);
            }
        }
    }
    g
}

/// The circles of `g`: one per group of modules that reach each other (a strongly
/// connected component), named by a path through it that closes.
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(n) = stack.pop() {
            for next in g.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|n| (n, reach(n))).collect();
    let mut placed = BTreeSet::new();
    let mut out = Vec::new();
    for (node, from_node) in &reaches {
        if placed.contains(*node) || !from_node.contains(*node) {
            continue;
        }
        let group: BTreeSet<String> = (from_node.iter())
            .filter(|m| reaches.get(m).is_some_and(|r| r.contains(*node)))
            .cloned()
            .collect();
        let sub: BTreeMap<String, BTreeSet<String>> = (group.iter())
            .map(|m| (m.clone(), g[m].intersection(&group).cloned().collect()))
            .collect();
        if let Some(c) = cycle(&sub, node, &mut Vec::new(), &mut BTreeSet::new()) {
            let mut named = c.join(" → ");
            if group.len() + 1 > c.len() {
                let all: Vec<&str> = group.iter().map(String::as_str).collect();
                named = format!("{named} (one of the circles among {})", all.join(", "));
            }
            out.push(named);
        }
        placed.extend(group);
    }
    out
}

/// The library crates below this one (Cargo.toml's workspace): their top levels are
/// folders like any other here, since `crate::` inside them names their own modules.
const LIBRARY_CRATES: [&str; 2] = ["crates/wire/src", "crates/sim/src"];

/// Every folder of every crate, as (the crate's `src/`, the path from there): `("src",
/// "explore/plan")`, `("crates/sim/src", "")`, `("crates/sim/src", "proto_body")`, ...
fn folders() -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> =
        LIBRARY_CRATES.iter().map(|k| (*k, String::new())).collect();
    for krate in std::iter::once("src").chain(LIBRARY_CRATES) {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(krate);
        let mut stack = vec![src.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("src is readable") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    let rel = path.strip_prefix(&src).expect("under src");
                    out.push((krate, rel.to_string_lossy().replace('\\', "/")));
                    stack.push(path);
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn folders_have_no_import_circles() {
    let g = folder_graph("crates/sim/src", "");
    assert!(g.contains_key("store") && g.contains_key("http"), "{g:?}");
    assert!(
        !g.contains_key("lib"),
        "lib.rs is the crate's top, not a module: {g:?}"
    );
    let g = folder_graph("src", "explore");
    assert!(g.contains_key("plan"), "{g:?}");
    let mut found = Vec::new();
    for (krate, folder) in folders() {
        let c = circles(&folder_graph(krate, &folder));
        if !c.is_empty() {
            found.push(format!("{krate}/{folder}: {c:#?}"));
        }
    }
    assert!(
        found.is_empty(),
        "import circles inside folders: {found:#?}"
    );
}

#[test]
fn folder_references_resolve_super_self_and_crate_paths() {
    let p: Vec<Vec<String>> = paths_in(
        "use super::{a::B, c};\nlet x = crate::sim::d::E;\n// super::commented\nmod tests {\n use super::super::f;\n}",
    )
    .into_iter()
    .map(|(p, _)| p)
    .collect();
    let want: Vec<Vec<&str>> = vec![
        vec!["super", "a", "B"],
        vec!["super", "c"],
        vec!["crate", "sim", "d", "E"],
        vec!["super", "super", "f"],
    ];
    assert_eq!(p, want);
}
