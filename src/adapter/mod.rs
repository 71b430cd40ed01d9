//! The hosts as data: the typed form of every `adapters/<host>/adapter.json`
//! (build.rs reads each file into these types and writes it back out as a
//! `static`), and looking a host up by name or short name. Below the
//! configuration and everything else that asks about a host; the engine that
//! decodes and encodes payloads with this data is `hosts`.

/// Also build.rs's: compiled here only for its tests.
#[cfg(test)]
pub(crate) mod generate;
mod spec;

pub use spec::*;

/// The canonical event, as spec.rs names it (it is build.rs's too, where
/// the parent module provides it).
use crate::events::Event;

/// Each adapter file's own text, which the tests hold the data to.
#[cfg(test)]
mod sources {
    include!(concat!(env!("OUT_DIR"), "/adapters.rs"));
}
#[cfg(test)]
pub(crate) use sources::ADAPTER_SOURCES;

/// The adapters build.rs generated, one `static` per host, and the table
/// of them sorted by name.
mod data {
    use super::Event;
    use super::spec::*;

    include!(concat!(env!("OUT_DIR"), "/adapter_data.rs"));
}

/// The adapter for `host` (`claude-code`, `gemini-cli`, …); `None` for a
/// host with no folder.
pub fn adapter(host: &str) -> Option<&'static Adapter> {
    let table = data::ADAPTERS;
    table
        .binary_search_by(|(name, _)| (*name).cmp(host))
        .ok()
        .map(|i| table[i].1)
}

/// Every host with an adapter, sorted by name.
pub fn host_names() -> &'static [&'static str] {
    data::HOST_NAMES
}

/// Every adapter, sorted by host name.
pub fn all() -> impl Iterator<Item = &'static Adapter> {
    data::ADAPTERS.iter().map(|(_, a)| *a)
}

/// The host that speaks the keryx native protocol (`keryx`, the keryx
/// shell): the caller gets the whole composed result back. The built-in
/// hooks run as its hooks when run by hand.
pub fn native() -> &'static Adapter {
    all()
        .find(|a| a.is_native())
        .expect("one adapter speaks the native protocol (a unit test holds it)")
}

/// The host a person means by `name`: its name or one of its aliases
/// (`claude` → claude-code). For the human commands; `run` takes only the
/// name ([`adapter`]), which is what host configs say.
pub fn lookup(name: &str) -> Option<&'static Adapter> {
    adapter(name).or_else(|| all().find(|a| a.aliases().contains(&name)))
}

/// The host among `among` that `name` most likely misspells, for a "did
/// you mean": the one whose name or alias `name` is the start of (or
/// starts with), when only one is; else the one nearest by edit distance,
/// within a third of the word (at least 1); case is ignored. `None` when
/// nothing is that close.
pub fn closest(name: &str, among: &[&'static Adapter]) -> Option<&'static Adapter> {
    let typed = name.to_ascii_lowercase();
    let words = || {
        among.iter().flat_map(|a| {
            std::iter::once(a.name())
                .chain(a.aliases().iter().copied())
                .map(move |w| (*a, w))
        })
    };
    if typed.len() >= 2 {
        let mut prefixed = words()
            .filter(|(_, w)| w.starts_with(&typed) || typed.starts_with(w))
            .map(|(a, _)| a);
        if let Some(first) = prefixed.next()
            && prefixed.all(|a| std::ptr::eq(a, first))
        {
            return Some(first);
        }
    }
    words()
        .map(|(a, w)| (crate::base::text::edit_distance(&typed, w), a))
        .filter(|(d, _)| *d <= (typed.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

/// The one table of project paths from which a supported host loads code
/// or starts commands (each adapter's `projectCode`): the host's display
/// name and the path, relative to the project root, a trailing `/` marking
/// a directory. The sandbox keeps them read-only and the write gate refuses
/// the agent's writes to them.
pub fn project_code() -> impl Iterator<Item = (&'static str, &'static str)> {
    all().flat_map(|a| a.project_code().iter().map(move |p| (a.display_name(), *p)))
}
