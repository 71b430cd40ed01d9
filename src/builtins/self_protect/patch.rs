//! The files a patch in the `apply_patch` envelope touches, read at least
//! as leniently as Codex applies one: markers trimmed of padding and
//! indentation, any line ending, the envelope wrapped in a here-document
//! (`<<'EOF'` … `EOF`) or inside a shell script. Read more loosely still
//! (case and inner spacing of a marker ignored, a header anywhere in the
//! text), since a file header missed is a write let through.

/// `*** Begin Patch` with case and spacing ignored.
const BEGIN: &str = "***beginpatch";

/// The headers that name a file the patch writes, with case and spacing
/// ignored: a new file, a changed one, a removed one, a rename's
/// destination.
const FILE_HEADERS: [&str; 4] = ["addfile", "updatefile", "deletefile", "moveto"];

/// Programs that apply a patch given as their argument or read from their
/// input: Codex puts `apply_patch` (and `applypatch`) on the shell's path.
pub(super) const PROGRAMS: [&str; 2] = ["apply_patch", "applypatch"];

/// Codex's own binary applies the patch in its argument given this flag.
pub(super) const CODEX_FLAG: &str = "--codex-run-as-apply-patch";

/// The lines of `text` however they end: `\n`, `\r\n` or a lone `\r`.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split(['\n', '\r'])
}

fn squeezed(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `text` holds a patch envelope on any line of it.
pub(super) fn is_patch(text: &str) -> bool {
    lines(text).any(|l| squeezed(l) == BEGIN)
}

/// Every file a header line of `text` names, in order. Lines that are not
/// headers (context, added and removed lines, here-document markers, shell
/// around the envelope) are skipped; an added line (`+*** Add File: x`) is
/// content, not a header.
pub(super) fn files(text: &str) -> Vec<String> {
    lines(text)
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("***")?;
            let (head, path) = rest.split_once(':')?;
            let path = path.trim();
            (FILE_HEADERS.contains(&squeezed(head).as_str()) && !path.is_empty())
                .then(|| path.to_owned())
        })
        .collect()
}

/// The text of the lines a patch adds (`+…`), which is what it writes.
pub(super) fn added(text: &str) -> String {
    lines(text)
        .filter_map(|l| l.trim_start().strip_prefix('+'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Directories a shell script around a patch moves into first
/// (`cd sub && apply_patch <<'EOF'`): Codex applies the patch there.
pub(super) fn workdirs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for l in lines(text) {
        let mut words = l.split_whitespace().peekable();
        while let Some(w) = words.next() {
            if w.trim_start_matches(['(', '{', ';', '&', '|']) == "cd"
                && let Some(dir) = words.peek()
            {
                let dir = dir.trim_end_matches([';', '&', '|', ')']);
                let dir = dir.trim_matches(['\'', '"']);
                if !dir.is_empty() && !dir.starts_with('-') {
                    out.push(dir.to_owned());
                }
            }
        }
    }
    out
}

/// `text` with the `\n` and `\r` escapes a shell would turn into line ends
/// (`printf`, `echo -e`, `$'…'`) taken as line ends.
pub(super) fn with_escaped_lines(text: &str) -> String {
    text.replace("\\r\\n", "\n")
        .replace("\\n", "\n")
        .replace("\\r", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_read_in_every_spelling_codex_applies() {
        let patch = "<<'EOF'\r\n  *** Begin Patch  \r\n\t*** Update File: a.json \r\n*** Move to:  b.json\r\n@@\r\n-x\r\n+*** Add File: not-a-header\r\n***  add   FILE: c\r*** Delete File: d\r\n*** End Patch\r\nEOF\r\n";
        assert!(is_patch(patch));
        assert_eq!(files(patch), ["a.json", "b.json", "c", "d"]);
        assert!(!is_patch("echo '*** Begin Patch is a marker'"));
        assert_eq!(workdirs("cd sub && apply_patch <<'EOF'"), ["sub"]);
    }
}
