"""Eagle vs Hawk on the real runtime (thesis Figure 3.9): a local testbed of 100 node monitors, 10
distributed schedulers and the central scheduler, replaying a scaled sample of the bundled Google trace.

    python -m aviary.experiments.hawk_eagle_real --loads 0.8 0.6      # both policies, seeds 0-2
    python -m aviary.experiments.hawk_eagle_real --seeds 0 --time-scale 2000
    python -m aviary.experiments.hawk_eagle_real --report-only        # the tables from the runs

The sample: 3,300 consecutive jobs from job 6,000 (inside the busy part of the sample), durations
divided by the time scale (default 4,000), task counts multiplied by nodes / 10,000 (tasks merged, each
job keeping its task-seconds, DESIGN §4), Poisson arrivals at the offered load, drawn with the seed
(and the schedulers' probes too). Jobs keep the class and estimate of the trace (its mean task
duration against the reference cutoff), whatever their merged tasks last. Timer executors (a task is a
timer in its node monitor). Each run is repeated on the simulator (same cores, workload and seed; a
second each). Results: ``RESULTS/hawk_eagle_real/<policy>-load<L>[-sim]/`` (seed S > 0: ``-sS`` at the
end; ``summary.json`` committed) and the table ``RESULTS/hawk_eagle_real.md`` (``--results``, default
``experiments/results``): each ratio is taken within a seed (the same jobs), then its median over the
seeds [min, max]. Runs whose results exist are not repeated without ``--force``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from aviary.common.model import JobSpec
from aviary.common.results import percentile
from aviary.common.trace import read_trace
from aviary.common.workload import build_workload
from aviary.experiments.runs import seeded
from aviary.experiments.tables import num, over_seeds, ratio

RESULTS = Path(__file__).resolve().parent / "results"
PCT = ("p50", "p90", "p99")
CLASSES = ("short", "long")
REFERENCE_NODES = 10_000  # task counts scale by nodes / 10,000 (the real runtime's default)
SEEDS = (0, 1, 2)
COLS = [(c, q) for c in CLASSES for q in PCT]
COUNTERS = ("probes", "probes_behind_long", "short_ran_behind_long", "steals", "probes_rescheduled")


def folder(out: Path, policy: str, load: float, runtime: str, seed: int = 0) -> Path:
    """One run's folder under ``out`` (``RESULTS/hawk_eagle_real``)."""
    return out / seeded(f"{policy}-load{load:g}" + ("-sim" if runtime == "sim" else ""), seed)


def run_one(
    out: Path, policy: str, load: float, runtime: str, seed: int, args: argparse.Namespace
) -> dict[str, Any]:
    from aviary.launch.flags.parser import build_parser
    from aviary.launch.replay.resolve import setup_replay
    from aviary.launch.replay.run import print_summary, run_replay

    where = folder(out, policy, load, runtime, seed)
    flags = [
        "replay", "--runtime", runtime, "--policy", policy, "--nodes", str(args.nodes),
        "--schedulers", str(args.schedulers), "--jobs", str(args.jobs), "--start", str(args.start),
        "--time-scale", str(args.time_scale), "--task-scale", str(args.nodes / REFERENCE_NODES),
        "--load", str(load), "--seed", str(seed), "--yes", "--force", "--out", str(where),
    ]  # fmt: skip
    summary = run_replay(setup_replay(build_parser().parse_args(flags)), quiet=args.quiet)
    print_summary(summary, where)
    return summary


def load_summary(out: Path, policy: str, runtime: str, load: float, seed: int) -> dict[str, Any] | None:
    path = folder(out, policy, load, runtime, seed) / "summary.json"
    return json.loads(path.read_text()) if path.exists() else None


def workload(summary: dict[str, Any]) -> list[JobSpec]:
    """The replayed jobs, rebuilt from a run's parameters."""
    x = summary["extra"]
    return build_workload(
        read_trace(Path(x["trace"])), jobs=summary["jobs"], start=x["start"], seed=x["seed"],
        time_scale=x["time_scale"], task_scale=x["task_scale"], nodes=summary["nodes"], load=x["load"],
    )  # fmt: skip


def floor(jobs: list[JobSpec]) -> dict[str, dict[str, float | None]]:
    """Per class, percentiles of each job's longest task: no scheduler finishes a job sooner (None: the
    class has no job)."""
    out: dict[str, dict[str, float | None]] = {}
    for cls in CLASSES:
        longest = sorted(max(j.durations) for j in jobs if j.cls == cls)
        out[cls] = {q: percentile(longest, int(q[1:]) / 100) if longest else None for q in PCT}
    return out


