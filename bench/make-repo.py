#!/usr/bin/env python3
"""Generate a synthetic multi-language repository for the impact-evidence
benchmark (bench/builtins.sh).

    bench/make-repo.py DIR [--files 20000] [--ignored 5000] [--seed 7] [--only LANG]

DIR gets --files files that a walk honouring .gitignore sees -- a Rust crate
(`mod`/`use`, `super::`, brace groups, tests using the crate by name), a
Python package (absolute, relative and parenthesised imports), a TypeScript
and JavaScript front end (`import`, `require`, `export * from`), a Go module
(import blocks) and some docs and data -- plus --ignored files under
node_modules/, target/ and dist/ that .gitignore excludes. Every source file
has a realistic size (1-6 KB) and imports from a few others; one "hub" file
per language is imported by about 5% of its language's files, so a lookup
has real work to do. The same seed gives the same tree, byte for byte, and
every file and directory gets the same fixed mtime (2024-01-01), as in a
checkout that has not been touched since.

--only rust|python|js|go gives 95% of the files to that language (and
the rest to docs and data), for the worst case of a lookup, which reads
every file of the edited file's language.

The last line printed is a JSON object naming the hub files, for the
benchmark to edit.
"""

import argparse
import json
import os
import random
import sys

RUST_SHARE, PY_SHARE, JS_SHARE, GO_SHARE = 0.35, 0.25, 0.25, 0.10
PER_DIR = 14  # source files per leaf directory
FIXED_MTIME = 1704067200  # 2024-01-01T00:00:00Z

WORDS = (
    "account alert archive audit batch billing buffer cache cart catalog channel "
    "checkout client cluster config cursor digest dispatch draft engine event export "
    "feed filter gateway graph handler index invoice job ledger limit loader mailer "
    "metric model notify order parser payment pipeline policy pool profile queue quota "
    "render report retry route schema search session shard signal snapshot stock store "
    "stream tenant token tracker upload user vault webhook worker"
).split()


