//! Host JSON files (Claude Code, Gemini CLI, Qwen Code, Cursor, Copilot)
//! edited as text. The span-keeping reader is [`crate::textfile::json`]; our
//! entries are inserted, replaced and removed as splices of the original
//! bytes, so comments, trailing commas, a BOM, CRLF, foreign keys and their
//! order survive. Every result is parsed again before it is returned; a file
//! that cannot be read this way is refused, never rewritten lossy.

use serde_json::{Map, Value};

use super::HostFileError;

pub use crate::textfile::json::{
    Child, Container, Node, ParseError, Splice, apply, parse, to_value,
};

const BOM: &str = "\u{feff}";

/// How the file is laid out, so inserted text looks like its neighbours.
#[derive(Debug, Clone)]
struct Style {
    unit: String,
    nl: &'static str,
}

impl Style {
    fn of(text: &str, root: &Node) -> Style {
        let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let unit = root
            .container
            .as_ref()
            .and_then(|c| c.children.first())
            .filter(|ch| own_line(text, ch.start))
            .map(|ch| line_indent(text, ch.start).to_owned())
            .filter(|i| !i.is_empty())
            .unwrap_or_else(|| "  ".to_owned());
        Style { unit, nl }
    }

    /// `value` pretty-printed with this file's indent unit, its first line
    /// at the cursor and the rest indented by `indent`.
    fn render(&self, value: &Value, indent: &str) -> String {
        let mut buf = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(self.unit.as_bytes());
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        serde::Serialize::serialize(value, &mut ser).expect("a Value always serializes");
        let pretty = String::from_utf8(buf).expect("serde_json writes UTF-8");
        // JSON strings never hold a raw newline, so every '\n' is layout.
        pretty.replace('\n', &format!("{}{indent}", self.nl))
    }

    fn render_child(&self, key: Option<&str>, value: &Value, indent: &str) -> String {
        let v = self.render(value, indent);
        match key {
            Some(k) => format!("{}: {v}", Value::String(k.to_owned())),
            None => v,
        }
    }
}

fn line_start(text: &str, pos: usize) -> usize {
    text[..pos].rfind('\n').map_or(0, |i| i + 1)
}

fn line_indent(text: &str, pos: usize) -> &str {
    let start = line_start(text, pos);
    let line = &text[start..pos];
    let n = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..n]
}

/// Whether only whitespace stands before `pos` on its line.
fn own_line(text: &str, pos: usize) -> bool {
    text[line_start(text, pos)..pos]
        .chars()
        .all(|c| c == ' ' || c == '\t')
}

/// Between tokens there are no strings, so a `/` can only start a comment.
fn has_comment(text: &str, from: usize, to: usize) -> bool {
    from < to && text[from..to].contains('/')
}

/// Where the whitespace before `pos` starts.
fn ws_start(text: &str, pos: usize) -> usize {
    let before = &text[..pos];
    before.trim_end_matches([' ', '\t', '\n', '\r']).len()
}

/// Inserts a child at the end of `c`.
fn insert_child(
    text: &str,
    style: &Style,
    c: &Container,
    key: Option<&str>,
    value: &Value,
) -> Splice {
    let parent_indent = line_indent(text, c.open);
    match c.children.last() {
        None => {
            let indent = format!("{parent_indent}{}", style.unit);
            let child = style.render_child(key, value, &indent);
            let body = format!("{nl}{indent}{child}{nl}{parent_indent}", nl = style.nl);
            if has_comment(text, c.open + 1, c.close) {
                // Keep the comments; go in just before the closing bracket.
                if own_line(text, c.close) {
                    let at = line_start(text, c.close);
                    Splice {
                        start: at,
                        end: at,
                        text: format!("{indent}{child}{}", style.nl),
                    }
                } else {
                    Splice {
                        start: c.close,
                        end: c.close,
                        text: body,
                    }
                }
            } else {
                Splice {
                    start: c.open + 1,
                    end: c.close,
                    text: body,
                }
            }
        }
        Some(last) => {
            let first = &c.children[0];
            let (sep, child) = if own_line(text, first.start) {
                let indent = line_indent(text, first.start).to_owned();
                (
                    format!("{}{indent}", style.nl),
                    style.render_child(key, value, &indent),
                )
            } else {
                // A one-line container stays on one line.
                let compact = serde_json::to_string(value).expect("a Value always serializes");
                let child = match key {
                    Some(k) => format!("{}: {compact}", Value::String(k.to_owned())),
                    None => compact,
                };
                (" ".to_owned(), child)
            };
            match last.comma {
                // Keep the file's trailing-comma habit.
                Some(comma) => Splice {
                    start: comma + 1,
                    end: comma + 1,
                    text: format!("{sep}{child},"),
                },
                None => Splice {
                    start: last.value.end,
                    end: last.value.end,
                    text: format!(",{sep}{child}"),
                },
            }
        }
    }
}

