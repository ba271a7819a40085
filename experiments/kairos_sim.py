"""Kairos normalized to Eagle on the bundled Google sample, simulated (thesis §4.6, Figure 4.8).

    python experiments/kairos_sim.py [--nodes 5000 5500 6500 8000] [--baseline eagle] [--out DIR]
    python experiments/kairos_sim.py --report-only     # the report from the saved runs
    python -m aviary.experiments.kairos_sim --from-sweep results/sweeps   # from `aviary sweep` cells

Every run is ``aviary replay --runtime sim`` of the whole bundled 10,000-job Google sample at its own
arrival times (time scale 1, no task merging), on single-slot nodes as in the thesis' simulations.
Kairos uses Q = 2, W = 10,000 s and a starvation guard after 3 missed quanta (§4.6.2); the baseline
runs with its own defaults and 10 distributed schedulers, exactly as in ``hawk_eagle_sim.py``, whose
results (``experiments/results/hawk_eagle_sim/<baseline>-<nodes>/summary.json``) are reused when their
settings match (``--no-reuse`` re-runs them). The thesis simulated 15,000-23,000 nodes with the whole
Google trace; the bundled sample keeps about 4,700 single-slot nodes busy, so 5,000-8,000 nodes span a
similar range of loads (~94 % down to ~59 % offered load).

Writes ``DIR/kairos_sim.md`` (short and long p50/p90/p99 of Kairos divided by the baseline's, the raw
values and each run's utilization) and ``DIR/kairos_sim.png`` (the bars of Figure 4.8), and keeps each
run's ``summary.json`` and ``jobs.csv`` under ``DIR/<policy>-<nodes>/`` (``jobs.csv``, 10,000 rows, is
not committed; it feeds the measurements of the report). The report also has, for each size, an
instrumented Kairos run (the central queue, when short jobs leave it, suspensions of long tasks by
task size: ``DIR/kairos-<nodes>/measure.json``, ``--force-measure`` repeats it), a control without the
sample's burst (both policies with Poisson arrivals at the sample's mean load on 8,000 and 5,000 nodes,
``DIR/<policy>-<nodes>-poisson/``) and a discussion of where the numbers agree with the thesis.
If the baseline policy is not registered (Eagle lands with its own issue), the script says so and
uses ``sparrow`` instead.

``--from-sweep DIR`` runs nothing: the tables, the measurements from ``jobs.csv``, the controls and the
plot come from the cells of ``aviary sweep experiments/sweeps/kairos_sim*.toml`` under DIR
(``DIR/<spec name>/<cell>/``; the sweeps' default DIR: ``results/sweeps``); the instrumented runs are
not sweep cells (they need the simulator's observer hook), so their sections read the ``measure.json``
the script saved under ``--out`` or say they are absent.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from aviary.common.results import jobs_rows
from aviary.experiments.hawk_eagle_sim import busy_load
from aviary.experiments.runs import read_summary
from aviary.experiments.sweep_cells import from_sweep_flag
from aviary.experiments.tables import ratio
from aviary.launch.cli.main import main as aviary
from aviary.launch.flags.parser import BUNDLED_TRACE
from aviary.launch.policies.registry import POLICIES

KAIROS = ["--kairos-q", "2", "--quantum", "10000", "--starvation-quanta", "3"]
BASELINE_FLAGS = ["--schedulers", "10"]  # as experiments/hawk_eagle_sim.py
HAWK_EAGLE = Path(__file__).resolve().parent / "results" / "hawk_eagle_sim"
SAME = ("trace", "time_scale", "load", "keep_arrivals", "seed", "start", "schedulers", "executor", "params")
BUSY_NODES = 4704  # single-slot nodes the sample keeps busy at its own arrival times (traces/README.md)
PCTS = ("p50", "p90", "p99")


def run_folder(out: Path, policy: str, nodes: int, load: float | None = None) -> Path:
    """Where one run's results go: the sample's own arrival times, or Poisson ones."""
    return out / (f"{policy}-{nodes}" if load is None else f"{policy}-{nodes}-poisson")


SPECS = ("kairos_sim", "kairos_sim_poisson_8000", "kairos_sim_poisson_5000")
"""The sweep specs (experiments/sweeps/) holding these runs; ``--from-sweep DIR`` reads their cells."""
FROM_SWEEP: Path | None = None
"""Where the report reads the runs from: ``None``, the script's own folders (``--out``), or the folder of
``aviary sweep`` runs of :data:`SPECS` (``DIR/<spec name>/<cell>/``)."""


def spec_policy(policy: str) -> str:
    """A run's policy and flags as a sweep spec's policy value (``kairos`` ->
    ``kairos:kairos_q=2,quantum=10000,starvation_quanta=3``, ``eagle`` -> ``eagle:schedulers=10``)."""
    from aviary.experiments.sweep_cells import policy_value

    return policy_value(policy, KAIROS if policy == "kairos" else BASELINE_FLAGS)


def folder(out: Path, policy: str, nodes: int, load: float | None = None) -> Path | None:
    """The results folder of one run (None: no finished sweep cell has it): :func:`run_folder`, or with
    :data:`FROM_SWEEP` the cell of the same policy, size and arrivals (a Poisson control's load as its
    spec writes it, to 4 decimals)."""
    if FROM_SWEEP is None:
        return run_folder(out, policy, nodes, load)
    from aviary.experiments.sweep_cells import find

    arrivals = "trace" if load is None else round(load, 4)
    return find(SPECS, FROM_SWEEP, policy=spec_policy(policy), nodes=nodes, load=arrivals)


def load_summary(out: Path, policy: str, nodes: int, load: float | None = None) -> dict[str, Any] | None:
    """One run's ``summary.json`` (None: not there)."""
    return read_summary(folder(out, policy, nodes, load))


