"""Where ``aviary bench``'s round trip goes, step by step: which part of the path costs what.

    python -m aviary.benchmarks.runtime_overhead hops [--jobs 300] [--gap-ms 5]
        [--policies fifo-queue,fifo,sparrow]

Runs ``aviary bench``'s round trip (one-task no-op jobs, one at a time, ``--gap-ms`` apart, on 4
single-slot timer nodes over the plain-TCP transport without keys, the figures Dask is compared with)
with the hop log of :mod:`aviary.common.hoplog`, and prints for each policy the median time of each step
of a job's path: ``A > B  Kind`` is the wire and the wake-up from process ``A``'s send of ``Kind`` to
``B``'s handling of it (encode, the send, the kernel, ``B``'s loop, the read, decode), ``B  Kind > Next``
is ``B``'s own work between the two (the sender's checks, the core, the effects; at a node, the
zero-length task's launch and exit). The steps are those of the most common path (its share given);
their medians need not add up to the median round trip. ``python -m aviary.benchmarks.floors``
gives the machine's own floor under the wire steps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import uvloop

from aviary.common.hoplog import ENV, IN, OUT, Hop, read_hops
from aviary.common.model import JobSpec
from aviary.launch.cli.bench import measure_replay
from aviary.launch.drivers.local import LocalTestbed
from aviary.launch.policies.registry import policy_cluster

POLICIES = {
    "fifo-queue": ("fifo", {"fifo_queue": 1}),
    "fifo": ("fifo", {}),
    "sparrow": ("sparrow", {}),
}
"""What ``--policies`` may name: the policy and its parameters (``fifo-queue``: ``aviary bench``'s
``central_queue_tcp_no_keys``)."""


def _role(name: str) -> str:
    return "node" if name.startswith("node") else name.split("-")[0]


def _by_job(logs: dict[str, list[Hop]]) -> dict[int, dict[str, list[Hop]]]:
    """Each job's messages, by process, in order (what carries no job left out)."""
    jobs: dict[int, dict[str, list[Hop]]] = {}
    for process, rows in logs.items():
        for hop in rows:
            if hop[2] >= 0:
                jobs.setdefault(hop[2], {}).setdefault(process, []).append(hop)
    return jobs


def path(logs: dict[str, list[Hop]], job: int) -> list[tuple[str, float]] | None:
    """The steps of ``job``'s path (label, microseconds): :func:`_walk` over its messages."""
    return _walk(_by_job(logs).get(job, {}))


def _walk(hops: dict[str, list[Hop]]) -> list[tuple[str, float]] | None:
    """One job's path, walked back from the frontend's ``JobDone``: each message that came in to the
    message that caused it (the last one of its kind sent to that process before), and each message
    sent to the last message of the job its process had before. None: no path from a ``SubmitJob``."""
    ins = {p: [h for h in rows if h[0] == IN] for p, rows in hops.items()}
    outs = {p: [h for h in rows if h[0] == OUT] for p, rows in hops.items()}
    done = [h for h in ins.get("frontend", []) if h[1] == "JobDone"]
    if not done:
        return None
    steps: list[tuple[str, float]] = []
    at, hop = "frontend", done[0]
    while True:
        _, kind, _, sender, t = hop
        sent = [h for h in outs.get(sender, []) if h[1] == kind and h[3] == at and h[4] <= t]
        if not sent:
            return None
        out = sent[-1]
        steps.append((f"{_role(sender)} > {_role(at)}  {kind}", (t - out[4]) * 1e6))
        cause = [h for h in ins.get(sender, []) if h[4] <= out[4]]
        if not cause:
            return steps[::-1] if sender == "frontend" and kind == "SubmitJob" else None
        at, hop = sender, cause[-1]
        steps.append((f"{_role(at)}  {hop[1]} > {kind}", (out[4] - hop[4]) * 1e6))


def steps(logs: dict[str, list[Hop]]) -> tuple[list[tuple[str, list[float]]], float]:
    """The steps of the most common path of a job (label, microseconds of each job that took it), and the
    share of jobs that took it."""
    jobs = _by_job(logs)
    paths: dict[tuple[str, ...], list[list[float]]] = {}
    for hops in jobs.values():
        if (found := _walk(hops)) is not None:
            labels, gaps = zip(*found, strict=True)
            paths.setdefault(labels, []).append(list(gaps))
    if not paths:
        raise RuntimeError(
            "no job's path could be followed from its SubmitJob to its JobDone in the hop logs"
        )
    labels, runs = max(paths.items(), key=lambda item: len(item[1]))
    return [(label, [run[i] for run in runs]) for i, label in enumerate(labels)], len(runs) / len(jobs)


async def _round_trips(
    policy: str, params: dict[str, Any], jobs: int, gap: float, workdir: Path
) -> list[float]:
    cluster = policy_cluster(policy, nodes=4, slots=1, schedulers=1, executor="timer")
    cluster.transport = "tcp"
    cluster.params.update(params)
    with LocalTestbed(cluster, workdir, keys=False) as bed:  # its processes write their logs as they stop
        specs = [JobSpec(i, gap * i, [0.0], 0.0, False) for i in range(jobs)]
        session, _ = await measure_replay(cluster, specs, bed.dead)
    return [(t.finish - t.submit) * 1e6 for t in session.core.times.values()]  # type: ignore[operator]


def measure(name: str, jobs: int, gap: float) -> tuple[list[float], list[tuple[str, list[float]]], float]:
    """The round trips (us) of ``name`` (a key of :data:`POLICIES`), its path's steps and their share."""
    policy, params = POLICIES[name]
    with tempfile.TemporaryDirectory(prefix="aviary-hops-") as tmp:
        logs = Path(tmp) / "hops"
        logs.mkdir()
        os.environ[ENV] = str(logs)
        try:
            rtts = uvloop.run(_round_trips(policy, params, jobs, gap, Path(tmp) / "bed"))
        finally:
            del os.environ[ENV]
        path, share = steps(read_hops(logs))
    return rtts, path, share


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--jobs", type=int, default=300, help="one-task jobs per policy (default 300, as the bench)"
    )
    p.add_argument("--gap-ms", type=float, default=5.0, help="between two jobs (default 5, as the bench)")
    p.add_argument("--policies", default=",".join(POLICIES), help=f"of {', '.join(POLICIES)} (default all)")
    args = p.parse_args(argv)
    names = args.policies.split(",")
    if unknown := [n for n in names if n not in POLICIES]:
        p.error(f"--policies: unknown {', '.join(unknown)} (known: {', '.join(POLICIES)})")
    for name in names:
        rtts, path, share = measure(name, args.jobs, args.gap_ms / 1000)
        p50 = statistics.median(rtts)
        print(f"{name}: round trip p50 {p50:.0f} us; its steps (p50 us, {share:.0%} of jobs):")
        for label, gaps in path:
            print(f"  {label:40s} {statistics.median(gaps):6.0f}")
        print(f"  {'sum of the step medians':40s} {sum(statistics.median(g) for _, g in path):6.0f}")


if __name__ == "__main__":
    main()
