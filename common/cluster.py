"""The cluster description (TOML): every process with its role, host and port, node slots, partition
and attributes, plus the policy and its parameters. The same file starts the same processes on
loopback, on other hosts or in containers.

    [cluster]
    policy = "sparrow"
    executor = "timer"
    seed = 0
    nodes_per_process = 1  # optional: node monitors hosted by one OS process (see Cluster.units)
    transport = "zmq"      # optional: zmq (default) | tcp (plain TCP, no I/O thread; common/tcp_transport.py)
    [cluster.params]
    probe_ratio = 2.0

    [[process]]
    name = "node-0"
    role = "node"          # frontend | central | scheduler | node
    host = "127.0.0.1"     # where peers reach it
    port = 7001
    bind = "0.0.0.0"       # optional: the interface to bind (default: host)
    slots = 4              # nodes only
    partition = "general"  # nodes only: general | short
    attributes = { rack = "r1", gpu = true }
    capacity = { cores = 16, mem = 64, disk = 1, net = 1 }   # nodes only (multi-resource policies)
    public_key = "..."     # with keys: its CurveZMQ public key (z85)

With keys (``aviary keys``, :mod:`aviary.common.keys`), ``[cluster]`` also names the folder of the
secret keys (``keys``, relative to the file) and the public key of the launchers' ``control`` socket
(``control_key``), and every process has its ``public_key``: all or none.

Unknown fields are errors, named with their file and line, as are bad values.
"""

from __future__ import annotations

import difflib
import re
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .resources import Resources

ROLES = ("frontend", "central", "scheduler", "node")
PARTITIONS = ("general", "short")
CONTROL = "control"
"""The name of a launcher's own frontend (``aviary up``, ``aviary host``), not in the description."""
PACK = "pack-"
"""The name of an OS process hosting several node monitors starts with this (``pack-0``, ...): no
process of a description may be named so."""


class ClusterError(ValueError):
    """A bad cluster description; the message is one line naming the file, line and field."""


def slot_node(slots: int) -> Resources:
    """A node of ``slots`` one-core slots as a capacity vector: 4 GB of memory per slot, one disk and one
    NIC ([D]: cluster files written before capacities, and the slot-based GS_HET-like replays)."""
    return Resources(cores=float(slots), mem=4.0 * slots, disk=1.0, net=1.0)