def run(
    policy: str,
    nodes: int,
    out: Path,
    extra: list[str],
    seed: int,
    jobs: int | None,
    reuse: bool = False,
    load: float | None = None,
) -> dict[str, Any]:
    folder = run_folder(out, policy, nodes, load)
    flags = flags_for(policy, nodes, out, extra, seed, jobs, load)
    if reuse and (saved := reusable(policy, nodes, flags)) is not None:
        print(f"  reusing {HAWK_EAGLE.name}/{policy}-{nodes}", file=sys.stderr, flush=True)
        folder.mkdir(parents=True, exist_ok=True)
        saved["extra"]["reused_from"] = f"experiments/results/{HAWK_EAGLE.name}/{policy}-{nodes}"
        (folder / "summary.json").write_text(json.dumps(saved, indent=2) + "\n")
        if (rows := HAWK_EAGLE / f"{policy}-{nodes}" / "jobs.csv").exists():
            shutil.copyfile(rows, folder / "jobs.csv")
        return saved
    t0 = time.monotonic()
    code = aviary(flags)
    if code != 0:
        raise SystemExit(f"{policy} on {nodes} nodes failed (exit {code})")
    summary = json.loads((folder / "summary.json").read_text())
    summary["extra"]["experiment_wall"] = round(time.monotonic() - t0, 1)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def flags_for(
    policy: str,
    nodes: int,
    out: Path,
    extra: list[str],
    seed: int,
    jobs: int | None,
    load: float | None = None,
) -> list[str]:
    """``aviary replay`` flags of one run: the sample's own arrival times, or Poisson ones at ``load``."""
    arrivals = ["--keep-arrivals"] if load is None else ["--load", f"{load:.4f}"]
    folder = run_folder(out, policy, nodes, load)
    flags = ["replay", str(BUNDLED_TRACE), "--runtime", "sim", "--policy", policy, "--nodes", str(nodes),
             *arrivals, "--time-scale", "1", "--task-scale", "1", "--seed", str(seed), "--quiet",
             "--force", "--out", str(folder), *extra]  # fmt: skip
    if jobs is not None:
        flags += ["--jobs", str(jobs), "--start", "0"]
    return flags