def paired(
    out: Path, load: float, seeds: list[int], top: tuple[str, str], den: tuple[str, str]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The summaries of two runs (policy, runtime) at ``load``, one pair per seed that has both."""
    pairs = [(load_summary(out, *top, load, s), load_summary(out, *den, load, s)) for s in seeds]
    return [(a, b) for a, b in pairs if a is not None and b is not None]


def report(out: Path, loads: list[float], seeds: list[int]) -> str:
    """The tables: Eagle / Hawk per load and runtime, real / simulated per policy, then every run."""
    cols = [f"{c} {q}" for c, q in COLS]
    lines = [
        "# Eagle vs Hawk on the real runtime (thesis Figure 3.9)",
        "",
        "Generated by `python -m aviary.experiments.hawk_eagle_real`; set-up and discussion in",
        "experiments/README.md. Eagle's percentiles divided by Hawk's (below 1: Eagle better), on the",
        "real testbed and, for comparison, on the simulator with the same cores, workload and seed.",
        f"Seeds {', '.join(map(str, seeds))}: each ratio is taken within a seed (the same jobs), then its",
        "median over the seeds [min, max].",
        "",
        "| load | runtime | seeds | " + " | ".join(cols) + " |",
        "|" + "---|" * (3 + len(cols)),
    ]
    agree = [
        "",
        "Real over simulated, each policy (the same jobs and seed; 1: the testbed does what the simulator",
        "predicts):",
        "",
        "| load | policy | seeds | " + " | ".join(cols) + " | finished (real) |",
        "|" + "---|" * (4 + len(cols)),
    ]
    for load in loads:
        for runtime in ("real", "sim"):
            got = paired(out, load, seeds, ("eagle", runtime), ("hawk", runtime))
            if got:
                cells = [over_seeds([ratio(e["jct"][c][q], h["jct"][c][q]) for e, h in got]) for c, q in COLS]
                lines.append(f"| {load:g} | {runtime} | {len(got)} | " + " | ".join(cells) + " |")
        for policy in ("hawk", "eagle"):
            runs = paired(out, load, seeds, (policy, "real"), (policy, "sim"))
            if runs:
                cells = [
                    over_seeds([ratio(r["jct"][c][q], m["jct"][c][q]) for r, m in runs]) for c, q in COLS
                ]
                done = f"{sum(r['finished'] for r, _ in runs):,}/{sum(r['jobs'] for r, _ in runs):,}"
                agree.append(f"| {load:g} | {policy} | {len(runs)} | " + " | ".join(cells) + f" | {done} |")
    if len(agree) > 6:
        lines += agree
    lines += [
        "",
        "Every run: completion times in seconds of the scaled run (trace seconds / time scale); counters",
        "as in thesis Table 3.2. *longest task*: the same percentiles of each job's longest task, the",
        "floor no scheduler can beat (task merging makes some short jobs' tasks long: see the discussion).",
        "",
        "| policy | load | seed | runtime | jobs (short/long) | " + " | ".join(cols)
        + " | finished | wall (s) | messages | " + " | ".join(COUNTERS) + " |",
        "|" + "---|" * (12 + len(COUNTERS)),
    ]  # fmt: skip
    for load in loads:
        hawks = (load_summary(out, "hawk", rt, load, seed) for seed in seeds for rt in ("real", "sim"))
        if (first := next((r for r in hawks if r is not None), None)) is not None:
            bound = floor(workload(first))  # the seed draws the arrivals, not the jobs: one floor a load
            cells = [num(bound[c][q], 3) for c, q in COLS]
            lines.append(
                f"| longest task | {load:g} | all | - | - | " + " | ".join(cells) + " |" + " - |" * 8
            )
        for seed in seeds:
            for p in ("hawk", "eagle"):
                for runtime in ("real", "sim"):
                    s = load_summary(out, p, runtime, load, seed)
                    if s is None:
                        continue
                    j, c = s["jct"], s["counters"]
                    cells = [f"{j['short']['count']}/{j['long']['count']}"]
                    cells += [num(j[cl][q], 3) for cl, q in COLS]
                    cells += [
                        f"{s['finished']}/{s['jobs']}",
                        f"{s['wall_seconds']:.0f}",
                        f"{s['messages']['total']:,}",
                    ]
                    cells += [f"{c.get(k, 0):,}" for k in COUNTERS]
                    lines.append(f"| {p} | {load:g} | {seed} | {runtime} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--loads", type=float, nargs="+", default=[0.8])
    ap.add_argument("--policies", nargs="+", default=["hawk", "eagle"])
    ap.add_argument(
        "--seeds", type=int, nargs="+", default=list(SEEDS), help="seeds of every run (default 0 1 2)"
    )
    ap.add_argument("--nodes", type=int, default=100, help="node monitors (default 100)")
    ap.add_argument("--schedulers", type=int, default=10, help="distributed schedulers (default 10)")
    ap.add_argument("--jobs", type=int, default=3300)
    ap.add_argument("--start", type=int, default=6000)
    ap.add_argument("--time-scale", type=float, default=4000.0)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--report-only", action="store_true", help="rebuild the table from the results")
    ap.add_argument("--force", action="store_true", help="re-run the replays whose results exist")
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the table and runs go")
    args = ap.parse_args(argv)
    out = args.results / "hawk_eagle_real"
    if not args.report_only:
        for seed in args.seeds:  # all runs of a seed, then the next
            for load in args.loads:
                for policy in args.policies:
                    for runtime in ("real", "sim"):
                        if args.force or load_summary(out, policy, runtime, load, seed) is None:
                            run_one(out, policy, load, runtime, seed, args)
    found = {float(p.name.split("load", 1)[1].split("-")[0]) for p in out.glob("*-load*")}
    loads = sorted(found | set(args.loads))
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "hawk_eagle_real.md").write_text(report(out, loads, args.seeds))
    print(f"written: {args.results / 'hawk_eagle_real.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
