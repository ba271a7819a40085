"""What a replay replayed, recorded exactly: ``summary.json``'s ``workload`` (:func:`workload_record`),
and the check ``aviary compare`` makes with it (:func:`workload_differences`).

The record holds the trace file (path, size and sha256; none for the generated workloads ``tpcds`` and
``gshet``), the jobs actually replayed (their trace indices, 0-based in the order the trace is read, and
lines; ``start`` is the first index when they are consecutive, so a random start is recorded as drawn),
every scaling factor (``time_scale``: trace seconds per replay second; ``task_scale`` as given, ``tasks``
after merging), the arrivals (``poisson`` at ``load``, the ``trace``'s own, or ``batch``), the seed, the
cluster's nodes, slots and node capacities, and digests of the scaled jobs (classes, task durations,
estimates, submit times, stages and SLOs), which catch whatever else shapes them (``--cutoff``,
``--misestimate``, ``--reference-nodes``, ``--demands``, ``--gshet``). The policy with its parameters,
the runtime and the versions (aviary, its git commit, Python, key libraries) are recorded beside it:
they may differ between compared runs, the rest may not.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import platform
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ...common.model import JobSpec
    from .resolved import ReplaySetup

__all__ = [
    "CHECKED",
    "describe_workload",
    "index_ranges",
    "python_call",
    "versions",
    "workload_differences",
    "workload_record",
]

ROOT = Path(__file__).resolve().parents[2]
"""The repository (the package's root folder)."""
LIBRARIES = ("numpy", "matplotlib", "highspy", "pyzmq", "msgspec", "uvloop", "rich")
GENERATED = ("tpcds", "gshet")
"""Workload kinds whose jobs are drawn by a generator, from no trace file."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@functools.lru_cache(maxsize=8)
def _file_info(path: str, size: int, mtime_ns: int) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The sha256 of a trace file and the (line, tasks) of its jobs in the order the workload reads
    them (none for the TPC-H queries, which are drawn, not sampled by index)."""
    from ...common.dags import read_alibaba
    from .jobs import google_trace  # the replay's own reading of the file, not a second one

    digest = _sha256(Path(path))
    jobs: tuple[tuple[int, int], ...] = ()
    if path.endswith(".csv"):
        jobs = tuple((j.line, j.tasks) for j in read_alibaba(path))
    elif not path.endswith(".json"):
        jobs = tuple((j.line, j.tasks) for j in google_trace(Path(path)))
    return digest, jobs


def trace_file(kind: str, trace: str) -> Path | None:
    """The file a replay of ``kind`` read its jobs from (``trace``: ``--trace``, the bundled Google
    sample when not given, which stands for the kind's own bundled file)."""
    from ...common.dags import ALIBABA_CSV, GOOGLE_TRACE, TPCH_JSON

    if kind in GENERATED:
        return None
    given = Path(trace)
    if kind != "google" and given == GOOGLE_TRACE:
        return ALIBABA_CSV if kind == "alibaba" else TPCH_JSON
    return given


def _shown(path: Path) -> str:
    """The path relative to the repository when inside it (bundled traces), else absolute."""
    full = path.resolve()
    try:
        return str(full.relative_to(ROOT))
    except ValueError:
        return str(full)


def index_ranges(values: Iterable[int]) -> str:
    """Sorted integers as ranges: ``3,17-19,55`` (empty: ``""``)."""
    xs = sorted(set(values))
    parts: list[str] = []
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)


