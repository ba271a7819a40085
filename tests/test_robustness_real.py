"""Integration: bad frames, bad input and dead processes on a real testbed on loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import msgspec
import pytest
import uvloop
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aviary.common.messages import (
    PROTOCOL_VERSION,
    AssignTask,
    BadFrame,
    GetStats,
    GetTask,
    Hello,
    PeerDown,
    PlaceTask,
    Probe,
    Shutdown,
    SubmitJob,
    TaskFinished,
    decode,
    encode,
)
from aviary.common.model import JobSpec
from aviary.launch.cli.main import main
from aviary.launch.drivers.local import LocalTestbed
from aviary.launch.drivers.real import FrontendSession, run_real
from aviary.launch.policies.registry import get_policy, policy_cluster

pytestmark = pytest.mark.integration

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.binary(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
# Valid messages that would make a process work for the sender, stop or answer: from a stranger, dropped.
WORK = [
    Probe(0, 1.0, 3),
    PlaceTask(0, 0, 0.01, 0.01),
    AssignTask(0, 0, 0.01, 0.01),
    SubmitJob(0, [0.01], 0.01),
    GetTask(0),
    TaskFinished(0, 0),
    PeerDown("node-1"),
    Hello(7),
    GetStats(),
    Shutdown(),
]
frames = st.one_of(
    st.sampled_from([encode(m) for m in WORK]),
    st.binary(max_size=64),
    values.map(lambda v: msgspec.msgpack.encode(v)),
    st.tuples(st.integers(0, 3), st.integers(-2, 60), st.lists(values, max_size=7)).map(
        lambda t: msgspec.msgpack.encode([t[0], t[1], *t[2]])
    ),
    st.tuples(st.integers(1, 60), st.lists(scalars, max_size=7)).map(
        lambda t: bytes([PROTOCOL_VERSION]) + msgspec.msgpack.encode([t[0], *t[1]])
    ),
)


def jobs(n: int, tasks: int = 3, duration: float = 0.005) -> list[JobSpec]:
    return [JobSpec(i, 0.002 * i, [duration] * tasks, duration, False) for i in range(n)]


def test_thousands_of_bad_frames_are_counted_and_dropped_and_the_testbed_keeps_serving(tmp_path):
    cluster = policy_cluster("sparrow", nodes=3, slots=1, schedulers=1)
    targets = [cluster.get("node-0").address, cluster.get("sched-0").address]
    sent = {"frames": 0, "bad": 0, "dropped": 0}
    with LocalTestbed(cluster, tmp_path, keys=False) as bed:
        ctx = zmq.Context.instance()
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        socks = []
        for address in targets:
            s = ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(address)
            socks.append(s)
        sock.close()

        @settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(frame=frames, target=st.sampled_from([0, 1]), multipart=st.booleans())
        def throw(frame, target, multipart):
            parts = [frame, b"extra"] if multipart else [frame]
            socks[target].send_multipart(parts)
            sent["frames"] += 1
            sent["dropped"] += 1  # a bad frame, or a valid one from a stranger (no role may send it)
            try:
                decode(frame)
            except BadFrame:
                sent["bad"] += 1

        throw()
        time.sleep(0.5)
        for s in socks:
            s.close()
        assert sent["bad"] > 1000
        assert not bed.dead(), "a process died of bad frames"

        # The processes counted every drop, and the same testbed still serves a replay.
        async def check():
            async with FrontendSession(cluster, [], dead=bed.dead) as session:
                await session.registered()
                _, counters = await session.collect(shutdown=False)
            return sum(v for k, v in counters.items() if k.startswith("dropped."))

        assert uvloop.run(check()) == sent["dropped"]
        route = get_policy("sparrow").route(cluster)
        outcome = uvloop.run(run_real(cluster, jobs(30), route, stall_timeout=10, dead=bed.dead))
        assert outcome.frontend.done, outcome.problems
        assert bed.wait(10)


def test_a_frontend_back_under_the_same_name_and_address_is_heard_every_time(tmp_path):
    """Replays one after another against one testbed: each new frontend binds the old one's address and
    reconnects with the same routing id while the old connection may still be closing (without
    ROUTER_HANDOVER about one session in 15 was never answered)."""
    cluster = policy_cluster("sparrow", nodes=3, slots=1, schedulers=1)

    async def session(bed: LocalTestbed) -> None:
        async with FrontendSession(cluster, [], dead=bed.dead) as s:
            await s.registered(5)
            await s.collect(shutdown=False)
            assert not s.problems, s.problems

    with LocalTestbed(cluster, tmp_path) as bed:
        for _ in range(40):
            uvloop.run(session(bed))


def test_a_dead_node_monitor_s_tasks_run_elsewhere_and_every_job_finishes(tmp_path):
    cluster = policy_cluster("sparrow", nodes=3, slots=1, schedulers=1)
    route = get_policy("sparrow").route(cluster)
    work = [JobSpec(i, 0.02 * i, [0.1] * 3, 0.1, False) for i in range(20)]

    async def scenario(bed: LocalTestbed):
        async with FrontendSession(cluster, work, route, dead=bed.dead) as session:
            await session.registered()
            replay = asyncio.create_task(session.replay(stall_timeout=2.0, tick=0.05))
            await asyncio.sleep(0.3)  # tasks are running on every node now
            bed.children["node-1"].kill()
            started = time.monotonic()
            await replay
            waited = time.monotonic() - started
            _, counters = await session.collect(shutdown=True, timeout=3.0)
            return session, waited, counters

    with LocalTestbed(cluster, tmp_path) as bed:
        session, waited, counters = uvloop.run(scenario(bed))
    assert session.core.unfinished() == []
    assert "process node-1 exited with code -9" in "\n".join(session.problems)
    assert session.core.counters["processes_declared_dead"] == 1
    assert counters["tasks_rerun"] + counters["probes_lost"] >= 1  # what node-1 held went elsewhere
    assert waited < 20


def test_bad_trace_line_gives_one_line_and_writes_nothing(tmp_path, capsys):
    trace = tmp_path / "bad.tr"
    trace.write_text("0 2 1.0 1.0 1.0\n5 3 1.0 1.0 1.0\n")
    out = tmp_path / "out"
    assert main(["replay", str(trace), "--runtime", "sim", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"{trace}:2: field 'num_tasks'" in err
    assert not out.exists()


def test_bad_flag_gives_one_line(capsys):
    with pytest.raises(SystemExit) as info:
        main(["replay", "--load", "lots"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--load" in err


def test_bad_cluster_file_gives_one_line(tmp_path, capsys):
    bad = tmp_path / "cluster.toml"
    bad.write_text('[[process]]\nname = "x"\nrole = "wizard"\nhost = "127.0.0.1"\nport = 1\n')
    assert main(["replay", "--connect", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{bad}:3" in err and "field 'role'" in err


def test_up_runs_until_sigterm_and_leaves_no_process_or_port(tmp_path):
    env = {**os.environ, "COLUMNS": "200"}
    command = ["up", "--nodes", "3", "--schedulers", "2", "--dir", str(tmp_path)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "aviary.launch.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines = []
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "processes registered" in line or time.monotonic() > deadline:
            break
    assert any("all 5 processes registered" in line for line in lines), "".join(lines)
    import psutil

    children = psutil.Process(proc.pid).children(recursive=True)
    assert len(children) == 5
    from aviary.common.cluster import load_cluster

    ports = [p.port for p in load_cluster(tmp_path / "cluster.toml").processes if p.role != "frontend"]
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, rest
    assert "every process exited cleanly" in rest
    _, alive = psutil.wait_procs(children, timeout=5)
    assert not alive
    listening = {c.laddr.port for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
    assert not listening & set(ports)