/// Removes child `i` of `c` with its separator. Without comments around it
/// this is the exact inverse of [`insert_child`]; with comments, whole lines
/// go, so no comment can swallow what follows.
fn remove_child(text: &str, c: &Container, i: usize) -> Vec<Splice> {
    let ch = &c.children[i];
    let n = c.children.len();
    let own_end = ch.comma.map_or(ch.value.end, |p| p + 1);
    let whole_lines = |start_fallback: usize| -> Splice {
        if own_line(text, ch.start) {
            let start = line_start(text, ch.start);
            let rest = &text[own_end..];
            let spaces = rest.len() - rest.trim_start_matches([' ', '\t']).len();
            let mut end = own_end + spaces;
            if text[end..].starts_with("\r\n") {
                end += 2;
            } else if text[end..].starts_with('\n') {
                end += 1;
            } else {
                end = own_end;
            }
            Splice {
                start,
                end,
                text: String::new(),
            }
        } else {
            Splice {
                start: start_fallback,
                end: own_end,
                text: String::new(),
            }
        }
    };
    if n == 1 {
        if has_comment(text, c.open + 1, ch.start) || has_comment(text, own_end, c.close) {
            return vec![whole_lines(ws_start(text, ch.start))];
        }
        return vec![Splice {
            start: c.open + 1,
            end: c.close,
            text: String::new(),
        }];
    }
    if i == 0 {
        let next = &c.children[1];
        if has_comment(text, own_end, next.start) {
            return vec![whole_lines(ch.start)];
        }
        return vec![Splice {
            start: ch.start,
            end: next.start,
            text: String::new(),
        }];
    }
    let prev = &c.children[i - 1];
    let prev_comma = prev.comma.expect("a child after another follows a comma");
    let commented = has_comment(text, prev_comma + 1, ch.start);
    match ch.comma {
        Some(_) if !commented => vec![Splice {
            start: ws_start(text, ch.start),
            end: own_end,
            text: String::new(),
        }],
        Some(_) => vec![whole_lines(ws_start(text, ch.start))],
        None if !commented => vec![Splice {
            start: prev_comma,
            end: ch.value.end,
            text: String::new(),
        }],
        None => {
            // The last child goes; the comma before it would be left dangling.
            let mut s = vec![whole_lines(ws_start(text, ch.start))];
            s.push(Splice {
                start: prev_comma,
                end: prev_comma + 1,
                text: String::new(),
            });
            s
        }
    }
}

fn replace_value(text: &str, style: &Style, node: &Node, value: &Value) -> Splice {
    let indent = line_indent(text, node.start);
    Splice {
        start: node.start,
        end: node.end,
        text: style.render(value, indent),
    }
}

// ------------------------------------------------------------------ host shapes

/// How a host lays out its hook registrations under `hooks.<Event>`.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// `[{matcher, hooks: [handler]}]` (Claude Code, Gemini) rather than a
    /// flat `[handler]` (Cursor, Copilot).
    pub nested: bool,
    /// The file also needs `"version": 1` at the top level.
    pub version: bool,
    /// Where a handler keeps its shell command.
    pub command_keys: &'static [&'static str],
    /// Where a handler keeps its timeout.
    pub timeout_keys: &'static [&'static str],
}

/// One of our entries as it should be: the item that goes into the event's
/// array (a group for nested shapes, a handler for flat ones), as plain
/// data; the TOML editor takes the same.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    pub item: Value,
}

/// One of our handlers found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub key: String,
    pub command: String,
    pub timeout: Option<u64>,
    /// The whole handler, for the keys beside the command.
    pub handler: Value,
}

type Ours<'a> = &'a dyn Fn(&str) -> bool;

/// Which handlers an edit is about, by event key and command: ours (any
/// event), or the ones `import` takes over.
pub type Pick<'a> = &'a dyn Fn(&str, &str) -> bool;

fn command_of<'a>(shape: &Shape, handler: &'a Value) -> Option<&'a str> {
    shape
        .command_keys
        .iter()
        .find_map(|k| handler.get(*k).and_then(Value::as_str))
}

/// Where one of our handlers sits: member of `hooks`, item, handler in a group.
#[derive(Debug, Clone, Copy)]
struct Hit {
    event: usize,
    item: usize,
    handler: Option<usize>,
}

/// What an event's array holds of ours.
struct Scan {
    /// Items whose handlers are all ours.
    pure: Vec<usize>,
    /// Our handlers inside items that also hold someone else's.
    mixed: Vec<Hit>,
}

