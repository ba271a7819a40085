"""Docker executor measurements: overhead per task, suspension accuracy, start-up, CPU, throughput.

Each number is measured in the same run for the process executor where that makes sense, so the two
can be compared on this (shared, noisy) machine:

- ``overhead``: a task of D s reports D + overhead s after its launch (start-up counts as running
  time, so this is what a task costs its slot beyond its duration, when its start-up < D);
- ``suspension_error``: a 2 s task suspended for 1 s at 0.5 s, finish - launch - 2 - (resume - suspend):
  through the executor (the task is told of the suspension) and with a plain ``docker pause`` from
  outside (the task has to see the frozen tick);
- ``startup``: launch to the task's first instruction (a zero-length task: launch to report);
- ``cpu_per_task_second``: CPU the container uses per second of a running 3 s task (the ticks);
- ``burst``: K zero-length tasks launched at once: when the last one reports (engine throughput).

    python -m aviary.benchmarks.runtime_overhead docker_executor [--repeat N] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from aviary.worker.executors import DockerExecutor, ProcessExecutor


class _Exits:
    def __init__(self) -> None:
        self.at: dict[Any, tuple[bool, float]] = {}
        self.fut: dict[Any, asyncio.Future[None]] = {}

    def __call__(self, task_id: Any, ok: bool) -> None:
        self.at[task_id] = (ok, time.monotonic())
        fut = self.fut.get(task_id)
        if fut is not None and not fut.done():
            fut.set_result(None)

    async def wait(self, task_id: Any) -> tuple[bool, float]:
        if task_id not in self.at:
            fut = self.fut.setdefault(task_id, asyncio.get_running_loop().create_future())
            await asyncio.wait_for(fut, 60)
        return self.at[task_id]


def _stats(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {
        "mean_ms": round(statistics.mean(values) * 1000, 2),
        "sd_ms": round(statistics.pstdev(values) * 1000, 2),
        "min_ms": round(values[0] * 1000, 2),
        "max_ms": round(values[-1] * 1000, 2),
        "n": len(values),
    }


async def _overhead(ex: Any, exits: _Exits, seq: list[int], duration: float, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        seq[0] += 1
        t0 = time.monotonic()
        ex.launch((0, seq[0]), duration)
        ok, at = await exits.wait((0, seq[0]))
        assert ok
        out.append(at - t0 - duration)
    return out


async def _suspension(ex: Any, exits: _Exits, seq: list[int], repeat: int, manual: Any = None) -> list[float]:
    out = []
    for _ in range(repeat):
        seq[0] += 1
        tid = (1, seq[0])
        t0 = time.monotonic()
        ex.launch(tid, 2.0)
        if manual is not None:  # wait for the container to run, then pause it behind the executor's back
            while ex.container_id(tid) is None:
                await asyncio.sleep(0.005)
            cid = ex.container_id(tid)
            while not (await asyncio.to_thread(manual.api.inspect_container, cid))["State"]["Running"]:
                await asyncio.sleep(0.005)
        await asyncio.sleep(max(0.0, 0.5 - (time.monotonic() - t0)))
        if manual is None:
            s = time.monotonic()
            ex.suspend(tid)
            await asyncio.sleep(1.0 - (time.monotonic() - s))
            r = time.monotonic()
            ex.resume(tid)
        else:
            await asyncio.to_thread(manual.api.pause, cid)
            s = time.monotonic()
            await asyncio.sleep(1.0)
            await asyncio.to_thread(manual.api.unpause, cid)
            r = time.monotonic()
        ok, at = await exits.wait(tid)
        assert ok
        out.append(at - t0 - 2.0 - (r - s))
    return out


def _cpu_ns(cid: str) -> int | None:
    """The container's CPU time so far (ns), from its cgroup (v1 cpuacct, or v2 cpu.stat)."""
    v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage")
    if v1.exists():
        return int(v1.read_text())
    for v2 in (
        Path(f"/sys/fs/cgroup/docker/{cid}/cpu.stat"),
        Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/cpu.stat"),
    ):
        if v2.exists():
            fields = dict(line.split() for line in v2.read_text().splitlines())
            return int(fields["usage_usec"]) * 1000
    return None


async def _cpu(ex: DockerExecutor, exits: _Exits, seq: list[int]) -> float | None:
    seq[0] += 1
    tid = (2, seq[0])
    ex.launch(tid, 3.0)
    while (cid := ex.container_id(tid)) is None:
        await asyncio.sleep(0.01)
    await asyncio.sleep(1.0)
    t0, first = time.monotonic(), _cpu_ns(cid)
    await asyncio.sleep(1.0)
    t1, second = time.monotonic(), _cpu_ns(cid)
    await exits.wait(tid)
    if first is None or second is None:
        return None
    return round((second - first) / 1e9 / (t1 - t0), 4)


async def _burst(ex: Any, exits: _Exits, seq: list[int], k: int) -> float:
    t0 = time.monotonic()
    ids = []
    for _ in range(k):
        seq[0] += 1
        ids.append((3, seq[0]))
        ex.launch(ids[-1], 0.0)
    for tid in ids:
        await exits.wait(tid)
    return time.monotonic() - t0


async def measure(repeat: int) -> dict[str, Any]:
    import docker

    loop = asyncio.get_running_loop()
    seq = [0]
    results: dict[str, Any] = {}
    dexits, pexits = _Exits(), _Exits()
    dex = DockerExecutor(loop, dexits)
    pex = ProcessExecutor(loop, pexits)
    await asyncio.wait([dex._ready])
    dex._ready.result()
    manual = docker.from_env()
    try:
        results["overhead"] = {
            "docker": _stats(await _overhead(dex, dexits, seq, 1.0, repeat)),
            "process": _stats(await _overhead(pex, pexits, seq, 1.0, repeat)),
        }
        results["startup"] = {
            "docker": _stats(await _overhead(dex, dexits, seq, 0.0, repeat)),
            "process": _stats(await _overhead(pex, pexits, seq, 0.0, repeat)),
        }
        results["suspension_error"] = {
            "docker": _stats(await _suspension(dex, dexits, seq, repeat)),
            "docker_manual_pause": _stats(await _suspension(dex, dexits, seq, repeat, manual)),
            "process": _stats(await _suspension(pex, pexits, seq, repeat)),
        }
        results["cpu_per_task_second"] = await _cpu(dex, dexits, seq)
        burst = results["burst_seconds"] = {}
        for k in (4, 8):
            burst[f"docker_{k}"] = round(await _burst(dex, dexits, seq, k), 3)
            burst[f"process_{k}"] = round(await _burst(pex, pexits, seq, k), 3)
    finally:
        await dex.close()
        await pex.close()
        manual.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aviary.benchmarks.runtime_overhead docker_executor")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    results = asyncio.run(measure(args.repeat))
    text = json.dumps(results, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
