//! The shape of the workspace, checked: every file small enough to read in
//! one sitting, no import circle between the files of a crate, library
//! crates with typed errors (no `Result<_, String>`), and the shipped binary
//! free of test code. What is not there yet is listed below with its size
//! today, so the lists can only shrink.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Files still over [`MAX_LINES`], with their length today: none may grow,
/// and none may join them.
const STILL_LONG: &[(&str, usize)] = &[];

/// Library source files that still return `Result<_, String>`, with how
/// many times.
const STILL_STRING_ERRORS: &[(&str, usize)] = &[];

const MAX_LINES: usize = 700;

/// Crates whose errors are an application's (anyhow in the binary) or a
/// test's: the rule on typed errors is for the libraries.
const NOT_LIBRARIES: &[&str] = &["finality-cli", "finality-testkit"];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `(crate name, its src/ files)` for every crate of the workspace.
fn crates() -> Vec<(String, PathBuf, Vec<PathBuf>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(crates_dir())
        .expect("reading crates/")
        .flatten()
    {
        let src = e.path().join("src");
        if src.is_dir() {
            let mut files = Vec::new();
            rust_files(&src, &mut files);
            files.sort();
            out.push((e.file_name().to_string_lossy().into_owned(), src, files));
        }
    }
    out.sort();
    out
}

fn rel(p: &Path) -> String {
    p.strip_prefix(crates_dir())
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn no_source_file_is_over_700_lines() {
    let allowed: BTreeMap<&str, usize> = STILL_LONG.iter().copied().collect();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (_, _, files) in crates() {
        for f in files {
            let lines = std::fs::read_to_string(&f).unwrap().lines().count();
            let name = rel(&f);
            if lines > MAX_LINES {
                seen.insert(name.clone());
            }
            match allowed.get(name.as_str()) {
                Some(max) if lines > *max => {
                    problems.push(format!("{name}: {lines} lines, listed at {max}"))
                }
                None if lines > MAX_LINES => {
                    problems.push(format!("{name}: {lines} lines (at most {MAX_LINES})"))
                }
                _ => {}
            }
        }
    }
    for (name, _) in STILL_LONG {
        if !seen.contains(*name) {
            problems.push(format!(
                "{name} is short now (or gone): take it off STILL_LONG"
            ));
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

/// `Result<…, String>` in a type, however the `…` nests.
fn string_error_results(source: &str) -> usize {
    let mut n = 0;
    let b = source.as_bytes();
    let mut i = 0;
    while let Some(at) = source[i..].find("Result<") {
        let start = i + at + "Result<".len();
        let (mut depth, mut j, mut last_comma) = (1, start, None);
        while j < b.len() && depth > 0 {
            match b[j] {
                b'<' => depth += 1,
                b'>' => depth -= 1,
                b',' if depth == 1 => last_comma = Some(j),
                b';' | b'{' => break,
                _ => {}
            }
            j += 1;
        }
        if depth == 0 {
            if let Some(c) = last_comma {
                if source[c + 1..j - 1].trim() == "String" {
                    n += 1;
                }
            }
        }
        i = start;
    }
    n
}

#[test]
fn string_error_results_are_counted_however_they_nest() {
    assert_eq!(string_error_results("fn f() -> Result<u8, String> {"), 1);
    assert_eq!(
        string_error_results("fn f() -> Result<Vec<(u8, Option<u8>)>, String>;"),
        1
    );
    assert_eq!(string_error_results("fn f() -> Result<String, Error>"), 0);
    assert_eq!(string_error_results("std::result::Result<(), String>"), 1);
}

#[test]
fn library_crates_have_typed_errors() {
    let allowed: BTreeMap<&str, usize> = STILL_STRING_ERRORS.iter().copied().collect();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (name, _, files) in crates() {
        if NOT_LIBRARIES.contains(&name.as_str()) {
            continue;
        }
        for f in files {
            let n = string_error_results(&std::fs::read_to_string(&f).unwrap());
            let file = rel(&f);
            let max = allowed.get(file.as_str()).copied().unwrap_or(0);
            if n > 0 {
                seen.insert(file.clone());
            }
            if n > max {
                problems.push(format!("{file}: {n} `Result<_, String>` (listed: {max})"));
            }
        }
    }
    for (name, _) in STILL_STRING_ERRORS {
        if !seen.contains(*name) {
            problems.push(format!(
                "{name} has none now: take it off STILL_STRING_ERRORS"
            ));
        }
    }
    assert!(problems.is_empty(), "use a thiserror enum: {problems:#?}");
}

/// A module's path from the crate root: `src/inbox/write.rs` is
/// `["inbox", "write"]`, `src/inbox/mod.rs` and `src/lib.rs` their folder's.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file
        .strip_prefix(src)
        .unwrap()
        .with_extension("")
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// What one file imports (by `use`, or by a `crate::`/`super::` path in
/// its code) and what it re-exports (`pub use`), outside `#[cfg(test)]`.
#[derive(Default)]
struct FileUses {
    /// Paths as written, made absolute from the crate root.
    imports: Vec<Vec<String>>,
    /// `(name, absolute path of what it names)`; a glob's name is `*`.
    reexports: Vec<(String, Vec<String>)>,
    /// Names of the items this file defines.
    defines: BTreeSet<String>,
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().contains("test"))
    })
}

/// `tree` flattened into full paths (`a::{b, c::d}` is `a::b`, `a::c::d`),
/// each with the name it binds.
fn flatten(prefix: &[String], tree: &syn::UseTree, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut next = prefix.to_vec();
            next.push(p.ident.to_string());
            flatten(&next, &p.tree, out);
        }
        syn::UseTree::Name(n) => {
            let mut full = prefix.to_vec();
            let name = n.ident.to_string();
            if name != "self" {
                full.push(name.clone());
            }
            out.push((full, name));
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.to_vec();
            full.push(r.ident.to_string());
            out.push((full, r.rename.to_string()));
        }
        syn::UseTree::Glob(_) => out.push((prefix.to_vec(), "*".into())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten(prefix, t, out);
            }
        }
    }
}

