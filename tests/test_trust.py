"""Integration: strangers on a testbed's ports (issue 14, Trust), real processes on loopback.

Bounded frames, ``Shutdown`` only from the frontend, forged ``JobDone`` not counted, routing ids that
cannot be stolen, and CurveZMQ keys that refuse every peer without one at the handshake.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest
import uvloop
import zmq

from aviary.common.addresses import FrameTooLarge, is_loopback
from aviary.common.cluster import Cluster, load_cluster, write_cluster
from aviary.common.keys import keys_folder, make_keys
from aviary.common.messages import (
    GetTask,
    Hello,
    JobDone,
    PeerDown,
    PlaceTask,
    Probe,
    Shutdown,
    Stats,
    SubmitJob,
    TaskFinished,
    encode,
)
from aviary.common.model import JobSpec
from aviary.common.transport import Transport
from aviary.launch.cli.main import main
from aviary.launch.drivers.local import LocalTestbed
from aviary.launch.drivers.real import FrontendSession, RealOutcome, run_real
from aviary.launch.drivers.up import cluster_table, exposure
from aviary.launch.policies.registry import get_policy, policy_cluster

pytestmark = pytest.mark.integration

HUGE = 100_000_000  # bytes: above the 64 MiB frame limit
DURATION = 0.02


def jobs(n: int = 12) -> list[JobSpec]:
    return [JobSpec(i, 0.01 * i, [DURATION] * 3, DURATION, False) for i in range(n)]


def small_cluster(tmp_path: Path, keys: bool = False) -> Cluster:
    cluster = policy_cluster("sparrow", nodes=2, slots=1, schedulers=1)
    path = tmp_path / "cluster.toml"
    write_cluster(cluster, path)
    if keys:
        make_keys(cluster, path)
    return load_cluster(path)


def stranger(address: str, routing_id: bytes | None = None, **curve: bytes) -> zmq.Socket[Any]:
    """A DEALER of no cluster (NULL security, or CURVE with keys of its own) connected to ``address``."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDTIMEO, 200)  # a peer that refused the handshake leaves no pipe to queue on
    if routing_id is not None:
        sock.setsockopt(zmq.ROUTING_ID, routing_id)
    for option, value in curve.items():
        sock.setsockopt(getattr(zmq, option), value)
    sock.connect(address)
    return sock


def throw(sock: zmq.Socket[Any], frame: bytes) -> None:
    with contextlib.suppress(zmq.Again):
        sock.send(frame, copy=False)


def replay(cluster: Cluster, bed: LocalTestbed, work: list[JobSpec], shutdown: bool) -> RealOutcome:
    route = get_policy(cluster.policy).route(cluster)
    return uvloop.run(run_real(cluster, work, route, stall_timeout=10, shutdown=shutdown, dead=bed.dead))


def results(outcome: RealOutcome) -> tuple[Any, ...]:
    """What a replay's results say of the work: jobs finished, tasks run, each job no faster than its
    longest task (a forged completion would be)."""
    fe = outcome.frontend
    assert fe.done, outcome.problems
    honest = all((t.finish or 0) - (t.submit or 0) >= DURATION * 0.9 for t in fe.times.values())
    kept = ("jobs", "tasks_launched", "tasks_finished", "executor.completed")
    return fe.finished, honest, {k: outcome.counters[k] for k in kept}


def counters(cluster: Cluster, bed: LocalTestbed, shutdown: bool = False) -> dict[str, int]:
    """Every process's counters, summed (and they stop, with ``shutdown``)."""

    async def ask() -> dict[str, int]:
        async with FrontendSession(cluster, [], dead=bed.dead) as session:
            await session.registered(10)
            _, found = await session.collect(shutdown=shutdown)
        return dict(found)

    return uvloop.run(ask())


def rss(bed: LocalTestbed, name: str) -> int:
    return psutil.Process(bed.children[name].pid).memory_info().rss


# --- bounded frames ---------------------------------------------------------------------------------


