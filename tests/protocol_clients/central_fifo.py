"""A central FIFO scheduler written from docs/protocol.md alone: it imports nothing of Aviary (pyzmq,
msgpack and the standard library only), so it shows what a client in another language has to do.

    python central_fifo.py CLUSTER.toml NAME

It joins the testbed of CLUSTER.toml as the central scheduler NAME over ZeroMQ (with the cluster's
CurveZMQ keys when the file has them): one queue of jobs in arrival order, each task placed
(PlaceTask) on a node with a free slot by its own bookkeeping of what it placed and what finished
(TaskFinished), JobDone to the frontend after a job's last task. A dead node's tasks (PeerDown) go back
to the front of the queue. On SIGTERM it prints its counters as one JSON line and exits.
"""

from __future__ import annotations

import json
import secrets
import signal
import sys
import time
import tomllib
from collections import Counter, deque
from pathlib import Path
from typing import Any

import msgpack
import zmq
from zmq.utils import z85

VERSION = 4
SUBMIT_JOB, JOB_DONE, TASK_FINISHED, PLACE_TASK = 1, 2, 8, 9
HELLO, REGISTER, SHUTDOWN, STATS, GET_STATS, PEER_DOWN, PEER_UP, GET_COUNTERS, COUNTERS = range(20, 29)
NAMES = {JOB_DONE: "JobDone", PLACE_TASK: "PlaceTask"}
CONTROLLERS = {"frontend", "control"}
MAY_SEND = dict.fromkeys((HELLO, SHUTDOWN, GET_STATS, GET_COUNTERS, PEER_DOWN, PEER_UP), CONTROLLERS)
MAY_SEND |= {SUBMIT_JOB: CONTROLLERS}
MAY_SEND |= {TASK_FINISHED: {"node"}}


