//! The built-ins' in-process costs, for bench/builtins.sh: the secret
//! scanner on a large write, ctx-guard per command of a corpus, and the
//! impact-evidence provider cold (no saved index) and warm. Calls the
//! keryx-hooks library directly, so no process start or payload parse is
//! counted. Prints one line per measurement:
//!
//!     name  median_ms  p90_ms  min_ms  cpu_ms  runs  note
//!
//! `cpu_ms` is the process's CPU time (user + system, every thread) per
//! run, from /proc/self/stat: unlike wall time it hardly moves when other
//! work shares the machine. Wall time on an idle machine lies between
//! `cpu_ms` divided by the cores used and `cpu_ms`.
//!
//! Usage:
//!     builtins scanner FILE [RUNS]
//!     builtins ctx-guard CORPUS [RUNS]
//!     builtins impact REPO CACHE_DIR FILE... [RUNS]

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use keryx_hooks::builtins::ctx_guard::{self, CtxGuardConfig};
use keryx_hooks::builtins::impact::index::{self, Source};
use keryx_hooks::builtins::impact::{ImpactLimits, RepoImpactProvider};
use keryx_hooks::builtins::ports::Verdict;
use keryx_hooks::secrets::Rules;
use keryx_hooks::builtins::security;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("scanner") if args.len() >= 2 => scanner(Path::new(&args[1]), runs(&args, 2, 50)),
        Some("ctx-guard") if args.len() >= 2 => ctx(Path::new(&args[1]), runs(&args, 2, 30)),
        Some("impact") if args.len() >= 4 => {
            let (files, n) = match args.last().and_then(|a| a.parse::<usize>().ok()) {
                Some(n) => (&args[3..args.len() - 1], n),
                None => (&args[3..], 20),
            };
            impact(Path::new(&args[1]), Path::new(&args[2]), files, n)
        }
        // For a profiler: RUNS consults of one kind and nothing else.
        Some("impact-loop") if args.len() == 6 => {
            impact_loop(Path::new(&args[1]), Path::new(&args[2]), &args[3], &args[4], runs(&args, 5, 10))
        }
        _ => Err("usage: builtins scanner FILE [RUNS] | ctx-guard CORPUS [RUNS] | impact REPO CACHE_DIR FILE... [RUNS] | impact-loop REPO CACHE_DIR FILE cold|warm RUNS".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("builtins: {e}");
            ExitCode::FAILURE
        }
    }
}

fn runs(args: &[String], at: usize, default: usize) -> usize {
    args.get(at).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// Median, 90th percentile and minimum, in milliseconds.
fn stats(mut ms: Vec<f64>) -> (f64, f64, f64) {
    ms.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9), ms[0])
}

fn report(name: &str, ms: Vec<f64>, cpu: Option<f64>, note: &str) {
    let n = ms.len();
    let (median, p90, min) = stats(ms);
    let cpu = cpu.map_or_else(|| "n/a".to_owned(), |c| format!("{c:.1}"));
    println!("{name:<28} {median:>10.3} {p90:>10.3} {min:>10.3} {cpu:>8} {n:>6}  {note}");
}

/// CPU time of this process so far (user + system, all threads), in ms.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the `(comm)`, which may hold spaces: state is field 3,
    // utime 14 and stime 15 (clock ticks of 1/100 s).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks * 10.0)
}

/// Wall time of each run, CPU time per run, and what each run returned.
type Measured<T> = (Vec<f64>, Option<f64>, Vec<T>);

/// Runs `f` `n` times.
fn measure<T>(
    n: usize,
    mut f: impl FnMut(usize) -> Result<(f64, T), String>,
) -> Result<Measured<T>, String> {
    let cpu0 = cpu_ms();
    let mut ms = Vec::with_capacity(n);
    let mut outs = Vec::with_capacity(n);
    for i in 0..n {
        let (t, out) = f(i)?;
        ms.push(t);
        outs.push(out);
    }
    let cpu = cpu0.zip(cpu_ms()).map(|(a, b)| (b - a) / n.max(1) as f64);
    Ok((ms, cpu, outs))
}

fn time<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let start = Instant::now();
    let out = f();
    (start.elapsed().as_secs_f64() * 1e3, out)
}

fn scanner(file: &Path, n: usize) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let rules = Rules::builtin();
    let payload = serde_json::json!({
        "toolName": "Write",
        "toolInput": {"file_path": "src/big.rs", "content": text},
    });
    for _ in 0..2 {
        let _ = security::check_output(&payload, &rules); // warm-up
    }
    let (ms, cpu, verdicts) =
        measure(n, |_| Ok(time(|| security::check_output(&payload, &rules))))?;
    let note = match verdicts.last() {
        Some(Verdict::Deny(r)) => format!("{} bytes, denied: {r}", text.len()),
        _ => format!("{} bytes, allowed", text.len()),
    };
    report("scanner check-output", ms, cpu, &note);
    Ok(())
}

