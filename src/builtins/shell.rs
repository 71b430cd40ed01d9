//! A small POSIX/bash lexer for ctx-guard: enough of the shell grammar
//! (quotes, escapes, pipes, `&&`/`||`/`;`/`&`, subshells, `$(...)`,
//! backticks, process substitution, redirections, heredocs) to know which
//! simple commands a line runs, with which literal words, and where each
//! one's output goes. It never executes or expands anything; `$HOME`,
//! `${HOME}` and a leading `~` all become `~` so paths compare easily.

/// Nesting deeper than this is not ordinary; the rest is kept as text.
const MAX_DEPTH: usize = 32;

/// Where a redirection points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectOp {
    /// `<`
    Read,
    /// `>`, `>|`
    Write,
    /// `>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `>&N`, `&>FILE`/`>&FILE` are [`RedirectOp::WriteBoth`]
    DupOut,
    /// `<&N`
    DupIn,
    /// `&>`, `>&FILE`
    WriteBoth,
    /// `&>>`
    AppendBoth,
    /// `<<`, `<<-` (the body is data and is skipped)
    HereDoc,
    /// `<<<`
    HereString,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The explicit file descriptor (`2>`), if any.
    pub fd: Option<u32>,
    pub op: RedirectOp,
    pub target: String,
}

impl Redirect {
    /// Whether this sends stdout somewhere other than the terminal the
    /// model reads (a file or `/dev/null`; not `>&2`, not `/dev/stdout`).
    pub fn hides_stdout(&self) -> bool {
        let stdout = matches!(self.fd, None | Some(1));
        let to_file = !matches!(
            self.target.as_str(),
            "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/fd/1" | "/dev/fd/2"
        );
        match self.op {
            RedirectOp::Write | RedirectOp::Append => stdout && to_file,
            RedirectOp::WriteBoth | RedirectOp::AppendBoth => to_file,
            _ => false,
        }
    }

    /// Whether this feeds a file to stdin (`< FILE`, `<> FILE`).
    pub fn reads_file(&self) -> bool {
        matches!(self.op, RedirectOp::Read | RedirectOp::ReadWrite)
            && matches!(self.fd, None | Some(0))
    }
}

/// One simple command: `NAME=v cmd arg… <redirects>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// Leading `NAME=value` words.
    pub assignments: Vec<String>,
    /// The command and its arguments, quotes removed.
    pub words: Vec<String>,
    pub redirects: Vec<Redirect>,
    /// Commands joined by `|` share a pipeline; `stage` is the position.
    pub pipeline: usize,
    pub stage: usize,
    /// The innermost `( … )` this command sits in.
    pub group: Option<usize>,
    /// For a command inside `$( … )`, backticks or `<( … )`: the index of
    /// the command whose word it is part of.
    pub substitution_of: Option<usize>,
}

/// A `( … )` subshell: where the group as a whole sits and its redirects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    pub pipeline: usize,
    pub stage: usize,
    pub group: Option<usize>,
    pub substitution_of: Option<usize>,
    pub redirects: Vec<Redirect>,
}

/// Every simple command of a command line, in source order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    pub commands: Vec<Command>,
    pub groups: Vec<Group>,
    /// Nesting went past [`MAX_DEPTH`]; the deepest part is not analysed.
    pub too_deep: bool,
}

impl Script {
    pub fn parse(src: &str) -> Script {
        let mut p = Parser {
            s: src.as_bytes(),
            pos: 0,
            script: Script::default(),
            pipelines: 0,
            ctx: Ctx::default(),
            cur: None,
            closed_group: None,
            heredocs: Vec::new(),
            depth: 0,
        };
        p.ctx.pipeline = 0;
        p.list(Stop::Eof);
        p.script
    }

    /// The commands after `i` in its own pipeline.
    pub fn downstream(&self, i: usize) -> impl Iterator<Item = &Command> {
        let c = &self.commands[i];
        let (pipeline, stage) = (c.pipeline, c.stage);
        self.commands[i + 1..]
            .iter()
            .filter(move |d| d.pipeline == pipeline && d.stage > stage)
    }

    /// Whether `i` is the last stage of its pipeline.
    pub fn is_last_stage(&self, i: usize) -> bool {
        self.downstream(i).next().is_none()
    }