def reusable(policy: str, nodes: int, flags: list[str]) -> dict[str, Any] | None:
    """The summary of ``hawk_eagle_sim.py``'s run of ``policy`` on ``nodes`` if it was made with the
    settings ``flags`` give (``task_scale`` None and 1 are the same on the simulator: no merging)."""
    path = HAWK_EAGLE / f"{policy}-{nodes}" / "summary.json"
    if not path.exists():
        return None
    from aviary.launch.flags.parser import build_parser
    from aviary.launch.replay.resolve import setup_replay

    setup = setup_replay(build_parser().parse_args(flags))
    saved = json.loads(path.read_text())
    want, got = setup.extra, saved.get("extra", {})
    same = all(
        (Path(str(want[k])).resolve() == Path(str(got.get(k))).resolve())
        if k == "trace"
        else want[k] == got.get(k)
        for k in SAME
    )
    same = same and got.get("task_scale") in (None, 1, 1.0) and want["task_scale"] in (None, 1, 1.0)
    same = same and saved.get("jobs") == len(setup.jobs) and saved.get("nodes") == nodes
    return saved if same else None


def table(results: dict[int, dict[str, dict]], baseline: str, note: str, cmd: str) -> str:
    lines = [
        f"# Kairos normalized to {baseline}: bundled Google sample, simulated (thesis §4.6, Fig. 4.8)",
        "",
        f"Regenerate: `{cmd}`",
        "",
        "Whole 10,000-job sample at its own arrival times, single-slot nodes, network delay 0.5 ms; Kairos "
        "Q = 2, W = 10,000 s, starvation guard after 3 missed quanta (for 2 W). Ratios below 1: Kairos "
        "better. *Offered load*: the sample's task-seconds over nodes x its span; *busy-part load*: the "
        "same for the jobs submitted after 60,000 s (the first 60,000 s hold 32 of the 10,000 jobs), over "
        "nodes x the time they arrive in (`hawk_eagle_sim.busy_load`): the cluster is overloaded while they "
        "arrive, then drains.",
    ]
    if note:
        lines += ["", note]
    lines += [
        "",
        "| nodes | offered load | busy-part load | class | p50 ratio | p90 ratio | p99 ratio "
        "| Kairos p50 / p90 / p99 (s) "
        f"| {baseline} p50 / p90 / p99 (s) | util. Kairos | util. {baseline} | preemptions |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for nodes, runs in results.items():
        k, b = runs["kairos"], runs[baseline]
        for cls in ("short", "long"):
            kj, bj = k["jct"][cls], b["jct"][cls]
            rs = " | ".join(f"{r:.2f}" if (r := ratio(kj[p], bj[p])) is not None else "n/a" for p in PCTS)
            kv = " / ".join(f"{kj[p]:,.0f}" for p in PCTS)
            bv = " / ".join(f"{bj[p]:,.0f}" for p in PCTS)
            lines.append(
                f"| {nodes:,} | {BUSY_NODES / nodes:.0%} | {busy_load(nodes):.2f} | {cls} | {rs} | {kv} "
                f"| {bv} | "
                f"{k['utilization']:.1%} | {b['utilization']:.1%} | {k['counters'].get('preemptions', 0):,} |"
            )
    lines += [
        "",
        "Thesis (whole Google trace, 15,000-23,000 nodes): short jobs up to 55 % better at high load, "
        "similar as the load drops; long jobs better at p50/p90 when the load is at least 50 %; long p99 "
        "11-33 % worse; same utilization.",
    ]
    return "\n".join(lines) + "\n"


def read_jobs(path: Path | None) -> dict[int, tuple[str, int, float, float]] | None:
    """job id -> (class, tasks, submit, completion time) from a ``jobs.csv``; None if it is missing."""
    if path is None or not path.exists():
        return None
    return {  # jobs_rows: the header with units or the one before
        int(r["job_id"]): (r["class"], int(r["tasks"]), float(r["submit"]), float(r["jct"] or "nan"))
        for r in jobs_rows(path)
    }


def _pct(xs: list[float], q: float) -> str:
    xs = [x for x in xs if not math.isnan(x)]
    return "n/a" if not xs else f"{float(np.percentile(xs, q)):,.0f}"


BIN = 10_000.0
LONG_BUCKETS = ((1129.532, 5_000.0), (5_000.0, 20_000.0), (20_000.0, math.inf))


def measurements(nodes: list[int], baseline: str, out: Path) -> list[str]:
    """Where the differences come from: short jobs by submission time, long jobs by mean task duration
    (from the runs' ``jobs.csv`` and the trace), for each size whose two ``jobs.csv`` exist."""
    from aviary.common.trace import read_trace

    trace = read_trace(BUNDLED_TRACE)  # job ids follow the trace's submit order
    lines: list[str] = []
    for n in nodes:
        k, b = (
            read_jobs(None if (f := folder(out, p, n)) is None else f / "jobs.csv")
            for p in ("kairos", baseline)
        )
        if k is None or b is None:
            continue
        lines += [f"### {n:,} nodes", "", "Short jobs by submission time (s since the first submission):", ""]
        lines += [f"| submitted | jobs | Kairos p50 / p90 | {baseline} p50 / p90 |", "|---|---|---|---|"]
        short = [j for j, r in k.items() if r[0] == "short"]
        first = math.floor(min(k[j][2] for j in short) / BIN) * BIN
        for lo in np.arange(first, max(k[j][2] for j in short) + 1, BIN):
            ids = [j for j in short if lo <= k[j][2] < lo + BIN]
            if ids:
                kk, bb = [k[j][3] for j in ids], [b[j][3] for j in ids]
                lines.append(
                    f"| {lo:,.0f}-{lo + BIN:,.0f} | {len(ids):,} | {_pct(kk, 50)} / {_pct(kk, 90)} | "
                    f"{_pct(bb, 50)} / {_pct(bb, 90)} |"
                )
        lines += ["", "Long jobs by the trace's mean task duration:", ""]
        lines += [
            f"| mean task duration (s) | jobs | Kairos p50 / p90 / p99 | {baseline} p50 / p90 / p99 |",
            "|---|---|---|---|",
        ]
        for lo, hi in LONG_BUCKETS:
            ids = [j for j, r in k.items() if r[0] == "long" and lo <= trace[j].mean < hi]
            kk, bb = [k[j][3] for j in ids], [b[j][3] for j in ids]
            label = f"{lo:,.0f}+" if math.isinf(hi) else f"{lo:,.0f}-{hi:,.0f}"
            lines.append(
                f"| {label} | {len(ids):,} | {' / '.join(_pct(kk, q) for q in (50, 90, 99))} | "
                f"{' / '.join(_pct(bb, q) for q in (50, 90, 99))} |"
            )
        lines.append("")
    return lines


CONTROL_NODES = (8000, 5000)


def mean_load(nodes: int) -> float:
    """The sample's task-seconds over nodes x its span (first to last submission)."""
    return 4.3993e8 / (nodes * 93_526.0)


def control_lines(out: Path, baseline: str, seed: int, nodes: int) -> list[str]:
    """The control without the burst: both policies on ``nodes`` with Poisson arrivals at the sample's
    mean offered load there (runs kept under ``DIR/<policy>-<nodes>-poisson/``, repeated only if
    missing)."""
    runs = {}
    load = mean_load(nodes)
    for policy, extra in (("kairos", KAIROS), (baseline, BASELINE_FLAGS)):
        if (saved := load_summary(out, policy, nodes, load)) is not None:
            runs[policy] = saved
        elif FROM_SWEEP is not None:
            return [
                f"### Control: Poisson arrivals at the sample's mean load ({load:.2f}), {nodes:,} nodes",
                "",
                f"Absent: no finished cell of {policy} in `{FROM_SWEEP.name}/kairos_sim_poisson_{nodes}/`.",
                "",
            ]
        else:
            print(f"{policy} on {nodes} nodes, Poisson arrivals ...", file=sys.stderr, flush=True)
            runs[policy] = run(policy, nodes, out, extra, seed, None, load=load)
    k, b = runs["kairos"], runs[baseline]
    lines = [
        f"### Control: Poisson arrivals at the sample's mean load ({load:.2f}), {nodes:,} nodes",
        "",
        "| class | p50 ratio | p90 ratio | p99 ratio | Kairos p50 / p90 / p99 (s) "
        f"| {baseline} p50 / p90 / p99 (s) |",
        "|---|---|---|---|---|---|",
    ]
    for cls in ("short", "long"):
        kj, bj = k["jct"][cls], b["jct"][cls]
        rs = " | ".join(f"{r:.2f}" if (r := ratio(kj[p], bj[p])) is not None else "n/a" for p in PCTS)
        kv = " / ".join(f"{kj[p]:,.0f}" for p in PCTS)
        bv = " / ".join(f"{bj[p]:,.0f}" for p in PCTS)
        lines.append(f"| {cls} | {rs} | {kv} | {bv} |")
    return [*lines, ""]


def measure_kairos(nodes: int, seed: int, jobs_limit: int | None = None) -> dict[str, Any]:
    """One more Kairos run on ``nodes``, instrumented: the central queue every 1,000 s, when each task
    left it, and every suspension of every task (seen through the simulator's observer hook). Returns
    aggregates for :func:`kairos_lines`."""
    from aviary.central.kairos import KairosCentralCore
    from aviary.common.core import Core
    from aviary.common.effects import Resume, Suspend
    from aviary.common.frontend import FrontendCore
    from aviary.common.messages import PlaceTask
    from aviary.common.trace import read_trace
    from aviary.launch.drivers.sim import Simulator
    from aviary.launch.flags.parser import build_parser
    from aviary.launch.policies.registry import build_core, get_policy
    from aviary.launch.replay.resolve import setup_replay

    flags = flags_for("kairos", nodes, Path("/nonexistent"), KAIROS, seed, jobs_limit)
    setup = setup_replay(build_parser().parse_args(flags))
    cluster, jobs = setup.cluster, setup.jobs
    cls = {j.job_id: j.cls for j in jobs}
    submit = {j.job_id: j.submit for j in jobs}
    placed: dict[tuple[int, int], float] = {}
    stops: dict[tuple[int, int], float] = {}
    suspended: dict[tuple[int, int], list[float]] = {}  # task -> [suspensions, seconds suspended]
    cores = [build_core(spec, cluster) for spec in cluster.processes if spec.role != "frontend"]
    central = next(c for c in cores if c.role != "node")
    if not isinstance(central, KairosCentralCore):
        raise TypeError(f"measure_kairos: expected Kairos's central core, got {type(central).__name__}")

    def observe(now: float, core: Core, _input: tuple[Any, ...], effects: list[Any]) -> None:
        """What the dispatcher placed and what the nodes suspended (the simulator's observer hook)."""
        if core is central:
            for e in effects:
                if type(getattr(e, "msg", None)) is PlaceTask:
                    placed[(e.msg.job_id, e.msg.task_index)] = now
        elif core.role == "node":
            for e in effects:
                k = type(e)
                if k is Suspend:
                    stops[e.task_id] = now
                    suspended.setdefault(e.task_id, [0, 0.0])[0] += 1
                elif k is Resume and e.task_id in stops:
                    suspended[e.task_id][1] += now - stops.pop(e.task_id)

    samples: list[tuple[float, int, int]] = []

    def sample(frontend: Any, now: float) -> None:
        if not samples or now >= samples[-1][0] + 1_000.0:
            q = central.queue
            samples.append((now, len(q), sum(1 for j, _ in q if cls[j] == "short")))

    frontend = FrontendCore(cluster.frontend.name, jobs, get_policy(cluster.policy).route(cluster))
    Simulator([*cores, frontend], net_delay=setup.net_delay, observer=observe).run(
        frontend=frontend, progress=sample, progress_every=5_000
    )

    def finish(job_id: int) -> float:
        at = frontend.times[job_id].finish
        if at is None:
            raise RuntimeError(f"measure_kairos: job {job_id} never finished on {nodes} nodes")
        return at

    trace = read_trace(BUNDLED_TRACE)
    out: dict[str, Any] = {"nodes": nodes, "queue": [], "short_wait": [], "long": []}
    first = 60_000.0
    for lo in np.arange(first, 100_000.0 + 1, BIN):
        qs = [(q, sq) for t, q, sq in samples if lo <= t < lo + BIN]
        ids = [j.job_id for j in jobs if j.cls == "short" and lo <= j.submit < lo + BIN]
        # a short job's time in the central queue: until its last task left it
        waits = [max(placed[(j, i)] for i in range(len(jobs[j].durations))) - submit[j] for j in ids]
        done = [finish(j) - submit[j] for j in ids]
        out["queue"].append(
            [float(lo), max((q for q, _ in qs), default=0), max((sq for _, sq in qs), default=0)]
        )
        out["short_wait"].append(
            [
                float(lo),
                len(ids),
                float(np.median(waits)) if ids else None,
                float(np.median(done)) if ids else None,
            ]
        )
    for lo, hi in LONG_BUCKETS:
        tasks = [
            (j.job_id, i)
            for j in jobs
            if j.cls == "long" and lo <= trace[j.job_id].mean < hi
            for i in range(j.tasks)
        ]
        n = len(tasks)
        susp = [suspended.get(t, [0, 0.0]) for t in tasks]
        dur = [jobs[j].durations[i] for j, i in tasks]
        out["long"].append(
            [
                lo,
                hi,
                n,
                sum(x[0] for x in susp) / max(1, n),
                sum(x[1] for x in susp) / max(1e-9, sum(dur)),
                sum(1 for x in susp if x[0]) / max(1, n),
            ]
        )
    short_tasks = [(j.job_id, i) for j in jobs if j.cls == "short" for i in range(j.tasks)]
    out["short_suspended"] = sum(1 for t in short_tasks if t in suspended) / max(1, len(short_tasks))
    return out


def kairos_lines(m: dict[str, Any]) -> list[str]:
    lines = [
        f"Kairos on {m['nodes']:,} nodes, instrumented run: the central FIFO queue, when short jobs left it, "
        "and the suspensions of long tasks:",
        "",
        "| submitted / time (s) | short jobs | median time until the job's last task left the central queue "
        "| median completion time | most tasks in the central queue | of them short |",
        "|---|---|---|---|---|---|",
    ]
    for (lo, n, wait, done), (_, q, sq) in zip(m["short_wait"], m["queue"], strict=True):
        w = "n/a" if wait is None else f"{wait:,.0f}"
        d = "n/a" if done is None else f"{done:,.0f}"
        lines.append(f"| {lo:,.0f}-{lo + BIN:,.0f} | {n:,} | {w} | {d} | {q:,} | {sq:,} |")
    lines += [
        "",
        "| long jobs, mean task duration (s) | tasks | suspensions per task | time suspended / task-seconds "
        "| tasks suspended at least once |",
        "|---|---|---|---|---|",
    ]
    for lo, hi, n, per, frac, once in m["long"]:
        label = f"{lo:,.0f}+" if math.isinf(hi) else f"{lo:,.0f}-{hi:,.0f}"
        lines.append(f"| {label} | {n:,} | {per:.1f} | {frac:.2f} | {once:.0%} |")
    lines += ["", f"Short tasks suspended at least once: {m['short_suspended']:.1%}.", ""]
    return lines


def plot(results: dict[int, dict[str, dict]], baseline: str, png: Path) -> None:
    """Figure 4.8's bars: Kairos' p50/p90/p99 over the baseline's per size, short and long jobs (format
    of ``png``'s extension; a log axis when the ratios span orders of magnitude, ``n/a`` when missing)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from aviary.launch.results.compare import ratio_bars, save_figure

    fig = Figure(figsize=(11, 4.6), layout="constrained")
    FigureCanvasAgg(fig)
    nodes = list(results)
    for i, cls in enumerate(("short", "long")):
        ax = fig.add_subplot(1, 2, i + 1)
        series = {
            p: [
                ratio(results[n]["kairos"]["jct"][cls][p], results[n][baseline]["jct"][cls][p]) for n in nodes
            ]
            for p in PCTS
        }
        log = ratio_bars(ax, series, [f"{n:,}" for n in nodes])
        ax.set_xlabel("single-slot nodes")
        ax.set_ylabel(f"Kairos JCT / {baseline.capitalize()} JCT" + (" (log scale)" if log else ""))
        ax.set_title(f"({'ab'[i]}) {cls} jobs")
    fig.legend(*fig.axes[0].get_legend_handles_labels(), title="percentile", loc="outside right upper")
    first = next(iter(results.values()))["kairos"]
    extra = first.get("extra") or {}
    arrivals = "at their own arrival times" if extra.get("keep_arrivals") else f"at load {extra.get('load')}"
    fig.suptitle(
        f"Kairos normalized to {baseline.capitalize()} (below 1 is better; thesis Fig. 4.8), simulated\n"
        f"bundled Google sample: {first.get('jobs', '?'):,} jobs {arrivals}, time scale "
        f"{extra.get('time_scale', 1):g}, seed {extra.get('seed', '?')}",
        fontsize=11,
    )
    save_figure(fig, png)


DISCUSSION = """## Discussion: where this agrees with the thesis and where it does not

No tuning: Kairos and Eagle run with the thesis' parameters (§4.6.2, §3.5), and the numbers above are
measured on the same cores as every other run. Against Figure 4.8:

- **Short p90/p99: agree.** Kairos is 0.05-0.67 of Eagle (thesis: up to 55 % better at high load).
  Eagle confines short jobs to its 17 % partition while long work covers the general partition (the
  thesis says so in §4.6.3; measured in `../hawk_eagle_sim.md`, issue 4), Kairos runs them anywhere
  and lets them preempt long tasks: only 2.2-4.7 % of the short tasks are ever suspended.
- **Short p50 at 5,000-6,500 nodes: disagree (1.38-3.27), because of the burst.** A Kairos short job
  waits almost only in the central FIFO queue, where LAS cannot help: on 5,000 nodes the median short
  job submitted between 90,000 and 100,000 s waits 24,525 s there of its 24,630 s, and the queue holds
  up to 121,000 tasks (97,000 of them short) while the burst arrives, since a node takes at most
  N + Q = 3 tasks. Eagle's short partition is empty when the burst starts, so early-burst and one-task
  jobs finish in minutes (its p50 for jobs submitted at 60,000-70,000 s is 290 s against Kairos'
  6,949 s), while the rest wait much longer than in Kairos. At 8,000 nodes the central queue peaks at
  11,000 tasks and short p50 is better (0.74). Control without the burst (Poisson arrivals at the
  sample's mean load): Kairos' short jobs are better at every percentile, 0.89 / 0.23 / 0.15 at load
  0.94 on 5,000 nodes and 0.98 / 0.91 / 0.81 at 0.59 on 8,000, as in the thesis.
- **Long p50: agree** (0.59-0.85 on the trace; 0.49 with Poisson arrivals at load 0.94). Jobs of
  1,130-5,000 s mean tasks (750 of the 905 long jobs) gain from interleaving, as the thesis explains.
- **Long p90: disagree (1.71-1.98; thesis: better when the load is at least 50 %), and not because
  of the burst** (Poisson: 1.85 at load 0.94, 1.26 at 0.59). The top decile is dominated by the 125 jobs whose
  mean task lasts 5,000-20,000 s: Kairos' median for them is 1.9-2.8x Eagle's (44,646 s against 23,487 s
  on 5,000 nodes). The instrumented runs show why: each of their tasks is suspended 7.5-10.9 times on
  average and spends 1.8-2.4x its own duration suspended (71-74 % of them are suspended at least
  once): every task dispatched to a busy node preempts the running task with the most attained service
  (~302,000 arrival preemptions per run), and such a task only resumes when no younger task is there
  or when the starvation guard lets it run after 3 missed quanta of 10,000 s. Tasks of 20,000 s and
  more reach the guard and run through it (suspended 0.3-0.4x their duration); tasks under 5,000 s are
  rarely hit (9-17 % suspended). In Eagle, long tasks are never preempted and short tasks never
  queue in front of them, so this middle group does much better there. We have not found why the
  thesis' simulation does not show this; the bundled 10,000-job sample (26 hours) is not the whole
  29-day trace, and the thesis does not report the per-size breakdown that would tell.
- **Long p99: same direction, larger** (1.32-1.86 on the trace, 1.15-1.99 with Poisson arrivals;
  thesis: 11-33 % worse): the longest jobs (20,000 s+ tasks) finish later with Kairos (p99 of that
  group 336,000-391,000 s against 303,000-316,000 s), which also lengthens the makespan, hence the
  lower utilization column (task-seconds over nodes x makespan; 13-20 % against 14-22 %).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[5000, 5500, 6500, 8000])
    ap.add_argument("--baseline", default="eagle")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=None, help="first N jobs only (quick checks)")
    ap.add_argument(
        "--no-reuse", action="store_true", help="re-run the baseline even if hawk_eagle_sim has it"
    )
    ap.add_argument("--report-only", action="store_true", help="the report from the saved summaries")
    ap.add_argument("--force-measure", action="store_true", help="repeat the instrumented Kairos runs")
    ap.add_argument("--out", type=Path, default=Path("experiments/results/kairos_sim"))
    from_sweep_flag(
        ap, "kairos_sim*", "the report and plot", "; the instrumented runs' measure.json still from --out"
    )
    args = ap.parse_args(argv)
    global FROM_SWEEP
    FROM_SWEEP = args.from_sweep.resolve() if args.from_sweep else None
    if FROM_SWEEP is not None:
        args.report_only = True
    baseline, note = args.baseline, ""
    if baseline not in POLICIES:
        note = f"Policy `{baseline}` is not registered in this checkout: the baseline is `sparrow` instead."
        print(note, file=sys.stderr)
        baseline = "sparrow"
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict[str, dict]] = {}
    for nodes in args.nodes:
        results[nodes] = {}
        for policy, extra in (("kairos", KAIROS), (baseline, BASELINE_FLAGS)):
            if FROM_SWEEP is not None:
                if (saved := load_summary(args.out, policy, nodes)) is not None:
                    results[nodes][policy] = saved
                continue
            if args.report_only:
                results[nodes][policy] = json.loads(
                    (args.out / f"{policy}-{nodes}" / "summary.json").read_text()
                )
                continue
            print(f"{policy} on {nodes} nodes ...", file=sys.stderr, flush=True)
            reuse = policy == baseline and not args.no_reuse
            results[nodes][policy] = run(policy, nodes, args.out, extra, args.seed, args.jobs, reuse)
    if FROM_SWEEP is not None:
        missing = [n for n, runs in results.items() if len(runs) < 2]
        for n in missing:
            print(
                f"{n:,} nodes: no finished sweep cell of Kairos or {baseline} under {FROM_SWEEP}",
                file=sys.stderr,
            )
            del results[n]
        if not results:
            print(
                f"kairos_sim: error: no finished cells of {', '.join(SPECS)} under {FROM_SWEEP}",
                file=sys.stderr,
            )
            return 2
    cmd = " ".join(["python experiments/kairos_sim.py", *[a for a in sys.argv[1:] if a != "--report-only"]])
    if FROM_SWEEP is not None:
        specs = f"experiments/sweeps/{{{','.join(SPECS)}}}.toml"
        given = sys.argv[1:] if argv is None else argv
        cmd = f"aviary sweep {specs}`, then `python -m aviary.experiments.kairos_sim {' '.join(given)}"
    text = table(results, baseline, note, cmd)
    found = measurements(list(results), baseline, args.out)
    if args.jobs is None:
        for n in CONTROL_NODES:
            if n in results:
                found += control_lines(args.out, baseline, args.seed, n)
    if args.jobs is None:
        for n in results:
            path = args.out / f"kairos-{n}" / "measure.json"
            if FROM_SWEEP is not None and not path.exists():  # runs nothing, not even with --force-measure
                found += [
                    f"Kairos on {n:,} nodes, instrumented run: absent (`{path}` not found; the instrumented "
                    "runs are not sweep cells: run the script without --from-sweep to make them).",
                    "",
                ]
                continue
            if not path.exists() or (args.force_measure and FROM_SWEEP is None):
                print(f"kairos on {n} nodes, instrumented ...", file=sys.stderr, flush=True)
                path.write_text(json.dumps(measure_kairos(n, args.seed)) + "\n")
            found += kairos_lines(json.loads(path.read_text()))
    if found:
        text += "\n## Measurements\n\n" + "\n".join(found)
    if baseline == "eagle" and args.jobs is None:
        text += "\n" + DISCUSSION
    (args.out / "kairos_sim.md").write_text(text)
    plot(results, baseline, args.out / "kairos_sim.png")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
