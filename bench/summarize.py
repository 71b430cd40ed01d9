#!/usr/bin/env python3
"""Merges the hyperfine exports of bench/run.sh into one table.

    summarize.py --raw DIR --cases cases.tsv --answers answers.tsv --out DIR [--meta k=v ...]

DIR holds <case>.<round>.json (hyperfine --export-json) and <case>.rss
(one peak-RSS figure in KiB per line, from GNU time's %M). Writes
results.json and results.md into --out and prints the markdown.

Medians are over every timed run of a case, all rounds together. Each case
gets two ratios: over (a), the floor built the default way (dynamic,
position-independent), and over (a-static), the same floor built exactly
as the shipped keryx-hooks is (install/release-env.sh: static, non-PIE on
Linux/glibc). Every target is stated over the static floors (a-static,
a-spawn-static), measured in the same run. Cases run behind the stdin
feeder (bench/tools feed) also get a "net" ratio over (a-static) with the
feeder's own cost taken off both sides: feed cost = median(b-feed) -
median(b).
"""

import argparse
import glob
import json
import os
import statistics
import sys

MIB = 1024  # KiB per MiB


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def load_case(raw, case_id):
    times, exit_codes = [], []
    for path in sorted(glob.glob(os.path.join(raw, f"{glob.escape(case_id)}.*.json"))):
        with open(path, encoding="utf-8") as f:
            res = json.load(f)["results"][0]
        times.extend(t * 1000.0 for t in res["times"])
        exit_codes.extend(res.get("exit_codes") or [])
    rss = []
    rss_path = os.path.join(raw, f"{case_id}.rss")
    if os.path.exists(rss_path):
        with open(rss_path, encoding="utf-8") as f:
            rss = [int(line) for line in f if line.strip().isdigit()]
    return times, exit_codes, rss


def fmt_ms(x):
    return "–" if x is None else (f"{x:.2f}" if x < 100 else f"{x:.1f}")


