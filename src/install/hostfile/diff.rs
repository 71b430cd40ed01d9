//! A small line diff for `--dry-run`: the user sees exactly which lines of
//! their config an install or uninstall would change.

use crate::escape::escape_flagged;

const CONTEXT: usize = 3;
/// Past this many line pairs the diff shows the whole file replaced rather
/// than spend quadratic time (host configs are far smaller).
const MAX_CELLS: usize = 4_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same(usize, usize),
    Del(usize),
    Add(usize),
}

fn ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    if n.saturating_mul(m) > MAX_CELLS {
        let mut out: Vec<Op> = (0..n).map(Op::Del).collect();
        out.extend((0..m).map(Op::Add));
        return out;
    }
    // lcs[i][j]: longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            out.push(Op::Same(i, j));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            // Deletions first, as diff(1) shows them.
            out.push(Op::Del(i));
            i += 1;
        } else {
            out.push(Op::Add(j));
            j += 1;
        }
    }
    out
}

/// A unified diff of `old` → `new` (`None` = the file does not exist), with
/// control characters escaped for the terminal. Empty when they are equal.
pub fn unified(path: &str, old: Option<&str>, new: Option<&str>) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old
        .map(|t| t.split_inclusive('\n').collect())
        .unwrap_or_default();
    let b: Vec<&str> = new
        .map(|t| t.split_inclusive('\n').collect())
        .unwrap_or_default();
    let ops = ops(&a, &b);
    let show = |line: &str| {
        let line = line.trim_end_matches('\n').trim_end_matches('\r');
        let (escaped, flagged) = escape_flagged(line);
        if flagged { escaped } else { line.to_owned() }
    };
    let mut out = format!(
        "--- {}\n+++ {}\n",
        if old.is_some() { path } else { "/dev/null" },
        if new.is_some() { path } else { "/dev/null" }
    );
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !matches!(o, Op::Same(..)))
        .map(|(k, _)| k)
        .collect();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(CONTEXT);
        let mut end = changed[k];
        while k < changed.len() && changed[k] <= end + 2 * CONTEXT {
            end = changed[k];
            k += 1;
        }
        let end = (end + CONTEXT + 1).min(ops.len());
        let hunk = &ops[start..end];
        let first_a = hunk.iter().find_map(|o| match o {
            Op::Same(i, _) | Op::Del(i) => Some(*i),
            Op::Add(_) => None,
        });
        let first_b = hunk.iter().find_map(|o| match o {
            Op::Same(_, j) | Op::Add(j) => Some(*j),
            Op::Del(_) => None,
        });
        let len_a = hunk.iter().filter(|o| !matches!(o, Op::Add(_))).count();
        let len_b = hunk.iter().filter(|o| !matches!(o, Op::Del(_))).count();
        out.push_str(&format!(
            "@@ -{},{len_a} +{},{len_b} @@\n",
            first_a.map_or(0, |i| i + 1),
            first_b.map_or(0, |j| j + 1)
        ));
        for o in hunk {
            match *o {
                Op::Same(i, _) => out.push_str(&format!(" {}\n", show(a[i]))),
                Op::Del(i) => out.push_str(&format!("-{}\n", show(a[i]))),
                Op::Add(j) => out.push_str(&format!("+{}\n", show(b[j]))),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let new = "a\nb\nc\nd\ne\nX\nf\ng\nh\ni\nj\n";
        assert_eq!(
            unified("f.json", Some(old), Some(new)),
            "--- f.json\n+++ f.json\n@@ -3,6 +3,7 @@\n c\n d\n e\n+X\n f\n g\n h\n"
        );
        assert_eq!(unified("f", Some("x\n"), Some("x\n")), "");
        assert_eq!(
            unified("f", None, Some("{}\n")),
            "--- /dev/null\n+++ f\n@@ -0,0 +1,1 @@\n+{}\n"
        );
        assert!(unified("f", Some("\u{1b}[2J\n"), None).contains("-\\x1B[2J"));
        assert_eq!(
            unified("f", Some("a\nb\n"), Some("a\nc\n")),
            "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
        );
    }
}
