//! The local script file a command runs (`bash x.sh`, `python3 x.py`,
//! `source env.sh`, `./x.sh`), and its text read within a bound, so that
//! what a command runs is judged by what the file says, not by its name.
//! Only the file the command itself runs is read: nothing it names or
//! sources in turn.

use std::io::Read;
use std::path::Path;

use super::ctx_guard::basename;

/// The most of a script that is read; a longer one is judged by its name
/// alone (and by its first `MAX_BYTES`, which is where payloads sit).
pub const MAX_BYTES: u64 = 256 * 1024;

/// How a script's text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// Shell: its lines are commands, read like the command line.
    Shell,
    /// Interpreter code (Python, Node, Perl, Ruby, PHP, Lua): read like
    /// `python -c` code.
    Code,
}

fn bare(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

fn is_shell(name: &str) -> bool {
    matches!(
        bare(name),
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish"
    )
}

/// The interpreter's options that take the next word as their value.
fn valued(name: &str) -> &'static [&'static str] {
    match bare(name) {
        "python" | "pypy" => &["-W", "-X", "--check-hash-based-pycs"],
        "node" | "nodejs" => &[
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "--env-file",
            "--inspect-port",
            "--title",
        ],
        "perl" => &["-I", "-M", "-m", "-x"],
        "ruby" => &["-I", "-r", "-C", "-E"],
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" => {
            &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"]
        }
        _ => &[],
    }
}

/// Options after which the interpreter runs code given inline or a
/// module, not a file operand.
fn runs_no_file(name: &str, a: &str) -> bool {
    let inline: &[&str] = match bare(name) {
        "python" | "pypy" => &["-c", "-m"],
        "node" | "nodejs" => &["-e", "--eval", "-p", "--print"],
        "perl" | "ruby" => &["-e", "-E"],
        "php" => &["-r"],
        "lua" | "luajit" => &["-e"],
        n if is_shell(n) => &["-c", "-s"],
        _ => &[],
    };
    if inline.contains(&a) {
        return true;
    }
    // A short cluster ending in an inline flag: `-lc`, `-pe`, `-Bc`.
    a.len() > 2
        && a.starts_with('-')
        && !a.starts_with("--")
        && inline
            .iter()
            .any(|f| f.len() == 2 && a.ends_with(&f[1..]) && !a[1..a.len() - 1].contains('='))
}

/// The script operand of an interpreter's argv, if it runs one from a file.
fn operand_after_options<'a>(name: &str, argv: &'a [String]) -> Option<&'a str> {
    let valued = valued(name);
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        if a == "--" {
            return argv.get(i + 1).map(String::as_str);
        }
        if runs_no_file(name, a) {
            return None;
        }
        if a == "-" {
            return None;
        }
        if !a.starts_with('-') && !a.starts_with('+') {
            return Some(a);
        }
        i += if valued.contains(&a.as_str()) { 2 } else { 1 };
    }
    None
}

/// The file `argv` (wrappers already taken off) runs as a script, as
/// written, and how its text reads: `bash x.sh`, `sh -e x.sh`, `source x`,
/// `. x`, `python3 -u x.py`, `node x.js`, `perl x.pl`, `ruby x.rb`,
/// `php x.php`, `deno run x.ts`, `bun run x.ts`, or `./x.sh` (a program
/// named by a path, read by its `#!` line when it has one). `None` for a
/// program that runs no local file, and for code given inline.
pub fn script_of(argv: &[String]) -> Option<(&str, Option<Lang>)> {
    let first = argv.first()?;
    let name = basename(first);
    if matches!(first.as_str(), "source" | ".") {
        return argv.get(1).map(|f| (f.as_str(), Some(Lang::Shell)));
    }
    match bare(name) {
        n if is_shell(n) => operand_after_options(name, argv).map(|f| (f, Some(Lang::Shell))),
        "python" | "pypy" | "node" | "nodejs" | "perl" | "ruby" | "php" | "lua" | "luajit" => {
            operand_after_options(name, argv).map(|f| (f, Some(Lang::Code)))
        }
        "deno" | "bun" => {
            let rest = match argv.get(1).map(String::as_str) {
                Some("run") => &argv[1..],
                _ => argv,
            };
            let f = rest[1..].iter().find(|a| !a.starts_with('-'))?;
            // `bun run build`: a package.json script, not a file.
            (f.contains('.') || f.contains('/')).then_some((f.as_str(), Some(Lang::Code)))
        }
        // A program named by a relative or absolute path of the project:
        // what it is shows in its `#!` line, read with its text.
        _ if first.contains('/') => Some((first.as_str(), None)),
        _ => None,
    }
}

/// The language a `#!` line names, if any.
pub fn shebang_lang(text: &str) -> Option<Lang> {
    let line = text.strip_prefix("#!")?.lines().next()?;
    let mut words = line.split_whitespace();
    let mut prog = basename(words.next()?);
    if prog == "env" {
        prog = basename(words.find(|w| !w.starts_with('-') && !w.contains('='))?);
    }
    match bare(prog) {
        p if is_shell(p) => Some(Lang::Shell),
        "python" | "pypy" | "node" | "nodejs" | "perl" | "ruby" | "php" | "lua" | "deno"
        | "bun" => Some(Lang::Code),
        _ => None,
    }
}

