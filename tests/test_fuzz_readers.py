"""Issue 26: random workload, cluster and sweep files through every reader of the project. The only
outcomes are a parsed object or the reader's own one-line input error (what the ``aviary`` command turns
into one line and exit status 2): :class:`TraceError`, :class:`DagTraceError`, :class:`ClusterError`,
:class:`UsageError`. No other exception escapes, no message has a second line, and what is parsed keeps
within the limits of input (``common/trace.py``)."""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aviary.common.cluster import NAME, ClusterError, load_cluster
from aviary.common.dags import DagTraceError, read_alibaba, read_tpch, tpch_profiles
from aviary.common.trace import MAX_DURATION, MAX_JOB_TASKS, MAX_TIME, TraceError, read_trace
from aviary.launch.flags.spec import UsageError
from aviary.launch.sweep.spec import load_sweep

FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

numbers = st.one_of(
    st.integers(-5, 10**13).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e308", "1e300", "-0", "nan", "inf", "1e12", "0x10", "", "1_000", "\uff13"]),
)
tokens = st.one_of(numbers, st.text(max_size=6))


def _outcome(read: Callable[[Path], Any], data: bytes, suffix: str, errors: tuple[type, ...]) -> Any:
    """``read`` of a file holding ``data``: its result, or None after a one-line error of ``errors``."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"input{suffix}"
        path.write_bytes(data)
        try:
            return read(path)
        except errors as exc:
            assert "\n" not in str(exc) and str(exc), repr(exc)
            return None


@st.composite
def trace_files(draw: st.DrawFn) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        n = draw(st.integers(0, 4))
        head = [draw(numbers), draw(st.one_of(st.just(str(n)), numbers)), draw(numbers)]
        lines.append(" ".join([*head, *draw(st.lists(tokens, min_size=n, max_size=n + 1))]))
    return draw(st.one_of(st.just("\n".join(lines).encode()), st.binary(max_size=60)))


@given(trace_files())
@FUZZ
def test_the_trace_reader_parses_or_says_one_line(data: bytes) -> None:
    jobs = _outcome(read_trace, data, ".tr", (TraceError,))
    for job in jobs or []:
        assert 0 <= job.submit <= MAX_TIME and 1 <= job.tasks <= MAX_JOB_TASKS
        assert all(0 <= d <= MAX_DURATION for d in [*job.durations, job.mean])


HEADER = "job,stage,parents,instances,status,start_s,end_s,duration_s,plan_cpu,plan_mem,task_name"


@st.composite
def alibaba_files(draw: st.DrawFn) -> bytes:
    header = draw(st.sampled_from([HEADER, HEADER.replace("instances,", ""), "", "a,b"]))
    rows = [header]
    for _ in range(draw(st.integers(0, 4))):
        job = draw(st.sampled_from(["j1", "j2", ""]))
        stage = draw(st.sampled_from(["1", "2", "3", "M1", ""]))
        parents = draw(st.sampled_from(["", "1", "2", "1 2", "3", "9"]))
        fields = [job, stage, parents, draw(numbers), "Terminated", draw(numbers), "0", draw(numbers)]
        rows.append(",".join([*fields, draw(numbers), draw(numbers), draw(st.text(max_size=4))]))
    return draw(st.one_of(st.just("\n".join(rows).encode()), st.binary(max_size=60)))


@given(alibaba_files())
@FUZZ
def test_the_alibaba_reader_parses_or_says_one_line(data: bytes) -> None:
    for job in _outcome(read_alibaba, data, ".csv", (DagTraceError,)) or []:
        assert job.stages and sum(s.tasks for s in job.stages) <= MAX_JOB_TASKS
        assert all(p < i for i, s in enumerate(job.stages) for p in s.parents)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**13) | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@st.composite
def tpch_files(draw: st.DrawFn) -> bytes:
    ids = draw(st.lists(st.one_of(st.integers(-1, 3), json_values), max_size=4))
    edges = draw(st.lists(st.lists(st.integers(-1, 4), min_size=1, max_size=3), max_size=3))
    rows = draw(
        st.lists(st.lists(st.one_of(st.integers(-1, 4), st.floats(), json_values), max_size=4), max_size=4)
    )
    query = draw(st.fixed_dictionaries({"stages": st.just(ids), "edges": st.just(edges),
                                        "profiles": st.just({"p": rows})}))  # fmt: skip
    doc = draw(st.one_of(st.just({"Q1": query}), json_values))
    text = json.dumps(doc, indent=draw(st.sampled_from([None, 1])))
    return draw(st.one_of(st.just(text.encode()), st.binary(max_size=40)))


@given(tpch_files())
@FUZZ
def test_the_tpch_reader_parses_or_says_one_line(data: bytes) -> None:
    _outcome(tpch_profiles, data, ".json", (DagTraceError,))
    for job in (_outcome(lambda p: read_tpch(p, "p"), data, ".json", (DagTraceError,)) or {}).values():
        assert job.stages and all(1 <= s.tasks <= MAX_JOB_TASKS and math.isfinite(s.mean) for s in job.stages)


CLUSTER = """[cluster]
policy = "sparrow"
executor = "timer"
seed = 0
[cluster.params]
probe_ratio = 2.0

