"""The wire protocol as a document (docs/protocol.md): its tables are the messages' own, its JSON Schema
changes only with a new protocol version, and two clients written from it alone, importing nothing of
Aviary, join real testbeds and finish a replay (over ZeroMQ, without and with CurveZMQ keys)."""

from __future__ import annotations

import ast
import io
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
import zmq
from zmq.utils.monitor import recv_monitor_message

from aviary.common import protocol_doc
from aviary.common.messages import MESSAGE_TYPES, PROTOCOL_VERSION, decode, encode
from aviary.launch.cli.protocol import print_schema

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"
CLIENTS = Path(__file__).resolve().parent / "protocol_clients"

FINGERPRINTS = {
    2: "44db58b8f5f432d65d9abd9be32dd77e8f6d465ef3d081a84001f1f2cf360599",
    3: "df4645f57103f3426c1ba536147925f370cb75543f172dcecd55dbf77d834c85",  # Hello.tasks, TaskRecords
    4: "145082d676af2799f3f1c634a9061f9beaf0f0618d4203a65368cc008423c265",  # Link, LinkFaults
}
"""The SHA-256 of ``aviary protocol schema`` (keys sorted) for each protocol version."""


@pytest.mark.parametrize("block", list(protocol_doc.BLOCKS))
def test_the_documents_tables_are_generated_from_the_messages(block):
    assert protocol_doc.generated(DOC.read_text(), block) == protocol_doc.BLOCKS[block](), (
        f"docs/protocol.md's generated part {block!r} differs from the messages: "
        "run .venv/bin/python -m aviary.common.protocol_doc"
    )


def test_every_field_has_a_unit_and_meaning_and_no_note_is_stale():
    fields = {cls.__name__: {f.name for f in msgspec.inspect.type_info(cls).fields} for cls in MESSAGE_TYPES}
    notes = {kind: set(by_field) for kind, by_field in protocol_doc.FIELD_NOTES.items()}
    assert notes == {kind: names for kind, names in fields.items() if names}


def test_a_message_changed_without_a_new_protocol_version_fails():
    got, held = protocol_doc.fingerprint(), FINGERPRINTS.get(PROTOCOL_VERSION)
    assert got == held, (
        f"the messages' schema is {got}, not what protocol version {PROTOCOL_VERSION} holds ({held}): "
        "a message changed (a tag, a field, its type or default), so raise PROTOCOL_VERSION in "
        f"common/messages.py and add {{{PROTOCOL_VERSION + 1}: {got!r}}} to FINGERPRINTS in "
        "tests/test_protocol.py (if only msgspec's rendering changed, record the new hash under the same "
        "version), then regenerate docs/protocol.md (python -m aviary.common.protocol_doc)"
    )


def test_a_field_added_changes_the_fingerprint(monkeypatch):
    before = protocol_doc.fingerprint()

    class Extra(msgspec.Struct, array_like=True, tag=99):
        job_id: int

    Extra.TAG = 99  # type: ignore[attr-defined]
    monkeypatch.setattr(protocol_doc, "by_tag", lambda: [*sorted(MESSAGE_TYPES, key=lambda c: c.TAG), Extra])
    assert protocol_doc.fingerprint() != before


def test_the_schema_command_prints_every_message_with_its_tag_the_same_each_time():
    first, second = io.StringIO(), io.StringIO()
    assert print_schema(first) == 0 and print_schema(second) == 0
    assert first.getvalue() == second.getvalue()
    schema = json.loads(first.getvalue())
    assert schema["x-protocol-version"] == PROTOCOL_VERSION
    defs = schema["$defs"]
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in schema["oneOf"]] == list(defs)
    assert [d["x-tag"] for d in defs.values()] == sorted(cls.TAG for cls in MESSAGE_TYPES)
    for cls in MESSAGE_TYPES:
        items = defs[cls.__name__]["prefixItems"]
        names = [f.name for f in msgspec.inspect.type_info(cls).fields]
        assert [item["title"] for item in items] == ["tag", *names]
        assert items[0]["enum"] == [cls.TAG]


def test_a_frame_built_from_the_document_decodes():
    """The document's example frame, and what a foreign client packs with msgpack, are Aviary's frames."""
    import msgpack

    frame = bytes.fromhex("04 93 02 cd 01 2c cb 3f b9 99 99 99 99 99 9a".replace(" ", ""))
    msg = decode(frame)
    assert (type(msg).__name__, msg.job_id, msg.first_start_delay) == ("JobDone", 300, 0.1)
    assert encode(msg) == frame
    assert (
        decode(bytes([PROTOCOL_VERSION]) + msgpack.packb([21, "node"])).slots == 0
    )  # defaults left out at the end


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: a relative import"
            names.add((node.module or "").split(".")[0])
    return names


