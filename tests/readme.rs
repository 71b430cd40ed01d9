//! The `### runtime.toml` section of docs/CONFIG.md against the code. Its
//! example file goes through the runtime's one reader (`settings`) and
//! every value in it must take effect; its table's defaults must be what
//! the reader gives when there is no file. The example, the table, the keys
//! the reader knows (anything else is a `doctor` warning) and [`read_back`]
//! must name the same keys: a key the runtime does not read cannot hide in
//! the example.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use keryx_hooks::config::model::Profile;
use keryx_hooks::secrets::{Rules, Target};
use keryx_hooks::settings::{self, Settings};
use serde_json::{Value, json};
use toml_edit::{DocumentMut, TableLike};

use crate::common::Env;

const HEADING: &str = "### runtime.toml";

/// The lines of docs/CONFIG.md's runtime.toml section, up to the next heading.
fn section() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/CONFIG.md"))
        .expect("docs/CONFIG.md is readable");
    let mut lines = readme.lines().skip_while(|l| *l != HEADING);
    assert_eq!(
        lines.next(),
        Some(HEADING),
        "docs/CONFIG.md has no `{HEADING}`"
    );
    let mut out = Vec::new();
    let mut in_code = false;
    for line in lines {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && line.starts_with('#') {
            break;
        }
        out.push(line.to_owned());
    }
    out
}

/// The one ```toml block of the section.
fn example(section: &[String]) -> String {
    let mut blocks = Vec::new();
    let mut lines = section.iter();
    while lines.by_ref().any(|l| l == "```toml") {
        let block: Vec<&str> = lines
            .by_ref()
            .take_while(|l| *l != "```")
            .map(String::as_str)
            .collect();
        blocks.push(block.join("\n") + "\n");
    }
    assert_eq!(blocks.len(), 1, "the section has exactly one toml block");
    blocks.pop().unwrap()
}

/// The table's rows: key, and the default as the TOML literal in its first
/// backticks.
fn table(section: &[String]) -> BTreeMap<String, Value> {
    let mut rows = BTreeMap::new();
    for line in section.iter().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let key = cells[1].trim_matches('`').to_owned();
        let literal = cells[2]
            .split('`')
            .nth(1)
            .unwrap_or_else(|| panic!("the default of `{key}` is not a TOML literal in backticks"));
        let doc: DocumentMut = format!("v = {literal}\n")
            .parse()
            .unwrap_or_else(|e| panic!("the default of `{key}` is not TOML: {e}"));
        let value = json_of(doc["v"].as_value().unwrap());
        assert!(
            rows.insert(key.clone(), value).is_none(),
            "`{key}` is twice in the table"
        );
    }
    assert!(!rows.is_empty(), "the section has no table of keys");
    rows
}

