"""A thousand real node monitors on one machine, measured against the simulator.

    python -m aviary.benchmarks.scale_and_memory nodes  # 1,000 nodes, Eagle and Sparrow
    python -m aviary.benchmarks.scale_and_memory nodes --nodes 300 --policies sparrow --jobs 200
    python -m aviary.benchmarks.scale_and_memory nodes --transports zmq tcp  # each real replay over both

For each policy, the same replay of the bundled Google sample (``--jobs`` consecutive jobs, Poisson
arrivals at ``--load``, durations divided by ``--time-scale``) runs once on the simulator and once on
real processes: ``--nodes`` node monitors, ``--nodes-per-process`` of them in each OS process, each its
own endpoint, over each of ``--transports`` (ZeroMQ by default; ``tcp``: the plain-TCP transport),
with the testbed's keys and/or without (``--keys on off``). While the real replay runs, the process tree is
sampled every half second. Reported: start-up (first process started to every process registered),
peak memory of all the testbed's processes (RSS and PSS, whose sum counts shared pages once) and per
node, one pack's PSS, scheduler decisions (tasks launched) per second of wall time, messages per task,
the short jobs' p50 / p90 real over simulated, and the CPU the testbed used (cores, of the machine's).
Run it with nothing else on the machine. The table goes to ``experiments/results/bench_nodes.md``
(``--results``) and the replays' folders beside it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

RESULTS = Path(__file__).resolve().parents[2] / "experiments" / "results"
MiB = 1024 * 1024


@dataclass
class Memory:
    """Peaks over the samples of a process tree (bytes); ``pack`` is the largest pack process's PSS."""

    rss: int = 0
    pss: int = 0
    pack: int = 0
    processes: int = 0
    cpu: float = 0.0
    """CPU seconds (user + system) the testbed's processes had used at the last sample, ``span`` seconds
    after the first."""
    span: float = 0.0
    samples: int = 0
    errors: list[str] = field(default_factory=list)


def sample_tree(root: psutil.Process, memory: Memory, stop: threading.Event, period: float = 0.5) -> None:
    """Peak total RSS and PSS of ``root``'s testbed processes (its children running
    ``aviary.launch.drivers.process``) until ``stop``."""
    first = time.monotonic()
    while not stop.wait(period):
        rss = pss = pack = count = 0
        cpu = 0.0
        try:
            children = root.children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            try:
                cmd = child.cmdline()
                if "aviary.launch.drivers.process" not in cmd:
                    continue
                info = child.memory_full_info()
                times = child.cpu_times()
            except psutil.Error:
                continue
            rss, pss, count = rss + info.rss, pss + info.pss, count + 1
            cpu += times.user + times.system
            if cmd[-1].startswith("pack-"):
                pack = max(pack, info.pss)
        memory.rss, memory.pss = max(memory.rss, rss), max(memory.pss, pss)
        memory.pack, memory.processes = max(memory.pack, pack), max(memory.processes, count)
        memory.cpu, memory.span = max(memory.cpu, cpu), time.monotonic() - first
        memory.samples += 1


def replay(
    args: argparse.Namespace, policy: str, runtime: str, out: Path, transport: str = "zmq", keys: bool = True
) -> tuple[dict[str, Any], Memory]:
    """One replay in a child ``aviary replay`` (sampled when real); its summary and the memory peaks."""
    wire = ["--transport", transport, *([] if keys else ["--no-keys"])] if runtime == "real" else []
    command = [sys.executable, "-m", "aviary.launch.cli", "replay", "--runtime", runtime, "--policy", policy,
               *wire, "--nodes", str(args.nodes), "--nodes-per-process", str(args.nodes_per_process),
               "--jobs", str(args.jobs), "--load", str(args.load), "--time-scale", str(args.time_scale),
               "--seed", str(args.seed), "--quiet", "--yes", "--force", "--out", str(out)]  # fmt: skip
    memory, stop = Memory(), threading.Event()
    proc = subprocess.Popen(command)
    sampler = threading.Thread(target=sample_tree, args=(psutil.Process(proc.pid), memory, stop))
    if runtime == "real":
        sampler.start()
    code = proc.wait()
    stop.set()
    if sampler.is_alive():
        sampler.join()
    if code != 0:
        raise SystemExit(
            f"scale_and_memory nodes: the {runtime} replay of {policy} failed (exit {code}): "
            + " ".join(command)
        )
    return json.loads((out / "summary.json").read_text()), memory


