"""Kairos vs central FIFO, and the Var / Random / Sum tie-breaks, on a 30 x 4 local testbed (thesis §4.5,
Figures 4.4 and 4.6), with the heavy-tailed workload of Table 4.1.

    python experiments/kairos_real.py [--executor process] [--time-scale 12] [--seeds 1 2 3] [--out DIR]

What it runs (every replay through ``aviary replay``):

1. for each workload seed (default 1, 2, 3), 100 jobs drawn from Table 4.1 with Poisson arrivals of mean
   60 s, as in the thesis, written as a trace (:mod:`aviary.experiments.kairos_workload`); durations and
   arrivals divided by the time scale (12: the ~1.6 h workload runs in ~8 min);
2. policies ``fifo``, ``kairos`` (Var), ``kairos-random``, ``kairos-sum`` on a real local testbed of 30
   node processes x 4 slots + 1 central process, with the chosen executor, Q = 4 and W = 50 s (thesis
   testbed settings, W scaled like the durations); then the same four on the simulator;
3. (sim only, fast) a load sweep: mean inter-arrival 60, 75, 90 and 120 s, 5 workload seeds each.

It writes ``DIR/kairos_real.md`` (tables), ``DIR/kairos_real.png`` (CDFs of completion time and
slowdown, Fig. 4.4; CDF of completion time per tie-break, Fig. 4.6; the first seed's runs) and each
replay's ``jobs.csv`` and ``summary.json`` under ``DIR/<runtime>-<policy>/`` (seed S other than 1:
``-sS`` at the end; runs whose results exist are not repeated without ``--force``). Over the seeds, each
ratio to FIFO is taken within a seed (the same jobs), then its median [min, max]. Times in the tables
are in *trace seconds* (replay seconds x time scale) so they read like the thesis' numbers; a job's
slowdown is its completion time over its makespan alone on the 120 slots. The host's CPU use during
each real run is reported, since this machine has 2 cores for 120 task slots and 31 scheduler
processes.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from aviary.common.frontend import JobTimes
from aviary.common.results import percentile, read_jobs, read_summary
from aviary.common.trace import read_trace
from aviary.common.workload import build_workload
from aviary.experiments.kairos_analysis.report import SUMMARY_BEGIN, SUMMARY_END
from aviary.experiments.kairos_workload import (
    CATEGORIES,
    LONG_CUTOFF,
    alone_time,
    categories_of,
    table41_jobs,
    write_trace,
)
from aviary.experiments.runs import seeded
from aviary.experiments.tables import num, over_seeds, ratio, seeds_cell
from aviary.launch.cli.main import main as aviary
from aviary.launch.drivers.sim import simulate
from aviary.launch.policies.registry import policy_cluster

POLICIES = ("fifo", "kairos", "kairos-random", "kairos-sum")
LABELS = {
    "fifo": "FIFO",
    "kairos": "Kairos (Var)",
    "kairos-random": "Kairos Random",
    "kairos-sum": "Kairos Sum",
}
NODES, SLOTS = 30, 4
QUANTUM, Q = 50.0, 4  # thesis testbed (§4.5.2)
PCTS = {"p10": 0.10, "p30": 0.30, "p50": 0.50, "p90": 0.90, "p99": 0.99}
SEEDS = (1, 2, 3)
"""Workload seeds; the first keeps the folders and trace name runs had before seeds."""
THESIS = {"FIFO": {"p50": 808.0, "p99": 2061.0}, "Kairos (Var)": {"p50": 241.0, "p99": 1452.0}}
"""Figure 4.4a as quoted in the thesis text (s)."""


Stats = dict[str, dict[str, Any]]
"""Per run (``runtime:policy``), its job statistics (or, for ``host``, its CPU use and wall time)."""


def run_folder(out: Path, runtime: str, policy: str, seed: int) -> Path:
    return out / seeded(f"{runtime}-{policy}", seed, SEEDS[0])


def trace_file(out: Path, seed: int) -> Path:
    return out / (seeded("table41", seed, SEEDS[0]) + ".tr")


def replay(trace: Path, out: Path, policy: str, runtime: str, executor: str, scale: float) -> dict[str, Any]:
    flags = ["replay", str(trace), "--runtime", runtime, "--policy", policy, "--nodes", str(NODES),
             "--slots", str(SLOTS), "--keep-arrivals", "--task-scale", "1",
             "--time-scale", str(scale), "--cutoff", str(LONG_CUTOFF), "--quantum", str(QUANTUM / scale),
             "--kairos-q", str(Q), "--seed", "1", "--quiet", "--yes", "--force",
             "--out", str(out)]  # fmt: skip
    if runtime == "real":  # the simulator runs tasks virtually and refuses --executor
        flags += ["--executor", executor]
    cpu0, own0, t0 = psutil.cpu_times(), _own_cpu(), time.monotonic()
    code = aviary(flags)
    cpu1, own1, wall = psutil.cpu_times(), _own_cpu(), time.monotonic() - t0
    if code != 0:
        raise SystemExit(f"{runtime} replay of {policy} failed (exit {code}); see {out}")
    shutil.rmtree(out / "testbed", ignore_errors=True)  # logs of a successful run: not kept
    busy = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    return {"cpu": busy / wall / psutil.cpu_count(), "own_cores": (own1 - own0) / wall, "wall": wall}


def _own_cpu() -> float:
    """CPU seconds of this process and of every descendant reaped so far (testbed processes, tasks)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def job_stats(folder: Path, durations: list[list[float]], cats: list[int], scale: float) -> dict[str, Any]:
    records = read_jobs(folder)
    summary = read_summary(folder)
    jct = {r.job_id: r.jct * scale for r in records if r.jct is not None}
    slow = {i: t / alone_time(durations[i], NODES * SLOTS) for i, t in jct.items()}
    xs, ss = sorted(jct.values()), sorted(slow.values())
    by_cat = {}
    for c in CATEGORIES:
        ts = [t for i, t in jct.items() if cats[i] == c.number]
        if ts:
            by_cat[c.number] = statistics.median(ts)
    return {
        "jct": {k: percentile(xs, q) for k, q in PCTS.items()},
        "slowdown": {**{k: percentile(ss, q) for k, q in PCTS.items()}, "max": ss[-1]},
        "category": by_cat,
        "cdf_jct": xs,
        "cdf_slowdown": ss,
        "finished": len(xs),
        "jobs": len(records),
        "preemptions": summary["counters"].get("preemptions", 0),
        "utilization": summary.get("utilization"),
    }