class Gen:
    def __init__(self, root, seed):
        self.root = root
        self.rng = random.Random(seed)
        self.paths = set()

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self.paths.add(rel)

    @property
    def count(self):
        return len(self.paths)

    def word(self):
        return self.rng.choice(WORDS)

    def names(self, n):
        """n distinct module names."""
        out, seen = [], set()
        while len(out) < n:
            w = self.word()
            if self.rng.random() < 0.5:
                w = f"{w}_{self.word()}"
            if w not in seen:
                seen.add(w)
                out.append(w)
        return out

    def layout(self, total):
        """Directory paths (as lists of segments) holding `total` files."""
        dirs, n = [], 0
        areas = self.names(max(1, total // (PER_DIR * 6)))
        for a in areas:
            for s in self.names(self.rng.randint(3, 8)):
                dirs.append([a, s])
                n += PER_DIR
                if n >= total:
                    return dirs
        return dirs


def filler_rust(g, n):
    out = []
    for i in range(n):
        w = g.word()
        out.append(
            f"/// Computes the {w} step {i}.\n"
            f"pub fn {w}_{i}(input: &[u8], limit: usize) -> Option<usize> {{\n"
            f"    let mut total = 0usize;\n"
            f"    for (k, b) in input.iter().enumerate().take(limit) {{\n"
            f"        if *b == b'{chr(97 + i % 26)}' {{\n"
            f"            total = total.saturating_add(k);\n"
            f"        }}\n"
            f"    }}\n"
            f"    (total > 0).then_some(total)\n"
            f"}}\n"
        )
    return "\n".join(out)


def filler_py(g, n):
    out = []
    for i in range(n):
        w = g.word()
        out.append(
            f"def {w}_{i}(items, limit=10):\n"
            f'    """Return the {w} entries of items, at most limit."""\n'
            f"    out = []\n"
            f"    for k, item in enumerate(items):\n"
            f"        if k >= limit:\n"
            f"            break\n"
            f"        if getattr(item, '{w}', None) is not None:\n"
            f"            out.append(item)\n"
            f"    return out\n"
        )
    return "\n\n".join(out)


def filler_ts(g, n):
    out = []
    for i in range(n):
        w = g.word()
        out.append(
            f"export function {w}{i}(items: Array<{{ id: string; {w}?: number }}>, limit = 10) {{\n"
            f"  const out: string[] = [];\n"
            f"  for (const item of items.slice(0, limit)) {{\n"
            f"    if (item.{w} !== undefined && item.{w} > {i}) {{\n"
            f"      out.push(item.id);\n"
            f"    }}\n"
            f"  }}\n"
            f"  return out;\n"
            f"}}\n"
        )
    return "\n".join(out)


def filler_go(g, n):
    out = []
    for i in range(n):
        w = g.word().capitalize()
        out.append(
            f"// {w}{i} returns the {w.lower()} entries of items, at most limit.\n"
            f"func {w}{i}(items []string, limit int) []string {{\n"
            f"\tout := make([]string, 0, limit)\n"
            f"\tfor k, item := range items {{\n"
            f"\t\tif k >= limit {{\n"
            f"\t\t\tbreak\n"
            f"\t\t}}\n"
            f"\t\tif strings.Contains(item, \"{w.lower()}\") {{\n"
            f"\t\t\tout = append(out, item)\n"
            f"\t\t}}\n"
            f"\t}}\n"
            f"\treturn out\n"
            f"}}\n"
        )
    return "\n".join(out)


def make_rust(g, total):
    """src/<area>/<sub>/<name>.rs with mod.rs files, tests/ using the crate."""
    start = g.count
    g.write("Cargo.toml", '[package]\nname = "bench-app"\nversion = "0.1.0"\nedition = "2021"\n')
    dirs = g.layout(total)
    modules = []  # (crate path, file)
    tree = {}
    for d in dirs:
        for name in g.names(PER_DIR - 1):
            modules.append(("::".join(d + [name]), "src/" + "/".join(d + [name]) + ".rs"))
        tree.setdefault(d[0], []).append(d[1])
    hub = ("core::settings", "src/core/settings.rs")
    g.write(hub[1], "//! Settings every module reads.\n\n" + filler_rust(g, 6))
    g.write("src/core/mod.rs", "pub mod settings;\n")
    g.write("src/lib.rs", "pub mod core;\n" + "".join(f"pub mod {a};\n" for a in tree))
    for a, subs in tree.items():
        g.write(f"src/{a}/mod.rs", "".join(f"pub mod {s};\n" for s in subs))
    by_dir = {}
    for path, f in modules:
        by_dir.setdefault(path.rsplit("::", 1)[0], []).append(path.rsplit("::", 1)[1])
    for d, names in by_dir.items():
        g.write("src/" + d.replace("::", "/") + "/mod.rs", "".join(f"pub mod {n};\n" for n in names))
    tests = max(1, total // 40)
    for path, f in modules:
        if g.count - start >= total - tests:
            break
        uses = ["use std::collections::HashMap;"]
        for _ in range(g.rng.randint(2, 6)):
            other = g.rng.choice(modules)[0]
            uses.append(f"use crate::{other}::{g.word()}_0;")
        if g.rng.random() < 0.05:
            uses.append(f"use crate::{hub[0]}::{{self, {g.word()}_1}};")
        siblings = by_dir[path.rsplit("::", 1)[0]]
        uses.append(f"use super::{{{g.rng.choice(siblings)}, {g.rng.choice(siblings)}}};")
        body = "\n".join(uses) + "\n\n" + filler_rust(g, g.rng.randint(3, 12))
        if g.rng.random() < 0.03:
            body += f"\nfn hub() -> usize {{ crate::{hub[0]}::store_0(b\"x\", 1).unwrap_or(0) }}\n"
        g.write(f, body)
    for i in range(tests):
        m = g.rng.choice(modules)[0]
        hubline = f"use bench_app::{hub[0]};\n" if g.rng.random() < 0.05 else ""
        g.write(
            f"tests/{m.rsplit('::', 1)[1]}_{i}.rs",
            f"use bench_app::{m};\n{hubline}\n#[test]\nfn works() {{\n    assert!(true);\n}}\n",
        )
    return hub[1], g.count - start


def make_python(g, total):
    start = g.count
    dirs = g.layout(total)
    hub = "app/core/config.py"
    g.write("app/__init__.py", "")
    g.write("app/core/__init__.py", "")
    g.write(hub, '"""Configuration every module reads."""\n\n' + filler_py(g, 6))
    modules = []
    for d in dirs:
        g.write("app/" + "/".join(d[:1]) + "/__init__.py", "")
        g.write("app/" + "/".join(d) + "/__init__.py", "")
        for name in g.names(PER_DIR - 2):
            modules.append(("app." + ".".join(d + [name]), "app/" + "/".join(d + [name]) + ".py"))
    tests = max(1, total // 20)
    for dotted, f in modules:
        if g.count - start >= total - tests:
            break
        lines = ["import os", "import json"]
        for _ in range(g.rng.randint(2, 5)):
            other = g.rng.choice(modules)[0]
            lines.append(f"from {other} import {g.word()}_0")
        r = g.rng.random()
        if r < 0.02:
            lines.append("from app.core.config import settings_0")
        elif r < 0.04:
            lines.append("from app.core import (\n    config,\n    other,\n)")
        elif r < 0.05:
            lines.append("import app.core.config as cfg")
        lines.append(f"from . import {g.rng.choice(modules)[0].rsplit('.', 1)[1]}")
        g.write(f, "\n".join(lines) + "\n\n\n" + filler_py(g, g.rng.randint(3, 10)) + "\n")
    for i in range(tests):
        dotted = g.rng.choice(modules)[0]
        name = dotted.rsplit(".", 1)[1]
        g.write(f"tests/python/test_{name}_{i}.py", f"from {dotted} import *\n\n\ndef test_it():\n    assert True\n")
    return hub, g.count - start


def make_js(g, total):
    start = g.count
    dirs = g.layout(total)
    hub = "web/src/lib/format.ts"
    g.write(hub, "// Formatting every view uses.\n" + filler_ts(g, 5))
    g.write("web/package.json", '{"name": "bench-web", "private": true}\n')
    files = []
    for d in dirs:
        for name in g.names(PER_DIR):
            ext = g.rng.choice(["ts", "ts", "tsx", "js"])
            files.append("web/src/" + "/".join(d) + f"/{name}.{ext}")
    for f in files:
        if g.count - start >= total:
            break
        fdir = f.rsplit("/", 1)[0]
        lines = ["import React from 'react';"]
        for _ in range(g.rng.randint(2, 5)):
            other = g.rng.choice(files)
            rel = os.path.relpath(other.rsplit(".", 1)[0], fdir)
            rel = rel if rel.startswith(".") else "./" + rel
            lines.append(f"import {{ x }} from '{rel}';")
        if g.rng.random() < 0.05:
            rel = os.path.relpath("web/src/lib/format", fdir)
            if g.rng.random() < 0.5:
                lines.append(f"import {{ store0 }} from '{rel}';")
            else:
                lines.append(f"const fmt = require('{rel}.ts');")
        body = "\n".join(lines) + "\n\n" + filler_ts(g, g.rng.randint(3, 10))
        if f.endswith(".ts") and g.rng.random() < 0.08:
            f = f[:-3] + ".test.ts"
        g.write(f, body)
    return hub, g.count - start


def make_go(g, total):
    start = g.count
    g.write("go.mod", "module example.com/bench\n\ngo 1.22\n")
    hub_pkg = "internal/store"
    g.write(f"{hub_pkg}/store.go", "package store\n\nimport \"strings\"\n\n" + filler_go(g, 5))
    pkgs = ["internal/" + "/".join(d) for d in g.layout(total)]
    for p in pkgs:
        for name in g.names(PER_DIR):
            if g.count - start >= total:
                return f"{hub_pkg}/store.go", g.count - start
            imports = ['\t"fmt"', '\t"strings"']
            for _ in range(g.rng.randint(1, 4)):
                imports.append(f'\t"example.com/bench/{g.rng.choice(pkgs)}"')
            if g.rng.random() < 0.05:
                imports.append(f'\tst "example.com/bench/{hub_pkg}"')
            pkg = p.rsplit("/", 1)[1]
            suffix = "_test" if g.rng.random() < 0.1 else ""
            g.write(
                f"{p}/{name}{suffix}.go",
                f"package {pkg}\n\nimport (\n" + "\n".join(imports) + "\n)\n\n" + filler_go(g, g.rng.randint(3, 10)),
            )
    return f"{hub_pkg}/store.go", g.count - start


def make_other(g, total, hubs):
    start = g.count
    g.write(".gitignore", "node_modules/\ntarget/\ndist/\n*.log\n")
    notes = "".join(f"- `{h}`: changes here ripple widely; run the full suite.\n" for h in hubs)
    g.write("AGENTS.md", "# Notes for agents\n\n" + notes)
    g.write("CLAUDE.md", "# Project memory\n\nKeep the hub files small.\n")
    i = 0
    while g.count - start < total:
        kind = i % 3
        if kind == 0:
            g.write(f"docs/{g.word()}/{g.word()}_{i}.md", f"# {g.word()}\n\n" + "Some prose. " * 40 + "\n")
        elif kind == 1:
            g.write(f"assets/data/{g.word()}_{i}.json", json.dumps({"id": i, "name": g.word()}) + "\n")
        else:
            g.write(f"scripts/{g.word()}_{i}.sh", "#!/bin/sh\nset -eu\necho done\n")
        i += 1
    return g.count - start


def make_ignored(g, n):
    for i in range(n):
        top = ("node_modules", "target", "dist")[i % 3]
        g.write(f"{top}/{g.word()}/{g.word()}_{i}.js", f"module.exports = require('./x{i}');\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--files", type=int, default=20000, help="files the walk sees")
    ap.add_argument("--ignored", type=int, default=5000, help="files .gitignore excludes")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", choices=["rust", "python", "js", "go"])
    a = ap.parse_args()
    shares = {"rust": RUST_SHARE, "python": PY_SHARE, "js": JS_SHARE, "go": GO_SHARE}
    if a.only:
        shares = {k: (0.95 if k == a.only else 0.0) for k in shares}
    if os.path.exists(a.dir) and os.listdir(a.dir):
        sys.exit(f"make-repo: {a.dir} exists and is not empty")
    os.makedirs(a.dir, exist_ok=True)
    g = Gen(a.dir, a.seed)
    n = a.files
    made = {}
    for lang, make in (("rust", make_rust), ("python", make_python), ("js", make_js), ("go", make_go)):
        if shares[lang] > 0:
            made[lang] = make(g, int(n * shares[lang]))
    hubs = {lang: hub for lang, (hub, _) in made.items()}
    make_other(g, n - sum(k for _, k in made.values()), list(hubs.values()))
    seen = g.count
    make_ignored(g, a.ignored)
    for d, _, files in os.walk(a.dir, topdown=False):
        for f in files:
            os.utime(os.path.join(d, f), (FIXED_MTIME, FIXED_MTIME))
        os.utime(d, (FIXED_MTIME, FIXED_MTIME))
    print(f"make-repo: {seen} files visible, {g.count - seen} ignored, in {a.dir}", file=sys.stderr)
    print(json.dumps({"files": seen, "ignored": g.count - seen, "hubs": hubs}))


if __name__ == "__main__":
    main()
