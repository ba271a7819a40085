"""The cells of :mod:`aviary.experiments.thesis_regime`: the variants, groups and seeds, each cell's
replay flags and folder (or, with ``FROM_SWEEP``, the ``aviary sweep`` cell that holds it), running one,
and what is derived from its ``jobs.csv`` (``derived.json``; the instrumented ``anatomy`` runs)."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aviary.experiments.runs import read_summary, seeded, timed_replay

HERE = Path(__file__).resolve().parent.parent  # experiments/
RESULTS = HERE / "results"
OUT = RESULTS / "thesis_regime"
TRACE = HERE / "traces" / "google_10k.tr"
PCT = ("p50", "p90", "p99")
KAIROS = ["--kairos-q", "2", "--quantum", "10000", "--starvation-quanta", "3"]
WINDOW = 10_000.0  # seconds: the window of the peak offered load (derived.json)

# label -> (policy, extra flags, what it is)
VARIANTS: dict[str, tuple[str, list[str], str]] = {
    "sparrow": ("sparrow", [], "Sparrow, probe ratio 2"),
    "hawk": ("hawk", ["--stealers", "all"], "Hawk, every idle node steals (§2.3.6)"),
    "hawk-general": ("hawk", ["--stealers", "general"], "Hawk, only general-partition nodes steal (§3.6.1)"),
    "eagle": ("eagle", [], "Eagle"),
    # Table 3.2 as the authors' simulator counts it: leftover probes kept (no cancel)
    "hawk-general-keep": (
        "hawk",
        ["--stealers", "general", "--cancel-probes", "off"],
        "Hawk (§3.6.1 stealing), leftover probes kept",
    ),
    "eagle-keep": ("eagle", ["--cancel-probes", "off"], "Eagle, leftover probes kept"),
    "kairos": ("kairos", KAIROS, "Kairos, Q = 2, W = 10,000 s, guard after 3 quanta (thesis §4.6.2)"),
    # Kairos controls: one setting changed at a time
    "kairos-w1000": ("kairos", [*KAIROS[:2], "--quantum", "1000", *KAIROS[4:]], "Kairos, W = 1,000 s"),
    "kairos-w100": (
        "kairos",
        [*KAIROS[:2], "--quantum", "100", *KAIROS[4:], "--heartbeat-interval", "1000"],
        "Kairos, W = 100 s (heartbeat kept at 1,000 s)",
    ),
    "kairos-w100000": ("kairos", [*KAIROS[:2], "--quantum", "100000", *KAIROS[4:]], "Kairos, W = 100,000 s"),
    "kairos-q4": ("kairos", ["--kairos-q", "4", *KAIROS[2:]], "Kairos, Q = 4 (the testbed's, §4.5.2)"),
    "kairos-q1000": (
        "kairos",
        ["--kairos-q", "1000", *KAIROS[2:]],
        "Kairos, Q = 1,000 (no admission control: the central queue empties at once)",
    ),
    "kairos-noguard": (
        "kairos",
        [*KAIROS[:4], "--starvation-quanta", "1000000"],
        "Kairos, starvation guard off (10^6 quanta)",
    ),
    "kairos-hb100": (
        "kairos",
        [*KAIROS, "--heartbeat-interval", "100"],
        "Kairos, heartbeat every 100 s (default W / 10 = 1,000 s)",
    ),
    "kairos-random": ("kairos-random", KAIROS, "Kairos, random tie-break instead of the variance (Fig. 4.6)"),
    # the baselines of §2.4.5 and §3.6.2, and the controls of Hawk vs LWL (one mechanism at a time)
    "lwl": ("lwl", [], "centralized LWL for every job on every node, no partition, no stealing (§2.4.5)"),
    "hawk-nosteal": ("hawk-nosteal", [], "Hawk without stealing (§2.4.4)"),
    "hawk-nopartition": (
        "hawk-nopartition",
        ["--stealers", "all"],
        "Hawk without the short partition (§2.4.4)",
    ),
    "hawk-nopartition-nosteal": (
        "hawk-nopartition",
        ["--steal-attempts", "0"],
        "Hawk without partition or stealing: lwl but for the short jobs, placed by Sparrow's probes",
    ),
    "dlwl": ("dlwl", [], "DLWL+SRPT (§3.6.2): 3 s heartbeats, the short partition, Eagle's threshold"),
    "eagle-nosss": ("eagle-nosss", [], "Eagle without succinct state sharing (§3.6.3)"),
    "dlwl-fifo": (
        "dlwl",
        ["--srpt-threshold", "0"],
        "DLWL with FIFO nodes (SRPT threshold 0: no entry may be bypassed)",
    ),
}
SEEDS = (0, 1, 2)
"""The seeds every cell has (``--seeds``; the sweep specs' ``seed`` axis). Seed 0's cells keep their
folders' old names (``<label>-<nodes>-<arrivals>``), seed S's are ``<label>-<nodes>-<arrivals>-s<S>``."""
TRACE_NODES = (12_500, 16_000, 20_000, 25_000)
POISSON_NODES = 12_500
LOADS = (0.5, 0.7, 0.8, 0.9, 0.95)
MAIN = ("sparrow", "hawk", "hawk-general", "eagle", "kairos")
KAIROS_CONTROLS = (
    "kairos-w1000",
    "kairos-w100",
    "kairos-w100000",
    "kairos-q4",
    "kairos-q1000",
    "kairos-noguard",
    "kairos-hb100",
    "kairos-random",
)
# Arrivals of a cell: "trace" (the sample's own times), "load0.95" (Poisson arrivals at that offered
# load, the jobs in the sample's order) or "shuffled0.95" (the same, the jobs in a seeded random order:
# SHUFFLED, a copy of the sample written by shuffled_trace()).
Cell = tuple[str, int, str]  # (label, nodes, arrivals)
GROUPS: dict[str, list[Cell]] = {
    "trace": [(v, n, "trace") for n in (12_500, 25_000) for v in MAIN],
    "kairos": [(v, 12_500, "trace") for v in KAIROS_CONTROLS]
    + [(v, POISSON_NODES, "load0.95") for v in ("kairos-q1000", "kairos-w1000")],
    "poisson": [(v, POISSON_NODES, f"load{rho:.2f}") for rho in (0.95, 0.8, 0.5, 0.9, 0.7) for v in MAIN],
    "shuffled": [(v, POISSON_NODES, f"shuffled{rho:.2f}") for rho in (0.95, 0.8) for v in ("eagle", "kairos")]
    + [
        (v, POISSON_NODES, f"shuffled{rho:.2f}")
        for rho in (0.95, 0.8)
        for v in ("sparrow", "hawk", "hawk-general")
    ],
    "trace-more": [(v, n, "trace") for n in (16_000, 20_000) for v in MAIN],
    "table32": [(v, 12_500, a) for a in ("trace", "load0.95") for v in ("hawk-general-keep", "eagle-keep")],
}
DLWL_NODES, DLWL_JOBS = 2_500, 2_000
"""The scale of the DLWL+SRPT comparison: every node heartbeats every 3 s until the last job ends (the
sample's makespan is ~330,000-394,000 s), ~1.4 G timer events on 12,500 nodes with the whole sample, hours
of simulation a cell; a fifth of the nodes and of the jobs (a seeded random sample, in the trace's
order) keeps the ratio of jobs to nodes and, with Poisson arrivals, the offered load."""
BASELINES: dict[str, list[Cell]] = {
    "baselines": [
        (v, 12_500, "trace") for v in ("lwl", "hawk-nopartition-nosteal", "hawk-nosteal", "hawk-nopartition")
    ],
    "dlwl": [
        (v, DLWL_NODES, f"load0.95-j{DLWL_JOBS}")
        for v in ("eagle", "hawk-general", "dlwl", "eagle-nosss", "dlwl-fifo")
    ],
}
"""The cells of the baselines (Hawk vs centralized LWL and its controls, Eagle vs DLWL+SRPT), run like
:data:`GROUPS`' but not (yet) cells of the sweep specs."""
# Kairos cells run once more instrumented (``anatomy``) for kairos_regime.md
ANATOMY: tuple[Cell, ...] = (
    ("kairos", 12_500, "trace"),
    ("kairos", POISSON_NODES, "load0.95"),
    ("kairos", POISSON_NODES, "shuffled0.95"),
    ("kairos-w1000", 12_500, "trace"),
)
SHUFFLED = OUT / "google_10k_shuffled.tr"  # written by shuffled_trace(), not committed


def arr_load(arr: str) -> float | None:
    """The Poisson load of arrivals ``arr`` (None: the trace's own arrival times)."""
    return None if arr == "trace" else float(arr.removeprefix("load").removeprefix("shuffled").split("-j")[0])


def arr_jobs(arr: str) -> int | None:
    """The jobs of a cell's seeded random sample (``load0.95-j2000``: 2,000), None: the whole sample."""
    return int(arr.split("-j")[1]) if "-j" in arr else None


def shuffled_trace() -> Path:
    """The bundled sample with its jobs in a seeded random order (seed 0), submit times 0, 1, 2, ... so
    that Poisson arrivals (which keep the trace's order) no longer bunch its big jobs together."""
    if not SHUFFLED.exists():
        import random

        lines = [ln.split(" ", 1)[1] for ln in TRACE.read_text().splitlines() if ln.strip()]
        random.Random(0).shuffle(lines)
        SHUFFLED.parent.mkdir(parents=True, exist_ok=True)
        SHUFFLED.write_text("".join(f"{i}.0 {ln}\n" for i, ln in enumerate(lines)))
    return SHUFFLED


def cell_name(label: str, nodes: int, arr: str, seed: int = 0) -> str:
    """The folder name of a cell under :data:`OUT`: ``eagle-12500-trace`` (seed 0),
    ``eagle-12500-trace-s1`` (seed 1)."""
    return seeded(f"{label}-{nodes}-{arr}", seed)


def cell_flags(label: str, nodes: int, arr: str, seed: int = 0) -> list[str]:
    policy, extra, _ = VARIANTS[label]
    load = arr_load(arr)
    arrivals = ["--keep-arrivals"] if load is None else ["--load", f"{load:g}"]
    if arr.startswith("shuffled"):
        arrivals.insert(0, str(SHUFFLED.relative_to(HERE.parent)))
    if (jobs := arr_jobs(arr)) is not None:
        arrivals += ["--jobs", str(jobs), "--sample", "random"]
    return ["--runtime", "sim", "--policy", policy, "--nodes", str(nodes), "--schedulers", "10",
            *arrivals, "--time-scale", "1", "--task-scale", "1", "--seed", str(seed), *extra]  # fmt: skip


def spec_policy(label: str) -> str:
    """The label's policy and flags as a sweep spec's policy value (``hawk-general`` ->
    ``hawk:stealers=general``; experiments/sweeps/thesis_regime_*.toml)."""
    from aviary.experiments.sweep_cells import policy_value

    policy, extra, _ = VARIANTS[label]
    return policy_value(policy, extra)


SPECS = tuple(f"thesis_regime_{g}" for g in ("trace", "poisson", "kairos", "kairos_poisson", "table32"))
"""The sweep specs (experiments/sweeps/) holding the cells with the jobs in the sample's order (the
shuffled ones: :data:`SHUFFLED_SPECS`); ``--from-sweep DIR`` reads their cells."""
SHUFFLED_SPECS = ("thesis_regime_shuffled",)
FROM_SWEEP: Path | None = None
"""Where the reports read the cells from: ``None``, the script's own folders (``OUT/<cell>/``), or the
folder of ``aviary sweep`` runs of the specs (``DIR/<spec name>/<cell>/``)."""


def folder(label: str, nodes: int, arr: str, seed: int = 0) -> Path | None:
    """The results folder of a cell with ``seed`` (None: no finished sweep cell has it):
    ``OUT/<cell>/``, or with :data:`FROM_SWEEP` the sweep cell of the same policy value, size, arrivals
    and seed."""
    if FROM_SWEEP is None:
        return OUT / cell_name(label, nodes, arr, seed)
    from aviary.experiments.sweep_cells import find

    load = arr_load(arr)
    names = SHUFFLED_SPECS if arr.startswith("shuffled") else SPECS
    return find(
        names,
        FROM_SWEEP,
        policy=spec_policy(label),
        nodes=nodes,
        load="trace" if load is None else load,
        seed=seed,
    )


def load_cell(label: str, nodes: int, arr: str, seed: int = 0) -> dict[str, Any] | None:
    """The cell's summary with ``seed`` if it was made with the flags this script gives it now (a sweep
    cell: if it is finished, :func:`aviary.launch.sweep.run.cell_done`)."""
    s = read_summary(folder(label, nodes, arr, seed))
    if s is None or FROM_SWEEP is not None:
        return s
    return s if s["extra"].get("cell_flags") == cell_flags(label, nodes, arr, seed) else None


def load_derived(label: str, nodes: int, arr: str, seed: int = 0) -> dict[str, Any] | None:
    """The cell's ``derived.json`` with ``seed`` (a sweep cell has none: computed from its
    ``jobs.csv``)."""
    where = folder(label, nodes, arr, seed)
    if where is not None and FROM_SWEEP is not None:
        return derived_of(where / "jobs.csv", nodes, arr) if (where / "jobs.csv").exists() else None
    path = None if where is None else where / "derived.json"
    return json.loads(path.read_text()) if path is not None and path.exists() else None


@functools.cache
def derived_of(jobs_csv: Path, nodes: int, arr: str) -> dict[str, Any]:
    """:func:`derive` once per ``jobs.csv`` (the reports read a cell's figures several times)."""
    return derive(jobs_csv, nodes, arr)


def run_cell(
    label: str, nodes: int, arr: str, out: Path = OUT, extra: Sequence[str] = (), seed: int = 0
) -> dict[str, Any]:
    """Run one cell with ``seed`` into ``out/<cell>/`` (``extra``: more replay flags, as a small check's
    ``--jobs``)."""
    folder = out / cell_name(label, nodes, arr, seed)
    flags = [*cell_flags(label, nodes, arr, seed), *extra]
    if arr.startswith("shuffled"):
        shuffled_trace()
    summary = timed_replay(flags, folder)
    summary["extra"]["cell_flags"] = flags
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    derived = derive(folder / "jobs.csv", nodes, arr)
    (folder / "derived.json").write_text(json.dumps(derived, indent=1) + "\n")
    return summary


_WORK: dict[bool, list[float]] = {}


def job_work(shuffled: bool) -> list[float]:
    """Task-seconds of every job of the sample (or of its shuffled copy), by job id (ids follow the
    trace file's submit order)."""
    if shuffled not in _WORK:
        from aviary.common.trace import read_trace

        _WORK[shuffled] = [j.task_seconds for j in read_trace(shuffled_trace() if shuffled else TRACE)]
    return _WORK[shuffled]


def pct(xs: Any, q: float) -> float | None:
    return None if len(xs) == 0 else float(np.percentile(xs, q))


def derive(jobs_csv: Path, nodes: int, arr: str) -> dict[str, Any]:
    """What the reports need beyond ``summary.json``, from the cell's ``jobs.csv``: per class the wait
    until the job's first task started (Kairos: the time its first task spent in the central queue,
    a task starts as soon as it reaches a node) and, for short jobs at or above their p90, the median
    share of their completion time spent before their first task started; and the peak offered load
    of the arrivals in any window of ``WINDOW`` seconds (task-seconds submitted over nodes x window; None
    for a random sample of the jobs)."""
    from aviary.common.results import jobs_rows

    rows = list(jobs_rows(jobs_csv))
    out: dict[str, Any] = {}
    for cls in ("short", "long"):
        rs = [r for r in rows if r["class"] == cls and r["jct"]]
        sub = np.array([float(r["submit"]) for r in rs])
        wait = np.array([float(r["first_start"]) for r in rs]) - sub
        jct = np.array([float(r["jct"]) for r in rs])
        tail = jct >= np.percentile(jct, 90)
        out[cls] = {
            "wait": {q: pct(wait, v) for q, v in (("p50", 50), ("p90", 90), ("p99", 99))},
            "tail_wait_share": pct(wait[tail] / np.maximum(jct[tail], 1e-9), 50),
            "tail_submit_p50": pct(sub[tail], 50),
        }
    submits = np.array([float(r["submit"]) for r in rows])
    out["peak_window_load"] = None  # a random sample's job ids are not the trace's
    if arr_jobs(arr) is None:
        work = job_work(arr.startswith("shuffled"))
        ids = [int(r["job_id"]) for r in rows]
        bins: dict[int, float] = {}
        for j, t in zip(ids, submits, strict=True):
            bins[int(t // WINDOW)] = bins.get(int(t // WINDOW), 0.0) + work[j]
        out["peak_window_load"] = max(bins.values()) / (nodes * WINDOW)
    out["span"] = float(submits.max() - submits.min())
    return out


def anatomy(label: str, nodes: int, arr: str) -> dict[str, Any]:
    """The cell's Kairos run once more, instrumented through the simulator's observer hook (as
    ``kairos_sim.measure_kairos`` is; nothing in the policies changes, and the run is the same as the
    cell's): for every task when it left the central queue, how often and how long it was suspended.
    Returns, for all short jobs and for those at or above their p90, what their completion time is
    made of."""
    from aviary.common.effects import Resume, Suspend
    from aviary.common.frontend import FrontendCore
    from aviary.common.messages import PlaceTask
    from aviary.launch.drivers.sim import Simulator
    from aviary.launch.flags.parser import build_parser
    from aviary.launch.policies.registry import build_core, get_policy
    from aviary.launch.replay.resolve import setup_replay

    if arr.startswith("shuffled"):
        shuffled_trace()
    flags = ["replay", *cell_flags(label, nodes, arr), "--quiet", "--force", "--out", str(OUT / "tmp")]
    setup = setup_replay(build_parser().parse_args(flags))
    cluster, jobs = setup.cluster, setup.jobs
    placed: dict[tuple[int, int], float] = {}
    stopped: dict[tuple[int, int], float] = {}
    susp: dict[tuple[int, int], list[float]] = {}  # task -> [suspensions, seconds suspended]
    gaps: list[float] = []  # every suspension of a short task: how long it lasted
    short_job = {j.job_id for j in jobs if j.cls == "short"}

    def observe(now: float, core: Any, input: tuple[Any, ...], effects: list[Any]) -> None:
        """The simulator's observer hook: placements by the dispatcher, suspensions on the nodes."""
        if core.role == "node":
            for e in effects:
                k = type(e)
                if k is Suspend:
                    stopped[e.task_id] = now
                    susp.setdefault(e.task_id, [0, 0.0])[0] += 1
                elif k is Resume and e.task_id in stopped:
                    gap = now - stopped.pop(e.task_id)
                    susp[e.task_id][1] += gap
                    if e.task_id[0] in short_job:
                        gaps.append(gap)
        elif core.role == "central" and input[0] == "message":
            for e in effects:
                if type(getattr(e, "msg", None)) is PlaceTask:
                    placed[(e.msg.job_id, e.msg.task_index)] = now

    cores = [build_core(spec, cluster) for spec in cluster.processes if spec.role != "frontend"]
    frontend = FrontendCore(cluster.frontend.name, jobs, get_policy(cluster.policy).route(cluster))
    Simulator([*cores, frontend], net_delay=setup.net_delay, observer=observe).run(frontend=frontend)

    rows = []  # short jobs: (jct, central-queue part, most suspended task's suspended time, any)
    for j in jobs:
        if j.cls != "short" or (fin := frontend.times[j.job_id].finish) is None:
            continue
        tasks = [(j.job_id, i) for i in range(j.tasks)]
        queue = max(placed[t] for t in tasks) - j.submit
        worst = max(susp.get(t, [0, 0.0])[1] for t in tasks)
        rows.append((fin - j.submit, queue, worst, any(t in susp for t in tasks), j.tasks))
    tab = np.array(rows)
    jct = tab[:, 0]
    out: dict[str, Any] = {"cell": cell_name(label, nodes, arr), "short_jct": {
        q: pct(jct, v) for q, v in (("p50", 50), ("p90", 90), ("p99", 99))}}  # fmt: skip
    masks = {"all": np.ones(len(jct), bool), "p90": jct >= np.percentile(jct, 90),
             "p99": jct >= np.percentile(jct, 99)}  # fmt: skip
    for part, m in masks.items():
        sub = tab[m]
        out[part] = {
            "jobs": int(m.sum()),
            "suspended": float(sub[:, 3].mean()),
            "queue_share": pct(sub[:, 1] / np.maximum(sub[:, 0], 1e-9), 50),
            "suspended_share": pct(sub[:, 2] / np.maximum(sub[:, 0], 1e-9), 50),
            "tasks_median": pct(sub[:, 4], 50),
        }
    g = np.array(gaps) if gaps else np.zeros(0)
    out["short_suspensions"] = {"count": len(gaps), **{q: pct(g, v) for q, v in (("p50", 50), ("p90", 90))}}
    short_tasks = sum(j.tasks for j in jobs if j.cls == "short")
    out["short_tasks_suspended"] = sum(1 for t in susp if t[0] in short_job) / max(1, short_tasks)
    return out
