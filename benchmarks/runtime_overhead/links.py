"""What the real runtime's link layer (common/linklayer.py) costs a replay without faults of the network:
``aviary bench`` of this tree and of a baseline tree (one from before the link layer), alternated, in one
run.

    git worktree add /tmp/before <commit before the link layer>
    mkdir /tmp/base && ln -s /tmp/before /tmp/base/aviary
    python -m aviary.benchmarks.runtime_overhead links --baseline /tmp/base [--rounds 3]

Both run their pure-Python sources (``AVIARY_PURE_PYTHON=1``: a worktree has no compiled build; the
runtime itself is not compiled). Reported per round and as the median of the per-round ratios this /
baseline: the round trip p50 and p99 (ms) and no-op tasks per second of ``aviary bench``'s default
testbed (Sparrow, ZeroMQ, keys). Ratios, not times: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import aviary

FIGURES = ("roundtrip_p50_ms", "roundtrip_p99_ms", "noop_tasks_per_s")
THIS = Path(aviary.__file__).resolve().parent.parent


def bench(tree: Path, out: Path) -> dict[str, float]:
    """``aviary bench`` of the tree whose ``aviary`` package lies in ``tree``: its figures."""
    env = {**os.environ, "PYTHONPATH": str(tree), "AVIARY_PURE_PYTHON": "1"}
    subprocess.run(
        [sys.executable, "-m", "aviary.launch.cli", "bench", "--out", str(out)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=tree,
    )
    figures = json.loads((out / "bench.json").read_text())
    return {k: float(figures[k]) for k in FIGURES}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True, help="a folder holding the baseline as 'aviary'")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if not (args.baseline / "aviary" / "__init__.py").exists():
        print(f"--baseline {args.baseline}: no aviary package in it (a link named aviary)", file=sys.stderr)
        return 2
    ratios: dict[str, list[float]] = {k: [] for k in FIGURES}
    with tempfile.TemporaryDirectory(prefix="aviary-links-") as tmp:
        for r in range(args.rounds):
            base = bench(args.baseline.resolve(), Path(tmp) / f"base{r}")
            this = bench(THIS, Path(tmp) / f"this{r}")
            for k in FIGURES:
                ratios[k].append(this[k] / base[k])
            shown = ", ".join(f"{k} {base[k]:g} -> {this[k]:g}" for k in FIGURES)
            print(f"round {r + 1}: {shown}", flush=True)
    for k in FIGURES:
        values = ", ".join(f"{v:.3f}" for v in ratios[k])
        print(f"{k}: this / baseline median {statistics.median(ratios[k]):.3f} ({values})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
