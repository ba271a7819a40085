"""Kairos as its testbed ran it, on real processes beside the simulator (docs/kairos.md, "The testbed as
the authors' code ran it").

    python experiments/kairos_testbed_real.py [--seeds 1 2 3] [--variant testbed|baseline]
        [--runtimes real sim] [--out experiments/results/kairos_testbed]

The Table 4.1 workload of ``kairos_real.py`` (100 jobs, Poisson gaps of 60 s, the same seeds), on the same
local testbed (30 node processes x 4 slots + a central, Q = 4, W = 50 s, time scale 12, ~8 min a run) with
the ``timer`` executor (the only one that runs a suspended task at a share of a core). ``testbed``: every
factor of ``kairos_analysis.factors``' "all together" row: Kairos with ``--swap-margin 0.5 --starvation
code --suspended-share 0.1 --am-tasks on --launch-core on``, FIFO as ``yarn-fifo --am-tasks on``, tasks
with the per-job overhead (20 s) taken out and added back to every completion time. ``baseline``: the
thesis' algorithms and ``fifo`` on the same trace as ``kairos_real.py`` (overhead inside the tasks).
Writes each replay under ``DIR/<variant>-<runtime>-<policy>-sS/`` (kept; not re-run without ``--force``)
and ``DIR/<variant>.md``: per seed the p50 / p99 of each, Kairos / FIFO, real beside simulated.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from aviary.common.results import percentile, read_jobs
from aviary.experiments.kairos_analysis.staged import published_jobs
from aviary.experiments.kairos_workload import JOB_OVERHEAD, LONG_CUTOFF, table41_jobs, task_duration
from aviary.launch.cli.main import main as aviary

NODES, SLOTS, QUANTUM, Q, SCALE = 30, 4, 50.0, 4, 12.0
KAIROS_TESTBED = ["--swap-margin", "0.5", "--starvation", "code", "--suspended-share", "0.1",
                  "--am-tasks", "on", "--launch-core", "on"]  # fmt: skip
VARIANTS: dict[str, tuple[float, list[tuple[str, str, list[str]]]]] = {
    # variant: (overhead, [(label, policy, flags)])
    "testbed": (
        JOB_OVERHEAD,
        [("FIFO", "yarn-fifo", ["--am-tasks", "on"]), ("Kairos", "kairos", KAIROS_TESTBED)],
    ),
    "baseline": (0.0, [("FIFO", "fifo", []), ("Kairos", "kairos", [])]),
}


def write_trace(seed: int | Path, overhead: float, path: Path) -> float:
    """The seed's Table 4.1 jobs (or the job sequence of the authors' workload file ``seed``) with
    ``overhead`` taken out of their tasks; returns the offered load."""
    if isinstance(seed, Path):
        sim_jobs, gap = published_jobs(seed, overhead=overhead)
        jobs = [(j.arrival, [d for stage in j.stages for d in stage]) for j in sim_jobs]
    else:
        gap = 60.0
        jobs = [
            (j.submit, [task_duration(j.category, overhead)] * j.category.tasks)
            for j in table41_jobs(100, seed=seed)
        ]
    lines, work = ["# Kairos Table 4.1 workload, per-job overhead taken out: " + f"{overhead:g} s"], 0.0
    for submit, ds in jobs:
        work += sum(ds)
        lines.append(f"{submit:.6f} {len(ds)} {ds[0]:.6f} " + " ".join(f"{d:.6f}" for d in ds))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return work / (NODES * SLOTS * len(jobs) * gap)


def replay(trace: Path, out: Path, policy: str, flags: list[str], runtime: str) -> None:
    scale = SCALE if runtime == "real" else 1.0
    args = ["replay", str(trace), "--runtime", runtime, "--policy", policy, "--nodes", str(NODES),
            "--slots", str(SLOTS), "--keep-arrivals", "--task-scale", "1", "--time-scale", str(scale),
            "--cutoff", str(LONG_CUTOFF), "--seed", "1", "--quiet", "--yes", "--force", "--out", str(out),
            *flags]  # fmt: skip
    if policy.startswith("kairos"):
        args += ["--quantum", str(QUANTUM / scale), "--kairos-q", str(Q)]
    if runtime == "real":
        args += ["--executor", "timer"]
    code = aviary(args)
    if code != 0:
        raise SystemExit(f"{runtime} replay of {policy} failed (exit {code}); see {out}")


def jcts(folder: Path, runtime: str, overhead: float) -> list[float]:
    scale = SCALE if runtime == "real" else 1.0
    return sorted(r.jct * scale + overhead for r in read_jobs(folder) if r.jct is not None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="testbed")
    ap.add_argument("--runtimes", nargs="+", choices=["real", "sim"], default=["sim", "real"])
    ap.add_argument("--out", type=Path, default=Path("experiments/results/kairos_testbed"))
    ap.add_argument("--force", action="store_true")
    ap.add_argument(
        "--published",
        type=Path,
        help="also the authors' workload file (generated_workload_kairos), as seed 'pub'",
    )
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    overhead, runs = VARIANTS[args.variant]
    rows = []
    ratios: dict[str, list[tuple[float, float]]] = {"real": [], "sim": []}
    cases: list[tuple[str, int | Path]] = [(str(s), s) for s in args.seeds]
    if args.published is not None:
        cases.append(("pub", args.published))
    for seed, source in cases:
        trace = args.out / f"{args.variant}-s{seed}.tr"
        load = write_trace(source, overhead, trace)
        for runtime in ("sim", "real"):
            got: dict[str, list[float]] = {}
            for label, policy, flags in runs:
                folder = args.out / f"{args.variant}-{runtime}-{policy}-s{seed}"
                wanted = runtime in args.runtimes and not args.report_only
                if wanted and (args.force or not (folder / "summary.json").exists()):
                    print(f"seed {seed}: {runtime} {policy} ...", flush=True)
                    replay(trace, folder, policy, flags, runtime)
                if (folder / "summary.json").exists():
                    got[label] = jcts(folder, runtime, overhead)
            if len(got) < 2:
                continue
            f, k = got["FIFO"], got["Kairos"]
            p = {lab: (percentile(xs, 0.5), percentile(xs, 0.99)) for lab, xs in got.items()}
            r50, r99 = p["Kairos"][0] / p["FIFO"][0], p["Kairos"][1] / p["FIFO"][1]
            if seed != "pub":
                ratios[runtime].append((r50, r99))
            rows.append(
                f"| {seed} | {runtime} | {load:.2f} | {len(f)}, {len(k)} | {p['FIFO'][0]:.0f}, "
                f"{p['FIFO'][1]:.0f} | {p['Kairos'][0]:.0f}, {p['Kairos'][1]:.0f} | {r50:.2f} | {r99:.2f} |"
            )
    lines = [
        f"# Kairos / FIFO on the 30 x 4 testbed, variant `{args.variant}` (real beside simulated)",
        "",
        f"`python experiments/kairos_testbed_real.py --variant {args.variant} --seeds "
        + " ".join(map(str, args.seeds))
        + "`: timer executor, time scale 12, times in trace seconds"
        + (f", {overhead:g} s per-job overhead added to every completion time" if overhead else "")
        + ". Ran on a shared two-core machine (other work running; load average ~3), so the real runs are"
        " noisy. Thesis (Fig. 4.4a): 0.30 at p50, 0.70 at p99.",
        "",
        "| seed | runtime | load | jobs finished (FIFO, Kairos) | FIFO p50, p99 (s) | Kairos p50, p99 (s) "
        "| p50 Kairos / FIFO | p99 Kairos / FIFO |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    for runtime, rs in ratios.items():
        if rs:
            a, b = [x for x, _ in rs], [y for _, y in rs]
            lines.append(
                f"- {runtime}, {len(rs)} seeds: p50 **{statistics.median(a):.2f}** "
                f"[{min(a):.2f}, {max(a):.2f}], p99 **{statistics.median(b):.2f}** "
                f"[{min(b):.2f}, {max(b):.2f}]"
            )
    text = "\n".join(lines) + "\n"
    (args.out / f"{args.variant}.md").write_text(text)
    (args.out / f"{args.variant}.json").write_text(json.dumps(ratios, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
