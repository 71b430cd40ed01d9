#!/usr/bin/env python3
"""Writes the hook source of case (f): a hooks.json and enough other files
to make FILES files and MEGABYTES MB in all, spread over subdirectories.

    make-source.py DIR [FILES=1000] [MEGABYTES=50]

Contents are pseudo-random (seeded, so every run hashes the same bytes) and
a few files are executable, as hook scripts are.
"""

import json
import os
import random
import sys


def main():
    root = sys.argv[1]
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    megabytes = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "hooks.json"), "w", encoding="utf-8") as f:
        json.dump({"schemaVersion": "1.0.0", "hooks": {}}, f)
    rng = random.Random(9)
    rest = files - 1
    size = megabytes * 1000 * 1000 // rest
    for i in range(rest):
        sub = os.path.join(root, f"lib{i // 100:02d}")
        os.makedirs(sub, exist_ok=True)
        path = os.path.join(sub, f"part{i:04d}.dat" if i % 50 else f"hook{i:04d}.sh")
        with open(path, "wb") as f:
            f.write(rng.randbytes(size))
        if i % 50 == 0:
            os.chmod(path, 0o755)


if __name__ == "__main__":
    main()
