"""Every policy family under faults of the network: what finishes, what is done twice, what it costs.

    python -m aviary.experiments.network_faults                 # runs what is missing (~8 min), the table
    python -m aviary.experiments.network_faults --report-only   # the table from the saved runs
    python -m aviary.experiments.network_faults --policies sparrow --seeds 0
    python -m aviary.experiments.network_faults --side          # real and simulated side by side (~80 min)

For a policy of every family, the replay ``aviary replay --policy P --jobs 200 --nodes 30 --time-scale
1000 --seed S`` (its default workload: the Google sample for the probe-based and queue-based families,
TPC-H DAGs for the multi-resource ones) runs without faults and under each fault of :data:`FAULTS`
(``--fail``'s link items, :mod:`aviary.common.netfaults`), on the simulator, seeds 0-2. For each it
keeps the summary (``experiments/results/network_faults/<policy>-<fault>-seed<S>.json``) and:

- ``finished``: jobs finished of those submitted;
- ``finished_twice``: tasks that ran to their end twice (the task table: two ``finished`` runs);
- ``dropped``: duplicates and late or unknown results the cores had to drop (their counters
  ``duplicate_*``, ``unknown_task_*``, ``late_results_ignored``): what reached a core twice;
- ``jct``: the mean job completion time over the fault-free run's of the same seed;
- ``retransmitted``: the links' retransmissions per segment put on the wire.

Writes ``experiments/results/network_faults.md`` (medians over the seeds [min, max]).

``--side``: the same faults on real processes (loopback, the timer executor) and on the simulator, side
by side, at a size real processes replay in under a minute: 100 jobs on 10 nodes, ``--time-scale 2000``
and ``--task-scale 0.1`` for the Google sample and ``--time-scale 500`` for TPC-H (about 40 replay seconds
each), partitions at 10 s and a third of the nodes ``node-[0-2]``, seed 0
(``results/network_faults_side/``, ``results/network_faults_side.md``).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from aviary.experiments.tables import over_seeds

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "results" / "network_faults"
REPORT = ROOT / "results" / "network_faults.md"
POLICIES = [
    "sparrow",
    "hawk",
    "eagle",
    "kairos",
    "fifo",
    "tetris",
    "drf",
    "carbyne",
    "graphene",
    "tetrisched",
]


def fault_table(third: str, at: str) -> dict[str, str]:
    """Each fault as ``--fail`` items, a third of the nodes ``third``, partitions from ``at`` for 10 s."""
    cut = f"cut@{at}+10s"
    return {
        "none": "",
        "loss 1 %": "*>*:drop=1%",
        "loss 5 %": "*>*:drop=5%",
        "delay 0.1-2 s, a tenth": "*>*:delay=100ms..2s/10%",
        "duplicated 1 %": "*>*:dup=1%",
        "reordered 5 %": "*>*:reorder=5%",
        "a third of the nodes cut from every scheduler, 10 s": f"{third}<>{{scheduler}}:{cut},"
        f"{third}<>{{central}}:{cut}",
        "the nodes cut from one scheduler, 10 s": f"{{node}}<>sched-0:{cut}",
        "the central cut from the frontend, 10 s": f"{{central}}<>frontend:{cut}",
        "a third of the nodes cut from the frontend, 10 s": f"{third}<>frontend:{cut}",
    }


FAULTS = fault_table("node-[0-9]", "20s")
"""Each fault as ``--fail`` items; an item naming a role the policy has not is left out (n/a if none is
left)."""
SIDE_FAULTS = fault_table("node-[0-2]", "10s")
SIDE_OUT = ROOT / "results" / "network_faults_side"
SIDE_REPORT = ROOT / "results" / "network_faults_side.md"
RUN_POLICIES = [p for p in POLICIES if p != "tetrisched"]
"""What a run replays unless told (TetriSched, a MILP a cycle, takes minutes a run: its rows say not run)."""
SIDE_POLICIES = RUN_POLICIES
SIDE_JOBS, SIDE_NODES = 100, 10
SIDE_TASK_SCALE = 0.1
"""The side-by-side replays' task scale for the Google sample: what a real replay of these 100 jobs on 10
nodes picks by itself (``launch/replay/jobs.py``, ``flat_jobs``; 350 tasks), given to both runtimes (a
simulated one merges none by default: 2,806 tasks)."""
DROPPED = ("duplicate_", "unknown_task_", "late_results_ignored")


def slug(fault: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in fault).strip("-").replace("--", "-")


def items(policy: str, fault: str, table: dict[str, str] = FAULTS, nodes: int = 30) -> list[str] | None:
    """The fault's items that name processes ``policy``'s testbed has (None: none left)."""
    if not table[fault]:
        return []
    from aviary.launch.policies.registry import POLICIES as REGISTRY
    from aviary.launch.policies.registry import policy_cluster

    cluster = policy_cluster(REGISTRY[policy], nodes=nodes, schedulers=2, bind_ports=False)
    names = {p.name for p in cluster.processes}
    roles = {p.role for p in cluster.processes}

    def present(side: str) -> bool:
        return side[1:-1] in roles if side.startswith("{") else side in names or "*" in side or "[" in side

    kept = []
    for item in table[fault].split(","):
        link = item.split(":")[0].replace("<>", ">")
        if all(present(side) for side in link.split(">")):
            kept.append(item)
    return kept or None


def run(policy: str, fault: str, seed: int, saved_only: bool = False) -> dict[str, Any] | None:
    """One replay (or its saved figures); None when the fault does not apply to the policy (or, with
    ``saved_only``, when it was not run)."""
    path = OUT / f"{policy}-{slug(fault)}-seed{seed}.json"
    if path.exists():
        return json.loads(path.read_text())
    fail = items(policy, fault)
    if fail is None or saved_only:
        return None
    flags = ["--runtime", "sim", "--jobs", "200", "--nodes", "30", "--time-scale", "1000"]
    return measure(path, policy, fault, fail, seed, flags)


def run_side(
    policy: str, fault: str, seed: int, runtime: str, saved_only: bool = False
) -> dict[str, Any] | None:
    """One replay of the side-by-side table (or its saved figures; None as :func:`run`)."""
    from aviary.launch.policies.registry import POLICIES as REGISTRY

    path = SIDE_OUT / f"{runtime}-{policy}-{slug(fault)}-seed{seed}.json"
    if path.exists():
        return json.loads(path.read_text())
    fail = items(policy, fault, SIDE_FAULTS, SIDE_NODES)
    if fail is None or saved_only:
        return None
    flags = ["--runtime", runtime, "--jobs", str(SIDE_JOBS), "--nodes", str(SIDE_NODES), "--yes"]
    if REGISTRY[policy].dag:  # TPC-H: about 40 replay seconds, as the Google sample's below
        flags += ["--time-scale", "500"]
    else:  # the task scale a real replay picks by itself, on both: the same jobs
        flags += ["--time-scale", "2000", "--task-scale", str(SIDE_TASK_SCALE)]
    return measure(path, policy, fault, fail, seed, flags)


def measure(
    path: Path, policy: str, fault: str, fail: list[str], seed: int, flags: list[str]
) -> dict[str, Any]:
    """Replay with ``flags`` under ``fail``, and save its figures at ``path``."""
    from aviary.launch.cli.main import main

    folder = Path(tempfile.mkdtemp(prefix="aviary-netfaults-"))
    flags = [
        "replay",
        "--policy",
        policy,
        *flags,
        "--seed",
        str(seed),
        "--quiet",
        "--out",
        str(folder / "run"),
    ]
    if fail:
        flags += ["--fail", ",".join(fail)]
    main(flags)
    summary = json.loads((folder / "run" / "summary.json").read_text())
    runs: Counter[tuple[str, str]] = Counter()
    with (folder / "run" / "tasks.csv").open() as f:
        for row in csv.DictReader(f):
            if row["outcome"] == "finished":
                runs[row["job_id"], row["task"]] += 1
    shutil.rmtree(folder)
    counters = summary.get("counters", {})
    links = summary["extra"].get("links", {})
    figures = {
        "policy": policy,
        "fault": fault,
        "fail": fail,
        "seed": seed,
        "jobs": summary["jobs"],
        "finished": summary["finished"],
        "finished_twice": sum(1 for n in runs.values() if n > 1),
        "dropped": sum(v for k, v in counters.items() if k.startswith(DROPPED)),
        "mean_jct": summary["jct"]["all"]["mean"],
        "segments": links.get("segments", 0),
        "retransmitted": links.get("retransmitted", 0),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=1) + "\n")
    return figures


def report(policies: list[str], seeds: list[int]) -> str:
    lines = [
        "# Every policy family under faults of the network (simulated)",
        "",
        "Regenerate: `python -m aviary.experiments.network_faults` (its docstring says what each column is).",
        f"200 jobs on 30 nodes, `--time-scale 1000`, seeds {', '.join(map(str, seeds))}; medians "
        "over the seeds [min, max].",
        "",
        "| policy | fault | jobs finished | tasks finished twice | dropped by the cores "
        "| mean JCT / fault-free | retransmitted / segment |",
        "|---|---|---|---|---|---|---|",
    ]
    for policy in policies:
        base = {s: run(policy, "none", s, True) for s in seeds}
        for fault in FAULTS:
            got = [(s, run(policy, fault, s, True)) for s in seeds]
            rows = [(s, r) for s, r in got if r is not None]
            if not rows:
                text = "n/a" if items(policy, fault) is None else "not run"
                lines.append(f"| {policy} | {fault} | {text} | | | | |")
                continue
            finished = over_seeds([r["finished"] / r["jobs"] * 100 for _, r in rows], "{:.0f}") + " %"
            twice = over_seeds([r["finished_twice"] for _, r in rows], "{:.0f}")
            dropped = over_seeds([r["dropped"] for _, r in rows], "{:.0f}")
            jct = over_seeds([r["mean_jct"] / b["mean_jct"] for s, r in rows if (b := base[s])])
            share = over_seeds([r["retransmitted"] / max(1, r["segments"]) for _, r in rows], "{:.3f}")
            lines.append(f"| {policy} | {fault} | {finished} | {twice} | {dropped} | {jct} | {share} |")
    return "\n".join(lines) + "\n"


def side_report(policies: list[str], seed: int) -> str:
    """The side-by-side table: each figure real / simulated."""
    lines = [
        "# Every policy family under faults of the network, real and simulated",
        "",
        "Regenerate: `python -m aviary.experiments.network_faults --side` (its docstring says what each "
        f"column is). {SIDE_JOBS} jobs on {SIDE_NODES} nodes, `--time-scale` 2000 and `--task-scale` "
        f"{SIDE_TASK_SCALE:g} (Google sample) or `--time-scale` 500 (TPC-H), partitions at 10 s, "
        f"seed {seed}; each cell real / simulated.",
        "",
        "| policy | fault | jobs finished | tasks finished twice | dropped by the cores "
        "| mean JCT / fault-free | retransmitted / segment |",
        "|---|---|---|---|---|---|---|",
    ]
    for policy in policies:
        base = {rt: run_side(policy, "none", seed, rt, True) for rt in ("real", "sim")}
        for fault in SIDE_FAULTS:
            got = {rt: run_side(policy, fault, seed, rt, True) for rt in ("real", "sim")}
            if not any(got.values()):
                text = "n/a" if items(policy, fault, SIDE_FAULTS, SIDE_NODES) is None else "not run"
                lines.append(f"| {policy} | {fault} | {text} | | | | |")
                continue

            def both(figure: Any, got: dict[str, Any] = got, base: dict[str, Any] = base) -> str:
                return " / ".join(
                    "-" if (r := got[rt]) is None else figure(r, base[rt]) for rt in ("real", "sim")
                )

            def jct(r: dict[str, Any], b: dict[str, Any] | None) -> str:
                return "-" if b is None else f"{r['mean_jct'] / b['mean_jct']:.2f}"

            finished = both(lambda r, b: f"{r['finished']}/{r['jobs']}")
            twice = both(lambda r, b: str(r["finished_twice"]))
            dropped = both(lambda r, b: str(r["dropped"]))
            share = both(lambda r, b: f"{r['retransmitted'] / max(1, r['segments']):.3f}")
            lines.append(f"| {policy} | {fault} | {finished} | {twice} | {dropped} | {both(jct)} | {share} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--policies", nargs="+", default=RUN_POLICIES, help="default: all but TetriSched (minutes a run)"
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument(
        "--side", action="store_true", help="real and simulated side by side (seed: the first)"
    )
    args = parser.parse_args(argv)
    if args.side:
        policies = [p for p in args.policies if p in SIDE_POLICIES]
        if not args.report_only:
            for policy in policies:
                for fault in SIDE_FAULTS:
                    for runtime in ("sim", "real"):
                        run_side(policy, fault, args.seeds[0], runtime)
        text = side_report(policies, args.seeds[0])
        if policies == SIDE_POLICIES and args.seeds[0] == 0:
            SIDE_REPORT.write_text(text)
        print(text)
        return
    if not args.report_only:
        for policy in args.policies:
            for seed in args.seeds:
                for fault in FAULTS:
                    run(policy, fault, seed)
    # The default run leaves TetriSched out, but its table is the whole one (rows not run say so)
    shown = POLICIES if args.policies == RUN_POLICIES else args.policies
    text = report(shown, args.seeds)
    if shown == POLICIES and args.seeds == [0, 1, 2]:
        REPORT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