/// Every key the example sets, dotted; an array of tables is one key.
fn keys_of(doc: &DocumentMut) -> BTreeMap<String, Value> {
    fn walk(prefix: &str, t: &dyn TableLike, out: &mut BTreeMap<String, Value>) {
        for (k, item) in t.iter() {
            let key = format!("{prefix}{k}");
            if let Some(headers) = item.as_inline_table().filter(|_| key == "export.headers") {
                // Headers are one value: names to values.
                out.insert(
                    key,
                    json_of(&toml_edit::Value::InlineTable(headers.clone())),
                );
            } else if let Some(aot) = item.as_array_of_tables() {
                // Rules are compared by id.
                let ids = aot.iter().map(|t| json!(t["id"].as_str())).collect();
                out.insert(key, Value::Array(ids));
            } else if let Some(t) = item.as_table_like() {
                walk(&format!("{key}."), t, out);
            } else {
                out.insert(key, json_of(item.as_value().unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", doc.as_table(), &mut out);
    out.into_iter().map(|(k, v)| (k, sorted(v))).collect()
}

fn json_of(v: &toml_edit::Value) -> Value {
    match v {
        toml_edit::Value::String(s) => json!(s.value()),
        toml_edit::Value::Integer(i) => json!(i.value()),
        toml_edit::Value::Float(f) => json!(f.value()),
        toml_edit::Value::Boolean(b) => json!(b.value()),
        toml_edit::Value::Array(a) => Value::Array(a.iter().map(json_of).collect()),
        toml_edit::Value::InlineTable(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.to_owned(), json_of(v))).collect())
        }
        other => panic!("no settings value looks like {other}"),
    }
}

/// Lists of ids compare as sets.
fn sorted(v: Value) -> Value {
    match v {
        Value::Array(mut a) => {
            a.sort_by_key(Value::to_string);
            Value::Array(a)
        }
        other => other,
    }
}

/// What the runtime took from `$KERYX_HOME/runtime.toml` in `env`, keyed as
/// in the README table: what `run` and `list` did where they show it, and
/// what the one reader gives for the rest.
fn read_back(env: &Env) -> BTreeMap<String, Value> {
    let file = env.keryx_home().join("runtime.toml");
    let s = Settings::read(&file);
    assert_eq!(s.problems(), vec![], "`doctor` would report these");
    let mut out = BTreeMap::new();
    let mut put = |k: &str, v: Value| {
        out.insert(k.to_owned(), sorted(v));
    };

    let run_profile = profile_of_run(env);
    let v = env.run(&["list", "--json"]).json();
    assert_eq!(
        v["profile"],
        json!(run_profile),
        "`list` uses `run`'s profile"
    );
    put("profile", json!(run_profile));

    assert_eq!(v["projectTrust"]["warnings"], json!([]), "{v}");
    put("trust.pin_scripts", v["projectTrust"]["pinScripts"].clone());

    let builtin = Rules::builtin();
    let loaded = s.rules().expect("the secret rules load");
    let (builtin, loaded) = (builtin.ids(), loaded.ids());
    let missing = |a: &[&str], b: &[&str]| -> Value {
        a.iter()
            .filter(|id| !b.contains(id))
            .map(|id| json!(id))
            .collect()
    };
    put("security.disable", missing(&builtin, &loaded));
    put("security.rules", missing(&loaded, &builtin));

    put("ctx_guard.max_cat_bytes", json!(s.max_cat_bytes));
    let launcher = s.launcher.clone().expect("`sandbox.launcher` reads");
    put("sandbox.launcher", json!(launcher.unwrap_or_default()));

    put("learning.enabled", json!(s.learning.is_some()));
    put("impact.enabled", json!(s.impact.is_some()));
    let l = s.learning.unwrap_or_default();
    put("learning.max_record_bytes", json!(l.max_record_bytes));
    put("learning.max_session_bytes", json!(l.max_session_bytes));
    put("learning.max_file_bytes", json!(l.max_file_bytes));
    put("learning.keep_files", json!(l.keep_files));

    let i = s.impact.unwrap_or_default();
    put(
        "impact.ask_when_importers_at_least",
        json!(i.ask_threshold.unwrap_or(0)),
    );
    put("impact.max_files", json!(i.limits.max_files));
    put("impact.max_entries", json!(i.limits.max_entries));
    put("impact.max_file_bytes", json!(i.limits.max_file_bytes));
    put(
        "impact.max_context_bytes",
        json!(i.limits.max_context_bytes),
    );

    // `[export]`, as `keryx-hooks export` resolves it.
    let export = keryx_hooks::export::settings::resolve(&[file]).expect("`[export]` reads");
    put(
        "export.endpoint",
        json!(export.as_ref().map_or("", |e| e.endpoint_text.as_str())),
    );
    put(
        "export.headers",
        Value::Object(
            export
                .map(|e| e.headers.into_iter().map(|(k, v)| (k, json!(v))).collect())
                .unwrap_or_default(),
        ),
    );
    out
}

/// The profile `run` gave a hook (`KERYX_POLICY_PROFILE`) on a Stop whose
/// payload names none.
fn profile_of_run(env: &Env) -> String {
    static SESSION: AtomicUsize = AtomicUsize::new(0);
    let out = env.home.join("profile-seen");
    let _ = std::fs::remove_file(&out);
    env.write(
        env.user_hooks(),
        json!({"schemaVersion": "1.0.0", "hooks": {"Stop": [{
            "id": "profile-probe", "class": "observe", "runsIn": "unsandboxed",
            "command": {"argv": ["/bin/sh", "-c", "printf %s \"$KERYX_POLICY_PROFILE\" > \"$0\"",
                                 out.to_str().unwrap()]},
        }]}})
        .to_string(),
    );
    let session = format!("readme-{}", SESSION.fetch_add(1, Ordering::Relaxed));
    env.run_stdin(
        &["run", "keryx", "Stop"],
        json!({"event": "Stop", "sessionId": session, "cwd": env.project}).to_string(),
    )
    .code(0);
    std::fs::read_to_string(&out).expect("the probe hook ran")
}

fn observations(env: &Env) -> PathBuf {
    env.home
        .join(".local/state/keryx/learning/observations.jsonl")
}

#[test]
fn readme_runtime_toml_defaults_are_what_the_runtime_reads_without_a_file() {
    let rows = table(&section());
    let env = Env::new();
    assert_eq!(
        read_back(&env),
        rows,
        "docs/CONFIG.md table defaults vs the code"
    );
    // The learning observer is on by default: the probe's Stop was observed.
    assert!(observations(&env).exists());
}

#[test]
fn readme_runtime_toml_example_takes_effect_key_by_key() {
    let section = section();
    let text = example(&section);
    let doc: DocumentMut = text
        .parse()
        .unwrap_or_else(|e| panic!("docs/CONFIG.md runtime.toml example is not TOML: {e}"));
    let set = keys_of(&doc);
    let rows = table(&section);
    assert_eq!(
        set.keys().collect::<Vec<_>>(),
        rows.keys().collect::<Vec<_>>(),
        "the example sets exactly the keys of the table"
    );
    let mut known: Vec<String> = settings::keys().collect();
    known.sort();
    assert_eq!(
        known.iter().collect::<Vec<_>>(),
        rows.keys().collect::<Vec<_>>(),
        "the reader knows exactly the keys of the table"
    );

    let empty = read_back(&Env::new());
    let env = Env::new();
    let file = env.write(env.keryx_home().join("runtime.toml"), &text);
    let got = read_back(&env);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        set.keys().collect::<Vec<_>>(),
        "the example sets exactly the keys the runtime reads"
    );
    for (key, value) in &set {
        assert_eq!(&got[key], value, "`{key}` in docs/CONFIG.md example");
        // A default would read back the same whether or not the key is read.
        // `learning.enabled` is shown at its default, on, so the limits
        // after it take effect; the defaults test reads it back.
        if key != "profile" && key != "learning.enabled" {
            assert_ne!(&empty[key], value, "`{key}` in the example is its default");
        }
    }

    // `profile` shows a valid value; another one in the same place is what
    // `run` uses.
    let shown = set["profile"].as_str().unwrap();
    assert!(Profile::parse(shown).is_some(), "profile `{shown}`");
    let other = Profile::ALL
        .iter()
        .find(|p| p.as_str() != shown && !p.isolation_required())
        .unwrap()
        .as_str();
    let mut changed = doc.clone();
    changed["profile"] = toml_edit::value(other);
    env.write(&file, changed.to_string());
    assert_eq!(profile_of_run(&env), other);
    env.write(&file, &text);

    // The reader agrees with `list`.
    assert_eq!(
        Settings::read(&file).pin_scripts,
        Ok(set["trust.pin_scripts"] == json!(true))
    );

    // The learning sink wrote the Stop events above.
    assert!(observations(&env).is_file());

    // The example rule finds a key of its shape on both sides, under its
    // kind, and passes a placeholder and a low-entropy value.
    let rule = doc["security"]["rules"]
        .as_array_of_tables()
        .unwrap()
        .iter()
        .find(|t| t["id"].as_str() == Some("acme-api-key"))
        .expect("the example rule is `acme-api-key`");
    let read = Settings::read(&file);
    let rules = read.rules().unwrap();
    let found = |text: &str, target: Target| {
        rules
            .scan(text, target)
            .into_iter()
            .find(|f| f.rule_id == "acme-api-key")
    };
    let key = ["acme_", "Q7vLx2Rk9Tz4", "Wm8Np3Hs6Jd1", "Bf5Cy0Ga"].concat();
    for target in [Target::Input, Target::Output] {
        let f = found(&format!("deploy with {key} now"), target).expect("the rule matches");
        assert_eq!(Some(f.kind.as_str()), rule["kind"].as_str());
        assert_eq!((f.start, f.end), (17, 49), "the secret group is the span");
    }
    let placeholder = ["acme_", "Q7vLx2Rk9Tz4", "EXAMPLE", "Np3Hs6Jd1Bf5C"].concat();
    let low = ["acme_", &"ab".repeat(16)].concat();
    for text in [placeholder, low] {
        assert!(found(&text, Target::Input).is_none(), "{text}");
    }
}

/// The section's account of a broken file names the profile the reader
/// falls back to, and `list` shows that profile, with the warning.
#[test]
fn readme_runtime_toml_broken_file_gives_the_profile_it_names() {
    let text = section().join("\n");
    let strictest = format!("the strictest profile, `{}`", settings::STRICTEST);
    assert!(
        text.contains(&strictest),
        "docs/CONFIG.md does not name {strictest}"
    );
    let env = Env::new();
    env.write(
        env.keryx_home().join("runtime.toml"),
        "profile = \"read-only-review\"\n[trust\n",
    );
    let list = env.run(&["list", "--json"]);
    list.code(0).stderr_has("using the strictest profile");
    assert_eq!(list.json()["profile"], settings::STRICTEST.as_str());
}

/// The one command in README.md's "Run the tests" block.
fn readme_test_command() -> String {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("\n## Run the tests\n")
        .nth(1)
        .expect("README has a \"Run the tests\" section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section opens with a sh block");
    let lines: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one command: {lines:?}");
    lines[0].trim().to_owned()
}

#[test]
fn ci_runs_the_readme_test_command() {
    let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/run")).unwrap();
    let last = ci
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap();
    assert_eq!(last, format!("exec {}", readme_test_command()));
}

/// Every markdown table in README.md and docs/*.md whose first column is
/// `host`: where it is, and the first cell of each row.
fn host_tables() -> Vec<(String, Vec<String>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let first_cell = |line: &str| line.split('|').nth(1).unwrap_or("").trim().to_owned();
    let mut tables = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut in_code = false;
        for (i, line) in lines.iter().enumerate() {
            if line.starts_with("```") {
                in_code = !in_code;
            }
            let is_header = !in_code
                && line.starts_with('|')
                && first_cell(line).eq_ignore_ascii_case("host")
                && lines.get(i + 1).is_some_and(|l| l.starts_with("|---"));
            if !is_header {
                continue;
            }
            let rows = lines[i + 2..]
                .iter()
                .take_while(|l| l.starts_with('|'))
                .map(|l| first_cell(l))
                .collect();
            let name = file.strip_prefix(&root).unwrap().display().to_string();
            tables.push((format!("{name}:{}", i + 1), rows));
        }
    }
    tables
}