def row(
    policy: str, real: dict[str, Any], sim: dict[str, Any], memory: Memory, nodes: int, k: int, wire: str
) -> str:
    short_real, short_sim = real["jct"]["short"], sim["jct"]["short"]
    wall = real["wall_seconds"]
    decisions = real["counters"].get("tasks_launched", 0) / wall
    ratios = " / ".join(f"{short_real[p] / short_sim[p]:.3f}" for p in ("p50", "p90"))
    return (
        f"| {policy} | {wire} | {nodes:,} ({k} per process, {memory.processes} processes) | "
        f"{real['finished']}/{real['jobs']} | {real['extra'].get('startup_seconds', float('nan')):.1f} | "
        f"{memory.pss / MiB:,.0f} / {memory.rss / MiB:,.0f} | {memory.pss / nodes / 1024:,.0f} | "
        f"{memory.pack / MiB:,.1f} | {decisions:,.0f} | {real['messages']['per_task']:.1f} | "
        f"{ratios} | {short_real['p50']:.3f} / {short_real['p90']:.3f} | {wall:.1f} | "
        f"{memory.cpu / memory.span if memory.span else float('nan'):.2f} |"
    )


HEADER = (
    "| policy | transport | nodes | finished | start-up (s) | peak memory PSS / RSS (MiB) "
    "| PSS per node (KiB) | one pack's PSS (MiB) | decisions / s | messages / task "
    "| short p50 / p90 real / sim | short p50 / p90 real (s) | wall (s) | CPU (cores) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--nodes-per-process", type=int, default=50)
    p.add_argument("--policies", nargs="+", default=["eagle", "sparrow"])
    p.add_argument("--jobs", type=int, default=300)
    p.add_argument("--load", type=float, default=0.8)
    p.add_argument(
        "--time-scale", type=float, default=50.0,
        help="trace seconds per replay second (default %(default)s: at 100, Eagle's bursts of remaining-task "
        "updates keep both cores busy for seconds and its short p50 runs 12-14 %% above the simulator's)",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--transports", nargs="+", choices=("zmq", "tcp"), default=["zmq"])
    p.add_argument(
        "--keys",
        nargs="+",
        choices=("on", "off"),
        default=["on"],
        help="each real replay with the testbed's keys (on, the default) and/or without (off)",
    )
    p.add_argument("--results", type=Path, default=RESULTS, help="where bench_nodes.md and the runs go")
    args = p.parse_args(argv)
    folder = args.results / "bench_nodes"
    rows = []
    for policy in args.policies:
        sim, _ = replay(args, policy, "sim", folder / f"{policy}-{args.nodes}-sim")
        for transport in args.transports:
            for keys in args.keys:
                wire = transport + ("" if keys == "on" else ", no keys")
                name = f"{policy}-{args.nodes}-real" + ("" if transport == "zmq" else f"-{transport}")
                name += "" if keys == "on" else "-no-keys"
                real, memory = replay(args, policy, "real", folder / name, transport, keys == "on")
                rows.append(row(policy, real, sim, memory, args.nodes, args.nodes_per_process, wire))
            print(rows[-1], flush=True)
    text = (
        "# A thousand real node monitors on one machine\n\n"
        f"`python -m aviary.benchmarks.scale_and_memory nodes --nodes {args.nodes} --nodes-per-process "
        f"{args.nodes_per_process} --jobs {args.jobs} --load {args.load:g} "
        f"--time-scale {args.time_scale:g} --transports {' '.join(args.transports)} "
        f"--keys {' '.join(args.keys)}` — "
        f"the bundled Google sample, {args.jobs} consecutive jobs, Poisson arrivals at load {args.load:g}, "
        f"seed {args.seed}; the simulator replays the same arrivals. Memory: peaks over half-second samples "
        "of every testbed process (PSS counts shared pages once). Decisions: tasks launched per second of "
        "the real replay's wall time. CPU: the testbed's CPU seconds over the sampled seconds (the machine "
        f"has {len(psutil.Process().cpu_affinity() or [])} cores).\n\n"
        + HEADER
        + "\n"
        + "\n".join(rows)
        + "\n"
    )
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "bench_nodes.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
