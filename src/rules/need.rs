//! What a call must show before a shipped pack's rule is worth compiling:
//! worked out from the rule when the binary is built (build.rs), so a call
//! passes over most rules on a few string comparisons. A need is only ever
//! a consequence of the rule's condition (a rule that matches a call has
//! its need met by it), so passing over a rule whose need is not met
//! changes no answer; `Any` is the need of what cannot be told early.

use crate::config::rules::{Lit, holds};
use crate::rules::call::Call;
use crate::rules::eval::program_is;

#[derive(Debug, Clone, Copy)]
pub enum Need {
    /// Nothing to tell early: the rule is looked at.
    Any,
    /// A simple command of the call runs one of these programs (as a
    /// `command.program` condition compares them).
    Program(&'static [&'static str]),
    /// A text of the call (what a `text` condition reads) holds one of
    /// these.
    Text(&'static [Lit]),
    /// The prompt holds one of these.
    Prompt(&'static [Lit]),
    /// The inline code of a simple command holds one of these.
    Inline(&'static [Lit]),
    /// Every one of these.
    All(&'static [Need]),
    /// At least one of these.
    OneOf(&'static [Need]),
}

fn holds_one(text: &str, lits: &[Lit]) -> bool {
    lits.iter().any(|(l, fold)| holds(text, l, *fold))
}

impl Need {
    /// Whether `call` meets it: `false` means the rule cannot match.
    pub fn met(&self, call: &Call) -> bool {
        match self {
            Need::Any => true,
            Need::Program(names) => call.commands().iter().any(|s| {
                !s.argv.is_empty() && {
                    let name = s.program().unwrap_or("");
                    names.iter().any(|w| program_is(name, w))
                }
            }),
            Need::Text(lits) => call.texts().iter().any(|t| holds_one(t, lits)),
            Need::Prompt(lits) => call.prompt.is_some_and(|p| holds_one(p, lits)),
            Need::Inline(lits) => call
                .commands()
                .iter()
                .flat_map(|s| &s.inline)
                .any(|code| holds_one(code, lits)),
            Need::All(all) => all.iter().all(|n| n.met(call)),
            Need::OneOf(any) => any.iter().any(|n| n.met(call)),
        }
    }
}
