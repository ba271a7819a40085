"""The runs of :mod:`aviary.experiments.kairos_sim`: Kairos' and the baseline's flags, each run's folder
(or, with ``FROM_SWEEP``, the ``aviary sweep`` cell that holds it), running one or reusing
``hawk_eagle_sim``'s, and the Poisson controls without the sample's burst."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aviary.common.results import jobs_rows
from aviary.experiments.runs import read_summary, seeded
from aviary.launch.cli.main import main as aviary
from aviary.launch.flags.parser import BUNDLED_TRACE

KAIROS = ["--kairos-q", "2", "--quantum", "10000", "--starvation-quanta", "3"]
BASELINE_FLAGS = ["--schedulers", "10"]  # as experiments/hawk_eagle_sim.py
HAWK_EAGLE = Path(__file__).resolve().parent.parent / "results" / "hawk_eagle_sim"
SAME = ("trace", "time_scale", "load", "keep_arrivals", "seed", "start", "schedulers", "executor", "params")
PCTS = ("p50", "p90", "p99")
SEEDS = (0, 1, 2)
"""The seeds of every run (``--seeds``): seed 0's folders keep their names, seed S's end in ``-sS``."""


def run_folder(out: Path, policy: str, nodes: int, load: float | None = None, seed: int = 0) -> Path:
    """Where one run's results go: the sample's own arrival times, or Poisson ones; ``-sS`` for seed
    S > 0."""
    return out / seeded(f"{policy}-{nodes}" if load is None else f"{policy}-{nodes}-poisson", seed)


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


def folder(out: Path, policy: str, nodes: int, load: float | None = None, seed: int = 0) -> Path | None:
    """The results folder of one run (None: no finished sweep cell has it): :func:`run_folder`, or with
    :data:`FROM_SWEEP` the cell of the same policy, size, arrivals and seed (a Poisson control's load as
    its spec writes it, to 4 decimals)."""
    if FROM_SWEEP is None:
        return run_folder(out, policy, nodes, load, seed)
    from aviary.experiments.sweep_cells import find

    arrivals = "trace" if load is None else round(load, 4)
    return find(SPECS, FROM_SWEEP, policy=spec_policy(policy), nodes=nodes, load=arrivals, seed=seed)


def load_summary(
    out: Path, policy: str, nodes: int, load: float | None = None, seed: int = 0
) -> dict[str, Any] | None:
    """One run's ``summary.json`` (None: not there)."""
    return read_summary(folder(out, policy, nodes, load, seed))


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
    folder = run_folder(out, policy, nodes, load, seed)
    flags = flags_for(policy, nodes, out, extra, seed, jobs, load)
    if reuse and (saved := reusable(policy, nodes, flags, seed)) is not None:
        name = seeded(f"{policy}-{nodes}", seed)
        print(f"  reusing {HAWK_EAGLE.name}/{name}", file=sys.stderr, flush=True)
        folder.mkdir(parents=True, exist_ok=True)
        saved["extra"]["reused_from"] = f"experiments/results/{HAWK_EAGLE.name}/{name}"
        (folder / "summary.json").write_text(json.dumps(saved, indent=2) + "\n")
        if (rows := HAWK_EAGLE / name / "jobs.csv").exists():
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
    folder = run_folder(out, policy, nodes, load, seed)
    flags = ["replay", str(BUNDLED_TRACE), "--runtime", "sim", "--policy", policy, "--nodes", str(nodes),
             *arrivals, "--time-scale", "1", "--task-scale", "1", "--seed", str(seed), "--quiet",
             "--force", "--out", str(folder), *extra]  # fmt: skip
    if jobs is not None:
        flags += ["--jobs", str(jobs), "--start", "0"]
    return flags


def reusable(policy: str, nodes: int, flags: list[str], seed: int = 0) -> dict[str, Any] | None:
    """The summary of ``hawk_eagle_sim.py``'s run of ``policy`` on ``nodes`` with ``seed`` (its folder:
    ``runs.seeded``) if it was made with the settings ``flags`` give (``task_scale`` None and 1 are the
    same on the simulator: no merging)."""
    path = HAWK_EAGLE / seeded(f"{policy}-{nodes}", seed) / "summary.json"
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


Pairs = list[tuple[int, dict[str, Any], dict[str, Any]]]
"""The runs of one setting: (seed, Kairos' summary, the baseline's summary) for each seed with both."""


def read_jobs(path: Path | None) -> dict[int, tuple[str, int, float, float]] | None:
    """job id -> (class, tasks, submit, completion time) from a ``jobs.csv``; None if it is missing."""
    if path is None or not path.exists():
        return None
    return {  # jobs_rows: the header with units or the one before
        int(r["job_id"]): (r["class"], int(r["tasks"]), float(r["submit"]), float(r["jct"] or "nan"))
        for r in jobs_rows(path)
    }


CONTROL_NODES = (8000, 5000)


def mean_load(nodes: int) -> float:
    """The sample's task-seconds over nodes x its span (first to last submission)."""
    return 4.3993e8 / (nodes * 93_526.0)


def control_runs(out: Path, baseline: str, seeds: Sequence[int], nodes: int, run_missing: bool) -> Pairs:
    """The control without the burst: both policies on ``nodes`` with Poisson arrivals at the sample's
    mean offered load there, for each seed of ``seeds`` (runs kept under ``DIR/<policy>-<nodes>-poisson/``,
    ``-sS`` for seed S; those missing run only with ``run_missing``, never from a sweep): the seeds with
    both runs."""
    load = mean_load(nodes)
    pairs: Pairs = []
    for seed in seeds:
        runs = {}
        for policy, extra in (("kairos", KAIROS), (baseline, BASELINE_FLAGS)):
            if (saved := load_summary(out, policy, nodes, load, seed)) is not None:
                runs[policy] = saved
            elif run_missing and FROM_SWEEP is None:
                print(
                    f"{policy} on {nodes} nodes, Poisson arrivals, seed {seed} ...",
                    file=sys.stderr,
                    flush=True,
                )
                runs[policy] = run(policy, nodes, out, extra, seed, None, load=load)
        if len(runs) == 2:
            pairs.append((seed, runs["kairos"], runs[baseline]))
    return pairs