/// One list of hosts everywhere: each host table of the README and docs
/// names every host the adapters have (the keryx shell, which nothing
/// installs, may be left out), in the first cell of a row, by its display
/// name, its name or a short name (`Codex`, `Kimi`).
#[test]
fn every_host_table_names_every_adapter() {
    let tables = host_tables();
    assert!(
        !tables.is_empty(),
        "README.md and docs/*.md have no table whose first column is `host`"
    );
    let spoken = |s: &str| s.to_lowercase().replace(['-', '`'], " ");
    for name in keryx_hooks::hosts::host_names() {
        if *name == "keryx" {
            continue;
        }
        let a = keryx_hooks::hosts::adapter(name).unwrap();
        let names: Vec<String> = [a.display_name(), a.name()]
            .into_iter()
            .chain(a.aliases().iter().copied())
            .map(spoken)
            .collect();
        for (at, rows) in &tables {
            assert!(
                rows.iter()
                    .any(|cell| names.iter().any(|n| spoken(cell).contains(n.as_str()))),
                "the host table at {at} has no row for {} (`{name}`): {rows:?}",
                a.display_name()
            );
        }
    }
}

/// The README opens with the quick start: a heading within the first screen
/// and a block of at most 15 commands (tests/first-hour.sh runs it as
/// written, so it is also true).
#[test]
fn the_readme_opens_with_a_short_quick_start() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "## Quick start")
        .expect("README.md has a `## Quick start`");
    assert!(at < 12, "the quick start starts at line {}", at + 1);
    let open = at + lines[at..].iter().position(|l| *l == "```sh").unwrap();
    let close = open + 1 + lines[open + 1..].iter().position(|l| *l == "```").unwrap();
    let commands = close - open - 1;
    assert!(
        (5..=15).contains(&commands),
        "the quick start has {commands} lines"
    );
    assert!(
        close < 40,
        "the quick start block ends at line {}",
        close + 1
    );
}