fn scan(
    text: &str,
    shape: &Shape,
    ours: Pick,
    (event, key): (usize, &str),
    arr: &Container,
) -> Scan {
    let mut s = Scan {
        pure: Vec::new(),
        mixed: Vec::new(),
    };
    for (i, item) in arr.children.iter().enumerate() {
        if shape.nested {
            let Some((_, handlers)) = item.value.member("hooks") else {
                continue;
            };
            let Some(hs) = handlers.value.array() else {
                continue;
            };
            let mine: Vec<usize> = hs
                .children
                .iter()
                .enumerate()
                .filter(|(_, h)| {
                    command_of(shape, &to_value(text, &h.value)).is_some_and(|c| ours(key, c))
                })
                .map(|(j, _)| j)
                .collect();
            if mine.is_empty() {
                continue;
            }
            if mine.len() == hs.children.len() {
                s.pure.push(i);
            } else {
                s.mixed.extend(mine.into_iter().map(|j| Hit {
                    event,
                    item: i,
                    handler: Some(j),
                }));
            }
        } else if command_of(shape, &to_value(text, &item.value)).is_some_and(|c| ours(key, c)) {
            s.pure.push(i);
        }
    }
    s
}

/// Splits off a BOM, and gives an empty document an object to edit.
fn body_of(text: &str) -> (&'static str, String) {
    let (bom, body) = match text.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", text),
    };
    if body.trim().is_empty() {
        let tail = if body.is_empty() { "\n" } else { body };
        (bom, format!("{{}}{tail}"))
    } else {
        (bom, body.to_owned())
    }
}

/// Whether `c` holds one child and no comment beside it.
fn bare_only_child(text: &str, c: &Container) -> bool {
    let [ch] = c.children.as_slice() else {
        return false;
    };
    let own_end = ch.comma.map_or(ch.value.end, |p| p + 1);
    !has_comment(text, c.open + 1, ch.start) && !has_comment(text, own_end, c.close)
}

/// Whether another member of `c` has the key of child `i`.
fn has_duplicate_key(c: &Container, i: usize) -> bool {
    let key = &c.children[i].key;
    c.object
        && c.children
            .iter()
            .enumerate()
            .any(|(j, ch)| j != i && &ch.key == key)
}

/// The path from the root to a hit, as (container, child index) pairs.
fn removal(text: &str, root: &Node, hooks_idx: usize, hit: Hit) -> Vec<Splice> {
    let rootc = root.object().expect("checked by the caller");
    let hooks = &rootc.children[hooks_idx].value;
    let hooksc = hooks.object().expect("checked by the caller");
    let ev = &hooksc.children[hit.event].value;
    let arr = ev.array().expect("checked by the caller");
    let mut levels: Vec<(&Container, usize)> =
        vec![(rootc, hooks_idx), (hooksc, hit.event), (arr, hit.item)];
    if let Some(h) = hit.handler {
        let group = &arr.children[hit.item].value;
        let (_, handlers) = group.member("hooks").expect("scan found it");
        levels.push((handlers.value.array().expect("scan found it"), h));
    }
    // Remove the highest container that our removal would leave empty: a
    // group without handlers, an event without groups, `hooks` without events.
    // A container holding a comment stays, so the comment does too.
    // A member whose key appears twice stays, so the duplicate it shadows
    // (which hosts ignore: the last one wins) cannot come back into force.
    let mut level = levels.len() - 1;
    while level > 0
        && bare_only_child(text, levels[level].0)
        && !has_duplicate_key(levels[level - 1].0, levels[level - 1].1)
    {
        level -= 1;
    }
    let (c, i) = levels[level];
    remove_child(text, c, i)
}

/// Adds or updates our entries, one per event in `entries`, and removes any
/// other entry of ours (an event no longer wired, a duplicate, our handler
/// inside someone else's group).
pub fn install(
    text: &str,
    shape: &Shape,
    entries: &[Entry],
    ours: Ours,
) -> Result<String, HostFileError> {
    edit(text, shape, entries, &|_, c| ours(c), true)
}

/// Removes every entry of ours, and the containers that only held ours.
pub fn uninstall(text: &str, shape: &Shape, ours: Ours) -> Result<String, HostFileError> {
    edit(text, shape, &[], &|_, c| ours(c), false)
}

/// Removes the handlers `pick` names (by event key and command), and the
/// containers that only held them; everything else stays byte for byte.
pub fn remove(text: &str, shape: &Shape, pick: Pick) -> Result<String, HostFileError> {
    edit(text, shape, &[], pick, false)
}