    /// The commands after group `g` in the pipeline the group is part of.
    pub fn group_downstream(&self, g: usize) -> impl Iterator<Item = &Command> {
        let (pipeline, stage) = (self.groups[g].pipeline, self.groups[g].stage);
        self.commands
            .iter()
            .filter(move |d| d.pipeline == pipeline && d.stage > stage)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Eof,
    /// `)` closes a subshell, `$( … )` or `<( … )`.
    Paren,
}

/// Where newly started commands belong.
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    pipeline: usize,
    stage: usize,
    group: Option<usize>,
    substitution_of: Option<usize>,
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    script: Script,
    pipelines: usize,
    ctx: Ctx,
    /// The command being built, if one has started.
    cur: Option<usize>,
    /// A `( … )` that just closed: redirects that follow apply to it.
    closed_group: Option<usize>,
    /// Heredoc delimiters waiting for the next newline: (word, strip tabs).
    heredocs: Vec<(String, bool)>,
    depth: usize,
}

fn is_meta(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

/// Words that open or close a compound command: dropped where a command
/// name would be, so `if grep -q x f; then cat y; fi` yields `grep …` and
/// `cat …`.
fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "if" | "then"
            | "else"
            | "elif"
            | "fi"
            | "do"
            | "done"
            | "while"
            | "until"
            | "!"
            | "{"
            | "}"
            | "time"
            | "esac"
    )
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<u8> {
        self.s.get(self.pos + n).copied()
    }

    fn starts_with(&self, lit: &[u8]) -> bool {
        self.s[self.pos..].starts_with(lit)
    }

    fn new_pipeline(&mut self) {
        self.pipelines += 1;
        self.ctx.pipeline = self.pipelines;
        self.ctx.stage = 0;
    }

    fn current(&mut self) -> usize {
        if let Some(i) = self.cur {
            return i;
        }
        self.script.commands.push(Command {
            pipeline: self.ctx.pipeline,
            stage: self.ctx.stage,
            group: self.ctx.group,
            substitution_of: self.ctx.substitution_of,
            ..Command::default()
        });
        let i = self.script.commands.len() - 1;
        self.cur = Some(i);
        self.closed_group = None;
        i
    }

    fn end_command(&mut self) {
        self.cur = None;
    }

    fn end_pipeline(&mut self) {
        self.end_command();
        self.closed_group = None;
        self.new_pipeline();
    }

    /// A list of pipelines up to `stop`. Returns at `)` (consumed) for
    /// [`Stop::Paren`], or at the end of input.
    fn list(&mut self, stop: Stop) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\\' if self.peek_at(1) == Some(b'\n') => self.pos += 2,
                b'#' if self.cur.is_none() || self.at_word_start() => self.skip_comment(),
                b'\n' => {
                    self.pos += 1;
                    self.end_pipeline();
                    self.read_heredoc_bodies();
                }
                b';' => {
                    self.pos += if self.peek_at(1) == Some(b';') { 2 } else { 1 };
                    self.end_pipeline();
                }
                b'&' if self.peek_at(1) == Some(b'&') => {
                    self.pos += 2;
                    self.end_pipeline();
                }
                b'&' if self.peek_at(1) == Some(b'>') => self.redirect(),
                b'&' => {
                    self.pos += 1;
                    self.end_pipeline();
                }
                b'|' if self.peek_at(1) == Some(b'|') => {
                    self.pos += 2;
                    self.end_pipeline();
                }
                b'|' => {
                    self.pos += if self.peek_at(1) == Some(b'&') { 2 } else { 1 };
                    self.end_command();
                    self.closed_group = None;
                    self.ctx.stage += 1;
                }
                b'(' => {
                    self.pos += 1;
                    if self.cur.is_some() {
                        // `name() { … }`: a function definition's parens.
                        if self.peek() == Some(b')') {
                            self.pos += 1;
                        }
                        self.end_pipeline();
                    } else {
                        self.subshell();
                    }
                }
                b')' => {
                    self.pos += 1;
                    if stop == Stop::Paren {
                        self.end_command();
                        return;
                    }
                    // A `case` pattern's paren: it ends nothing we track.
                    self.end_pipeline();
                }
                b'<' | b'>' => {
                    if matches!(self.peek_at(1), Some(b'(')) {
                        // Process substitution is an argument word.
                        let i = self.current();
                        let w = self.process_substitution(i);
                        self.push_word(i, w);
                    } else {
                        self.redirect();
                    }
                }
                b'0'..=b'9' if self.is_fd_redirect() => self.redirect(),
                _ => {
                    let i = self.current();
                    let w = self.word(i);
                    self.push_word(i, w);
                }
            }
        }
    }

    fn at_word_start(&self) -> bool {
        self.pos == 0 || is_meta(self.s[self.pos - 1])
    }

    fn skip_comment(&mut self) {
        while let Some(b) = self.peek() {
            if b == b'\n' {
                break;
            }
            self.pos += 1;
        }
    }

    fn is_fd_redirect(&self) -> bool {
        if !self.at_word_start() {
            return false;
        }
        let mut n = 0;
        while matches!(self.peek_at(n), Some(b'0'..=b'9')) {
            n += 1;
        }
        matches!(self.peek_at(n), Some(b'<' | b'>'))
    }

    fn push_word(&mut self, i: usize, w: Word) {
        let cmd = &mut self.script.commands[i];
        if cmd.words.is_empty() && !w.quoted && is_assignment(&w.text) {
            cmd.assignments.push(w.text);
        } else if cmd.words.is_empty() && !w.quoted && is_keyword(&w.text) {
            // Dropped: the next word is the command.
        } else {
            cmd.words.push(w.text);
        }
    }

    fn subshell(&mut self) {
        if self.depth >= MAX_DEPTH {
            self.script.too_deep = true;
            self.skip_balanced(1);
            return;
        }
        self.script.groups.push(Group {
            pipeline: self.ctx.pipeline,
            stage: self.ctx.stage,
            group: self.ctx.group,
            substitution_of: self.ctx.substitution_of,
            redirects: Vec::new(),
        });
        let g = self.script.groups.len() - 1;
        let saved = self.ctx;
        self.depth += 1;
        self.ctx.group = Some(g);
        self.new_pipeline();
        self.list(Stop::Paren);
        self.depth -= 1;
        self.ctx = saved;
        self.cur = None;
        self.closed_group = Some(g);
    }

    /// Parses a nested list (`$( … )`, `<( … )`) whose commands feed the
    /// command `owner`. The opening `(` is already consumed.
    fn substitution(&mut self, owner: usize) {
        if self.depth >= MAX_DEPTH {
            self.script.too_deep = true;
            self.skip_balanced(1);
            return;
        }
        let saved = (self.ctx, self.cur, self.closed_group);
        self.depth += 1;
        self.ctx.substitution_of = Some(owner);
        self.ctx.group = None;
        self.cur = None;
        self.new_pipeline();
        self.list(Stop::Paren);
        self.depth -= 1;
        (self.ctx, self.cur, self.closed_group) = saved;
    }

    /// Backticks: the body, unescaped, parsed as its own list.
    fn backticks(&mut self, owner: usize) {
        let mut body = Vec::new();
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'`' => break,
                b'\\' if matches!(self.peek(), Some(b'`' | b'\\' | b'$')) => {
                    body.push(self.s[self.pos]);
                    self.pos += 1;
                }
                _ => body.push(b),
            }
        }
        if self.depth >= MAX_DEPTH {
            self.script.too_deep = true;
            return;
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        let mut inner = Parser {
            s: text.as_bytes(),
            pos: 0,
            script: std::mem::take(&mut self.script),
            pipelines: self.pipelines,
            ctx: Ctx {
                substitution_of: Some(owner),
                ..Ctx::default()
            },
            cur: None,
            closed_group: None,
            heredocs: Vec::new(),
            depth: self.depth + 1,
        };
        inner.new_pipeline();
        inner.list(Stop::Eof);
        self.pipelines = inner.pipelines;
        self.script = inner.script;
    }

    fn process_substitution(&mut self, owner: usize) -> Word {
        let dir = self.s[self.pos];
        self.pos += 2;
        self.substitution(owner);
        Word {
            text: format!("{}(…)", dir as char),
            quoted: false,
        }
    }

    /// Skips to the `)` matching `open` already-open parens, quote-aware.
    fn skip_balanced(&mut self, mut open: usize) {
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'\\' => self.pos += 1,
                b'\'' => {
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == b'\'' {
                            break;
                        }
                    }
                }
                b'"' => {
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == b'\\' {
                            self.pos += 1;
                        } else if c == b'"' {
                            break;
                        }
                    }
                }
                b'(' => open += 1,
                b')' => {
                    open -= 1;
                    if open == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
        self.pos = self.pos.min(self.s.len());
    }

    fn redirect(&mut self) {
        let mut fd = None;
        let digits_start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        if self.pos > digits_start {
            fd = std::str::from_utf8(&self.s[digits_start..self.pos])
                .ok()
                .and_then(|d| d.parse().ok());
        }
        let ops: [(&[u8], RedirectOp); 13] = [
            (b"&>>", RedirectOp::AppendBoth),
            (b"&>", RedirectOp::WriteBoth),
            (b"<<<", RedirectOp::HereString),
            (b"<<-", RedirectOp::HereDoc),
            (b"<<", RedirectOp::HereDoc),
            (b"<>", RedirectOp::ReadWrite),
            (b"<&", RedirectOp::DupIn),
            (b">>", RedirectOp::Append),
            (b">|", RedirectOp::Write),
            (b">&", RedirectOp::DupOut),
            (b"<", RedirectOp::Read),
            (b">", RedirectOp::Write),
            (b"", RedirectOp::Write),
        ];
        let (lit, mut op) = ops
            .iter()
            .find(|(lit, _)| self.starts_with(lit))
            .map(|(l, o)| (*l, *o))
            .unwrap_or((b"", RedirectOp::Write));
        let strip_tabs = lit == b"<<-";
        self.pos += lit.len();
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        // The target is a word of the command (or group) it belongs to; a
        // substitution in it (`< <(cmd)`, `> "$(mktemp)"`) is owned by it.
        let owner = match self.closed_group {
            Some(_) => None,
            None => Some(self.current()),
        };
        let target = if matches!(self.peek(), Some(b'<' | b'>')) && self.peek_at(1) == Some(b'(') {
            let o = owner.unwrap_or_else(|| self.current());
            self.process_substitution(o)
        } else {
            self.word(owner.unwrap_or(usize::MAX))
        };
        if op == RedirectOp::DupOut && !target.text.chars().all(|c| c.is_ascii_digit() || c == '-')
        {
            op = RedirectOp::WriteBoth; // `>&file` is bash for `&>file`
        }
        if op == RedirectOp::HereDoc {
            self.heredocs.push((target.text.clone(), strip_tabs));
        }
        let r = Redirect {
            fd,
            op,
            target: target.text,
        };
        match (self.closed_group, owner) {
            (Some(g), _) => self.script.groups[g].redirects.push(r),
            (None, Some(i)) => self.script.commands[i].redirects.push(r),
            (None, None) => {}
        }
    }

    /// After a newline: skip each pending heredoc's body up to its
    /// delimiter line.
    fn read_heredoc_bodies(&mut self) {
        for (delim, strip_tabs) in std::mem::take(&mut self.heredocs) {
            while self.pos < self.s.len() {
                let end = self.s[self.pos..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(self.s.len(), |n| self.pos + n);
                let mut line = &self.s[self.pos..end];
                self.pos = (end + 1).min(self.s.len());
                if strip_tabs {
                    while let [b'\t', rest @ ..] = line {
                        line = rest;
                    }
                }
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line == delim.as_bytes() {
                    break;
                }
            }
        }
    }

    /// One word, quotes removed. `owner` receives any command substitution
    /// inside it (`usize::MAX`: nobody, e.g. a group's redirect target).
    fn word(&mut self, owner: usize) -> Word {
        let mut out: Vec<u8> = Vec::new();
        let mut quoted = false;
        let start = self.pos;
        while let Some(b) = self.peek() {
            match b {
                b'\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b'\n') => self.pos += 1,
                        Some(c) => {
                            out.push(c);
                            self.pos += 1;
                            quoted = true;
                        }
                        None => {}
                    }
                }
                b'\'' => {
                    quoted = true;
                    self.pos += 1;
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == b'\'' {
                            break;
                        }
                        out.push(c);
                    }
                }
                b'"' => {
                    quoted = true;
                    self.pos += 1;
                    self.double_quoted(&mut out, owner);
                }
                b'$' => self.dollar(&mut out, owner, &mut quoted),
                b'`' => {
                    self.pos += 1;
                    if owner != usize::MAX {
                        self.backticks(owner);
                    } else {
                        self.skip_backticks();
                    }
                    out.extend_from_slice("`…`".as_bytes());
                }
                b'~' if self.pos == start => {
                    out.push(b'~');
                    self.pos += 1;
                }
                b'(' if out.ends_with(b"=") && is_assignment(&String::from_utf8_lossy(&out)) => {
                    // `arr=(a b c)`: the array is part of the word.
                    let from = self.pos;
                    self.pos += 1;
                    self.skip_balanced(1);
                    out.extend_from_slice(&self.s[from..self.pos]);
                }
                b if is_meta(b) => break,
                _ => {
                    out.push(b);
                    self.pos += 1;
                }
            }
        }
        if self.pos == start {
            // Not a word at all (a stray operator byte); never loop on it.
            self.pos += 1;
        }
        Word {
            text: String::from_utf8_lossy(&out).into_owned(),
            quoted,
        }
    }

    fn skip_backticks(&mut self) {
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'\\' => self.pos += 1,
                b'`' => return,
                _ => {}
            }
        }
        self.pos = self.pos.min(self.s.len());
    }

    fn double_quoted(&mut self, out: &mut Vec<u8>, owner: usize) {
        let mut quoted = true;
        while let Some(b) = self.peek() {
            match b {
                b'"' => {
                    self.pos += 1;
                    return;
                }
                b'\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some(b'\n') => self.pos += 1,
                        Some(c @ (b'$' | b'`' | b'"' | b'\\')) => {
                            out.push(c);
                            self.pos += 1;
                        }
                        Some(_) => out.push(b'\\'),
                        None => {}
                    }
                }
                b'$' => self.dollar(out, owner, &mut quoted),
                b'`' => {
                    self.pos += 1;
                    if owner != usize::MAX {
                        self.backticks(owner);
                    } else {
                        self.skip_backticks();
                    }
                    out.extend_from_slice("`…`".as_bytes());
                }
                _ => {
                    out.push(b);
                    self.pos += 1;
                }
            }
        }
    }

    /// `$…` at the cursor: substitutions are parsed, `$HOME`/`${HOME}`
    /// become `~`, other expansions stay as written.
    /// One escape inside `$'…'`, the backslash already read: `\xHH`,
    /// `\NNN` (octal), `\uHHHH`, `\UHHHHHHHH`, `\cX` and the letters.
    fn ansi_c_escape(&mut self, out: &mut Vec<u8>) {
        let Some(c) = self.peek() else {
            out.push(b'\\');
            return;
        };
        self.pos += 1;
        let digits = |radix: u32, max: usize, this: &mut Self| -> Option<u32> {
            let from = this.pos;
            while this.pos - from < max && this.peek().is_some_and(|d| (d as char).is_digit(radix))
            {
                this.pos += 1;
            }
            let text = std::str::from_utf8(&this.s[from..this.pos]).ok()?;
            u32::from_str_radix(text, radix).ok()
        };
        let simple = match c {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'e' | b'E' => Some(0x1b),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            return;
        }
        let code = match c {
            b'x' => digits(16, 2, self),
            b'u' => digits(16, 4, self),
            b'U' => digits(16, 8, self),
            b'0'..=b'7' => {
                self.pos -= 1;
                digits(8, 3, self)
            }
            b'c' => {
                let x = self.peek();
                self.pos += usize::from(x.is_some());
                x.map(|x| u32::from(x & 0x1f))
            }
            other => {
                out.push(other);
                return;
            }
        };
        match code.and_then(char::from_u32) {
            Some(ch) => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            // `\x` with no digits is the two characters, as in bash.
            None => {
                out.push(b'\\');
                out.push(c);
            }
        }
    }

    fn dollar(&mut self, out: &mut Vec<u8>, owner: usize, quoted: &mut bool) {
        self.pos += 1;
        match self.peek() {
            Some(b'(') if self.peek_at(1) == Some(b'(') => {
                let from = self.pos - 1;
                self.pos += 2;
                self.skip_balanced(2);
                out.extend_from_slice(&self.s[from..self.pos]);
            }
            Some(b'(') => {
                self.pos += 1;
                if owner != usize::MAX {
                    self.substitution(owner);
                } else {
                    self.skip_balanced(1);
                }
                out.extend_from_slice("$(…)".as_bytes());
            }
            Some(b'{') => {
                let from = self.pos + 1;
                let mut depth = 0usize;
                while let Some(b) = self.peek() {
                    self.pos += 1;
                    match b {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        b'\\' => self.pos += 1,
                        _ => {}
                    }
                }
                self.pos = self.pos.min(self.s.len());
                let inner = &self.s[from..self.pos.saturating_sub(1).max(from)];
                if inner == b"HOME" {
                    out.push(b'~');
                } else {
                    out.extend_from_slice(b"${");
                    out.extend_from_slice(inner);
                    out.push(b'}');
                }
            }
            Some(b'\'') => {
                // ANSI-C quoting, every escape bash decodes: a program
                // name spelled `$'\x6b'eryx-hooks` reads as what runs.
                *quoted = true;
                self.pos += 1;
                while let Some(b) = self.peek() {
                    self.pos += 1;
                    match b {
                        b'\'' => break,
                        b'\\' => self.ansi_c_escape(out),
                        _ => out.push(b),
                    }
                }
                self.pos = self.pos.min(self.s.len());
            }
            Some(b'"') => {
                *quoted = true;
                self.pos += 1;
                self.double_quoted(out, owner);
            }
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => {
                let from = self.pos;
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == b'_') {
                    self.pos += 1;
                }
                let name = &self.s[from..self.pos];
                if name == b"HOME" {
                    out.push(b'~');
                } else {
                    out.push(b'$');
                    out.extend_from_slice(name);
                }
            }
            Some(b @ (b'0'..=b'9' | b'?' | b'#' | b'@' | b'*' | b'-' | b'$' | b'!')) => {
                self.pos += 1;
                out.push(b'$');
                out.push(b);
            }
            _ => out.push(b'$'),
        }
    }
}

