"""The plain-TCP transport (``transport = "tcp"``, issue 27): frames by name, a peer not yet listening,
a peer that restarts, bad and oversized frames refused with the process going on, keys refused, and the
choice carried by the cluster description."""

from __future__ import annotations

import socket
import time

import pytest

from aviary.common.cluster import ClusterError, Peers, free_ports, load_cluster, local_cluster, write_cluster
from aviary.common.tcp_transport import HELLO, TcpTransport
from aviary.common.transport import FrameTooLarge, Transport, UnknownPeer
from aviary.common.wire import open_transport


def book(*names: str) -> dict[str, str]:
    return {name: f"tcp://127.0.0.1:{port}" for name, port in zip(names, free_ports(len(names)), strict=True)}


def receive(t: TcpTransport, *others: TcpTransport, timeout: float = 5.0) -> tuple[str, bytes]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = t.recv()
        if got is not None:
            return got
        for o in others:
            assert o.recv() is None, "a frame came where none was sent"
        time.sleep(0.002)
    raise AssertionError(f"nothing reached {t.name}")


def test_frames_go_by_name_in_order_both_ways() -> None:
    peers = book("a", "b")
    a, b = (TcpTransport(n, peers[n], peers[n], peers) for n in "ab")
    try:
        for i in range(200):
            a.send("b", b"x%d" % i)
        assert [receive(b, a) for _ in range(200)] == [("a", b"x%d" % i) for i in range(200)]
        b.send("a", b"back")
        assert receive(a, b) == ("b", b"back")
        big = bytes(range(256)) * 4096  # 1 MiB: written over several wake-ups
        a.send("b", big)
        assert receive(b, a) == ("a", big)
        assert b.recv() is None and not b.readable()
    finally:
        a.close()
        b.close()


def test_frames_wait_for_a_peer_that_is_not_listening_yet() -> None:
    peers = book("a", "b")
    a = TcpTransport("a", peers["a"], peers["a"], peers)
    a.send("b", b"early")  # refused: a dials again every 0.1 s, on its own receives here
    time.sleep(0.15)
    a.recv()
    b = TcpTransport("b", peers["b"], peers["b"], peers)
    try:
        assert receive(b, a) == ("a", b"early")
    finally:
        a.close()
        b.close()


def test_a_peer_that_restarts_at_the_same_address_gets_the_next_frames() -> None:
    peers = book("a", "b")
    a = TcpTransport("a", peers["a"], peers["a"], peers)
    b = TcpTransport("b", peers["b"], peers["b"], peers)
    a.send("b", b"one")
    assert receive(b, a) == ("a", b"one")
    b.close(linger=0)
    a.recv()  # a sees its connection close
    b = TcpTransport("b", peers["b"], peers["b"], peers)
    try:
        a.send("b", b"two")
        assert receive(b, a) == ("a", b"two")
    finally:
        a.close()
        b.close()


def test_close_writes_what_waits() -> None:
    peers = book("a", "b")
    b = TcpTransport("b", peers["b"], peers["b"], peers)
    a = TcpTransport("a", peers["a"], peers["a"], peers)
    for i in range(50):
        a.send("b", b"last%d" % i)
    a.close()  # before the connection is even up
    try:
        assert [receive(b) for _ in range(50)] == [("a", b"last%d" % i) for i in range(50)]
    finally:
        b.close()


def raw(address: str) -> socket.socket:
    host, port = address.removeprefix("tcp://").rsplit(":", 1)
    return socket.create_connection((host, int(port)))


def test_bad_hello_and_oversized_frames_are_refused_and_counted_and_the_process_goes_on() -> None:
    peers = book("me", "a")
    me = TcpTransport("me", peers["me"], peers["me"], peers, max_frame=1000)
    a = TcpTransport("a", peers["a"], peers["a"], peers)
    try:
        with raw(peers["me"]) as s:
            s.sendall((5).to_bytes(4, "big") + b"hello")  # no hello first
            time.sleep(0.05)
            assert me.recv() is None
        assert me.counts()["bad-envelope"] == 1
        with raw(peers["me"]) as s:
            hello = HELLO + b"x@tcp://127.0.0.1:1"
            s.sendall(len(hello).to_bytes(4, "big") + hello + (1 << 30).to_bytes(4, "big"))
            time.sleep(0.05)
            assert me.recv() is None
        assert me.counts()["too-large"] == 1
        with pytest.raises(FrameTooLarge):
            me.send("a", b"x" * 1001)  # above this process's own limit: not sent
        a.send("me", b"fine")
        assert receive(me, a) == ("a", b"fine")
        with pytest.raises(UnknownPeer):
            a.send("nobody", b"x")
    finally:
        me.close()
        a.close()


def test_a_controller_is_answered_at_the_address_it_gives() -> None:
    peers = Peers(book("node", "frontend"))
    peers.roles = {"node": "node", "frontend": "frontend"}
    (port,) = free_ports(1)
    control = f"tcp://127.0.0.1:{port}"
    node = TcpTransport("node", peers["node"], peers["node"], peers)
    ctl = TcpTransport("control", control, control, {"node": peers["node"]})
    try:
        ctl.send("node", b"ping")
        assert receive(node, ctl) == ("control", b"ping")
        node.send("control", b"pong")
        assert receive(ctl, node) == ("node", b"pong")
    finally:
        node.close()
        ctl.close()


def test_keys_are_refused_and_the_description_carries_the_choice(tmp_path) -> None:
    peers = Peers(book("a"))
    peers.public = {"a": "k" * 40}
    with pytest.raises(ClusterError, match="no CurveZMQ keys"):
        TcpTransport("a", peers["a"], peers["a"], peers)
    cluster = local_cluster(nodes=2, slots=1, schedulers=1)
    assert isinstance(
        open_transport("x", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", cluster.addresses()), Transport
    )
    cluster.transport = "tcp"
    write_cluster(cluster, tmp_path / "c.toml")
    again = load_cluster(tmp_path / "c.toml")
    assert again.transport == "tcp"
    t = open_transport("x", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", again.addresses())
    assert isinstance(t, TcpTransport)
    t.close()
    text = (tmp_path / "c.toml").read_text().replace('transport = "tcp"', 'transport = "udp"')
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(
        ClusterError, match=r"bad\.toml:\d+: \[cluster\]: field 'transport': 'udp' is not one of zmq, tcp"
    ):
        load_cluster(tmp_path / "bad.toml")