@pytest.mark.parametrize("client", ["node_monitor.py", "central_fifo.py"])
def test_the_clients_import_only_pyzmq_msgpack_and_the_standard_library(client):
    names = imported(CLIENTS / client)
    assert "aviary" not in names
    assert names - set(sys.stdlib_module_names) == {"zmq", "msgpack"}


# --- foreign clients in real testbeds ------------------------------------------------------------------


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def stranger_knocks(cluster_file: Path, name: str) -> None:
    """A CURVE client with a key that is not the cluster's connects to ``name``: wait until its handshake
    is refused (by ``name``'s ZAP handler: a wrong server key would fail before any ZAP request)."""
    from aviary.common.cluster import load_cluster
    from aviary.common.messages import Hello

    spec = load_cluster(cluster_file).get(name)
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    public, secret = zmq.curve_keypair()
    sock.setsockopt(zmq.CURVE_PUBLICKEY, public)
    sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
    assert spec.public_key is not None
    sock.setsockopt(zmq.CURVE_SERVERKEY, spec.public_key.encode())
    sock.setsockopt(zmq.ROUTING_ID, f"frontend@{spec.address}#stranger".encode())
    monitor = sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_SUCCEEDED)
    try:
        sock.connect(spec.address)
        sock.send(encode(Hello(7)), zmq.NOBLOCK)
        assert monitor.poll(20_000), "no handshake with the client within 20 s"
        event = recv_monitor_message(monitor)["event"]
        assert event == zmq.EVENT_HANDSHAKE_FAILED_AUTH, f"the stranger's handshake gave event {event}"
    finally:
        sock.disable_monitor()
        monitor.close(linger=0)
        sock.close(linger=0)
        ctx.term()


CASES = {
    "fifo": ("fifo", {"central": "central_fifo.py", "node-0": "node_monitor.py"}),
    "sparrow": ("sparrow", {"node-0": "node_monitor.py"}),
}


RUNS = [("fifo", False), ("fifo", True), ("sparrow", True)]


@pytest.mark.integration
@pytest.mark.parametrize(("case", "keys"), RUNS, ids=["fifo", "fifo-keys", "sparrow-keys"])
def test_clients_written_from_the_document_finish_a_replay(tmp_path, case, keys):
    """A central FIFO and a node monitor of their own (over one of Aviary's nodes), or the node alone
    under Aviary's Sparrow schedulers: `aviary replay --connect` finishes every job; with keys, a
    stranger's key is refused by the clients' own ZAP handler."""
    from aviary.launch.cli.main import main
    from aviary.launch.drivers.local import LocalTestbed
    from aviary.launch.policies.registry import policy_cluster

    policy, foreign = CASES[case]
    cluster = policy_cluster(policy, nodes=2, slots=2)
    own = [p.name for p in cluster.processes if p.role != "frontend" and p.name not in foreign]
    clients: dict[str, subprocess.Popen[str]] = {}
    jobs = 30
    with LocalTestbed(cluster, tmp_path / "bed", own, keys=keys) as bed:
        path = bed.cluster_file
        try:
            for name, script in foreign.items():
                clients[name] = subprocess.Popen(
                    [sys.executable, str(CLIENTS / script), str(path), name],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            deadline = time.monotonic() + 30
            for name, child in clients.items():
                port = cluster.get(name).port
                while not listening(port) and child.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert child.poll() is None and listening(port), f"{name} did not start"
            if keys:
                stranger_knocks(path, "node-0")
            out = tmp_path / "out"
            flags = ["--jobs", str(jobs), "--time-scale", "20000", "--quiet", "--out", str(out)]
            status = main(["replay", "--connect", str(path), *flags])
        finally:
            for child in clients.values():
                child.terminate()
            said = {name: child.communicate(timeout=30)[0] for name, child in clients.items()}
    assert status == 0, said
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] == jobs, said
    reports = {name: json.loads(text.strip().splitlines()[-1]) for name, text in said.items()}
    assert reports["node-0"]["tasks_finished"] > 0  # the foreign node ran tasks
    if "central" in foreign:
        assert reports["central"]["jobs_done"] == jobs
        assert summary["messages"]["JobDone"] == jobs  # counted from the foreign central's own Stats
    assert (reports["node-0"]["refused"] > 0) == keys  # its ZAP handler refused the stranger's key