fn edit(
    text: &str,
    shape: &Shape,
    entries: &[Entry],
    ours: Pick,
    install: bool,
) -> Result<String, HostFileError> {
    if !install && text.trim_start_matches(BOM).trim().is_empty() {
        return Ok(text.to_owned());
    }
    let (bom, mut body) = body_of(text);
    let original = body.clone();
    // One edit per pass, re-reading the file after each: simple to get right
    // and these files are small. The bound only guards against a bug.
    for _ in 0..10_000 {
        let root = parse(&body).map_err(HostFileError::Json)?;
        match next_edit(&body, &root, shape, entries, ours, install)? {
            Some(splices) => body = apply(&body, splices),
            None => {
                verify(&original, &body, shape, entries, ours)?;
                return Ok(if !install && body == original {
                    text.to_owned()
                } else {
                    format!("{bom}{body}")
                });
            }
        }
    }
    Err(HostFileError::Unsettled)
}

fn next_edit(
    text: &str,
    root: &Node,
    shape: &Shape,
    entries: &[Entry],
    ours: Pick,
    install: bool,
) -> Result<Option<Vec<Splice>>, HostFileError> {
    let Some(rootc) = root.object() else {
        return if install {
            Err(HostFileError::TopLevelNotObject)
        } else {
            Ok(None)
        };
    };
    let style = Style::of(text, root);
    if install && shape.version && root.member("version").is_none() {
        return Ok(Some(vec![insert_child(
            text,
            &style,
            rootc,
            Some("version"),
            &Value::from(1),
        )]));
    }
    let Some((hooks_idx, hooks)) = root.member("hooks") else {
        if install && !entries.is_empty() {
            let empty = Value::Object(Map::new());
            return Ok(Some(vec![insert_child(
                text,
                &style,
                rootc,
                Some("hooks"),
                &empty,
            )]));
        }
        return Ok(None);
    };
    let Some(hooksc) = hooks.value.object() else {
        return if install {
            Err(HostFileError::HooksShape { shape: "an object" })
        } else {
            Ok(None)
        };
    };
    for (ei, member) in hooksc.children.iter().enumerate() {
        let key = member.key.as_deref().unwrap_or_default();
        let wanted = entries.iter().find(|e| e.key == key);
        let Some(arr) = member.value.array() else {
            if wanted.is_some() {
                return Err(HostFileError::EventShape {
                    key: key.to_owned(),
                    shape: "an array",
                });
            }
            continue;
        };
        let s = scan(text, shape, ours, (ei, key), arr);
        if let Some(hit) = s.mixed.first() {
            return Ok(Some(removal(text, root, hooks_idx, *hit)));
        }
        match wanted {
            None => {
                if let Some(&item) = s.pure.first() {
                    let hit = Hit {
                        event: ei,
                        item,
                        handler: None,
                    };
                    return Ok(Some(removal(text, root, hooks_idx, hit)));
                }
            }
            Some(entry) => {
                if let Some(&dup) = s.pure.get(1) {
                    return Ok(Some(remove_child(text, arr, dup)));
                }
                match s.pure.first() {
                    Some(&i) => {
                        let node = &arr.children[i].value;
                        if to_value(text, node) != entry.item {
                            return Ok(Some(vec![replace_value(text, &style, node, &entry.item)]));
                        }
                    }
                    None => {
                        return Ok(Some(vec![insert_child(
                            text,
                            &style,
                            arr,
                            None,
                            &entry.item,
                        )]));
                    }
                }
            }
        }
    }
    if install {
        for entry in entries {
            if hooks.value.member(&entry.key).is_none() {
                let list = Value::Array(vec![entry.item.clone()]);
                return Ok(Some(vec![insert_child(
                    text,
                    &style,
                    hooksc,
                    Some(&entry.key),
                    &list,
                )]));
            }
        }
    }
    Ok(None)
}

/// The result must read back: ours exactly as asked, everyone else's
/// handlers all still there, and strict JSON stays strict JSON.
fn verify(
    original: &str,
    result: &str,
    shape: &Shape,
    entries: &[Entry],
    ours: Pick,
) -> Result<(), HostFileError> {
    let fail = |why: String| Err(HostFileError::FailedCheck { why });
    let root = match parse(result) {
        Ok(r) => r,
        Err(e) => return fail(HostFileError::Json(e).to_string()),
    };
    if serde_json::from_str::<Value>(original).is_ok()
        && serde_json::from_str::<Value>(result).is_err()
    {
        return fail("strict JSON became JSON with comments".into());
    }
    let found = find_in(result, &root, shape, ours);
    let mut keys: Vec<&str> = found.iter().map(|f| f.key.as_str()).collect();
    keys.sort_unstable();
    let mut want: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
    want.sort_unstable();
    if keys != want {
        return fail(format!("our entries are {keys:?}, expected {want:?}"));
    }
    let foreign = |text: &str| -> Vec<String> {
        let Ok(root) = parse(text) else {
            return Vec::new();
        };
        let mut out = all_handlers(text, &root, shape)
            .into_iter()
            .filter(|(k, h)| !command_of(shape, h).is_some_and(|c| ours(k, c)))
            .map(|(k, h)| format!("{k} {h}"))
            .collect::<Vec<_>>();
        out.sort();
        out
    };
    if foreign(original) != foreign(result) {
        return fail("another tool's hook entry changed".into());
    }
    Ok(())
}

