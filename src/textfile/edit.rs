//! Minimal text edits to a JSON document: set a value, add a member or an
//! element, remove one, touching only those bytes. A user's hooks file keeps
//! its formatting, key order, indentation and line endings through
//! `enable`/`disable`; each edit is mirrored on a `serde_json::Value` so the
//! caller can check the text says exactly what was meant.

use serde_json::Value;

use super::json::{self, Node};

/// One step of a path into the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

pub fn key(k: &str) -> Seg {
    Seg::Key(k.to_owned())
}

/// An edit, applied the same way to the text and to the value.
#[derive(Debug, Clone)]
pub enum Op {
    /// Replace the value at the path.
    Set(Vec<Seg>, Value),
    /// Append a member to the object at the path (the key must be absent).
    Insert(Vec<Seg>, String, Value),
    /// Append an element to the array at the path.
    Push(Vec<Seg>, Value),
    /// Remove the member or element at the path.
    Remove(Vec<Seg>),
}

/// The node at `path` below `node`; the last of duplicate keys is the one
/// serde_json keeps.
fn get<'n>(node: &'n Node, path: &[Seg]) -> Option<&'n Node> {
    let Some((first, rest)) = path.split_first() else {
        return Some(node);
    };
    let c = node.container.as_ref()?;
    let child = match first {
        Seg::Key(k) if c.object => c
            .children
            .iter()
            .rev()
            .find(|ch| ch.key.as_deref() == Some(k)),
        Seg::Index(i) if !c.object => c.children.get(*i),
        _ => None,
    }?;
    get(&child.value, rest)
}

/// `(start, end)` of each member (key to value end) or element.
fn item_spans(node: &Node) -> Vec<(usize, usize)> {
    node.container
        .iter()
        .flat_map(|c| c.children.iter().map(|ch| (ch.start, ch.value.end)))
        .collect()
}

