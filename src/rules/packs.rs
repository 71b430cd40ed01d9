//! The default packs: `src/rules/packs/<pack>.toml`, each a `version` and
//! one `[[rule]]` table per rule in the JSON format's TOML spelling.
//! build.rs reads them into static data (`pack_rules.rs`): no event parses
//! a pack. Each rule is compiled the first time a call it fits, and whose
//! need it meets (src/rules/need.rs), comes along.

use std::sync::OnceLock;

use serde_json::Value;

use crate::config::rules::{self, Lit, Literals, Reading, Rule};
use crate::events::Event;
use crate::rules::need::Need;

include!(concat!(env!("OUT_DIR"), "/pack_rules.rs"));

/// Every shipped pack: (pack id, its TOML), in the order their rules are
/// looked at. build.rs reads this list; a new pack is one more line here.
pub const PACKS: &[(&str, &str)] = &[
    ("destructive", include_str!("packs/destructive.toml")),
    ("exfiltration", include_str!("packs/exfiltration.toml")),
    ("persistence", include_str!("packs/persistence.toml")),
    (
        "secrets-in-context",
        include_str!("packs/secrets-in-context.toml"),
    ),
    ("supply-chain", include_str!("packs/supply-chain.toml")),
    ("mcp", include_str!("packs/mcp.toml")),
    ("obfuscation", include_str!("packs/obfuscation.toml")),
];

/// How a shipped pack's rule is read at run time: its patterns' syntax is
/// checked by the packs' tests, and their prefilters were found when the
/// binary was built.
pub const SHIPPED_READING: Reading = Reading {
    check_syntax: false,
    literals: Literals::Known(PACK_LITERALS),
};

/// One pack rule as the shim first sees it: what it looks at and what a
/// call must show for it to match, and the rule itself, compiled only when
/// a call it fits comes along (an event's answer pays for the rules it
/// could meet, not for every pack's).
#[derive(Debug)]
pub struct PackRule {
    pub id: &'static str,
    pub pack: &'static str,
    pub on: &'static [Event],
    /// Tool names or globs as written; empty is every tool.
    pub tools: &'static [&'static str],
    pub need: Need,
    /// The rule in the JSON shape of a `rules` entry.
    doc: &'static str,
    reading: Reading,
    compiled: OnceLock<Option<Rule>>,
}

impl PackRule {
    const fn shipped(
        pack: &'static str,
        id: &'static str,
        on: &'static [Event],
        tools: &'static [&'static str],
        need: Need,
        doc: &'static str,
    ) -> PackRule {
        PackRule {
            id,
            pack,
            on,
            tools,
            need,
            doc,
            reading: SHIPPED_READING,
            compiled: OnceLock::new(),
        }
    }

    /// The compiled rule; `None` (logged) when it does not compile, which
    /// a test keeps from shipping.
    pub fn rule(&self) -> Option<&Rule> {
        self.compiled
            .get_or_init(|| {
                let compiled = serde_json::from_str::<Value>(self.doc)
                    .map_err(|e| e.to_string())
                    .and_then(|v| rules::compile_with(&v, Some(self.pack), self.reading));
                compiled
                    .inspect_err(|e| tracing::warn!(pack = self.pack, "rule left out: {e}"))
                    .ok()
            })
            .as_ref()
    }

    /// Whether it has been compiled in this process.
    #[cfg(test)]
    pub(crate) fn is_compiled(&self) -> bool {
        self.compiled.get().is_some()
    }

    /// Whether `rules_off` switches it off.
    pub fn is_off(&self, off: &[String]) -> bool {
        off.iter().any(|o| o == self.id || o == self.pack)
    }
}

/// Every shipped pack's rules, none compiled yet.
pub fn entries() -> &'static [PackRule] {
    &SHIPPED
}

/// The rules of every shipped pack, all compiled (for the tools that show
/// or check them all).
pub fn rules() -> Vec<&'static Rule> {
    entries().iter().filter_map(PackRule::rule).collect()
}

/// A pack's rules read from its TOML text as the shim reads a person's
/// (every pattern parsed), with no need: each is looked at by every call
/// it fits. The strings live as long as the process.
#[cfg(test)]
pub fn read_pack(pack: &'static str, text: &str) -> Result<Vec<PackRule>, String> {
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let mut out = Vec::new();
    for doc in crate::rules::pack_toml::pack_rules(pack, text)? {
        let on: Vec<Event> = match doc.get("on") {
            None => vec![Event::PreToolUse],
            Some(v) => crate::rules::pack_toml::strings(Some(v))
                .iter()
                .filter_map(|e| e.parse().ok())
                .collect(),
        };
        let tools: Vec<&'static str> = crate::rules::pack_toml::strings(doc.get("tools"))
            .into_iter()
            .map(leak)
            .collect();
        out.push(PackRule {
            id: leak(format!(
                "{pack}/{}",
                crate::rules::pack_toml::bare_id(pack, &doc)
            )),
            pack,
            on: Box::leak(on.into_boxed_slice()),
            tools: Box::leak(tools.into_boxed_slice()),
            need: Need::Any,
            doc: leak(doc.to_string()),
            reading: Reading::CHECKED,
            compiled: OnceLock::new(),
        });
    }
    Ok(out)
}

/// Compiles one pack's TOML: every rule or the first error, naming the
/// pack and the rule. Every pattern is parsed, so a bad one is refused.
pub fn compile_pack(pack: &str, text: &str) -> Result<Vec<Rule>, String> {
    compile_pack_with(pack, text, Reading::CHECKED)
}

/// [`compile_pack`], reading the patterns as `how` says.
pub fn compile_pack_with(pack: &str, text: &str, how: Reading) -> Result<Vec<Rule>, String> {
    let list = crate::rules::pack_toml::pack_rules(pack, text)?;
    let mut out: Vec<Rule> = Vec::new();
    for v in &list {
        let r =
            rules::compile_with(v, Some(pack), how).map_err(|e| format!("pack `{pack}`: {e}"))?;
        if out.iter().any(|o| o.id == r.id) {
            return Err(format!("pack `{pack}`: rule `{}` is defined twice", r.id));
        }
        out.push(r);
    }
    Ok(out)
}
