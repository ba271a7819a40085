"""The plain-TCP transport (``transport = "tcp"``, issue 27): frames by name, a peer not yet listening,
a peer that restarts, bad and oversized frames refused with the process going on, keys refused, and the
choice carried by the cluster description."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aviary.common.addresses import FrameTooLarge, UnknownPeer
from aviary.common.cluster import ClusterError, Peers, free_ports, load_cluster, local_cluster, write_cluster
from aviary.common.keys import make_keys, z85_decode
from aviary.common.tcp_transport import HELLO, UNGREETED, TcpTransport
from aviary.common.transport import Transport
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


def test_what_is_sent_while_held_goes_at_release_in_one_write_per_peer(monkeypatch) -> None:
    peers = book("a", "b", "c")
    a, b, c = (TcpTransport(n, peers[n], peers[n], peers) for n in "abc")
    try:
        a.send("b", b"warm")
        a.send("c", b"warm")
        assert receive(b, a) == ("a", b"warm") and receive(c, a) == ("a", b"warm")
        writes: list[str] = []
        flush = TcpTransport._flush
        monkeypatch.setattr(
            TcpTransport, "_flush", lambda self, link: (writes.append(link.name), flush(self, link))
        )
        a.hold()
        for i in range(5):
            a.send("b", b"b%d" % i)
            a.send("c", b"c%d" % i)
        time.sleep(0.05)
        assert writes == [] and b.recv() is None and c.recv() is None  # held
        a.release()
        assert sorted(writes) == ["b", "c"]  # one write each
        assert [receive(b, a) for _ in range(5)] == [("a", b"b%d" % i) for i in range(5)]
        assert [receive(c, a) for _ in range(5)] == [("a", b"c%d" % i) for i in range(5)]
        a.send("b", b"now")
        assert writes[-1] == "b"  # released: sent at once again
    finally:
        for t in (a, b, c):
            t.close()


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
        with raw(peers["me"]) as s:
            s.sendall((2000).to_bytes(4, "big"))  # a first frame longer than any greeting
            time.sleep(0.05)
            assert me.recv() is None
        assert me.counts()["too-large"] == 2
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


def test_the_description_carries_the_choice(tmp_path) -> None:
    cluster = local_cluster(nodes=2, slots=1, schedulers=1)
    zmq = open_transport("x", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", cluster.addresses())
    assert isinstance(zmq, Transport)
    zmq.close()
    cluster.transport = "tcp"
    write_cluster(cluster, tmp_path / "c.toml")
    again = load_cluster(tmp_path / "c.toml")
    assert again.transport == "tcp"
    t = open_transport("x", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", again.addresses())
    assert isinstance(t, TcpTransport)
    t.close()
    text = (tmp_path / "c.toml").read_text().replace('transport = "tcp"', 'transport = "udp"')
    (tmp_path / "bad.toml").write_text(text)
    message = r"bad\.toml:\d+: \[cluster\]: field 'transport': 'udp' is not one of zmq, tcp"
    with pytest.raises(ClusterError, match=message):
        load_cluster(tmp_path / "bad.toml")


# --- with keys ------------------------------------------------------------------------------------------


def keyed(tmp_path: Path, names: int = 3) -> Peers:
    """The address book of a keyed cluster of ``names`` nodes (node-0, node-1, ...) over tcp."""
    cluster = local_cluster(nodes=names, slots=1, schedulers=1)
    cluster.transport = "tcp"
    path = tmp_path / f"c{names}.toml"
    make_keys(cluster, path)
    return load_cluster(path).addresses()


def opened(peers: Peers, name: str) -> TcpTransport:
    t = open_transport(name, peers[name], peers[name], peers)
    assert isinstance(t, TcpTransport) and t.keys is not None
    return t


def recorded(recorder: socket.socket, sender: TcpTransport) -> bytes:
    """What ``sender`` writes to a plain listening socket (its greeting: it waits for an answer)."""
    conn, _ = recorder.accept()
    conn.settimeout(0.01)
    deadline = time.monotonic() + 5
    with conn:
        while time.monotonic() < deadline:
            sender.recv()  # sender's own receive writes what waits once the connection is up
            try:
                return conn.recv(4096)
            except TimeoutError:
                continue
    raise AssertionError("nothing written")


def test_with_keys_frames_are_sealed_and_the_sender_is_the_owner_of_its_key(tmp_path) -> None:
    peers = keyed(tmp_path)
    a, b = opened(peers, "node-0"), opened(peers, "node-1")
    recorder = socket.create_server(("127.0.0.1", 0))
    try:
        for i in range(100):
            a.send("node-1", b"x%d" % i)
        assert [receive(b, a) for _ in range(100)] == [("node-0", b"x%d" % i) for i in range(100)]
        big = bytes(range(256)) * 4096  # 1 MiB: 17 Noise messages
        b.send("node-0", big)
        assert receive(a, b) == ("node-1", big)
        # What goes over the wire is not the frame: a listener posing as node-1 sees ciphertext only.
        a.peers["spy"] = f"tcp://127.0.0.1:{recorder.getsockname()[1]}"
        a.keys.public["spy"] = a.keys.public["node-1"]  # type: ignore[union-attr]
        a.send("spy", b"secret-frame")
        greeting = recorded(recorder, a)
        assert b"secret-frame" not in greeting and b"node-0@" not in greeting  # the claim is sealed too
    finally:
        recorder.close()
        a.close()
        b.close()


def test_with_keys_a_stranger_s_key_a_stolen_name_and_a_replayed_greeting_are_refused(tmp_path) -> None:
    peers = keyed(tmp_path)
    (tmp_path / "other").mkdir()
    other = keyed(tmp_path / "other", 2)
    b = opened(peers, "node-1")
    # A process of another cluster, named node-0 there, with node-1's address as its peer: its key is
    # not one of this cluster's, so it is refused at the handshake.
    other["node-1"] = peers["node-1"]
    other.public["node-1"] = peers.public["node-1"]
    impostor = opened(other, "node-0")
    a = opened(peers, "node-0")
    recorder = socket.create_server(("127.0.0.1", 0))
    try:
        impostor.send("node-1", b"forged")
        a.send("node-1", b"real")
        assert receive(b, a, impostor) == ("node-0", b"real")
        time.sleep(0.1)
        assert b.recv() is None
        assert b.counts()["unknown-key"] >= 1
        # A plain greeting to a keyed process is no handshake.
        with raw(peers["node-1"]) as s:
            hello = HELLO + b"node-0@tcp://127.0.0.1:1"
            s.sendall(len(hello).to_bytes(4, "big") + hello + (6).to_bytes(4, "big") + b"forged")
            time.sleep(0.05)
            assert b.recv() is None
        assert b.counts()["bad-envelope"] == 1
        # A recorded greeting replayed, with a frame after it: the answer goes to whoever replays, but
        # the session's keys need node-0's ephemeral secret, so the frame fails and the connection ends.
        a.peers["rec"] = f"tcp://127.0.0.1:{recorder.getsockname()[1]}"
        a.keys.public["rec"] = a.keys.public["node-1"]  # type: ignore[union-attr]
        a.send("rec", b"x")
        greeting = recorded(recorder, a)
        with raw(peers["node-1"]) as s:
            s.sendall(greeting + (40).to_bytes(4, "big") + os.urandom(40))
            time.sleep(0.1)
            assert b.recv() is None
        assert b.counts()["unauthenticated"] == 1
    finally:
        recorder.close()
        for t in (a, b, impostor):
            t.close()


def test_with_keys_a_member_claiming_another_s_name_is_named_by_its_key(tmp_path) -> None:
    peers = keyed(tmp_path)
    b = opened(peers, "node-1")
    liar = TcpTransport("node-2", peers["node-2"], peers["node-2"], peers)
    liar._claim = f"node-0@{peers['node-0']}".encode()  # what node-2 says of itself
    try:
        liar.send("node-1", b"i am node-0")
        assert receive(b, liar) == ("node-2", b"i am node-0")
    finally:
        b.close()
        liar.close()


def test_connections_that_never_greet_are_bounded() -> None:
    peers = book("me", "a")
    me = TcpTransport("me", peers["me"], peers["me"], peers)
    a = TcpTransport("a", peers["a"], peers["a"], peers)
    silent = [raw(peers["me"]) for _ in range(UNGREETED + 20)]
    try:
        time.sleep(0.1)
        assert me.recv() is None
        assert me.counts()["ungreeted"] >= 20 and len(me._ungreeted) <= UNGREETED
        a.send("me", b"still heard")
        assert receive(me, a) == ("a", b"still heard")
    finally:
        for s in silent:
            s.close()
        me.close()
        a.close()


def test_with_keys_a_controller_s_address_is_learnt_only_from_a_live_connection(tmp_path) -> None:
    """A launcher's ``control`` is answered where its greeting says it listens, but a recorded greeting
    replayed (its sender gone) teaches nothing: the process would answer a dead address."""
    peers = keyed(tmp_path)
    b = opened(peers, "node-1")
    (port,) = free_ports(1)
    here = f"tcp://127.0.0.1:{port}"
    ctl = TcpTransport("control", here, here, peers)
    recorder = socket.create_server(("127.0.0.1", 0))
    try:
        ctl.peers["rec"] = f"tcp://127.0.0.1:{recorder.getsockname()[1]}"
        ctl.keys.public["rec"] = ctl.keys.public["node-1"]  # type: ignore[union-attr]
        ctl.send("rec", b"x")
        greeting = recorded(recorder, ctl)
        with raw(peers["node-1"]) as s:
            s.sendall(greeting)
            time.sleep(0.1)
            assert b.recv() is None
        assert "control" not in b.peers
        ctl.send("node-1", b"hello")
        assert receive(b, ctl) == ("control", b"hello")
        assert b.peers["control"] == here
    finally:
        recorder.close()
        ctl.close(linger=0)
        b.close()


@pytest.mark.integration
def test_an_eagle_replay_over_keyed_tcp_finishes_every_job_and_drops_nothing(tmp_path, no_leftover_children):
    """Frontend, central, schedulers and nodes over the tcp transport with the testbed's own keys: every
    job finishes, no frame is dropped anywhere, and the run says which wire it used."""
    from aviary.launch.cli.main import main

    out = tmp_path / "run"
    flags = ["--policy", "eagle", "--nodes", "8", "--jobs", "60", "--duration", "4s", "--quiet", "--yes"]
    assert main(["replay", *flags, "--transport", "tcp", "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert s["finished"] == s["jobs"] == 60 and s["extra"]["transport"] == "tcp"
    assert not {k: v for k, v in s["counters"].items() if k.startswith(("dropped.", "error."))}
    assert load_cluster(out / "testbed" / "cluster.toml").transport == "tcp"


def test_the_session_ciphers_seal_as_noise_itself_does(tmp_path) -> None:
    """After the handshake, frames are sealed without the library's per-message layers: the bytes must be
    Noise's own, byte for byte, and open in order on the other side (a frame of several pieces too)."""
    from cryptography.exceptions import InvalidTag

    from aviary.common.tcp_transport import _ciphers, _Keys

    peers = keyed(tmp_path)
    a, b = _Keys.of("node-0", peers), _Keys.of("node-1", peers)
    assert a is not None and b is not None
    initiator, responder = a.session(b.public["node-1"]), b.session(None)
    responder.read_message(bytes(initiator.write_message(b"claim")))
    initiator.read_message(bytes(responder.write_message()))
    send, _ = _ciphers(initiator)
    _, receive = _ciphers(responder)
    for frame in (b"one", b"two"):
        ours = send.seal(frame)
        assert ours == initiator.encrypt(frame)  # the library's own, from the same key and counter
        assert responder.decrypt(ours) == frame
    receive.n = send.n  # past the two frames the library opened
    big = bytes(range(256)) * 300  # 76,800 bytes: two pieces
    sealed = send.seal(big)
    assert len(sealed) == len(big) + 2 * 16 and receive.open(sealed) == big
    damaged = bytearray(send.seal(b"x"))
    damaged[-1] ^= 1  # one bit of the tag
    with pytest.raises(InvalidTag):
        receive.open(bytes(damaged))