/// Where the string starting at `i` (its opening quote) ends, past its
/// closing quote.
fn string_end(text: &str, mut i: usize) -> usize {
    let b = text.as_bytes();
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Why an edit could not be made; `path` and `op` are shown as they are
/// written in code (`[Key("hooks"), Index(0)]`), since only a bug reaches
/// these.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The text being edited is not a JSON document.
    #[error(transparent)]
    NotJson(#[from] json::ParseError),
    #[error("nothing at {path:?}")]
    Missing { path: Vec<Seg> },
    #[error("{path:?} is not an object")]
    NotAnObject { path: Vec<Seg> },
    #[error("{path:?} is not an array")]
    NotAnArray { path: Vec<Seg> },
    #[error("cannot remove the document")]
    RemoveDocument,
    /// [`edit_value`]: the value has nothing where `op` edits.
    #[error("nothing at {op:?}")]
    NoTarget { op: Op },
}

/// A JSON document being edited as text.
pub struct Doc {
    text: String,
    newline: &'static str,
    unit: String,
}

impl Doc {
    pub fn new(text: &str) -> Doc {
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        // The first indented line's indentation is one level, since the
        // document's own braces sit at column zero.
        let unit = text
            .lines()
            .skip(1)
            .map(|l| &l[..l.len() - l.trim_start_matches([' ', '\t']).len()])
            .find(|ws| !ws.is_empty())
            .unwrap_or("  ")
            .to_owned();
        Doc {
            text: text.to_owned(),
            newline,
            unit,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Applies `op` to the text, touching only the bytes it changes.
    pub fn edit(&mut self, op: &Op) -> Result<(), EditError> {
        let root = json::parse(&self.text)?;
        let missing = |p: &[Seg]| EditError::Missing { path: p.to_vec() };
        match op {
            Op::Set(path, v) => {
                let n = get(&root, path).ok_or_else(|| missing(path))?;
                let (s, e) = (n.start, n.end);
                self.text.replace_range(s..e, &inline(v));
            }
            Op::Insert(path, k, v) => {
                let n = get(&root, path).ok_or_else(|| missing(path))?;
                let Some(c) = n.object() else {
                    return Err(EditError::NotAnObject { path: path.clone() });
                };
                let sep = c
                    .children
                    .last()
                    .map(|ch| {
                        self.text[string_end(&self.text, ch.start)..ch.value.start].to_owned()
                    })
                    .unwrap_or_else(|| ": ".into());
                self.append(n, |indent, doc| {
                    format!(
                        "{}{sep}{}",
                        inline(&Value::String(k.clone())),
                        doc.block(v, indent)
                    )
                });
            }
            Op::Push(path, v) => {
                let n = get(&root, path).ok_or_else(|| missing(path))?;
                if n.array().is_none() {
                    return Err(EditError::NotAnArray { path: path.clone() });
                }
                self.append(n, |indent, doc| doc.block(v, indent));
            }
            Op::Remove(path) => {
                let (last, parent_path) = path.split_last().ok_or(EditError::RemoveDocument)?;
                let parent = get(&root, parent_path).ok_or_else(|| missing(parent_path))?;
                let index = match (&parent.container, last) {
                    (Some(c), Seg::Key(k)) if c.object => c
                        .children
                        .iter()
                        .rposition(|ch| ch.key.as_deref() == Some(k)),
                    (Some(c), Seg::Index(i)) if !c.object => (*i < c.children.len()).then_some(*i),
                    _ => None,
                }
                .ok_or_else(|| missing(path))?;
                let spans = item_spans(parent);
                let range = if spans.len() == 1 {
                    // The only item: leave `[]` / `{}`, exactly what an append
                    // into an empty container started from.
                    parent.start + 1..parent.end - 1
                } else if index > 0 {
                    // From the end of the previous item: `, item` goes, so
                    // removing what an append added restores the bytes.
                    spans[index - 1].1..spans[index].1
                } else {
                    spans[0].0..spans[1].0
                };
                self.text.replace_range(range, "");
            }
        }
        Ok(())
    }

    /// Appends an item to container `n`, laid out like its siblings.
    fn append(&mut self, n: &Node, render: impl Fn(&str, &Doc) -> String) {
        let spans = item_spans(n);
        if let Some(&(last_start, last_end)) = spans.last() {
            // Copy the whitespace that precedes the last item.
            let before = self.text[..last_start]
                .rfind([',', '[', '{'])
                .map_or(last_start, |p| p + 1);
            let ws = self.text[before..last_start].to_owned();
            let indent = ws.rsplit('\n').next().unwrap_or("").to_owned();
            let item = render(&indent, self);
            self.text.insert_str(last_end, &format!(",{ws}{item}"));
        } else {
            let line_start = self.text[..n.start].rfind('\n').map_or(0, |p| p + 1);
            let outer: String = self.text[line_start..n.start]
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            let (open, close) = (
                &self.text[n.start..n.start + 1],
                &self.text[n.end - 1..n.end],
            );
            let replacement = if self.text.contains('\n') {
                let indent = format!("{outer}{}", self.unit);
                let item = render(&indent, self);
                format!(
                    "{open}{nl}{indent}{item}{nl}{outer}{close}",
                    nl = self.newline
                )
            } else {
                format!("{open}{}{close}", render("", self))
            };
            self.text.replace_range(n.start..n.end, &replacement);
        }
    }

    /// A new value laid out for a multi-line file: a container holding
    /// containers gets one child per line, anything else stays on one line.
    fn block(&self, v: &Value, indent: &str) -> String {
        let nested = match v {
            Value::Array(a) => a.iter().any(|c| c.is_array() || c.is_object()),
            Value::Object(o) => o.values().any(|c| c.is_array() || c.is_object()),
            _ => false,
        };
        if !nested || !self.text.contains('\n') {
            return inline(v);
        }
        let inner = format!("{indent}{}", self.unit);
        let nl = self.newline;
        let items: Vec<String> = match v {
            Value::Array(a) => a.iter().map(|c| format!("{inner}{}", inline(c))).collect(),
            Value::Object(o) => o
                .iter()
                .map(|(k, c)| {
                    format!(
                        "{inner}{}: {}",
                        inline(&Value::String(k.clone())),
                        inline(c)
                    )
                })
                .collect(),
            _ => unreachable!(),
        };
        let (open, close) = if v.is_array() { ("[", "]") } else { ("{", "}") };
        format!(
            "{open}{nl}{}{nl}{indent}{close}",
            items.join(&format!(",{nl}"))
        )
    }
}

/// One-line JSON with a space after `:` and `,`, as people write it.
pub fn inline(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("[{}]", a.iter().map(inline).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, c)| format!("{}: {}", inline(&Value::String(k.clone())), inline(c)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// The same edit as [`Doc::edit`], on a parsed value.
pub fn edit_value(doc: &mut Value, op: &Op) -> Result<(), EditError> {
    fn at<'a>(v: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
        path.iter().try_fold(v, |v, seg| match seg {
            Seg::Key(k) => v.as_object_mut()?.get_mut(k),
            Seg::Index(i) => v.as_array_mut()?.get_mut(*i),
        })
    }
    let missing = || EditError::NoTarget { op: op.clone() };
    match op {
        Op::Set(path, new) => *at(doc, path).ok_or_else(missing)? = new.clone(),
        Op::Insert(path, k, new) => {
            at(doc, path)
                .and_then(Value::as_object_mut)
                .ok_or_else(missing)?
                .insert(k.clone(), new.clone());
        }
        Op::Push(path, new) => at(doc, path)
            .and_then(Value::as_array_mut)
            .ok_or_else(missing)?
            .push(new.clone()),
        Op::Remove(path) => {
            let (last, parent) = path.split_last().ok_or_else(missing)?;
            match (at(doc, parent).ok_or_else(missing)?, last) {
                (Value::Object(m), Seg::Key(k)) => {
                    m.shift_remove(k).ok_or_else(missing)?;
                }
                (Value::Array(a), Seg::Index(i)) if *i < a.len() => {
                    a.remove(*i);
                }
                _ => return Err(missing()),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn edit(text: &str, ops: &[Op]) -> String {
        let mut doc = Doc::new(text);
        let mut value: Value = serde_json::from_str(text).unwrap();
        for op in ops {
            doc.edit(op).unwrap();
            edit_value(&mut value, op).unwrap();
        }
        let reparsed: Value = serde_json::from_str(doc.text()).unwrap();
        assert_eq!(
            reparsed.to_string(),
            value.to_string(),
            "text and value diverged:\n{}",
            doc.text()
        );
        doc.text().to_owned()
    }

    const FILE: &str = "{\n    \"schemaVersion\": \"1.0.0\",\n    \"hooks\": {\n        \"Stop\": [\n            {\"id\": \"a\",   \"class\": \"observe\", \"command\": {\"argv\": [\"/bin/true\"]}}\n        ]\n    }\n}\n";

    #[test]
    fn set_and_insert_keep_everything_else() {
        let p = vec![key("hooks"), key("Stop"), Seg::Index(0)];
        let out = edit(
            FILE,
            &[Op::Insert(p.clone(), "enabled".into(), json!(false))],
        );
        assert_eq!(
            out,
            FILE.replace("[\"/bin/true\"]}}", "[\"/bin/true\"]}, \"enabled\": false}")
        );
        let mut enabled = p.clone();
        enabled.push(key("enabled"));
        let out2 = edit(&out, &[Op::Set(enabled, json!(true))]);
        assert_eq!(out2, out.replace("false", "true"));
    }

    #[test]
    fn add_then_remove_restores_the_bytes() {
        let ops_add = [
            Op::Insert(
                vec![key("hooks")],
                "PreToolUse".into(),
                json!([{"id": "keryx.learning-observer", "enabled": false}]),
            ),
            Op::Insert(
                vec![],
                "_keryxManaged".into(),
                json!({"managedHookIds": ["keryx.learning-observer"]}),
            ),
        ];
        let added = edit(FILE, &ops_add);
        assert!(added.contains(
            "\n        \"PreToolUse\": [\n            {\"id\": \"keryx.learning-observer\", \"enabled\": false}\n        ]\n    },\n    \"_keryxManaged\": {\n        \"managedHookIds\": [\"keryx.learning-observer\"]\n    }\n}\n"
        ), "{added}");
        let removed = edit(
            &added,
            &[
                Op::Remove(vec![key("_keryxManaged")]),
                Op::Remove(vec![key("hooks"), key("PreToolUse")]),
            ],
        );
        assert_eq!(removed, FILE);

        // Into an existing array, and back out.
        let pushed = edit(
            FILE,
            &[Op::Push(
                vec![key("hooks"), key("Stop")],
                json!({"id": "keryx.x", "enabled": false}),
            )],
        );
        assert!(
            pushed
                .contains("}},\n            {\"id\": \"keryx.x\", \"enabled\": false}\n        ]"),
            "{pushed}"
        );
        assert_eq!(
            edit(
                &pushed,
                &[Op::Remove(vec![key("hooks"), key("Stop"), Seg::Index(1)])]
            ),
            FILE
        );
    }

    #[test]
    fn empty_containers_crlf_and_one_line_files() {
        let crlf = "{\r\n  \"schemaVersion\": \"1.0.0\",\r\n  \"hooks\": {}\r\n}\r\n";
        let out = edit(
            crlf,
            &[Op::Insert(
                vec![key("hooks")],
                "Stop".into(),
                json!([{"id": "keryx.x", "enabled": false}]),
            )],
        );
        assert_eq!(
            out,
            "{\r\n  \"schemaVersion\": \"1.0.0\",\r\n  \"hooks\": {\r\n    \"Stop\": [\r\n      {\"id\": \"keryx.x\", \"enabled\": false}\r\n    ]\r\n  }\r\n}\r\n"
        );
        assert_eq!(
            edit(&out, &[Op::Remove(vec![key("hooks"), key("Stop")])]),
            crlf
        );

        let one = r#"{"schemaVersion":"1.0.0","hooks":{"Stop":[{"id":"a","class":"observe","command":{"argv":["x"]}}]}}"#;
        let out = edit(
            one,
            &[Op::Insert(
                vec![key("hooks"), key("Stop"), Seg::Index(0)],
                "enabled".into(),
                json!(false),
            )],
        );
        assert_eq!(out, one.replace(r#"["x"]}}"#, r#"["x"]},"enabled":false}"#));
    }

    #[test]
    fn removing_the_first_of_several() {
        let text = "[1, 2, 3]";
        assert_eq!(edit(text, &[Op::Remove(vec![Seg::Index(0)])]), "[2, 3]");
        assert_eq!(edit(text, &[Op::Remove(vec![Seg::Index(1)])]), "[1, 3]");
    }

    /// What a failed edit says, on the text and on the value.
    #[test]
    fn a_failed_edit_names_the_path() {
        let mut doc = Doc::new("{\"a\": 1}");
        let at = |k: &str| vec![key(k)];
        let err = |doc: &mut Doc, op: Op| doc.edit(&op).unwrap_err().to_string();
        assert_eq!(
            err(&mut doc, Op::Set(at("b"), json!(1))),
            r#"nothing at [Key("b")]"#
        );
        assert_eq!(
            err(&mut doc, Op::Insert(at("a"), "x".into(), json!(1))),
            r#"[Key("a")] is not an object"#
        );
        assert_eq!(
            err(&mut doc, Op::Push(at("a"), json!(1))),
            r#"[Key("a")] is not an array"#
        );
        assert_eq!(
            err(&mut doc, Op::Remove(Vec::new())),
            "cannot remove the document"
        );
        assert!(matches!(
            Doc::new("{").edit(&Op::Remove(at("a"))),
            Err(EditError::NotJson(_))
        ));
        let mut value = json!({"a": 1});
        assert_eq!(
            edit_value(&mut value, &Op::Remove(at("b")))
                .unwrap_err()
                .to_string(),
            r#"nothing at Remove([Key("b")])"#
        );
    }
}
