#!/usr/bin/env python3
"""Draws the ratios of results.json as an SVG bar chart (log scale), by hand.

    chart.py results.json out.svg
    chart.py --compare before.json=LABEL after.json=LABEL out.svg

With --compare, every case gets one bar per results file (the first file
decides which cases are shown and in what order). No dependencies and no
network: the SVG is written as text.
"""

import json
import math
import sys
from xml.sax.saxutils import escape

# Per-case ceilings stated as a ratio to the static floor (a-static).
RATIO_TARGETS = {"c-read": 1.3, "c-bash": 1.5}


def colour(cid):
    if cid.endswith("@B"):
        return "#9ec5ea"
    if cid in ("a", "a-spawn", "a-static", "a-spawn-static", "b", "b-feed", "x-version"):
        return "#8c8c8c"
    if cid.startswith("g-"):
        return "#d9822b"
    return "#2b6cb0"


def load(arg):
    path, _, label = arg.partition("=")
    with open(path, encoding="utf-8") as f:
        return json.load(f), label


def main():
    argv = sys.argv[1:]
    if argv and argv[0] == "--compare":
        sets = [load(a) for a in argv[1:-1]]
    else:
        sets = [load(argv[0])]
    dst = argv[-1]
    res = sets[0][0]
    # Over the static floor (as shipped) where the run has one: then one
    # results file draws two bars per case, over a-static and over (a).
    both = len(sets) == 1 and res.get("floor_static_ms")
    if both:
        static = {**res, "cases": [{**c, "ratio": c["ratio_static"]} for c in res["cases"]]}
        sets = [(static, "over a-static"), (res, "over (a), dynamic")]
    res = sets[0][0]
    cases = [c for c in res["cases"] if c.get("ratio")]
    meta = res.get("meta", {})
    per_set = [{c["id"]: c for c in r["cases"] if c.get("ratio")} for r, _ in sets]
    n = len(sets)
    shades = ["", "#9ec5ea", "#c9c9c9"]

    left, right, top, bar_h = 470, 150, 78, 16
    row_h = 12 + bar_h * n
    plot_w = 520
    width = left + plot_w + right
    height = top + row_h * len(cases) + 70 + (18 if n > 1 else 0)
    lo = 0.5
    hi = max(c["ratio"] for s in per_set for c in s.values()) * 1.15
    span = math.log10(hi) - math.log10(lo)

    def x(v):
        return left + (math.log10(max(v, lo)) - math.log10(lo)) / span * plot_w

    out = []
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">')
    out.append(f'<rect width="{width}" height="{height}" fill="#ffffff"/>')
    title = "keryx-hooks: median wall time per event, as a multiple of the floor (log scale)"
    out.append(f'<text x="{width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{escape(title)}</text>')
    def ms(v):  # a floor the run left out (BENCH_CASES) is not a number
        return "n/a" if v is None else f"{v:.2f}"

    if both:
        floors = (f"floors (Rust binary: read stdin, print {{}}): {ms(res['floor_static_ms'])} ms built as shipped "
                  f"(a-static), {ms(res['floor_ms'])} ms dynamic (a)")
    else:
        floors = f"floor = {ms(res['floor_ms'])} ms (Rust binary: read stdin, print {{}})"
    sub = (f"{floors}; "
           f"{meta.get('cpu', '?')}, {meta.get('cores', '?')} cores; hyperfine, {cases[0]['runs']} runs per case")
    out.append(f'<text x="{width / 2}" y="44" text-anchor="middle" fill="#555">{escape(sub)}</text>')
    b_label = next((c["label"].split("[B: ", 1)[1].rstrip("]") for c in cases
                    if c["id"].endswith("@B") and "[B: " in c["label"]), None)
    if b_label:
        out.append(f'<text x="{width / 2}" y="60" text-anchor="middle" fill="#555">{escape("binary B: " + b_label)}</text>')

    # Grid at 1-2-5 steps.
    ticks = []
    decade = 10 ** math.floor(math.log10(lo))
    while decade <= hi:
        for m in (1, 2, 5):
            v = m * decade
            if lo <= v <= hi:
                ticks.append(v)
        decade *= 10
    axis_y = top + row_h * len(cases) + 6
    for v in ticks:
        xx = x(v)
        out.append(f'<line x1="{xx:.1f}" y1="{top - 6}" x2="{xx:.1f}" y2="{axis_y}" stroke="#e2e2e2"/>')
        out.append(f'<text x="{xx:.1f}" y="{axis_y + 16}" text-anchor="middle" fill="#555">{v:g}×</text>')
    out.append(f'<line x1="{x(1):.1f}" y1="{top - 6}" x2="{x(1):.1f}" y2="{axis_y}" stroke="#333" stroke-dasharray="3,3"/>')

    for i, c in enumerate(cases):
        y0 = top + i * row_h
        label = f"{c['id']}: {c['label']}"
        if c["id"].endswith("@B") and "[B" in c["label"]:
            label = f"{c['id']}: the same, binary B"
        if len(label) > 68:
            label = label[:67] + "…"
        out.append(f'<text x="{left - 8}" y="{y0 + (row_h - 12) / 2 + 4}" text-anchor="end">{escape(label)}</text>')
        for k, cases_k in enumerate(per_set):
            ck = cases_k.get(c["id"])
            if not ck:
                continue
            y = y0 + k * bar_h
            x0, x1 = x(lo), x(ck["ratio"])
            fill = colour(c["id"]) if k == 0 else shades[min(k, len(shades) - 1)]
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(1.0, x1 - x0):.1f}" height="{bar_h - 2}" fill="{fill}"/>')
            ms = ck["median_ms"]
            text = f"{ck['ratio']:.2f}× ({ms:.1f} ms)" if ms < 100 else f"{ck['ratio']:.0f}× ({ms:.0f} ms)"
            if n > 1 and sets[k][1]:
                text += f" {sets[k][1]}"
            out.append(f'<text x="{x1 + 5:.1f}" y="{y + bar_h - 5}" fill="#222" font-size="11">{escape(text)}</text>')
        t = RATIO_TARGETS.get(c["id"].removesuffix("@B"))
        if t:
            xt = x(t)
            out.append(f'<line x1="{xt:.1f}" y1="{y0 - 3}" x2="{xt:.1f}" y2="{y0 + bar_h * n + 1}" stroke="#c53030" stroke-width="2.5"/>')

    ly = axis_y + 40
    legend = [("#8c8c8c", "baselines"), ("#2b6cb0", "keryx-hooks run"), ("#d9822b", "peers"), (None, "target ceiling")]
    if any(c["id"].endswith("@B") for c in cases):
        legend.insert(2, ("#9ec5ea", "keryx-hooks run, binary B"))
    if n > 1:
        legend.insert(3, (shades[1], sets[1][1] or "second run"))
    lx = left - 200
    for col, name in legend:
        if col:
            out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{col}"/>')
        else:
            out.append(f'<line x1="{lx + 6}" y1="{ly - 12}" x2="{lx + 6}" y2="{ly + 4}" stroke="#c53030" stroke-width="2.5"/>')
        out.append(f'<text x="{lx + 18}" y="{ly}">{escape(name)}</text>')
        lx += 40 + 7 * len(name)
    out.append("</svg>")
    with open(dst, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