def test_keys_read_without_zeromq_are_zeromq_s_keys() -> None:
    import zmq
    from zmq.utils import z85

    for _ in range(20):
        public, secret = zmq.curve_keypair()
        assert z85_decode(secret) == z85.decode(secret) and z85_decode(public) == z85.decode(public)
    assert z85_decode(z85.encode(bytes(range(256)))) == bytes(range(256))
    for bad, why in [(b"abcd", "multiple of 5"), (b"abc~d", "not a Z85 character"), (b"#####", "32 bits")]:
        with pytest.raises(ValueError, match=why):
            z85_decode(bad)


def test_a_process_of_a_plain_tcp_testbed_never_loads_zeromq(tmp_path) -> None:
    """A node of a keyed tcp testbed reads its keys, opens its transport and builds its core: ZeroMQ
    (its library, ~1 MiB of a process's memory) stays out of it."""
    cluster = local_cluster(nodes=2, slots=1, schedulers=1)
    cluster.transport = "tcp"
    path = tmp_path / "c.toml"
    make_keys(cluster, path)
    script = f"""
import sys
from aviary.launch.drivers import process
from aviary.common.cluster import load_cluster
from aviary.common.wire import open_transport
from aviary.launch.policies.registry import build_core
cluster = load_cluster({str(path)!r})
peers = cluster.addresses()
t = open_transport("node-0", "tcp://127.0.0.1:0", "tcp://127.0.0.1:0", peers)
assert t.keys is not None
build_core(cluster.get("node-0"), cluster)
print(sorted(m for m in sys.modules if m.split(".")[0] == "zmq"))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
