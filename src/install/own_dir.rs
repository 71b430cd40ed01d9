//! Writes a hook makes through its own directory: a shell script's
//! `$(dirname "$0")/hooks.log` or `$(cd "$(dirname "${BASH_SOURCE[0]}")" &&
//! pwd)`, a Node script's `path.join(__dirname, 'hooks.log')`, a Python
//! script's `Path(__file__).parent / "state.json"` or
//! `os.path.join(os.path.dirname(os.path.abspath(__file__)), "x.log")`.
//! `import` knows where the script lies, so it can name those paths; the
//! detection in `import` then grants them like any other write it sees.

use std::sync::LazyLock;

use regex::Regex;

/// Where a script lies, in the forms a grant names: in the home (`~/…`) or
/// in the project (relative to its root). `None` for a place neither (a
/// plugin's root, a system path), whose writes are not granted here.
pub fn script_dir(word: &str, home: Option<&str>) -> Option<String> {
    let w = word.trim_matches(['"', '\'']);
    let parent = |p: &str| -> Option<String> {
        let (dir, _) = p.rsplit_once('/')?;
        Some(dir.to_owned())
    };
    for p in ["~/", "$HOME/", "${HOME}/"] {
        if let Some(rest) = w.strip_prefix(p) {
            return parent(&format!("~/{rest}")).filter(|d| d != "~");
        }
    }
    if let Some(i) = w.find("_PROJECT_DIR") {
        let rest = &w[i + "_PROJECT_DIR".len()..];
        let rest = rest.strip_prefix('}').unwrap_or(rest);
        let rest = rest.strip_prefix('/')?;
        return parent(rest);
    }
    if w.starts_with('/') {
        let home = home?.trim_end_matches('/');
        let rest = w.strip_prefix(home)?.strip_prefix('/')?;
        return parent(&format!("~/{rest}")).filter(|d| d != "~");
    }
    if w.starts_with(['$', '-']) || w.contains("_PLUGIN_ROOT") {
        return None;
    }
    parent(w.strip_prefix("./").unwrap_or(w))
}

/// A shell expression for the script's own directory.
static SHELL_DIR: LazyLock<Regex> = LazyLock::new(|| {
    let me = r#"(?:"?\$\{?(?:0|BASH_SOURCE(?:\[0\])?)\}?"?|"?\$\((?:realpath|readlink -f) "?\$\{?(?:0|BASH_SOURCE(?:\[0\])?)\}?"?\)"?)"#;
    let dirname = format!(r#"(?:\$\(dirname {me}\)|`dirname {me}`)"#);
    Regex::new(&format!(
        r#"\$\(\s*cd\s+"?{dirname}"?\s*(?:&&|;)\s*pwd(?:\s+-P)?\s*\)|{dirname}|\$\{{(?:0|BASH_SOURCE(?:\[0\])?)%/\*\}}"#
    ))
    .unwrap()
});

/// A string literal: `'…'` or `"…"`.
const LIT: &str = r#"(?:'[^'\n]*'|"[^"\n]*")"#;

/// Node: `path.join(__dirname, 'a', 'b')` (or `resolve`), `__dirname +
/// '/x'`, and `__dirname` alone.
static NODE_JOIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"(?:path\.)?(?:join|resolve)\(\s*(?:__dirname|import\.meta\.dirname)((?:\s*,\s*{LIT})*)\s*\)"#
    ))
    .unwrap()
});
static NODE_PLUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"(?:__dirname|import\.meta\.dirname)\s*\+\s*({LIT})"#
    ))
    .unwrap()
});
static NODE_DIR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"__dirname|import\.meta\.dirname").unwrap());

/// Python: `Path(__file__).parent` (resolved or not, `.parent` more than
/// once goes up) followed by `/ "x"` parts, and
/// `os.path.dirname(os.path.abspath(__file__))` inside `os.path.join(…)`.
static PY_PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"Path\(__file__\)(?:\.(?:resolve|absolute)\(\))?((?:\.parent)+)((?:\s*/\s*{LIT})*)"#
    ))
    .unwrap()
});
static PY_DIRNAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"os\.path\.dirname\(\s*(?:os\.path\.(?:abspath|realpath)\(\s*__file__\s*\)|__file__)\s*\)",
    )
    .unwrap()
});
static PY_JOIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"os\.path\.join\(\s*"\u{{1}}([^"\n]*)"((?:\s*,\s*{LIT})*)\s*\)"#
    ))
    .unwrap()
});
static LITERAL: LazyLock<Regex> = LazyLock::new(|| Regex::new(LIT).unwrap());

/// The literals in `parts` (`, 'a', "b"` or `/ 'a' / "b"`), unquoted.
fn literals(parts: &str) -> Vec<String> {
    LITERAL
        .find_iter(parts)
        .map(|m| m.as_str()[1..m.as_str().len() - 1].to_owned())
        .collect()
}

/// `dir` with `parts` joined on and `..` resolved, or `None` when a part
/// is absolute or climbs out of what `dir` names.
fn joined(dir: &str, parts: &[String]) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for part in std::iter::once(dir).chain(parts.iter().map(String::as_str)) {
        if part.starts_with('/') {
            return None;
        }
        for seg in part.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    if out.pop().is_none_or(|s| s == "~") {
                        return None;
                    }
                }
                s => out.push(s),
            }
        }
    }
    let p = out.join("/");
    (!p.is_empty() && p != "~").then_some(p)
}