[[process]]
name = "frontend"
role = "frontend"
host = "127.0.0.1"
port = 7000

[[process]]
name = NAME
role = "node"
host = "127.0.0.1"
port = PORT
slots = SLOTS
"""

toml_values = st.one_of(
    st.text(max_size=8).map(json.dumps),  # a TOML basic string (JSON's escapes are TOML's)
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["1e308", "inf", "nan", "true", "[]", "{}", '""', '"a>b"', '"x@y"', '"#"', '" "']),
)


@st.composite
def cluster_files(draw: st.DrawFn) -> bytes:
    text = CLUSTER
    for key in ("NAME", "PORT", "SLOTS"):
        text = text.replace(key, draw(st.one_of(st.just({"NAME": '"n"', "PORT": "7001", "SLOTS": "1"}[key]),
                                                toml_values)))  # fmt: skip
    return draw(st.one_of(st.just(text.encode()), st.binary(max_size=60)))


@given(cluster_files())
@FUZZ
def test_the_cluster_reader_parses_or_says_one_line(data: bytes) -> None:
    cluster = _outcome(load_cluster, data, ".toml", (ClusterError,))
    for p in cluster.processes if cluster is not None else []:
        assert NAME.fullmatch(p.name) and 0 < p.port < 65536


SPEC_KEYS = ["jobs", "nodes", "load", "policy", "seed", "trace", "workload", "capacity", "nodez", "runtime"]


@st.composite
def sweep_files(draw: st.DrawFn) -> bytes:
    lines = [
        f"{k} = {draw(toml_values)}" for k in draw(st.lists(st.sampled_from(["name", "out", "baseline"])))
    ]
    lines.append("[replay]")
    lines += [f"{k} = {draw(toml_values)}" for k in draw(st.lists(st.sampled_from(SPEC_KEYS), max_size=3))]
    lines.append("[grid]")
    lines += [
        f"{k} = [{', '.join(draw(st.lists(toml_values, max_size=3)))}]"
        for k in draw(st.lists(st.sampled_from(SPEC_KEYS), max_size=2))
    ]
    return draw(st.one_of(st.just("\n".join(lines).encode()), st.binary(max_size=60)))


@given(sweep_files())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
def test_the_sweep_spec_reader_parses_or_says_one_line(data: bytes) -> None:
    sweep = _outcome(lambda p: load_sweep(p, p.parent / "out"), data, ".toml", (UsageError,))
    if sweep is not None:
        assert all(c.flags[:2] == ["--runtime", "sim"] for c in sweep.cells)