def _sim_jct(policy: str, job_id: int, times: JobTimes) -> float:
    """A simulated job's JCT (trace s); every job of a sweep's simulation finishes, or this says which
    did not."""
    if times.submit is None or times.finish is None:
        raise RuntimeError(f"sweep: job {job_id} never finished in the {policy} simulation")
    return times.finish - times.submit


def sweep(gaps: list[float], seeds: list[int], tmp: Path) -> dict[float, dict[str, dict[str, float]]]:
    """Mean p30/p50/p90/p99 (trace s) per policy on the simulator, per mean inter-arrival time; the
    ``"load"`` entry holds the mean offered load of the seeds' workloads."""
    out: dict[float, dict[str, dict[str, float]]] = {}
    for gap in gaps:
        acc: dict[str, list[dict[str, float]]] = {p: [] for p in POLICIES}
        loads = []
        for seed in seeds:
            trace = write_trace(table41_jobs(100, seed=seed, mean_gap=gap), tmp / f"sweep-{gap}-{seed}.tr")
            tjobs = read_trace(trace)
            loads.append(sum(tj.task_seconds for tj in tjobs) / (NODES * SLOTS * 100 * gap))
            jobs = build_workload(tjobs, start=0, time_scale=1.0, task_scale=1.0, keep_arrivals=True,
                                  nodes=NODES, slots=SLOTS, cutoff=LONG_CUTOFF)  # fmt: skip
            for policy in POLICIES:
                cluster = policy_cluster(policy, nodes=NODES, slots=SLOTS, bind_ports=False, seed=1,
                                         params={"quantum": QUANTUM, "kairos_q": Q})  # fmt: skip
                res = simulate(cluster, jobs)
                xs = sorted(_sim_jct(policy, job_id, t) for job_id, t in res.frontend.times.items())
                acc[policy].append({k: percentile(xs, q) for k, q in PCTS.items() if k != "p10"})
        out[gap] = {p: {k: statistics.mean(r[k] for r in rs) for k in rs[0]} for p, rs in acc.items()}
        out[gap]["load"] = {"mean": statistics.mean(loads)}
    return out


