"""Messages per task of every registered policy, on the simulator (a product figure: DESIGN §2, §7).

    python -m aviary.benchmarks.wire messages [--nodes 1000] [--jobs 2000] [--load 0.8]
                                                [--out experiments/results/messages]

Every policy replays the same workload on the same cluster with the same seed: ``--jobs``
consecutive jobs of the bundled Google sample from the 6,000th (short and long jobs mixed), Poisson
arrivals at offered load ``--load``, durations in trace seconds, single-slot nodes, 10 distributed
schedulers where the policy uses them. The simulator counts every message a core sends, by kind, as
the real runtime does; the table gives them per task, with the simulator's events per second.
Writes ``messages.md`` and each run's ``summary.json`` under ``--out``; then ``codec.md``: encode +
decode nanoseconds per message kind with today's codec and with an earlier revision's, measured in the
same run (:mod:`aviary.benchmarks.wire.codec`; ``--codec-only`` for that table alone).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from aviary.benchmarks.wire.codec import BEFORE
from aviary.benchmarks.wire.codec import table as codec_table
from aviary.launch.cli.main import main as aviary
from aviary.launch.policies.registry import POLICIES


def num(x: float | None, digits: int = 0) -> str:
    """``x`` with thousands separators and ``digits`` decimals; ``n/a`` when missing or NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:,.{digits}f}"


def run(policy: str, out: Path, args: argparse.Namespace) -> dict:
    folder = out / policy
    flags = ["replay", "--runtime", "sim", "--policy", policy, "--nodes", str(args.nodes),
             "--schedulers", "10", "--jobs", str(args.jobs), "--start", "6000", "--load", str(args.load),
             "--seed", "1", "--quiet", "--force", "--out", str(folder)]  # fmt: skip
    if aviary(flags) != 0:
        raise SystemExit(f"the {policy} replay failed")
    (folder / "jobs.csv").unlink()  # the per-job rows are not needed here: keep the repository small
    return json.loads((folder / "summary.json").read_text())


def report(summaries: dict[str, dict], args: argparse.Namespace) -> str:
    kinds = sorted({k for s in summaries.values() for k in s["messages"] if k not in ("total", "per_task")})
    head = ["policy", "per task", *kinds, "short p50 (s)", "events/s"]
    lines = [
        f"# Messages per task: {args.jobs} jobs of the bundled sample, {args.nodes} nodes, load {args.load}",
        "",
        "Regenerate: `python -m aviary.benchmarks.wire messages` (see its docstring for the set-up).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for policy, s in summaries.items():
        tasks = s["tasks"]
        cells = [policy, num(s["messages"]["total"] / tasks, 2)]
        cells += [num(s["messages"][k] / tasks, 2) if s["messages"].get(k) else "" for k in kinds]
        cells += [num(s["jct"]["short"]["p50"], 1), num(s["extra"]["events_per_s"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--load", type=float, default=0.8)
    parser.add_argument("--out", type=Path, default=Path("experiments/results/messages"))
    parser.add_argument("--codec-only", action="store_true", help="only the codec's table (codec.md)")
    parser.add_argument("--before", default=BEFORE, help="the codec revision to compare with (%(default)s)")
    parser.add_argument("--codec-rounds", type=int, default=20000, help="round trips per kind (%(default)s)")
    args = parser.parse_args(argv)
    if not args.codec_only:
        summaries = {policy: run(policy, args.out, args) for policy in sorted(POLICIES)}
        text = report(summaries, args)
        (args.out / "messages.md").write_text(text)
        print(text)
    codec = (
        "# Encode + decode per message kind, before and after the msgspec codec (one run)\n\n"
        "Regenerate: `python -m aviary.benchmarks.wire messages --codec-only` "
        f"(`benchmarks/wire/codec.py`).\n\n{codec_table(args.before, args.codec_rounds)}"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "codec.md").write_text(codec)
    print(codec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