def _digest(items: Iterable[Any]) -> str:
    h = hashlib.sha256()
    for item in items:
        h.update(repr(item).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def _hex(x: float) -> str:
    return float(x).hex()


def job_digests(jobs: Sequence[JobSpec]) -> dict[str, str]:
    """Digests (16 hex digits of sha256) of each aspect of the scaled jobs, exact to the bit."""
    return {
        "classes": _digest(j.cls for j in jobs),
        "durations": _digest([_hex(d) for d in j.durations] for j in jobs),
        "estimates": _digest(_hex(j.estimate) for j in jobs),
        "submits": _digest(_hex(j.submit) for j in jobs),
        "stages": _digest(
            [(s.tasks, _hex(s.estimate), tuple(map(_hex, s.demand)), s.parents) for s in j.stages]
            for j in jobs
        ),
        "slo": _digest(
            (j.slo, None if j.deadline is None else _hex(j.deadline), j.gang, j.preference, _hex(j.slowdown))
            for j in jobs
        ),
    }


def _git_commit() -> dict[str, Any] | None:
    """The repository's commit and whether tracked files differ from it; None outside a git checkout.
    Read only: ``--no-optional-locks`` keeps ``git status`` from refreshing the index."""
    if not (ROOT / ".git").exists():
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "--no-optional-locks", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {
        "commit": head.stdout.strip(),
        "dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None,
    }


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def versions() -> dict[str, Any]:
    """aviary's version and git commit (``dirty``: tracked files changed), Python's, key libraries'."""
    return {
        "aviary": _version("aviary"),
        "git": _git_commit(),
        "python": platform.python_version(),
        **{name: _version(name) for name in LIBRARIES},
    }


def workload_record(setup: ReplaySetup) -> dict[str, Any]:
    """The JSON-able record of the replay's workload, policy and versions (module docstring)."""
    extra, cluster, jobs = setup.extra, setup.cluster, setup.jobs
    kind = str(extra.get("workload", "google"))
    path = trace_file(kind, str(extra.get("trace", "")))
    trace: dict[str, Any] | None = None
    chosen: dict[str, Any] = {"count": setup.count}
    if setup.stream is not None:  # never held: the file's digest and the settings make the jobs
        assert path is not None
        st = os.stat(path)
        trace = {"path": _shown(path), "bytes": st.st_size, "sha256": _sha256(path)}
        chosen.update(tasks=setup.tasks, streamed=True)
    elif path is not None:
        size: int | None = None
        digest, order = "", cast(tuple[tuple[int, int], ...], ())
        try:  # the file was read at set-up: a failure now (moved, rewritten) must not lose the run
            st = os.stat(path)
            digest, order = _file_info(str(path.resolve()), st.st_size, st.st_mtime_ns)
            size = st.st_size
        except (OSError, ValueError):
            pass
        trace = {"path": _shown(path), "bytes": size, "sha256": digest or None}
        lines = [j.line for j in jobs]
        chosen["lines"] = index_ranges(lines)
        if order:
            at = {line: i for i, (line, _) in enumerate(order)}
            indices = sorted(at[line] for line in lines if line in at)
            run = indices and indices == list(range(indices[0], indices[0] + len(jobs)))
            chosen["start"] = indices[0] if run else None
            chosen["indices"] = index_ranges(indices)
            chosen["trace_tasks"] = sum(order[i][1] for i in indices)
    if setup.stream is None:
        chosen["tasks"] = setup.tasks
        chosen["digests"] = job_digests(jobs)
    if extra.get("batch"):
        arrivals = "batch"
    elif extra.get("keep_arrivals"):
        arrivals = "trace"
    else:
        arrivals = "poisson"
    capacities: dict[str, int] = {}
    for node in cluster.nodes:
        key = ",".join(f"{x:g}" for x in node.resources)
        capacities[key] = capacities.get(key, 0) + 1
    record: dict[str, Any] = {
        "kind": kind,
        "trace": trace,
        "jobs": chosen,
        "time_scale": extra.get("time_scale"),
        "task_scale": extra.get("task_scale"),
        "arrivals": arrivals,
        "load": extra.get("load"),
        "seed": extra.get("seed"),
        "nodes": len(cluster.nodes),
        "slots": max((p.slots for p in cluster.nodes), default=0),
        "capacity": dict(sorted(capacities.items())),
    }
    if "gshet" in extra:
        record["gshet"] = {k: list(v) if isinstance(v, tuple) else v for k, v in extra["gshet"].items()}
    record["policy"] = {"name": cluster.policy, "params": dict(cluster.params)}
    if setup.policy.source:  # a plug-in: where its code came from, to run it again
        record["policy"] |= {"source": setup.policy.source, "origin": setup.policy.origin}
    record["runtime"] = setup.runtime
    record["versions"] = versions()
    return record


def python_call(function: str, given: Mapping[str, Any]) -> str:
    """The Python call that made a run, as its summary records it (``extra.command``, beside ``aviary
    replay``'s command line): ``aviary.replay(policy='drf', jobs=40, out='results/x')``, the keywords
    ``given`` in their order, paths as strings."""
    shown = (f"{name}={str(v)!r}" if isinstance(v, Path) else f"{name}={v!r}" for name, v in given.items())
    return f"{function}({', '.join(shown)})"


def _short(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, str) and len(x) > 40:
        return x[:37] + "..."
    return str(x)


def _trace_sha(r: Mapping[str, Any]) -> Any:
    return (r.get("trace") or {}).get("sha256")


def _get(*keys: str) -> Callable[[Mapping[str, Any]], Any]:
    def get(r: Mapping[str, Any]) -> Any:
        value: Any = r
        for k in keys:
            value = value.get(k) if isinstance(value, Mapping) else None
        return value

    return get


CHECKED: tuple[tuple[str, Callable[[Mapping[str, Any]], Any], Callable[[Any], str]], ...] = (
    ("kind", _get("kind"), _short),
    ("trace sha256", _trace_sha, lambda v: "none" if v is None else str(v)[:12]),
    ("jobs", _get("jobs", "count"), _short),
    ("trace jobs (indices)", _get("jobs", "indices"), _short),
    ("trace jobs (lines)", _get("jobs", "lines"), _short),
    ("time scale", _get("time_scale"), _short),
    ("task scale", _get("task_scale"), _short),
    ("tasks after merging", _get("jobs", "tasks"), _short),
    ("arrivals", _get("arrivals"), _short),
    ("load", _get("load"), _short),
    ("seed", _get("seed"), _short),
    ("gshet options", _get("gshet"), _short),
    ("nodes", _get("nodes"), _short),
    ("slots", _get("slots"), _short),
    ("node capacity", _get("capacity"), lambda v: " + ".join(f"{n} x <{k}>" for k, n in (v or {}).items())),
    ("job classes (cutoff)", _get("jobs", "digests", "classes"), _short),
    ("task durations", _get("jobs", "digests", "durations"), _short),
    ("estimates (misestimate)", _get("jobs", "digests", "estimates"), _short),
    ("submit times", _get("jobs", "digests", "submits"), _short),
    ("stages and demands", _get("jobs", "digests", "stages"), _short),
    ("SLOs", _get("jobs", "digests", "slo"), _short),
)
"""What must match between compared runs, in the order differences are named: (name, getter, how its
value is shown). The policy, its parameters, the runtime and the versions are not checked."""


def workload_differences(
    records: Sequence[Mapping[str, Any]], labels: Sequence[str]
) -> list[tuple[str, str]]:
    """Every difference between the first record and each other one, as its name in :data:`CHECKED`
    and ``seed 1 (a) vs 2 (b)``, in the order of :data:`CHECKED` per run."""
    out: list[tuple[str, str]] = []
    base = records[0]
    for record, label in zip(records[1:], labels[1:], strict=True):
        for name, get, show in CHECKED:
            a, b = get(base), get(record)
            if a != b:
                out.append((name, f"{name} {show(a)} ({labels[0]}) vs {show(b)} ({label})"))
    return out


def describe_workload(record: Mapping[str, Any]) -> str:
    """One line naming a recorded workload: trace and jobs, arrivals, scales, cluster, seed."""
    trace = record.get("trace") or {}
    jobs = record.get("jobs") or {}
    what = Path(trace["path"]).name if trace.get("path") else str(record.get("kind", "?"))
    picked = jobs.get("indices")
    parts = [f"{what}: {jobs.get('count', '?')} jobs" + (f" [{_short(picked)}]" if picked else "")]
    arrivals, load = record.get("arrivals"), record.get("load")
    parts.append(f"load {_short(load)}" if arrivals == "poisson" else f"{arrivals} arrivals")
    parts.append(f"time scale {_short(record.get('time_scale'))}")
    if record.get("task_scale") is not None:
        parts.append(f"task scale {_short(record['task_scale'])}")
    parts.append(f"{record.get('nodes', '?')} nodes x {record.get('slots', '?')} slots")
    parts.append(f"seed {record.get('seed', '?')}")
    return ", ".join(parts)