def test_a_100_mb_frame_is_refused_before_it_is_read_and_the_process_keeps_running(tmp_path):
    cluster = small_cluster(tmp_path)
    targets = ["node-0", "sched-0"]
    with LocalTestbed(cluster, tmp_path / "bed", keys=False) as bed:
        counters(cluster, bed)  # every process is up
        before = {name: rss(bed, name) for name in targets}
        huge = b"\x00" * HUGE
        socks = [stranger(cluster.get(name).address) for name in targets]
        for sock in socks:
            sock.send(huge, copy=False)
        time.sleep(2.0)
        grown = {name: rss(bed, name) - before[name] for name in targets}
        for sock in socks:
            sock.close()
        del huge
        print("RSS growth after a 100 MB frame (bytes):", grown)
        assert not bed.dead()
        assert all(g < 4_000_000 for g in grown.values()), grown
        outcome = replay(cluster, bed, jobs(), shutdown=True)
        assert results(outcome)[:2] == (12, True)
        assert bed.wait(10)


def test_a_frame_above_the_limit_is_not_sent(tmp_path):
    peers = {"a": "tcp://127.0.0.1:1"}
    transport = Transport("me", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", peers, max_frame=1000)
    try:
        with pytest.raises(FrameTooLarge):
            transport.send("a", b"x" * 1001)
    finally:
        transport.close()


# --- meaning checks without keys ----------------------------------------------------------------------


def test_without_keys_a_shutdown_from_a_stranger_is_counted_and_ignored(tmp_path, caplog):
    cluster = small_cluster(tmp_path)
    node = cluster.get("node-0")
    with LocalTestbed(cluster, tmp_path / "bed", keys=False) as bed:
        counters(cluster, bed)
        claims = [None, f"node-1@{cluster.get('node-1').address}#1".encode()]  # anonymous; a peer's name
        socks = [stranger(node.address, claim) for claim in claims]
        for sock in socks:
            sock.send(encode(Shutdown()))
        time.sleep(0.5)
        for sock in socks:
            sock.close()
        assert not bed.dead()
        assert counters(cluster, bed)["dropped.shutdown-from-stranger"] == 2
        assert "ignored a Shutdown from" in bed.log_tail("node-0", 50)
        outcome = replay(cluster, bed, jobs(4), shutdown=True)  # the frontend's Shutdown still works
        assert outcome.frontend.done
        assert bed.wait(10)


def test_without_keys_jobs_and_failure_news_count_only_from_the_frontend(tmp_path):
    cluster = small_cluster(tmp_path)
    sched, node = cluster.schedulers[0], cluster.get("node-0")
    with LocalTestbed(cluster, tmp_path / "bed", keys=False) as bed:
        counters(cluster, bed)
        to_sched, to_node = stranger(sched.address), stranger(node.address)
        for i in range(50):  # a flood of made-up jobs would grow the scheduler's memory and fill nodes
            to_sched.send(encode(SubmitJob(10_000 + i, [60.0] * 4, 60.0)))
        to_sched.send(encode(PeerDown("node-0")))  # and a lie about a death
        to_node.send(encode(PeerDown(sched.name)))
        time.sleep(0.5)
        to_sched.close()
        to_node.close()
        c = counters(cluster, bed)
        assert c["dropped.submitjob-from-stranger"] == 50 and c["dropped.peerdown-from-stranger"] == 2
        assert c.get("jobs", 0) == 0 and c["probes"] == 0
        outcome = replay(cluster, bed, jobs(4), shutdown=True)  # node-0 and the scheduler still serve
        assert outcome.frontend.done
        assert bed.wait(10)


def test_without_keys_a_forged_job_done_does_not_count(tmp_path, caplog):
    cluster = small_cluster(tmp_path)
    work = jobs(12)
    with LocalTestbed(cluster, tmp_path / "bed", keys=False) as bed:
        clean = results(replay(cluster, bed, work, shutdown=False))
        sock = stranger(cluster.frontend.address)
        for job in work:  # queued until the replay's frontend listens: it reads them at its start
            sock.send(encode(JobDone(job.job_id, 0.0)))
        with caplog.at_level(logging.WARNING, logger="aviary.runtime"):
            attacked = replay(cluster, bed, work, shutdown=True)
        sock.close()
        assert results(attacked) == clean
        assert attacked.counters["dropped.jobdone-from-stranger"] == len(work)  # a stranger: not a scheduler
        assert len([r for r in caplog.records if "ignored a JobDone" in r.getMessage()]) == 1  # once a kind
        assert bed.wait(10)


@pytest.mark.parametrize("keys", [False, True], ids=["no-keys", "keys"])
def test_a_stranger_s_work_orders_completions_and_counters_change_nothing(tmp_path, keys):
    """Issue 26's attacks 1-3 from a socket of no cluster, claiming no name: ``Probe`` and ``PlaceTask``
    to the nodes (10 of them stalled a Sparrow replay), ``GetTask`` and ``TaskFinished`` to the
    scheduler (which handed it tasks and took its completions: 82 jobs faked), forged ``Stats`` to the
    frontend, a ``Hello`` to each process. Without keys each is dropped by role; with keys, refused at the
    handshake. Every job finishes once, honestly, and no forged counter reaches the results."""
    cluster = small_cluster(tmp_path, keys=keys)
    sched, work = cluster.schedulers[0], jobs()
    with LocalTestbed(cluster, tmp_path / "bed", keys=False) as bed:
        counters(cluster, bed)  # every process is up
        socks = {p.name: stranger(p.address) for p in cluster.processes}
        for node in cluster.nodes:
            for i, job in enumerate(work):
                throw(socks[node.name], encode(Probe(job.job_id, DURATION, 3)))
                throw(socks[node.name], encode(PlaceTask(job.job_id, i, 60.0, 60.0)))
        for job in work:
            throw(socks[sched.name], encode(GetTask(job.job_id)))
            throw(socks[sched.name], encode(TaskFinished(job.job_id, 0)))
        throw(socks[cluster.frontend.name], encode(Stats({"tasks_finished": 10**9}, {"AssignTask": 10**9})))
        for sock in socks.values():
            throw(sock, encode(Hello(99)))
        time.sleep(0.3)
        attacked = replay(cluster, bed, work, shutdown=False)
        processes = counters(cluster, bed, shutdown=True)  # since they started
        for sock in socks.values():
            sock.close()
        finished, honest, done = results(attacked)  # every job, no faster than its tasks, each task once
        assert finished == len(work) and honest and done["tasks_finished"] == done["tasks_launched"] == 36
        assert attacked.messages["AssignTask"] == attacked.counters["tasks_finished"] == 3 * len(work)
        assert processes["tasks_finished"] == 3 * len(work)
        drops = {
            k: v for k, v in (Counter(processes) + attacked.counters).items() if k.startswith("dropped.")
        }
        if keys:
            assert set(drops) <= {"dropped.no-key", "dropped.unknown-key"} and drops
        else:
            assert drops["dropped.probe-from-stranger"] == drops["dropped.placetask-from-stranger"] == 24
            assert drops["dropped.gettask-from-stranger"] == drops["dropped.taskfinished-from-stranger"] == 12
            assert drops["dropped.stats-from-stranger"] == 1  # the frontend's, during the replay
            assert drops["dropped.hello-from-stranger"] == 4
        assert not {k: v for k, v in bed.dead().items() if v != 0}
        assert bed.wait(10)


def test_the_id_a_process_showed_one_peer_cannot_lock_it_out_of_another():
    """Attack 4: a stranger learnt the routing id a node presented to it and claimed it at a scheduler
    before the node connected there, so the node's own connection was ignored for the whole run. Each
    connection now presents an id of its own."""
    from aviary.common.cluster import free_ports

    ports = free_ports(3)
    peers = {name: f"tcp://127.0.0.1:{port}" for name, port in zip("abc", ports, strict=True)}
    a, b, c = (Transport(name, peers[name], peers[name], peers) for name in "abc")
    try:
        a.send("c", b"hi")
        assert wait_recv(c) == ("a", b"hi")
        (shown,) = c._senders  # the id ``a`` presented to c
        squatter = stranger(peers["b"], shown)
        squatter.send(b"first")
        assert wait_recv(b) == ("a", b"first")  # without keys a name is a claim ...
        a.send("b", b"real")
        assert wait_recv(b) == ("a", b"real")  # ... but the owner's connection is heard
        squatter.close()
    finally:
        for t in (a, b, c):
            t.close()


def test_a_frontend_takes_stats_only_in_answer_to_its_own_request():
    from aviary.common.frontend import FrontendCore, round_robin

    fe = FrontendCore("fe", jobs(1), round_robin(["s0"]))
    fe.on_message(0.1, "s0", Stats({"tasks_finished": 10**9}, {}))
    assert fe.stats == {} and fe.counters["stats_not_asked_for"] == 1
    fe.collect(["s0"], shutdown=False)
    fe.on_message(0.2, "s0", Stats({"tasks_finished": 3}, {}))
    fe.on_message(0.3, "s0", Stats({"tasks_finished": 10**9}, {}))  # one answer per request
    assert fe.message_totals()[1]["tasks_finished"] == 3 and fe.counters["stats_not_asked_for"] == 2


def test_a_frontend_takes_job_done_only_from_the_scheduler_it_submitted_to():
    from aviary.common.frontend import FrontendCore, round_robin

    fe = FrontendCore("fe", jobs(2), round_robin(["s0", "s1"]))
    fe.start(0.0)
    fe.on_timer(0.0, "submit")
    fe.on_timer(0.02, "submit")
    fe.on_message(0.5, "s1", JobDone(0, 0.0))  # job 0 went to s0
    fe.on_message(0.5, "stranger", JobDone(1, 0.0))
    assert fe.counters["job_done_from_stranger"] == 2 and fe.finished == 0
    fe.on_message(0.6, "s0", JobDone(0, 0.0))
    assert fe.finished == 1


# --- routing ids ---------------------------------------------------------------------------------------


def test_reused_routing_ids_neither_steal_a_link_nor_kill_a_process(tmp_path):
    """20 connections to the scheduler claim a node's routing ids (its bare name, ZeroMQ's id for the
    scheduler's own link to it, would have aborted the scheduler at its first send there; and its old
    ``name@address`` id); the replay runs as ever."""
    cluster = small_cluster(tmp_path)
    sched, node = cluster.get("sched-0"), cluster.get("node-0")
    claims = [b"node-0", f"node-0@{node.address}".encode()] * 10
    with LocalTestbed(cluster, tmp_path / "bed", keys=False) as bed:
        socks = [stranger(sched.address, claim) for claim in claims]
        for sock in socks:
            sock.send(b"hello")
        time.sleep(0.3)
        outcome = replay(cluster, bed, jobs(), shutdown=True)
        for sock in socks:
            sock.close()
        assert results(outcome)[:2] == (12, True)
        assert not {k: v for k, v in bed.dead().items() if v != 0}
        assert bed.wait(10)


def test_a_connection_reusing_a_live_peers_routing_id_is_ignored():
    """Without keys, no handover: the first connection keeps its routing id."""
    from aviary.common.cluster import free_ports

    pa, pb = free_ports(2)
    peers = {"a": f"tcp://127.0.0.1:{pa}", "b": f"tcp://127.0.0.1:{pb}"}
    a = Transport("a", peers["a"], peers["a"], peers)
    b = Transport("b", peers["b"], peers["b"], peers)
    try:
        a.send("b", b"one")
        assert wait_recv(b) == ("a", b"one")
        intruder = stranger(peers["b"], a.sock.getsockopt(zmq.ROUTING_ID))
        intruder.send(b"forged")
        a.send("b", b"two")
        assert wait_recv(b) == ("a", b"two")
        assert wait_recv(b, 0.3) is None  # the intruder's frame never arrives
        b.send("a", b"back")
        assert wait_recv(a) == ("b", b"back")
        intruder.close()
    finally:
        a.close()
        b.close()


def wait_recv(transport: Transport, timeout: float = 3.0) -> tuple[str, bytes] | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if transport.sock.poll(50):
            got = transport.recv()
            if got is not None:
                return got
    return None


# --- keys ------------------------------------------------------------------------------------------------


def test_aviary_keys_writes_secret_files_for_the_user_only_and_public_keys_into_the_description(
    tmp_path, capsys
):
    cluster = policy_cluster("sparrow", nodes=2, slots=1, schedulers=1)
    path = tmp_path / "cluster.toml"
    write_cluster(cluster, path)
    assert main(["keys", str(path)]) == 0
    folder = keys_folder(path)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    secrets = sorted(folder.iterdir())
    assert [s.name for s in secrets] == sorted(f"{n}.secret" for n in ["control", *cluster.addresses()])
    assert all(stat.S_IMODE(s.stat().st_mode) == 0o600 for s in secrets)
    text = path.read_text()
    assert 'keys = "cluster.keys"' in text
    assert not any(s.read_text().strip() in text for s in secrets)
    keyed = load_cluster(path)
    assert keyed.keys == folder.resolve() and all(p.public_key for p in keyed.processes)
    assert str(folder) in capsys.readouterr().out

    # All or none: a process without a public key in a keyed description is one line, exit 2.
    path.write_text(text.replace(f'public_key = "{keyed.get("node-1").public_key}"\n', ""))
    assert main(["replay", "--connect", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "field 'public_key'" in err


def test_with_keys_strangers_are_refused_at_the_handshake_and_the_replay_is_unchanged(tmp_path, caplog):
    cluster = small_cluster(tmp_path, keys=True)
    work = jobs(12)
    targets = [p.address for p in cluster.processes]  # the frontend's too
    with LocalTestbed(cluster, tmp_path / "bed", keys=False) as bed:
        clean = results(replay(cluster, bed, work, shutdown=False))

        # Strangers without keys: Shutdown, forged JobDone, garbage, a 100 MB frame, a peer's name.
        node = cluster.get("node-0")
        socks = [stranger(a) for a in targets]
        socks += [stranger(node.address, f"frontend@{cluster.frontend.address}#1".encode())]
        for sock in socks:
            for frame in (encode(Shutdown()), encode(JobDone(0, 0.0)), os.urandom(64), b"\x00" * 1000):
                throw(sock, frame)
        throw(socks[0], b"\x00" * HUGE)
        # A stranger with a key of its own: refused by the ZAP handler, logged once per address.
        public, secret = zmq.curve_keypair()
        server = node.public_key.encode() if node.public_key else b""
        keyed = stranger(node.address, CURVE_PUBLICKEY=public, CURVE_SECRETKEY=secret, CURVE_SERVERKEY=server)
        throw(keyed, encode(Shutdown()))
        with caplog.at_level(logging.WARNING):
            attacked = replay(cluster, bed, work, shutdown=False)
        for sock in [*socks, keyed]:
            sock.close()
        assert results(attacked) == clean
        assert attacked.frontend.counters["job_done_from_stranger"] == 0  # never even heard
        refused = counters(cluster, bed, shutdown=True)
        assert refused["dropped.unknown-key"] >= 1 and refused["dropped.no-key"] >= len(targets) - 1
        assert bed.wait(10), bed.dead()
        assert set(bed.dead().values()) == {0}  # every process exited on the frontend's Shutdown
        logs = "".join((bed.logs / f"{p.name}.log").read_text() for p in cluster.processes[1:])
    assert logs.count("refused a connection from 127.0.0.1: its key is not") == 1  # once per address
    for p in cluster.processes[1:]:
        said = (bed.logs / f"{p.name}.log").read_text()
        # once per address (a connection gone before its address was read counts as an unknown one)
        assert 1 <= said.count("at the handshake: it offered no key") <= 2, said
    secret_keys = [s.read_text().strip() for s in keys_folder(tmp_path / "cluster.toml").iterdir()]
    said = logs + caplog.text
    assert not any(s in said for s in secret_keys)
    assert not any(p.public_key and p.public_key in said for p in cluster.processes)


def test_with_keys_a_name_comes_from_the_key_not_the_routing_id(tmp_path):
    """A keyed peer claiming another's routing id is still named by its own key."""
    cluster = small_cluster(tmp_path, keys=True)
    peers = cluster.addresses()
    a = Transport("node-0", cluster.get("node-0").address, cluster.get("node-0").address, peers)
    b = Transport("node-1", cluster.get("node-1").address, cluster.get("node-1").address, peers)
    try:
        secret = (cluster.keys / "node-0.secret").read_bytes().strip() if cluster.keys else b""
        liar = stranger(
            cluster.get("node-1").address,
            f"frontend@{cluster.frontend.address}#x".encode(),
            CURVE_PUBLICKEY=(cluster.get("node-0").public_key or "").encode(),
            CURVE_SECRETKEY=secret,
            CURVE_SERVERKEY=(cluster.get("node-1").public_key or "").encode(),
        )
        liar.send(b"who am i")
        assert wait_recv(b) == ("node-0", b"who am i")
        liar.close()
    finally:
        a.close()
        b.close()


# --- exposure ---------------------------------------------------------------------------------------------


def test_binding_every_interface_without_keys_warns_once_and_the_table_shows_the_bound_address(caplog):
    from rich.console import Console

    from aviary.common.cluster import free_ports

    port = free_ports(1)[0]
    with caplog.at_level(logging.WARNING, logger="aviary.transport"):
        transport = Transport("x", f"tcp://0.0.0.0:{port}", f"tcp://127.0.0.1:{port}", {})
        transport.close()
    warned = [r.getMessage() for r in caplog.records if "without keys" in r.getMessage()]
    assert len(warned) == 1 and f"0.0.0.0:{port}" in warned[0]
    assert is_loopback("tcp://127.0.0.1:1") and is_loopback("localhost")
    assert not is_loopback("tcp://0.0.0.0:1") and not is_loopback("tcp://*:1")

    cluster = policy_cluster("sparrow", nodes=1, slots=1, schedulers=1, bind_ports=False)
    cluster.get("node-0").bind = "0.0.0.0"
    console = Console(record=True, width=200)
    console.print(cluster_table(cluster))
    shown = console.export_text()
    assert f"(bound tcp://0.0.0.0:{cluster.get('node-0').port})" in shown
    assert "no keys" in shown
    assert "node-0" not in (exposure(cluster, {"sched-0"}) or "")
    assert "0.0.0.0" in (exposure(cluster) or "")


def test_a_get_task_that_cannot_be_sent_frees_its_slot_at_once():
    """A probe naming a scheduler with no address (one a steal brought, say): the node's ``GetTask`` is
    not sent, and the runtime answers it with a ``NoTask`` so the slot is not reserved for ever."""
    from aviary.common.cluster import free_ports
    from aviary.common.runtime import Runtime
    from aviary.worker.node_monitor import NodeMonitorCore

    address = f"tcp://127.0.0.1:{free_ports(1)[0]}"
    node = NodeMonitorCore("node-0", slots=1)
    runtime = Runtime(node, Transport("node-0", address, address, {"node-0": address}))
    try:
        runtime._deliver("ghost", Probe(7, DURATION, 3))
        assert runtime.errors["unknown-peer"] == 1
        assert node.free == 1 and not node.queue
    finally:
        runtime.transport.close(0)


def test_a_local_testbed_makes_keys_of_its_own_by_default_and_removes_them_at_its_end(tmp_path):
    """Secure by default, loopback included: public keys in the description, secrets 0600 in a 0700
    folder while the testbed runs, a keyless stranger refused at the handshake, the secrets gone after."""
    cluster = small_cluster(tmp_path)
    assert cluster.keys is None
    with LocalTestbed(cluster, tmp_path / "bed") as bed:
        folder = keys_folder(bed.cluster_file)
        assert load_cluster(bed.cluster_file).keys == folder.resolve()
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        secrets = sorted(folder.iterdir())
        assert len(secrets) == len(cluster.processes) + 1  # and control's
        assert all(stat.S_IMODE(s.stat().st_mode) == 0o600 for s in secrets)
        counters(cluster, bed)  # every process is up
        sock = stranger(cluster.get("node-0").address)
        throw(sock, encode(Shutdown()))
        time.sleep(0.3)
        sock.close()
        found = counters(cluster, bed, shutdown=True)
        assert found["dropped.no-key"] >= 1 and "dropped.shutdown-from-stranger" not in found
        assert bed.wait(10)
    assert not folder.exists()