/// Every handler under `hooks.<Event>`, with its event.
fn all_handlers(text: &str, root: &Node, shape: &Shape) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let Some((_, hooks)) = root.member("hooks") else {
        return out;
    };
    let Some(hooksc) = hooks.value.object() else {
        return out;
    };
    for member in &hooksc.children {
        let key = member.key.clone().unwrap_or_default();
        let Some(arr) = member.value.array() else {
            continue;
        };
        for item in &arr.children {
            let v = to_value(text, &item.value);
            if shape.nested {
                if let Some(hs) = v.get("hooks").and_then(Value::as_array) {
                    out.extend(hs.iter().map(|h| (key.clone(), h.clone())));
                }
            } else {
                out.push((key.clone(), v));
            }
        }
    }
    out
}

fn find_in(text: &str, root: &Node, shape: &Shape, ours: Pick) -> Vec<Found> {
    all_handlers(text, root, shape)
        .into_iter()
        .filter_map(|(key, h)| {
            let command = command_of(shape, &h).filter(|c| ours(&key, c))?.to_owned();
            let timeout = shape
                .timeout_keys
                .iter()
                .find_map(|k| h.get(*k).and_then(Value::as_u64));
            Some(Found {
                key,
                command,
                timeout,
                handler: h,
            })
        })
        .collect()
}

/// One handler of any tool, as `import` reads it: its event key, the
/// matcher it runs under (its group's, in a nested shape; its own, in a
/// flat one) and the handler itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub key: String,
    pub matcher: Option<String>,
    pub handler: Value,
}

/// Every handler under `hooks.<Event>`, in file order.
pub fn list(text: &str, shape: &Shape) -> Result<Vec<Listed>, HostFileError> {
    let body = text.strip_prefix(BOM).unwrap_or(text);
    if body.trim().is_empty() {
        return Ok(Vec::new());
    }
    let root = parse(body).map_err(HostFileError::Json)?;
    let v = to_value(body, &root);
    Ok(listed(v.get("hooks"), shape.nested))
}

/// The handlers of a `hooks` value (an object of event arrays).
pub fn listed(hooks: Option<&Value>, nested: bool) -> Vec<Listed> {
    let mut out = Vec::new();
    let Some(events) = hooks.and_then(Value::as_object) else {
        return out;
    };
    let matcher = |v: &Value| v.get("matcher").and_then(Value::as_str).map(str::to_owned);
    for (key, items) in events {
        for item in items.as_array().into_iter().flatten() {
            if nested {
                for h in item
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.push(Listed {
                        key: key.clone(),
                        matcher: matcher(item),
                        handler: h.clone(),
                    });
                }
            } else {
                out.push(Listed {
                    key: key.clone(),
                    matcher: matcher(item),
                    handler: item.clone(),
                });
            }
        }
    }
    out
}

/// Our handlers in a file, in file order.
pub fn find(text: &str, shape: &Shape, ours: Ours) -> Result<Vec<Found>, HostFileError> {
    let body = text.strip_prefix(BOM).unwrap_or(text);
    if body.trim().is_empty() {
        return Ok(Vec::new());
    }
    let root = parse(body).map_err(HostFileError::Json)?;
    Ok(find_in(body, &root, shape, &|_, c| ours(c)))
}

// ------------------------------------------------------------------ settings by path

/// The node at `path` (object keys from the root), if every step is an
/// object member.
fn node_at<'a>(root: &'a Node, path: &[String]) -> Option<&'a Node> {
    path.iter()
        .try_fold(root, |node, key| node.member(key).map(|(_, ch)| &ch.value))
}

/// One splice on the body of `text` (its BOM kept), read back before it is
/// returned; strict JSON stays strict JSON.
fn splice_at(
    text: &str,
    make: impl FnOnce(&str, &Node, &Style) -> Result<Vec<Splice>, HostFileError>,
) -> Result<String, HostFileError> {
    let (bom, body) = body_of(text);
    let root = parse(&body).map_err(HostFileError::Json)?;
    let style = Style::of(&body, &root);
    let out = apply(&body, make(&body, &root, &style)?);
    parse(&out).map_err(|e| HostFileError::FailedCheck {
        why: HostFileError::Json(e).to_string(),
    })?;
    if serde_json::from_str::<Value>(&body).is_ok() && serde_json::from_str::<Value>(&out).is_err()
    {
        return Err(HostFileError::FailedCheck {
            why: "strict JSON became JSON with comments".into(),
        });
    }
    Ok(format!("{bom}{out}"))
}

