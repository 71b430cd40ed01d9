//! Host TOML files (Codex `[hooks]`, Kimi `[[hooks]]`) edited with
//! `toml_edit`, which keeps comments, inline tables, dotted keys and the order
//! of everything we do not touch. Our entries are updated in place where they
//! already are, so a second install changes nothing; a table header is never
//! written twice.

use serde_json::Value as Json;
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, TableLike, Value};

pub use crate::textfile::toml::{item_json, table_json};

/// How a host lays out its hooks in TOML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Codex: `[[hooks.<Event>]]` groups with `matcher` and `[[hooks.<Event>.hooks]]` handlers.
    Nested,
    /// Kimi: a top-level `[[hooks]]` list whose entries name their event
    /// under this key (`event`; Mistral Vibe: `type`).
    Flat(&'static str),
}

/// Our entries and what is found are the same data as in a JSON host
/// file: a group (nested) or an entry (flat) under its event.
pub use super::json::{Entry, Found};

type Ours<'a> = &'a dyn Fn(&str) -> bool;
use super::HostFileError;
use super::json::Pick;

// ------------------------------------------------------------------ lists

/// An `[[array.of.tables]]` or an inline `[{…}, {…}]`: hosts accept both.
enum List<'a> {
    Tables(&'a mut ArrayOfTables),
    Inline(&'a mut Array),
}

impl<'a> List<'a> {
    fn of(item: &'a mut Item) -> Option<List<'a>> {
        match item {
            Item::ArrayOfTables(a) => Some(List::Tables(a)),
            Item::Value(Value::Array(a)) => Some(List::Inline(a)),
            _ => None,
        }
    }

    fn len(&self) -> usize {
        match self {
            List::Tables(a) => a.len(),
            List::Inline(a) => a.len(),
        }
    }

    fn get(&self, i: usize) -> Option<&dyn TableLike> {
        match self {
            List::Tables(a) => a.get(i).map(|t| t as &dyn TableLike),
            List::Inline(a) => a
                .get(i)
                .and_then(Value::as_inline_table)
                .map(|t| t as &dyn TableLike),
        }
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut dyn TableLike> {
        match self {
            List::Tables(a) => a.get_mut(i).map(|t| t as &mut dyn TableLike),
            List::Inline(a) => a
                .get_mut(i)
                .and_then(Value::as_inline_table_mut)
                .map(|t| t as &mut dyn TableLike),
        }
    }

    fn remove(&mut self, i: usize) {
        match self {
            List::Tables(a) => {
                a.remove(i);
            }
            List::Inline(a) => {
                a.remove(i);
            }
        }
    }

    fn push(&mut self, item: &Json) {
        match self {
            List::Tables(a) => {
                // A `[[a.b]]` header binds to the last `[[a]]` above it, so a
                // new `[[a]]` goes after every table of the elements already
                // there, wherever in the file those are.
                let mut t = to_table(item);
                t.set_position(a.iter().filter_map(last_position).max());
                a.push(t);
            }
            List::Inline(a) => a.push(Value::InlineTable(to_inline(item))),
        }
    }

    /// Makes entry `i` hold exactly `item`, keeping its place in the file.
    fn set(&mut self, i: usize, item: &Json) {
        match self {
            List::Tables(a) => {
                if let Some(t) = a.get_mut(i) {
                    t.clear();
                    for (k, v) in to_table(item).iter() {
                        t.insert(k, v.clone());
                    }
                }
            }
            List::Inline(a) => {
                a.replace(i, Value::InlineTable(to_inline(item)));
            }
        }
    }
}

/// The largest document position of `t` and every table below it.
fn last_position(t: &Table) -> Option<isize> {
    t.iter()
        .filter_map(|(_, item)| match item {
            Item::Table(t) => last_position(t),
            Item::ArrayOfTables(a) => a.iter().filter_map(last_position).max(),
            _ => None,
        })
        .chain(t.position())
        .max()
}

fn to_value(v: &Json) -> Value {
    match v {
        Json::String(s) => Value::from(s.as_str()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => n
            .as_i64()
            .map(Value::from)
            .unwrap_or_else(|| Value::from(n.as_f64().unwrap_or(0.0))),
        Json::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        Json::Object(_) => Value::InlineTable(to_inline(v)),
        Json::Null => Value::from(""),
    }
}

fn to_inline(v: &Json) -> InlineTable {
    let mut t = InlineTable::new();
    if let Json::Object(m) = v {
        for (k, v) in m {
            t.insert(k, to_value(v));
        }
    }
    t
}

/// Block form: a list of objects becomes `[[…]]` tables below this one.
fn to_table(v: &Json) -> Table {
    let mut t = Table::new();
    if let Json::Object(m) = v {
        for (k, v) in m {
            match v {
                Json::Array(items) if !items.is_empty() && items.iter().all(Json::is_object) => {
                    let mut aot = ArrayOfTables::new();
                    for it in items {
                        aot.push(to_table(it));
                    }
                    t.insert(k, Item::ArrayOfTables(aot));
                }
                _ => {
                    t.insert(k, Item::Value(to_value(v)));
                }
            }
        }
    }
    t
}

fn command_of(t: &dyn TableLike) -> Option<&str> {
    t.get("command").and_then(Item::as_str)
}

fn handlers(group: &mut dyn TableLike) -> Option<List<'_>> {
    group.get_mut("hooks").and_then(List::of)
}

/// Handlers of a group: (ours, total).
fn count(key: &str, group: &dyn TableLike, ours: Pick) -> (usize, usize) {
    match group.get("hooks").map(item_json) {
        Some(Json::Array(hs)) => {
            let mine = hs
                .iter()
                .filter(|h| {
                    h.get("command")
                        .and_then(Json::as_str)
                        .is_some_and(|c| ours(key, c))
                })
                .count();
            (mine, hs.len())
        }
        _ => (0, 0),
    }
}

// ------------------------------------------------------------------ edits

fn parse(text: &str) -> Result<DocumentMut, HostFileError> {
    text.parse::<DocumentMut>().map_err(|e| {
        let at = e.span().map_or(0, |s| s.start).min(text.len());
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        HostFileError::Toml {
            line,
            column,
            message: e.message().to_owned(),
        }
    })
}

/// Adds or updates our entries, one per event in `entries`, and removes any
/// other entry of ours.
pub fn install(
    text: &str,
    shape: Shape,
    entries: &[Entry],
    ours: Ours,
) -> Result<String, HostFileError> {
    edit(text, shape, entries, &|_, c| ours(c), true)
}

/// Removes every entry of ours and the tables that only held ours.
pub fn uninstall(text: &str, shape: Shape, ours: Ours) -> Result<String, HostFileError> {
    edit(text, shape, &[], &|_, c| ours(c), false)
}

/// Removes the handlers `pick` names (by event key and command), and the
/// tables that only held them.
pub fn remove(text: &str, shape: Shape, pick: Pick) -> Result<String, HostFileError> {
    edit(text, shape, &[], pick, false)
}

fn edit(
    text: &str,
    shape: Shape,
    entries: &[Entry],
    ours: Pick,
    install: bool,
) -> Result<String, HostFileError> {
    let mut doc = parse(text)?;
    match shape {
        Shape::Nested => edit_nested(&mut doc, entries, ours, install)?,
        Shape::Flat(key) => edit_flat(&mut doc, key, entries, ours, install)?,
    }
    let out = doc.to_string();
    if out == text {
        return Ok(out);
    }
    verify(text, &out, shape, entries, ours)?;
    Ok(out)
}

fn edit_nested(
    doc: &mut DocumentMut,
    entries: &[Entry],
    ours: Pick,
    install: bool,
) -> Result<(), HostFileError> {
    if doc.get("hooks").is_none() {
        if !install || entries.is_empty() {
            return Ok(());
        }
        let mut t = Table::new();
        // No bare `[hooks]` header: the `[[hooks.<Event>]]` tables imply it.
        t.set_implicit(true);
        doc.insert("hooks", Item::Table(t));
    }
    let inline = matches!(doc.get("hooks"), Some(Item::Value(_)));
    let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_like_mut) else {
        return if install {
            Err(HostFileError::HooksShape { shape: "a table" })
        } else {
            Ok(())
        };
    };
    let had_ours_anywhere = !find_nested(hooks, ours).is_empty();
    let keys: Vec<String> = hooks.iter().map(|(k, _)| k.to_owned()).collect();
    for key in &keys {
        let wanted = entries.iter().find(|e| &e.key == key);
        let Some(item) = hooks.get_mut(key) else {
            continue;
        };
        let Some(mut list) = List::of(item) else {
            if wanted.is_some() {
                return Err(HostFileError::EventShape {
                    key: key.clone(),
                    shape: "a list of tables",
                });
            }
            continue;
        };
        let mut touched = false;
        let mut pure = Vec::new();
        for gi in 0..list.len() {
            let Some(group) = list.get(gi) else { continue };
            let (mine, total) = count(key, group, ours);
            if mine == 0 {
                continue;
            }
            if mine == total {
                pure.push(gi);
                continue;
            }
            // Ours inside someone else's group: take ours out of it.
            if let Some(mut hs) = list.get_mut(gi).and_then(handlers) {
                for hi in (0..hs.len()).rev() {
                    if hs
                        .get(hi)
                        .and_then(command_of)
                        .is_some_and(|c| ours(key, c))
                    {
                        hs.remove(hi);
                        touched = true;
                    }
                }
            }
        }
        let keep = match wanted {
            Some(entry) => match pure.first() {
                Some(&first) => {
                    let same = list.get(first).map(table_json) == Some(entry.item.clone());
                    if !same {
                        list.set(first, &entry.item);
                        touched = true;
                    }
                    Some(first)
                }
                None => {
                    list.push(&entry.item);
                    touched = true;
                    None
                }
            },
            None => None,
        };
        for &gi in pure.iter().rev() {
            if Some(gi) != keep {
                list.remove(gi);
                touched = true;
            }
        }
        if touched && list.len() == 0 {
            hooks.remove(key);
        }
    }
    if install {
        for entry in entries {
            if hooks.get(&entry.key).is_none() {
                let item = if inline {
                    let mut a = Array::new();
                    a.push(Value::InlineTable(to_inline(&entry.item)));
                    Item::Value(Value::Array(a))
                } else {
                    let mut aot = ArrayOfTables::new();
                    aot.push(to_table(&entry.item));
                    Item::ArrayOfTables(aot)
                };
                hooks.insert(&entry.key, item);
            }
        }
    }
    if had_ours_anywhere && hooks.is_empty() {
        doc.remove("hooks");
    }
    Ok(())
}

fn edit_flat(
    doc: &mut DocumentMut,
    event_key: &str,
    entries: &[Entry],
    ours: Pick,
    install: bool,
) -> Result<(), HostFileError> {
    if doc.get("hooks").is_none() {
        if !install || entries.is_empty() {
            return Ok(());
        }
        doc.insert("hooks", Item::ArrayOfTables(ArrayOfTables::new()));
    }
    let Some(mut list) = doc.get_mut("hooks").and_then(List::of) else {
        return if install {
            Err(HostFileError::HooksShape {
                shape: "a list of tables (`[[hooks]]`)",
            })
        } else {
            Ok(())
        };
    };
    let mut touched = false;
    let mut kept: Vec<String> = Vec::new();
    let mut drop = Vec::new();
    for i in 0..list.len() {
        let Some(t) = list.get(i) else { continue };
        let event = t
            .get(event_key)
            .and_then(Item::as_str)
            .unwrap_or("")
            .to_owned();
        if !command_of(t).is_some_and(|c| ours(&event, c)) {
            continue;
        }
        let wanted = entries.iter().find(|e| e.key == event);
        match wanted {
            Some(entry) if !kept.contains(&event) => {
                if table_json(t) != entry.item {
                    list.set(i, &entry.item);
                    touched = true;
                }
                kept.push(event);
            }
            _ => drop.push(i),
        }
    }
    for &i in drop.iter().rev() {
        list.remove(i);
        touched = true;
    }
    if install {
        for entry in entries {
            if !kept.contains(&entry.key) {
                list.push(&entry.item);
                touched = true;
            }
        }
    }
    if touched && list.len() == 0 {
        doc.remove("hooks");
    }
    Ok(())
}

fn find_nested(hooks: &dyn TableLike, ours: Pick) -> Vec<Found> {
    let mut out = Vec::new();
    for (key, item) in hooks.iter() {
        let Json::Array(groups) = item_json(item) else {
            continue;
        };
        for g in groups {
            let Some(Json::Array(hs)) = g.get("hooks") else {
                continue;
            };
            for h in hs {
                found(&mut out, key, h, ours);
            }
        }
    }
    out
}

fn found(out: &mut Vec<Found>, key: &str, h: &Json, ours: Pick) {
    if let Some(command) = h
        .get("command")
        .and_then(Json::as_str)
        .filter(|c| ours(key, c))
    {
        out.push(Found {
            key: key.to_owned(),
            command: command.to_owned(),
            timeout: h.get("timeout").and_then(Json::as_u64),
            handler: h.clone(),
        });
    }
}

/// Every handler in a file, as `import` reads it (see [`super::json::list`]).
pub fn list(text: &str, shape: Shape) -> Result<Vec<super::json::Listed>, HostFileError> {
    let doc = parse(text)?;
    let hooks = doc.get("hooks").map(item_json);
    Ok(match shape {
        Shape::Nested => super::json::listed(hooks.as_ref(), true),
        Shape::Flat(event_key) => hooks
            .as_ref()
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .map(|h| super::json::Listed {
                key: h
                    .get(event_key)
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_owned(),
                matcher: h.get("matcher").and_then(Json::as_str).map(str::to_owned),
                handler: h.clone(),
            })
            .collect(),
    })
}

/// Our entries in a file, in file order.
pub fn find(text: &str, shape: Shape, ours: Ours) -> Result<Vec<Found>, HostFileError> {
    let doc = parse(text)?;
    Ok(find_doc(&doc, shape, &|_, c| ours(c)))
}

fn find_doc(doc: &DocumentMut, shape: Shape, ours: Pick) -> Vec<Found> {
    match shape {
        Shape::Nested => doc
            .get("hooks")
            .and_then(Item::as_table_like)
            .map(|h| find_nested(h, ours))
            .unwrap_or_default(),
        Shape::Flat(event_key) => {
            let mut out = Vec::new();
            if let Some(Json::Array(items)) = doc.get("hooks").map(item_json) {
                for it in items {
                    let key = it
                        .get(event_key)
                        .and_then(Json::as_str)
                        .unwrap_or("")
                        .to_owned();
                    found(&mut out, &key, &it, ours);
                }
            }
            out
        }
    }
}

/// Every handler that is not ours, for the check that none changed.
fn foreign(doc: &DocumentMut, shape: Shape, ours: Pick) -> Vec<String> {
    let mut out = Vec::new();
    let hooks = doc.get("hooks").map(item_json).unwrap_or(Json::Null);
    let is_ours = |key: &str, h: &Json| {
        h.get("command")
            .and_then(Json::as_str)
            .is_some_and(|c| ours(key, c))
    };
    match (shape, hooks) {
        (Shape::Nested, Json::Object(events)) => {
            for (key, groups) in events {
                for g in groups.as_array().into_iter().flatten() {
                    for h in g
                        .get("hooks")
                        .and_then(Json::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if !is_ours(&key, h) {
                            out.push(format!("{key} {h}"));
                        }
                    }
                }
            }
        }
        (Shape::Flat(event_key), Json::Array(items)) => {
            out.extend(
                items
                    .iter()
                    .filter(|h| !is_ours(h.get(event_key).and_then(Json::as_str).unwrap_or(""), h))
                    .map(Json::to_string),
            );
        }
        _ => {}
    }
    out.sort();
    out
}

fn verify(
    before: &str,
    after: &str,
    shape: Shape,
    entries: &[Entry],
    ours: Pick,
) -> Result<(), HostFileError> {
    let fail = |why: String| Err(HostFileError::FailedCheck { why });
    let Ok(old) = before.parse::<DocumentMut>() else {
        return fail("the original no longer parses".into());
    };
    let new = match after.parse::<DocumentMut>() {
        Ok(d) => d,
        Err(e) => return fail(e.message().to_owned()),
    };
    let mut keys: Vec<String> = find_doc(&new, shape, ours)
        .into_iter()
        .map(|f| f.key)
        .collect();
    keys.sort();
    let mut want: Vec<String> = entries.iter().map(|e| e.key.clone()).collect();
    want.sort();
    if keys != want {
        return fail(format!("our entries are {keys:?}, expected {want:?}"));
    }
    if foreign(&old, shape, ours) != foreign(&new, shape, ours) {
        return fail("another tool's hook entry changed".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours(c: &str) -> bool {
        c.starts_with("'/bin/keryx-hooks' run ")
    }

    fn group(ev: &str, timeout: u64) -> Entry {
        Entry {
            key: ev.into(),
            item: json!({"matcher": "*", "hooks": [{"type": "command", "command": format!("'/bin/keryx-hooks' run codex {ev} --snapshot k"), "timeout": timeout}]}),
        }
    }

    fn kimi(ev: &str, timeout: u64) -> Entry {
        Entry {
            key: ev.into(),
            item: json!({"event": ev, "command": format!("'/bin/keryx-hooks' run kimi {ev}"), "timeout": timeout}),
        }
    }

    fn cycle(seed: &str, shape: Shape, entries: &[Entry]) -> String {
        let once = install(seed, shape, entries, &ours).unwrap();
        assert_eq!(
            install(&once, shape, entries, &ours).unwrap(),
            once,
            "second install changed it"
        );
        assert_eq!(
            find(&once, shape, &ours).unwrap().len(),
            entries.len(),
            "{once}"
        );
        let back = uninstall(&once, shape, &ours).unwrap();
        assert_eq!(back, seed, "uninstall did not restore the seed:\n{once}");
        once
    }

    const CODEX_SEED: &str = r#"# my codex config
model = "gpt-5" # inline comment
mcp_servers = { docs = { command = "docs-mcp", args = ["--stdio"] } }
hooks.state."sha256:abc" = { trusted = true }

[[hooks.PreToolUse]]
matcher = "^Bash$"

[[hooks.PreToolUse.hooks]]
type = "command"
command = "python3 policy.py"
timeout = 30

[model_providers.mock]
name = "mock"   # keep the spacing
base_url = "http://127.0.0.1:1/v1"
"#;

    #[test]
    fn codex_keeps_comments_inline_tables_and_dotted_keys() {
        let out = cycle(
            CODEX_SEED,
            Shape::Nested,
            &[group("PreToolUse", 19), group("Stop", 8)],
        );
        assert!(
            out.contains("# inline comment")
                && out.contains("name = \"mock\"   # keep the spacing")
        );
        assert!(
            out.contains(
                "mcp_servers = { docs = { command = \"docs-mcp\", args = [\"--stdio\"] } }"
            )
        );
        assert!(out.contains("hooks.state.\"sha256:abc\" = { trusted = true }"));
        assert_eq!(out.matches("[model_providers.mock]").count(), 1);
        let doc: DocumentMut = out.parse().unwrap();
        let pre = item_json(&doc["hooks"]["PreToolUse"]);
        assert_eq!(pre[0]["hooks"][0]["command"], "python3 policy.py");
        assert_eq!(pre[1], group("PreToolUse", 19).item);
        assert!(out.contains("[[hooks.Stop.hooks]]"), "{out}");
    }

    #[test]
    fn codex_new_file_and_updates() {
        let out = install("", Shape::Nested, &[group("PreToolUse", 19)], &ours).unwrap();
        assert_eq!(
            out,
            "[[hooks.PreToolUse]]\nmatcher = \"*\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"'/bin/keryx-hooks' run codex PreToolUse --snapshot k\"\ntimeout = 19\n"
        );
        assert_eq!(uninstall(&out, Shape::Nested, &ours).unwrap(), "");
        let two = install(&out, Shape::Nested, &[group("PreToolUse", 25)], &ours).unwrap();
        assert_eq!(
            find(&two, Shape::Nested, &ours).unwrap()[0].timeout,
            Some(25)
        );
        assert_eq!(two.matches("[[hooks.PreToolUse]]").count(), 1, "{two}");
        assert_eq!(
            two.matches("[[hooks.PreToolUse.hooks]]").count(),
            1,
            "{two}"
        );
    }

    #[test]
    fn codex_inline_hooks_table_and_inline_lists() {
        let seed = "hooks = { PreToolUse = [ { matcher = \"x\", hooks = [ { type = \"command\", command = \"a\" } ] } ] }\n";
        let out = cycle(
            seed,
            Shape::Nested,
            &[group("PreToolUse", 19), group("Stop", 8)],
        );
        assert!(!out.contains("[[hooks"), "{out}");
        let seed = "[hooks]\nPreToolUse = [{ matcher = \"x\", hooks = [{ command = \"a\" }] }]\n";
        cycle(seed, Shape::Nested, &[group("PreToolUse", 19)]);
    }

    #[test]
    fn codex_our_handler_in_a_foreign_group_moves_out() {
        let seed = "[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ncommand = \"a\"\n[[hooks.Stop.hooks]]\ncommand = \"'/bin/keryx-hooks' run codex Stop\"\n";
        let out = install(seed, Shape::Nested, &[group("Stop", 8)], &ours).unwrap();
        let doc: DocumentMut = out.parse().unwrap();
        let stop = item_json(&doc["hooks"]["Stop"]);
        assert_eq!(stop[0], json!({"hooks": [{"command": "a"}]}));
        assert_eq!(stop[1], group("Stop", 8).item);
        let back = uninstall(&out, Shape::Nested, &ours).unwrap();
        assert_eq!(find(&back, Shape::Nested, &ours).unwrap(), vec![]);
        assert!(back.contains("command = \"a\""));
    }

    #[test]
    fn kimi_flat_list() {
        let seed = "default_model = \"k2\"\n\n[[hooks]]\nevent = \"PreToolUse\"\nmatcher = \"Bash\"\ncommand = \"node check.mjs\" # theirs\ntimeout = 5\n";
        let out = cycle(
            seed,
            Shape::Flat("event"),
            &[kimi("PreToolUse", 19), kimi("Stop", 8)],
        );
        assert_eq!(out.matches("[[hooks]]").count(), 3);
        assert!(out.contains("# theirs"));
        let out = install("", Shape::Flat("event"), &[kimi("Stop", 8)], &ours).unwrap();
        assert_eq!(
            out,
            "[[hooks]]\nevent = \"Stop\"\ncommand = \"'/bin/keryx-hooks' run kimi Stop\"\ntimeout = 8\n"
        );
        assert_eq!(uninstall(&out, Shape::Flat("event"), &ours).unwrap(), "");
        let inline = "hooks = [{ event = \"Stop\", command = \"x\" }]\n";
        cycle(inline, Shape::Flat("event"), &[kimi("Stop", 8)]);
    }

    #[test]
    fn refuses_what_it_cannot_edit() {
        assert!(
            install("hooks = 3\n", Shape::Nested, &[group("Stop", 1)], &ours)
                .unwrap_err()
                .to_string()
                .contains("`hooks`")
        );
        assert!(
            install(
                "[hooks]\nStop = 1\n",
                Shape::Nested,
                &[group("Stop", 1)],
                &ours
            )
            .unwrap_err()
            .to_string()
            .contains("hooks.Stop")
        );
        assert!(
            install("[hooks]\n", Shape::Flat("event"), &[kimi("Stop", 1)], &ours)
                .unwrap_err()
                .to_string()
                .contains("[[hooks]]")
        );
        let e = install("a = \n", Shape::Flat("event"), &[kimi("Stop", 1)], &ours)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1"), "{e}");
        assert_eq!(
            uninstall("hooks = 3\n", Shape::Nested, &ours).unwrap(),
            "hooks = 3\n"
        );
    }
}
