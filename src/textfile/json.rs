//! JSON edited as text: a small reader for JSON with `//` and `/* */`
//! comments and trailing commas that keeps the byte span of every value,
//! and splices of the original bytes. Host files and hooks files keep their
//! comments, key order and layout through every edit; the write gate reads
//! host files with it too.

use serde_json::{Map, Value};

/// Containers nested deeper than this are refused (no stack overflow on a
/// hostile file).
const MAX_DEPTH: usize = 128;

// ------------------------------------------------------------------ reader

/// A value and where it sits in the text.
#[derive(Debug, Clone)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub container: Option<Container>,
}

/// An object or array: its brackets, children and the commas between them.
#[derive(Debug, Clone)]
pub struct Container {
    pub object: bool,
    pub open: usize,
    pub close: usize,
    pub children: Vec<Child>,
}

/// A member (with its key) or an array element.
#[derive(Debug, Clone)]
pub struct Child {
    pub key: Option<String>,
    /// Where the key starts (the value, for an array element).
    pub start: usize,
    pub value: Node,
    /// The comma after the value, when there is one (a trailing comma too).
    pub comma: Option<usize>,
}

impl Node {
    pub fn member(&self, key: &str) -> Option<(usize, &Child)> {
        let c = self.container.as_ref().filter(|c| c.object)?;
        // The last duplicate wins, as in the hosts' own parsers.
        c.children
            .iter()
            .enumerate()
            .rev()
            .find(|(_, ch)| ch.key.as_deref() == Some(key))
    }

    pub fn object(&self) -> Option<&Container> {
        self.container.as_ref().filter(|c| c.object)
    }

    pub fn array(&self) -> Option<&Container> {
        self.container.as_ref().filter(|c| !c.object)
    }
}

/// Where a document could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// Reads a whole document (JSON plus `//` and `/* */` comments and trailing
/// commas). `text` must not start with a BOM.
pub fn parse(text: &str) -> Result<Node, ParseError> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let run = |p: &mut Parser| -> Result<Node, usize> {
        p.skip_ws()?;
        let node = p.value()?;
        p.skip_ws()?;
        if p.pos != p.s.len() {
            return Err(p.pos);
        }
        Ok(node)
    };
    run(&mut p).map_err(|at| {
        let at = at.min(text.len());
        let (line, column) = line_col(text, at);
        let message = p_message(text, at);
        ParseError {
            line,
            column,
            message,
        }
    })
}

fn p_message(text: &str, at: usize) -> String {
    match text[at..].chars().next() {
        None => "unexpected end of the document".into(),
        Some(c) => format!("unexpected `{}`", c.escape_debug()),
    }
}

fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..floor_char(text, at)];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

fn floor_char(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) -> Result<(), usize> {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                b'/' if self.s.get(self.pos + 1) == Some(&b'/') => {
                    while self.peek().is_some_and(|b| b != b'\n') {
                        self.pos += 1;
                    }
                }
                b'/' if self.s.get(self.pos + 1) == Some(&b'*') => {
                    let start = self.pos;
                    self.pos += 2;
                    loop {
                        match self.peek() {
                            None => return Err(start),
                            Some(b'*') if self.s.get(self.pos + 1) == Some(&b'/') => {
                                self.pos += 2;
                                break;
                            }
                            Some(_) => self.pos += 1,
                        }
                    }
                }
                _ => break,
            }
        }
        Ok(())
    }

    fn value(&mut self) -> Result<Node, usize> {
        let start = self.pos;
        match self.peek() {
            Some(b'{') => self.container(true),
            Some(b'[') => self.container(false),
            Some(b'"') => {
                self.string()?;
                let raw = std::str::from_utf8(&self.s[start..self.pos]).map_err(|_| start)?;
                serde_json::from_str::<String>(raw).map_err(|_| start)?;
                Ok(self.scalar(start))
            }
            Some(b'-' | b'0'..=b'9') => {
                while self
                    .peek()
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.pos += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.pos]).map_err(|_| start)?;
                serde_json::from_str::<Value>(text).map_err(|_| start)?;
                Ok(self.scalar(start))
            }
            _ => {
                for lit in ["true", "false", "null"] {
                    if self.s[self.pos..].starts_with(lit.as_bytes()) {
                        self.pos += lit.len();
                        return Ok(self.scalar(start));
                    }
                }
                Err(start)
            }
        }
    }

    fn scalar(&self, start: usize) -> Node {
        Node {
            start,
            end: self.pos,
            container: None,
        }
    }

    fn string(&mut self) -> Result<(), usize> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(start),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => self.pos += 2,
                Some(b) if b < 0x20 => return Err(self.pos),
                Some(_) => self.pos += 1,
            }
        }
    }

    fn container(&mut self, object: bool) -> Result<Node, usize> {
        let open = self.pos;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(open);
        }
        let close_byte = if object { b'}' } else { b']' };
        self.pos += 1;
        let mut children = Vec::new();
        loop {
            self.skip_ws()?;
            if self.peek() == Some(close_byte) {
                break;
            }
            let start = self.pos;
            let key = if object {
                if self.peek() != Some(b'"') {
                    return Err(self.pos);
                }
                self.string()?;
                let raw = std::str::from_utf8(&self.s[start..self.pos]).map_err(|_| start)?;
                let key: String = serde_json::from_str(raw).map_err(|_| start)?;
                self.skip_ws()?;
                if self.peek() != Some(b':') {
                    return Err(self.pos);
                }
                self.pos += 1;
                self.skip_ws()?;
                Some(key)
            } else {
                None
            };
            let value = self.value()?;
            self.skip_ws()?;
            let comma = match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    Some(self.pos - 1)
                }
                Some(b) if b == close_byte => None,
                _ => return Err(self.pos),
            };
            children.push(Child {
                key,
                start,
                value,
                comma,
            });
            if comma.is_none() {
                self.skip_ws()?;
                if self.peek() != Some(close_byte) {
                    return Err(self.pos);
                }
                break;
            }
        }
        let close = self.pos;
        self.pos += 1;
        self.depth -= 1;
        Ok(Node {
            start: open,
            end: self.pos,
            container: Some(Container {
                object,
                open,
                close,
                children,
            }),
        })
    }
}

/// The value a node holds (comments dropped, the last duplicate key wins).
pub fn to_value(text: &str, node: &Node) -> Value {
    match &node.container {
        None => serde_json::from_str(&text[node.start..node.end]).unwrap_or(Value::Null),
        Some(c) if c.object => {
            let mut m = Map::new();
            for ch in &c.children {
                m.insert(
                    ch.key.clone().unwrap_or_default(),
                    to_value(text, &ch.value),
                );
            }
            Value::Object(m)
        }
        Some(c) => Value::Array(
            c.children
                .iter()
                .map(|ch| to_value(text, &ch.value))
                .collect(),
        ),
    }
}

// ------------------------------------------------------------------ splices

/// Replace `start..end` with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splice {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

pub fn apply(text: &str, mut splices: Vec<Splice>) -> String {
    splices.sort_by_key(|s| std::cmp::Reverse(s.start));
    let mut out = text.to_owned();
    for s in splices {
        out.replace_range(s.start..s.end, &s.text);
    }
    out
}