fn not_an_object(path: &[String]) -> HostFileError {
    HostFileError::FailedCheck {
        why: format!("`{}` is not an object", path.join(".")),
    }
}

/// The value at `path`, `None` when a step is missing.
pub fn value_at(text: &str, path: &[String]) -> Result<Option<Value>, HostFileError> {
    let (_, body) = body_of(text);
    let root = parse(&body).map_err(HostFileError::Json)?;
    Ok(node_at(&root, path).map(|n| to_value(&body, n)))
}

/// Adds `key: value` as the last member of the object at `parent`.
pub fn insert_member(
    text: &str,
    parent: &[String],
    key: &str,
    value: &Value,
) -> Result<String, HostFileError> {
    splice_at(text, |body, root, style| {
        let c = node_at(root, parent)
            .and_then(Node::object)
            .ok_or_else(|| not_an_object(parent))?;
        Ok(vec![insert_child(body, style, c, Some(key), value)])
    })
}

/// Removes member `key` of the object at `parent` (the last one, when the
/// key appears twice); the exact inverse of [`insert_member`].
pub fn remove_member(text: &str, parent: &[String], key: &str) -> Result<String, HostFileError> {
    splice_at(text, |body, root, _| {
        let node = node_at(root, parent).ok_or_else(|| not_an_object(parent))?;
        let c = node.object().ok_or_else(|| not_an_object(parent))?;
        let (i, _) = node.member(key).ok_or_else(|| HostFileError::FailedCheck {
            why: format!("`{}` has no `{key}`", parent.join(".")),
        })?;
        Ok(remove_child(body, c, i))
    })
}

/// Replaces the value at `path`.
pub fn replace_at(text: &str, path: &[String], value: &Value) -> Result<String, HostFileError> {
    splice_at(text, |body, root, style| {
        let node = node_at(root, path).ok_or_else(|| not_an_object(path))?;
        Ok(vec![replace_value(body, style, node, value)])
    })
}

/// Appends `value` to the array at `path`.
pub fn push_item(text: &str, path: &[String], value: &Value) -> Result<String, HostFileError> {
    splice_at(text, |body, root, style| {
        let c = node_at(root, path).and_then(Node::array).ok_or_else(|| {
            HostFileError::FailedCheck {
                why: format!("`{}` is not an array", path.join(".")),
            }
        })?;
        Ok(vec![insert_child(body, style, c, None, value)])
    })
}