@dataclass(slots=True)
class ProcessSpec:
    name: str
    role: str
    host: str
    port: int
    slots: int = 0
    partition: str = "general"
    attributes: dict[str, Any] = field(default_factory=dict)
    bind: str | None = None
    capacity: Resources | None = None
    public_key: str | None = None

    @property
    def resources(self) -> Resources:
        """The node's capacity vector; without one, :func:`slot_node` of its ``slots``."""
        return self.capacity if self.capacity is not None else slot_node(self.slots)

    @property
    def address(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    @property
    def bind_address(self) -> str:
        return f"tcp://{self.bind or self.host}:{self.port}"


@dataclass(slots=True)
class Cluster:
    processes: list[ProcessSpec]
    policy: str = "sparrow"
    executor: str = "timer"
    seed: int = 0
    params: dict[str, Any] = field(default_factory=dict)
    keys: Path | None = None
    """The folder of the processes' secret keys (``aviary keys``); None: no keys."""
    control_key: str | None = None
    """The public key of the launchers' ``control`` socket (with keys)."""
    nodes_per_process: int = 1
    """How many node monitors one OS process hosts (issue 27); each keeps its own socket, address and
    name, so no peer can tell a packed node from a lone one."""
    transport: str = "zmq"
    """What every process speaks: ``zmq`` (ZeroMQ) or ``tcp`` (plain TCP read and written from the
    process's own event loop, :mod:`aviary.common.tcp_transport`); both with the same keys."""
    policy_source: str = ""
    """A plug-in policy's source (``module:attribute`` or ``/path/file.py:attribute``), from which every
    process loads it; empty for a built-in (``policy`` names it)."""

    def by_role(self, role: str) -> list[ProcessSpec]:
        return [p for p in self.processes if p.role == role]

    @property
    def nodes(self) -> list[ProcessSpec]:
        return self.by_role("node")

    @property
    def schedulers(self) -> list[ProcessSpec]:
        return self.by_role("scheduler")

    @property
    def central(self) -> ProcessSpec | None:
        found = self.by_role("central")
        return found[0] if found else None

    @property
    def frontend(self) -> ProcessSpec:
        return self.by_role("frontend")[0]

    @property
    def total_slots(self) -> int:
        return sum(p.slots for p in self.nodes)

    def units(self) -> dict[str, list[ProcessSpec]]:
        """The OS processes a launcher starts, by name: every process but the nodes alone under its own
        name; the nodes of each host (and bind interface) in runs of :attr:`nodes_per_process`, in the
        description's order, each run named ``pack-<i>`` (with one node per process, the node's name)."""
        units = {p.name: [p] for p in self.processes if p.role != "node"}
        by_host: dict[tuple[str, str | None], list[ProcessSpec]] = {}
        for p in self.nodes:
            by_host.setdefault((p.host, p.bind), []).append(p)
        k = self.nodes_per_process
        runs = [nodes[i : i + k] for nodes in by_host.values() for i in range(0, len(nodes), k)]
        if k == 1:
            units.update((run[0].name, run) for run in runs)
        else:
            units.update((f"{PACK}{i}", run) for i, run in enumerate(runs))
        return units

    def get(self, name: str) -> ProcessSpec:
        for p in self.processes:
            if p.name == name:
                return p
        raise ClusterError(f"no process named {name!r} in the cluster")

    def addresses(self) -> Peers:
        """Every process's address by name, with what a transport needs to trust them."""
        peers = Peers({p.name: p.address for p in self.processes})
        peers.controllers = frozenset({self.frontend.name, CONTROL})
        peers.roles = {p.name: p.role for p in self.processes}
        peers.roles[CONTROL] = "control"
        peers.transport = self.transport
        if self.keys is not None:
            peers.key_folder = self.keys
            peers.public = {p.name: p.public_key for p in self.processes if p.public_key}
            if self.control_key:
                peers.public[CONTROL] = self.control_key
        return peers


class Peers(dict[str, str]):
    """A cluster's address book (name -> ``tcp://host:port``) for a transport, with ``controllers``
    (who may send ``Shutdown``: the cluster's frontend and the launchers' ``control``), ``roles``
    (name -> role, ``control`` included: what each name may send), ``key_folder`` (the folder of secret
    keys) and ``public`` (name -> public key, z85), empty without keys."""

    controllers: frozenset[str] = frozenset({"frontend", CONTROL})
    key_folder: Path | None = None
    public: dict[str, str]
    roles: dict[str, str]
    transport: str = "zmq"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.public = {}
        self.roles = {}


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """n distinct ports free on ``host`` right now (held open together so they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def local_cluster(
    *,
    nodes: int,
    slots: int,
    schedulers: int,
    policy: str = "sparrow",
    executor: str = "timer",
    central: bool = False,
    seed: int = 0,
    params: dict[str, Any] | None = None,
    host: str = "127.0.0.1",
    short_partition: float = 0.0,
    bind_ports: bool = True,
    capacity: Resources | None = None,
) -> Cluster:
    """A testbed on one host with free ports: a frontend, an optional central scheduler,
    ``schedulers`` distributed schedulers and ``nodes`` node monitors of ``slots`` slots each; the
    last ``short_partition`` share of the nodes forms the short partition. With ``bind_ports`` off
    (the simulator, which never binds), ports are placeholders and no socket is opened. ``capacity``
    gives every node that resource vector (multi-resource policies)."""
    if nodes < 1 or slots < 1:
        raise ClusterError(f"a testbed needs at least one node and one slot (got {nodes} x {slots})")
    count = 1 + int(central) + schedulers + nodes
    ports = iter(free_ports(count, host) if bind_ports else [1 + i % 65535 for i in range(count)])
    procs = [ProcessSpec("frontend", "frontend", host, next(ports))]
    if central:
        procs.append(ProcessSpec("central", "central", host, next(ports)))
    procs += [ProcessSpec(f"sched-{i}", "scheduler", host, next(ports)) for i in range(schedulers)]
    n_short = round(nodes * short_partition)
    procs += [
        ProcessSpec(
            f"node-{i}",
            "node",
            host,
            next(ports),
            slots=slots,
            partition="short" if i >= nodes - n_short else "general",
            capacity=capacity,
        )
        for i in range(nodes)
    ]
    return Cluster(procs, policy=policy, executor=executor, seed=seed, params=dict(params or {}))


# --- TOML ------------------------------------------------------------------------------------------
def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} to TOML")


def dump_cluster(cluster: Cluster, where: Path | None = None) -> str:
    """The description as TOML; its ``keys`` folder relative to ``where`` (the file's own folder) when
    it is inside it, else absolute."""
    out = [
        "[cluster]",
        f"policy = {_toml_value(cluster.policy)}",
        f"executor = {_toml_value(cluster.executor)}",
        f"seed = {cluster.seed}",
    ]
    if cluster.keys is not None:
        folder = cluster.keys.resolve()
        if where is not None and folder.parent == where.resolve():
            folder = Path(folder.name)
        out.append(f"keys = {_toml_value(str(folder))}")
    if cluster.control_key:
        out.append(f"control_key = {_toml_value(cluster.control_key)}")
    if cluster.nodes_per_process != 1:
        out.append(f"nodes_per_process = {cluster.nodes_per_process}")
    if cluster.transport != "zmq":
        out.append(f"transport = {_toml_value(cluster.transport)}")
    if cluster.policy_source:
        out.append(f"policy_source = {_toml_value(cluster.policy_source)}")
    out += ["", "[cluster.params]"]
    out += [f"{k} = {_toml_value(v)}" for k, v in cluster.params.items()]
    for p in cluster.processes:
        out += [
            "",
            "[[process]]",
            f"name = {_toml_value(p.name)}",
            f"role = {_toml_value(p.role)}",
            f"host = {_toml_value(p.host)}",
            f"port = {p.port}",
        ]
        if p.bind:
            out.append(f"bind = {_toml_value(p.bind)}")
        if p.role == "node":
            out += [f"slots = {p.slots}", f"partition = {_toml_value(p.partition)}"]
            if p.attributes:
                out.append(f"attributes = {_toml_value(p.attributes)}")
            if p.capacity is not None:
                out.append(f"capacity = {_toml_value(p.capacity._asdict())}")
        if p.public_key:
            out.append(f"public_key = {_toml_value(p.public_key)}")
    return "\n".join(out) + "\n"


def write_cluster(cluster: Cluster, path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(dump_cluster(cluster, path.parent))
    tmp.replace(path)


CLUSTER_FIELDS = (
    *("policy", "executor", "seed", "params", "keys", "control_key", "nodes_per_process"),
    "transport",
    "policy_source",
)
TRANSPORTS = ("zmq", "tcp")
PROCESS_FIELDS = (
    *("name", "role", "host", "port", "slots", "partition", "attributes", "bind", "capacity"),
    "public_key",
)
TABLES = {"cluster": "[cluster]", "process": "[[process]]"}
EXECUTORS = ("timer", "process", "docker")
"""What a task may be (``worker.executors.EXECUTORS``, which the cluster description must not import)."""

NAME = re.compile(r"[^\s\x00-\x1f\x7f@>#]+")
"""A process name: no blank or control character, and none of ``@``, ``>`` and ``#``, which the
transport's routing ids put between a name and the rest (``name@address#nonce``, ``name>secret``)."""
NAME_BYTES = 64
"""Longest process name, in UTF-8 bytes: a routing id (at most 255 bytes) holds it with an address."""

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*((?:[\w-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[\w-]+|"[^"]*"|'[^']*'))*)\s*=""")


def _dotted(text: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in text.split("."))


class TomlLines:
    """Where each table and key of a TOML text is (tomllib names no line for what it parsed, so the
    checks of its values find theirs here). Tables of an array count from 0; lines from 1."""

    def __init__(self, text: str) -> None:
        self.tables: dict[tuple[str, int], int] = {}
        self.keys: dict[tuple[str, int, str], int] = {}
        counts: dict[str, int] = {}
        table = ("", 0)
        for number, line in enumerate(text.splitlines(), 1):
            if header := _HEADER.match(line):
                name = _dotted(header.group(2))
                index = counts[name] = counts.get(name, -1) + 1 if header.group(1) == "[[" else 0
                table = (name, index)
                self.tables.setdefault(table, number)
            elif key := _KEY.match(line):
                self.keys.setdefault((*table, _dotted(key.group(1))), number)

    @classmethod
    def of(cls, path: Path | str) -> TomlLines:
        """The lines of the file at ``path`` (none when it cannot be read)."""
        try:
            return cls(Path(path).read_text())
        except (OSError, UnicodeDecodeError):
            return cls("")

    def line(self, table: str, key: str | None = None, index: int = 0) -> int | None:
        """The line of ``key`` in ``table`` (or of the dotted key or inline table of a parent table that
        holds it), else of the table's header, else None."""
        if key is not None:
            parts = table.split(".") if table else []
            for cut in range(len(parts), -1, -1):
                parent, rest = ".".join(parts[:cut]), parts[cut:]
                at = index if cut == len(parts) else 0
                for name in (".".join([*rest, key]), ".".join(rest)):
                    if name and (parent, at, name) in self.keys:
                        return self.keys[parent, at, name]
        return self.tables.get((table, index))


@dataclass(frozen=True, slots=True)
class Where:
    """A table of a cluster description, to name in an error: ``path:line: label: field 'key': ...``."""

    path: Path | str
    lines: TomlLines
    table: str = ""
    index: int = 0
    label: str = ""

    def at(self, key: str | None = None) -> str:
        line = self.lines.line(self.table, key, self.index)
        place = f"{self.path}:{line}" if line else str(self.path)
        return f"{place}: {self.label}" if self.label else place

    def error(self, key: str, text: str) -> ClusterError:
        return ClusterError(f"{self.at(key)}: field '{key}': {text}")


def _near(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"did you mean '{close[0]}'?" if close else f"known: {', '.join(known)}"


def _known(where: Where, table: dict[str, Any], fields: tuple[str, ...]) -> None:
    unknown = [k for k in table if k not in fields]  # the first in the file
    if unknown:
        key = unknown[0]
        raise ClusterError(f"{where.at(key)}: unknown field '{key}' ({_near(key, list(fields))})")


def _field(where: Where, table: dict[str, Any], key: str, kind: type, default: Any = ...) -> Any:
    if key not in table:
        if default is ...:
            raise ClusterError(f"{where.at()}: field '{key}' is missing")
        return default
    value = table[key]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok:
        raise where.error(key, f"expected {_KINDS.get(kind, kind.__name__)}, got {value!r}")
    return value


_KINDS = {int: "a whole number", float: "a number", str: "a string", dict: "a table"}


def _top(path: Path, lines: TomlLines, data: dict[str, Any]) -> None:
    """Only the tables a cluster description has, of the right kinds."""
    for name, value in data.items():
        array = isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)
        shown = f"[[{name}]]" if array else f"[{name}]" if isinstance(value, dict) else ""
        line = lines.line(name) if shown else lines.line("", name)
        place = f"{path}:{line}" if line else str(path)
        if name not in TABLES:
            if shown:
                known = [*TABLES.values(), "[cluster.params]"]
                raise ClusterError(f"{place}: unknown table {shown} ({_near(shown, known)})")
            raise ClusterError(f"{place}: unknown field '{name}' ({_near(name, list(TABLES))})")
        if name == "cluster" and not isinstance(value, dict):
            raise ClusterError(f"{place}: field 'cluster': expected the table [cluster]")
        if name == "process" and not array:
            raise ClusterError(f"{place}: {shown or 'process'}: expected [[process]] tables, one per process")


def load_cluster(path: Path | str) -> Cluster:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClusterError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ClusterError(f"{path}: not a text file") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ClusterError(f"{path}: {exc}") from None
    lines = TomlLines(text)
    _top(path, lines, data)
    top = data.get("cluster", {})
    where = Where(path, lines, "cluster", label="[cluster]")
    _known(where, top, CLUSTER_FIELDS)
    cluster = Cluster(
        processes=[],
        policy=_field(where, top, "policy", str, "sparrow"),
        executor=_field(where, top, "executor", str, "timer"),
        seed=_field(where, top, "seed", int, 0),
        params=_field(where, top, "params", dict, {}),
        nodes_per_process=_field(where, top, "nodes_per_process", int, 1),
        transport=_field(where, top, "transport", str, "zmq"),
        policy_source=_field(where, top, "policy_source", str, ""),
    )
    if cluster.transport not in TRANSPORTS:
        raise where.error("transport", f"{cluster.transport!r} is not one of {', '.join(TRANSPORTS)}")
    if cluster.nodes_per_process < 1:
        raise where.error("nodes_per_process", f"must be >= 1, got {cluster.nodes_per_process}")
    if cluster.executor not in EXECUTORS:
        raise where.error("executor", f"{cluster.executor!r} is not one of {', '.join(EXECUTORS)}")
    if cluster.seed < 0:
        raise where.error("seed", f"must be >= 0, got {cluster.seed}")
    keys = _field(where, top, "keys", str, None)
    cluster.keys = None if keys is None else (path.parent / keys).resolve()
    cluster.control_key = _public_key(where, top, "control_key")
    seen: set[str] = set()
    places: dict[tuple[str, int], str] = {}
    for i, table in enumerate(data.get("process", [])):
        where = Where(path, lines, "process", i, f"[[process]] #{i + 1}")
        _known(where, table, PROCESS_FIELDS)
        capacity = _field(where, table, "capacity", dict, None)
        try:
            capacity = None if capacity is None else Resources.of(capacity)
        except ValueError as exc:
            raise where.error("capacity", str(exc)) from None
        p = ProcessSpec(
            name=_field(where, table, "name", str),
            role=_field(where, table, "role", str),
            host=_field(where, table, "host", str),
            port=_field(where, table, "port", int),
            slots=_field(where, table, "slots", int, 0),
            partition=_field(where, table, "partition", str, "general"),
            attributes=_field(where, table, "attributes", dict, {}),
            bind=_field(where, table, "bind", str, None),
            capacity=capacity,
            public_key=_public_key(where, table, "public_key"),
        )
        if p.role not in ROLES:
            raise where.error("role", f"{p.role!r} is not one of {', '.join(ROLES)}")
        if not 0 < p.port < 65536:
            raise where.error("port", f"{p.port} is not a TCP port (1-65535)")
        if p.name in seen:
            raise where.error("name", f"{p.name!r} is repeated")
        if not NAME.fullmatch(p.name) or len(p.name.encode()) > NAME_BYTES:
            raise where.error(
                "name",
                f"{p.name!r} is not a process name (1 to {NAME_BYTES} bytes; no blank, control character, "
                "'@', '>' or '#')",
            )
        if p.name.startswith(PACK):
            raise where.error("name", f"{p.name!r}: names starting with {PACK!r} are for packs of nodes")
        if p.role == "node" and p.slots < 1:
            raise where.error("slots", f"a node needs at least 1 slot, got {p.slots}")
        if p.partition not in PARTITIONS:
            raise where.error("partition", f"{p.partition!r} is not one of {', '.join(PARTITIONS)}")
        if (p.host, p.port) in places:
            raise where.error("port", f"{p.host}:{p.port} is also {places[p.host, p.port]!r}'s")
        if (p.public_key is None) != (cluster.keys is None):
            text = (
                "missing: [cluster] names a keys folder"
                if cluster.keys
                else "given, but [cluster] has no 'keys'"
            )
            raise where.error("public_key", f"{text} (run 'aviary keys {path.name}')")
        seen.add(p.name)
        places[p.host, p.port] = p.name
        cluster.processes.append(p)
    if len(cluster.by_role("frontend")) != 1:
        raise ClusterError(f"{path}: needs exactly one process with role 'frontend'")
    if not cluster.nodes:
        raise ClusterError(f"{path}: needs at least one process with role 'node'")
    return cluster


_Z85 = re.compile(r"^[0-9a-zA-Z.\-:+=^!/*?&<>()\[\]{}@%$#]{40}$")


def _public_key(where: Where, table: dict[str, Any], key: str) -> str | None:
    value = _field(where, table, key, str, None)
    if value is not None and not _Z85.match(value):
        raise where.error(key, "not a CurveZMQ public key (40 z85 characters; made by 'aviary keys')")
    return value