def fmt_ratio(x):
    return "–" if x is None else f"{x:.2f}×"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--answers")
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", action="append", default=[])
    args = ap.parse_args()

    meta = dict(m.split("=", 1) for m in args.meta)
    answers = {}
    if args.answers and os.path.exists(args.answers):
        with open(args.answers, encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t", 2)
                if len(parts) == 3:
                    answers[parts[0]] = {"exit": int(parts[1]), "stdout": parts[2]}

    cases = []
    with open(args.cases, encoding="utf-8") as f:
        for line in f:
            cid, label, feed = line.rstrip("\n").split("\t")
            times, codes, rss = load_case(args.raw, cid)
            if not times:
                continue
            cases.append(
                {
                    "id": cid,
                    "label": label,
                    "fed": feed == "1",
                    "runs": len(times),
                    "median_ms": statistics.median(times),
                    "mean_ms": statistics.fmean(times),
                    "stdev_ms": statistics.stdev(times) if len(times) > 1 else 0.0,
                    "min_ms": min(times),
                    "p25_ms": quantile(times, 0.25),
                    "p75_ms": quantile(times, 0.75),
                    "max_ms": max(times),
                    "exit_codes": sorted(set(codes)),
                    "rss_runs": len(rss),
                    "rss_peak_kib": max(rss) if rss else None,
                    "rss_median_kib": statistics.median(rss) if rss else None,
                    "answer": answers.get(cid),
                }
            )
    # A second binary's case (id@B) is listed right after its first-binary twin.
    order = {c["id"]: i for i, c in enumerate(cases)}
    cases.sort(key=lambda c: (order.get(c["id"].removesuffix("@B"), order[c["id"]]), c["id"].endswith("@B")))
    by = {c["id"]: c for c in cases}

    def med(cid):
        return by[cid]["median_ms"] if cid in by else None

    floor = med("a")
    floor_static = med("a-static")
    feed_cost = None
    if med("b-feed") is not None and med("b") is not None:
        feed_cost = max(0.0, med("b-feed") - med("b"))
    for c in cases:
        c["ratio"] = c["median_ms"] / floor if floor else None
        c["ratio_static"] = c["median_ms"] / floor_static if floor_static else None
        if floor_static and feed_cost is not None:
            own = c["median_ms"] - (feed_cost if c["fed"] else 0.0)
            c["net_median_ms"] = own
            c["net_ratio"] = own / (floor_static - feed_cost)
        else:
            c["net_median_ms"] = None
            c["net_ratio"] = None

    targets = []

    def target(name, measured, limit, unit, ok_when="le", note=""):
        if measured is None or limit is None:
            targets.append({"target": name, "measured": None, "limit": limit, "unit": unit, "met": None, "note": note or "not measured"})
            return
        met = measured <= limit if ok_when == "le" else measured >= limit
        targets.append({"target": name, "measured": measured, "limit": limit, "unit": unit, "met": met, "note": note})

    def field(cid, key):
        return by[cid][key] if cid in by else None

    def over(cid, base):
        return med(cid) / med(base) if med(cid) is not None and med(base) else None

    suffixes = [""] + (["@B"] if any(c["id"].endswith("@B") for c in cases) else [])
    for sfx in suffixes:
        tag = f" [{sfx[1:]}]" if sfx else ""
        cr, cb, du, eo = (f"c-read{sfx}", f"c-bash{sfx}", f"d-unsandboxed{sfx}", f"e-observe20{sfx}")
        target(f"(c) Read, built-ins only ≤ 1.3× a-static{tag}", over(cr, "a-static"), 1.3, "×",
               note=f"over the dynamic floor (a): {fmt_ratio(over(cr, 'a'))}; net of the stdin feeder: {fmt_ratio(field(cr, 'net_ratio'))}")
        target(f"(c) Bash answered in-process by ctx-guard ≤ 1.5× a-static{tag}", over(cb, "a-static"), 1.5, "×",
               note=f"over the dynamic floor (a): {fmt_ratio(over(cb, 'a'))}; net of the stdin feeder: {fmt_ratio(field(cb, 'net_ratio'))}")
        cd = f"c-deny{sfx}"
        target(f"(r) a call denied by a rule alone (no hook, no process) ≤ 1.2× a-static{tag}", over(cd, "a-static"), 1.2, "×",
               note=f"Bash `git push --force origin main`, every default pack on; no-match calls: Read {fmt_ratio(over(cr, 'a-static'))}, "
                    f"Bash {fmt_ratio(over(cb, 'a-static'))} (packs off: {fmt_ratio(over(f'c-read-nopacks{sfx}', 'a-static'))}, "
                    f"{fmt_ratio(over(f'c-bash-nopacks{sfx}', 'a-static'))})")
        spawn_note = ""
        if over(du, "a-spawn-static") is not None:
            spawn_note = (f"{med(du) - med('a-spawn-static'):.2f} ms of the runtime's own work per gated call; "
                          f"over the dynamic a-spawn: {fmt_ratio(over(du, 'a-spawn'))}")
        target(f"(d) one matching /bin/true gate ≤ 1.15× a-spawn-static{tag}", over(du, "a-spawn-static"), 1.15, "×",
               note=spawn_note)
        target(f"(d) unsandboxed gate ≥ 10× faster than the Python dispatcher{tag}", over("g-python", du),
               10.0, "×", ok_when="ge")
        target(f"(e) 20 observe hooks of 100 ms ≤ 130 ms wall{tag}", med(eo), 130.0, "ms")
        run_cases = [c for c in cases if c["id"].startswith(("c-", "d-", "e-")) and c["id"].endswith(sfx)
                     and (sfx or "@" not in c["id"]) and c["rss_peak_kib"]]
        if run_cases:
            worst = max(run_cases, key=lambda c: c["rss_peak_kib"])
            target(f"peak RSS of `run` ≤ 8 MiB{tag}", worst["rss_peak_kib"] / MIB, 8.0, "MiB",
                   note=f"worst case: {worst['id']}; process tree max, see the table")
        # The sandboxed gate over the bare-sandbox floor (bench/sandbox-floor.sh).
        ds = f"d-sandboxed{sfx}"
        if med(ds) is not None and med("s-bwrap") is not None:
            sandbox_note = (f"{med(ds) - med('s-bwrap'):.2f} ms over the bare bwrap; "
                            f"over s-bwrap-spawn (the same bwrap started as a gate is): {fmt_ratio(over(ds, 's-bwrap-spawn'))}")
            target(f"(s) one sandboxed /bin/true gate ≤ 1.5× s-bwrap{tag}", over(ds, "s-bwrap"), 1.5, "×",
                   note=sandbox_note)
    if med("f-warm") is not None and med("f-none") is not None:
        target("(f) SessionStart drift check, warm ≤ 5 ms (f-warm − f-none)", med("f-warm") - med("f-none"), 5.0, "ms",
               note=f"whole SessionStart event with the check: {fmt_ms(med('f-warm'))} ms; cold: {fmt_ms(med('f-cold'))} ms")
    else:
        targets.append({"target": "(f) SessionStart drift check, warm ≤ 5 ms", "measured": None, "limit": 5.0, "unit": "ms",
                        "met": None, "note": "not measured: this keryx-hooks has no installer (snapshots, source hash)"})

    result = {"meta": meta, "feed_cost_ms": feed_cost, "floor_ms": floor, "floor_static_ms": floor_static,
              "cases": cases, "targets": targets}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2, ensure_ascii=False)
        f.write("\n")

    lines = []
    lines.append(f"Machine: {meta.get('cpu', '?')}, {meta.get('cores', '?')} cores, {meta.get('os', '?')}, {meta.get('kernel', '?')}")
    lines.append(f"keryx-hooks {meta.get('keryx_build', '?')}; rustc {meta.get('rustc', '?')}, hyperfine {meta.get('hyperfine', '?')}, "
                 f"python {meta.get('python', '?')}; {meta.get('date', '')}")
    lines.append(f"{meta.get('rounds', '?')} rounds × {meta.get('runs_per_round', '?')} runs (+{meta.get('warmup', '?')} warmups per round), "
                 f"case order shuffled per round; RSS over {meta.get('rss_runs', '?')} runs.")
    lines.append(f"Load average (1/5/15 min) at the start of timing: {meta.get('loadavg_start', '?')}; at the end: {meta.get('loadavg_end', '?')}.")
    if feed_cost is not None:
        lines.append(f"Stdin feeder cost (median b-feed − median b): {feed_cost:.2f} ms; the net columns take it off fed cases and the floor.")
    lines.append("")
    lines.append(f"Floors: (a) is built the default way (dynamic, position-independent); (a-static) and (a-spawn-static) "
                 f"exactly as the shipped keryx-hooks ({meta.get('shipped_flags', '?')}). Targets are over the static floors.")
    lines.append("")
    lines.append("| case | what | median ms | p25–p75 ms | runs | × a (dynamic) | × a-static | net ms | net × a-static | peak RSS MiB |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in cases:
        rss = "–" if c["rss_peak_kib"] is None else f"{c['rss_peak_kib'] / MIB:.1f}"
        lines.append(
            f"| {c['id']} | {c['label']} | {fmt_ms(c['median_ms'])} | {fmt_ms(c['p25_ms'])}–{fmt_ms(c['p75_ms'])} | {c['runs']} | "
            f"{fmt_ratio(c['ratio'])} | {fmt_ratio(c.get('ratio_static'))} | {fmt_ms(c['net_median_ms'])} | "
            f"{fmt_ratio(c['net_ratio'])} | {rss} |"
        )
    lines.append("")
    lines.append("| target | measured | limit | met |")
    lines.append("|---|---:|---:|---|")
    for t in targets:
        unit = t["unit"]
        m = "–" if t["measured"] is None else f"{t['measured']:.2f} {unit}"
        lim = "–" if t["limit"] is None else f"{t['limit']:.2f} {unit}"
        met = {True: "met", False: "**missed**", None: "n/a"}[t["met"]]
        note = f" ({t['note']})" if t["note"] else ""
        lines.append(f"| {t['target']} | {m} | {lim} | {met}{note} |")
    lines.append("")
    lines.append("What each case answered on its first run:")
    lines.append("")
    for c in cases:
        a = c["answer"]
        if a:
            out = a["stdout"] if a["stdout"] else "(nothing)"
            lines.append(f"- `{c['id']}`: exit {a['exit']}, stdout `{out[:200]}`")
    md = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "results.md"), "w", encoding="utf-8") as f:
        f.write(md)
    sys.stdout.write(md)


if __name__ == "__main__":
    main()
