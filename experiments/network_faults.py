"""Every policy family under faults of the network: what finishes, what is done twice, what it costs.

    python -m aviary.experiments.network_faults                 # runs what is missing (~15 min), the table
    python -m aviary.experiments.network_faults --report-only   # the table from the saved runs
    python -m aviary.experiments.network_faults --policies sparrow --seeds 0

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
FAULTS = {
    "none": "",
    "loss 1 %": "*>*:drop=1%",
    "loss 5 %": "*>*:drop=5%",
    "delay 0.1-2 s, a tenth": "*>*:delay=100ms..2s/10%",
    "duplicated 1 %": "*>*:dup=1%",
    "reordered 5 %": "*>*:reorder=5%",
    "a third of the nodes cut from every scheduler, 10 s": "node-[0-9]<>{scheduler}:cut@20s+10s,"
    "node-[0-9]<>{central}:cut@20s+10s",
    "the nodes cut from one scheduler, 10 s": "{node}<>sched-0:cut@20s+10s",
    "the central cut from the frontend, 10 s": "{central}<>frontend:cut@20s+10s",
    "a third of the nodes cut from the frontend, 10 s": "node-[0-9]<>frontend:cut@20s+10s",
}
"""Each fault as ``--fail`` items; an item naming a role the policy has not is left out (n/a if none is
left)."""
DROPPED = ("duplicate_", "unknown_task_", "late_results_ignored")


def slug(fault: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in fault).strip("-").replace("--", "-")


def items(policy: str, fault: str) -> list[str] | None:
    """The fault's items that name processes ``policy``'s testbed has (None: none left)."""
    if not FAULTS[fault]:
        return []
    from aviary.launch.policies.registry import POLICIES as REGISTRY
    from aviary.launch.policies.registry import policy_cluster

    cluster = policy_cluster(REGISTRY[policy], nodes=30, schedulers=2, bind_ports=False)
    names = {p.name for p in cluster.processes}
    roles = {p.role for p in cluster.processes}

    def present(side: str) -> bool:
        return side[1:-1] in roles if side.startswith("{") else side in names or "*" in side or "[" in side

    kept = []
    for item in FAULTS[fault].split(","):
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
    from aviary.launch.cli.main import main

    folder = Path(tempfile.mkdtemp(prefix="aviary-netfaults-"))
    flags = ["replay", "--runtime", "sim", "--policy", policy, "--jobs", "200", "--nodes", "30"]
    flags += ["--time-scale", "1000", "--seed", str(seed), "--quiet", "--out", str(folder / "run")]
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
    OUT.mkdir(parents=True, exist_ok=True)
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--policies", nargs="+", default=POLICIES)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.report_only:
        for policy in args.policies:
            for seed in args.seeds:
                for fault in FAULTS:
                    run(policy, fault, seed)
    text = report(args.policies, args.seeds)
    if args.policies == POLICIES and args.seeds == [0, 1, 2]:
        REPORT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