struct Word {
    text: String,
    quoted: bool,
}

fn is_assignment(w: &str) -> bool {
    let Some(eq) = w.find('=') else { return false };
    let name = w[..eq].strip_suffix('+').unwrap_or(&w[..eq]);
    let name = name.split('[').next().unwrap_or(name);
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(src: &str) -> Vec<Vec<String>> {
        Script::parse(src)
            .commands
            .into_iter()
            .map(|c| c.words)
            .collect()
    }

    fn w(list: &[&[&str]]) -> Vec<Vec<String>> {
        list.iter()
            .map(|c| c.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(
            words(r#"echo 'a b' "c $HOME d" e\ f ~/x ${HOME}/y"#),
            w(&[&["echo", "a b", "c ~ d", "e f", "~/x", "~/y"]])
        );
        assert_eq!(
            words(r#"printf "%s\n" "a\"b" $'x\ty'"#),
            w(&[&["printf", "%s\\n", "a\"b", "x\ty"]])
        );
        assert_eq!(
            words(r#"$'\x6b'eryx-hooks $'\153\u0065\U00000072'y $'\e[0m\cA'"#),
            w(&[&["keryx-hooks", "kery", "\u{1b}[0m\u{1}"]])
        );
        assert_eq!(
            words("echo a#b # comment\nls"),
            w(&[&["echo", "a#b"], &["ls"]])
        );
    }

    #[test]
    fn lists_and_pipelines() {
        let s = Script::parse("cat a | grep b | head -5 && ls; pwd & echo x || true");
        let shape: Vec<(String, usize, usize)> = s
            .commands
            .iter()
            .map(|c| (c.words[0].clone(), c.pipeline, c.stage))
            .collect();
        assert_eq!(shape[0].1, shape[1].1);
        assert_eq!(shape[1].1, shape[2].1);
        assert_eq!((shape[0].2, shape[1].2, shape[2].2), (0, 1, 2));
        assert_ne!(shape[2].1, shape[3].1);
        assert_eq!(s.commands.len(), 7);
        assert!(s.is_last_stage(2) && !s.is_last_stage(0));
    }

    #[test]
    fn substitutions_know_their_owner() {
        let s = Script::parse("export $(grep -v '^#' .env | xargs) && echo \"$(cat x)\" `cat y`");
        let owners: Vec<(String, Option<usize>)> = s
            .commands
            .iter()
            .map(|c| (c.words[0].clone(), c.substitution_of))
            .collect();
        assert_eq!(owners[0], ("export".into(), None));
        assert_eq!(owners[1], ("grep".into(), Some(0)));
        assert_eq!(owners[2], ("xargs".into(), Some(0)));
        assert_eq!(owners[3].0, "echo");
        assert_eq!(owners[4], ("cat".into(), Some(3)));
        assert_eq!(owners[5], ("cat".into(), Some(3)));
        assert_eq!(s.commands[3].words, ["echo", "$(…)", "`…`"]);
    }

    #[test]
    fn redirects() {
        let s = Script::parse(
            "cat < .env > out.txt 2>&1; base64 <id_rsa; cmd &>log; x >&2; y 2>/dev/null",
        );
        let c = &s.commands;
        assert!(c[0].redirects[0].reads_file() && c[0].redirects[0].target == ".env");
        assert!(c[0].redirects[1].hides_stdout());
        assert!(!c[0].redirects[2].hides_stdout());
        assert_eq!(c[1].redirects[0].target, "id_rsa");
        assert!(c[2].redirects[0].hides_stdout());
        assert!(!c[3].redirects[0].hides_stdout());
        assert!(!c[4].redirects[0].hides_stdout());
        assert_eq!(c[4].words, ["y"]);
    }

    #[test]
    fn subshells_and_groups() {
        let s = Script::parse("(cd / && find . -name x) | head; { cat a; } > f");
        assert_eq!(s.commands[1].words[0], "find");
        let g = s.commands[1].group.unwrap();
        assert_eq!(s.group_downstream(g).next().unwrap().words[0], "head");
        assert_eq!(s.commands[3].words, ["cat", "a"]);
    }

    #[test]
    fn heredocs_are_data() {
        let s = Script::parse(
            "cat <<'EOF' > notes.md\ncat .env\n$(rm -rf /)\nEOF\necho done\ncat <<-X\n\tbody\n\tX\nls",
        );
        let names: Vec<&str> = s.commands.iter().map(|c| c.words[0].as_str()).collect();
        assert_eq!(names, ["cat", "echo", "cat", "ls"]);
    }

    #[test]
    fn keywords_assignments_and_compounds() {
        let s = Script::parse(
            "if grep -q k .env; then FOO=1 make test; fi; for f in *.rs; do wc -l \"$f\"; done < list",
        );
        let c = &s.commands;
        assert_eq!(c[0].words, ["grep", "-q", "k", ".env"]);
        assert_eq!(c[1].assignments, ["FOO=1"]);
        assert_eq!(c[1].words, ["make", "test"]);
        assert_eq!(c[4].words, ["wc", "-l", "$f"]);
        assert!(c[5].words.is_empty() && c[5].redirects[0].target == "list");
        assert_eq!(
            words("arr=(a b) && echo ${arr[@]}"),
            w(&[&[], &["echo", "${arr[@]}"]])
        );
    }

    #[test]
    fn process_substitution() {
        let s = Script::parse("diff <(sort a) <(sort b); while read l; do :; done < <(cat .env)");
        assert_eq!(s.commands[0].words, ["diff", "<(…)", "<(…)"]);
        assert_eq!(s.commands[1].substitution_of, Some(0));
        let cat = s
            .commands
            .iter()
            .position(|c| c.words.first().map(String::as_str) == Some("cat"))
            .unwrap();
        assert!(s.commands[cat].substitution_of.is_some());
    }

    #[test]
    fn hostile_input_terminates() {
        for src in [
            "$(((((",
            "\"unterminated",
            "'x",
            "`a",
            "${",
            "a\\",
            "((((((((((((((((((((((((((((((((((((((((x",
            ")))",
            "<<",
            "2>",
        ] {
            let _ = Script::parse(src);
        }
        let deep = "$(".repeat(100) + &")".repeat(100);
        assert!(Script::parse(&deep).too_deep);
    }

    #[test]
    fn random_shell_soup_never_panics() {
        // Deterministic pseudo-random strings over the shell's syntax bytes.
        let alphabet: Vec<char> = " \t\n;&|()<>$`'\"\\{}#=~*?!-0129abcé.".chars().collect();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let len = (next() % 40) as usize;
            let src: String = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let script = Script::parse(&src);
            for (i, c) in script.commands.iter().enumerate() {
                assert!(c.substitution_of.is_none_or(|o| o < i), "{src:?}");
            }
        }
    }
}