/// `text` with `..` resolved inside every path-like run (`~/.a/hooks/../x`
/// becomes `~/.a/x`); a run that would climb out stays as it is.
fn resolve_dots(text: &str) -> String {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "._-~/".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.contains("/..") && !run.starts_with('/') {
            match joined(run, &[]) {
                Some(p) => out.push_str(&p),
                None => out.push_str(run),
            }
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if path_char(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// `text` (a script in `dir`) with each expression of its own directory
/// written out as `dir`, and the paths Node and Python code joins onto it
/// as one literal; also those joined paths, which are files the script
/// names in code (for the caller to count when the script writes files).
pub fn written_out(text: &str, dir: &str) -> (String, Vec<String>) {
    let mut named: Vec<String> = Vec::new();
    let mut name = |p: Option<String>| {
        if let Some(p) = p
            && !named.contains(&p)
        {
            named.push(p);
        }
    };
    let t = SHELL_DIR.replace_all(text, dir).into_owned();
    let t = NODE_JOIN
        .replace_all(&t, |c: &regex::Captures| {
            let p = joined(dir, &literals(&c[1]));
            name(p.clone());
            format!("\"{}\"", p.unwrap_or_else(|| dir.to_owned()))
        })
        .into_owned();
    let t = NODE_PLUS
        .replace_all(&t, |c: &regex::Captures| {
            let p = joined(dir, &literals(&c[1]));
            name(p.clone());
            format!("\"{}\"", p.unwrap_or_else(|| dir.to_owned()))
        })
        .into_owned();
    let t = NODE_DIR.replace_all(&t, format!("\"{dir}\"")).into_owned();
    let t = PY_PATH
        .replace_all(&t, |c: &regex::Captures| {
            let up = c[1].matches(".parent").count() - 1;
            let mut parts = vec!["..".to_owned(); up];
            let tail = literals(&c[2]);
            let has_tail = !tail.is_empty();
            parts.extend(tail);
            let p = joined(dir, &parts);
            if has_tail {
                name(p.clone());
            }
            format!("Path(\"{}\")", p.unwrap_or_else(|| dir.to_owned()))
        })
        .into_owned();
    // Marked so that the join below knows the literal is the directory.
    let t = PY_DIRNAME
        .replace_all(&t, format!("\"\u{1}{dir}\""))
        .into_owned();
    let t = PY_JOIN
        .replace_all(&t, |c: &regex::Captures| {
            let p = joined(&c[1], &literals(&c[2]));
            name(p.clone());
            format!("\"{}\"", p.unwrap_or_else(|| c[1].to_owned()))
        })
        .into_owned();
    let t = t.replace('\u{1}', "");
    (resolve_dots(&t), named)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scripts_directory_in_the_forms_a_grant_names() {
        assert_eq!(
            script_dir("~/.claude/hooks/log.sh", None).as_deref(),
            Some("~/.claude/hooks")
        );
        assert_eq!(
            script_dir("$CLAUDE_PROJECT_DIR/.claude/hooks/x.py", None).as_deref(),
            Some(".claude/hooks")
        );
        assert_eq!(
            script_dir("/home/u/.gemini/hooks/log.sh", Some("/home/u")).as_deref(),
            Some("~/.gemini/hooks")
        );
        assert_eq!(script_dir("/opt/hooks/log.sh", Some("/home/u")), None);
        assert_eq!(
            script_dir(".cursor/hooks/guard.js", None).as_deref(),
            Some(".cursor/hooks")
        );
        assert_eq!(script_dir("${CLAUDE_PLUGIN_ROOT}/scripts/x.sh", None), None);
    }

    #[test]
    fn shell_expressions_of_the_scripts_directory_are_written_out() {
        let (t, _) = written_out(
            "LOG_DIR=\"$(dirname \"$0\")/../logs\"\necho x >> \"$LOG_DIR/current.log\"\n",
            "~/.claude/hooks",
        );
        assert!(t.contains("LOG_DIR=\"~/.claude/logs\""), "{t}");
        let (t, _) = written_out(
            "here=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\"\n",
            ".cursor/hooks",
        );
        assert_eq!(t, "here=\".cursor/hooks\"\n");
        let (t, _) = written_out("echo x >> ${0%/*}/a.log", "~/.x/h");
        assert_eq!(t, "echo x >> ~/.x/h/a.log");
        // Climbing out of what the grant can name stays unresolved.
        let (t, _) = written_out("echo x >> $(dirname $0)/../../a.log", "~/.x");
        assert!(t.contains(".."), "{t}");
    }

    #[test]
    fn node_and_python_paths_joined_on_the_scripts_directory_are_named() {
        let (t, named) = written_out(
            "const LOG = path.join(__dirname, 'hooks.log');\nfs.appendFileSync(LOG, line);\n",
            ".cursor/hooks",
        );
        assert!(
            t.contains("const LOG = \".cursor/hooks/hooks.log\";"),
            "{t}"
        );
        assert_eq!(named, [".cursor/hooks/hooks.log"]);
        let (_, named) = written_out(
            "STATE = Path(__file__).resolve().parent.parent / \"state\" / \"last.json\"\n",
            "~/.claude/hooks",
        );
        assert_eq!(named, ["~/.claude/state/last.json"]);
        let (_, named) = written_out(
            "LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'run.log')\n",
            "~/.codex/hooks",
        );
        assert_eq!(named, ["~/.codex/hooks/run.log"]);
        // The directory alone is not a file the script names.
        let (_, named) = written_out("sys.path.insert(0, str(Path(__file__).parent))\n", "~/.h");
        assert!(named.is_empty());
    }
}
