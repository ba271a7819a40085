"""``aviary bench --peer dask``: Dask distributed's figures for the same three questions, in the same run.

Dask is the runtime researchers most often reach for to push small tasks through Python processes, so it
is the yardstick (issue 27). The set-up mirrors :mod:`.bench`'s: a ``LocalCluster`` of 4 worker processes
with 1 thread each (Aviary's 4 single-slot node monitors), its scheduler in this process as Aviary's
frontend is; a task is a no-op function (Aviary's 0 s timer task) or ``time.sleep(0.01)``.

- ``roundtrip_p50_ms`` / ``roundtrip_p99_ms``: ``client.submit`` of one no-op to its result, one at a
  time and 5 ms apart as Aviary's (:data:`GAP`: every process idle in between), 300 samples
  (pure=False, so none is answered from a cache);
- ``noop_tasks_per_s``: 5,000 no-ops submitted at once (``client.map``) to the last result;
- ``sleep10ms_efficiency``: 400 sleeps of 10 ms on the 4 workers: makespan / the ideal 1.0 s.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

WORKERS = 4
"""Aviary's bench runs 4 single-slot node monitors."""
GAP = 0.005
"""Seconds between two round trips, as between the submissions of Aviary's (until 2026-11-28 none: a
round trip began as the last ended, on processes still awake, where Aviary's woke idle ones)."""


def _noop(_: int = 0) -> None:
    return None


def _sleep10ms(_: int) -> None:
    time.sleep(0.010)


def run_dask(percentile: Any) -> dict[str, Any]:
    """Dask's figures (``percentile(values, q)`` as Aviary's bench computes it)."""
    import dask

    from ..sweep.run import dask_distributed  # Dask's package, not the repository's distributed/ folder

    distributed = dask_distributed()
    Client, LocalCluster, wait = distributed.Client, distributed.LocalCluster, distributed.wait
    results: dict[str, Any] = {"version": dask.__version__}
    with (
        LocalCluster(
            n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(WORKERS)
        client.submit(_noop, 0, pure=False).result()  # warm: the function shipped once
        rtts = []
        for _ in range(300):
            time.sleep(GAP)
            t0 = time.perf_counter()
            client.submit(_noop, pure=False).result()
            rtts.append((time.perf_counter() - t0) * 1000)
        results["roundtrip_p50_ms"] = round(statistics.median(rtts), 3)
        results["roundtrip_p99_ms"] = round(percentile(rtts, 0.99), 3)
        t0 = time.perf_counter()
        wait(client.map(_noop, range(5000), pure=False))
        results["noop_tasks_per_s"] = round(5000 / (time.perf_counter() - t0), 1)
        t0 = time.perf_counter()
        wait(client.map(_sleep10ms, range(400), pure=False))
        results["sleep10ms_efficiency"] = round((time.perf_counter() - t0) / 1.0, 4)
    return results


def ratios(aviary: dict[str, Any], dask: dict[str, Any]) -> dict[str, float]:
    """How many times better Aviary is on each figure (> 1: Aviary better)."""
    return {
        "noop_tasks_per_s": round(aviary["noop_tasks_per_s"] / dask["noop_tasks_per_s"], 2),
        "roundtrip_p50_ms": round(dask["roundtrip_p50_ms"] / aviary["roundtrip_p50_ms"], 2),
        "roundtrip_p99_ms": round(dask["roundtrip_p99_ms"] / aviary["roundtrip_p99_ms"], 2),
        "sleep10ms_efficiency": round(dask["sleep10ms_efficiency"] / aviary["sleep10ms_efficiency"], 3),
    }