def tables(args: argparse.Namespace, runs: dict[int, tuple[Stats, Stats]],
           swept: dict[float, dict[str, dict[str, float]]], loads: dict[int, float]) -> str:  # fmt: skip
    """The report: the first seed's runs (percentiles, slowdowns, categories), then every seed's ratios
    to FIFO, the simulator's load sweep and why the numbers differ from the thesis."""
    seed = args.seeds[0]
    stats, host = runs[seed]
    load = loads[seed]
    cmd = " ".join(["python experiments/kairos_real.py", *(a for a in sys.argv[1:] if a != "--report-only")])
    lines = [
        "# Kairos on a 30 x 4 local testbed: Table 4.1 workload (thesis §4.5, Fig. 4.4 and 4.6)",
        "",
        f"Regenerate: `{cmd}` (each real run takes ~{5800 / args.time_scale / 60:.0f} min).",
        "",
        f"100 jobs of Table 4.1 (seed {seed}), Poisson arrivals of mean {args.mean_gap:g} s "
        f"(offered load {load:.2f} of 120 slots), 30 nodes x 4 slots, Q = {Q}, W = {QUANTUM:g} s, starvation "
        "guard after 3 "
        f"missed quanta for 2 W. Durations and arrivals divided by {args.time_scale:g} for the real runs "
        f"(executor `{args.executor}`); all times below are multiplied back (trace seconds). Slowdown: "
        "completion time / makespan of the job alone on 120 slots.",
        "",
        "## Completion times (s) and slowdowns (Fig. 4.4, 4.6)",
        "",
        "| run | p10 | p30 | p50 | p90 | p99 | p50 / FIFO | p99 / FIFO | slowdown p50 | p90 | p99 | max "
        "| preemptions | util. | run's CPU (cores) | host CPU | wall (s) |",
        "|---|" + "---|" * 16,
    ]
    for key, st in stats.items():
        runtime, policy = key.split(":")
        base = stats.get(f"{runtime}:fifo")
        j, s = st["jct"], st["slowdown"]
        r50 = j["p50"] / base["jct"]["p50"] if base else None
        r99 = j["p99"] / base["jct"]["p99"] if base else None
        h = host.get(key, {})
        cpu = f"{h['cpu']:.0%}" if runtime == "real" and "cpu" in h else "-"
        own = f"{h['own_cores']:.2f}" if runtime == "real" and "own_cores" in h else "-"
        wall = num(h.get("wall")) if runtime == "real" else "-"
        util = "n/a" if st["utilization"] is None else f"{st['utilization']:.0%}"
        lines.append(
            f"| {LABELS[policy]} ({runtime}) | "
            + " | ".join(num(j[k]) for k in PCTS)
            + f" | {num(r50, 2)} | "
            f"{num(r99, 2)} | "
            + " | ".join(num(s[k], 2) for k in ("p50", "p90", "p99", "max"))
            + f" | {st['preemptions']:,} | {util} | {own} | {cpu} | {wall} |"
        )
    lines += [
        "",
        "Thesis (YARN, 30 x 4 cores, Fig. 4.4a): FIFO p50 808 s, p99 2061 s; Kairos p50 241 s "
        "(0.30 of FIFO), p99 1452 s (0.70).",
        "",
        "## Median completion time by category (s)",
        "",
        "| run | "
        + " | ".join(
            f"{c.number} {c.name} (alone {alone_time([c.task_duration] * c.tasks, 120):g})"
            for c in CATEGORIES
        )
        + " |",
        "|---|" + "---|" * len(CATEGORIES),
    ]
    for key, st in stats.items():
        runtime, policy = key.split(":")
        lines.append(f"| {LABELS[policy]} ({runtime}) | "
                     + " | ".join(num(st["category"].get(c.number)) for c in CATEGORIES) + " |")  # fmt: skip
    if len(runs) > 1:
        lines += over_workload_seeds(runs, loads)
    if not swept:
        return "\n".join([*lines, *why(args.out)]) + "\n"
    lines += [
        "",
        "## Simulator load sweep (5 workload seeds each; mean of the percentiles, s)",
        "",
        "| mean gap (s) | offered load | policy | p30 | p50 | p90 | p99 | p50 / FIFO | p99 / FIFO |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for gap, by_policy in swept.items():
        base = by_policy["fifo"]
        for policy, v in by_policy.items():
            if policy == "load":
                continue
            lines.append(
                f"| {gap:g} | {by_policy['load']['mean']:.2f} | {LABELS[policy]} | "
                + " | ".join(num(v[k]) for k in ("p30", "p50", "p90", "p99"))
                + f" | {v['p50'] / base['p50']:.2f} | {v['p99'] / base['p99']:.2f} |"
            )
    return "\n".join([*lines, *why(args.out)]) + "\n"


def over_workload_seeds(runs: dict[int, tuple[Stats, Stats]], loads: dict[int, float]) -> list[str]:
    """Each run's percentiles and ratios to FIFO over the workload seeds: median [min, max]."""
    seeds = list(runs)
    lines = [
        "",
        f"## Over workload seeds {', '.join(map(str, seeds))} (offered load "
        + ", ".join(f"{loads[s]:.2f}" for s in seeds)
        + ")",
        "",
        "Each value is the median over the seeds [min, max]; each ratio to FIFO is taken within a seed (the",
        "same jobs), then its median [min, max]. Times in trace seconds.",
        "",
        "| run | seeds | p50 | p99 | p50 / FIFO | p99 / FIFO | slowdown p50 | slowdown p99 | preemptions "
        "| finished (all seeds) |",
        "|---|" + "---|" * 9,
    ]
    keys = list(dict.fromkeys(k for stats, _ in runs.values() for k in stats))
    for key in keys:
        runtime, policy = key.split(":")
        got = [s for s in seeds if key in runs[s][0]]
        sts = [runs[s][0][key] for s in got]
        base = [runs[s][0].get(f"{runtime}:fifo") for s in got]
        cells = [seeds_cell(got, seeds)]
        cells += [over_seeds([st["jct"][q] for st in sts], "{:,.0f}") for q in ("p50", "p99")]
        pairs = list(zip(sts, base, strict=True))
        for q in ("p50", "p99"):
            cells.append(over_seeds([ratio(st["jct"][q], b["jct"][q]) if b else None for st, b in pairs]))
        cells += [over_seeds([st["slowdown"][q] for st in sts]) for q in ("p50", "p99")]
        cells += [over_seeds([float(st["preemptions"]) for st in sts], "{:,.0f}")]
        cells += [f"{sum(st['finished'] for st in sts)}/{sum(st['jobs'] for st in sts)}"]
        lines.append(f"| {LABELS[policy]} ({runtime}) | " + " | ".join(cells) + " |")
    return lines


def why(out: Path) -> list[str]:
    """The "why the numbers differ" section: the summary of ``analysis.md`` (``kairos_analysis``)."""
    lines = ["", "## Why the numbers differ from the thesis", ""]
    text = (out / "analysis.md").read_text() if (out / "analysis.md").exists() else ""
    default = Path("experiments/results/kairos_real")
    if not text and out.resolve() != default.resolve() and (default / "analysis.md").exists():
        return [  # another executor's runs: the analysis is on the simulator, the same for every one
            *lines,
            "Measured on the simulator by `experiments/kairos_analysis/` (the same for every executor): "
            "[`experiments/results/kairos_real/analysis.md`](../kairos_real/analysis.md), reading in "
            "`docs/kairos.md`.",
        ]
    if SUMMARY_BEGIN not in text or SUMMARY_END not in text:
        return [
            *lines,
            "Not measured yet: run `python -m aviary.experiments.kairos_analysis`, then this report again.",
        ]
    body = "\n".join(
        x for x in text.split(SUMMARY_BEGIN)[1].split(SUMMARY_END)[0].splitlines() if x[:3] != "## "
    )
    return [
        *lines,
        "Measured on the simulator by `experiments/kairos_analysis/`; tables and method in "
        "[analysis.md](analysis.md), reading in `docs/kairos.md`.",
        "",
        *body.strip().splitlines(),
    ]


def plot(stats: dict[str, dict[str, Any]], png: Path, runtime: str, workload: str = "") -> None:
    """CDFs of completion time (trace seconds) and slowdown, Fig. 4.4, and of completion time per
    tie-break, Fig. 4.6, of the ``runtime``'s runs, over all jobs (a run's unfinished jobs keep its CDF
    below 1); ``workload`` names the workload in the title. The format follows ``png``'s extension; a
    panel without runs says so."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from aviary.launch.results.compare import plain_log_ticks, save_figure

    fig = Figure(figsize=(15, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    panels = [
        ("(a) completion time, Fig. 4.4a", "cdf_jct", ("fifo", "kairos"), "job completion time (trace s)"),
        (
            "(b) slowdown, Fig. 4.4b",
            "cdf_slowdown",
            ("fifo", "kairos"),
            "job slowdown (JCT / alone, log scale)",
        ),
        (
            "(c) tie-breaks, Fig. 4.6",
            "cdf_jct",
            ("kairos", "kairos-random", "kairos-sum"),
            "job completion time (trace s)",
        ),
    ]
    for i, (title, field, policies, xlabel) in enumerate(panels):
        ax = fig.add_subplot(1, 3, i + 1)
        drawn = 0
        for policy in policies:
            st = stats.get(f"{runtime}:{policy}")
            if st is None or not st[field]:
                continue
            xs, n = (
                st[field],
                max(st.get("jobs", 0), len(st[field])),
            )  # unfinished jobs: the CDF stays below 1
            ax.step(xs, [(k + 1) / n for k in range(len(xs))], where="post", label=LABELS[policy])
            drawn += 1
        if field == "cdf_slowdown":
            ax.set_xscale("log")
            plain_log_ticks(ax.xaxis)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of jobs (CDF)")
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        if drawn:
            ax.legend(loc="lower right")
        else:
            ax.text(
                0.5, 0.5, "n/a: no runs", ha="center", va="center", transform=ax.transAxes, color="dimgray"
            )
    where = "a real local testbed" if runtime == "real" else "the simulator"
    fig.suptitle(
        f"Kairos vs FIFO and Kairos' tie-breaks on {where} ({NODES} nodes x {SLOTS} slots, Q = {Q}, "
        f"W = {QUANTUM:g} trace s)" + (f"\n{workload}" if workload else ""),
        fontsize=11,
    )
    save_figure(fig, png)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executor", default="process", choices=["timer", "process", "docker"])
    ap.add_argument("--time-scale", type=float, default=12.0)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=list(SEEDS),
        help="workload seeds (default 1 2 3); the first's runs make the plot and first tables",
    )
    ap.add_argument("--force", action="store_true", help="re-run the replays whose results exist")
    ap.add_argument("--mean-gap", type=float, default=60.0)
    ap.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    ap.add_argument("--runtimes", nargs="+", default=["real", "sim"], choices=["real", "sim"])
    ap.add_argument("--no-sweep", action="store_true", help="skip the simulator load sweep")
    ap.add_argument("--report-only", action="store_true",
                    help="rebuild the tables and plot from the result folders already in --out")  # fmt: skip
    ap.add_argument("--out", type=Path, default=Path("experiments/results/kairos_real"))
    args = ap.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    runs: dict[int, tuple[Stats, Stats]] = {}
    loads: dict[int, float] = {}
    for seed in args.seeds:
        trace = trace_file(args.out, seed)
        if not (args.report_only and trace.exists()):
            write_trace(table41_jobs(args.jobs, seed=seed, mean_gap=args.mean_gap), trace)
        tjobs = read_trace(trace)
        durations = [tj.durations for tj in tjobs]
        cats = categories_of(trace)
        loads[seed] = sum(map(math.fsum, durations)) / (NODES * SLOTS * args.jobs * args.mean_gap)
        stats: Stats = {}
        host: Stats = {}
        for runtime in ("real", "sim"):
            scale = args.time_scale if runtime == "real" else 1.0
            for policy in POLICIES:
                folder = run_folder(args.out, runtime, policy, seed)
                info = folder / "host.json"
                wanted = not args.report_only and runtime in args.runtimes and policy in args.policies
                if wanted and (args.force or not (folder / "summary.json").exists()):
                    print(f"seed {seed}: {runtime} {policy} ...", flush=True)
                    info.parent.mkdir(parents=True, exist_ok=True)
                    run_info = replay(trace, folder, policy, runtime, args.executor, scale)
                    info.write_text(json.dumps(run_info, indent=2) + "\n")
                if not (folder / "summary.json").exists():
                    continue
                host[f"{runtime}:{policy}"] = json.loads(info.read_text()) if info.exists() else {}
                stats[f"{runtime}:{policy}"] = job_stats(folder, durations, cats, scale)
        runs[seed] = (stats, host)
    swept = {} if args.no_sweep else sweep([60.0, 75.0, 90.0, 120.0], [1, 2, 3, 4, 5], args.out)
    for f in args.out.glob("sweep-*.tr"):
        f.unlink()
    text = tables(args, runs, swept, loads)
    (args.out / "kairos_real.md").write_text(text)
    stats = runs[args.seeds[0]][0]
    main_runtime = "real" if any(k.startswith("real:") for k in stats) else "sim"
    shown_scale = args.time_scale if main_runtime == "real" else 1.0
    workload = (f"Table 4.1 workload: {args.jobs} jobs (seed {args.seeds[0]}), Poisson arrivals of mean "
                f"{args.mean_gap:g} trace s, time scale {shown_scale:g}")  # fmt: skip
    plot(stats, args.out / "kairos_real.png", main_runtime, workload)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