/// Removes the last element equal to `value` from the array at `path`;
/// the text is unchanged when there is none.
pub fn remove_item(text: &str, path: &[String], value: &Value) -> Result<String, HostFileError> {
    splice_at(text, |body, root, _| {
        let Some(c) = node_at(root, path).and_then(Node::array) else {
            return Ok(Vec::new());
        };
        Ok(c.children
            .iter()
            .rposition(|ch| &to_value(body, &ch.value) == value)
            .map(|i| remove_child(body, c, i))
            .unwrap_or_default())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NESTED: Shape = Shape {
        nested: true,
        version: false,
        command_keys: &["command"],
        timeout_keys: &["timeout"],
    };
    const FLAT: Shape = Shape {
        nested: false,
        version: true,
        command_keys: &["command"],
        timeout_keys: &["timeout"],
    };

    fn ours(c: &str) -> bool {
        c.starts_with("'/bin/keryx-hooks' run ")
    }

    fn group(ev: &str, timeout: u64) -> Entry {
        Entry {
            key: ev.into(),
            item: json!({"matcher": "*", "hooks": [{"type": "command", "command": format!("'/bin/keryx-hooks' run claude-code {ev}"), "timeout": timeout}]}),
        }
    }

    fn cycle(seed: &str, shape: &Shape, entries: &[Entry]) -> String {
        let once = install(seed, shape, entries, &ours).unwrap();
        let twice = install(&once, shape, entries, &ours).unwrap();
        assert_eq!(once, twice, "second install changed the file");
        let back = uninstall(&once, shape, &ours).unwrap();
        assert_eq!(back, seed, "uninstall did not restore the seed:\n{once}");
        once
    }

    #[test]
    fn reads_comments_trailing_commas_and_spans() {
        let t = "{ // c\n \"a\": [1, 2,], /* x */ \"b\": {\"c\": \"d\\\"\"},\n}";
        let root = parse(t).unwrap();
        let (_, a) = root.member("a").unwrap();
        assert_eq!(&t[a.value.start..a.value.end], "[1, 2,]");
        assert!(a.value.array().unwrap().children[1].comma.is_some());
        assert_eq!(to_value(t, &root), json!({"a": [1, 2], "b": {"c": "d\""}}));
    }

    #[test]
    fn refuses_broken_and_deep_documents() {
        for bad in [
            "{",
            "{\"a\" 1}",
            "[1 2]",
            "{\"a\": tru}",
            "/* open",
            "{,}",
            "{\"a\": 01x}",
            "[\"\\x\"]",
        ] {
            assert!(parse(bad).is_err(), "{bad} parsed");
        }
        let deep = "[".repeat(100_000);
        let e = parse(&deep).unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert_eq!((e.line, e.column), (3, 3));
    }

    #[test]
    fn new_file_and_empty_file() {
        let out = install("", &NESTED, &[group("PreToolUse", 19)], &ours).unwrap();
        assert_eq!(
            install(&out, &NESTED, &[group("PreToolUse", 19)], &ours).unwrap(),
            out
        );
        // What is left of a file we created; the file layer deletes it.
        assert_eq!(uninstall(&out, &NESTED, &ours).unwrap(), "{}\n");
        assert_eq!(
            out,
            "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"*\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"'/bin/keryx-hooks' run claude-code PreToolUse\",\n            \"timeout\": 19\n          }\n        ]\n      }\n    ]\n  }\n}\n"
        );
        let out = install(
            "",
            &FLAT,
            &[Entry {
                key: "stop".into(),
                item: json!({"command": "'/bin/keryx-hooks' run cursor stop"}),
            }],
            &ours,
        )
        .unwrap();
        assert!(
            out.starts_with("{\n  \"version\": 1,\n  \"hooks\": {"),
            "{out}"
        );
    }

    #[test]
    fn foreign_entries_keys_and_order_survive() {
        let seed = r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{ "type": "command", "command": "lint.sh" }]
      }
    ],
    "Notification": []
  },
  "permissions": { "allow": ["Bash(ls)"] }
}
"#;
        let out = cycle(seed, &NESTED, &[group("PreToolUse", 19), group("Stop", 8)]);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "lint.sh"
        );
        assert_eq!(v["hooks"]["PreToolUse"][1]["hooks"][0]["timeout"], 19);
        assert_eq!(v["hooks"]["Notification"], json!([]));
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["model", "hooks", "permissions"]);
    }

    #[test]
    fn comments_trailing_commas_bom_and_crlf_are_kept() {
        let seed = "\u{feff}{\r\n\t// my settings\r\n\t\"hooks\": {\r\n\t\t/* keep */\r\n\t\t\"PreToolUse\": [\r\n\t\t\t{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"x\"}]},\r\n\t\t],\r\n\t},\r\n}\r\n";
        let out = cycle(seed, &NESTED, &[group("PreToolUse", 19), group("Stop", 8)]);
        assert!(out.starts_with('\u{feff}'));
        assert!(out.contains("// my settings") && out.contains("/* keep */"));
        assert!(
            !out.replace("\r\n", "").contains('\n'),
            "LF crept into a CRLF file:\n{out:?}"
        );
        assert!(
            out.contains("\r\n\t\t\t{\r\n\t\t\t\t\"matcher\": \"*\""),
            "{out}"
        );
        let found = find(&out, &NESTED, &ours).unwrap();
        assert_eq!(found.len(), 2);
    }

    #[test]
    fn empty_hooks_object_and_inline_arrays() {
        for seed in [
            "{\"hooks\": {}}",
            "{\"hooks\": {\"PreToolUse\": [{\"matcher\": \"x\", \"hooks\": []}]}}",
            "{\n  \"hooks\": { // none yet\n  }\n}\n",
            "{}",
            "{ }\n",
        ] {
            let once = install(seed, &NESTED, &[group("PreToolUse", 19)], &ours).unwrap();
            assert_eq!(
                install(&once, &NESTED, &[group("PreToolUse", 19)], &ours).unwrap(),
                once
            );
            assert_eq!(find(&once, &NESTED, &ours).unwrap().len(), 1, "{once}");
            let back = uninstall(&once, &NESTED, &ours).unwrap();
            // An empty `hooks` goes with our last entry; the file layer
            // restores the exact bytes from its backup.
            let norm = |t: &str| {
                let mut v = to_value(t, &parse(t).unwrap());
                if v["hooks"] == json!({}) {
                    v.as_object_mut().unwrap().remove("hooks");
                }
                v
            };
            assert_eq!(norm(&back), norm(seed), "{seed} -> {once} -> {back}");
            if seed.contains("none yet") {
                assert_eq!(back, seed, "{once}");
            }
        }
    }

    #[test]
    fn updates_in_place_and_drops_stale_and_duplicate_entries() {
        let seed = "{\"hooks\": {}}";
        let a = install(
            seed,
            &NESTED,
            &[group("PreToolUse", 19), group("Stop", 8)],
            &ours,
        )
        .unwrap();
        let b = install(&a, &NESTED, &[group("PreToolUse", 25)], &ours).unwrap();
        let found = find(&b, &NESTED, &ours).unwrap();
        assert_eq!(
            found
                .iter()
                .map(|f| (f.key.as_str(), f.command.as_str(), f.timeout))
                .collect::<Vec<_>>(),
            [(
                "PreToolUse",
                "'/bin/keryx-hooks' run claude-code PreToolUse",
                Some(25)
            )]
        );

        // Our handler inside a foreign group is taken out of it; a duplicate group goes.
        let mixed = r#"{"hooks": {"PreToolUse": [
  {"matcher": "*", "hooks": [{"type": "command", "command": "lint.sh"}, {"type": "command", "command": "'/bin/keryx-hooks' run claude-code PreToolUse"}]},
  {"matcher": "*", "hooks": [{"type": "command", "command": "'/bin/keryx-hooks' run claude-code PreToolUse"}]},
  {"matcher": "*", "hooks": [{"type": "command", "command": "'/bin/keryx-hooks' run claude-code PreToolUse"}]}
]}}"#;
        let out = install(mixed, &NESTED, &[group("PreToolUse", 19)], &ours).unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["hooks"]["PreToolUse"].as_array().unwrap().len(),
            2,
            "{out}"
        );
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"],
            json!([{"type": "command", "command": "lint.sh"}])
        );
        assert_eq!(v["hooks"]["PreToolUse"][1], group("PreToolUse", 19).item);
    }

    #[test]
    fn refuses_wrong_shapes_without_guessing() {
        assert!(
            install("[1]", &NESTED, &[group("Stop", 1)], &ours)
                .unwrap_err()
                .to_string()
                .contains("top level")
        );
        assert!(
            install("{\"hooks\": []}", &NESTED, &[group("Stop", 1)], &ours)
                .unwrap_err()
                .to_string()
                .contains("`hooks`")
        );
        assert!(
            install(
                "{\"hooks\": {\"Stop\": {}}}",
                &NESTED,
                &[group("Stop", 1)],
                &ours
            )
            .unwrap_err()
            .to_string()
            .contains("hooks.Stop")
        );
        assert!(
            install("{\"a\": 1,, }", &NESTED, &[group("Stop", 1)], &ours)
                .unwrap_err()
                .to_string()
                .contains("line 1")
        );
        // Uninstall of something that is not ours leaves it alone.
        assert_eq!(uninstall("[1]", &NESTED, &ours).unwrap(), "[1]");
        assert_eq!(uninstall("", &NESTED, &ours).unwrap(), "");
    }

    #[test]
    fn removal_next_to_comments_keeps_the_file_valid() {
        let seed = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"command\": \"a\"}]}, // foreign\n      {\"hooks\": [{\"command\": \"'/bin/keryx-hooks' run claude-code Stop\"}]}\n    ]\n  }\n}\n";
        let out = uninstall(seed, &NESTED, &ours).unwrap();
        let v = to_value(&out, &parse(&out).unwrap());
        assert_eq!(
            v,
            json!({"hooks": {"Stop": [{"hooks": [{"command": "a"}]}]}}),
            "{out}"
        );
        assert!(out.contains("// foreign"));
        let seed = "{\"hooks\": {\"Stop\": [\n  {\"hooks\": [{\"command\": \"'/bin/keryx-hooks' run claude-code Stop\"}]}, // ours\n  /* theirs */ {\"hooks\": [{\"command\": \"a\"}]}\n]}}";
        let out = uninstall(seed, &NESTED, &ours).unwrap();
        assert_eq!(
            to_value(&out, &parse(&out).unwrap()),
            json!({"hooks": {"Stop": [{"hooks": [{"command": "a"}]}]}}),
            "{out}"
        );
    }

    #[test]
    fn one_line_files_stay_one_line() {
        let seed = "{\"version\": 1, \"hooks\": {\"stop\": [{\"command\": \"a\"}]}}";
        let e = Entry {
            key: "stop".into(),
            item: json!({"command": "'/bin/keryx-hooks' run cursor stop", "timeout": 8}),
        };
        let out = cycle(seed, &FLAT, &[e]);
        assert_eq!(
            out,
            "{\"version\": 1, \"hooks\": {\"stop\": [{\"command\": \"a\"}, {\"command\":\"'/bin/keryx-hooks' run cursor stop\",\"timeout\":8}]}}"
        );
    }
}