/// `path` (starting `crate`, `super` or `self`) made absolute from `here`;
/// `None` for a path into another crate.
fn absolute(here: &[String], path: &[String]) -> Option<Vec<String>> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some([here, &path[1..]].concat()),
        "super" => {
            let mut base = here.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            Some([base.as_slice(), rest].concat())
        }
        _ => None,
    }
}

struct PathCollector<'a> {
    here: &'a [String],
    out: &'a mut Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for PathCollector<'_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(abs) = absolute(self.here, &segs) {
            self.out.push(abs);
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {}
    /// `pub(super)` names a module, it does not import one.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Paths inside macro bodies (`$crate::…` in `macro_rules!`, format
        // arguments) are tokens, not paths; read the `crate::` ones.
        let text = m.tokens.to_string().replace(' ', "");
        for (i, _) in text.match_indices("crate::") {
            if text[..i].ends_with('$') {
                continue;
            }
            let segs: Vec<String> = text[i..]
                .split("::")
                .take_while(|s| !s.is_empty())
                .map(|s| {
                    s.chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect()
                })
                .take_while(|s: &String| !s.is_empty())
                .collect();
            if let Some(abs) = absolute(self.here, &segs) {
                self.out.push(abs);
            }
        }
    }
}

fn read_uses(here: &[String], source: &str) -> FileUses {
    let file = syn::parse_file(source).unwrap();
    let mut uses = FileUses {
        defines: file.items.iter().filter_map(defined_name).collect(),
        ..FileUses::default()
    };
    let children: BTreeSet<String> = file
        .items
        .iter()
        .filter_map(|i| match i {
            syn::Item::Mod(m) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect();
    for item in &file.items {
        let syn::Item::Use(u) = item else { continue };
        if is_test(&u.attrs) {
            continue;
        }
        let mut flat = Vec::new();
        flatten(&[], &u.tree, &mut flat);
        for (mut path, name) in flat {
            // `use child::x` names a module declared here (2018 paths).
            if path.first().is_some_and(|p| children.contains(p)) {
                path.insert(0, "self".into());
            }
            let Some(abs) = absolute(here, &path) else {
                continue;
            };
            if matches!(u.vis, syn::Visibility::Inherited) {
                uses.imports.push(abs);
            } else {
                uses.reexports.push((name, abs));
            }
        }
    }
    let mut code = PathCollector {
        here,
        out: &mut uses.imports,
    };
    for item in &file.items {
        if let syn::Item::Mod(m) = item {
            // An inline module of re-exports (`pub mod postgres { pub use
            // … }`) is a facade, like a `pub use`.
            if m.content
                .as_ref()
                .is_some_and(|(_, items)| items.iter().all(|i| matches!(i, syn::Item::Use(_))))
            {
                continue;
            }
        }
        code.visit_item(item);
    }
    uses
}

fn defined_name(item: &syn::Item) -> Option<String> {
    Some(match item {
        syn::Item::Fn(f) => f.sig.ident.to_string(),
        syn::Item::Struct(s) => s.ident.to_string(),
        syn::Item::Enum(e) => e.ident.to_string(),
        syn::Item::Trait(t) => t.ident.to_string(),
        syn::Item::Type(t) => t.ident.to_string(),
        syn::Item::Const(c) => c.ident.to_string(),
        syn::Item::Static(s) => s.ident.to_string(),
        syn::Item::Mod(m) => m.ident.to_string(),
        syn::Item::Macro(m) => m.ident.as_ref()?.to_string(),
        _ => return None,
    })
}

/// The file a path lands in: its longest prefix that is a module file,
/// followed through re-exports (a name a module re-exports lives where the
/// re-export points).
fn resolve(
    path: &[String],
    files: &BTreeMap<Vec<String>, FileUses>,
    depth: usize,
) -> Option<Vec<String>> {
    let module = (0..=path.len())
        .rev()
        .map(|i| path[..i].to_vec())
        .find(|p| files.contains_key(p))?;
    let Some(name) = path.get(module.len()) else {
        return Some(module);
    };
    if depth > 8 {
        return Some(module);
    }
    let uses = &files[&module];
    if uses.defines.contains(name) {
        return Some(module);
    }
    let rest = &path[module.len() + 1..];
    for (n, target) in &uses.reexports {
        if n == name {
            let mut next = target.clone();
            next.extend_from_slice(rest);
            return resolve(&next, files, depth + 1);
        }
    }
    for (n, target) in &uses.reexports {
        let glob_has_it = files.get(target).is_some_and(|f| {
            f.defines.contains(name) || f.reexports.iter().any(|(r, _)| r == name)
        });
        if n == "*" && glob_has_it {
            let mut next = target.clone();
            next.push(name.clone());
            next.extend_from_slice(rest);
            return resolve(&next, files, depth + 1);
        }
    }
    Some(module)
}

/// One crate's files and, for each, the other files it imports, with one
/// path that makes each import (for a failure message).
type Graph = BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>;

fn import_graph(src: &Path, paths: &[PathBuf]) -> Graph {
    let mut files = BTreeMap::new();
    for f in paths {
        let here = module_path(src, f);
        let uses = read_uses(&here, &std::fs::read_to_string(f).unwrap());
        files.insert(here, uses);
    }
    let mut graph = Graph::new();
    for (here, uses) in &files {
        let to = graph.entry(here.clone()).or_default();
        for p in &uses.imports {
            if let Some(t) = resolve(p, &files, 0) {
                if &t != here {
                    to.entry(t).or_insert_with(|| p.join("::"));
                }
            }
        }
    }
    graph
}

/// The graph's circles (strongly connected components of more than one
/// file), each file named by its path.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    strongly_connected(graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| c.iter().map(|m| file_name(m)).collect())
        .collect()
}

fn file_name(m: &[String]) -> String {
    if m.is_empty() {
        "lib".to_string()
    } else {
        m.join("/")
    }
}

/// The imports between the files of a circle, with the path that makes
/// each.
fn circle_edges(graph: &Graph, circle: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (here, to) in graph {
        if !circle.contains(&file_name(here)) {
            continue;
        }
        for (t, path) in to {
            if circle.contains(&file_name(t)) {
                out.push(format!("{} -> {} ({path})", file_name(here), file_name(t)));
            }
        }
    }
    out
}

/// Tarjan's algorithm (iterative enough for a crate's few dozen files).
fn strongly_connected(edges: &Graph) -> Vec<Vec<Vec<String>>> {
    struct T<'a> {
        edges: &'a Graph,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Vec<String>) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.edges.get(v).into_iter().flat_map(|to| to.keys()) {
            let Some((w, _)) = t.edges.get_key_value(w) else {
                continue;
            };
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            t.out.push(comp);
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn no_import_circle_between_the_files_of_a_crate() {
    let mut found = Vec::new();
    for (name, src, files) in crates() {
        let graph = import_graph(&src, &files);
        for c in circles(&graph) {
            found.push(format!("{name}: {}", c.join(" ↔ ")));
            for e in circle_edges(&graph, &c) {
                found.push(format!("    {e}"));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// The checker finds a circle when there is one, through a re-export too.
#[test]
fn a_circle_through_a_reexport_is_found() {
    let dir = std::env::temp_dir().join(format!("finality-layout-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("role")).unwrap();
    let write = |p: &str, s: &str| std::fs::write(src.join(p), s).unwrap();
    write("lib.rs", "mod role;\npub use role::Trait;\n");
    write(
        "role/mod.rs",
        "mod sql;\npub trait Trait {}\nuse sql::helper;\n",
    );
    write("role/sql.rs", "use crate::Trait;\npub fn helper() {}\n");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert_eq!(
        circles(&import_graph(&src, &files)),
        vec![vec!["role/sql".to_string(), "role".to_string()]]
    );
    write(
        "role/mod.rs",
        "mod sql;\npub trait Trait {}\npub use sql::helper;\n",
    );
    assert!(
        circles(&import_graph(&src, &files)).is_empty(),
        "a re-export is a facade"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The shipped binary links no test code: `cargo tree -e normal` of the
/// binary's crate names no finality-testkit.
#[test]
fn the_binary_does_not_link_the_testkit() {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "-e",
            "normal",
            "-p",
            "finality-cli",
            "--prefix",
            "none",
        ])
        .current_dir(crates_dir())
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(tree.contains("finality-core"), "{tree}");
    assert!(
        !tree.contains("finality-testkit"),
        "finality-cli links finality-testkit:\n{tree}"
    );
}
