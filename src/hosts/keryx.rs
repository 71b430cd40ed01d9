//! The keryx native protocol (ARCHITECTURE §4): keryx shell gets the whole
//! composed result back as one JSON object, exit 0, and decides for itself.
//! This is the one host whose answer is not a template.

use super::encode::Encoded;
use crate::runtime::types::FireResult;

pub(super) fn encode(result: &FireResult) -> Encoded {
    // FireResult is plain data (strings, enums, vectors); serialising it cannot
    // fail, but a broken shim must still answer rather than panic.
    let mut stdout = serde_json::to_string(result).unwrap_or_else(|e| {
        serde_json::json!({
            "outcome": "deny",
            "reason": format!("keryx-hooks could not encode its result: {e}"),
            "matchedRules": ["keryx-hooks-unavailable"],
            "anomalies": [],
            "records": [],
            "notices": [],
        })
        .to_string()
    });
    stdout.push('\n');
    Encoded {
        stdout,
        stderr: String::new(),
        exit_code: 0,
    }
}