fn ctx(corpus: &Path, n: usize) -> Result<(), String> {
    let text = std::fs::read_to_string(corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
    let commands: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    let cfg = CtxGuardConfig::for_home(Path::new("/home/dev"));
    let cwd = Path::new("/home/dev/proj");
    let mut denied = 0;
    for c in &commands {
        if matches!(
            ctx_guard::check_command(c, Some(cwd), &cfg),
            Verdict::Deny(_)
        ) {
            denied += 1;
        }
    }
    // Per command: its median over the runs.
    let (_, cpu, rounds) = measure(n, |_| {
        let times: Vec<f64> = commands
            .iter()
            .map(|c| time(|| ctx_guard::check_command(c, Some(cwd), &cfg)).0)
            .collect();
        Ok((0.0, times))
    })?;
    let medians: Vec<f64> = (0..commands.len())
        .map(|i| stats(rounds.iter().map(|r| r[i]).collect()).0)
        .collect();
    let slowest = medians.iter().copied().fold(0.0, f64::max);
    report(
        "ctx-guard per command",
        medians,
        cpu.map(|c| c / commands.len() as f64),
        &format!(
            "{} commands, {denied} denied; slowest command's median {slowest:.3} ms",
            commands.len()
        ),
    );
    Ok(())
}

fn impact(repo: &Path, cache: &Path, files: &[String], n: usize) -> Result<(), String> {
    let provider = RepoImpactProvider::new(ImpactLimits::default(), Some(cache.to_path_buf()));
    let root = std::fs::canonicalize(repo).map_err(|e| format!("{}: {e}", repo.display()))?;
    let index_file = index::index_file(cache, &root);
    let consult = |file: &str| -> Result<(f64, keryx_hooks::builtins::impact::Report), String> {
        let (t, r) = time(|| provider.report(&root, Path::new(file)));
        Ok((t, r.map_err(|e| e.to_string())?))
    };
    let expect = |r: &keryx_hooks::builtins::impact::Report, want: Source| {
        if r.index == want {
            Ok(())
        } else {
            Err(format!("expected a {want:?} index, got {:?}", r.index))
        }
    };
    for file in files {
        let _ = std::fs::remove_file(&index_file);
        consult(file)?; // warm-up: the page cache holds the tree from here on
        let (cold, cold_cpu, reports) = measure(n, |_| {
            let _ = std::fs::remove_file(&index_file);
            let (t, r) = consult(file)?;
            expect(&r, Source::Built)?;
            Ok((t, r.importers))
        })?;
        let importers = reports.last().copied().unwrap_or(0);
        let (warm, warm_cpu, _) = measure(n, |_| {
            let (t, r) = consult(file)?;
            expect(&r, Source::Loaded)?;
            Ok((t, ()))
        })?;
        // The edited file rewritten before each consult: re-read, re-saved.
        let touched = root.join(file);
        let text = std::fs::read(&touched).map_err(|e| e.to_string())?;
        let (edited, edit_cpu, _) = measure(n, |i| {
            let mut changed = text.clone();
            changed.extend_from_slice(format!("\n// edit {i}\n").as_bytes());
            std::fs::write(&touched, &changed).map_err(|e| e.to_string())?;
            let (t, r) = consult(file)?;
            expect(&r, Source::Refreshed)?;
            Ok((t, ()))
        })?;
        std::fs::write(&touched, &text).map_err(|e| e.to_string())?;
        let size = std::fs::metadata(&index_file).map_or(0, |m| m.len());
        report(
            &format!("impact cold  {}", short(file)),
            cold,
            cold_cpu,
            &format!("no saved index; {importers} importers"),
        );
        report(
            &format!("impact warm  {}", short(file)),
            warm,
            warm_cpu,
            &format!("saved index ({} KiB) unchanged", size / 1024),
        );
        report(
            &format!("impact edit  {}", short(file)),
            edited,
            edit_cpu,
            "the edited file rewritten before each consult",
        );
    }
    Ok(())
}

fn impact_loop(repo: &Path, cache: &Path, file: &str, mode: &str, n: usize) -> Result<(), String> {
    let provider = RepoImpactProvider::new(ImpactLimits::default(), Some(cache.to_path_buf()));
    let root = std::fs::canonicalize(repo).map_err(|e| format!("{}: {e}", repo.display()))?;
    let index_file = index::index_file(cache, &root);
    let cold = match mode {
        "cold" => true,
        "warm" => false,
        other => return Err(format!("mode `{other}`: cold or warm")),
    };
    if !cold {
        provider
            .report(&root, Path::new(file))
            .map_err(|e| e.to_string())?;
    }
    for _ in 0..n {
        if cold {
            let _ = std::fs::remove_file(&index_file);
        }
        provider
            .report(&root, Path::new(file))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}
