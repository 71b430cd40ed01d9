//! What one source file imports, as target-independent strings the index
//! can keep: Rust module paths (`crate::a::b`, with `self::`/`super::` and
//! `mod x;` resolved against the file's own module, or `name::a::b` for a
//! crate of this repository), Python dotted modules (relative imports
//! resolved), JS/TS specifiers resolved to repository paths, and Go import
//! paths. A lookup then compares strings instead of re-reading files.

use std::sync::OnceLock;

use regex::Regex;

/// A language whose imports the index records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    Rust,
    Python,
    Js,
    Go,
}

pub const JS_EXTS: [&str; 9] = ["js", "jsx", "ts", "tsx", "mjs", "cjs", "mts", "cts", "vue"];

impl Lang {
    /// The language of a file name, by its extension.
    pub fn of(name: &str) -> Option<Lang> {
        let (_, ext) = name.rsplit_once('.')?;
        match ext {
            "rs" => Some(Lang::Rust),
            "py" => Some(Lang::Python),
            "go" => Some(Lang::Go),
            e if JS_EXTS.contains(&e) => Some(Lang::Js),
            _ => None,
        }
    }
}

/// Imports kept per file.
pub const MAX_IMPORTS: usize = 256;
/// The longest import string kept.
const MAX_IMPORT_LEN: usize = 256;
/// A `use` tree or Python import statement longer than this is cut.
const MAX_STATEMENT: usize = 4096;

/// The crate names of the repository's Cargo.toml files, and the search
/// for paths that start with one of them (or `crate`/`self`/`super`).
#[derive(Debug)]
pub struct RustNames {
    names: Vec<String>,
    paths: Regex,
}

impl RustNames {
    pub fn new(names: &[String]) -> RustNames {
        // Statement keywords and path starts, all literals: one fast pass.
        let mut alts = vec![
            "use ".to_owned(),
            "mod ".into(),
            "crate::".into(),
            "self::".into(),
            "super::".into(),
        ];
        alts.extend(names.iter().map(|n| format!("{}::", regex::escape(n))));
        RustNames {
            names: names.to_vec(),
            paths: Regex::new(&alts.join("|")).expect("escaped literals always compile"),
        }
    }
}