/// The text of the regular file at `path`, at most [`MAX_BYTES`] of it;
/// `None` when it is missing, not a regular file (a FIFO or a device must
/// not hang the gate), or not text.
pub fn read(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_BYTES)
        .read_to_end(&mut buf)
        .ok()?;
    if buf.contains(&0) {
        return None; // a binary
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The script `argv` runs, resolved from `cwd`, with its text and how to
/// read it: `None` when it runs no local script or the file cannot be read
/// as text. A file run by path without a `#!` line naming a shell or an
/// interpreter is not read.
pub fn load(argv: &[String], cwd: Option<&Path>, home: Option<&Path>) -> Option<(Lang, String)> {
    let (written, lang) = script_of(argv)?;
    let path = resolve(written, cwd, home)?;
    let text = read(&path)?;
    let lang = lang.or_else(|| shebang_lang(&text))?;
    Some((lang, text))
}

/// `written` as an absolute path: `~` is the home, a relative path is
/// taken from `cwd`.
pub fn resolve(
    written: &str,
    cwd: Option<&Path>,
    home: Option<&Path>,
) -> Option<std::path::PathBuf> {
    let p = if let Some(rest) = written.strip_prefix("~/") {
        home?.join(rest)
    } else if written.starts_with('/') {
        std::path::PathBuf::from(written)
    } else {
        cwd?.join(written)
    };
    Some(crate::paths::absolute(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn finds_the_script_a_command_runs() {
        let cases = [
            ("bash run.sh", Some(("run.sh", Some(Lang::Shell)))),
            (
                "sh -e -x scripts/a.sh arg",
                Some(("scripts/a.sh", Some(Lang::Shell))),
            ),
            ("bash -o pipefail x.sh", Some(("x.sh", Some(Lang::Shell)))),
            (
                "source .venv/bin/activate",
                Some((".venv/bin/activate", Some(Lang::Shell))),
            ),
            (". ./env.sh", Some(("./env.sh", Some(Lang::Shell)))),
            ("python3 diag.py", Some(("diag.py", Some(Lang::Code)))),
            (
                "python3.12 -u -W ignore tool.py --x",
                Some(("tool.py", Some(Lang::Code))),
            ),
            (
                "node --require ts-node/register app.js",
                Some(("app.js", Some(Lang::Code))),
            ),
            ("perl x.pl", Some(("x.pl", Some(Lang::Code)))),
            (
                "deno run --allow-net x.ts",
                Some(("x.ts", Some(Lang::Code))),
            ),
            ("./run.sh", Some(("./run.sh", None))),
            ("python3 -c print(1)", None),
            ("python -m pytest -q", None),
            ("bash -c ls", None),
            ("bash -lc ls", None),
            ("node -e 1", None),
            ("bash", None),
            ("bun run build", None),
            ("pytest tests/test_login.py", None),
            ("cargo run", None),
        ];
        for (cmd, want) in cases {
            assert_eq!(script_of(&argv(cmd)), want, "{cmd}");
        }
    }

    #[test]
    fn reads_a_shebang() {
        assert_eq!(shebang_lang("#!/bin/sh\nls"), Some(Lang::Shell));
        assert_eq!(
            shebang_lang("#!/usr/bin/env -S python3 -u\n"),
            Some(Lang::Code)
        );
        assert_eq!(shebang_lang("#!/usr/bin/env node\n"), Some(Lang::Code));
        assert_eq!(shebang_lang("\u{7f}ELF"), None);
        assert_eq!(shebang_lang("echo hi"), None);
    }

    #[test]
    fn reads_a_bounded_text_file_only() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.sh");
        std::fs::write(&big, "a".repeat(MAX_BYTES as usize + 10)).unwrap();
        assert_eq!(read(&big).unwrap().len(), MAX_BYTES as usize);
        let bin = dir.path().join("bin");
        std::fs::write(&bin, b"\x7fELF\0\0").unwrap();
        assert_eq!(read(&bin), None);
        assert_eq!(read(dir.path()), None);
        assert_eq!(read(&dir.path().join("missing")), None);
        std::fs::write(dir.path().join("x.sh"), "cat ~/.ssh/id_rsa\n").unwrap();
        let (lang, text) = load(&argv("bash x.sh"), Some(dir.path()), None).unwrap();
        assert_eq!((lang, text.as_str()), (Lang::Shell, "cat ~/.ssh/id_rsa\n"));
        std::fs::write(dir.path().join("t"), "#!/usr/bin/env python3\nprint(1)\n").unwrap();
        assert_eq!(
            load(&argv("./t"), Some(dir.path()), None).unwrap().0,
            Lang::Code
        );
        std::fs::write(dir.path().join("u"), "no shebang").unwrap();
        assert_eq!(load(&argv("./u"), Some(dir.path()), None), None);
    }
}