class Wire:
    """One ZeroMQ ROUTER socket: bound at this process's address, connected to each peer it sends to."""

    def __init__(self, path: Path, name: str) -> None:
        cluster = tomllib.loads(path.read_text())
        self.name = name
        procs = {p["name"]: p for p in cluster["process"]}
        self.me = procs[name]
        self.address = {n: f"tcp://{p['host']}:{p['port']}" for n, p in procs.items()}
        self.roles = {n: p["role"] for n, p in procs.items()} | {"control": "control"}
        ctx = zmq.Context.instance()
        keys = cluster["cluster"].get("keys")
        self.public: dict[str, bytes] = {}
        self.zap = None
        sock = ctx.socket(zmq.ROUTER)
        if keys:  # CurveZMQ: a server for what peers send here, a client of each peer it connects to
            self.public = {n: p["public_key"].encode() for n, p in procs.items()}
            self.public["control"] = cluster["cluster"]["control_key"].encode()
            self.owner = {z85.decode(k): n for n, k in self.public.items()}
            self.zap = ctx.socket(zmq.REP)  # the ZAP handler: admits the cluster's keys only
            self.zap.bind("inproc://zeromq.zap.01")
            secret = (path.parent / keys / f"{name}.secret").read_bytes().strip()
            sock.setsockopt(zmq.CURVE_SECRETKEY, secret)
            sock.setsockopt(zmq.CURVE_PUBLICKEY, self.public[name])
            sock.setsockopt(zmq.CURVE_SERVER, 1)
            sock.setsockopt(zmq.ZAP_DOMAIN, b"aviary")
        for option, value in ((zmq.ROUTER_MANDATORY, 1), (zmq.SNDHWM, 0), (zmq.RCVHWM, 0), (zmq.LINGER, 0)):
            sock.setsockopt(option, value)
        sock.bind(f"tcp://{self.me.get('bind', self.me['host'])}:{self.me['port']}")
        self.sock = sock
        self.links: dict[str, bytes] = {}
        self.outgoing: dict[bytes, str] = {}
        self.sent: Counter[str] = Counter()
        self.refused = 0  # connections whose key is not the cluster's
        self.poller = zmq.Poller()
        self.poller.register(sock, zmq.POLLIN)
        if self.zap is not None:
            self.poller.register(self.zap, zmq.POLLIN)

    def send(self, to: str, tag: int, *fields: Any) -> None:
        rid = self.links.get(to)
        if rid is None and (to not in self.address or (self.public and to not in self.public)):
            return  # no address (or no key) for it: nothing to send to
        if rid is None:  # connect on first use: frames queue until the connection is up
            if self.public:
                self.sock.setsockopt(zmq.CURVE_SERVERKEY, self.public[to])
            me = f"{self.name}@{self.address[self.name]}#{secrets.token_hex(8)}"
            self.sock.setsockopt(zmq.ROUTING_ID, me.encode())
            rid = self.links[to] = f"{to}>{secrets.token_hex(8)}".encode()
            self.outgoing[rid] = to
            self.sock.setsockopt(zmq.CONNECT_ROUTING_ID, rid)
            self.sock.connect(self.address[to])
        self.sock.send_multipart([rid, bytes([VERSION]) + msgpack.packb([tag, *fields])])
        if tag in NAMES:
            self.sent[NAMES[tag]] += 1

    def receive(self, timeout: float) -> list[tuple[str, int, list[Any]]]:
        """The messages that arrive within ``timeout`` seconds: (sender, tag, fields)."""
        out = []
        for sock, _ in self.poller.poll(max(0, int(timeout * 1000))):
            if sock is self.zap:
                self._authenticate()
                continue
            while True:
                try:
                    rid, frame = self.sock.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break
                sender = self._sender(rid.bytes, frame)
                data = frame.bytes
                if data[:1] != bytes([VERSION]):
                    continue
                try:
                    msg = msgpack.unpackb(data[1:])
                except ValueError:
                    continue
                if isinstance(msg, list) and msg and isinstance(msg[0], int):
                    out.append((sender, msg[0], msg[1:]))
        return out

    def _sender(self, rid: bytes, frame: zmq.Frame) -> str:
        """Who sent ``frame``: with keys, the name the ZAP handler gave its key; else the name its routing
        id ``name@address#nonce`` claims (a frame on a connection this process made: that peer). The
        address of ``control``, which the description does not list, is learned from its routing id."""
        if rid in self.outgoing:
            return self.outgoing[rid]
        claimed, _, rest = rid.decode(errors="replace").partition("@")
        name = claimed
        if self.public:
            try:
                name = str(frame.get("User-Id"))
            except zmq.ZMQError:
                return ""  # not authenticated: no sender
        address = rest.rpartition("#")[0]
        if (
            name == claimed == "control"
            and address.startswith("tcp://")
            and self.address.get(name) != address
        ):
            self.address[name] = address  # its newest connection wins
            self.links.pop(name, None)
        return name

    def _authenticate(self) -> None:
        version, request, _domain, _address, _identity, mechanism, *credentials = self.zap.recv_multipart()
        owner = self.owner.get(credentials[0]) if mechanism == b"CURVE" and credentials else None
        if owner is None:
            self.refused += 1
            self.zap.send_multipart([version, request, b"400", b"unknown key", b"", b""])
        else:
            self.zap.send_multipart([version, request, b"200", b"OK", owner.encode(), b""])


class Job:
    """A submitted job: who submitted it, when, its tasks not yet placed and not yet finished."""

    def __init__(self, frontend: str, job_id: int, durations: list[float], estimate: float, now: float):
        self.frontend, self.job_id, self.durations, self.estimate = frontend, job_id, durations, estimate
        self.arrival = now
        self.first_start: float | None = None
        self.unplaced = deque(range(len(durations)))
        self.left = len(durations)