/// The imports of the file at `rel` (relative, `/`-separated) with this
/// text: sorted, de-duplicated, capped.
pub fn extract(lang: Lang, rel: &str, text: &str, rust: &RustNames) -> Vec<String> {
    let mut out = Vec::new();
    match lang {
        Lang::Rust => extract_rust(rel, text, rust, &mut out),
        Lang::Python => extract_python(rel, text, &mut out),
        Lang::Js => extract_js(rel, text, &mut out),
        Lang::Go => extract_go(text, &mut out),
    }
    out.retain(|s| !s.is_empty() && s.len() <= MAX_IMPORT_LEN && !s.contains('\n'));
    out.sort_unstable();
    out.dedup();
    out.truncate(MAX_IMPORTS);
    out
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The length of the identifier at the start of `s` (a raw `r#` prefix
/// included).
fn ident_len(s: &str) -> usize {
    let b = s.as_bytes();
    let start = if b.starts_with(b"r#") { 2 } else { 0 };
    let n = b[start..].iter().take_while(|c| is_ident_byte(**c)).count();
    if n == 0 || b[start].is_ascii_digit() {
        0
    } else {
        start + n
    }
}

/// Where a Rust file sits in its crate: the directory its crate's module
/// tree is rooted in (`src/`, `crates/x/src/`, `tests/`, …) and the module
/// path of the file inside it (empty for a crate root: `lib.rs`, `main.rs`,
/// a `src/bin/` file, a file directly in `tests/`, `benches/`, `examples/`).
pub fn rust_module(rel: &str) -> (String, Vec<String>) {
    let parts: Vec<&str> = rel.split('/').collect();
    let last = parts.len() - 1;
    let segments = |inner: &[&str]| -> Vec<String> {
        let mut s: Vec<String> = inner.iter().map(|p| (*p).to_owned()).collect();
        if let Some(l) = s.last_mut() {
            *l = l.trim_end_matches(".rs").to_owned();
        }
        if s.last().map(String::as_str) == Some("mod") {
            s.pop();
        }
        s
    };
    let prefix = |i: usize| format!("{}/", parts[..=i].join("/"));
    if let Some(i) = parts[..last].iter().position(|p| *p == "src") {
        let inner = &parts[i + 1..];
        return match inner {
            ["lib.rs" | "main.rs"] => (prefix(i), Vec::new()),
            ["bin", _] => (format!("{}bin/", prefix(i)), Vec::new()),
            _ => (prefix(i), segments(inner)),
        };
    }
    if let Some(i) = parts[..last]
        .iter()
        .position(|p| matches!(*p, "tests" | "benches" | "examples"))
    {
        let inner = &parts[i + 1..];
        return if inner.len() == 1 {
            (prefix(i), Vec::new())
        } else {
            (prefix(i), segments(inner))
        };
    }
    if matches!(parts.as_slice(), ["lib.rs" | "main.rs" | "build.rs"]) {
        (String::new(), Vec::new())
    } else {
        (String::new(), segments(&parts))
    }
}

/// `first::rest` from a file whose module is `module`, as the string the
/// index keeps; `None` for a path that leaves this repository (std, other
/// crates) or climbs above the crate root.
fn resolve_rust(module: &[String], path: &[&str], names: &[String]) -> Option<String> {
    let (first, rest) = path.split_first()?;
    let absolute: Vec<&str> = match *first {
        "crate" => rest.to_vec(),
        "self" => module
            .iter()
            .map(String::as_str)
            .chain(rest.iter().copied())
            .collect(),
        "super" => {
            let mut base: Vec<&str> = module.iter().map(String::as_str).collect();
            base.pop()?;
            let mut rest = rest;
            while let Some(("super", r)) = rest.split_first().map(|(a, r)| (*a, r)) {
                base.pop()?;
                rest = r;
            }
            base.into_iter().chain(rest.iter().copied()).collect()
        }
        name if names.iter().any(|n| n == name) => {
            return Some(path.join("::"));
        }
        _ => return None,
    };
    let mut s = String::from("crate");
    for seg in absolute {
        s.push_str("::");
        s.push_str(seg);
    }
    Some(s)
}

/// Whether what precedes a `use`/`mod` on its line makes it a statement:
/// nothing, or a visibility (`pub`, `pub(crate)`, `pub(in a::b)`).
fn statement_start(before: &str) -> bool {
    let b = before.trim();
    b.is_empty()
        || b == "pub"
        || (b.starts_with("pub(") && b.ends_with(')') && !b[4..].contains(['(', ';']))
}

fn extract_rust(rel: &str, text: &str, names: &RustNames, out: &mut Vec<String>) {
    let (_, module) = rust_module(rel);
    let bytes = text.as_bytes();
    // The end of the last `use` statement: paths inside it are expanded
    // with it, not again one by one.
    let mut used_to = 0;
    for m in names.paths.find_iter(text) {
        let at = m.start();
        if at < used_to {
            continue;
        }
        let word = m.as_str();
        if word == "use " || word == "mod " {
            let line = text[..at].rfind('\n').map_or(0, |i| i + 1);
            if !statement_start(&text[line..at]) {
                continue;
            }
            let rest = &text[m.end()..];
            if word == "mod " {
                let rest = rest.trim_start();
                let n = ident_len(rest);
                if n > 0 && rest[n..].trim_start().starts_with(';') {
                    let name = rest[..n].trim_start_matches("r#");
                    out.extend(resolve_rust(&module, &["self", name], &names.names));
                }
                continue;
            }
            let mut cut = rest.len().min(MAX_STATEMENT);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            let window = &rest[..cut];
            let end = window.find(';').unwrap_or(window.len());
            let mut paths = Vec::new();
            expand_use(&window[..end], &mut paths);
            for p in paths {
                let p: Vec<&str> = p.iter().map(String::as_str).collect();
                out.extend(resolve_rust(&module, &p, &names.names));
            }
            used_to = m.end() + end;
            continue;
        }
        // A path written inline: `crate::a::b::f()`, `my_crate::x::Y`.
        if at > 0 && (is_ident_byte(bytes[at - 1]) || bytes[at - 1] == b':') {
            continue;
        }
        let mut segs = Vec::new();
        let mut rest = &text[at..];
        loop {
            let n = ident_len(rest);
            if n == 0 {
                break;
            }
            segs.push(rest[..n].trim_start_matches("r#"));
            rest = &rest[n..];
            match rest.strip_prefix("::") {
                Some(r) if ident_len(r) > 0 && segs.len() < 16 => rest = r,
                _ => break,
            }
        }
        out.extend(resolve_rust(&module, &segs, &names.names));
        if out.len() > MAX_IMPORTS * 4 {
            break;
        }
    }
}

/// The paths a `use` tree names, e.g. `a::{b, c::{self, d as e}, f::*}` →
/// `a::b`, `a::c`, `a::c::d`, `a::f`. Globs name their module.
fn expand_use(tree: &str, out: &mut Vec<Vec<String>>) {
    let tokens = use_tokens(tree);
    let mut pos = 0;
    use_tree(&tokens, &mut pos, &[], out, 0);
}

#[derive(Debug, PartialEq)]
enum Tok<'a> {
    Ident(&'a str),
    Sep,
    Open,
    Close,
    Comma,
    Star,
}

fn use_tokens(s: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let (tok, len) = match c {
            ':' if rest.starts_with("::") => (Some(Tok::Sep), 2),
            '{' => (Some(Tok::Open), 1),
            '}' => (Some(Tok::Close), 1),
            ',' => (Some(Tok::Comma), 1),
            '*' => (Some(Tok::Star), 1),
            _ => match ident_len(rest) {
                0 => (None, c.len_utf8()),
                n => (Some(Tok::Ident(rest[..n].trim_start_matches("r#"))), n),
            },
        };
        out.extend(tok);
        rest = &rest[len..];
    }
    out
}

fn use_tree(
    toks: &[Tok<'_>],
    pos: &mut usize,
    prefix: &[String],
    out: &mut Vec<Vec<String>>,
    depth: usize,
) {
    if depth > 8 || out.len() > MAX_IMPORTS {
        return;
    }
    let mut path = prefix.to_vec();
    if toks.get(*pos) == Some(&Tok::Sep) {
        *pos += 1; // `use ::std::x` (2015 edition)
    }
    loop {
        match toks.get(*pos) {
            Some(Tok::Ident(id)) => {
                path.push((*id).to_owned());
                *pos += 1;
                if toks.get(*pos) != Some(&Tok::Sep) {
                    break;
                }
                *pos += 1;
            }
            Some(Tok::Open) => {
                *pos += 1;
                loop {
                    if toks.get(*pos) == Some(&Tok::Close) {
                        *pos += 1;
                        return;
                    }
                    use_tree(toks, pos, &path, out, depth + 1);
                    match toks.get(*pos) {
                        Some(Tok::Comma) => *pos += 1,
                        Some(Tok::Close) => {
                            *pos += 1;
                            return;
                        }
                        _ => return,
                    }
                }
            }
            Some(Tok::Star) => {
                *pos += 1;
                break;
            }
            _ => break,
        }
    }
    if toks.get(*pos) == Some(&Tok::Ident("as")) {
        *pos += 2; // `as name`
    }
    if path.last().map(String::as_str) == Some("self") {
        path.pop();
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// The package a Python file's relative imports start from: its directory,
/// as dotted parts, without a leading `src`.
fn python_package(rel: &str) -> Vec<&str> {
    let dir = rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    if parts.first() == Some(&"src") {
        parts.remove(0);
    }
    parts
}

/// The dotted module a Python file is imported as (`src/` dropped,
/// `pkg/__init__.py` is `pkg`).
pub fn python_module(rel: &str) -> String {
    let mut parts: Vec<&str> = rel.trim_end_matches(".py").split('/').collect();
    if parts.first() == Some(&"src") {
        parts.remove(0);
    }
    if parts.last() == Some(&"__init__") {
        parts.pop();
    }
    parts.join(".")
}

fn is_dotted(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(is_ident_byte))
}

fn extract_python(rel: &str, text: &str, out: &mut Vec<String>) {
    static IMPORT: OnceLock<Regex> = OnceLock::new();
    let import_re = IMPORT.get_or_init(|| Regex::new("import").expect("a literal"));
    let package = python_package(rel);
    // Every statement has the word `import`: start from those, at the
    // start of their line.
    let mut done_to = 0;
    for m in import_re.find_iter(text) {
        if m.start() < done_to {
            continue;
        }
        let line = text[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        let from_line = &text[line..];
        let t = from_line.trim_start_matches([' ', '\t']);
        let import = t
            .strip_prefix("import")
            .filter(|r| r.starts_with([' ', '\t']));
        let from = t
            .strip_prefix("from")
            .filter(|r| r.starts_with([' ', '\t', '.']));
        if import.is_none() && from.is_none() {
            continue;
        }
        // One logical statement: open parentheses and `\` continue it.
        let mut lines = t.split_inclusive('\n');
        let first = lines.next().unwrap_or("");
        let mut used = (from_line.len() - t.len()) + first.len();
        let mut stmt = strip_comment(first.trim_end()).to_owned();
        while (stmt.matches('(').count() > stmt.matches(')').count()
            || stmt.trim_end().ends_with('\\'))
            && stmt.len() < MAX_STATEMENT
        {
            let Some(next) = lines.next() else { break };
            used += next.len();
            stmt = stmt.trim_end().trim_end_matches('\\').to_owned();
            stmt.push(' ');
            stmt.push_str(strip_comment(next.trim_end()));
        }
        done_to = line + used;
        python_statement(&stmt, import.is_some(), &package, out);
        if out.len() > MAX_IMPORTS * 4 {
            return;
        }
    }
}

/// One `import …` or `from … import …` statement, on one line.
fn python_statement(stmt: &str, is_import: bool, package: &[&str], out: &mut Vec<String>) {
    let clean = |s: &str| s.replace(['(', ')', '\\'], " ");
    if is_import {
        for item in clean(&stmt["import".len()..]).split(',') {
            let module = item.split_whitespace().next().unwrap_or("");
            if is_dotted(module) {
                out.push(module.to_owned());
            }
        }
        return;
    }
    let body = stmt["from".len()..].trim_start();
    let Some((module, names)) = body.split_once(|c: char| c.is_whitespace()) else {
        return;
    };
    let Some(names) = names.trim_start().strip_prefix("import") else {
        return;
    };
    let dots = module.bytes().take_while(|b| *b == b'.').count();
    let rest = &module[dots..];
    if !rest.is_empty() && !is_dotted(rest) {
        return;
    }
    let base = if dots == 0 {
        rest.to_owned()
    } else {
        let Some(keep) = package.len().checked_sub(dots - 1) else {
            return;
        };
        package[..keep]
            .iter()
            .copied()
            .chain((!rest.is_empty()).then_some(rest))
            .collect::<Vec<_>>()
            .join(".")
    };
    // `base.name` for each name (it may be a module); `base` itself only
    // when no name says it already (a lookup matches `base.*` too).
    let mut named = false;
    for name in clean(names).split(',') {
        let name = name.split_whitespace().next().unwrap_or("");
        if name == "*" || !is_dotted(name) {
            continue;
        }
        named = true;
        // `from . import x` at the top of the tree: x is a module there.
        out.push(if base.is_empty() {
            name.to_owned()
        } else {
            format!("{base}.{name}")
        });
    }
    if !named && !base.is_empty() {
        out.push(base);
    }
}

fn strip_comment(line: &str) -> &str {
    line.split_once('#').map(|(a, _)| a).unwrap_or(line)
}

/// `a/./b/../c` → `a/c`, without touching the filesystem.
pub fn normalize(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.join("/")
}

fn extract_js(rel: &str, text: &str, out: &mut Vec<String>) {
    // A relative specifier opens with a quote and `./` or `../`; what
    // precedes it says whether it is imported: `from`, `import`, `import(`,
    // `require(` (and `export … from`, which ends in `from`).
    static SPEC: OnceLock<Regex> = OnceLock::new();
    let spec =
        SPEC.get_or_init(|| Regex::new(r#"'\./|"\./|'\.\./|"\.\./"#).expect("fixed literals"));
    let dir = rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    for m in spec.find_iter(text) {
        let before = text[..m.start()].trim_end_matches([' ', '\t', '\n', '\r']);
        let before = before
            .strip_suffix('(')
            .map_or(before, |b| b.trim_end_matches([' ', '\t', '\n', '\r']));
        let word_end = |w: &str| {
            before.strip_suffix(w).is_some_and(|b| {
                !b.ends_with(|c: char| {
                    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.'
                })
            })
        };
        if !(word_end("from") || word_end("import") || word_end("require")) {
            continue;
        }
        let quote = char::from(text.as_bytes()[m.start()]);
        let body = &text[m.start() + 1..];
        let Some(end) = body.find([quote, '\n']) else {
            continue;
        };
        if !body[end..].starts_with(quote) {
            continue;
        }
        out.push(normalize(&format!("{dir}/{}", &body[..end])));
        if out.len() > MAX_IMPORTS * 4 {
            return;
        }
    }
}

fn extract_go(text: &str, out: &mut Vec<String>) {
    if !text.contains("import") {
        return;
    }
    let quoted = |s: &str| -> Option<String> {
        let (start, q) = s.char_indices().find(|(_, c)| *c == '"' || *c == '`')?;
        let rest = &s[start + 1..];
        let end = rest.find(q)?;
        Some(rest[..end].to_owned())
    };
    let mut block = false;
    for line in text.lines() {
        let t = line.trim();
        if block {
            if t.starts_with(')') {
                block = false;
            } else if !t.starts_with("//") {
                out.extend(quoted(t));
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("import") {
            let rest = rest.trim_start();
            match rest.strip_prefix('(') {
                Some(inner) => match inner.split_once(')') {
                    Some((one_line, _)) => {
                        for item in one_line.split(';') {
                            out.extend(quoted(item));
                        }
                    }
                    None => {
                        block = true;
                        out.extend(quoted(inner));
                    }
                },
                None => out.extend(quoted(rest)),
            }
        } else if ["func ", "type ", "var ", "const "]
            .iter()
            .any(|k| line.starts_with(k))
        {
            break; // imports come before every declaration
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rust(rel: &str, text: &str) -> Vec<String> {
        extract(Lang::Rust, rel, text, &RustNames::new(&["my_crate".into()]))
    }

    fn none() -> RustNames {
        RustNames::new(&[])
    }

    #[test]
    fn rust_modules() {
        let m = |rel: &str| {
            let (root, segs) = rust_module(rel);
            format!("{root}|{}", segs.join("::"))
        };
        assert_eq!(m("src/lib.rs"), "src/|");
        assert_eq!(m("src/net/mod.rs"), "src/|net");
        assert_eq!(m("src/net/http.rs"), "src/|net::http");
        assert_eq!(m("crates/a/src/x.rs"), "crates/a/src/|x");
        assert_eq!(m("src/bin/tool.rs"), "src/bin/|");
        assert_eq!(m("tests/it.rs"), "tests/|");
        assert_eq!(m("tests/common/mod.rs"), "tests/|common");
        assert_eq!(m("build.rs"), "|");
    }

    #[test]
    fn rust_use_trees_mods_and_inline_paths() {
        let got = rust(
            "src/net/other.rs",
            "use super::http::get;\n\
             pub(crate) use crate::{store::{self, Db as D}, util::*};\n\
             use std::fs;\n\
             use my_crate::api;\n\
             mod inner;\n\
             mod tests {\n    use super::*;\n}\n\
             fn f() { crate::log::warn(); self::inner::g(); x::crate::no(); }\n",
        );
        assert_eq!(
            got,
            [
                "crate::log::warn",
                "crate::net",
                "crate::net::http::get",
                "crate::net::other::inner",
                "crate::net::other::inner::g",
                "crate::store",
                "crate::store::Db",
                "crate::util",
                "my_crate::api",
            ]
        );
    }

    #[test]
    fn rust_multiline_use_and_super_chains() {
        let got = extract(
            Lang::Rust,
            "src/a/b/c.rs",
            "use super::super::{\n    x,\n    y::z,\n};\n",
            &none(),
        );
        assert_eq!(got, ["crate::a::x", "crate::a::y::z"]);
        // `super` above the crate root goes nowhere.
        assert!(extract(Lang::Rust, "src/lib.rs", "use super::x;\n", &none()).is_empty());
    }

    #[test]
    fn long_and_unterminated_statements_are_cut_safely() {
        let long = format!("use crate::{{a,\n{}", "é".repeat(3000));
        assert!(rust("src/x.rs", &long).contains(&"crate::a".to_owned()));
        let py = format!("from pkg import (\n{}", "ü, ".repeat(3000));
        assert_eq!(extract(Lang::Python, "m.py", &py, &none()), ["pkg"]);
        let js = format!("import x from './{}", "ß".repeat(5000));
        assert!(extract(Lang::Js, "m.ts", &js, &none()).is_empty());
    }

    #[test]
    fn python_imports() {
        let text = "import os, pkg.util as u\n\
                    from pkg import (\n    a,\n    b as c,  # note\n)\n\
                    from . import sib\n\
                    from ..up import thing\n\
                    from .mod import *\n\
                    from x import \\\n    y\n\
                    if T:\n    import lazy.mod\n";
        let got = extract(Lang::Python, "src/pkg/sub/m.py", text, &none());
        assert_eq!(
            got,
            [
                "lazy.mod",
                "os",
                "pkg.a",
                "pkg.b",
                "pkg.sub.mod",
                "pkg.sub.sib",
                "pkg.up.thing",
                "pkg.util",
                "x.y",
            ]
        );
        assert_eq!(python_module("src/pkg/__init__.py"), "pkg");
        assert_eq!(python_module("pkg/util.py"), "pkg.util");
    }

    #[test]
    fn js_and_go_imports() {
        let js = "import a from './a';\nconst b = require('../lib/b.js');\nexport * from './c/index';\n\
                  import('react');\nconst l = import ( \"./lazy\" );\nimport {\n  x,\n} from\n  \"./multi\";\n\
                  import './side';\nconst s = './not-an-import';\nfoo.from('./nope');\nx = require('./open\n";
        assert_eq!(
            extract(Lang::Js, "web/src/x.ts", js, &none()),
            [
                "web/lib/b.js",
                "web/src/a",
                "web/src/c/index",
                "web/src/lazy",
                "web/src/multi",
                "web/src/side"
            ]
        );
        let go = "package main\n\nimport \"fmt\"\nimport (\n\t\"example.com/m/a\"\n\tst \"example.com/m/b\"\n\t// \"example.com/m/gone\"\n)\n\nfunc main() {}\nimport \"late\"\n";
        assert_eq!(
            extract(Lang::Go, "cmd/main.go", go, &none()),
            ["example.com/m/a", "example.com/m/b", "fmt"]
        );
    }

    #[test]
    fn languages_by_extension() {
        assert_eq!(Lang::of("a.rs"), Some(Lang::Rust));
        assert_eq!(Lang::of("a.test.tsx"), Some(Lang::Js));
        assert_eq!(Lang::of("Makefile"), None);
        assert_eq!(Lang::of("a.md"), None);
    }
}
