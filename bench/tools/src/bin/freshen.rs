//! `freshen TEMPLATE OUT`: writes TEMPLATE to OUT with every
//! `__TOOL_USE_ID__` replaced by an id never used before.
//!
//! keryx-hooks de-duplicates deliveries by session and tool-call id and
//! replays the first answer for a repeat, so every timed run needs a new id
//! (as every real tool call has). Run by hyperfine as `--prepare`, untimed.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [template, out] = args.as_slice() else {
        eprintln!("usage: freshen TEMPLATE OUT");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(template) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("freshen: {template}: {e}");
            return ExitCode::from(2);
        }
    };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let id = format!("toolu_bench_{nanos}_{}", std::process::id());
    let tmp = format!("{out}.tmp");
    if let Err(e) = std::fs::write(&tmp, text.replace("__TOOL_USE_ID__", &id))
        .and_then(|()| std::fs::rename(&tmp, out))
    {
        eprintln!("freshen: {out}: {e}");
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