class Central:
    """FIFO over jobs; a task goes to the next free slot of the nodes, interleaved."""

    def __init__(self, wire: Wire, path: Path) -> None:
        self.wire = wire
        procs = tomllib.loads(path.read_text())["process"]
        self.slots = {p["name"]: int(p["slots"]) for p in procs if p["role"] == "node"}
        self.counters: Counter[str] = Counter()
        self.epoch = 0
        self.stopping = False
        self.reset()

    def reset(self) -> None:
        levels = range(max(self.slots.values()))
        self.free = deque(n for level in levels for n, s in self.slots.items() if s > level)
        self.jobs: dict[int, Job] = {}
        self.queue: deque[Job] = deque()  # jobs with tasks not yet placed, in arrival order
        self.placed: dict[tuple[int, int], str] = {}  # task -> node
        self.dead: set[str] = set()

    def on_message(self, sender: str, tag: int, fields: list[Any]) -> None:
        if sender not in self.wire.roles or self.wire.roles[sender] not in MAY_SEND.get(tag, ()):
            self.counters["dropped"] += 1
            return
        now = time.monotonic()
        if tag == HELLO:
            epoch = fields[0] if fields else 0
            if epoch and epoch != self.epoch:
                if self.epoch:  # a new replay: the earlier one's jobs are forgotten
                    self.reset()
                self.epoch = epoch
            self.wire.send(sender, REGISTER, "central", 0, False)
        elif tag in (GET_STATS, SHUTDOWN):
            self.wire.send(sender, STATS, dict(self.counters), dict(self.wire.sent), [], [])
            self.stopping = tag == SHUTDOWN
        elif tag == GET_COUNTERS:
            gauges = {"jobs_pending": float(len(self.queue)), "tasks_running": float(len(self.placed))}
            self.wire.send(sender, COUNTERS, dict(self.counters), dict(self.wire.sent), gauges)
        elif tag == SUBMIT_JOB:
            job_id, durations, estimate = fields[:3]
            if job_id in self.jobs:
                self.counters["duplicate_job"] += 1
                return
            job = self.jobs[job_id] = Job(sender, job_id, durations, estimate, now)
            self.counters["jobs"] += 1
            if durations:
                self.queue.append(job)
            else:
                self.wire.send(sender, JOB_DONE, job_id, 0.0)
        elif tag == TASK_FINISHED:
            self.finished(sender, fields[0], fields[1], fields[2] if len(fields) > 2 else True, now)
        elif tag == PEER_DOWN:
            self.node_down(fields[0])
        elif tag == PEER_UP and fields[0] in self.dead:
            self.dead.discard(fields[0])
            self.free.extend([fields[0]] * self.slots[fields[0]])
        self.dispatch(now)

    def finished(self, node: str, job_id: int, index: int, ok: bool, now: float) -> None:
        if self.placed.get((job_id, index)) != node:  # not a task this scheduler has on that node
            self.counters["unknown_task_finished"] += 1
            return
        del self.placed[(job_id, index)]
        self.free.append(node)
        job = self.jobs[job_id]
        if not ok:  # killed or failed: it runs again
            self.requeue(job, [index])
            return
        job.left -= 1
        if job.left == 0:
            self.counters["jobs_done"] += 1
            assert job.first_start is not None
            self.wire.send(job.frontend, JOB_DONE, job_id, job.first_start - job.arrival)

    def requeue(self, job: Job, indices: list[int]) -> None:
        job.unplaced.extendleft(reversed(indices))
        if job not in self.queue:
            self.queue.appendleft(job)

    def node_down(self, name: str) -> None:
        if name not in self.slots or name in self.dead:
            return
        self.dead.add(name)
        self.free = deque(n for n in self.free if n != name)
        lost = sorted(task for task, node in self.placed.items() if node == name)
        for job_id, index in reversed(lost):
            del self.placed[(job_id, index)]
            self.requeue(self.jobs[job_id], [index])

    def dispatch(self, now: float) -> None:
        while self.queue and self.free:
            job, node = self.queue[0], self.free.popleft()
            index = job.unplaced.popleft()
            if not job.unplaced:
                self.queue.popleft()
            if job.first_start is None:
                job.first_start = now
            self.placed[(job.job_id, index)] = node
            self.wire.send(node, PLACE_TASK, job.job_id, index, job.durations[index], job.estimate)


def main() -> int:
    path, name = Path(sys.argv[1]), sys.argv[2]
    central = Central(Wire(path, name), path)
    signal.signal(signal.SIGTERM, lambda *_: setattr(central, "stopping", True))
    while not central.stopping:
        for sender, tag, fields in central.wire.receive(0.5):
            central.on_message(sender, tag, fields)
    print(json.dumps({"name": name, "refused": central.wire.refused, **central.counters}), flush=True)
    central.wire.sock.close(linger=1000)
    return 0


if __name__ == "__main__":
    sys.exit(main())
