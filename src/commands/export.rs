//! `keryx-hooks export`: ships the hook records to the collector set in
//! `[export]` (see `crate::export`), once, or with `--follow` for as long
//! as it runs.

use std::time::Duration;

use crate::cli::ExportArgs;
use crate::error::{CmdResult, CommandError, ExitStatus};
use crate::escape::escape;
use crate::export::{self, Retry, Store, settings};
use crate::output;

pub fn run(args: &ExportArgs) -> CmdResult {
    let here = super::here();
    super::print_location_warnings(&here);
    let layers = settings::layers(&here);
    let s = settings::resolve(&layers)
        .map_err(|why| CommandError::config("the export settings cannot be used").cause(why))?
        .ok_or_else(|| {
            CommandError::config("no collector is set, so there is nowhere to export to").hint(format!(
                "add `[export]` with `endpoint = \"http://collector.example:4318\"` to `{}` (README: Records to a collector)",
                escape(&here.runtime_settings_file().display().to_string())
            ))
        })?;
    // Records leave the machine redacted with the same rules as the
    // learning sink; when they do not load, nothing leaves.
    let rules = here.settings().rules().map_err(|why| {
        CommandError::config(
            "the secret rules do not load, so records cannot be redacted; nothing was exported",
        )
        .cause(crate::settings::rules_unavailable(why))
    })?;
    let store = Store::at(&here.state_dir);
    let _lock = store.lock().map_err(CommandError::user)?;
    let sessions = here.sessions_dir();
    let mut report = |line: &str| output::err_line(&format!("warning: {line}"));
    if !args.follow {
        let retry = Retry {
            attempts: Some(args.retries),
            first: Duration::from_millis(500),
            max: Duration::from_secs(30),
        };
        return match export::ship(&s, &sessions, &store, args.batch, rules, retry, &mut report) {
            Ok(done) => {
                output::line(&summary(&done, &s.endpoint_text));
                Ok(ExitStatus::Success)
            }
            Err(stopped) => Err(
                CommandError::user(format!("export stopped: {}", stopped.why)).cause(format!(
                    "{}; the rest stays where it is and the next export sends it",
                    summary(&stopped.shipped, &s.endpoint_text)
                )),
            ),
        };
    }
    let retry = Retry {
        attempts: None,
        first: Duration::from_secs(1),
        max: Duration::from_secs(60),
    };
    output::line(&format!(
        "exporting records to {} as they are appended (stop with Ctrl-C)",
        escape(&s.endpoint_text)
    ));
    loop {
        match export::ship(&s, &sessions, &store, args.batch, rules, retry, &mut report) {
            Ok(done) if done.records > 0 => output::line(&summary(&done, &s.endpoint_text)),
            Ok(_) => {}
            // Only the cursor's own file can stop a follow (retries never
            // end); it is said and tried again.
            Err(stopped) => report(&stopped.why),
        }
        std::thread::sleep(Duration::from_secs(args.interval.max(1)));
    }
}

fn summary(done: &export::Shipped, endpoint: &str) -> String {
    let mut s = format!(
        "exported {} record(s) in {} batch(es) to {}",
        done.records,
        done.batches,
        escape(endpoint)
    );
    if done.rejected > 0 {
        s.push_str(&format!(
            "; the collector rejected {} of them (partial success)",
            done.rejected
        ));
    }
    s
}
